"""Four-bar kinematics on the closure core (Bai et al., Sections 3 and 6).

Unknowns `x = (qB, qD)` (4 numbers), input the crank angle θA, residual Eq. (86):
`l1 qA + l2 qB − l3 qD − l4 e1 = 0`, `|qB|² = 1`, `|qD|² = 1`, solved by the core's
Newton (`diffmech._closure`), differentiated by the implicit function theorem.
"""

import math
from typing import Any, ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from .. import _cache, _closure, _linalg
from .._geometry import attitude, cross, perp
from .._result import RESULTS, AbstractResult, BranchSwitchError, MotionLimitError, code as _result_code, finish
from .._validate import as_floats, check_finite, check_scalar, check_shape, check_trailing, is_traced, is_traced_module
from .._xla import eager_program, host_array, jit
from ._model import FourBar

# --------------------------------------------------------------------------- closure


def residual(x: Float[Array, "4"], theta_A, fb: FourBar) -> Float[Array, "4"]:
    """Eq. (86) of Bai et al., scaled so that its Jacobian is O(1).

    `x = (qB, qD)`; rows 1–2: the loop `(l1 qA + l2 qB − l3 qD − l4 e1) / (l2 + l3)`;
    rows 3–4: `(|qB|² − 1)/2`, `(|qD|² − 1)/2`.

    **Arguments:** `x` `(4,)`: the coupler and rocker attitude vectors `(qB, qD)`;
    `theta_A`: the crank angle (rad); `fb`: the design.

    **Returns:** the dimensionless residual `(4,)`, zero on a closed configuration.
    """
    l1, l2, l3, l4 = fb.lengths[0], fb.lengths[1], fb.lengths[2], fb.lengths[3]
    qA = attitude(theta_A)
    qB, qD = x[:2], x[2:]
    loop = l1 * qA + l2 * qB - l3 * qD - jnp.stack([l4, jnp.zeros_like(l4)])
    return jnp.concatenate([loop / (l2 + l3), 0.5 * jnp.stack([_dot(qB, qB) - 1, _dot(qD, qD) - 1])])


def condition_number(x: Float[Array, "*batch 4"], fb: FourBar) -> Float[Array, "*batch"]:
    """The 1-norm condition number `‖J‖₁‖J⁻¹‖₁` of `residual`'s Jacobian at `x = (qB,
    qD)`, in closed form (inf at a toggle, where qB ∥ qD).

    `J = [[a I, −b I], [qBᵀ, 0], [0, qDᵀ]]` with `a, b = l2, l3 / (l2 + l3)`. Solving
    `J (dB, dD) = (f, g₃, g₄)`: `[qBᵀ; qDᵀ] dD = ((a g₃ − qB·f)/b, g₄)`, a 2 × 2 system of
    determinant `c = qB × qD`, then `dB = (f + b dD)/a`; the columns of `J⁻¹` are its
    solutions for the four unit right-hand sides. As `diffmech.closure.condition` of
    `residual`, without forming `J` by differentiation or inverting it by elimination
    (the conditioning the eager sweep reports cost several times the solve).

    **Arguments:** `x` `(…, 4)`: `(qB, qD)` per configuration (an angle axis after
    the design's batch axes, if any); `fb`: the design(s).

    **Returns:** the condition numbers `(…)`, inf where `J` is singular.
    """
    l2, l3 = fb.lengths[..., 1], fb.lengths[..., 2]
    a, b = l2 / (l2 + l3), l3 / (l2 + l3)
    if x.ndim > fb.lengths.ndim:  # an angle axis after the design's axes
        a, b = a[..., None], b[..., None]
    bx, by, dx, dy = x[..., 0], x[..., 1], x[..., 2], x[..., 3]
    c = bx * dy - by * dx
    # the column sums of J⁻¹, one expression each (elementwise: one fused loop, no
    # temporaries of four times the batch)
    p, q = dy / (b * c), dx / (b * c)  # dD = (p, −q) s for the loop rows' right-hand sides

    def column(u0, u1, e0, e1):
        return (jnp.abs(u0 + b * e0) + jnp.abs(u1 + b * e1)) / a + jnp.abs(e0) + jnp.abs(e1)

    inverse = jnp.maximum(
        jnp.maximum(column(1.0, 0.0, -bx * p, bx * q), column(0.0, 1.0, -by * p, by * q)),
        jnp.maximum(column(0.0, 0.0, a * p, -a * q), column(0.0, 0.0, -by / c, bx / c)),
    )  # ‖J⁻¹‖₁: the largest column sum
    norm = jnp.maximum(jnp.maximum(a + jnp.abs(bx), a + jnp.abs(by)), jnp.maximum(b + jnp.abs(dx), b + jnp.abs(dy)))
    k = norm * inverse
    return jnp.where(jnp.isfinite(k), k, jnp.inf)


def _dot(a, b):
    # element-wise on purpose: under vmap, `a @ b` of 2-vectors becomes a batched
    # `dot` that XLA:CPU runs one tiny matrix at a time (10x slower here)
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1]


def branch_sign(fb: FourBar) -> Array:
    """The sign of qB × qD on `fb.branch` (see `FourBar`): `branch · sign(l4 − l1)`.

    **Arguments:** `fb`: the design(s). **Returns:** ±1 per design.
    """
    s = jnp.sign(fb.lengths[..., 3] - fb.lengths[..., 0])
    return fb.branch * jnp.where(s == 0, 1.0, s)


def is_change_point(fb: FourBar, rtol: float = 1e-12) -> Array:
    """True where `s + ℓ = p + q` (jittable): the two assembly branches cross at the
    change points (B, C, D collinear with a zero-size triangle), so no sign tells them
    apart there; continuation follows the smooth branch through the crossing.

    **Arguments:** `fb`: the design(s); `rtol`: the tolerance of the equality, relative
    to the perimeter. **Returns:** a boolean per design.
    """
    check_scalar("fourbar.is_change_point", "rtol", rtol, nonnegative=True)
    # s + ℓ = p + q  ⇔  one of the three pairings of the four lengths has equal sums
    # (the other two pairings can only be equal when this one is); no sort, which
    # would cost a sort per lane and step inside a sweep
    l1, l2, l3, l4 = (fb.lengths[..., i] for i in range(4))
    gap = jnp.minimum(jnp.minimum(jnp.abs(l1 + l2 - l3 - l4), jnp.abs(l1 + l3 - l2 - l4)), jnp.abs(l1 + l4 - l2 - l3))
    return gap <= rtol * (l1 + l2 + l3 + l4)


