"""The delta robot's forward dynamics (three inputs), 5 s under gravity and constant
motor torques from rest, against MuJoCo and Pinocchio modelling the same file
(`diffmech/linkage/data/delta.json`) as a tree with loop constraints:

- diffmech: `linkage.simulate_dynamics(delta, u0, udot0, 5.0, drive=…, saveat=…)` as
  the documentation writes it (its defaults: Dopri8, rtol 1e-10, atol 1e-12), the loop
  closed by Newton at every evaluation;
- MuJoCo (`benchmarks/peers/mujoco_delta.py`): free platform, six `connect`
  equalities, RK4; MuJoCo's default softness (timestep 2e-3) and a stiff one
  (solref 1e-3, timestep 5e-4);
- Pinocchio (`benchmarks/peers/pinocchio_delta.py`): the platform hung from one rod,
  five 3-D rigid loop constraints, `constraintDynamics` with Baumgarte correction,
  Lie-group RK4 at timesteps 4e-3 and 1e-3.

diffmech is also timed at a looser tolerance, `rtol=1e-6, atol=1e-8` (`--fast-rtol`):
the loop still closes to round-off at every evaluation (closure is Newton's, not the
integrator's), only the trajectory's accuracy changes, reported as its arm angles'
distance from the default run's beside each peer's.

Reported per model: the warm wall time (median of `--repeats`; diffmech's compile time
apart), the loop gap (the peers: the largest distance between a rod's end and its
platform point over every step; diffmech: the largest rigidity-equation residual over
the saves, in metres: its rods and platform are points at fixed distances), the energy
drift (`max |E − E₀ − W| / max T`, `W` the motors' work) and the arm angles' largest
distance from diffmech's. Then the batched throughput, simulated seconds per wall
second: diffmech vmapped over `--designs` designs (the platform's mass scaled by
1 + 0.1 i/n) in one program; the peers a loop over `--peer-designs` of them (their
cost per design does not depend on how many: the rate is per design).

One thread, as the issue asks: run it pinned to one core,

    taskset -c 0 python benchmarks/bench_delta.py [--repeats 5] [--designs 1024] [--peer-designs 32]

Writes benchmarks/results/delta.json. Needs `mujoco` and `pin` (the `bench` extra).
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_cpu_enable_async_dispatch", False)  # small programs run inline (the README's advice)
import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import diffmech as dm  # noqa: E402
from benchmarks._timing import timed  # noqa: E402
from benchmarks.peers import mujoco_delta, pinocchio_delta  # noqa: E402
from diffmech import linkage as L  # noqa: E402

T1 = 5.0
OFFSET = np.array([0.05, -0.03, 0.02])  # N m beyond the holding torques: the arms oscillate


def _median_wall(f, repeats):
    out, runs = None, []
    for _ in range(repeats):
        out = f()
        runs.append(out["wall_s"])
    return out, statistics.median(runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--designs", type=int, default=1024)
    ap.add_argument("--peer-designs", type=int, default=32)
    ap.add_argument("--fast-rtol", type=float, default=1e-6)
    args = ap.parse_args()
    fast = dict(rtol=args.fast_rtol, atol=1e-2 * args.fast_rtol)

    lk = dm.examples.delta()
    spec = json.loads(dm.examples.path("delta").read_text())
    hold = np.asarray(L.joint_forces(lk, np.zeros((1, 3))).torque[0])
    tau = hold + OFFSET
    tau_j = jnp.asarray(tau)
    drive = L.Drive(torque=lambda t, u, w: tau_j)
    ts = jnp.linspace(0.0, T1, 11)
    zero = np.zeros(3)

    def ours():
        return L.simulate_dynamics(lk, zero, zero, T1, drive=drive, saveat=ts)

    sim, compile_s, wall = timed(ours, repeats=args.repeats)
    q_ref = np.asarray(sim.u)
    rows = {
        "diffmech": {
            "wall_s": wall,
            "compile_s": compile_s,
            "loop_gap": float(np.max(sim.residual)),
            "energy_drift": float(sim.energy_error),
            "max_q_difference": 0.0,
            "steps": int(sim.num_steps),
            "converged": bool(np.all(sim.converged)),
        }
    }
    print(
        f"diffmech: compile {compile_s:.1f} s, run {wall:.3f} s, gap {rows['diffmech']['loop_gap']:.1e} m", flush=True
    )

    sim_f, compile_f, wall_f = timed(
        lambda: L.simulate_dynamics(lk, zero, zero, T1, drive=drive, saveat=ts, **fast), repeats=args.repeats
    )
    rows["diffmech_fast"] = {
        "wall_s": wall_f,
        "compile_s": compile_f,
        "loop_gap": float(np.max(sim_f.residual)),
        "energy_drift": float(sim_f.energy_error),
        "max_q_difference": float(np.max(np.abs(np.asarray(sim_f.u) - q_ref))),
        "steps": int(sim_f.num_steps),
        "converged": bool(np.all(sim_f.converged)),
        **fast,
    }
    print(
        f"diffmech rtol {args.fast_rtol:g}: run {wall_f:.3f} s, gap {rows['diffmech_fast']['loop_gap']:.1e} m, "
        f"q off {rows['diffmech_fast']['max_q_difference']:.1e} rad",
        flush=True,
    )

    peers = {
        "mujoco_default": lambda: mujoco_delta.run(spec, tau, t1=T1, saves=np.asarray(ts), softness="default"),
        "mujoco_stiff": lambda: mujoco_delta.run(spec, tau, t1=T1, saves=np.asarray(ts), softness="stiff"),
        "pinocchio_dt4e-3": lambda: pinocchio_delta.run(spec, tau, t1=T1, saves=np.asarray(ts), timestep=4e-3),
        "pinocchio_dt1e-3": lambda: pinocchio_delta.run(spec, tau, t1=T1, saves=np.asarray(ts), timestep=1e-3),
    }
    for name, f in peers.items():
        out, w = _median_wall(f, args.repeats)
        rows[name] = {
            "wall_s": w,
            "loop_gap": float(out["loop_gap"]),
            "energy_drift": float(out["energy_drift"]),
            "max_q_difference": float(np.max(np.abs(np.asarray(out["q"]) - q_ref))),
            "timestep": float(out["timestep"]),
            "steps": int(out["steps"]),
        }
        print(f"{name}: run {w:.3f} s, gap {out['loop_gap']:.1e} m, drift {out['energy_drift']:.1e}", flush=True)

    # batched: diffmech vmapped over the designs in one program
    ip = lk.link_names.index("platform")

    def batch_of(**options):
        @jax.jit
        def batch(scales):
            def one(s):
                lk_s = eqx.tree_at(lambda k: k.masses, lk, lk.masses.at[ip].multiply(s))
                out = L.simulate_dynamics(lk_s, zero, zero, T1, drive=drive, saveat=ts, **options)
                return jnp.all(out.converged)

            return jax.vmap(one)(scales)

        return batch

    n = args.designs
    batched = {}
    for name, options in (("diffmech", {}), ("diffmech_fast", fast)):
        ok, b_compile, b_wall = timed(batch_of(**options), 1.0 + 0.1 * jnp.arange(n) / n, repeats=1)
        batched[name] = {
            "designs": n,
            "wall_s": b_wall,
            "compile_s": b_compile,
            "sim_seconds_per_second": n * T1 / b_wall,
            "converged": bool(np.all(ok)),
            **options,
        }
        print(f"{name} batched {n}: {b_wall:.1f} s, {n * T1 / b_wall:.1f} sim-s/s", flush=True)
    m = args.peer_designs
    for name, f in {
        "mujoco_default": lambda: mujoco_delta.batched(spec, tau, n=m, t1=T1, softness="default"),
        "mujoco_stiff": lambda: mujoco_delta.batched(spec, tau, n=m, t1=T1, softness="stiff"),
        "pinocchio_dt4e-3": lambda: pinocchio_delta.batched(spec, tau, n=m, t1=T1, timestep=4e-3),
    }.items():
        out = f()
        batched[name] = {"designs": m, "wall_s": out["wall_s"], "sim_seconds_per_second": out["sim_seconds_per_second"]}
        print(f"{name} batched {m}: {out['sim_seconds_per_second']:.1f} sim-s/s", flush=True)

    import mujoco
    import pinocchio

    result = {
        "jax": jax.__version__,
        "mujoco": mujoco.__version__,
        "pinocchio": pinocchio.__version__,
        "date": datetime.date.today().isoformat(),
        "affinity": sorted(os.sched_getaffinity(0)),
        "repeats": args.repeats,
        "torque": tau.tolist(),
        "single": rows,
        "batched": batched,
    }
    os.makedirs(os.path.join(ROOT, "benchmarks", "results"), exist_ok=True)
    with open(os.path.join(ROOT, "benchmarks", "results", "delta.json"), "w") as fh:
        json.dump(result, fh, indent=1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"total {time.perf_counter() - t0:.0f} s")
