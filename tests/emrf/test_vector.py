"""The batched EMRF vector env (issue 14): ``gym.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point")``
gives, instance by instance, the bits of N single envs under the same seeds, with Gymnasium's next-step autoreset."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import joulegym  # noqa: F401
from joulegym.envs.emrf.vector import EMRFVectorEnv
from tests.emrf.test_trajectory_hashes import _update

BATCHED = "vector_entry_point"


def _same_metrics(a: dict, b: dict) -> bool:
    import hashlib

    ha, hb = hashlib.sha256(), hashlib.sha256()
    _update(ha, a)
    _update(hb, b)
    return ha.digest() == hb.digest()


@pytest.mark.parametrize(("env_id", "kwargs"), [
    ("joulegym/EMRF-v0", {"horizon": 6}),
    ("joulegym/EMRFResidual-v0", {"horizon": 5}),
    ("joulegym/EMRFKnob-v0", {"horizon": 7}),
    ("joulegym/EMRFKnobDiscrete-v0", {"horizon": 4}),
    ("joulegym/EMRF-apu-dynamic-v0", {"horizon": 5, "vector_reward": True}),
    ("joulegym/EMRFKnob-apu-m1-v0", {}),  # terminates (every job done) at different steps per instance
])
def test_batched_trajectories_equal_single_envs(env_id, kwargs):
    n, seed, steps = 3, 11, 16 if "m1" not in env_id else 60
    batched = gym.make_vec(env_id, num_envs=n, vectorization_mode=BATCHED, **kwargs)
    assert isinstance(batched, EMRFVectorEnv)
    batched.batch_from = 1  # the batched quiet windows at any size (BATCH_FROM is a speed threshold)
    assert batched.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    singles = [gym.make(env_id, **kwargs) for _ in range(n)]
    obs, _ = batched.reset(seed=seed)
    for i, env in enumerate(singles):
        single_obs, _ = env.reset(seed=seed + i)
        assert single_obs.tobytes() == obs[i].tobytes()
    batched.action_space.seed(seed)
    ended = [False] * n
    ends = 0
    for _ in range(steps):
        actions = batched.action_space.sample()
        obs, reward, terminated, truncated, info = batched.step(actions)
        for i, env in enumerate(singles):
            if ended[i]:  # next-step autoreset: the action is ignored, reward 0, not ended
                single_obs, _ = env.reset()
                single_reward, term, trunc, single_info = np.zeros_like(reward[i]), False, False, {}
            else:
                single_obs, single_reward, term, trunc, single_info = env.step(actions[i])
            assert single_obs.tobytes() == obs[i].tobytes()
            assert np.asarray(single_reward).tobytes() == np.asarray(reward[i]).tobytes()
            assert (term, trunc) == (bool(terminated[i]), bool(truncated[i]))
            if term or trunc:
                ends += 1
                assert info["_metrics"][i] and _same_metrics(single_info["metrics"], _metrics_of(info, i))
            elif "_metrics" in info:
                assert not info["_metrics"][i]
            ended[i] = term or trunc
    assert ends >= n  # every instance ended at least once and was reset by the batch
    if env_id == "joulegym/EMRF-v0":  # quiet windows were batched (other modes: the scalar path only)
        assert batched.batched_steps > 0


def _metrics_of(info: dict, i: int) -> dict:
    return {key: value[i] for key, value in info["metrics"].items() if not key.startswith("_")}


def test_info_is_lean_and_batched():
    batched = gym.make_vec("joulegym/EMRF-v0", num_envs=4, vectorization_mode=BATCHED, horizon=2)
    _, info = batched.reset(seed=0)
    assert set(info) == {"reward_parts", "_reward_parts", "repaired", "_repaired"}
    batched.step(batched.action_space.sample())
    _, reward, _, truncated, info = batched.step(batched.action_space.sample())
    assert truncated.all() and info["_metrics"].all() and info["metrics"]["jobs_completed"].shape == (4,)
    parts = info["reward_parts"]
    weights = dict(zip(batched.reward_spec.names, batched.reward_weights))
    np.testing.assert_allclose(reward, sum(weights[k] * parts[k] for k in weights))


def test_bad_actions_raise_naming_the_space():
    batched = gym.make_vec("joulegym/EMRFKnob-v0", num_envs=2, vectorization_mode=BATCHED)
    batched.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        batched.step(np.full((2, 1), np.nan, dtype=np.float32))
    with pytest.raises(ValueError, match="batched action space"):
        batched.step(np.zeros((3, 1), dtype=np.float32))
    with pytest.raises(ValueError, match="num_envs"):
        EMRFVectorEnv(0)


def test_reset_mask_resets_only_the_masked_instances():
    batched = gym.make_vec("joulegym/EMRF-v0", num_envs=2, vectorization_mode=BATCHED)
    obs0, _ = batched.reset(seed=3)
    obs1, *_ = batched.step(batched.action_space.sample())
    obs2, _ = batched.reset(seed=[3, None], options={"reset_mask": np.array([True, False])})
    assert obs2[0].tobytes() == obs0[0].tobytes() and obs2[1].tobytes() == obs1[1].tobytes()


@pytest.mark.parametrize("env_id", ["joulegym/EMRF-v0", "joulegym/EMRFKnob-v0", "joulegym/EMRF-apu-dynamic-v0"])
def test_step_creates_no_garbage_cycles(env_id):
    """step() runs with the cyclic collector paused (vector.py): that is only free if a step, autoresets
    included, leaves no reference cycles behind; and the collector's state is restored, also on errors."""
    import gc

    batched = gym.make_vec(env_id, num_envs=4, vectorization_mode=BATCHED, horizon=5)
    batched.action_space.seed(0)
    batched.reset(seed=0)
    gc.collect()
    gc.disable()
    try:
        for _ in range(16):  # three episodes per instance: autoresets included
            batched.step(batched.action_space.sample())
        assert gc.collect() == 0
    finally:
        gc.enable()
    with pytest.raises(ValueError):
        batched.step(np.full(batched.action_space.shape, np.nan, dtype=np.float32))
    assert gc.isenabled()
    gc.disable()
    try:
        batched.step(batched.action_space.sample())
        assert not gc.isenabled()  # a caller's paused collector stays paused
    finally:
        gc.enable()


