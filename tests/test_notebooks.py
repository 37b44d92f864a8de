"""Run every notebook with small sizes (DIFFMECH_SMALL=1); any error fails the test.

The cells run in this worker's process, in an IPython shell (the interpreter a Jupyter
kernel runs; magics and rich display included), under the suite's strict dtype
promotion: stricter than a fresh kernel's standard promotion (code that runs under
strict runs unchanged under standard), and part of JAX's cache key, so a notebook
under standard promotion would recompile everything. In-process, a notebook reuses the programs the tests of its
subject compiled in this worker already (same library functions, same shapes): each
notebook is put in one `xdist_group` with those tests and ordered after them
(`conftest.py`), which halves the notebooks' share of the suite's time on 2 cores.

Each cell's outputs are kept as a kernel would record them (its printed text, every
`display`, the value of its last expression, and each figure left open at its end, as
PNG, as Jupyter's inline backend shows it), and a notebook that ran through is written
with them to `build/notebooks/`. The documentation site renders those (`docs/hooks.py`)
instead of executing the notebooks a second time; it refuses a notebook that is missing
there or was executed from another version of its source (`docs/executed.py`)."""

import base64
import contextlib
import io
import os
import pathlib

import matplotlib
import matplotlib.pyplot as plt
import nbformat
import numpy as np
import pytest
from helpers import docs_module
from IPython.core.displaypub import DisplayPublisher
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.pylabtools import select_figure_formats

ROOT = pathlib.Path(__file__).parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
executed = docs_module("executed")  # where the site reads the executed notebooks
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
    "10": "spatial",
    "11": "sdf",
    "12": "parallel",
    "13": "linkage",
}


class _Outputs:
    """One cell's outputs in the order they came, as nbformat output nodes."""

    def __init__(self):
        self.items = []

    def stream(self, name: str, text: str):
        if not text:
            return
        last = self.items[-1] if self.items else None
        if last is not None and last.output_type == "stream" and last.name == name:
            last.text += text
        else:
            self.items.append(nbformat.v4.new_output("stream", name=name, text=text))

    def bundle(self, data: dict) -> dict:
        return {k: base64.b64encode(v).decode() if isinstance(v, bytes) else v for k, v in data.items()}

    def display(self, data, metadata=None):
        self.items.append(nbformat.v4.new_output("display_data", data=self.bundle(data), metadata=metadata or {}))


class _Stream(io.TextIOBase):
    """stdout or stderr of a cell, written into its outputs."""

    def __init__(self, outputs: _Outputs, name: str):
        self.outputs, self.stream_name = outputs, name

    def writable(self):
        return True

    def write(self, text):
        self.outputs.stream(self.stream_name, text)
        return len(text)


class _Publisher(DisplayPublisher):
    """`display(...)` inside a cell: recorded as a display_data output of that cell."""

    cell: _Outputs | None = None

    def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kwargs):
        assert self.cell is not None
        self.cell.display(data, metadata)


