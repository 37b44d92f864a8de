"""`diffmech sweep`: crank sweeps of many four-bars from a file, across devices,
resumable by chunks.

DESIGNS.npz holds `lengths` `(n, 4)` (crank, coupler, rocker, ground, as in
`diffmech.FourBar`; optionally `branch` `(n,)` of ±1, default +1). RESULT.npz holds
`theta_A` `(N,)` (N crank angles over one revolution from 0: 2πk/N, k = 0 … N−1),
`q` `(n, N, 6)` (the attitude vectors qA, qB, qD; NaN where not converged),
`converged` `(n, N)` (False past a motion limit: a crank that cannot turn fully stops
there, or where a design does not assemble at 0) and `lengths`.

Each chunk of designs is written to `RESULT.npz.chunks/` as it finishes (atomically:
a temporary file, then a rename); a run started again with the same designs, steps
and chunking loads the finished chunks instead of recomputing them, and the folder is
removed once RESULT.npz is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from . import _shard as shard
from .fourbar import _kinematics as fbk
from .fourbar._model import FourBar


def load_designs(path) -> tuple[np.ndarray, np.ndarray]:
    """`lengths` `(n, 4)` and `branch` `(n,)` from DESIGNS.npz, validated."""
    try:
        z = np.load(path)  # pickled objects are refused (allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        if isinstance(e, FileNotFoundError):
            raise ValueError(f"{path}: no such file") from None
        raise ValueError(
            f"{path}: not a NumPy .npz archive (write one with numpy.savez(path, lengths=...)); could not read it"
        ) from None
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise ValueError(f"{path}: a single array (.npy), not an .npz archive with an array 'lengths'")
    with z:
        if "lengths" not in z.files:
            raise ValueError(f"{path}: no array 'lengths' (n × 4 link lengths); found {sorted(z.files)}")
        try:
            lengths = np.asarray(z["lengths"], dtype=float)
            branch = np.asarray(z["branch"], dtype=float) if "branch" in z.files else np.ones(lengths.shape[:1])
        except (TypeError, ValueError):
            raise ValueError(f"{path}: 'lengths' and 'branch' must be arrays of numbers") from None
    if lengths.ndim != 2 or lengths.shape[1] != 4 or lengths.shape[0] < 1:
        raise ValueError(f"{path}: 'lengths' must be n × 4 (crank, coupler, rocker, ground); got shape {lengths.shape}")
    bad = ~np.all(np.isfinite(lengths) & (lengths > 0), axis=1)
    if bad.any():
        raise ValueError(
            f"{path}: lengths must be finite and positive; design(s) {np.flatnonzero(bad)[:10].tolist()} "
            f"are not (first: {lengths[bad][0].tolist()})"
        )
    if branch.shape != lengths.shape[:1] or not np.all(np.isin(branch, (-1.0, 1.0))):
        raise ValueError(f"{path}: 'branch' must be n values of +1 or -1")
    return lengths, branch


def _one(theta):
    def f(design):
        lengths, branch = design
        fb = FourBar(lengths=lengths)
        # the branch is traced (FourBar.branch is static): one program for both branches
        s = fbk.sweep_functional(fb, theta, condition=False, sign=branch * fbk.branch_sign(fb))
        return jnp.where(s.converged[:, None], s.q, jnp.nan), s.converged

    return f


_FNS: dict = {}


def sweep(
    lengths,
    branch=None,
    *,
    steps: int,
    devices: str | int | Sequence = "all",
    per_device: int = 256,
    chunk_dir=None,
    progress: bool = False,
    counts: dict | None = None,
):
    """Sweep every design through `steps` crank angles over one revolution, across
    `devices`; with `chunk_dir`, finished chunks are saved there and reused. `counts`
    (a dict, optional) receives `"resumed"` (chunks loaded from `chunk_dir`) and
    `"computed"` (chunks solved by this call).

    **Returns:** `theta_A` `(steps,)`, `q` `(n, steps, 6)`, `converged` `(n, steps)`.
    """
    lengths = np.asarray(lengths, dtype=float)
    branch = np.ones(lengths.shape[:1]) if branch is None else np.asarray(branch, dtype=float)
    if steps < 1:
        raise ValueError(f"sweep: `steps` must be ≥ 1; got {steps}")
    theta = 2 * np.pi * np.arange(steps) / steps
    dt = jnp.asarray(0.0).dtype  # float64 with jax_enable_x64, else float32 (throughput mode)
    if (steps, dt) not in _FNS:  # one function object per angle count: the compiled program is reused
        _FNS[steps, dt] = _one(jnp.asarray(theta, dtype=dt))
    n_dev = len(shard.devices(devices))
    counts = {} if counts is None else counts
    counts.update(resumed=0, computed=0)
    on_chunk: Callable | None = None
    skip: Callable | None = None
    if chunk_dir is not None:
        on_chunk, skip = _chunk_store(chunk_dir, lengths, branch, steps, per_device * n_dev, counts)
    q, conv = shard.run(
        _FNS[steps, dt],
        (lengths.astype(dt), branch.astype(dt)),
        devices=devices,
        per_device=per_device,
        progress=progress,
        on_chunk=on_chunk,
        skip=skip,
    )
    return theta, q, conv


def _chunk_store(chunk_dir, lengths, branch, steps, chunk, counts):
    """`shard.run`'s `on_chunk` and `skip` for a resumable sweep: finished chunks
    saved in `chunk_dir` (atomically) and loaded again by a run of the same designs,
    steps and chunk size; `counts` receives `resumed` and `computed`."""
    os.makedirs(chunk_dir, exist_ok=True)
    h = hashlib.sha256()
    for a in (lengths, branch):
        h.update(np.ascontiguousarray(a).tobytes())
    # the chunk size (not the device count) fixes the chunks: a run resumed on
    # another number of devices reuses them when per_device × devices matches
    manifest = {"designs": h.hexdigest(), "steps": steps, "chunk": chunk}
    mpath = os.path.join(chunk_dir, "manifest.json")
    if os.path.exists(mpath):
        with open(mpath) as fh:
            old = json.load(fh)
        if old != manifest:
            raise ValueError(f"{chunk_dir} holds chunks of another sweep ({old}); remove it or pass another --out")
    else:
        with open(mpath, "w") as fh:
            json.dump(manifest, fh)

    def name(k):
        return os.path.join(chunk_dir, f"chunk_{k:06d}.npz")

    def on_chunk(k, start, stop, out):
        tmp = name(k) + ".tmp.npz"
        np.savez(tmp, q=out[0], converged=out[1], start=start, stop=stop)
        os.replace(tmp, name(k))
        counts["computed"] += 1

    def skip(k, start, stop):
        if not os.path.exists(name(k)):
            return None
        with np.load(name(k)) as z:
            if int(z["start"]) != start or int(z["stop"]) != stop:
                return None
            counts["resumed"] += 1
            return z["q"], z["converged"]

    return on_chunk, skip


def sweep_file(
    designs, out, *, steps: int, devices: str | int | Sequence = "all", per_device: int = 256, progress: bool = True
) -> dict:
    """`diffmech sweep`: read DESIGNS.npz, sweep, write RESULT.npz (see the module)."""
    lengths, branch = load_designs(designs)
    chunk_dir = os.fspath(out) + ".chunks"
    counts: dict = {}
    theta, q, conv = sweep(
        lengths,
        branch,
        steps=steps,
        devices=devices,
        per_device=per_device,
        chunk_dir=chunk_dir,
        progress=progress,
        counts=counts,
    )
    tmp = os.fspath(out) + ".tmp.npz"
    np.savez(tmp, theta_A=theta, q=q, converged=conv, lengths=lengths)
    os.replace(tmp, out)
    shutil.rmtree(chunk_dir, ignore_errors=True)
    return {
        "designs": int(lengths.shape[0]),
        "steps": steps,
        "devices": len(shard.devices(devices)),
        "platform": jax.devices()[0].platform,
        "converged": int(conv.sum()),
        **counts,
    }
