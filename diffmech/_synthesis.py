"""Path generation by gradient descent from many starts (the fitting layer, `diffmech.fit`).

Four-bars: the coupler point of a four-bar placed anywhere in the plane (crank pivot,
ground-line orientation) should pass through target points, at prescribed crank
angles (prescribed timing) or at any crank angles (free timing: each target's crank
angle is a design variable, so the points may lie in any order along the curve). The
optimisation assembles by circle intersection (`fourbar.closed_form`, exact, cheap to
compile and differentiate) on a fixed assembly branch; every start is then checked by
the closure core: a continuation sweep (Newton to round-off) from target to target in
the order of motion, which fails on a motion limit or a branch switch. Only starts that
pass count; the reported path error is the core's.

Linkages (six-bars and beyond): the joint coordinates of a `Linkage` are fitted so that
a tracer passes through the targets at prescribed inputs, through
`linkage.simulate_functional` (the core's continuation and implicit gradients), with
unassemblable samples masked out of the loss before the gradient.
"""

from __future__ import annotations

import json

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from . import _fit
from ._geometry import attitude, rotation
from .fourbar import _kinematics as fbk
from .fourbar._model import FourBar
from .linkage import _simulate as lks
from .linkage._model import Linkage

__all__ = ["PlacedFourBar", "Synthesis", "path_generation"]


def _to_world(design, local):
    # a PlacedFourBar or a search candidate: local four-bar frame → world frame
    return design.origin + local @ rotation(design.angle).T


class PlacedFourBar(eqx.Module):
    """A four-bar placed in the plane, with a coupler point: a path-generation design.

    **Fields** (array leaves):

    - `lengths`: `(l1, l2, l3, l4)` as in `FourBar` (crank, coupler, rocker, ground);
    - `point`: the coupler point in the coupler frame (origin B, x along B→C);
    - `origin`: the crank pivot A in the world frame;
    - `angle`: the direction of the ground line A→D in the world frame (rad).

    **Static:** `branch` (±1, as in `FourBar`).

    The world position of the coupler point at crank angle θA (measured from the
    ground line A→D, anticlockwise) is `origin + R(angle) · coupler_point(θA)`.
    """

    lengths: Float[Array, "4"]
    point: Float[Array, "2"]
    origin: Float[Array, "2"]
    angle: Float[Array, ""]
    branch: int = eqx.field(static=True, default=1)

    @property
    def fourbar(self) -> FourBar:
        """The four-bar in its own frame (A at the origin, D on +x)."""
        return FourBar(lengths=self.lengths, branch=self.branch)

    def to_world(self, local: Float[Array, "*n 2"]) -> Float[Array, "*n 2"]:
        """Map points from the four-bar's frame to the world frame."""
        return _to_world(self, local)

    def path(self, theta_A) -> tuple[Float[Array, "N 2"], Bool[Array, " N"]]:
        """The coupler point's world positions along a crank sweep through `theta_A`
        (the closure core, continuation in the given order), and the converged mask."""
        s = fbk.sweep(self.fourbar, theta_A, condition=False)
        return self.to_world(fbk.coupler_point(self.fourbar, s.q, self.point)), s.converged

    def joints(self, theta_A) -> dict[str, Float[Array, "2"]]:
        """World positions of A, B, C, D and the coupler point P at one crank angle."""
        q = fbk.assemble(self.fourbar, theta_A)
        loc = fbk.joint_positions(self.fourbar, q)
        loc["P"] = fbk.coupler_point(self.fourbar, q, self.point)
        return {k: self.to_world(v) for k, v in loc.items()}

    def to_linkage_dict(self, theta_A=0.0, name: str = "fourbar_synthesis") -> dict:
        """The design as a linkage description (`diffmech.linkage.Linkage.from_dict`, the
        JSON loader's format), assembled at crank angle `theta_A` (its input 0): joints
        A, B, C, D (revolute) and the tracer P; the input turns the crank about A."""
        j = {k: np.asarray(v, dtype=float).tolist() for k, v in self.joints(theta_A).items()}
        return {
            "name": name,
            "geometry": "planar",
            "description": (f"Four-bar from diffmech.synthesis.path_generation: lengths {np.asarray(self.lengths).tolist()}, "
                            f"coupler point {np.asarray(self.point).tolist()} (coupler frame), branch {self.branch:+d}, "
                            f"ground line at {float(self.angle):.12g} rad, input 0 = crank angle {float(theta_A):.12g} rad"),
            "joints": {"A": {"type": "R", "coords": j["A"]}, "B": {"type": "R", "coords": j["B"]},
                       "C": {"type": "R", "coords": j["C"]}, "D": {"type": "R", "coords": j["D"]},
                       "P": {"type": "tracer", "coords": j["P"]}},
            "links": {"crank": ["A", "B"], "coupler": ["B", "C", "P"], "rocker": ["C", "D"], "ground": ["A", "D"]},
            "ground": "ground",
            "input": {"type": "revolute", "link": "crank", "joint": "A"},
        }


