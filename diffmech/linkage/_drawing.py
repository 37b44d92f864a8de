"""Drawings and data out: a planar linkage as DXF or SVG (ezdxf), any motion as CSV.

The drawing is the linkage at its initial configuration (or a motion's first
converged row): each link a line or a closed polyline through its points (layer
`LINKS`), each pin a circle (`JOINTS`), each slide a line across the drawing
(`SLIDES`), each tracer a point (`TRACERS`) and, with a motion, each tracer's path
through its converged rows, the coupler curve (`PATHS`). Coordinates are the
description's, unscaled (DXF `$INSUNITS` is left unitless).
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

from .._validate import output_path
from ._schema import LinkageError

LAYERS = {"LINKS": 7, "JOINTS": 1, "SLIDES": 3, "TRACERS": 5, "PATHS": 4}  # AutoCAD colour indices


def _ezdxf() -> Any:
    try:
        import ezdxf
    except ImportError:  # pragma: no cover - the extra is named
        raise LinkageError("to_dxf / to_svg: need the `ezdxf` package (pip install 'diffmech[formats]')") from None
    return ezdxf


def _configuration(lk, motion):
    """The coordinates drawn `(J, 3)` and the tracers' paths `{name: (N, 2)}`."""
    if motion is None:
        return np.asarray(lk.initial(), dtype=float), {}
    ok = np.asarray(motion.converged)
    if not ok.any():
        raise LinkageError("to_dxf: the motion has no converged row to draw")
    C = np.asarray(motion.coords, dtype=float)
    if C.shape[1:] != np.shape(lk.initial()):
        raise LinkageError(f"to_dxf: the motion's coordinates {C.shape[1:]} are not this linkage's")
    paths = {lk.names[j]: C[ok, j, :2] for j, t in enumerate(lk.types) if t == "tracer"}
    return C[np.argmax(ok)], paths


def dxf_document(lk, motion=None):
    """The ezdxf document of a planar linkage (see the module docstring)."""
    if lk.geometry != "planar":
        raise LinkageError(f"to_dxf: draws planar linkages; this one is {lk.geometry}")
    ezdxf = _ezdxf()
    X, paths = _configuration(lk, motion)
    pts = np.array([X[j, :2] for j, t in enumerate(lk.types) if t != "P"])
    span = float(np.ptp(pts, axis=0).max()) or 1.0
    lo, hi = pts.min(axis=0) - 0.1 * span, pts.max(axis=0) + 0.1 * span
    doc = ezdxf.new("R2010")
    for name, colour in LAYERS.items():
        doc.layers.add(name, color=colour)
    msp = doc.modelspace()
    for k, members in enumerate(lk.links):
        if k == lk.ground:
            continue
        corners = [tuple(X[j, :2]) for j in members if lk.types[j] == "R"]
        if len(corners) == 2:
            msp.add_line(corners[0], corners[1], dxfattribs={"layer": "LINKS"})
        elif len(corners) > 2:
            msp.add_lwpolyline(corners, close=True, dxfattribs={"layer": "LINKS"})
    for j, t in enumerate(lk.types):
        if t == "R":
            msp.add_circle(tuple(X[j, :2]), 0.015 * span, dxfattribs={"layer": "JOINTS"})
        elif t == "tracer":
            msp.add_point(tuple(X[j, :2]), dxfattribs={"layer": "TRACERS"})
        elif t == "P":  # the line a x + b y + c = 0 across the drawing's box
            a, b, c = X[j]
            foot = -c * np.array([a, b]) / (a * a + b * b)
            d = np.array([b, -a]) / np.hypot(a, b)
            reach = float(np.linalg.norm(hi - lo))
            msp.add_line(tuple(foot - reach * d), tuple(foot + reach * d), dxfattribs={"layer": "SLIDES"})
    for name, path in paths.items():
        if len(path) > 1:
            msp.add_lwpolyline([tuple(p) for p in path], dxfattribs={"layer": "PATHS"})
    return doc


def to_dxf(lk, path, motion=None) -> Path:
    """Draw a planar linkage as a DXF file: links, pins, slides and tracers at the
    initial configuration (or a motion's first converged row), and each tracer's path
    through a motion's converged rows (the coupler curve), one layer each (`LINKS`,
    `JOINTS`, `SLIDES`, `TRACERS`, `PATHS`). Needs `ezdxf`.

    **Arguments:** `lk`: a planar linkage; `path`: the `.dxf` file to write; `motion`:
    a `Motion` of `lk` (optional).

    **Returns:** the path written.
    """
    path = output_path("linkage.to_dxf", path)
    dxf_document(lk, motion).saveas(path)
    return path


def to_svg(lk, path, motion=None) -> Path:
    """Draw a planar linkage as an SVG file: the DXF drawing of `to_dxf` rendered by
    ezdxf's drawing add-on on a white page. Needs `ezdxf`.

    **Arguments:** `lk`: a planar linkage; `path`: the `.svg` file to write; `motion`:
    a `Motion` of `lk` (optional).

    **Returns:** the path written.
    """
    from ezdxf.addons.drawing import layout, svg
    from ezdxf.addons.drawing.config import BackgroundPolicy, ColorPolicy, Configuration
    from ezdxf.addons.drawing.frontend import Frontend
    from ezdxf.addons.drawing.properties import RenderContext

    path = output_path("linkage.to_svg", path)
    doc = dxf_document(lk, motion)
    backend = svg.SVGBackend()
    config = Configuration(background_policy=BackgroundPolicy.WHITE, color_policy=ColorPolicy.BLACK)
    Frontend(RenderContext(doc), backend, config=config).draw_layout(doc.modelspace())
    path.write_text(backend.get_string(layout.Page(0, 0, layout.Units.mm)))
    return path


def to_csv(motion, path) -> Path:
    """Write a motion as CSV: one row per input, the inputs (`u`, or `u0`, `u1`, … for
    several), `converged`, `residual`, then every joint's and tracer's coordinates
    (`<name>.x`, `.y`, `.z`; a planar line's `.a`, `.b`, `.c`). A row that did not
    converge keeps its inputs and status and leaves the coordinates empty.

    **Arguments:** `motion`: a `Motion`; `path`: the `.csv` file to write.

    **Returns:** the path written.
    """
    U = np.asarray(motion.inputs, dtype=float)
    U = U[:, None] if U.ndim == 1 else U
    C = np.asarray(motion.coords, dtype=float)
    ok = np.asarray(motion.converged)
    res = np.asarray(motion.residual, dtype=float)
    head = ["u"] if U.shape[1] == 1 else [f"u{i}" for i in range(U.shape[1])]
    head += ["converged", "residual"]
    cols = []
    planar = 2 in motion.widths  # a planar motion's points have 2 coordinates, its lines 3
    for j, (n, w) in enumerate(zip(motion.names, motion.widths)):
        axes = "abc" if (w == 3 and planar) else "xyz"[:w]
        head += [f"{n}.{a}" for a in axes]
        cols += [(j, i) for i in range(w)]
    path = output_path("linkage.to_csv", path)
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(head)
        for r in range(len(U)):
            coords = [repr(float(C[r, j, i])) for j, i in cols] if ok[r] else [""] * len(cols)
            out.writerow([repr(float(v)) for v in U[r]] + [int(ok[r]), repr(float(res[r]))] + coords)
    return path