def is_parallelogram_mode(fb: FourBar, rtol: float = 1e-12) -> Array:
    """True where the design is a parallelogram (l1 = l3, l2 = l4, to `rtol` of the
    perimeter) followed on `branch = +1`, its parallelogram mode (jittable).

    That mode is analytic through the change points θA = 0, π: qB = e1, qD = qA,
    (ωB, ωD) = (0, 1) ωA for every θA. The generic formulas are 0/0 there (qB ∥ qD,
    Eq. (35)'s denominator vanishes) and the closure Jacobian is singular, so the
    velocity ratios, accelerations and the dynamics use the mode's closed form on
    such designs. Derivatives with respect to the lengths are then those of the
    parallelogram family (perturbing l1 alone leaves it): tie l1 = l3 and l2 = l4 when
    differentiating.

    **Arguments:** `fb`: the design(s); `rtol`: relative to the perimeter. **Returns:**
    a boolean per design.
    """
    check_scalar("fourbar.is_parallelogram_mode", "rtol", rtol, nonnegative=True)
    l1, l2, l3, l4 = (fb.lengths[..., i] for i in range(4))
    tol = rtol * (l1 + l2 + l3 + l4)
    par = (jnp.abs(l1 - l3) <= tol) & (jnp.abs(l2 - l4) <= tol)
    return par & (fb.branch == 1)


def _change_point_flip(fb: FourBar, theta_A) -> Array:
    """±1: on a change-point design each assembly mode changes the sign of qB × qD at
    θA = 0, π (`branch_sign_at`); 1 on other designs."""
    s = jnp.sign(jnp.sin(theta_A))
    return jnp.where(is_change_point(fb), jnp.where(s == 0, 1.0, s), 1.0)


def branch_sign_at(fb: FourBar, theta_A) -> Array:
    """The sign of qB × qD on `fb.branch` at crank angle `theta_A`.

    `branch_sign(fb)` for ordinary designs. On a change-point design each smooth
    assembly mode changes the sign of qB × qD at the change points θA = 0, π (where all
    four joints are collinear and the two modes cross), so there the branch is the
    sign of `sign(l4 − l1) · (qB × qD) · sin θA`: `branch = +1` is the parallelogram
    mode of a parallelogram (qB = e1, qD = qA), `−1` the anti-parallelogram.

    **Arguments:** `fb`: the design(s); `theta_A`: the crank angle (rad). **Returns:**
    ±1.
    """
    check_finite("fourbar.branch_sign_at", {"theta_A": theta_A})
    return branch_sign(fb) * _change_point_flip(fb, theta_A)


def closed_form(fb: FourBar, theta_A, sign=None) -> tuple[Float[Array, "4"], Float[Array, ""]]:
    """The configuration on `fb.branch` by circle intersection (the sweeps' warm start,
    and the synthesis layer's assembly).

    **Arguments:** `fb`: one design; `theta_A`: the crank angle (rad); `sign`: the
    sign of qB × qD to assemble on (default: `branch_sign_at(fb, theta_A)`); a traced
    ±1 lets one compiled program hold designs of both branches.

    **Returns:** `(x, gap)` with `x = (qB, qD)` and `gap ≤ 0` where the design can be
    assembled at `theta_A`; `gap > 0` is how far |BD| lies outside
    `[|l2 − l3|, l2 + l3]` (metres), and `x` is then the nearest collinear
    configuration. Differentiable everywhere off the toggle positions (`gap = 0`); the
    gradient is finite (the collinear configuration's) where `gap > 0`.
    """
    l1, l2, l3, l4 = fb.lengths[0], fb.lengths[1], fb.lengths[2], fb.lengths[3]
    B = l1 * attitude(theta_A)
    D = jnp.stack([l4, jnp.zeros_like(l4)])
    BD = D - B
    d2 = _dot(BD, BD)
    d_safe = jnp.sqrt(jnp.where(d2 > 0, d2, 1.0))  # no infinite derivative at B = D
    d = jnp.where(d2 > 0, d_safe, 0.0)
    u = jnp.where(d2 > 0, BD / d_safe, jnp.array([1.0, 0.0], dtype=BD.dtype))
    a = (l2**2 - l3**2 + d2) / (2 * d_safe)
    h2 = l2**2 - a**2
    gap = jnp.maximum(d - (l2 + l3), jnp.abs(l2 - l3) - d)
    h = jnp.where(h2 > 0, jnp.sqrt(jnp.where(h2 > 0, h2, 1.0)), 0.0)  # double where: finite gradient
    sign = branch_sign_at(fb, theta_A) if sign is None else sign
    C = B + a * u + sign * h * perp(u)
    qB = (C - B) / l2
    qD = (C - D) / l3
    qB = qB / jnp.sqrt(_dot(qB, qB))
    qD = qD / jnp.sqrt(_dot(qD, qD))
    return jnp.concatenate([qB, qD]), gap


def _full_q(theta_A, x):
    return jnp.concatenate([attitude(theta_A), x], axis=-1)