@pytest.mark.parametrize(("env_id", "kwargs"), [
    ("joulegym/EMRF-v0", {}),
    ("joulegym/EMRF-apu-dynamic-v0", {}),  # late arrivals: those instances take the scalar path until they arrive
    ("joulegym/EMRF-v0", {"admit_at_window": True, "reward": "scalarized"}),
])
def test_batched_quiet_windows_equal_single_envs_over_whole_episodes(env_id, kwargs):
    """The batched quiet-window path (numpy over instances) against N single envs over 1.5 episodes of 40 windows:
    observations, rewards, flags and episode metrics, bit for bit, with both paths taken."""
    n, seed, horizon = 10, 21, 40
    batched = gym.make_vec(env_id, num_envs=n, vectorization_mode=BATCHED, horizon=horizon, **kwargs)
    batched.batch_from = 1  # batched at this size too (BATCH_FROM is a speed threshold)
    singles = [gym.make(env_id, horizon=horizon, **kwargs) for _ in range(n)]
    obs, _ = batched.reset(seed=seed)
    for i, env in enumerate(singles):
        assert env.reset(seed=seed + i)[0].tobytes() == obs[i].tobytes()
    batched.action_space.seed(seed)
    ended = [False] * n
    for _ in range(horizon * 3 // 2):
        actions = batched.action_space.sample()
        obs, reward, terminated, truncated, info = batched.step(actions)
        for i, env in enumerate(singles):
            if ended[i]:
                single = (env.reset()[0], 0.0, False, False, {})
            else:
                single = env.step(actions[i])
            assert single[0].tobytes() == obs[i].tobytes()
            assert np.float64(single[1]).tobytes() == np.float64(reward[i]).tobytes()
            assert single[2:4] == (bool(terminated[i]), bool(truncated[i]))
            if single[2] or single[3]:
                assert _same_metrics(single[4]["metrics"], _metrics_of(info, i))
            ended[i] = single[2] or single[3]
    stepped = horizon * 3 // 2 * n
    assert 0 < batched.batched_steps < stepped  # quiet windows batched, the eventful ones not
