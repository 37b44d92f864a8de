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


def timed(f, *args, repeats):
    """Run `f(*args)` once (compilation included), then `repeats` times: returns the
    last output, the compile time (first call minus the warm median) and the warm
    median, in seconds."""
    t = time.perf_counter()
    jax.block_until_ready(f(*args))
    first = time.perf_counter() - t
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = jax.block_until_ready(f(*args))
        runs.append(time.perf_counter() - t)
    med = statistics.median(runs)
    return out, max(first - med, 0.0), med
