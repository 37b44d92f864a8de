"""Where compile time goes (issue 20): for the three programs with compile-time goals,
the program that each eager entry point compiles on its first call, measured in
stages, each in a fresh process (no cache shared):

- trace: Python tracing to a jaxpr (`jit(f).trace`);
- lower: jaxpr → StableHLO (`.lower()`);
- XLA: the XLA:CPU compile of that module (`.compile()`: HLO passes, LLVM codegen),
  with the compiler options the library passes (`diffmech._xla.COMPILER_OPTIONS`);

the size of what XLA receives (StableHLO lines, `while` and `custom_call` ops), and
the whole first call of the eager entry point (tracing, compiling and running, with
its validation), again in a fresh process. Programs: one four-bar 180-step sweep
(`fourbar.sweep`), the Stephenson-II's default sweep with its initial check
(`linkage.sweep`), the Gough–Stewart exact inverse kinematics of 100 samples
(`parallel.inverse_kinematics`).

    python benchmarks/bench_compile.py [--repeats 3]
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time

# the repository's diffmech, not an installed copy (pip may hold another version)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CASES = ("fourbar", "stephenson2", "stewart_exact")


def _setup(case):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    import diffmech as dm
    from diffmech import fourbar, linkage as L, parallel as par
    from diffmech.fourbar import _kinematics as fbk
    from diffmech.linkage import _simulate as lks
    from diffmech.parallel import _kinematics as pk

    if case == "fourbar":
        fb = dm.FourBar(lengths=jnp.array([0.1, 0.3, 0.25, 0.3]))
        th = np.linspace(0.0, 2 * np.pi, 180)
        # the eager entry point's first program: without the sequential fallback
        return (fbk._sweep_jit, (fb, th, True, True)), lambda: fourbar.sweep(fb, th)
    if case == "stephenson2":
        lk = dm.examples.stephenson2()
        u = lks._default_inputs(lk, None, None)
        return (lks._simulate_jit, (lk, u, True, True, True)), lambda: L.sweep(lk)
    mech = par.StewartPlatform()
    traj = par.stewart_spiral(mech, jnp.arange(100) * 1e-3)
    return (pk._exact_jit, (mech, traj, 1)), lambda: par.inverse_kinematics(mech, traj)


def one(case):
    (f, args), _ = _setup(case)
    t0 = time.perf_counter()
    traced = f.trace(*args)
    t1 = time.perf_counter()
    lowered = traced.lower()
    t2 = time.perf_counter()
    lowered.compile()
    t3 = time.perf_counter()
    text = lowered.as_text()
    return dict(
        case=case,
        trace_s=t1 - t0,
        lower_s=t2 - t1,
        xla_s=t3 - t2,
        total_s=t3 - t0,
        eqns=len(traced.jaxpr.eqns),
        hlo_lines=text.count("\n"),
        whiles=text.count("stablehlo.while"),
        custom_calls=text.count("stablehlo.custom_call"),
    )


def first_call(case):
    import jax

    _, call = _setup(case)
    t0 = time.perf_counter()
    jax.block_until_ready(call())
    return dict(case=case, first_call_s=time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--case", choices=CASES, help=argparse.SUPPRESS)  # internal: one measurement
    ap.add_argument("--first-call", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "compile.json"))
    a = ap.parse_args()
    if a.case:
        print(json.dumps(first_call(a.case) if a.first_call else one(a.case)))
        return
    import jax
    import numpy as np

    rows = []
    for case in CASES:

        def run(*extra):
            out = subprocess.run(
                [sys.executable, __file__, "--case", case, *extra], check=True, capture_output=True, text=True
            )
            return json.loads(out.stdout.strip().splitlines()[-1])

        runs = [{**run(), **run("--first-call")} for _ in range(a.repeats)]
        row = {k: (float(np.median([r[k] for r in runs])) if k.endswith("_s") else runs[0][k]) for k in runs[0]}
        rows.append(row)
        print(
            f"{case:14s} trace {row['trace_s']:6.2f} s  lower {row['lower_s']:6.2f} s  XLA {row['xla_s']:6.2f} s  "
            f"total {row['total_s']:6.2f} s  eager first call {row['first_call_s']:6.2f} s  "
            f"({row['eqns']} top-level eqns, {row['hlo_lines']} StableHLO lines, "
            f"{row['whiles']} while, {row['custom_calls']} custom_call)"
        )
    from diffmech._xla import COMPILER_OPTIONS

    out = dict(
        jax=jax.__version__,
        date=time.strftime("%Y-%m-%d"),
        compiler_options=COMPILER_OPTIONS,
        machine=platform.platform(),
        cpus=os.cpu_count(),
        repeats=a.repeats,
        note="medians over fresh processes",
        rows=rows,
    )
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
