"""Time to the first answer: each of the README's tour blocks run in a fresh process,
cold (an empty persistent compilation cache) and then warm (a second process with the
cache the first one wrote), each block run twice in its process (the second run: the
same calls again). Per run and per statement of the block: wall time and where JAX's
time went (tracing, lowering to MLIR, XLA's backend compile, each summed over the
programs; counted by `jax.monitoring`), and the number of backend compilations.

    python benchmarks/bench_first_call.py [--blocks 1 2 ...]

The README's set-up block (float64, imports) runs first in every process and is not
timed. A block that defines a function or a `lambda` compiles it again when run again:
a new function object is a new program (`Drive` laws and functions defined once avoid
it). Writes benchmarks/results/first_call.json and prints a table. Run it alone.
"""

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from benchmarks._timing import child_env  # noqa: E402

EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "xla",
}

_CHILD = r"""
import json, os, re, sys, time
import matplotlib
matplotlib.use("Agg")
import jax
EVENTS = json.loads(sys.argv[3])
spent = {v: 0.0 for v in EVENTS.values()}
count = [0]
def listen(event, duration, **kw):
    if event in EVENTS:
        spent[EVENTS[event]] += duration
        count[0] += event.endswith("backend_compile_duration")
jax.monitoring.register_event_duration_secs_listener(listen)
blocks = re.findall(r"^```python\n(.*?)^```", open(sys.argv[1]).read(), re.M | re.S)
ns = {}
exec(blocks[0], ns)
import diffmech
diffmech.cache(sys.argv[4])
import ast
source = blocks[int(sys.argv[2])]
statements = [(ast.get_source_segment(source, n).splitlines()[0][:90], compile(ast.Module([n], []), "<readme>", "exec"))
              for n in ast.parse(source).body]
def measure(run):
    for k in spent:
        spent[k] = 0.0
    count[0] = 0
    t = time.perf_counter()
    run()
    jax.effects_barrier()
    return dict(wall=time.perf_counter() - t, compiles=count[0], **spent)
runs = []
for again in (False, True):
    per = [dict(line=line, **measure(lambda c=c: exec(c, ns))) for line, c in statements]
    total = {k: sum(p[k] for p in per) for k in ("wall", "compiles", *spent)}
    runs.append(dict(total, statements=per))
print(json.dumps(runs))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blocks", type=int, nargs="*", default=None, help="README blocks (1 = the first after set-up)")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "first_call.json"))
    a = ap.parse_args()
    readme = os.path.join(ROOT, "README.md")
    blocks = re.findall(r"^```python\n(.*?)^```", open(readme).read(), re.M | re.S)
    which = a.blocks or list(range(1, len(blocks)))
    rows = []
    for k in which:
        first_line = blocks[k].strip().splitlines()[0][:70]
        with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as work:
            row = dict(block=k, first_line=first_line)
            for state in ("cold", "warm"):
                r = subprocess.run(
                    [sys.executable, "-c", _CHILD, readme, str(k), json.dumps(EVENTS), cache],
                    capture_output=True,
                    text=True,
                    cwd=work,
                    env=child_env(),
                    timeout=1800,
                )
                if r.returncode != 0:
                    raise SystemExit(f"block {k} ({state}): {r.stderr[-2000:]}")
                row[state] = json.loads(r.stdout.strip().splitlines()[-1])
            rows.append(row)
            c, w = row["cold"], row["warm"]
            for st, wst in zip(c[0]["statements"], w[0]["statements"]):
                if st["wall"] >= 0.05:
                    print(
                        f"    {st['wall']:6.2f} s (trace {st['trace']:.2f}, lower {st['lower']:.2f}, "
                        f"xla {st['xla']:.2f}; {st['compiles']:3d} compiles; cache warm {wst['wall']:.2f} s)  "
                        + st["line"],
                        flush=True,
                    )
            print(
                f"block {k}: cold {c[0]['wall']:.2f} s (trace {c[0]['trace']:.2f}, lower {c[0]['lower']:.2f}, "
                f"xla {c[0]['xla']:.2f}; {c[0]['compiles']} compiles), again {c[1]['wall']:.2f} s "
                f"({c[1]['compiles']} compiles); warm cache {w[0]['wall']:.2f} s (xla {w[0]['xla']:.2f}) "
                f":: {first_line}",
                flush=True,
            )
    import jax

    out = dict(date=datetime.date.today().isoformat(), jax=jax.__version__, cpu_count=os.cpu_count(), blocks=rows)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
