"""Parallel mechanisms in screw coordinates (Zhao, Wei, Sun: seeds 002 and 004):
chains of R and P joints between a base and a platform, inverse kinematics along a
trajectory (exact closure or the seeds' one-step scheme), mobility by reciprocal
screws, and Newton–Euler / momentum-screw wrench solves for every joint."""

from ._assembly import (
    Assemblies as Assemblies,
    forward_kinematics as forward_kinematics,
    leg_lengths as leg_lengths,
)
from ._dynamics import (
    Dynamics as Dynamics,
    body_motion as body_motion,
    inverse_dynamics as inverse_dynamics,
    wrench_rank as wrench_rank,
)
from ._kinematics import (
    Kinematics as Kinematics,
    Mobility as Mobility,
    chain_poses as chain_poses,
    chain_ranks as chain_ranks,
    chain_screws as chain_screws,
    inverse_kinematics as inverse_kinematics,
    mobility as mobility,
    residual as residual,
    screw_rates as screw_rates,
)
from ._model import (
    AbstractParallelMechanism as AbstractParallelMechanism,
    Chain as Chain,
    StewartPlatform as StewartPlatform,
    ThreeUPSUPUS as ThreeUPSUPUS,
    chain as chain,
    cylinder_inertia as cylinder_inertia,
)
from ._trajectory import (
    Trajectory as Trajectory,
    stewart_spiral as stewart_spiral,
    tilt_circle as tilt_circle,
    trajectory as trajectory,
    uniform_times as uniform_times,
)
from ._workspace import (
    ThreeRPR as ThreeRPR,
    Transmissibility as Transmissibility,
    Workspace as Workspace,
    transmissibility as transmissibility,
    workspace as workspace,
)


def view(mech: AbstractParallelMechanism, *, host: str = "127.0.0.1", port: int | None = None):
    """Show a parallel mechanism live in the browser (viser): a slider per pose
    coordinate of the platform and each chain at that pose; a Gough–Stewart
    platform's legs and their lengths, every assembly for those lengths
    (`forward_kinematics`) and its workspace section on request; any other
    mechanism's chains where the closure core's inverse kinematics puts them. Listens
    on `host` (default 127.0.0.1) at `port` (default: a free one); needs the `view`
    extra.

    **Arguments:** `mech`: the mechanism; `host`, `port`. **Returns:** a
    `ParallelViewer` (`url`, `set_pose`, `every_assembly`, `workspace_section`,
    `close`).
    """
    from .._view import ParallelViewer

    return ParallelViewer(mech, host=host, port=port)
