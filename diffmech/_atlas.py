"""An atlas of four-bar coupler curves, matched to target points by shape.

The atlas holds `size` four-bars whose crank turns fully (Grashof crank-rockers and drag
links, ground length 1, coupler points spread around the coupler, both assembly
branches), each with its closed coupler curve resampled at equal arc length and the
curve's Fourier descriptor: the magnitudes of its first `harmonics` positive and
negative harmonics, normalised (invariant to translation, rotation, scale and where the
curve starts). It is indexed flat: a query is one matrix–vector product over all
descriptors (exact nearest neighbours; 65,536 × 20 numbers, a millisecond), and the
closest are ranked again by their exact similarity fit (every start point and both
directions; `align`).

It stores the designs and their descriptors (8.9 MB at the default size; the few curves
a query aligns are recomputed). It is built once (`build`, or `diffmech atlas build`;
3 s on 2 CPU cores) and cached on disk (`path()`: `$DIFFMECH_CACHE/atlas.npz`, default
`~/.cache/diffmech/atlas.npz`); `load` rebuilds a cache that is missing, unreadable or
built with other settings or another format version, and says so.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from . import _cache
from ._geometry import attitude
from ._progress import TextProgress
from ._xla import jit
from .fourbar import _kinematics as fbk
from .fourbar._model import FourBar

FORMAT = 1  # bump when what is stored, or how, changes: a cache of another format is stale
SIZE = 65536  # designs
SAMPLES = 128  # crank angles per curve (one revolution)
POINTS = 64  # arc-length samples per curve (the descriptor's and the alignment's)
HARMONICS = 10  # harmonics ±1 … ±HARMONICS in the descriptor


@dataclasses.dataclass(frozen=True)
class Atlas:
    """Designs (ground length 1; A at the origin, D at (1, 0)) and their curves.

    - `lengths` `(N, 4)`, `point` `(N, 2)` (coupler frame), `sign` `(N,)` (±1, the
      assembly branch as `fourbar.closed_form`'s `sign`);
    - `descriptors` `(N, 2·HARMONICS)` (float32): unit-norm Fourier magnitudes;
    - `meta`: the settings it was built with (`format`, `size`, `seed`, ...)."""

    lengths: np.ndarray
    point: np.ndarray
    sign: np.ndarray
    descriptors: np.ndarray
    meta: dict

    def __len__(self) -> int:
        return int(self.lengths.shape[0])

    def curves(self, rows) -> np.ndarray:
        """The closed coupler curves of designs `rows` `(k, POINTS)` complex, at equal
        arc length, in the order the crank meets them turning anticlockwise
        (recomputed: the atlas stores designs and descriptors, not curves)."""
        rows = np.asarray(rows)
        return _curves(self.lengths[rows], self.point[rows], self.sign[rows])


def path() -> pathlib.Path:
    """Where the atlas is cached: `$DIFFMECH_CACHE/atlas.npz` (default
    `~/.cache/diffmech/atlas.npz`, under `$XDG_CACHE_HOME` where set)."""
    return _cache.root() / "atlas.npz"


def _settings(size: int, seed: int) -> dict:
    return dict(format=FORMAT, size=size, seed=seed, samples=SAMPLES, points=POINTS, harmonics=HARMONICS)


def _designs(size: int, seed: int):
    """`size` four-bars whose crank turns fully (with a margin), from a scrambled Sobol
    sequence: lengths log-uniform in [0.1, 3] × ground (1), rejected unless the crank
    turns; coupler points uniform in a box around the coupler; both branches."""
    from scipy.stats import qmc  # imported on first use: scipy.stats takes a while to import

    rng = np.random.default_rng(seed)
    sob = qmc.Sobol(6, scramble=True, rng=rng)
    out = []
    have = 0
    while have < size:
        u = sob.random(max(2 * size, 1024))
        l = np.exp(np.log(0.1) + np.log(30.0) * u[:, 0:3])
        lengths = np.c_[l, np.ones(len(u))]
        c_min, c_max = (np.asarray(v) for v in fbk.crank_limit_cosines(lengths))
        turns = (c_min >= 1.02) & (c_max <= -1.02)
        point = lengths[:, 1:2] * np.c_[-1.0 + 3.0 * u[:, 3], -1.5 + 3.0 * u[:, 4]]
        sign = np.where(u[:, 5] < 0.5, 1.0, -1.0)
        keep = np.flatnonzero(turns)
        out.append((lengths[keep], point[keep], sign[keep]))
        have += keep.size
    lengths, point, sign = (np.concatenate(parts)[:size] for parts in zip(*out, strict=True))
    return lengths, point, sign


@jit
def _curves_jit(lengths, point, sign, theta):
    def one(le, p, s):
        fb = FourBar(lengths=le)
        x, _ = jax.vmap(lambda th: fbk.closed_form(fb, th, s))(theta)
        q = jnp.concatenate([attitude(theta), x], axis=-1)
        return fbk.coupler_point(fb, q, p)

    return jax.vmap(one)(lengths, point, sign)


def _curves(lengths, point, sign, chunk: int = 8192, points: int = POINTS) -> np.ndarray:
    theta = jnp.linspace(0.0, 2 * np.pi, SAMPLES, endpoint=False)
    out = []
    for i in range(0, len(lengths), chunk):
        part = [jnp.asarray(v[i : i + chunk]) for v in (lengths, point, sign)]
        xy = np.asarray(_curves_jit(*part, theta))
        out.append(_resample(xy[..., 0] + 1j * xy[..., 1], points))
    return np.concatenate(out) if out else np.zeros((0, points), complex)


def _resample(z: np.ndarray, points: int = POINTS) -> np.ndarray:
    """Closed curves `z` `(N, M)` complex resampled at `points` equal arc lengths,
    starting at each curve's first sample, in its order."""
    z = np.atleast_2d(z)
    seg = np.abs(np.diff(np.concatenate([z, z[:, :1]], axis=1), axis=1))
    s = np.concatenate([np.zeros((z.shape[0], 1)), np.cumsum(seg, axis=1)], axis=1)  # (N, M+1)
    total = s[:, -1:]
    closed = np.concatenate([z, z[:, :1]], axis=1)
    want = total * (np.arange(points) / points)[None, :]
    # per row: the segment each wanted length falls in
    idx = np.clip(np.sum(s[:, None, :] <= want[:, :, None], axis=2) - 1, 0, z.shape[1] - 1)
    rows = np.arange(z.shape[0])[:, None]
    s0, s1 = s[rows, idx], s[rows, idx + 1]
    w = np.where(s1 > s0, (want - s0) / np.where(s1 > s0, s1 - s0, 1.0), 0.0)
    return closed[rows, idx] * (1 - w) + closed[rows, idx + 1] * w


def _descriptor(curves: np.ndarray, reverse: bool = False) -> np.ndarray:
    """Unit-norm magnitudes of harmonics −H … −1, 1 … H of closed curves `(N, P)` at
    equal arc length (`reverse`: of the curves run backwards: k ↔ −k)."""
    c = np.fft.fft(curves, axis=1) / curves.shape[1]
    h = np.r_[np.arange(-HARMONICS, 0), np.arange(1, HARMONICS + 1)]
    if reverse:
        h = -h
    m = np.abs(c[:, h % curves.shape[1]])
    return m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-300)


