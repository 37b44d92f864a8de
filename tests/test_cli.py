import json

from diffmech._cli import main


def test_demo_writes_plots_and_round_off_summary(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--t1", "1.0"]) == 0
    out = capsys.readouterr().out
    assert "crank-rocker" in out
    for name in (
        "fig3_attitudes.png",
        "fig4_track.png",
        "fig5_crank_rocker_dynamics.png",
        "fig6_crank_rocker_track.png",
        "fig7_parallelogram_dynamics.png",
        "fig8_parallelogram_track.png",
        "demo_summary.json",
    ):
        assert (tmp_path / name).stat().st_size > 0
    summary = json.loads((tmp_path / "demo_summary.json").read_text())
    for h, row in summary["kinematics"].items():
        assert row["converged"] == row["steps"]
        assert row["max_norm_error"] <= 1e-15 and row["max_loop_closure_m"] <= 1e-15
    for name, row in summary["dynamics"].items():
        assert row["ok"] and row["max_closure_residual"] <= 1e-15 and row["energy_drift"] < 1e-7
    par = summary["dynamics"]["parallelogram"]
    assert par["max_qB_minus_e1"] <= 1e-16 and par["max_qA_minus_qD"] <= 1e-16
    assert par["theta_A_range"][0] < 0 < par["theta_A_range"][1]  # through the change point θA = 0
