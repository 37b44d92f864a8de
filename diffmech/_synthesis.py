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
`linkage.sweep_functional` (the core's continuation and implicit gradients), with
unassemblable samples masked out of the loss before the gradient.
"""

from __future__ import annotations

import abc
import dataclasses
import json
import os
import warnings
from collections.abc import Sequence
from typing import Any, ClassVar, Literal, NamedTuple, TypedDict, Unpack

import equinox as eqx
import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from . import _cache, _fit
from ._geometry import attitude, rotation, similarity_match
from ._progress import TextProgress
from ._validate import ArgumentTypeError, as_floats, check_array, check_count, check_scalar, user_stacklevel
from ._xla import eager_program, filter_jit, host_rows, in_chunks, pad_rows, row, size_class, with_host_rows
from .fourbar import _kinematics as fbk
from .fourbar._model import FourBar
from .linkage import _simulate as lks
from .linkage._model import Linkage

__all__ = [
    "AbstractTask",
    "Constraints",
    "Function",
    "InfeasibleError",
    "Motion",
    "MultiStart",
    "Path",
    "PlacedFourBar",
    "Synthesis",
    "function_generation",
    "motion_generation",
    "path_generation",
    "synthesize",
]


def _to_world(design, local):
    # a PlacedFourBar or a search candidate: local four-bar frame → world frame
    return design.origin + local @ rotation(design.angle).T


@eager_program  # eagerly one program (op by op: a dozen small ones)
def _world_joints(design, q):
    loc = fbk.joint_positions(design.fourbar, q)
    loc["P"] = fbk.coupler_point(design.fourbar, q, design.point)
    return {k: design.to_world(v) for k, v in loc.items()}


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

    lengths: Float[Array, 4]
    point: Float[Array, 2]
    origin: Float[Array, 2]
    angle: Float[Array, ""]
    branch: int = eqx.field(static=True, default=1)

    def __check_init__(self):
        who = "synthesis.PlacedFourBar"
        check_array(who, "lengths", self.lengths, (4,), positive=True)
        check_array(who, "point", self.point, (2,))
        check_array(who, "origin", self.origin, (2,))
        check_array(who, "angle", self.angle, ())
        if self.branch not in (1, -1):
            raise ValueError(f"{who}: `branch` must be +1 or -1; got {self.branch!r}")

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

    def joints(self, theta_A) -> dict[str, Float[Array, 2]]:
        """World positions of A, B, C, D and the coupler point P at one crank angle."""
        return _world_joints(self, fbk.assemble(self.fourbar, theta_A))

    def to_linkage_dict(self, theta_A=0.0, name: str = "fourbar_synthesis") -> dict:
        """The design as a linkage description (`diffmech.linkage.Linkage.from_dict`, the
        JSON loader's format), assembled at crank angle `theta_A` (its input 0): joints
        A, B, C, D (revolute) and the tracer P; the input turns the crank about A."""
        j = {k: np.asarray(v, dtype=float).tolist() for k, v in self.joints(theta_A).items()}
        return {
            "name": name,
            "geometry": "planar",
            "description": (
                f"Four-bar from diffmech.synthesis.path_generation: lengths {np.asarray(self.lengths).tolist()}, "
                f"coupler point {np.asarray(self.point).tolist()} (coupler frame), branch {self.branch:+d}, "
                f"ground line at {float(self.angle):.12g} rad, input 0 = crank angle {float(theta_A):.12g} rad"
            ),
            "joints": {
                "A": {"type": "R", "coords": j["A"]},
                "B": {"type": "R", "coords": j["B"]},
                "C": {"type": "R", "coords": j["C"]},
                "D": {"type": "R", "coords": j["D"]},
                "P": {"type": "tracer", "coords": j["P"]},
            },
            "links": {"crank": ["A", "B"], "coupler": ["B", "C", "P"], "rocker": ["C", "D"], "ground": ["A", "D"]},
            "ground": "ground",
            "input": {"type": "revolute", "link": "crank", "joint": "A"},
        }


class Synthesis(eqx.Module):
    """The result of `path_generation`, `motion_generation` or `function_generation`.

    - `design`: the best design found (a `PlacedFourBar`, or a `Linkage`) that satisfies
      every constraint, checked by the closure core;
    - `inputs`: its crank angles at the targets (four-bar: absolute, from the ground line
      A→D, anticlockwise; a linkage: its inputs);
    - `points`: where the design puts the targets, from the closure core: the coupler
      (tracer) positions `(n, 2)`; for function generation the pairs
      `(crank angle, rocker angle)` `(n, 2)`, both from the ground line;
    - `objective`: the literature's measure, from the closure core: Σ‖Cᵢ − targetᵢ‖² (path
      generation, the targets' units squared); motion generation adds `(ℓ Δφᵢ)²` for the
      coupler-angle errors Δφᵢ, with ℓ the targets' RMS distance from their centroid;
      function generation Σ Δψᵢ² (rad²) of the rocker-angle errors;
    - `error`: the mean distance from the coupler points to the targets (world units;
      function generation: the mean |Δψ|, rad); `relative_error`: divided by the targets'
      RMS distance from their centroid (function generation: equal to `error`);
    - `constraints`: what the closure core measured on the returned design: the Grashof
      excess `s + ℓ − p − q` (≤ 0 for a Grashof linkage), the transmission angle's range
      over the motion through the targets (rad), whether the crank turns fully, the
      largest coupler-angle error (motion generation), ...;
    - `history`: the loss history of the best start (`diffmech.fit.History`);
    - `errors`, `valid`: per start, the error (inf where the start failed the closure
      core's check or a constraint) and whether it passed (assembles at every target on
      one branch, reached in the order of motion without a motion limit, every
      constraint met);
    - `success_rate`: the fraction of starts whose relative error is ≤ `tol`;
    - `fit`: the `diffmech.fit.FitResult` of all starts;
    - `alternatives`: the next best feasible designs of the search (a four-bar's; up to
      `ALTERNATIVES`), each distinct from the best and from one another (their lengths
      differ by more than 0.1 % of the largest), in order of their error; `()` when
      there are none (or for a linkage).
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
    objective: float = float("nan")
    constraints: dict = eqx.field(default_factory=dict)
    alternatives: tuple = ()


# the most alternatives a `Synthesis` keeps
ALTERNATIVES = 3
# how far (relative to the largest) the lengths of two designs kept differ
_DISTINCT = 1e-3


def _alternatives(dec, errors, b: int, fixed, world, centre, scale, task) -> tuple:
    """The next best feasible starts' designs, each distinct from the best and from
    the others kept (their lengths differ by more than `_DISTINCT` of the largest)."""
    lengths = np.asarray(dec.lengths)
    kept = [b]
    for i in np.argsort(errors, kind="stable"):
        if len(kept) > ALTERNATIVES or not np.isfinite(errors[i]):
            break
        size = np.max(np.abs(lengths[kept]), axis=1)
        if np.all(np.max(np.abs(lengths[kept] - lengths[i]), axis=1) > _DISTINCT * size):
            kept.append(int(i))
    return tuple(_placed(row(dec, i), fixed, world, centre, scale, task) for i in kept[1:])


class InfeasibleError(RuntimeError):
    """No start gave a design that assembles through the targets and meets every
    constraint. `closest` is the start that came nearest (a `PlacedFourBar`, or None if
    none assembled) and `violations` names what it violates.

    **Arguments:** `message`: what failed; `closest`, `violations` as above.
    """

    def __init__(self, message, closest=None, violations=()):
        super().__init__(message)
        self.closest = closest
        self.violations = tuple(violations)


# --------------------------------------------------------------------------- four-bar problems

_FIELDS = {"lengths": 4, "point": 2, "origin": 2, "angle": 0, "phase": 0}
_TWO_PI = 2 * np.pi


class _Candidate(eqx.Module):
    # one start of the four-bar search, in normalised target coordinates (bounded fields
    # hold their unconstrained coordinate, `_decode` maps them into their box)
    lengths: Array  # (4,) (log-parametrised by the fit where unbounded)
    point: Array  # (2,) coupler point (coupler frame)
    origin: Array  # (2,) crank pivot
    angle: Array  # () ground line A→D
    phase: Array  # () prescribed/cyclic timing: crank angle at the first target; function generation: input offset
    gamma: Array  # () motion: body angle − coupler-line angle; function generation: output offset
    gaps: Array  # (n,) cyclic timing: log-weights of the crank's turns between targets (the last closes the revolution)
    sign: Array  # () ±1, the sign of qB × qD: the assembly branch (frozen)
    sense: Array  # () ±1, the crank's direction in cyclic timing (frozen)


class _Problem(eqx.Module):
    """What the loss and the check need: the targets and the constraints (normalised)."""

    targets: Array  # path (n, 2); motion (n, 3) = (x, y, angle); function (n,) rocker angles
    angles: Array  # prescribed crank angles or function generation's inputs (n,); else zeros
    # (n,) 1 for a target, 0 for the padding to the problem's size class (`_padded`): rows
    # that repeat the last target and its angle, left out of every sum over the targets
    weight: Array
    lo: dict  # box bounds of bounded fields (normalised units), by field name
    hi: dict
    penalty: Array  # () the constraints' penalty weight in the loss (`_PENALTY`; raised by the finish)
    task: str = eqx.field(static=True)  # "path" | "motion" | "function"
    timing: str = eqx.field(static=True)  # "prescribed" | "free" | "cyclic"
    grashof: bool = eqx.field(static=True)
    full_rotation: bool = eqx.field(static=True)
    transmission: tuple | None = eqx.field(static=True)
    margin: float = eqx.field(static=True)
    window: bool = eqx.field(static=True)  # unbounded lengths: kept within 1/50 … 50 of the targets' size


def _box(z, lo, hi):
    """A bounded field from its unconstrained coordinate `z` (MINUIT's transforms): two
    finite bounds `lo + (hi − lo)(1 + sin z)/2`; one, `lo − 1 + √(z² + 1)` (or mirrored);
    none, `z`. Smooth, and every value of `z` maps inside the box, so an unconstrained
    optimiser honours the bounds exactly."""
    flo, fhi = jnp.isfinite(lo), jnp.isfinite(hi)
    lo_, hi_ = jnp.where(flo, lo, 0.0), jnp.where(fhi, hi, 0.0)
    both = lo_ + (hi_ - lo_) * (1 + jnp.sin(z)) / 2
    root = jnp.sqrt(z * z + 1)
    return jnp.where(flo & fhi, both, jnp.where(flo, lo_ - 1 + root, jnp.where(fhi, hi_ + 1 - root, z)))


def _unbox(x, lo, hi, xp=np):
    """The inverse of `_box` (host side, for the starts; `xp=jnp` inside a program, in
    its arrays' own precision)."""
    dtype = float if xp is np else None
    x, lo, hi = xp.broadcast_arrays(xp.asarray(x, dtype), xp.asarray(lo, dtype), xp.asarray(hi, dtype))
    flo, fhi = xp.isfinite(lo), xp.isfinite(hi)
    with np.errstate(invalid="ignore", divide="ignore"):
        both = xp.arcsin(xp.clip(2 * (x - lo) / xp.where(hi > lo, hi - lo, 1.0) - 1, -1, 1))
        lower = xp.sqrt(xp.maximum((x - lo + 1) ** 2 - 1, 0.0))
        upper = xp.sqrt(xp.maximum((hi - x + 1) ** 2 - 1, 0.0))
    return xp.where(flo & fhi, both, xp.where(flo, lower, xp.where(fhi, upper, x)))


def _decode(c: _Candidate, prob: _Problem) -> _Candidate:
    for name in prob.lo:
        c = eqx.tree_at(lambda m, n=name: getattr(m, n), c, _box(getattr(c, name), prob.lo[name], prob.hi[name]))
    return c


def _configuration(c, theta):
    """Closed-form assembly on the candidate's branch at crank angles `theta`:
    `(q, gap)`, q = (qA, qB, qD) as in `fourbar`, gap ≤ 0 where it assembles."""
    fb = FourBar(lengths=c.lengths)
    x, gap = jax.vmap(lambda th: fbk.closed_form(fb, th, c.sign))(theta)
    return jnp.concatenate([attitude(theta), x], axis=-1), gap


def _features(c, prob, q):
    """What the task compares with its targets, from configurations `q` (n, 6):
    the coupler point (world), the coupler line's world angle, the rocker's angle."""
    fb = FourBar(lengths=c.lengths)
    P = _to_world(c, fbk.coupler_point(fb, q, c.point))
    beta = c.angle + jnp.arctan2(q[..., 3], q[..., 2])
    psi = jnp.arctan2(q[..., 5], q[..., 4])
    return P, beta, psi


def _mismatch_residuals(c, prob, q, targets):
    """Per target: the task's error components (normalised units; an angle error Δ as
    2 sin(Δ/2), periodic, ≈ Δ), `(n, k)`; their squares sum to `_mismatch`."""
    P, beta, psi = _features(c, prob, q)
    return _TASKS[prob.task].mismatch(c, P, beta, psi, targets, _angular)


def _angular(d):
    """An angle error `d` as 2 sin(d/2): its square 2(1 − cos d) ≈ d², written so that
    small errors keep their precision."""
    return 2 * jnp.sin(d / 2)


def _mismatch(c, prob, q, targets):
    """Per target: the smooth squared error of the task (normalised units; angle errors
    as 4 sin²(Δ/2) = 2(1 − cos Δ) ≈ Δ², periodic)."""
    return jnp.sum(_mismatch_residuals(c, prob, q, targets) ** 2, axis=-1)


def _over_targets(v, prob):
    """The mean of `v` over the targets (the padding left out)."""
    return jnp.sum(prob.weight * v) / jnp.sum(prob.weight)


def _last(prob):
    """The last target's index (the padding repeats it)."""
    return jnp.sum(prob.weight > 0) - 1


def _thetas(c, prob):
    """The crank angle at each target (absolute, from the ground line); the padding's,
    the last target's."""
    if _TASKS[prob.task].inputs_given or prob.timing == "prescribed":
        return c.phase + prob.angles
    if prob.timing == "cyclic":
        steps = _TWO_PI * jax.nn.softmax(jnp.where(prob.weight > 0, c.gaps, -jnp.inf))
        theta = c.phase + c.sense * jnp.concatenate([jnp.zeros(1, steps.dtype), jnp.cumsum(steps[:-1])])
        return jnp.where(prob.weight > 0, theta, theta[_last(prob)])
    return _nearest(c, prob)


def _nearest(c, prob, newton=6):
    """Free timing by variable projection: for each target the crank angle minimising
    its mismatch plus `10 relu(gap + margin)²`, from the best of 64 samples of the
    motion by `newton` Newton steps on f′ (f″ ≤ 0 falls back to a gradient step).
    Returned under `stop_gradient`: at a minimum f′ = 0, so the design gradient of the
    loss at fixed θ* is its total gradient (the envelope theorem)."""
    c = jax.lax.stop_gradient(c)
    dtype = prob.targets.dtype
    grid = jnp.linspace(0.0, _TWO_PI, 64, endpoint=False, dtype=dtype)

    def f(th, T):
        q, gap = _configuration(c, th[None])
        return _mismatch(c, prob, q, T[None])[0] + 10.0 * jax.nn.relu(gap[0] + prob.margin) ** 2

    d2 = jax.vmap(lambda T: jax.vmap(lambda th: f(th, T))(grid))(prob.targets)
    theta = grid[jnp.argmin(d2, axis=1)]
    df = jax.grad(f)
    d2f = jax.grad(df)

    def step(th, _):
        g = jax.vmap(df)(th, prob.targets)
        h = jax.vmap(d2f)(th, prob.targets)
        dth = jnp.where(h > 0, -g / jnp.where(h > 0, h, 1.0), -g)
        return th + jnp.clip(dth, -0.2, 0.2), None

    theta, _ = jax.lax.scan(step, theta, None, length=newton)
    return jax.lax.stop_gradient(theta)


def _motion_order(theta, prob):
    """Crank angles in the order the crank meets them: as given (prescribed, cyclic and
    function generation); for free timing, anticlockwise from the end of the largest
    angular gap (the part of the circle the motion need not cross). Returns the ordered
    angles and the permutation."""
    if _TASKS[prob.task].inputs_given or prob.timing != "free":
        return theta, jnp.arange(theta.shape[0])
    w = jnp.mod(theta, _TWO_PI)
    order = jnp.argsort(w)
    ws = w[order]
    gaps = jnp.diff(jnp.concatenate([ws, ws[:1] + _TWO_PI]))
    k = (jnp.argmax(gaps) + 1) % theta.shape[0]
    order = jnp.roll(order, -k)
    ordered = w[order]
    turns = jnp.cumsum(jnp.concatenate([jnp.zeros(1, ordered.dtype), (jnp.diff(ordered) < 0).astype(ordered.dtype)]))
    return ordered + _TWO_PI * turns, order


def _transmission_angle(q):
    """The transmission angle μ ∈ [0, π] between coupler and rocker (the angle at C of
    the triangle BCD): cos μ = qB · qD."""
    return jnp.arccos(jnp.clip(jnp.sum(q[..., 2:4] * q[..., 4:6], axis=-1), -1.0, 1.0))


def _grashof_excess(lengths, xp=jnp):
    """`s + ℓ − p − q` (≤ 0: Grashof)."""
    l = xp.sort(lengths, axis=-1)
    return l[..., 0] + l[..., 3] - l[..., 1] - l[..., 2]


def _hinges(c, prob, theta, gap, samples=32):
    """The constraints' hinges `(weight, h)`, exactly zero inside the feasible set (with
    small margins): every target and the motion between them assemblable away from the
    toggle positions; unbounded lengths within 1/50 … 50 of the targets' size; Grashof;
    a fully turning crank; the transmission angle within its limits over the motion.
    The penalty is `Σ weight · Σ h²`."""
    n = jnp.sum(prob.weight)
    terms = [(prob.weight / n, jax.nn.relu(gap + prob.margin))]
    # (prescribed and cyclic timing: the motion's range moves with the design's phase and
    # gaps; free timing's angles are projections, constant for the gradient)
    ordered, _ = _motion_order(theta, prob)
    frac = jnp.linspace(0.0, 1.0, samples + 1, dtype=theta.dtype)
    along = ordered[0] + (ordered[-1] - ordered[0]) * frac
    q_s, gap_s = _configuration(c, along)
    each = 1.0 / (samples + 1)
    terms.append((each, jax.nn.relu(gap_s + prob.margin)))
    l = c.lengths
    if prob.window:
        terms.append((1.0, jnp.concatenate([jax.nn.relu(l - 50.0), jax.nn.relu(0.02 - l)])))
    # Grashof and the crank's full turn admit their boundary (a change-point linkage,
    # where some published optima lie); `_onto_boundary` settles the finish's designs on it
    if prob.grashof:
        terms.append((1.0, jax.nn.relu(_grashof_excess(l))[None]))
    if prob.full_rotation:
        c_min, c_max = fbk.crank_limit_cosines(l)
        terms.append((1.0, jax.nn.relu(jnp.stack([1.0 - c_min, c_max + 1.0]))))
    if prob.transmission is not None:
        lo, hi = prob.transmission
        mu = _transmission_angle(q_s)
        terms.append((each, jnp.concatenate([jax.nn.relu(lo + 0.01 - mu), jax.nn.relu(mu - hi + 0.01)])))
    return terms


# a design outside the Grashof or full-turn boundary by at most this (of its perimeter)
# is moved onto it: a quadratic penalty's minimiser lies just outside an active
# constraint (by about its multiplier over twice the weight), where the check rejects it
_ONTO = 1e-3


def _length_constraints(L: np.ndarray, grashof: bool, full: bool):
    """The length constraints that are linear in the lengths `(k, 4)` (crank, coupler,
    rocker, ground), each as `(value, gradient)`, met where the value is ≤ 0: Grashof's
    `s + ℓ − p − q`; the crank's full turn `|l2 − l3| − |l4 − l1|` (cos θmin ≥ 1) and
    `l1 + l4 − l2 − l3` (cos θmax ≤ −1)."""
    out = []
    if grashof:
        g = np.zeros_like(L)
        np.put_along_axis(g, np.argsort(L, axis=-1), np.array([[1.0, -1.0, -1.0, 1.0]]), axis=-1)
        out.append((np.sum(g * L, -1), g))
    if full:
        l1, l2, l3, l4 = L.T
        s23, s41 = np.sign(l2 - l3), np.sign(l4 - l1)
        out.append((np.abs(l2 - l3) - np.abs(l4 - l1), np.stack([s41, s23, -s23, -s41], -1)))
        out.append((l1 + l4 - l2 - l3, np.broadcast_to(np.array([1.0, -1.0, -1.0, 1.0]), L.shape)))
    return out


def _onto_boundary(lengths, grashof: bool, full: bool, box=None) -> np.ndarray:
    """Lengths `(k, 4)` within `_ONTO` of their perimeter outside the Grashof or full-turn
    boundary moved onto it (to 1e-12 of the perimeter inside), by alternating
    projections onto each violated constraint's plane; the others unchanged. `box`:
    `(lo, hi)`, the lengths' bounds, `lengths` given (and returned) in the box's
    coordinate (`_box`): moved as lengths, then clipped into the box."""
    if box is not None:
        on = _onto_boundary(np.asarray(_box(np.asarray(lengths, float), *box)), grashof, full)
        return _unbox(np.clip(on, *box), *box)
    L = np.array(lengths, float)
    per = L.sum(-1)
    near = np.all([v <= _ONTO * per for v, _ in _length_constraints(L, grashof, full)], axis=0)
    for _ in range(8):
        for k in range(int(grashof) + 2 * int(full)):  # each in turn, from where the last left L
            v, g = _length_constraints(L, grashof, full)[k]
            move = near & (v > 0)
            step = (v + 1e-12 * per)[:, None] * g / np.sum(g * g, -1, keepdims=True)
            L = L - np.where(move[:, None], step, 0.0)
    return L


# the least slack a root-slack coordinate starts from (of the perimeter): at exactly zero
# its derivative vanishes and the polish could not leave the boundary
_SLACK_FLOOR = 1e-9


def _slack_frames(lengths, grashof: bool, full: bool):
    """Root-slack coordinates for designs `(k, 4)` near the Grashof or full-turn boundary
    (within `_ONTO` of their perimeter, either side): `(M, K, y)` with `M`, `K`
    `(k, 4, 4)` and `y` `(k, 4)` such that the lengths are `M y + K (y ∘ y)`. A near
    constraint `g · L ≤ 0` (linearly independent of the others taken) becomes a
    coordinate `t` with `g · L = −t²`, the other coordinates span its complement; the
    rest of a design's coordinates are its lengths. Near a change point the motion at a
    target by a toggle position moves as the root of the slack (the objective's
    derivative there is infinite); in `t` it is smooth, and the boundary is met
    exactly. Returns None where no design is near."""
    L = np.array(lengths, float)
    per = L.sum(-1)
    limits = _length_constraints(L, grashof, full)
    M, K, y = np.zeros(L.shape + (4,)), np.zeros(L.shape + (4,)), L.copy()
    M[:] = np.eye(4)
    near_any = False
    for i in range(len(L)):
        rows = []
        for v, g in limits:
            trial = np.array(rows + [g[i]])
            if abs(v[i]) <= _ONTO * per[i] and np.linalg.matrix_rank(trial) == len(trial):
                rows.append(g[i])
        if not rows:
            continue
        near_any = True
        G = np.array(rows)
        r = len(rows)
        null = np.linalg.svd(G)[2][r:].T  # (4, 4 − r) orthonormal, G null = 0
        M[i] = np.c_[null, np.zeros((4, r))]
        K[i] = np.c_[np.zeros((4, 4 - r)), -np.linalg.pinv(G)]
        t = np.sqrt(np.maximum(-G @ L[i], _SLACK_FLOOR * per[i]))
        y[i] = np.r_[null.T @ L[i], t]
    return (M, K, y) if near_any else None


def _penalties(c, prob, theta, gap):
    """The constraints' penalty: `Σ weight · Σ h²` over `_hinges`."""
    return sum(jnp.sum(w * h**2) for w, h in _hinges(c, prob, theta, gap))


_PENALTY = 10.0  # the penalty's weight in the loss; the finish raises it by _RAISE, twice, where
_RAISE = 100.0  # constraints other than assembly apply (the quadratic penalty method)


def _loss(c, prob):
    c = _decode(c, prob)
    theta = _thetas(c, prob)
    q, gap = _configuration(c, theta)
    return _over_targets(_mismatch(c, prob, q, prob.targets), prob) + prob.penalty * _penalties(c, prob, theta, gap)


def _residuals(c, prob, theta=None):
    """The loss as a vector whose squares sum to it: the targets' error components
    (each row weighted by `√(weight/n)`) and the penalty's hinges (`√(penalty weight) h`).
    `theta`: the crank angles at the targets (free timing's full-space polish; None: the
    timing's own, `_thetas`)."""
    c = _decode(c, prob)
    theta = _thetas(c, prob) if theta is None else theta
    q, gap = _configuration(c, theta)
    w = jnp.sqrt(prob.weight / jnp.sum(prob.weight))
    rows = _mismatch_residuals(c, prob, q, prob.targets)
    parts = [(w[:, None] * rows).ravel()]
    parts += [(jnp.sqrt(prob.penalty * wt) * h).ravel() for wt, h in _hinges(c, prob, theta, gap)]
    return jnp.concatenate(parts)


def _check(c, prob, substeps):
    """The closure core's verdict on one (decoded) start: a continuation sweep through the
    target angles in the order of motion (with `substeps` between consecutive targets),
    on the start's branch. Returns the crank angles, the configurations at the targets
    (target order), whether every input converged, and the transmission angle's range
    over the sweep."""
    theta = _thetas(c, prob)
    ordered, order = _motion_order(theta, prob)
    frac = jnp.arange(substeps, dtype=theta.dtype) / substeps
    grid = (ordered[:-1, None] + jnp.diff(ordered)[:, None] * frac[None, :]).reshape(-1)
    grid = jnp.concatenate([grid, ordered[-1:]])
    s = fbk.sweep_functional(FourBar(lengths=c.lengths), grid, condition=False, sign=c.sign)
    mu = _transmission_angle(s.q)
    return theta, s.q[::substeps][jnp.argsort(order)], jnp.all(s.converged), jnp.min(mu), jnp.max(mu)


def _verdict(c, prob, substeps):
    """`_check` of a start in the search's coordinates, with the decoded start and the
    task's features at the targets (one program for the selection)."""
    c = _decode(c, prob)
    theta, q, ok, mu_lo, mu_hi = _check(c, prob, substeps)
    return c, theta, q, ok, mu_lo, mu_hi, _features(c, prob, q)


@_cache.kept()
def _verdict_batch(c, prob, sub):
    return jax.vmap(lambda c_: _verdict(c_, prob, sub))(c)


# --------------------------------------------------------------------------- starts


def _seed(c, prob, fixed, scales, angles):
    """Place a random start (physical coordinates): scale it by the best of `scales` and,
    when its ground line is free but its pivot fixed, turn it by the best of `angles`;
    a free pivot puts its curve's centroid on the targets'; with prescribed timing (or
    function generation's input offset) and a free phase, the best of 64 phases within
    the phase's bounds."""
    dtype = prob.targets.dtype
    grid = jnp.linspace(0.0, _TWO_PI, 64, endpoint=False, dtype=dtype)
    if "phase" in prob.lo:
        lo, hi = prob.lo["phase"], prob.hi["phase"]
        lo_, hi_ = jnp.where(jnp.isfinite(lo), lo, 0.0), jnp.where(jnp.isfinite(hi), hi, _TWO_PI)
        grid = lo_ + (hi_ - lo_) * jnp.linspace(0.0, 1.0, 64, dtype=dtype)

    projected = dataclasses.replace(prob, timing="free") if prob.timing == "cyclic" else prob

    def error(cand):
        theta = _thetas(cand, projected)
        return jnp.sum(prob.weight * _mismatch(cand, prob, _configuration(cand, theta)[0], prob.targets))

    def place(cand):
        if "origin" in fixed:
            return cand
        if not _TASKS[prob.task].placed:
            return cand
        q, gap = _configuration(eqx.tree_at(lambda m: m.origin, cand, jnp.zeros(2, dtype)), grid)
        curve = _to_world(
            eqx.tree_at(lambda m: m.origin, cand, jnp.zeros(2, dtype)),
            fbk.coupler_point(FourBar(lengths=cand.lengths), q, cand.point),
        )
        ok = gap <= 0
        centre = jnp.sum(jnp.where(ok[:, None], curve, 0.0), 0) / jnp.maximum(jnp.sum(ok), 1).astype(dtype)
        return eqx.tree_at(lambda m: m.origin, cand, -centre)

    def with_phase(cand, ph):
        cand = eqx.tree_at(lambda m: m.phase, cand, ph)
        # function generation with offsets: the output offset that best fits this input offset
        return _init_gamma(cand, prob) if (_TASKS[prob.task].inputs_given and prob.timing == "free") else cand

    def best_phase(cand):
        if "phase" in fixed or not (prob.timing == "prescribed" or _TASKS[prob.task].inputs_given):
            return cand
        errs = jax.vmap(lambda ph: error(with_phase(cand, ph)))(grid)
        return with_phase(cand, grid[jnp.argmin(jnp.where(jnp.isfinite(errs), errs, jnp.inf))])

    def variant(s, a):
        cand = eqx.tree_at(lambda m: (m.lengths, m.point), c, (c.lengths * s, c.point * s))
        if "angle" not in fixed:
            cand = eqx.tree_at(lambda m: m.angle, cand, c.angle + a)
        return best_phase(place(cand))

    cands = jax.vmap(lambda s: jax.vmap(lambda a: variant(s, a))(angles))(scales)
    errs = jax.vmap(jax.vmap(error))(cands)
    k = jnp.argmin(jnp.where(jnp.isfinite(errs), errs, jnp.inf))
    return jax.tree.map(lambda a: a.reshape((-1,) + a.shape[2:])[k], cands)


@_cache.kept()
def _seed_batch(c, prob, fixed, scales, angles):
    return jax.vmap(lambda c_: _seed(c_, prob, fixed, scales, angles))(c)


def _aligned(c, prob, turns=8, rounds=6, samples=64):
    """A path candidate scaled, turned and moved onto the targets (free or cyclic timing:
    the order along the curve unknown): its coupler curve (`samples` crank angles, the
    assembled ones) is first put on the targets' centroid at their RMS size, turned by
    each of `turns` angles, and then matched by `rounds` of iterative closest points
    (each target paired with its nearest curve sample, the similarity that fits the
    pairs best in the least-squares sense, in closed form with complex numbers); the
    turn whose pairs end closest wins. The screen ranks the candidates so placed: by
    their shape, not by where a random draw put them."""
    dtype = prob.targets.dtype
    cplx = jax.lax.complex
    grid = jnp.linspace(0.0, _TWO_PI, samples, endpoint=False, dtype=dtype)
    q, gap = _configuration(c, grid)
    P = _features(c, prob, q)[0]
    T = cplx(prob.targets[:, 0], prob.targets[:, 1])
    a, b, E = similarity_match(cplx(P[:, 0], P[:, 1]), gap <= 0, T, prob.weight, turns, rounds)
    origin = a * cplx(c.origin[0], c.origin[1]) + b
    good = jnp.isfinite(E) & (jnp.abs(a) > 0)
    placed = eqx.tree_at(
        lambda m: (m.lengths, m.point, m.angle, m.origin),
        c,
        (c.lengths * jnp.abs(a), c.point * jnp.abs(a), c.angle + jnp.angle(a), jnp.stack([origin.real, origin.imag])),
    )
    return jax.tree.map(lambda x, y: jnp.where(good, x, y), placed, c)


@_cache.kept()
def _aligned_batch(c, prob):
    return jax.vmap(lambda c_: _aligned(c_, prob))(c)


def _init_timing(c, prob):
    """Cyclic timing's start: the gaps between the crank angles nearest to the targets,
    taken in the given order and the start's direction (equal gaps if they are not in
    that order)."""
    theta = _nearest(c, dataclasses.replace(prob, timing="free"))
    i = jnp.arange(theta.shape[0])
    after = jnp.where(i == _last(prob), theta[0], jnp.roll(theta, -1))  # the last closes the turn
    d = jnp.mod(c.sense * (after - theta), _TWO_PI)
    d = jnp.where(prob.weight > 0, jnp.where(d <= 0, _TWO_PI, d), 0.0)
    in_order = jnp.abs(jnp.sum(d) - _TWO_PI) < 1e-9
    n = theta.shape[0]
    w = jnp.where(in_order & (prob.weight > 0), jnp.log(jnp.maximum(d, 1e-3)), jnp.zeros(n, d.dtype))
    return eqx.tree_at(lambda m: (m.phase, m.gaps), c, (theta[0], w))


def _init_gamma(c, prob):
    """Motion generation: the body's angle offset as the circular mean of the offsets at
    the crank angles nearest to the target positions; function generation: of the
    output's."""
    d = _TASKS[prob.task].angle_offsets(c, prob)
    mean = jnp.arctan2(_over_targets(jnp.sin(d), prob), _over_targets(jnp.cos(d), prob))
    return eqx.tree_at(lambda m: m.gamma, c, mean)


@_cache.kept()
def _init_batch(c, prob, cyclic, gamma):
    return jax.vmap(lambda c_: _init_timing(c_, prob) if cyclic else c_)(
        jax.vmap(lambda c_: _init_gamma(c_, prob) if gamma else c_)(c)
    )


@_cache.kept()
def _loss_batch(c, prob):
    return jax.vmap(lambda c_: _loss(c_, prob))(c)


# a problem's targets are padded to the next of these sizes (`_padded`), so that problems
# of other sizes in one class run the same compiled programs; beyond the last, exact
_SIZES = (4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)


def _size_class(n: int) -> int:
    return size_class(n, _SIZES)


_padded = pad_rows  # `a` with its last row repeated to `size` rows


def _plain_starts(n_starts, n_targets, rng, dtype):
    """The local phase's random starts: Grashof crank-rockers (crank shortest: they
    assemble at every crank angle) of random proportions, coupler points and
    orientations, half on each branch (and, for cyclic timing, half of each turning
    each way)."""
    lengths = np.empty((n_starts, 4))
    i = 0
    while i < n_starts:
        l1 = rng.uniform(0.15, 0.6)
        rest = rng.uniform(0.6, 2.0, size=3)
        s = np.sort(np.r_[l1, rest])
        if l1 == s[0] and s[0] + s[3] < s[1] + s[2] - 0.05:
            lengths[i] = np.r_[l1, rest]
            i += 1
    k = np.arange(n_starts)
    a = lambda v: jnp.asarray(v, dtype)  # noqa: E731
    return _Candidate(
        lengths=a(lengths),
        point=a(rng.normal(0.0, 0.7, (n_starts, 2))),
        origin=a(np.zeros((n_starts, 2))),
        angle=a(rng.uniform(-np.pi, np.pi, n_starts)),
        phase=a(np.zeros(n_starts)),
        gamma=a(np.zeros(n_starts)),
        gaps=a(np.zeros((n_starts, n_targets))),
        sign=a(np.where(k % 2 == 0, 1.0, -1.0)),
        sense=a(np.where(k % 4 < 2, 1.0, -1.0)),
    )


def _random_starts(n_starts, n_targets, rng, dtype, *, log_scale=(0.0, 0.0), quasi=False):
    """Random four-bars, half of them Grashof crank-rockers (crank shortest: they
    assemble at every crank angle), half of free proportions (double rockers, drag
    links, change points: the targets may lie on a part of a curve only), with random
    coupler points, orientations and sizes (log-uniform in `log_scale`), half on each
    branch (and, for cyclic timing, half of each turning each way). `quasi`: the draws
    from a scrambled Sobol sequence (the screen's candidates cover the box evenly)."""
    if not quasi:
        return _plain_starts(n_starts, n_targets, rng, dtype)
    # a power of two keeps the Sobol points balanced; rejection keeps about half of the
    # crank-rockers' draws
    from scipy.stats import qmc  # imported on first use: scipy.stats takes a while to import

    m = int(np.ceil(np.log2(4 * n_starts + 64)))
    n_raw = 2**m
    u = qmc.Sobol(9, scramble=True, rng=rng).random_base2(m)
    l1 = 0.15 + 0.45 * u[:, 0]
    rest = 0.6 + 1.4 * u[:, 1:4]
    s = np.sort(np.c_[l1, rest], axis=1)
    crank_rocker = (l1 == s[:, 0]) & (s[:, 0] + s[:, 3] < s[:, 1] + s[:, 2] - 0.05)
    free = np.exp(np.log(0.15) + np.log(2.0 / 0.15) * u[:, 0:4])
    k = np.arange(n_raw)
    half = k % 2 == 0  # even draws: crank-rockers (rejection), odd draws: free proportions
    keep_cr = np.flatnonzero(half & crank_rocker)
    keep_free = np.flatnonzero(~half)
    n_cr = (n_starts + 1) // 2 if keep_free.size else n_starts
    rows = np.r_[keep_cr[:n_cr], keep_free[: n_starts - n_cr]] if n_starts > 1 else keep_cr[:1]
    rows = np.sort(rows)[:n_starts]
    lengths = np.where(half[rows, None], np.c_[l1, rest][rows], free[rows])
    size = np.exp(log_scale[0] + (log_scale[1] - log_scale[0]) * u[rows, 4])
    point = np.sqrt(-2 * np.log(np.clip(u[rows, 5:6], 1e-12, 1))) * 0.7
    point = point * np.c_[np.cos(2 * np.pi * u[rows, 6]), np.sin(2 * np.pi * u[rows, 6])]
    angle = -np.pi + 2 * np.pi * u[rows, 7]
    i = np.arange(n_starts)
    a = lambda v: jnp.asarray(v, dtype)  # noqa: E731
    return _Candidate(
        lengths=a(lengths * size[:, None]),
        point=a(point * size[:, None]),
        origin=a(np.zeros((n_starts, 2))),
        angle=a(angle),
        phase=a(np.zeros(n_starts)),
        gamma=a(np.zeros(n_starts)),
        gaps=a(np.zeros((n_starts, n_targets))),
        sign=a(np.where(u[rows, 8] < 0.5, 1.0, -1.0) if quasi else np.where(i % 2 == 0, 1.0, -1.0)),
        sense=a(np.where(i % 4 < 2, 1.0, -1.0)),
    )


# --------------------------------------------------------------------------- arguments


def _as_targets(target_points, who="path_generation", name="target_points", width=2):
    t = as_floats(who, name, target_points)
    if t.ndim != 2 or t.shape[1] != width or t.shape[0] < 3:
        raise ValueError(f"{who}: `{name}` must be an (n, {width}) array with n ≥ 3; got shape {t.shape}")
    if not np.all(np.isfinite(t)):
        raise ValueError(
            f"{who}: `{name}` must be finite; rows {np.where(~np.all(np.isfinite(t), 1))[0].tolist()} are not"
        )
    centre = t[:, :2].mean(0)
    scale = float(np.sqrt(np.mean(np.sum((t[:, :2] - centre) ** 2, 1))))
    if scale <= 0:
        raise ValueError(f"{who}: the target points all coincide")
    return t, centre, scale


def _world_bounds(bounds, frame, who, allowed):
    """Validate `bounds` and `frame` (world units): returns `{field: (lo, hi)}` as arrays of
    each field's shape, and the fixed values `{field: value}`."""
    for name, v in (("bounds", bounds), ("frame", frame)):
        if v is not None and not isinstance(v, dict):
            raise ValueError(f"{who}: `{name}` must be a dict of fields or None; got {v!r:.80}")
    bounds = {} if bounds is None else dict(bounds)
    frame = {} if frame is None else dict(frame)
    out = {}
    for key, val in bounds.items():
        if key not in allowed:
            raise ValueError(f"{who}: `bounds` has no field {key!r}; the fields are {list(allowed)}")
        try:
            lo, hi = val
        except (TypeError, ValueError):
            raise ValueError(f"{who}: `bounds[{key!r}]` must be a pair (lo, hi); got {val!r}") from None
        shape = (_FIELDS[key],) if _FIELDS[key] else ()
        lo = np.broadcast_to(np.asarray(lo if lo is not None else -np.inf, float), shape).copy()
        hi = np.broadcast_to(np.asarray(hi if hi is not None else np.inf, float), shape).copy()
        if np.any(np.isnan(lo)) or np.any(np.isnan(hi)):
            raise ValueError(f"{who}: `bounds[{key!r}]` must not be NaN; got ({lo.tolist()}, {hi.tolist()})")
        if np.any(lo > hi):
            raise ValueError(f"{who}: `bounds[{key!r}]` has lo > hi: ({lo.tolist()}, {hi.tolist()})")
        if key == "lengths" and np.any(lo < 0):
            raise ValueError(
                f"{who}: `bounds['lengths']` must have lo ≥ 0 (lengths are positive; 0 leaves them unbounded below); "
                f"got ({lo.tolist()}, {hi.tolist()})"
            )
        if key == "lengths" and np.any(hi <= 0):
            raise ValueError(
                f"{who}: `bounds['lengths']` must allow positive lengths; got ({lo.tolist()}, {hi.tolist()})"
            )
        out[key] = (lo, hi)
    fixed = {}
    for key, val in frame.items():
        if key not in ("origin", "angle"):
            raise ValueError(f"{who}: `frame` takes 'origin' and/or 'angle'; got {key!r}")
        v = as_floats(who, f"frame[{key!r}]", val)
        if v.shape != ((2,) if key == "origin" else ()) or not np.all(np.isfinite(v)):
            raise ValueError(
                f"{who}: `frame[{key!r}]` must be {'(x, y)' if key == 'origin' else 'an angle (rad)'}; got {val!r}"
            )
        if key in out and (np.any(v < out[key][0]) or np.any(v > out[key][1])):
            raise ValueError(
                f"{who}: `frame[{key!r}]` = {v.tolist()} lies outside `bounds[{key!r}]` "
                f"({out[key][0].tolist()}, {out[key][1].tolist()})"
            )
        fixed[key] = v
    return out, fixed


_PERIODIC = ("angle", "phase")


def _full_turn(world, key) -> bool:
    """Whether `world[key]` is an angle's bounds a full turn or more apart: they bound
    nothing (an angle is periodic), so the search leaves the angle free and the result is
    wrapped into `[lo, lo + 2π)` (`_wrapped`). As a box, such bounds would be worse than
    none: MINUIT's transform is flat at both ends, where a design just across the cut
    (an angle just below `lo`, just above `hi`) would have to be reached."""
    if key not in _PERIODIC or key not in world:
        return False
    lo, hi = world[key]
    return bool(np.all(np.isfinite(lo)) and np.all(hi - lo >= _TWO_PI))


def _wrapped(v, lo):
    """An angle `v` moved by whole turns into `[lo, lo + 2π)` (host side)."""
    return lo + np.mod(np.asarray(v, float) - lo, _TWO_PI)


def _normalised_box(world, fixed, centre, scale, task):
    """Bounds in the search's normalised units (lengths and points / scale; the origin
    moved by the targets' centroid; angles as they are), without the fixed fields and
    without an angle's bounds a full turn apart (`_full_turn`). A length bound at 0
    becomes 1e-9 of the targets' size (a zero length is degenerate)."""
    lo, hi = {}, {}
    for key, (a, b) in world.items():
        if key in fixed or _full_turn(world, key):
            continue
        if key == "lengths":
            a, b = np.maximum(a, 1e-9 * scale) / scale, b / scale
        elif key == "point":
            a, b = a / scale, b / scale
        elif key == "origin":
            a, b = (a - centre) / scale, (b - centre) / scale
        lo[key], hi[key] = a, b
    return lo, hi


def _transmission(transmission, who):
    if transmission is None:
        return None
    try:
        lo, hi = (float(v) for v in transmission)
    except (TypeError, ValueError):
        raise ValueError(f"{who}: `transmission` must be (μmin, μmax) in radians; got {transmission!r}") from None
    if not (0 <= lo < hi <= np.pi):
        raise ValueError(f"{who}: `transmission` must satisfy 0 ≤ μmin < μmax ≤ π (radians); got ({lo}, {hi})")
    return (lo, hi)


# --------------------------------------------------------------------------- the search


class _Query(NamedTuple):
    """What a task asks of the search: its name (`_TASKS`), its targets `t` in world
    units with their `centre` and `scale`, the timing mode, the input angles (given or
    relative), a fixed phase, the frame and the world bounds."""

    task: str
    t: Any
    centre: Any
    scale: Any
    timing: str
    angles: Any
    phase: Any
    frame: Any
    bounds: Any


def _search(q: _Query, c: Constraints, m: MultiStart, who: str) -> Synthesis:
    """Multi-start L-BFGS on the normalised problem, then the closure core's check and
    every constraint on each start; returns the best feasible design as a `Synthesis`.
    `m`'s `starts` and `steps` are resolved (not None)."""
    assert m.starts is not None and m.steps is not None
    kind = _TASKS[q.task]
    world, fixed = _check_search(q, c, m, kind, who)
    prob, lo, hi, size = _problem(q, c, kind, world, fixed, who)
    rng = np.random.default_rng(m.seed)
    seeder = _Seeder(q, kind, prob, fixed, lo, hi, size, rng)
    c0 = _screened(seeder, m) if m.screen else seeder.candidates(m.starts, quasi=False)
    names = _trainable(q, kind, fixed)
    found: list = []  # each round's best design (a `Synthesis`), or why none met every constraint

    def judge(res_r, cands_r) -> float:
        """A round checked by the closure core and every constraint (a design just
        outside Grashof's or the full turn's boundary moved onto it first): its best
        design's relative error (inf: none feasible)."""
        if (prob.grashof or prob.full_rotation) and "lengths" in names:
            box = (lo["lengths"], hi["lengths"]) if "lengths" in lo else None
            on = _onto_boundary(cands_r.lengths, prob.grashof, prob.full_rotation, box)
            cands_r = eqx.tree_at(lambda x: x.lengths, cands_r, jax.device_put(on.astype(np.dtype(prob.targets.dtype))))
        try:
            syn = _select(q.task, cands_r, prob, q.t, q.centre, q.scale, fixed, world, res_r, m.tol, who)
        except InfeasibleError as e:
            found.append(e)
            return np.inf
        found.append(syn)
        return syn.relative_error

    def fresh(count):
        # the first hop starts from the atlas's curves closest in shape to the targets
        # (in the order of a short closed tour through them, where free timing gives none)
        tg = np.asarray(seeder.targets)
        given = _atlas_starts(tg if seeder.cyclic else tg[_tour(tg)], count, seeder.dtype, m.progress, size)
        return seeder.candidates(count, True, given)

    atlas_hop = kind.curves and seeder.align and bool(m.screen)
    _polish_rounds(c0, prob, names, "lengths" not in lo, m, rng, judge, fresh if atlas_hop else None)
    # the best design that meets every constraint over all rounds (a later round's
    # polish may push its starts onto a constraint's boundary, where the check fails)
    designs = [f for f in found if isinstance(f, Synthesis)]
    if not designs:
        raise found[-1]
    return min(designs, key=lambda syn: syn.objective)


def _check_search(q: _Query, c: Constraints, m: MultiStart, kind, who):
    """The search's settings checked; the world bounds and the fixed fields."""
    starts, screen = m.starts, m.screen
    assert starts is not None and m.steps is not None
    if starts < 1 or m.steps < 1:
        raise ValueError(f"{who}: `starts` and `steps` must be ≥ 1; got {starts}, {m.steps}")
    world, fixed = _world_bounds(q.bounds, q.frame, who, kind.bounds_fields)
    for name, flag in (("grashof", c.grashof), ("full_rotation", c.full_rotation)):
        if not isinstance(flag, (bool, np.bool_)):
            raise ValueError(f"{who}: `{name}` must be True or False; got {flag!r}")
    counts = dict(starts=starts, steps=m.steps, seed=m.seed, screen=screen, hops=m.hops or 0, atlas=m.atlas)
    for name, v in counts.items():
        check_count(who, name, v, 1 if name in ("starts", "steps") else 0)
    check_scalar(who, "margin", c.margin, nonnegative=True)
    assert screen is not None  # resolved
    if 0 < screen < starts:
        raise ValueError(
            f"{who}: `screen` must be 0 (no screen) or at least `starts` = {starts}: the fit starts from its "
            f"`starts` best candidates; got {screen}"
        )
    if m.atlas and not (kind.curves and q.timing in ("cyclic", "free") and screen):
        raise ValueError(
            f"{who}: `atlas` matches coupler curves to the targets' shape: it needs free or cyclic timing "
            f"(a path) and a `screen` (its candidates join the screen's); got atlas={m.atlas}"
        )
    check_scalar(who, "tol", m.tol, positive=True)
    if q.phase is not None:
        ph = as_floats(who, "phase", q.phase)
        if ph.shape != () or not np.isfinite(ph):
            raise ValueError(f"{who}: `phase` must be a finite angle (rad); got {q.phase!r}")
        if "phase" in world and not (world["phase"][0] <= ph <= world["phase"][1]):
            raise ValueError(f"{who}: `phase` = {float(ph)} lies outside `bounds['phase']`")
        fixed["phase"] = ph
    return world, fixed


def _problem(q: _Query, c: Constraints, kind, world, fixed, who):
    """The normalised problem the compiled programs take (padded to a size class),
    and its box bounds."""
    transmission = _transmission(c.transmission, who)
    n = q.t.shape[0]
    dtype = jnp.asarray(0.0).dtype
    targets = kind.normalised(q.t, q.centre, q.scale)
    lo, hi = _normalised_box(world, fixed, q.centre, q.scale, q.task)
    size = _size_class(n)
    prob = _Problem(
        targets=jax.device_put(_padded(np.asarray(targets, dtype), size)),
        angles=jax.device_put(_padded(np.asarray(q.angles if q.angles is not None else np.zeros(n), dtype), size)),
        weight=jax.device_put((np.arange(size) < n).astype(dtype)),
        lo={k: jnp.asarray(v, dtype) for k, v in lo.items()},
        hi={k: jnp.asarray(v, dtype) for k, v in hi.items()},
        penalty=jax.device_put(np.asarray(_PENALTY, dtype)),
        task=q.task,
        timing=q.timing,
        grashof=c.grashof,
        full_rotation=c.full_rotation,
        transmission=transmission,
        margin=c.margin,
        window="lengths" not in world,
    )
    return prob, lo, hi, size


class _Seeder:
    """The search's candidate designs: random or quasi-random, or given (the atlas's),
    with the fixed fields set, placed, timed and turned, and in the box."""

    def __init__(self, q: _Query, kind, prob, fixed, lo, hi, size, rng):
        self.kind, self.prob, self.lo, self.hi, self.size, self.rng = kind, prob, lo, hi, size, rng
        self.dtype = jnp.asarray(0.0).dtype
        # fixed fields take their values; function generation places nothing
        norm = {}
        if "origin" in fixed:
            norm["origin"] = (fixed["origin"] - q.centre) / q.scale
        if "angle" in fixed:
            norm["angle"] = fixed["angle"]
        if "phase" in fixed:
            norm["phase"] = fixed["phase"]
        self.fixed = norm
        self.fixed_names = tuple(sorted(set(norm) | (set() if kind.placed else {"origin", "angle"})))
        # a fixed pivot must be reached from where it is: the candidates' sizes span the distance
        self.dist = float(np.linalg.norm(norm["origin"])) if "origin" in norm else 0.0
        self.span = (np.log(0.25), np.log(2.0 * max(self.dist, 1.0))) if "origin" in norm else (0.0, 0.0)
        self.with_gamma = kind.has_gamma(q.timing)
        self.cyclic = q.timing == "cyclic" and not kind.inputs_given
        self.targets = kind.normalised(q.t, q.centre, q.scale)
        # the screen's candidates matched onto the targets by their curve's shape (a path
        # with free or cyclic timing, placed freely)
        self.align = kind.curves and q.timing in ("free", "cyclic") and not ({"origin", "angle"} & set(norm))

    def candidates(self, count, quasi, c=None):
        """`count` candidates; quasi-random ones draw their size (and turn); the few
        plain random starts take the best of 12 sizes (and of 12 turns, where the pivot
        is fixed but not the ground line); given ones (`c`, the atlas's) are placed like
        the quasi-random."""
        dtype, fixed = self.dtype, self.fixed
        if c is None:
            span = self.span if quasi else (0.0, 0.0)
            c = _random_starts(count, self.size, self.rng, dtype, log_scale=span, quasi=quasi)
        for key, v in fixed.items():
            c = eqx.tree_at(
                lambda m, k=key: getattr(m, k), c, jnp.broadcast_to(jnp.asarray(v, dtype), getattr(c, key).shape)
            )
        if not self.kind.placed:
            c = eqx.tree_at(
                lambda m: (m.point, m.origin, m.angle),
                c,
                (jnp.zeros_like(c.point), jnp.zeros_like(c.origin), jnp.zeros_like(c.angle)),
            )
        # placed (pivot under the targets, best phase), timed and turned, then into the box
        # and into the unconstrained coordinates of the bounded fields
        scales, turns = np.ones(1), np.zeros(1)
        if not quasi and "origin" in fixed:
            scales = np.geomspace(0.25, 2.0 * max(self.dist, 1.0), 12)
            if "angle" not in fixed:
                turns = np.linspace(0.0, _TWO_PI, 12, endpoint=False)
        c = _seed_batch(c, self.prob, self.fixed_names, np.asarray(scales, dtype), np.asarray(turns, dtype))
        if quasi and self.align:
            c = _aligned_batch(c, self.prob)
        c = _init_batch(c, self.prob, self.cyclic, self.with_gamma)
        for key in self.lo:
            lo, hi = self.lo[key], self.hi[key]
            v = np.asarray(getattr(c, key))
            if key in _PERIODIC and np.isfinite(lo) and np.isfinite(hi):  # by whole turns, nearest the box
                v = _wrapped(v, (lo + hi) / 2 - np.pi)
            v = np.clip(v, lo, hi)
            c = eqx.tree_at(lambda m, k=key: getattr(m, k), c, jnp.asarray(_unbox(v, lo, hi), dtype))
        return c


def _screened(seeder: _Seeder, m: MultiStart):
    """The global phase: a quasi-random screen of `m.screen` candidates in one program
    (and the atlas's matches), the `m.starts` best (lowest loss, constraints' penalties
    included) go on."""
    starts, screen, atlas = m.starts, m.screen, m.atlas
    assert starts is not None and screen is not None
    meter = TextProgress("screen") if m.progress else None
    pool = seeder.candidates(screen, quasi=True)
    if atlas:
        # the atlas's curves closest in shape to the closed polygon through the
        # targets, each turned, scaled and placed onto them, join the screen
        tg = np.asarray(seeder.targets)
        given = _atlas_starts(tg if seeder.cyclic else tg[_tour(tg)], atlas, seeder.dtype, m.progress, seeder.size)
        matched = seeder.candidates(atlas, True, given)
        pool = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), pool, matched)
    losses = np.asarray(_loss_batch(pool, seeder.prob))
    if meter is not None:
        meter.update(len(losses), len(losses), f"best loss {np.nanmin(losses):.3g}")
        meter.close()
    order = np.argsort(np.where(np.isfinite(losses), losses, np.inf), kind="stable")
    if atlas:
        # the atlas's matches take at most a quarter of the starts (the best of them):
        # close shapes share a basin, the screen's candidates keep the search broad
        own = order[order < screen]
        matched = order[order >= screen][: max(1, starts // 4)]
        order = np.concatenate([matched, own])
    best = order[:starts]
    return host_rows(pool, best)


def _tour(points) -> np.ndarray:
    """An order of `points` `(n, 2)` along a short closed tour (nearest neighbour from
    each point, then 2-opt, each exchange the first that shortens; the shortest found).
    Each step is vectorised over the candidates (numpy), so a few hundred points take
    seconds, not minutes."""
    p = np.asarray(points, float)
    n = len(p)
    d = np.linalg.norm(p[:, None] - p[None], axis=-1)
    best, best_len = np.arange(n), np.inf
    for s in range(n):
        t, free = [s], np.ones(n, bool)
        free[s] = False
        for _ in range(n - 1):
            j = int(np.argmin(np.where(free, d[t[-1]], np.inf)))
            t.append(j)
            free[j] = False
        t = np.array(t)
        improved = True
        while improved:
            improved = False
            for i in range(1, n - 1):
                first = i + 1
                while first < n:  # the exchanges at i in the order k = i+1 … n−1
                    k = np.arange(first, n)
                    a, b, c_, e = t[i - 1], t[i], t[k], t[(k + 1) % n]
                    gain = d[a, c_] + d[b, e] < d[a, b] + d[c_, e] - 1e-12
                    if not gain.any():
                        break
                    k0 = int(k[np.argmax(gain)])
                    t[i : k0 + 1] = t[i : k0 + 1][::-1]
                    improved, first = True, k0 + 1
        length = sum(d[t[i], t[(i + 1) % n]] for i in range(n))  # (summed in the tour's order)
        if length < best_len:
            best, best_len = t.copy(), length
    return best


def _turning(points, order) -> float:
    """The total absolute turning (rad) of the closed polygon through `points` in `order`."""
    q = np.asarray(points, float)[order]
    v = np.roll(q, -1, 0) - q
    heading = np.arctan2(v[:, 1], v[:, 0])
    turn = np.mod(np.roll(heading, -1) - heading + np.pi, _TWO_PI) - np.pi
    return float(np.sum(np.abs(turn)))


def _crossing_tours(points, order, count: int) -> list[np.ndarray]:
    """Other orders a self-crossing curve may take through `points`: the tour `order`'s
    2-opt neighbours (one stretch reversed: the two edges it exchanges cross where the
    tour had untangled a crossing), the `count` shortest and the `count` that turn
    least (a smooth curve's order turns less than a shortcut's), each cycle once."""
    p = np.asarray(points, float)
    n = len(order)
    i, k = np.triu_indices(n, 1)
    keep = i >= 1
    i, k = i[keep], k[keep]
    d = np.linalg.norm(p[:, None] - p[None], axis=-1)
    a, b, c, e = order[i - 1], order[i], order[k], order[(k + 1) % n]
    longer = d[a, c] + d[b, e] - d[a, b] - d[c, e]

    def reversed_at(j):  # (one tour at a time: a few hundred points have 10⁵ neighbours)
        t = order.copy()
        t[i[j] : k[j] + 1] = t[i[j] : k[j] + 1][::-1]
        return t

    turning = np.array([_turning(p, reversed_at(j)) for j in range(len(i))])
    seen = {_cycle_key(order)}
    out = []
    for j in list(np.argsort(longer, kind="stable")[:count]) + list(np.argsort(turning, kind="stable")[:count]):
        t = reversed_at(j)
        if _cycle_key(t) not in seen:
            seen.add(_cycle_key(t))
            out.append(t)
    return out


def _cycle_key(order) -> tuple:
    """One name for a cycle whichever point it starts from and whichever way it runs."""
    t = list(np.roll(order, -int(np.argmin(order))))
    return tuple(min(t, [t[0]] + t[1:][::-1]))


def _trainable(q: _Query, kind, fixed) -> list[str]:
    """The fields the fit moves."""
    names = ["lengths"]
    if kind.placed:
        names += ["point"] + [k for k in ("origin", "angle") if k not in fixed]
    if "phase" not in fixed and (q.timing in ("prescribed", "cyclic") or (kind.inputs_given and q.timing == "free")):
        names.append("phase")
    if kind.has_gamma(q.timing):
        names.append("gamma")
    if q.timing == "cyclic" and not kind.inputs_given:
        names.append("gaps")
    return names


def _lm_round(c, prob, names, log_lengths: bool, iterations: int, gtol, label, chunk: int):
    """Levenberg–Marquardt (`_newton_polish`) on every start of `c` for
    `iterations` steps, `chunk` starts at a time (one program for the polish of every
    start and the finish of the best), as a `FitResult` (its `time` NaN: the iterations
    run as one program) and the candidates."""
    meter = TextProgress(label) if label else None
    run = lambda x: _newton_batch(x, prob, tuple(names), log_lengths, iterations)  # noqa: E731
    done, losses, grads = in_chunks(run, c, chunk)
    losses, grads = np.asarray(losses), np.asarray(grads)
    final = losses[:, -1]
    best = int(np.argmin(np.where(np.isfinite(final), final, np.inf)))
    if meter is not None:
        meter.update(iterations, iterations, f"best loss {final[best]:.3g}")
        meter.close()
    spec = jax.tree.map(lambda _: False, done)
    spec = eqx.tree_at(lambda cand: tuple(getattr(cand, k) for k in names), spec, replace=(True,) * len(names))
    res = _lm_fit(row(done, best), eqx.filter(done, spec), losses, grads, gtol)
    return res, done


def _lm_fit(model, params, losses, grads, gtol) -> _fit.FitResult:
    """A `FitResult` of Levenberg–Marquardt's starts from their losses and gradient
    norms per step `(starts, steps)` (its `time` NaN: the steps run as one program)."""
    final = losses[:, -1]
    best = int(np.argmin(np.where(np.isfinite(final), final, np.inf)))
    return _fit.FitResult(
        model=model,
        params=params,
        loss=jax.device_put(final),
        steps=jax.device_put(np.full(final.shape, losses.shape[1], np.int32)),
        converged=jax.device_put(np.isfinite(final) & (grads[:, -1] <= gtol)),
        history=_fit.History(
            loss=jax.device_put(losses),
            grad_norm=jax.device_put(grads),
            active=jax.device_put(np.ones(losses.shape, bool)),
            time=jax.device_put(np.full(losses.shape, np.nan)),
        ),
        best=best,
    )


def _elite(res, n_elite):
    final = np.asarray(res.loss)
    return np.argsort(np.where(np.isfinite(final), final, np.inf), kind="stable")[:n_elite]


def _polish_rounds(c0, prob, names, free_lengths: bool, m: MultiStart, rng, judge, fresh=None) -> None:
    """The local search of every start (Levenberg–Marquardt; `quick`: L-BFGS) and the
    finish of its best eighth, then up to `m.hops` rounds of basin hopping, each
    finished the same way, while no design `judge` checks meets the targets to `m.tol`.
    `judge(result, candidates)` checks each round's starts (as polished, and with the
    best eighth finished) and returns its best design's relative error. `fresh(k)`, where
    given, gives `k` new starts for the first hop in place of the perturbed copies (the
    atlas's closest curves)."""
    starts, steps = m.starts, m.steps
    assert starts is not None and steps is not None
    hops = _hop_count(m)
    dtype = jnp.asarray(0.0).dtype
    trainable = lambda cand: tuple(getattr(cand, k) for k in names)  # noqa: E731
    positive = (lambda cand: cand.lengths) if free_lengths else None

    n_elite = max(1, starts // 8)

    def polish(c, label):
        if not m.quick:
            return _lm_round(
                c, prob, names, positive is not None, steps, m.gtol, label if m.progress else None, n_elite
            )
        res = _fit.fit(
            _loss,
            c,
            prob,
            trainable=trainable,
            positive=positive or False,
            optimizer=m.optimizer,
            convergence=_fit.Convergence(steps=steps, gtol=m.gtol),
            starts=_fit.Starts(batch=True),
            progress=label if m.progress else False,
        )
        return res, eqx.combine(res.params, c)  # fitted fields from the fit, frozen ones from the starts

    # the best eighth finished by Levenberg–Marquardt: L-BFGS creeps near a zero-residual
    # optimum, where Gauss–Newton converges quadratically; after the search's own
    # Levenberg–Marquardt, twice its steps more for the best, by its own program
    label = "newton" if m.progress else None
    finish, times = (_FINISH, 1) if m.quick else (steps, 2)

    def finished(d, p):
        for _ in range(times):
            r_, d = _lm_round(d, p, names, positive is not None, finish, m.gtol, label, n_elite)
        return d, np.asarray(r_.loss)

    def polished(c, label):
        """A round: every start polished, the best eighth finished; the round's result,
        its candidates, the finished rows and every start's loss after the round."""
        res, cands = polish(c, label)
        top = _elite(res, n_elite)
        done, top_loss = finished(host_rows(cands, top), prob)
        losses = np.array(res.loss)
        losses[top] = top_loss
        finite = np.where(np.isfinite(losses), losses, np.inf)
        return res, cands, with_host_rows(cands, top, done), top, done, finite

    # (each round's starts as polished, too: the finish may push a start onto a
    # constraint's boundary, where the check fails)
    res, raw, cands, top, done, losses = polished(c0, "fit")
    error = min(judge(res, raw), judge(res, cands))
    # basin hopping while no design meets the targets to `tol`: the best eighth of the
    # starts, each kept once as it is and copied with its free coordinates perturbed
    # (log-normally for unbounded lengths), polished and finished again by the same
    # programs; the perturbation shrinks by _DECAY a round
    for r in range(hops):
        if error <= m.tol:
            break
        rows = np.argsort(losses, kind="stable")[:n_elite][np.arange(starts) % n_elite]
        base = host_rows(cands, rows)
        sigma = _HOP * _DECAY**r
        keep = (np.arange(starts) < n_elite).astype(float)
        if r == 0 and fresh is not None:
            new = fresh(starts - n_elite)
            base = jax.tree.map(lambda a, b: jnp.concatenate([a[:n_elite], b]), base, new)
            keep = np.ones(starts)
        for name in names:
            v = np.asarray(getattr(base, name))
            z = rng.normal(size=v.shape) * np.reshape(1.0 - keep, (-1,) + (1,) * (v.ndim - 1))
            v = v * np.exp(sigma * z) if (name == "lengths" and positive is not None) else v + sigma * z
            base = eqx.tree_at(lambda cand, n=name: getattr(cand, n), base, jnp.asarray(v, dtype))
        res, raw, cands, top, done, losses = polished(base, f"hop {r + 1}/{hops}")
        error = min(error, judge(res, raw), judge(res, cands))
    if prob.transmission is not None or prob.grashof or prob.full_rotation:
        # the quadratic penalty's optimum lies outside its constraint by an amount that
        # falls with its weight: the finish again, the weight raised, from where it ended
        for k in (1, 2):
            raised = dataclasses.replace(prob, penalty=prob.penalty * _RAISE**k)
            done, _ = finished(done, raised)
            cands = with_host_rows(cands, top, done)
            judge(res, cands)
        if prob.grashof or prob.full_rotation:
            # designs by a change point: once more in root-slack coordinates
            rooted = _slack_round(done, raised, names, finish, n_elite)
            if rooted is not None:
                judge(res, with_host_rows(cands, top, rooted))


def _slack_round(c, prob, names, iterations: int, chunk: int):
    """`c`'s designs near the Grashof or full-turn boundary polished in root-slack
    coordinates (`_slack_frames`), the others as they are (None: none near, or the
    lengths not polished)."""
    if "lengths" not in names:
        return None
    L = np.asarray(c.lengths, float)
    if "lengths" in prob.lo:
        L = np.asarray(_box(L, prob.lo["lengths"], prob.hi["lengths"]))
    frames = _slack_frames(L, prob.grashof, prob.full_rotation)
    if frames is None:
        return None
    dtype = np.dtype(prob.targets.dtype)
    frames = tuple(jax.device_put(f.astype(dtype)) for f in frames)
    run = lambda x: _slack_batch(x[0], x[1], prob, tuple(names), iterations)  # noqa: E731
    return in_chunks(run, (c, frames), chunk)[0]


def _hop_count(m: MultiStart) -> int:
    """The search's most rounds of basin hopping: `hops`, or by default `_HOPS` (none
    with `quick`)."""
    return (0 if m.quick else _HOPS) if m.hops is None else m.hops


def _atlas_starts(targets, count, dtype, progress=False, size=None) -> _Candidate:
    """`count` candidates from the atlas (normalised coordinates): the designs whose
    coupler curves fit the closed polygon through `targets` best (`_atlas.match`),
    scaled, turned and placed by that fit, turning the way it runs."""
    from . import _atlas

    book = _atlas.load(progress=progress)  # a build's progress bar where the caller wants bars
    rows, _, a, b, reverse = _atlas.match(book, np.asarray(targets), count)
    k = len(rows)
    s = np.abs(a)[:, None]
    f = lambda v: jnp.asarray(v, dtype)  # noqa: E731
    return _Candidate(
        lengths=f(book.lengths[rows] * s),
        point=f(book.point[rows] * s),
        origin=f(np.c_[np.real(b), np.imag(b)]),
        angle=f(np.angle(a)),
        phase=f(np.zeros(k)),
        gamma=f(np.zeros(k)),
        gaps=f(np.zeros((k, targets.shape[0] if size is None else size))),
        sign=f(book.sign[rows]),
        sense=f(np.where(reverse, -1.0, 1.0)),
    )


# basin hopping's perturbation (normalised coordinates) and its shrink per round: the
# best of those tried on the literature problems (docs/benchmarks.md, "Measurements behind the code")
_HOP = 0.5
_CROSSINGS = 2  # free timing's other tours where the shortest misses: this many by length, as many by turning
_HOPS = 4  # the default search's most rounds of basin hopping (none once a start meets `tol`)
_DECAY = 0.7
# Levenberg–Marquardt's steps in the finish of `quick` (the default: twice its own `steps`)
_FINISH = 100


def _free_angles(prob) -> bool:
    """Whether the crank angles at the targets are free timing's projections (path and
    motion generation with free timing)."""
    return prob.timing == "free" and not _TASKS[prob.task].inputs_given


def _newton_polish(c, prob, names, log_lengths, iterations, frame=None):
    """Levenberg–Marquardt with geodesic acceleration (`_fit.levenberg_marquardt`) on
    `_residuals` over the free fields `names` of one candidate
    (unbounded lengths in logs, so they stay positive); with free timing the crank angle
    at each target is a variable too (from its projection), so that the polish converges
    quadratically at a zero-residual optimum. A step is taken only where it lowers the
    loss; the damping (Marquardt's, scaled by JᵀJ's diagonal) shrinks after a success.
    A bounded field is polished as itself, projected into its box (a field at a bound
    where the loss would leave the box is held there), not through the search's smooth
    transform: that transform is flat at a bound, where Gauss–Newton, blind to its
    curvature, creeps towards an optimum leaning on the bound; the field leaves in the
    transform's coordinate again. `frame`: `(M, K, y)` of `_slack_frames`, the lengths
    polished in those coordinates (`M y + K (y ∘ y)`; their box, if any, a penalty as
    the constraints', then clipped)."""
    boxed = tuple(n for n in names if n in prob.lo)
    # the problem with the polished fields' boxes taken off: they enter as values
    flat = dataclasses.replace(
        prob,
        lo={k: v for k, v in prob.lo.items() if k not in boxed},
        hi={k: v for k, v in prob.hi.items() if k not in boxed},
    )
    fields, lower, upper = [], [], []
    for n in names:
        v = getattr(c, n)
        if n == "lengths" and frame is not None:
            v = frame[2]
            lower.append(jnp.full_like(v, -jnp.inf))
            upper.append(jnp.full_like(v, jnp.inf))
        elif n in boxed:
            v = _box(v, prob.lo[n], prob.hi[n])
            lower.append(jnp.broadcast_to(prob.lo[n], v.shape))
            upper.append(jnp.broadcast_to(prob.hi[n], v.shape))
        else:
            v = jnp.log(v) if (n == "lengths" and log_lengths) else v
            lower.append(jnp.full_like(v, -jnp.inf))
            upper.append(jnp.full_like(v, jnp.inf))
        fields.append(v)
    free = _free_angles(prob)
    if free:
        theta = _nearest(_decode(c, prob), prob)
        fields.append(theta)
        lower.append(jnp.full_like(theta, -jnp.inf))
        upper.append(jnp.full_like(theta, jnp.inf))
    v0, unravel = jax.flatten_util.ravel_pytree(fields)
    bounds = (jax.flatten_util.ravel_pytree(lower)[0], jax.flatten_util.ravel_pytree(upper)[0])

    def candidate(v, encoded=False):
        m, vals = c, unravel(v)
        for n, val in zip(names, vals):
            if n == "lengths" and frame is not None:
                val = frame[0] @ val + frame[1] @ (val * val)
                if encoded and n in boxed:
                    val = jnp.clip(val, prob.lo[n], prob.hi[n])
            elif n == "lengths" and log_lengths:
                val = jnp.exp(val)
            if encoded and n in boxed:
                val = _unbox(val, prob.lo[n], prob.hi[n], jnp)
            m = eqx.tree_at(lambda mm, n=n: getattr(mm, n), m, val)
        return m, (vals[-1] if free else None)

    def r(v):
        m, theta = candidate(v)
        out = _residuals(m, flat, theta)
        if frame is None or "lengths" not in boxed:
            return out
        lo, hi = prob.lo["lengths"], prob.hi["lengths"]
        outside = jnp.concatenate([jax.nn.relu(m.lengths - hi), jax.nn.relu(lo - m.lengths)])
        return jnp.concatenate([out, jnp.sqrt(prob.penalty) * outside])

    v, losses, grads = _fit.levenberg_marquardt(r, v0, iterations, geodesic=True, bounds=bounds)
    return candidate(v, encoded=True)[0], losses, grads


@_cache.kept()
def _newton_batch(c, prob, names, log_lengths, iterations):
    return jax.vmap(lambda c_: _newton_polish(c_, prob, names, log_lengths, iterations))(c)


@_cache.kept()
def _slack_batch(c, frames, prob, names, iterations):
    return jax.vmap(lambda c_, f_: _newton_polish(c_, prob, names, False, iterations, f_))(c, frames)


def _select(task, cands, prob, t, centre, scale, fixed, world, res, tol, who):
    """Check every start by the closure core and the constraints, pick the best."""
    dec, thetas, _, ok, mu_lo, mu_hi, (P, beta, psi) = _verdict_batch(cands, prob, 8)  # (the configurations unused)
    for key in _PERIODIC:
        if _full_turn(world, key):
            v = _wrapped(getattr(dec, key), world[key][0])
            dec = eqx.tree_at(lambda m, k=key: getattr(m, k), dec, jax.device_put(v))
    n = t.shape[0]  # the targets (the padding's rows dropped)
    thetas, P, beta, psi = (np.asarray(v)[:, :n] for v in (thetas, P, beta, psi))
    ok, mu_lo, mu_hi = (np.asarray(v) for v in (ok, mu_lo, mu_hi))
    lengths = np.asarray(dec.lengths)
    kind = _TASKS[task]
    objective, err, angle_errors = kind.measured(
        P, beta, psi, np.asarray(dec.gamma), np.asarray(prob.targets)[:n], t, scale
    )
    # every constraint, measured on each start
    violations = [[] for _ in range(lengths.shape[0])]
    for i in range(lengths.shape[0]):
        if not ok[i]:
            violations[i].append("assembles at every target on one branch (closure core)")
    g_excess = _grashof_excess(np.asarray(lengths), np)
    if prob.grashof:
        for i in np.flatnonzero(g_excess > 0):
            violations[i].append(f"Grashof (s + ℓ − p − q = {g_excess[i]:.3g} > 0)")
    with np.errstate(divide="ignore", invalid="ignore"):  # (a start polished to a zero crank or ground)
        c_min, c_max = fbk.crank_limit_cosines(np.asarray(lengths))
    full = (c_min >= 1) & (c_max <= -1)  # `crank_limits(...).full_rotation`, also for non-finite lengths
    if prob.full_rotation:
        for i in np.flatnonzero(~full):
            violations[i].append("full rotation of the crank")
    if prob.transmission is not None:
        a, b = prob.transmission
        for i in np.flatnonzero((mu_lo < a) | (mu_hi > b)):
            violations[i].append(
                f"transmission angle in [{a:.4g}, {b:.4g}] (measured [{mu_lo[i]:.4g}, {mu_hi[i]:.4g}])"
            )
    feasible = np.array([not v for v in violations]) & np.isfinite(err)
    errors = np.where(feasible, err, np.inf)
    rel = errors / (scale if kind.placed else 1.0)
    if not feasible.any():
        # the closest: assembles, fewest violations, then the smallest error
        key = [(len(v), e if np.isfinite(e) else np.inf) for v, e in zip(violations, err)]
        b = min(range(len(key)), key=lambda i: key[i])
        closest = _placed(jax.tree.map(lambda a: a[b], dec), fixed, world, centre, scale, task) if ok[b] else None
        raise InfeasibleError(
            f"{who}: none of the {lengths.shape[0]} starts gives a design that meets every constraint; the closest "
            f"({'no start assembles' if closest is None else _describe(closest)}, error {err[b]:.3g}) violates: "
            + "; ".join(violations[b])
            + ". Relax the constraints, or try more starts or steps",
            closest=closest,
            violations=violations[b],
        )
    b = int(np.argmin(errors))
    best = row(dec, b)
    design = _placed(best, fixed, world, centre, scale, task)
    points = centre + P[b] * scale if kind.placed else np.c_[thetas[b], psi[b]]
    constraints = {
        "grashof_excess": float(g_excess[b] * (scale if kind.placed else 1.0)),
        "full_rotation": bool(full[b]),
        "transmission": (float(mu_lo[b]), float(mu_hi[b])),
    }
    constraints.update(kind.reported(best, None if angle_errors is None else angle_errors[b]))
    return Synthesis(
        design=design,
        inputs=jax.device_put(thetas[b]),
        points=jax.device_put(points),
        error=float(errors[b]),
        relative_error=float(rel[b]),
        history=row(res.history, b),
        errors=jax.device_put(errors),
        valid=jax.device_put(feasible),
        success_rate=float(np.mean(rel <= tol)),
        fit=res,
        objective=float(objective[b]),
        constraints=constraints,
        alternatives=_alternatives(dec, errors, b, fixed, world, centre, scale, task),
    )


def _placed(c, fixed, world, centre, scale, task):
    """A decoded start in world units, the fixed fields exactly as given (an unbounded
    ground-line angle wrapped to (−π, π])."""
    placed = _TASKS[task].placed
    l = np.asarray(c.lengths) * (scale if placed else 1.0)
    s_len = np.sign(l[3] - l[0]) or 1.0
    if not placed:
        origin, point, angle = np.zeros(2), np.zeros(2), 0.0
    else:
        origin = fixed["origin"] if "origin" in fixed else centre + np.asarray(c.origin) * scale
        point = np.asarray(c.point) * scale
        angle = float(fixed["angle"]) if "angle" in fixed else float(c.angle)
        if "angle" not in fixed and "angle" not in world:
            angle = float(np.arctan2(np.sin(angle), np.cos(angle)))
    return PlacedFourBar(
        lengths=jnp.asarray(l),
        point=jnp.asarray(point),
        origin=jnp.asarray(origin, float),
        angle=jnp.asarray(angle),
        branch=int(float(c.sign) * s_len),
    )


def _describe(d):
    return (
        f"lengths {np.array2string(np.asarray(d.lengths), precision=4)}, coupler point "
        f"{np.array2string(np.asarray(d.point), precision=4)}, pivot "
        f"{np.array2string(np.asarray(d.origin), precision=4)}, "
        f"ground line {float(d.angle):.4g} rad, branch {d.branch:+d}"
    )


def _clip_bounds(syn: Synthesis, world, who):
    """The returned design within its world-unit bounds exactly (the normalisation's
    round-off can put a value at its bound one ulp outside)."""
    d = syn.design
    pinned = []
    for key, (lo, hi) in world.items():
        if key == "phase":
            continue
        v = np.asarray(getattr(d, key))
        if np.any(v < lo - 1e-9 * (1 + np.abs(lo))) or np.any(v > hi + 1e-9 * (1 + np.abs(hi))):
            raise AssertionError(f"{who}: internal error: {key} {v} outside its bounds")
        d = eqx.tree_at(lambda m, k=key: getattr(m, k), d, jax.device_put(np.clip(v, lo, hi)))
        width = np.where(np.isfinite(hi - lo), hi - lo, 1.0)
        if np.any((np.abs(v - lo) <= 1e-6 * width) | (np.abs(v - hi) <= 1e-6 * width)):
            pinned.append(key)
    if pinned and not syn.success_rate > 0:
        # the best design leans on a bound and no start met the tolerance: the bounds,
        # not the search, are what keeps it from the targets
        warnings.warn(
            f"{who}: no start reached the targets (relative error {syn.relative_error:.3g}); the best design is "
            f"pinned at its bounds on {pinned}: they may not let the mechanism reach the targets (widen them)",
            UserWarning,
            stacklevel=user_stacklevel(),
        )
    return eqx.tree_at(lambda s: s.design, syn, d)


# --------------------------------------------------------------------------- the three tasks


def _path_generation(who: str, task: Path, c: Constraints, m: MultiStart) -> Synthesis:
    """`path_generation`'s work for `task` under `c` by the search `m`, its errors naming `who`
    (the function the user called)."""
    target_points, crank_angles, phase, mechanism, tracer = (
        task.target_points,
        task.crank_angles,
        task.phase,
        task.mechanism,
        task.tracer,
    )
    timing, cyclic_order = ("free", True) if task.timing == "cyclic" else (task.timing, False)
    frame, bounds = c.frame, c.bounds
    given, m = m, _resolved(task, m)
    t, centre, scale = _as_targets(target_points, who)
    n = t.shape[0]
    if crank_angles is not None:
        inc = np.asarray(crank_angles, dtype=float)
        if inc.shape != (n,) or not np.all(np.isfinite(inc)):
            raise ValueError(f"{who}: `crank_angles` must be {n} finite values (one per target); got shape {inc.shape}")
        if timing == "free":
            raise ValueError(f"{who}: `crank_angles` prescribe the timing; pass timing='prescribed'")
    if phase is not None and timing != "prescribed":
        raise ValueError(f"{who}: `phase` fixes prescribed timing's crank angles; pass timing='prescribed'")
    if mechanism is not None:
        if not (m.quick and timing == "prescribed"):
            inputs = None if timing != "prescribed" else (inc if crank_angles is not None else None)
            mode = "cyclic" if cyclic_order else timing
            group = _linkage_group(mechanism)
            if given.screen is None and m.screen and group:
                m = dataclasses.replace(m, screen=m.screen // 4)  # (its tracer costs a sweep)
            if given.steps is None and not m.quick and not group:
                m = dataclasses.replace(m, steps=_LINKAGE_STEPS)
            return _linkage_path(who, t, centre, scale, mechanism, tracer, mode, inputs, c, m)
        for name in ("starts", "steps"):
            check_count(who, name, getattr(m, name))
        if m.screen or m.hops or m.atlas:
            raise ValueError(
                f"{who}: `screen`, `hops` and `atlas` search; `quick=True` fits a `mechanism` from perturbed "
                "copies of it (`starts`, `spread`)"
            )
        check_scalar(who, "spread", m.spread, nonnegative=True)
        given_c = [k for k in ("frame", "bounds", "transmission") if getattr(c, k) is not None]
        given_c += [k for k in ("grashof", "full_rotation") if getattr(c, k)]
        if given_c:
            raise ValueError(
                f"{who}: `quick=True` with prescribed timing fits a `mechanism` without constraints; drop `quick` "
                f"to impose {given_c}"
            )
        return _linkage_generation(t, scale, mechanism, tracer, timing, crank_angles, m, who)
    if crank_angles is None:
        inc = _TWO_PI * np.arange(n) / n
    elif np.any(np.diff(inc) <= 0) and np.any(np.diff(inc) >= 0):
        raise ValueError(f"{who}: `crank_angles` must be monotonic (the crank turns one way)")
    # prescribed timing, free phase: the phase is the crank angle at the first target
    angles = inc if phase is not None else inc - inc[0]
    mode = "cyclic" if cyclic_order else timing
    world, _ = _world_bounds(bounds, frame, who, tuple(_FIELDS))
    try:
        syn = _search(_Query("path", t, centre, scale, mode, angles, phase, frame, bounds), c, m, who)
    except InfeasibleError:
        if not (mode == "free" and _hop_count(m)):
            raise
        syn = None
    if mode == "free" and _hop_count(m) and (syn is None or syn.relative_error > m.tol):
        syn = _along_tour(syn, t, centre, scale, angles, frame, bounds, c, m, who)
    assert syn is not None  # (an infeasible free search: the tour's answer, or its error raised)
    return _clip_bounds(syn, world, who)


def _along_tour(syn, t, centre, scale, angles, frame, bounds, c, m, who) -> Synthesis:
    """Free timing's search once more where it missed: the targets in the order of a
    short closed tour through them (`_tour`; on a curve sampled densely enough, the
    order of the motion) searched in that cyclic order, whose monotonic timing keeps
    each target on its own stretch of the curve (even where the free search's design
    meets them in that order: the cyclic parametrisation reaches other basins); while
    none meets `tol`, unless the two searches ended at one design (`_same_answer`),
    the orders of a self-crossing curve (`_crossing_tours`, two by length and two by
    turning). The best design of all (its objective), its inputs and
    points in the targets' own order; `syn` (None: the free search found no feasible
    design) where no order gives one."""
    failed: list[InfeasibleError] = []

    def along(o):  # the cyclic search in the order `o` (None where nothing is feasible)
        try:
            return _search(_Query("path", t[o], centre, scale, "cyclic", angles, None, frame, bounds), c, m, who)
        except InfeasibleError as e:
            failed.append(e)
            return None

    def best_of(tried):  # the design of least objective and its order ((None, None): none)
        found = [(r, o) for r, o in tried if r is not None]
        return min(found, key=lambda ro: ro[0].objective) if found else (None, None)

    def met(tried) -> bool:
        best = best_of(tried)[0]
        return best is not None and best.relative_error <= m.tol

    order = _tour(np.asarray(t))
    first = along(order)
    tried = [(syn, None), (first, order)]
    if not met(tried) and not _same_answer(syn, first):
        for o in _crossing_tours(t, order, _CROSSINGS):
            tried.append((along(o), o))
            if met(tried):
                break
    best, best_order = best_of(tried)
    if best is None:
        raise failed[0]  # (the tour's: the free search's own error was raised before it)
    if best_order is None:
        return best
    back = np.argsort(best_order)
    return dataclasses.replace(
        best,
        inputs=jax.device_put(np.asarray(best.inputs)[back]),
        points=jax.device_put(np.asarray(best.points)[back]),
    )


def _same_answer(a: Synthesis | None, b: Synthesis | None) -> bool:
    """Whether two searches ended at one design (their objectives within 1e-6 of each
    other, relative): free timing and the cyclic search along the tour agreeing, which
    an inexact problem's searches do (noisy planted problems: to 1e-12) and a curve
    whose tour took a shortcut at a crossing did not (planted misses: by 28 % to 290
    times)."""
    if a is None or b is None:
        return False
    return abs(a.objective - b.objective) <= 1e-6 * max(a.objective, b.objective)


def _motion_generation(who: str, task: Motion, c: Constraints, m: MultiStart) -> Synthesis:
    """`motion_generation`'s work for `task` under `c` by the search `m`, its errors naming `who`
    (the function the user called)."""
    poses, cyclic_order, frame, bounds = task.poses, task.timing == "cyclic", c.frame, c.bounds
    t, centre, scale = _as_targets(poses, who, "poses", 3)
    world, _ = _world_bounds(bounds, frame, who, tuple(_FIELDS))
    timing = "cyclic" if cyclic_order else "free"
    syn = _search(_Query("motion", t, centre, scale, timing, None, None, frame, bounds), c, _resolved(task, m), who)
    return _clip_bounds(syn, world, who)


def _function_generation(who: str, task: Function, c: Constraints, m: MultiStart) -> Synthesis:
    """`function_generation`'s work for `task` under `c` by the search `m`, its errors naming `who`
    (the function the user called)."""
    theta_in, theta_out, offsets, ground, bounds = task.theta_in, task.theta_out, task.offsets, task.ground, c.bounds
    a = as_floats(who, "theta_in", theta_in)
    b = as_floats(who, "theta_out", theta_out)
    if a.ndim != 1 or a.shape[0] < 3 or not np.all(np.isfinite(a)):
        raise ValueError(f"{who}: `theta_in` must be a finite 1-D array of n ≥ 3 crank angles; got shape {a.shape}")
    if b.shape != a.shape or not np.all(np.isfinite(b)):
        raise ValueError(
            f"{who}: `theta_out` must be {a.shape[0]} finite rocker angles, one per crank angle; got shape {b.shape}"
        )
    if not (np.all(np.diff(a) > 0) or np.all(np.diff(a) < 0)):
        raise ValueError(f"{who}: `theta_in` must be strictly monotonic (the crank turns one way)")
    g = float(ground)
    if not (np.isfinite(g) and g > 0):
        raise ValueError(f"{who}: `ground` must be a positive length; got {ground!r}")
    bounds = {} if bounds is None else dict(bounds)
    world, _ = _world_bounds(bounds, None, who, ("lengths", "phase"))
    if "lengths" not in world:  # the ground link fixed at `ground`, the others positive
        world["lengths"] = (np.array([0.0, 0.0, 0.0, g]), np.array([np.inf, np.inf, np.inf, g]))
        bounds["lengths"] = world["lengths"]
    lo, hi = world["lengths"]
    if "lengths" in world and lo[3] == hi[3] and lo[3] <= 0:
        raise ValueError(f"{who}: the ground link's length must be positive")
    timing, phase = ("free", None) if offsets else ("prescribed", 0.0)
    syn = _search(_Query("function", b, np.zeros(2), 1.0, timing, a, phase, None, bounds), c, _resolved(task, m), who)
    return _clip_bounds(syn, {"lengths": world["lengths"]}, who)


# ------------------------------------------------------------------ tasks, constraints and the search as objects

Timing = Literal["free", "prescribed", "cyclic"]


class Constraints(eqx.Module):
    """What a synthesised four-bar must satisfy (every field as in `path_generation`).

    - `frame`: `{"origin": (x, y), "angle": a}`, a fixed crank pivot and/or ground-line
      direction (not for `Function`);
    - `bounds`: box bounds per field in world units (`Function`: `"lengths"` and
      `"phase"`);
    - `grashof`: a Grashof linkage; `full_rotation`: its crank turns fully;
    - `transmission`: `(μmin, μmax)` (rad), the transmission angle's limits over the
      motion;
    - `margin`: the targets' distance from a toggle position, relative to their size.
    """

    frame: Any = None
    bounds: Any = None
    grashof: bool = False
    full_rotation: bool = False
    transmission: Any = None
    margin: float = 0.02


class MultiStart(eqx.Module):
    """The search: a global screen of candidate designs, then Levenberg–Marquardt from
    the best of them (every field as in `path_generation`).

    - by default: `screen` quasi-random candidates (4096; a path with free or cyclic
      timing: each placed onto the targets by its curve's shape), ranked by their loss;
      the `starts` best (64) polished by `steps` (100) Levenberg–Marquardt steps on the
      loss's residuals (free timing: the crank angles at the targets are variables too),
      the best eighth by 200 more; then, while no start meets the targets to `tol`,
      up to `hops` (4) rounds of basin hopping from the best eighth (a path with free
      or cyclic timing: the first from the atlas of coupler curves; free timing then
      once more in the order of a tour through the targets, and of up to four tours
      that cross where the two searches end apart);
    - `quick`: the local multi-start alone: `starts` random designs (the task's
      `starts`, 32 or 64), `steps` L-BFGS iterations (the task's `steps`), no screen,
      then the best eighth finished by 100 Levenberg–Marquardt steps, no hops;
    - `atlas`: more of the global phase: this many of the atlas's curves join the
      screen (0 by default; the first hop uses the atlas in any case);
    - `seed`: the random starts' seed; `optimizer`, `gtol`: as in `diffmech.fit.fit`
      (`optimizer` for `quick` only);
    - `tol`: a start succeeds when its relative error is at most this;
    - `spread`: a `Path` with a `mechanism`: the starts' relative perturbation of its
      coordinates;
    - `progress`: text progress bars on stderr.
    """

    starts: int | None = None
    steps: int | None = None
    screen: int | None = None
    hops: int | None = None
    atlas: int = 0
    seed: int = 0
    optimizer: Any = "lbfgs"
    gtol: float = 1e-12
    tol: float = 1e-6
    spread: float = 0.05
    progress: bool = False
    quick: bool = False


class AbstractTask(eqx.Module):
    """What a synthesised mechanism is to do (`Path`, `Motion`, `Function`): given to
    `synthesize` with its `Constraints` and its `MultiStart` search. `starts` and
    `steps` are the task's defaults for the `quick` search (L-BFGS), `search` its
    defaults for the full one: `(starts, Levenberg–Marquardt steps, screen)`; `kind`, `placed`, `inputs_given`,
    `curves` and `bounds_fields` (class variables, each task sets them) and the static
    methods are what the search asks of a task (its compiled programs name the task
    by `kind`)."""

    starts: ClassVar[int]
    steps: ClassVar[int]
    search: ClassVar[tuple[int, int, int]] = (64, 100, 4096)
    # what the search asks of a task (its programs name it by `kind`, a static string)
    kind: ClassVar[str]
    placed: ClassVar[bool]  # a coupler point in the world: targets scaled, the frame searched
    inputs_given: ClassVar[bool]  # the crank angles are the task's data
    curves: ClassVar[bool]  # the atlas of coupler curves applies
    bounds_fields: ClassVar[tuple[str, ...]]

    @abc.abstractmethod
    def solve(self, constraints: Constraints, search: MultiStart, *, who: str = "synthesize") -> Synthesis:
        """The search's best design (`synthesize`); errors name `who`."""

    @staticmethod
    @abc.abstractmethod
    def has_gamma(timing: str) -> bool:
        """Whether the search fits an angle offset `gamma` (a body's, an output's)."""

    @staticmethod
    @abc.abstractmethod
    def mismatch(c, P, beta, psi, targets, angular) -> Any:
        """Per target, the error's components `(n, k)` (normalised units; an angle error
        through `angular`, 2 sin(Δ/2)) from the coupler point `P`, the coupler line's
        angle `beta` and the rocker's `psi` (traced): their squares sum to the target's
        squared error."""

    @staticmethod
    def angle_offsets(c, prob) -> Any:
        """Per target, the offset `gamma` would take (its circular mean starts it)."""
        raise AssertionError("a task without an angle offset has none to start")

    @staticmethod
    @abc.abstractmethod
    def normalised(t, centre, scale) -> Any:
        """The targets in the search's units."""

    @staticmethod
    @abc.abstractmethod
    def measured(P, beta, psi, gamma, targets, t, scale) -> tuple[Any, Any, Any]:
        """Per start (on the host): the objective, the error the starts are ranked by,
        and the angle errors a report needs (or None)."""

    @staticmethod
    def reported(best, angle_errors) -> dict:
        """The task's own entries of `Synthesis.constraints` for the best start."""
        return {}


def _timing(cls: str, timing, allowed) -> None:
    if timing not in allowed:
        raise ValueError(f"synthesis.{cls}: `timing` must be one of {', '.join(map(repr, allowed))}; got {timing!r}")


class Path(AbstractTask):
    """Path generation: the coupler point (or a linkage's `tracer`) passes through
    `target_points` `(n, 2)`.

    - `timing`: `"free"` (the crank angle at each target is a design variable),
      `"cyclic"` (free, the targets met in their given cyclic order during one
      revolution) or `"prescribed"` (the crank at `phase + crank_angles[i]` at target
      i);
    - `crank_angles`, `phase`: prescribed timing's crank angles and fixed phase (as in
      `path_generation`);
    - `mechanism`, `tracer`: a planar `Linkage` with one revolute input to synthesise
      instead of a four-bar (its topology; a list of them: type synthesis, one result
      each from `synthesize`), and the joint that traces the path (default: its one
      tracer).
    """

    target_points: Any
    timing: Timing = "free"
    crank_angles: Any = None
    phase: Any = None
    mechanism: Linkage | Sequence[Linkage] | None = None
    tracer: str | None = None
    starts: ClassVar[int] = 32
    steps: ClassVar[int] = 300
    kind: ClassVar[str] = "path"
    placed: ClassVar[bool] = True
    inputs_given: ClassVar[bool] = False
    curves: ClassVar[bool] = True
    bounds_fields: ClassVar[tuple[str, ...]] = tuple(_FIELDS)

    @staticmethod
    def has_gamma(timing):
        return False

    @staticmethod
    def mismatch(c, P, beta, psi, targets, angular):
        return P - targets

    @staticmethod
    def normalised(t, centre, scale):
        return (t - centre) / scale

    @staticmethod
    def measured(P, beta, psi, gamma, targets, t, scale):
        d = np.sqrt(np.sum((P - targets) ** 2, -1)) * scale
        return np.sum(d**2, -1), d.mean(-1), None

    def __check_init__(self):
        _timing("Path", self.timing, ("free", "prescribed", "cyclic"))

    def solve(self, constraints: Constraints, search: MultiStart, *, who: str = "synthesize") -> Synthesis:
        c, m = _parts(constraints, search, who)
        return _path_generation(who, self, c, m)


class Motion(AbstractTask):
    """Motion generation (rigid-body guidance): the coupler carries a body through
    `poses` `(n, 3)` = (x, y, φ); `timing` `"free"` or `"cyclic"` (the poses in their
    given cyclic order during one revolution)."""

    poses: Any
    timing: Literal["free", "cyclic"] = "free"
    starts: ClassVar[int] = 64
    steps: ClassVar[int] = 400
    kind: ClassVar[str] = "motion"
    placed: ClassVar[bool] = True
    inputs_given: ClassVar[bool] = False
    curves: ClassVar[bool] = False
    bounds_fields: ClassVar[tuple[str, ...]] = tuple(_FIELDS)

    @staticmethod
    def has_gamma(timing):
        return True  # the body's angle on the coupler

    @staticmethod
    def mismatch(c, P, beta, psi, targets, angular):
        return jnp.concatenate([P - targets[..., :2], angular(beta + c.gamma - targets[..., 2])[..., None]], -1)

    @staticmethod
    def angle_offsets(c, prob):
        # at the crank angles nearest to the target positions
        theta = _nearest(c, dataclasses.replace(prob, task="path", timing="free", targets=prob.targets[:, :2]))
        _, beta, _ = _features(c, prob, _configuration(c, theta)[0])
        return prob.targets[:, 2] - beta

    @staticmethod
    def normalised(t, centre, scale):
        return np.c_[(t[:, :2] - centre) / scale, t[:, 2]]

    @staticmethod
    def measured(P, beta, psi, gamma, targets, t, scale):
        d = np.sqrt(np.sum((P - targets[:, :2]) ** 2, -1)) * scale
        dphi = _wrap(beta + gamma[:, None] - t[:, 2])
        return np.sum(d**2, -1) + scale**2 * np.sum(dphi**2, -1), d.mean(-1), dphi

    @staticmethod
    def reported(best, angle_errors):
        return {"max_angle_error": float(np.max(np.abs(angle_errors))), "body_angle": float(best.gamma)}

    def __check_init__(self):
        _timing("Motion", self.timing, ("free", "cyclic"))

    def solve(self, constraints: Constraints, search: MultiStart, *, who: str = "synthesize") -> Synthesis:
        c, m = _parts(constraints, search, who)
        if m.atlas:
            raise ValueError(f"{who}: `atlas` searches coupler curves for path generation; a Motion has none")
        return _motion_generation(who, self, c, m)


class Function(AbstractTask):
    """Function generation: the rocker angle follows the crank angle at the pairs
    (`theta_in`, `theta_out`); `offsets`: a constant added to each side; `ground`: the
    ground link's length unless the bounds leave it free (as in
    `function_generation`)."""

    theta_in: Any
    theta_out: Any
    offsets: bool = False
    ground: float = 1.0
    starts: ClassVar[int] = 32
    steps: ClassVar[int] = 600
    kind: ClassVar[str] = "function"
    placed: ClassVar[bool] = False
    inputs_given: ClassVar[bool] = True
    curves: ClassVar[bool] = False
    bounds_fields: ClassVar[tuple[str, ...]] = ("lengths", "phase")

    @staticmethod
    def has_gamma(timing):
        return timing == "free"  # `offsets`: the output's

    @staticmethod
    def mismatch(c, P, beta, psi, targets, angular):
        return angular(psi - (targets + c.gamma))[..., None]

    @staticmethod
    def angle_offsets(c, prob):
        _, _, psi = _features(c, prob, _configuration(c, _thetas(c, prob))[0])
        return prob.targets - psi

    @staticmethod
    def normalised(t, centre, scale):
        return t

    @staticmethod
    def measured(P, beta, psi, gamma, targets, t, scale):
        dpsi = _wrap(psi - (t + gamma[:, None]))
        return np.sum(dpsi**2, -1), np.abs(dpsi).mean(-1), None

    @staticmethod
    def reported(best, angle_errors):
        return {"offsets": (float(best.phase), float(best.gamma))}

    def solve(self, constraints: Constraints, search: MultiStart, *, who: str = "synthesize") -> Synthesis:
        c, m = _parts(constraints, search, who)
        if c.frame is not None:
            raise ValueError(f"{who}: a Function's linkage has no frame to fix (its angles are measured from A→D)")
        if m.atlas:
            raise ValueError(f"{who}: `atlas` searches coupler curves for path generation; a Function has none")
        return _function_generation(who, self, c, m)


def _resolved(task: AbstractTask, m: MultiStart) -> MultiStart:
    """The search with the task's own default starts, steps and screen where it leaves
    them to the task: `quick` (or a linkage's fit), `task.starts` and `task.steps` and no
    screen; else `task.search`."""
    starts, steps, screen = (task.starts, task.steps, 0) if m.quick else task.search
    return dataclasses.replace(
        m,
        starts=starts if m.starts is None else m.starts,
        steps=steps if m.steps is None else m.steps,
        screen=screen if m.screen is None else m.screen,
    )


# the tasks by the name the search's programs carry (`_Problem.task`, static)
_TASKS: dict[str, type[AbstractTask]] = {cls.kind: cls for cls in (Path, Motion, Function)}


def _wrap(a):
    """Angles wrapped to (−π, π] (on the host)."""
    return np.arctan2(np.sin(a), np.cos(a))


def _parts(constraints, search, who) -> tuple[Constraints, MultiStart]:
    if not isinstance(constraints, Constraints):
        raise ValueError(f"{who}: `constraints` must be a synthesis.Constraints; got {type(constraints).__name__}")
    if not isinstance(search, MultiStart):
        raise ValueError(f"{who}: `search` must be a synthesis.MultiStart; got {type(search).__name__}")
    return constraints, search


def synthesize(task: AbstractTask, constraints: Constraints | None = None, search: MultiStart | None = None) -> Any:
    """Synthesise a four-bar (or a linkage) for `task`.

    **Arguments:** `task`: a `Path`, `Motion` or `Function`; `constraints`: a
    `Constraints` (default: none but the search window); `search`: a `MultiStart`
    (default: the task's starts and steps, no global phase).

    **Returns:** a `Synthesis`, as `path_generation`, `motion_generation` and
    `function_generation` (their short forms) return it; for a `Path` whose
    `mechanism` is a list of linkages, a list: the best design of each (None where
    none meets every constraint).

    **Raises:** `ValueError` naming what is wrong; `InfeasibleError` (a
    `RuntimeError`) if no start meets every constraint, with the closest design found.
    """
    if not isinstance(task, AbstractTask):
        raise ValueError(f"synthesize: `task` must be a synthesis.Path, Motion or Function; got {type(task).__name__}")
    c = Constraints() if constraints is None else constraints
    m = MultiStart() if search is None else search
    return _solved(task, c, m, "synthesize")


def _solved(task: AbstractTask, c: Constraints, m: MultiStart, who: str) -> Any:
    """`task.solve`, or type synthesis: a `Path` whose `mechanism` is a list of
    linkages gives a list of the best design of each (None where none of its starts
    meets every constraint, with a warning naming it)."""
    kinds = getattr(task, "mechanism", None)
    if not isinstance(kinds, list | tuple):
        return task.solve(c, m, who=who)
    if not kinds:
        raise ValueError(f"{who}: `mechanism` is an empty list; give the linkages whose best designs to compare")
    out = []
    for lk in kinds:
        try:
            out.append(dataclasses.replace(task, mechanism=lk).solve(c, m, who=who))
        except InfeasibleError as e:
            warnings.warn(f"{who}: {e}", stacklevel=user_stacklevel())
            out.append(None)
    return out


class FunctionSettings(TypedDict, total=False):
    """`function_generation`'s keywords for its `Constraints` and its `MultiStart`."""

    bounds: Any
    grashof: bool
    full_rotation: bool
    transmission: Any
    margin: float
    starts: int
    steps: int
    screen: int
    hops: int
    seed: int
    optimizer: Any
    gtol: float
    tol: float
    progress: bool
    quick: bool


class MotionSettings(FunctionSettings, total=False):
    """`motion_generation`'s keywords for its `Constraints` and its `MultiStart`."""

    frame: Any


class PathSettings(MotionSettings, total=False):
    """`path_generation`'s keywords for its `Constraints` and its `MultiStart`."""

    atlas: int
    spread: float


_CONSTRAINT_FIELDS = ("frame", "bounds", "grashof", "full_rotation", "transmission", "margin")


def _short_form(who: str, settings: dict, allowed) -> tuple[Constraints, MultiStart]:
    """A short form's `Constraints` and `MultiStart` from its keywords (each the
    field of that name; left out, the object's default: the task's own starts and
    steps)."""
    unknown = sorted(set(settings) - allowed.__optional_keys__)
    if unknown:
        raise ArgumentTypeError(f"{who}: unexpected keyword argument {unknown[0]!r}")
    constraints = Constraints(**{k: v for k, v in settings.items() if k in _CONSTRAINT_FIELDS})
    search = MultiStart(**{k: v for k, v in settings.items() if k not in _CONSTRAINT_FIELDS})
    return constraints, search


def path_generation(
    target_points,
    timing: Literal["free", "prescribed"] = "free",
    *,
    crank_angles=None,
    phase=None,
    cyclic_order: bool = False,
    mechanism: Linkage | Sequence[Linkage] | None = None,
    tracer: str | None = None,
    **settings: Unpack[PathSettings],
) -> Any:
    """Synthesise a mechanism whose coupler point passes through `target_points`.

    The short form of `synthesize(Path(...), Constraints(...), MultiStart(...))`: the
    same search, the same result.

    **Arguments:**

    - `target_points`: `(n, 2)` world points, n ≥ 3;
    - `timing`: `"free"` — the points may lie anywhere along the curve (the crank angle at
      each target is a design variable) — or `"prescribed"`: the crank is at
      `phase + crank_angles[i]` at target i;
    - `crank_angles`: prescribed timing's crank angles (default: `n` equal steps over one
      anticlockwise revolution from 0), monotonic; for a linkage, its inputs (the first 0);
    - `phase`: prescribed timing: a fixed phase (rad), so the crank angles are absolute,
      measured from the ground line A→D anticlockwise (default: the phase is a design
      variable);
    - `frame`: `{"origin": (x, y), "angle": a}` (either key alone allowed): a fixed crank
      pivot A and/or ground-line direction A→D (rad);
    - `bounds`: `{"lengths": (lo, hi), "point": (lo, hi), "origin": (lo, hi),
      "angle": (lo, hi), "phase": (lo, hi)}`, box bounds in world units (scalars or
      arrays broadcast to the field; `None` or ±inf for an open side), honoured exactly
      by the returned design: the screen and L-BFGS move a bounded field through
      MINUIT's smooth transform (`lo + (hi − lo)(1 + sin z)/2`), so every iterate is
      inside the box, and Levenberg–Marquardt moves it as itself, projected into the
      box (where an optimum leans on a bound, the transform's flat end would stall it);
      an angle's or the phase's bounds a full turn or more apart bound nothing (an angle
      is periodic): it is left free and returned in `[lo, lo + 2π)`; unbounded lengths
      keep today's window (1/50 … 50 of the targets' size) as a penalty;
    - `cyclic_order`: free timing with the targets met in their given cyclic order
      during one revolution (either turning direction): the crank's turns between
      consecutive targets are design variables, positive and summing to 2π;
    - `grashof`: a Grashof linkage (s + ℓ ≤ p + q); `full_rotation`: a Grashof crank
      that is the shortest link (it turns fully);
    - `transmission`: `(μmin, μmax)` (rad): the transmission angle (between coupler and
      rocker, the angle at C) stays within these limits over the motion through the
      targets;
    - `mechanism`, `tracer`: synthesise a planar `Linkage` with one revolute input (a
      six-bar: `diffmech.examples.six_bar`; any description) instead: the joint
      `tracer` (default: the linkage's one tracer) through the targets with free,
      cyclic or prescribed timing (`crank_angles`: its inputs at the targets, from its
      initial configuration). The search takes `mechanism` as a topology: `screen`
      random designs of it (every joint uniform in a square about the reference's
      centroid, a quasi-random sequence; 1/4 as many for a linkage with a group larger
      than a dyad, whose tracer costs a continuation sweep and a Newton solve), each laid
      onto the targets by its curve's shape, the `starts` best polished by `steps`
      (default 300; 100 with a larger group) Levenberg–Marquardt steps on every joint
      coordinate and each target's input, each result checked by the closure core.
      `full_rotation` (the input turns fully; cyclic timing implies it),
      `transmission` (every RRR dyad's angle at its middle joint over the motion) and
      `margin` (every dyad's angle at least this, as its sine, from a toggle) apply, and
      `bounds` as boxes of the joints, `{joint: ((x_min, y_min), (x_max, y_max))}`
      (`"joints"`: every point joint; ±inf leaves a side open; each design the finish
      leaves just outside is clamped into it before the check); `frame`, `grashof`,
      `hops` and `atlas` do not. `quick=True`: from `starts` perturbed copies of
      `mechanism` (`spread`, relative) instead of a screen (prescribed timing: L-BFGS on
      the closure core's sweep, without constraints). A list of linkages is
      type synthesis: a list of the best design of each (None, with a warning, where
      none meets every constraint);
    - the search (by default): `screen` quasi-random candidates (default 4096; a
      scrambled Sobol sequence over proportions, sizes, coupler points, orientations
      and both branches; half Grashof crank-rockers, half free), with free or cyclic
      timing each placed onto the targets by its curve's shape (its coupler curve
      turned, scaled and moved by iterative closest points), ranked by their loss (the
      constraints' penalties included) in one vmapped program; the `starts` best
      (default 64) polished by `steps` (default 100) Levenberg–Marquardt steps on the
      loss's residuals (free timing: each target's crank angle a variable too), the
      best eighth by 200 more; reproducible by `seed`;
    - `quick`: the local multi-start alone, as one vmapped batch: `starts` (default 32)
      random Grashof crank-rockers, half on each assembly branch, `steps` (default 300)
      L-BFGS iterations (`optimizer`, `gtol` as in `diffmech.fit.fit`), the best eighth
      finished by 100 Levenberg–Marquardt steps. Faster (no screen), and it finds the
      design less often: the benchmarks page has both on planted problems;
    - `hops`: the most rounds of basin hopping after the local search (default 4;
      `quick`: 0), run while no start meets the targets to `tol` (an inexact problem
      runs them all): the best eighth of the starts, each kept once and copied with
      its free coordinates perturbed (σ = 0.5 in the normalised coordinates, × 0.7 per
      round), polished and finished again by the same compiled programs; the best
      design that meets every constraint over all rounds is returned. With free or
      cyclic timing and the frame free, the first hop's new starts come from the atlas
      of coupler curves instead (its designs closest in shape to the targets, below);
      free timing that still misses `tol` searches once more in the order of a short
      closed tour through the targets, as `cyclic_order`, and while that misses too
      (unless both searches ended at one design, as an inexact problem's do), in the
      orders a self-crossing curve may take (the tour's neighbours with one stretch
      reversed: the two shortest and the two that turn least); the best design of all
      is returned, its inputs and points in the targets' own order;
    - `atlas`: with free or cyclic timing and a `screen`: this many designs from the
      atlas of coupler curves (`diffmech atlas build`; built and cached on first use),
      those whose curves fit the closed polygon through the targets best (in their
      order; free timing: in the order of a short closed tour through them; a Fourier
      descriptor shortlist, then the exact similarity fit over every start and both
      directions, then iterative closest points to the targets themselves), each
      scaled, turned and placed onto the targets, join the screen's candidates; the
      best of them take at most a quarter of the starts;
    - `tol`: a start succeeds when its relative path error is ≤ `tol`;
    - `margin`: keep every target, and the motion between them, at least this far
      (relative to the targets' size) from a toggle position of the crank. `grashof` and
      `full_rotation` admit their boundary (a change-point linkage, where some published
      optima lie): a design the finish leaves just outside it (within 1e-3 of its
      perimeter) is moved onto it before the check;
    - `progress`: text progress bars on stderr, one per phase (`screen`, `fit`, each
      `hop`, `newton`; as in `diffmech.fit.fit`).

    **Returns:** a `Synthesis` (a list of them for a list of `mechanism`s): the best
    design (a `PlacedFourBar` or a `Linkage`) that meets every constraint as the closure
    core measures it, its absolute crank angles at the targets (a linkage: its inputs,
    from its initial configuration), `objective` = Σ‖Cᵢ − targetᵢ‖², its path error, the loss history, and
    per-start errors and the success rate.

    **Raises:** `ValueError` naming the argument that is wrong; `InfeasibleError` (a
    `RuntimeError`) if no start meets every constraint, with the closest design found.
    """
    who = "path_generation"
    if timing not in ("free", "prescribed"):
        raise ValueError(f"{who}: `timing` must be 'free' or 'prescribed'; got {timing!r}")
    if cyclic_order and timing != "free":
        raise ValueError(
            f"{who}: `cyclic_order` orders free timing's crank angles; prescribed timing has its own order"
        )
    task = Path(target_points, "cyclic" if cyclic_order else timing, crank_angles, phase, mechanism, tracer)
    constraints, search = _short_form(who, dict(settings), PathSettings)
    return _solved(task, constraints, search, who)


def motion_generation(
    poses,
    *,
    cyclic_order: bool = False,
    **settings: Unpack[MotionSettings],
) -> Synthesis:
    """Rigid-body guidance: a four-bar whose coupler carries a body through `poses`.

    The short form of `synthesize(Motion(...), Constraints(...), MultiStart(...))`.

    `poses` `(n, 3)` = (x, y, φ): the body's reference point and its angle (rad,
    anticlockwise). The body is the coupler; its reference point is the coupler point
    (`design.point`, coupler frame) and its angle is the coupler line's world angle plus
    a constant offset (`constraints["body_angle"]`, a design variable). The crank angle
    at each pose is a design variable (free timing; `cyclic_order` keeps the poses in
    their given cyclic order during one revolution). Three, four and five poses are
    passed exactly where Burmester theory gives a solution (a four-bar's two dyads are
    Burmester circle-point/centre-point pairs); more poses, in the least-squares sense
    of `objective` = Σ‖Cᵢ − pᵢ‖² + Σ(ℓ Δφᵢ)² (ℓ: the positions' RMS distance from their
    centroid). `frame`, `bounds`, `grashof`, `full_rotation`, `transmission`, `starts`,
    `steps`, `screen`, `quick`, `hops`, `seed`, `optimizer`, `gtol`, `tol`, `margin`, `progress`:
    as in `path_generation`.

    **Returns:** a `Synthesis` (`points`: the coupler point at the poses;
    `constraints["max_angle_error"]`: the largest body-angle error, rad).
    """
    task = Motion(poses, "cyclic" if cyclic_order else "free")
    constraints, search = _short_form("motion_generation", dict(settings), MotionSettings)
    return task.solve(constraints, search, who="motion_generation")


def function_generation(
    theta_in,
    theta_out,
    *,
    offsets: bool = False,
    ground: float = 1.0,
    **settings: Unpack[FunctionSettings],
) -> Synthesis:
    """A four-bar whose rocker angle follows its crank angle at the given pairs.

    The short form of `synthesize(Function(...), Constraints(...), MultiStart(...))`.

    `theta_in` (crank angles) and `theta_out` (rocker angles, the direction D→C), both
    measured from the ground line A→D anticlockwise, n ≥ 3 pairs, `theta_in` monotonic
    (the crank turns one way through them). Without `offsets` the angles are absolute:
    three pairs fix the linkage's proportions (Freudenstein's equation) and more are
    fitted in the least-squares sense of `objective` = Σ Δψᵢ² (rad²); with `offsets`, a
    constant is added to each side (two more design variables: five pairs are exact).
    The ground link's length is `ground` unless `bounds["lengths"]` leaves it free.
    `bounds` (`"lengths"`, and `"phase"` for the input offset), `grashof`,
    `full_rotation`, `transmission`, `starts`, `steps`, `screen`, `quick`, `hops`, `seed`,
    `optimizer`, `gtol`, `tol`, `margin`, `progress`: as in `path_generation`.

    **Returns:** a `Synthesis` (`design.lengths`; `points`: the pairs (crank angle,
    rocker angle) the closure core gives; `constraints["offsets"]`).
    """
    task = Function(theta_in, theta_out, offsets, ground)
    constraints, search = _short_form("function_generation", dict(settings), FunctionSettings)
    return task.solve(constraints, search, who="function_generation")


# --------------------------------------------------------------------------- linkages


def _linkage_loss(lk, targets, inputs, tracer, scale):
    m = lks.sweep_functional(lk, inputs, branch=True, condition=False)
    return _fit.masked_mean(m.coords[:, tracer, :2] - targets, m.converged) / scale**2


def _linkage_generation(t, scale, lk, tracer, timing, inputs, m: MultiStart, who):
    """`path_generation` of a given `Linkage` (`mechanism`): its coordinates fitted
    from `m.starts` perturbed copies (`m.spread`), the tracer joint's path on the
    targets at the prescribed inputs."""
    starts, steps = m.starts, m.steps
    assert starts is not None and steps is not None
    k = _linkage_checked(lk, tracer, who)
    if timing != "prescribed" or inputs is None:
        raise ValueError(
            f"{who}: a linkage is synthesised with prescribed timing: pass timing='prescribed' "
            "and `crank_angles` (its inputs at the targets, the first 0)"
        )
    u = jnp.asarray(inputs, lk.coords.dtype)
    targets = jnp.asarray(t, lk.coords.dtype)
    spread_abs = m.spread * float(jnp.max(jnp.abs(lk.coords)))
    rng = np.random.default_rng(m.seed)
    z = rng.normal(0.0, 1.0, (starts,) + lk.coords.shape)
    z[0] = 0.0
    coords = lk.coords[None] + spread_abs * jnp.asarray(z, lk.coords.dtype)
    # a batch of starts: every array of the description gets the starts' axis (the fit
    # vmaps all of them), only the coordinates differ
    batch = jax.tree.map(lambda a: jnp.broadcast_to(a, (starts, *jnp.shape(a))) if eqx.is_array(a) else a, lk)
    batch = eqx.tree_at(lambda d: d.coords, batch, coords)
    res = _fit.fit(
        _linkage_loss,
        batch,
        targets,
        u,
        k,
        scale,
        trainable=lambda d: d.coords,
        optimizer=m.optimizer,
        convergence=_fit.Convergence(steps=steps, gtol=m.gtol),
        starts=_fit.Starts(batch=True),
        progress=m.progress,
    )
    motion = _simulate_batch(eqx.tree_at(lambda m: m.coords, lk, res.params.coords), u)
    pts = motion.coords[:, :, k, :2]
    ok = jnp.all(motion.converged, axis=-1)
    dist = jnp.mean(jnp.sqrt(jnp.sum((pts - targets) ** 2, -1)), axis=-1)
    errors = jnp.where(ok & jnp.isfinite(dist), dist, jnp.inf)
    if not bool(jnp.any(jnp.isfinite(errors))):
        raise RuntimeError(f"{who}: none of the {starts} starts of {lk.name!r} assembles at every input")
    b = int(jnp.argmin(errors))
    design = eqx.tree_at(lambda m: m.coords, lk, res.params.coords[b])
    return Synthesis(
        design=design,
        inputs=u,
        points=pts[b],
        error=float(errors[b]),
        relative_error=float(errors[b]) / scale,
        history=row(res.history, b),
        errors=errors,
        valid=ok,
        success_rate=float(jnp.mean(errors / scale <= m.tol)),
        fit=res,
        objective=float(jnp.sum((pts[b] - targets) ** 2)),
    )


# Levenberg–Marquardt's steps for a linkage that decomposes into dyads (a six-bar's
# valleys are longer than a four-bar's: the cyclic test's Stephenson III reached 2.6e-5
# in 100 + 200 steps, round-off in 300 + 600)
_LINKAGE_STEPS = 300


def _linkage_group(lk) -> bool:
    """Whether a linkage's tracer needs a search (a group larger than a dyad)."""
    from . import _linkage_synthesis as ls

    return isinstance(lk, Linkage) and ls.closed_form(lk) is None


def _linkage_checked(lk, tracer, who) -> int:
    """The linkage `mechanism` and its `tracer` checked; the tracer's index (a linkage
    with one tracer joint needs none named)."""
    if not isinstance(lk, Linkage):
        raise ValueError(f"{who}: `mechanism` must be a diffmech Linkage; got {type(lk).__name__}")
    if lk.geometry != "planar":
        raise ValueError(f"{who}: `mechanism` must be planar; {lk.name!r} is {lk.geometry}")
    if tracer is None:
        tracers = [n for n, t in zip(lk.names, lk.types) if t == "tracer"]
        if len(tracers) != 1:
            raise ValueError(f"{who}: name the joint that traces the path of {lk.name!r}: `tracer`")
        tracer = tracers[0]
    if tracer not in lk.names:
        raise ValueError(f"{who}: `tracer` must name a joint of {lk.name!r} ({', '.join(lk.names)}); got {tracer!r}")
    return lk.names.index(tracer)


def _joint_box(lk, bounds, who):
    """A linkage's `bounds` (world units): `{joint: ((x_min, y_min), (x_max, y_max))}`,
    `"joints"` for every point joint (a joint's own box then replaces it); ±inf leaves
    a side open. Returns `(lo, hi)`, each `(J, 2)` (±inf where unbounded; a line's rows
    too), or None without bounds."""
    if bounds is None:
        return None
    if not isinstance(bounds, dict):
        raise ValueError(f"{who}: a linkage's `bounds` must be a dict {{joint: ((x_min, y_min), (x_max, y_max))}}")
    points = [n for n, ty in zip(lk.names, lk.types) if ty != "P"]
    J = len(lk.names)
    lo, hi = np.full((J, 2), -np.inf), np.full((J, 2), np.inf)
    for key in sorted(bounds, key=lambda k: k != "joints"):  # "joints" first, a joint's own box after
        if key != "joints" and key not in points:
            raise ValueError(
                f"{who}: `bounds` names {key!r}, not a point joint of {lk.name!r}; use one of {points} or 'joints'"
            )
        try:
            box = np.asarray(bounds[key], float)
        except (TypeError, ValueError):
            box = None
        if box is None or box.shape != (2, 2) or np.any(np.isnan(box)) or np.any(box[0] > box[1]):
            raise ValueError(
                f"{who}: `bounds[{key!r}]` must be ((x_min, y_min), (x_max, y_max)) with min ≤ max; got {bounds[key]!r}"
            )
        rows = [lk.names.index(n) for n in (points if key == "joints" else [key])]
        lo[rows], hi[rows] = box[0], box[1]
    return lo, hi


def _linkage_path(who, t, centre, scale, lk, tracer, timing, inputs, c: Constraints, m: MultiStart) -> Synthesis:
    """`path_generation` of a linkage's topology by the global search
    (`_linkage_synthesis.search`): free, cyclic or prescribed timing, from random
    designs of the topology (`quick`: from `starts` perturbed copies of `lk`)."""
    from . import _linkage_synthesis as ls

    if isinstance(lk, Linkage) and ls.supported(lk) is not None:
        raise ValueError(f"{who}: {ls.supported(lk)}")
    k = _linkage_checked(lk, tracer, who)
    if c.frame is not None:
        raise ValueError(f"{who}: `frame` places a four-bar; a `mechanism` is placed by its joints (`bounds`)")
    if c.grashof:
        raise ValueError(f"{who}: `grashof` is a four-bar's; a linkage's input turns fully with `full_rotation`")
    if m.hops or m.atlas:
        raise ValueError(f"{who}: `hops` and `atlas` search four-bars; a `mechanism` is searched by its `screen`")
    if timing == "prescribed" and inputs is None:
        raise ValueError(f"{who}: a linkage's prescribed timing needs `crank_angles` (its inputs at the targets)")
    check_scalar(who, "margin", c.margin, nonnegative=True)
    check_scalar(who, "tol", m.tol, positive=True)
    assert m.starts is not None and m.steps is not None and m.screen is not None
    for name, v in dict(starts=m.starts, steps=m.steps, seed=m.seed, screen=m.screen).items():
        check_count(who, name, v, 1 if name in ("starts", "steps") else 0)
    n = t.shape[0]
    box = _joint_box(lk, c.bounds, who)
    prob = ls.problem(
        lk,
        k,
        (t - centre) / scale,
        timing,
        inputs,
        c.full_rotation,
        _transmission(c.transmission, who),
        c.margin,
        None if box is None else ((box[0] - centre) / scale, (box[1] - centre) / scale),
    )
    world = np.asarray(lk.coords, float)
    lines = np.array([ty == "P" for ty in lk.types])
    normalised = world.copy()
    normalised[~lines, :2] = (world[~lines, :2] - centre) / scale
    normalised[lines, 2] = (world[lines, 2] + world[lines, :2] @ centre) / scale
    starts = None
    if m.quick:  # perturbed copies of the given design
        z = np.random.default_rng(m.seed).normal(0.0, m.spread, (m.starts,) + world.shape) * ls.free_mask(lk)
        z[0] = 0.0
        starts = (normalised[None] * (1 + z)).astype(np.dtype(lk.coords.dtype))
    found = ls.search(prob, starts=m.starts, steps=m.steps, screen=m.screen, seed=m.seed, start_coords=starts)
    coords = np.array(found.designs.coords)
    coords[:, ~lines, :2] = coords[:, ~lines, :2] * scale + centre
    coords[:, lines, 2] = coords[:, lines, 2] * scale - coords[:, lines, :2] @ centre
    pts = found.points[:, :n] * scale + centre
    dist = np.sqrt(np.sum((pts - t) ** 2, -1))
    mu = found.mu
    feasible = found.ok & np.all(np.isfinite(pts), axis=(1, 2))
    if prob.transmission is not None:
        lo, hi = prob.transmission
        feasible &= (mu[:, 0] >= lo - 1e-9) & (mu[:, 1] <= hi + 1e-9)
    if box is not None:
        slack = 1e-9 * scale
        feasible &= np.all((coords[..., :2] >= box[0] - slack) & (coords[..., :2] <= box[1] + slack), axis=(1, 2))
    errors = np.where(feasible, dist.mean(-1), np.inf)
    res = _lm_fit(None, jax.device_put(coords), found.losses, found.grads, m.gtol)
    if not np.any(np.isfinite(errors)):
        raise InfeasibleError(
            f"{who}: none of the {m.starts} starts of {lk.name!r} assembles through the targets on one branch "
            "with every constraint met",
            closest=None,
            violations=("assembles through the targets (closure core)",)
            + (("transmission",) if c.transmission is not None else ())
            + (("bounds",) if box is not None else ()),
        )
    b = int(np.argmin(errors))
    design = eqx.tree_at(lambda d: d.coords, lk, jax.device_put(coords[b].astype(np.dtype(lk.coords.dtype))))
    return Synthesis(
        design=design,
        inputs=jax.device_put(found.inputs[b, :n]),
        points=jax.device_put(pts[b]),
        error=float(errors[b]),
        relative_error=float(errors[b]) / scale,
        history=row(res.history, b),
        errors=jax.device_put(errors),
        valid=jax.device_put(feasible),
        success_rate=float(np.mean(errors / scale <= m.tol)),
        fit=eqx.tree_at(lambda r: r.model, res, design, is_leaf=lambda x: x is None),
        objective=float(np.sum(dist[b] ** 2)),
        constraints={"transmission": (float(mu[b, 0]), float(mu[b, 1])), "full_rotation": bool(c.full_rotation)},
    )


_simulate_batch = filter_jit(
    lambda lk, u: jax.vmap(
        lambda c: lks.sweep_functional(eqx.tree_at(lambda m: m.coords, lk, c), u, branch=True, condition=False)
    )(lk.coords)
)


def save_design(result: Synthesis, path) -> None:
    """Write a synthesised design as a linkage description (JSON, loadable by
    `diffmech.linkage.load`), assembled at its first target.

    **Arguments:** `result`: a `Synthesis`; `path`: the JSON file to write.
    """
    if not isinstance(result, Synthesis):
        raise ValueError(f"synthesis.save_design: `result` must be a Synthesis; got {type(result).__name__}")
    if not isinstance(path, (str, os.PathLike)) or os.path.isdir(path):
        raise ValueError(f"synthesis.save_design: `path` must be a file name; got {path!r}")
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise ValueError(f"synthesis.save_design: the folder of `path` does not exist: {os.path.dirname(path)!r}")
    d = result.design
    spec = d.to_linkage_dict(float(result.inputs[0])) if isinstance(d, PlacedFourBar) else d.to_dict()
    with open(path, "w") as f:
        json.dump(spec, f, indent=1)