def build(size: int = SIZE, seed: int = 0, file=None, progress: bool = True) -> Atlas:
    """Build the atlas (`size` designs; reproducible by `seed`) and save it to `file`
    (default `path()`; `False`: not saved). Returns it."""
    if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size < 1:
        raise ValueError(f"atlas.build: `size` must be a positive integer; got {size!r}")
    t0 = time.perf_counter()
    lengths, point, sign = _designs(int(size), seed)
    desc = []
    chunk = 8192
    meter = TextProgress("atlas") if progress else None
    for i in range(0, len(lengths), chunk):
        curves = _curves(lengths[i : i + chunk], point[i : i + chunk], sign[i : i + chunk])
        desc.append(_descriptor(curves).astype(np.float32))
        if meter is not None:
            meter.update(min(i + chunk, len(lengths)), len(lengths), "curves")
    if meter is not None:
        meter.close()
    atlas = Atlas(
        lengths=lengths,
        point=point,
        sign=sign,
        descriptors=np.concatenate(desc),
        meta=dict(_settings(int(size), seed), build_seconds=round(time.perf_counter() - t0, 2)),
    )
    if file is not False:
        save(atlas, path() if file is None else file)
    return atlas


def save(atlas: Atlas, file) -> None:
    file = pathlib.Path(file)
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_name(f"{file.stem}.{os.getpid()}.tmp.npz")
    np.savez(
        tmp,
        lengths=atlas.lengths,
        point=atlas.point,
        sign=atlas.sign,
        descriptors=atlas.descriptors,
        meta=np.array(sorted(atlas.meta.items()), dtype=object).astype(str),
    )
    tmp.replace(file)


def _read(file) -> Atlas:
    with np.load(file, allow_pickle=False) as d:
        meta = {}
        for k, v in d["meta"]:
            meta[str(k)] = int(v) if str(v).lstrip("-").isdigit() else float(v)
        return Atlas(
            lengths=d["lengths"],
            point=d["point"],
            sign=d["sign"],
            descriptors=d["descriptors"],
            meta=meta,
        )


_LOADED: dict = {}


def load(size: int | None = None, seed: int = 0, file=None, progress: bool = True) -> Atlas:
    """The cached atlas built with these settings (`size`: default `SIZE`): read from
    `file` (default `path()`), or built and saved there where it is missing, unreadable
    or stale (built with other settings or another format), with a line on stderr saying
    which and why."""
    size = SIZE if size is None else size
    file = pathlib.Path(path() if file is None else file)
    want = _settings(int(size), seed)
    key = (str(file), tuple(sorted(want.items())))
    if key in _LOADED:
        return _LOADED[key]
    why = None
    if not file.exists():
        why = "missing"
    else:
        try:
            atlas = _read(file)
        except Exception as e:  # a truncated or foreign file: rebuilt
            why = f"unreadable ({type(e).__name__})"
        else:
            got = {k: atlas.meta.get(k) for k in want}
            if got != want:
                why = f"stale (built with {got}, wanted {want})"
    if why is not None:
        print(f"diffmech: the four-bar atlas at {file} is {why}; building it (size {size})", file=sys.stderr)
        atlas = build(size, seed, file, progress=progress)
    _LOADED[key] = atlas
    return atlas