def _run(path, built=None) -> dict:
    """Execute the notebook's code cells in order in a clean IPython namespace; return
    its `checks` dict: the values the notebook reports, which the test asserts on (data,
    not printed text). With `built`, the notebook with its outputs is written there."""
    nb = nbformat.read(path, as_version=4)
    shell = InteractiveShell.instance()
    shell.reset(new_session=True)
    publisher, saved_pub = _Publisher(shell=shell), shell.display_pub
    hook = shell.displayhook
    backend = matplotlib.get_backend()
    rc = contextlib.ExitStack()
    rc.enter_context(matplotlib.rc_context())  # the inline backend's settings stay in this notebook
    matplotlib.use("module://matplotlib_inline.backend_inline")  # plt.show() displays, as in Jupyter
    select_figure_formats(shell, {"png"})
    shell.display_pub = publisher
    plt.close("all")  # figures another test left open are not this notebook's
    count = 0
    try:
        for k, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            count += 1
            out = _Outputs()
            publisher.cell = out
            n = count
            # the value of the cell's last expression: an execute_result, as a kernel records it
            hook.write_output_prompt = lambda: None
            hook.quiet = lambda src=cell.source: hook.semicolon_at_end_of_expression(src)  # a trailing ';' hides it
            hook.write_format_data = lambda data, md=None, out=out, n=n: out.items.append(
                nbformat.v4.new_output("execute_result", data=out.bundle(data), metadata=md or {}, execution_count=n)
            )
            with contextlib.redirect_stdout(_Stream(out, "stdout")), contextlib.redirect_stderr(_Stream(out, "stderr")):
                result = shell.run_cell(cell.source, store_history=False)
                for num in plt.get_fignums():  # figures left open: shown at the cell's end, then closed
                    shell.display_pub.publish(shell.display_formatter.format(plt.figure(num))[0])
                plt.close("all")
            if not result.success:
                err = result.error_before_exec or result.error_in_exec
                printed = "".join(o.get("text", "") for o in out.items)
                raise AssertionError(f"{path.name}, cell {k}: {type(err).__name__}: {err}\n{printed[-3000:]}")
            cell.outputs = out.items
            cell.execution_count = n
        checks = dict(shell.user_ns.get("checks", {}))
    finally:
        for name in ("write_output_prompt", "write_format_data", "quiet"):
            hook.__dict__.pop(name, None)
        shell.display_pub = saved_pub
        plt.close("all")
        matplotlib.use(backend)
        rc.close()
        shell.reset(new_session=True)
    if built is not None:
        nb.metadata[executed.SOURCE_KEY] = executed.source_hash(path)
        nbformat.validate(nb)
        built.parent.mkdir(parents=True, exist_ok=True)
        tmp = built.with_suffix(f".{os.getpid()}.tmp")
        nbformat.write(nb, tmp)
        tmp.replace(built)
    return checks


