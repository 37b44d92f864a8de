"""Simulation of a `Linkage` on the closure core: one configuration, a whole range of
the input as one jitted scan, mobility from the Jacobian's rank, and exact rates by
the implicit function theorem."""

import dataclasses
import math
import warnings
from typing import ClassVar, Literal

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jaxtyping import Array, Bool, Float

from .. import _cache, _closure
from .._result import RESULTS, AbstractResult, as_results, code, finish
from .._validate import (
    Recent,
    UnknownNameError,
    as_floats,
    check_count,
    check_finite,
    check_scalar,
    check_shape,
    is_traced,
    renamed,
)
from .._xla import eager_program, filter_jit, host_array, jit, pad_rows, size_class
from . import _change, _plan, _structure
from ._equations import orthonormal
from ._joints import KINDS
from ._model import (
    Linkage,
    LinkageError,
    full_residual,
    jacobians,
    joint_coords,
    kinematic,
    prepare,
    prepared_residual,
    raise_if_open,
    rank_info,
    residual,
)


def solve(lk: Linkage, u, guess: Float[Array, " n"] | None = None, *, throw: bool = True) -> _closure.Solution:
    """The configuration at input `u` by Newton from `guess` (default: the initial
    configuration). `throw` as `diffmech.closure.root` (with `throw=False`, check
    `.result`). `.value` is the state; `lk.full(value, u)` gives every joint.

    **Arguments:** `lk`: the linkage; `u`: the input (radians for a revolute input,
    length units for a prismatic joint or an actuator, from 0 at the initial
    configuration; one value per input, `(k,)`, for `k` inputs); `guess`: a state `(n,)`.

    **Returns:** a `diffmech.closure.Solution`.
    """
    if not is_traced(u):
        a = as_floats("linkage.solve", "u", u)
        if lk.n_inputs == 1 and (a.shape != () or not np.isfinite(a)):
            raise ValueError(f"linkage.solve: `u` must be one finite input value; got {a.tolist()}")
        if lk.n_inputs > 1 and (a.shape != (lk.n_inputs,) or not np.all(np.isfinite(a))):
            raise ValueError(
                f"linkage.solve: `u` must be {lk.n_inputs} finite input values, one per input; got {a.tolist()}"
            )
    u = jnp.asarray(u, dtype=lk.coords.dtype)
    x0 = lk.x0()
    if guess is not None:
        check_shape("linkage.solve", "guess", guess, x0.shape)
        x0 = jnp.asarray(guess, x0.dtype)
    prep = prepare(lk)
    sol = _closure.root(prepared_residual, jax.lax.stop_gradient(x0), u, prep, throw=False)
    if lk.over_constrained:  # its redundant equations must hold too (`_certified`, one sample)
        one = jnp.asarray(sol.converged)[None], as_results(code(sol.result)[None]), sol.residual[None]
        _, status, res = _certified(lk, prep, sol.value[None], u[None], *one)
        sol = eqx.tree_at(lambda s: (s.result, s.residual), sol, (as_results(code(status)[0]), res[0]))
    return sol.check(throw, f"linkage {lk.name!r}: solve", u)


class Motion(AbstractResult):
    """A simulated range of motion, one row per input value (the contract of every
    result: `diffmech._result.AbstractResult`).

    - `inputs` `(N,)`: the input (radians for a revolute input, length units for a
      prismatic joint or actuator; arc length = radians on the unit sphere), from 0 at
      the initial configuration;
    - `coords` `(N, J, 3)`: every joint and tracer (planar points in the first two
      columns; lines `(a, b, c)` with unit normal; spherical points and plane normals
      as unit vectors). Rows where `converged` is False repeat the last converged
      configuration (finite, so masked losses keep finite gradients): use `path` or
      `masked()` for plotting;
    - `converged` `(N,)`: False from the first failure on, along each side of the
      path from the initial configuration (a motion limit: the curve is open and stops
      there; a change point, unless passed; or a branch switch);
    - `status` (a `diffmech.closure.RESULTS` per row), `result` (the first failure,
      or `successful`), `condition` `(N,)` (the closure Jacobian's 1-norm condition
      number, which grows near a motion limit), `residual` `(N,)`;
    - `names` (static): joint names, `dim` (static): 2 (planar) or 3.

    `motion["J8"]` is a joint's `(N, dim)` path (`(N, 3)` for a line or plane) and
    `motion.as_dict()` all of them by name.

    `widths` (static): each joint's number of coordinates (2 for a planar point, 3
    otherwise).
    """

    inputs: Float[Array, " N"]
    coords: Float[Array, "N J 3"]
    converged: Bool[Array, " N"]
    status: _closure.RESULTS
    condition: Float[Array, " N"]
    residual: Float[Array, " N"]
    names: tuple[str, ...] = eqx.field(static=True)
    widths: tuple[int, ...] = eqx.field(static=True)

    _values: ClassVar[str] = "coords"
    _inputs: ClassVar[str] = "inputs"

    def __getitem__(self, name: str) -> Array:
        return joint_path(self, name)

    def path(self, name: str) -> Array:
        """A joint's coordinates with unconverged rows set to NaN (for plotting)."""
        return jnp.where(self.converged[..., None], self[name], jnp.nan)

    def as_dict(self) -> dict:
        return {n: self[n] for n in self.names}


def joint_path(result, name: str) -> Array:
    """A joint's coordinates `(…, dim)` (3 for a line or plane) from a result with
    `coords`, `names` and `widths` (`Motion`, `linkage.Simulation`)."""
    if name not in result.names:
        raise UnknownNameError(f"no joint {name!r}; joints are {list(result.names)}")
    j = result.names.index(name)
    return result.coords[..., j, : result.widths[j]]


def link_pose(lk: Linkage, result, link: str) -> tuple[Array, Array]:
    """A link's pose along a result with `coords` (`Motion`, `linkage.Simulation`): the
    rotation `R` and translation `p` with `X = R X₀ + p` for every point of the link
    (its joints and tracers; `X₀` the initial coordinates), from the link's frame
    (two points in the plane, three in space, two directions on the sphere) — a
    platform's or a wheel carrier's pose. An S–S rod has no pose (its spin is idle).

    **Arguments:** `lk`: the linkage; `result`: its motion; `link`: the link's name.

    **Returns:** `(R, p)`: `(…, d, d)` and `(…, d)`, `d` = 2 in the plane, 3 otherwise
    (`p` = 0 on the sphere).
    """
    if link not in lk.link_names:
        raise UnknownNameError(f"linkage.link_pose: no link {link!r}; links are {list(lk.link_names)}")
    frame = lk.plan.frames[lk.link_names.index(link)]
    if frame is None:
        raise ValueError(f"linkage.link_pose: link {link!r} has no frame (an S–S rod's spin is idle)")
    return _link_pose(lk, host_array(result.coords), frame=tuple(frame))


