"""The closure core called eagerly (as a user writes it in a notebook or a script):
`closure.root`, `closure.sweep` and `closure.continuation` on a hand-written residual
(the README's slider-crank), each run as one compiled program, against the baseline of
the same core run op by op (its private functions called eagerly: JAX then compiles
every primitive on its own, as the entry points did before they compiled one program).

Each mode runs in a fresh process (no compiled program or primitive shared between
them): first call (compilation included), then the median of warm calls, and the number
of programs lowered. Float64, JAX's CPU dispatch off (`_timing.set_dispatch`).

    python benchmarks/bench_eager_closure.py [--repeats 20]

Writes benchmarks/results/eager_closure.json.
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
import jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
from diffmech import _closure, closure

lowered = []
jax.monitoring.register_event_duration_secs_listener(
    lambda e, d, **k: lowered.append(d) if e == "/jax/core/compile/jaxpr_to_mlir_module_duration" else None
)


def slider_crank(x, u, p):
    crank, rod = p
    return jnp.array([(x[0] - crank * jnp.cos(u)) ** 2 + (crank * jnp.sin(u)) ** 2 - rod**2])


p = (jnp.asarray(0.1), jnp.asarray(0.3))
us = jnp.linspace(0.0, 2 * jnp.pi, 90)
x0 = jnp.array([0.4])
one_program = {{
    "root": lambda: closure.root(slider_crank, x0, 0.5, p).value,
    "sweep": lambda: closure.sweep(slider_crank, x0, us, p).value,
    "continuation": lambda: closure.continuation(slider_crank, x0, us, p).value,
}}
op_by_op = {{  # the same core, its private functions called eagerly
    "root": lambda: _closure._root(slider_crank, x0, 0.5, p, atol=1e-10, xtol=1e-10, max_steps=24)[0].value,
    "sweep": lambda: _closure.sweep_probed(slider_crank, x0, us, p)[0].value,
    "continuation": lambda: _closure._continuation(
        slider_crank, x0, us, p, None, branch=None, atol=1e-10, xtol=1e-10, max_steps=24, condition=True
    ).value,
}}
f = (one_program if sys.argv[1] == "one_program" else op_by_op)[sys.argv[2]]
t = time.perf_counter()
out = jax.block_until_ready(f())
first = time.perf_counter() - t
n_lowered = len(lowered)
runs = []
for _ in range({repeats}):
    t = time.perf_counter()
    jax.block_until_ready(f())
    runs.append(time.perf_counter() - t)
print(json.dumps({{"first_s": first, "warm_ms": 1e3 * statistics.median(runs), "programs": n_lowered,
                  "value0": float(out.reshape(-1)[0])}}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    path = os.path.join(ROOT, "benchmarks", "results", "eager_closure.json")
    compare_eager(
        CHILD.format(root=ROOT, repeats=args.repeats), ("root", "sweep", "continuation"), path, args.repeats, atol=1e-14
    )


if __name__ == "__main__":
    main()
