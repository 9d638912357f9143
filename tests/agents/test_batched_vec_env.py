"""The SB3 VecEnv over a batched entry point gives DummyVecEnv's trajectories (SB3's same-step autoreset included)
and trains."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import joulegym  # noqa: F401  (registers the ids)

pytest.importorskip("stable_baselines3")  # the train extra (torch, Stable-Baselines3): skipped without it

from stable_baselines3.common.env_util import make_vec_env

from joulegym.agents.batched_vec_env import BatchedVecEnv, has_batched_entry_point


@pytest.mark.parametrize(("env_id", "kwargs", "n"), [
    ("joulegym/ETF-v0", {"horizon": 7}, 3),
    ("joulegym/ETFPhi-random-mix-v0", {"horizon": 9}, 20),
    ("joulegym/ETFDVFS-v0", {"horizon": 5}, 4),
    ("joulegym/EMRF-apu-m2-v0", {}, 3),
])
def test_same_trajectories_as_dummy_vec_env(env_id, kwargs, n):
    """A fixed action sequence through both VecEnvs (seeded as make_vec_env seeds: instance i with seed + i): the
    same observations, rewards, dones, terminal observations and time-limit flags, across several auto-resets."""
    seed, steps = 11, 40
    dummy = make_vec_env(env_id, n_envs=n, seed=seed, env_kwargs=kwargs)
    batched = BatchedVecEnv(env_id, n, kwargs)
    batched.seed(seed)
    np.testing.assert_array_equal(batched.reset(), dummy.reset())
    space = batched.action_space
    space.seed(0)
    ends = 0
    for _ in range(steps):
        actions = np.stack([space.sample() for _ in range(n)])
        dummy.step_async(actions)
        batched.step_async(actions)
        obs_d, rew_d, done_d, info_d = dummy.step_wait()
        obs_b, rew_b, done_b, info_b = batched.step_wait()
        np.testing.assert_array_equal(obs_b, obs_d)
        np.testing.assert_array_equal(rew_b, rew_d)
        np.testing.assert_array_equal(done_b, done_d)
        for k in np.flatnonzero(done_d):
            ends += 1
            np.testing.assert_array_equal(info_b[k]["terminal_observation"], info_d[k]["terminal_observation"])
            assert info_b[k]["TimeLimit.truncated"] == info_d[k].get("TimeLimit.truncated", False)
            np.testing.assert_equal(info_b[k]["metrics"], info_d[k]["metrics"])
    assert ends >= n, "the run must cross auto-resets"
    np.testing.assert_array_equal(batched.action_masks().shape[0], n)
    batched.close()
    dummy.close()


def test_ids_without_a_batched_entry_point_are_refused():
    assert has_batched_entry_point("joulegym/ETF-v0") and not has_batched_entry_point("joulegym/PowerFlow-tiny-v0")
    with pytest.raises(ValueError, match="vector_entry_point"):
        BatchedVecEnv("joulegym/PowerFlow-tiny-v0", 2)


@pytest.mark.slow
def test_ppo_learns_the_same_per_sample_as_with_dummy_vec_env():
    """PPO with the same seed and hyperparameters on both VecEnvs sees the same samples, so it learns the same
    weights (the batched env changes the cost per sample, not the samples)."""
    import torch
    from stable_baselines3 import PPO

    torch.set_num_threads(1)
    params = []
    for venv in (make_vec_env("joulegym/ETF-v0", n_envs=4, seed=3, env_kwargs={"horizon": 10}),
                 BatchedVecEnv("joulegym/ETF-v0", 4, {"horizon": 10})):
        if isinstance(venv, BatchedVecEnv):
            venv.seed(3)
            venv.action_space.seed(3)
        model = PPO("MlpPolicy", venv, n_steps=32, batch_size=32, n_epochs=2, seed=3, device="cpu")
        model.learn(256)
        params.append(torch.cat([p.detach().flatten() for p in model.policy.parameters()]))
        venv.close()
    assert torch.equal(params[0], params[1])
    assert gym.spec("joulegym/ETF-v0").vector_entry_point is not None


def test_train_uses_the_batched_env_where_the_id_has_one(tmp_path):
    """train.py's VecEnv: the batched one (under VecMonitor, whose CSV the learning curve reads) for an id with a
    batched entry point and n_envs > 1; SB3's DummyVecEnv otherwise."""
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

    from joulegym.agents.batched_vec_env import make_training_vec_env

    venv = make_training_vec_env("joulegym/ETF-v0", 3, 0, {"horizon": 2}, str(tmp_path / "monitor"))
    assert isinstance(venv, VecMonitor) and isinstance(venv.venv, BatchedVecEnv)
    venv.reset()
    for _ in range(4):
        venv.step(np.stack([venv.action_space.sample() for _ in range(3)]))
    venv.close()
    lines = (tmp_path / "monitor" / "batched.monitor.csv").read_text().splitlines()
    assert lines[1] == "r,l,t" and len(lines) == 2 + 6  # 3 instances x 2 episodes of 2 steps
    for env_id, n in (("joulegym/ETF-v0", 1), ("joulegym/PowerFlow-tiny-v0", 2)):
        assert isinstance(make_training_vec_env(env_id, n, 0, {}, None), DummyVecEnv)
