"""Four-bar path synthesis on planted problems: points on a random four-bar's coupler
curve are met exactly by that four-bar, so a problem's optimum is known without the
literature. Each problem is generated from its seed:

- a four-bar of the family (`--family`): a Grashof crank-rocker (the crank shortest),
  a drag link (the ground shortest) or a non-Grashof linkage traced over the inner
  80 % of one arc of its crank's range; lengths log-uniform in 1 … 5, a random coupler
  point and branch; the planted design meets the search's default constraints (it
  assembles along the motion through the targets at least 2.5 % of their size from a
  toggle, the default `margin` being 2 %), else it is drawn again;
- `n` targets (5 to 25) at random crank angles over that range;
- a random similarity of the whole (scale, turn, shift), so no problem sits in the
  four-bar's own frame;
- the timing mode: `prescribed` (the crank angles given, relative to the first),
  `free` (the targets in a random order, no angles) or `cyclic` (the targets in their
  order along the curve, no angles);
- `--noise s`: Gaussian noise of `s` times the targets' RMS size on each coordinate.

A problem is solved when the design returned meets the targets to a relative error of
1e-6 (the planted design's is 0); with noise, when its objective Σ‖Cᵢ − Tᵢ‖² is at or
below the planted design's own (at its own crank angles for prescribed timing, else at
each target's nearest point of its curve). Reported per configuration and mode: the
success rate, the median relative error, the median time of a problem whose size class
(the targets' count rounded up to 6, 8, 12, 16, 24 or 32) was already compiled, and the
median time of the first of each class (with its compilations). The configurations:
`default` (the call as written, `path_generation(T, ...)`) and `quick` (`quick=True`).

`--peer-problems K`: pylinkage's particle swarm on the first K problems of each mode,
each in the median time diffmech's default call took after compilation in the same run
(`benchmarks/peers/pylinkage_synthesis.py`; with free or cyclic timing its fitness is
each target's distance to the curve sampled over a turn, the order not imposed).

    python benchmarks/bench_planted_synthesis.py [--problems 12] [--modes free,cyclic,prescribed]
        [--configs default,quick] [--family crank-rocker] [--noise 0.001] [--peer-problems 20]

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

CONFIGS = {"default": {}, "quick": {"quick": True}}
SOLVED = 1e-6
MARGIN = 0.025  # the planted design's slack from a toggle (the search's `margin`, 0.02, and a little)
FAMILIES = ("crank-rocker", "drag-link", "non-grashof")


def _gap(lengths, theta):
    """How far each crank angle is from assembling (≤ 0: it assembles), in closed form."""
    l1, l2, l3, l4 = lengths
    d = np.sqrt(l1**2 + l4**2 - 2 * l1 * l4 * np.cos(theta))
    return np.maximum(d - (l2 + l3), np.abs(l2 - l3) - d)


def _proportions(rng, family):
    """Link lengths (crank, coupler, rocker, ground) of the family, and the crank's
    range the targets are drawn from."""
    while True:
        lengths = np.exp(rng.uniform(np.log(1.0), np.log(5.0), 4))
        s, l_ = lengths.min(), lengths.max()
        grashof = s + l_ < lengths.sum() - s - l_
        if family == "crank-rocker" and grashof and s == lengths[0]:
            return lengths, (0.0, 2 * np.pi)
        if family == "drag-link" and grashof and s == lengths[3]:
            return lengths, (0.0, 2 * np.pi)
        if family == "non-grashof" and not grashof:
            # one arc of the crank's range through 0 or through π, its inner 80 %
            l1, l2, l3, l4 = lengths
            c_max = (l1**2 + l4**2 - (l2 + l3) ** 2) / (2 * l1 * l4)
            c_min = (l1**2 + l4**2 - (l2 - l3) ** 2) / (2 * l1 * l4)
            if c_min >= 1 and -1 < c_max < 1:  # |θ| ≤ θmax
                a = np.arccos(c_max)
                return lengths, (-0.8 * a, 0.8 * a)
            if c_max <= -1 and -1 < c_min < 1:  # θmin ≤ θ ≤ 2π − θmin
                a = np.arccos(c_min)
                return lengths, (np.pi - 0.8 * (np.pi - a), np.pi + 0.8 * (np.pi - a))


def planted(seed: int, mode: str, family: str = "crank-rocker", noise: float = 0.0) -> dict:
    """One planted problem (see the module): its targets, crank angles (prescribed), the
    planted design and its own objective (0 without noise)."""
    rng = np.random.default_rng(seed)
    while True:
        lengths, (lo, hi) = _proportions(rng, family)
        point = rng.normal(0.0, 1.0, 2) * np.median(lengths)
        n = int(rng.integers(5, 26))
        theta = np.sort(rng.uniform(lo, hi, n))
        branch = int(rng.choice([-1, 1]))
        design = synthesis.PlacedFourBar(
            lengths=jnp.asarray(lengths),
            point=jnp.asarray(point),
            origin=jnp.zeros(2),
            angle=jnp.asarray(0.0),
            branch=branch,
        )
        pts, ok = design.path(jnp.asarray(theta))
        pts = np.asarray(pts)
        rms = np.sqrt(np.mean(np.sum((pts - pts.mean(0)) ** 2, 1)))
        motion = np.linspace(theta[0], theta[-1], 400)
        # the planted design meets the search's default constraints: it assembles along the
        # motion, at least MARGIN of the targets' size from a toggle
        if bool(np.all(np.asarray(ok))) and np.max(_gap(lengths, motion)) <= -MARGIN * rms:
            break
    a, k, shift = rng.uniform(0, 2 * np.pi), np.exp(rng.uniform(np.log(0.1), np.log(10.0))), rng.normal(0, 5, 2)
    R = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    T = k * pts @ R.T + shift
    objective = 0.0
    if noise:
        T = T + rng.normal(0.0, noise * k * rms, T.shape)
        objective = _own_objective(design, T, R, k, shift, theta, mode, (lo, hi))
    if mode == "free":
        order = rng.permutation(n)
        T, theta = T[order], theta[order]
    return dict(targets=T, angles=theta - theta[0], n=n, lengths=lengths, objective=objective)


def _own_objective(design, T, R, k, shift, theta, mode, arc):
    """The planted design's objective on noisy targets: Σ‖Cᵢ − Tᵢ‖² at its own crank angles
    (prescribed timing), or at the crank angles nearest to each target (free and cyclic
    timing: a dense sample of its curve over its arc, each target's best refined by
    golden-section search)."""
    from scipy.optimize import minimize_scalar

    def curve(th):
        p, _ = design.path(jnp.atleast_1d(jnp.asarray(th, float)))
        return k * np.asarray(p) @ R.T + shift

    if mode == "prescribed":
        return float(np.sum((curve(theta) - T) ** 2))
    grid = np.linspace(arc[0], arc[1], 2001)
    C = curve(grid)
    total = 0.0
    h = grid[1] - grid[0]
    for t in T:
        j = int(np.argmin(np.sum((C - t) ** 2, 1)))
        lo, hi = max(grid[0], grid[j] - h), min(grid[-1], grid[j] + h)
        r = minimize_scalar(
            lambda th: float(np.sum((curve(th)[0] - t) ** 2)),
            bounds=(lo, hi),
            method="bounded",
            options={"xatol": 1e-12},
        )
        total += min(r.fun, float(np.sum((C[j] - t) ** 2)))
    return total


def solve(problem: dict, mode: str, config: dict):
    T = problem["targets"]
    if mode == "prescribed":
        return synthesis.path_generation(T, "prescribed", crank_angles=problem["angles"], **config)
    if mode == "cyclic":
        return synthesis.path_generation(T, cyclic_order=True, **config)
    return synthesis.path_generation(T, **config)


def _size_class(n: int) -> int:
    from diffmech._synthesis import _size_class

    return _size_class(n)


def _peer(args, mode: str, budget: float) -> dict:
    """pylinkage's particle swarm (`benchmarks/peers/pylinkage_synthesis.py`) on the
    first `--peer-problems` problems, each given the median time of diffmech's default
    call after compilation in this run (free and cyclic timing: each target's distance
    to the sampled curve, the order not imposed)."""
    from benchmarks.peers import pylinkage_synthesis as peer

    if not peer.available():
        raise SystemExit("--peer-problems needs pylinkage and numba (pip install -e '.[bench]')")
    errors, evaluations = [], []
    for i in range(args.peer_problems):
        problem = planted(args.first_seed + i, mode, args.family, args.noise)
        T = problem["targets"]
        rms = np.sqrt(np.mean(np.sum((T - T.mean(0)) ** 2, 1)))
        angles = problem["angles"] if mode == "prescribed" else None
        out = peer.run(T, angles, budget_s=budget, seed=i)
        x = out["best_params"]
        d = np.inf if x is None else (peer.evaluate(x, T, angles) if angles is not None else peer.free_error(x, T))
        errors.append(float(d / rms))
        evaluations.append(out["evaluations"])
        print(f"{mode} pylinkage problem {i}: relative error {errors[-1]:.2e} in {out['wall_s']:.1f} s", flush=True)
    return dict(
        solved=int(sum(e <= SOLVED for e in errors)),
        problems=len(errors),
        median_relative_error=statistics.median(errors),
        budget_s=budget,
        median_evaluations=statistics.median(evaluations),
        errors=errors,
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=12)
    ap.add_argument("--modes", default="cyclic")
    ap.add_argument("--configs", default="default,quick")
    ap.add_argument("--family", default="crank-rocker", choices=FAMILIES)
    ap.add_argument("--noise", type=float, default=0.0, help="noise on the targets, relative to their size")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--peer-problems", type=int, default=0, help="pylinkage's swarm on the first K problems")
    args = ap.parse_args()
    rows = {}
    for mode in args.modes.split(","):
        for name in args.configs.split(","):
            errors, times, first, solved, compiled = [], [], [], 0, set()
            for i in range(args.problems):
                problem = planted(args.first_seed + i, mode, args.family, args.noise)
                t = time.perf_counter()
                r = solve(problem, mode, CONFIGS[name])
                wall = time.perf_counter() - t
                errors.append(float(r.relative_error))
                # a problem of a size class seen before runs compiled programs: its time is
                # the search's; the first of each class includes the compilations
                size = _size_class(problem["n"])
                (times if size in compiled else first).append(wall)
                compiled.add(size)
                if args.noise:  # at or below the planted design's own objective
                    ok = r.objective <= problem["objective"] * (1 + 1e-6)
                    print(f"  objective {r.objective:.6e} planted {problem['objective']:.6e}")
                else:
                    ok = r.relative_error <= SOLVED
                solved += ok
                print(f"{mode} {name} problem {i}: n={problem['n']} relative error {r.relative_error:.2e} {wall:.1f} s")
            key = f"{args.family}{'/noise ' + str(args.noise) if args.noise else ''}/{mode}/{name}"
            rows[key] = dict(
                solved=int(solved),
                problems=len(errors),
                median_relative_error=statistics.median(errors),
                median_s=statistics.median(times) if times else None,
                median_first_s=statistics.median(first),
                errors=errors,
            )
            print(
                f"{key}: {solved}/{len(errors)} solved, median error {statistics.median(errors):.2e}, "
                f"median {rows[key]['median_s']} s after compilation"
            )
            if name == "default" and args.peer_problems and times:
                rows[key.replace("/default", "/pylinkage")] = _peer(args, mode, statistics.median(times))
    path = os.path.join(ROOT, "benchmarks", "results", "planted_synthesis.json")
    if os.path.exists(path):  # the other modes and configurations measured before stay
        with open(path) as fh:
            rows = json.load(fh).get("rows", {}) | rows
    out = write_results(path, rows)
    print(out["date"], "jax", out["jax"])


if __name__ == "__main__":
    main()
