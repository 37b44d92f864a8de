"""diffmech's folder on disk and JAX's persistent compilation cache for its programs."""

import dataclasses
import functools
import hashlib
import os
import pathlib
import pickle
import platform
import re
import sys
import types
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

from ._validate import is_traced
from ._xla import COMPILER_OPTIONS, filter_jit, jit

# a program that compiles in at least this long is kept (most of diffmech's take 0.1-3 s)
MIN_COMPILE_TIME = 0.05


def root() -> pathlib.Path:
    """diffmech's cache folder: `$DIFFMECH_CACHE` (default `~/.cache/diffmech`, under
    `$XDG_CACHE_HOME` where set)."""
    folder = os.environ.get("DIFFMECH_CACHE")
    if not folder:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = os.path.join(base, "diffmech")
    return pathlib.Path(folder)


def cache(path=None, *, min_compile_time: float = MIN_COMPILE_TIME) -> pathlib.Path:
    """Turn on JAX's persistent compilation cache: every program that compiles in
    `min_compile_time` seconds or more is written to `path`, and a later process (a
    notebook's kernel restarted, a script run again) loads it instead of compiling
    it: a first answer in a fraction of the time (see the getting-started page). The
    main programs of the eager entry points (the kinematics, joint forces, tolerances
    and singular points of linkages, four-bars and parallel mechanisms, synthesis and
    identification; not the dynamics, see the getting-started page) are also kept
    compiled (`path/programs`): a later process loads them without tracing or
    lowering them. Call it first, before anything compiles; the CLI calls
    it unless `--no-cache`.

    **Arguments:** `path`: the folder (default `<diffmech's cache folder>/jax`:
    `$DIFFMECH_CACHE/jax`, `~/.cache/diffmech/jax`); `min_compile_time`: seconds
    (default 0.05: JAX's own default, 1 s, would keep few of diffmech's programs).

    **Returns:** the folder.
    """
    if not (isinstance(min_compile_time, (int, float)) and min_compile_time >= 0):
        raise ValueError(f"diffmech.cache: `min_compile_time` must be a number ≥ 0 (s); got {min_compile_time!r}")
    folder = root() / "jax" if path is None else pathlib.Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"diffmech.cache: cannot use {str(folder)!r} as the cache folder: {e.strerror or e}") from e
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_compile_time))
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    global _PROGRAM_FOLDER
    _PROGRAM_FOLDER = folder / "programs"
    return folder


# --------------------------------------------------------------------------- compiled programs on disk
#
# JAX's persistent cache keys a program by its lowered text: a later process still traces
# and lowers it before the cache can answer (the Jansen leg's `linkage.sweep`, 1.05 s
# of its 1.25 s with the cache warm). The library's main programs (`linkage.sweep`'s
# size-class ones serve every topology of their class) are kept here as compiled
# executables, keyed by what determines them without tracing: the program's name, its
# static options, the structure and the shapes and dtypes of its arguments, and
# everything the compiled code depends on (this package's source; the versions of JAX,
# jaxlib, Equinox, Diffrax, Optimistix and Lineax; the XLA flags and compiler options;
# the float width, promotion and matmul precision; the device and the CPU's features).
# A later process loads the executable (0.14-0.17 s) instead of tracing, lowering and
# compiling it. Only arguments made of arrays and of this package's own classes,
# module-level functions and named objects are kept (`_describe`): no user code can
# reach a kept program. Anything that fails on this path falls
# back to the program's own jit, which then raises what it raises.

_PROGRAM_FOLDER: pathlib.Path | None = None
_LOADED: dict[str, tuple[Any, Any]] = {}


@functools.cache
def _environment() -> str:
    """Everything a compiled program depends on besides its arguments, as a digest."""
    h = hashlib.sha256()
    package = pathlib.Path(__file__).parent
    for f in sorted(package.rglob("*.py")):
        h.update(str(f.relative_to(package)).encode())
        h.update(f.read_bytes())
    flags = ""
    try:
        with open("/proc/cpuinfo") as info:
            flags = next((line for line in info if line.startswith("flags")), "")
    except OSError:
        flags = platform.processor()
    device = jax.devices()[0]
    for part in (
        jax.__version__,
        version("jaxlib"),
        version("equinox"),
        version("diffrax"),
        version("optimistix"),
        version("lineax"),
        version("optax"),
        os.environ.get("XLA_FLAGS", ""),
        repr(COMPILER_OPTIONS),
        str(getattr(jax.config, "jax_enable_x64")),
        str(getattr(jax.config, "jax_numpy_dtype_promotion")),
        str(getattr(jax.config, "jax_default_matmul_precision")),
        device.platform,
        device.device_kind,
        flags,
    ):
        h.update(part.encode())
    return h.hexdigest()


# objects this package made and named (`named`): an optimiser built from its name
_NAMED: dict[int, tuple[Any, str]] = {}


