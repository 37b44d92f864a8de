"""Eager input validation shared by the mechanism constructors.

Checks run only on concrete values: inside `jit`/`vmap` the fields are tracers and
the functional core reports problems through statuses instead.
"""

import collections
import dataclasses
import os
import sys
import warnings
from pathlib import Path

import equinox as eqx
import jax
import jax.core
import numpy as np


def is_traced(*xs) -> bool:
    """True if any leaf of `xs` is a JAX tracer (we are inside a transformation)."""
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(xs))


def array_module(*xs):
    """`numpy` when every leaf of `xs` is concrete, else `jax.numpy`: an eager entry
    point builds its program's arguments on the host (eagerly, each `jnp` operation is
    a small program of its own to compile on a first call)."""
    import jax.numpy as jnp

    return jnp if is_traced(*xs) else np


class Recent:
    """The last `size` objects seen, by identity; a reference kept keeps an id from
    being reused while it is remembered. For facts about immutable modules that an
    eager call need not establish twice (concrete, checked)."""

    def __init__(self, size: int = 16):
        self._seen: collections.OrderedDict[int, tuple] = collections.OrderedDict()
        self._size = size

    def __contains__(self, obj) -> bool:
        hit = self._seen.get(id(obj))
        return hit is not None and hit[0] is obj

    def add(self, obj, value=None) -> None:
        self._seen[id(obj)] = (obj, value)
        while len(self._seen) > self._size:
            self._seen.popitem(last=False)

    def value(self, obj, make):
        """`make(obj)`, made once while `obj` is remembered."""
        if obj not in self:
            self.add(obj, make(obj))
        return self._seen[id(obj)][1]


_CONCRETE = Recent()


def is_traced_module(module) -> bool:
    """`is_traced(module)` for an immutable pytree (an Equinox module), remembered for
    the last 16 concrete ones: a concrete module stays concrete, and flattening it
    costs 3–4 µs of a 40-µs eager four-bar sweep."""
    if module in _CONCRETE:
        return False
    if is_traced(module):
        return True
    _CONCRETE.add(module)
    return False


def check_array(
    owner: str,
    name: str,
    value,
    trailing: tuple[int, ...],
    *,
    positive: bool = False,
    batch_shape: tuple[int, ...] | None = None,
) -> None:
    """Raise `ValueError` naming `owner.name` if `value` has the wrong trailing shape,
    a different batch shape, non-finite entries, or (with `positive`) entries ≤ 0."""
    if is_traced(value):
        return
    arr = as_floats(owner, name, value)
    nt = len(trailing)
    if arr.ndim < nt or tuple(arr.shape[arr.ndim - nt :]) != tuple(trailing):
        raise ValueError(
            f"{owner}: `{name}` must have shape {trailing} (with optional leading batch axes); got shape "
            f"{arr.shape}: {arr!r}"
        )
    if batch_shape is not None and tuple(arr.shape[: arr.ndim - nt]) != tuple(batch_shape):
        raise ValueError(
            f"{owner}: `{name}` has batch shape {arr.shape[: arr.ndim - nt]}, but `lengths` has {batch_shape}"
        )
    if not np.all(np.isfinite(arr)):
        bad = arr[~np.isfinite(arr)]
        raise ValueError(f"{owner}: `{name}` must be finite; got {arr.tolist()} (non-finite: {bad.tolist()})")
    if positive and not np.all(arr > 0):
        bad = arr[~(arr > 0)]
        raise ValueError(f"{owner}: `{name}` must be positive; got {arr.tolist()} (non-positive: {bad.tolist()})")


def as_floats(owner: str, name: str, value, dtype: type | np.dtype = float) -> np.ndarray:
    """`value` as a NumPy float array, or a `ValueError` naming `owner` and the argument
    `name` where it is not numbers at all (a string, a ragged list, None)."""
    if value is None:
        raise ValueError(f"{owner}: `{name}` must be an array of numbers; got None")
    try:
        return np.asarray(value, dtype=dtype)
    except (TypeError, ValueError):
        raise ValueError(f"{owner}: `{name}` must be an array of numbers; got {value!r}") from None