class Synthesis(eqx.Module):
    """The result of `path_generation`.

    - `design`: the best design found (a `PlacedFourBar`, or a `Linkage`);
    - `inputs`: its crank angles (four-bar, from the ground line) or inputs (linkage)
      at the targets;
    - `points`: its coupler (tracer) positions there, from the closure core;
    - `error`: the mean distance from those points to the targets (world units);
      `relative_error`: divided by the targets' RMS distance from their centroid;
    - `history`: the loss history of the best start (`diffmech.fit.History`);
    - `errors`, `valid`: per start, the mean distance (inf where the start failed the
      core's check) and whether it passed (assembles at every target on one branch,
      reached in the order of motion without a motion limit);
    - `success_rate`: the fraction of starts whose relative error is ≤ `tol`;
    - `fit`: the `diffmech.fit.FitResult` of all starts.
    """

    design: PlacedFourBar | Linkage
    inputs: Float[Array, " n"]
    points: Float[Array, "n 2"]
    error: float
    relative_error: float
    history: _fit.History
    errors: Float[Array, " starts"]
    valid: Bool[Array, " starts"]
    success_rate: float
    fit: _fit.FitResult


# --------------------------------------------------------------------------- four-bar candidates


class _Candidate(eqx.Module):
    # one start of the four-bar search, in normalised target coordinates
    lengths: Array  # (4,), kept positive (log-parametrised)
    point: Array  # (2,)
    origin: Array  # (2,)
    angle: Array  # ()
    phase: Array  # () prescribed timing: crank angle at the first target (free timing: unused)
    sigma: Array  # () ±1, the sign of qB × qD: the assembly branch (frozen)


def _crank_angles(c, increments, free, targets=None, margin=0.0):
    """The crank angle at each target: prescribed, `phase + increments`; free, the
    angle of the curve's point nearest to each target (`_nearest`)."""
    if not free:
        return c.phase + increments
    return _nearest(c, targets, margin)


def _nearest(c, targets, margin, newton=6):
    """Free timing by variable projection: for each target the crank angle minimising
    `f(θ) = |P(θ) − T|² + 10 relu(gap(θ) + margin)²`, from the best of 64 samples of
    the curve by `newton` Newton steps on f′ (f″ ≤ 0 falls back to a gradient step).
    Returned under `stop_gradient`: at a minimum f′ = 0, so the design gradient of the
    loss at fixed θ* is its total gradient (the envelope theorem)."""
    c = jax.lax.stop_gradient(c)
    grid = jnp.linspace(0.0, 2 * jnp.pi, 64, endpoint=False, dtype=targets.dtype)

    def f(th, T):
        P, gap = _coupler(c, th[None])
        return jnp.sum((P[0] - T) ** 2) + 10.0 * jax.nn.relu(gap[0] + margin) ** 2

    curve, gap = _coupler(c, grid)
    d2 = jnp.sum((targets[:, None, :] - curve[None, :, :]) ** 2, -1) + 10.0 * jax.nn.relu(gap + margin)[None, :] ** 2
    theta = grid[jnp.argmin(d2, axis=1)]
    df = jax.grad(f)
    d2f = jax.grad(df)

    def step(th, _):
        g = jax.vmap(df)(th, targets)
        h = jax.vmap(d2f)(th, targets)
        dth = jnp.where(h > 0, -g / jnp.where(h > 0, h, 1.0), -g)
        return th + jnp.clip(dth, -0.2, 0.2), None

    theta, _ = jax.lax.scan(step, theta, None, length=newton)
    return jax.lax.stop_gradient(theta)


