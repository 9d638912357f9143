"""DREAM and Qin through train.py and evaluate.py (docs/families/dream.md and qin.md, "Leaderboard"): a MaskablePPO
agent trains on DREAM-v0 / QinCluster-v0, PPO on DREAMParams-v0 / QinNode-v0, and appears on the leaderboard beside
the reference policies. A few hundred steps each: this checks the plumbing, not what the agent learns."""

from __future__ import annotations

import pandas as pd
import pytest

from joulegym.evaluation.cli import main as evaluate_main
from joulegym.training import main as train_main

pytest.importorskip("sb3_contrib")

CASES = [
    ("joulegym/DREAM-tiny-v0", "maskable_ppo", "dream-full"),
    ("joulegym/DREAMParams-tiny-v0", "ppo", "adaptivity"),
    ("joulegym/QinCluster-tiny-v0", "maskable_ppo", "qin"),
    ("joulegym/QinNode-node-splash2-fft-v0", "ppo", "qin-node"),
]
SMALL_PPO = "default:\n  n_steps: 64\n  batch_size: 32\n  n_epochs: 1\n"


@pytest.mark.slow
@pytest.mark.parametrize(("env_id", "algo", "reference"), CASES)
def test_agent_trains_and_is_ranked_beside_the_reference_policies(tmp_path, env_id, algo, reference):
    run = tmp_path / "run"
    (tmp_path / "hp.yml").write_text(SMALL_PPO)
    assert train_main(["--env", env_id, "--algo", algo, "--timesteps", "128", "--seed", "0", "--out", str(run),
                       "--hyperparams", str(tmp_path / "hp.yml"), "--no-progress-bar", "--no-tensorboard"]) == 0
    out = tmp_path / "ev"
    assert evaluate_main(["--env", env_id, "--policies", f"{reference},random,{algo}:{run}", "--seeds", "2",
                          "--out", str(out), "--no-plots"]) == 0
    episodes = pd.read_csv(out / "episodes.csv")
    agent = episodes[episodes["kind"] == "agent"]
    assert len(agent) == 2 and agent["return"].notna().all()
    assert set(episodes["policy"]) >= {reference, "random"}
    board = (out / "leaderboard.md").read_text()
    assert reference in board and agent["policy"].iloc[0] in board
