"""One fitting layer on Optax: trainable fields chosen by an Equinox filter, positive
fields kept feasible by a log reparametrisation, jitted update steps, multi-start by
`vmap`, L-BFGS or Adam, a history per run, early stopping, masked failed solves."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, Literal, TypedDict, Unpack

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, Bool, Float, Int

from . import _cache
from ._progress import TextProgress
from ._validate import ArgumentTypeError, check_count, check_type, is_traced, options, pick
from ._xla import filter_jit, row

__all__ = ["Convergence", "FitFields", "FitResult", "History", "Starts", "fit", "masked_mean"]


def masked_mean(residuals: Float[Array, "n ..."], valid: Bool[Array, " n"], penalty: float = 1e3) -> Float[Array, ""]:
    """Mean of `residuals²` over the valid samples, with invalid samples (failed solves)
    masked *before* the square reaches `grad`, so the wrong (finite) value a failed
    closure solve returns contributes no gradient and a NaN there does not reach the
    value (a NaN produced upstream *with a NaN derivative* would still reach `grad`:
    the closure core returns finite guesses on failure for this reason), plus `penalty` × the
    fraction of invalid samples (a value, no gradient: a line search sees a step into
    unassemblable designs as an increase and rejects it).

    **Arguments:** `residuals` `(n, ...)`; `valid` `(n,)`: which samples are valid;
    `penalty`: the value added per unit fraction of invalid samples. **Returns:** a
    scalar.
    """
    r = jnp.asarray(residuals)
    valid = jnp.asarray(valid)
    if valid.dtype != jnp.bool_ or valid.ndim != 1 or r.ndim < 1 or valid.shape[0] != r.shape[0]:
        raise ValueError(
            f"fit.masked_mean: `valid` must be a boolean mask (n,) over the residuals' first axis; got "
            f"{valid.dtype} {valid.shape} for residuals {r.shape}"
        )
    v = jnp.reshape(valid, valid.shape + (1,) * (r.ndim - valid.ndim))
    safe = jnp.where(v, r, 0.0)
    n = jnp.maximum(jnp.sum(valid), 1).astype(r.dtype)
    per = jnp.sum(jnp.reshape(safe**2, (r.shape[0], -1)), axis=1)
    # counted, not 1 − mean(valid): XLA may take the mean as a sum times an inexact 1/n,
    # and 1 − mean(all True) then leaves 2⁻⁵⁴·penalty in the loss of a perfect fit
    frac_bad = jnp.sum(~valid).astype(r.dtype) / valid.size
    return jnp.sum(per) / n + penalty * frac_bad


class History(eqx.Module):
    """Per iteration of one run (up to `steps` entries: the loop ends at the first chunk
    after which every run has stopped; a batch of runs has a leading axis): `loss`, `grad_norm` (of the
    unconstrained parameters), `active` (False after
    the run stopped early); `time` (wall seconds since the start, host-measured per
    chunk of iterations)."""

    loss: Float[Array, " steps"]
    grad_norm: Float[Array, " steps"]
    active: Bool[Array, " steps"]
    time: Float[Array, " steps"]


class FitResult(eqx.Module):
    """`model`: the fitted model (multi-start: the start with the lowest final loss);
    `params`: the fitted trainable fields of every start (a leading axis for
    multi-start); `loss`, `steps` (iterations taken), `converged` (stopped on a
    tolerance with a finite loss) per start; `history`; `best`: index of that start."""

    model: Any
    params: Any
    loss: Float[Array, "*starts"]
    steps: Int[Array, "*starts"]
    converged: Bool[Array, "*starts"]
    history: History
    best: int = eqx.field(static=True)


def _selector_spec(model, trainable):
    """Boolean pytree: True on the leaves picked by `trainable` (a callable returning a
    field, or a tuple of fields, of the model; None: every inexact array leaf)."""
    if trainable is None:
        return jax.tree.map(eqx.is_inexact_array, model)
    if not callable(trainable):
        leaves = jax.tree.leaves(trainable)
        if jax.tree.structure(trainable) != jax.tree.structure(model) or not all(isinstance(b, bool) for b in leaves):
            raise ValueError(
                "fit: `trainable` must be a function of the model returning its fields (lambda m: (m.a, m.b)), a "
                f"boolean filter spec of the model's structure, or None; got {trainable!r:.80}"
            )
        return trainable  # already a filter spec
    false = jax.tree.map(lambda _: False, model)
    picked = trainable(model)
    n = len(picked) if isinstance(picked, tuple) else 1
    return eqx.tree_at(trainable, false, replace=(True,) * n if isinstance(picked, tuple) else True)


def _from_u(u, positive):
    # eagerly on the host (an eager `jnp` operation is a small program of its own)
    exp = lambda a: jnp.exp(a) if is_traced(a) else jax.device_put(np.exp(np.asarray(a)), getattr(a, "sharding", None))  # noqa: E731
    return jax.tree.map(lambda a, s: exp(a) if s else a, u, positive)


@filter_jit
def _objective(u, problem):
    # jitted (the loss static, by identity) so that it is traced once per signature:
    # L-BFGS evaluates it, with its gradient, at four places of a step (the value and
    # gradient, the line search's trials)
    loss, static, args, positive = problem
    value = loss(eqx.combine(_from_u(u, positive), static), *args)
    if np.shape(value) != ():  # static: named while tracing
        raise ValueError(f"fit: `loss(model, *args)` must return a scalar; got shape {np.shape(value)}")
    return value


def _step(carry, problem, opt, needs_value, gtol, ftol, budget):
    u, state, active, prev, k, stalled = carry
    objective = functools.partial(_objective, problem=problem)
    # optax mixes int32 step counters with int64 and Python floats: it fails under
    # strict dtype promotion, which a user (and our test suite) may have switched on
    # needs_value: "state" — a line-search method (L-BFGS) that stores the value and gradient
    # at the accepted point in its state; "extra" — any transformation taking the value,
    # gradient and objective as extra arguments (optax ignores them where unused)
    if needs_value == "state":
        value, grad = optax.value_and_grad_from_state(objective)(u, state=state)
    else:
        value, grad = jax.value_and_grad(objective)(u)
    gnorm = optax.tree.norm(grad)
    # A stopped start is frozen below, but under `vmap` its update is still computed, and
    # every start's line search runs as long as the slowest one's: its gradient is zeroed
    # so that its search accepts the first trial (a zero direction changes nothing).
    # Five-pose motion generation, 32 starts: a late iteration cost 65–86 ms with starts
    # whose search failed at its 20-step limit, against 19 ms for the first ones.
    grad = jax.tree.map(lambda g: jnp.where(active, g, jnp.zeros_like(g)), grad)
    with jax.numpy_dtype_promotion("standard"):
        if needs_value:
            updates, new_state = opt.update(grad, state, u, value=value, grad=grad, value_fn=objective)
        else:
            updates, new_state = opt.update(grad, state, u)
    stop = (gnorm < gtol) | ~(jnp.isfinite(value) & jnp.isfinite(gnorm))
    if ftol > 0:
        stop = stop | ((k > 0) & (prev - value <= ftol * jnp.abs(value)))
    # a line-search method lowers the loss at every accepted step; a step that did not
    # lower it at all means its search failed: the start has stalled (round-off, a kink)
    # and stops, not converged
    stall = (k > 0) & ~(value < prev) & ~stop if needs_value == "state" else jnp.zeros_like(stop)
    go = active & ~stop & ~stall
    # a start that has spent its budget (`steps`: iterations run a chunk at a time) takes
    # no more steps but stays active: it stopped on the budget, not on a tolerance
    take = go & (k < budget)
    new_u = jax.tree.map(lambda a, b: jnp.where(take, a, b), optax.apply_updates(u, updates), u)
    new_state = jax.tree.map(lambda a, b: jnp.where(take, a, b) if eqx.is_array(a) else a, new_state, state)
    carry = (new_u, new_state, go, jnp.where(active, value, prev), k + take.astype(k.dtype), stalled | (active & stall))
    return carry, (value, gnorm, active)


# Module-level and jitted once per (loss, model structure, optimizer, settings): repeated
# `fit` calls with the same loss function (noise sweeps, restarts) reuse the compiled program.
def _per_start(fn, batched, own_static):
    """`fn(x, problem)` vmapped over starts: the carry always, the frozen fields of the
    model too when every start brings its own (`fit(..., batch=True)`)."""
    if not batched:
        return fn

    def mapped(x, problem):
        loss, static, args, pos = problem
        one = lambda x_, st: fn(x_, (loss, st, args, pos))  # noqa: E731
        return eqx.filter_vmap(one, in_axes=(0, eqx.if_array(0) if own_static else None))(x, static)

    return mapped


@_cache.kept()  # kept compiled where the loss is this package's and the optimiser named
def _run_chunk(carry, problem, budget, opt, needs_value, gtol, ftol, chunk, batched, own_static):
    def run(c, pr):
        step = lambda c_, _: _step(c_, pr, opt, needs_value, gtol, ftol, budget)  # noqa: E731
        return jax.lax.scan(step, c, None, length=chunk)

    return _per_start(run, batched, own_static)(carry, problem)


@_cache.kept()
def _init(u, opt, batched):
    def init(u_):
        with jax.numpy_dtype_promotion("standard"):
            return opt.init(u_)

    return jax.vmap(init)(u) if batched else init(u)


@_cache.kept()
def _final_loss(u, problem, batched, own_static):
    return _per_start(_objective, batched, own_static)(u, problem)


@functools.cache
def _named_optimizer(name, learning_rate):
    # cached: a fresh optax transformation is a new static argument (a recompilation)
    rate = (1e-2 if name == "adam" else None) if learning_rate is None else learning_rate
    opt = optax.lbfgs(learning_rate=rate) if name == "lbfgs" else optax.adam(1e-2 if rate is None else rate)
    if rate is None or isinstance(rate, (int, float)):  # named: a program that takes it may be kept compiled
        opt = _cache.named(opt, f"optax.{name}({rate!r})")
    return opt, "state" if name == "lbfgs" else ""


def _optimizer(name, learning_rate):
    if isinstance(name, optax.GradientTransformationExtraArgs):
        # a zoom line search (optax.lbfgs(...) with options) keeps the value in its state
        probe = name.init(jnp.zeros(1))
        stores = optax.tree_utils.tree_get(probe, "value", default=None) is not None
        return name, "state" if stores else "extra"
    if isinstance(name, optax.GradientTransformation):
        return name, ""
    if name in ("lbfgs", "adam"):
        try:
            return _named_optimizer(name, learning_rate)
        except TypeError:  # an unhashable learning rate (an array or a schedule)
            return _named_optimizer.__wrapped__(name, learning_rate)
    raise ValueError(f"fit: `optimizer` must be 'lbfgs', 'adam' or an optax transformation; got {name!r}")


def _check_data(args) -> None:
    """The data of a fit (`args`): no empty array and no NaN in a floating-point one
    (either makes the loss NaN, and the fit would return it as a result that did not
    converge, with no word why)."""
    for i, arg in enumerate(args):
        for path, leaf in jax.tree_util.tree_leaves_with_path(arg):
            if is_traced(leaf) or not eqx.is_array_like(leaf):
                continue
            a = np.asarray(leaf)
            where = f"`args[{i}]`" + jax.tree_util.keystr(path)
            if a.size == 0:
                raise ValueError(f"fit: the data {where} is empty (shape {a.shape}): a loss over no samples is NaN")
            if a.dtype.kind in "fc" and np.any(np.isnan(a)):  # (an infinity may mean something: an open bound)
                k = int(np.argmax(np.isnan(a.reshape(-1))))
                raise ValueError(
                    f"fit: the data {where} holds a NaN (at flat index {k}): remove it or mask it out (the loss "
                    "would be NaN)"
                )


class Convergence(eqx.Module):
    """When each start of a fit stops: after `steps` iterations at most; when the
    gradient norm (of the unconstrained parameters) falls below `gtol`; when the
    relative loss decrease of an iteration falls below `ftol` (0: off). With a line
    search (L-BFGS), a start whose iteration did not lower the loss at all (its search
    failed: round-off, a kink) stops too, and is reported not converged."""

    steps: int = 200
    gtol: float = 1e-10
    ftol: float = 0.0


class Starts(eqx.Module):
    """Where a fit starts, and where it runs.

    - `count`: multi-start: `count` runs in one vmapped program, each from the
      trainable leaves perturbed by `spread`: `exp(spread · N(0, 1))` (positive) or
      `+ spread · |x| · N(0, 1)`; start 0 is the given model; `seed` makes it
      reproducible. None (the default): one run.
    - `batch`: the starts are given: every array leaf of the model has a leading axis
      of starts (own initial designs; frozen fields may differ per start too, e.g. an
      assembly branch). Excludes `count`.
    - `devices`: multi-start only: spread the starts over these devices (`"all"`, a
      count or a list, as in `diffmech.shard.devices`): the batch of starts is padded
      to a multiple of their number (repeating the last start) and placed on a one-axis
      mesh; the compiled steps are partitioned along it by XLA. The padding is
      stripped from the result.
    """

    count: int | None = None
    spread: float = 0.1
    seed: int = 0
    batch: bool = False
    devices: Any = None


class FitFields(TypedDict, total=False):
    """`fit`'s separate keywords (its older form, kept): `Convergence`'s and `Starts`'
    fields by their names, and the named optimiser's learning rate."""

    steps: int
    gtol: float
    ftol: float
    spread: float
    seed: int
    batch: bool
    devices: Any
    learning_rate: Any


