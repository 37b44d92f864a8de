"""The planar four-bar in the attitude-vector form of Bai et al. (2024)."""

from .._result import AssemblyError as AssemblyError
from ._dynamics import (
    Drive as Drive,
)
from ._dynamics import (
    Simulation as Simulation,
)
from ._dynamics import (
    com_positions as com_positions,
)
from ._dynamics import (
    crank_torque as crank_torque,
)
from ._dynamics import (
    energy as energy,
)
from ._dynamics import (
    momentum as momentum,
)
from ._dynamics import (
    potential as potential,
)
from ._dynamics import (
    project as project,
)
from ._dynamics import (
    sigma as sigma,
)
from ._dynamics import (
    simulate as simulate,
)
from ._dynamics import (
    tangent as tangent,
)
from ._kinematics import (
    GRASHOF_CLASSES as GRASHOF_CLASSES,
)
from ._kinematics import (
    CrankRange as CrankRange,
)
from ._kinematics import (
    Sweep as Sweep,
)
from ._kinematics import (
    angular_accelerations as angular_accelerations,
)
from ._kinematics import (
    angular_velocities as angular_velocities,
)
from ._kinematics import (
    assemble as assemble,
)
from ._kinematics import (
    branch_sign as branch_sign,
)
from ._kinematics import (
    branch_sign_at as branch_sign_at,
)
from ._kinematics import (
    closed_form as closed_form,
)
from ._kinematics import (
    closure_residual as closure_residual,
)
from ._kinematics import (
    coupler_point as coupler_point,
)
from ._kinematics import (
    crank_limits as crank_limits,
)
from ._kinematics import (
    grashof as grashof,
)
from ._kinematics import (
    is_change_point as is_change_point,
)
from ._kinematics import (
    is_parallelogram_mode as is_parallelogram_mode,
)
from ._kinematics import (
    joint_positions as joint_positions,
)
from ._kinematics import (
    rates as rates,
)
from ._kinematics import (
    residual as residual,
)
from ._kinematics import (
    solve as solve,
)
from ._kinematics import (
    sweep as sweep,
)
from ._kinematics import (
    sweep_functional as sweep_functional,
)
from ._kinematics import (
    velocity_ratios as velocity_ratios,
)
from ._kinematics import (
    velocity_ratios_linearised as velocity_ratios_linearised,
)
from ._model import FourBar as FourBar