def named(obj, label: str):
    """`obj`, known to the key of a kept program by `label` (an object this package
    builds from the label alone, kept alive here, as `fit`'s named optimisers)."""
    _NAMED[id(obj)] = (obj, label)
    return obj


def _describe(node) -> str | None:
    """A text that determines the non-array part of a program's arguments: numbers
    and strings, containers, this package's classes, enumerations and module-level
    functions, and `named` objects; None for anything else (a user's function or
    class: such a program is not kept)."""
    if node is None or isinstance(node, (bool, int, float, complex, str)):
        return repr(node)
    if id(node) in _NAMED and _NAMED[id(node)][0] is node:
        return _NAMED[id(node)][1]
    kind = f"{type(node).__module__}.{type(node).__qualname__}"
    if isinstance(node, (tuple, list)):
        parts = [_describe(v) for v in node]
        return None if None in parts else f"{kind}({', '.join(parts)})"  # pyright: ignore[reportCallIssue, reportArgumentType]
    if isinstance(node, dict):
        items = [(repr(k), _describe(v)) for k, v in sorted(node.items(), key=lambda kv: repr(kv[0]))]
        return None if any(v is None for _, v in items) else "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    if isinstance(node, eqx.Module):
        if type(node).__module__ == "equinox._enum":  # a status: this package's enumeration's
            enumeration = getattr(node, "_enumeration")
            ok = enumeration.__module__.startswith("diffmech.")
            return f"{enumeration.__qualname__}[{_describe(getattr(node, '_value'))}]" if ok else None
        if not type(node).__module__.startswith("diffmech."):
            return None
        parts = [_describe(getattr(node, f.name)) for f in dataclasses.fields(node)]
        return None if None in parts else f"{kind}({', '.join(parts)})"  # pyright: ignore[reportCallIssue, reportArgumentType]
    if isinstance(node, types.FunctionType) and (node.__module__ or "").startswith("diffmech."):
        module = sys.modules.get(node.__module__)
        return f"{node.__module__}.{node.__qualname__}" if getattr(module, node.__qualname__, None) is node else None
    return None


def program(name: str, f: Callable, jitted: Callable, args: tuple, static: tuple):
    """`f(*args, *static)` as `jitted` computes it (`static`: its static arguments,
    after the others), from the compiled program kept on disk when `cache()` is on,
    every argument is concrete and its non-array part is this package's own (see
    `_describe`); else `jitted(*args, *static)` itself. As `eqx.filter_jit`, arrays
    (NumPy's too) are traced and everything else is static: part of the key."""
    if _PROGRAM_FOLDER is None or is_traced(args):
        return jitted(*args, *static)
    # (a named object whole: rebuilt as a pytree, it would not be the object named)
    try:
        dynamic, fixed = eqx.partition(args, eqx.is_array, is_leaf=lambda v: id(v) in _NAMED and _NAMED[id(v)][0] is v)
        described = _describe((fixed, static))
    except Exception:  # anything unforeseen in a user's object: not kept
        described = None
    if described is None:
        return jitted(*args, *static)
    leaves, tree = jax.tree.flatten(dynamic)
    avals = [(np.shape(a), str(np.asarray(a).dtype if isinstance(a, np.generic) else a.dtype)) for a in leaves]
    key = hashlib.sha256(repr((name, _environment(), str(tree), described, avals)).encode()).hexdigest()
    entry = _LOADED.get(key)
    if entry is None:
        try:
            entry = _load(key) or _compile(key, f, tree, leaves, fixed, static)
        except Exception:  # the program's own jit: its errors, as without the cache
            return jitted(*args, *static)
        _LOADED[key] = entry
    compiled, out_tree = entry
    return jax.tree.unflatten(out_tree, compiled(*leaves))


def kept(*, data: bool = False):
    """Decorator: `f` as a program of its own (`filter_jit`) whose eager calls go
    through `program` (kept on disk when `cache()` is on). As with `filter_jit`, its
    arrays are traced and everything else is static (part of the kept program's key).
    Under a transformation it is inlined as `filter_jit(f)` is. `data=True`: as
    `_xla.eager_program`, a Python float anywhere among the positional arguments is
    passed as an array (a new value compiles nothing), and under a transformation `f`
    itself is inlined."""

    def wrap(f: Callable) -> Callable:
        jitted = filter_jit(f)
        name = f"{f.__module__}.{f.__qualname__}"

        @functools.wraps(f)
        def call(*args, **keywords):
            if data and is_traced((args, keywords)):
                return f(*args, **keywords)
            if data:  # (positional ones, as `eager_program`: keyword options stay static)
                args = jax.tree.map(lambda v: np.asarray(v) if isinstance(v, float | complex) else v, args)
            if _PROGRAM_FOLDER is None:  # no cache: the program's own jit, at once
                return jitted(*args, **keywords)
            if not keywords:
                return program(name, f, jitted, args, ())
            names = tuple(sorted(keywords))
            values = tuple(keywords[n] for n in names)
            return program(f"{name}{names}", _by_keywords(f, names), _by_keywords(jitted, names), args + values, ())

        return call

    return wrap


