"""`linkage.sweep_functional` as one program: a design gradient taken eagerly.

The double wishbone's bump steer (notebook 10): the toe at the top of a 5-input wheel
travel, differentiated by `jax.grad` at the top level with respect to the inner tie
rod's height, then its central difference (two more calls). Each mode runs in a fresh
process (no persistent cache): `program` (the default: `simulate_functional` is a
compiled program of its own) and `op by op` (the sweep called unjitted, as JAX runs a
function that is not: the baseline, same run). Reported: the first gradient and the
two evaluations with their backend compilations, and the warm gradient (median of 5).

Writes benchmarks/results/functional_grad.json and prints a table. Run it alone.
"""

import argparse
import os

from _timing import CHILD_PREAMBLE, ROOT, run_child, write_results

_CHILD = (
    CHILD_PREAMBLE
    + r"""
import equinox as eqx
import jax.numpy as jnp
import numpy as np
from diffmech import examples, linkage
from diffmech.linkage import _simulate
if sys.argv[1] == "op by op":
    _simulate._functional_jit = lambda lk, inputs, branch, condition, fallback: _simulate._simulate(
        lk, inputs, branch, condition, fallback, probe=False, origin=True
    )[0]
sus = examples.double_wishbone()
ti = sus.joint("TI")
path = jnp.asarray(np.c_[np.linspace(0.0, 0.1, 5), np.zeros(5)])

def toe(dz):
    lk = eqx.tree_at(lambda k: k.coords, sus, sus.coords.at[ti, 2].add(dz))
    X = linkage.sweep_functional(lk, path).coords[-1]
    a = X[lk.joint("WS")] - X[lk.joint("W")]
    return jnp.degrees(jnp.arctan2(a[0], a[1]))

def once(f):
    c, t = compiles[0], time.perf_counter()
    v = float(f())
    return time.perf_counter() - t, compiles[0] - c, v

out = {"grad": once(lambda: jax.grad(toe)(0.0))}
out["difference"] = once(lambda: (toe(1e-6) - toe(-1e-6)) / 2e-6)
runs = []
for _ in range(5):
    t = time.perf_counter()
    float(jax.grad(toe)(0.0))
    runs.append(time.perf_counter() - t)
out["warm"] = statistics.median(runs)
print(json.dumps(out))
"""
)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "functional_grad.json"))
    args = ap.parse_args()
    rows = {mode: run_child(_CHILD, mode) for mode in ("program", "op by op")}
    out = write_results(args.out, rows)
    print(f"jax {out['jax']}, {out['date']}, {os.cpu_count()} cores; fresh process each")
    print(f"{'mode':10s} {'first grad s (compiles)':>24s} {'difference s (compiles)':>24s} {'warm grad s':>12s}")
    for mode, v in rows.items():
        g, d = v["grad"], v["difference"]
        print(f"{mode:10s} {g[0]:17.2f} ({g[1]:4d}) {d[0]:17.2f} ({d[1]:4d}) {v['warm']:12.3f}")


if __name__ == "__main__":
    main()
