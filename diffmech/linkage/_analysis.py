"""Sensitivity and tolerance analysis along a motion: the exact Jacobian of chosen
outputs (joint and tracer paths) with respect to every dimension of a design, the
first-order covariance of those outputs under independent dimension tolerances, and a
Monte Carlo of the same, compared.

The dimensions of a linkage are the coordinates of its description (`lk.coords`:
every joint's, axis point's and tracer's, in the columns its kind uses: x, y for a
planar point, a, b, c for a planar line, x, y, z otherwise), those of a four-bar its
lengths (and a coupler point's frame coordinates). A gauge direction (a line normal's
length, a spherical vector's) has no effect, so a zero sensitivity. Each output is a
function of the design through the whole closure (the initial configuration, input 0,
is the design's own: its inputs are measured from there), differentiated exactly by
the implicit function theorem at every solved input (forward mode: one tangent per
dimension).

The Monte Carlo draws the dimensions from independent normal distributions of the
given standard deviations, in antithetic pairs (`d` and `−d`: the first-order part of
the mean's error cancels, so its shift from the nominal is the second-order term, not
sampling noise), runs every sample through the same compiled closure (`vmap`, in
chunks of samples; the chunks' two halves side by side, one thread each), and
accumulates per input the mean shift and the covariance of the outputs over the
samples that assemble there (`valid`). Nothing per sample is kept: 10⁵ samples of a
180-step motion need the memory of two chunks.
"""

from __future__ import annotations

import concurrent.futures
import functools
import math
import os
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Float, Int

from .. import _cache, _closure
from .._validate import UnknownNameError, as_floats, check_count, is_traced
from .._xla import filter_jit, jit
from . import _simulate, _structure
from ._joints import KINDS
from ._model import Linkage, assemble_coords, carry_tracers, prepare, rigidity_rows
from ._simulate import Motion, check_motion, path_rows, sweep_functional, widths

# samples per chunk of the Monte Carlo (antithetic pairs: half of them drawn). A
# linkage's sweeps run best 64 at a time on the CPU, a four-bar's in the hundreds
# (`vmap_chunked`; docs/benchmarks.md, "Measurements behind the code")
_CHUNK = {"fourbar": 512, "linkage": 64}

# the Monte Carlo's chunks are split into this many equal parts, each run by the same
# compiled program from its own thread, side by side: one program runs a batch of
# sweeps on one core (XLA:CPU parallelises only large operations), and its halves from
# two threads take both of a 2-core machine's (docs/benchmarks.md, "Measurements behind the code")
_PARTS = 2


class Sensitivity(eqx.Module):
    """The exact sensitivity of a design's outputs along a motion.

    - `inputs` `(N,)` (or `(N, k)`): the inputs, as given;
    - `values` `(N, M)`: the outputs' coordinates, every output's columns side by side;
    - `jacobian` `(N, M, D)`: their derivatives with respect to every dimension (NaN
      where the nominal design does not assemble: `converged` False);
    - `converged` `(N,)`;
    - `outputs`, `widths` (static): the outputs' names and numbers of columns;
      `dimensions` (static): each dimension's name (`"J3.x"`, `"l2"`).

    `s["J8"]` is an output's `(N, w)` path, `s.d("J8")` its `(N, w, D)` derivatives,
    `s.coefficients("J8")` `(D,)` the mean over the motion of the output point's
    displacement per unit change of each dimension (pylinkage's sensitivity
    coefficient, exact), and `s.ranking("J8")` the dimensions by that coefficient.
    """

    inputs: Array
    values: Float[Array, "N M"]
    jacobian: Float[Array, "N M D"]
    converged: Array
    outputs: tuple[str, ...] = eqx.field(static=True)
    widths: tuple[int, ...] = eqx.field(static=True)
    dimensions: tuple[str, ...] = eqx.field(static=True)

    def _columns(self, name: str) -> slice:
        return _columns(self.outputs, self.widths, name)

    def __getitem__(self, name: str) -> Array:
        return self.values[:, self._columns(name)]

    def d(self, name: str) -> Array:
        """An output's derivatives `(N, w, D)` with respect to every dimension."""
        return self.jacobian[:, self._columns(name)]

    def coefficients(self, name: str) -> Array:
        """`(D,)`: for each dimension, the output point's displacement per unit change
        of it (the Euclidean norm of its derivative), averaged over the converged
        inputs."""
        norms = jnp.sqrt(jnp.sum(self.d(name) ** 2, axis=1))
        ok = self.converged[:, None]
        return jnp.sum(jnp.where(ok, norms, 0.0), axis=0) / jnp.maximum(jnp.sum(ok), 1).astype(norms.dtype)

    def ranking(self, name: str) -> list[tuple[str, float]]:
        """The dimensions, most influential first, with their `coefficients`."""
        c = np.asarray(self.coefficients(name))
        return [(self.dimensions[i], float(c[i])) for i in np.argsort(-c, kind="stable")]


