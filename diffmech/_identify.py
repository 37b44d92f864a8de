"""The implementation of `diffmech.identify` (its public names are re-exported there;
the module docstring there describes them)."""

from __future__ import annotations

from typing import Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float

from . import _fit
from ._validate import check_count, check_finite, check_scalar, check_shape, check_type, is_traced
from ._xla import eager_program, filter_jit, host_array
from .fourbar import _dynamics as fbd, _kinematics as fbk
from .fourbar._model import FourBar
from .linkage import _simulate as lks
from .linkage._model import Linkage
from .parallel import _dynamics as pd, _kinematics as pk

__all__ = [
    "BASE_NAMES",
    "PAYLOAD_NAMES",
    "DynamicFit",
    "PayloadFit",
    "TracerFit",
    "fourbar_base_parameters",
    "fourbar_dynamics",
    "fourbar_from_base",
    "fourbar_regressor",
    "fourbar_tracer",
    "linkage_from_params",
    "linkage_params",
    "linkage_tracer",
    "LinkageFit",
    "payload",
    "payload_parameters",
    "payload_regressor",
    "with_payload",
]

# a design's closed form at many crank angles: one program (the eager check below)
_closed_forms = filter_jit(jax.vmap(fbk.closed_form, in_axes=(None, 0)))


class _Kinematic(eqx.Module):
    lengths: Array
    point: Array


class TracerFit(eqx.Module):
    """`fourbar`, `point`: the identified lengths (in a `FourBar`) and coupler point;
    `rms`: the root-mean-square distance between the measured and fitted tracer
    positions; `fit`: the `diffmech.fit.FitResult`."""

    fourbar: FourBar
    point: Float[Array, 2]
    rms: float
    fit: _fit.FitResult


def _tracer_loss(m, theta, points, branch):
    fb = FourBar(lengths=m.lengths, branch=branch)
    s = fbk.sweep_functional(fb, theta, condition=False)
    return _fit.masked_mean(fbk.coupler_point(fb, s.q, m.point) - points, s.converged)


def fourbar_tracer(theta_A, points, initial: FourBar, point0, *, steps: int = 200, gtol: float = 1e-13) -> TracerFit:
    """Identify a four-bar's lengths and coupler point from tracer positions.

    **Arguments:** `theta_A` `(N,)` measured crank angles, in the order of motion;
    `points` `(N, 2)` measured tracer positions (the four-bar's frame); `initial`: the
    starting design (its branch is kept); `point0`: the starting coupler point (coupler
    frame: origin B, x along B→C); `steps`, `gtol` as in `diffmech.fit.fit` (L-BFGS,
    lengths log-parametrised).

    **Returns:** a `TracerFit`. With noise-free data and a start in the basin the
    lengths are recovered to round-off; with noise σ the error grows like σ/√N.
    """
    check_type("identify.fourbar_tracer", "initial", initial, FourBar, "a FourBar (the starting design)")
    check_shape("identify.fourbar_tracer", "point0", point0, (2,))
    theta = jnp.asarray(theta_A, dtype=initial.lengths.dtype)
    pts = jnp.asarray(points, dtype=initial.lengths.dtype)
    if theta.ndim != 1 or theta.size < 1 or pts.shape != theta.shape + (2,):
        raise ValueError(
            f"identify.fourbar_tracer: `theta_A` (N,) and `points` (N, 2) must match, N ≥ 1; "
            f"got {theta.shape} and {pts.shape}"
        )
    if not (np.all(np.isfinite(np.asarray(theta))) and np.all(np.isfinite(np.asarray(pts)))):
        raise ValueError("identify.fourbar_tracer: `theta_A` and `points` must be finite")
    if initial.batch_shape:
        raise ValueError(
            f"identify.fourbar_tracer: `initial` must be one design; got batch shape {initial.batch_shape}"
        )
    # a start that cannot be assembled at the measured angles has no tracer to compare:
    # its penalty would be "fitted" and reported converged
    _, gap = _closed_forms(initial, jnp.asarray(theta))
    if not is_traced(gap) and np.any(np.asarray(gap) > 0):
        k = int(np.argmax(np.asarray(gap) > 0))
        raise ValueError(
            f"identify.fourbar_tracer: `initial` cannot be assembled at theta_A[{k}] = {float(theta[k]):.6g} rad "
            f"(lengths {np.asarray(initial.lengths).tolist()}): start from a design that moves through the data"
        )
    m0 = _Kinematic(lengths=initial.lengths, point=jnp.asarray(point0, dtype=initial.lengths.dtype))
    conv = _fit.Convergence(steps=steps, gtol=gtol)
    res = _fit.fit(_tracer_loss, m0, theta, pts, initial.branch, positive=lambda m: m.lengths, convergence=conv)
    rms = float(jnp.sqrt(res.loss))
    return TracerFit(
        fourbar=FourBar(lengths=res.model.lengths, branch=initial.branch), point=res.model.point, rms=rms, fit=res
    )


# --- kinematic identification of a linkage -----------------------------------------


class LinkageFit(eqx.Module):
    """`linkage`: the identified linkage (its initial coordinates); `rms`: the
    root-mean-square distance between the measured and fitted tracer positions;
    `params`: the fitted parameters, two per joint in order (a point's x, y; a line's
    normal angle atan2(b, a) and offset c, the normal kept unit); `rank`: how many
    combinations of them were fitted (the Jacobian's singular values above `rcond`
    of the largest; the others stay at the initial guess); `singular_values` of the
    Jacobian at the fit;
    `covariance`: the parameters' Gauss–Newton covariance (pseudo-inverse: zero along
    the unseen directions); `iterations`, `converged` of Levenberg–Marquardt."""

    linkage: Linkage
    rms: float
    params: Float[Array, " p"]
    rank: int
    singular_values: Float[Array, " p"]
    covariance: Float[Array, "p p"]
    iterations: int
    converged: bool


