"""The loop-closure core: one Newton solve, used by every mechanism family.

A mechanism writes its closure as a square residual `fn(x, u, params) -> r` with
`x` the unknown coordinates (shape `(n,)`), `u` the input (crank angle, actuator
length, ...) and `params` any pytree of design parameters. This module

- solves `fn(x, u, params) = 0` by Newton from a warm start to round-off (`root`),
  differentiable in `u` and `params` by the implicit function theorem
  (`jax.lax.custom_root`; the iterations are never differentiated);
- solves every input of a sequence at once (`sweep`: a predictor, a fixed number of
  Newton steps on all inputs, a sequential fallback only where needed; see the
  comment above `sweep`), or one input after the other (`continuation`), with a
  converged mask, a status per input, an optional branch invariant, and every input
  after the first failure masked instead of returning garbage;
- gives velocities and accelerations of the solution by the implicit function
  theorem (`rates`), from `jax.jvp` of the residual, not finite differences;
- reports the conditioning of the Jacobian so that singular configurations
  (toggle and dead positions) are visible.

Jacobians `∂fn/∂x` come from forward mode (`jax.jacfwd`: one pass per unknown) unless
the residual carries its own, `fn.jacobian(x, u, params)` (`jacobian`): the parallel
mechanisms assemble theirs from the chains' screw matrices, one pass per chain.

Inside `jit` nothing raises: results carry a `RESULTS` status. `throw=True` (the
default of the eager convenience functions built on this) turns a failed status
into an error.
"""

import abc
import dataclasses
import warnings
from collections.abc import Callable
from typing import Any, ClassVar, TypedDict, Unpack

import equinox as eqx
import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float, Int, PyTree

from . import _cache, _linalg, _result
from ._result import RESULTS, AbstractResult, SingularError, as_results as _as_results, code as _code, finish
from ._validate import (
    ArgumentTypeError,
    check_callable,
    check_count,
    check_scalar,
    check_type,
    is_traced,
    options,
    pick,
    user_stacklevel,
)

Residual = Callable[[Float[Array, " n"], Any, PyTree], Float[Array, " n"]]


def jacobian(fn: Residual) -> Callable[[Float[Array, " n"], Any, PyTree], Float[Array, "n n"]]:
    """`∂fn/∂x` as a function of `(x, u, params)`: the residual's own `fn.jacobian` if
    it carries one (a family that knows its Jacobian in closed form, e.g. the parallel
    mechanisms' screw matrices), else `jax.jacfwd(fn)` (one forward pass per unknown).
    Every Newton step, rate and condition number of the core goes through this.

    **Arguments:** `fn`: a residual `fn(x, u, params) -> r`, `x` and `r` of shape `(n,)`.

    **Returns:** a function of `(x, u, params)` returning the `(n, n)` Jacobian.
    """
    check_callable("closure.jacobian", "fn", fn, "a residual function fn(x, u, params)")
    own = getattr(fn, "jacobian", None)
    return own if own is not None else jax.jacfwd(fn)


_warned_float32 = False


def _warn_if_float32(x: Array) -> None:
    global _warned_float32
    if x.dtype != jnp.float64 and not _warned_float32:
        _warned_float32 = True
        warnings.warn(
            "diffmech: a loop-closure solve is running in "
            f"{x.dtype}; residuals reach round-off (1e-16) only in float64. Enable it "
            "with `jax.config.update('jax_enable_x64', True)` before creating arrays.",
            stacklevel=user_stacklevel(),
        )


class Solution(eqx.Module):
    """The result of `root`.

    - `value`: the solution `x` (on failure, the initial guess, so that masked losses
      keep finite gradients; never use it without checking `result`);
    - `result`: a `RESULTS` status;
    - `residual`: the max-norm of the residual at `value`;
    - `steps`: Newton steps taken;
    - `condition`: the 1-norm condition number of the Jacobian at `value` (NaN if not
      requested);
    - `last_step`: the relative size of the last Newton update (by quadratic
      convergence the error left after it is about its square).
    """

    value: Float[Array, " n"]
    result: RESULTS
    residual: Float[Array, ""]
    steps: Int[Array, ""]
    condition: Float[Array, ""]
    last_step: Float[Array, ""]

    @property
    def converged(self) -> Bool[Array, ""]:
        return self.result == RESULTS.successful

    @property
    def status(self) -> RESULTS:
        """The status of the one configuration solved (the same as `result`)."""
        return self.result

    def check(self, throw: bool, owner: str, u: Any = None) -> "Solution":
        """Apply `throw` (the contract of `diffmech._result`): eagerly, raise the
        failure as the `ClosureError` subclass of its status, naming the input `u`
        and the residual; under a transformation, attach Equinox's run-time error."""
        _result.check_throw(owner, throw)
        if not throw:
            return self
        if is_traced(self):
            return eqx.tree_at(lambda s: s.value, self, self.result.error_if(self.value, ~self.converged))
        if not bool(self.converged):
            c = int(_code(self.result))
            u_txt = ", ".join(_result.fmt(leaf) for leaf in jax.tree.leaves(u))
            raise _result.error_class(c)(
                f"{owner}: {_result.message(c)} At input {u_txt}: closure residual {float(self.residual):.3e} "
                f"after {int(self.steps)} Newton steps.",
                status=_result.message(c),
                residual=float(self.residual),
            )
        return self


def tolerance(atol: float, dtype) -> float:
    # float32 cannot reach 1e-10: scale the tolerance to the precision in use.
    return max(atol, 1e3 * float(jnp.finfo(dtype).eps))


def _max_abs(v):
    # max |v_i| of a small vector as a chain of element-wise maxima: under vmap a
    # reduction would split the fused Newton step into several kernels (2x slower);
    # above the unrolled size the step is a loop of kernels anyway, and the chain's
    # 2n operations per call were a tenth of the Stephenson-II program XLA compiles
    if v.shape[0] == 0:  # nothing to solve (a linkage its inputs place whole)
        return jnp.zeros((), v.dtype)
    if v.shape[0] > _linalg.UNROLL_MAX:
        return jnp.max(jnp.abs(v))
    m = jnp.abs(v[0])
    for i in range(1, v.shape[0]):
        m = jnp.maximum(m, jnp.abs(v[i]))
    return m


def _unroll(x) -> bool:
    """Unroll a fixed number of Newton steps only for systems that `_linalg` solves
    unrolled (≤ 4 unknowns): larger steps are compiled once, in a loop."""
    return x.shape[-1] <= _linalg.UNROLL_MAX


def _newton(f, jac, x0, *, atol, xtol, max_steps, min_steps, robust=False, m_tangents=0):
    """Newton iterations on `f(x) = 0`; returns `(x, residual_norm, steps, converged,
    last_update, singular, T, residual_norm_at_x0)`.

    With `m_tangents > 0`, `jac(x)` returns `(∂f/∂x, ∂f/∂u)` (the second `(n, m)`,
    for an input of `m` components) and each step also solves for the closure's
    tangent `T = −(∂f/∂x)⁻¹ ∂f/∂u` with the same factorisation; `T` is the last
    step's (zero if none): at convergence, within `xtol` of the solution's, enough
    for a predictor. Else `T` is None.

    With `robust`, a non-finite step (singular Jacobian) is replaced by a damped
    least-squares (Levenberg–Marquardt) step, and an iterate whose residual is
    already at round-off is not moved; this converges at singular configurations
    such as the change points of a parallelogram, where the solution branches cross.
    Without it, a non-finite step stops the iteration at the last iterate and sets
    `singular`. `jac(x)`: `∂f/∂x` (`jacobian`).
    """

    def step(x, sing):
        r = f(x)
        if m_tangents:
            J, Fu = jac(x)
            sol = _linalg.step(J, jnp.concatenate([-r[:, None], -Fu], axis=1))
            dx, T = sol[:, 0], sol[:, 1:]
        else:
            J, T = jac(x), None
            dx = _linalg.step(J, -r)
        if robust:
            # a step through a singular Jacobian (non-finite) becomes a damped
            # least-squares step; and a configuration already exact to round-off is
            # not moved (at a nearly singular Jacobian a finite Newton step can be huge)
            JtJ = J.T @ J
            mu = 1e-12 * jnp.max(jnp.abs(JtJ), initial=0.0) + jnp.finfo(x.dtype).tiny
            dx_ls = _linalg.solve(JtJ + mu * jnp.eye(x.shape[0], dtype=x.dtype), -(J.T @ r))
            dx = jnp.where(jnp.isfinite(_max_abs(dx)), dx, dx_ls)
            dx = jnp.where(_max_abs(r) <= 2 * jnp.finfo(x.dtype).eps, 0.0, dx)
        else:
            # a step through a singular Jacobian stops at the last iterate (`sweep`'s
            # fallback then restarts the lane from the last solution)
            bad = ~jnp.isfinite(_max_abs(dx)) & jnp.isfinite(_max_abs(r))
            sing = sing | bad
            dx = jnp.where(sing, 0.0, dx)
        return x + dx, _max_abs(dx) / (1 + _max_abs(x)), sing, T, _max_abs(r)

    dxn = jnp.asarray(jnp.inf, x0.dtype)
    sing = jnp.asarray(False)
    T = jnp.zeros((x0.shape[-1], m_tangents), x0.dtype) if m_tangents else None
    # the fixed steps as a loop, one copy of the step to compile, unless the system is
    # small enough to unroll cheaply (the four-bar dynamics' right-hand side); with
    # none, no loop (a loop of zero steps is still traced, lowered and compiled)
    # `r0`: the residual at `x0`, from the first step (NaN until one is taken)
    x, r0 = x0, jnp.asarray(jnp.nan, x0.dtype)

    def fixed(i, c):
        x, dxn, sing, T, r0 = c
        x, dxn, sing, T, r = step(x, sing)
        return x, dxn, sing, T, jnp.where(i == 0, r, r0)

    if min_steps:
        x, dxn, sing, T, r0 = jax.lax.fori_loop(0, min_steps, fixed, (x0, dxn, sing, T, r0), unroll=_unroll(x0))

    def cond(carry):
        x, dxn, sing, _, _, i = carry
        return (i < max_steps) & (dxn > xtol) & jnp.isfinite(_max_abs(x)) & ~sing

    def body(carry):
        x, _, sing, _, r0, i = carry
        x_new, dxn_new, sing, T, r = step(x, sing)
        return x_new, dxn_new, sing, T, jnp.where(i == 0, r, r0), i + 1

    if max_steps > min_steps:
        x, dxn, sing, T, r0, steps = jax.lax.while_loop(cond, body, (x, dxn, sing, T, r0, jnp.asarray(min_steps)))
    else:
        steps = jnp.asarray(min_steps)
    r = _max_abs(f(x))
    ok = jnp.isfinite(r) & jnp.isfinite(_max_abs(x)) & (r <= atol)
    return x, r, steps, ok, dxn, sing, T, jnp.where(steps == 0, r, r0)


