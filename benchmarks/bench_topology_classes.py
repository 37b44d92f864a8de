"""Topology as data: one compiled simulation per size class of planar linkages.

Each scenario runs in a fresh process (nothing compiled, no persistent cache), the
calls as the README writes them (`linkage.sweep(lk)`, its defaults), once with the
plans (the default) and once with the per-topology programs (the plans switched off
in that process: the baseline, same run):

- `first`: the first simulation of a bundled linkage (the four-bar, the Jansen leg);
- `further`: after the four-bar, two further topologies of its size class (its tracer
  carried by the rocker; an inverted slider-crank driven along a ground line): the
  time of each first call and the backend compilations it made;
- `steps`: after those, the four-bar with 150 and with 170 steps (other path lengths
  of its default's length class: 180 steps run padded to 192);
- `warm`: the median of 200 further calls of the same linkage.

Modes: `plan` (the default), `per-topology` (the plans switched off), `plan, exact
lengths` (the paths not padded to length classes: each length its own program).

Writes benchmarks/results/topology_classes.json and prints a table. Run it alone.
"""

import argparse
import os

from _timing import CHILD_PREAMBLE, ROOT, run_child, write_results

_CHILD = (
    CHILD_PREAMBLE
    + r"""
from diffmech import examples, linkage
from diffmech.linkage import _plan
from diffmech.linkage import _simulate
if sys.argv[2] == "per-topology":
    _plan.eligible = lambda lk: False
if sys.argv[2] == "plan, exact lengths":
    _simulate._LENGTHS = ()
sys.path.insert(0, sys.argv[3])
from test_first_call import _other_topologies

def first(lk, **options):
    c, t = compiles[0], time.perf_counter()
    jax.block_until_ready(linkage.sweep(lk, **options).coords)
    return time.perf_counter() - t, compiles[0] - c

def warm(lk):
    runs = []
    for _ in range(200):
        t = time.perf_counter()
        jax.block_until_ready(linkage.sweep(lk).coords)
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)

scenario, out = sys.argv[1], {}
if scenario == "fourbar":
    four = examples.fourbar()
    out["first"] = first(four)
    for name, lk in zip(("rocker_tracer", "slider"), _other_topologies()):
        out[name] = first(lk)
    for steps in (150, 170):  # other lengths of the default's class (180 steps: 192)
        out[f"steps {steps}"] = first(four, steps=steps)
    out["warm"] = warm(four)
else:
    lk = examples.theo_jansen()
    out["first"] = first(lk)
    out["warm"] = warm(lk)
print(json.dumps(out))
"""
)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "topology_classes.json"))
    args = ap.parse_args()
    rows = {}
    for scenario in ("fourbar", "theo_jansen"):
        for mode in ("plan", "per-topology", "plan, exact lengths"):
            rows[f"{scenario} {mode}"] = run_child(_CHILD, scenario, mode, os.path.join(ROOT, "tests"))
    out = write_results(args.out, rows)
    print(f"jax {out['jax']}, {out['date']}, {os.cpu_count()} cores; fresh process each, async dispatch off")
    print(
        f"{'scenario':32s} {'first s (compiles)':>20s} {'further topology s (compiles)':>32s} "
        f"{'150, 170 steps s (compiles)':>30s} {'warm ms':>9s}"
    )
    for key, v in rows.items():
        further = ", ".join(f"{v[n][0]:.3f} ({v[n][1]})" for n in ("rocker_tracer", "slider") if n in v) or "-"
        steps = ", ".join(f"{v[n][0]:.3f} ({v[n][1]})" for n in ("steps 150", "steps 170") if n in v) or "-"
        print(
            f"{key:32s} {v['first'][0]:14.3f} ({v['first'][1]:2d}) {further:>32s} {steps:>30s} {v['warm'] * 1e3:9.3f}"
        )


if __name__ == "__main__":
    main()