def linkage_params(lk: Linkage) -> Float[Array, " p"]:
    """A planar linkage's geometry as two numbers per joint (see `LinkageFit`).

    **Arguments:** `lk`: a planar linkage. **Returns:** `(p,)`: its joints' coordinates
    (m; a line as its angle and offset).
    """
    C = lk.coords
    rows = [
        jnp.stack([jnp.arctan2(C[j, 1], C[j, 0]), C[j, 2] / jnp.hypot(C[j, 0], C[j, 1])]) if t == "P" else C[j, :2]
        for j, t in enumerate(lk.types)
    ]
    return jnp.concatenate(rows)


def linkage_from_params(lk: Linkage, p) -> Linkage:
    """The linkage `lk` with the geometry `p` (the inverse of `linkage_params`)."""
    check_type("identify.linkage_from_params", "lk", lk, Linkage, "a Linkage")
    if np.shape(p) != (2 * len(lk.types),):
        raise ValueError(
            f"identify.linkage_from_params: `p` must have shape {(2 * len(lk.types),)} (two per joint of "
            f"{lk.name!r}); got {np.shape(p)}"
        )
    p = jnp.asarray(p, lk.coords.dtype)
    z = jnp.zeros((), p.dtype)
    rows = [
        jnp.stack([jnp.cos(p[2 * j]), jnp.sin(p[2 * j]), p[2 * j + 1]])
        if t == "P"
        else jnp.stack([p[2 * j], p[2 * j + 1], z])
        for j, t in enumerate(lk.types)
    ]
    return eqx.tree_at(lambda m: m.coords, lk, jnp.stack(rows))


@filter_jit
def _lk_linearise(p, lk, inputs, k, points):
    """Tracer positions minus the measured ones (flattened), whether every input
    assembled on the initial branch, and the Jacobian in `p` (forward mode through the
    continuation: the implicit function theorem at every input)."""

    def res(p_):
        m = lks.sweep_functional(linkage_from_params(lk, p_), inputs, branch=True, condition=False)
        ok = jnp.all(m.converged)
        r = jnp.where(ok, (m.coords[:, k, :2] - points).reshape(-1), 0.0)
        return r, (r, ok)

    J, (r, ok) = jax.jacfwd(res, has_aux=True)(p)
    return r, ok, J


def linkage_tracer(
    inputs, points, initial: Linkage, tracer: str, *, rcond: float = 1e-12, max_iter: int = 100, tol: float = 1e-10
) -> LinkageFit:
    """Identify a planar linkage's geometry (its initial joint coordinates: link
    lengths, coupler point, ground pivots and lines) from measured positions of one
    tracer joint at known inputs.

    **Arguments:** `inputs` `(N,)` measured inputs, in the order of motion, from the
    initial configuration (input 0); `points` `(N, 2)` measured tracer positions;
    `initial`: the starting linkage (its branch is kept); `tracer`: the joint whose
    positions were measured; `rcond`: directions of the parameter space whose
    singular value (of the positions' Jacobian at `initial`) is below `rcond` times
    the largest are not fitted (kept at `initial`'s values); `max_iter`, `tol`:
    Levenberg–Marquardt's iterations and relative tolerance (as in
    `fourbar_dynamics`); converged at the latest when the rms reaches round-off.

    **Method:** Levenberg–Marquardt on the position residuals over two parameters per
    joint (`linkage_params`); the residuals' Jacobian by forward-mode differentiation
    through the continuation (one compiled program for every iteration). A step at
    which the candidate fails to assemble at some input, or changes branch, is
    rejected. Combinations of parameters that move no measured point are not
    identifiable: they stay at `initial`'s values and `rank` counts the others. Some
    combinations are barely visible (a Stephenson-II's tracer J8 over a full turn:
    singular values down to 1e-7 of the largest): with noise σ they would be fitted to
    the noise, far outside the linearisation — pass `rcond` ≈ σ / (the scale of the
    positions) to keep them at the nominal values.

    **Returns:** a `LinkageFit`. With white noise σ per coordinate the fit is the
    maximum-likelihood estimate, and E[rms²] = σ²(2N − rank)/N.
    """
    if not isinstance(initial, Linkage):
        raise ValueError(f"linkage_tracer: `initial` must be a diffmech Linkage; got {type(initial).__name__}")
    check_scalar("identify.linkage_tracer", "rcond", rcond, nonnegative=True)
    check_count("identify.linkage_tracer", "max_iter", max_iter)
    check_scalar("identify.linkage_tracer", "tol", tol, positive=True)
    if initial.geometry != "planar":
        raise ValueError(f"linkage_tracer: `initial` must be planar; {initial.name!r} is {initial.geometry}")
    if tracer not in initial.names:
        raise ValueError(
            f"linkage_tracer: `tracer` must name a joint of {initial.name!r} "
            f"({', '.join(initial.names)}); got {tracer!r}"
        )
    dt_ = initial.coords.dtype
    u = np.asarray(inputs, dtype=float)
    pts = np.asarray(points, dtype=float)
    if u.ndim != 1 or pts.shape != u.shape + (2,):
        raise ValueError(f"linkage_tracer: `inputs` (N,) and `points` (N, 2) must match; got {u.shape} and {pts.shape}")
    if not (np.all(np.isfinite(u)) and np.all(np.isfinite(pts))):
        raise ValueError("linkage_tracer: `inputs` and `points` must be finite")
    n_p = 2 * len(initial.names)
    if 2 * u.size < n_p:
        raise ValueError(
            f"linkage_tracer: {u.size} positions (2 numbers each) cannot determine {n_p} "
            f"parameters; measure at least {n_p // 2} inputs"
        )
    k = initial.names.index(tracer)
    uj, pj = jnp.asarray(u, dtype=dt_), jnp.asarray(pts, dtype=dt_)

    def f(p):
        return _lk_linearise(jnp.asarray(p, dtype=dt_), initial, uj, k, pj)

    # the iteration runs in the row space of the Jacobian at the start: directions that
    # move no measured point (symmetries of the description, e.g. a line's offset that
    # no joint depends on) would otherwise be blown up by Marquardt's column scaling
    p0 = np.asarray(linkage_params(initial))
    r0, ok0, J0 = (np.asarray(x) for x in f(p0))
    if not ok0:
        raise ValueError(
            f"linkage_tracer: {initial.name!r} does not assemble at every input on its initial "
            "branch; check `initial` and `inputs`"
        )
    _, s0, Vt0 = np.linalg.svd(J0, full_matrices=False)
    B = Vt0[s0 > s0[0] * rcond].T

    def fz(z):
        r_, ok_, J_ = f(p0 + B @ z)
        return r_, ok_, np.asarray(J_) @ B

    floor = r0.size * (1e-13 * max(float(np.abs(pts).max()), 1.0)) ** 2
    z, r, Jz, iters, converged = _levenberg_marquardt(
        fz, np.zeros(B.shape[1]), max_iter, tol, floor=floor, name="linkage_tracer", first=(r0, ok0, J0 @ B)
    )
    p = p0 + B @ z
    sv = np.linalg.svd(np.asarray(f(p)[2]), compute_uv=False)
    rank = B.shape[1]
    s2 = float(r @ r) / max(r.size - rank, 1)
    V = B @ np.linalg.pinv(Jz)  # covariance of p = B (JzᵀJz)⁻¹ Bᵀ s²
    pj_ = jnp.asarray(p, dtype=dt_)
    return LinkageFit(
        linkage=linkage_from_params(initial, pj_),
        rms=float(np.sqrt(2 * np.mean(r**2))),
        params=pj_,
        rank=rank,
        singular_values=jnp.asarray(sv, dtype=dt_),
        covariance=jnp.asarray(s2 * V @ V.T, dtype=dt_),
        iterations=iters,
        converged=converged,
    )