def solve(
    fb: FourBar, theta_A, guess: Float[Array, "4"] | None = None, *, condition: bool = True, throw: bool = True
) -> _closure.Solution:
    """Solve the closure at one crank angle with the core's Newton (functional API).

    Warm-started from `guess` (default: the circle-intersection configuration on
    `fb.branch`). `throw` as `diffmech.closure.root` (with `throw=False`, check
    `.result`: `motion_limit` where the circle intersection proves the angle
    unassemblable, `branch_switch` if Newton converged on the other branch, else
    the core's cause). One design (no batch axis): `jax.vmap` it for batches.

    **Arguments:** `fb`: one design; `theta_A`: the crank angle (rad); `guess`: `(qB,
    qD)` `(4,)`; `condition`: also compute the closure Jacobian's condition number.

    **Returns:** a `diffmech.closure.Solution` whose `value` is `(qB, qD)`.
    """
    if fb.batch_shape:
        raise ValueError(
            "fourbar.solve: `fb` must be one design (jax.vmap solve, or sweep a batch); got batch shape "
            f"{fb.batch_shape}"
        )
    if np.ndim(theta_A) != 0:
        raise ValueError(f"fourbar.solve: `theta_A` must be one crank angle (a scalar); got shape {np.shape(theta_A)}")
    check_finite("fourbar.solve", {"theta_A": theta_A})
    theta_A = jnp.asarray(theta_A, dtype=fb.lengths.dtype)
    closed, gap = closed_form(jax.lax.stop_gradient(fb), jax.lax.stop_gradient(theta_A))
    if guess is not None and np.shape(guess) != (4,):
        raise ValueError(f"fourbar.solve: `guess` must be (qB, qD), shape (4,); got shape {np.shape(guess)}")
    guess = closed if guess is None else guess
    sol = _closure.root(residual, guess, theta_A, fb, condition=condition, throw=False)
    # the circle intersection proves an angle unassemblable (|BD| outside [|l2 − l3|,
    # l2 + l3]): whatever stopped Newton, the cause is the motion limit
    sol = eqx.tree_at(
        lambda s: s.result,
        sol,
        RESULTS.where((sol.result != RESULTS.successful) & (gap > 0), RESULTS.motion_limit, sol.result),
    )
    ok_branch = jnp.sign(cross(sol.value[:2], sol.value[2:])) == branch_sign_at(fb, theta_A)
    ok_branch = ok_branch | (jnp.abs(cross(sol.value[:2], sol.value[2:])) <= 1e-12)  # a change or dead point
    result = _closure.RESULTS.where(
        sol.result == _closure.RESULTS.successful,
        _closure.RESULTS.where(ok_branch, _closure.RESULTS.successful, _closure.RESULTS.branch_switch),
        sol.result,
    )
    sol = eqx.tree_at(lambda s: s.result, sol, result)
    return sol.check(throw, "fourbar.solve", theta_A)


def _batched(fn, fb: FourBar, *args, chunk: int | None = None):
    """Apply a single-design function to every design of a (possibly batched) FourBar.

    `chunk`: vmap at most this many designs at a time (`_closure.vmap_chunked`; None:
    the whole batch in one vmap).
    """
    batch = fb.batch_shape
    if not batch:
        return fn(fb, *args)
    n = math.prod(batch)
    flat = jax.tree.map(lambda v: v.reshape((n,) + v.shape[len(batch) :]), fb)
    out = _closure.vmap_chunked(lambda f: fn(f, *args), flat, chunk)
    return jax.tree.map(lambda v: v.reshape(batch + v.shape[1:]), out)


def _over_angles(one, fb, theta):
    """Map `one(fb, θ)` over the angles in `theta` (any shape) and the designs of `fb`."""
    flat = theta.reshape(-1)

    def per_design(f):
        return jax.vmap(one, in_axes=(None, 0))(f, flat)

    out = _batched(per_design, fb)
    return jax.tree.map(lambda v: v.reshape(fb.batch_shape + theta.shape + v.shape[len(fb.batch_shape) + 1 :]), out)


@_cache.kept()
def _assemble_jit(fb, theta_A):
    def one(fb_, th):
        sol = solve(fb_, th, condition=False, throw=False)
        _, gap = closed_form(fb_, th)
        return _full_q(th, sol.value), sol.converged, sol.residual, gap, _result_code(sol.result)

    return _over_angles(one, fb, theta_A)


def assemble(fb: FourBar, theta_A) -> Float[Array, "*batch 6"]:
    """The attitude vectors `(qA, qB, qD)` at crank angle `theta_A`, on `fb.branch`.

    Eager API: solved to round-off by the closure core (warm start by circle
    intersection); raises `AssemblyError` naming the design, the angle and the
    residual where the design cannot be assembled. `theta_A` may be a scalar or an
    array of angles (result `(..., 6)`); a batched `fb` gives a leading batch axis.
    Under `jit` it raises at run time through `equinox`'s checked errors; for
    masks instead of errors use `sweep` or `solve(..., throw=False)`.
    """
    if not is_traced(theta_A):
        as_floats("fourbar.assemble", "theta_A", theta_A)
    traced = is_traced(fb, theta_A)
    # eagerly a host array (an eager `jnp.asarray` is a small program of its own)
    theta = (jnp if traced else np).asarray(theta_A, dtype=fb.lengths.dtype)
    if traced:

        def one(fb_, th):
            return _full_q(th, solve(fb_, th, condition=False, throw=True).value)

        return _over_angles(one, fb, theta)
    bad = ~np.isfinite(np.asarray(theta))
    if bad.any():
        raise ValueError(
            f"fourbar.assemble: theta_A must be finite; got {np.asarray(theta)[bad].reshape(-1)[0]} "
            f"(at index {tuple(int(i) for i in np.argwhere(bad)[0])})"
        )
    q, ok, res, gap, code = _assemble_jit(fb, theta)
    ok_np = np.asarray(ok)
    if not ok_np.all():
        idx = tuple(int(i) for i in np.argwhere(~ok_np)[0]) if ok_np.ndim else ()
        nb = len(fb.batch_shape)
        th = float(np.asarray(theta)[idx[nb:]])
        which = f" (design index {idx[:nb]})" if nb else ""
        design = (
            fb if not nb else f"FourBar(lengths={np.asarray(fb.lengths)[idx[:nb]].tolist()}, branch={fb.branch:+d})"
        )
        g = float(np.asarray(gap)[idx])
        reason = (
            f"|BD| lies {g:.3e} m outside [|l2 - l3|, l2 + l3]"
            if g > 0
            else "Newton did not close the loop on the requested branch (near a singular configuration)"
        )
        error = (
            BranchSwitchError
            if int(np.asarray(code)[idx]) == int(_result_code(RESULTS.branch_switch))
            else MotionLimitError
        )
        raise error(
            f"{design}{which} cannot be assembled at theta_A = {th:.6g} rad ({math.degrees(th):.3f} deg): "
            f"closure residual {float(np.asarray(res)[idx]):.3e} after Newton; {reason}. "
            f"Its crank range is given by diffmech.fourbar.crank_limits.",
            status=RESULTS._index_to_message[int(np.asarray(code)[idx])],
            index=idx,  # pyright: ignore
            residual=float(np.asarray(res)[idx]),
        )
    return q