@eager_program  # one program eagerly (op by op: ~20 small ones to compile)
def _link_pose(lk: Linkage, X, *, frame):
    kind, *el = frame
    d = lk.dim
    X0 = lk.initial()

    def basis(C):  # the frame's orthonormal axes, as columns
        if kind == "pp":
            e = C[..., el[1], :2] - C[..., el[0], :2]
            e = e / jnp.linalg.norm(e, axis=-1, keepdims=True)
            return jnp.stack([e, jnp.stack([-e[..., 1], e[..., 0]], axis=-1)], axis=-1)
        if kind == "pl":  # a point and a line: the line's normal turns with the link
            n = C[..., el[1], :2]
            n = n / jnp.linalg.norm(n, axis=-1, keepdims=True)
            return jnp.stack([jnp.stack([n[..., 1], -n[..., 0]], axis=-1), n], axis=-1)
        a, b = C[..., el[0], :3], C[..., el[1], :3]
        u, v = (a, b) if kind == "ss" else (b - a, C[..., el[2], :3] - a)
        return jnp.stack(orthonormal(u, v), axis=-1)

    R = basis(X) @ jnp.swapaxes(basis(X0), -1, -2)
    if kind == "ss":
        return R, jnp.zeros(R.shape[:-1], R.dtype)
    origin = X[..., el[0], :d]
    return R, origin - jnp.einsum("...ij,j->...i", R, X0[el[0], :d])


def widths(lk):
    return tuple(KINDS[t].width(lk.geometry) for t in lk.types)


def default_inputs(lk: Linkage, steps: int | None = None, step: float | None = None):
    """The seed's range: `steps` inputs `0, step, 2 step, …` (default 180 of 2π/180,
    or the linkage's own `steps`/`step`) of the linkage `lk`, as an `(N,)` array in
    its dtype."""
    _check_range("linkage.default_inputs", steps, step)
    return jnp.asarray(_default_inputs(lk, steps, step))


def _check_range(owner, steps, step):
    if steps is not None:
        check_count(owner, "steps", steps)
    if step is not None:
        check_scalar(owner, "step", step)
        if not is_traced(step) and float(step) == 0:
            raise ValueError(f"{owner}: `step` must be non-zero; got {step!r}")


def _default_inputs_device(lk, steps, step) -> tuple[Array, int]:
    """The default range on the device, padded to its length class (`_LENGTHS`), and
    its own length."""
    key = (lk.steps if steps is None else int(steps), lk.step if step is None else float(step), lk.coords.dtype)
    out = _DEFAULTS.get(key)
    if out is None:
        host = _default_inputs(lk, steps, step)
        if host.size < 1 or not np.all(np.isfinite(host)):
            raise ValueError(f"linkage.sweep: steps and step must give a finite, non-empty range; got {key[:2]}")
        n = host.shape[0]
        out = _DEFAULTS[key] = (jax.device_put(pad_rows(host, size_class(n, _LENGTHS))), n)
        while len(_DEFAULTS) > 32:
            _DEFAULTS.pop(next(iter(_DEFAULTS)))
    return out


# An eager simulation's path is padded to the next of these lengths by repeating its
# last input (steps of zero, solved as any other and dropped from the motion): paths
# of other lengths share one compiled program. (An empty tuple: each length its own.)
_LENGTHS = (8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048)


_DEFAULTS: dict = {}


def _default_inputs(lk, steps, step) -> np.ndarray:
    steps = lk.steps if steps is None else int(steps)
    step = (lk.step if lk.step is not None else 2 * math.pi / 180) if step is None else step
    dtype = np.dtype(lk.coords.dtype)
    return np.arange(steps, dtype=dtype) * np.asarray(step, dtype)


def sweep_functional(
    lk: Linkage,
    inputs: Float[Array, " N"],
    *,
    branch: bool = True,
    condition: bool = True,
    fallback=None,
    throw: bool = False,
) -> Motion:
    """Solve the linkage at every input of `inputs` with the closure core (`diffmech.closure.sweep`:
    continuation through every 6th input, cubic Hermite interpolation, Newton on all
    inputs at once, sequential continuation only from a failure on; where the linkage
    decomposes into dyads (`linkage.structure`), every input predicted at once in
    closed form instead, each certified by its residual). Jittable,
    vmappable over designs (a batch of `coords`), differentiable with respect to the
    initial coordinates (implicit function theorem at every input). The inputs are
    followed as a path, in the order given, from the initial configuration (input 0):
    each solution is the configuration continuation along that path reaches (long
    steps are taken in substeps), or is marked. `sweep` sorts the inputs first;
    here, inside a transformation, give them in the order of motion (out of order they
    are still solved right, more slowly, and a motion limit met on the way masks every
    later input). With `branch`, the sign of the Jacobian's determinant is also
    checked: an input solved on another assembly mode fails (`branch_switch`).
    `fallback`: the core's (`diffmech.closure.Continuation()` by default, or
    `Deferred()`). `throw`: as `sweep`.

    **Arguments:** `lk`: the linkage (or a batch of designs under `vmap`); `inputs`
    `(N,)`: input values in the units of `sweep`'s `step`;
    `condition`: compute the closure Jacobian's condition number per input (NaN
    where False, or where an input did not converge).

    **Returns:** a `Motion`.
    """
    # a list of numbers: an array argument of the program, not static ones
    path = np.asarray(inputs, dtype=np.dtype(lk.coords.dtype)) if isinstance(inputs, list | tuple) else inputs
    motion = _functional_jit(lk, path, branch, condition, fallback)
    return finish(motion, throw, f"linkage {lk.name!r}: sweep")


# One program whether called eagerly (op by op, a sweep compiles hundreds of small
# programs) or under a transformation: inside `jit` it is inlined; under a top-level
# `grad` or `jvp` the transformed program is compiled whole (the notebook's eager
# `jax.grad` of a bump-steer angle: 422 small programs before).
_functional_jit = filter_jit(
    lambda lk, inputs, branch, condition, fallback: _simulate(
        lk, inputs, branch, condition, fallback, probe=False, origin=True
    )[0]
)


def _sweep_options(lk, invariant) -> dict:
    """The core's options for every sweep of `lk`: at most 10 Newton steps per input,
    and the longest input step the continuation takes at once (`max_step`): 15° for an
    angle (a revolute input, or any input on the sphere), else 15 of the linkage's
    default steps (length units). Longer steps between consecutive inputs are taken
    in substeps, so every solution is the one continuation along the inputs reaches
    (the branch invariant alone cannot tell two assembly modes flipped together).
    `invariant`: the branch's (None: not checked)."""
    return dict(branch=_closure.Branch(invariant, None, float(_plan.max_step(lk))), convergence=_CONVERGENCE)


