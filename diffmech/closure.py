"""The loop-closure core (public namespace): Newton with implicit differentiation,
continuation sweeps, IFT rates, conditioning. See `diffmech._closure`."""

from ._closure import (
    RESULTS as RESULTS,
    Solution as Solution,
    SweepSolution as SweepSolution,
    condition as condition,
    rates as rates,
    root as root,
    sweep as sweep,
)
