"""Batched throughput on whatever backend JAX starts (a GPU where there is one, this
machine's CPU otherwise): the library's batched calls, as the README writes them, at
several batch sizes, so that a GPU's figures and a CPU's come from the same script.

Workloads (each jitted once per size; compile time apart; the median of `--repeats`
warm runs):

- `fourbar_sweep`: `fourbar.sweep` of n designs (the seed crank-rocker's lengths
  ±2 %) over 360 crank angles, conditioning on (the default) — positions per second;
  `fourbar_sweep_lean`: the same with `condition=False`;
- `fourbar_dynamics`: n released four-bars (random crank angle and rate, minimal mode,
  rtol 1e-8), 5 s each — simulated seconds per second;
- `linkage_sweep`: the Stephenson-II through `linkage.sweep_functional`, n designs
  (every point moved by 0.2 % of the size), its default inputs, conditioning on (the
  default) — positions per second; `linkage_sweep_lean`: the same with `condition=False`;
- `jansen_dynamics`: the Theo Jansen leg's `linkage.simulate_dynamics`, n designs (link
  masses × [0.9, 1.1]), 1 s each, rtol 1e-8 — simulated seconds per second;
- `stewart`: the Gough–Stewart's exact inverse kinematics and inverse dynamics over
  n spiral trajectories of 1,000 steps — steps per second.

On the CPU backend the library runs large batches in chunks (`closure.vmap_chunked`;
other backends get the whole batch at once); the script calls the same entry points
on both, so each backend gets the library's own choice. Every run's convergence is
reported (a throughput counts only with every sample converged).

    python benchmarks/bench_accelerator.py [--sizes 1024,8192] [--only fourbar_sweep,stewart]

Writes benchmarks/results/accelerator_<backend>.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
import traceback

# the repository's diffmech, not an installed copy
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax

jax.config.update("jax_enable_x64", True)
import equinox as eqx  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import diffmech as dm  # noqa: E402
from benchmarks._timing import timed  # noqa: E402
from diffmech import fourbar as fbk, linkage as L, parallel as par  # noqa: E402

SEED_L = np.array([0.12, 0.25, 0.26, 0.30])


def fourbar_sweep(n, repeats, condition=True):
    rng = np.random.default_rng(0)
    fbs = dm.FourBar(lengths=jnp.asarray(SEED_L * (1 + 0.02 * rng.uniform(-1, 1, (n, 4)))))
    th = jnp.linspace(0, 2 * jnp.pi, 360, endpoint=False)
    run = jax.jit(lambda f: (lambda s: (s.q, s.converged, s.condition))(fbk.sweep(f, th, condition=condition)))
    (_, ok, _), comp, wall = timed(run, fbs, repeats=repeats)
    return dict(unit="positions/s", rate=n * 360 / wall, compile_s=comp, wall_s=wall, ok=float(np.mean(ok)))


def fourbar_dynamics(n, repeats, t1=5.0, rtol=1e-8):
    fb = dm.FourBar.seed_crank_rocker()
    rng = np.random.default_rng(1)
    th0 = jnp.asarray(rng.uniform(-np.pi, np.pi, n))
    w0 = jnp.asarray(rng.uniform(-3, 3, n))

    def one(a):
        q0 = fbk.project(fb, jnp.stack([jnp.cos(a[0]), jnp.sin(a[0]), 0.0, 1.0, 0.0, 1.0]))
        tr = fbk.simulate_dynamics(
            fb, q0, fbk.momentum(fb, q0, a[1]), t1, saveat=jnp.array([0.0, t1]), rtol=rtol, atol=rtol * 1e-2
        )
        return tr.theta_A[-1], tr.ok

    # 128 trajectories a chunk on the CPU (the library's measured best there), the
    # whole batch at once elsewhere
    chunk = 128 if jax.default_backend() == "cpu" else None
    run = jax.jit(lambda a, b: dm.closure.vmap_chunked(one, (a, b), chunk))
    (_, ok), comp, wall = timed(run, th0, w0, repeats=repeats)
    return dict(unit="simulated s/s", rate=n * t1 / wall, compile_s=comp, wall_s=wall, ok=float(np.mean(ok)))


def linkage_sweep(n, repeats, name="stephenson2", condition=True):
    lk = getattr(dm.examples, name)()
    u = L.default_inputs(lk)
    size = float(jnp.max(jnp.abs(lk.coords)))
    move = np.array([[1.0, 1.0, 0.0] if t != "P" else [0.0, 0.0, 1.0] for t in lk.types])
    rng = np.random.default_rng(0)
    coords = lk.coords[None] + jnp.asarray(2e-3 * size * rng.normal(size=(n,) + lk.coords.shape) * move)
    one = lambda c: L.sweep_functional(eqx.tree_at(lambda k: k.coords, lk, c), u, condition=condition)  # noqa: E731
    # 64 designs a chunk on the CPU (bench_linkages.py's measured best), one vmap elsewhere
    if jax.default_backend() == "cpu":
        run = jax.jit(lambda b: (lambda m: m.converged)(jax.lax.map(one, b, batch_size=min(64, n))))
    else:
        run = jax.jit(lambda b: jax.vmap(one)(b).converged)
    ok, comp, wall = timed(run, coords, repeats=repeats)
    steps = int(u.shape[0])
    return dict(unit="positions/s", rate=n * steps / wall, compile_s=comp, wall_s=wall, ok=float(np.mean(ok)))


def jansen_dynamics(n, repeats, t1=1.0):
    lk = dm.examples.theo_jansen()
    masses = lk.masses
    assert masses is not None  # the bundled leg has its mass properties
    scale = jnp.asarray(np.random.default_rng(0).uniform(0.9, 1.1, (n, masses.shape[0])))

    def one(s):
        m = eqx.tree_at(lambda k: k.masses, lk, masses * s)
        d = L.simulate_dynamics(m, 0.0, t1, saveat=jnp.array([0.0, t1]), rtol=1e-8, atol=1e-10)
        return d.u[-1], d.converged[-1]

    run = jax.jit(jax.vmap(one))
    (_, ok), comp, wall = timed(run, scale, repeats=repeats)
    return dict(unit="simulated s/s", rate=n * t1 / wall, compile_s=comp, wall_s=wall, ok=float(np.mean(ok)))


def stewart(n, repeats, steps=1000):
    mech = par.StewartPlatform()
    times = jnp.arange(steps) * 1e-3
    trajs = jax.vmap(lambda s: par.stewart_spiral(mech, times, radius=0.005 * s))(jnp.linspace(0.5, 1.0, n))
    load = jnp.array([0.0, 0.0, 10.0, 10.0, 0.0, 0.0])  # bench_parallel.py's external wrench

    def one(tr):
        kin = par.inverse_kinematics(mech, tr, method="exact")
        dyn = par.inverse_dynamics(mech, tr, load, kinematics=kin)
        return dyn.actuator_forces, kin.converged & dyn.converged

    if jax.default_backend() == "cpu":  # 25 trajectories a chunk, as bench_parallel.py
        run = eqx.filter_jit(lambda t: jax.lax.map(one, t, batch_size=min(25, n)))
    else:
        run = eqx.filter_jit(jax.vmap(one))
    (_, ok), comp, wall = timed(run, trajs, repeats=repeats)
    return dict(unit="steps/s", rate=n * steps / wall, compile_s=comp, wall_s=wall, ok=float(np.mean(ok)))


WORKLOADS = dict(
    fourbar_sweep=fourbar_sweep,
    fourbar_sweep_lean=lambda n, repeats: fourbar_sweep(n, repeats, condition=False),
    fourbar_dynamics=fourbar_dynamics,
    linkage_sweep=linkage_sweep,
    linkage_sweep_lean=lambda n, repeats: linkage_sweep(n, repeats, condition=False),
    jansen_dynamics=jansen_dynamics,
    stewart=stewart,
)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Batched throughput on the default JAX backend.")
    ap.add_argument("--sizes", default="1024", help="batch sizes, comma-separated")
    ap.add_argument("--only", default=",".join(WORKLOADS), help="workloads, comma-separated")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None, help="JSON path (default benchmarks/results/accelerator_<backend>.json)")
    a = ap.parse_args(argv)
    dev = jax.devices()[0]
    meta = dict(
        backend=jax.default_backend(),
        device=getattr(dev, "device_kind", str(dev)),
        jax=jax.__version__,
        date=datetime.date.today().isoformat(),
        cpus=os.cpu_count(),
    )
    print(json.dumps(meta), flush=True)
    out = a.out or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "results", f"accelerator_{meta['backend']}.json"
    )
    rows = []
    for name in a.only.split(","):
        for n in (int(s) for s in a.sizes.split(",")):
            t = time.perf_counter()
            try:
                row = dict(workload=name, n=n) | WORKLOADS[name](n, a.repeats)
            except Exception as e:  # a workload that fails is reported, the others still run
                traceback.print_exc()
                row = dict(workload=name, n=n, error=f"{type(e).__name__}: {e}"[:300])
            row["total_s"] = time.perf_counter() - t
            rows.append(row)
            if "rate" in row:
                print(
                    f"{name:17s} n={n:6d}  {row['rate']:12.4g} {row['unit']:14s} warm {row['wall_s']:.3g} s  "
                    f"compile {row['compile_s']:.1f} s  converged {row['ok']:.3f}",
                    flush=True,
                )
            else:
                print(f"{name:17s} n={n:6d}  {row['error']}", flush=True)
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "w") as fh:
                json.dump(dict(meta=meta, rows=rows), fh, indent=1)


if __name__ == "__main__":
    main()
