"""Public functions called eagerly (as a notebook or a script calls them), each run as
one compiled program, against the baseline of the same code run op by op (its
programs unwrapped: `eager_program`/`filter_jit` replaced by the function they wrap,
so that JAX compiles every primitive on its own, as these entry points did before).

Each mode runs in a fresh process: first call (compilation included), then the median
of warm calls, and the number of backend compilations of the first call. Float64,
JAX's CPU dispatch off (`_timing.set_dispatch`).

    python benchmarks/bench_eager_entry_points.py [--repeats 20]

Writes benchmarks/results/eager_entry_points.json.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks._timing import ROOT, compare_eager

CHILD = """
import json, statistics, sys, time
sys.path.insert(0, {root!r})
from benchmarks._timing import set_dispatch
set_dispatch(False)
import jax, numpy as np
jax.config.update("jax_enable_x64", True)
import diffmech as dm
from diffmech import examples, fourbar, identify, linkage
from diffmech.fourbar import _dynamics as fd, _kinematics as fk
from diffmech.linkage import _model, _simulate

compiled = []
jax.monitoring.register_event_duration_secs_listener(
    lambda e, d, **k: compiled.append(d) if e == "/jax/core/compile/backend_compile_duration" else None
)
mode, name = sys.argv[1], sys.argv[2]
fb = dm.FourBar(lengths=(0.12, 0.25, 0.26, 0.30))
th = np.linspace(0.0, 6.0, 50)
# each entry: its setup, the call as a user writes it, the programs it runs (unwrapped op by op)
entries = {{
    "fourbar.crank_torque": (lambda: None, lambda s: fourbar.crank_torque(fb, th, np.ones(50), np.zeros(50)),
                             [(fd, "_crank_torque")]),
    "fourbar.closure_residual": (lambda: fourbar.sweep(fb, np.linspace(0.0, 6.28, 361)).q,
                                 lambda q: fourbar.closure_residual(fb, q), [(fk, "_closure_residual")]),
    "identify.fourbar_regressor": (lambda: None,
                                   lambda s: identify.fourbar_regressor(fb, th, np.ones(50), np.zeros(50)),
                                   [(dm._identify, "_regressor"), (dm._identify, "_from_base"), (fd, "_crank_torque")]),
    "linkage.rates": (lambda: (lambda lk: (lk, lk.x0()))(examples.stephenson2()),
                      lambda s: linkage.rates(s[0], s[1], 0.0, 1.0, 0.0),
                      [(_simulate, "_linkage_rates"), (_simulate, "prepare")]),
    "linkage.link_pose": (lambda: (lambda lk: (lk, linkage.sweep(lk)))(examples.theo_jansen()),
                          lambda s: linkage.link_pose(s[0], s[1], s[0].link_names[2]), [(_simulate, "_link_pose")]),
    "examples.bennett()": (lambda: None, lambda s: examples.bennett().coords,
                           [(_model, "_redundancy_values"), (_model, "_x0"), (_model, "prepare")]),
}}
setup, call, programs = entries[name]
s = setup()
if mode == "op_by_op":
    for module, attr in programs:
        setattr(module, attr, getattr(module, attr).__wrapped__)
compiled.clear()
t = time.perf_counter()
out = jax.block_until_ready(call(s))
first = time.perf_counter() - t
n = len(compiled)
runs = []
for _ in range({repeats}):
    t = time.perf_counter()
    jax.block_until_ready(call(s))
    runs.append(time.perf_counter() - t)
leaf = np.asarray(jax.tree.leaves(out)[0]).reshape(-1)
print(json.dumps({{"first_s": first, "warm_ms": 1e3 * statistics.median(runs), "programs": n,
                  "value0": float(leaf[0]), "value_last": float(leaf[-1])}}))
"""

NAMES = (
    "fourbar.crank_torque",
    "fourbar.closure_residual",
    "identify.fourbar_regressor",
    "linkage.rates",
    "linkage.link_pose",
    "examples.bennett()",
)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    path = os.path.join(ROOT, "benchmarks", "results", "eager_entry_points.json")
    compare_eager(CHILD.format(root=ROOT, repeats=args.repeats), NAMES, path, args.repeats, atol=1e-12)


if __name__ == "__main__":
    main()
