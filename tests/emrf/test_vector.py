"""The batched EMRF vector env: ``gym.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point")`` gives,
instance by instance, the bits of N single envs under the same seeds, with Gymnasium's next-step autoreset; from
``BATCH_FROM`` instances on as the rows of one array state (``envs/emrf/batch.py``), below as single envs."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import joulegym  # noqa: F401
from joulegym.envs.emrf.vector import BATCH_FROM, EMRFVectorEnv
from tests.emrf.test_trajectory_hashes import _update

BATCHED = "vector_entry_point"
ARRAYS = max(BATCH_FROM, 10)  # enough instances for the array rows


def _same_metrics(a: dict, b: dict) -> bool:
    import hashlib

    ha, hb = hashlib.sha256(), hashlib.sha256()
    _update(ha, a)
    _update(hb, b)
    return ha.digest() == hb.digest()


def _metrics_of(info: dict, i: int) -> dict:
    return {key: value[i] for key, value in info["metrics"].items() if not key.startswith("_")}


def _compare_with_singles(env_id: str, kwargs: dict, n: int, seed: int, steps: int) -> tuple[EMRFVectorEnv, int]:
    """Step a batch and n single envs with the same actions; every observation, reward, flag and episode-end
    metric must have the same bits. Returns the batch and how many episodes ended."""
    batched = gym.make_vec(env_id, num_envs=n, vectorization_mode=BATCHED, **kwargs)
    assert isinstance(batched, EMRFVectorEnv)
    assert batched.metadata["autoreset_mode"] == AutoresetMode.NEXT_STEP
    assert bool(batched.envs) == (n < BATCH_FROM)  # single envs below BATCH_FROM, the array rows from it on
    singles = [gym.make(env_id, **kwargs) for _ in range(n)]
    obs, _ = batched.reset(seed=seed)
    for i, env in enumerate(singles):
        assert env.reset(seed=seed + i)[0].tobytes() == obs[i].tobytes()
    batched.action_space.seed(seed)
    ended, ends = [False] * n, 0
    for _ in range(steps):
        actions = batched.action_space.sample()
        obs, reward, terminated, truncated, info = batched.step(actions)
        for i, env in enumerate(singles):
            if ended[i]:  # next-step autoreset: the action is ignored, reward 0, not ended
                single = (env.reset()[0], np.zeros_like(reward[i]), False, False, {})
            else:
                single = env.step(actions[i])
            assert single[0].tobytes() == obs[i].tobytes()
            assert np.asarray(single[1], dtype=np.float64).tobytes() == np.asarray(reward[i]).tobytes()
            assert single[2:4] == (bool(terminated[i]), bool(truncated[i]))
            if single[2] or single[3]:
                ends += 1
                assert info["_metrics"][i] and _same_metrics(single[4]["metrics"], _metrics_of(info, i))
            elif "_metrics" in info:
                assert not info["_metrics"][i]
            ended[i] = single[2] or single[3]
    return batched, ends


@pytest.mark.parametrize("n", [3, ARRAYS])
@pytest.mark.parametrize(("env_id", "kwargs"), [
    ("joulegym/EMRF-v0", {"horizon": 6}),
    ("joulegym/EMRFResidual-v0", {"horizon": 5}),
    ("joulegym/EMRFKnob-v0", {"horizon": 7}),
    ("joulegym/EMRFKnobDiscrete-v0", {"horizon": 4}),
    ("joulegym/EMRF-apu-dynamic-v0", {"horizon": 5, "vector_reward": True}),
    ("joulegym/EMRFKnob-apu-m1-v0", {}),  # terminates (every job done) at different steps per instance
])
def test_batched_trajectories_equal_single_envs(env_id, kwargs, n):
    steps = 60 if "m1" in env_id else 16
    _, ends = _compare_with_singles(env_id, kwargs, n, seed=11, steps=steps)
    assert ends >= n  # every instance ended at least once and was reset by the batch


SHORT_JOBS = {"solo_seconds": 0.2, "random": {"n_users": [1, 2], "arrival_rate": 1.5, "job_sigma": 0.0}}


@pytest.mark.parametrize(("env_id", "kwargs"), [
    ("joulegym/EMRF-v0", {}),
    ("joulegym/EMRF-apu-dynamic-v0", {}),  # users arriving inside windows (admission, waiting slots)
    ("joulegym/EMRF-v0", {"admit_at_window": True, "reward": "scalarized"}),
    ("joulegym/EMRF-apu-phases-v0", {"xi_noise": 0.02}),  # xi phases and measurement noise
    ("joulegym/EMRF-apu-m1-v0", {}),  # closed-loop users that finish
    ("joulegym/EMRF-apu-m3-v0", {}),  # backlogged users
    ("joulegym/EMRFResidual-apu-dynamic-v0", {}),
    ("joulegym/EMRFKnob-apu-phases-v0", {"xi_noise": 0.02}),
    ("joulegym/EMRF-v0", {"task_gflop": 20.0}),  # Alg. 1's kernel slices
    ("joulegym/EMRF-v0", {"admit_at_window": True, **SHORT_JOBS}),  # idle users, jobs arriving at window ends
    ("joulegym/EMRF-v0", {**SHORT_JOBS}),  # many events per window
])
def test_array_rows_equal_single_envs_over_whole_episodes(env_id, kwargs):
    """The array rows against single envs over 1.5 episodes of 30 windows: observations, rewards, flags and episode
    metrics, bit for bit; and, at the end, what the simulators carry (work done, measured xi, queues, clocks)."""
    horizon = 30
    kwargs = {"horizon": horizon, **kwargs}
    batched, _ = _compare_with_singles(env_id, kwargs, ARRAYS, seed=21, steps=horizon * 3 // 2)
    singles = [gym.make(env_id, **kwargs) for _ in range(ARRAYS)]  # replayed: the states at the same point
    batched.reset(seed=5)
    batched.action_space.seed(5)
    for i, env in enumerate(singles):
        env.reset(seed=5 + i)
    for _ in range(horizon // 2):
        actions = batched.action_space.sample()
        batched.step(actions)
        for i, env in enumerate(singles):
            env.step(actions[i])
    rows = batched.episodes.batch
    for i, env in enumerate(singles):
        sim = env.unwrapped.sim
        for name, value in (("work_done", sim.work_done), ("xi_hat", sim.xi_hat), ("xi", sim.xi),
                            ("queue", sim.queue), ("jobs_done", sim.jobs_done), ("remaining", sim.remaining)):
            assert getattr(rows, name)[i].tolist() == list(value), (name, i)
        assert (rows.time[i], rows.windows[i], rows.total_gflop[i]) == (sim.time, sim.windows, sim.total_gflop)


def test_info_is_lean_and_batched():
    for n in (4, ARRAYS):
        batched = gym.make_vec("joulegym/EMRF-v0", num_envs=n, vectorization_mode=BATCHED, horizon=2)
        _, info = batched.reset(seed=0)
        assert set(info) == {"reward_parts", "_reward_parts", "repaired", "_repaired"}
        batched.step(batched.action_space.sample())
        _, reward, _, truncated, info = batched.step(batched.action_space.sample())
        assert truncated.all() and info["_metrics"].all() and info["metrics"]["jobs_completed"].shape == (n,)
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


@pytest.mark.parametrize("n", [2, ARRAYS])
def test_reset_mask_resets_only_the_masked_instances(n):
    batched = gym.make_vec("joulegym/EMRF-v0", num_envs=n, vectorization_mode=BATCHED)
    obs0, _ = batched.reset(seed=3)
    obs1, *_ = batched.step(batched.action_space.sample())
    mask = np.zeros(n, dtype=bool)
    mask[0] = True
    obs2, _ = batched.reset(seed=[3] + [None] * (n - 1), options={"reset_mask": mask})
    assert obs2[0].tobytes() == obs0[0].tobytes() and obs2[1:].tobytes() == obs1[1:].tobytes()


@pytest.mark.parametrize("env_id", ["joulegym/EMRF-v0", "joulegym/EMRFKnob-v0", "joulegym/EMRF-apu-dynamic-v0"])
def test_step_creates_no_garbage_cycles(env_id):
    """A step, autoresets included, leaves no reference cycles behind (the rows' state is arrays; nothing waits
    for the cyclic collector)."""
    import gc

    batched = gym.make_vec(env_id, num_envs=ARRAYS, vectorization_mode=BATCHED, horizon=5)
    batched.action_space.seed(0)
    batched.reset(seed=0)
    gc.disable()
    try:
        # Two windows of 16 steps (three episodes per instance, autoresets included), each ending in a collection.
        # The first may find garbage that is not the step's (first-use work, an earlier test's objects released
        # meanwhile); a step that built cycles would leave some in every window, so the steady state is the second.
        found = []
        for _ in range(2):
            gc.collect()
            for _ in range(16):
                batched.step(batched.action_space.sample())
            found.append(gc.collect())
        assert found[1] == 0, found
    finally:
        gc.enable()


def _bad_last_row(batched) -> np.ndarray:
    """A valid batch except its last row: NaN (Box kinds) or an out-of-range level (``knob_discrete``)."""
    actions = batched.action_space.sample()
    if actions.dtype.kind == "f":
        actions[-1] = np.nan
    else:
        actions[-1] = batched.single_action_space.n
    return actions


@pytest.mark.parametrize("env_id", ["joulegym/EMRF-v0", "joulegym/EMRFResidual-v0", "joulegym/EMRFKnob-v0",
                                    "joulegym/EMRFKnobDiscrete-v0"])
@pytest.mark.parametrize("n", [4, ARRAYS])  # single envs, and the array rows
def test_a_rejected_batch_steps_no_instance(env_id, n):
    """A batch rejected for one bad row (its last) raises and changes no instance: the next step gives what a twin
    that never saw the bad batch gives, for every instance (observations, rewards, flags, metrics at the end)."""
    seed = 3
    envs = [gym.make_vec(env_id, num_envs=n, vectorization_mode=BATCHED, horizon=8) for _ in range(2)]
    for env in envs:
        env.reset(seed=seed)
    tested, twin = envs
    tested.action_space.seed(seed)
    for step in range(12):
        actions = tested.action_space.sample()
        if step in (2, 7):  # early, and before the episode's last window (horizon 8)
            with pytest.raises(ValueError, match="action"):
                tested.step(_bad_last_row(tested))
        got, want = tested.step(actions), twin.step(actions)
        for a, b in zip(got[:4], want[:4]):
            assert np.asarray(a).tobytes() == np.asarray(b).tobytes(), step
        if "_metrics" in want[4]:
            for i in np.flatnonzero(want[4]["_metrics"]):
                assert _same_metrics(_metrics_of(got[4], i), _metrics_of(want[4], i))


def test_the_batched_emrf_solve_is_emrf_core_bit_for_bit():
    """The knob kinds' EMRF(η) of every row at once (rules.emrf_rows) gives each row the bits of the scalar closed
    form (allocation.emrf_core) on its active users: xi on a coarse grid (groups of equal xi, Eq. (17)) and near it
    (within and just beyond XI_GROUP_TOL), exact 0 and 1, η = 0, 1 and between, users without work."""
    from joulegym.envs.emrf.allocation import XI_GROUP_TOL, emrf_core
    from joulegym.envs.emrf.rules import emrf_rows

    rng = np.random.default_rng(0)
    caps, rows, n = (24.0, 480.0), 16, 8
    checked = 0
    for _ in range(60):
        grid = rng.integers(0, 5, size=(rows, n)) / 4.0
        xi = np.where(rng.random((rows, n)) < 0.5, grid, rng.random((rows, n)))
        nudge = rng.choice([0.0, 0.5 * XI_GROUP_TOL, 2 * XI_GROUP_TOL], size=(rows, n))
        xi = np.clip(xi + nudge, 0.0, 1.0)
        w = rng.integers(1, 5, size=(rows, n)) / 4.0
        act = rng.random((rows, n)) < 0.6
        eta = np.where(rng.random(rows) < 0.3, rng.integers(0, 2, rows).astype(float), rng.random(rows))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            got = emrf_rows(xi, w, act, eta, *caps)
        for r in range(rows):
            active = np.flatnonzero(act[r]).tolist()
            if not active:
                assert not got[r].any()
                continue
            want = emrf_core(*caps, tuple(xi[r, active].tolist()), tuple(w[r, active].tolist()), float(eta[r]))[0]
            assert got[r, active].tolist() == list(want) and not got[r, ~act[r]].any()
            checked += 1
    assert checked > 800
