"""What bounds issue 20's unmet speed goals, measured: each workload taken apart into
the programs it is made of, each timed alone (jitted, compile excluded, medians).

    python benchmarks/bench_bounds.py [--repeats 200] [--quick]

1. The four-bar's single 180-step sweep (goal: no slower than pylinkage's): the cost of
   calling any compiled program on the same input (a program that adds 1 to the
   angles), the closed form alone, and the closure core's sweep.
2. The Stephenson-II 180-step sweep (goal ≤ 0.5 ms): the predictor (continuation
   through every 6th input), the corrector (3 Newton steps on all inputs, with the
   Jacobian at the result), the checks (determinant and condition number of every
   input's Jacobian, one elimination of `[J | I]`), and the whole sweep.
3. The Gough–Stewart exact inverse kinematics plus Newton–Euler over 10,000 samples
   (goal ≥ 10× the NumPy loop of `bench_parallel.py`), Equinox-jitted as there: per sample, the closure
   residual, its Jacobian, one 42×42 solve, the implicit rates and accelerations, the
   wrench solve with its condition number, and the whole pipeline.

Writes benchmarks/results/bounds.json and prints a table.
"""

import argparse
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks._timing import add_dispatch_flag, set_dispatch  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=200, help="runs per small program (the 10,000-sample ones: 5)")
    ap.add_argument("--quick", action="store_true", help="few repeats, 1,000 samples (a smoke run)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "bounds.json"))
    add_dispatch_flag(ap)
    a = ap.parse_args(argv)
    async_dispatch = set_dispatch(a.async_dispatch)

    import jax

    jax.config.update("jax_enable_x64", True)
    import equinox as eqx
    import jax.numpy as jnp
    import numpy as np

    import diffmech as dm
    from benchmarks.bench_parallel import LOADS, pipeline
    from diffmech import _closure, _linalg, linkage as L, parallel as par
    from diffmech._xla import COMPILER_OPTIONS
    from diffmech.fourbar import _kinematics as fbk
    from diffmech.linkage._simulate import prepare, prepared_residual
    from diffmech.parallel import _kinematics

    small, large = (10, 2) if a.quick else (a.repeats, 5)

    def median_call(g, args, repeats):
        """The median of `repeats` calls of the compiled `g(*args)` after a warm-up, in seconds."""
        jax.block_until_ready(g(*args))
        runs = []
        for _ in range(repeats):
            t = time.perf_counter()
            jax.block_until_ready(g(*args))
            runs.append(time.perf_counter() - t)
        return float(np.median(runs))

    def timed(f, *args, repeats):
        """`f` jitted as the library's eager programs are (and as
        `bench_fourbar_kinematics.py` times them), `median_call`."""
        return median_call(jax.jit(f, compiler_options=COMPILER_OPTIONS), args, repeats)

    out = dict(
        machine=dict(
            platform=platform.platform(),
            cpus=os.cpu_count(),
            jax=jax.__version__,
            date=time.strftime("%Y-%m-%d"),
            jax_cpu_enable_async_dispatch=async_dispatch,
        )
    )

    # 1. the four-bar's single sweep
    fb = dm.FourBar.seed_crank_rocker()
    th = jnp.linspace(0, 2 * jnp.pi, 180, endpoint=False)
    out["fourbar_single_180_us"] = {
        "any program on the angles (th + 1)": timed(lambda f, t: t + 1.0, fb, th, repeats=small) * 1e6,
        "closed form alone": timed(lambda f, t: jax.vmap(lambda x: fbk.closed_form(f, x)[0])(t), fb, th, repeats=small)
        * 1e6,
        "closure core sweep": timed(lambda f, t: fbk.sweep_functional(f, t, condition=False).q, fb, th, repeats=small)
        * 1e6,
    }

    # 2. the Stephenson-II sweep
    lk = dm.examples.stephenson2()
    u = L.default_inputs(lk)
    prep, x0 = prepare(lk), lk.x0()
    opts = _closure._Options(fn=prepared_residual, branch="det", atol=1e-10, xtol=1e-10, max_steps=10, condition=True)
    guess = jax.jit(lambda p, x, v: _closure.Coarse().predict(opts, x, v, p).guess)(prep, x0, u)

    def correct(p, g, v):
        return jax.vmap(lambda g_, v_: _closure.Newton()._correct(prepared_residual, g_, v_, p, with_jacobian=True))(
            g, v
        )

    J = jax.jit(correct)(prep, guess, u)[4]
    r = jax.jit(jax.vmap(lambda g_, v_: prepared_residual(g_, v_, prep)))(guess, u)
    out["stephenson2_180_ms"] = {
        "predictor (continuation through every 6th input, 31 nodes)": timed(
            lambda p, x, v: _closure.Coarse().predict(opts, x, v, p).guess, prep, x0, u, repeats=small
        )
        * 1e3,
        "corrector (3 Newton steps on 180 inputs, Jacobian at the result)": timed(
            correct, prep, guess, u, repeats=small
        )
        * 1e3,
        "one 9x9 solve on 180 inputs": timed(jax.vmap(_linalg.solve), J, r, repeats=small) * 1e3,
        "checks (determinant and condition, [J | I] on 180 inputs)": timed(jax.vmap(opts.checks), J, repeats=small)
        * 1e3,
        "whole sweep (simulate_functional, jitted)": timed(
            lambda lk_, v: L.sweep_functional(lk_, v).coords, lk, u, repeats=small
        )
        * 1e3,
    }

    # 3. the Gough–Stewart exact pipeline, per sample
    n = 1000 if a.quick else 10_000
    mech = par.StewartPlatform()
    traj = par.stewart_spiral(mech, jnp.arange(n) * 1e-3)
    kin = eqx.filter_jit(lambda m, t: par.inverse_kinematics(m, t, method="exact"))(mech, traj)
    (R_t, d_t), (Rd_t, dd_t), (Rdd_t, ddd_t) = traj.displacement(mech.reference)
    x = kin.state
    Js = jax.jit(jax.vmap(lambda x_, R, d: _kinematics.jacobian(x_, (R, d), mech)))(x, R_t, d_t)

    def per_sample(f, *args):
        """Microseconds per sample of `f(*args)` (Equinox's jit: the mechanism and the
        trajectory are modules; these programs run for milliseconds, so its call
        overhead does not count)."""
        return median_call(eqx.filter_jit(f), args, large) / n * 1e6

    def rates(x, R, d, Rd, dd, Rdd, ddd, J):
        return jax.vmap(lambda x_, u, ud, udd, J_: _closure.rates(_kinematics.residual, x_, u, mech, ud, udd, jac=J_))(
            x, (R, d), (Rd, dd), (Rdd, ddd), J
        )

    def dynamics(m, k):
        """The inverse dynamics given the exact kinematics, with the seed's load: every
        body's motion, the Newton–Euler wrench solve and its condition number."""
        return par.inverse_dynamics(m, traj, LOADS["stewart"], kinematics=k).condition

    out["stewart_exact_us_per_sample"] = {
        "closure residual": per_sample(jax.vmap(lambda x_, R, d: _kinematics.residual(x_, (R, d), mech)), x, R_t, d_t),
        "closure Jacobian (closed form)": per_sample(
            jax.vmap(lambda x_, R, d: _kinematics.jacobian(x_, (R, d), mech)), x, R_t, d_t
        ),
        "one 42x42 solve": per_sample(jax.vmap(_linalg.solve), Js, x),
        "implicit rates and accelerations (two solves, second-order jvp)": per_sample(
            rates, x, R_t, d_t, Rd_t, dd_t, Rdd_t, ddd_t, Js
        ),
        "inverse kinematics (exact)": per_sample(
            lambda m, t: par.inverse_kinematics(m, t, method="exact").state_accel, mech, traj
        ),
        "inverse dynamics given the kinematics (body motions, wrench solve, condition)": per_sample(
            dynamics, mech, kin
        ),
        "whole pipeline": per_sample(lambda m, t: pipeline("exact")(m, t, LOADS["stewart"])[1], mech, traj),
    }
    out["stewart_samples"] = n

    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump(out, fh, indent=1)
    for key, rows in out.items():
        if isinstance(rows, dict) and key != "machine":
            print(key)
            for k, v in rows.items():
                print(f"  {k:75s} {v:10.3f}")
    print(json.dumps(out["machine"]))


if __name__ == "__main__":
    main()