_CONVERGENCE = ("steps", "gtol", "ftol")


def fit(
    loss: Callable[..., Float[Array, ""]],
    model,
    *args,
    trainable=None,
    positive: bool | Callable = False,
    optimizer: Literal["lbfgs", "adam"] | optax.GradientTransformation = "lbfgs",
    convergence: Convergence | None = None,
    starts: int | Starts | None = None,
    chunk: int = 10,
    progress: bool | str = False,
    **separate: Unpack[FitFields],
) -> FitResult:
    """Minimise `loss(model, *args)` over the trainable fields of `model`.

    **Arguments:**

    - `loss`: a scalar function of the model (an Equinox module or any pytree) and `args`;
      use `masked_mean` to mask failed solves out before `grad`.
    - `trainable`: which fields move: a callable `lambda m: (m.lengths, m.inertias)`, a
      boolean filter spec, or None (every floating-point array leaf).
    - `positive`: keep the trainable leaves positive by optimising their logarithm
      (lengths, masses, inertias); True for all of them, or a callable on the model
      returning those that must stay positive.
    - `optimizer`: `"lbfgs"` (optax.lbfgs with its zoom line search, the default),
      `"adam"` (learning rate 1e-2), or any optax transformation (`optax.adam(1e-3)`).
    - `convergence`: when a start stops (`Convergence`: at most `steps=200`
      iterations, `gtol=1e-10`, `ftol=0`).
    - `starts`: a `Starts` (multi-start: perturbed copies of the model or a given
      batch of them, spread over devices), or an integer: that many perturbed starts.
    - `chunk`: iterations per compiled call (the progress bar and the host-timed
      history advance per chunk); `progress`: a text progress bar on stderr (a string:
      the bar's label, e.g. the phase of a longer search; True: "fit").

    The fields of `Convergence` and `Starts` may be given as separate keywords instead
    (`steps`, `gtol`, `ftol`; `spread`, `seed`, `batch`, `devices`; e.g. `steps=500`),
    and `learning_rate` for a named optimiser.

    **Returns:** a `FitResult`.
    """
    if not callable(loss):
        raise ValueError(f"fit: `loss` must be a function loss(model, *args) -> scalar; got {loss!r:.80}")
    rest: dict[str, Any] = dict(separate)
    learning_rate = rest.pop("learning_rate", None)
    conv = options("fit", "convergence", convergence, Convergence, pick(rest, _CONVERGENCE), "a fit.Convergence")
    starts = _as_starts(starts, rest)
    check_count("fit", "steps", conv.steps)
    check_count("fit", "chunk", chunk)
    _check_data(args)
    params, static, pos_tree = _split_model(model, trainable, positive)
    problem = (loss, static, args, pos_tree)
    opt, needs_value = _optimizer(optimizer, learning_rate)
    log = lambda a: jnp.log(a) if is_traced(a) else jax.device_put(np.log(np.asarray(a)))  # noqa: E731
    u0 = jax.tree.map(lambda a, s: log(a) if s else a, params, pos_tree)
    u0 = _perturbed(u0, pos_tree, starts)
    batched = starts.count is not None or starts.batch
    own_static = starts.batch and any(eqx.is_array(a) for a in jax.tree.leaves(static))
    if starts.batch:
        _check_batch(u0, static)
    n_real = jax.tree.leaves(u0)[0].shape[0] if batched else None
    if starts.devices is not None:
        if not batched:
            raise ValueError("fit: `devices` spreads a multi-start over devices: give `starts` or `batch=True`")
        u0, static = _on_devices(u0, static, own_static, starts.devices)
        problem = (loss, static, args, pos_tree)
    settings = (opt, needs_value, conv.gtol, conv.ftol, chunk, batched, own_static)
    carry, hist = _iterate(u0, problem, settings, conv.steps, progress)
    return _result(carry, hist, problem, settings, n_real)