def _coupler(c, theta):
    fb = FourBar(lengths=c.lengths)
    x, gap = jax.vmap(lambda th: fbk.closed_form(fb, th, c.sigma))(theta)
    q = jnp.concatenate([attitude(theta), x], axis=-1)
    local = fbk.coupler_point(fb, q, c.point)
    return _to_world(c, local), gap


def _penalties(c, gap, full_rotation, margin):
    """Hinge penalties, exactly zero inside the feasible set: every target assemblable
    with a margin from the toggle positions; lengths within 1/50 … 50 of the targets'
    size; with `full_rotation`, a crank that turns fully (Grashof, crank shortest)."""
    p = jnp.mean(jax.nn.relu(gap + margin) ** 2)
    p = p + jnp.sum(jax.nn.relu(c.lengths - 50.0) ** 2 + jax.nn.relu(0.02 - c.lengths) ** 2)
    if full_rotation:
        c_min, c_max = fbk.crank_limit_cosines(c.lengths)
        p = p + jax.nn.relu(1.0 + margin - c_min) ** 2 + jax.nn.relu(c_max + 1.0 + margin) ** 2
    return p


def _loss(c, targets, increments, free, full_rotation, margin):
    P, gap = _coupler(c, _crank_angles(c, increments, free, targets, margin))
    return jnp.mean(jnp.sum((P - targets) ** 2, axis=-1)) + 10.0 * _penalties(c, gap, full_rotation, margin)


def _seed(c, targets, increments, free):
    """Place a random start: its curve's centroid on the targets' (origin), and (prescribed
    timing) the best of 64 phases."""
    grid = jnp.linspace(0.0, 2 * jnp.pi, 64, endpoint=False, dtype=targets.dtype)
    c0 = eqx.tree_at(lambda m: m.origin, c, jnp.zeros(2, targets.dtype))
    curve, gap = _coupler(c0, grid)
    ok = gap <= 0
    centre = jnp.sum(jnp.where(ok[:, None], curve, 0.0), 0) / jnp.maximum(jnp.sum(ok), 1).astype(curve.dtype)
    c = eqx.tree_at(lambda m: m.origin, c, -centre)
    if free:
        return c
    errs = jax.vmap(lambda ph: jnp.sum((_coupler(c, ph + increments)[0] - targets) ** 2))(grid)
    return eqx.tree_at(lambda m: m.phase, c, grid[jnp.argmin(jnp.where(jnp.isfinite(errs), errs, jnp.inf))])


_seed_batch = eqx.filter_jit(lambda c, t, inc, free: jax.vmap(lambda c_: _seed(c_, t, inc, free))(c))


def _random_starts(n_starts, rng, dtype):
    """Grashof crank-rockers (crank shortest: they assemble at every crank angle) of
    random proportions, coupler points and orientations, half on each branch."""
    lengths = np.empty((n_starts, 4))
    i = 0
    while i < n_starts:
        l1 = rng.uniform(0.15, 0.6)
        rest = rng.uniform(0.6, 2.0, size=3)
        s = np.sort(np.r_[l1, rest])
        if l1 == s[0] and s[0] + s[3] < s[1] + s[2] - 0.05:
            lengths[i] = np.r_[l1, rest]
            i += 1
    z = lambda *shape: np.zeros(shape)  # noqa: E731
    sigma = np.where(np.arange(n_starts) % 2 == 0, 1.0, -1.0)
    return _Candidate(lengths=jnp.asarray(lengths, dtype), point=jnp.asarray(rng.normal(0.0, 0.7, (n_starts, 2)), dtype),
                      origin=jnp.asarray(z(n_starts, 2), dtype), angle=jnp.asarray(rng.uniform(-np.pi, np.pi, n_starts), dtype),
                      phase=jnp.asarray(z(n_starts), dtype),
                      sigma=jnp.asarray(sigma, dtype))


