import json

from diffmech._cli import main


def test_demo_writes_plots_and_round_off_summary(tmp_path, capsys):
    assert main(["demo", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "crank-rocker" in out
    for name in ("fig3_attitudes.png", "fig4_track.png", "demo_summary.json"):
        assert (tmp_path / name).stat().st_size > 0
    summary = json.loads((tmp_path / "demo_summary.json").read_text())
    for h, row in summary["kinematics"].items():
        assert row["converged"] == row["steps"]
        assert row["max_norm_error"] <= 1e-15 and row["max_loop_closure_m"] <= 1e-15