def check_finite(owner: str, values: dict) -> None:
    """A `ValueError` naming `owner` and the argument, for the first of `values` (name →
    value) that is not an array of finite numbers; values under a transformation are
    not known and are skipped."""
    for name, v in values.items():
        if not is_traced(v) and not np.all(np.isfinite(as_floats(owner, name, v))):
            raise ValueError(f"{owner}: `{name}` must be finite; got {np.asarray(v).tolist()}")


def check_integration(owner: str, states: dict, t0, t1, saveat, max_steps) -> None:
    """Eager checks of an ODE entry point's initial `states` (name → value: finite), its
    span `t0`, `t1` (finite), its save times `saveat` (a sorted, non-empty 1-D array
    inside [t0, t1], or None) and its step budget `max_steps` (an integer ≥ 1), before
    anything is compiled; a `ValueError` names `owner` and the argument. Values under a
    transformation are not known: those checks are skipped."""
    if isinstance(max_steps, bool) or not isinstance(max_steps, (int, np.integer)) or max_steps < 1:
        raise ValueError(f"{owner}: `max_steps` must be an integer ≥ 1; got {max_steps!r}")
    check_finite(owner, {**states, "t0": t0, "t1": t1})
    if saveat is None or is_traced(saveat, t0, t1):
        return
    ts = as_floats(owner, "saveat", saveat)
    if ts.ndim != 1 or ts.size < 1:
        raise ValueError(f"{owner}: `saveat` must be a non-empty 1-D array of times; got shape {ts.shape}")
    if not np.all(np.isfinite(ts)):
        raise ValueError(f"{owner}: `saveat` must be finite; got {ts[~np.isfinite(ts)][0]}")
    if np.any(np.diff(ts) < 0):
        k = int(np.argmax(np.diff(ts) < 0))
        raise ValueError(f"{owner}: `saveat` must be sorted; got {ts[k]} before {ts[k + 1]} (index {k})")
    lo, hi = float(t0), float(t1)
    if ts[0] < lo or ts[-1] > hi:
        raise ValueError(f"{owner}: `saveat` must lie in [t0, t1] = [{lo:g}, {hi:g}]; got [{ts[0]:g}, {ts[-1]:g}]")


