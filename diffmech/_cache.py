"""diffmech's folder on disk and JAX's persistent compilation cache for its programs."""

import os
import pathlib

import jax

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
    it: a first answer in a fraction of the time (see the getting-started page). Call
    it first, before anything compiles; the CLI calls it unless `--no-cache`.

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
    return folder


def enabled_for_cli() -> bool:
    """Whether the CLI turns the cache on (`DIFFMECH_COMPILATION_CACHE=0` turns it off
    as `--no-cache` does: the test suite sets it, its workers keep no cache)."""
    return os.environ.get("DIFFMECH_COMPILATION_CACHE", "1") != "0"
