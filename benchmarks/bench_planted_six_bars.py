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

The call is the default one on the type's topology, `path_generation(T,
mechanism=six_bar(type))`. A problem is solved when the returned design meets the
targets to a relative error of 1e-6 (the planted design's is 0). Reported per mode and
type: the success rate, the median relative error, the median time of a problem whose
programs were compiled (its type and size class seen before) and of the first.

    python benchmarks/bench_planted_six_bars.py [--problems 10] [--modes free,cyclic]

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


def planted(seed: int, mode: str) -> dict:
    kind = KINDS[seed % len(KINDS)]
    rng = np.random.default_rng(1000 + seed)
    while True:
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
        four = synthesis.path_generation(T, cyclic_order=(mode == "cyclic"))
        if four.relative_error > NOT_A_FOUR_BAR:
            return dict(
                kind=kind, T=T, n=n, four_bar=float(four.relative_error), coords=np.asarray(lk.coords), a=a, b=b, u=u
            )


def _size_class(n: int) -> int:
    return next(s for s in (4, 6, 8, 12, 16, 24, 32) if s >= n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=10)
    ap.add_argument("--modes", default="free")
    ap.add_argument("--first-seed", type=int, default=0)
    args = ap.parse_args()
    rows = {}
    for mode in args.modes.split(","):
        by_kind: dict = {}
        compiled = set()
        for i in range(args.problems):
            p = planted(args.first_seed + i, mode)
            t = time.perf_counter()
            r = synthesis.path_generation(
                p["T"], cyclic_order=(mode == "cyclic"), mechanism=dm.examples.six_bar(p["kind"])
            )
            wall = time.perf_counter() - t
            key = (p["kind"], _size_class(p["n"]))
            row = by_kind.setdefault(p["kind"], dict(errors=[], times=[], first=[], four_bar=[]))
            row["errors"].append(float(r.relative_error))
            row["four_bar"].append(p["four_bar"])
            (row["times"] if key in compiled else row["first"]).append(wall)
            compiled.add(key)
            print(
                f"{mode} problem {i} {p['kind']}: n={p['n']} relative error {r.relative_error:.2e} "
                f"(a four-bar's {p['four_bar']:.2e}) {wall:.1f} s",
                flush=True,
            )
        every = dict(errors=[], times=[], first=[])
        for kind, row in by_kind.items():
            for k in every:
                every[k] += row[k]
            rows[f"{mode}/{kind}"] = _summary(row)
        rows[f"{mode}/all"] = _summary(every)
        print(f"{mode}/all:", rows[f"{mode}/all"])
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
    )


if __name__ == "__main__":
    main()