def _lengths_like(fb: FourBar, q) -> Array:
    """`fb.lengths` reshaped to broadcast against `q[..., :1]` (batch axes first,
    then any angle axes of `q`)."""
    l = fb.lengths
    extra = q.ndim - l.ndim
    return l.reshape(l.shape[:-1] + (1,) * extra + (4,))


def closure_residual(fb: FourBar, q: Float[Array, "*n 6"]) -> Float[Array, "*n"]:
    """The physical closure error of `q = (qA, qB, qD)`: the max of the loop gap of
    Eq. (25) in metres and of `| |q_i| − 1 |` for the three attitude vectors.

    **Arguments:** `fb`: the design (or a batch matching `q`'s leading axes); `q`
    `(..., 6)`: configurations.

    **Returns:** the error per configuration, shape `q.shape[:-1]`.
    """
    check_trailing("fourbar.closure_residual", "q", q, (6,))
    return _closure_residual(fb, host_array(q))


@eager_program  # one program eagerly (op by op: ~20 small ones to compile)
def _closure_residual(fb: FourBar, q):
    l = _lengths_like(fb, q)
    qA, qB, qD = q[..., 0:2], q[..., 2:4], q[..., 4:6]
    e1 = jnp.array([1.0, 0.0], dtype=q.dtype)
    loop = l[..., 0:1] * qA + l[..., 1:2] * qB - l[..., 2:3] * qD - l[..., 3:4] * e1
    norms = jnp.stack([jnp.sqrt(_dot(v, v)) - 1 for v in (qA, qB, qD)], axis=-1)
    return jnp.maximum(jnp.max(jnp.abs(loop), axis=-1), jnp.max(jnp.abs(norms), axis=-1))


# --------------------------------------------------------------------------- sweep


class Sweep(AbstractResult):
    """A crank sweep of a four-bar (batch axes first, then the angle axis `N`; the
    contract of every result: `diffmech._result.AbstractResult`).

    - `theta_A`: the crank angles `(N,)`;
    - `q`: attitude vectors `(…, N, 6)` = (qA, qB, qD); rows where `converged` is
      False hold the last converged configuration (use `masked()` to plot);
    - `converged`: `(…, N)` mask, False from a motion limit or branch switch on;
    - `status`: a `diffmech.closure.RESULTS` per angle; `result`: the first failure;
    - `residual`: Newton's final (scaled) residual; `condition`: the closure
      Jacobian's 1-norm condition number (it blows up near toggle positions).
    """

    theta_A: Float[Array, " N"]
    q: Float[Array, "*batch N 6"]
    converged: Bool[Array, "*batch N"]
    status: RESULTS
    residual: Float[Array, "*batch N"]
    condition: Float[Array, "*batch N"]

    _values: ClassVar[str] = "q"
    _inputs: ClassVar[str] = "theta_A"


def sweep_functional(
    fb: FourBar, theta_A: Float[Array, " N"], *, condition: bool = True, sign=None, fallback=None, throw: bool = False
) -> Sweep:
    """`sweep` for use inside `jit`/`vmap`/`grad` (no validation, no batching logic):
    one design, every crank angle of `theta_A` at once (`diffmech.closure.sweep` with
    the circle intersection as its predictor, certified where its closure residual is
    at round-off; Newton, by the core's fallback, only where it is not).
    `sign`: the sign of qB × qD to follow (default `branch_sign(fb)`), traced, so one
    program can follow designs of both branches (see `closed_form`). `fallback`:
    the core's (`diffmech.closure.Continuation()` by default, or `Deferred()`).
    `throw`: as `sweep`.

    **Arguments:** `fb`: one design; `theta_A` `(N,)`: crank angles (rad); `condition`:
    the closure Jacobian's condition number per angle (NaN where False). **Returns:** a
    `Sweep`.
    """
    if np.ndim(theta_A) != 1 or fb.batch_shape:
        raise ValueError(
            "fourbar.sweep_functional: one design (`fb` without batch axes) and `theta_A` (N,); got batch shape "
            f"{fb.batch_shape} and `theta_A` of shape {np.shape(theta_A)} (sweep takes batches)"
        )
    sigma = branch_sign(fb) if sign is None else jnp.asarray(sign, fb.lengths.dtype)
    sigma = jax.lax.stop_gradient(sigma)

    def solution(th, fb_):
        x, gap = closed_form(fb_, th, sigma * _change_point_flip(fb_, th))
        return x, gap <= 0

    def invariant(x, th, fb_):
        # qB × qD keeps its sign along a branch (it vanishes only at toggles); on
        # change-point designs it vanishes at the crossings, so the check is disabled
        return jnp.where(is_change_point(fb_), sigma, cross(x[:2], x[2:]))

    x0, _ = closed_form(jax.lax.stop_gradient(fb), jax.lax.stop_gradient(theta_A[0]), sigma)
    sol = _closure.sweep(
        residual,
        x0,
        theta_A,
        fb,
        predictor=_closure.ClosedForm(solution),
        corrector=_closure.Newton(0),
        branch=_closure.Branch(invariant, sigma),
        condition=False,  # in closed form below: the core's, by elimination, cost several times the sweep
        fallback=fallback,
    )
    q = _full_q(theta_A, sol.value)
    nan = jnp.full_like(sol.residual, jnp.nan)
    cond = jnp.where(sol.converged, condition_number(jax.lax.stop_gradient(sol.value), fb), nan) if condition else nan
    out = Sweep(theta_A=theta_A, q=q, converged=sol.converged, status=sol.status, residual=sol.residual, condition=cond)
    return finish(out, throw, "fourbar.sweep")


