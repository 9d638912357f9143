"""``train.py --sweep``: a 2 x 2 grid of Tune trials of the train.py training code completes and writes its results;
a trial whose worker is killed mid-run is restarted and resumes from its checkpoint."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from tests.ray.conftest import RAY_MISSING

pytest.importorskip("ray", reason=RAY_MISSING)

TIMESTEPS = 2048
SWEEP = {
    "name": "test-grid", "search": "grid", "timesteps": TIMESTEPS, "checkpoint_every": 128, "eval_episodes": 2,
    "max_failures": 2, "cpus_per_trial": 1,
    "space": {"env": "joulegym/ETF-v0", "algo": "ppo", "seed": [0, 1],
              "hyperparams": {"learning_rate": [3.0e-4, 1.0e-3], "n_steps": 128, "batch_size": 64, "n_epochs": 2}},
}


def _kill_first_checkpointed_trial(out: Path, stop: threading.Event, killed: list[dict]) -> None:
    """SIGKILL the worker of the first trial that has saved a checkpoint and has not finished."""
    while not stop.is_set() and not killed:
        for meta in sorted(out.glob("trials/*/run/checkpoints/latest.json")):
            trial = meta.parents[2]
            try:
                steps = json.loads(meta.read_text())["num_timesteps"]
                attempts = json.loads((trial / "attempts.json").read_text())
                complete = json.loads((trial / "run" / "config.json").read_text()).get("complete")
            except (OSError, ValueError, KeyError):
                continue  # a file mid-write
            if 0 < steps < TIMESTEPS - 256 and not complete and len(attempts) == 1:
                os.kill(attempts[0]["pid"], signal.SIGKILL)
                killed.append({"trial": trial.name, "pid": attempts[0]["pid"], "steps": steps})
                return
        time.sleep(0.02)


def _run_sweep_killing_one_trial(base: Path):
    from joulegym.integrations.sweeps import run_sweep
    from joulegym.training import sweep_score, train

    path = base / "sweep.yml"
    path.write_text(yaml.safe_dump(SWEEP))
    out = base / "out"
    stop, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_first_checkpointed_trial, args=(out, stop, killed), daemon=True)
    killer.start()
    try:
        best = run_sweep(path, train_fn=train, score_fn=sweep_score, out=out)
    finally:
        stop.set()
        killer.join(timeout=10)
    return out, best, killed


def test_a_2x2_sweep_completes_resumes_a_killed_trial_and_restores(local_ray, tmp_path):
    """One sweep (so that ``pytest -n auto`` never runs it twice, on two workers): the 2 x 2 grid completes and
    writes its results; the trial whose worker the test kills resumes from its checkpoint; ``--resume`` restores
    the finished experiment without training again."""
    sweep = _run_sweep_killing_one_trial(tmp_path)
    _check_the_2x2_sweep_completes_and_writes_its_results(sweep)
    _check_a_killed_trial_resumes_from_its_checkpoint(sweep)
    _check_resume_restores_the_tune_experiment_and_keeps_finished_trials(sweep)


def _check_the_2x2_sweep_completes_and_writes_its_results(sweep):
    out, best, _ = sweep
    results = pd.read_csv(out / "results.csv")
    assert len(results) == 4 and (results["status"] == "ok").all()
    assert sorted(zip(results["seed"], results["hp.learning_rate"])) == [(0, 3e-4), (0, 1e-3), (1, 3e-4), (1, 1e-3)]
    assert (results["timesteps"] == TIMESTEPS).all() and results["eval_return_mean"].notna().all()
    for run_dir in results["run_dir"]:  # each trial is a complete train.py run
        config = json.loads((Path(run_dir) / "config.json").read_text())
        assert config["complete"] and config["num_timesteps"] == TIMESTEPS
        assert (Path(run_dir) / "agent" / "weights.pt").is_file()
    written = json.loads((out / "best.json").read_text())
    assert written == json.loads(json.dumps(best, default=str))
    assert written["score"] == results["eval_return_mean"].max()
    assert written["command"].startswith("python train.py --env joulegym/ETF-v0 --algo ppo")
    hyperparams = yaml.safe_load((Path(written["run_dir"]).parent / "hyperparams.yml").read_text())
    assert hyperparams == {"joulegym/ETF-v0": written["hyperparams"]}


def _check_a_killed_trial_resumes_from_its_checkpoint(sweep):
    out, _, killed = sweep
    assert killed, "no trial was killed (each finished before the test saw a checkpoint)"
    trial = out / "trials" / killed[0]["trial"]
    attempts = json.loads((trial / "attempts.json").read_text())
    assert len(attempts) == 2 and attempts[0]["pid"] == killed[0]["pid"] != attempts[1]["pid"]
    # the restart continued the train.py run from the latest checkpoint, at or after the one the test saw
    assert killed[0]["steps"] <= attempts[1]["resumed_from_timesteps"] < TIMESTEPS
    config = json.loads((trial / "run" / "config.json").read_text())
    assert config["complete"] and config["num_timesteps"] == TIMESTEPS
    row = pd.read_csv(out / "results.csv").set_index("trial_id").loc[killed[0]["trial"]]
    assert row["status"] == "ok" and row["resumed_from_timesteps"] == attempts[1]["resumed_from_timesteps"]


def _check_resume_restores_the_tune_experiment_and_keeps_finished_trials(sweep):
    """``train.py --sweep ... --resume`` (``Tuner.restore``) on the finished sweep reruns no training: every trial is
    kept with its score, and each trial's run is still the one complete train.py run."""
    from joulegym.integrations.sweeps import run_sweep
    from joulegym.training import sweep_score, train

    out, best, _ = sweep
    before = pd.read_csv(out / "results.csv").set_index("trial_id").sort_index()
    steps = {t: json.loads((out / "trials" / t / "run" / "config.json").read_text())["num_timesteps"]
             for t in before.index}
    again = run_sweep(out / ".." / "sweep.yml", train_fn=train, score_fn=sweep_score, out=out, resume=True)
    after = pd.read_csv(out / "results.csv").set_index("trial_id").sort_index()
    assert list(after.index) == list(before.index) and (after["status"] == "ok").all()
    assert np.allclose(after["eval_return_mean"], before["eval_return_mean"])
    assert again["trial_id"] in set(before.index) and again["score"] == best["score"]
    assert steps == {t: json.loads((out / "trials" / t / "run" / "config.json").read_text())["num_timesteps"]
                     for t in after.index}


def test_resume_needs_a_sweep_and_a_fresh_sweep_needs_an_empty_out(tmp_path):
    from joulegym.integrations.sweeps import run_sweep
    from joulegym.training import sweep_score, train

    path = tmp_path / "sweep.yml"
    path.write_text(yaml.safe_dump(SWEEP))
    with pytest.raises(ValueError, match="holds no sweep named 'test-grid'"):
        run_sweep(path, train_fn=train, score_fn=sweep_score, out=tmp_path / "none", resume=True)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("")
    with pytest.raises(ValueError, match="is not empty: pass --resume"):
        run_sweep(path, train_fn=train, score_fn=sweep_score, out=tmp_path / "busy")
