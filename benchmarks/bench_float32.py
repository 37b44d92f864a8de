"""float32 throughput mode: what keeps its accuracy, and what it buys.

Each precision runs in its own process (`jax_enable_x64` is global): float64
(`jax_enable_x64=True`, the library's default for published figures) and float32
(x64 off: every array float32). Measured, against float64 references computed in the
float64 process:

- closure: max loop-closure residual of the seed crank-rocker swept over a revolution
  (metres; link lengths ~0.1–0.3 m);
- Stewart: max closure residual of the Gough–Stewart inverse kinematics along the
  seed's trajectory;
- energy: relative energy drift of the free crank-rocker over 2 s (Diffrax dopri8; the
  tolerance floored at the precision: rtol = max(1e-10, 100 ε));
- gradient: relative error of d(coupler-curve loss)/d(lengths) (implicit function
  theorem through the sweep), against the float64 gradient;
- throughput: configurations/s of the `diffmech sweep` workload (warm medians;
  compile time apart), float32 against float64 in the same run.

    python benchmarks/bench_float32.py [--n 4096 --steps 360 --repeats 3]
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys

# the repository's diffmech, not an installed copy (pip may hold another version)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks._timing import child_env as _child_env  # noqa: E402

CHILD = r"""
import json, time, warnings
import jax
jax.config.update("jax_enable_x64", {x64})
warnings.simplefilter("ignore")
import jax.numpy as jnp, numpy as np
import diffmech as dm
from diffmech import fourbar as fbk, parallel as par
from diffmech import _cli_sweep as sw
dt = jnp.asarray(0.0).dtype
eps = float(jnp.finfo(dt).eps)
out = dict(dtype=str(dt))
fb = dm.FourBar(lengths=jnp.asarray((0.12, 0.25, 0.26, 0.30), dtype=dt))
th = jnp.linspace(0.0, 2 * np.pi, 361, dtype=dt)
s = fbk.sweep(fb, th)
out["closure_m"] = float(jnp.max(fbk.closure_residual(fb, s.q)))
out["sweep_q"] = np.asarray(s.q, dtype=float).tolist()
# Stewart inverse kinematics along the seed trajectory
mech = par.StewartPlatform()
kin = par.inverse_kinematics(mech, par.stewart_spiral(mech, jnp.linspace(0.0, 2 * np.pi, 200, dtype=dt)), throw=False)
out["stewart_residual"] = float(jnp.max(kin.residual))
out["stewart_converged"] = bool(jnp.all(kin.converged))
# energy drift of free motion
fbd = dm.FourBar(lengths=jnp.asarray((0.12, 0.25, 0.26, 0.30), dtype=dt), masses=(0.1, 0.25, 0.18),
                 inertias=(0.001, 0.016, 0.006), gravity=(0.0, -9.81))
q0 = fbk.assemble(fbd, 0.3)
p0 = fbk.momentum(fbd, q0, jnp.asarray(2.0, dt))
tol = max(1e-10, 100 * eps)
tr = fbk.simulate_dynamics(fbd, q0, p0, 2.0, saveat=jnp.linspace(0.0, 2.0, 201, dtype=dt), rtol=tol, atol=tol * 1e-2)
E = np.asarray(fbk.energy(fbd, tr.Pi, tr.q), dtype=float)
out["energy_drift"] = float(np.max(np.abs(E - E[0])) / abs(E[0]))
out["rtol"] = tol
# gradient of a coupler-curve loss through the sweep (implicit function theorem)
point = jnp.asarray((0.125, 0.05), dt)
target = jnp.asarray(np.asarray({target}), dt)
def loss(lengths):
    f = dm.FourBar(lengths=lengths)
    sw_ = fbk.sweep(f, th[::10])
    return jnp.mean(jnp.sum((fbk.coupler_point(f, sw_.q, point) - target) ** 2, -1))
