"""What the change-point search costs `linkage.sweep`: each bundled one-input linkage
simulated as the README writes it (its defaults), with the search and without it (the
program's screen and the host's search taken out, in the same process), the two
interleaved call by call; and the Peaucellier–Lipkin inversor stopped at its change point and passed on
each branch.

    python benchmarks/bench_change_points.py [--repeats 200]

Warm medians (the first call, compilation included, is reported apart). Writes
benchmarks/results/change_points.json and prints a table. Run it alone.
"""

import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import diffmech as dm  # noqa: E402
from diffmech import linkage  # noqa: E402
from diffmech._xla import COMPILER_OPTIONS  # noqa: E402
from diffmech.linkage import _change, _simulate  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from test_edges import _peaucellier  # noqa: E402  (the inversor the tests build)

SEARCH, SUSPECT, PROGRAM = _simulate._change_points, _change.suspect, _simulate._simulate_jit
# the program without the in-program screen (its own jit, traced with the screen's flag a constant)
PROGRAM_OFF = jax.jit(
    _simulate._simulate_program,
    static_argnames=("branch", "condition", "deferred"),
    compiler_options=COMPILER_OPTIONS,
)


def _off(lk, motion, *args):
    return motion


def _search(on: bool):
    """The search on (as shipped) or off: no screen in the program, no host search."""
    _simulate._change_points = SEARCH if on else _off
    _change.suspect = SUSPECT if on else (lambda *a: jnp.asarray(False))
    _simulate._simulate_jit = PROGRAM if on else PROGRAM_OFF


def interleaved(call, repeats):
    """Warm medians of `call()` with the search on and off, alternating call by call
    (one warm-up call of each first: the program without the screen compiles then)."""
    on, off = [], []
    for k in range(repeats + 1):
        for flag, out in ((True, on), (False, off)):
            _search(flag)
            t = time.perf_counter()
            jax.block_until_ready(call().coords)
            if k:
                out.append(time.perf_counter() - t)
    _search(True)
    return statistics.median(on), statistics.median(off)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "change_points.json"))
    a = ap.parse_args()
    rows = []
    for name in ("fourbar", "stephenson2", "theo_jansen", "spherical_rrpr", "spherical_watt1", "ss5", "rssr"):
        lk = dm.examples.load(name)
        t = time.perf_counter()
        jax.block_until_ready(linkage.sweep(lk).coords)
        first = time.perf_counter() - t
        on, off = interleaved(lambda lk=lk: linkage.sweep(lk), a.repeats)
        rows.append(dict(linkage=name, first_s=first, with_search_ms=on * 1e3, without_ms=off * 1e3, ratio=on / off))
    inv = _peaucellier()
    u = np.linspace(0.0, -1.6, 81)
    passed = {}
    for mode in ("stop", "continue", "turn"):
        t = time.perf_counter()
        m = linkage.sweep(inv, inputs=u, at_change=mode)
        first = time.perf_counter() - t
        runs = []
        for _ in range(max(a.repeats // 20, 5)):
            t = time.perf_counter()
            jax.block_until_ready(linkage.sweep(inv, inputs=u, at_change=mode).coords)
            runs.append(time.perf_counter() - t)
        passed[mode] = dict(
            first_s=first, warm_ms=statistics.median(runs) * 1e3, converged=int(m.n_converged), result=str(m.result)
        )
    out = dict(
        date=datetime.date.today().isoformat(),
        jax=jax.__version__,
        cpu_count=os.cpu_count(),
        repeats=a.repeats,
        linkages=rows,
        inversor=dict(inputs="0 to -1.6 by 0.02", change_point=-math.pi / 3, **passed),
    )
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump(out, fh, indent=1)
    print(f"jax {jax.__version__}, {out['date']}; warm medians of {a.repeats} interleaved calls")
    print(f"{'linkage':16s} {'first s':>8s} {'search ms':>10s} {'none ms':>9s} {'ratio':>6s}")
    for r in rows:
        print(
            f"{r['linkage']:16s} {r['first_s']:8.2f} {r['with_search_ms']:10.3f} {r['without_ms']:9.3f} "
            f"{r['ratio']:6.3f}"
        )
    for mode, r in passed.items():
        print(
            f"inversor {mode:8s}: first {r['first_s']:.2f} s, warm {r['warm_ms']:.2f} ms, "
            f"{r['converged']}/81 {r['result']}"
        )


if __name__ == "__main__":
    main()
