"""Four-bar dynamics (issue 3): diffmech's reduced Hamiltonian model against MuJoCo and
a SciPy minimal-coordinate baseline, all measured in this run on this machine.

    python benchmarks/bench_fourbar_dynamics.py            # full (several minutes)
    python benchmarks/bench_fourbar_dynamics.py --quick    # small sizes, a smoke run

Writes benchmarks/results/fourbar_dynamics.json and prints the tables of the README.

Case: the Section 7.2 crank-rocker (l = 0.12, 0.25, 0.26, 0.30 m; m = 0.1, 0.25, 0.18 kg;
J = 0.001, 0.016, 0.006 kg m²; COM at midpoints; g = (0, −9.81)), released from rest at
θA = 0, 5 s. θA(5 s) is compared with the independent absolute-coordinate reference
model of the tests (tests/reference/fourbar_absolute.py), run here at rtol 1e-13.

Measures (compile time separately; wall times are medians of repeated runs):
- `closure`: the loop gap |C_coupler − C_rocker| in metres, max over the run;
- `drift`: max |E(t) − E(0)| / max T(t) (T the kinetic energy);
- `sim_per_wall`: simulated seconds per wall second (batched: one `vmap` of all the
  trajectories, and `chunked_sim_per_wall`: the same in chunks of `CHUNK` trajectories,
  `closure.vmap_chunked`).
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import diffmech as dm  # noqa: E402
from benchmarks._timing import median  # noqa: E402
from diffmech import fourbar as fbk  # noqa: E402

L = (0.12, 0.25, 0.26, 0.30)
M = (0.1, 0.25, 0.18)
J = (0.001, 0.016, 0.006)
COM = ((0.06, 0.0), (0.125, 0.0), (0.13, 0.0))
G = (0.0, -9.81)
T1 = 5.0


def _loop_gap(q):
    q = np.asarray(q)
    l1, l2, l3, l4 = L
    c1 = l1 * q[..., 0:2] + l2 * q[..., 2:4]
    c2 = np.array([l4, 0.0]) + l3 * q[..., 4:6]
    return float(np.max(np.linalg.norm(c1 - c2, axis=-1)))


def reference_theta(t1):
    from reference import fourbar_absolute as ref

    r = ref.simulate(L, M, J, COM, G, 0.0, 0.0, np.array([0.0, t1]), rtol=1e-13)
    return float(r["theta_A"][-1])


def single_runs(fb, q0, rtols, modes, repeats, theta_ref):
    rows = []
    for mode in modes:
        # the default mode also at intermediate tolerances, to compare at equal wall time
        for rtol in rtols if mode != "minimal" else sorted(set(rtols) | {1e-9, 1e-11, 1e-13, 1e-14}, reverse=True):

            def run():
                return fbk.simulate_dynamics(fb, q0, 0.0, T1, mode=mode, rtol=rtol, atol=rtol * 1e-2)

            t = time.perf_counter()
            tr = jax.block_until_ready(run())
            first = time.perf_counter() - t
            wall = median(run, repeats=repeats)
            rows.append(
                dict(
                    mode=mode,
                    rtol=rtol,
                    compile_s=max(first - wall, 0.0),
                    wall_s=wall,
                    steps=int(tr.num_steps),
                    closure=_loop_gap(tr.q),
                    closure_residual=float(jnp.max(tr.residual)),
                    norm_error=float(np.max(np.abs(np.linalg.norm(np.asarray(tr.q).reshape(-1, 3, 2), axis=-1) - 1))),
                    drift=float(tr.energy_drift),
                    theta_err=abs(float(tr.theta_A[-1]) - theta_ref),
                    sim_per_wall=T1 / wall,
                )
            )
            print(
                f"  diffmech {mode:8s} rtol {rtol:.0e}: {wall * 1e3:8.2f} ms (compile {rows[-1]['compile_s']:.1f} s), "
                f"{rows[-1]['steps']} steps, gap {rows[-1]['closure']:.1e} m, |q|-1 {rows[-1]['norm_error']:.1e}, "
                f"drift {rows[-1]['drift']:.1e}, |ΔθA(5)| {rows[-1]['theta_err']:.1e}",
                flush=True,
            )
    return rows


def released(fb, theta0, omega0, t1, rtol):
    """One run of the batched throughput: released at crank angle `theta0` with crank
    rate `omega0`, minimal mode, saved at 0 and `t1`."""
    q0 = fbk.project(fb, jnp.stack([jnp.cos(theta0), jnp.sin(theta0), 0.0, 1.0, 0.0, 1.0]))
    return fbk.simulate_dynamics(
        fb, q0, fbk.momentum(fb, q0, omega0), t1, saveat=jnp.array([0.0, t1]), rtol=rtol, atol=rtol * 1e-2
    )


def random_releases(rng, n):
    """n crank angles in [−π, π) and rates in [−3, 3) rad/s: the batched cases' starts."""
    return jnp.asarray(rng.uniform(-np.pi, np.pi, n)), jnp.asarray(rng.uniform(-3, 3, n))


