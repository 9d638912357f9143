"""train.py's mistakes (docs/robustness.md): --resume with contradicting flags, a damaged config.json, a checkpoint
this user's joulegym did not sign (never unpickled without --unsafe-unpickle-model-zip), --threads out of range."""

from __future__ import annotations

import json

import pytest

from joulegym.core.io import prepare_run_dir, sign_file, signed_by_this_user
from joulegym.training import main as train_main
from tests.agents.test_unsafe_files import crafted_zip

CONFIG = {"env_id": "joulegym/ETF-v0", "env_kwargs": {}, "algo": "ppo", "hyperparams": {}, "seed": 0,
          "timesteps": 64, "n_envs": 1, "complete": False}


@pytest.fixture(autouse=True)
def _own_key(tmp_path, monkeypatch):
    monkeypatch.setenv("JOULEGYM_RUN_KEY", str(tmp_path / "key"))


def _run(tmp_path, config=CONFIG):
    run = prepare_run_dir(tmp_path / "run", resume=False, overwrite=False)
    (run / "config.json").write_text(json.dumps(config) if not isinstance(config, str) else config)
    return run


def _error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


@pytest.mark.parametrize(("flags", "match"), [
    (["--env", "joulegym/EMRF-v0"], "--env 'joulegym/EMRF-v0' contradicts the run's env_id='joulegym/ETF-v0'"),
    (["--algo", "a2c"], "--algo 'a2c' contradicts the run's algo='ppo'"),
    (["--seed", "3"], "--seed 3 contradicts the run's seed=0"),
    (["--timesteps", "9"], "--timesteps 9 contradicts the run's timesteps=64"),
    (["--env-kwargs", '{"phi": 0.5}'], "--env-kwargs"),
])
def test_resume_refuses_flags_that_contradict_the_run(tmp_path, capsys, flags, match):
    run = _run(tmp_path)
    assert train_main(["--out", str(run), "--resume", *flags]) == 2
    assert match in _error(capsys)


@pytest.mark.parametrize(("config", "match"), [
    ("[1, 2]", "must hold a JSON object"),
    ({**CONFIG, "seed": None}, "seed must be a JSON int"),
    ({k: v for k, v in CONFIG.items() if k != "algo"}, "algo must be a JSON str"),
    ("{", "not valid JSON"),
])
def test_a_damaged_config_json_is_one_line(tmp_path, capsys, config, match):
    run = _run(tmp_path, config)
    assert train_main(["--out", str(run), "--resume"]) == 2
    assert match in _error(capsys)


def test_resume_never_unpickles_a_checkpoint_it_did_not_sign(tmp_path, capsys):
    run = _run(tmp_path)
    flag = tmp_path / "ran"
    zip_path = crafted_zip(run / "checkpoints" / "latest.zip", flag)
    (run / "checkpoints" / "latest.json").write_text(json.dumps({"num_timesteps": 32, "signatures": {
        "latest.zip": "0" * 64}}))
    assert train_main(["--out", str(run), "--resume"]) == 2
    err = _error(capsys)
    assert "--unsafe-unpickle-model-zip" in err and "latest.zip" in err and not flag.exists()
    assert not signed_by_this_user(zip_path, "0" * 64) and signed_by_this_user(zip_path, sign_file(zip_path))


def test_threads_must_be_in_range(tmp_path, capsys):
    assert train_main(["--threads", "-4", "--out", str(tmp_path / "r")]) == 2
    assert "--threads must be a whole number in [1," in _error(capsys) and not (tmp_path / "r").exists()
