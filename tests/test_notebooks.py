"""Run every notebook with small sizes (DIFFMECH_SMALL=1); any error fails the test."""

import os
import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((pathlib.Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch, tmp_path):
    monkeypatch.setenv("DIFFMECH_SMALL", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    if path.name.startswith("01_"):
        assert "converged: True" in text
        diff = float(text.split("max |implicit - finite difference| =")[1].split()[0])
        assert diff < 1e-7
    if path.name.startswith("03_"):
        drifts = [float(line.split("=")[1]) for line in text.splitlines() if "max |metric - initial|" in line]
        assert len(drifts) == 6 and max(drifts) <= 1e-10
        assert float(text.split("max |IFT velocity - finite difference| =")[1].split()[0]) < 1e-6
        assert float(text.split("max |implicit - finite difference| =")[1].split()[0]) < 1e-6
        assert "LinkageError: " in text and "unknown joint 'X'" in text
    if path.name.startswith("02_"):
        assert "ok: True" in text and "all ok: True" in text
        diff = float(text.split("max relative difference =")[1].split()[0])
        assert diff < 1e-5
        mismatch = float(text.split("mismatch")[1].split()[0])
        assert mismatch < 1e-6
    if path.name.startswith(("04_", "05_")):
        assert "all samples converged: True" in text
        assert float(text.split("max closure residual =")[1].split()[0]) <= 1e-10
        order = float(text.split("one-step order ≈")[1].split()[0])
        assert 0.8 < order < 1.2  # Euler: first order in Δt
        rel = float(text.split("max relative difference =")[1].split()[0])
        assert rel <= 1e-8
    if path.name.startswith("04_"):
        assert float(text.split("max |least-squares rates − IFT rates| =")[1].split()[0]) <= 1e-10
    if path.name.startswith("05_"):
        assert "degrees of freedom: 2" in text and "null-space dimension of the wrench system: 2" in text
