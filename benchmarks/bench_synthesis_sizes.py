"""Synthesis problems of other sizes: targets padded to size classes.

In a fresh process (no persistent cache), the README's prescribed path generation on
12 targets, then the same search on 10 targets of the same curve (one size class:
padded to 12) and on 9: the time of each call and the backend compilations it made,
with the size classes (the default) and with exact sizes (`_SIZES = ()`: each size
compiles its own programs, the baseline, same run). Then warm medians of the 12- and
10-target calls (5 each). Writes benchmarks/results/synthesis_sizes.json; run it alone.
"""

import argparse
import os

from _timing import CHILD_PREAMBLE, ROOT, run_child, write_results

_CHILD = (
    CHILD_PREAMBLE
    + r"""
import jax.numpy as jnp
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
)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "synthesis_sizes.json"))
    args = ap.parse_args()
    rows = {}
    for mode in ("classes", "exact"):
        rows[mode] = run_child(_CHILD, mode)
    out = write_results(args.out, rows)
    print(f"jax {out['jax']}, {out['date']}, {os.cpu_count()} cores; a fresh process per mode")
    for mode, v in rows.items():
        calls = ", ".join(
            f"{k} {v[k][0]:.2f} s ({v[k][1]} compilations, rel. error {v[k][2]:.1e})" for k in v if k[0] == "n"
        )
        print(f"{mode:8s} {calls}; warm n=12 {v['warm n=12']:.3f} s, n=10 {v['warm n=10']:.3f} s")


if __name__ == "__main__":
    main()
