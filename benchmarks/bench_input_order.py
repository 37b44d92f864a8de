"""What the branch certificate costs: a linkage simulated at inputs in the order of
motion (the baseline) against the same inputs shuffled, eagerly (`linkage.sweep`
sorts them into a path from input 0) and under `jax.jit` (`simulate_functional` follows
them in the order given, long steps in substeps), and against inputs 30° apart in order
(every step above the 15° `max_step`: substeps and the sequential fallback).

For each bundled six-bar (Jansen leg, Stephenson-II): compile time (first call minus
the warm median) and the warm median of `--repeats` calls, float64, JAX's CPU dispatch
off (`_timing.set_dispatch`). Every mode's solutions are checked against the in-order
baseline (same rows to 1e-9 of the linkage's size).

    python benchmarks/bench_input_order.py [--repeats 30]

Writes benchmarks/results/input_order.json.
"""

import argparse
import datetime
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks._timing import ROOT, add_dispatch_flag, set_dispatch, timed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    add_dispatch_flag(ap)
    args = ap.parse_args()
    set_dispatch(args.async_dispatch)
    import jax
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    import diffmech as dm
    from diffmech import linkage

    res = {
        "jax": jax.__version__,
        "date": datetime.date.today().isoformat(),
        "repeats": args.repeats,
        "async_dispatch": args.async_dispatch,
        "rows": {},
    }
    print(f"jax {res['jax']}, {res['date']}; compile (s) and warm median (ms), {args.repeats} repeats")
    for name in ("theo_jansen", "stephenson2"):
        lk = dm.examples.__dict__[name]()
        u = np.asarray(linkage.default_inputs(lk))  # 180 steps of 2°, in order
        perm = np.r_[0, 1 + np.random.default_rng(0).permutation(u.size - 1)]
        coarse = u[::15]  # 12 inputs 30° apart, in order
        jit_sim = jax.jit(lambda lk_, v: linkage.sweep_functional(lk_, v, condition=False).coords)
        modes = {
            "in order (simulate)": (lambda: linkage.sweep(lk, inputs=u, condition=False).coords, None),
            "shuffled (simulate)": (lambda: linkage.sweep(lk, inputs=u[perm], condition=False).coords, perm),
            "in order (jit)": (lambda: jit_sim(lk, u), None),
            "shuffled (jit)": (lambda: jit_sim(lk, u[perm]), perm),
            "30° apart (jit)": (lambda: jit_sim(lk, coarse), slice(None, None, 15)),
        }
        base = np.asarray(linkage.sweep(lk, inputs=u, condition=False).coords)
        scale = float(np.abs(base).max())
        row = {}
        for mode, (f, rows) in modes.items():
            out, compile_s, warm = timed(f, repeats=args.repeats)
            want = base if rows is None else base[rows]
            err = float(np.abs(np.asarray(out) - want).max())
            assert err <= 1e-9 * scale, (name, mode, err)
            row[mode] = {"compile_s": compile_s, "warm_ms": 1e3 * warm, "max_difference": err}
            print(f"{name:12s} {mode:22s} {compile_s:7.2f} s {1e3 * warm:9.3f} ms   |Δ| {err:.1e}")
        for mode in ("shuffled (simulate)", "shuffled (jit)"):
            base_mode = "in order (simulate)" if "simulate" in mode else "in order (jit)"
            row[mode]["warm_ratio_to_in_order"] = row[mode]["warm_ms"] / row[base_mode]["warm_ms"]
        res["rows"][name] = row
    path = os.path.join(ROOT, "benchmarks", "results", "input_order.json")
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    print("wrote", path)


if __name__ == "__main__":
    main()
