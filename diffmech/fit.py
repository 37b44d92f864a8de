"""The fitting layer (Optax): identification and synthesis both run through `fit`."""

from ._fit import (
    Convergence as Convergence,
    FitResult as FitResult,
    History as History,
    Starts as Starts,
    fit as fit,
    masked_mean as masked_mean,
)
