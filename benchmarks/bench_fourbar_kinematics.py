"""Four-bar kinematics throughput: diffmech's closure core against pylinkage and a
specialised closed form, measured in the same run.

    python benchmarks/bench_fourbar_kinematics.py [--designs 10000] [--quick]

Reports compile time separately from run time (medians of repeated runs after a
warm-up), writes benchmarks/results/fourbar_kinematics.json and prints a table.
"""

import argparse
import functools
import json
import os
import platform
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import diffmech as dm  # noqa: E402
from benchmarks._timing import add_dispatch_flag, set_dispatch, timed  # noqa: E402
from diffmech import (
    _closure,  # noqa: E402
    fourbar as fbk,
)
from diffmech._xla import COMPILER_OPTIONS  # noqa: E402

# every diffmech program here is compiled as the library compiles its eager programs
jit = functools.partial(jax.jit, compiler_options=COMPILER_OPTIONS)

SEED_L = np.array([0.12, 0.25, 0.26, 0.30])


def designs(n):
    rng = np.random.default_rng(0)
    return SEED_L * (1 + 0.02 * rng.uniform(-1, 1, (n, 4)))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--designs", type=int, default=10_000)
    ap.add_argument("--angles", type=int, default=360)
    ap.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "fourbar_kinematics.json"))
    add_dispatch_flag(ap)
    a = ap.parse_args(argv)
    async_dispatch = set_dispatch(a.async_dispatch)
    n, N = (200, 90) if a.quick else (a.designs, a.angles)
    reps_single, reps_batch = (20, 2) if a.quick else (300, 5)
    out = {
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "jax": jax.__version__,
            "device": str(jax.devices()[0]),
            "date": time.strftime("%Y-%m-%d"),
            "compiler_options": COMPILER_OPTIONS,
            "jax_cpu_enable_async_dispatch": async_dispatch,
        },
        "sizes": {"designs": n, "angles": N},
    }

    fb = dm.FourBar.seed_crank_rocker()
    th180 = jnp.linspace(0, 2 * jnp.pi, 180, endpoint=False)
    thN = jnp.linspace(0, 2 * jnp.pi, N, endpoint=False)
    fbs = dm.FourBar(lengths=designs(n))

    # one design, 180 steps (seed 003's comparison case)
    core = jit(lambda f, t: fbk.sweep_functional(f, t, condition=False).q)
    core_cond = jit(lambda f, t: fbk.sweep_functional(f, t, condition=True).condition)
    # the conditioning alone (closed form, `condition_number`; the sweep computes it in its program)
    q180 = jax.block_until_ready(core(fb, jnp.linspace(0, 2 * jnp.pi, 180, endpoint=False)))

    def closed_condition(f, t):
        return fbk.condition_number(q180[:, 2:], f)

    cond_closed = jit(closed_condition)
    closed = jit(lambda f, t: jax.vmap(lambda th: fbk.closed_form(f, th)[0])(t))
    # baseline in the same run: the sequential continuation (the core's previous
    # algorithm, now its fallback), one Newton solve per angle in a loop
    seq = jit(
        lambda f, t: (
            _closure.continuation(
                fbk.residual,
                fbk.closed_form(f, t[0])[0],
                t,
                f,
                condition=False,
                branch=lambda x, u, p: x[0] * x[3] - x[1] * x[2],
                branch_sign=fbk.branch_sign(f),
            ).value
        )
    )
    # the eager entry point a notebook user calls (NumPy angles in, a full `Sweep` out),
    # against the jitted program with the same outputs: the eager layer's overhead
    full = jit(lambda f, t: fbk.sweep_functional(f, t, condition=False))
    th180_np = np.asarray(th180)

    def eager(f, t):
        return fbk.sweep(f, th180_np, condition=False)

    def eager_default(f, t):  # as the README's quick tour writes it: conditioning on
        return fbk.sweep(f, th180_np)

    single = {}
    for name, f in (
        ("diffmech sweep (closure core)", core),
        ("diffmech sweep + conditioning (closed form) in the program", core_cond),
        ("conditioning alone (closed form), its own program", cond_closed),
        ("diffmech sweep, full Sweep result (jitted)", full),
        ("diffmech fourbar.sweep (eager)", eager),
        ("diffmech fourbar.sweep (eager, README's call)", eager_default),
        ("sequential continuation (previous core)", seq),
        ("closed form (specialised, no Newton)", closed),
    ):
        _, c, r = timed(f, fb, th180, repeats=reps_single)
        single[name] = {"compile_s": c, "median_s": r}
    # the rows above run one after the other, and this machine's speed drifts between
    # them: the calls the goals compare are also timed alternately, 20 calls a turn
    alternated = {"core": core, "full Sweep (jitted)": full, "eager": eager, "eager, README's call": eager_default}
    turns = {k: [] for k in alternated}
    for _ in range(reps_single // 10):
        for k, f in alternated.items():
            t = time.perf_counter()
            for _ in range(20):
                jax.block_until_ready(f(fb, th180))
            turns[k].append((time.perf_counter() - t) / 20)
    single["alternated_median_s"] = {k: float(np.median(v)) for k, v in turns.items()}

    # batches of designs
    # (the library's batched sweep: `fourbar.sweep` on a batched design, jitted, solves
    # it in chunks of designs; one `vmap` of `sweep_functional` over the whole batch is
    # what a user's own vmap gets; the eager call returns the full `Sweep`)
    batch = {}
    bcore = jit(lambda f: fbk.sweep(f, thN, condition=False).q)
    bvmap = jit(jax.vmap(lambda f: fbk.sweep_functional(f, thN, condition=False).q))
    bclosed = jit(jax.vmap(lambda f: jax.vmap(lambda th: fbk.closed_form(f, th)[0])(thN)))
    thN_np = np.asarray(thN)

    def beager(f):
        return fbk.sweep(f, thN_np, condition=False)

    def beager_default(f):  # the README's call: conditioning on
        return fbk.sweep(f, thN_np)

    for name, f in (
        ("diffmech sweep (closure core)", bcore),
        ("diffmech sweep, one vmap of the whole batch", bvmap),
        ("diffmech fourbar.sweep (eager, full Sweep)", beager),
        ("diffmech fourbar.sweep (eager, README's call)", beager_default),
        ("closed form (specialised, no Newton)", bclosed),
    ):
        _, c, r = timed(f, fbs, repeats=reps_batch)
        batch[name] = {"compile_s": c, "median_s": r, "positions_per_s": n * N / r}
    # accuracy of the batch
    s = jit(lambda f: fbk.sweep(f, thN, condition=False))(fbs)
    batch["diffmech sweep (closure core)"]["max_closure_residual"] = float(
        jnp.max(jax.vmap(fbk.closure_residual)(fbs, s.q))
    )
    batch["diffmech sweep (closure core)"]["all_converged"] = bool(jnp.all(s.converged))

    # the peer, same run
    try:
        from benchmarks.peers import pylinkage_fourbar as pl
    except ImportError:
        pl = None
    if pl is not None and pl.available():
        ps = pl.single_sweep(n_steps=180, repeats=reps_single)
        single["pylinkage (numba)"] = {"compile_s": ps["compile_s"], "median_s": ps["median_s"], "path": ps["path"]}
        pb = pl.batched(n_designs=n, n_steps=N, repeats=reps_batch)
        batch["pylinkage (numba)"] = {
            "compile_s": pb["compile_s"],
            "median_s": pb["median_s"],
            "positions_per_s": pb["positions_per_s"],
            "threads": pb["threads"],
            "path": pb["path"],
        }
    else:
        single["pylinkage (numba)"] = batch["pylinkage (numba)"] = {"skipped": "pip install pylinkage numba"}
    out["single_180_steps"] = single
    out["batched"] = batch
    ref = batch.get("pylinkage (numba)", {}).get("positions_per_s")
    if ref:
        out["ratio_batched_core_vs_pylinkage"] = batch["diffmech sweep (closure core)"]["positions_per_s"] / ref
    alt = single["alternated_median_s"]
    readme = alt["eager, README's call"]
    out["conditioning_cost"] = {  # from the alternated timings
        "readme_call_vs_condition_false": readme / alt["eager"],
        # the goal's measure: the README's call against the jitted core (positions only)
        "readme_call_vs_core": readme / alt["core"],
        "readme_call_vs_full_sweep_jitted": readme / alt["full Sweep (jitted)"],
    }
    out["eager_overhead"] = (
        single["diffmech fourbar.sweep (eager)"]["median_s"]
        / single["diffmech sweep, full Sweep result (jitted)"]["median_s"]
        - 1
    )
    if "pylinkage (numba)" in single and "median_s" in single["pylinkage (numba)"]:
        out["ratio_single_core_vs_pylinkage"] = (
            single["diffmech sweep (closure core)"]["median_s"] / single["pylinkage (numba)"]["median_s"]
        )
    out["ratio_single_core_vs_closed_form"] = (
        single["diffmech sweep (closure core)"]["median_s"] / single["closed form (specialised, no Newton)"]["median_s"]
    )
    out["ratio_batched_closed_form_vs_core"] = (
        batch["closed form (specialised, no Newton)"]["positions_per_s"]
        / batch["diffmech sweep (closure core)"]["positions_per_s"]
    )
    out["paper_reference_180_steps_s"] = {"MATLAB (seed 003)": 1.4, "Autodesk Inventor (seed 003)": 5.0}

    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=2)
    print(f"four-bar kinematics on {out['machine']['cpus']} CPUs ({out['machine']['platform']}), jax {jax.__version__}")
    print("one design, 180-step sweep (MATLAB 1.4 s, Inventor 5 s in seed 003):")
    for k, v in single.items():
        if "median_s" in v:
            print(f"  {k:48s} run {v['median_s'] * 1e6:9.1f} µs   compile {v['compile_s']:.2f} s")
    print(
        "  alternately, 20 calls a turn: "
        + ", ".join(f"{k} {v * 1e6:.1f} µs" for k, v in single["alternated_median_s"].items())
    )
    print(f"batched: {n} designs x {N} crank angles:")
    for k, v in batch.items():
        if "positions_per_s" in v:
            print(f"  {k:44s} {v['positions_per_s'] / 1e6:7.2f} M positions/s   compile {v['compile_s']:.2f} s")
    for k in (
        "ratio_batched_core_vs_pylinkage",
        "ratio_single_core_vs_pylinkage",
        "ratio_single_core_vs_closed_form",
        "ratio_batched_closed_form_vs_core",
        "eager_overhead",
    ):
        if k in out:
            print(f"  {k}: {out[k]:.2f}")
    for k, v in out["conditioning_cost"].items():
        print(f"  conditioning: {k}: {v:.2f}")
    print(f"  max closure residual in the batch: {batch['diffmech sweep (closure core)']['max_closure_residual']:.1e}")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