def _cause(ok, r, x_finite, steps, dxn, sing, max_steps, xtol, stalled: Any = False):
    """The status of a Newton solve: its real cause when it failed. Out of steps
    without halving the residual in 4 or more steps (`stalled`) is a motion limit too: Newton wanders
    about a non-zero minimum of the residual where no root exists."""
    nonfinite = ~jnp.isfinite(r) | ~x_finite
    out_of_steps = (steps >= max_steps) & (dxn > xtol) & ~stalled
    # otherwise Newton stalled at a non-zero minimum of the residual: no closed
    # configuration near the guess (beyond a motion limit)
    return RESULTS.where(
        ok,
        RESULTS.successful,
        RESULTS.where(
            sing,
            RESULTS.singular_configuration,
            RESULTS.where(
                nonfinite,
                RESULTS.nonfinite,
                RESULTS.where(out_of_steps, RESULTS.nonlinear_max_steps_reached, RESULTS.motion_limit),
            ),
        ),
    )


def root(
    fn: Residual,
    x0: Float[Array, " n"],
    u: Any,
    params: PyTree,
    *,
    atol: float = 1e-10,
    xtol: float = 1e-10,
    max_steps: int = 24,
    min_steps: int = 0,
    condition: bool = False,
    throw: bool = True,
    robust: bool = True,
) -> Solution:
    """Solve the closure `fn(x, u, params) = 0` by Newton's method from `x0`.

    Newton runs until the update falls below `xtol` (relative), after which one
    more quadratic step has already been applied, so the solution is at round-off;
    it is declared converged when the residual's max-norm is at most `atol`.
    Derivatives of `value` with respect to `u` and `params` (forward and reverse
    mode) come from the implicit function theorem via `jax.lax.custom_root`; the
    initial guess carries no derivative.

    **Arguments:**

    - `fn`: the residual, `fn(x, u, params) -> r` with `r.shape == x.shape == (n,)`;
      scale it so that its Jacobian is O(1) (the reported condition number is then
      meaningful).
    - `x0`: the warm start.
    - `u`, `params`: input and design parameters (pytrees of arrays).
    - `atol`, `xtol`, `max_steps`, `min_steps`: tolerances and step bounds
      (`min_steps` steps in a fixed loop, then a `while_loop` runs to `max_steps`).
    - `condition`: also compute the Jacobian's 1-norm condition number.
    - `throw`: if the solve failed, raise: eagerly a `diffmech.ClosureError`
      subclass naming the cause, the input and the residual; under `jit`/`vmap`
      Equinox's run-time error with the cause's message. With `throw=False`, read
      `result`: `successful`, or the real cause of a failure: `motion_limit`
      (Newton stalled at a non-zero minimum of the residual: no closed configuration
      near the guess), `nonfinite` (NaN or inf in the residual or the iterates:
      check the input and the parameters), `nonlinear_max_steps_reached`, or
      `singular_configuration` (a singular Jacobian stopped Newton; only with
      `robust=False`).
    - `robust`: where the Jacobian is singular, take a damped least-squares step
      instead of stopping (converges at singular configurations; costs a second
      small solve per step).

    **Returns:** a `Solution`.
    """
    check_callable("closure.root", "fn", fn, "a residual function fn(x, u, params)")
    check_scalar("closure.root", "atol", atol, positive=True)
    check_scalar("closure.root", "xtol", xtol, nonnegative=True)
    check_count("closure.root", "max_steps", max_steps, 0)
    check_count("closure.root", "min_steps", min_steps, 0)
    _check_numbers("closure.root", x0=x0, u=u, params=params)
    sol, _ = _root_program(
        fn,
        x0,
        u,
        params,
        atol=atol,
        xtol=xtol,
        max_steps=max_steps,
        min_steps=min_steps,
        condition=condition,
        robust=robust,
    )
    return sol.check(throw, "closure.root", u) if throw else sol


def _root(
    fn,
    x0,
    u,
    params,
    *,
    atol,
    xtol,
    max_steps,
    min_steps=0,
    condition=False,
    robust=True,
    implicit=True,
    tangents=False,
):
    """`root` without `throw`, and with `tangents` the closure's tangent `dx/du`
    `(n, m)` from its last Newton step (see `_newton`; else None), the input's
    components flattened. `implicit=False`: no derivative (the solve is not wrapped
    in `custom_root`, whose tracing costs as much as the solve's): for the
    continuations, whose solutions get their derivatives afterwards, in `_finish`."""
    x0 = jnp.asarray(x0)
    _warn_if_float32(x0)
    tol = tolerance(atol, x0.dtype)

    def f(x):
        return fn(x, u, params)

    _check_square("closure.root", fn, x0, u, params)

    n = x0.shape[-1]
    u_flat, unravel = jax.flatten_util.ravel_pytree(u)
    m = u_flat.shape[0] if tangents else 0

    def jac(y):
        if not tangents:
            return jacobian(fn)(y, u, params)
        own = getattr(fn, "jacobian", None)
        if own is not None:
            return own(y, u, params), jax.jacfwd(lambda v: fn(y, unravel(v), params))(u_flat)
        # one forward pass per unknown and input component: ∂f/∂x and ∂f/∂u together
        Jz = jax.jacfwd(lambda z: fn(z[:n], unravel(z[n:]), params))(jnp.concatenate([y, u_flat.astype(y.dtype)]))
        return Jz[:, :n], Jz[:, n:]

    def solve(f_, guess):
        x, r, steps, ok, dxn, sing, T, r_guess = _newton(
            f_,
            jac,
            guess,
            atol=tol,
            xtol=xtol,
            max_steps=max_steps,
            min_steps=min_steps,
            robust=robust,
            m_tangents=m,
        )
        x_finite = jnp.isfinite(_max_abs(x))
        # every step taken did not halve the residual: stalled at a non-zero minimum
        stalled = (steps >= 4) & ~(r <= 0.5 * r_guess)
        x = jnp.where(ok, x, guess)
        r = jnp.where(ok, r, r_guess)  # the residual at the value returned
        # aux kept floating-point: custom_root's JVP rule mishandles integer/bool aux
        aux = jnp.stack([v.astype(x.dtype) for v in (steps, ok, x_finite, sing, stalled)])
        return x, (r, aux, dxn, T)

    def tangent_solve(g, y):
        return _linalg.solve(jax.jacfwd(g)(y), y)

    if implicit:
        x, (r, aux, dxn, T) = jax.lax.custom_root(f, jax.lax.stop_gradient(x0), solve, tangent_solve, has_aux=True)
    else:
        x, (r, aux, dxn, T) = solve(f, jax.lax.stop_gradient(x0))
    r, aux, dxn, T = jax.lax.stop_gradient((r, aux, dxn, T))
    steps, ok, x_finite, sing, stalled = (
        aux[0].astype(jnp.int32),
        aux[1] > 0.5,
        aux[2] > 0.5,
        aux[3] > 0.5,
        aux[4] > 0.5,
    )
    if condition:
        cond = _linalg.condition_1(jacobian(fn)(jax.lax.stop_gradient(x), u, params))
    else:
        cond = jnp.asarray(jnp.nan, x.dtype)
    result = _cause(ok, r, x_finite, steps, dxn, sing, max_steps, xtol, stalled)
    return Solution(value=x, result=result, residual=r, steps=steps, condition=cond, last_step=dxn), T


# --------------------------------------------------------------------------- sweeps
#
# A sweep solves the closure at every input of a sequence. It is built from three
# small strategies, chosen by the mechanism family:
#
# - a predictor guesses every input's solution at once (`ClosedForm`: a family's
#   closed form; `Coarse`: continuation through every `stride`-th input, then cubic
#   Hermite interpolation with implicit-function-theorem tangents);
# - a corrector (`Newton`) applies a fixed number of Newton steps to all of them,
#   vmapped, and certifies each: residual at most `atol` and a last update small
#   enough that the error left (about its square) is round-off;
# - a fallback (`Continuation`) redoes, by sequential continuation from the last
#   certified input, the part of the sweep from the first input that was not
#   certified. It runs only where it is needed: skipped outright for one sweep, and
#   under `vmap` only on the lanes that need it (gathered in chunks).
#
# The checks (convergence, branch invariant, conditioning) are made on all solutions
# at once, and derivatives are attached at the end by the implicit function theorem
# at each solution (no iteration is differentiated).


_SUCCESS, _LIMIT, _SWITCH, _NOT_REACHED, _DEFERRED, _NONFINITE = (
    int(_code(r))
    for r in (
        RESULTS.successful,
        RESULTS.motion_limit,
        RESULTS.branch_switch,
        RESULTS.not_reached,
        RESULTS.deferred,
        RESULTS.nonfinite,
    )
)


_root_program = _cache.kept(data=True)(_root)


def _flat_inputs(inputs, n_in, dtype):
    """The inputs as one `(N, m)` array (each input's leaves flattened, in `dtype`)."""
    return jnp.concatenate([jnp.reshape(jnp.asarray(v, dtype), (n_in, -1)) for v in jax.tree.leaves(inputs)], axis=1)