@pytest.mark.parametrize(
    "path",
    [pytest.param(p, marks=pytest.mark.xdist_group(GROUP[p.name[:2]])) for p in NOTEBOOKS],
    ids=[p.name for p in NOTEBOOKS],
)
def test_notebook_runs(path, monkeypatch, tmp_path):
    # small sizes; nothing else differs from a reader's run: this run is the one the site shows
    monkeypatch.setenv("DIFFMECH_SMALL", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("DIFFMECH_RESULTS", str(path.parent.parent / "benchmarks" / "results"))
    monkeypatch.setenv("DIFFMECH_CACHE", str(tmp_path / "cache"))  # the synthesis atlas, built here, not in ~/.cache
    monkeypatch.setenv("DIFFMECH_TEST_DATA", str(path.parent.parent / "tests" / "data"))  # Cassie's SDF
    monkeypatch.chdir(tmp_path)
    built = executed.BUILT / path.name
    built.unlink(missing_ok=True)  # a notebook that fails leaves nothing for the site to render
    c = _run(path, built)
    if path.name.startswith("13_"):
        assert c["crank_turn_error"] <= 1e-12
        assert "motion_limit" in c["limit_status"] and c["curves"][0] == 180 and 1 < c["curves"][1] < 180
        assert c["singular_kinds"] == ("output", "output")
        assert c["energy_error"] <= 1e-6 and c["loop_gap"] <= 1e-10
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
        assert c["any_order_vs_in_order"] <= 1e-12  # inputs out of order: the in-order rows
        assert c["further_topology_compiled"] == 0 and c["further_topology_rigid"] <= 1e-12  # one program a class
        assert c["other_length_compiled"] <= 1 and c["other_length_same_rows"]  # one program a length class
    if path.name.startswith(("04_", "05_")):
        assert c["converged"] is True and c["residual"] <= 1e-10
        assert 0.8 < c["order"] < 1.2  # Euler: first order in Δt
        assert c["momentum_vs_ne"] <= 1e-8
    if path.name.startswith("04_"):
        assert c["ls_vs_ift_rates"] <= 1e-10
    if path.name.startswith("05_"):
        assert c["dof"] == 2 and c["null_dim"] == 2
    if path.name.startswith("10_"):
        assert c["rssr_residual"] <= 1e-10 and c["bennett_relation"] <= 1e-10
        assert c["bennett_j3_closed"] is True and c["bennett_j3_relation"] <= 1e-10  # driven by a moving joint
        assert "over-constrained and rigid" in c["rigid_error"]
        assert c["several_inputs_closed"] is True
        assert c["rscr_residual"] <= 1e-10 and c["rscr_axial"] <= 1e-12  # a C joint: no axial force or moment
        assert c["five_bar_energy_error"] <= 1e-8
        assert c["toe_gradient_vs_fd"] < 1e-6
    if path.name.startswith("11_"):
        assert c["cassie_converged"] is True and c["cassie_residual"] <= 1e-12 and c["tarsus_moved"] > 0.01
        assert c["mjcf_gap_at_qpos0"] <= 1e-14 and c["mujoco_vs_diffmech"] <= 1e-6  # MuJoCo's stiff model follows
        assert c["dxf_path_vs_motion"] <= 1e-12
    if path.name.startswith("07_"):
        from test_synthesis import _poses, check_five_pose_motion_generation

        r, poses = c["motion"]
        np.testing.assert_allclose(poses, _poses(np.linspace(0.3, 2.6, 5)), rtol=0, atol=1e-12)  # the test's poses
        check_five_pose_motion_generation(r, poses)
        assert c["five_point_objective"] < 1.28e-6  # below the best published value
        assert c["freudenstein_diff"] <= 1e-8  # Freudenstein's three-point solution
        assert c["ten_targets_compiled"] == 0 and c["ten_targets_error"] <= 1e-10  # padded to the class of 12
        assert c["objects_same_design"] is True  # synthesize(Path(...)) is path_generation's long form
        assert c["free_timing_error"] <= 1e-10  # the default search finds the shuffled targets' four-bar
        # a Stephenson III through points of a Stephenson III's curve (measured 8.6e-16 with
        # the polish's geodesic acceleration; 3.9e-6 with straight steps, creeping along a
        # long valley)
        assert c["six_bar_error"] <= 1e-10
    if path.name.startswith("09_"):
        assert c["torque_vs_lagrange"] <= 1e-9  # Newton–Euler against Lagrange's reduced equation
        assert c["energy_error"] <= 1e-8 and c["closure"] <= 1e-13
        assert c["gradient_vs_fd"] <= 1e-5
        assert c["peak_after"] < c["peak_before"]  # the design step lowered the peak load
        assert c["ss5_energy_error"] <= 1e-9  # the spatial 5-SS of rods
        assert c["ss5_leg_off_axis"] <= 1e-10  # massless legs are two-force members
        # drive laws as data: new numbers compile nothing, the motion follows the torque
        assert c["drive_compiled_again"] == [0, 0] and c["own_law_compiled_again"] == 0
        assert c["drive_energy_error"] <= 1e-8 and c["drive_order"] is True
        assert c["own_law_vs_bundled"] <= 1e-12  # a user's module of the same law: the same motion
        # loads across joints: the balance holds with the friction's share; more friction, more lost
        assert c["joint_loads_energy_error"] <= 1e-7
        lost = c["joint_loads_dissipated"]
        assert lost[0] == 0.0 and 0 < lost[1] < lost[2], lost
        # a cam: the law back from its profile, the torque from the power, contact lost only at speed
        assert c["cam_lift_error"] <= 1e-12 and c["cam_torque_vs_power"] <= 1e-12
        assert c["cam_lost"] == (False, True)
        # gears: a planetary train's arm against Willis' formula, its torque against its inertia
        assert c["gear_willis_error"] <= 1e-12 and c["gear_torque_error"] <= 1e-12
    if path.name.startswith("08_"):
        assert c["same_mask_sweep"] is True and c["same_mask_shard"] is True
        assert c["q_vs_ref"] <= 1e-13 and c["shard_dq"] <= 1e-13
        assert c["seed_vs_closed_form"] <= 1e-12
        # vmap_chunked = vmap, to round-off: two compiled programs of unit attitude vectors may round a
        # few ulps apart (1.5e-15 measured after an unrelated change to the core's program)
        assert c["chunked_same_mask"] is True and c["chunked_dq"] <= 1e-14
        assert "throughput_ratio" in c  # the benchmark results were read
