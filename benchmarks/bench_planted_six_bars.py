"""Six-bar path synthesis on planted problems: points on a random six-bar's coupler
curve are met exactly by that six-bar, so each problem's optimum is known. Each problem
is generated from its seed:

- a six-bar of one of four types, taken in turn: Watt I, Stephenson I, II and III
  (Watt II is left out: every point of its links traces a circle or a four-bar's
  coupler curve, its second four-bar's, so a four-bar meets its targets exactly); a
  random design of the type (every joint uniform in a square about the reference's
  centroid), kept when its input turns fully (the closure core's sweep over the turn),
  every RRR dyad's transmission angle stays at least 20° from a toggle (the search's
  default `margin` is about 1°) and its curve is at least 0.3 of the design's size;
- `n` targets (12 to 20) at random inputs over the turn, moved by a random similarity;
- kept only if no four-bar meets the targets to within 1 % of their size: the four-bar
  search's default call (`path_generation(T)`, free timing) ends above a relative
  error of 0.01 (else the design is drawn again);
- the timing mode: `free` (the targets in a random order) or `cyclic` (in their order
  along the curve).

With `--unfiltered` the first draw is kept (no four-bar search: the six-bar search's
own difficulty, without the filter's minutes a problem). The call is the default one
on the type's topology, `path_generation(T, mechanism=six_bar(type))`. A problem is
solved when the returned design meets the targets to a relative error of 1e-6 (the
planted design's is 0). Reported per mode and type: the success rate, the median
relative error, the median time of a problem whose programs were compiled (its type
and size class seen before) and of the first, and the draws a problem took (the
filter's rejections plus one).

With `--conditioning`, each problem's line also gives the polish's Jacobian at the
returned design (free timing, normalised units: the rows of `residuals`, the columns
the joints' coordinates and the inputs at the targets): its nonzero singular values'
count against the residual rows that carry a target (the design's freedom against the
targets' equations) and the smallest three relative to the largest, with a central
difference check of the Jacobian along a random direction.

    python benchmarks/bench_planted_six_bars.py [--problems 10] [--modes free,cyclic]
        [--unfiltered] [--conditioning]

Writes benchmarks/results/planted_six_bars.json (rows of other modes kept). Run it alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import diffmech as dm  # noqa: E402
from benchmarks._timing import write_results  # noqa: E402
from diffmech import _linkage_synthesis as ls, synthesis  # noqa: E402

SOLVED = 1e-6
NOT_A_FOUR_BAR = 1e-2
TOGGLE = np.sin(np.deg2rad(20.0))
KINDS = ("watt1", "stephenson1", "stephenson2", "stephenson3")


def _random_six_bar(kind: str, rng):
    """A random design of `kind` meeting the planted set's conditions (closure core)."""
    ref = dm.examples.six_bar(kind)
    pts = np.array([t != "P" for t in ref.types])
    centre = np.asarray(ref.coords)[:, :2].mean(0)
    size = np.sqrt(np.mean(np.sum((np.asarray(ref.coords)[:, :2] - centre) ** 2, -1)))
    turn = np.linspace(0.0, 2 * np.pi, 181)
    while True:
        c = np.asarray(ref.coords).copy()
        c[pts, :2] = centre + 1.5 * size * rng.uniform(-1, 1, (pts.sum(), 2))
        lk = eqx.tree_at(lambda m: m.coords, ref, jnp.asarray(c))
        m = dm.linkage.sweep(lk, inputs=turn, condition=False)
        if not bool(np.all(np.asarray(m.converged))):
            continue
        X = np.asarray(m.coords)[..., :2]
        sines = []
        for a, k, b in ls.revolute_dyads(lk):
            e1, e2 = X[:, a] - X[:, k], X[:, b] - X[:, k]
            cross = e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0]
            sines.append(np.abs(cross) / np.linalg.norm(e1, axis=-1) / np.linalg.norm(e2, axis=-1))
        if sines and np.min(sines) < TOGGLE:
            continue
        P = np.asarray(m["P"])[:, :2]
        if np.sqrt(np.mean(np.sum((P - P.mean(0)) ** 2, -1))) < 0.3 * size:
            continue
        return lk


def planted(seed: int, mode: str, filtered: bool = True) -> dict:
    kind = KINDS[seed % len(KINDS)]
    rng = np.random.default_rng(1000 + seed)
    draws = 0
    while True:
        draws += 1
        lk = _random_six_bar(kind, rng)
        n = int(rng.integers(12, 21))
        u = np.sort(rng.uniform(0.0, 2 * np.pi, n))
        P = np.asarray(dm.linkage.sweep(lk, inputs=u, condition=False)["P"])[:, :2]
        a = rng.uniform(0.5, 2.0) * np.exp(1j * rng.uniform(0, 2 * np.pi))
        b = complex(*rng.normal(size=2))
        z = a * (P[:, 0] + 1j * P[:, 1]) + b
        T = np.c_[z.real, z.imag]
        if mode == "free":
            T = T[rng.permutation(n)]
        four = synthesis.path_generation(T, cyclic_order=(mode == "cyclic")).relative_error if filtered else np.nan
        if not four <= NOT_A_FOUR_BAR:
            coords = np.asarray(lk.coords)
            return dict(kind=kind, T=T, n=n, four_bar=float(four), coords=coords, a=a, b=b, u=u, draws=draws)


