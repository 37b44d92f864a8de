"""diffmech: differentiable simulation of closed-loop mechanisms in JAX."""

import importlib.metadata

from . import closure as closure, fourbar as fourbar
from .fourbar import FourBar as FourBar

try:
    __version__ = importlib.metadata.version("diffmech")
except importlib.metadata.PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+unknown"
