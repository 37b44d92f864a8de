"""The fitting layer (Optax): identification and synthesis both run through `fit`."""

from ._fit import FitResult as FitResult
from ._fit import History as History
from ._fit import fit as fit
from ._fit import masked_mean as masked_mean