class Tolerance(eqx.Module):
    """The outputs' spread along a motion under independent dimension tolerances, to
    first order and by Monte Carlo.

    - `inputs`, `nominal` `(N, M)`, `jacobian` `(N, M, D)`, `converged` `(N,)`: as
      `Sensitivity` (the nominal design);
    - `sigma` `(D,)`: each dimension's standard deviation;
    - `linear` `(N, M, M)`: the first-order covariance `J Σ Jᵀ`;
    - `mean_shift` `(N, M)`: the Monte Carlo mean less the nominal (zero to first
      order; its second-order term is `½ Σ_k σ_k² ∂²p/∂d_k²`);
    - `covariance` `(N, M, M)`: the Monte Carlo covariance;
    - `valid` `(N,)`: the samples that assemble at each input (the statistics are over
      those); `samples` (static): how many were drawn;
    - `outputs`, `widths`, `dimensions` (static): as `Sensitivity`.

    `t.std(name)` / `t.std(name, "monte_carlo")`: an output's `(N, w)` standard
    deviations per coordinate; `t.agreement(name)`: the largest relative difference of
    the two covariances over the motion.
    """

    inputs: Array
    nominal: Float[Array, "N M"]
    jacobian: Float[Array, "N M D"]
    converged: Array
    sigma: Float[Array, " D"]
    linear: Float[Array, "N M M"]
    mean_shift: Float[Array, "N M"]
    covariance: Float[Array, "N M M"]
    valid: Int[Array, " N"]
    samples: int = eqx.field(static=True)
    outputs: tuple[str, ...] = eqx.field(static=True)
    widths: tuple[int, ...] = eqx.field(static=True)
    dimensions: tuple[str, ...] = eqx.field(static=True)

    def std(self, name: str, kind: str = "linear") -> Array:
        """An output's standard deviation per coordinate `(N, w)`: `"linear"` (first
        order) or `"monte_carlo"`."""
        if kind not in ("linear", "monte_carlo"):
            raise ValueError(f"Tolerance.std: `kind` must be 'linear' or 'monte_carlo'; got {kind!r}")
        cols = _columns(self.outputs, self.widths, name)
        cov = self.linear if kind == "linear" else self.covariance
        return jnp.sqrt(jnp.diagonal(cov, axis1=1, axis2=2)[:, cols])

    def agreement(self, name: str) -> float:
        """How far the Monte Carlo covariance of an output is from the first order:
        the largest over the converged inputs of `‖C_mc − C_lin‖ / ‖C_lin‖` (Frobenius
        norms of the output's `w × w` blocks; where `‖C_lin‖` is under 1e-3 of its
        largest over the motion, relative to that floor: a linkage's output at input 0
        is where its description puts it, so it varies only with its own
        coordinates). Sampling alone leaves about `2 / √samples` at each input (an
        antithetic pair is one independent draw for the covariance); more is the
        second-order term."""
        cols = _columns(self.outputs, self.widths, name)
        lin = np.asarray(self.linear)[:, cols, cols]
        mc = np.asarray(self.covariance)[:, cols, cols]
        ok = np.asarray(self.converged) & (np.asarray(self.valid) > 1)
        size = np.linalg.norm(lin, axis=(1, 2))
        if not ok.any() or not np.any(size[ok] > 0):
            return math.nan
        floor = 1e-3 * np.max(size[ok])
        rel = np.linalg.norm(mc - lin, axis=(1, 2)) / np.maximum(size, floor)
        return float(np.max(rel[ok]))


