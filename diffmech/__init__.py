"""diffmech: differentiable simulation of closed-loop mechanisms in JAX."""

import importlib.metadata

from . import (
    closure as closure,
)
from . import (
    examples as examples,
)
from . import (
    fit as fit,
)
from . import (
    fourbar as fourbar,
)
from . import (
    identify as identify,
)
from . import (
    linkage as linkage,
)
from . import (
    parallel as parallel,
)
from . import (
    screw as screw,
)
from . import (
    synthesis as synthesis,
)
from ._result import (
    AssemblyError as AssemblyError,
)
from ._result import (
    BranchSwitchError as BranchSwitchError,
)
from ._result import (
    ClosureError as ClosureError,
)
from ._result import (
    ConvergenceError as ConvergenceError,
)
from ._result import (
    MotionLimitError as MotionLimitError,
)
from ._result import (
    SingularError as SingularError,
)
from .fourbar import FourBar as FourBar
from .linkage import Linkage as Linkage

try:
    __version__ = importlib.metadata.version("diffmech")
except importlib.metadata.PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+unknown"
