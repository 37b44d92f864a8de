"""Path synthesis of any planar linkage with one input (a six-bar, a walking leg): the
tracer joint through target points with free, cyclic or prescribed timing, by the
four-bar's search (a screen of random designs of the topology, each laid onto the
targets by its curve's shape, then Levenberg–Marquardt with geodesic acceleration in
the full space of joint coordinates and input angles), the closure core's check of
every result.

The search works in normalised units (the targets' centroid at the origin, their RMS
distance from it 1) on a template linkage whose coordinates it replaces. A design's
tracer at input `u` comes from the dyads' closed form (`linkage._structure.closed_form`),
each dyad on the side it has at the design's initial configuration (input 0): the
branch the closure core continues from there. `_synthesis` builds the `Synthesis`
from what `search` returns (this module does not import it)."""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from . import _cache, _closure, _fit
from ._geometry import similarity_fit, similarity_match
from ._xla import host_rows, in_chunks, size_class, with_host_rows
from .linkage import _simulate as lks
from .linkage._model import Linkage, joint_coords, prepare, prepared_residual
from .linkage._structure import closed_form, group_search, revolute_dyads

_TWO_PI = 2 * np.pi
_SAMPLES = 64  # the screen's curve samples over one turn of the input
_PATH = 36  # a group's search: samples of the turn its solves start from
_ON = 3  # a group's search: Newton solves from a sample to an input
_GRID = 32  # samples of the motion where the constraints are imposed
_SIZES = (4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
_PENALTY = 10.0
_RAISE = 100.0
_SHORTEST = 0.02  # a dyad's link no shorter than this (normalised units)
_FARTHEST = 50.0  # no joint farther than this from the targets' centroid


class Problem(eqx.Module):
    """A normalised path problem on a template linkage: targets padded to a size class
    (`weight` 0 on the padding), prescribed inputs (zeros otherwise), the penalty's
    weight; the tracer's index, the timing and the constraints (static)."""

    lk: Linkage
    targets: jax.Array
    weight: jax.Array
    inputs: jax.Array
    penalty: jax.Array
    lo: jax.Array  # (J, 2) each point joint's box (normalised; ±inf where unbounded)
    hi: jax.Array
    tracer: int = eqx.field(static=True)
    timing: str = eqx.field(static=True)
    full_rotation: bool = eqx.field(static=True)
    transmission: tuple | None = eqx.field(static=True)
    margin: float = eqx.field(static=True)
    bounded: bool = eqx.field(static=True)


class Design(eqx.Module):
    """A candidate: the linkage's coordinates (normalised), its timing variables (free:
    the inputs at the targets; cyclic: the first input, then the logs of the turns
    between consecutive targets; prescribed: unused) and its turning sense (cyclic)."""

    coords: jax.Array
    timing: jax.Array
    sense: jax.Array


def supported(lk: Linkage) -> str | None:
    """Why the search cannot take `lk` (None where it can)."""
    if lk.geometry != "planar":
        return f"{lk.name!r} is {lk.geometry}; the search takes planar linkages"
    if lk.n_inputs != 1 or lk.input_kind != "revolute":
        return f"{lk.name!r} must have one revolute input (it has {lk.n_inputs}, {lk.input_kind})"
    if closed_form(lk) is None and group_search(lk) is None:
        return (
            f"{lk.name!r} does not decompose into dyads and groups the structure's search solves: fit it with "
            "prescribed timing and `quick=True`"
        )
    return None


def _with(lk: Linkage, coords) -> Linkage:
    return eqx.tree_at(lambda m: m.coords, lk, coords)


def free_mask(lk: Linkage) -> np.ndarray:
    """Which entries of `coords` are design variables: a point's x and y, a line's
    three coefficients."""
    mask = np.zeros(lk.coords.shape, bool)
    for j, t in enumerate(lk.types):
        mask[j, : (3 if t == "P" else 2)] = True
    return mask


def curve(coords, prob: Problem, u):
    """The tracer at the inputs `u` `(m,)`: its points `(m, 2)`, whether every dyad
    assembles `(m,)`, and each RRR dyad's cosine of its transmission angle from its
    links' lengths and its outer joints' distance `(m, d)` (beyond ±1 where it cannot
    assemble: continuous through its limit)."""
    lk = _with(prob.lk, coords)
    prep = prepare(lk)
    solution = closed_form(lk)
    dyads = revolute_dyads(lk)
    C0 = prep.C0[:, :2]

    def measured(x, ui):
        X = joint_coords(x, ui, prep)[:, :2]
        cos = []
        for a, c, b in dyads:
            r1, r2 = jnp.sum((C0[c] - C0[a]) ** 2), jnp.sum((C0[c] - C0[b]) ** 2)
            d2 = jnp.sum((X[a] - X[b]) ** 2)
            cos.append((r1 + r2 - d2) / (2 * jnp.sqrt(r1 * r2)))
        return X[prob.tracer], jnp.stack(cos) if cos else jnp.zeros((0,), x.dtype)

    if solution is not None:
        x, ok = jax.vmap(lambda ui: solution(ui, prep))(u)
    else:
        x, ok = _searched(lk, prep, u, _turning(prob))
    P, cos = jax.vmap(measured)(x, u)
    return P, ok, cos


def _searched(lk: Linkage, prep, u, turning: bool):
    """A linkage with a larger group at the inputs `u`: the closure core's continuation
    sweep along a path of inputs from 0 (`_PATH` samples over the turn; without a full
    turn, a turn each way, each followed until a limit), then each input continued from
    the sample before it on that path (the one between it and 0) in `_ON` Newton solves
    (implicit derivatives at the last; the sweep carries none). A solve from the nearest
    sample instead may start beyond a limit the motion turns back at, where Newton's
    iterates reach the other assembly mode."""
    still = _with(lk, jax.lax.stop_gradient(lk.coords))
    m = _PATH
    h = _TWO_PI / m

    def along(path):
        motion = lks.sweep_functional(still, path, branch=True, condition=False)
        return jax.vmap(still.state)(motion.coords), motion.converged

    if turning:
        xs, reached = along(jnp.linspace(0.0, _TWO_PI, m + 1, dtype=u.dtype))
        at = jnp.mod(u, _TWO_PI)
        k = jnp.clip(jnp.floor(at / h).astype(int), 0, m)
        start = k.astype(u.dtype) * h
    else:
        turn = jnp.linspace(0.0, _TWO_PI, m + 1, dtype=u.dtype)
        (xu, ru), (xd, rd) = along(turn), along(-turn)
        xs, reached = jnp.concatenate([xd[::-1], xu[1:]]), jnp.concatenate([rd[::-1], ru[1:]])
        steps = jnp.clip(jnp.trunc(u / h), -m, m)
        k = (steps + m).astype(int)
        start = steps * h
        at = u

    def one(x0, s, ui):
        def stage(x, t):
            sol = _closure.root(prepared_residual, x, s + t * (ui - s), prep, max_steps=12, throw=False)
            return jax.lax.stop_gradient(sol.value), sol.converged

        x, conv = jax.lax.scan(stage, jax.lax.stop_gradient(x0), jnp.arange(1, _ON, dtype=u.dtype) / _ON)
        sol = _closure.root(prepared_residual, x, ui, prep, max_steps=12, throw=False)
        return sol.value, sol.converged & jnp.all(conv)

    x, conv = jax.vmap(one)(xs[k], start, at)
    return x, conv & reached[k]


def _dyad_lengths(coords, prob: Problem):
    C0 = coords[:, :2]
    pairs = [(c, o) for a, c, b in revolute_dyads(prob.lk) for o in (a, b)]
    return jnp.asarray([jnp.sqrt(jnp.sum((C0[c] - C0[o]) ** 2)) for c, o in pairs])


def inputs_of(d: Design, prob: Problem):
    """The inputs at the targets `(S,)` from a design's timing variables."""
    if prob.timing == "prescribed":
        return prob.inputs
    if prob.timing == "free":
        return d.timing
    real = prob.weight > 0
    gaps = jnp.where(real[1:], jnp.exp(d.timing[1:]), 0.0)
    return d.timing[0] + d.sense * jnp.concatenate([jnp.zeros((1,), gaps.dtype), jnp.cumsum(gaps)])


def _turning(prob: Problem) -> bool:
    return prob.full_rotation or prob.timing == "cyclic"


def _motion(u, prob: Problem):
    """Where the constraints are imposed: the whole turn (a fully turning input, or
    cyclic timing), else the motion through the targets (from the least input to the
    greatest)."""
    frac = jnp.linspace(0.0, 1.0, _GRID + 1, dtype=u.dtype)
    if _turning(prob):
        return u[0] + _TWO_PI * frac[:-1]
    real = prob.weight > 0
    lo, hi = jnp.min(jnp.where(real, u, jnp.inf)), jnp.max(jnp.where(real, u, -jnp.inf))
    return lo + (hi - lo) * frac


def residuals(d: Design, prob: Problem):
    """The loss as a vector whose squares sum to it, and whether the design assembles
    at every target and over the motion: the targets' error components (rows weighted
    by `√(weight/n)`), then the constraints' hinges (times `√penalty`): every dyad's
    transmission angle at least `margin` (as its sine) from a toggle, within the
    `transmission` window, its links no shorter than `_SHORTEST`, the joints within
    `_FARTHEST`; cyclic timing's turns within one revolution."""
    u = inputs_of(d, prob)
    along = _motion(u, prob)
    P, ok, cos = curve(d.coords, prob, jnp.concatenate([u, along]))  # (one search for a group)
    n_u = u.shape[0]
    P, ok, cos, ok_s, cos_s = P[:n_u], ok[:n_u], cos[:n_u], ok[n_u:], cos[n_u:]
    n = jnp.sum(prob.weight)
    w = jnp.sqrt(prob.weight / n)
    toggle = float(np.sqrt(1.0 - min(prob.margin, 0.999) ** 2))
    each = 1.0 / np.sqrt(_GRID + 1)
    parts = [(w[:, None] * (P - prob.targets)).ravel()]
    hinges = [
        (w[:, None] * jax.nn.relu(jnp.abs(cos) - toggle)).ravel(),
        each * jax.nn.relu(jnp.abs(cos_s) - toggle).ravel(),
        jax.nn.relu(_SHORTEST - _dyad_lengths(d.coords, prob)),
        jax.nn.relu(jnp.abs(d.coords[:, :2]) - _FARTHEST).ravel(),
    ]
    if prob.bounded:  # (a line's rows are unbounded: ±inf)
        hinges.append(
            jnp.concatenate([jax.nn.relu(prob.lo - d.coords[:, :2]), jax.nn.relu(d.coords[:, :2] - prob.hi)]).ravel()
        )
    if prob.transmission is not None:
        lo, hi = prob.transmission
        c_lo, c_hi = float(np.cos(lo + 0.01)), float(np.cos(hi - 0.01))
        hinges.append(each * jnp.concatenate([jax.nn.relu(cos_s - c_lo), jax.nn.relu(c_hi - cos_s)]).ravel())
    if prob.timing == "cyclic":
        gaps = jnp.where(prob.weight[1:] > 0, jnp.exp(d.timing[1:]), 0.0)
        hinges.append(jax.nn.relu(jnp.sum(gaps) - _TWO_PI)[None])
    parts += [jnp.sqrt(prob.penalty) * h for h in hinges]
    assembled = jnp.all(ok | (prob.weight == 0)) & jnp.all(ok_s)
    return jnp.concatenate(parts), assembled


def loss(d: Design, prob: Problem):
    r, assembled = residuals(d, prob)
    return jnp.where(assembled, jnp.sum(r**2), jnp.inf)


# --------------------------------------------------------------------------- the screen


def _similar(coords, a, b, lk: Linkage):
    """The coordinates after the similarity `w ↦ a w + b` (complex): a point's, and a
    line's `n·p + c = 0` (`n` turned with `a`, `c` scaled and moved)."""
    z = jax.lax.complex(coords[:, 0], coords[:, 1])
    moved = a * z + b
    points = jnp.stack([moved.real, moved.imag, coords[:, 2]], axis=1)
    size = jnp.abs(a)
    turn = a / jax.lax.complex(size, jnp.zeros_like(size))
    n = turn * z
    lines = jnp.stack([n.real, n.imag, size * coords[:, 2] - (n.real * b.real + n.imag * b.imag)], axis=1)
    is_line = jnp.asarray([t == "P" for t in lk.types])[:, None]
    return jnp.where(is_line, lines, points)


def _reachable(ok, zero: int):
    """The samples connected to input 0 (index `zero`) through assembled ones."""
    up = jnp.cumprod(ok[zero:]).astype(bool)
    down = jnp.cumprod(ok[: zero + 1][::-1]).astype(bool)[::-1]
    return jnp.concatenate([down[:-1], up])


def _placed(coords, prob: Problem):
    """A screened design laid onto the targets and its timing's start: free or cyclic
    timing by the shape of its curve (`similarity_match`: the samples the input reaches
    from 0, all of them if it must turn fully), prescribed timing by the similarity that
    fits its points at the given inputs (one least-squares step); free timing's inputs
    start at the nearest samples, cyclic timing's turns from them, taken in the given
    order and the direction that follows it (equal turns if neither does)."""
    dtype = prob.targets.dtype
    cplx = jax.lax.complex
    T = cplx(prob.targets[:, 0], prob.targets[:, 1])
    real = prob.weight > 0
    grid = jnp.linspace(-np.pi, np.pi, _SAMPLES, endpoint=False, dtype=dtype)
    P, ok, _ = curve(coords, prob, grid)
    z = cplx(P[:, 0], P[:, 1])
    ok = jnp.all(ok) & ok if _turning(prob) else _reachable(ok, _SAMPLES // 2)
    if prob.timing == "prescribed":
        Pp, okp, _ = curve(coords, prob, prob.inputs)
        zp = cplx(Pp[:, 0], Pp[:, 1])
        a, b = similarity_fit(zp, T, prob.weight)
        E = jnp.sum(prob.weight * jnp.abs(a * zp + b - T) ** 2)
        E = jnp.where(jnp.all(okp | ~real), E, jnp.inf)
        timing, sense = jnp.zeros_like(prob.weight), jnp.ones((), dtype)
    else:
        a, b, E = similarity_match(z, ok, T, prob.weight)
        d = jnp.abs(T[:, None] - (a * z + b)[None, :]) ** 2
        k = jnp.argmin(jnp.where(ok[None, :], d, jnp.inf), axis=1)
        theta = grid[k]
        timing, sense = _start_timing(theta, real) if prob.timing == "cyclic" else (theta, jnp.ones((), dtype))
    placed = _similar(coords, a, b, prob.lk)
    good = jnp.isfinite(E) & (jnp.abs(a) > 0)
    return Design(jnp.where(good, placed, coords), timing, sense), good


def _start_timing(theta, real):
    """Cyclic timing's variables from the sample angles nearest to the targets: the
    first, then the logs of the turns between consecutive targets in the direction in
    which they add up to one revolution (equal turns where neither does)."""
    count = jnp.sum(real)
    n = count.astype(theta.dtype)
    i = jnp.arange(theta.shape[0])
    after = jnp.where(i == count - 1, theta[0], jnp.roll(theta, -1))  # the last closes the turn

    def turns(s):
        g = jnp.mod(s * (after - theta), _TWO_PI)
        g = jnp.where(real, jnp.where(g <= 0, _TWO_PI, g), 0.0)
        return g, jnp.abs(jnp.sum(g) - _TWO_PI) < 1e-9

    g_up, up = turns(1.0)
    g_down, down = turns(-1.0)
    g = jnp.where(up, g_up, jnp.where(down, g_down, _TWO_PI / n))
    sense = jnp.where(down & ~up, -1.0, 1.0).astype(theta.dtype)
    logs = jnp.log(jnp.maximum(g, 1e-3))
    return jnp.concatenate([theta[:1], logs[:-1]]), sense


@_cache.kept()
def _screen_batch(coords, prob):
    d, good = jax.vmap(lambda c: _placed(c, prob))(coords)
    f = jax.vmap(lambda x: loss(x, prob))(d)
    return d, jnp.where(good & jnp.isfinite(f), f, jnp.inf)


def random_designs(lk: Linkage, count: int, rng, dtype) -> np.ndarray:
    """`count` designs of `lk`'s topology (normalised: the reference's joints about
    their centroid at RMS size 1): the reference first, then every point uniform in the
    square of half-side 1.5 (a scrambled Sobol sequence), every line through such a
    point at a uniform angle."""
    from scipy.stats import qmc

    ref = np.asarray(lk.coords, float)
    pts = np.array([t != "P" for t in lk.types])
    centre = ref[pts, :2].mean(0)
    size = np.sqrt(np.mean(np.sum((ref[pts, :2] - centre) ** 2, -1)))
    J = ref.shape[0]
    out = np.zeros((count, J, 3))
    first = ref.copy()
    first[pts, :2] = (ref[pts, :2] - centre) / size
    first[~pts, 2] = (ref[~pts, 2] + ref[~pts, :2] @ centre) / size
    out[0] = first
    if count > 1:
        m = int(np.ceil(np.log2(count - 1)))  # (a power of two keeps the sequence's balance)
        u = qmc.Sobol(3 * J, scramble=True, rng=rng).random_base2(m)[: count - 1].reshape(count - 1, J, 3)
        xy = 3.0 * (u[..., :2] - 0.5)
        phi = _TWO_PI * u[..., 2]
        n = np.stack([np.cos(phi), np.sin(phi)], -1)
        out[1:, :, :2] = np.where(pts[None, :, None], xy, n)
        out[1:, :, 2] = np.where(pts[None], 0.0, -np.sum(n * xy, -1))
    return out.astype(dtype)


# --------------------------------------------------------------------------- the polish


def _polish(d: Design, prob: Problem, steps: int):
    free = np.flatnonzero(free_mask(prob.lk))  # (concrete: the rows and columns gathered, not masked)
    timed = prob.timing != "prescribed"
    flat = d.coords.ravel()
    v0 = jnp.concatenate([flat[free], d.timing] if timed else [flat[free]])
    k = free.size

    def design(v):
        coords = flat.at[free].set(v[:k]).reshape(d.coords.shape)
        return Design(coords, v[k:] if timed else d.timing, d.sense)

    def r(v):
        res, assembled = residuals(design(v), prob)
        return res + jnp.where(assembled, 0.0, jnp.inf)

    v, losses, grads = _fit.levenberg_marquardt(r, v0, steps, geodesic=True)
    return design(v), losses, grads


@_cache.kept()
def _polish_batch(d, prob, steps):
    return jax.vmap(lambda x: _polish(x, prob, steps))(d)


# --------------------------------------------------------------------------- the check


def _checked(d: Design, prob: Problem, substeps: int = 4):
    """The closure core's verdict on one design (world-free, normalised units): a
    continuation sweep from its initial configuration through the inputs at the targets
    in the order of motion (the whole turn too where it must turn fully), `substeps`
    between samples. Returns the tracer at the targets (target order), whether every
    input converged on the design's branch, and every RRR dyad's transmission angle's
    range over the motion (rad; NaN without a dyad)."""
    u = inputs_of(d, prob)
    real = prob.weight > 0
    if _turning(prob):
        u = jnp.mod(u, _TWO_PI)
        along = jnp.linspace(0.0, _TWO_PI, 4 * _GRID + 1, dtype=u.dtype)
    else:
        along = _motion(u, prob)
        along = jnp.linspace(along[0], along[-1], 4 * _GRID + 1, dtype=u.dtype)
    path = jnp.concatenate([jnp.where(real, u, u[0]), along])
    order = jnp.argsort(path)
    m = lks.sweep_functional(_with(prob.lk, d.coords), path[order], branch=True, condition=False)
    back = jnp.argsort(order)
    X = m.coords[back][..., :2]
    ok = jnp.all(m.converged)
    n = u.shape[0]
    mus = []
    for a, c, b in revolute_dyads(prob.lk):
        e1, e2 = X[n:, a] - X[n:, c], X[n:, b] - X[n:, c]
        cos = jnp.sum(e1 * e2, -1) / jnp.sqrt(jnp.sum(e1**2, -1) * jnp.sum(e2**2, -1))
        mus.append(jnp.arccos(jnp.clip(cos, -1, 1)))
    mu = jnp.stack(mus) if mus else jnp.full((1, 1), jnp.nan, u.dtype)
    return X[:n, prob.tracer], u, ok, jnp.min(mu), jnp.max(mu)


@_cache.kept()
def _checked_batch(d, prob):
    return jax.vmap(lambda x: _checked(x, prob))(d)


# --------------------------------------------------------------------------- the search


class Found(NamedTuple):
    """What `search` returns (normalised units; `_synthesis` makes it a `Synthesis`):
    per start the designs, their inputs at the targets, tracer points (closure core),
    whether the closure core assembles every one on the design's branch, the
    transmission angles' range, and the polish's losses and gradient norms per step."""

    designs: Design
    inputs: np.ndarray
    points: np.ndarray
    ok: np.ndarray
    mu: np.ndarray
    losses: np.ndarray
    grads: np.ndarray


def problem(lk, tracer, targets, timing, inputs, full_rotation, transmission, margin, box=None) -> Problem:
    """The normalised problem (targets already normalised, padded to a size class;
    `box`: the joints' bounds `(lo, hi)`, each `(J, 2)`, normalised, ±inf where
    unbounded, or None)."""
    n = targets.shape[0]
    J = lk.coords.shape[0]
    lo, hi = (np.full((J, 2), -np.inf), np.full((J, 2), np.inf)) if box is None else box
    size = size_class(n, _SIZES)
    dtype = np.dtype(lk.coords.dtype)
    pad = lambda a: np.concatenate([a, np.repeat(a[-1:], size - n, 0)]).astype(dtype)  # noqa: E731
    return Problem(
        lk=lk,
        targets=jax.device_put(pad(np.asarray(targets))),
        weight=jax.device_put((np.arange(size) < n).astype(dtype)),
        inputs=jax.device_put(pad(np.zeros(n) if inputs is None else np.asarray(inputs, float))),
        penalty=jax.device_put(np.asarray(_PENALTY, dtype)),
        lo=jax.device_put(np.asarray(lo, dtype)),
        hi=jax.device_put(np.asarray(hi, dtype)),
        tracer=tracer,
        timing=timing,
        full_rotation=bool(full_rotation),
        transmission=transmission,
        margin=float(margin),
        bounded=box is not None,
    )


def search(prob: Problem, *, starts: int, steps: int, screen: int, seed: int, start_coords=None) -> Found:
    """The search: `screen` random designs of the topology (or `start_coords`, the
    starts themselves), each laid onto the targets, the `starts` best by their loss
    polished by `steps` Levenberg–Marquardt steps, the best eighth by twice as many
    (then as many again at each of two raised penalty weights where constraints beyond
    assembly apply); the closure core's check of every start."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(prob.lk.coords.dtype)
    pool = random_designs(prob.lk, max(screen, starts), rng, dtype) if start_coords is None else start_coords
    d, f = _screen_batch(jax.device_put(pool), prob)
    f = np.asarray(f)
    top = np.argsort(np.where(np.isfinite(f), f, np.inf), kind="stable")[:starts]
    d = host_rows(d, top)
    chunk = max(1, starts // 8)
    d, losses, grads = in_chunks(lambda x: _polish_batch(x, prob, steps), d, chunk)
    losses, grads = np.asarray(losses), np.asarray(grads)
    best = np.argsort(np.where(np.isfinite(losses[:, -1]), losses[:, -1], np.inf), kind="stable")[:chunk]
    # the finish: the best eighth twice more, then (constraints beyond assembly) twice at
    # each raised penalty weight, all by the polish's program (`chunk` starts at a time)
    sub = host_rows(d, best)
    base = np.asarray(prob.penalty)
    weights = [base] * 2
    if prob.transmission is not None or prob.full_rotation or prob.bounded:
        weights += [base * _RAISE] * 2 + [base * _RAISE**2] * 2
    for w in weights:
        sub, more, _ = _polish_batch(sub, eqx.tree_at(lambda p: p.penalty, prob, jax.device_put(w)), steps)
    d = with_host_rows(d, best, sub)
    if prob.bounded:  # the penalty's optimum just outside a box: clamped onto it (a box's projection)
        c = np.array(d.coords)
        c[..., :2] = np.clip(c[..., :2], np.asarray(prob.lo), np.asarray(prob.hi))
        d = eqx.tree_at(lambda x: x.coords, d, jax.device_put(c))
    final = np.array(losses)
    final[best, -1] = np.asarray(more)[:, -1]
    points, u, ok, lo, hi = (np.asarray(v) for v in _checked_batch(d, prob))
    return Found(d, u, points, ok, np.stack([lo, hi], -1), final, grads)
