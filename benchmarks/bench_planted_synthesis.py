"""Four-bar path synthesis on planted problems: points on a random four-bar's coupler
curve are met exactly by that four-bar, so a problem's optimum is known without the
literature. Each problem is generated from its seed:

- a Grashof crank-rocker of random proportions (the crank the shortest link, the
  others from a log-uniform spread, the branch at random), a random coupler point;
- `n` targets (5 to 25) at random distinct crank angles over one turn;
- a random similarity of the whole (scale, turn, shift), so no problem sits in the
  four-bar's own frame;
- the timing mode: `prescribed` (the crank angles given, relative to the first),
  `free` (the targets in a random order, no angles) or `cyclic` (the targets in their
  order along the curve, no angles).

A problem is solved when the design returned meets the targets to a relative error of
1e-6 (the planted design's is 0). Reported per configuration and mode: the success
rate, the median relative error, the median time a problem after compilation and the
first problem's time (with its compilations). The configurations: `default` (the call
as written, `path_generation(T, ...)`) and `global` (`screen=4096, hops=8`).

    python benchmarks/bench_planted_synthesis.py [--problems 12] [--modes cyclic] [--configs default,global]

Writes benchmarks/results/planted_synthesis.json (the rows of other modes and
configurations already there are kept). Run it alone.
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
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks._timing import write_results  # noqa: E402
from diffmech import synthesis  # noqa: E402

CONFIGS = {"default": {}, "global": {"screen": 4096, "hops": 8}}
SOLVED = 1e-6


def planted(seed: int, mode: str) -> dict:
    """One planted problem (see the module): its targets, crank angles (prescribed) and
    the planted design."""
    rng = np.random.default_rng(seed)
    while True:  # a Grashof crank-rocker: the crank shortest, s + l < p + q
        crank = 1.0
        others = np.exp(rng.uniform(np.log(1.5), np.log(5.0), 3))
        lengths = np.r_[crank, others]
        s, l_ = lengths.min(), lengths.max()
        if s == crank and s + l_ < lengths.sum() - s - l_:
            break
    design = synthesis.PlacedFourBar(
        lengths=jnp.asarray(lengths),
        point=jnp.asarray(rng.normal(0.0, 1.0, 2) * np.median(others)),
        origin=jnp.zeros(2),
        angle=jnp.asarray(0.0),
        branch=int(rng.choice([-1, 1])),
    )
    n = int(rng.integers(5, 26))
    theta = np.sort(rng.uniform(0.0, 2 * np.pi, n))
    pts, ok = design.path(jnp.asarray(theta))
    assert bool(np.all(np.asarray(ok))), "a crank-rocker assembles at every crank angle"
    a, k, shift = rng.uniform(0, 2 * np.pi), np.exp(rng.uniform(np.log(0.1), np.log(10.0))), rng.normal(0, 5, 2)
    R = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    T = k * np.asarray(pts) @ R.T + shift
    if mode == "free":
        order = rng.permutation(n)
        T, theta = T[order], theta[order]
    return dict(targets=T, angles=theta - theta[0], n=n, lengths=lengths)


def solve(problem: dict, mode: str, config: dict):
    T = problem["targets"]
    if mode == "prescribed":
        return synthesis.path_generation(T, "prescribed", crank_angles=problem["angles"], **config)
    if mode == "cyclic":
        return synthesis.path_generation(T, cyclic_order=True, **config)
    return synthesis.path_generation(T, **config)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=12)
    ap.add_argument("--modes", default="cyclic")
    ap.add_argument("--configs", default="default,global")
    ap.add_argument("--first-seed", type=int, default=0)
    args = ap.parse_args()
    rows = {}
    for mode in args.modes.split(","):
        for name in args.configs.split(","):
            errors, times, first = [], [], None
            for i in range(args.problems):
                problem = planted(args.first_seed + i, mode)
                t = time.perf_counter()
                r = solve(problem, mode, CONFIGS[name])
                wall = time.perf_counter() - t
                errors.append(float(r.relative_error))
                if first is None:
                    first = wall
                else:
                    times.append(wall)
                print(f"{mode} {name} problem {i}: n={problem['n']} relative error {r.relative_error:.2e} {wall:.1f} s")
            solved = sum(e <= SOLVED for e in errors)
            rows[f"{mode}/{name}"] = dict(
                solved=solved,
                problems=len(errors),
                median_relative_error=statistics.median(errors),
                median_s=statistics.median(times) if times else None,
                first_s=first,
                errors=errors,
            )
            print(f"{mode} {name}: {solved}/{len(errors)} solved, median error {statistics.median(errors):.2e}")
    path = os.path.join(ROOT, "benchmarks", "results", "planted_synthesis.json")
    if os.path.exists(path):  # the other modes and configurations measured before stay
        with open(path) as fh:
            rows = json.load(fh).get("rows", {}) | rows
    out = write_results(path, rows)
    print(out["date"], "jax", out["jax"])


if __name__ == "__main__":
    main()
