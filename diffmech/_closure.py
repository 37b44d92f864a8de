"""The loop-closure core: one Newton solve, used by every mechanism family.

A mechanism writes its closure as a square residual `fn(x, u, params) -> r` with
`x` the unknown coordinates (shape `(n,)`), `u` the input (crank angle, actuator
length, ...) and `params` any pytree of design parameters. This module

- solves `fn(x, u, params) = 0` by Newton from a warm start to round-off (`root`),
  differentiable in `u` and `params` by the implicit function theorem
  (`jax.lax.custom_root`; the iterations are never differentiated);
- follows a sequence of inputs by continuation (`sweep`): one `lax.scan`, each
  step warm-started by secant extrapolation of the previous two solutions, with a
  converged mask, a status per step, an optional branch invariant, and every step
  after the first failure masked instead of returning garbage;
- gives velocities and accelerations of the solution by the implicit function
  theorem (`rates`), from `jax.jvp` of the residual, not finite differences;
- reports the conditioning of the Jacobian so that singular configurations
  (toggle and dead positions) are visible.

Inside `jit` nothing raises: results carry a `RESULTS` status. `throw=True` (the
default of the eager convenience functions built on this) turns a failed status
into an error.
"""

import warnings
from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import optimistix as optx
from jaxtyping import Array, Bool, Float, Int, PyTree

from . import _linalg


class RESULTS(optx.RESULTS):  # pyright: ignore
    """Status of a closure solve (extends `optimistix.RESULTS`)."""

    motion_limit = (
        "No closed configuration was found at this input: the mechanism cannot be "
        "assembled there (beyond a motion limit, or an unreachable input)."
    )
    branch_switch = (
        "The solution left the requested assembly branch (it passed through or near "
        "a singular configuration)."
    )
    not_reached = "An earlier input of the continuation failed; this one was not solved."
    singular_configuration = (
        "The screw system is singular here (rank-deficient joint screws or wrench "
        "system): the joint rates or the joint wrenches are not determined."
    )


Residual = Callable[[Float[Array, " n"], Any, PyTree], Float[Array, " n"]]

_warned_float32 = False


