"""Linkage dynamics (issue 23): the Theo Jansen leg for 5 s in diffmech against MuJoCo,
in one run.

diffmech integrates the exact reduced equation (`linkage.simulate_dynamics`, the loop
closed by Newton at every evaluation) at several tolerances; MuJoCo
(`benchmarks/peers/mujoco_jansen.py`) integrates the leg as a tree closed by soft
`connect` equalities, Euler and RK4 at dt 1e-3 and 1e-4, default and stiff
softness. Reported per run: warm wall time, the loop gap (diffmech: the closure
residual at the saves; MuJoCo: the largest distance between connected sites), the
energy error (|E − E0 − W| over the largest kinetic energy, computed from the
bodies' motion), and |u(5 s) − u_ref(5 s)| against the independent
absolute-coordinate model (`tests/reference/linkage_absolute.py`, rtol 1e-12).
Batched: simulated seconds per wall second for a batch of designs (link masses
scaled in [0.9, 1.1]), diffmech vmapped in one program against MuJoCo's single thread.

Joint forces: the leg's kinetostatics over one crank turn (360 samples) against the
independent model's NumPy loop, and 256 designs vmapped.

    python benchmarks/bench_linkage_dynamics.py [--repeats 3] [--batch 1024] [--joint-forces-only]

Writes benchmarks/results/linkage_dynamics.json.
"""

import argparse
import json
import os
import platform
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)
import equinox as eqx
import jax.numpy as jnp
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
from reference import linkage_absolute as absolute

from benchmarks._timing import timed
from benchmarks.peers import mujoco_jansen as mj
from diffmech import examples, linkage as L

PATH = str(examples.path("theo_jansen"))
T1 = 5.0
SAVES = np.linspace(0.0, T1, 51)


def _torque(t, u, w):
    return 50.0 - 5.0 * w


def diffmech_runs(repeats):
    lk = examples.theo_jansen()
    out = []
    for driven in (False, True):
        ref = absolute.forward(absolute.load(PATH), SAVES, torque=_torque if driven else None)
        for rtol in (1e-6, 1e-8, 1e-10, 1e-12):
            drive = L.Drive(torque=_torque) if driven else None

            def run():
                return L.simulate_dynamics(
                    lk, 0.0, T1, saveat=jnp.asarray(SAVES), drive=drive, rtol=rtol, atol=rtol * 1e-2
                )

            sim, compile_s, wall = timed(run, repeats=repeats)
            row = dict(
                driven=driven,
                rtol=rtol,
                wall_s=wall,
                compile_s=compile_s,
                steps=int(sim.num_steps),
                loop_gap=float(jnp.max(sim.residual)),
                energy_error=float(sim.energy_error),
                u_error=float(np.max(np.abs(np.asarray(sim.u) - ref["u"]))),
            )
            out.append(row)
            print(
                f"  diffmech {'driven' if driven else 'free  '} rtol {rtol:.0e}: {wall * 1e3:8.1f} ms "
                f"(compile {compile_s:.1f} s), gap {row['loop_gap']:.1e}, energy {row['energy_error']:.1e}, "
                f"|u − u_ref| {row['u_error']:.1e}"
            )
    return out


def mujoco_runs():
    out = []
    for driven in (False, True):
        ref = absolute.forward(absolute.load(PATH), SAVES, torque=_torque if driven else None)
        for integrator in ("Euler", "RK4"):
            for dt in (1e-3, 1e-4):
                for stiff in (False, True):
                    # MuJoCo's actuator: τ = 50 − 5 u̇, evaluated at every stage
                    r = mj.simulate(
                        PATH, t1=T1, dt=dt, integrator=integrator, stiff=stiff, torque=(50.0, -5.0) if driven else None
                    )
                    u_err = float(np.max(np.abs(np.interp(SAVES, r["t"], r["u"]) - ref["u"])))
                    row = dict(
                        driven=driven,
                        integrator=integrator,
                        dt=dt,
                        stiff=stiff,
                        wall_s=r["wall_s_bare"],
                        loop_gap=r["max_loop_gap"],
                        energy_error=r["energy_drift"],
                        u_error=u_err,
                    )
                    out.append(row)
                    print(
                        f"  MuJoCo {'driven' if driven else 'free  '} {integrator:5s} dt {dt:.0e} "
                        f"{'stiff  ' if stiff else 'default'}: {row['wall_s'] * 1e3:8.1f} ms, "
                        f"gap {row['loop_gap']:.1e}, energy {row['energy_error']:.1e}, |u − u_ref| {u_err:.1e}"
                    )
    return out