_CONVERGENCE = _closure.Convergence(max_steps=10)


def _simulate(lk, inputs, branch, condition, fallback, probe, origin=False):
    """`sweep_functional`, and with `probe` the residual's max-norm and the closure
    Jacobian at the initial configuration (input 0) from the sweep's own corrector;
    also the core's `SweepSolution` (for `_resume_program`). With `origin`, the path
    starts at input 0 (the initial configuration's) before the first of `inputs`,
    which need not be 0 (that first row is dropped from the motion, not from `sol`)."""
    inputs = jnp.asarray(inputs, dtype=lk.coords.dtype)
    want = (None,) if lk.n_inputs == 1 else (None, lk.n_inputs)
    if inputs.ndim != len(want) or inputs.shape[1:] != want[1:]:  # shapes are static, traced or not
        raise ValueError(
            f"linkage.sweep: {lk.name!r} has {lk.n_inputs} input(s): `inputs` must be of shape "
            + ("(N,)" if lk.n_inputs == 1 else f"(N, {lk.n_inputs})")
            + f"; got {inputs.shape}"
        )
    if origin:
        inputs = jnp.concatenate([jnp.zeros((1,) + inputs.shape[1:], inputs.dtype), inputs])
    prep = prepare(lk)
    x0 = lk.x0()
    predictor = _structure.predictor(lk)  # the dyads' closed form, else the generic one
    sol, probed = _closure.sweep_probed(
        prepared_residual,
        x0,
        inputs,
        prep,
        # the branch invariant: the closure Jacobian's determinant, whose sign changes
        # only through a singular configuration (with the dyads' closed form, their own
        # assembly signs, of which that determinant is a product)
        condition=condition,
        fallback=fallback,
        predictor=predictor,
        corrector=None if predictor is None else _closure.Newton(certify_steps(predictor)),
        probe=(x0, lk.zero_input().astype(inputs.dtype)) if probe else None,
        **_sweep_options(lk, _branch(lk, predictor) if branch else None),
    )
    motion = _motion(lk, prep, sol)
    if origin:
        motion = jax.tree.map(lambda a: a[1:], motion)
    return motion, probed, sol


# Newton steps after the dyads' closed form: none, its guesses are certified as they
# are (exact to round-off: on 500 random designs of each dyad kind, 6% from the
# bundled ones, every assemblable input was within the core's exactness test); an
# input that is not goes to the fallback, which solves it by continuation
_CERTIFY_STEPS = 0


def certify_steps(predictor) -> int:
    """Newton steps after the structure's prediction: none after the dyads' closed form;
    one after a group's search (its root, refined to round-off in the driver's angle,
    can leave the closure a few ulps above the exactness test: the Stephenson-II's
    initial input by 1.2x), which then certifies; one after a translating body's
    trilateration (exact only for exact parallelograms)."""
    searched = isinstance(predictor, (_structure.SearchPredictor, _structure.TranslationClosedForm))
    return 1 if searched else _CERTIFY_STEPS


# the redundant equations of an over-constrained linkage hold to this at a solution
# (round-off of the independent ones through the Jacobian's conditioning)
REDUNDANT_TOL = 1e-9


def _certified(lk, prep, x, u, converged, status, res):
    """An over-constrained linkage's solutions with every equation checked, the
    redundant ones too: `(converged, status, residual)`, `redundancy_lost` from the
    first input where they fail (unchanged for a square system)."""
    if not lk.over_constrained:
        return converged, status, res
    full = jnp.max(jnp.abs(jax.vmap(lambda x_, u_: full_residual(x_, u_, prep))(x, u)), axis=-1)
    bad = converged & ~(full <= _closure.tolerance(REDUNDANT_TOL, full.dtype))  # float32: its own round-off
    lost = jnp.cumsum(bad) > 0
    codes = jnp.where(lost & converged, code(RESULTS.not_reached), code(status))
    status = as_results(jnp.where(bad, code(RESULTS.redundancy_lost), codes))
    return converged & ~lost, status, jnp.maximum(res, jnp.where(converged, full, res))


def _branch(lk, predictor):
    """The sweep's branch invariant: the dyads' own with their closed form, else the
    closure Jacobian's determinant."""
    return "det" if predictor is None else _structure.branch(lk)


def _motion(lk, prep, sol: _closure.SweepSolution) -> "Motion":
    coords = jax.vmap(lambda x, u: joint_coords(x, u, prep))(sol.value, sol.inputs)
    converged, status, res = _certified(lk, prep, sol.value, sol.inputs, sol.converged, sol.status, sol.residual)
    return Motion(
        inputs=sol.inputs,
        coords=coords,
        converged=converged,
        status=status,
        condition=sol.condition,
        residual=res,
        names=lk.names,
        widths=widths(lk),
    )


def _simulate_program(lk, inputs, branch, condition, deferred, origin=False):
    """The eager program: the motion, the initial configuration's check (`probed`,
    computed on every call: a flag that flipped after a linkage's first call would
    compile the program twice),
    `flags` = (some input deferred, a change point suspected: `_change.suspect`) and
    the core's solution. The eager program of a one-input linkage computes the
    conditioning for the change-point screen (NaN in the motion unless `condition`)."""
    fallback = _closure.Deferred() if deferred else None
    screen = not origin and lk.n_inputs == 1
    # the initial configuration's check in the same program (one call from the eager
    # API), its residual and Jacobian from the corrector's code (one more lane)
    motion, probed, sol = _simulate(lk, inputs, branch, condition or screen, fallback, probe=not origin, origin=origin)
    motion, flags = _screened(motion, condition, screen)
    return motion, probed, flags, sol


def _screened(motion, condition, screen):
    """An eager program's motion and `flags` = (some input deferred, a change point
    suspected): the change-point screen on a one-input motion (`screen`), its
    conditioning then dropped unless asked for (`condition`)."""
    suspect = jnp.asarray(False)
    if screen:
        suspect = _change.suspect_motion(motion)
        if not condition:
            motion = eqx.tree_at(lambda m: m.condition, motion, jnp.full_like(motion.condition, jnp.nan))
    return motion, jnp.stack([_closure.has_deferred(motion.status), suspect])


def _resume_program(lk, sol, branch, condition):
    """The rest of a sweep that the eager program left deferred: the sequential
    fallback alone, from its first deferred input (`closure._resume`)."""
    prep = prepare(lk)
    branch_ = _branch(lk, _structure.predictor(lk)) if branch else None
    return _motion(
        lk,
        prep,
        _closure.resume(prepared_residual, sol, prep, condition=condition, **_sweep_options(lk, branch_)),
    )


