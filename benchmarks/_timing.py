"""Shared timing for the benchmark scripts."""

import statistics
import time

import jax


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
