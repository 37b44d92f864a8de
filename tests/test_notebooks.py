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

import matplotlib.pyplot as plt
import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell

NOTEBOOKS = sorted((pathlib.Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))
# the test module whose programs each notebook shares (its xdist group)
GROUP = {
    "01": "fourbar_kinematics",
    "02": "fourbar_dynamics",
    "03": "linkage",
    "04": "parallel",
    "05": "parallel",
    "06": "fit",
    "07": "synthesis",
    "08": "synthesis",
    "09": "linkage",
}


def _run(path) -> dict:
    """Execute the notebook's code cells in order in a clean IPython namespace; return
    its `checks` dict: the values the notebook reports, which the test asserts on (data,
    not printed text)."""
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
                    raise AssertionError(
                        f"{path.name}, cell {k}: {type(err).__name__}: {err}\n{out.getvalue()[-3000:]}"
                    )
        checks = dict(shell.user_ns.get("checks", {}))
    finally:
        plt.close("all")
        shell.reset(new_session=True)
    return checks


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=pytest.mark.xdist_group(GROUP[p.name[:2]])) for p in NOTEBOOKS],
    ids=[p.name for p in NOTEBOOKS],
)
def test_notebook_runs(path, monkeypatch, tmp_path):
    monkeypatch.setenv("DIFFMECH_SMALL", "1")
    # a notebook may skip work whose result the suite asserts elsewhere (it says where)
    monkeypatch.setenv("DIFFMECH_UNDER_TEST", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("DIFFMECH_RESULTS", str(path.parent.parent / "benchmarks" / "results"))
    monkeypatch.chdir(tmp_path)
    c = _run(path)
    if path.name.startswith("01_"):
        assert c["converged"] is True
        assert c["implicit_vs_fd"] < 1e-7
    if path.name.startswith("02_"):
        assert c["ok"] is True and c["batch_all_ok"] is True
        assert c["gradient_vs_fd"] < 1e-5
        assert c["work_mismatch"] < 1e-6
    if path.name.startswith("03_"):
        assert len(c["metric_drift"]) == 6 and max(c["metric_drift"].values()) <= 1e-10
        assert c["velocity_vs_fd"] < 1e-6 and c["gradient_vs_fd"] < 1e-6
        assert "unknown joint 'X'" in c["load_error"]
    if path.name.startswith(("04_", "05_")):
        assert c["converged"] is True and c["residual"] <= 1e-10
        assert 0.8 < c["order"] < 1.2  # Euler: first order in Δt
        assert c["momentum_vs_ne"] <= 1e-8
    if path.name.startswith("04_"):
        assert c["ls_vs_ift_rates"] <= 1e-10
    if path.name.startswith("05_"):
        assert c["dof"] == 2 and c["null_dim"] == 2
    if path.name.startswith("07_"):
        assert c["five_point_objective"] < 1.28e-6  # below the best published value
        assert c["freudenstein_diff"] <= 1e-8  # Freudenstein's three-point solution
    if path.name.startswith("09_"):
        assert c["torque_vs_lagrange"] <= 1e-9  # Newton–Euler against Lagrange's reduced equation
        assert c["energy_error"] <= 1e-8 and c["closure"] <= 1e-13
        assert c["gradient_vs_fd"] <= 1e-5
        assert c["peak_after"] < c["peak_before"]  # the design step lowered the peak load
        assert c["ss5_energy_error"] <= 1e-9  # the spatial 5-SS of rods
        assert c["ss5_leg_off_axis"] <= 1e-10  # massless legs are two-force members
    if path.name.startswith("08_"):
        assert c["same_mask_sweep"] is True and c["same_mask_shard"] is True
        assert c["q_vs_ref"] <= 1e-13 and c["shard_dq"] <= 1e-13
        assert c["seed_vs_closed_form"] <= 1e-12
        assert c["chunked_same_mask"] is True and c["chunked_dq"] <= 1e-15  # vmap_chunked = vmap, to round-off
        assert "throughput_ratio" in c  # the benchmark results were read
