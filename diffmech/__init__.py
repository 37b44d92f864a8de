"""diffmech: differentiable simulation of closed-loop mechanisms in JAX."""

import importlib.metadata

from . import (
    cam as cam,
    closure as closure,
    examples as examples,
    fit as fit,
    fourbar as fourbar,
    identify as identify,
    linkage as linkage,
    parallel as parallel,
    screw as screw,
    synthesis as synthesis,
)
from ._cache import cache as cache
from ._integrator import Integrator as Integrator
from ._result import (
    RESULTS as RESULTS,
    AssemblyError as AssemblyError,
    BranchSwitchError as BranchSwitchError,
    ClosureError as ClosureError,
    ConvergenceError as ConvergenceError,
    MotionLimitError as MotionLimitError,
    SingularError as SingularError,
)
from ._validate import ArgumentTypeError as ArgumentTypeError, UnknownNameError as UnknownNameError
from .fourbar import FourBar as FourBar
from .linkage import Linkage as Linkage

try:
    __version__ = importlib.metadata.version("diffmech")
except importlib.metadata.PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+unknown"