# on the CPU a batch of sweeps is solved in chunks of about this many configurations
# (designs × angles): each chunk's arrays then stay in the caches (docs/benchmarks.md, "Measurements behind the code").
# Other backends get the whole batch at once (a GPU wants wide kernels, and each chunk
# would add its kernels' launch latency; not measured: no GPU was available)
_SWEEP_CHUNK = 1 << 16


def _sweep_chunk(n_angles: int) -> int | None:
    return max(1, _SWEEP_CHUNK // n_angles) if jax.default_backend() == "cpu" else None


def _sweep_program(fb, theta_A, condition, deferred):
    fallback = _closure.Deferred() if deferred else None
    out = _batched(
        lambda f: sweep_functional(f, theta_A, condition=condition, fallback=fallback),
        fb,
        chunk=_sweep_chunk(theta_A.shape[0]),
    )
    # the one number the eager call reads back: 1 if an input was left to the fallback,
    # + 2 if an angle is not finite (checked here, not on the host: 4 µs less a call)
    flags = _closure.has_deferred(out.status).astype(jnp.int32) + jnp.where(
        jnp.all(jnp.isfinite(theta_A)), 0, 2
    ).astype(jnp.int32)
    return eqx.tree_at(lambda s: s.theta_A, out, theta_A), flags


def _sweep_lengths_program(lengths, theta_A, condition, deferred, branch):
    # the eager program takes the lengths alone (all a sweep reads, with the static
    # branch): each array argument of a call costs its dispatch, and a FourBar has five
    return _sweep_program(FourBar(lengths=lengths, branch=branch), theta_A, condition, deferred)


# plain jit: eqx.filter_jit costs ~0.2 ms a call here
_sweep_jit = jit(_sweep_lengths_program, static_argnames=("condition", "deferred", "branch"), top_level=True)


def sweep(fb: FourBar, theta_A_values, *, condition: bool = True, throw: bool = False) -> Sweep:
    """Follow the four-bar through the crank angles `theta_A_values` by continuation.

    Every angle solved at once by the closure core (circle intersection certified at
    round-off, sequential continuation only where it is not), kept on `fb.branch`; past a motion limit (a design
    whose crank cannot turn that far)
    or a branch switch every angle is masked (`converged` False), never garbage. A
    batched `fb` is vmapped, on the CPU in chunks of about 2¹⁶ configurations (designs
    × angles) that stay in the caches: pass a batch here rather than vmapping
    `sweep_functional` yourself (10⁴ designs × 360 angles: 1.5–2.5× faster). The first
    angle is solved from the circle-intersection configuration, so it must be
    assemblable for anything to converge.

    `throw`: raise at the first failed angle (`diffmech.MotionLimitError` at a
    motion limit, ...; see `diffmech._result`). Default False: a crank that stops at
    its motion limit is an answer (read `converged`, `result`, `masked()`).

    **Returns:** a `Sweep` (attributes `theta_A`, `q`, `converged`, `status`,
    `residual`, `condition`).
    """
    traced = is_traced(theta_A_values) or is_traced_module(fb)
    if traced:
        theta = jnp.asarray(theta_A_values, dtype=fb.lengths.dtype)
    else:  # the only call into JAX is the compiled program
        theta = as_floats("fourbar.sweep", "theta_A_values", theta_A_values, np.dtype(fb.lengths.dtype))
    if theta.ndim != 1 or theta.shape[0] < 1:
        raise ValueError(
            f"sweep: `theta_A_values` must be a non-empty 1-D array of crank angles; got shape {theta.shape}"
        )
    if traced:
        # inside a transformation: the program itself (compiler options are a top-level jit's)
        return finish(_sweep_program(fb, theta, condition, False)[0], throw, "fourbar.sweep")
    # eager: the program without the sequential fallback first (half the compile time);
    # the one with it is compiled and run only if an input needs it. The flags are read
    # through NumPy: `bool()` of a JAX scalar costs 5 µs more, a sixth of the sweep
    out, flags = _cache.program(
        "fourbar_sweep", _sweep_lengths_program, _sweep_jit, (fb.lengths, theta), (condition, True, fb.branch)
    )
    flags = int(np.asarray(flags))
    if flags & 2:
        raise ValueError(f"sweep: `theta_A_values` must be finite; got {theta}")
    if flags & 1:
        out = _sweep_jit(fb.lengths, theta, condition, False, fb.branch)[0]
    return finish(out, throw, "fourbar.sweep")


# --------------------------------------------------------------------------- rates


def velocity_ratios(fb: FourBar, q: Float[Array, "6"]) -> Float[Array, "2"]:
    """K of Eq. (35): `(ωB, ωD) = K ωA` (Eq. (36); Eq. (27)'s ω2 means ωB).

    `K = −l1 / (l2 l3 qDᵀS1qB) · (l3 qDᵀS1qA, l2 qBᵀS1qA)`. Singular where qB ∥ qD
    (toggle positions); `(0, 1)` on a parallelogram's parallelogram mode
    (`is_parallelogram_mode`), whose change points are not singular for the motion.

    **Arguments:** `fb`: the design; `q` `(6,)`: a closed configuration. **Returns:**
    `K` `(2,)` (dimensionless).
    """
    check_trailing("fourbar.velocity_ratios", "q", q, (6,))
    l1, l2, l3 = fb.lengths[0], fb.lengths[1], fb.lengths[2]
    qA, qB, qD = q[0:2], q[2:4], q[4:6]
    # qᵀS1p = −(q × p); the ratio is written as printed, with the sign folded in
    par = is_parallelogram_mode(fb)
    den = jnp.where(par, 1.0, l2 * l3 * -cross(qD, qB))  # 0/0 at a parallelogram's change points
    K = -l1 / den * jnp.stack([l3 * -cross(qD, qA), l2 * -cross(qB, qA)])
    return jnp.where(par, jnp.array([0.0, 1.0], dtype=K.dtype), K)


def _paper_q1(l, q):
    # Eqs. (74)–(76): the cosines Q1 = (qBᵀqA, qDᵀqA, qDᵀqB) from the loop dotted with
    # qB, qD, qA. The printed b1a = (l2, l3, l1) has the wrong sign on l3: dotting
    # l1qA + l2qB − l3qD = l4e1 with qD gives l1 qDᵀqA + l2 qDᵀqB = l4 qDᵀe1 + l3
    l1, l2, l3, l4 = l[0], l[1], l[2], l[3]
    qA, qB, qD = q[0:2], q[2:4], q[4:6]
    z = jnp.zeros_like(l1)
    B1a = jnp.stack([jnp.stack([l1, z, -l3]), jnp.stack([z, l1, l2]), jnp.stack([l2, -l3, z])])
    rhs = l4 * jnp.stack([qB[0], qD[0], qA[0]]) - jnp.stack([l2, -l3, l1])
    return _linalg.solve(B1a, rhs)


def _paper_q2(l, q):
    # Eqs. (77)–(79): the sines Q2 = (qAᵀS1qB, qAᵀS1qD, qBᵀS1qD) from the loop crossed
    # with qA, qB, qD. The printed B2a is singular (det = l1l2l3 − l1l2l3 = 0, null
    # vector (l3, l2, −l1): a planar loop gives two independent cross products, not
    # three), so Eq. (79)'s inverse does not exist; we take qBᵀS1qD directly and the
    # other two from rows 2 and 3 of Eq. (78)
    l1, l2, l3, l4 = l[0], l[1], l[2], l[3]
    qB, qD = q[2:4], q[4:6]
    s_BD = _dot(qB, perp(qD))
    return jnp.stack([-(l4 * qB[1] + l3 * s_BD) / l1, -(l4 * qD[1] + l2 * s_BD) / l1, s_BD])


def _ratios_linearised_primal(l, q):
    Q2 = _paper_q2(l, q)
    KA = l[0] / (l[1] * l[2] * Q2[2])  # Eq. (80)
    KB = -jnp.stack([l[2] * Q2[1], l[1] * Q2[0]])
    return KA * KB


@jax.custom_jvp
def _ratios_linearised(l, q):
    return _ratios_linearised_primal(l, q)


@_ratios_linearised.defjvp
def _ratios_linearised_jvp(primals, tangents):
    # Eq. (81) for a general variation: each attitude vector turns by ηᵢ = qᵢ × δqᵢ,
    # δK = δKA KB + KA δKB with
    #   δKA = −(l2 l3 / l1) (e3ᵀQ1) KA² (ηB − ηD),
    #   δKB = (l3 (e2ᵀQ1)(ηD − ηA), l2 (e1ᵀQ1)(ηB − ηA));
    # the paper writes it along the manifold, (ηB, ηD) = K ηA, and prints δKB with the
    # opposite sign: the last step of Eq. (73) drops it (δ(qDᵀS1qA) = (ηD − ηA) qDᵀqA
    # since S1ᵀS1 = I and S1S1 = −I). Lengths enter explicitly
    l, q = primals
    dl, dq = tangents
    K = _ratios_linearised_primal(l, q)
    Q1, Q2 = _paper_q1(l, q), _paper_q2(l, q)
    KA = l[0] / (l[1] * l[2] * Q2[2])
    KB = -jnp.stack([l[2] * Q2[1], l[1] * Q2[0]])
    eA, eB, eD = (cross(q[i : i + 2], dq[i : i + 2]) for i in (0, 2, 4))
    dKA = -(l[1] * l[2] / l[0]) * Q1[2] * KA**2 * (eB - eD)
    dKB = jnp.stack([l[2] * Q1[1] * (eD - eA), l[1] * Q1[0] * (eB - eA)])
    _, dK_l = jax.jvp(lambda ll: _ratios_linearised_primal(ll, q), (l,), (dl,))
    return K, dKA * KB + KA * dKB + dK_l


def velocity_ratios_linearised(fb: FourBar, q: Float[Array, "6"]) -> Float[Array, "2"]:
    """K by the paper's linearised constraint (Section 5, Eqs. (74)–(81)), with its
    variation δK by Eq. (81) as a custom JVP (the direct form, `velocity_ratios`,
    gets δK by differentiating Eq. (35)). Equal to `velocity_ratios` on the
    constraint manifold, value and variation (tested).

    Three printed errors are corrected (the physics wins): in Eq. (74)/(76) the
    right-hand side of the qD row is `l4 qDᵀe1 + l3` (b1a = (l2, −l3, l1)); B2a of
    Eqs. (78)/(79) is singular, so the sine qBᵀS1qD is evaluated directly and the
    other two sines follow from Eq. (78); and δKB of Eqs. (71), (73), (81) has the
    wrong sign.

    **Arguments:** `fb`: the design; `q` `(6,)`: a closed configuration. **Returns:**
    `K` `(2,)`.
    """
    check_trailing("fourbar.velocity_ratios_linearised", "q", q, (6,))
    par = is_parallelogram_mode(fb)
    # a regular stand-in where unused, so that no 0/0 reaches a reverse-mode cotangent
    q_safe = jnp.where(par, jnp.array([0.0, 1.0, 1.0, 0.0, 0.0, 1.0], dtype=q.dtype), q)
    K = _ratios_linearised(fb.lengths, q_safe)
    return jnp.where(par, jnp.array([0.0, 1.0], dtype=K.dtype), K)


def angular_accelerations(fb: FourBar, q: Float[Array, "6"], omega_A, alpha_A) -> Float[Array, "2"]:
    """(αB, αD) from the acceleration constraint, Eq. (29) of Bai et al. as corrected.

    Differentiating the velocity constraint `ωB l2 S1qB − ωD l3 S1qD + ωA l1 S1qA = 0`
    (Eq. (26)) gives
    `αB l2 S1qB − αD l3 S1qD + αA l1 S1qA = ωB² l2 qB − ωD² l3 qD + ωA² l1 qA`;
    the paper prints `− ωA² l1 qA` (in Eq. (23) too), which is wrong (see
    `tests/test_fourbar_kinematics.py::test_printed_eq29_sign_is_wrong`).

    **Arguments:** `fb`: the design; `q` `(6,)`: a closed configuration; `omega_A`,
    `alpha_A`: the crank's rate (rad/s) and acceleration (rad/s²). **Returns:** `(αB,
    αD)` (rad/s²).
    """
    l1, l2, l3 = fb.lengths[0], fb.lengths[1], fb.lengths[2]
    qA, qB, qD = q[0:2], q[2:4], q[4:6]
    wB, wD = velocity_ratios(fb, q) * omega_A
    rhs = wB**2 * l2 * qB - wD**2 * l3 * qD + omega_A**2 * l1 * qA - alpha_A * l1 * perp(qA)
    par = is_parallelogram_mode(fb)
    M = jnp.stack([l2 * perp(qB), -l3 * perp(qD)], axis=1)
    M = jnp.where(par, jnp.eye(2, dtype=M.dtype), M)  # singular at a parallelogram's change points
    alpha = _linalg.solve(M, rhs)
    return jnp.where(par, jnp.stack([jnp.zeros_like(alpha_A), alpha_A]).astype(alpha.dtype), alpha)


def rates(
    fb: FourBar, q: Float[Array, "6"], theta_A, omega_A, alpha_A=0.0
) -> tuple[Float[Array, "6"], Float[Array, "6"]]:
    """q̇ and q̈ of all attitude vectors for a crank motion (θA, ωA, αA), by the
    implicit function theorem through the closure (`diffmech.closure.rates`).

    Arguments in the order of every family's `rates`: the configuration (`q`, which
    must be converged at `theta_A`, e.g. from `assemble`), the input, its rates.

    **Arguments:** `fb`: the design; `q` `(6,)`: a closed configuration at crank angle
    `theta_A` (rad); `omega_A`, `alpha_A`: the crank's rate (rad/s) and acceleration
    (rad/s²).
    """
    dt = fb.lengths.dtype
    check_finite("fourbar.rates", {"q": q, "theta_A": theta_A, "omega_A": omega_A, "alpha_A": alpha_A})
    check_shape("fourbar.rates", "q", q, (6,))
    if not is_traced(fb, q, theta_A):
        # q must be the configuration at theta_A: its crank attitude and its closure
        # (in NumPy: an eager check must not compile programs of its own)
        l, qn, th = np.asarray(fb.lengths, dtype=float), np.asarray(q, dtype=float), float(theta_A)
        loop = l[0] * qn[:2] + l[1] * qn[2:4] - l[2] * qn[4:] - [l[3], 0.0]
        norms = np.linalg.norm(qn.reshape(3, 2), axis=1) - 1
        gap = float(np.max(np.abs(np.r_[qn[:2] - [np.cos(th), np.sin(th)], loop, norms])))
        if gap > 1e-8:
            raise ValueError(
                f"fourbar.rates: `q` must be a closed configuration at `theta_A` = {float(theta_A):.6g} rad (e.g. "
                f"assemble(fb, theta_A)); its crank attitude or closure is off by {gap:.3e}"
            )
    xp = jnp if is_traced(fb, q, theta_A, omega_A, alpha_A) else np  # eagerly host arrays: no small programs
    theta_A, omega_A, alpha_A = (xp.asarray(v, dtype=dt) for v in (theta_A, omega_A, alpha_A))
    x = xp.asarray(q, dtype=dt)[2:]
    xdot, xddot = _closure.rates(residual, x, theta_A, fb, omega_A, alpha_A)  # pyright: ignore[reportArgumentType]
    return _with_crank(theta_A, omega_A, alpha_A, xdot, xddot)


@_cache.kept()
def _with_crank(theta_A, omega_A, alpha_A, xdot, xddot):
    """`rates`' q̇, q̈ with the crank's own attitude rates first (one small program)."""
    qA = attitude(theta_A)
    qA_dot = omega_A * perp(qA)
    qA_ddot = alpha_A * perp(qA) - omega_A**2 * qA
    return jnp.concatenate([qA_dot, xdot]), jnp.concatenate([qA_ddot, xddot])


def angular_velocities(q: Float[Array, "6"], qdot: Float[Array, "6"]) -> Float[Array, "3"]:
    """(ωA, ωB, ωD) from attitude rates: q̇ = ω S1 q (Eq. (19)) ⇒ ω = q × q̇.

    **Arguments:** `q` `(6,)`: the attitude vectors `(qA, qB, qD)`; `qdot` `(6,)`: their
    time derivatives. **Returns:** `(ωA, ωB, ωD)` (rad/s).
    """
    check_trailing("fourbar.angular_velocities", "q", q, (6,))
    check_trailing("fourbar.angular_velocities", "qdot", qdot, (6,))
    return jnp.stack([cross(q[i : i + 2], qdot[i : i + 2]) for i in (0, 2, 4)])


@eager_program  # eagerly one program (op by op: a dozen small ones)
def joint_positions(fb: FourBar, q: Float[Array, "*n 6"]) -> dict[str, Float[Array, "*n 2"]]:
    """Positions of the joints A, B, C, D (metres, A at the origin, D on +x) of the
    design `fb` for configurations `q` `(..., 6)`: a dict of `(..., 2)` arrays."""
    check_trailing("fourbar.joint_positions", "q", q, (6,))
    l = _lengths_like(fb, q)
    qA, qB = q[..., 0:2], q[..., 2:4]
    B = l[..., 0:1] * qA
    C = B + l[..., 1:2] * qB
    D = jnp.concatenate([l[..., 3:4], jnp.zeros_like(l[..., 3:4])], axis=-1) + jnp.zeros_like(B)
    return {"A": jnp.zeros_like(B), "B": B, "C": C, "D": D}


def coupler_point(fb: FourBar, q: Float[Array, "*n 6"], point: Float[Array, "2"]) -> Float[Array, "*n 2"]:
    """A point carried by the coupler: `B + p_x qB + p_y S1 qB`, with `point = (p_x, p_y)`
    in the coupler frame (origin B, x along B→C; metres), for the design `fb` at
    configurations `q` `(..., 6)`. Returns `(..., 2)` (metres).

    **Arguments:** `fb`: the design; `q` `(..., 6)`: configurations; `point`: `(p_x,
    p_y)` in the coupler frame (m).
    """
    check_trailing("fourbar.coupler_point", "q", q, (6,))
    check_trailing("fourbar.coupler_point", "point", point, (2,))
    return _coupler_point(fb, q, point if is_traced(point) else np.asarray(point, dtype=float))


@eager_program  # eagerly one program (op by op: a dozen small ones)
def _coupler_point(fb, q, point):
    point = jnp.asarray(point, dtype=q.dtype)
    l = _lengths_like(fb, q)
    qA, qB = q[..., 0:2], q[..., 2:4]
    return l[..., 0:1] * qA + point[..., 0:1] * qB + point[..., 1:2] * perp(qB)


# --------------------------------------------------------------------------- Grashof


GRASHOF_CLASSES = (
    "crank-rocker",
    "rocker-crank",
    "double-crank",
    "double-rocker",
    "triple-rocker",
    "change-point",
    "parallelogram",
)


def grashof(fb: FourBar, rtol: float = 1e-12) -> str:
    """The Grashof class of a (single, concrete) design, named by what the input link
    (the crank, l1 at A) and the output link (the rocker, l3 at D) do.

    With s, ℓ the shortest and longest links (ground included) and p, q the others
    (Barker's classification):

    - `s + ℓ < p + q` (Grashof): the shortest link turns fully relative to the others.
      Shortest is the crank → `"crank-rocker"` (the input turns fully, the output
      rocks); the rocker → `"rocker-crank"` (the output link at D is the one that turns
      fully, the input rocks); the ground → `"double-crank"` (both turn fully); the
      coupler → `"double-rocker"` (neither does, the coupler turns fully relative to
      them).
    - `s + ℓ > p + q` (non-Grashof): no link turns fully → `"triple-rocker"`.
    - `s + ℓ = p + q` (to `rtol`, the change-point linkages whose branches cross) →
      `"parallelogram"` if opposite links are equal in pairs (l1 = l3, l2 = l4), else
      `"change-point"`.

    `crank_limits` gives the input's range in closed form (jittable).

    **Arguments:** `fb`: one concrete design; `rtol`: the relative tolerance of the
    equality `s + ℓ = p + q`.
    """
    check_scalar("fourbar.grashof", "rtol", rtol, nonnegative=True)
    if fb.batch_shape:
        raise ValueError(f"grashof: expects one design; got batch shape {fb.batch_shape}")
    if is_traced(fb.lengths):
        raise ValueError("grashof: needs concrete lengths (it returns a string); use crank_limits inside jit")
    l = np.asarray(fb.lengths, dtype=float)
    order = np.sort(l)
    s, p, q_, big = order
    total = l.sum()
    tol = rtol * total
    if abs((s + big) - (p + q_)) <= tol:
        if abs(l[0] - l[2]) <= tol and abs(l[1] - l[3]) <= tol:
            return "parallelogram"
        return "change-point"
    if s + big > p + q_:
        return "triple-rocker"
    shortest = int(np.argmin(l))
    return {0: "crank-rocker", 2: "rocker-crank", 3: "double-crank", 1: "double-rocker"}[shortest]


class CrankRange(eqx.Module):
    """The crank angles at which a four-bar can be assembled: `theta_min ≤ |θA| ≤ theta_max`
    (angles wrapped to (−π, π]). `full_rotation` when it is the whole circle; `empty`
    when no angle works. At each limit B, C, D are collinear and the two assembly
    branches meet.

    **Fields:** `theta_min`, `theta_max` (rad, shape `*batch`): the crank turns in
    `θ_min ≤ |θ| ≤ θ_max`; an empty range has `theta_max < 0` or `theta_min > π`.
    """

    theta_min: Float[Array, "*batch"]
    theta_max: Float[Array, "*batch"]

    @property
    def full_rotation(self) -> Bool[Array, "*batch"]:
        # arccos near ±1 turns a 1e-16 rounding of the cosine into 1e-8 rad
        return (self.theta_min <= 1e-7) & (self.theta_max >= jnp.pi - 1e-7)

    @property
    def empty(self) -> Bool[Array, "*batch"]:
        return self.theta_min > self.theta_max

    def contains(self, theta_A) -> Bool[Array, "*batch"]:
        t = jnp.abs(jnp.angle(jnp.exp(1j * jnp.asarray(theta_A))))
        return (t >= self.theta_min) & (t <= self.theta_max)


def crank_limit_cosines(lengths: Float[Array, "*batch 4"] | Any) -> tuple[Array, Array]:
    """`(cos θ_min, cos θ_max)` of `crank_limits`, unclipped (smooth in the lengths):
    the crank turns fully iff `cos θ_min ≥ 1` and `cos θ_max ≤ −1`."""
    l1, l2, l3, l4 = (lengths[..., i] for i in range(4))
    c_max = (l1**2 + l4**2 - (l2 + l3) ** 2) / (2 * l1 * l4)
    c_min = (l1**2 + l4**2 - (l2 - l3) ** 2) / (2 * l1 * l4)
    return c_min, c_max


def crank_limits(fb: FourBar) -> CrankRange:
    """The crank's angular limits of the design(s) `fb` (closed form; jittable and
    batched), as a `CrankRange` of angles in radians.

    B = l1 qA is at distance `d(θ) = √(l1² + l4² − 2 l1 l4 cos θ)` from D; the loop
    closes iff `|l2 − l3| ≤ d ≤ l2 + l3`, i.e. `θ_min ≤ |θ| ≤ θ_max` with
    `cos θ_max = (l1² + l4² − (l2 + l3)²) / (2 l1 l4)` and
    `cos θ_min = (l1² + l4² − (l2 − l3)²) / (2 l1 l4)` (clipped to [−1, 1]).
    """
    return _crank_limits(fb.lengths)


@jit
def _crank_limits(lengths) -> CrankRange:
    """`crank_limits`' arithmetic, one small program when called eagerly."""
    c_min, c_max = crank_limit_cosines(lengths)
    theta_max = jnp.where(c_max > 1, -1.0, jnp.arccos(jnp.clip(c_max, -1.0, 1.0)))  # -1: empty
    theta_min = jnp.where(c_min < -1, 4.0, jnp.arccos(jnp.clip(c_min, -1.0, 1.0)))  # 4 > π: empty
    return CrankRange(theta_min=theta_min, theta_max=theta_max)