# trajectories per chunk of the chunked batched runs (`closure.vmap_chunked`): 128–256
# measured fastest at 1024 and 8192 trajectories (64: slower), 2026-11-25
CHUNK = 128


def throughput(fb, batches, t1, rtol, repeats):
    """Simulated seconds per wall second of `n` released trajectories in one program:
    one `vmap` of all of them, and (above `CHUNK`) the same `vmap` run `CHUNK`
    trajectories at a time (`closure.vmap_chunked`), whose final angles must equal the
    one `vmap`'s."""
    rows = []
    rng = np.random.default_rng(1)

    def one(a):
        tr = released(fb, a[0], a[1], t1, rtol)
        return tr.theta_A[-1], tr.ok

    for n in batches:
        th0, w0 = random_releases(rng, n)
        row = dict(batch=n, t1=t1, rtol=rtol)
        for key, chunk in (("", None), ("chunked_", CHUNK)):
            if chunk is not None and n <= chunk:
                continue
            run = jax.jit(lambda th, w, c=chunk: dm.closure.vmap_chunked(one, (th, w), c))
            t = time.perf_counter()
            theta, ok = jax.block_until_ready(run(th0, w0))
            first = time.perf_counter() - t
            wall = median(lambda: run(th0, w0), repeats=repeats)
            row.update(
                {
                    f"{key}compile_s": max(first - wall, 0.0),
                    f"{key}wall_s": wall,
                    f"{key}sim_per_wall": n * t1 / wall,
                    f"{key}all_ok": bool(jnp.all(ok)),
                }
            )
            if chunk is None:
                theta_one = theta
            else:
                row["chunk"] = chunk
                row["chunked_max_abs_diff_theta_A"] = float(jnp.max(jnp.abs(theta - theta_one)))
            print(
                f"  diffmech batch {n:5d} (minimal, rtol {rtol:.0e}, {t1} s each"
                + (f", in chunks of {chunk}" if chunk else "")
                + f"): {wall:.3f} s, {n * t1 / wall:,.0f} simulated s per s, all ok: {bool(jnp.all(ok))}",
                flush=True,
            )
        rows.append(row)
    return rows


def mujoco_runs(q0, theta_ref, dts, repeats):
    from peers import mujoco_fourbar as mj

    if not mj.available():
        print("  MuJoCo not installed (pip install '.[bench]'): skipped")
        return []
    q0 = np.asarray(q0)
    angles0 = tuple(float(np.arctan2(q0[i + 1], q0[i])) for i in (0, 2, 4))
    rows = []
    for integrator in ("Euler", "RK4"):
        for dt in dts:
            for stiff in (False, True):
                r = mj.simulate(
                    L,
                    M,
                    J,
                    COM,
                    G,
                    angles0,
                    (0.0, 0.0, 0.0),
                    T1,
                    dt,
                    integrator=integrator,
                    stiff=stiff,
                    repeats=repeats,
                )
                rows.append(
                    dict(
                        integrator=integrator,
                        dt=dt,
                        stiff=stiff,
                        wall_s=r["wall_s_bare"],
                        closure=r["max_closure"],
                        drift=r["energy_drift"],
                        theta_err=abs(float(r["theta_A"][-1]) - theta_ref),
                        sim_per_wall=r["sim_per_wall"],
                    )
                )
                print(
                    f"  MuJoCo {integrator:5s} dt {dt:.0e} {'stiff  ' if stiff else 'default'}: "
                    f"{r['wall_s_bare'] * 1e3:8.2f} ms, "
                    f"gap {r['max_closure']:.1e} m, drift {r['energy_drift']:.1e}, |ΔθA(5)| "
                    f"{rows[-1]['theta_err']:.1e}",
                    flush=True,
                )
    return rows


