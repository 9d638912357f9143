"""The batched EMRF vector env (issue 14): ``gym.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point")``
gives, instance by instance, the bits of N single envs under the same seeds, with Gymnasium's next-step autoreset."""

from __future__ import annotations

import dataclasses

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
    with pytest.raises(ValueError, match="one row per instance"):
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
    gc.disable()
    try:
        # Two windows of 16 steps (three episodes per instance, autoresets included), each ending in a collection.
        # The first may find garbage that is not the step's: first-use work, or an object of an earlier test
        # released meanwhile (a CI worker found an earlier test's matplotlib figure there, 11,596 objects). A step
        # that built cycles would leave some in every window, so the steady state is the second window.
        found = []
        for _ in range(2):
            gc.collect()
            for _ in range(16):
                batched.step(batched.action_space.sample())
            found.append(gc.collect())
        assert found[1] == 0, found
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


_SIM_STATE = ("time", "windows", "total_gflop", "cpu_gflop", "gpu_gflop", "last_utilisation", "remaining",
              "current_size", "work_done", "work_window", "cpu_ops_window", "xi", "xi_hat", "last_rates", "queue",
              "jobs_total", "jobs_done", "next_arrival", "present", "waiting", "finished_at", "last_window")
_ENV_STATE = ("_sum_e", "_sum_v", "_sum_delta", "_sum_delta_bound", "_sum_speedup", "_si_total", "_ef_total", "_steps",
              "_ratio_time", "_active_time", "_last_ratio", "_last_util", "_history", "_last_eta", "_last_delta",
              "_last_bound", "_last_diag", "_last_arrivals", "last_reward_parts", "_episode_over", "_xi_view",
              "eta_target")


def _exact(value):
    """``value`` with every float as a plain ``float`` (``np.float64`` too: the allocators' caches are shared between
    envs and may hand back either type for equal inputs) and every sequence as a list, for an exact ``repr``."""
    if dataclasses.is_dataclass(value):
        return [_exact(getattr(value, f.name)) for f in dataclasses.fields(value)]
    if isinstance(value, list | tuple):
        return [_exact(v) for v in value]
    if isinstance(value, float | np.floating):
        return float(value)
    return value


def _carried_state(env) -> str:
    """Everything an EMRF instance carries from one step to the next (simulator lists and totals, the last window,
    the env's accumulators, history and last-window diagnostics), as an exact text (``repr`` round-trips floats)."""
    return repr(_exact(([getattr(env.sim, name) for name in _SIM_STATE], [getattr(env, name) for name in _ENV_STATE],
                        list(env._last_alloc))))


SHORT_JOBS = {"solo_seconds": 0.2, "random": {"n_users": [1, 2], "arrival_rate": 1.5, "job_sigma": 0.0}}


@pytest.mark.parametrize(("env_id", "kwargs", "paths_taken"), [
    ("joulegym/EMRF-v0", {"horizon": 30}, ("idle", "queued", "left")),
    # users arrive over the first windows (scalar path until then)
    ("joulegym/EMRF-apu-dynamic-v0", {"horizon": 40}, ("left",)),
    ("joulegym/EMRF-v0", {"horizon": 30, "admit_at_window": True, "vector_reward": True}, ("idle", "queued", "left")),
    # closed-loop users that finish (jobs left = queue / jobs)
    ("joulegym/EMRF-apu-m1-v0", {"horizon": 30}, ("left",)),
    ("joulegym/EMRF-apu-m3-v0", {"horizon": 12}, ("left",)),  # backlogged users: every window is quiet
    # users idle most windows, jobs arriving at them at the windows' ends (also in the episode's last window)
    ("joulegym/EMRF-v0", {"horizon": 2, "admit_at_window": True, **SHORT_JOBS}, ("idle", "left")),
])
def test_resident_array_state_writes_back_the_single_envs_state(env_id, kwargs, paths_taken):
    """Issue 14: the batched env keeps the state of instances in quiet windows in (N, slots) arrays and writes it
    back when an instance leaves them (an event, an episode end, ``sync()``, ``metrics``). After ``sync()`` every
    instance carries exactly the single env's state (lists, totals, history, diagnostics), and every path of the
    array state was taken: windows nobody works in, Poisson jobs queued at busy users, instances leaving."""
    n, seed, horizon = 24, 5, kwargs["horizon"]
    batched = gym.make_vec(env_id, num_envs=n, vectorization_mode=BATCHED, **kwargs)
    batched.batch_from = 1
    singles = [gym.make(env_id, **kwargs) for _ in range(n)]
    batched.reset(seed=seed)
    for i, env in enumerate(singles):
        env.reset(seed=seed + i)
    batched.action_space.seed(seed)
    ended = [False] * n
    for step in range(horizon * 5 // 2):
        actions = batched.action_space.sample()
        obs, reward, *_ = batched.step(actions)
        for i, env in enumerate(singles):
            single = (env.reset()[0], np.zeros_like(reward[i]), False, False) if ended[i] else env.step(actions[i])[:4]
            assert single[0].tobytes() == obs[i].tobytes()
            assert np.asarray(single[1], dtype=np.float64).tobytes() == np.asarray(reward[i]).tobytes()
            ended[i] = single[2] or single[3]
        if step % 7 == 3:
            batched.sync()
            for i, env in enumerate(singles):
                assert _carried_state(batched.envs[i]) == _carried_state(env.unwrapped), (step, i)
    batched.sync()
    for i, env in enumerate(singles):
        assert _carried_state(batched.envs[i]) == _carried_state(env.unwrapped), i
    assert batched.batched_steps > 0 and all(batched.batched_paths[path] > 0 for path in paths_taken)


def _bad_last_row(batched, kind: str) -> np.ndarray:
    """A valid batch except its last row: NaN (Box kinds) or an out-of-range level (``knob_discrete``)."""
    actions = batched.action_space.sample()
    if actions.dtype.kind == "f":
        actions[-1] = np.nan
    else:
        actions[-1] = batched.single_action_space.n
    return actions


@pytest.mark.parametrize("env_id", ["joulegym/EMRF-v0", "joulegym/EMRFResidual-v0", "joulegym/EMRFKnob-v0",
                                    "joulegym/EMRFKnobDiscrete-v0"])
@pytest.mark.parametrize("batch_from", [1, 10**9])  # the batched quiet windows, and the per-instance path
def test_a_rejected_batch_steps_no_instance(env_id, batch_from):
    """A batch rejected for one bad row (its last) raises and changes no instance: the next step gives what a twin
    that never saw the bad batch gives, for every instance (observations, rewards, flags, metrics at the end)."""
    n, seed = 4, 3
    envs = [gym.make_vec(env_id, num_envs=n, vectorization_mode=BATCHED, horizon=8) for _ in range(2)]
    for env in envs:
        env.batch_from = batch_from
        env.reset(seed=seed)
    tested, twin = envs
    tested.action_space.seed(seed)
    for step in range(12):
        actions = tested.action_space.sample()
        if step in (2, 7):  # early, and before the episode's last window (horizon 8)
            with pytest.raises(ValueError, match="action"):
                tested.step(_bad_last_row(tested, env_id))
        got, want = tested.step(actions), twin.step(actions)
        for a, b in zip(got[:4], want[:4]):
            assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), step
        if "_metrics" in want[4]:
            for i in np.flatnonzero(want[4]["_metrics"]):
                assert _same_metrics(_metrics_of(got[4], i), _metrics_of(want[4], i))
