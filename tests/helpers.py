"""Test utilities: central finite differences (the reference for every gradient), and
the documentation's helper modules (docs/), imported by name."""

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