# --- dynamic identification of the four-bar ------------------------------------------

BASE_NAMES = ("Z_A", "X_A", "Y_A", "Z_B", "Y_B", "Z_D", "X_D", "Y_D")


def fourbar_base_parameters(fb: FourBar) -> Float[Array, "*batch 8"]:
    """The eight base inertial parameters of a four-bar: the combinations of masses,
    inertias and COM offsets that its dynamics depend on (`BASE_NAMES`).

    Per link, about its joint origin and in its frame (crank at A along qA, coupler at
    B along qB, rocker at D along qD): Zᵢ = Jᵢ + mᵢ|ρᵢ|², Xᵢ = mᵢρᵢx, Yᵢ = mᵢρᵢy.
    The crank and rocker turn about fixed pivots, so their masses appear only through
    X, Y, Z. The coupler is equivalent to point masses M₂ − X₂/l₂ at B (carried by the
    crank) and X₂/l₂ at C (carried by the rocker), its first moment Y₂ across BC and
    the inertia Z₂ − X₂l₂ about B. Hence

        Z_A = Z₁ + (M₂ − X₂/l₂) l₁²,   X_A = X₁ + (M₂ − X₂/l₂) l₁,   Y_A = Y₁,
        Z_B = Z₂ − X₂ l₂,              Y_B = Y₂,
        Z_D = Z₃ + (X₂/l₂) l₃²,        X_D = X₃ + (X₂/l₂) l₃,         Y_D = Y₃.

    Twelve link parameters minus the crank's and the rocker's mass (fixed pivots),
    the coupler's mass (lumped into the crank at B) and the point mass at C (which
    either the coupler or the rocker can carry): 12 − 4 = 8. With gravity and a known
    torque all eight are identifiable from θA(t); in free motion the equation of
    motion is homogeneous in them, so only their ratios are (a common scale of all
    masses and inertias is invisible). `tests/test_identify.py` checks both counts
    against the rank of the regressor and that designs with equal base parameters move
    identically.

    **Arguments:** `fb`: the design(s). **Returns:** `(..., 8)` in `BASE_NAMES`' order
    (kg·m², kg·m).
    """
    check_type("identify.fourbar_base_parameters", "fb", fb, FourBar, "a FourBar")
    return _base_parameters(fb)


@eager_program  # one program eagerly (op by op: a dozen small ones to compile)
def _base_parameters(fb: FourBar):
    l1, l2, l3 = fb.lengths[..., 0], fb.lengths[..., 1], fb.lengths[..., 2]
    m, J, rho = fb.masses, fb.inertias, fb.com
    Z = J + m * jnp.sum(rho**2, axis=-1)
    X, Y = m * rho[..., 0], m * rho[..., 1]
    c = X[..., 1] / l2  # the coupler's point mass at C
    b = m[..., 1] - c  # ... and at B
    return jnp.stack(
        [
            Z[..., 0] + b * l1**2,
            X[..., 0] + b * l1,
            Y[..., 0],
            Z[..., 1] - X[..., 1] * l2,
            Y[..., 1],
            Z[..., 2] + c * l3**2,
            X[..., 2] + c * l3,
            Y[..., 2],
        ],
        axis=-1,
    )


