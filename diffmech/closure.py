"""The loop-closure core (public namespace): Newton with implicit differentiation,
continuation sweeps, IFT rates, conditioning. See `diffmech._closure`."""

from ._closure import (
    RESULTS as RESULTS,
    AbstractClosedForm as AbstractClosedForm,
    AbstractPredictor as AbstractPredictor,
    Branch as Branch,
    ClosedForm as ClosedForm,
    Coarse as Coarse,
    Continuation as Continuation,
    Convergence as Convergence,
    Deferred as Deferred,
    Newton as Newton,
    Prediction as Prediction,
    Solution as Solution,
    SweepSolution as SweepSolution,
    condition as condition,
    continuation as continuation,
    has_deferred as has_deferred,
    jacobian as jacobian,
    rates as rates,
    root as root,
    sweep as sweep,
    velocity as velocity,
    vmap_chunked as vmap_chunked,
)
from ._result import AbstractResult as AbstractResult