def _motion_order(theta, free):
    """Crank angles in the order the crank meets them: as given (prescribed); for free
    timing, anticlockwise from the end of the largest angular gap (the part of the
    circle the motion need not cross). Returns the ordered angles and the permutation."""
    if not free:
        return theta, jnp.arange(theta.shape[0])
    w = jnp.mod(theta, 2 * jnp.pi)
    order = jnp.argsort(w)
    ws = w[order]
    gaps = jnp.diff(jnp.concatenate([ws, ws[:1] + 2 * jnp.pi]))
    k = (jnp.argmax(gaps) + 1) % theta.shape[0]
    order = jnp.roll(order, -k)
    ordered = w[order]
    return ordered + 2 * jnp.pi * jnp.cumsum(jnp.concatenate([jnp.zeros(1, ordered.dtype), (jnp.diff(ordered) < 0).astype(ordered.dtype)])), order


def _check(c, targets, increments, free, margin, substeps):
    """The closure core's verdict on one start: a continuation sweep through the target
    angles in the order of motion (with `substeps` between consecutive targets), on the
    start's branch; returns (crank angles, points at the targets, all converged)."""
    theta = _crank_angles(c, increments, free, targets, margin)
    ordered, order = _motion_order(theta, free)
    frac = jnp.arange(substeps, dtype=theta.dtype) / substeps
    grid = (ordered[:-1, None] + jnp.diff(ordered)[:, None] * frac[None, :]).reshape(-1)
    grid = jnp.concatenate([grid, ordered[-1:]])
    fb = FourBar(lengths=c.lengths)
    s = fbk.sweep_functional(fb, grid, condition=False, sigma=c.sigma)
    q = s.q[::substeps]
    local = fbk.coupler_point(fb, q, c.point)
    pts = _to_world(c, local)
    inverse = jnp.argsort(order)
    return theta, pts[inverse], jnp.all(s.converged)


_check_batch = eqx.filter_jit(lambda c, t, inc, free, margin, sub: jax.vmap(lambda c_: _check(c_, t, inc, free, margin, sub))(c))


def _as_targets(target_points):
    t = np.asarray(target_points, dtype=float)
    if t.ndim != 2 or t.shape[1] != 2 or t.shape[0] < 3:
        raise ValueError(f"path_generation: `target_points` must be an (n, 2) array with n ≥ 3; got shape {t.shape}")
    if not np.all(np.isfinite(t)):
        raise ValueError(f"path_generation: `target_points` must be finite; rows {np.where(~np.all(np.isfinite(t), 1))[0].tolist()} are not")
    centre = t.mean(0)
    scale = float(np.sqrt(np.mean(np.sum((t - centre) ** 2, 1))))
    if scale <= 0:
        raise ValueError("path_generation: the target points all coincide")
    return t, centre, scale


