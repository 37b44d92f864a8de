import os

# The suite is compile-bound (hundreds of distinct programs on a 2-core CPU): compile
# without LLVM's optimisation passes. Floating-point semantics are unchanged (no
# fast-math either way); the benchmarks compile with the default level.
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0")

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_numpy_dtype_promotion", "strict")

os.environ.setdefault("MPLBACKEND", "Agg")

# share compiled programs between the test workers and the notebook kernels of one run
# (the parallel-mechanism solves take tens of seconds to compile on a 2-core CPU)
_CACHE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".pytest_cache", "jax")
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", _CACHE)
jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 1.0)