def _arc_length(inputs, n_in, dtype):
    """Cumulative arc length along the (flattened) input path: the abscissa of the
    continuation's predictor."""
    flat = _flat_inputs(inputs, n_in, dtype)
    return jnp.concatenate([jnp.zeros((1,), dtype), jnp.cumsum(jnp.sqrt(jnp.sum(jnp.diff(flat, axis=0) ** 2, axis=1)))])


def _take(inputs, i):
    return jax.tree.map(lambda v: v[i], inputs)


class Convergence(eqx.Module):
    """When Newton stops on a closure solve: its update fell below `xtol` (relative;
    one more quadratic step has then been applied), or `max_steps` were taken; the
    solution is converged when the residual's max-norm is at most `atol`."""

    atol: float = 1e-10
    xtol: float = 1e-10
    max_steps: int = 24


class Branch(eqx.Module):
    """Which branch (assembly mode) a sweep stays on.

    - `invariant`: a callable `invariant(x, u, params) -> scalar` whose sign must not
      change along the sweep, `"det"` (the closure Jacobian's determinant, which
      changes sign only through a singular configuration), or None (not checked);
    - `sign`: the sign it must keep (None: its sign at the first input);
    - `max_step`: the longest input step the continuation may take at once (the
      inputs' arc length; None: no limit): every solution is then on the branch that
      continuation along the inputs' path reaches (see `sweep`).
    """

    invariant: Callable[[Float[Array, " n"], Any, PyTree], Float[Array, ""]] | str | None = None
    sign: Float[Array, ""] | float | None = None
    max_step: Float[Array, ""] | float | None = None


class SweepFields(TypedDict, total=False):
    """A sweep's separate keywords (its older form, kept): `Convergence`'s fields, and
    `Branch`'s `sign` and `max_step` as `branch_sign`, `max_step`."""

    atol: float
    xtol: float
    max_steps: int
    branch_sign: Float[Array, ""] | float | None
    max_step: Float[Array, ""] | float | None


def _settings(owner: str, branch, convergence, separate: dict) -> tuple[Branch, Convergence]:
    """A sweep's `Branch` and `Convergence` from its `branch=` (a `Branch`, an
    invariant or None), `convergence=` and separate keywords."""
    separate = dict(separate)
    fields = pick(separate, ("atol", "xtol", "max_steps"))
    conv = options(owner, "convergence", convergence, Convergence, fields, "a closure.Convergence or None")
    parts = pick(separate, ("branch_sign", "max_step"))
    if separate:
        raise ArgumentTypeError(f"{owner}: unexpected keyword argument {sorted(separate)[0]!r}")
    if isinstance(branch, Branch):
        if parts:
            raise ArgumentTypeError(
                f"{owner}: give `branch=Branch(...)` or its fields ({', '.join(sorted(parts))}) by keyword, not both"
            )
        return branch, conv
    return Branch(branch, parts.get("branch_sign"), parts.get("max_step")), conv


class _Options(eqx.Module):
    """What every strategy needs to know of the sweep (static numbers, callables)."""

    fn: Residual = eqx.field(static=True)
    branch: Callable | str | None = eqx.field(static=True)  # a callable, "det" or None
    atol: float = eqx.field(static=True)
    xtol: float = eqx.field(static=True)
    max_steps: int = eqx.field(static=True)
    condition: bool = eqx.field(static=True, default=False)
    # the longest input step (arc length of the flattened inputs) the continuation takes
    # at once, a scalar array (longer steps are subdivided), or None (no limit)
    max_step: Any = None
    # the state's own components (a boolean array), or None (all): a padded system's
    # conditioning is its own block's (`linkage._plan`: the padding is an identity block)
    active: Any = None

    @property
    def needs_jacobian(self) -> bool:
        """Whether each solution's Jacobian is wanted (the determinant as the branch
        invariant, or the conditioning): evaluated once per solution for both."""
        return self.condition or self.branch == "det"

    def checks(self, J):
        """`(branch value, condition)` at a solution from its Jacobian (each NaN where
        not asked for): one elimination of `[J | I]` for both."""
        inv, det = _linalg.solve_det(J, jnp.eye(J.shape[-1], dtype=J.dtype))
        nan = jnp.asarray(jnp.nan, J.dtype)
        cond = _linalg.condition_from_inverse(J, inv, self.active) if self.condition else nan
        return (det if self.branch == "det" else nan), cond


def _check_numbers(owner, **trees) -> None:
    """Every leaf of each named pytree is numbers (an array, a number, a list of them):
    a string or an object is named here, not inside the user's residual."""
    for name, tree in trees.items():
        for leaf in jax.tree.leaves(tree):
            if hasattr(leaf, "dtype") and np.dtype(leaf.dtype).kind in "biufc":
                continue
            try:
                ok = np.asarray(leaf).dtype.kind in "biufc"
            except (TypeError, ValueError):
                ok = False
            if not ok:
                raise ArgumentTypeError(f"{owner}: `{name}` must hold arrays of numbers; got {leaf!r:.80}")


def _check_square(owner, fn, x0, u, params, name="x0") -> None:
    """Shapes are known while tracing: an `x0` that is not a non-empty vector, or a
    residual that is not square, is named once per compilation."""
    if x0.ndim != 1:
        raise ValueError(f"{owner}: `{name}` must be a non-empty 1-D array (n,); got shape {x0.shape}")
    r_shape = jax.eval_shape(fn, x0, u, params).shape
    if r_shape != x0.shape:
        raise ValueError(
            f"{owner}: the residual `fn(x, u, params)` has shape {r_shape} for `x` of shape {x0.shape}: it must "
            "be square, one equation per unknown (and `inputs` one input per row)"
        )


def _check_like_input(owner, name, rate, u) -> None:
    """An input's rate has the input's structure and shapes (static: also under `jit`)."""
    shapes = lambda t: jax.tree.map(np.shape, t)  # noqa: E731
    if jax.tree.structure(rate) != jax.tree.structure(u) or shapes(rate) != shapes(u):
        raise ValueError(f"{owner}: `{name}` must have the input's shape {shapes(u)}; got {shapes(rate)}")


def _check_inputs(owner, inputs) -> None:
    """A sweep's inputs: leaves sharing a leading axis of at least one input."""
    leaves = jax.tree.leaves(inputs)
    lead = {np.shape(v)[0] if np.ndim(v) else None for v in leaves}
    if not leaves or None in lead or len(lead) != 1 or 0 in lead:
        raise ValueError(
            f"{owner}: `inputs` must be arrays sharing a leading axis of N ≥ 1 inputs; got shapes "
            f"{[np.shape(v) for v in leaves]}"
        )


def _options(fn, branch: Branch, conv: Convergence, condition, dtype, active=None) -> _Options:
    return _options_of(
        fn, branch.invariant, conv.atol, conv.xtol, conv.max_steps, condition, branch.max_step, dtype, active
    )


def _options_of(fn, branch, atol, xtol, max_steps, condition, max_step, dtype, active=None) -> _Options:
    check_callable("closure", "fn", fn, "a residual function fn(x, u, params)")
    check_scalar("closure", "atol", atol, positive=True)
    check_scalar("closure", "xtol", xtol, nonnegative=True)
    check_count("closure", "max_steps", max_steps, 0)
    if max_step is not None and not is_traced(max_step) and not float(max_step) > 0:
        raise ValueError(f"closure: max_step must be a positive number or None; got {max_step!r}")
    return _Options(
        fn=fn,
        branch=branch,
        atol=tolerance(atol, dtype),
        xtol=xtol,
        max_steps=max_steps,
        condition=condition,
        max_step=None if max_step is None else jnp.asarray(max_step, dtype),
        active=active,
    )


class _Rows(eqx.Module):
    """Per-input results of a sweep under construction (`code`: RESULTS codes)."""

    x: Float[Array, "N n"]
    ok: Bool[Array, " N"]
    code: Int[Array, " N"]
    residual: Float[Array, " N"]
    steps: Int[Array, " N"]
    condition: Float[Array, " N"]  # NaN where not converged or not asked for


# --------------------------------------------------------------------------- continuation


def _extrapolate(xs, ss, count, s):
    """Lagrange extrapolation to abscissa `s` through the last min(count, 3) accepted
    solutions `xs` (newest first) at abscissae `ss`."""
    x1, x2, x3 = xs
    s1, s2, s3 = ss

    def safe(d):
        return jnp.where(d != 0, d, 1.0)

    lin = x1 + (x1 - x2) * ((s - s1) / safe(s1 - s2))
    w1 = (s - s2) * (s - s3) / safe((s1 - s2) * (s1 - s3))
    w2 = (s - s1) * (s - s3) / safe((s2 - s1) * (s2 - s3))
    w3 = (s - s1) * (s - s2) / safe((s3 - s1) * (s3 - s2))
    quad = w1 * x1 + w2 * x2 + w3 * x3
    return jnp.where(count >= 3, quad, jnp.where(count >= 2, lin, x1))


