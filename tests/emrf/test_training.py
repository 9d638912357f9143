"""train.py + evaluate.py on EMRF ids (docs/families/emrf.md §8): an agent is trained, saved, reloaded and
ranked against the reference policies, and the (efficiency, soft-fairness) front is drawn."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from joulegym.evaluation.cli import main as evaluate_main
from joulegym.training import main as train_main

pytest.importorskip("stable_baselines3")


@pytest.mark.slow
def test_ppo_trains_on_emrf_and_is_evaluated_with_the_front(tmp_path):
    run = tmp_path / "run"
    assert train_main(["--env", "joulegym/EMRF-v0", "--timesteps", "1024", "--seed", "1", "--out", str(run),
                       "--no-progress-bar", "--no-tensorboard"]) == 0
    config = json.loads((run / "config.json").read_text())
    assert config["algo"] == "ppo" and config["env_id"] == "joulegym/EMRF-v0"
    out = tmp_path / "ev"
    assert evaluate_main(["--env", "joulegym/EMRF-v0", "--policies", f"emrf,drf,wfq,ppo:{run}",
                          "--seeds", "2", "--out", str(out)]) == 0
    episodes = pd.read_csv(out / "episodes.csv")
    agent = episodes[episodes["policy"] == "ppo"]
    assert len(agent) == 2 and (agent["kind"] == "agent").all() and agent["return"].notna().all()
    front = pd.read_csv(out / "emrf_front_EMRF.csv")
    assert len(front) == 11 and front["eta"].tolist() == pytest.approx([k / 10 for k in range(11)])
    assert (out / "emrf_front_EMRF.png").stat().st_size > 10_000
    board = (out / "leaderboard.md").read_text()
    assert "ppo" in board and "emrf" in board


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "algo"), [("EMRFResidual", "sac"), ("EMRFKnob", "a2c"),
                                            ("EMRFKnobDiscrete", "dqn")])
def test_every_action_mode_trains_and_evaluates(tmp_path, kind, algo):
    env_id = f"joulegym/{kind}-apu-m2-v0"
    run = tmp_path / algo
    assert train_main(["--env", env_id, "--algo", algo, "--timesteps", "300", "--out", str(run),
                       "--no-progress-bar", "--no-tensorboard"]) == 0
    out = tmp_path / "ev"
    assert evaluate_main(["--env", env_id, "--policies", f"emrf,{algo}:{run}", "--seeds", "1",
                          "--out", str(out), "--no-plots"]) == 0
    episodes = pd.read_csv(out / "episodes.csv")
    assert set(episodes["policy"]) == {"emrf", algo, "random"}