def _as_starts(starts, separate: dict) -> Starts:
    """`fit`'s `starts` (a `Starts`, a count or None) with its separate keywords."""
    fields = pick(separate, ("spread", "seed", "batch", "devices"))
    if separate:
        raise ArgumentTypeError(f"fit: unexpected keyword argument {sorted(separate)[0]!r}")
    if isinstance(starts, Starts):
        return options("fit", "starts", starts, Starts, fields, "a fit.Starts, a count or None")
    if starts is not None:
        check_type("fit", "starts", starts, (int, np.integer), "a fit.Starts, a count or None")
        if starts < 1:
            raise ValueError(f"fit: `starts` must be ≥ 1; got {starts}")
        fields["count"] = int(starts)
    if fields.get("batch") and fields.get("count") is not None:
        raise ValueError(
            "fit: give either `starts` (perturbed copies of one model) or `batch=True` (a batch of models)"
        )
    return Starts(**fields)


def _split_model(model, trainable, positive):
    """The trainable leaves, the frozen rest, and which trainable leaves stay positive
    (checked positive now)."""
    spec = _selector_spec(model, trainable)
    if not any(jax.tree.leaves(spec)):
        raise ValueError("fit: `trainable` selects no floating-point array field of the model")
    pos_spec = (
        jax.tree.map(lambda s: bool(s) and bool(positive), spec)
        if not callable(positive)
        else jax.tree.map(lambda a, b: bool(a) and bool(b), spec, _selector_spec(model, positive))
    )
    params, static = eqx.partition(model, spec)
    pos_tree = jax.tree.map(lambda a, s: s, params, eqx.filter(pos_spec, spec))
    for a, s in zip(jax.tree.leaves(params), jax.tree.leaves(pos_tree)):
        if s and not bool(np.all(np.asarray(a) > 0)):
            raise ValueError("fit: a field to be kept positive has a non-positive initial value")
    return params, static, pos_tree