def _continue(opts: _Options, params, inputs, arc, rows: _Rows, start, sign0, derive_sign, robust=True, tangents=False):
    """Sequential continuation from input `start` (an int array) to the end.

    Rows before `start` are kept (they are the history of the quadratic predictor);
    each later input is solved by Newton to convergence (`root`, damped where the
    Jacobian is singular) from the extrapolation of the last three accepted
    solutions; the first failure (no convergence: `motion_limit`; branch invariant
    changed sign: `branch_switch`) ends the loop, and every later row is
    `not_reached`, holding the last accepted solution. With `derive_sign`, the branch
    sign is taken from the solution at input 0. Returns `(rows, sign, Ts)`: with
    `tangents`, `Ts` `(N, n, m)` holds each input's closure tangent `dx/du` from its
    last Newton step (see `_newton`), else None.

    With `opts.max_step`, a step between consecutive inputs longer than it is taken in
    equal substeps no longer than it (at most `_MAX_SUBSTEPS`), each solved, and
    checked against the branch invariant, as an input is: the path between two inputs
    is followed, not jumped (a Newton iteration from a far guess can converge on
    another assembly with the same sign of the invariant). Where the path turns back
    (the input step reverses its direction) the predictor restarts from the last
    solution (an extrapolation through the turn would point the wrong way).
    """
    N = arc.shape[0]
    x_prev = [rows.x[jnp.maximum(start - 1 - j, 0)] for j in range(3)]
    s_prev = [arc[jnp.maximum(start - 1 - j, 0)] for j in range(3)]
    count = jnp.minimum(start, 3)
    # only distinct abscissae extrapolate (the rows before `start` may repeat an input)
    count = jnp.where((count >= 2) & (s_prev[0] == s_prev[1]), 1, count)
    count = jnp.where((count >= 3) & (s_prev[1] == s_prev[2]), 2, count)
    flat_in = _flat_inputs(inputs, N, arc.dtype)
    sub = opts.max_step is not None

    def cond(c):
        i, _, _, _, _, alive, _, _, _, _ = c
        return (i < N) & alive

    def body(c):
        i, k, xs, ss, count, _, sign, out, Ts, d_prev = c
        if sub:
            # the step from the previous input to input i, in `m` substeps; this is the (k+1)-th
            ip = jnp.maximum(i - 1, 0)
            length = arc[i] - arc[ip]
            m = jnp.clip(jnp.ceil(length / opts.max_step), 1, _MAX_SUBSTEPS).astype(jnp.int32)
            final = k + 1 >= m
            frac = (k + 1).astype(arc.dtype) / m.astype(arc.dtype)
            u = jax.tree.map(lambda v: jnp.where(final, v[i], v[ip] + frac * (v[i] - v[ip])), inputs)
            s_here = jnp.where(final, arc[i], arc[ip] + frac * length)
            d = flat_in[i] - flat_in[ip]
            turned = (k == 0) & (jnp.dot(d, d_prev) < 0)  # the path turns back here
            count = jnp.where(turned, jnp.minimum(count, 1), count)
        else:
            final, u, s_here, d = jnp.asarray(True), _take(inputs, i), arc[i], d_prev
        guess = jnp.where(count > 0, _extrapolate(xs, ss, count, s_here), out.x[i])
        sol, T_last = _root(
            opts.fn,
            guess,
            u,
            jax.lax.stop_gradient(params),
            atol=opts.atol,
            xtol=opts.xtol,
            max_steps=opts.max_steps,
            robust=robust,
            implicit=False,
            tangents=tangents,
        )
        nan = jnp.asarray(jnp.nan, sol.value.dtype)
        b_val, cond = opts.checks(jacobian(opts.fn)(sol.value, u, params)) if opts.needs_jacobian else (nan, nan)
        if opts.branch is None:
            b_ok = jnp.asarray(True)
        else:
            b = jnp.sign(b_val if isinstance(opts.branch, str) else opts.branch(sol.value, u, params))
            sign = jnp.where(derive_sign & (i == 0), b, sign)
            b_ok = b == sign
        ok = sol.converged & b_ok
        # a failed input of a sweep is a motion limit (the sweep cannot go on), unless
        # its values were not finite (a NaN input or parameter is no motion limit)
        failed = jnp.where(_code(sol.result) == _NONFINITE, _NONFINITE, _LIMIT)
        code = jnp.where(sol.converged, jnp.where(b_ok, _SUCCESS, _SWITCH), failed).astype(jnp.int32)
        write = final | ~ok  # an input's row: at its last substep, or where a substep failed
        if tangents:
            assert T_last is not None  # `_root` returns the tangent when asked
            Ts = Ts.at[i].set(jnp.where(write, T_last, Ts[i]))

        def put(a, v):
            return a.at[i].set(jnp.where(write, v, a[i]))

        out = _Rows(
            x=put(out.x, jnp.where(ok, sol.value, xs[0])),
            ok=put(out.ok, ok),
            code=put(out.code, code),
            residual=put(out.residual, sol.residual),
            steps=put(out.steps, sol.steps),
            condition=put(out.condition, jnp.where(ok, cond, nan)),
        )
        # the predictor's history: a repeated input (no step) adds no point (three
        # points at one abscissa have no extrapolation)
        new = ok & ((count == 0) | (s_here != ss[0]))
        xs = tuple(jnp.where(new, a, b) for a, b in zip((sol.value, xs[0], xs[1]), xs))
        ss = tuple(jnp.where(new, a, b) for a, b in zip((s_here, ss[0], ss[1]), ss))
        d_prev = jnp.where(ok & (jnp.dot(d, d) > 0), d, d_prev)
        step_on = ok & ~final  # another substep of the same input
        i_next = jnp.where(step_on, i, i + 1)
        k_next = jnp.where(step_on, k + 1, 0)
        return i_next, k_next, xs, ss, count + new.astype(count.dtype), ok, sign, out, Ts, d_prev

    n = rows.x.shape[-1]
    m_in = flat_in.shape[1]
    Ts0 = jnp.zeros((N, n, m_in) if tangents else (0,), rows.x.dtype)
    # the direction of the step into `start` (a turn at `start` restarts the predictor)
    d0 = jnp.where(start >= 2, flat_in[jnp.maximum(start - 1, 0)] - flat_in[jnp.maximum(start - 2, 0)], 0.0)
    k0 = jnp.asarray(0, jnp.int32)
    c0 = (start, k0, tuple(x_prev), tuple(s_prev), count, jnp.asarray(True), sign0, rows, Ts0, d0)
    stop, _, xs, _, _, _, sign, out, Ts, _ = jax.lax.while_loop(cond, body, c0)
    return _not_reached_after(out, stop, xs[0]), sign, (Ts if tangents else None)


def _not_reached_after(out: _Rows, stop, last_x) -> _Rows:
    """Every row from `stop` on follows a failure: not reached, holding the last
    accepted solution `last_x`."""
    after = jnp.arange(out.x.shape[0]) >= stop
    return _Rows(
        x=jnp.where(after[:, None], last_x, out.x),
        ok=out.ok & ~after,
        code=jnp.where(after, _NOT_REACHED, out.code).astype(jnp.int32),
        residual=jnp.where(after, jnp.nan, out.residual),
        steps=jnp.where(after, 0, out.steps).astype(jnp.int32),
        condition=jnp.where(after, jnp.nan, out.condition),
    )


# the most substeps one input step is divided into (`_continue`): a step longer than
# this many `max_step`s is taken in longer substeps
_MAX_SUBSTEPS = 4096


def continuation(
    fn: Residual,
    x0: Float[Array, " n"],
    inputs: Any,
    params: PyTree,
    *,
    branch: Branch | Callable[[Float[Array, " n"], Any, PyTree], Float[Array, ""]] | str | None = None,
    convergence: Convergence | None = None,
    condition: bool = True,
    throw: bool = False,
    **separate: Unpack[SweepFields],
) -> "SweepSolution":
    """Follow the closure through `inputs` one input after the other (sequential
    continuation): the first input is solved from `x0`, each later one by Newton to
    convergence from the quadratic extrapolation of the last three solutions, and the
    loop stops at the first failure (later rows `not_reached`).

    Needed where no guess for every input exists before solving (large input steps,
    a warm start for a later parallel pass, the coarse nodes of `Coarse`); `sweep`
    is faster wherever its predictor applies.

    **Arguments** as `sweep`: `fn`, `x0`, `params`; `inputs` (a pytree with leading
    axis `N`); `branch` (a `Branch`, or its invariant alone: a callable
    `(x, u, params) -> scalar`, `"det"` or None); `convergence`; `condition`;
    `throw`; the separate keywords `atol`, `xtol`, `max_steps`, `branch_sign`,
    `max_step`.

    **Returns:** a `SweepSolution` (`steps` per input: the Newton steps it took).
    """
    br, conv = _settings("closure.continuation", branch, convergence, dict(separate))
    _check_inputs("closure.continuation", inputs)
    _check_numbers("closure.continuation", x0=x0, inputs=inputs, params=params)
    sol = _continuation_program(
        fn,
        x0,
        inputs,
        params,
        br.sign,
        branch=br.invariant,
        atol=conv.atol,
        xtol=conv.xtol,
        max_steps=conv.max_steps,
        condition=condition,
        max_step=br.max_step,
    )
    return finish(sol, throw, "closure.continuation")


def _continuation(fn, x0, inputs, params, branch_sign, *, branch, atol, xtol, max_steps, condition, max_step=None):
    x0 = jax.lax.stop_gradient(jnp.asarray(x0))
    _warn_if_float32(x0)
    _check_square("closure.continuation", fn, x0, jax.tree.map(lambda v: v[0], inputs), params)
    opts = _options_of(fn, branch, atol, xtol, max_steps, condition, max_step, x0.dtype)
    rows, _, _ = _continuation_rows(opts, x0, jax.lax.stop_gradient(inputs), jax.lax.stop_gradient(params), branch_sign)
    return _finish(opts, inputs, params, rows)


_continuation_program = _cache.kept(data=True)(_continuation)


def _continuation_rows(opts, x0, inputs, params, branch_sign, robust=True, tangents=False):
    n_in = jax.tree.leaves(inputs)[0].shape[0]
    arc = _arc_length(inputs, n_in, x0.dtype)
    rows = _Rows(
        x=jnp.broadcast_to(x0, (n_in,) + x0.shape),
        ok=jnp.zeros((n_in,), bool),
        code=jnp.full((n_in,), _NOT_REACHED, jnp.int32),
        residual=jnp.full((n_in,), jnp.nan, x0.dtype),
        steps=jnp.zeros((n_in,), jnp.int32),
        condition=jnp.full((n_in,), jnp.nan, x0.dtype),
    )
    sign0 = jnp.asarray(1.0 if branch_sign is None else branch_sign, x0.dtype)
    return _continue(
        opts, params, inputs, arc, rows, jnp.asarray(0), jnp.sign(sign0), branch_sign is None, robust, tangents
    )


# --------------------------------------------------------------------------- strategies