def fourbar_from_base(fb: FourBar, base) -> FourBar:
    """A four-bar with `fb`'s lengths, gravity and branch whose base parameters are
    `base`: unit masses, the coupler's first moment across BC only. Its inertias may be
    non-physical (negative) numbers; its dynamics are those of every design with these
    base parameters. (Built without `FourBar`'s checks, so it works under `jit`.)"""
    check_type("identify.fourbar_from_base", "fb", fb, FourBar, "a FourBar")
    if np.shape(base)[-1:] != (8,):
        raise ValueError(
            f"identify.fourbar_from_base: `base` must have 8 entries (BASE_NAMES); got shape {np.shape(base)}"
        )
    return _from_base(fb, host_array(base, fb.lengths.dtype))


@eager_program
def _from_base(fb: FourBar, base) -> FourBar:
    l1 = fb.lengths[..., 0]
    ZA, XA, YA, ZB, YB, ZD, XD, YD = (base[..., k] for k in range(8))
    one = jnp.ones_like(ZA)
    rho = jnp.stack([jnp.stack([XA - l1, YA], -1), jnp.stack([0.0 * YB, YB], -1), jnp.stack([XD, YD], -1)], -2)
    Z = jnp.stack([ZA - l1**2, ZB, ZD], -1)
    return eqx.tree_at(
        lambda f: (f.masses, f.inertias, f.com), fb, (jnp.stack([one, one, one], -1), Z - jnp.sum(rho**2, axis=-1), rho)
    )


def fourbar_regressor(fb: FourBar, theta_A, omega_A, alpha_A) -> Float[Array, "N 8"]:
    """Y with `crank_torque(design, θA, ωA, αA) = Y @ fourbar_base_parameters(design)`
    for every design with `fb`'s lengths and gravity (the equation of motion is linear
    in the base parameters; Y is its exact Jacobian).

    **Arguments:** `fb`: the design (its lengths and gravity); `theta_A`, `omega_A`,
    `alpha_A` `(N,)`: the crank's angle (rad), rate (rad/s) and acceleration (rad/s²).
    **Returns:** `Y` `(N, 8)` (torque per unit base parameter).
    """

    check_type("identify.fourbar_regressor", "fb", fb, FourBar, "a FourBar")
    check_finite("identify.fourbar_regressor", {"theta_A": theta_A, "omega_A": omega_A, "alpha_A": alpha_A})
    try:
        np.broadcast_shapes(np.shape(theta_A), np.shape(omega_A), np.shape(alpha_A))
    except ValueError:
        raise ValueError(
            "identify.fourbar_regressor: `theta_A`, `omega_A`, `alpha_A` must have one shape (N,) (or be scalars); "
            f"got {np.shape(theta_A)}, {np.shape(omega_A)}, {np.shape(alpha_A)}"
        ) from None

    return _regressor(fb, *(host_array(v, fb.lengths.dtype) for v in (theta_A, omega_A, alpha_A)))


@eager_program  # one program eagerly (op by op, the Jacobian of the torque compiled ~150 small ones)
def _regressor(fb: FourBar, theta_A, omega_A, alpha_A):
    def torque(beta):
        return fbd.crank_torque(_from_base(fb, beta), theta_A, omega_A, alpha_A)

    z = jnp.zeros(8, dtype=fb.lengths.dtype)
    return jax.jacfwd(torque)(z).reshape(-1, 8)


def _savgol(y, dt, half: int, degree: int = 4):
    """Value, first and second derivative of a uniformly sampled signal by local
    polynomial fits (Savitzky–Golay), on the interior samples `half : N − half`."""
    k = np.arange(-half, half + 1) * dt
    V = np.vander(k, degree + 1, increasing=True)
    P = np.linalg.pinv(V)  # rows: polynomial coefficients from the window
    y = np.asarray(y)
    win = np.lib.stride_tricks.sliding_window_view(y, 2 * half + 1)
    c = win @ P.T
    return c[:, 0], c[:, 1], 2 * c[:, 2]


class DynamicFit(eqx.Module):
    """`base`: the identified base parameters (`BASE_NAMES`; in free motion scaled so
    that `base[0]` equals the given `scale`); `lengths`; `t0`, `theta0`, `omega0`: the
    identified state at `t0 = times[window]` (the first sample the fit uses; the
    smoothing fits of step (1) need `window` samples on either side); `rms`:
    root-mean-square crank-angle residual (rad); `covariance`: the Gauss–Newton
    covariance of (`base`, `lengths`) scaled by the residual variance (the free `Z_A`
    row and column zero in free motion; the ground length's, and all lengths' when
    they are not fitted, zero);
    `equation_error`: the first estimate (regression on smoothed derivatives);
    `fourbar`: a design with these lengths and base parameters (`fourbar_from_base`);
    `iterations`, `converged`: of the Levenberg–Marquardt refinement."""

    base: Float[Array, " 8"]
    lengths: Float[Array, " 4"]
    t0: float
    theta0: Float[Array, ""]
    omega0: Float[Array, ""]
    rms: float
    covariance: Float[Array, "12 12"]
    equation_error: Float[Array, " 8"]
    fourbar: FourBar
    iterations: int
    converged: bool


def _split(p, template, fixed, nscale, fit_lengths):
    """Base parameters and lengths from the leading entries of the search vector
    (normalised base parameters, all or all but the fixed `Z_A`; then l1, l2, l3)."""
    nb = 8 if fixed is None else 7
    base = p[:nb] * nscale if fixed is None else jnp.concatenate([fixed[None], p[:nb] * nscale[1:]])
    lengths = jnp.concatenate([p[nb : nb + 3], template.lengths[3:]]) if fit_lengths else template.lengths
    return base, lengths


