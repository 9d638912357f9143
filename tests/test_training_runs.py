"""train.py runs are never lost or mixed: checkpoints, SIGINT/SIGTERM/SIGKILL and --resume, refusing a used --out,
the weights-only agent format, and one-line errors for bad arguments and hyperparameter files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from joulegym.training import main as train_main

pytest.importorskip("stable_baselines3")

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--env", "joulegym/ETFPhi-tx2-fig5-v0", "--algo", "maskable_ppo", "--no-progress-bar", "--no-tensorboard"]


RESUME_TOTAL = 6_000  # many checkpoints (every 256 steps) before the total, a short resume on a loaded machine


def _start(out: Path, timesteps: int | None, *extra: str) -> subprocess.Popen:
    total = [] if timesteps is None else ["--timesteps", str(timesteps)]
    cmd = [sys.executable, str(ROOT / "train.py"), *FAST, *total, "--out", str(out), "--checkpoint-every", "256",
           *extra]
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_checkpoint(out: Path, proc: subprocess.Popen, timeout_s: float = 120.0) -> None:
    meta = out / "checkpoints" / "latest.json"
    deadline = time.monotonic() + timeout_s
    while not meta.is_file():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no checkpoint was written"
        time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_killed_run_resumes_to_its_total_timesteps(tmp_path, sig):
    out = tmp_path / "run"
    proc = _start(out, RESUME_TOTAL)
    _wait_for_checkpoint(out, proc)
    os.kill(proc.pid, sig)
    _, err = proc.communicate(timeout=120)
    if sig == signal.SIGTERM:  # a clean stop: a fresh checkpoint and how to go on
        assert proc.returncode == 128 + signal.SIGTERM and "--resume" in err
    assert not json.loads((out / "config.json").read_text())["complete"]
    assert not (out / "model.zip").exists()
    saved = json.loads((out / "checkpoints" / "latest.json").read_text())["num_timesteps"]
    assert 0 < saved < RESUME_TOTAL
    contradicting = _start(out, 999, "--resume")  # the total comes from the run's config.json
    assert contradicting.wait(timeout=120) == 2
    assert f"contradicts the run's timesteps={RESUME_TOTAL}" in contradicting.stderr.read()
    resumed = _start(out, None, "--resume")
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    config = json.loads((out / "config.json").read_text())
    assert config["complete"] and config["timesteps"] == RESUME_TOTAL and config["num_timesteps"] >= RESUME_TOTAL
    assert (out / "model.zip").is_file() and (out / "agent" / "weights.pt").is_file()
    again = _start(out, None, "--resume")
    assert again.wait(timeout=120) == 2 and "complete" in again.stderr.read()


def _step_counter(stop_at: int | None = None):
    """A stateful SB3 callback: counts the steps it saw, stops the run with SIGTERM at ``stop_at``."""
    from stable_baselines3.common.callbacks import BaseCallback

    class StepCounter(BaseCallback):
        checkpoint_key = "step-counter"

        def __init__(self) -> None:
            super().__init__()
            self.steps, self.restored = 0, "never"

        def checkpoint_state(self) -> dict:
            return {"steps": self.steps}

        def restore_checkpoint_state(self, state) -> None:
            self.restored = state
            self.steps = state["steps"] if state else 0

        def _on_step(self) -> bool:
            self.steps += self.training_env.num_envs
            if stop_at is not None and self.steps == stop_at:
                os.kill(os.getpid(), signal.SIGTERM)
            return True

    return StepCounter()


def test_a_callbacks_state_is_kept_with_the_checkpoint(tmp_path):
    """A callback that keeps state (the protocol's CPU budget and validation curve) gets it back on --resume: the
    state saved with the checkpoint, so the resumed count goes on from the checkpoint's timesteps."""
    from joulegym.training import TrainingInterrupted, train

    out = tmp_path / "run"
    first = _step_counter(stop_at=300)
    with pytest.raises(TrainingInterrupted):
        train("joulegym/ETFPhi-tx2-fig5-v0", "ppo", 1024, 0, out, 1, progress_bar=False, tensorboard=False,
              checkpoint_every=128, callbacks=(first,))
    meta = json.loads((out / "checkpoints" / "latest.json").read_text())
    assert meta["callback_state"] == {"step-counter": {"steps": meta["num_timesteps"]}}
    assert meta["num_timesteps"] == first.steps  # the stop saved a fresh checkpoint with the callback's state
    resumed = _step_counter()
    train(out=out, resume=True, progress_bar=False, tensorboard=False, callbacks=(resumed,))
    assert resumed.restored == {"steps": first.steps}
    assert resumed.steps == json.loads((out / "config.json").read_text())["num_timesteps"] >= 1024


def test_a_used_out_is_refused_unless_resume_or_overwrite(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("someone else's run")
    assert train_main([*FAST, "--timesteps", "64", "--out", str(out)]) == 2
    assert "not empty" in capsys.readouterr().err and (out / "notes.txt").exists()
    assert train_main([*FAST, "--timesteps", "64", "--out", str(out), "--resume"]) == 2
    assert "no config.json" in capsys.readouterr().err
    assert train_main([*FAST, "--timesteps", "64", "--out", str(out), "--overwrite"]) == 2  # not train.py's
    assert "--overwrite" in capsys.readouterr().err and (out / "notes.txt").exists()
    run = tmp_path / "run2"
    assert train_main([*FAST, "--timesteps", "64", "--out", str(run)]) == 0
    (run / "notes.txt").write_text("the user's, beside the run")
    assert train_main([*FAST, "--timesteps", "64", "--out", str(run), "--overwrite"]) == 0
    assert (run / "notes.txt").read_text() == "the user's, beside the run"  # only the run's own files went
    assert json.loads((run / "config.json").read_text())["complete"]


def test_weights_only_agent_acts_like_the_model(tmp_path):
    import gymnasium as gym

    from joulegym.agents import SB3Policy
    from joulegym.core.rollout import rollout

    out = tmp_path / "run"
    assert train_main([*FAST, "--timesteps", "256", "--out", str(out)]) == 0
    meta = json.loads((out / "agent" / "agent.json").read_text())
    assert meta["algo"] == "maskable_ppo" and meta["format"] == 1
    env = gym.make("joulegym/ETFPhi-tx2-fig5-v0")
    with pytest.warns(UserWarning, match="unpickling"):
        pickled = SB3Policy.load(out / "model.zip", allow_pickle=True)
    safe = SB3Policy.load(out)
    assert safe._weights_dir == out / "agent"
    a, b = rollout(env, safe, seed=5, record=True), rollout(env, pickled, seed=5, record=True)
    assert a.total_return == b.total_return and a.length == b.length
    with pytest.raises(ValueError, match=r"the agent (acts in|was trained on observations)"):
        SB3Policy.load(out / "agent").reset(gym.make("joulegym/QinCluster-v0"))  # Discrete too, other spaces
    with pytest.raises(ValueError, match=r"algo='maskable_ppo' does not support Box actions"):
        SB3Policy.load(out / "agent").reset(gym.make("joulegym/ETF-v0"))


@pytest.mark.parametrize(("args", "yaml_text", "message"), [
    (["--seed", "-1"], None, "--seed must be in [0, 10000)"),
    ([], "default: [unclosed", "not valid YAML"),
    ([], "default: 5", "must map hyperparameter names"),
    ([], "default:\n  n_steps: -5\n", "rejected"),
    (["--checkpoint-every", "0"], None, "--checkpoint-every"),
])
def test_bad_arguments_give_one_line_errors(tmp_path, capsys, args, yaml_text, message):
    if yaml_text is not None:
        (tmp_path / "hp.yml").write_text(yaml_text)
        args = [*args, "--hyperparams", str(tmp_path / "hp.yml")]
    assert train_main([*FAST, "--timesteps", "64", "--out", str(tmp_path / "run"), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_out_that_is_a_file_or_unwritable(tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("x")
    assert train_main([*FAST, "--timesteps", "64", "--out", str(target)]) == 2
    assert "is a file" in capsys.readouterr().err
    assert train_main([*FAST, "--timesteps", "64", "--out", "/proc/joulegym-run"]) == 2  # not writable, even by root
    err = capsys.readouterr().err
    assert "not writable" in err and err.count("\n") == 1


def _monitor_rows(out: Path) -> list[str]:
    return (out / "monitor" / "0.monitor.csv").read_text().splitlines()


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_resume_keeps_the_record_and_the_whole_learning_curve(tmp_path, sig):
    """--resume keeps the Monitor rows up to the checkpoint (cut back to it after a SIGKILL: the steps after it are
    played again), appends the resumed episodes with the clock going on, and the learning curve covers the whole
    run (0 to the total), not only the resumed part."""
    from joulegym.agents.callbacks import read_monitor
    from joulegym.training import _checkpoint_timesteps

    total = 3000
    out = tmp_path / "run"
    proc = _start(out, total)
    meta = out / "checkpoints" / "latest.json"
    deadline = time.monotonic() + 120
    while not meta.is_file() or json.loads(meta.read_text())["num_timesteps"] < 1000:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no checkpoint past 1000 steps"
        time.sleep(0.1)
    os.kill(proc.pid, sig)
    proc.communicate(timeout=120)
    history = json.loads((out / "checkpoints" / "latest_monitor.json").read_text())
    checkpoint_rows = history[str(_checkpoint_timesteps(out / "checkpoints" / "latest.zip"))]["0.monitor.csv"]
    kept = _monitor_rows(out)[: 2 + checkpoint_rows]
    assert checkpoint_rows >= 10  # episodes of 60 steps: the checkpoint has seen some
    resumed = subprocess.run([sys.executable, str(ROOT / "train.py"), "--out", str(out), "--resume",
                              "--no-progress-bar", "--no-tensorboard"], cwd=ROOT, capture_output=True, text=True,
                             timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    rows = _monitor_rows(out)
    assert rows[: len(kept)] == kept and len(rows) > len(kept), (kept[-3:], rows[:len(kept) + 3])  # record kept
    episodes = read_monitor(out / "monitor")
    assert (episodes["t"].diff().dropna() >= 0).all()  # the resumed rows' clock goes on from the kept ones
    steps = int(episodes["l"].sum())
    num_timesteps = json.loads((out / "config.json").read_text())["num_timesteps"]
    assert total - 2 * 60 <= steps <= num_timesteps, (steps, num_timesteps)  # the whole run, no step twice
    assert episodes["timesteps"].iloc[-1] == steps and (out / "learning_curve.png").is_file()
