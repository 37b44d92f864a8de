"""Batches across devices (and hosts) on JAX's own sharding.

`run(fn, batch)` evaluates `fn` on every element of `batch` (a pytree whose array
leaves share a leading batch axis): the batch is cut into chunks of
`per_device × len(devices)` elements, the last one padded by repeating its last
element (real inputs: padding never produces NaNs or failed solves of its own), each
chunk placed across the devices with a one-axis `Mesh` and `NamedSharding`, evaluated
by `shard_map(vmap(fn))` — every device runs the same program on `per_device`
elements, with no communication — and the padding stripped from what comes back.

Because every device always runs `vmap(fn)` over exactly `per_device` elements, one
device and many run the same per-device program: results are bitwise identical
whatever the device count (tested with forced CPU devices). With several processes
(`jax.distributed.initialize`, see `initialize`), `jax.devices()` lists every host's
devices, each process places its addressable shards, and the results are gathered to
every process.

`pad` and `strip` are exposed for batch computations of your own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import equinox as eqx
import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ._progress import TextProgress
from ._validate import ArgumentTypeError, check_callable, check_count, check_type
from ._xla import jit

__all__ = ["batch_size", "devices", "initialize", "mesh", "pad", "run", "strip"]

AXIS = "batch"


def devices(spec: str | int | Sequence = "all") -> list:
    """The devices a batch is spread over: `"all"` (every device of every process,
    `jax.devices()`), `n` (the first n of them) or a list of devices.

    **Arguments:** `spec`: `"all"`, a count or a list of devices. **Returns:** a list of
    devices.
    """
    every = jax.devices()
    if isinstance(spec, str):
        if spec != "all":
            raise ValueError(f"devices: expected 'all', a count or a list of devices; got {spec!r}")
        return list(every)
    if isinstance(spec, (int, np.integer)):
        if not 1 <= int(spec) <= len(every):
            raise ValueError(
                f"devices: asked for {int(spec)} devices; {len(every)} available "
                f"({every[0].platform}; on CPU, XLA_FLAGS=--xla_force_host_platform_device_count=N "
                "before JAX starts gives N)"
            )
        return list(every[: int(spec)])
    out = list(spec)
    if not out:
        raise ValueError("devices: the list of devices is empty")
    bad = [d for d in out if not isinstance(d, jax.Device)]
    if bad:
        raise ArgumentTypeError(
            f"devices: expected 'all', a count or a list of JAX devices; got {bad[0]!r} in the list"
        )
    return out


def mesh(devs: str | int | Sequence = "all") -> Mesh:
    """A one-axis mesh (axis name `"batch"`) over `devices(devs)`.

    **Arguments:** `devs`: as `devices`' `spec`.
    """
    return Mesh(np.asarray(devices(devs)), (AXIS,))


def batch_size(batch) -> int:
    """The common leading size of the array leaves of `batch`; ValueError naming the
    leaves if they disagree or there are none."""
    leaves = [x for x in jax.tree.leaves(batch) if eqx.is_array_like(x) and np.ndim(x) > 0]
    sizes = {np.shape(x)[0] for x in leaves}
    if len(sizes) != 1:
        raise ValueError(
            f"shard: the array leaves of the batch must share a leading batch axis; got leading sizes "
            f"{sorted(sizes) if sizes else 'none (no batched arrays)'}"
        )
    n = sizes.pop()
    if n < 1:
        raise ValueError("shard: the batch is empty (a leading batch axis of size 0)")
    return n


def pad(batch, multiple: int):
    """Pad the leading axis of every array leaf to a multiple of `multiple` by repeating
    the last element; returns `(padded, n)` with `n` the original size.

    **Arguments:** `batch`: a pytree whose array leaves share their leading size;
    `multiple` as above.
    """
    check_count("shard.pad", "multiple", multiple)
    n = batch_size(batch)
    extra = -n % multiple

    def one(x):
        if not (eqx.is_array_like(x) and np.ndim(x) > 0) or extra == 0:
            return x
        x = np.asarray(x)
        return np.concatenate([x, np.repeat(x[-1:], extra, axis=0)])

    return jax.tree.map(one, batch), n


def strip(batch, n: int):
    """The first `n` elements of every array leaf (undo `pad`).

    **Arguments:** `batch`: a padded pytree; `n`: the original size.
    """
    check_count("shard.strip", "n", n, 0)
    return jax.tree.map(lambda x: x[:n] if eqx.is_array_like(x) and np.ndim(x) > 0 else x, batch)


def initialize(coordinator: str, num_processes: int, process_id: int, local_devices: int | None = None) -> None:
    """Join a multi-process run (`jax.distributed.initialize`) before any other JAX
    call. On CPU the cross-process collectives use gloo. `local_devices`: force this
    many CPU devices in this process (XLA_FLAGS must not have been read yet).

    **Arguments:** `coordinator`: `host:port` of process 0; `num_processes`: the number
    of processes; `process_id`: this process's index (0 … num_processes − 1);
    `local_devices` as above.
    """
    import os

    check_type("shard.initialize", "coordinator", coordinator, str, "'host:port' of process 0")
    check_count("shard.initialize", "num_processes", num_processes)
    check_count("shard.initialize", "process_id", process_id, 0)
    if process_id >= num_processes:
        raise ValueError(
            f"shard.initialize: `process_id` must be in 0 … num_processes − 1 = {num_processes - 1}; got {process_id}"
        )
    if local_devices is not None:
        check_count("shard.initialize", "local_devices", local_devices)
    if local_devices is not None:
        flags = os.environ.get("XLA_FLAGS", "")
        os.environ["XLA_FLAGS"] = f"{flags} --xla_force_host_platform_device_count={int(local_devices)}".strip()
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=coordinator, num_processes=num_processes, process_id=process_id)


def _place(x, sharding):
    """A host array as a global array with `sharding` (each process supplies only its
    addressable shards: works with one process and with several)."""
    x = np.asarray(x)
    return jax.make_array_from_callback(x.shape, sharding, lambda idx: x[idx])


def _gather(x):
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    return np.asarray(x)


_PROGRAMS: dict = {}


def _program(fn, static, m: Mesh):
    leaves, treedef = jax.tree.flatten(static)
    key = (fn, treedef, tuple(leaves), m)
    if key not in _PROGRAMS:
        spec = PartitionSpec(AXIS)

        def body(dynamic):
            return jax.vmap(lambda d: fn(eqx.combine(d, static)))(dynamic)

        # check_vma off: the library's loops start from constants (Newton, continuation)
        _PROGRAMS[key] = jit(
            jax.shard_map(body, mesh=m, in_specs=spec, out_specs=spec, check_vma=False), top_level=True
        )
    return _PROGRAMS[key]


def run(
    fn: Callable,
    batch,
    *,
    devices: str | int | Sequence = "all",
    per_device: int = 64,
    progress: bool = False,
    on_chunk: Callable | None = None,
    skip: Callable | None = None,
):
    """Evaluate `fn` on every element of `batch` across `devices`.

    **Arguments:** `fn(element) -> pytree of arrays`, jittable (an element is `batch`
    with the leading axis removed from its array leaves; non-array leaves are static);
    `batch`; `devices` as in `devices()`; `per_device`: elements each device evaluates
    per chunk (the compiled shape: the same on one device and on many); `progress`: a
    text progress bar on stderr; `on_chunk`: `on_chunk(k, start, stop, result)` is
    called with each finished chunk (host arrays, padding stripped), e.g. to save it;
    `skip`: `skip(k, start, stop)` returns a finished chunk's result (e.g. loaded from
    disk) to skip evaluating it, or None.

    **Returns:** `fn`'s outputs for the whole batch, as host (NumPy) arrays with the
    leading axis of `batch`.
    """
    if not callable(fn):
        raise ValueError(f"shard.run: `fn` must be a function of one element of the batch; got {fn!r}")
    check_count("shard.run", "per_device", per_device)
    for name, cb in (("on_chunk", on_chunk), ("skip", skip)):
        if cb is not None:
            check_callable(
                "shard.run", name, cb, f"a function ({name}(k, start, stop{', result' if name == 'on_chunk' else ''}))"
            )
    m = mesh(devices)
    n = batch_size(batch)
    chunk = per_device * m.size
    dynamic, static = eqx.partition(batch, lambda x: eqx.is_array_like(x) and np.ndim(x) > 0)
    f = _program(fn, static, m)
    sharding = NamedSharding(m, PartitionSpec(AXIS))
    parts, n_chunks = [], math.ceil(n / chunk)
    meter = TextProgress() if progress else None
    for k in range(n_chunks):
        start, stop = k * chunk, min(n, (k + 1) * chunk)
        out = skip(k, start, stop) if skip is not None else None
        if out is None:
            piece, size = pad(jax.tree.map(lambda x: x[start:stop], dynamic), chunk)
            try:
                res = f(jax.tree.map(lambda x: _place(x, sharding), piece))
            except TypeError as e:  # raised while tracing `fn` (e.g. it returns a string)
                raise ArgumentTypeError(
                    f"shard.run: `fn` must be a jittable function of one element returning a pytree of arrays: {e}"
                ) from e
            out = strip(jax.tree.map(_gather, res), size)
            if on_chunk is not None:
                on_chunk(k, start, stop, out)
        parts.append(out)
        if meter is not None:
            meter.update(stop, n)
    if meter is not None:
        meter.close()
    return jax.tree.map(lambda *xs: np.concatenate(xs), *parts)
