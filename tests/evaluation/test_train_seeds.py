"""Training and evaluation seeds never overlap: ``train.py`` refuses the benchmark's held-out
seeds, and plain ``evaluate.py --env`` scores on the same held-out seeds as ``evaluate.py --suite``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from joulegym.core.benchmark import DEFAULT_EVAL_SEEDS, TRAINING_SEED_LIMIT
from joulegym.evaluation.runner import EVAL_SEED_BASE, eval_seeds

ROOT = Path(__file__).resolve().parents[2]


def _train(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "train.py", "--env", "joulegym/ETFPhi-tx2-fig5-v0", "--timesteps", "8",
                           "--no-progress-bar", "--no-tensorboard", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("seed", [TRAINING_SEED_LIMIT, 1_000_000, -1])
def test_train_refuses_held_out_and_negative_seeds(tmp_path, seed):
    proc = _train("--seed", str(seed), "--out", str(tmp_path / "run"))
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in proc.stderr and lines[-1].startswith("train.py: error: --seed must be in [0, 10000)")
    assert f"got {seed}" in lines[-1] and "held out for evaluation" in lines[-1]
    assert not (tmp_path / "run").exists()  # refused before anything is written


def test_train_accepts_the_largest_training_seed(tmp_path):
    pytest.importorskip("stable_baselines3", reason="needs the train extra")
    proc = _train("--seed", str(TRAINING_SEED_LIMIT - 1), "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "run" / "agent" / "agent.json").is_file()


def test_plain_evaluation_uses_the_benchmark_held_out_seeds():
    assert EVAL_SEED_BASE == TRAINING_SEED_LIMIT
    assert tuple(eval_seeds(len(DEFAULT_EVAL_SEEDS))) == DEFAULT_EVAL_SEEDS
