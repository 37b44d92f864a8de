"""The one contract of every solve's result: statuses, masks, errors.

Every solve of diffmech reports per sample (input, crank angle, time step, save) a
`converged` mask and a `status` (a `RESULTS` item), and the first failure as
`result`; `masked()` gives its main values with every unconverged sample set to NaN.
Nothing raises inside `jit`/`vmap` unless asked: an entry point's `throw=True` means
the same eagerly and under `jit`, as in optimistix (a failed solve raises):

- eagerly, a `ClosureError` subclass (one per cause, below) whose message names the
  sample, its input and the closure residual there;
- under `jit`, Equinox's run-time error carrying the status's message (a compiled
  program cannot raise a Python exception of our own).

Defaults, chosen once: `throw=True` where the caller asks for one configuration or a
prescribed motion (`closure.root`, `fourbar.solve`, `linkage.solve`,
`parallel.inverse_kinematics`, `parallel.inverse_dynamics`; `fourbar.assemble`
always raises); `throw=False` where the inputs scan a range whose end is itself an
answer (a crank that stops at a motion limit: `closure.sweep`,
`closure.continuation`, `fourbar.sweep`, `linkage.sweep`, `fourbar.simulate_dynamics`).
"""

from typing import TYPE_CHECKING, Any, ClassVar

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int

from ._validate import is_traced
from ._xla import eager_program


class RESULTS(diffrax.RESULTS):  # pyright: ignore
    """Status of a solve (extends Diffrax's `RESULTS`, hence optimistix's: a
    Newton's `nonfinite`, `singular`, `nonlinear_max_steps_reached` and an
    integrator's failures keep their names)."""

    if TYPE_CHECKING:  # the inherited members are ours too (pyright types them as the parent's)
        successful: "RESULTS"
        singular: "RESULTS"
        nonfinite: "RESULTS"
        nonlinear_max_steps_reached: "RESULTS"

    motion_limit = (
        "No closed configuration was found at this input: the mechanism cannot be "
        "assembled there (beyond a motion limit, or an unreachable input)."
    )
    branch_switch = (
        "The solution left the requested assembly branch (it passed through or near a singular configuration)."
    )
    not_reached = "An earlier input of the continuation failed; this one was not solved."
    deferred = (
        "The parallel pass did not certify this input and the sequential fallback was "
        "not run (`fallback=Deferred()`): solve again with the default fallback."
    )
    unreachable_pose = (
        "The closure is solved but the platform is not at the prescribed pose: the "
        "mechanism cannot reach it (a motion its degrees of freedom do not allow)."
    )
    redundancy_lost = (
        "The closure's least-squares equations are solved, but not every equation "
        "holds: the over-constrained linkage's special geometry (Bennett's, parallel "
        "axes) is lost, so it is rigid or has left the motion its redundancy allows."
    )
    change_point = (
        "A change point lies between this input and the last one solved: two assembly "
        "branches meet there ([J_x J_u] loses rank) and the motion could go on along "
        "either; pass it with `at_change` ('continue' or 'turn')."
    )
    contact_lost = (
        "A cam's follower would leave the cam here (the spring cannot keep the contact: "
        "the contact force reaches zero): the integration ends there."
    )
    end_stop = (
        "The motion reached an end stop that is an event (a linkage's `stop` load with "
        "`event`): the integration ends there."
    )
    singular_configuration = (
        "A singular configuration: the Jacobian is singular here (a closure Jacobian, "
        "joint screws or a wrench system without full rank), so the Newton step, the "
        "joint rates or the joint wrenches are not determined."
    )


def status_name(item) -> str | np.ndarray:
    """The name of a status (`"successful"`, `"motion_limit"`, `"change_point"`, …): a
    string for one, an array of strings for a batch of them (eager). Also
    `diffmech.RESULTS.name(item)` and `str(item)`."""
    if not isinstance(item, RESULTS):
        raise ValueError(f"RESULTS.name: `item` must be a diffmech RESULTS status; got {item!r:.80}")
    names = {int(np.asarray(v._value)): k for k, v in RESULTS._name_to_item.items()}  # pyright: ignore
    codes = np.asarray(code(item))
    if codes.ndim == 0:
        return names[int(codes)]
    return np.vectorize(names.__getitem__, otypes=[object])(codes).astype(str)


RESULTS.name = staticmethod(status_name)  # pyright: ignore  (a method in the class body would be an item)
_item_type: Any = type(RESULTS.successful)  # Equinox's EnumerationItem, shared by every enumeration
_item_str = _item_type.__str__


def _str(item) -> str:
    # `str` of a diffmech status is its name (`repr` keeps its message); any other
    # enumeration's items print as before
    if isinstance(item, RESULTS) and not item.is_traced():
        name = status_name(item)
        return name if isinstance(name, str) else str(name.tolist())
    return _item_str(item)


_item_type.__str__ = _str