def _plan_program(plan, C, inputs, max_step, branch, condition, deferred):
    """`_simulate_program` on a linkage's plan (`_plan`): one program per size class,
    not per topology. Its motion's coordinates have the plan's joint rows and no
    names (`_unpad`)."""
    prep = _plan.prepare(plan, C)
    x0 = _plan.state(prep, prep.C0)
    screen = plan.n_inputs == 1
    zero = jnp.zeros(() if plan.n_inputs == 1 else (plan.n_inputs,), inputs.dtype)
    sol, probed = _closure.sweep_probed(
        _plan.residual,
        x0,
        inputs,
        prep,
        branch=_closure.Branch(_plan.branch_jit if branch else None, None, max_step),
        convergence=_CONVERGENCE,
        condition=condition or screen,
        fallback=_closure.Deferred() if deferred else None,
        predictor=_plan.CLOSED_FORM,
        corrector=_closure.Newton(_CERTIFY_STEPS),
        probe=(x0, zero),
        active=plan.active,
    )
    motion = _plan_motion(prep, sol)
    motion, flags = _screened(motion, condition, screen)
    return motion, probed, flags, sol


def _plan_motion(prep, sol):
    coords = jax.vmap(lambda x, u: _plan.joints(x, u, prep))(sol.value, sol.inputs)
    return Motion(
        inputs=sol.inputs,
        coords=coords,
        converged=sol.converged,
        status=sol.status,
        condition=sol.condition,
        residual=sol.residual,
        names=(),
        widths=(),
    )


def _plan_resume(plan, C, sol, max_step, branch, condition):
    """`_resume_program` on a plan."""
    prep = _plan.prepare(plan, C)
    return _plan_motion(
        prep,
        _closure.resume(
            _plan.residual,
            sol,
            prep,
            branch=_closure.Branch(_plan.branch_jit if branch else None, None, max_step),
            convergence=_CONVERGENCE,
            condition=condition,
            active=plan.active,
        ),
    )


def _unpad(lk, motion, n: int):
    """A plan's motion as `lk`'s: its path's first `n` rows, its own joints' columns,
    names and widths. (The rows are taken by a small program per row count, 12 µs a
    call, 20–30 ms to compile once; the joints' columns on the host, 60 µs: a program
    per joint count would compile on a further topology's first call. The motion is
    rebuilt from its leaves: `dataclasses.replace` runs its checks, 0.2 ms; `eqx.tree_at`
    0.03 ms.)"""
    key = (lk.names, lk.types, lk.geometry)  # what names and widths are read from
    leaves = jax.tree.leaves(motion)
    assert leaves[1] is motion.coords  # the fields' order: inputs, coords, ...
    if leaves[0].shape[0] > n:
        leaves = _first_rows_jit(leaves, n)
    leaves[1] = jax.device_put(np.asarray(leaves[1])[:, : len(key[0])])
    treedef = _MOTIONS.get(key)
    if treedef is None:
        treedef = jax.tree.structure(dataclasses.replace(motion, names=key[0], widths=widths(lk)))
        _MOTIONS[key] = treedef
    return jax.tree.unflatten(treedef, leaves)


_first_rows_jit = jit(lambda leaves, n: [a[:n] for a in leaves], static_argnums=1, top_level=True)


def _first(motion, n):
    """A motion's first `n` rows (see `_unpad`)."""
    return jax.tree.unflatten(jax.tree.structure(motion), _first_rows_jit(jax.tree.leaves(motion), n))


_MOTIONS: dict = {}


# plain jit: cheaper calls
_simulate_jit = jit(_simulate_program, static_argnames=("branch", "condition", "deferred"), top_level=True)
_resume_jit = jit(_resume_program, static_argnames=("branch", "condition"), top_level=True)
_plan_jit = jit(_plan_program, static_argnames=("branch", "condition", "deferred"), top_level=True)
_plan_resume_jit = jit(_plan_resume, static_argnames=("branch", "condition"), top_level=True)


def sweep(
    lk: Linkage,
    steps: int | None = None,
    step: float | None = None,
    *,
    inputs=None,
    branch: bool = True,
    condition: bool = True,
    check: bool = True,
    at_change: Literal["stop", "continue", "turn"] = "stop",
    throw: bool = False,
) -> Motion:
    """Simulate a range of the input (Algorithm 1 of the seed, on the closure core).

    **Arguments:**

    - `lk`: the linkage;
    - `steps`, `step`: the inputs `0, step, …, (steps − 1) step`; `step` in radians for
      a revolute input (anticlockwise in the plane, right-handed about the input axis
      on the sphere) and in length units for a prismatic joint or an actuator
      (positive = extension; along `(b, −a)` for a planar line; an angle on the unit
      sphere). Defaults: the linkage's (the seed's 180 steps of 2°, 0.01 for the 5-SS);
    - `inputs`: explicit input values instead (1-D, in any order: they are solved
      along the path that starts at the initial configuration, input 0, and visits
      them sorted, the negative ones first, descending, then the others, ascending;
      each side of the initial configuration is continued from it on its own, so a
      motion limit on one side leaves the other; the motion's rows stay in the order
      given, and `result` is the first failure along either side's path);
    - `branch`: keep the assembly branch (see `sweep_functional`);
    - `condition`: the closure Jacobian's 1-norm condition number per input (NaN
      where False);
    - `check`: verify the initial configuration first (`check`, eager only);
    - `at_change`: what the motion does at a change point (two assembly branches meet
      where `[J_x J_u]` loses rank: a flat Peaucellier rhombus, a parallelogram
      four-bar with its links in line), which every motion of a one-input linkage is
      searched for (see below): `"stop"` (default) ends that side of the motion there,
      the first input beyond it `change_point`; `"continue"` goes on along the branch
      whose tangent continues the motion's (the analytic continuation: the
      Peaucellier point's straight line, the parallelogram staying a parallelogram);
      `"turn"` takes the other branch (the anti-parallelogram);
    - `throw`: raise at the first failed input (`diffmech.MotionLimitError`,
      `diffmech.BranchSwitchError`, ...; see `diffmech._result`). Default False: an
      open curve that stops at a motion limit is an answer (read `converged`).

    A change point is searched for between every two consecutive solved inputs
    where the closure Jacobian's relative margin (1 / its condition number) falls
    to zero as a V from both sides (the continuation's predictor keeps its assembly
    signs through a change point and would go on silently along the other branch),
    and where the branch invariant flagged a switch; each candidate is certified by
    locating the change point to round-off (Gauss–Newton on `Φ = 0`,
    `[J_x J_u]ᵀ w = 0`, `|w| = 1`, as `linkage.singularities`): its closure residual
    at most 1e-10, its input between the two samples, `[J_x J_u]`'s relative smallest
    singular value below 1e-7. The search costs a host loop over the samples;
    locating runs only on a candidate. Linkages with several inputs are not searched.

    **Returns:** a `Motion`: every joint's coordinates by name at every step, the
    converged mask, the status (a motion limit stops an open curve) and the
    conditioning.
    """
    # validated with NumPy on the host: the only call into JAX is the compiled program
    if at_change not in AT_CHANGE:
        raise ValueError(f"linkage.sweep: `at_change` must be one of {AT_CHANGE}; got {at_change!r}")
    inputs, take, n_neg, n_default = _sweep_path(lk, steps, step, inputs)
    # the initial configuration is checked once per linkage object (a Linkage is
    # immutable), inside the same compiled program as its first simulation
    eager = not is_traced(lk, inputs)
    check = check and eager and lk not in _CHECKED
    options = (eager, branch, condition, at_change)
    motion = _sweep_run(lk, inputs, check, n_default, n_neg, options)
    if take is not None and 0 < n_neg < inputs.shape[0] - 1 and not np.asarray(motion.converged)[: n_neg + 1].all():
        # the negative side stopped (a motion limit, a change point): the positive side
        # is continued from the initial configuration on its own, by the same program
        # (the path 0, the positive inputs, padded to the same length by repeating the last)
        positive = inputs[n_neg + 1 :]
        path = np.concatenate([inputs[:1], positive, np.repeat(positive[-1:], n_neg)])
        other = _sweep_run(lk, path, check, None, 0, options)
        # each path row's row in the two motions one after the other
        rows = np.arange(inputs.shape[0])
        take = np.where(rows > n_neg, inputs.shape[0] + rows - n_neg, rows)[take]
        motion = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), motion, other)
    if take is not None:
        motion = _rows_jit(motion, take)
    return finish(motion, throw, f"linkage {lk.name!r}: sweep")


