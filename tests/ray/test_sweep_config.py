"""SWEEP.yaml is checked before Ray starts: each mistake is a ValueError naming the field.
These tests need no Ray."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from joulegym.integrations.sweeps import check_sweep, load_sweep

EXAMPLE = Path(__file__).resolve().parents[2] / "joulegym" / "agents" / "sweeps" / "etf-ppo-grid.yml"


def test_the_shipped_example_is_valid():
    sweep = load_sweep(EXAMPLE)
    assert sweep["search"] == "grid" and sweep["space"]["seed"] == [0, 1]


@pytest.mark.parametrize(("change", "message"), [
    ({"serach": "grid"}, "unknown keys ['serach']"),
    ({"search": "bayes"}, "search must be one of ['grid', 'random']"),
    ({"timesteps": 0}, "timesteps must be an integer >= 1"),
    ({"num_samples": 1.5}, "num_samples must be an integer >= 1"),
    ({"cpus_per_trial": 0}, "cpus_per_trial must be a number > 0"),
    ({"name": "a/b"}, "name must be a non-empty string"),
    ({"space": {"algo": "ppo"}}, "space.env is required"),
    ({"space": {"env": "joulegym/NoSuch-v0"}}, "space.env: 'joulegym/NoSuch-v0' is not a registered id"),
    ({"space": {"env": "joulegym/ETF-v0", "algo": ["ppo", "ddpg"]}}, "space.algo: 'ddpg' is not one of"),
    ({"space": {"env": "joulegym/ETF-v0", "seed": [0, 10_000]}}, "space.seed: 10000 must be an integer in [0, 10000)"),
    ({"space": {"env": "joulegym/ETF-v0", "hyperparams": {"learning_rate": {"loguniform": [0, 1]}}}},
     "space.hyperparams.learning_rate: loguniform needs low > 0"),
    ({"space": {"env": "joulegym/ETF-v0", "hyperparams": {"gamma": {"uniform": [0.99]}}}},
     "space.hyperparams.gamma: uniform needs [low, high]"),
    ({"space": {"env": "joulegym/ETF-v0", "hyperparams": {"n_steps": []}}}, "space.hyperparams.n_steps: an empty list"),
    ({"space": {"env": "joulegym/ETF-v0", "hyperparams": {"n_steps": {"grid": [1]}}}},
     "space.hyperparams.n_steps: a mapping must be one of"),
    ({"space": {"env": "joulegym/ETF-v0", "budget": 1}}, "unknown space keys ['budget']"),
])
def test_bad_sweeps_raise_naming_the_field(change, message):
    sweep = copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))
    sweep.update(change)
    with pytest.raises(ValueError) as err:
        check_sweep(sweep, origin="s.yml")
    assert message in str(err.value) and str(err.value).startswith("s.yml: ")


def test_missing_and_unparsable_files(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        load_sweep(tmp_path / "none.yml")
    (tmp_path / "bad.yml").write_text("name: [unclosed\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        load_sweep(tmp_path / "bad.yml")


def test_train_py_reports_a_bad_sweep_as_a_usage_error(tmp_path, capsys):
    from joulegym.training import main

    (tmp_path / "s.yml").write_text(yaml.safe_dump({"name": "x", "timesteps": 10, "space": {"env": "nope"}}))
    assert main(["--sweep", str(tmp_path / "s.yml"), "--out", str(tmp_path / "out")]) == 2
    assert "space.env: 'nope' is not a registered id" in capsys.readouterr().err
    assert main(["--ray-address", "auto"]) == 2
    assert "--ray-address applies only with --sweep" in capsys.readouterr().err
