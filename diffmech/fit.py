"""The fitting layer (Optax): identification and synthesis both run through `fit`."""

from ._fit import FitResult as FitResult, History as History, fit as fit, masked_mean as masked_mean
