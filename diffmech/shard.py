"""Batches across devices (and hosts) on JAX's own sharding.

`run(fn, batch, devices=, per_device=)` evaluates `fn` on every element of a batch
spread over a one-axis `Mesh` (`NamedSharding`, `shard_map` of `vmap`), padding and
stripping ragged batches; the per-device program does not depend on the device count,
so results are the same on one device and on many. `initialize` joins several
processes (`jax.distributed`). Details: the module `diffmech._shard`.
"""

from ._shard import (
    AXIS as AXIS,
    batch_size as batch_size,
    devices as devices,
    initialize as initialize,
    mesh as mesh,
    pad as pad,
    run as run,
    strip as strip,
)