def check_count(owner: str, name: str, value, minimum: int = 1) -> int:
    """`value` as an `int` ≥ `minimum` (a bool, a float, a string is refused), or a
    `ValueError` naming `owner` and `name`."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{owner}: `{name}` must be an integer ≥ {minimum}; got {value!r}")
    return int(value)


def check_scalar(owner: str, name: str, value, *, positive: bool = False, nonnegative: bool = False) -> None:
    """A `ValueError` naming `owner` and `name` unless `value` is one finite number (and,
    with `positive`, > 0; with `nonnegative`, ≥ 0); skipped under a transformation."""
    if is_traced(value):
        return
    a = as_floats(owner, name, value)
    need = " > 0" if positive else (" ≥ 0" if nonnegative else "")
    ok = a.shape == () and bool(np.isfinite(a)) and (not positive or a > 0) and (not nonnegative or a >= 0)
    if not ok:
        raise ValueError(f"{owner}: `{name}` must be one finite number{need}; got {value!r}")


def check_shape(owner: str, name: str, value, shape: tuple[int, ...]) -> None:
    """A `ValueError` naming `owner` and `name` unless `value` is an array of finite
    numbers of exactly `shape`; skipped under a transformation."""
    if is_traced(value):
        if tuple(np.shape(value)) != tuple(shape):  # shapes are known under a transformation too
            raise ValueError(f"{owner}: `{name}` must have shape {tuple(shape)}; got {tuple(np.shape(value))}")
        return
    a = as_floats(owner, name, value)
    if a.shape != tuple(shape):
        raise ValueError(f"{owner}: `{name}` must have shape {tuple(shape)}; got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{owner}: `{name}` must be finite; got {a.tolist()}")


class ArgumentTypeError(ValueError, TypeError):
    """An argument of the wrong kind (a string where a trajectory is meant): a
    `ValueError` like every bad argument, and a `TypeError`."""


class UnknownNameError(KeyError, ValueError):
    """A joint, link or reaction asked for by a name the result does not have: a
    `KeyError` (results read like mappings) and a `ValueError` like every bad
    argument. The message lists the names there are."""

    def __str__(self) -> str:  # the message as written (a KeyError quotes its argument)
        return str(self.args[0]) if self.args else ""


def check_type(owner: str, name: str, value, kind: type | tuple[type, ...], what: str) -> None:
    """An `ArgumentTypeError` naming `owner`, `name` and what was expected (`what`)
    unless `value` is an instance of `kind`."""
    if not isinstance(value, kind):
        raise ArgumentTypeError(f"{owner}: `{name}` must be {what}; got {type(value).__name__} {value!r:.80}")


def pick(separate: dict, names) -> dict:
    """The entries of `separate` named in `names`, taken out of it (a call's separate
    keywords, sorted into the options object each belongs to)."""
    return {k: separate.pop(k) for k in names if k in separate}


def options(owner: str, name: str, given, cls: type, separate: dict, what: str):
    """The options object of a call that takes one: `given` (an instance of `cls`,
    passed as `name=`), else one built from `separate`, the same fields passed one by
    one as the call's separate keyword arguments (its older form, kept), else `cls()`.
    Both at once is an `ArgumentTypeError` naming `owner`, as is an unknown field."""
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(separate) - fields)
    if unknown:
        raise ArgumentTypeError(f"{owner}: unexpected keyword argument {unknown[0]!r}")
    if given is None:
        return cls(**separate)
    check_type(owner, name, given, cls, what)
    if separate:
        raise ArgumentTypeError(
            f"{owner}: give `{name}=` or its fields ({', '.join(sorted(separate))}) by keyword, not both"
        )
    return given


def check_trailing(owner: str, name: str, value, trailing: tuple[int, ...]) -> None:
    """A `ValueError` naming `owner` and `name` unless `value`'s shape ends in `trailing`
    (leading batch axes allowed). Shapes are static, so this holds under `jit` and
    `vmap` too and costs nothing at run time."""
    shape = tuple(np.shape(value))
    if len(shape) < len(trailing) or shape[len(shape) - len(trailing) :] != tuple(trailing):
        raise ValueError(
            f"{owner}: `{name}` must have trailing shape {tuple(trailing)} (optional leading batch axes); got {shape}"
        )


def check_callable(owner: str, name: str, value, what: str) -> None:
    """A `ValueError` naming `owner` and `name` unless `value` is callable (`what`: the
    function expected, e.g. "a residual fn(x, u, params)")."""
    if not callable(value):
        raise ValueError(f"{owner}: `{name}` must be {what}; got {value!r:.80}")


def output_path(owner: str, path) -> Path:
    """`path` as a `Path` to write, its folder checked first: a missing folder, or a
    file where a folder is meant, is named here (`FileNotFoundError`,
    `NotADirectoryError`) rather than by the writer deep inside a format library."""
    p = Path(path)
    folder = p.parent
    for above in [folder, *folder.parents]:
        if above.exists():
            if not above.is_dir():
                raise NotADirectoryError(f"{owner}: cannot write {str(p)!r}: {str(above)!r} is a file, not a folder")
            break
    if not folder.is_dir():
        raise FileNotFoundError(f"{owner}: cannot write {str(p)!r}: the folder {str(folder)!r} does not exist")
    if p.is_dir():
        raise IsADirectoryError(f"{owner}: cannot write {str(p)!r}: it is a folder; name a file")
    return p


def renamed(f, old: str, new: str):
    """`f` under its former public name `old`, for one version: each call warns
    (`DeprecationWarning`) that the name is now `new`, then calls `f`."""

    def alias(*args, **kwargs):
        warnings.warn(f"{old} is now {new}; the old name goes in the next version", DeprecationWarning, stacklevel=2)
        return f(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old.rpartition(".")[2]
    alias.__module__ = f.__module__
    alias.__doc__ = f"The former name of `{new}` (deprecated: it goes in the next version)."
    return alias


# this package's folder, Equinox's (a module's method is called through its bound-method
# wrapper, a program through `filter_jit`) and JAX's (a warning raised while tracing):
# the frames a warning skips to reach the user's line
_LIBRARY = tuple(os.path.dirname(os.path.abspath(str(f))) + os.sep for f in (__file__, eqx.__file__, jax.__file__))


def user_stacklevel() -> int:
    """`warnings.warn`'s `stacklevel`, for the function that warns, naming the first
    frame outside this package, Equinox and JAX: the user's call, however many of the
    library's own layers (and of the tracing's) lie between."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_LIBRARY):
        frame, level = frame.f_back, level + 1
    return level