def _sweep_path(lk: Linkage, steps, step, inputs):
    """`sweep`'s path checked: `(inputs, take, n_neg, n_default)`: the inputs to
    solve (given ones sorted into a path from 0, `take` the rows given, `n_neg` the
    negative side's length), or the default range on the device (`n_default` its own
    rows)."""
    take, n_neg, n_default = None, 0, None
    if inputs is not None and (steps is not None or step is not None):
        raise ValueError("linkage.sweep: give either `inputs` or `steps`/`step`, not both")
    _check_range("linkage.sweep", steps, step)
    k = lk.n_inputs
    if inputs is None and k > 1:
        raise ValueError(
            f"linkage.sweep: {lk.name!r} has {k} inputs: give `inputs`, a path of shape (N, {k}) from the "
            "initial configuration (all inputs 0)"
        )
    if inputs is None:
        # the default range: built, validated and copied to the device once per
        # (steps, step, dtype) (a per-call copy is a fifth of a small linkage's sweep)
        inputs, n_default = _default_inputs_device(lk, steps, step)
    elif is_traced(inputs):
        inputs = jnp.asarray(inputs, dtype=lk.coords.dtype)
    else:
        inputs = as_floats("linkage.sweep", "inputs", inputs, np.dtype(lk.coords.dtype))
        want = "1-D array" if k == 1 else f"array of shape (N, {k}) (one column per input)"
        shape_ok = inputs.ndim == (1 if k == 1 else 2) and inputs.shape[1:] in ((), (k,))
        if not shape_ok or inputs.size < 1 or not np.all(np.isfinite(inputs)):
            raise ValueError(f"linkage.sweep: inputs must be a finite {want}; got shape {inputs.shape}")
        rows = path_rows(inputs) if k == 1 else None  # several inputs: followed as the path given
        if rows is not None:  # not a path from 0 in order: solve the sorted path, return the rows given
            inputs, take, n_neg = rows
    return inputs, take, n_neg, n_default


def _sweep_run(lk: Linkage, path, check: bool, n, n_neg: int, options):
    """One path of `sweep` from the initial configuration: its compiled program (and,
    eagerly, the fallback's and the host's change-point search where needed).
    `options`: `(eager, branch, condition, at_change)`; `n`: the path's own rows (the
    default path comes padded); `n_neg`: its negative side's length."""
    eager, branch, condition, at_change = options
    # eager: the program without the sequential fallback first (a smaller program to
    # compile); the one with it is compiled and run only if an input needs it
    # inside a transformation: the program itself (compiler options are a top-level jit's)
    args = _plan.arguments(lk) if eager else None  # one program per size class, where it has a plan
    planned = args is not None
    n = path.shape[0] if n is None else n
    if not eager and path.shape[0] > n:  # inside a transformation: the path itself
        path = np.asarray(path)[:n]
    padded = path
    if eager and path.shape[0] < size_class(n, _LENGTHS):  # one program per length class
        padded = pad_rows(np.asarray(path), size_class(n, _LENGTHS))
    if args is not None:
        p, C, max_step = args
        motion, values, flags, sol = _cache.program(
            "plan", _plan_program, _plan_jit, (p, C, padded, max_step), (branch, condition, True)
        )
        motion = _unpad(lk, motion, n)
    else:
        if eager:
            motion, values, flags, sol = _cache.program(
                "linkage_sweep",
                _simulate_program,
                _simulate_jit,
                (kinematic(lk), padded),
                (branch, condition, True),
            )
        else:
            motion, values, flags, sol = _simulate_program(lk, padded, branch, condition, False, origin=True)
        if eager and padded.shape[0] > n:
            motion = _first(motion, n)
    if check:
        assert values is not None  # computed in the eager program
        r, Jx = values
        if planned:  # the linkage's own block
            Jx = np.asarray(Jx)[: lk.n_unknowns, : lk.n_unknowns]
        _raise_if_bad_initial(lk, r, Jx)
        _CHECKED.add(lk)
    if not eager:
        return motion
    deferred, suspect = np.asarray(flags)  # through NumPy: `bool()` of a JAX scalar costs 5 µs more
    screen = lk.n_inputs == 1
    if deferred:
        # some input needs the sequential fallback: run it alone, from the first
        # deferred input (its own small program, compiled only for such sweeps)
        if args is not None:
            p, C, max_step = args
            resumed = _cache.program(
                "plan_resume", _plan_resume, _plan_resume_jit, (p, C, sol, max_step), (branch, condition or screen)
            )
            motion = _unpad(lk, resumed, n)
        else:
            motion = _cache.program(
                "resume", _resume_program, _resume_jit, (kinematic(lk), sol), (branch, condition or screen)
            )
            if padded.shape[0] > n:
                motion = _first(motion, n)
        suspect = screen  # the screen runs on the host for this motion
    if suspect:  # the host's search, certificate and answer (a candidate, or a failed input)
        motion = _change_points(lk, motion, n_neg, at_change, branch)
    if deferred and screen and not condition:  # NaN, made on the host (an eager op compiles per shape)
        nan = jax.device_put(np.full(motion.condition.shape, np.nan, motion.condition.dtype))
        motion = eqx.tree_at(lambda m: m.condition, motion, nan)
    return motion