def _ee_terms(fb, drive, times, theta, omega, alpha):
    """At smoothed samples (θA, ωA, αA): the regressor, the applied torque (from the
    `Drive`) and whether every sample closed."""
    q, ok = jax.vmap(lambda a: fbd.closure_q(fb, a))(theta)
    tau = jax.vmap(lambda t, a, w, qq: drive.generalised_force(fb, t, a, w, qq))(times, theta, omega, q)
    return fourbar_regressor(fb, theta, omega, alpha), tau, jnp.all(ok)


@filter_jit
def _ee_linearise(p, template, drive, fixed, nscale, times, theta, omega, alpha, fit_lengths):
    """Equation error `regressor @ base − applied torque` at the smoothed (θA, ωA, αA),
    whether every sample closed, and its Jacobian in `p` (one forward-mode pass)."""

    def res(p):
        base, lengths = _split(p, template, fixed, nscale, fit_lengths)
        Y, tau, ok = _ee_terms(eqx.tree_at(lambda f: f.lengths, template, lengths), drive, times, theta, omega, alpha)
        r = Y @ base - tau
        return r, (r, ok & jnp.all(lengths > 0))

    J, (r, ok) = jax.jacfwd(res, has_aux=True)(p)
    return r, ok, J


def _oe_residual(p, template, drive, fixed, nscale, times, theta, rtol, fit_lengths):
    """Simulated minus measured θA over `times` (forward-mode differentiable) and the
    mask of samples where the simulation succeeded and the loop closed."""
    base, lengths = _split(p, template, fixed, nscale, fit_lengths)
    th0, w0 = p[-2], p[-1]
    fb = fourbar_from_base(eqx.tree_at(lambda f: f.lengths, template, lengths), base)
    q0, ok0 = fbd.closure_q(fb, th0)
    tr = fbd.simulate_dynamics(
        fb,
        q0,
        fbd.sigma(fb, q0) * w0,
        times[-1],
        t0=times[0],
        saveat=times,
        solver="tsit5",
        rtol=rtol,
        atol=rtol * 1e-2,
        drive=drive,
        adjoint=fbd.diffrax.ForwardMode(),
    )
    ok = ok0 & tr.converged & jnp.all(lengths > 0)
    r = tr.theta_A - theta
    return jnp.where(ok, r, 0.0), ok


@filter_jit
def _oe_linearise(p, template, drive, fixed, nscale, times, theta, rtol, fit_lengths):
    """Output-error residual, whether the simulation succeeded, and the residual's
    Jacobian in `p`, in one forward-mode pass through the solve."""

    def res(x):
        r, ok = _oe_residual(x, template, drive, fixed, nscale, times, theta, rtol, fit_lengths)
        return r, (r, jnp.all(ok))

    J, (r, ok) = jax.jacfwd(res, has_aux=True)(p)
    return r, ok, J


def _levenberg_marquardt(f, p, max_iter, tol, floor=0.0, name="fourbar_dynamics", first=None):
    """Minimise |r(p)|² by Levenberg–Marquardt with Marquardt's diagonal scaling and
    Nielsen's damping update (from the ratio of actual to predicted decrease); `f(p)`
    returns (r, ok, J). A step that fails (`ok` false) or raises the cost is rejected.
    Converged when the undamped Gauss–Newton step predicts a decrease below `tol` times
    the cost (the minimum, to the linearisation's accuracy), or the cost is below
    `floor` (residuals at the model's own accuracy). `first`: f(p), if already known."""
    r, ok, J = (np.asarray(x) for x in (f(p) if first is None else first))
    if not ok:
        raise ValueError(
            f"{name}: the initial estimate does not simulate (loop does not close or the "
            "solver failed); check `initial` and the branch"
        )
    cost, lam, nu = float(r @ r), 1e-3, 2.0
    for it in range(max_iter + 1):
        gn, *_ = np.linalg.lstsq(J, -r, rcond=None)
        if cost <= floor or cost - float(np.sum((r + J @ gn) ** 2)) <= tol * cost:
            return p, r, J, it, True
        if it == max_iter:
            break
        A, g = J.T @ J, J.T @ r
        d = np.diag(A).copy()
        d[d == 0] = 1.0
        while True:
            dp = np.linalg.solve(A + lam * np.diag(d), -g)
            r2, ok2, J2 = (np.asarray(x) for x in f(p + dp))
            cost2 = float(r2 @ r2) if ok2 else np.inf
            predicted = -2.0 * float(g @ dp) - float(dp @ A @ dp)
            rho = (cost - cost2) / predicted if predicted > 0 else -1.0
            if rho > 0:
                lam, nu = lam * max(1 / 3, 1 - (2 * rho - 1) ** 3), 2.0
                break
            lam, nu = lam * nu, nu * 2
            if lam > 1e16:
                return p, r, J, it, False
        p, r, J, cost = p + dp, r2, J2, cost2
    return p, r, J, max_iter, False


