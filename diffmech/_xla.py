"""XLA compiler options for the programs of the eager entry points.

jaxlib < 0.11 compiles for the CPU with MLIR "fusion emitters" by default; its older
emitters compile the same programs about twice as fast (XLA time of one four-bar sweep
1.36 s → 0.69 s, Stephenson-II sweep 6.9 s → 5.4 s; jax 0.10.2, 2026-11-25) and run them
as fast within noise (measured alternately in one process). Floating-point semantics
are the same (no fast-math either way).
jaxlib 0.11 removed the option (and fails on unknown options), so it is passed only
to older versions, per program (`jax.jit(..., compiler_options=...)`): the library
changes no global setting.
"""

from importlib.metadata import version

_JAXLIB = tuple(int(p) for p in version("jaxlib").split(".")[:2])

COMPILER_OPTIONS: dict | None = {"xla_cpu_use_fusion_emitters": False} if _JAXLIB < (0, 11) else None