def _columns(outputs, ws, name) -> slice:
    if name not in outputs:
        raise UnknownNameError(f"no output {name!r}; outputs are {list(outputs)}")
    k = outputs.index(name)
    start = sum(ws[:k])
    return slice(start, start + ws[k])


# --------------------------------------------------------------------------- the problems


class _Problem(eqx.Module):
    """A design's outputs as a function of a perturbation `d` `(D,)` of its dimensions:
    `evaluate(d) -> (values (N, M), converged (N,))`."""

    design: Any
    inputs: Array
    outputs: tuple[str, ...] = eqx.field(static=True)
    widths: tuple[int, ...] = eqx.field(static=True)
    dimensions: tuple[str, ...] = eqx.field(static=True)
    kind: str = eqx.field(static=True)
    extra: Any = None  # the four-bar's coupler point, its crank-branch sign

    def evaluate(self, d):
        if self.kind == "linkage":
            return _linkage_values(self, d)
        return _fourbar_values(self, d)


def _linkage_dimensions(lk: Linkage):
    ws = widths(lk)
    rows, cols, labels = [], [], []
    for j, (name, t) in enumerate(zip(lk.names, lk.types)):
        letters = "xyz" if KINDS[t].is_point(lk.geometry) else "abc"
        for c in range(ws[j]):
            rows.append(j)
            cols.append(c)
            labels.append(f"{name}.{letters[c]}")
    return np.array(rows), np.array(cols), tuple(labels)


def _perturbed(prob: _Problem, d) -> Linkage:
    lk = prob.design
    rows, cols, _ = _linkage_dimensions(lk)
    # each coordinate's dimension (or a zero): a gather with static indices, not a
    # scatter (which XLA:CPU runs element by element over a batch)
    pick = np.full(lk.coords.shape, len(rows))
    pick[rows, cols] = np.arange(len(rows))
    dz = jnp.concatenate([d.astype(lk.coords.dtype), jnp.zeros((1,), lk.coords.dtype)])
    return eqx.tree_at(lambda k: k.coords, lk, lk.coords + dz[pick])


def _output_rows(prob: _Problem, coords):
    """The outputs' columns side by side from every joint's coordinates `(N, J, 3)`."""
    lk = prob.design
    ws = widths(lk)
    js = [lk.names.index(n) for n in prob.outputs]
    return jnp.concatenate([coords[:, j, : ws[j]] for j in js], axis=1)


def _linkage_values(prob: _Problem, d):
    m = sweep_functional(_perturbed(prob, d), prob.inputs, condition=False)
    return _output_rows(prob, m.coords), m.converged


def _closed_form_only(lk: Linkage) -> bool:
    """Whether the sweep's first pass on `lk` is the dyads' closed form certified as it
    is (no Newton step), and nothing after it but the branch check: then a sample that
    pass certifies everywhere is solved by it alone (`_closed_form_values`)."""
    pred = _structure.predictor(lk)
    return (
        isinstance(pred, _closure.AbstractClosedForm)
        and _simulate.certify_steps(pred) == 0
        and not lk.over_constrained
        and callable(_structure.branch(lk))
    )


def _closed_form_values(prob: _Problem, d):
    """One sample's outputs from the sweep's first pass alone: the dyads' closed form at
    the initial configuration and every input, each certified exactly as the sweep
    certifies it (assemblable, finite, its residual within the exactness test) and on
    the initial assembly (the branch invariant's sign); and whether every input was.
    Where one was not, the sweep goes on with its fallback: such a sample is run
    through the whole sweep instead (`_monte_carlo_sums`). Where every input was, the
    sweep returns these very values."""
    lk = _perturbed(prob, d)
    prep = prepare(lk)
    pred, branch = _structure.predictor(lk), _structure.branch_of_coords(lk)
    assert isinstance(pred, _closure.AbstractClosedForm) and branch is not None  # `_closed_form_only`
    inputs = jnp.concatenate([jnp.zeros((1,), prob.inputs.dtype), prob.inputs])  # from the initial configuration
    x, feasible = jax.vmap(pred.solution, in_axes=(0, None))(inputs, prep)
    # the joint coordinates assembled once, for the residual, the branch and the
    # outputs (the sweep's functions of the state assemble them each; measured on the
    # benchmarks page, "Measurements behind the code")
    X = jax.vmap(assemble_coords, in_axes=(0, 0, None))(x, inputs, prep)
    newton = _closure.Newton(0)

    def rigidity(_, u, X_):  # the residual `prepared_residual` is here (not over-constrained: `_closed_form_only`)
        return rigidity_rows(X_, u, prep)

    _, res, last, exact = jax.vmap(lambda g, u, X_: newton.correct(rigidity, g, u, X_))(x, inputs, X)
    atol = _closure.tolerance(1e-10, x.dtype)  # the sweep's default
    certified = feasible & newton.certified(x, res, last, exact, atol)
    b = jnp.sign(jax.vmap(branch, in_axes=(0, None))(X, prep.C0))
    good = jnp.all(certified & (b == b[0]))
    coords = jax.vmap(lambda X_: carry_tracers(prep, X_))(X[1:])
    return _output_rows(prob, coords), good