def target_curve(targets: np.ndarray) -> np.ndarray:
    """The closed polygon through `targets` `(n, 2)`, in their order, at equal arc length."""
    z = targets[:, 0] + 1j * targets[:, 1]
    return _resample(z[None, :])[0]


def align(curves: np.ndarray, target: np.ndarray):
    """The similarity `z ↦ a z + b` (a complex: scale and turn) that best maps each of
    `curves` `(N, P)` onto `target` `(P,)`, over every start point and both directions.

    **Returns:** `(error, a, b, reverse)`, each `(N,)`: the relative residual
    ‖target − (a c + b)‖² / ‖target − mean‖², the best `a`, `b`, and whether the curve
    runs backwards (the crank turning clockwise)."""
    t = target - target.mean()
    tt = np.vdot(t, t).real
    best = (np.full(curves.shape[0], np.inf), None, None, None)
    for reverse in (False, True):
        c = curves[:, ::-1] if reverse else curves
        c = c - c.mean(axis=1, keepdims=True)
        cc = np.sum(np.abs(c) ** 2, axis=1)
        # <roll(c, s), t> for every shift s at once: a circular cross-correlation by FFT
        corr = np.fft.ifft(np.conj(np.fft.fft(c, axis=1)) * np.fft.fft(t)[None, :], axis=1)
        # corr[:, s] = Σ_j conj(c[j]) t[j + s] = <c, roll(t, -s)> = <roll(c, s), t>
        err = (tt - np.abs(corr) ** 2 / cc[:, None]) / tt
        s = np.argmin(err, axis=1)
        rows = np.arange(curves.shape[0])
        e = err[rows, s]
        a = corr[rows, s] / cc
        better = e < best[0]
        b = target.mean() - a * curves.mean(axis=1)  # the mean does not depend on the start or direction
        if best[1] is None:
            best = (e, a, b, np.full(len(e), reverse))
        else:
            best = (
                np.where(better, e, best[0]),
                np.where(better, a, best[1]),
                np.where(better, b, best[2]),
                np.where(better, reverse, best[3]),
            )
    return best


def fit_points(curves: np.ndarray, points: np.ndarray, a, b, iterations: int = 8):
    """Refine similarities `z ↦ a z + b` so that `curves` `(N, M)` (dense) pass through
    `points` `(n,)` complex (each point to its nearest curve sample; the alternating
    iterations of ICP). Returns `(error, a, b)`: the mean squared distance of the points
    to the mapped curves, relative to the points' variance, and the refined maps."""
    a, b = np.asarray(a, complex).copy(), np.asarray(b, complex).copy()
    var = np.mean(np.abs(points - points.mean()) ** 2)
    rows = np.arange(curves.shape[0])[:, None]
    for _ in range(iterations + 1):
        mapped = a[:, None] * curves + b[:, None]
        d = np.abs(mapped[:, None, :] - points[None, :, None]) ** 2  # (N, n, M)
        near = np.argmin(d, axis=2)
        err = np.mean(np.take_along_axis(d, near[..., None], 2)[..., 0], axis=1) / var
        if _ == iterations:
            break
        c = curves[rows, near]  # (N, n): the curve samples paired with the points
        cc = c - c.mean(axis=1, keepdims=True)
        a = np.sum(np.conj(cc) * (points - points.mean())[None, :], axis=1) / np.maximum(
            np.sum(np.abs(cc) ** 2, axis=1), 1e-300
        )
        b = points.mean() - a * c.mean(axis=1)
    return err, a, b


def match(atlas: Atlas, targets: np.ndarray, count: int, shortlist: int = 8):
    """The `count` atlas designs whose curves pass closest to `targets` `(n, 2)`: the
    `shortlist × count` nearest by descriptor to the closed polygon through them (either
    direction), aligned to it exactly (`align`), then fitted to the points themselves
    (`fit_points`) and ranked by that fit. Returns `(rows, error, a, b, reverse)`."""
    targets = np.asarray(targets, dtype=float)
    tc = target_curve(targets)
    d = np.concatenate([_descriptor(tc[None, :]), _descriptor(tc[None, :], reverse=True)])
    dist = np.min(2.0 - 2.0 * (atlas.descriptors @ d.T.astype(np.float32)), axis=1)  # unit vectors: ‖x − y‖²
    k = min(len(atlas), shortlist * count)
    near = np.argpartition(dist, k - 1)[:k] if k < len(atlas) else np.arange(len(atlas))
    _, a, b, rev = align(atlas.curves(near), tc)
    dense = _curves(atlas.lengths[near], atlas.point[near], atlas.sign[near], points=4 * POINTS)
    err, a, b = fit_points(dense, targets[:, 0] + 1j * targets[:, 1], a, b)
    order = np.argsort(err, kind="stable")[:count]
    return near[order], err[order], a[order], b[order], rev[order]