class Prediction(eqx.Module):
    """Guesses for every input of a sweep.

    - `guess` `(N, n)`;
    - `reached` `(N,)`: False where the predictor could not reach the input (beyond
      a motion limit it met);
    - `unreachable` `(N,)`: where not reached, True if the predictor proves the input
      unreachable (a closed form's assembly condition fails), so no fallback is tried.
    """

    guess: Float[Array, "N n"]
    reached: Bool[Array, " N"]
    unreachable: Bool[Array, " N"]


class AbstractPredictor(eqx.Module):
    """Predicts every input's solution of a sweep at once (see `sweep`)."""

    @abc.abstractmethod
    def predict(self, opts: _Options, x0, inputs, params) -> Prediction:
        """The guesses for every input (`inputs`, a leading axis) from the state `x0`
        at the sweep's start and the sweep's `params`."""


class AbstractClosedForm(AbstractPredictor):
    """A closed form's prediction, `solution` evaluated for all inputs at once: the
    behaviour `ClosedForm` and a family's own closed forms (whose type says how the
    family certifies them) share."""

    solution: eqx.AbstractVar[Callable[[Any, PyTree], tuple[Float[Array, " n"], Bool[Array, ""]]]]

    def __check_init__(self):
        if not callable(self.solution):
            raise ValueError(
                f"closure.ClosedForm: `solution` must be a function (u, params) -> (x, ok); got {self.solution!r:.80}"
            )

    def predict(self, opts, x0, inputs, params):
        x, feasible = jax.vmap(self.solution, in_axes=(0, None))(inputs, params)
        n_in = jax.tree.leaves(inputs)[0].shape[0]
        if np.shape(x) != (n_in,) + tuple(np.shape(x0)) or np.shape(feasible) != (n_in,):
            raise ValueError(
                f"closure.ClosedForm: `solution(u, params)` must return (x, ok), x of the state's shape "
                f"{tuple(np.shape(x0))} and ok a boolean scalar; got shapes {np.shape(x)[1:]} and "
                f"{np.shape(feasible)[1:]}"
            )
        return Prediction(guess=x, reached=feasible, unreachable=~feasible)


class ClosedForm(AbstractClosedForm):
    """A family's closed form: `solution(u, params) -> (x, assemblable)`, evaluated
    for all inputs at once (vmapped). Where `assemblable` is False the input is
    reported as a motion limit without a fallback.

    **Arguments:** `solution`: for one input `u` and the sweep's `params`, the state
    `x` `(n,)` on the branch to follow and a boolean scalar, False where the
    mechanism cannot be assembled at `u`.
    """

    solution: Callable[[Any, PyTree], tuple[Float[Array, " n"], Bool[Array, ""]]] = eqx.field(static=True)


def hermite(x0, x1, v0, v1, h, s):
    """Cubic Hermite interpolation at fraction `s` of an interval of length `h`
    between values `x0`, `x1` with slopes `v0`, `v1`."""
    s2, s3 = s * s, s * s * s
    return (2 * s3 - 3 * s2 + 1) * x0 + (s3 - 2 * s2 + s) * h * v0 + (-2 * s3 + 3 * s2) * x1 + (s3 - s2) * h * v1


class Coarse(AbstractPredictor):
    """Continuation (`continuation`) through every `stride`-th input and the last,
    then cubic Hermite interpolation between those nodes, with slopes from the
    implicit function theorem (the input's slope from differences of the inputs).
    Inputs past the last node the continuation reached are not reached."""

    stride: int = eqx.field(static=True, default=6)

    def __check_init__(self):
        check_count("closure.Coarse", "stride", self.stride)

    def predict(self, opts, x0, inputs, params):
        n_in = jax.tree.leaves(inputs)[0].shape[0]
        nodes = np.asarray(sorted(set(range(0, n_in, self.stride)) | {n_in - 1}))
        node_in = _take(inputs, nodes)
        # undamped Newton at the nodes (no second, least-squares solve per step): a node
        # it cannot solve ends the prediction there, and the fallback takes over. No
        # branch check at the nodes: `sweep` checks every corrected input (a prediction
        # on another branch fails that check, and the fallback locates the switch)
        rows, _, Ts = _continuation_rows(
            dataclasses.replace(opts, branch=None, condition=False), x0, node_in, params, None, False, True
        )
        assert Ts is not None
        if nodes.shape[0] == n_in:
            return Prediction(guess=rows.x, reached=rows.ok, unreachable=jnp.zeros((n_in,), bool))

        # the input's rate per index step at the nodes, by differences of the inputs
        # (central inside, one-sided at the ends): a predictor needs no more
        def slope(v):
            v = jnp.asarray(v, rows.x.dtype)
            return jnp.gradient(v, axis=0)[nodes] if v.shape[0] > 1 else jnp.zeros_like(v[nodes])

        du = jax.tree.map(slope, inputs)
        # tangents by the implicit function theorem, solved with each node's last
        # Newton step (no second Jacobian or solve to compile)
        du_flat = jax.vmap(lambda d: jax.flatten_util.ravel_pytree(d)[0])(du)
        dx = jnp.einsum("knm,km->kn", Ts, du_flat.astype(Ts.dtype))
        k = jnp.arange(n_in)
        j = jnp.clip(jnp.searchsorted(jnp.asarray(nodes), k, side="right") - 1, 0, nodes.shape[0] - 2)
        nodes_a = jnp.asarray(nodes)
        h = (nodes_a[j + 1] - nodes_a[j]).astype(rows.x.dtype)
        frac = (k - nodes_a[j]).astype(rows.x.dtype) / h
        guess = jax.vmap(hermite)(rows.x[j], rows.x[j + 1], dx[j], dx[j + 1], h, frac)
        reached = rows.ok[j] & rows.ok[j + 1] & _straight(opts, inputs, nodes)[j]
        guess = jnp.where(reached[:, None], guess, rows.x[j])
        return Prediction(guess=guess, reached=reached, unreachable=jnp.zeros((n_in,), bool))


def _straight(opts, inputs, nodes):
    """Per interval between consecutive `nodes`: whether the inputs go straight from one
    node to the next (the path's length equals the distance between the nodes: a
    scalar input monotone there) and, with `opts.max_step`, over no more than it. Only
    there is an interpolant between the nodes' solutions a guess on the same branch;
    elsewhere the fallback follows the inputs one by one."""
    n_in = jax.tree.leaves(inputs)[0].shape[0]
    dtype = jnp.result_type(float)
    flat = _flat_inputs(inputs, n_in, dtype)
    arc = _arc_length(inputs, n_in, dtype)
    path = jnp.diff(arc[nodes])
    chord = jnp.sqrt(jnp.sum(jnp.diff(flat[nodes], axis=0) ** 2, axis=1))
    ok = path <= chord * (1 + 1e-9) + jnp.finfo(dtype).tiny
    if opts.max_step is not None:
        ok = ok & (path <= opts.max_step * (1 + 1e-9))
    return ok


class Newton(eqx.Module):
    """The corrector: `steps` Newton steps on every input at once (a fixed number: a
    convergence-tested `while_loop` under `vmap` costs more here even when it
    iterates no further).

    **Arguments:**

    - `steps`: Newton steps per input (0: certify the predictor's guesses as they are);
    - `certify`: the largest relative size of the last update for which an input is
      certified (the error left is about its square);
    - `exact`: a guess whose residual is at most `exact`·ε·(1 + |x|∞) is already exact
      (round-off) and is not moved.
    """

    steps: int = eqx.field(static=True, default=3)
    certify: float = eqx.field(static=True, default=1e-9)
    # a guess is exact when its residual is at most `exact`·ε·(1 + |x|∞): the round-off
    # of evaluating a residual of a few O(|x|) terms; 2ε was too tight (a closed form's
    # exact guess then paid a sequential fallback; docs/benchmarks.md, "Measurements behind the code")
    exact: float = eqx.field(static=True, default=8.0)

    def __check_init__(self):
        check_count("closure.Newton", "steps", self.steps, 0)
        check_scalar("closure.Newton", "certify", self.certify, positive=True)
        check_scalar("closure.Newton", "exact", self.exact, positive=True)

    def correct(self, fn, guess, u, params):
        """Returns `(x, residual, last_step, exact_start)`: the iterate, the max-norm of
        its residual, the relative size of the last update (the error left is about
        its square) and whether the guess already satisfied the closure to
        round-off (then a singular Jacobian's non-finite step is not taken)."""
        return self._correct(fn, guess, u, params)[:4]

    def certified(self, x, res, last, exact, atol):
        """Which corrected iterates (`correct`'s outputs, batched) are certified: finite, the residual's
        max-norm within `atol`, and the last update within `certify` (or the guess
        exact as it came)."""
        return jnp.all(jnp.isfinite(x), axis=-1) & (res <= atol) & ((last <= self.certify) | exact)

    def _correct(self, fn, guess, u, params, with_jacobian: bool = False, freeze=False):
        """`correct`, and with `with_jacobian` the Jacobian at the iterate (else None),
        from the loop's own residual-and-Jacobian pass one iteration past the last
        step: one copy of that code serves the steps, the branch invariant and the
        conditioning (evaluating the Jacobian apart costs more to compile than the
        extra pass costs to run). `freeze`: take no step (the values at `guess`
        itself)."""

        x = guess
        eps2 = self.exact * jnp.finfo(x.dtype).eps * (1 + _max_abs(x))
        last = jnp.asarray(jnp.inf, x.dtype)  # with no step, only an exact guess is certified
        if not with_jacobian:

            def f(x):
                return fn(x, u, params)

            def jac(x):
                return jacobian(fn)(x, u, params)

            r = f(x)
            exact_start = _max_abs(r) <= eps2

            def step(_, carry):
                x, r, _ = carry
                dx = _linalg.step(jac(x), -r)
                dx = jnp.where((_max_abs(r) <= eps2) | freeze, 0.0, dx)  # already exact: do not move
                x = x + dx
                return x, f(x), _max_abs(dx) / (1 + _max_abs(x - dx))

            # a loop (not unrolled above 4 unknowns): one copy of the step to compile
            # (Stephenson-II sweep: XLA 2.35 s → 1.74 s, run time unchanged); none for
            # no step (a closed form certified as it came: an empty loop still cost the
            # four-bar's eager sweep 0.1–0.3 s of tracing under `vmap`)
            if self.steps:
                x, r, last = jax.lax.fori_loop(0, self.steps, step, (x, r, last), unroll=_unroll(x))
            return x, _max_abs(r), last, exact_start, None

        jacobian_of = jacobian(fn)

        def body(k, carry):
            # iteration k evaluates the residual and Jacobian at the k-th iterate and,
            # for k < steps, takes the step (the last iteration only evaluates; `k` is
            # not batched, so the solve is skipped there, not masked)
            x, _, _, last, exact_start = carry
            # (the residual evaluated on its own: taken from the forward passes' primal,
            # it rounded differently in a batch of sweeps and in one sweep at XLA's -O0,
            # and the two then converged to different round-off points near a limit)
            r, J = fn(x, u, params), jacobian_of(x, u, params)
            exact_start = jnp.where(k == 0, _max_abs(r) <= eps2, exact_start)

            def newton():
                dx = _linalg.step(J, -r)
                return jnp.where((_max_abs(r) <= eps2) | freeze, 0.0, dx)  # already exact: do not move

            dx = jax.lax.cond(k < self.steps, newton, lambda: jnp.zeros_like(x))
            last = jnp.where(k < self.steps, _max_abs(dx) / (1 + _max_abs(x)), last)
            return x + dx, r, J, last, exact_start

        init = (x, jnp.zeros_like(x), jnp.zeros((x.shape[-1],) * 2, x.dtype), last, jnp.asarray(False))
        if not self.steps:  # the one evaluation, without a loop (as above)
            r, J = fn(x, u, params), jacobian_of(x, u, params)
            return x, _max_abs(r), last, _max_abs(r) <= eps2, J
        x, r, J, last, exact_start = jax.lax.fori_loop(0, self.steps + 1, body, init, unroll=_unroll(x))
        return x, _max_abs(r), last, exact_start, J


