"""joulegym.agents.algos: algorithm names, space checks, hyperparameter files."""

from __future__ import annotations

import gymnasium as gym
import pytest

from joulegym.agents import ALGOS, algo_spec, check_algo_supports, load_hyperparams


def test_every_algo_has_a_packaged_hyperparameter_file():
    for name in ALGOS:
        params = load_hyperparams(name, "joulegym/ETF-v0")
        assert params["policy"] == "MlpPolicy", name


def test_unknown_algo_names_the_allowed_ones():
    with pytest.raises(ValueError, match=r"allowed: .*ppo"):
        algo_spec("qlearning")


@pytest.mark.parametrize(("algo", "space"), [("sac", gym.spaces.Discrete(3)), ("dqn", gym.spaces.Box(0, 1, (2,))),
                                             ("maskable_ppo", gym.spaces.Box(0, 1, (2,)))])
def test_algo_space_mismatch_is_a_value_error(algo, space):
    with pytest.raises(ValueError, match="does not support"):
        check_algo_supports(algo, space)


def test_user_file_overrides_key_by_key(tmp_path):
    path = tmp_path / "hp.yml"
    path.write_text("default:\n  n_steps: 128\njoulegym/ETF-v0:\n  learning_rate: 0.001\n")
    params = load_hyperparams("ppo", "joulegym/ETF-v0", path)
    assert params["learning_rate"] == 0.001  # the id's entry wins over the file's default
    assert "n_steps" in params and params["n_steps"] == 512  # untouched packaged value
    assert load_hyperparams("ppo", "joulegym/ETFPhi-v0", path)["n_steps"] == 128


def test_missing_hyperparameter_file_is_reported(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_hyperparams("ppo", "joulegym/ETF-v0", tmp_path / "nope.yml")


def test_rl_zoo_run_keys_and_policy_kwargs_string():
    from joulegym.agents.algos import split_run_keys

    params, run = split_run_keys({"policy": "MlpPolicy", "n_timesteps": 1e5, "n_envs": 4,
                                  "policy_kwargs": "dict(net_arch=[32, 32])"})
    assert run == {"n_timesteps": 1e5, "n_envs": 4}
    assert params == {"policy": "MlpPolicy", "policy_kwargs": {"net_arch": [32, 32]}}
    with pytest.raises(ValueError, match="normalize"):
        split_run_keys({"normalize": True})
    with pytest.raises(ValueError, match="policy_kwargs"):
        split_run_keys({"policy_kwargs": "dict(net_arch=make())"})