def _checked_samples(times, theta_A, initial, window):
    """`fourbar_dynamics`' measurement checked: the times, the angles, the time steps
    and the smoothing window."""
    t = np.asarray(times, dtype=float)
    th = np.asarray(theta_A, dtype=float)
    if t.ndim == 1 and th.shape == t.shape and t.size < 5:
        raise ValueError(
            f"identify.fourbar_dynamics: `times` and `theta_A` have {t.size} samples; the identification needs "
            "at least 5 (a smoothing window of one sample on either side of three)"
        )
    if window is None:  # the default: 5, or the widest the samples allow
        window = min(5, (t.size - 3) // 2) if t.ndim == 1 else 5
    check_count("identify.fourbar_dynamics", "window", window)
    if t.ndim == 1 and th.shape == t.shape and t.size < 2 * window + 3:
        raise ValueError(
            f"identify.fourbar_dynamics: `window` = {window} is too wide for {t.size} samples: the smoothing "
            f"window needs N ≥ 2 window + 3 = {2 * window + 3} (at most window = {(t.size - 3) // 2} here)"
        )
    if t.ndim != 1 or th.shape != t.shape or t.size < 2 * window + 3:
        raise ValueError(
            f"identify.fourbar_dynamics: `times` and `theta_A` must be (N,) with N ≥ 2 `window` + 3 = "
            f"{2 * window + 3}; "
            f"got {t.shape} and {th.shape}"
        )
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(th))):
        raise ValueError("identify.fourbar_dynamics: `times` and `theta_A` must be finite")
    h = np.diff(t)
    if not (np.all(h > 0) and np.ptp(h) <= 1e-9 * h.mean()):
        raise ValueError("identify.fourbar_dynamics: `times` must be increasing and uniformly spaced")
    if initial.batch_shape:
        raise ValueError(
            f"identify.fourbar_dynamics: `initial` must be one design; got batch shape {initial.batch_shape}"
        )
    return t, th, h, window


def _covariance(p, r, J, nscale, free: bool, fit_lengths: bool):
    """The Gauss–Newton covariance of (base, lengths) at the output-error fit (the
    parameters `p` are the base parameters scaled by `nscale`)."""
    nb = 7 if free else 8
    npar = p.size
    s2 = float(r @ r) / max(r.size - npar, 1)
    cov_p = s2 * np.linalg.pinv(J.T @ J)
    T = np.zeros((12, npar))
    T[np.arange(1 if free else 0, 8), np.arange(nb)] = np.asarray(nscale)[1 if free else 0 :]
    if fit_lengths:
        T[8 + np.arange(3), nb + np.arange(3)] = 1.0
    return T @ cov_p @ T.T


def fourbar_dynamics(
    times,
    theta_A,
    initial: FourBar,
    *,
    drive=None,
    scale: float | None = None,
    fit_lengths: bool = True,
    window: int | None = None,
    max_iter: int = 50,
    tol: float = 1e-8,
    rtol: float = 1e-10,
) -> DynamicFit:
    """Identify a four-bar's base inertial parameters (and lengths, and initial state)
    from a measured crank angle θA(t).

    **Arguments:** `times` `(N,)` uniform sample times; `theta_A` `(N,)` measured crank
    angles (unwrapped); `initial`: the nominal design (lengths, gravity, branch; its
    masses and inertias are not used); `drive`: the known `fourbar.Drive` (crank
    torque, joint damping) acting during the measurement, None for free motion;
    `scale`: free motion only, the value `Z_A` is scaled to (default: `initial`'s);
    `fit_lengths`: refine the crank, coupler and rocker lengths too (the ground length
    l4 is kept: a crank angle history is blind to a common scale of all lengths, which
    the base parameters absorb, so one length must be known); `window`: half-width (samples) of the
    smoothing fits of the first estimate (default 5, or the widest that fewer than 13
    samples allow; at least 5 samples are needed); `max_iter`, `tol`: the refinement's
    Levenberg–Marquardt iterations and relative tolerance; `rtol`: the simulation's.

    **Method:** (1) equation error: θA, ωA, αA by local polynomial fits, then least
    squares on `fourbar_regressor` (homogeneous in free motion: `Z_A` fixed);
    (2) output error: the simulated θA(t) of the reduced Hamiltonian model (Diffrax)
    fitted to the measurement by Levenberg–Marquardt over the base parameters, the
    initial state and (optionally) the lengths, starting from (1); its Jacobian by
    forward-mode differentiation through the solve (`diffrax.ForwardMode`), one
    compiled program for every iteration. With white noise this is the maximum
    likelihood estimate and `covariance` its Gauss–Newton covariance.

    **Returns:** a `DynamicFit`.
    """
    check_type("identify.fourbar_dynamics", "initial", initial, FourBar, "a FourBar (the starting design)")
    check_type("identify.fourbar_dynamics", "drive", drive, (fbd.Drive, type(None)), "a fourbar.Drive or None")
    dt_ = initial.lengths.dtype
    t, th, h, window = _checked_samples(times, theta_A, initial, window)
    free = drive is None or (drive.torque is None and not np.any(np.asarray(drive.damping)))
    if scale is not None and not free:
        raise ValueError(
            "identify.fourbar_dynamics: `scale` fixes the unobservable scale of free motion; with a known "
            "torque all base parameters are identified"
        )
    drive = drive if drive is not None else fbd.Drive()
    # (1) equation error on smoothed derivatives: linear in the base parameters at the
    # nominal lengths, then (fit_lengths) Levenberg–Marquardt over both
    s0, s1, s2 = _savgol(th, h.mean(), window)
    ts_i = t[window : t.size - window]
    jt, j0, j1, j2 = (jnp.asarray(x, dtype=dt_) for x in (ts_i, s0, s1, s2))
    Y, tau, _ = (np.asarray(x) for x in _ee_terms(initial, drive, jt, j0, j1, j2))
    if free:
        ref = float(fourbar_base_parameters(initial)[0]) if scale is None else float(scale)
        rest, *_ = np.linalg.lstsq(Y[:, 1:], tau - Y[:, 0] * ref, rcond=None)
        beta0 = np.concatenate([[ref], rest])
    else:
        beta0, *_ = np.linalg.lstsq(Y, tau, rcond=None)
    nscale = jnp.asarray(np.maximum(np.abs(beta0), 1e-3 * np.abs(beta0).max()), dtype=dt_)
    fixed = jnp.asarray(beta0[0], dtype=dt_) if free else None
    b0n = np.asarray(beta0) / np.asarray(nscale)
    p0 = np.concatenate([b0n[1:] if free else b0n, np.asarray(initial.lengths)[:3] if fit_lengths else []])
    if fit_lengths:
        p0, *_ = _levenberg_marquardt(
            lambda p: _ee_linearise(jnp.asarray(p, dtype=dt_), initial, drive, fixed, nscale, jt, j0, j1, j2, True),
            p0,
            max_iter,
            tol,
        )
    first, _ = _split(jnp.asarray(p0, dtype=dt_), initial, fixed, nscale, fit_lengths)
    # (2) output error over times[window:-window], from (1) and the smoothed state at its start
    p0 = np.concatenate([p0, [s0[0], s1[0]]])
    tt = jnp.asarray(ts_i, dtype=dt_)
    meas = jnp.asarray(th[window : t.size - window], dtype=dt_)

    def f(p):
        return _oe_linearise(jnp.asarray(p, dtype=dt_), initial, drive, fixed, nscale, tt, meas, rtol, fit_lengths)

    # converged at the latest when the residuals are at the simulation's accuracy
    p, r, J, iters, converged = _levenberg_marquardt(f, p0, max_iter, tol, floor=meas.size * (10 * rtol) ** 2)
    base, lengths = _split(jnp.asarray(p, dtype=dt_), initial, fixed, nscale, fit_lengths)
    th0, w0 = jnp.asarray(p[-2], dtype=dt_), jnp.asarray(p[-1], dtype=dt_)
    cov = _covariance(p, r, J, nscale, free, fit_lengths)
    fb = fourbar_from_base(eqx.tree_at(lambda f_: f_.lengths, initial, lengths), base)
    return DynamicFit(
        base=base,
        lengths=lengths,
        t0=float(ts_i[0]),
        theta0=th0,
        omega0=w0,
        rms=float(np.sqrt(np.mean(r**2))),
        covariance=jnp.asarray(cov, dtype=dt_),
        equation_error=first,
        fourbar=fb,
        iterations=iters,
        converged=converged,
    )