class Continuation(eqx.Module):
    """The fallback: sequential continuation (`continuation`) from the last certified
    input through the rest of the sweep, run only where the parallel pass left an
    input uncertified that its predictor did not prove unreachable. Under `vmap` the
    lanes that need it are gathered in chunks of `chunk`."""

    chunk: int = eqx.field(static=True, default=16)


class Deferred(eqx.Module):
    """No fallback in this program: the inputs from the first one the parallel pass
    left uncertified (and its predictor did not prove unreachable) are returned
    unconverged with status `RESULTS.deferred`, for the caller to solve again with
    `Continuation()`. The program is then the predictor and corrector alone, about
    half the compile time of one with the sequential engine; the eager entry points
    run it first and compile the fallback's program only if an input needs it."""


def has_deferred(status: RESULTS) -> Bool[Array, ""]:
    """Whether any input of a (batch of) sweep(s) was left `RESULTS.deferred`.

    **Arguments:** `status`: a sweep's per-input `RESULTS` (any batch shape).

    **Returns:** a boolean scalar (solve such sweeps again with the default fallback).
    """
    if not isinstance(status, RESULTS) and not (hasattr(status, "dtype") and np.issubdtype(status.dtype, np.integer)):
        raise ArgumentTypeError(f"closure.has_deferred: `status` must be a sweep's RESULTS status; got {status!r:.80}")
    return jnp.any(_code(status) == _DEFERRED)


