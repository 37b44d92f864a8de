"""Shared timing for the benchmark scripts."""

import os
import statistics
import time

import jax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def child_env(env=None):
    """The environment for a benchmark's child process: `env` (default: this one) with
    the repository first on PYTHONPATH, so the child imports the repository's diffmech,
    not an installed copy."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, env.get("PYTHONPATH")) if p)
    return env


# the start of a child's code (`run_child`): float64, CPU dispatch inline, and `compiles`,
# a one-element list counting the backend compilations made since
CHILD_PREAMBLE = r"""
import json, statistics, sys, time
import jax
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_cpu_enable_async_dispatch", False)
import numpy as np
compiles = [0]
jax.monitoring.register_event_duration_secs_listener(
    lambda e, d, **k: compiles.__setitem__(0, compiles[0] + (e == "/jax/core/compile/backend_compile_duration")))
"""


def run_child(code: str, *args: str, timeout: float = 900) -> dict:
    """Run `code` in a fresh Python process (`python -c code *args`, the repository's
    diffmech first) and return the JSON object it prints last; its stderr if it fails."""
    import json
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=child_env(), timeout=timeout
    )
    if r.returncode:
        raise SystemExit(r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


def compare_eager(code: str, names, path: str, repeats: int, atol: float) -> dict:
    """The eager-call benchmarks' driver: each of `names` run by `code` (a child taking
    `mode name`, printing `first_s`, `warm_ms`, `programs` and `value*` entries) op by
    op and as one program, each mode in a fresh process; the same answer (`value*`
    within `atol`, relative above 1), the two ratios, a table, written to `path`."""
    import datetime
    import json

    res = {"jax": jax.__version__, "date": datetime.date.today().isoformat(), "repeats": repeats, "rows": {}}
    width = max(len(n) for n in names) + 2
    print(f"jax {res['jax']}, {res['date']}; first call (compile included) and warm median, each in a fresh process")
    print(f"{'entry point':{width}s} {'mode':11s} {'first call':>11s} {'warm':>10s} {'programs':>9s}")
    for name in names:
        row = {mode: run_child(code, mode, name) for mode in ("op_by_op", "one_program")}
        for mode, r in row.items():
            print(f"{name:{width}s} {mode:11s} {r['first_s']:10.2f}s {r['warm_ms']:8.3f}ms {r['programs']:9d}")
        for key in (k for k in row["op_by_op"] if k.startswith("value")):  # the same answer
            a, b = row["op_by_op"][key], row["one_program"][key]
            assert abs(a - b) <= atol * max(1.0, abs(a)), (name, key, a, b)
        row["first_call_ratio"] = row["op_by_op"]["first_s"] / row["one_program"]["first_s"]
        row["warm_ratio"] = row["op_by_op"]["warm_ms"] / row["one_program"]["warm_ms"]
        res["rows"][name] = row
        ratios = f"first call {row['first_call_ratio']:.1f}x, warm {row['warm_ratio']:.0f}x faster"
        print(f"{'':{width}s} one program: {ratios}")
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    print("wrote", path)
    return res


def write_results(path: str, rows: dict) -> dict:
    """`rows` with the date, the jax version and the core count, written to `path` (JSON)."""
    import datetime
    import json

    out = dict(date=datetime.date.today().isoformat(), jax=jax.__version__, cpu_count=os.cpu_count(), rows=rows)
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)
    return out


def median(f, *args, repeats):
    """The median wall time (s) of `repeats` calls `f(*args)`, each waited for."""
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(f(*args))
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def timed(f, *args, repeats, aot=False):
    """The benchmarks' one timing: returns `f(*args)`'s output, its compile time and
    the median of `repeats` warm calls, in seconds. The compile time is the first
    call's time less the warm median; with `aot` (`f` a jitted function) it is
    `f.lower(*args).compile()`'s time, and the warm calls run the compiled program."""
    if aot:
        t = time.perf_counter()
        f = f.lower(*args).compile()
        compile_s = time.perf_counter() - t
        out = jax.block_until_ready(f(*args))
        return out, compile_s, median(f, *args, repeats=repeats)
    t = time.perf_counter()
    out = jax.block_until_ready(f(*args))
    first = time.perf_counter() - t
    med = median(f, *args, repeats=repeats)
    return out, max(first - med, 0.0), med


def add_dispatch_flag(ap):
    """The `--async-dispatch` option of the benchmark scripts (see `set_dispatch`)."""
    ap.add_argument(
        "--async-dispatch",
        action="store_true",
        help="keep JAX's default asynchronous CPU dispatch (default: off, as the README recommends)",
    )


def set_dispatch(async_dispatch: bool) -> bool:
    """Choose how JAX's CPU client runs a program; call before JAX's first array.

    By default (`jax_cpu_enable_async_dispatch=True`) the CPU client hands every program
    that is not trivially cheap to a pool thread and returns a future: the caller then
    waits for that thread to wake, 50–80 µs per call on this 2-core machine (measured,
    docs/benchmarks.md), more than a whole 180-step four-bar sweep costs. With it off the
    caller's thread runs the program: the same compiled code and results, without the
    hand-over. The README recommends it off for CPU work made of many small calls; the
    benchmarks run with it off unless `--async-dispatch` is given, and record which.
    The setting is read once, when JAX starts its CPU backend.
    """
    from jax._src import xla_bridge

    if xla_bridge.backends_are_initialized():
        raise RuntimeError("set_dispatch must run before JAX starts its backend (before the first array)")
    jax.config.update("jax_cpu_enable_async_dispatch", async_dispatch)
    return async_dispatch
