"""``train.py --eval-freq N``: evaluation on the validation seeds 9000.. during training; the best agent is kept as a
weights-only agent with its score, and the score is what that agent earns on those seeds."""

from __future__ import annotations

import json

import numpy as np
import pytest

from joulegym.training import main as train_main

pytest.importorskip("sb3_contrib")

FAST = ["--env", "joulegym/ETFPhi-tx2-fig5-v0", "--algo", "maskable_ppo", "--no-progress-bar", "--no-tensorboard",
        "--env-kwargs", '{"horizon": 8}']


@pytest.mark.slow
def test_eval_freq_keeps_the_best_agent_and_its_validation_score(tmp_path):
    from joulegym.agents import SB3Policy
    from joulegym.agents.validation import validation_returns

    out = tmp_path / "run"
    assert train_main([*FAST, "--timesteps", "1024", "--eval-freq", "256", "--eval-episodes", "3",
                       "--out", str(out)]) == 0
    log = (out / "best" / "evaluations.csv").read_text().splitlines()
    assert log[0] == "timesteps,mean_return,std_return" and len(log) - 1 == 1024 // 256  # 256, 512, 768, 1024
    means = [float(line.split(",")[1]) for line in log[1:]]
    score = json.loads((out / "best" / "score.json").read_text())
    assert score["seeds"] == [9000, 9001, 9002] and score["mean_return"] == max(means)
    assert score["num_timesteps"] == int(log[1 + int(np.argmax(means))].split(",")[0])
    agent = SB3Policy.load(out / "best" / "agent")  # weights-only, nothing unpickled
    import gymnasium as gym

    agent.reset(gym.make("joulegym/ETFPhi-tx2-fig5-v0", horizon=8))
    again = validation_returns(agent.model, "joulegym/ETFPhi-tx2-fig5-v0", {"horizon": 8}, score["seeds"])
    assert again == pytest.approx(score["returns"], rel=1e-6)


@pytest.mark.parametrize(("extra", "message"), [
    (["--eval-freq", "0"], "--eval-freq must be >= 1, got 0"),
    (["--eval-episodes", "3"], "--eval-episodes applies only with --eval-freq"),
    (["--eval-freq", "100", "--eval-episodes", "0"], "--eval-episodes must be in [1, 1000], got 0"),
    (["--eval-freq", "100", "--seed", "8999", "--n-envs", "2"], "must stay below 9000"),
])
def test_eval_freq_mistakes_are_one_line_errors(tmp_path, capsys, extra, message):
    assert train_main([*FAST, "--timesteps", "64", "--out", str(tmp_path / "run"), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "run").exists()  # refused before anything was written
