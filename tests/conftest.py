import os

# The suite is compile-bound (hundreds of distinct programs on a 2-core CPU): compile
# without LLVM's optimisation passes, and with XLA:CPU's older fusion emitters (the
# MLIR fusion emitters took ~40 % longer to compile the same programs: 3UPS–UPU–S
# momentum test 27.9 s → 17.0 s of XLA compilation, recursive-adjoint gradient 18.3 s
# → 10.1 s, measured with jax_log_compiles). Floating-point semantics are unchanged (no
# fast-math either way); the benchmarks compile with the default flags.
# (jaxlib 0.11 removed the fusion-emitter flag, and an unknown XLA flag aborts the process)
from importlib.metadata import version as _version  # noqa: E402

#
# Each xdist worker runs its programs on one thread (`--xla_cpu_multi_thread_eigen=false`):
# the workers already fill the cores, and two processes whose XLA:CPU runtimes each split
# work over a pool of every core wait on each other's threads. Measured on 2 cores
# (2026-11-26, jax 0.10.2): tests/test_identify.py beside tests/test_linkage.py, each in
# its own process, 208 s and 311 s with the pools, 78 s and 187 s without; the Stewart
# payload test alone 16 s, 134 s beside the other file with the pools, 27 s without.
_old_emitters = tuple(int(p) for p in _version("jaxlib").split(".")[:2]) < (0, 11)
os.environ.setdefault(
    "XLA_FLAGS",
    "--xla_backend_optimization_level=0 --xla_cpu_multi_thread_eigen=false"
    + (" --xla_cpu_use_fusion_emitters=false" if _old_emitters else ""),
)

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_dtype_promotion", "strict")

os.environ.setdefault("MPLBACKEND", "Agg")

# No persistent compilation cache by default (DIFFMECH_TEST_CACHE=1 turns it on): each
# worker compiles its own programs. (It was turned off when clean-clone CI workers died in
# XLA while serialising and deserialising programs for it; the cause was the code
# mappings' limit, see the end of this file, and those crashes went on without it.)
os.environ.setdefault("DIFFMECH_COMPILATION_CACHE", "0")  # nor does the CLI, run in these processes
if os.environ.get("DIFFMECH_TEST_CACHE") == "1":
    _CACHE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".pytest_cache", "jax")
    os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", _CACHE)
    jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
    # every program compiled in 0.1 s or more is shared: the workers and the notebooks compile many of the same ones
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.1)

# The suite tests JAX's default CPU dispatch (asynchronous). The notebooks turn it off, as
# the README recommends, but they run in this process: starting the backend here, before
# any test or notebook, keeps the whole suite in one mode (the setting is read at start).
jax.devices()


# --- scheduling (pytest-xdist `--dist loadgroup`, see pyproject) -----------------------
# The suite is trace- and compile-bound. A notebook shares most of its programs with the
# tests of its subject: each such test module is one xdist group with its notebooks
# (tests/test_notebooks.py), run on one worker, the notebooks after the tests, so that
# they reuse what the tests compiled in that process. Groups are ordered largest first
# (longest-processing-time first); ungrouped tests fill in behind them.
import gc  # noqa: E402

import pytest  # noqa: E402

# Tracing allocates millions of short-lived objects, and Python's default collector
# thresholds (700, 10, 10) ran its cyclic collector thousands of times a test file: the
# Bennett, prismatic and double-wishbone tests of test_spatial.py (13 tests, one process)
# spent 1.92 s of 25.6 s in 2316 collections, and 0.20 s in 9 with these thresholds
# (24.2 s; 2026-11-29, jax 0.10.2). The caches are still dropped and collected between
# tests when the code mappings grow (below).
gc.set_threshold(100_000, 50, 1000)

# worker-seconds per group (tests + notebooks) in a cold run of 2026-11-26 (468 s, --durations=150): linkage 229,
# synthesis 160, fit 93, parallel 75, fourbar_dynamics 73, fourbar_kinematics 58 (ungrouped, the largest: the
# README's examples 45, test_shard 37, test_closure 32)
GROUPS = (
    "linkage",
    "synthesis",
    "fit",
    "sdf",
    "parallel",
    "spatial",
    "fourbar_dynamics",
    "fourbar_kinematics",
    "closure",
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    def group(item):
        mark = item.get_closest_marker("xdist_group")
        if mark is not None:
            return mark.args[0]
        name = item.module.__name__.removeprefix("test_")
        if name in GROUPS:
            item.add_marker(pytest.mark.xdist_group(name))
            return name
        return None

    def key(item):
        g = group(item)
        # a group's own tests first, then the README examples and notebooks that reuse their programs
        reusing = item.module.__name__ in ("test_readme_examples", "test_notebooks")
        return (GROUPS.index(g) if g else len(GROUPS), reusing)

    items.sort(key=key)  # stable: collection order within a group


# --- XLA:CPU's code mappings ----------------------------------------------------------
# Each compiled program keeps its machine code in memory mappings of its own for as long
# as JAX's caches hold it (measured: a Stephenson-II, Jansen, RSSR and Bennett simulation
# took 445 → 2394 mappings in one process, and `jax.clear_caches()` brought them back to
# 689). A worker of this suite compiles thousands of programs: on 2026-11-27 each gained
# ~2500 mappings a minute, and a worker that reached the kernel's `vm.max_map_count`
# (65530 by default) died in XLA's next allocation (segmentation faults and aborts in
# compiling, serialising or deserialising a program: the clean-clone CI crashes of that
# day). Between tests, past half the limit, JAX's caches are dropped; later tests compile
# what they need again.
def _map_limit():
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            return int(f.read())
    except (OSError, ValueError):  # not Linux: no such limit to watch
        return None


_MAP_LIMIT = _map_limit()


def _mappings():
    with open("/proc/self/maps", "rb") as f:
        return sum(1 for _ in f)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    if _MAP_LIMIT is not None and _mappings() > _MAP_LIMIT // 2:
        jax.clear_caches()
        gc.collect()