def path_generation(target_points, timing: str = "free", *, crank_angles=None, full_rotation: bool = False,
                    mechanism: Linkage | None = None, tracer: str | None = None, starts: int = 32, steps: int = 300,
                    seed: int = 0, optimizer="lbfgs", gtol: float = 1e-12, tol: float = 1e-6, margin: float = 0.02,
                    spread: float = 0.05, progress: bool = False) -> Synthesis:
    """Synthesise a mechanism whose coupler point passes through `target_points`.

    **Arguments:**

    - `target_points`: `(n, 2)` world points, n ≥ 3;
    - `timing`: `"free"` — the points may lie in any order along the curve (the crank
      angle at each target is a design variable) — or `"prescribed"`: the crank is at
      `phase + crank_angles[i]` at target i (the phase is a design variable);
    - `crank_angles`: prescribed timing's crank angles, relative (default: `n` equal
      steps over one anticlockwise revolution); for a linkage, its inputs (the first 0);
    - `full_rotation`: require a crank that turns fully (Grashof, crank shortest);
    - `mechanism`, `tracer`: synthesise a `Linkage` (e.g. a six-bar) instead: its joint
      coordinates move so that joint `tracer` passes through the targets at the
      prescribed inputs (prescribed timing only), from `starts` perturbed copies of it
      (`spread`, relative);
    - `starts`: the number of starts, run as one vmapped batch (four-bars: random
      Grashof crank-rockers, half on each assembly branch; reproducible by `seed`);
    - `steps`, `optimizer`, `gtol`: as in `diffmech.fit.fit`;
    - `tol`: a start succeeds when its relative path error is ≤ `tol`;
    - `margin`: four-bars keep every target at least this far (relative to the targets'
      size) from a toggle position of the crank.

    **Returns:** a `Synthesis`: the best design (a `PlacedFourBar` or a `Linkage`), its
    crank angles at the targets, its path error (from the closure core), the loss
    history, and per-start errors and the success rate.

    **Raises:** `ValueError` naming the argument that is wrong; `RuntimeError` if no
    start passes the closure core's check.
    """
    if timing not in ("free", "prescribed"):
        raise ValueError(f"path_generation: `timing` must be 'free' or 'prescribed'; got {timing!r}")
    if starts < 1 or steps < 1:
        raise ValueError(f"path_generation: `starts` and `steps` must be ≥ 1; got {starts}, {steps}")
    t, centre, scale = _as_targets(target_points)
    n = t.shape[0]
    if crank_angles is not None:
        inc = np.asarray(crank_angles, dtype=float)
        if inc.shape != (n,) or not np.all(np.isfinite(inc)):
            raise ValueError(f"path_generation: `crank_angles` must be {n} finite values (one per target); got shape {inc.shape}")
        if timing == "free":
            raise ValueError("path_generation: `crank_angles` prescribe the timing; pass timing='prescribed'")
    if mechanism is not None:
        return _linkage_generation(t, scale, mechanism, tracer, timing, crank_angles, starts, steps, seed,
                                   optimizer, gtol, tol, spread, progress)
    free = timing == "free"
    if crank_angles is None:
        inc = 2 * np.pi * np.arange(n) / n
    elif np.any(np.diff(inc) <= 0) and np.any(np.diff(inc) >= 0):
        raise ValueError("path_generation: `crank_angles` must be monotonic (the crank turns one way)")
    dtype = jnp.asarray(0.0).dtype
    targets = jnp.asarray((t - centre) / scale, dtype)
    increments = jnp.asarray(inc - inc[0], dtype)
    c0 = _random_starts(starts, np.random.default_rng(seed), dtype)
    c0 = _seed_batch(c0, targets, increments, free)
    trainable = (lambda m: (m.lengths, m.point, m.origin, m.angle)) if free else \
        (lambda m: (m.lengths, m.point, m.origin, m.angle, m.phase))
    res = _fit.fit(_loss, c0, targets, increments, free, full_rotation, margin, trainable=trainable,
                   positive=lambda m: m.lengths, optimizer=optimizer, steps=steps, gtol=gtol, batch=True,
                   progress=progress)
    cands = eqx.combine(res.params, c0)  # fitted fields from the fit, frozen ones (sigma) from the starts
    thetas, pts, ok = _check_batch(cands, targets, increments, free, margin, 8)
    if full_rotation:
        ok = ok & fbk.crank_limits(FourBar(lengths=cands.lengths)).full_rotation
    dist = jnp.mean(jnp.sqrt(jnp.sum((pts - targets) ** 2, -1)), axis=-1)
    errors = jnp.where(ok & jnp.isfinite(dist), dist, jnp.inf)
    if not bool(jnp.any(jnp.isfinite(errors))):
        raise RuntimeError(f"path_generation: none of the {starts} starts gives a design that assembles at every target "
                           "on one branch (closure core); try more starts or steps")
    b = int(jnp.argmin(errors))
    best = jax.tree.map(lambda a: a[b], cands)
    l = np.asarray(best.lengths)
    s_len = np.sign(l[3] - l[0]) or 1.0
    design = PlacedFourBar(lengths=jnp.asarray(l * scale), point=best.point * scale,
                           origin=jnp.asarray(centre, dtype) + best.origin * scale, angle=jnp.arctan2(jnp.sin(best.angle), jnp.cos(best.angle)),
                           branch=int(float(best.sigma) * s_len))
    theta = thetas[b]
    return Synthesis(design=design, inputs=theta, points=jnp.asarray(centre, dtype) + pts[b] * scale,
                     error=float(errors[b]) * scale, relative_error=float(errors[b]), history=jax.tree.map(lambda a: a[b], res.history),
                     errors=errors * scale, valid=ok, success_rate=float(jnp.mean(errors <= tol)), fit=res)


