"""The loop-closure core (public namespace): Newton with implicit differentiation,
continuation sweeps, IFT rates, conditioning. See `diffmech._closure`."""

from ._closure import (
    AbstractPredictor as AbstractPredictor,
    ClosedForm as ClosedForm,
    Coarse as Coarse,
    Continuation as Continuation,
    Newton as Newton,
    Prediction as Prediction,
    RESULTS as RESULTS,
    Solution as Solution,
    SweepSolution as SweepSolution,
    condition as condition,
    continuation as continuation,
    rates as rates,
    root as root,
    sweep as sweep,
)
