"""XLA compiler options for the programs of the eager entry points.

jaxlib < 0.11 compiles for the CPU with MLIR "fusion emitters" by default; its older
emitters compile the same programs up to twice as fast and run them as fast (measured
on the benchmarks page, "Measurements behind the code"). Floating-point semantics are
the same (no fast-math either way).
jaxlib 0.11 removed the option (and fails on unknown options), so it is passed only
to older versions, per program (`jax.jit(..., compiler_options=...)`): the library
changes no global setting.
"""

import functools
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import equinox as eqx
import jax
import numpy as np

from ._validate import is_traced

_JAXLIB = tuple(int(p) for p in version("jaxlib").split(".")[:2])

COMPILER_OPTIONS: dict | None = {"xla_cpu_use_fusion_emitters": False} if _JAXLIB < (0, 11) else None


def _float_as_array(v):
    # a NumPy scalar array: an array to `eqx.filter_jit` (traced), no device transfer
    return np.asarray(v) if isinstance(v, float | complex) else v


def filter_jit(f: Callable | None = None, **options) -> Any:
    """`eqx.filter_jit` compiled with the library's compiler options when called at
    the top level (see `_top_level`)."""
    if f is None:
        return functools.partial(filter_jit, **options)
    return _top_level(f, eqx.filter_jit, options)


def jit(f: Callable | None = None, *, top_level: bool = False, **options) -> Any:
    """`jax.jit` (every argument an array, or static by name) compiled with the
    library's compiler options when called at the top level (see `_top_level`).

    `top_level=True`: a program only ever called eagerly (an entry point's own program,
    never inside another): `jax.jit` with the options itself, without the check for a
    traced call (a warm call's Python overhead spared; `.lower` available). This and
    `filter_jit` are the library's only ways to jit (`tests/test_house.py`)."""
    if f is None:
        return functools.partial(jit, top_level=top_level, **options)
    if top_level:
        return jax.jit(f, compiler_options=COMPILER_OPTIONS, **options)
    return _top_level(f, jax.jit, options)


_NESTED = "can only be passed to top-level"


def _top_level(f, jitter, options):
    """`jitter(f)` with `COMPILER_OPTIONS` for a call at the top level; JAX accepts
    compiler options only there, so a call inside another program (an argument
    traced, or JAX's refusal when every argument is a constant) inlines the plain
    `jitter(f)`."""
    plain = jitter(f, **options)
    if COMPILER_OPTIONS is None:
        return plain
    top = jitter(f, compiler_options=COMPILER_OPTIONS, **options)

    @functools.wraps(f)
    def call(*args, **kwargs):
        if is_traced(args, kwargs):
            return plain(*args, **kwargs)
        try:
            return top(*args, **kwargs)
        except ValueError as e:
            if _NESTED not in str(e):
                raise
            return plain(*args, **kwargs)

    return call


def eager_program(f):
    """`f` compiled as one program when called eagerly (no argument traced); under a
    transformation, `f` itself, inlined into the caller's program.

    Eagerly, JAX would otherwise run `f` op by op and compile each primitive on its
    own: one eager `closure.sweep` of a one-unknown residual lowered 162 programs
    (`benchmarks/bench_eager_closure.py`: one program is 3.9x faster on the first call,
    3,700x on a warm one), the seed's Stewart platform's constructor 58. The program
    is cached per function arguments (by identity, as `optimistix.root_find`'s),
    shapes and static options; Python floats among the arguments are passed as arrays,
    so a new value does not compile a new program. Python ints, bools and strings
    stay static (`eqx.filter_jit`)."""
    jitted = filter_jit(f)

    @functools.wraps(f)
    def call(*args, **options):
        if is_traced(args, options):
            return f(*args, **options)
        return jitted(*jax.tree.map(_float_as_array, args), **options)

    return call


def host_array(v, dtype=None):
    """`v` as a NumPy array of `dtype` for an eager program's argument (a traced
    value unchanged): eagerly, `jnp.asarray` with a dtype conversion is an operation,
    a small program to compile per shape."""
    if is_traced(v) or (isinstance(v, jax.Array) and (dtype is None or v.dtype == dtype)):
        return v
    return np.asarray(v, dtype=dtype)


def row(tree, k: int):
    """Row `k` of every array leaf of a concrete pytree, taken on the host and put back
    on the device (eagerly, `a[k]` on a JAX array is an operation: a small program to
    compile per shape)."""
    return jax.tree.map(lambda a: jax.device_put(np.asarray(a)[k]) if eqx.is_array(a) else a, tree)


def size_class(n: int, sizes: tuple[int, ...]) -> int:
    """The first of `sizes` (ascending) that holds `n` rows; `n` itself beyond them.
    Arrays padded to a few such sizes share one compiled program per size."""
    return next((k for k in sizes if k >= n), n)


def pad_rows(a: np.ndarray, size: int) -> np.ndarray:
    """`a` (on the host) with its last row repeated to `size` rows."""
    return np.concatenate([a, np.repeat(a[-1:], size - a.shape[0], axis=0)]) if size > a.shape[0] else a


def host_rows(tree, rows):
    """The rows `rows` of every array of `tree`, gathered on the host (no eager program)."""
    return jax.tree.map(lambda a: jax.device_put(np.asarray(a)[rows]) if eqx.is_array(a) else a, tree)


def in_chunks(fn, tree, size: int):
    """`fn` over the rows of `tree` taken `size` at a time (the last chunk padded by
    repeating its last row), the results' rows joined on the host, the padding dropped:
    one compiled program of `size` rows serves any number of rows (a search's polish of
    every start and its finish of the best few)."""
    n = jax.tree.leaves(tree)[0].shape[0]
    parts = [fn(host_rows(tree, np.minimum(np.arange(s, s + size), n - 1))) for s in range(0, n, size)]
    join = lambda *xs: jax.device_put(np.concatenate([np.asarray(x) for x in xs])[:n])  # noqa: E731
    return jax.tree.map(lambda *xs: join(*xs) if eqx.is_array(xs[0]) else xs[0], *parts)


def with_host_rows(tree, rows, sub):
    """`tree` with its rows `rows` replaced by `sub`'s, on the host."""

    def put(a, b):
        if not eqx.is_array(a):
            return a
        out = np.array(a)
        out[rows] = np.asarray(b)
        return jax.device_put(out)

    return jax.tree.map(put, tree, sub)