def _fourbar_values(prob: _Problem, d):
    from ..fourbar import _kinematics as fk

    fb = prob.design
    point, sign = prob.extra
    f = eqx.tree_at(lambda b: b.lengths, fb, fb.lengths + d[:4].astype(fb.lengths.dtype))
    s = fk.sweep_functional(f, prob.inputs, condition=False, sign=sign)
    joints = fk.joint_positions(f, s.q)
    cols = []
    for name in prob.outputs:
        if name == "P":
            cols.append(fk.coupler_point(f, s.q, point + d[4:6].astype(point.dtype)))
        else:
            cols.append(joints[name])
    return jnp.concatenate(cols, axis=1), s.converged


def _problem(owner: str, design, motion, outputs, point) -> tuple[_Problem, Any]:
    """The problem and the rows to put the results back in the order given (None where
    the inputs already are a path from the initial configuration)."""
    from ..fourbar._model import FourBar

    if isinstance(design, FourBar):
        return _fourbar_problem(owner, design, motion, outputs, point)
    if not isinstance(design, Linkage):
        raise ValueError(f"{owner}: `design` must be a Linkage or a FourBar; got {type(design).__name__}")
    if point is not None:
        raise ValueError(f"{owner}: `point` is the four-bar's coupler point; a linkage's tracers are its outputs")
    lk = design
    inputs = motion.inputs if isinstance(motion, Motion) else motion
    inputs = as_floats(owner, "motion", inputs, np.dtype(lk.coords.dtype))
    k = lk.n_inputs
    shape_ok = inputs.ndim == (1 if k == 1 else 2) and inputs.shape[1:] in ((), (k,))
    if not shape_ok or inputs.size < 1 or not np.all(np.isfinite(inputs)):
        want = "(N,)" if k == 1 else f"(N, {k})"
        raise ValueError(f"{owner}: `motion` must be a Motion or finite inputs of shape {want}; got {inputs.shape}")
    take = None
    if k == 1:
        rows = path_rows(inputs)
        if rows is not None:
            inputs, take, _ = rows
    tracers = tuple(n for n, t in zip(lk.names, lk.types) if t == "tracer")
    names = _output_names(owner, outputs, lk.names, tracers or lk.names)
    ws = widths(lk)
    dims = _linkage_dimensions(lk)[2]
    prob = _Problem(
        design=lk,
        inputs=jnp.asarray(inputs),
        outputs=names,
        widths=tuple(ws[lk.names.index(n)] for n in names),
        dimensions=dims,
        kind="linkage",
    )
    return prob, take


def _fourbar_problem(owner, fb, motion, outputs, point):
    from ..fourbar import _kinematics as fk

    if fb.batch_shape:
        raise ValueError(f"{owner}: one four-bar design (no batch axes); got batch shape {fb.batch_shape}")
    theta = as_floats(owner, "motion", getattr(motion, "theta_A", motion), np.dtype(fb.lengths.dtype))
    if theta.ndim != 1 or theta.size < 1 or not np.all(np.isfinite(theta)):
        raise ValueError(f"{owner}: `motion` must be a fourbar.Sweep or finite crank angles (N,); got {theta.shape}")
    dims = ("l1", "l2", "l3", "l4")
    available = ("B", "C")
    if point is not None:
        point = as_floats(owner, "point", point, np.dtype(fb.lengths.dtype))
        if point.shape != (2,) or not np.all(np.isfinite(point)):
            raise ValueError(f"{owner}: `point` must be the coupler point's finite (p_x, p_y); got {point.shape}")
        dims += ("px", "py")
        available += ("P",)
    names = _output_names(owner, outputs, available, ("P",) if point is not None else ("C",))
    sign = fk.branch_sign(fb)
    prob = _Problem(
        design=fb,
        inputs=jnp.asarray(theta),
        outputs=names,
        widths=(2,) * len(names),
        dimensions=dims,
        kind="fourbar",
        extra=(jnp.zeros(2, fb.lengths.dtype) if point is None else jnp.asarray(point), sign),
    )
    return prob, None


