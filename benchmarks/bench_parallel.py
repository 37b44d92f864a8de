"""Parallel-mechanism speed (issue 5): the seeds' full 10,000-step inverse kinematics
plus inverse dynamics (Δt = 1 ms over 10 s) of the Gough–Stewart platform (seed 002)
and the 3UPS–UPU–S (seed 004), jitted, against a straightforward NumPy per-step loop
of the same equations (benchmarks/peers/numpy_parallel.py: the seeds' one-step scheme
and a Newton–Euler wrench solve per step) measured in the same run; and the batched
throughput over many trajectories.

    python benchmarks/bench_parallel.py [--repeats 3] [--batch 100] [--quick]

Compile time is reported separately (first call minus a warm run); run times are
medians of `--repeats` runs after a warm-up. Writes benchmarks/results/parallel.json.
"""

import argparse
import json
import os
import platform
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)
import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks._timing import timed  # noqa: E402
from benchmarks.peers import numpy_parallel as peer  # noqa: E402
from diffmech import parallel as par  # noqa: E402

LOADS = {
    "stewart": jnp.array([0.0, 0.0, 10.0, 10.0, 0.0, 0.0]),
    "ups_upu_s": jnp.array([0.0, 0.0, 1000.0, 1000.0, 0.0, 0.0]),
}


def pipeline(ik_method):
    def run(mech, traj, load):
        kin = par.inverse_kinematics(mech, traj, method=ik_method)
        dyn = par.inverse_dynamics(mech, traj, load, kinematics=kin)
        return kin.labels, dyn.actuator_forces, kin.converged & dyn.converged

    return eqx.filter_jit(run)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--quick", action="store_true", help="1,000 steps, batch 8 (a smoke run)")
    ap.add_argument("--no-batch", action="store_true", help="one trajectory per mechanism only")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "parallel.json"))
    a = ap.parse_args()
    steps, batch = (1000, 8) if a.quick else (10_000, a.batch)
    times = jnp.arange(steps) * 1e-3
    rows = []
    cases = [
        ("stewart", par.StewartPlatform(), par.stewart_spiral, peer.stewart, "radius"),
        ("ups_upu_s", par.ThreeUPSUPUS(), par.tilt_circle, peer.ups_upu_s, "amplitude"),
    ]
    for name, mech, make, peer_fn, knob in cases:
        traj = make(mech, times)
        load = LOADS[name]
        t = time.perf_counter()
        ref = peer_fn(n_steps=steps, dt=1e-3)
        numpy_s = time.perf_counter() - t
        row = dict(mechanism=name, steps=steps, numpy_loop_s=numpy_s)
        for mode in ("one_step", "exact"):
            (labels, forces, ok), comp, run = timed(pipeline(mode), mech, traj, load, repeats=a.repeats)
            row[mode] = dict(compile_s=comp, run_s=run, speedup_vs_numpy=numpy_s / run, all_ok=bool(ok.all()))
            if mode == "one_step":
                row[mode]["max_force_diff_vs_numpy_N"] = float(
                    np.abs(np.asarray(forces) - ref["actuator_forces"]).max()
                )
        # batched: `batch` trajectories of different amplitude, vmapped (one-step: full length;
        # exact: the first 1,000 steps, to keep the run short), in chunks of 25 trajectories
        scale = jnp.linspace(0.5, 1.0, batch)
        for mode, n in () if a.no_batch else (("one_step", steps), ("exact", min(steps, 1000))):
            trajs = jax.vmap(lambda s: make(mech, times[:n], **{knob: 0.1 * s if knob == "amplitude" else 0.005 * s}))(
                scale
            )
            f = eqx.filter_jit(lambda tr: jax.lax.map(lambda t_: pipeline(mode)(mech, t_, load)[1], tr, batch_size=25))
            _, comp, run = timed(f, trajs, repeats=1)
            row[f"batched_{mode}"] = dict(
                trajectories=batch,
                steps=n,
                compile_s=comp,
                run_s=run,
                steps_per_s=batch * n / run,
                speedup_vs_numpy_per_step=(batch * n / run) / (steps / numpy_s),
            )
        rows.append(row)
        print(json.dumps(row, indent=1), flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump(
            dict(
                machine=platform.processor() or platform.machine(),
                cpus=os.cpu_count(),
                jax=jax.__version__,
                date=time.strftime("%Y-%m-%d"),
                rows=rows,
            ),
            fh,
            indent=1,
        )


if __name__ == "__main__":
    main()