def conditioning(p: dict, r) -> str:
    """The polish's Jacobian at the returned design (free timing; see the module)."""
    T = p["T"]
    centre = T.mean(0)
    scale = np.sqrt(np.mean(np.sum((T - centre) ** 2, -1)))
    ref = dm.examples.six_bar(p["kind"])
    prob = ls.problem(ref, ref.names.index("P"), (T - centre) / scale, "free", None, False, None, 0.02)
    n, size = p["n"], prob.targets.shape[0]
    coords = np.asarray(r.design.coords).copy()
    coords[:, :2] = (coords[:, :2] - centre) / scale
    timing = np.r_[np.asarray(r.inputs), np.repeat(np.asarray(r.inputs)[-1:], size - n)]
    free = np.flatnonzero(ls.free_mask(ref))
    flat = jnp.asarray(coords.ravel())

    def res(v):
        design = ls.Design(flat.at[free].set(v[: free.size]).reshape(coords.shape), v[free.size :], jnp.ones(()))
        return ls.residuals(design, prob)[0]

    v = jnp.asarray(np.r_[coords.ravel()[free], timing])
    J = np.asarray(jax.jacfwd(res)(v))[:, : free.size + n]  # (the padding's inputs left out)
    sv = np.linalg.svd(J, compute_uv=False)
    rank = int(np.sum(sv > 1e-12 * sv[0]))
    dv = np.random.default_rng(0).normal(size=v.shape) * (np.arange(v.size) < free.size + n)
    h = 1e-6
    fd = (np.asarray(res(v + h * dv)) - np.asarray(res(v - h * dv))) / (2 * h)
    check = np.linalg.norm(fd - J @ dv[: free.size + n]) / np.linalg.norm(J @ dv[: free.size + n])
    small = " ".join(f"{x:.1e}" for x in sv[:rank][-3:] / sv[0])
    return f"rank {rank} of {2 * n} target rows, smallest {small}, Jacobian vs central difference {check:.1e}"


def _size_class(n: int) -> int:
    return next(s for s in (4, 6, 8, 12, 16, 24, 32) if s >= n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=10)
    ap.add_argument("--modes", default="free")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--unfiltered", action="store_true", help="keep the first draw (no four-bar filter)")
    ap.add_argument("--conditioning", action="store_true", help="the Jacobian's spectrum at each result (free)")
    args = ap.parse_args()
    tag = "unfiltered/" if args.unfiltered else ""
    rows = {}
    for mode in args.modes.split(","):
        by_kind: dict = {}
        compiled = set()
        for i in range(args.problems):
            p = planted(args.first_seed + i, mode, filtered=not args.unfiltered)
            t = time.perf_counter()
            r = synthesis.path_generation(
                p["T"], cyclic_order=(mode == "cyclic"), mechanism=dm.examples.six_bar(p["kind"])
            )
            wall = time.perf_counter() - t
            key = (p["kind"], _size_class(p["n"]))
            row = by_kind.setdefault(p["kind"], dict(errors=[], times=[], first=[], four_bar=[], draws=[]))
            row["errors"].append(float(r.relative_error))
            row["four_bar"].append(p["four_bar"])
            row["draws"].append(p["draws"])
            (row["times"] if key in compiled else row["first"]).append(wall)
            compiled.add(key)
            print(
                f"{mode} problem {i} {p['kind']}: n={p['n']} relative error {r.relative_error:.2e} "
                f"(a four-bar's {p['four_bar']:.2e}, draw {p['draws']}) {wall:.1f} s",
                flush=True,
            )
            if args.conditioning and mode == "free":
                print("   ", conditioning(p, r), flush=True)
        every = dict(errors=[], times=[], first=[], draws=[])
        for kind, row in by_kind.items():
            for k in every:
                every[k] += row[k]
            rows[f"{tag}{mode}/{kind}"] = _summary(row)
        rows[f"{tag}{mode}/all"] = _summary(every)
        print(f"{tag}{mode}/all:", rows[f"{tag}{mode}/all"])
    path = os.path.join(ROOT, "benchmarks", "results", "planted_six_bars.json")
    if os.path.exists(path):
        with open(path) as fh:
            rows = json.load(fh).get("rows", {}) | rows
    out = write_results(path, rows)
    print(out["date"], "jax", out["jax"])


def _summary(row: dict) -> dict:
    errors = row["errors"]
    return dict(
        solved=int(sum(e <= SOLVED for e in errors)),
        problems=len(errors),
        median_relative_error=statistics.median(errors),
        median_s=statistics.median(row["times"]) if row["times"] else None,
        median_first_s=statistics.median(row["first"]) if row["first"] else None,
        errors=errors,
        draws=row["draws"],
    )


if __name__ == "__main__":
    main()
