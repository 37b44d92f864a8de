"""The loop-closure core (public namespace): Newton with implicit differentiation,
continuation sweeps, IFT rates, conditioning. See `diffmech._closure`."""

from ._closure import (
    RESULTS as RESULTS,
)
from ._closure import (
    AbstractPredictor as AbstractPredictor,
)
from ._closure import (
    ClosedForm as ClosedForm,
)
from ._closure import (
    Coarse as Coarse,
)
from ._closure import (
    Continuation as Continuation,
)
from ._closure import (
    Deferred as Deferred,
)
from ._closure import (
    Newton as Newton,
)
from ._closure import (
    Prediction as Prediction,
)
from ._closure import (
    Solution as Solution,
)
from ._closure import (
    SweepSolution as SweepSolution,
)
from ._closure import (
    condition as condition,
)
from ._closure import (
    continuation as continuation,
)
from ._closure import (
    has_deferred as has_deferred,
)
from ._closure import (
    jacobian as jacobian,
)
from ._closure import (
    rates as rates,
)
from ._closure import (
    root as root,
)
from ._closure import (
    sweep as sweep,
)
from ._result import AbstractResult as AbstractResult