def _output_names(owner, outputs, available, default) -> tuple[str, ...]:
    if outputs is None:
        return tuple(default)
    if isinstance(outputs, str):
        outputs = (outputs,)
    names = tuple(outputs)
    if not names:
        raise ValueError(f"{owner}: `outputs` is empty; name at least one of {list(available)}")
    for n in names:
        if n not in available:
            raise UnknownNameError(f"{owner}: no output {n!r}; outputs are {list(available)}")
    return names


# --------------------------------------------------------------------------- programs


def _sensitivity_values(prob: _Problem):
    D = len(prob.dimensions)
    zero = jnp.zeros((D,), prob.inputs.dtype)
    # the values and their derivatives from one linearisation (a separate evaluation of
    # the values was a copy of the whole sweep in the program)
    values, derivative, ok = jax.linearize(prob.evaluate, zero, has_aux=True)
    J = jax.vmap(derivative, out_axes=-1)(jnp.eye(D, dtype=zero.dtype))
    return values, jnp.where(ok[:, None, None], J, jnp.nan), ok


def _monte_carlo_program(prob: _Problem, nominal, sigma, key, start, stop):
    """Sums over the chunks `start ≤ i < stop` of `_CHUNK` samples (antithetic pairs;
    chunk `i` draws from `fold_in(key, i)`): per input the number of assembling
    samples, the sum of their output shifts from the `nominal` values
    (`_sensitivity_program`'s: a sweep of its own here was a third of the program)
    and of the shifts' outer products. `start`, `stop`: arrays (traced: one program
    for every range, compiled by a call with an empty one)."""
    half = _CHUNK[prob.kind] // 2

    def closed_form_first(dd):
        # the sweep's first pass alone, and the whole sweep for the samples it leaves
        # (gathered, 8 at a time): the same values, without the sweep's bookkeeping
        # (faster: the benchmarks page, "Measurements behind the code")
        values, good = _closed_form_values(prob, dd)
        rows = (values, jnp.broadcast_to(good, values.shape[:1]))
        return _closure.when_needed(~good, dict(d=dd, rows=rows), lambda o: prob.evaluate(o["d"]), 8)

    fast = prob.kind == "linkage" and _closed_form_only(prob.design)
    evaluate = closed_form_first if fast else prob.evaluate

    def one_chunk(i, carry):
        count, total, outer = carry
        z = jax.random.normal(jax.random.fold_in(key, i), (half, sigma.shape[0]), sigma.dtype)
        d = jnp.concatenate([z, -z]) * sigma
        values, ok = jax.vmap(evaluate)(d)
        shift = jnp.where(ok[..., None], values - nominal, 0.0)
        count = count + jnp.sum(ok, axis=0, dtype=count.dtype)
        total = total + jnp.sum(shift, axis=0)
        outer = outer + jnp.einsum("snm,snk->nmk", shift, shift)
        return count, total, outer

    N, M = nominal.shape
    init = (jnp.zeros((N,), jnp.int32), jnp.zeros((N, M), nominal.dtype), jnp.zeros((N, M, M), nominal.dtype))
    return jax.lax.fori_loop(start, stop, one_chunk, init)


_sensitivity_jit, _monte_carlo_jit = filter_jit(_sensitivity_values), filter_jit(_monte_carlo_program)


def _sensitivity_program(prob: _Problem):
    """The outputs' values and their derivatives (`_sensitivity_values`), one program
    (kept compiled on disk with `diffmech.cache()`)."""
    return _cache.program("sensitivity", _sensitivity_values, _sensitivity_jit, (prob,), ())


