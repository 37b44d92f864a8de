"""Parameter identification from measured motion, on the fitting layer (`diffmech.fit`).

`fourbar_tracer`: a four-bar's link lengths and coupler point from tracer positions
measured at known crank angles, in the four-bar's frame (A at the origin, D on +x).
The positions come from the closure core (a continuation sweep through the measured
angles, implicit gradients); samples where the candidate cannot be assembled are masked
out of the loss before the gradient.

`linkage_tracer`: any planar linkage's joint coordinates (a Stephenson-II six-bar, …)
from tracer positions at known inputs, by Levenberg–Marquardt through the linkage
model, with the identifiable combinations counted.

`fourbar_dynamics`: a four-bar's base inertial parameters (`BASE_NAMES`, the 8
combinations of masses, inertias and COM offsets the motion depends on), crank,
coupler and rocker lengths and initial state from a measured crank angle θA(t) of the
reduced Hamiltonian model, free or under a known torque.

`payload`: a parallel mechanism's platform (payload) mass, centre of mass and inertia
from measured actuator forces along a known trajectory (linear least squares on the
exact regressor of the Newton–Euler wrench solve).
"""

from ._identify import (
    BASE_NAMES as BASE_NAMES,
    PAYLOAD_NAMES as PAYLOAD_NAMES,
    DynamicFit as DynamicFit,
    LinkageFit as LinkageFit,
    PayloadFit as PayloadFit,
    TracerFit as TracerFit,
    fourbar_base_parameters as fourbar_base_parameters,
    fourbar_dynamics as fourbar_dynamics,
    fourbar_from_base as fourbar_from_base,
    fourbar_regressor as fourbar_regressor,
    fourbar_tracer as fourbar_tracer,
    linkage_from_params as linkage_from_params,
    linkage_params as linkage_params,
    linkage_tracer as linkage_tracer,
    payload as payload,
    payload_parameters as payload_parameters,
    payload_regressor as payload_regressor,
    with_payload as with_payload,
)
