"""The planar four-bar in the attitude-vector form of Bai et al. (2024)."""

from .._drives import (
    AffineTorque as AffineTorque,
    ConstantTorque as ConstantTorque,
    ServoTorque as ServoTorque,
    TorqueSeries as TorqueSeries,
)
from .._integrator import Integrator as Integrator
from .._result import AssemblyError as AssemblyError
from ._dynamics import (
    Drive as Drive,
    Simulation as Simulation,
    com_positions as com_positions,
    crank_torque as crank_torque,
    energy as energy,
    momentum as momentum,
    potential as potential,
    project as project,
    sigma as sigma,
    simulate as simulate,
    simulate_dynamics as simulate_dynamics,
    tangent as tangent,
)
from ._kinematics import (
    GRASHOF_CLASSES as GRASHOF_CLASSES,
    CrankRange as CrankRange,
    Sweep as Sweep,
    angular_accelerations as angular_accelerations,
    angular_velocities as angular_velocities,
    assemble as assemble,
    branch_sign as branch_sign,
    branch_sign_at as branch_sign_at,
    closed_form as closed_form,
    closure_residual as closure_residual,
    condition_number as condition_number,
    coupler_point as coupler_point,
    crank_limits as crank_limits,
    grashof as grashof,
    is_change_point as is_change_point,
    is_parallelogram_mode as is_parallelogram_mode,
    joint_positions as joint_positions,
    rates as rates,
    residual as residual,
    solve as solve,
    sweep as sweep,
    sweep_functional as sweep_functional,
    velocity_ratios as velocity_ratios,
    velocity_ratios_linearised as velocity_ratios_linearised,
)
from ._model import FourBar as FourBar