# --------------------------------------------------------------------------- linkages


def _linkage_loss(lk, targets, inputs, tracer, scale):
    m = lks.simulate_functional(lk, inputs, branch=True, condition=False)
    return _fit.masked_mean(m.coords[:, tracer, :2] - targets, m.converged) / scale**2


def _linkage_generation(t, scale, lk, tracer, timing, inputs, starts, steps, seed, optimizer, gtol, tol, spread, progress):
    if not isinstance(lk, Linkage):
        raise ValueError(f"path_generation: `mechanism` must be a diffmech Linkage; got {type(lk).__name__}")
    if lk.geometry != "planar":
        raise ValueError(f"path_generation: `mechanism` must be planar; {lk.name!r} is {lk.geometry}")
    if timing != "prescribed" or inputs is None:
        raise ValueError("path_generation: a linkage is synthesised with prescribed timing: pass timing='prescribed' "
                         "and `crank_angles` (its inputs at the targets, the first 0)")
    if tracer not in lk.names:
        raise ValueError(f"path_generation: `tracer` must name a joint of {lk.name!r} ({', '.join(lk.names)}); got {tracer!r}")
    k = lk.names.index(tracer)
    u = jnp.asarray(inputs, lk.coords.dtype)
    targets = jnp.asarray(t, lk.coords.dtype)
    spread_abs = spread * float(jnp.max(jnp.abs(lk.coords)))
    rng = np.random.default_rng(seed)
    z = rng.normal(0.0, 1.0, (starts,) + lk.coords.shape)
    z[0] = 0.0
    coords = lk.coords[None] + spread_abs * jnp.asarray(z, lk.coords.dtype)
    batch = eqx.tree_at(lambda m: m.coords, lk, coords)
    res = _fit.fit(_linkage_loss, batch, targets, u, k, scale, trainable=lambda m: m.coords, optimizer=optimizer,
                   steps=steps, gtol=gtol, batch=True, progress=progress)
    motion = _simulate_batch(eqx.tree_at(lambda m: m.coords, lk, res.params.coords), u)
    pts = motion.coords[:, :, k, :2]
    ok = jnp.all(motion.converged, axis=-1)
    dist = jnp.mean(jnp.sqrt(jnp.sum((pts - targets) ** 2, -1)), axis=-1)
    errors = jnp.where(ok & jnp.isfinite(dist), dist, jnp.inf)
    if not bool(jnp.any(jnp.isfinite(errors))):
        raise RuntimeError(f"path_generation: none of the {starts} starts of {lk.name!r} assembles at every input")
    b = int(jnp.argmin(errors))
    design = eqx.tree_at(lambda m: m.coords, lk, res.params.coords[b])
    return Synthesis(design=design, inputs=u, points=pts[b], error=float(errors[b]), relative_error=float(errors[b]) / scale,
                     history=jax.tree.map(lambda a: a[b], res.history), errors=errors, valid=ok,
                     success_rate=float(jnp.mean(errors / scale <= tol)), fit=res)


_simulate_batch = eqx.filter_jit(lambda lk, u: jax.vmap(
    lambda c: lks.simulate_functional(eqx.tree_at(lambda m: m.coords, lk, c), u, branch=True, condition=False))(lk.coords))


def save_design(result: Synthesis, path) -> None:
    """Write a synthesised design as a linkage description (JSON, loadable by
    `diffmech.linkage.load`), assembled at its first target."""
    d = result.design
    spec = d.to_linkage_dict(float(result.inputs[0])) if isinstance(d, PlacedFourBar) else d.to_dict()
    with open(path, "w") as f:
        json.dump(spec, f, indent=1)