# --- parallel mechanisms: the platform's (payload's) inertial parameters -------------

PAYLOAD_NAMES = ("m", "m_cx", "m_cy", "m_cz", "K_xx", "K_yy", "K_zz", "K_xy", "K_xz", "K_yz")
_SYM = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))


def payload_parameters(mechanism) -> Float[Array, " 10"]:
    """The platform's 10 inertial parameters in which the actuator forces are affine
    (`PAYLOAD_NAMES`): mass m, first moment m·c and the inertia K about the world
    origin, all at home in space axes (K = I_c + m(|c|² 1 − c cᵀ)).

    **Arguments:** `mechanism`: a parallel mechanism (its platform's mass properties).
    **Returns:** `(10,)` (kg, kg·m, kg·m²).
    """
    pk.check_kinematics_arguments("identify.payload_parameters", mechanism)
    m, c, I = mechanism.mass, mechanism.com, mechanism.inertia
    K = I + m * (jnp.dot(c, c) * jnp.eye(3, dtype=c.dtype) - jnp.outer(c, c))
    return jnp.concatenate([m[None], m * c, jnp.stack([K[i, j] for i, j in _SYM])])


def with_payload(mechanism, params):
    """`mechanism` with its platform's mass, COM and inertia about the COM set from
    `payload_parameters`-style `params` (usable inside `jit`: only the kinds and the
    shape are checked)."""
    pk.check_kinematics_arguments("identify.with_payload", mechanism)
    if np.shape(params) != (10,):
        raise ValueError(
            f"identify.with_payload: `params` must have shape (10,) (PAYLOAD_NAMES); got {np.shape(params)}"
        )
    params = jnp.asarray(params)
    m, h = params[0], params[1:4]
    K = jnp.zeros((3, 3), dtype=params.dtype)
    for k, (i, j) in enumerate(_SYM):
        K = K.at[i, j].set(params[4 + k]).at[j, i].set(params[4 + k])
    I = K - (jnp.dot(h, h) * jnp.eye(3, dtype=h.dtype) - jnp.outer(h, h)) / m
    return eqx.tree_at(lambda M: (M.mass, M.com, M.inertia), mechanism, (m, h / m, I))


@filter_jit
def _payload_regressor(mechanism, kin, f_ext, method):
    p0 = payload_parameters(mechanism)

    def forces(p):
        dyn = pd.solve_dynamics(with_payload(mechanism, p), kin, f_ext, method)
        return dyn.actuator_forces, dyn

    Y, dyn = jax.jacfwd(forces, has_aux=True)(p0)  # Y: (N, a, 10), one forward-mode pass
    return Y, dyn.actuator_forces - Y @ p0, dyn.converged