def _perturbed(u0, pos_tree, starts: Starts):
    """`starts.count` perturbed copies of the unconstrained parameters (start 0 as
    given), or `u0` itself."""
    if starts.count is None:
        return u0
    keys = jax.random.split(jax.random.key(starts.seed), len(jax.tree.leaves(u0)))
    leaves, tdef = jax.tree.flatten(u0)
    out = []
    for a, k, s in zip(leaves, keys, jax.tree.leaves(pos_tree)):
        z = jax.random.normal(k, (starts.count,) + a.shape, a.dtype).at[0].set(0.0)
        out.append(a + starts.spread * z if s else a + starts.spread * jnp.abs(a) * z)
    return jax.tree.unflatten(tdef, out)


def _check_batch(u0, static) -> None:
    arrays = [a for a in jax.tree.leaves((u0, static)) if eqx.is_array(a)]
    leads = {np.shape(a)[0] if np.ndim(a) else None for a in arrays}
    if len(leads) != 1 or None in leads or 0 in leads:
        raise ValueError(
            "fit: with `batch=True` every array of `model` has a leading axis of the same number of starts "
            f"(≥ 1); got shapes {[np.shape(a) for a in arrays]}"
        )


def _on_devices(u0, static, own_static, devices):
    """The starts padded to a multiple of the devices and placed on a one-axis mesh."""
    from . import _shard as shard

    mesh = shard.mesh(devices)
    u0, _ = shard.pad(u0, mesh.size)
    if own_static:
        static, _ = shard.pad(static, mesh.size)
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(shard.AXIS))
    return jax.device_put(jax.tree.map(jnp.asarray, u0), sharding), static


