"""Run every notebook with small sizes (DIFFMECH_SMALL=1); any error fails the test.

The cells run in this worker's process, in an IPython shell (the interpreter a Jupyter
kernel runs; magics and rich display included), under the suite's strict dtype
promotion: stricter than a fresh kernel's standard promotion (code that runs under
strict runs unchanged under standard), and part of JAX's cache key, so a notebook
under standard promotion would recompile everything. In-process, a notebook reuses the programs the tests of its
subject compiled in this worker already (same library functions, same shapes): each
notebook is put in one `xdist_group` with those tests and ordered after them
(`conftest.py`), which halves the notebooks' share of the suite's time on 2 cores."""

import contextlib
import io
import pathlib

import jax
import matplotlib.pyplot as plt
import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell

NOTEBOOKS = sorted((pathlib.Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
# the test module whose programs each notebook shares (its xdist group)
GROUP = {"01": "fourbar_kinematics", "02": "fourbar_dynamics", "03": "linkage", "04": "parallel",
         "05": "parallel", "06": "fit", "07": "synthesis", "08": "synthesis"}


def _run(path) -> str:
    """Execute the notebook's code cells in order in a clean IPython namespace; return
    everything they printed (stdout and displayed values)."""
    nb = nbformat.read(path, as_version=4)
    shell = InteractiveShell.instance()
    shell.reset(new_session=True)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            for k, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                result = shell.run_cell(cell.source, store_history=False)
                if not result.success:
                    err = result.error_before_exec or result.error_in_exec
                    raise AssertionError(f"{path.name}, cell {k}: {type(err).__name__}: {err}\n{out.getvalue()[-3000:]}")
    finally:
        plt.close("all")
        shell.reset(new_session=True)
    return out.getvalue()


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.xdist_group(GROUP[p.name[:2]])) for p in NOTEBOOKS],
                         ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch, tmp_path):
    monkeypatch.setenv("DIFFMECH_SMALL", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("DIFFMECH_RESULTS", str(path.parent.parent / "benchmarks" / "results"))
    monkeypatch.chdir(tmp_path)
    text = _run(path)
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
    if path.name.startswith("07_"):
        assert "below the best published value (1.28e-06): True" in text
        assert float(text.split("max difference")[1].split(";")[0]) <= 1e-8  # Freudenstein's three-point solution
    if path.name.startswith("08_"):
        assert "same mask as fourbar.sweep: True" in text and "same mask as shard.run above: True" in text
        assert float(text.split("max |q − q_ref| =")[1].split()[0]) <= 1e-13
        assert float(text.split("shard.run above: True ; max |Δq| =")[1].split()[0]) <= 1e-13
        assert float(text.split("vs closed form: max |Δq| =")[1].split()[0]) <= 1e-12
        assert "throughput float32 / float64 on this CPU" in text  # the benchmark results were read
    if path.name.startswith("05_"):
        assert "degrees of freedom: 2" in text and "null-space dimension of the wrench system: 2" in text