def _monte_carlo_sums(prob: _Problem, nominal, sigma, key, start, stop):
    """`_monte_carlo_program`, one program (kept compiled on disk with `diffmech.cache()`)."""
    args = (prob, nominal, sigma, key, start, stop)
    return _cache.program("monte_carlo", _monte_carlo_program, _monte_carlo_jit, args, ())


@jit
def _monte_carlo_statistics(count, total, outer):
    """The mean shift and the (unbiased) covariance from the sums."""
    n = jnp.maximum(count, 1).astype(total.dtype)[:, None]
    mean = total / n
    cov = outer / n[..., None] - mean[:, :, None] * mean[:, None, :]
    cov = cov * (n / jnp.maximum(n - 1, 1))[..., None]
    return mean, cov


def _monte_carlo(prob: _Problem, nominal, sigma, key, chunks: int):
    """The Monte Carlo's `(mean shift, covariance, count)` over `chunks` chunks (a
    multiple of `_PARTS`): the chunks in `_PARTS` equal parts, one compiled program
    run on each from its own thread, side by side, and their sums added in a fixed
    order (the same result whatever the number of cores)."""
    per = chunks // _PARTS
    # compiled first, by a call over no chunk: threads that each met an uncompiled
    # program would compile it twice over, side by side
    zero = jnp.zeros((), jnp.int32)
    jax.block_until_ready(_monte_carlo_sums(prob, nominal, sigma, key, zero, zero))

    def part(p):
        start, stop = jnp.asarray(p * per, jnp.int32), jnp.asarray((p + 1) * per, jnp.int32)
        return jax.block_until_ready(_monte_carlo_sums(prob, nominal, sigma, key, start, stop))

    with concurrent.futures.ThreadPoolExecutor(max_workers=min(_PARTS, os.cpu_count() or 1)) as pool:
        sums = list(pool.map(part, range(_PARTS)))
    count, total, outer = (functools.reduce(jnp.add, parts) for parts in zip(*sums))
    mean, cov = _monte_carlo_statistics(count, total, outer)
    return mean, cov, count


def _put_back(take, *arrays):
    return arrays if take is None else tuple(a[take] for a in arrays)


# --------------------------------------------------------------------------- public API


def sensitivity(design, motion, outputs=None, *, point=None) -> Sensitivity:
    """The exact Jacobian of a design's outputs along a motion with respect to every
    dimension of its description.

    **Arguments:**

    - `design`: a `Linkage` (dimensions: its description's coordinates, see the
      module) or a `FourBar` (its lengths l1–l4, and with `point` the coupler point's
      p_x, p_y);
    - `motion`: a `Motion` from `linkage.sweep` (its inputs), or the inputs as
      `sweep` takes them (a `fourbar.Sweep` or crank angles for a four-bar);
    - `outputs`: joint or tracer names (default: the linkage's tracers, else every
      joint; a four-bar's `"B"`, `"C"` and, with `point`, `"P"`: default `"P"`, else
      `"C"`);
    - `point`: a four-bar's coupler point `(p_x, p_y)` in the coupler frame.

    **Returns:** a `Sensitivity`. Eager only (it validates its arguments; inside a
    transformation use `jax.jacfwd` of `linkage.sweep_functional`).
    """
    owner = "linkage.sensitivity"
    if is_traced(motion, design):
        raise ValueError(f"{owner}: eager only; inside a transformation differentiate sweep_functional")
    prob, take = _problem(owner, design, motion, outputs, point)
    values, J, ok = _sensitivity_program(prob)
    values, J, ok, inputs = _put_back(take, values, J, ok, prob.inputs)
    return Sensitivity(
        inputs=inputs,
        values=values,
        jacobian=J,
        converged=ok,
        outputs=prob.outputs,
        widths=prob.widths,
        dimensions=prob.dimensions,
    )


