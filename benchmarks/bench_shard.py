"""Throughput of `diffmech.shard.run` against the device count.

Each device count runs in a fresh process (the CPU device count is fixed when JAX
starts: XLA_FLAGS=--xla_force_host_platform_device_count=N). The workload is the
`diffmech sweep` one: n four-bars × N crank angles by continuation (closure by
Newton). In the same process, the baseline is the library's own one-device vmapped
sweep (`fourbar.sweep` on the whole batch). Compile time (first call) is reported
apart from the warm medians. On a machine with accelerators, `--platform gpu` runs
the same on its real devices (1 … all).

    python benchmarks/bench_shard.py                     # CPU, N = 1, 2, 4 forced devices
    python benchmarks/bench_shard.py --platform gpu      # the real devices
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
import json, sys, time
import jax, numpy as np, jax.numpy as jnp
jax.config.update("jax_enable_x64", {x64})
import diffmech as dm
from diffmech import shard, fourbar as fbk
from diffmech import _cli_sweep as sw
n, steps, repeats, per_device, devices = {n}, {steps}, {repeats}, {per_device}, {devices}
rng = np.random.default_rng(0)
L = np.column_stack([rng.uniform(0.05, 0.2, n), rng.uniform(0.2, 0.4, n), rng.uniform(0.2, 0.4, n),
                     rng.uniform(0.25, 0.35, n)])
def timed(f):
    t0 = time.perf_counter(); out = f(); first = time.perf_counter() - t0
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter(); f(); ts.append(time.perf_counter() - t0)
    return first, float(np.median(ts)), out
dt = jnp.asarray(0.0).dtype
first, warm, (th, q, c) = timed(lambda: sw.sweep(L.astype(dt), steps=steps, devices=devices, per_device=per_device))
theta = jnp.asarray(th, dtype=dt)
fb = dm.FourBar(lengths=jnp.asarray(L, dtype=dt))
def base():
    s = fbk.sweep(fb, theta, condition=False); s.q.block_until_ready(); return s
bfirst, bwarm, s = timed(base)
agree = float(np.nanmax(np.abs(q - np.where(np.asarray(s.converged)[..., None], np.asarray(s.q), np.nan))))
print(json.dumps(dict(devices=len(shard.devices(devices)), platform=jax.devices()[0].platform,
                      device_kind=jax.devices()[0].device_kind, n=n, steps=steps, per_device=per_device,
                      dtype=str(dt), compile_s=first - warm, warm_s=warm, configs_per_s=n * steps / warm,
                      baseline_compile_s=bfirst - bwarm, baseline_warm_s=bwarm, 
                      baseline_configs_per_s=n * steps / bwarm,
                      converged=float(np.mean(c)), max_diff_vs_baseline=agree)))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--platform", default="cpu", choices=("cpu", "gpu"))
    ap.add_argument("--devices", default="1,2,4", help="device counts (CPU: forced; GPU: the first k)")
    ap.add_argument("--n", type=int, default=4096, help="designs")
    ap.add_argument("--steps", type=int, default=360, help="crank angles per design")
    ap.add_argument("--per-device", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--float32", action="store_true")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    rows = []
    for k in [int(v) for v in a.devices.split(",")]:
        env = dict(os.environ)
        if a.platform == "cpu":
            env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={k}".strip()
            env["JAX_PLATFORMS"] = "cpu"
        code = CHILD.format(
            x64=not a.float32, n=a.n, steps=a.steps, repeats=a.repeats, per_device=a.per_device, devices=k
        )
        r = subprocess.run([sys.executable, "-c", code], env=_child_env(env), capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr[-2000:], file=sys.stderr)
            raise SystemExit(f"device count {k} failed")
        row = json.loads(r.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"{row['platform']} × {row['devices']} ({row['device_kind']}, {row['dtype']}): {row['configs_per_s']:,.0f} "
            f"configurations/s warm (median of {a.repeats}; compile {row['compile_s']:.1f} s); one-device vmapped "
            f"baseline {row['baseline_configs_per_s']:,.0f}/s → ratio "
            f"{row['configs_per_s'] / row['baseline_configs_per_s']:.2f}; "
            f"converged {row['converged']:.1%}; max |Δq| vs baseline {row['max_diff_vs_baseline']:.1e}",
            flush=True,
        )
    out = a.out or str(
        pathlib.Path(__file__).parent / "results" / f"shard_{a.platform}{'_f32' if a.float32 else ''}.json"
    )
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)
    print("wrote", out)


if __name__ == "__main__":
    main()