def code(item: RESULTS) -> Int[Array, "..."]:
    """The integer code(s) of a `RESULTS` item (an array of them, batched)."""
    return jax.tree.leaves(item)[0]


def as_results(codes: Int[Array, "..."]) -> RESULTS:
    """A `RESULTS` item from integer codes."""
    return jax.tree.map(lambda _: jnp.asarray(codes, jnp.int32), RESULTS.successful)


def message(codes) -> str:
    """The message of one status (an item or its integer code)."""
    c = int(np.asarray(code(codes) if isinstance(codes, RESULTS) else codes).reshape(-1)[0])
    return RESULTS._index_to_message[c]  # pyright: ignore


# --------------------------------------------------------------------------- errors


class ClosureError(ValueError):
    """A solve failed. Attributes: `status` (the message of its `RESULTS` item),
    `index` (the failed sample, `None` for a single solve), `residual`.

    **Arguments:** `msg`: the message; `status`: the failed status's message (a
    `RESULTS` text); `index`: the failed input's index in its batch or sweep;
    `residual`: the closure residual there (the solver's units).
    """

    def __init__(
        self,
        msg: str,
        *,
        status: str | None = None,
        index: tuple[int, ...] | None = None,
        residual: float | None = None,
    ):
        super().__init__(msg)
        self.status, self.index, self.residual = status, index, residual


class AssemblyError(ClosureError):
    """The mechanism cannot be closed at the requested input (on the requested
    branch).

    Constructed as `ClosureError` (arguments `msg`, `status`, `index`, `residual`).
    """


class MotionLimitError(AssemblyError):
    """No closed configuration at the input: beyond a motion limit (a joint limit,
    a leg that cannot reach the pose, a crank that cannot turn that far).

    Constructed as `ClosureError` (arguments `msg`, `status`, `index`, `residual`).
    """


class BranchSwitchError(AssemblyError):
    """The solution left the requested assembly branch, or reached a change point
    where it could leave it (status `branch_switch` or `change_point`).

    Constructed as `ClosureError` (arguments `msg`, `status`, `index`, `residual`).
    """


class SingularError(ClosureError):
    """A singular configuration: the Jacobian (or the wrench system) has no inverse
    there, so the rates, the wrenches or the Newton step are not determined.

    Constructed as `ClosureError` (arguments `msg`, `status`, `index`, `residual`).
    """


class ConvergenceError(ClosureError):
    """The solve did not finish: non-finite values, too many steps, an integrator's
    failure, or an input left deferred or not reached.

    Constructed as `ClosureError` (arguments `msg`, `status`, `index`, `residual`).
    """


def error_class(c: int) -> type[ClosureError]:
    """The `ClosureError` subclass of a status code."""
    if c == code(RESULTS.motion_limit):
        return MotionLimitError
    if c in (code(RESULTS.branch_switch), code(RESULTS.change_point)):
        return BranchSwitchError
    if c in (code(RESULTS.singular_configuration), code(RESULTS.singular)):
        return SingularError
    return ConvergenceError


def fmt(v) -> str:
    """A value for an error message: a number to 6 digits, an array in one line."""
    a = np.asarray(v)
    if a.ndim == 0:
        return f"{float(a):.6g}"
    return np.array2string(a, precision=6, max_line_width=10_000, threshold=12)


# --------------------------------------------------------------------------- results


