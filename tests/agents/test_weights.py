"""joulegym.agents.weights: the weights-only agent keeps what acting needs and acts like the trained model."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from joulegym.agents.algos import make_model
from joulegym.agents.weights import TRAINING_ONLY_NETWORKS, WEIGHTS_FILE, load_weights, save_weights

torch = pytest.importorskip("torch")  # the train extra (torch, Stable-Baselines3): skipped without it
pytest.importorskip("stable_baselines3")

CASES = [("sac", "Pendulum-v1"), ("td3", "Pendulum-v1"), ("dqn", "CartPole-v1"), ("ppo", "Pendulum-v1"),
         ("a2c", "CartPole-v1"), ("maskable_ppo", "CartPole-v1")]


def _model(algo: str, env_id: str):
    params = {"policy": "MlpPolicy", "policy_kwargs": {"net_arch": [16, 16]}}
    if algo in ("sac", "td3", "dqn"):
        params["buffer_size"] = 100
    return make_model(algo, gym.make(env_id), seed=0, hyperparams=params)


def _observations(env_id: str, n: int = 8) -> list[np.ndarray]:
    env = gym.make(env_id)
    env.observation_space.seed(1)
    return [env.observation_space.sample() for _ in range(n)]


@pytest.mark.parametrize(("algo", "env_id"), CASES)
def test_saved_agent_acts_like_the_model_without_training_only_networks(tmp_path, algo, env_id):
    model = _model(algo, env_id)
    save_weights(model, algo, tmp_path)
    saved = torch.load(tmp_path / WEIGHTS_FILE, weights_only=True)
    omitted = TRAINING_ONLY_NETWORKS.get(algo, ())
    assert omitted and not [k for k in saved if any(k == n or k.startswith(n + ".") for n in omitted)]
    assert json.loads((tmp_path / "agent.json").read_text())["omitted"] == list(omitted)
    loaded = load_weights(tmp_path, gym.make(env_id))
    for obs in _observations(env_id):
        expected, _ = model.predict(obs, deterministic=True)
        actual, _ = loaded.predict(obs, deterministic=True)
        assert np.array_equal(expected, actual)


def test_a_file_with_every_part_still_loads(tmp_path):
    model = _model("sac", "Pendulum-v1")
    save_weights(model, "sac", tmp_path)
    torch.save(model.policy.state_dict(), tmp_path / WEIGHTS_FILE)  # the format written before parts were left out
    meta = json.loads((tmp_path / "agent.json").read_text())
    del meta["omitted"]
    (tmp_path / "agent.json").write_text(json.dumps(meta))
    loaded = load_weights(tmp_path, gym.make("Pendulum-v1"))
    for name, value in model.policy.state_dict().items():
        assert torch.equal(loaded.policy.state_dict()[name], value), name


def test_missing_acting_weights_are_an_error(tmp_path):
    save_weights(_model("sac", "Pendulum-v1"), "sac", tmp_path)
    state = torch.load(tmp_path / WEIGHTS_FILE, weights_only=True)
    torch.save({k: v for k, v in state.items() if not k.startswith("actor.mu.")}, tmp_path / WEIGHTS_FILE)
    with pytest.raises(ValueError, match=r"does not fit the sac policy.*missing \['actor\.mu"):
        load_weights(tmp_path, gym.make("Pendulum-v1"))


def test_only_training_networks_may_be_omitted(tmp_path):
    save_weights(_model("sac", "Pendulum-v1"), "sac", tmp_path)
    meta = json.loads((tmp_path / "agent.json").read_text())
    meta["omitted"] = ["actor"]
    (tmp_path / "agent.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=r"omitted=\['actor'\]; for sac only"):
        load_weights(tmp_path, gym.make("Pendulum-v1"))