_CHECKED = Recent()  # the linkages whose initial configuration was checked
AT_CHANGE = ("stop", "continue", "turn")


def _change_points(lk: Linkage, motion: Motion, n_neg: int, at_change: str, branch: bool) -> Motion:
    """A path's motion (rows in path order from input 0; rows 1 … `n_neg` its negative
    side when it has two) with each side cut, or continued on the branch `at_change`
    names, at the first certified change point (see `sweep`)."""
    U = np.asarray(motion.inputs, dtype=float)
    N = U.shape[0]
    sides = [np.arange(N)] if n_neg == 0 else [np.arange(n_neg + 1), np.r_[0, n_neg + 1 : N]]
    for side in sides:
        found = _first_change(lk, motion, side)
        if found is not None:
            motion = _past_change(lk, motion, side, *found, at_change, branch)
    return motion


def _first_change(lk, motion, side):
    """`(k, x*, u*, w)`: the first certified change point along one side of a path
    (its rows `side`, from input 0), `k` the first of the side's rows beyond it."""
    U = np.asarray(motion.inputs, dtype=float)[side]
    ok = np.asarray(motion.converged)[side]
    with np.errstate(divide="ignore"):
        r = 1.0 / np.asarray(motion.condition, dtype=float)[side]
    t = np.abs(U)
    candidates = _change.screen(t, r, ok)
    codes = np.asarray(code(motion.status))[side]
    bad = np.flatnonzero(~ok)
    f = int(bad[0]) if bad.size else 0
    if f > 0 and codes[f] == code(RESULTS.branch_switch):
        candidates.append(f - 1)  # the invariant flagged a switch: is it a change point?
    elif f > 0 and codes[f] == code(RESULTS.motion_limit) and _change.linear_approach(t[:f], r[:f]):
        candidates.append(f - 1)  # a sample on (or just past) a change point, where Newton cannot converge
    X = None
    for i in sorted(set(candidates)):
        if X is None:  # (the rows taken on the host: eagerly, indexing a device array is a small program)
            X = np.asarray(_states_jit(lk, np.asarray(motion.coords)[side]))
        j = i + 1 if (i + 1 < len(side) and ok[i + 1] and r[i + 1] < r[i]) else i
        found = _change.locate_change(lk, X[j], float(U[j]))
        if found is None:
            continue
        x, u, w = found
        h = t[i + 1] - t[i] if i + 1 < len(t) else 0.0
        if not t[i] - _change.INSIDE * h <= abs(u) <= t[i + 1] + _change.INSIDE * h:
            continue
        tol = 1e-9 * (1 + abs(u))
        # from the first row beyond it, or on it and failed (an invariant that flipped there)
        past = np.flatnonzero((t > abs(u) + tol) | (~ok & (t >= abs(u) - tol)))
        if past.size:
            return int(past[0]), x, u, w
    return None


def _past_change(lk, motion, side, k, x, u, w, at_change, branch):
    """One side of a motion from its row `side[k]` on: cut at the change point
    `(x, u)` (`stop`), or solved on the branch `at_change` names beyond it. Rows at the
    change point's input itself are its located configuration."""
    U = np.asarray(motion.inputs, dtype=float)
    on = side[k:][np.abs(np.abs(U[side[k:]]) - abs(u)) <= 1e-9 * (1 + abs(u))]
    if on.size:
        C = lk.full(np.asarray(x, lk.coords.dtype), np.asarray(u, lk.coords.dtype))
        motion = _set_rows(motion, on, coords=C, converged=True, status=code(RESULTS.successful))
        k += on.size
        if k >= len(side):
            return motion
    rows = side[k:]
    if at_change != "stop":
        C = _continued(lk, motion, side, k, x, u, w, at_change, branch)
        if C is not None:
            return C
    status = np.full(rows.shape, code(RESULTS.not_reached))
    status[0] = code(RESULTS.change_point)
    residual = np.full(rows.shape, np.nan)
    residual[0] = np.asarray(motion.residual)[rows[0]]  # the first input beyond keeps its own, as at a motion limit
    last = np.asarray(motion.coords)[side[k - 1]]
    return _set_rows(motion, rows, coords=last, converged=False, status=status, condition=np.nan, residual=residual)


def _set_rows(motion, rows, **values):
    """`motion` with the given fields (`coords`, `converged`, `status` as codes,
    `condition`, `residual`) replaced in its `rows` (values broadcast to them), on the
    host (eagerly, a scatter per field and shape is a small program to compile)."""
    names = tuple(values)

    def new(name):
        field = np.array(code(motion.status) if name == "status" else getattr(motion, name))
        field[rows] = np.asarray(values[name]).astype(field.dtype)
        out = jax.device_put(field)
        return as_results(out) if name == "status" else out

    return eqx.tree_at(lambda m: tuple(getattr(m, n) for n in names), motion, tuple(new(n) for n in names))


def _continued(lk, motion, side, k, x, u, w, at_change, branch):
    """The rows `side[k:]` solved on the branch `at_change` names beyond the change
    point `(x, u)`: a start a quarter of the input's step past it along that branch's
    tangent, corrected by Newton, then simulated (recursively, so later change points
    are found too) from there as the initial configuration. None if a branch cannot be
    taken (a change point of higher order, or Newton fails)."""
    U = np.asarray(motion.inputs, dtype=float)
    rows = side[k:]
    direction = np.sign(U[rows[0]]) or 1.0
    tangents = _change.branch_tangents(lk, x, u, w)
    if tangents is None:
        return None
    # the incoming direction: the secant through the last two samples before (the last
    # one may be the change point itself), or the rate at input 0
    if k >= 2:
        a, b = np.asarray(_states_jit(lk, np.asarray(motion.coords)[side[k - 2 : k]]))
        incoming = np.concatenate([b - a, [U[side[k - 1]] - U[side[k - 2]]]])
    else:
        xdot = np.asarray(_closure.velocity(prepared_residual, lk.x0(), lk.zero_input(), prepare(lk), 1.0))
        incoming = np.concatenate([xdot, [1.0]]) * direction
    tangents = [t * (np.sign(t[-1]) or 1.0) * direction for t in tangents]  # each pointing on along the side
    align = [abs(np.dot(t, incoming)) / np.linalg.norm(incoming) for t in tangents]
    t = tangents[int(np.argmax(align))] if at_change == "continue" else tangents[int(np.argmin(align))]
    if abs(t[-1]) < 1e-6:
        return None  # the branch turns back in the input: it cannot be driven on
    t_side = np.abs(U[side])
    du = 0.25 * (t_side[k] - t_side[k - 1])  # a quarter of the step across the change point
    u_r = u + direction * du
    guess = x + t[:-1] * (du / abs(t[-1]))
    sol = solve(lk, u_r, guess, throw=False)
    if not bool(np.asarray(sol.converged)):
        return None
    restart = eqx.tree_at(lambda m: m.coords, lk, lk.full(sol.value, jnp.asarray(u_r, lk.coords.dtype)))
    rest = sweep(restart, inputs=U[rows] - u_r, branch=branch, at_change=at_change)
    fields = ("coords", "converged", "condition", "residual")
    return _set_rows(motion, rows, status=code(rest.status), **{f: getattr(rest, f) for f in fields})