def _warn_if_float32(x: Array) -> None:
    global _warned_float32
    if x.dtype != jnp.float64 and not _warned_float32:
        _warned_float32 = True
        warnings.warn(
            "diffmech: a loop-closure solve is running in "
            f"{x.dtype}; residuals reach round-off (1e-16) only in float64. Enable it "
            "with `jax.config.update('jax_enable_x64', True)` before creating arrays.",
            stacklevel=3,
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


def _tolerance(atol: float, dtype) -> float:
    # float32 cannot reach 1e-10: scale the tolerance to the precision in use.
    return max(atol, 1e3 * float(jnp.finfo(dtype).eps))


def _max_abs(v):
    # max |v_i| of a small vector as a chain of element-wise maxima: under vmap a
    # reduction would split the fused Newton step into several kernels (2x slower)
    m = jnp.abs(v[0])
    for i in range(1, v.shape[0]):
        m = jnp.maximum(m, jnp.abs(v[i]))
    return m


def _newton(f, x0, *, atol, xtol, max_steps, min_steps, active, robust=False):
    """Newton iterations on `f(x) = 0`; returns (x, residual_norm, steps, converged).

    With `robust`, a non-finite step (singular Jacobian) is replaced by a damped
    least-squares (Levenberg–Marquardt) step, and an iterate whose residual is
    already at round-off is not moved; this converges at singular configurations
    such as the change points of a parallelogram, where the solution branches cross.
    """
    jac = jax.jacfwd(f)

    def step(x):
        J, r = jac(x), f(x)
        dx = _linalg.solve(J, -r)
        if robust:
            # a step through a singular Jacobian (non-finite) becomes a damped
            # least-squares step; and a configuration already exact to round-off is
            # not moved (at a nearly singular Jacobian a finite Newton step can be huge)
            JtJ = J.T @ J
            mu = 1e-12 * jnp.max(jnp.abs(JtJ)) + jnp.finfo(x.dtype).tiny
            dx_ls = _linalg.solve(JtJ + mu * jnp.eye(x.shape[0], dtype=x.dtype), -(J.T @ r))
            dx = jnp.where(jnp.isfinite(_max_abs(dx)), dx, dx_ls)
            dx = jnp.where(_max_abs(r) <= 2 * jnp.finfo(x.dtype).eps, 0.0, dx)
        # (not robust: a non-finite step leaves the lane unconverged; `sweep`'s
        # fallback then restarts it from the last solution)
        return x + dx, _max_abs(dx) / (1 + _max_abs(x))

    x = x0
    dxn = jnp.asarray(jnp.inf, x0.dtype)
    for _ in range(min_steps):
        x_new, dxn_new = step(x)
        x = jnp.where(active, x_new, x)
        dxn = jnp.where(active, dxn_new, dxn)

    def cond(carry):
        x, dxn, i = carry
        return active & (i < max_steps) & (dxn > xtol) & jnp.isfinite(_max_abs(x))

    def body(carry):
        x, _, i = carry
        x_new, dxn_new = step(x)
        return x_new, dxn_new, i + 1

    if max_steps > min_steps:
        x, dxn, steps = jax.lax.while_loop(cond, body, (x, dxn, jnp.asarray(min_steps)))
    else:
        steps = jnp.asarray(min_steps)
    r = _max_abs(f(x))
    ok = jnp.isfinite(r) & jnp.isfinite(_max_abs(x)) & (r <= atol) & active
    return x, r, steps, ok, dxn


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
    throw: bool = False,
    active: Bool[Array, ""] | bool = True,
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
      (`min_steps` steps are unrolled, then a `while_loop` runs to `max_steps`).
    - `condition`: also compute the Jacobian's 1-norm condition number.
    - `throw`: raise (at run time, also under `jit`) if the solve failed.
    - `active`: if False, skip the iterations (used by `sweep` after a failure).
    - `robust`: where the Jacobian is singular, take a damped least-squares step
      instead of stopping (converges at singular configurations; costs a second
      small solve per step).

    **Returns:** a `Solution`.
    """
    x0 = jnp.asarray(x0)
    _warn_if_float32(x0)
    tol = _tolerance(atol, x0.dtype)
    active = jnp.asarray(active)

    def f(x):
        return fn(x, u, params)

    def solve(f_, guess):
        x, r, steps, ok, dxn = _newton(
            f_, guess, atol=tol, xtol=xtol, max_steps=max_steps, min_steps=min_steps, active=active,
            robust=robust,
        )
        x = jnp.where(ok, x, guess)
        # aux kept floating-point: custom_root's JVP rule mishandles integer/bool aux
        return x, (r, steps.astype(x.dtype), ok.astype(x.dtype), dxn)

    def tangent_solve(g, y):
        return _linalg.solve(jax.jacfwd(g)(y), y)

    x, (r, steps, ok, dxn) = jax.lax.custom_root(
        f, jax.lax.stop_gradient(x0), solve, tangent_solve, has_aux=True
    )
    r, steps, ok, dxn = jax.lax.stop_gradient((r, steps, ok, dxn))
    steps, ok = steps.astype(jnp.int32), ok > 0.5
    if condition:
        cond = _linalg.condition_1(jax.jacfwd(f)(jax.lax.stop_gradient(x)))
    else:
        cond = jnp.asarray(jnp.nan, x.dtype)
    result = RESULTS.where(ok, RESULTS.successful, RESULTS.motion_limit)
    sol = Solution(value=x, result=result, residual=r, steps=steps, condition=cond, last_step=dxn)
    if throw:
        sol = eqx.tree_at(lambda s: s.value, sol, result.error_if(sol.value, result != RESULTS.successful))
    return sol


def first_failure(converged: Bool[Array, "*batch N"], status: RESULTS) -> RESULTS:
    """The status at the first unconverged input along the last axis (`successful`
    where every input converged); leading batch axes are kept."""
    first = jnp.argmin(converged, axis=-1)  # index of the first False (0 if none)
    failed = ~jnp.all(converged, axis=-1)
    at_first = jax.tree.map(lambda v: jnp.take_along_axis(v, first[..., None], axis=-1)[..., 0], status)
    return RESULTS.where(failed, at_first, RESULTS.successful)


class SweepSolution(eqx.Module):
    """The result of `sweep`, one row per input.

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

    @property
    def result(self) -> RESULTS:
        return first_failure(self.converged, self.status)

    @property
    def n_converged(self) -> Int[Array, ""]:
        return jnp.sum(self.converged)

    def masked(self) -> Float[Array, "N n"]:
        """`value` with unconverged rows set to NaN (for plotting and printing)."""
        return jnp.where(self.converged[:, None], self.value, jnp.nan)


def sweep(
    fn: Residual,
    x0: Float[Array, " n"],
    inputs: Any,
    params: PyTree,
    *,
    branch: Callable[[Float[Array, " n"], Any, PyTree], Float[Array, ""]] | None = None,
    branch_sign: Float[Array, ""] | None = None,
    predictor: int = 2,
    newton_steps: int | None = 2,
    atol: float = 1e-10,
    xtol: float = 1e-10,
    max_steps: int = 24,
    condition: bool = True,
    fallback: bool = True,
    polish: float = 1e-9,
    robust_fallback: bool = True,
    unroll: int = 1,
) -> SweepSolution:
    """Follow the closure through a sequence of inputs by continuation.

    One `lax.scan` over `inputs`. The first input is solved from `x0` by `root`
    (Newton to convergence, at most `max_steps`). Step k is warm-started by
    polynomial extrapolation (degree `predictor`, 0 = previous solution) through the
    previous solutions against the arc length of the input path, then takes exactly
    `newton_steps` Newton steps (unrolled: a `while_loop` under `vmap` costs ~3x
    here even when it does no iteration). With the default quadratic predictor the
    guess is O(Δu³) off and two quadratic steps bring it to round-off. Where the
    last update was still larger than `polish` (relative; the error left is about
    its square, so 1e-9 leaves round-off) or the step failed (close to a fold or a
    singular configuration, or large input steps), and `fallback`, Newton continues
    to convergence (`root`, at most `max_steps`) on those lanes only. The step is accepted if the residual is at most `atol`. A step fails if it is not
    (`RESULTS.motion_limit`: past a motion limit, or so close to a singular
    configuration that Newton slows down) or if `branch(x, u, params)` changes sign
    (`RESULTS.branch_switch`); every later step is `RESULTS.not_reached`, not solved
    and masked.

    With `newton_steps=None` every input, the first included, is solved inside the
    scan by Newton to convergence (`root`, at most `max_steps`, undamped) from the
    predictor, with no polish or fallback: one Newton loop in the program, the
    smallest to compile; meant for large input steps where a fixed step count would
    not do (a warm start for a later parallel pass). It needs `branch_sign` when a
    `branch` is given.

    **Arguments:** as `root`, plus `inputs` (leading axis `N`), `branch` (an
    invariant whose sign identifies the assembly branch; it vanishes only at
    singular configurations), `branch_sign` (the required sign; default: the sign at
    the first solution), `unroll` (passed to `lax.scan`).

    **Returns:** a `SweepSolution`.
    """
    x0 = jnp.asarray(x0)
    dtype = x0.dtype
    n_in = jax.tree.leaves(inputs)[0].shape[0]

    # arc length along the input path: the predictor's abscissa
    flat_in = jnp.concatenate([jnp.reshape(jnp.asarray(v, dtype), (n_in, -1)) for v in jax.tree.leaves(inputs)], axis=1)
    arc = jnp.concatenate([jnp.zeros((1,), dtype), jnp.cumsum(jnp.sqrt(jnp.sum(jnp.diff(flat_in, axis=0) ** 2, axis=1)))])

    order = max(0, min(int(predictor), 2))
    lean = newton_steps is None
    if lean and branch is not None and branch_sign is None:
        raise ValueError("sweep: `newton_steps=None` needs `branch_sign` when a `branch` invariant is given")
    # solved to convergence before the scan: the predictor's history (lean: inside the scan)
    n_head = 0 if lean else min(order + 1, n_in)

    def record(sol, u, alive):
        b_ok = jnp.asarray(True) if branch is None else jnp.sign(branch(sol.value, u, params)) == sign0
        ok = alive & sol.converged & b_ok
        status = RESULTS.where(
            alive,
            RESULTS.where(sol.converged, RESULTS.where(b_ok, RESULTS.successful, RESULTS.branch_switch), sol.result),
            RESULTS.not_reached,
        )
        return ok, status

    head, guess, alive = [], x0, jnp.asarray(True)
    sign0 = jnp.asarray(1.0, dtype) if branch_sign is None else jnp.sign(jnp.asarray(branch_sign, dtype))
    for k in range(n_head):
        u_k = jax.tree.map(lambda v: v[k], inputs)
        if k == 2:  # linear guess (k = 1 starts from the previous solution)
            x1, x2 = head[1][0], head[0][0]
            guess = x1 + (x1 - x2) * (arc[2] - arc[1]) / jnp.where(arc[1] != arc[0], arc[1] - arc[0], 1.0)
        sol = root(fn, guess, u_k, params, atol=atol, xtol=xtol, max_steps=max_steps, condition=condition, active=alive)
        if k == 0 and branch is not None and branch_sign is None:
            sign0 = jnp.sign(branch(sol.value, u_k, params))
        ok, status = record(sol, u_k, alive)
        x_k = jnp.where(ok, sol.value, guess if k == 0 else head[-1][0])
        head.append((x_k, ok, status, sol.residual, sol.condition, sol.steps))
        guess, alive = x_k, ok

    def extrapolate(xs, ss, count, s):
        # Lagrange extrapolation through the last min(count, order+1) points
        x1, x2, x3 = xs
        s1, s2, s3 = ss
        lin = x1 + (x1 - x2) * ((s - s1) / jnp.where(s1 != s2, s1 - s2, 1.0))
        w1 = (s - s2) * (s - s3) / jnp.where((s1 - s2) * (s1 - s3) != 0, (s1 - s2) * (s1 - s3), 1.0)
        w2 = (s - s1) * (s - s3) / jnp.where((s2 - s1) * (s2 - s3) != 0, (s2 - s1) * (s2 - s3), 1.0)
        w3 = (s - s1) * (s - s2) / jnp.where((s3 - s1) * (s3 - s2) != 0, (s3 - s1) * (s3 - s2), 1.0)
        quad = w1 * x1 + w2 * x2 + w3 * x3
        guess = x1
        if order >= 1:
            guess = jnp.where(count >= 2, lin, guess)
        if order >= 2:
            guess = jnp.where(count >= 3, quad, guess)
        return guess

    def body(carry, inp):
        xs, ss, count, alive = carry
        u, s = inp
        guess = extrapolate(xs, ss, count, s)
        if lean:
            sol = root(fn, guess, u, params, atol=atol, xtol=xtol, max_steps=max_steps, condition=condition,
                       active=alive, robust=False)
        else:
            sol = root(fn, guess, u, params, atol=atol, xtol=0.0, max_steps=newton_steps,
                       min_steps=newton_steps, condition=condition, active=alive, robust=False)
        if fallback and not lean:
            # rare: the fixed steps did not converge (close to a fold or a singular
            # configuration). Newton to convergence from the last solution, only on
            # those lanes; the loop does no iteration when every lane converged.
            # also polish lanes that converged but not to round-off
            retry = alive & (~sol.converged | (sol.last_step > polish))
            start = jnp.where(sol.converged, sol.value, xs[0])

            def polish_lanes(sol):
                sol2 = root(fn, start, u, params, atol=atol, xtol=xtol, max_steps=max_steps,
                            condition=condition, active=retry, robust=robust_fallback)
                return jax.tree.map(lambda a, b: jnp.where(retry, a, b), sol2, sol)

            # skipped outright when no lane needs it (unbatched; under vmap the
            # predicate is batched and `cond` becomes a select of both branches)
            sol = jax.lax.cond(jnp.any(retry), polish_lanes, lambda s: s, sol)
        ok, status = record(sol, u, alive)
        x_new = jnp.where(ok, sol.value, xs[0])
        xs = (x_new, jnp.where(ok, xs[0], xs[1]), jnp.where(ok, xs[1], xs[2]))
        ss = (jnp.where(ok, s, ss[0]), jnp.where(ok, ss[0], ss[1]), jnp.where(ok, ss[1], ss[2]))
        carry = (xs, ss, count + ok.astype(jnp.int32), ok)
        return carry, (x_new, ok, status, sol.residual, sol.condition, sol.steps)

    # history for the predictor: the last three accepted points (padded at the start)
    if lean:
        carry0 = ((x0,) * 3, (arc[0],) * 3, jnp.asarray(0, jnp.int32), jnp.asarray(True))
        _, ys = jax.lax.scan(body, carry0, (inputs, arc), unroll=unroll)
        return SweepSolution(inputs=inputs, value=ys[0], converged=ys[1], status=ys[2], residual=ys[3],
                             condition=ys[4], steps=ys[5])
    xh = [h[0] for h in head][::-1] + [head[0][0]] * 3
    sh = [arc[k] for k in range(n_head)][::-1] + [arc[0]] * 3
    count = sum(h[1].astype(jnp.int32) for h in head)
    carry0 = (tuple(xh[:3]), tuple(sh[:3]), count, head[-1][1])
    rest = (jax.tree.map(lambda v: v[n_head:], inputs), arc[n_head:])
    _, ys = jax.lax.scan(body, carry0, rest, unroll=unroll)
    xs, oks, statuses, res, conds, steps = (
        jax.tree.map(lambda *hs: jnp.stack(hs), *[h[i] for h in head]) for i in range(6)
    )
    xs, oks, statuses, res, conds, steps = (
        jax.tree.map(lambda a, b: jnp.concatenate([a, b]), h, y) for h, y in zip((xs, oks, statuses, res, conds, steps), ys)
    )
    return SweepSolution(
        inputs=inputs, value=xs, converged=oks, status=statuses, residual=res, condition=conds, steps=steps,
    )


def mask_after(converged: Bool[Array, "*batch N"], status: RESULTS, bad: Bool[Array, "*batch N"],
               reason: RESULTS) -> tuple[Bool[Array, "*batch N"], RESULTS]:
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
) -> tuple[Float[Array, " n"], Float[Array, " n"]]:
    """Velocity and acceleration of a closure solution by the implicit function theorem.

    Along an input path `u(t)` with `u̇ = udot`, `ü = uddot` (default 0), the solution
    `x(t)` of `Φ(x, u) = 0` satisfies `Φ_x ẋ = −Φ_u u̇` and
    `Φ_x ẍ = −Φ_u ü − D²Φ[(ẋ, u̇), (ẋ, u̇)]`. The right-hand sides are `jax.jvp`s of
    the residual (the second directional derivative is a jvp of a jvp), the solves
    use the Jacobian at `x`. Exact to round-off; differentiable.

    **Returns:** `(xdot, xddot)`.
    """
    if uddot is None:
        uddot = jax.tree.map(jnp.zeros_like, udot)
    zero_x = jnp.zeros_like(x)

    def phi(x_, u_):
        return fn(x_, u_, params)

    J = jax.jacfwd(phi)(x, u)
    _, phi_u_udot = jax.jvp(phi, (x, u), (zero_x, udot))
    xdot = _linalg.solve(J, -phi_u_udot)

    def dphi(x_, u_):
        return jax.jvp(phi, (x_, u_), (xdot, udot))[1]

    _, second = jax.jvp(dphi, (x, u), (xdot, udot))
    _, phi_u_uddot = jax.jvp(phi, (x, u), (zero_x, uddot))
    xddot = _linalg.solve(J, -(second + phi_u_uddot))
    return xdot, xddot


def condition(fn: Residual, x: Float[Array, " n"], u: Any, params: PyTree) -> Float[Array, ""]:
    """The 1-norm condition number of the closure Jacobian `∂fn/∂x` at `(x, u)`."""
    return _linalg.condition_1(jax.jacfwd(fn)(x, u, params))
