"""Four-bar path generation: diffmech (multi-start L-BFGS, closure-core check) against
pylinkage's particle swarm optimiser, on the same targets and the same wall-time budget,
measured in the same run.

Targets: 12 points traced by known four-bars (prescribed timing, 30° of crank apart),
so the attainable error is 0. Reported per target set: diffmech's compile time, run
time (median of 3 seeds), mean distance to the targets, relative error, success rate of
its starts, and the time its best start took to reach 1e-6 relative RMS path error;
pylinkage's mean distance after the same wall time as diffmech's run, and after 10× it.

    python benchmarks/bench_synthesis.py [--starts 64] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

# the repository's diffmech, not an installed copy (pip may hold another version)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from diffmech import synthesis as S  # noqa: E402

try:
    from benchmarks.peers import pylinkage_synthesis as peer
except ImportError:  # run as a script from benchmarks/
    from peers import pylinkage_synthesis as peer

DESIGNS = {
    "crank-rocker": S.PlacedFourBar(lengths=jnp.array([0.12, 0.25, 0.26, 0.30]), point=jnp.array([0.1, 0.05]),
                                    origin=jnp.array([0.3, -0.2]), angle=jnp.array(0.4), branch=1),
    "long coupler": S.PlacedFourBar(lengths=jnp.array([0.05, 0.20, 0.12, 0.16]), point=jnp.array([0.25, -0.06]),
                                    origin=jnp.array([-0.1, 0.05]), angle=jnp.array(-1.2), branch=1),
    "lower branch": S.PlacedFourBar(lengths=jnp.array([0.10, 0.22, 0.18, 0.25]), point=jnp.array([0.05, 0.12]),
                                    origin=jnp.array([0.0, 0.0]), angle=jnp.array(2.0), branch=-1),
}
THETA = np.linspace(0.0, 2 * np.pi, 13)[:-1] + 0.3


def _rms_time(res, scale_rel=1e-6):
    """Host time at which the best start's RMS relative path error (√loss, the targets
    normalised to unit RMS radius) first fell to `scale_rel` (None if never)."""
    h = res.history
    ok = np.flatnonzero(np.sqrt(np.maximum(np.asarray(h.loss), 0)) <= scale_rel)
    return float(np.asarray(h.time)[ok[0]]) if ok.size else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--starts", type=int, default=64)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--quick", action="store_true", help="one target set, one seed")
    args = ap.parse_args()
    out = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs", "jax": jax.__version__, "starts": args.starts,
           "steps": args.steps, "targets": len(THETA), "cases": {}}
    names = list(DESIGNS)[:1] if args.quick else list(DESIGNS)
    seeds = [0] if args.quick else [0, 1, 2]
    for name in names:
        pts, ok = DESIGNS[name].path(THETA)
        assert bool(jnp.all(ok))
        t = np.asarray(pts)
        inc = THETA - THETA[0]
        t0 = time.perf_counter()
        S.path_generation(t, "prescribed", crank_angles=inc, starts=args.starts, steps=args.steps, seed=99)
        first = time.perf_counter() - t0
        runs = []
        for seed in seeds:
            t0 = time.perf_counter()
            r = S.path_generation(t, "prescribed", crank_angles=inc, starts=args.starts, steps=args.steps, seed=seed)
            runs.append({"wall_s": time.perf_counter() - t0, "mean_distance": r.error, "relative_error": r.relative_error,
                         "success_rate": r.success_rate, "time_to_1e-6_s": _rms_time(r)})
        wall = statistics.median(x["wall_s"] for x in runs)
        case = {"diffmech": {"compile_s": first - wall, "runs": runs, "median_wall_s": wall,
                             "median_mean_distance": statistics.median(x["mean_distance"] for x in runs),
                             "median_success_rate": statistics.median(x["success_rate"] for x in runs)}}
        if peer.available():
            same = peer.run(t, inc, budget_s=wall, seed=0)
            ten = peer.run(t, inc, budget_s=10 * wall, seed=0)
            case["pylinkage_same_time"] = {k: same[k] for k in ("best_mean_distance", "evaluations", "wall_s", "rounds")}
            case["pylinkage_10x_time"] = {k: ten[k] for k in ("best_mean_distance", "evaluations", "wall_s", "rounds")}
            d = case["diffmech"]["median_mean_distance"]
            case["error_ratio_same_time"] = same["best_mean_distance"] / max(d, 1e-300)
            case["error_ratio_vs_pylinkage_10x_time"] = ten["best_mean_distance"] / max(d, 1e-300)
        out["cases"][name] = case
        print(f"{name:13s} diffmech: {wall:6.2f} s (compile {first - wall:5.1f} s), mean distance "
              f"{case['diffmech']['median_mean_distance']:.2e} m, success {case['diffmech']['median_success_rate']:.0%}, "
              f"best start at 1e-6 after {runs[0]['time_to_1e-6_s']} s", flush=True)
        if "pylinkage_same_time" in case:
            print(f"{'':13s} pylinkage PSO: {case['pylinkage_same_time']['best_mean_distance']:.2e} m in the same time "
                  f"({case['pylinkage_same_time']['evaluations']} evaluations), "
                  f"{case['pylinkage_10x_time']['best_mean_distance']:.2e} m in 10× the time", flush=True)
    os.makedirs(os.path.join(os.path.dirname(__file__), "results"), exist_ok=True)
    path = os.path.join(os.path.dirname(__file__), "results", "synthesis.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()
