"""Synthesis problems of other sizes: targets padded to size classes.

In a fresh process (no persistent cache), the README's prescribed path generation on
12 targets, then the same search on 10 targets of the same curve (one size class:
padded to 12) and on 9: the time of each call and the backend compilations it made,
with the size classes (the default) and with exact sizes (`_SIZES = ()`: each size
compiles its own programs, the baseline, same run). Then warm medians of the 12- and
10-target calls (5 each). Writes benchmarks/results/synthesis_sizes.json; run it alone.
"""

import argparse
import json
import os
import subprocess
import sys

from _timing import ROOT, child_env

_CHILD = r"""
import json, statistics, sys, time
import jax
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_cpu_enable_async_dispatch", False)
import numpy as np
import jax.numpy as jnp
compiles = [0]
jax.monitoring.register_event_duration_secs_listener(
    lambda e, d, **k: compiles.__setitem__(0, compiles[0] + (e == "/jax/core/compile/backend_compile_duration")))
import diffmech as dm
from diffmech import _synthesis, fourbar, synthesis
if sys.argv[1] == "exact":
    _synthesis._SIZES = ()
fb = dm.FourBar(lengths=(0.12, 0.25, 0.26, 0.30))
angles = np.linspace(0, 2 * np.pi, 13)[:-1]
targets = np.asarray(fourbar.coupler_point(fb, fourbar.sweep(fb, jnp.asarray(angles)).q, jnp.array([0.1, 0.05])))

def call(n):
    return synthesis.path_generation(targets[:n], "prescribed", crank_angles=angles[:n])

def timed(n):
    c, t = compiles[0], time.perf_counter()
    r = call(n)
    return time.perf_counter() - t, compiles[0] - c, r.relative_error

out = {f"n={n}": timed(n) for n in (12, 10, 9)}
for n in (12, 10):
    runs = []
    for _ in range(5):
        t = time.perf_counter(); call(n); runs.append(time.perf_counter() - t)
    out[f"warm n={n}"] = statistics.median(runs)
print(json.dumps(out))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "synthesis_sizes.json"))
    args = ap.parse_args()
    import datetime

    import jax

    rows = {}
    for mode in ("classes", "exact"):
        r = subprocess.run(
            [sys.executable, "-c", _CHILD, mode], capture_output=True, text=True, env=child_env(), timeout=900
        )
        if r.returncode:
            raise SystemExit(r.stderr)
        rows[mode] = json.loads(r.stdout.strip().splitlines()[-1])
    out = dict(date=datetime.date.today().isoformat(), jax=jax.__version__, cpu_count=os.cpu_count(), rows=rows)
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print(f"jax {jax.__version__}, {out['date']}, {os.cpu_count()} cores; a fresh process per mode")
    for mode, v in rows.items():
        calls = ", ".join(
            f"{k} {v[k][0]:.2f} s ({v[k][1]} compilations, rel. error {v[k][2]:.1e})" for k in v if k[0] == "n"
        )
        print(f"{mode:8s} {calls}; warm n=12 {v['warm n=12']:.3f} s, n=10 {v['warm n=10']:.3f} s")


if __name__ == "__main__":
    main()