def scipy_runs(rtols, theta_ref, repeats):
    from peers import scipy_fourbar as sp

    rows = []
    for rtol in rtols:
        r = sp.simulate(
            L, M, J, COM, G, 0.0, 0.0, np.linspace(0, T1, 501), rtol=rtol, atol=rtol * 1e-2, repeats=repeats
        )
        rows.append(
            dict(
                rtol=rtol,
                wall_s=r["wall_s"],
                nfev=int(r["nfev"]),
                drift=float(r["energy_drift"]),
                theta_err=abs(float(r["theta_A"][-1]) - theta_ref),
                sim_per_wall=T1 / r["wall_s"],
            )
        )
        print(
            f"  SciPy DOP853 rtol {rtol:.0e}: {r['wall_s'] * 1e3:8.2f} ms, {r['nfev']} RHS evaluations, "
            f"drift {r['energy_drift']:.1e}, |ΔθA(5)| {rows[-1]['theta_err']:.1e}",
            flush=True,
        )
    return rows


def goals(single, tput, mjr, spr):
    out = {}
    minimal = [r for r in single if r["mode"] == "minimal"]
    # (1) at equal (or lower) wall time per simulated second, closure and drift vs MuJoCo
    g1 = []
    for m in mjr:
        cheaper = [r for r in minimal if r["wall_s"] <= m["wall_s"]]
        if not cheaper:
            g1.append(dict(mujoco=m, diffmech=None))
            continue
        best = min(cheaper, key=lambda r: r["drift"])
        g1.append(
            dict(
                mujoco=f"{m['integrator']} dt {m['dt']:.0e} {'stiff' if m['stiff'] else 'default'}",
                mujoco_wall_s=m["wall_s"],
                diffmech_rtol=best["rtol"],
                diffmech_wall_s=best["wall_s"],
                closure_ratio=m["closure"] / max(best["closure"], 1e-300),
                drift_ratio=m["drift"] / max(best["drift"], 1e-300),
            )
        )
    out["vs_mujoco_equal_time"] = g1
    # (2) batched throughput (>= 1024) against MuJoCo single thread at dt 1e-4
    big = [r for r in tput if r["batch"] >= 1024]
    mj4 = [m for m in mjr if m["dt"] == 1e-4]
    if big and mj4:
        out["batched_vs_mujoco_1e-4"] = dict(
            diffmech_sim_per_wall=max(r["sim_per_wall"] for r in big),
            mujoco_best_sim_per_wall=max(m["sim_per_wall"] for m in mj4),
        )
    # (3) rtol 1e-10 single run against SciPy at the same accuracy
    sp10 = [r for r in spr if r["rtol"] == 1e-10]
    if sp10:
        s = sp10[0]
        ok = [r for r in minimal if r["theta_err"] <= s["theta_err"]]
        if ok:
            d = min(ok, key=lambda r: r["wall_s"])
            out["vs_scipy_1e-10"] = dict(
                scipy_wall_s=s["wall_s"],
                scipy_theta_err=s["theta_err"],
                diffmech_rtol=d["rtol"],
                diffmech_wall_s=d["wall_s"],
                diffmech_theta_err=d["theta_err"],
                speedup=s["wall_s"] / d["wall_s"],
            )
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "fourbar_dynamics.json"))
    args = ap.parse_args(argv)
    os.environ.setdefault("NUMBA_CACHE_DIR", "/tmp/numba_cache")
    repeats = 2 if args.quick else 5
    fb = dm.FourBar(lengths=L, masses=M, inertias=J, com=COM, gravity=G)
    q0 = fbk.assemble(fb, 0.0)
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}, {os.cpu_count()} CPU cores", flush=True)
    theta_ref = reference_theta(T1)
    print(f"reference θA(5 s) = {theta_ref:.12f} (absolute coordinates, rtol 1e-13)", flush=True)
    rtols = (1e-8, 1e-10, 1e-12)
    print("single 5-s runs", flush=True)
    single = single_runs(fb, q0, rtols, ("minimal", "lie", "paper"), repeats, theta_ref)
    print("batched throughput", flush=True)
    batches = (1, 64, 256) if args.quick else (1, 64, 1024, 8192)
    tput = throughput(fb, batches, 1.0, 1e-8, 2 if args.quick else 3)
    print("MuJoCo (single thread)", flush=True)
    mjr = mujoco_runs(q0, theta_ref, (1e-3,) if args.quick else (1e-3, 1e-4), repeats)
    print("SciPy minimal-coordinate baseline", flush=True)
    spr = scipy_runs(rtols, theta_ref, repeats)
    res = dict(
        machine=dict(jax=jax.__version__, platform=jax.devices()[0].platform, cpus=os.cpu_count()),
        reference_theta_A_5s=theta_ref,
        single=single,
        throughput=tput,
        mujoco=mjr,
        scipy=spr,
        goals=goals(single, tput, mjr, spr),
        quick=args.quick,
    )
    print(json.dumps(res["goals"], indent=1, default=str))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=1, default=str))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
