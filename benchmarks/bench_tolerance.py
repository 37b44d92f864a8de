"""Sensitivity and tolerance analysis: diffmech's exact Jacobian and vmapped Monte
Carlo against pylinkage 1.3's finite-difference sensitivity and Monte Carlo tolerance
analysis, on the same four-bar (pylinkage's peer four-bar: l1..l4 = 0.12, 0.25, 0.26,
0.30 m; output C; 180 crank angles of 2°); and diffmech alone on the Theo Jansen leg
(all 17 dimensions, its foot J8), also as the README calls it (4096 samples).

- sensitivity: pylinkage perturbs each of its three constraints (crank radius, the
  dyad's two distances) by 1 % and reports the mean path deviation per unit change;
  diffmech's `coefficients` are the same quantity, exact (the limit of a vanishing
  perturbation); their relative differences are reported;
- tolerance: pylinkage draws each constraint uniformly within ±tol; diffmech draws
  normal dimensions of the same standard deviation (tol/√3), so the first-order
  covariances are equal. Compared: the per-step position spread (pylinkage's
  `position_std`, the norm of the x and y standard deviations) from pylinkage's Monte
  Carlo against diffmech's first order and Monte Carlo.

Compile time apart; medians of repeated calls (each as the public API is called).

    python benchmarks/bench_tolerance.py [--samples 100000] [--peer-samples 2000]

Writes benchmarks/results/tolerance.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._timing import add_dispatch_flag, set_dispatch  # noqa: E402


def clock(f, repeats):
    """(first call's time, median of `repeats` further calls, last output)."""
    import jax

    t = time.perf_counter()
    out = jax.block_until_ready(f())
    first = time.perf_counter() - t
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = jax.block_until_ready(f())
        runs.append(time.perf_counter() - t)
    med = statistics.median(runs)
    return max(first - med, 0.0), med, out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--peer-samples", type=int, default=2000)
    ap.add_argument("--tol", type=float, default=1e-3, help="pylinkage's ±tol on each constraint (m)")
    ap.add_argument("--repeats", type=int, default=5)
    add_dispatch_flag(ap)
    a = ap.parse_args(argv)
    set_dispatch(a.async_dispatch)
    import jax
    import numpy as np

    jax.config.update("jax_enable_x64", True)
    import diffmech as dm
    from benchmarks.peers import pylinkage_fourbar as pk
    from diffmech import linkage as L

    out = dict(date=datetime.date.today().isoformat(), jax=jax.__version__, samples=a.samples)
    theta = np.arange(180) * (2 * np.pi / 180)
    fb = dm.FourBar(lengths=(pk.L1, pk.L2, pk.L3, pk.L4))
    comp, run, s = clock(lambda: L.sensitivity(fb, theta, outputs="C"), a.repeats)
    coef = np.asarray(s.coefficients("C"))
    out["fourbar_sensitivity"] = dict(compile_s=comp, median_s=run, coefficients=dict(zip(s.dimensions, coef.tolist())))
    sigma = a.tol / np.sqrt(3.0)
    sig = np.array([sigma, sigma, sigma, 0.0])  # pylinkage's three constraints; the ground is exact
    comp, run, t = clock(lambda: L.tolerance(fb, theta, sig, samples=a.samples, outputs="C"), max(1, a.repeats // 2))
    lin = np.linalg.norm(np.asarray(t.std("C")), axis=1)
    mc = np.linalg.norm(np.asarray(t.std("C", "monte_carlo")), axis=1)
    out["fourbar_tolerance"] = dict(
        compile_s=comp, median_s=run, samples=t.samples, agreement_linear_vs_mc=float(np.max(np.abs(mc / lin - 1)))
    )
    agree = out["fourbar_tolerance"]["agreement_linear_vs_mc"]
    print(
        f"four-bar: sensitivity {out['fourbar_sensitivity']['median_s'] * 1e3:.2f} ms, tolerance {t.samples} "
        f"samples {run:.3f} s (compile {comp:.1f} s); MC/first order std within {agree:.2%}",
        flush=True,
    )

    if pk.available():
        from pylinkage.linkage.sensitivity import _get_constraint_names, analyze_sensitivity, analyze_tolerance

        def build():
            return pk._build_linkage(180)

        lk_p = build()
        names = _get_constraint_names(lk_p)
        t0 = time.perf_counter()
        sp = analyze_sensitivity(lk_p, output_joint=pk.C_JOINT, delta=0.01, include_transmission=False, iterations=180)
        t_sens = time.perf_counter() - t0
        ours = dict(zip(names, coef[:3]))
        rel = {n: abs(sp.sensitivities[n] / ours[n] - 1) for n in names}
        lk_p = build()
        t0 = time.perf_counter()
        tp = analyze_tolerance(
            lk_p, {n: a.tol for n in names}, output_joint=pk.C_JOINT, iterations=180, n_samples=a.peer_samples, seed=0
        )
        t_tol = time.perf_counter() - t0
        pstd = np.asarray(tp.position_std)
        out["pylinkage"] = dict(
            constraints=list(names),
            sensitivity_s=t_sens,
            sensitivities=sp.sensitivities,
            sensitivity_rel_diff_vs_exact=rel,
            tolerance_s=t_tol,
            tolerance_samples=a.peer_samples,
            tolerance_per_sample_s=t_tol / a.peer_samples,
            std_rel_diff_first_order=float(np.max(np.abs(pstd / lin - 1))),
            std_rel_diff_monte_carlo=float(np.max(np.abs(pstd / mc - 1))),
        )
        out["ratio_sensitivity_time"] = t_sens / out["fourbar_sensitivity"]["median_s"]
        out["ratio_tolerance_time_per_sample"] = (t_tol / a.peer_samples) / (run / t.samples)
        print(
            f"pylinkage: sensitivity {t_sens * 1e3:.1f} ms (1 % differences; within "
            f"{max(rel.values()):.2%} of the exact), tolerance {a.peer_samples} samples {t_tol:.2f} s; its "
            f"position std within {out['pylinkage']['std_rel_diff_first_order']:.2%} of diffmech's first order; "
            f"time per sample {out['ratio_tolerance_time_per_sample']:.0f}x diffmech's",
            flush=True,
        )

    lk = dm.examples.theo_jansen()
    motion = L.simulate(lk, condition=False)
    comp, run, s = clock(lambda: L.sensitivity(lk, motion), a.repeats)
    out["jansen_sensitivity"] = dict(compile_s=comp, median_s=run, dimensions=len(s.dimensions))
    comp3, run3, _ = clock(lambda: L.tolerance(lk, motion, 1e-4, samples=4096), a.repeats)  # as the README calls it
    out["jansen_tolerance_readme_call"] = dict(compile_s=comp3, median_s=run3, samples=4096)
    comp2, run2, t = clock(lambda: L.tolerance(lk, motion, 1e-4, samples=a.samples), 1)
    out["jansen_tolerance"] = dict(
        compile_s=comp2, median_s=run2, samples=t.samples, agreement_linear_vs_mc=t.agreement("J8")
    )
    print(
        f"Jansen: sensitivity ({len(s.dimensions)} dimensions) {run * 1e3:.2f} ms (compile {comp:.1f} s), tolerance "
        f"{t.samples} samples {run2:.2f} s (compile {comp2:.1f} s), MC/first order std within "
        f"{out['jansen_tolerance']['agreement_linear_vs_mc']:.2%}; the README's call (4096 samples) {run3:.3f} s",
        flush=True,
    )
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "tolerance.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, default=float)
    print("wrote", path)


if __name__ == "__main__":
    main()
