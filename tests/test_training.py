"""train.py + evaluate.py together: a short PPO run is saved, reloaded and scored (issue #2 acceptance)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from joulegym.evaluation.cli import main as evaluate_main
from joulegym.training import main as train_main

pytest.importorskip("stable_baselines3")


@pytest.mark.slow
def test_short_ppo_run_trains_and_is_evaluated(tmp_path):
    run = tmp_path / "run"
    assert train_main(["--env", "joulegym/ETF-v0", "--timesteps", "2048", "--seed", "3", "--out", str(run),
                       "--no-progress-bar"]) == 0
    config = json.loads((run / "config.json").read_text())
    assert config["algo"] == "ppo" and config["timesteps"] == 2048 and config["seed"] == 3
    assert (run / "model.zip").stat().st_size > 0 and any((run / "tb").iterdir())
    out = tmp_path / "ev"
    assert evaluate_main(["--env", "joulegym/ETF-v0", "--policies", f"etf,ppo:{run / 'model.zip'}",
                          "--seeds", "2", "--out", str(out), "--no-plots"]) == 0
    episodes = pd.read_csv(out / "episodes.csv")
    agent = episodes[episodes["policy"] == "ppo"]
    assert len(agent) == 2 and (agent["kind"] == "agent").all()
    assert agent["return"].notna().all() and (agent["length"] == 60).all()


@pytest.mark.slow
def test_maskable_ppo_on_the_phi_knob(tmp_path):
    run = tmp_path / "mppo"
    assert train_main(["--env", "joulegym/ETFPhi-v0", "--algo", "maskable_ppo", "--timesteps", "512",
                       "--out", str(run), "--no-progress-bar", "--no-tensorboard"]) == 0
    assert evaluate_main(["--env", "joulegym/ETFPhi-v0", "--policies", f"maskable_ppo:{run}", "--seeds", "1",
                          "--out", str(tmp_path / "ev"), "--no-plots"]) == 0


def test_train_rejects_bad_arguments(tmp_path, capsys):
    assert train_main(["--env", "joulegym/ETFPhi-v0", "--algo", "sac", "--out", str(tmp_path)]) == 2
    assert "does not support Discrete" in capsys.readouterr().err
    assert train_main(["--env", "joulegym/ETF-v0", "--env-kwargs", '{"nope": 1}', "--out", str(tmp_path)]) == 2
    assert "nope" in capsys.readouterr().err
    assert train_main(["--env", "joulegym/ETF-v0", "--timesteps", "0", "--out", str(tmp_path)]) == 2