def tolerance(design, motion, sigma, *, samples: int = 100_000, outputs=None, point=None, seed: int = 0) -> Tolerance:
    """The outputs' covariance along a motion under independent normal tolerances of
    the dimensions: to first order (`J Σ Jᵀ`, from `sensitivity`) and by a Monte Carlo
    of `samples` designs run through the closure, compared.

    **Arguments:**

    - `design`, `motion`, `outputs`, `point`: as `sensitivity`;
    - `sigma`: the dimensions' standard deviations: one number for all, a dict of
      them by joint name (a linkage: every coordinate of that joint; unnamed joints
      exact) or by dimension name (`"J3.x"`, `"l2"`), or an array `(D,)` in the order
      of `Sensitivity.dimensions`; finite and ≥ 0;
    - `samples`: Monte Carlo samples (rounded up to whole pairs of chunks: to a
      multiple of 128 for a linkage, 1024 for a four-bar; 0: first order only; the
      two halves run side by side, one thread each); `seed`: its random seed.

    **Returns:** a `Tolerance`.
    """
    owner = "linkage.tolerance"
    check_count(owner, "samples", samples, 0)
    check_count(owner, "seed", seed, 0)
    prob, take = _problem(owner, design, motion, outputs, point)
    sig = _sigma(owner, sigma, prob, design)
    values, J, ok = _sensitivity_program(prob)
    linear = jnp.einsum("nmd,d,nkd->nmk", J, sig**2, J)
    N, M = values.shape
    if samples:
        size = _CHUNK[prob.kind]
        chunks = _PARTS * -(-samples // (_PARTS * size))
        mean, cov, count = _monte_carlo(prob, values, sig, jax.random.key(seed), chunks)
        drawn = chunks * size
    else:
        mean, cov = jnp.full((N, M), jnp.nan), jnp.full((N, M, M), jnp.nan)
        count, drawn = jnp.zeros((N,), jnp.int32), 0
    values, J, ok, linear, mean, cov, count, inputs = _put_back(
        take, values, J, ok, linear, mean, cov, count, prob.inputs
    )
    return Tolerance(
        inputs=inputs,
        nominal=values,
        jacobian=J,
        converged=ok,
        sigma=sig,
        linear=linear,
        mean_shift=mean,
        covariance=cov,
        valid=count,
        samples=drawn,
        outputs=prob.outputs,
        widths=prob.widths,
        dimensions=prob.dimensions,
    )


def _sigma(owner, sigma, prob: _Problem, design) -> Array:
    dims = prob.dimensions
    D = len(dims)
    if isinstance(sigma, dict):
        out = np.zeros(D)
        joints = {}
        if isinstance(design, Linkage):
            for i, label in enumerate(dims):
                joints.setdefault(label.rsplit(".", 1)[0], []).append(i)
        for name, value in sigma.items():
            idx = [dims.index(name)] if name in dims else joints.get(name)
            if idx is None:
                raise UnknownNameError(
                    f"{owner}: `sigma` names {name!r}, which is neither a joint nor a dimension; dimensions are "
                    f"{list(dims)}"
                )
            v = as_floats(owner, f"sigma[{name!r}]", value)
            if v.shape != () or not np.isfinite(v) or v < 0:
                raise ValueError(f"{owner}: `sigma[{name!r}]` must be one finite number ≥ 0; got {value!r}")
            out[idx] = v
    else:
        out = as_floats(owner, "sigma", sigma)
        if out.shape == ():
            out = np.full(D, float(out))
        if out.shape != (D,):
            raise ValueError(f"{owner}: `sigma` must be a number, a dict by name or an array ({D},); got {out.shape}")
        bad = ~np.isfinite(out) | (out < 0)
        if bad.any():
            i = int(np.argmax(bad))
            raise ValueError(f"{owner}: `sigma` must be finite and ≥ 0; {dims[i]!r} has {out[i]!r}")
    return jnp.asarray(out, dtype=prob.inputs.dtype)


# --------------------------------------------------------------------------- transmission


class Transmission(eqx.Module):
    """Each dyad's transmission angle along a motion.

    - `inputs` `(N,)`, `converged` `(N,)`: as the motion's;
    - `angle` `(N, G)`: at each dyad's inner joint, the angle between the directions
      along which its two outer elements hold it (radians, in [0, π]; NaN where the
      motion did not converge): for an RRR dyad the angle between its two links (the
      four-bar's transmission angle between coupler and rocker), for an RRP dyad
      between the link and the slider line's normal (90° when the link pushes along
      the line), on the sphere between the two links' great circles. 90° transmits
      best; 0 or 180° is the dyad's dead centre, where it stops assembling;
    - `groups` (static): each dyad's label (`"2. RRR at J4"`), in the structure's
      solving order. Dyads whose inner element is a line (RPR, PRP, RPP), a spherical
      RRP and groups larger than a dyad have no angle of this kind and are not listed.

    `t.pressure()`: the pressure angles. `t.minimum()`: per dyad, the worst angle
    over the converged inputs (the smaller of `μ` and `π − μ`, so 90° is ideal) and
    the input where it occurs.
    """

    inputs: Array
    angle: Float[Array, "N G"]
    converged: Array
    groups: tuple[str, ...] = eqx.field(static=True)

    def pressure(self) -> Array:
        """Each dyad's pressure angle `(N, G)` at its inner joint: the angle between
        the force one link transmits (along it) and the joint's velocity as a point of
        the other (normal to it), `|π/2 − μ|` (radians in [0, π/2]; 0 is ideal, π/2 a
        dead centre). For an output rocker, the pressure angle at its moving pivot."""
        return jnp.abs(jnp.pi / 2 - self.angle)

    def minimum(self) -> tuple[np.ndarray, np.ndarray]:
        """`(worst, at)`: per dyad the smallest `min(μ, π − μ)` over the converged
        inputs (radians) and the input value where it occurs."""
        mu = np.asarray(self.angle)
        q = np.where(np.asarray(self.converged)[:, None], np.minimum(mu, np.pi - mu), np.inf)
        k = np.argmin(q, axis=0)
        return q[k, np.arange(q.shape[1])], np.asarray(self.inputs)[k]


def _angle(u, v):
    """The angle between two vectors, from atan2 (accurate near 0 and π)."""
    c = jnp.sum(u * v, axis=-1)
    s = (
        jnp.linalg.norm(jnp.cross(u, v), axis=-1)
        if u.shape[-1] == 3
        else jnp.abs(u[..., 0] * v[..., 1] - u[..., 1] * v[..., 0])
    )
    return jnp.arctan2(s, c)


def transmission(lk: Linkage, motion) -> Transmission:
    """The transmission angle of every dyad of a planar or spherical linkage along a
    motion (see `Transmission`), its minimum and where it occurs.

    **Arguments:** `lk`: the linkage; `motion`: a `Motion` of it (`linkage.sweep`),
    or inputs, simulated first.

    **Returns:** a `Transmission`.
    """
    from ._simulate import sweep
    from ._structure import analyse

    owner = "linkage.transmission"
    if not isinstance(lk, Linkage):
        raise ValueError(f"{owner}: `lk` must be a Linkage; got {type(lk).__name__}")
    if lk.geometry == "spatial":
        raise ValueError(
            f"{owner}: {lk.name!r} is spatial; dyads (and their transmission angles) are planar or spherical"
        )
    if not isinstance(motion, Motion):
        motion = sweep(lk, inputs=motion, condition=False)
    else:
        check_motion(owner, lk, motion)
    kinds = ("RRR",) if lk.geometry == "spherical" else ("RRR", "RRP")
    steps = [(i, s) for i, s in enumerate(analyse(lk.topology, lk.names, lk.link_names).steps) if s[0] in kinds]
    X = motion.coords
    cols, labels = [], []
    for i, (kind, _, _, a, _, c, b, _) in steps:
        if lk.geometry == "spherical":
            pc = X[:, c]
            ta = X[:, a] - jnp.sum(X[:, a] * pc, axis=-1, keepdims=True) * pc
            tb = X[:, b] - jnp.sum(X[:, b] * pc, axis=-1, keepdims=True) * pc
            mu = _angle(ta, tb)
        elif kind == "RRR":
            mu = _angle(X[:, a, :2] - X[:, c, :2], X[:, b, :2] - X[:, c, :2])
        else:  # RRP: the link against the line's normal (b is the line)
            mu = _angle(X[:, a, :2] - X[:, c, :2], X[:, b, :2])
        cols.append(jnp.where(motion.converged, mu, jnp.nan))
        labels.append(f"{i + 1}. {kind} at {lk.names[c]}")
    angle = jnp.stack(cols, axis=1) if cols else jnp.zeros((X.shape[0], 0), X.dtype)
    return Transmission(inputs=motion.inputs, angle=angle, converged=motion.converged, groups=tuple(labels))