def payload_regressor(mechanism, trajectory, external_wrench=None, *, kinematics=None, method="newton_euler"):
    """`(Y, f0)` with `actuator_forces = Y @ payload_parameters(platform) + f0` along
    `trajectory` for every platform on `mechanism`'s chains (Y `(N, a, 10)`: the exact
    Jacobian of `parallel.inverse_dynamics`'s forces, which are affine in these
    parameters; f0: the forces with a massless platform, legs and external wrench
    only).

    **Arguments:** `mechanism`: the parallel mechanism; `trajectory`: the platform's
    `Trajectory`; `external_wrench` `(6,)` (N, N·m; default zero); `kinematics`: its
    `Kinematics` if already computed; `method`: `parallel.inverse_dynamics`'s method.
    """
    kin = kinematics if kinematics is not None else pk.inverse_kinematics(mechanism, trajectory)
    N = kin.times.shape[0]
    fe = (
        jnp.zeros(6, dtype=kin.times.dtype)
        if external_wrench is None
        else jnp.asarray(external_wrench, kin.times.dtype)
    )
    if fe.shape not in ((6,), (N, 6)):
        raise ValueError(f"payload_regressor: `external_wrench` must have shape (6,) or ({N}, 6); got {fe.shape}")
    if method not in pd.METHODS:
        raise ValueError(f"payload_regressor: `method` must be one of {pd.METHODS}; got {method!r}")
    Y, f0, ok = _payload_regressor(mechanism, kin, jnp.broadcast_to(fe, (N, 6)), method)
    if not bool(np.all(ok)):
        k = int(np.argmin(np.asarray(ok)))
        raise ValueError(
            f"payload_regressor: the wrench system is singular at sample {k} (t = {float(kin.times[k]):.6g} s)"
        )
    return Y, f0


class PayloadFit(eqx.Module):
    """`params` (`PAYLOAD_NAMES`), `mass`, `com`, `inertia` (about the COM, home, space
    axes); `covariance` of `params` (residual variance times (YᵀY)⁻¹); `rms`: of the
    force residual (N or N·m); `rank` of the stacked regressor (10 when the trajectory
    excites every parameter) and its `condition` number (columns scaled to unit
    norm); `mechanism`: the given one with the identified platform."""

    params: Float[Array, " 10"]
    mass: Float[Array, ""]
    com: Float[Array, " 3"]
    inertia: Float[Array, "3 3"]
    covariance: Float[Array, "10 10"]
    rms: float
    rank: int
    condition: float
    mechanism: eqx.Module


def payload(
    mechanism,
    trajectory,
    actuator_forces,
    external_wrench=None,
    *,
    kinematics=None,
    method: Literal["newton_euler", "momentum"] = "newton_euler",
    regressor=None,
) -> PayloadFit:
    """Identify the platform's (payload's) mass, centre of mass and inertia from
    measured actuator forces along a known trajectory: linear least squares on
    `payload_regressor` (the legs' own inertia, gravity and `external_wrench` known,
    from `mechanism`; its platform values are not used except as the point the exact
    regressor is evaluated at).

    **Arguments:** `mechanism` (e.g. `parallel.StewartPlatform`), `trajectory` (a
    `parallel.Trajectory`), `actuator_forces` `(N, a)` measured; `kinematics`, `method`
    as `parallel.inverse_dynamics`; `regressor`: the `(Y, f0)` of `payload_regressor`
    for these arguments, when already computed (recordings along one trajectory share
    it, and only the least squares is solved; `external_wrench`, `kinematics` and
    `method` are then not used).

    **Returns:** a `PayloadFit`. Raises `ValueError` when the trajectory does not excite
    all ten parameters (rank < 10): a motion with no rotation, for example, leaves the
    inertia unidentified.
    """
    if regressor is None:
        Y, f0 = payload_regressor(mechanism, trajectory, external_wrench, kinematics=kinematics, method=method)
    else:
        Y, f0 = (np.asarray(a, dtype=float) for a in regressor)
        N = np.shape(trajectory.times)[0]
        if Y.ndim != 3 or Y.shape[0] != N or Y.shape[2] != 10 or f0.shape != Y.shape[:2]:
            raise ValueError(
                f"payload: `regressor` must be payload_regressor's (Y, f0) for this trajectory: Y ({N}, a, 10) "
                f"and f0 ({N}, a); got {Y.shape} and {f0.shape}"
            )
    f = np.asarray(actuator_forces, dtype=float)
    if f.shape != Y.shape[:2]:
        raise ValueError(
            f"payload: `actuator_forces` must have shape {Y.shape[:2]} (samples, actuators); got {f.shape}"
        )
    if not np.all(np.isfinite(f)):
        raise ValueError("payload: `actuator_forces` must be finite")
    A = np.asarray(Y).reshape(-1, 10)
    b = (f - np.asarray(f0)).reshape(-1)
    norms = np.linalg.norm(A, axis=0)
    s = np.linalg.svd(A / np.where(norms > 0, norms, 1.0), compute_uv=False)
    rank = int(np.sum(s > 1e-10 * s[0]))
    if rank < 10:
        weak = [PAYLOAD_NAMES[k] for k in np.flatnonzero(norms <= 1e-12 * norms.max())]
        raise ValueError(
            f"payload: the trajectory excites only {rank} of the 10 payload parameters"
            + (f" ({', '.join(weak)} not at all)" if weak else "")
            + "; use a motion that rotates "
            "about every axis and accelerates in every direction"
        )
    x, *_ = np.linalg.lstsq(A, b, rcond=None)
    r = A @ x - b
    dof = max(A.shape[0] - 10, 1)
    cov = float(r @ r) / dof * np.linalg.inv(A.T @ A)
    p = jnp.asarray(x)
    fitted = with_payload(mechanism, p)
    return PayloadFit(
        params=p,
        mass=fitted.mass,
        com=fitted.com,
        inertia=fitted.inertia,
        covariance=jnp.asarray(cov),
        rms=float(np.sqrt(np.mean(r**2))),
        rank=rank,
        condition=float(s[0] / s[-1]),
        mechanism=fitted,
    )
