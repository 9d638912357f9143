"""evaluate.py end to end on ETF: files, atomicity, errors, --reproduce."""

from __future__ import annotations

import pandas as pd
import pytest

from joulegym.evaluation.cli import main


def test_evaluate_writes_leaderboard_csv_and_plot(tmp_path, capsys):
    out = tmp_path / "ev"
    assert main(["--env", "joulegym/ETF-tx2-fig5-v0", "--policies", "etf,tf,ef", "--seeds", "2",
                 "--out", str(out)]) == 0
    episodes = pd.read_csv(out / "episodes.csv")
    assert sorted(episodes["policy"].unique()) == ["ef", "etf", "random", "tf"]  # random added for the score
    assert len(episodes) == 8 and {"return", "system_fairness", "time_fairness"} <= set(episodes.columns)
    assert (out / "episode.png").stat().st_size > 1000
    assert "| etf |" in (out / "leaderboard.md").read_text()
    assert not list(out.glob(".*tmp*"))  # no temporary file left behind
    assert "score" in capsys.readouterr().out


@pytest.mark.parametrize(("args", "message"), [
    (["--env", "joulegym/Nope-v0"], "not registered"),
    (["--policies", "nope"], "unknown"),
    (["--env-kwargs", "[1]"], "JSON object"),
    (["--env-kwargs", '{"phi": 2}'], "phi"),
    (["--reproduce", "nofamily"], "is unknown; families"),
])
def test_bad_arguments_exit_2_with_a_message(tmp_path, capsys, args, message):
    seeds = [] if "--reproduce" in args else ["--seeds", "1"]
    assert main([*args, "--out", str(tmp_path / "x"), *seeds]) == 2
    assert message in capsys.readouterr().err


def test_reproduce_etf_quick(tmp_path):
    assert main(["--reproduce", "etf", "--quick", "--out", str(tmp_path)]) == 0
    fig10 = pd.read_csv(tmp_path / "fig10.csv")
    assert fig10.loc[0, "A2/A1"] == pytest.approx(1.30, abs=0.02)  # Fig. 10 ratio, tier A (docs/families/etf.md)
    fig5 = pd.read_csv(tmp_path / "fig5.csv").set_index("policy")
    assert fig5.loc["TF", "F_T"] == pytest.approx(1.0) and fig5.loc["EF", "F_E"] > 0.99
    assert (tmp_path / "fig7_fig8.png").exists()


def test_out_problems_are_reported_before_any_work(tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("x")
    assert main(["--out", str(target), "--seeds", "1"]) == 2
    assert "is a file" in capsys.readouterr().err
    assert main(["--out", "/proc/joulegym-run", "--seeds", "1"]) == 2  # not writable, even by root
    assert "not writable" in capsys.readouterr().err
    assert main(["--env-kwargs", '{"T_units": 1e400}', "--out", str(tmp_path / "y"), "--seeds", "1"]) == 2
    err = capsys.readouterr().err
    assert "T_units" in err and err.count("\n") == 1


def test_a_new_run_replaces_the_previous_files_as_a_whole(tmp_path):
    out = tmp_path / "ev"
    out.mkdir()
    assert main(["--policies", "etf,random", "--seeds", "1", "--out", str(out)]) == 0
    assert (out / "episode.png").is_file()
    assert main(["--policies", "etf,random", "--seeds", "1", "--out", str(out), "--no-plots"]) == 0
    assert sorted(p.name for p in out.iterdir()) == [".joulegym-run.json", "episodes.csv", "leaderboard.md",
                                                     "summary.csv"]  # the earlier run's episode.png went with it
    assert not list(tmp_path.glob(".ev.*"))  # no temporary directory left behind