_states_jit = jit(lambda lk, C: jax.vmap(lk.state)(C))
# the rows of a sorted path in the order the inputs were given: one program, not a gather per field
_rows_jit = jit(lambda motion, take: jax.tree.map(lambda a: a[take], motion), top_level=True)


def path_rows(inputs: np.ndarray):
    """None where `inputs` already are a path from the initial configuration (the first
    is 0 and they are monotone); else `(path, take, n_negative)`: the path that starts
    at 0 and visits the inputs sorted (the negative ones descending first, then the
    others ascending; each value once), the row of `path` for each given input, and
    the number of negative inputs (rows 1 … n_negative of the path)."""
    d = np.diff(inputs)
    if inputs[0] == 0 and (np.all(d >= 0) or np.all(d <= 0)):
        return None
    values, which = np.unique(inputs, return_inverse=True)  # ascending; each input's value
    k = int(np.sum(values < 0))
    path = np.concatenate([np.zeros(1, inputs.dtype), values[:k][::-1], values[k:][values[k:] > 0]])
    # each value's row in the path: 0 first, the negatives descending (rows 1…k), then the positives
    rank = np.arange(values.size)
    row = np.where(rank < k, k - rank, np.where(values == 0, 0, rank + 1 - np.any(values == 0)))
    return path, row[which].reshape(-1), k


# --------------------------------------------------------------------------- checks


def _initial_values(lk):
    """Residual and Jacobians at the initial configuration (input 0)."""
    x, u = lk.x0(), lk.zero_input()
    return residual(x, u, lk), jax.jacfwd(residual)(x, u, lk), jax.jacfwd(residual, argnums=1)(x, u, lk)


