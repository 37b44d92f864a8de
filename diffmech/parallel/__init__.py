"""Parallel mechanisms in screw coordinates (Zhao, Wei, Sun: seeds 002 and 004):
chains of R and P joints between a base and a platform, inverse kinematics along a
trajectory (exact closure or the seeds' one-step scheme), mobility by reciprocal
screws, and Newton–Euler / momentum-screw wrench solves for every joint."""

from ._dynamics import (
    Dynamics as Dynamics,
)
from ._dynamics import (
    body_motion as body_motion,
)
from ._dynamics import (
    inverse_dynamics as inverse_dynamics,
)
from ._dynamics import (
    wrench_rank as wrench_rank,
)
from ._kinematics import (
    Kinematics as Kinematics,
)
from ._kinematics import (
    Mobility as Mobility,
)
from ._kinematics import (
    chain_poses as chain_poses,
)
from ._kinematics import (
    chain_ranks as chain_ranks,
)
from ._kinematics import (
    chain_screws as chain_screws,
)
from ._kinematics import (
    inverse_kinematics as inverse_kinematics,
)
from ._kinematics import (
    mobility as mobility,
)
from ._kinematics import (
    residual as residual,
)
from ._kinematics import (
    screw_rates as screw_rates,
)
from ._model import (
    AbstractParallelMechanism as AbstractParallelMechanism,
)
from ._model import (
    Chain as Chain,
)
from ._model import (
    StewartPlatform as StewartPlatform,
)
from ._model import (
    ThreeUPSUPUS as ThreeUPSUPUS,
)
from ._model import (
    chain as chain,
)
from ._model import (
    cylinder_inertia as cylinder_inertia,
)
from ._trajectory import (
    Trajectory as Trajectory,
)
from ._trajectory import (
    stewart_spiral as stewart_spiral,
)
from ._trajectory import (
    tilt_circle as tilt_circle,
)
from ._trajectory import (
    trajectory as trajectory,
)
from ._trajectory import (
    uniform_times as uniform_times,
)
