"""Sensitivity and tolerance analysis: diffmech's exact Jacobian and vmapped Monte
Carlo against pylinkage 1.3's finite-difference sensitivity and Monte Carlo tolerance
analysis, on the same four-bar (pylinkage's peer four-bar: l1..l4 = 0.12, 0.25, 0.26,
0.30 m; output C; 180 crank angles of 2°); and diffmech alone on the Theo Jansen leg
(all 17 dimensions, its foot J8), also as the README calls it (4096 samples); and
Jansen's own leg built from his link lengths in both libraries
(benchmarks/peers/jansen_lengths.py), its foot's length sensitivities and tolerance
spread against pylinkage's.

- sensitivity: pylinkage perturbs each of its three constraints (crank radius, the
  dyad's two distances) by 1 % and reports the mean path deviation per unit change;
  diffmech's `coefficients` are the same quantity, exact (the limit of a vanishing
  perturbation); their relative differences are reported;
- tolerance: pylinkage draws each constraint uniformly within ±tol; diffmech draws
  normal dimensions of the same standard deviation (tol/√3), so the first-order
  covariances are equal. Compared: the per-step position spread (pylinkage's
  `position_std`, the norm of the x and y standard deviations) from pylinkage's Monte
  Carlo against diffmech's first order and Monte Carlo.

Compile time apart; medians of repeated calls (each as the public API is called);
pylinkage's likewise: a warm-up call (its numba kernels), then medians.

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


def peer_clock(build, call, repeats: int):
    """pylinkage timed as diffmech is: one warm-up call (its numba kernels' first
    call compiles or loads them: 0.52 s against 8 ms after, for the four-bar's
    sensitivity), then the median of `repeats` calls, each on a freshly built linkage
    (the build not timed). Returns (median, last result)."""
    call(build())
    runs, out = [], None
    for _ in range(repeats):
        obj = build()
        t0 = time.perf_counter()
        out = call(obj)
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), out


def jansen_by_lengths(a, clock) -> dict:
    """Theo Jansen's leg built from his link lengths in both libraries
    (benchmarks/peers/jansen_lengths.py): the foot's exact length sensitivities
    (`jax.jacfwd` through `simulate_functional`, the description computed from the
    lengths) and its spread under uniform ±tol length tolerances, first order and a
    Monte Carlo over lengths (normal, σ = tol/√3, `vmap` in chunks of 64), against
    pylinkage's `analyze_sensitivity` and `analyze_tolerance` on the same leg."""
    import equinox as eqx
    import jax
    import jax.numpy as jnp
    import numpy as np
    from pylinkage.linkage.sensitivity import _get_constraint_names, analyze_sensitivity, analyze_tolerance

    from benchmarks.peers import jansen_lengths as J
    from diffmech import linkage as L

    lk = L.Linkage.from_dict(J.description())
    rows = [lk.names.index(n) for n in ("O", "B", "M", "J", "K", "E", "F", "H")]
    inputs = jnp.arange(180) * (2 * np.pi / 180)

    def foot(lengths):
        P = J.points(jnp, lengths)
        xy = jnp.stack([P[n] for n in ("O", "B", "M", "J", "K", "E", "F", "H")])
        coords = lk.coords.at[jnp.asarray(rows), :2].set(xy)
        m = L.sweep_functional(eqx.tree_at(lambda l_: l_.coords, lk, coords), inputs, condition=False)
        return m["H"], m.converged

    L0 = jnp.asarray(J.LENGTHS)
    jac = jax.jit(jax.jacfwd(lambda l_: foot(l_)[0]))
    comp, run, Jm = clock(lambda: jac(L0), a.repeats)
    Jm = np.asarray(Jm)  # (180, 2, 11)
    coef = np.mean(np.linalg.norm(Jm, axis=1), axis=0)
    # the exact coefficients against central differences of small steps (1e-5 of a length)
    f = jax.jit(lambda l_: foot(l_)[0])
    h = 1e-5 * L0
    fd = np.stack(
        [(np.asarray(f(L0.at[i].add(h[i]))) - np.asarray(f(L0.at[i].add(-h[i])))) / (2 * h[i]) for i in range(L0.size)],
        -1,
    )
    fd_rel = float(np.max(np.abs(np.mean(np.linalg.norm(fd, axis=1), axis=0) / coef - 1)))
    tol = a.jansen_tol
    sigma = tol / np.sqrt(3.0)
    lin = np.linalg.norm(np.sqrt(np.einsum("nij,nij->ni", Jm, Jm) * sigma**2), axis=1)  # per step, x and y
    chunk = 64
    chunks = -(-a.samples // chunk)

    @jax.jit
    def monte_carlo(key):
        def one(carry, k):
            d = sigma * jax.random.normal(k, (chunk, L0.size))
            H, ok = jax.vmap(foot)(L0 + d)
            w = ok[..., None].astype(H.dtype)
            return (carry[0] + jnp.sum(w * H, 0), carry[1] + jnp.sum(w * H * H, 0), carry[2] + jnp.sum(w, 0)), None

        zero = (jnp.zeros((180, 2)), jnp.zeros((180, 2)), jnp.zeros((180, 1)))
        (s1, s2, n), _ = jax.lax.scan(one, zero, jax.random.split(key, chunks))
        return jnp.sqrt(s2 / n - (s1 / n) ** 2)

    comp_mc, run_mc, std = clock(lambda: monte_carlo(jax.random.key(0)), 1)
    mc = np.linalg.norm(np.asarray(std), axis=1)
    names = _get_constraint_names(J.pylinkage_leg(180)[0])
    t_sens, sp = peer_clock(
        lambda: J.pylinkage_leg(180),
        lambda lh: analyze_sensitivity(
            lh[0], output_joint=lh[1], delta=0.01, include_transmission=False, iterations=180
        ),
        a.repeats,
    )
    ours = dict(zip(names, coef))
    rel = {n: abs(sp.sensitivities[n] / ours[n] - 1) for n in names}
    t_tol, tp = peer_clock(
        lambda: J.pylinkage_leg(180),
        lambda lh: analyze_tolerance(
            lh[0], {n: tol for n in names}, output_joint=lh[1], iterations=180, n_samples=a.peer_samples, seed=0
        ),
        max(1, a.repeats // 2),
    )
    pstd = np.asarray(tp.position_std)
    out = dict(
        tol=tol,
        coefficients_vs_central_differences=fd_rel,
        sensitivity_compile_s=comp,
        sensitivity_median_s=run,
        monte_carlo_compile_s=comp_mc,
        monte_carlo_s=run_mc,
        samples=chunks * chunk,
        mc_vs_first_order=float(np.max(np.abs(mc / lin - 1))),
        pylinkage_sensitivity_s=t_sens,
        sensitivity_rel_diff_vs_exact=rel,
        pylinkage_tolerance_s=t_tol,
        pylinkage_tolerance_samples=a.peer_samples,
        pylinkage_std_rel_diff_first_order=float(np.max(np.abs(pstd / lin - 1))),
        ratio_sensitivity_time=t_sens / run,
        ratio_tolerance_time_per_sample=(t_tol / a.peer_samples) / (run_mc / (chunks * chunk)),
    )
    print(
        f"Jansen by lengths (±{tol}): exact length sensitivities {run * 1e3:.2f} ms (central differences within "
        f"{fd_rel:.1e}; pylinkage {t_sens * 1e3:.0f} ms, "
        f"{out['ratio_sensitivity_time']:.0f}x; its coefficients within {max(rel.values()):.2%}); Monte Carlo "
        f"{chunks * chunk} samples {run_mc:.2f} s, within {out['mc_vs_first_order']:.2%} of the first order; "
        f"pylinkage {a.peer_samples} samples {t_tol:.2f} s, its spread within "
        f"{out['pylinkage_std_rel_diff_first_order']:.2%} of the first order; "
        f"{out['ratio_tolerance_time_per_sample']:.0f}x a sample",
        flush=True,
    )
    return out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=100_000)
    ap.add_argument("--peer-samples", type=int, default=2000)
    ap.add_argument("--tol", type=float, default=1e-3, help="pylinkage's ±tol on each constraint (m)")
    ap.add_argument("--jansen-tol", type=float, default=0.1, help="±tol on each Jansen length (his units)")
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

        names = _get_constraint_names(build())
        t_sens, sp = peer_clock(
            build,
            lambda lk_p: analyze_sensitivity(
                lk_p, output_joint=pk.C_JOINT, delta=0.01, include_transmission=False, iterations=180
            ),
            a.repeats,
        )
        ours = dict(zip(names, coef[:3]))
        rel = {n: abs(sp.sensitivities[n] / ours[n] - 1) for n in names}
        t_tol, tp = peer_clock(
            build,
            lambda lk_p: analyze_tolerance(
                lk_p,
                {n: a.tol for n in names},
                output_joint=pk.C_JOINT,
                iterations=180,
                n_samples=a.peer_samples,
                seed=0,
            ),
            max(1, a.repeats // 2),
        )
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
    motion = L.sweep(lk, condition=False)
    comp, run, s = clock(lambda: L.sensitivity(lk, motion), a.repeats)
    out["jansen_sensitivity"] = dict(compile_s=comp, median_s=run, dimensions=len(s.dimensions))
    comp3, run3, _ = clock(lambda: L.tolerance(lk, motion, 1e-4, samples=4096), a.repeats)  # as the README calls it
    out["jansen_tolerance_readme_call"] = dict(compile_s=comp3, median_s=run3, samples=4096)
    comp2, run2, t = clock(lambda: L.tolerance(lk, motion, 1e-4, samples=a.samples), max(1, a.repeats // 2))
    out["jansen_tolerance"] = dict(
        compile_s=comp2, median_s=run2, samples=t.samples, agreement_linear_vs_mc=t.agreement("J8")
    )
    print(
        f"Jansen: sensitivity ({len(s.dimensions)} dimensions) {run * 1e3:.2f} ms (compile {comp:.1f} s), tolerance "
        f"{t.samples} samples {run2:.2f} s (compile {comp2:.1f} s), MC/first order std within "
        f"{out['jansen_tolerance']['agreement_linear_vs_mc']:.2%}; the README's call (4096 samples) {run3:.3f} s",
        flush=True,
    )
    if pk.available():
        out["jansen_lengths"] = jansen_by_lengths(a, clock)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "tolerance.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, default=float)
    print("wrote", path)


if __name__ == "__main__":
    main()