def when_needed(need, operands, run, chunk):
    """`run(operands)` where `need`, else `operands["rows"]` unchanged.

    One sweep: a `lax.cond`, skipped when not needed. Under `vmap` (a batch of
    sweeps) a `cond` would run both branches on every lane; instead the lanes that
    need it are gathered in chunks of `chunk` and only those chunks are run.
    """

    # values that `run` closes over (a branch invariant's parameters, say) become
    # explicit operands, so that a batched one is seen as batched by the rule below
    run_closed, consts = jax.closure_convert(run, operands)
    operands = (operands, tuple(consts))

    def run_explicit(o):
        return run_closed(o[0], *o[1])

    @jax.custom_batching.custom_vmap
    def maybe(need, operands):
        return jax.lax.cond(need, run_explicit, lambda o: o[0]["rows"], operands)

    @maybe.def_vmap
    def _batched(axis_size, in_batched, need, operands):
        need_b, ops_b = in_batched
        need = need if need_b else jnp.broadcast_to(need, (axis_size,))
        operands = jax.tree.map(
            lambda a, b: a if b else jnp.broadcast_to(a, (axis_size,) + jnp.shape(a)), operands, ops_b
        )
        c = min(chunk, axis_size)
        n_chunks = -(-axis_size // c)
        order = jnp.argsort(~need, stable=True)  # lanes that need the pass first
        order = jnp.concatenate([order, order[: n_chunks * c - axis_size]])
        count = jnp.sum(need)
        out = operands[0]["rows"]

        def body(carry):
            i, out = carry
            lanes = jax.lax.dynamic_slice(order, (i * c,), (c,))
            new = jax.vmap(run_explicit)(jax.tree.map(lambda a: a[lanes], operands))
            valid = i * c + jnp.arange(c) < count

            def put(o, n):
                keep = jnp.reshape(valid, (c,) + (1,) * (n.ndim - 1))
                return o.at[lanes].set(jnp.where(keep, n, o[lanes]))

            return i + 1, jax.tree.map(put, out, new)

        _, out = jax.lax.while_loop(lambda carry: carry[0] * c < count, body, (jnp.asarray(0), out))
        return out, jax.tree.map(lambda _: True, out)

    return maybe(need, operands)


def vmap_chunked(fn: Callable, xs: PyTree, chunk: int | None) -> PyTree:
    """`jax.vmap(fn)(xs)`, computed `chunk` elements at a time (`xs`: a pytree whose
    leaves share a leading axis `n`).

    The chunks run one after the other in a loop, each written in place into the
    output, so that each chunk's intermediate arrays stay in the CPU's caches. The last
    chunk overlaps the one before it instead of padding the input (slicing a padded
    output copies all of it; both measured on the benchmarks page, "Measurements behind
    the code"). Worth it for many cheap, element-wise problems (a batch of
    sweeps) and for batches of adaptive ODE solves, whose lanes then wait in lockstep
    only for the slowest of their chunk (8192 four-bar trajectories: 7.4 k simulated
    s/s in one `vmap`, 13.1 k in chunks of 128; `benchmarks/bench_fourbar_dynamics.py`);
    the 42×42 solves of a parallel mechanism's samples gained nothing. On a GPU use one
    `vmap` (wide kernels).

    **Arguments:** `fn`: a function of one element of `xs`; `xs`: the batch, a pytree
    whose leaves share the leading axis `n`; `chunk`: elements per chunk (None or ≥ n:
    one `vmap`).

    **Returns:** `jax.vmap(fn)(xs)`'s values and derivatives (to round-off: a chunk's
    program is compiled on its own and may round a few values differently; an adaptive
    solver's step choices can follow that round-off, so an ODE's results agree to its
    tolerance, as a `vmap` and single runs of the same solves do).
    """
    if chunk is not None:
        check_count("closure.vmap_chunked", "chunk", chunk)
    leads = {np.shape(v)[0] if np.ndim(v) else None for v in jax.tree.leaves(xs)}
    if len(leads) != 1 or None in leads:
        raise ValueError(
            f"closure.vmap_chunked: the leaves of `xs` must share a leading axis; got {sorted(map(str, leads))}"
        )
    vfn = jax.vmap(fn)
    n = jax.tree.leaves(xs)[0].shape[0]
    if chunk is None or n <= chunk:
        return vfn(xs)

    def run(i, out):
        start = jnp.minimum(i * chunk, n - chunk)  # the last chunk ends at the batch's end
        part = vfn(jax.tree.map(lambda v: jax.lax.dynamic_slice_in_dim(v, start, chunk), xs))
        return jax.tree.map(lambda o, p: jax.lax.dynamic_update_slice_in_dim(o, p, start, 0), out, part)

    shapes = jax.eval_shape(vfn, jax.tree.map(lambda v: v[:chunk], xs))
    out = jax.tree.map(lambda s: jnp.zeros((n,) + s.shape[1:], s.dtype), shapes)
    return jax.lax.fori_loop(0, -(-n // chunk), run, out)


# --------------------------------------------------------------------------- sweep


class SweepSolution(AbstractResult):
    """The result of `sweep`, one row per input (the contract of every result:
    `diffmech._result.AbstractResult`).

    - `inputs`: the inputs, leading axis `N`;
    - `value`: solutions, shape `(N, n)`. Where `converged` is False the row holds the
      last converged solution (finite, so masked losses keep finite gradients): use
      `masked()` for plotting, never the raw rows without the mask;
    - `converged`: `(N,)` mask, False from the first failure on;
    - `status`: a `RESULTS` per input;
    - `result`: the status of the first failure, or `successful`;
    - `residual`, `condition`, `steps`: per input.
    """

    inputs: Any
    value: Float[Array, "N n"]
    converged: Bool[Array, " N"]
    status: RESULTS
    residual: Float[Array, " N"]
    condition: Float[Array, " N"]
    steps: Int[Array, " N"]

    _values: ClassVar[str] = "value"
    _inputs: ClassVar[str] = "inputs"


def _implicit(fn):
    """`(x, u, params) -> x` for a solution `x` of `fn(x, u, params) = 0`, with the
    derivatives of the implicit function theorem: `ẋ = −(∂fn/∂x)⁻¹ (∂fn/∂u u̇ +
    ∂fn/∂p ṗ)` (reverse mode by transposing that linear rule). A `custom_jvp`
    traces its rule only when differentiated (`lax.custom_root` traces its tangent
    solve on every call: a sweep's tracing cost on first calls)."""

    @jax.custom_jvp
    def attach(x, u, params):
        return x

    @attach.defjvp
    def _rule(primals, tangents):
        x, u, params = primals
        _, du, dp = tangents  # x is a solution: its tangent is ignored
        _, rhs = jax.jvp(lambda u_, p_: fn(x, u_, p_), (u, params), (du, dp))
        return x, _linalg.solve(jacobian(fn)(x, u, params), -rhs)

    return attach


def _finish(opts, inputs, params, rows: _Rows) -> SweepSolution:
    """Attach implicit derivatives to the rows (the implicit function theorem at each
    solution, vmapped)."""
    x = jax.lax.stop_gradient(rows.x)
    value = jax.vmap(_implicit(opts.fn), in_axes=(0, 0, None))(x, inputs, params)
    return SweepSolution(
        inputs=inputs,
        value=value,
        converged=rows.ok,
        status=_as_results(rows.code),
        residual=rows.residual,
        condition=rows.condition,
        steps=rows.steps,
    )


def sweep(
    fn: Residual,
    x0: Float[Array, " n"],
    inputs: Any,
    params: PyTree,
    *,
    predictor: AbstractPredictor | None = None,
    corrector: Newton | None = None,
    fallback: Continuation | Deferred | None = None,
    branch: Branch | Callable[[Float[Array, " n"], Any, PyTree], Float[Array, ""]] | str | None = None,
    convergence: Convergence | None = None,
    condition: bool = True,
    throw: bool = False,
    **separate: Unpack[SweepFields],
) -> SweepSolution:
    """Solve the closure at every input of a sequence, all inputs at once.

    1. `predictor` guesses every input's solution (default `Coarse()`: continuation
       through every 6th input from `x0`, cubic Hermite interpolation between; a
       family with a closed form passes `ClosedForm`);
    2. `corrector` (default `Newton(3)`: from `Coarse`'s interpolant, two steps leave
       some inputs uncertified and the fallback then costs more than the third step,
       measured on the Theo Jansen leg) applies a fixed number of Newton steps to all
       guesses at once; an input is certified if its residual is at most `atol` and
       its last update at most `corrector.certify` (relative: the error left is
       about its square, round-off) or its guess already closed the loop to
       round-off;
    3. the branch invariant (`branch`: a `Branch`, or its invariant alone: a callable
       `invariant(x, u, params) -> scalar`) is checked on all solutions: its sign must
       stay the branch's `sign` (default: its sign at the first input).
       `"det"`: the determinant of the closure Jacobian, which changes sign
       only through a singular configuration, taken with the conditioning from the
       corrector's last Jacobian (no second evaluation);
    4. from the first input that is neither certified on the branch nor proved
       unreachable by the predictor, `fallback` (default `Continuation()`) redoes the
       rest of the sweep by sequential continuation from the last certified input,
       so that a motion limit or a branch switch is located as a step-by-step
       continuation would locate it. It runs only where needed (under `vmap`, only
       on the lanes that need it). `Deferred()` leaves those inputs `deferred`
       instead, with a smaller program (see `Deferred`).

    A failed input is `RESULTS.motion_limit` (the closure cannot be solved there:
    beyond a motion limit, or too close to a singular configuration) or
    `RESULTS.branch_switch`; every later input is `RESULTS.not_reached`, masked, and
    holds the last converged solution. Derivatives with respect to `inputs` and
    `params` come from the implicit function theorem at each solution (no iteration
    is differentiated).

    The inputs are a path, followed in their order from `x0`. With the branch's
    `max_step` (the longest step, in the inputs' units, that the continuation may take at once: the
    path's arc length for a pytree of inputs), every solution is on the branch that
    continuation along that path with steps no longer than `max_step` reaches: a
    longer step is taken in substeps, and an interpolant between the predictor's
    nodes is used only where the inputs go straight from one node to the next within
    `max_step` (elsewhere the inputs are followed one by one). Without it, inputs out
    of order or far apart may be solved on another assembly whose branch invariant
    has the same sign (two assembly modes flipped together keep the Jacobian
    determinant's sign).

    **Arguments:** `fn`, `x0`, `params` as `root`; `inputs` (a pytree with leading
    axis `N`); `convergence`: each Newton solve's `Convergence` (`atol`, `xtol`,
    `max_steps` as `root`); `condition`: the Jacobian's 1-norm condition number per
    input (NaN if False); `throw`: raise at the first failed input (see
    `diffmech._result`; default False: a sweep that stops at a motion limit is an
    answer, read `converged` and `result`). `Convergence`'s fields and the branch's
    `sign` and `max_step` may be given as separate keywords instead (`atol`,
    `xtol`, `max_steps`; `branch_sign`, `max_step`).

    **Returns:** a `SweepSolution`.
    """
    br, conv = _settings("closure.sweep", branch, convergence, dict(separate))
    _check_inputs("closure.sweep", inputs)
    _check_numbers("closure.sweep", x0=x0, inputs=inputs, params=params)
    sol, _ = _sweep_program(
        fn,
        x0,
        inputs,
        params,
        predictor=predictor,
        corrector=corrector,
        fallback=fallback,
        branch=br,
        convergence=conv,
        condition=condition,
    )
    return finish(sol, throw, "closure.sweep")


def sweep_probed(
    fn,
    x0,
    inputs,
    params,
    *,
    predictor=None,
    corrector=None,
    fallback=None,
    branch: Branch | None = None,
    convergence: Convergence | None = None,
    condition=True,
    probe=None,
    active=None,
):
    """`sweep` (without `throw`), and with `probe=(x, u)` the residual's max-norm and
    the Jacobian at that point too, `(|r|∞, J)`, from the corrector's code (an extra lane that takes no
    step): an initial-configuration check at no extra compile cost. Else `None`."""
    x0 = jax.lax.stop_gradient(jnp.asarray(x0))  # a guess: it carries no derivative
    _warn_if_float32(x0)
    dtype = x0.dtype
    br = Branch() if branch is None else branch
    invariant, branch_sign = br.invariant, br.sign
    if isinstance(invariant, str) and invariant != "det":
        raise ValueError(f"closure.sweep: branch must be a callable, 'det' or None; got {invariant!r}")
    predictor = Coarse() if predictor is None else predictor
    corrector = Newton() if corrector is None else corrector
    fallback = Continuation() if fallback is None else fallback
    check_type("closure.sweep", "predictor", predictor, AbstractPredictor, "Coarse(), ClosedForm(f) or None")
    check_type("closure.sweep", "corrector", corrector, Newton, "a Newton(...) or None")
    check_type("closure.sweep", "fallback", fallback, (Continuation, Deferred), "Continuation(), Deferred() or None")
    _check_square("closure.sweep", fn, x0, jax.tree.map(lambda v: v[0], inputs), params)
    opts = _options(fn, br, Convergence() if convergence is None else convergence, condition, dtype, active)
    p_in, p_par = jax.lax.stop_gradient(inputs), jax.lax.stop_gradient(params)
    n_in = jax.tree.leaves(inputs)[0].shape[0]

    # 1–2. predict and correct every input at once (and the probe, frozen, as one more lane)
    pred = predictor.predict(opts, x0, p_in, p_par)
    guess, lane_in, freeze = pred.guess, p_in, jnp.zeros((n_in,), bool)
    if probe is not None:
        px, pu = jax.lax.stop_gradient(probe)
        guess = jnp.concatenate([guess, jnp.asarray(px, dtype)[None]])
        lane_in = jax.tree.map(lambda a, b: jnp.concatenate([a, jnp.asarray(b, a.dtype)[None]]), p_in, pu)
        freeze = jnp.concatenate([freeze, jnp.ones((1,), bool)])
    with_jac = opts.needs_jacobian or probe is not None
    x, res, last, exact, J = jax.vmap(
        lambda g, u, fz: corrector._correct(fn, g, u, p_par, with_jacobian=with_jac, freeze=fz)
    )(guess, lane_in, freeze)
    probed = None
    if probe is not None:
        assert J is not None
        probed = (res[n_in], J[n_in])
        x, res, last, exact, J = x[:n_in], res[:n_in], last[:n_in], exact[:n_in], J[:n_in]
    certified = pred.reached & corrector.certified(x, res, last, exact, opts.atol)
    nan = jnp.full((n_in,), jnp.nan, dtype)
    b_val, cond = jax.vmap(opts.checks)(J) if opts.needs_jacobian else (nan, nan)
    # 3. the branch invariant on all solutions
    if invariant is None:
        b_ok, sign0 = jnp.ones((n_in,), bool), jnp.asarray(1.0, dtype)
    else:
        b = b_val if isinstance(invariant, str) else jax.vmap(invariant, in_axes=(0, 0, None))(x, p_in, p_par)
        b = jnp.sign(b)
        sign0 = b[0] if branch_sign is None else jnp.sign(jnp.asarray(branch_sign, dtype))
        b_ok = b == sign0
    good = certified & b_ok
    first = jnp.argmin(good)  # the first uncertified input (0 if none)
    all_good = jnp.all(good)
    idx = jnp.arange(n_in)
    before = idx < jnp.where(all_good, n_in, first)
    last_x = jnp.where(first > 0, x[jnp.maximum(first - 1, 0)], x0)
    # certified but off the branch: a switch; at a NaN or infinite input: not finite (no motion limit)
    finite_in = jnp.all(jnp.isfinite(_flat_inputs(p_in, n_in, dtype)), axis=1)
    code_first = jnp.where(~finite_in[first], _NONFINITE, jnp.where(certified[first], _SWITCH, _LIMIT))
    rows = _Rows(
        x=jnp.where(before[:, None], x, last_x),
        ok=before,
        code=jnp.where(before, _SUCCESS, jnp.where(idx == first, code_first, _NOT_REACHED)).astype(jnp.int32),
        residual=jnp.where(before | (idx == first), res, jnp.nan),
        steps=jnp.full((n_in,), corrector.steps, jnp.int32),
        condition=jnp.where(before, cond, jnp.nan),
    )
    # 4. the fallback, where the first failure is not a proven motion limit
    need = ~all_good & ~(pred.unreachable[first] & ~certified[first]) & finite_in[first]
    if isinstance(fallback, Deferred):
        rows = eqx.tree_at(lambda r: r.code, rows, jnp.where(need & (idx >= first), _DEFERRED, rows.code))
        return _finish(opts, inputs, params, rows), probed
    arc = _arc_length(p_in, n_in, dtype)

    def run(o):
        out, _, _ = _continue(opts, o["params"], o["inputs"], o["arc"], o["rows"], o["first"], o["sign0"], o["derive"])
        return out

    operands = dict(
        params=p_par,
        inputs=p_in,
        arc=arc,
        rows=rows,
        first=first,
        sign0=sign0,
        derive=jnp.asarray(invariant is not None and branch_sign is None) & (first == 0),
    )
    rows = when_needed(need, operands, run, fallback.chunk)
    return _finish(opts, inputs, params, rows), probed


_sweep_program = _cache.kept(data=True)(sweep_probed)


def resume(
    fn,
    sol: SweepSolution,
    params,
    *,
    branch: Branch | None = None,
    convergence: Convergence | None = None,
    condition=True,
    active=None,
) -> SweepSolution:
    """Finish one sweep that `Deferred()` left `deferred`: the sequential fallback's
    work alone (continuation from the first deferred input, the rows before it kept),
    so that an eager caller pays for the fallback, not for a second predictor and
    corrector. The result equals `sweep` with `Continuation()` (same arguments)."""
    inputs = sol.inputs
    dtype = sol.value.dtype
    br = Branch() if branch is None else branch
    invariant, branch_sign = br.invariant, br.sign
    opts = _options(fn, br, Convergence() if convergence is None else convergence, condition, dtype, active)
    p_in, p_par = jax.lax.stop_gradient(inputs), jax.lax.stop_gradient(params)
    n_in = sol.value.shape[0]
    code = _code(sol.status).astype(jnp.int32)
    first = jnp.argmax(code == _DEFERRED)
    rows = _Rows(
        x=jax.lax.stop_gradient(sol.value),
        ok=sol.converged,
        code=code,
        residual=sol.residual,
        steps=sol.steps,
        condition=sol.condition,
    )
    # the branch sign the parallel pass took at the first input (certified when
    # `first > 0`; else the continuation derives it from its own first solution)
    if invariant is None:
        sign0 = jnp.asarray(1.0, dtype)
    elif branch_sign is not None:
        sign0 = jnp.sign(jnp.asarray(branch_sign, dtype))
    else:
        x0, u0 = rows.x[0], _take(p_in, 0)
        b0 = opts.checks(jacobian(fn)(x0, u0, p_par))[0] if isinstance(invariant, str) else invariant(x0, u0, p_par)
        sign0 = jnp.sign(b0)
    derive = jnp.asarray(invariant is not None and branch_sign is None) & (first == 0)
    rows, _, _ = _continue(opts, p_par, p_in, _arc_length(p_in, n_in, dtype), rows, first, sign0, derive)
    return _finish(opts, inputs, params, rows)


def mask_after(
    converged: Bool[Array, "*batch N"], status: RESULTS, bad: Bool[Array, "*batch N"], reason: RESULTS
) -> tuple[Bool[Array, "*batch N"], RESULTS]:
    """Fail the first converged input where `bad` holds (with status `reason`) and
    mask every later input (`not_reached`), along the last axis. Used for checks
    made after a sweep on all its solutions at once (a branch invariant, say)."""
    hit = converged & bad
    before = jnp.cumsum(hit.astype(jnp.int32), axis=-1) - hit.astype(jnp.int32)  # hits strictly before
    ok = converged & ~hit & (before == 0)
    first = hit & (before == 0)

    def put(pred, item, status):  # element-wise `where` on an enumeration (its leaf)
        return jax.tree.map(lambda s, r: jnp.where(pred, r, s), status, item)

    status = put(first, reason, status)
    status = put(converged & ~ok & ~first, RESULTS.not_reached, status)
    return ok, status


def rates(
    fn: Residual,
    x: Float[Array, " n"],
    u: Any,
    params: PyTree,
    udot: Any,
    uddot: Any = None,
    *,
    jac: Float[Array, "n n"] | None = None,
) -> tuple[Float[Array, " n"], Float[Array, " n"]]:
    """Velocity and acceleration of a closure solution by the implicit function theorem.

    Along an input path `u(t)` with `u̇ = udot`, `ü = uddot` (default 0), the solution
    `x(t)` of `Φ(x, u) = 0` satisfies `Φ_x ẋ = −Φ_u u̇` and
    `Φ_x ẍ = −Φ_u ü − D²Φ[(ẋ, u̇), (ẋ, u̇)]`. The right-hand sides are `jax.jvp`s of
    the residual (the second directional derivative is a jvp of a jvp), the solves
    use the Jacobian at `x` (`jac`, when the caller has it already: it must be
    `jacobian(fn)(x, u, params)`). Exact to round-off; differentiable.

    **Arguments:** `fn`, `x` `(n,)` (a solution at `u`), `u`, `params` as `root`;
    `udot`, `uddot`: the input's first and second time derivatives, pytrees like `u`;
    `jac`: `∂fn/∂x` at `(x, u)` if already computed.

    **Returns:** `(xdot, xddot)`, each `(n,)`, in `x`'s units per unit time and per
    unit time squared.
    """
    for name, v in (("x", x), ("u", u), ("udot", udot), ("uddot", uddot)):
        if (
            v is not None
            and not is_traced(v)
            and not all(np.all(np.isfinite(np.asarray(a))) for a in jax.tree.leaves(v))
        ):
            raise ValueError(f"closure.rates: `{name}` must be finite; got {v}")
    xa = x if is_traced(x) else np.asarray(x)  # eagerly a host array (`jnp.asarray` is a program)
    _check_square("closure.rates", fn, xa, u, params, "x")
    _check_like_input("closure.rates", "udot", udot, u)
    if uddot is not None:
        _check_like_input("closure.rates", "uddot", uddot, u)
    J, xdot, xddot = _rates_program(fn, xa, u, params, udot, uddot, jac)
    _raise_if_singular("closure.rates", J, x, u, params)
    return xdot, xddot


def _rates(fn, x, u, params, udot, uddot, jac):
    """`rates`' arithmetic: `(J, xdot, xddot)` (one program when called eagerly)."""
    if uddot is None:
        uddot = jax.tree.map(jnp.zeros_like, udot)
    zero_x = jnp.zeros_like(x)

    def phi(x_, u_):
        return fn(x_, u_, params)

    J = jacobian(fn)(x, u, params) if jac is None else jac
    _, phi_u_udot = jax.jvp(phi, (x, u), (zero_x, udot))
    xdot = _linalg.solve(J, -phi_u_udot)

    def dphi(x_, u_):
        return jax.jvp(phi, (x_, u_), (xdot, udot))[1]

    _, second = jax.jvp(dphi, (x, u), (xdot, udot))
    _, phi_u_uddot = jax.jvp(phi, (x, u), (zero_x, uddot))
    xddot = _linalg.solve(J, -(second + phi_u_uddot))
    return J, xdot, xddot


_rates_program = _cache.kept(data=True)(_rates)  # kept compiled where `fn` is diffmech's own (`diffmech.cache`)


def _raise_if_singular(owner, J, x, u, params) -> None:
    """Eager calls: a closure Jacobian singular to working precision leaves the rates
    undetermined (a dead centre or a change point): `SingularError`, never a number.
    (Inside `jit` the values are not known: `condition` measures it.)"""
    if is_traced(J, x, u, params):
        return
    Jn = np.asarray(J, dtype=float)
    # singular to working precision: its smallest singular value at round-off of the
    # largest (or of 1: the core's residuals are scaled so that Jacobians are O(1))
    sv = np.linalg.svd(Jn, compute_uv=False) if np.all(np.isfinite(Jn)) else np.array([np.nan])
    eps = np.finfo(np.asarray(x).dtype if np.asarray(x).dtype.kind == "f" else float).eps
    if not sv[-1] > Jn.shape[0] * eps * max(1.0, sv[0]):
        raise SingularError(
            f"{owner}: the closure Jacobian at `x` is singular (singular values {sv[0]:.3g} … {sv[-1]:.3g}): a "
            "singular configuration (dead centre, change point), where the input's rate does not determine the rates",
            status=RESULTS._index_to_message[int(_code(RESULTS.singular_configuration))],
        )


def condition(fn: Residual, x: Float[Array, " n"], u: Any, params: PyTree) -> Float[Array, ""]:
    """The 1-norm condition number `‖J‖₁‖J⁻¹‖₁` of the closure Jacobian `J = ∂fn/∂x`
    at `(x, u)` (inf where `J` is singular: a toggle or dead position).

    **Arguments:** `fn`, `x` `(n,)`, `u`, `params` as `root`.

    **Returns:** a scalar ≥ 1 (dimensionless; meaningful when `fn` is scaled so that
    `J` is O(1), see `root`).
    """
    _check_square("closure.condition", fn, jnp.asarray(x), u, params, "x")
    return _linalg.condition_1(jacobian(fn)(x, u, params))


def velocity(fn: Residual, x: Float[Array, " n"], u: Any, params: PyTree, udot: Any) -> Float[Array, " n"]:
    """`ẋ = −Φ_x⁻¹ Φ_u u̇`: the velocity half of `rates` (one solve, no second
    derivative), e.g. the closure's tangent `x′(u)` for `udot = 1`.

    **Arguments:** `fn`, `x` `(n,)` (a solution at `u`), `u`, `params` as `root`;
    `udot`: the input's rate, a pytree like `u` (per unit time, or 1 for `dx/du`).

    **Returns:** `ẋ`, shape `(n,)`, in `x`'s units per unit of `udot`'s time.
    """
    _check_square("closure.velocity", fn, jnp.asarray(x), u, params, "x")
    _check_like_input("closure.velocity", "udot", udot, u)
    J = jacobian(fn)(x, u, params)
    _raise_if_singular("closure.velocity", J, x, u, params)
    _, phi_u = jax.jvp(lambda u_: fn(x, u_, params), (u,), (udot,))
    return _linalg.solve(J, -phi_u)