def _by_keywords(f: Callable, names: tuple) -> Callable:
    """`f` taking its keyword arguments `names` positionally, after the others."""

    def g(*args):
        k = len(args) - len(names)
        return f(*args[:k], **dict(zip(names, args[k:])))

    g.__name__ = getattr(f, "__name__", "program")
    return g


def _load(key: str):
    """The executable kept under `key` and its output's structure, or None."""
    assert _PROGRAM_FOLDER is not None
    try:
        blob = (_PROGRAM_FOLDER / f"{key}.bin").read_bytes()
        (payload, in_tree, out_tree), skeleton, lapack = pickle.loads(blob)
    except Exception:  # missing, partly written, or from another build: compile it
        return None
    if lapack:
        _lapack_ready()
    try:
        from jax.experimental.serialize_executable import deserialize_and_load  # only with the cache on

        return deserialize_and_load(payload, in_tree, out_tree), jax.tree.structure(skeleton)
    except Exception:  # from an incompatible build after all: compile it
        return None


@functools.cache
def _lapack_ready() -> None:
    """Have jaxlib set up its LAPACK calls, as JAX does when it lowers the first LAPACK
    operation of a process (`jaxlib.lapack.prepare_lapack_call`; where jaxlib has it
    not, a 2×2 solve lowered, not compiled: 0.2 s)."""
    try:
        from jaxlib import lapack

        lapack.prepare_lapack_call("getrf", np.dtype(np.float64))
    except Exception:  # another jaxlib: the way JAX itself gets there
        jit(jnp.linalg.solve, top_level=True).lower(np.eye(2), np.ones(2))


def _compile(key: str, f: Callable, tree, leaves: list, fixed, static: tuple):
    """Compile `f` on flat arguments (the arrays; `fixed`, the rest, is part of the
    program), keep it under `key` (written whole, then renamed)."""
    assert _PROGRAM_FOLDER is not None
    box = {}

    def flat(*leaves_):
        out, box["tree"] = jax.tree.flatten(f(*eqx.combine(jax.tree.unflatten(tree, leaves_), fixed), *static))
        return out

    # the program's name in JAX's logs, and in its persistent cache's key: a new build
    # of this package names its programs anew (see `_HITS`)
    flat.__name__ = flat.__qualname__ = f"{getattr(f, '__name__', 'program')}_{_environment()[:12]}"
    lowered = jit(flat, top_level=True).lower(*leaves)
    # XLA code and LAPACK calls only: a custom call is a handler the process must have
    # set up. JAX sets LAPACK up when it lowers the first LAPACK operation, so a loaded
    # program with LAPACK calls runs after `_lapack_ready` (without it, a Bennett
    # linkage's LU solve crashed the process); a host callback cannot be kept at all
    text = lowered.as_text()
    targets = set(re.findall(r"custom_call @([\w.]+)", text)) | set(re.findall(r'call_target_name = "([^"]+)"', text))
    _listen()
    hits = _HITS[0]
    compiled = lowered.compile()
    if _HITS[0] != hits or not all(t.startswith("lapack_") for t in targets):
        return compiled, box["tree"]
    skeleton = jax.tree.unflatten(box["tree"], [0] * box["tree"].num_leaves)  # a picklable stand-in
    try:
        from jax.experimental.serialize_executable import serialize  # only with the cache on

        blob = pickle.dumps((serialize(compiled), skeleton, bool(targets)))
    except Exception:  # a program XLA cannot serialise: not kept
        return compiled, box["tree"]
    try:
        _PROGRAM_FOLDER.mkdir(parents=True, exist_ok=True)
        tmp = _PROGRAM_FOLDER / f"{key}.{os.getpid()}.tmp"
        tmp.write_bytes(blob)
        tmp.replace(_PROGRAM_FOLDER / f"{key}.bin")
    except OSError:  # a read-only or full disk: this process still has the program
        pass
    return compiled, box["tree"]


# An executable that JAX's persistent cache answered, serialised again, lacks its
# machine code: a later process that loaded it failed with "Function iota.41_kernel not
# found" (jax 0.10.2; after the package's source changed, with JAX's cache warm). Only a
# program compiled here is kept (`_HITS`): its name carries this build's digest, so
# that JAX's cache has no entry for it unless this folder lost its file.
_HITS = [0]


@functools.cache
def _listen() -> None:
    """Count JAX's persistent-cache hits (`_HITS`), from the first compilation on."""

    def hit(event: str, **_) -> None:
        if event == "/jax/compilation_cache/cache_hits":
            _HITS[0] += 1

    jax.monitoring.register_event_listener(hit)


def enabled_for_cli() -> bool:
    """Whether the CLI turns the cache on (`DIFFMECH_COMPILATION_CACHE=0` turns it off
    as `--no-cache` does: the test suite sets it, its workers keep no cache)."""
    return os.environ.get("DIFFMECH_COMPILATION_CACHE", "1") != "0"
