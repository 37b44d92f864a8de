"""Test utilities: central finite differences (the reference for every gradient), the
documentation's helper modules (docs/), imported by name, and shared descriptions."""

import importlib
import pathlib
import sys

import numpy as np

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs"


def docs_module(name: str):
    """Import `docs/NAME.py` (the site's build helpers are not a package)."""
    sys.path.insert(0, str(DOCS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(DOCS))


def central_diff(f, x, h=1e-6):
    """Central finite-difference Jacobian of f: R^n -> R^m at x (float64, numpy)."""
    x = np.asarray(x, dtype=float)
    f0 = np.asarray(f(x), dtype=float)
    J = np.zeros(f0.shape + x.shape)
    for idx in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[idx] = h
        J[(...,) + idx] = (np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h)
    return J


def rel_err(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def assert_round_off_equal(a, b, condition, where=""):
    """Two computations of the same solutions by different compiled programs (a batch
    and its singles; programs with and without a fallback) agree to round-off: each
    row within 8 ε × its Jacobian's condition number × (1 + |x|∞) (XLA may round two
    programs' arithmetic differently, and near a motion limit the closure amplifies
    that by its conditioning). A row whose condition is NaN (not converged) holds the
    last converged solution: it takes that row's condition."""
    a, b, c = np.asarray(a), np.asarray(b), np.asarray(condition, dtype=float)
    finite = np.isfinite(c)
    last = np.maximum.accumulate(np.where(finite, np.arange(c.size), -1))
    c = np.where(last >= 0, c[np.maximum(last, 0)], np.nan)
    eps = np.finfo(a.dtype).eps
    tol = 8 * eps * np.where(np.isfinite(c), np.maximum(c, 1.0), 1.0) * (1 + np.abs(b).max(axis=-1))
    err = np.abs(a - b).max(axis=-1)
    bad = ~(err <= tol)
    assert not bad.any(), f"{where}: rows {np.flatnonzero(bad)[:10].tolist()} differ by {err[bad][:5]} > {tol[bad][:5]}"


# a double rocker (non-Grashof): its crank cannot turn fully, an open curve stops near 1.9 rad
DOUBLE_ROCKER = {
    "geometry": "planar",
    "joints": {
        "A": {"type": "R", "coords": [0, 0]},
        "B": {"type": "R", "coords": [0.3, 0]},
        "C": {"type": "R", "coords": [0.55, 0.2]},
        "D": {"type": "R", "coords": [0.5, 0]},
        "P": {"type": "tracer", "coords": [0.4, 0.3]},
    },
    "links": {"crank": ["A", "B"], "coupler": ["B", "C", "P"], "rocker": ["C", "D"], "ground": ["A", "D"]},
    "ground": "ground",
    "input": "crank",
}


def placed_crank_rocker():
    """A crank-rocker placed off the origin, its coupler point off the coupler line:
    the synthesis tests' known design, whose coupler path gives targets on a four-bar's
    curve."""
    import jax.numpy as jnp

    from diffmech import synthesis

    return synthesis.PlacedFourBar(
        lengths=jnp.array([0.12, 0.25, 0.26, 0.30]),
        point=jnp.array([0.1, 0.05]),
        origin=jnp.array([0.3, -0.2]),
        angle=jnp.array(0.4),
        branch=1,
    )