@dataclasses.dataclass(frozen=True)
class Mobility:
    """A linkage's mobility at one configuration, from its closure Jacobian's rank
    (plain NumPy values: an eager analysis; `parallel.Mobility` is a parallel
    mechanism's, by reciprocal screws).

    **Fields:**

    - `dof`: `n + k − rank[∂Φ/∂x, ∂Φ/∂u]` (`k` inputs): `k` for a linkage its inputs
      drive, less if locked;
    - `rank`: of `[∂Φ/∂x, ∂Φ/∂u]`; `n_unknowns`: `n`;
    - `redundant`: the equations beyond the rank (0 unless the linkage is
      over-constrained, e.g. 4 for the Bennett 4R as described here, 10 equations of
      rank 6);
    - `rank_x`: `rank ∂Φ/∂x`, below `n` at a singular configuration (where the inputs
      do not determine the rest); `sv_x`: the singular values of `∂Φ/∂x`.

    Read as a dict (`m["mobility"]`, `m["rank"]`, …) for one version: the former
    return value of `linkage.mobility` (deprecated).
    """

    dof: int
    rank: int
    n_unknowns: int
    redundant: int
    rank_x: int
    sv_x: np.ndarray

    def __getitem__(self, key: str):
        field = {"mobility": "dof"}.get(key, key)
        if field not in {f.name for f in dataclasses.fields(self)}:
            raise KeyError(key)
        warnings.warn(
            f"linkage.mobility returns a Mobility: read m.{field}, not m[{key!r}] (it goes in the next version)",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(self, field)


def mobility(lk: Linkage, x: Float[Array, " n"] | None = None, u=0.0, rtol: float = 1e-9) -> Mobility:
    """Degrees of freedom at a configuration from the Jacobian's rank (eager).

    **Arguments:** `lk`: the linkage; `x`: a state `(n,)` (default: the initial
    configuration) converged at input `u`; `rtol`: singular values below `rtol` times
    the largest count as zero.

    **Returns:** a `Mobility` (`dof`, the ranks, the redundant equations, `∂Φ/∂x`'s
    singular values).
    """
    check_scalar("linkage.mobility", "rtol", rtol, positive=True)
    if x is not None:
        check_shape("linkage.mobility", "x", x, lk.x0().shape)
    x = lk.x0() if x is None else x
    check_finite("linkage.mobility", {"coords": lk.coords, "x": x, "u": u})
    u = jnp.broadcast_to(jnp.asarray(u, dtype=lk.coords.dtype), lk.zero_input().shape)
    Jx, Ju = jacobians(x, u, kinematic(lk))
    info = rank_info(Jx, Ju, rtol)
    return Mobility(
        dof=info["mobility"],
        rank=info["rank"],
        n_unknowns=info["n_unknowns"],
        redundant=info["redundant"],
        rank_x=info["rank_x"],
        sv_x=info["sv_x"],
    )


def _raise_if_bad_initial(lk, r, Jx, Ju=None, tol: float = 1e-10) -> None:
    """Raise unless the initial configuration closes to `tol` and `Jx` has full rank
    (then `[Jx, Ju]`, with as many rows as `Jx` has columns, has rank `n` too, and
    the mobility is 1: `Ju` is needed only to report the mobility of a failure)."""
    r = np.asarray(r)
    coords = np.asarray(lk.coords)
    if not np.all(np.isfinite(coords)):
        j = int(np.argmax(~np.all(np.isfinite(coords), axis=-1)))
        raise LinkageError(f"linkage {lk.name!r}: `coords` must be finite; joint {lk.names[j]} is {coords[j].tolist()}")
    raise_if_open(lk, r, tol)
    if np.asarray(Jx).size == 0:  # nothing to solve: the inputs (and gears) place every link
        return
    s_x = np.linalg.svd(np.asarray(Jx), compute_uv=False)
    if Ju is None and s_x[-1] > 1e-6 * max(s_x[0], 1e-300):
        return  # clearly full rank, so mobility 1 (the common case: no second program)
    if Ju is None:  # every equation's Jacobian (an over-constrained linkage's too)
        Jx, Ju = jacobians(lk.x0(), lk.zero_input(), kinematic(lk))
    m = rank_info(Jx, Ju, _closure.tolerance(1e-9, np.asarray(Jx).dtype))
    if m["rank_x"] < m["n_unknowns"] or m["mobility"] != lk.n_inputs:
        raise LinkageError(
            f"linkage {lk.name!r}: the constraints do not determine the linkage at its initial configuration: "
            f"closure Jacobian rank {m['rank_x']} of {m['n_unknowns']} unknowns, mobility {m['mobility']} "
            f"(smallest singular values {np.sort(m['sv_x'])[:3]})"
        )


_initial_jit = filter_jit(_initial_values)


def check_initial(lk: Linkage, tol: float = 1e-10) -> None:
    """Raise `LinkageError` unless the initial configuration of the linkage `lk`
    satisfies its own equations (to `tol`, in the solver's units) and the input
    determines the linkage there (the closure Jacobian has full rank `n` and the
    mobility is 1)."""
    check_scalar("linkage.check_initial", "tol", tol, positive=True)
    _raise_if_bad_initial(lk, *_initial_jit(lk), tol=tol)


# --------------------------------------------------------------------------- rates


def rates(
    lk: Linkage, x: Float[Array, " n"], u, udot=1.0, uddot=0.0
) -> tuple[Float[Array, "J 3"], Float[Array, "J 3"]]:
    """Velocities and accelerations of every joint and tracer (rows as in
    `Motion.coords`) at the state `x` (converged at input `u`) for an input motion
    `(u, u̇, ü)`, by the implicit function theorem through the closure (the seed uses
    numerical differentiation). Exact to round-off; jittable and differentiable.
    Arguments in the order of every family's `rates`: state, input, input rates.

    **Arguments:** `lk`: the linkage; `x` `(n,)`: a state converged at input `u`;
    `udot`, `uddot`: the input's rate and acceleration (rad/s and rad/s² for a revolute
    input, length units per s and s² otherwise); with `k` inputs, `u`, `udot`, `uddot`
    are `(k,)` (a scalar rate applies to every input).

    **Returns:** `(velocities, accelerations)`, each `(J, 3)` in the rows of
    `Motion.coords`.
    """
    dt = lk.coords.dtype
    check_shape("linkage.rates", "x", x, (lk.n_unknowns,))
    shape = () if lk.n_inputs == 1 else (lk.n_inputs,)  # `zero_input`'s (eagerly, an array made is a program)
    for name, v in (("u", u), ("udot", udot), ("uddot", uddot)):
        if not shape:
            check_scalar("linkage.rates", name, v)
        elif not is_traced(v) and np.shape(v) not in ((), shape):
            raise ValueError(
                f"linkage.rates: `{name}` must be a scalar or one value per input, shape {shape}; got {np.shape(v)}"
            )
    return _linkage_rates(lk, host_array(x, dt), *(host_array(v, dt) for v in (u, udot, uddot)))


@eager_program  # one program eagerly (op by op: 141 small ones to compile, 5 s for Stephenson-II)
def _linkage_rates(lk: Linkage, x, u, udot, uddot):
    dt, shape = lk.coords.dtype, lk.zero_input().shape
    u, udot, uddot = (jnp.broadcast_to(v, shape) for v in (u, udot, uddot))
    prep = prepare(lk)
    xdot, xddot = _closure.rates(prepared_residual, x, u, prep, udot, uddot)

    def pos(s):
        # the coordinates along the path (x(t), u(t)) to second order in t
        return joint_coords(x + s * xdot + 0.5 * s**2 * xddot, u + s * udot + 0.5 * s**2 * uddot, prep)

    zero, one = jnp.zeros((), dt), jnp.ones((), dt)
    vel = jax.jvp(pos, (zero,), (one,))[1]
    acc = jax.jvp(lambda s: jax.jvp(pos, (s,), (one,))[1], (zero,), (one,))[1]
    return vel, acc


def check_motion(owner: str, lk: Linkage, motion, name: str = "motion") -> Motion:
    """`motion` if it is a `Motion` of `lk` (its joints by name and width, its rows
    and its inputs' shape), else a `ValueError` from `owner` naming the argument
    `name`."""
    if not isinstance(motion, Motion):
        raise ValueError(f"{owner}: `{name}` must be a Motion (from linkage.sweep); got {motion!r}")
    rows = lk.coords.shape  # every joint and tracer: the rows `lk.full` gives
    inputs = motion.coords.shape[:1] + ((lk.n_inputs,) if lk.n_inputs > 1 else ())
    joints = tuple(motion.names) == tuple(lk.names) and tuple(motion.widths) == tuple(widths(lk))
    if not joints or motion.coords.shape[1:] != rows or motion.inputs.shape != inputs:
        raise ValueError(
            f"{owner}: `{name}` is not a motion of {lk.name!r} (its joints {list(motion.names)[:8]} with coordinates "
            f"{motion.coords.shape[1:]} and inputs {motion.inputs.shape[1:]}; the linkage's {list(lk.names)[:8]}, "
            f"{rows} and {inputs[1:]})"
        )
    return motion


def motion_rates(lk: Linkage, motion: Motion, udot=1.0, uddot=0.0):
    """`rates` at every step of a `Motion` (rows of unconverged steps are NaN):
    velocities and accelerations `(N, J, 3)` of the linkage `lk` along its `motion`
    (from `sweep`) for an input rate `udot` (and `uddot`): a number, one per input
    `(k,)`, or one per step (the inputs' shape, `(N,)` or `(N, k)`)."""
    check_motion("linkage.motion_rates", lk, motion)
    dt, shape = lk.coords.dtype, motion.inputs.shape
    try:  # on the host when concrete: eagerly, a broadcast is a small program of its own
        ud, udd = (
            jnp.broadcast_to(v, shape) if is_traced(v) else np.broadcast_to(np.asarray(v, dt), shape)
            for v in (udot, uddot)
        )
    except ValueError:
        raise ValueError(
            f"linkage.motion_rates: `udot` and `uddot` must be numbers, one per input or one per step (the inputs' "
            f"shape {shape}); got {np.shape(udot)} and {np.shape(uddot)}"
        ) from None
    return _motion_rates(lk, motion, ud, udd)


@eager_program
def _motion_rates(lk, motion, ud, udd):
    def one(u, C, v, a):
        return rates(lk, lk.state(C), u, v, a)

    vel, acc = jax.vmap(one)(motion.inputs.astype(ud.dtype), motion.coords, ud, udd)
    ok = motion.converged[:, None, None]
    return jnp.where(ok, vel, jnp.nan), jnp.where(ok, acc, jnp.nan)


# the former names (one version): the kinematic motion over a sequence of inputs is a
# `sweep` in every family (the closure core's, the four-bar's, a linkage's)
simulate = renamed(sweep, "linkage.simulate", "linkage.sweep")
simulate_functional = renamed(sweep_functional, "linkage.simulate_functional", "linkage.sweep_functional")