def batched(n, repeats):
    lk = examples.theo_jansen()
    scale = jnp.asarray(np.random.default_rng(0).uniform(0.9, 1.1, (n, lk.masses.shape[0])))
    t1 = 1.0

    @jax.jit
    def run(s):
        def one(si):
            m = eqx.tree_at(lambda k: k.masses, lk, lk.masses * si)
            return L.simulate_dynamics(m, 0.0, t1, saveat=jnp.array([0.0, t1]), rtol=1e-8, atol=1e-10).u[-1]

        return jax.vmap(one)(s)

    _, compile_s, wall = timed(run, scale, repeats=repeats)
    d = dict(designs=n, t1=t1, wall_s=wall, compile_s=compile_s, sim_s_per_s=n * t1 / wall)
    d["mujoco"] = {}
    for integrator in ("Euler", "RK4"):
        m = mj.throughput(PATH, n_runs=64, t1=t1, dt=1e-3, integrator=integrator)
        d["mujoco"][integrator] = {k: m[k] for k in ("sim_per_wall", "wall_s", "n_runs", "dt", "stiff")}
    print(
        f"  batched: diffmech {n} designs × {t1} s in {wall:.2f} s (compile {compile_s:.1f} s): "
        f"{d['sim_s_per_s']:.1f} simulated s/s; MuJoCo dt 1e-3, one thread: Euler "
        f"{d['mujoco']['Euler']['sim_per_wall']:.1f}, RK4 {d['mujoco']['RK4']['sim_per_wall']:.1f} simulated s/s"
    )
    return d


def joint_forces_runs(repeats, n_samples=360, n_designs=256):
    """Kinetostatics of the Jansen leg over one crank turn at constant speed:
    `linkage.joint_forces` (one compiled program; warm median and compile time)
    against the independent model's NumPy loop (`absolute.inverse`: a continuation
    and two dense solves per sample), the same samples; then a batch of designs
    (link masses scaled in [0.9, 1.1]) vmapped in one program."""
    lk = examples.theo_jansen()
    u = np.linspace(0.0, 2 * np.pi, n_samples, endpoint=False)
    w = 2 * np.pi  # one turn per second

    def ours(lk_):
        return L.joint_forces(lk_, u, w, 0.0, throw=False)

    jf, compile_s, wall = timed(ours, lk, repeats=repeats)
    model = absolute.load(PATH)
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        ref = absolute.inverse(model, u / w, u, w, 0.0)
        runs.append(time.perf_counter() - t)
    ref_wall = float(np.median(runs))
    diff = float(np.max(np.abs(np.asarray(jf.torque) - ref["torque"])) / np.max(np.abs(ref["torque"])))
    scale = jnp.asarray(np.random.default_rng(1).uniform(0.9, 1.1, (n_designs, lk.masses.shape[0])))

    @jax.jit
    def batch(s):
        def one(si):
            return L.joint_forces(eqx.tree_at(lambda k: k.masses, lk, lk.masses * si), u, w, 0.0, throw=False).torque

        return jax.vmap(one)(s)

    _, batch_compile, batch_wall = timed(batch, scale, repeats=repeats)
    d = dict(
        samples=n_samples,
        wall_s=wall,
        compile_s=compile_s,
        reference_wall_s=ref_wall,
        speedup=ref_wall / wall,
        torque_rel_diff=diff,
        batch=dict(designs=n_designs, wall_s=batch_wall, compile_s=batch_compile),
        configs_per_s=n_samples / wall,
        batch_configs_per_s=n_designs * n_samples / batch_wall,
        reference_configs_per_s=n_samples / ref_wall,
    )
    print(
        f"  joint forces, {n_samples} samples: diffmech {wall * 1e3:.1f} ms (compile {compile_s:.1f} s), "
        f"NumPy reference {ref_wall * 1e3:.0f} ms: {d['speedup']:.0f}×; motor torque agrees to {diff:.1e} "
        f"(relative); {n_designs} designs vmapped: {batch_wall:.2f} s, {d['batch_configs_per_s']:.3g} configurations/s"
    )
    return d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--joint-forces-only", action="store_true", help="run only the joint-force comparison")
    a = ap.parse_args()
    print(f"jax {jax.__version__}, {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs")
    out = dict(jax=jax.__version__, date=time.strftime("%Y-%m-%d"), machine=platform.machine(), cpus=os.cpu_count())
    path = os.path.join(ROOT, "benchmarks", "results", "linkage_dynamics.json")
    if a.joint_forces_only:
        previous = json.load(open(path)) if os.path.exists(path) else {}
        previous["joint_forces"] = dict(jax=out["jax"], date=out["date"], **joint_forces_runs(a.repeats))
        out = previous
    else:
        if not mj.available():
            print("mujoco is not installed: python -m pip install '.[bench]'")
            return
        out["diffmech"] = diffmech_runs(a.repeats)
        out["mujoco"] = mujoco_runs()
        out["batched"] = batched(a.batch, a.repeats)
        out["joint_forces"] = joint_forces_runs(a.repeats)
    os.makedirs(os.path.join(ROOT, "benchmarks", "results"), exist_ok=True)
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