def _iterate(u0, problem, settings, steps, progress):
    """The compiled chunks of iterations until every start has stopped (or `steps`),
    and the history."""
    opt, needs_value, gtol, ftol, chunk, batched, own_static = settings
    # strong-typed leaves throughout (a weak-typed scalar in the model or the optimizer
    # state would come back strong from the first chunk and cost a second compilation)
    # (only weak leaves are copied: one eager copy per leaf is one small program each)
    strong = lambda t: jax.tree.map(lambda a: jnp.array(a, dtype=a.dtype) if _weak(a) else a, t)  # noqa: E731
    u0 = strong(u0)
    state = strong(_init(u0, opt, batched))
    shape: tuple[int, ...] = () if not batched else (jax.tree.leaves(u0)[0].shape[0],)
    dtype = jax.tree.leaves(u0)[0].dtype
    # (host arrays put on the device: `jnp.ones` and the like are eager operations)
    carry = (
        u0,
        state,
        jax.device_put(np.ones(shape, bool)),
        jax.device_put(np.full(shape, np.inf, dtype)),
        jax.device_put(np.zeros(shape, np.int32)),
        jax.device_put(np.zeros(shape, bool)),
    )
    losses, gnorms, actives, times = [], [], [], []
    t0 = time.perf_counter()
    n_chunks = -(-steps // chunk)
    meter = TextProgress(progress if isinstance(progress, str) else "fit") if progress else None
    budget = jax.device_put(np.int32(steps))  # an array: another budget runs the same program
    for c in range(n_chunks):
        carry, (v, g, a) = _run_chunk(carry, problem, budget, opt, needs_value, gtol, ftol, chunk, batched, own_static)
        jax.block_until_ready(v)
        t = time.perf_counter() - t0
        losses.append(v)
        gnorms.append(g)
        actives.append(a)
        times.append(np.full(chunk, t))
        if meter is not None:
            meter.update((c + 1) * chunk, n_chunks * chunk, f"loss {float(jnp.min(jnp.asarray(v)[..., -1])):.3e}")
        if not np.any(np.asarray(carry[2])):
            break
    if meter is not None:
        meter.close()
    joined = lambda parts: np.concatenate([np.asarray(p) for p in parts], -1)[..., :steps]  # noqa: E731
    loss_h = joined(losses)
    hist = History(
        loss=jax.device_put(loss_h),
        grad_norm=jax.device_put(joined(gnorms)),
        active=jax.device_put(joined(actives)),
        time=jax.device_put(np.broadcast_to(np.concatenate(times)[:steps], loss_h.shape).copy()),
    )
    return carry, hist


def _result(carry, hist, problem, settings, n_real) -> FitResult:
    """The fit's result from the last carry: the padding of `devices` stripped, the
    best start picked."""
    _, _, _, _, _, batched, own_static = settings
    _, static, _, pos_tree = problem
    u, _, active, _, k, stalled = carry
    final_loss = _final_loss(u, problem, batched, own_static)
    if batched and jax.tree.leaves(u)[0].shape[0] != n_real:  # strip the padding of `devices`
        cut = lambda t: jax.tree.map(lambda a: a[:n_real] if eqx.is_array(a) and a.ndim else a, t)  # noqa: E731
        u, active, k, final_loss, hist = cut(u), active[:n_real], k[:n_real], final_loss[:n_real], cut(hist)
        stalled = stalled[:n_real]
        static = cut(static) if own_static else static
    losses_h = np.asarray(final_loss)
    best = 0 if not batched else int(np.argmin(np.where(np.isfinite(losses_h), losses_h, np.inf)))
    fitted = _from_u(u, pos_tree)
    best_params = (
        fitted if not batched else (jax.tree.map(lambda a: a[best], fitted) if is_traced(fitted) else row(fitted, best))
    )
    best_static = (
        (jax.tree.map(lambda a: a[best], static) if is_traced(static) else row(static, best)) if own_static else static
    )
    return FitResult(
        model=eqx.combine(best_params, best_static),
        params=fitted,
        loss=final_loss,
        steps=k,
        converged=jax.device_put(~np.asarray(active) & ~np.asarray(stalled) & np.isfinite(losses_h)),
        history=hist,
        best=best,
    )


def _weak(a) -> bool:
    """A weak-typed JAX array (a Python scalar's type), which `fit` makes strong."""
    return isinstance(a, jax.Array) and a.weak_type


# geodesic acceleration's bound on `2‖a‖/‖δ‖` (Transtrum and Sethna, 2012)
_ACCELERATION = 0.75


def levenberg_marquardt(residual, v0: Float[Array, " n"], steps: int, geodesic: bool = False, bounds=None):
    """Levenberg–Marquardt on `Σ residual(v)²` from `v0`, `steps` steps as one scanned
    program (jittable, vmappable): the Jacobian by forward mode, a step taken only where
    it lowers the sum (a non-finite sum never does), the damping (Marquardt's, scaled by
    JᵀJ's diagonal) divided by 3 after a success and multiplied by 4 after a failure.
    Near a zero-residual optimum it converges quadratically (Gauss–Newton), where a
    first-order method creeps.

    `geodesic`: each step `δ` gains half the geodesic acceleration `a`, the same damped
    system's solution for the residual's second derivative along `δ` (a second
    forward-mode derivative), where `2‖a‖ ≤ 0.75 ‖δ‖` (Transtrum and Sethna's bound;
    beyond it the step stays straight): a step that follows a valley's curve, where a
    straight one leaves it and creeps.

    `bounds`: `(lower, upper)`, arrays of `v`'s shape (±inf for an open side), `v0`
    inside: projected Levenberg–Marquardt. A coordinate at a bound whose descent leads
    out of the box is held there (its row and column of the damped system dropped: the
    step is the Gauss–Newton step on the others), and the step is clipped into the box;
    so an optimum that leans on bounds is reached at Gauss–Newton's rate in the free
    coordinates, where a smooth transform onto the box (flat at the bound) creeps.

    **Returns:** `(v, losses, grad_norms)`: the last point, and per step the sum of
    squares and `‖∇‖ = 2‖Jᵀr‖` at the step's start (with `bounds`, the projected
    gradient's: the held coordinates' parts dropped)."""

    def f(v):
        return jnp.sum(residual(v) ** 2)

    if bounds is None:
        lower, upper = jnp.full_like(v0, -jnp.inf), jnp.full_like(v0, jnp.inf)
    else:
        lower, upper = (jnp.broadcast_to(jnp.asarray(b, v0.dtype), v0.shape) for b in bounds)
    near = lambda v, b: jnp.isfinite(b) & (jnp.abs(v - b) <= 1e-12 * (1 + jnp.abs(b)))  # noqa: E731

    def step(carry, _):
        v, mu, fv = carry
        J, rv = jax.jacfwd(lambda x: (residual(x),) * 2, has_aux=True)(v)  # (the residual evaluated once)
        H, g = J.T @ J, J.T @ rv
        held = ((v <= lower) | near(v, lower)) & (g > 0) | ((v >= upper) | near(v, upper)) & (g < 0)
        free = ~held
        g = jnp.where(free, g, 0.0)
        H = jnp.where(free[:, None] & free[None, :], H, 0.0)
        scale = jnp.maximum(jnp.diag(H), 1e-12 * (1 + jnp.max(jnp.diag(H))))
        damped = H + jnp.diag(mu * scale + held.astype(H.dtype))  # (a held row: δ = 0)
        delta = jnp.linalg.solve(damped, -g)
        if geodesic:
            rvv = jax.jvp(lambda x: jax.jvp(residual, (x,), (delta,))[1], (v,), (delta,))[1]
            a = jnp.linalg.solve(damped, -jnp.where(free, J.T @ jnp.where(jnp.isfinite(rvv), rvv, 0.0), 0.0))
            along = 2 * jnp.linalg.norm(a) <= _ACCELERATION * jnp.linalg.norm(delta)
            delta = delta + jnp.where(along, 0.5 * a, 0.0)
        new = jnp.clip(v + delta, lower, upper)
        fn = f(new)
        ok = jnp.isfinite(fn) & (fn < fv)
        fv = jnp.where(ok, fn, fv)
        return (jnp.where(ok, new, v), jnp.where(ok, mu / 3, mu * 4), fv), (fv, 2 * jnp.linalg.norm(g))

    (v, _, _), (losses, grads) = jax.lax.scan(step, (v0, jnp.asarray(1e-3, v0.dtype), f(v0)), None, length=steps)
    return v, losses, grads
