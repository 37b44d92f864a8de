"""Drawings and data out: a planar linkage's DXF read back by ezdxf (its geometry is the
linkage's), its SVG rendered by ezdxf, a motion's CSV read back by the csv module."""

import csv
import xml.etree.ElementTree as ET

import jax.numpy as jnp
import numpy as np
import pytest

import diffmech as dm
from diffmech import linkage as L

ezdxf = pytest.importorskip("ezdxf")


def test_a_planar_linkage_drawn_as_dxf_reads_back_as_its_geometry(tmp_path):
    # Stephenson-II (pins, two slides, a tracer) over part of its motion: every pin a
    # circle at its coordinates, every binary link a line between its pins, each slide a
    # line on its line, the tracer's path the motion's converged rows
    lk = dm.examples.stephenson2()
    m = L.sweep(lk, inputs=jnp.linspace(0.0, 0.6, 13))
    assert bool(np.all(m.converged))
    doc = ezdxf.readfile(L.to_dxf(lk, tmp_path / "s2.dxf", motion=m))
    msp = doc.modelspace()
    X = np.asarray(m.coords[0])
    pins = {tuple(np.round(X[j, :2], 12)) for j, t in enumerate(lk.types) if t == "R"}
    circles = {tuple(np.round(np.array(e.dxf.center)[:2], 12)) for e in msp.query("CIRCLE[layer=='JOINTS']")}
    assert circles == pins
    for e in msp.query("LINE[layer=='LINKS']"):
        ends = {tuple(np.round(np.array(p)[:2], 12)) for p in (e.dxf.start, e.dxf.end)}
        assert ends <= pins and any(ends == {tuple(np.round(X[j, :2], 12)) for j in mm} & pins for mm in lk.links)
    slides = list(msp.query("LINE[layer=='SLIDES']"))
    assert len(slides) == sum(t == "P" for t in lk.types)
    for e in slides:  # both ends on one of the linkage's lines a x + b y + c = 0
        on = [
            j
            for j, t in enumerate(lk.types)
            if t == "P" and abs(X[j, :2] @ np.array(e.dxf.start)[:2] + X[j, 2]) < 1e-12
        ]
        assert on and abs(X[on[0], :2] @ np.array(e.dxf.end)[:2] + X[on[0], 2]) < 1e-12
    (path,) = msp.query("LWPOLYLINE[layer=='PATHS']")
    tracer = [j for j, t in enumerate(lk.types) if t == "tracer"][0]
    np.testing.assert_allclose(np.array(path.get_points("xy")), np.asarray(m.coords[:, tracer, :2]), atol=1e-12)
    with L.to_csv(m, tmp_path / "s2.csv").open() as fh:  # a planar line's coefficients a, b, c
        head = next(csv.reader(fh))
    lines = [n for n, t in zip(lk.names, lk.types) if t == "P"]
    assert lines and all(f"{n}.{a}" in head for n in lines for a in "abc")
    svg = ET.parse(L.to_svg(lk, tmp_path / "s2.svg", motion=m)).getroot()
    assert svg.tag.endswith("svg") and len(list(svg.iter())) > 10
    with pytest.raises(L.LinkageError, match=r"to_dxf: draws planar linkages; this one is spatial"):
        L.to_dxf(dm.examples.rssr(), tmp_path / "x.dxf")


def test_a_motion_written_as_csv_reads_back_row_for_row(tmp_path):
    # the five-bar's two inputs beyond its reach: converged rows carry every coordinate,
    # the rest their inputs and status only
    lk = dm.examples.five_bar()
    U = np.stack([np.linspace(0.0, 3.0, 7), np.zeros(7)], axis=1)
    m = L.sweep(lk, inputs=U)
    ok = np.asarray(m.converged)
    assert ok.any() and not ok.all()
    with L.to_csv(m, tmp_path / "m.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(U)
    for r, row in enumerate(rows):
        assert [float(row["u0"]), float(row["u1"])] == list(U[r]) and int(row["converged"]) == ok[r]
        for j, n in enumerate(m.names):
            for i, a in enumerate("xy"[: m.widths[j]]):
                cell = row[f"{n}.{a}"]
                assert (float(cell) == float(m.coords[r, j, i])) if ok[r] else cell == ""