class AbstractResult(eqx.Module):
    """The contract every per-sample result implements.

    Fields (leading batch axes first, then the sample axis `N`): `converged` (False
    from the first failure on), `status` (a `RESULTS` per sample), `residual` (the
    closure residual's max-norm per sample). Derived: `result` (the first failure,
    `successful` if none), `n_converged`, `masked()` (the main values, NaN where not
    converged), `raise_if_failed()` (eager: raise the failure as a `ClosureError`).

    A subclass names its main values (`_values`: what `masked()` masks) and its
    per-sample inputs (`_inputs`: named in error messages).
    """

    converged: eqx.AbstractVar[Bool[Array, "*batch N"]]
    status: eqx.AbstractVar[RESULTS]
    residual: eqx.AbstractVar[Float[Array, "*batch N"]]

    _values: ClassVar[str]
    _inputs: ClassVar[str]

    @property
    def result(self) -> RESULTS:
        return first_failure(self.converged, self.status)

    @property
    def n_converged(self) -> Int[Array, "*batch"]:
        return jnp.sum(self.converged, axis=-1)

    def masked(self) -> Array:
        """The main values (`_values`) with every unconverged sample set to NaN (for
        plotting and printing)."""
        v = getattr(self, self._values)
        ok = self.converged
        return jnp.where(jnp.reshape(ok, ok.shape + (1,) * (v.ndim - ok.ndim)), v, jnp.nan)

    def describe(self, k: tuple[int, ...]) -> str:
        """Extra words on the failure at sample `k` (batch indices, then the sample):
        a family's diagnosis (a joint limit, a rank). Default: none."""
        return ""

    def raise_if_failed(self, owner: str = "solve") -> None:
        """Eager: raise the first failure, if any, as the `ClosureError` subclass of
        its status, naming the sample, its input and the residual there."""
        ok = np.asarray(self.converged)
        if ok.all():
            return
        codes = np.asarray(code(self.status))
        first = _first_cause(ok, codes, np)  # per sweep, the first failure along its path
        batch = tuple(int(i) for i in np.argwhere(~ok.all(axis=-1))[0]) if ok.ndim > 1 else ()
        k = batch + (int(first[batch]),)
        c = int(codes[k])
        inputs = getattr(self, self._inputs)
        nb = ok.ndim - 1
        # the inputs are shared by the batch (one axis `N`) or carry its axes too
        u = jax.tree.map(
            lambda a: np.asarray(a)[k if np.ndim(a) > nb and np.shape(a)[:nb] == ok.shape[:nb] else k[-1]], inputs
        )
        u_txt = ", ".join(fmt(leaf) for leaf in jax.tree.leaves(u))
        res = float(np.asarray(self.residual)[k])
        where = f"sample {k[-1]}" + (f" of design {k[:-1]}" if nb else "")
        extra = self.describe(k)
        raise error_class(c)(
            f"{owner}: {message(c)} At {where} ({self._inputs} = {u_txt}): closure residual {res:.3e}."
            + (f" {extra}" if extra else ""),
            status=message(c),
            index=k,
            residual=res,
        )

    def error_if_failed(self):
        """Jittable: the same result, with an Equinox run-time error attached that
        fires (carrying the first failure's message) if any sample failed."""
        failure = jnp.reshape(code(self.result), (-1,))
        ok = failure == code(RESULTS.successful)
        first = failure[jnp.argmin(ok)]
        values = as_results(first).error_if(getattr(self, self._values), ~jnp.all(ok))
        return eqx.tree_at(lambda r: getattr(r, self._values), self, values)


def check_throw(owner: str, throw) -> None:
    """`throw` is a flag: a string such as "no" is truthy and would mean the opposite."""
    if not isinstance(throw, (bool, np.bool_)):
        raise ValueError(f"{owner}: `throw` must be True or False; got {throw!r}")


def finish(result, throw: bool, owner: str):
    """Apply an entry point's `throw`: eagerly, raise the first failure as a
    `ClosureError`; under a transformation, attach Equinox's run-time error."""
    check_throw(owner, throw)
    if not throw:
        return result
    if is_traced(result):
        return result.error_if_failed()
    result.raise_if_failed(owner)
    return result


def save_status(solver_result, ys, closed):
    """Per save: converged until the first save the integrator did not reach or
    whose loop the closure core did not close; the status names the cause."""
    reached = jnp.all(jnp.isfinite(ys), axis=-1)  # Diffrax fills the saves it did not reach with inf
    good = reached & closed
    ok = jnp.cumsum(~good) == 0
    first = jnp.argmin(ok)
    solver = solver_result if isinstance(solver_result, RESULTS) else RESULTS.promote(solver_result)
    solver = RESULTS.where(solver == RESULTS.successful, RESULTS.nonfinite, solver)  # a blow-up to NaN
    cause = RESULTS.where(reached[first], RESULTS.motion_limit, solver)
    idx = jnp.arange(ok.shape[0])
    failed = jnp.where(idx == first, code(cause), code(RESULTS.not_reached))
    return ok, as_results(jnp.where(ok, code(RESULTS.successful), failed))


def _first_cause(converged, codes, xp=jnp):
    """Per sweep (the last axis): the index of the first failure along the path, the
    first unconverged sample with a cause of its own, not `not_reached` (its rows may
    be in another order than the path, which visits each side of the initial
    configuration on its own); the first unconverged sample if every one is
    `not_reached`, 0 if none failed."""
    cause = ~converged & (codes != _NOT_REACHED)
    return xp.where(xp.any(cause, axis=-1), xp.argmax(cause, axis=-1), xp.argmin(converged, axis=-1))


_NOT_REACHED = int(np.asarray(code(RESULTS.not_reached)))


def first_failure(converged: Bool[Array, "*batch N"], status: RESULTS) -> RESULTS:
    """The first failure along the path of each sweep (the last axis; `successful`
    where every input converged): the status of the first unconverged input that
    failed for a cause of its own (`not_reached` only follows an earlier failure along
    the path, which need not be an earlier row); leading batch axes are kept."""
    return as_results(_first_failure_code(converged, code(status)))


@eager_program  # eagerly one program (op by op: 13 small ones)
def _first_failure_code(converged, codes):
    first = _first_cause(converged, codes)
    failed = ~jnp.all(converged, axis=-1)
    at_first = jnp.take_along_axis(codes, first[..., None], axis=-1)[..., 0]
    # element-wise on the codes: `RESULTS.where` takes a scalar predicate only
    return jnp.where(failed, at_first, code(RESULTS.successful))