out["grad"] = np.asarray(jax.grad(loss)(fb.lengths), dtype=float).tolist()
# throughput of the sweep workload
n, steps, repeats = {n}, {steps}, {repeats}
rng = np.random.default_rng(0)
L = np.column_stack([rng.uniform(0.05, 0.2, n), rng.uniform(0.2, 0.4, n), rng.uniform(0.2, 0.4, n),
                     rng.uniform(0.25, 0.35, n)]).astype(dt)
t0 = time.perf_counter(); _, q, c = sw.sweep(L, steps=steps, devices=1, per_device=n); first = time.perf_counter() - t0
ts = []
for _ in range(repeats):
    t0 = time.perf_counter(); sw.sweep(L, steps=steps, devices=1, per_device=n); ts.append(time.perf_counter() - t0)
out["sweep_compile_s"] = first - float(np.median(ts))
out["sweep_configs_per_s"] = n * steps / float(np.median(ts))
out["sweep_converged"] = float(np.mean(c))
q64 = np.where(c[..., None], q, np.nan)
out["sweep_batch_q"] = q64[:64].astype(float).tolist()
out["sweep_batch_c"] = c[:64].tolist()
print(json.dumps(out))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=360)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(pathlib.Path(__file__).parent / "results" / "float32.json"))
    a = ap.parse_args()
    import numpy as np

    target = np.stack(
        [0.2 + 0.1 * np.cos(np.linspace(0, 2 * np.pi, 37)), 0.2 + 0.05 * np.sin(np.linspace(0, 2 * np.pi, 37))], -1
    )
    res = {}
    for x64 in (True, False):
        code = CHILD.format(x64=x64, n=a.n, steps=a.steps, repeats=a.repeats, target=target.tolist())
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_child_env())
        if r.returncode != 0:
            raise SystemExit(r.stderr[-3000:])
        res["float64" if x64 else "float32"] = json.loads(r.stdout.strip().splitlines()[-1])
    d, s = res["float64"], res["float32"]
    qd, qs = np.asarray(d["sweep_q"]), np.asarray(s["sweep_q"])
    gd, gs = np.asarray(d["grad"]), np.asarray(s["grad"])
    bd, bs = np.asarray(d["sweep_batch_q"]), np.asarray(s["sweep_batch_q"])
    both = np.asarray(d["sweep_batch_c"]) & np.asarray(s["sweep_batch_c"])
    summary = {
        "closure_residual_m": {"float64": d["closure_m"], "float32": s["closure_m"]},
        "sweep_q_max_abs_diff_f32_vs_f64": float(np.max(np.abs(qd - qs))),
        "batch_sweep_q_max_abs_diff": float(np.max(np.abs(bd[both] - bs[both]))),
        "batch_mask_agreement": float(np.mean(np.asarray(d["sweep_batch_c"]) == np.asarray(s["sweep_batch_c"]))),
        "energy_drift_rel": {
            "float64": d["energy_drift"],
            "float32": s["energy_drift"],
            "rtol": [d["rtol"], s["rtol"]],
        },
        "gradient_rel_error_f32": float(np.max(np.abs(gs - gd)) / np.max(np.abs(gd))),
        "throughput_configs_per_s": {"float64": d["sweep_configs_per_s"], "float32": s["sweep_configs_per_s"]},
        "throughput_ratio_f32_over_f64": s["sweep_configs_per_s"] / d["sweep_configs_per_s"],
        "compile_s": {"float64": d["sweep_compile_s"], "float32": s["sweep_compile_s"]},
        "workload": f"{a.n} designs x {a.steps} crank angles, 1 CPU device, median of {a.repeats}",
    }
    summary["stewart_residual"] = {
        "float64": d["stewart_residual"],
        "float32": s["stewart_residual"],
        "converged": [d["stewart_converged"], s["stewart_converged"]],
    }
    print(json.dumps(summary, indent=1))
    with open(a.out, "w") as f:
        json.dump(summary, f, indent=1)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
