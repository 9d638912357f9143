"""The plain-Python paths for small clusters and few running jobs give the same bits as the numpy paths
they stand beside (docs/families/powerflow.md §12 "Cost"), the decision view looks tables up lazily, and the masked
random policy draws the same stream as one ``rng.choice`` per sub-space did."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import joulegym.envs.powerflow.cluster as cluster
import joulegym.envs.powerflow.simulator as simulator
from joulegym.baselines.powerflow_simulate import simulate
from joulegym.core.policy import _sample_multidiscrete
from joulegym.envs.powerflow import ClusterSpec
from joulegym.workloads import dl_jobs


def _random_case(rng: np.random.Generator):
    """A random valid buddy-placement input: earlier aligned blocks, new sizes, some pinned jobs."""
    gpn = int(rng.choice([1, 2, 4, 8, 16]))
    nodes = int(rng.integers(1, 9))
    while gpn * nodes > cluster.SMALL_CLUSTER_GPUS:
        nodes -= 1
    G = gpn * nodes
    used = np.zeros(G, dtype=bool)
    previous: dict[int, tuple[int, ...]] = {}
    for _ in range(int(rng.integers(0, 12))):
        n = int(2 ** rng.integers(0, int(np.log2(G)) + 1))
        starts = [s for s in range(0, G - n + 1, n) if not used[s:s + n].any()]
        if starts:
            s = int(rng.choice(starts))
            used[s:s + n] = True
            previous[len(previous)] = tuple(range(s, s + n))
    jobs = list(previous) + list(range(len(previous), len(previous) + int(rng.integers(0, 6))))
    rng.shuffle(jobs)
    sizes: dict[int, int] = {}
    for j in jobs:
        n = len(previous[j]) if j in previous and rng.random() < 0.4 else int(2 ** rng.integers(0, int(np.log2(G)) + 1))
        if sum(sizes.values()) + n <= G:
            sizes[int(j)] = n
    pinned = frozenset(j for j in sizes if j in previous and len(previous[j]) == sizes[j] and rng.random() < 0.25)
    return sizes, previous, G, pinned, gpn


def _placements(monkeypatch, small: int, cases):
    monkeypatch.setattr(cluster, "SMALL_CLUSTER_GPUS", small)
    out = []
    for sizes, previous, G, pinned, gpn in cases:
        for compact, nodes_gpn in ((True, gpn), (False, gpn), (True, None)):
            try:
                out.append(cluster.buddy_place(sizes, previous, G, pinned, compact=compact, gpn=nodes_gpn))
            except ValueError as error:
                out.append(str(error))
    return out


def test_buddy_place_on_a_bitmask_equals_the_numpy_version(monkeypatch):
    """Up to SMALL_CLUSTER_GPUS GPUs the placement runs on an int bitmask: sticky pass, best fit, compaction and
    repack give exactly the numpy version's GPUs on 1,500 random inputs (pinned jobs, halving, every gpn)."""
    rng = np.random.default_rng(14)
    cases = [_random_case(rng) for _ in range(500)]
    bits = _placements(monkeypatch, cluster.SMALL_CLUSTER_GPUS, cases)
    arrays = _placements(monkeypatch, 0, cases)
    assert bits == arrays
    moved = sum(1 for (sizes, previous, *_), placed in zip(cases, bits[::3]) if isinstance(placed, dict)
                and any(placed.get(j) not in ((), previous[j]) for j in previous if j in sizes))
    assert moved > 50  # the cases exercise migrations (compaction, repack), not only the sticky pass


def test_sum_at_is_numpys_sum_bit_for_bit():
    rng = np.random.default_rng(0)
    for _ in range(3000):
        values = rng.standard_normal(40) * 10.0 ** rng.uniform(-6, 6, 40)
        idx = np.sort(rng.choice(40, size=int(rng.integers(0, 20)), replace=False))
        assert simulator._sum_at(values, idx) == float(values[idx].sum())


def _episode_metrics(monkeypatch, small_run: int, policy: str) -> dict:
    monkeypatch.setattr(simulator, "SMALL_RUN", small_run)
    jobs = dl_jobs.to_powerflow_jobs(dl_jobs.gavel_trace(40, seed=3, mean_interarrival_s=200.0, duration_scale=0.05,
                                                         max_gpus=16), seed=3)
    result = simulate(jobs, policy, cluster=ClusterSpec(2, 8), eta=0.5)
    return {**result.metrics, **result.balance, "finish": result.finish_s.tolist()}


@pytest.mark.parametrize("policy", ["powerflow-strict", "tiresias"])
def test_python_and_numpy_event_paths_give_the_same_episode(monkeypatch, policy):
    """The event processing and integration loop in Python below SMALL_RUN running jobs and in numpy beyond; a
    whole episode is the same bits either way (SMALL_RUN = 0: numpy only)."""
    python_paths = _episode_metrics(monkeypatch, simulator.SMALL_RUN, policy)
    numpy_paths = _episode_metrics(monkeypatch, 0, policy)
    assert python_paths == numpy_paths


def test_view_tables_are_looked_up_on_access():
    env = gym.make("joulegym/PowerFlow-tiny-v0")
    env.reset(seed=0)
    sim = env.unwrapped.sim
    view = sim.view()
    assert len(view.T) == len(view.E) == len(view.jobs) > 0
    for i, j in enumerate(view.jobs.tolist()):
        T, E = sim.prof.predicted_tables(sim.jobs.model[j], int(sim.jobs.batch_size[j]), sim.n_values)
        assert view.T[i] is T and view.E[i] is E  # the shared tables themselves (policies cache by identity)
    assert [t is u for t, u in zip(view.T[:2], list(view.T)[:2])] == [True] * min(2, len(view.T))
    assert view.T[-1] is view.T[len(view.T) - 1]


def _one_choice_per_subspace(space, mask, rng):
    """The former sampler: ``rng.choice`` over each sub-space's allowed values."""
    nvec = np.asarray(space.nvec).ravel()
    action = np.empty(nvec.size, dtype=np.int64)
    offset = 0
    for k, n in enumerate(nvec):
        allowed = np.arange(n) if mask is None else np.flatnonzero(np.asarray(mask)[offset:offset + n])
        action[k] = rng.choice(allowed) if allowed.size else 0
        offset += n
    return action.reshape(space.shape)


def test_masked_random_sampler_draws_the_former_stream():
    """One vectorised draw for every sub-space: the same actions and the same generator state afterwards as one
    ``rng.choice`` per sub-space (masks with empty, single and full sub-spaces; no mask)."""
    rng = np.random.default_rng(1)
    for case in range(400):
        nvec = rng.integers(1, 18, size=int(rng.integers(1, 40)))
        space = gym.spaces.MultiDiscrete(nvec)
        mask = None if case % 10 == 0 else rng.random(int(nvec.sum())) < rng.random()
        seed = int(rng.integers(2**32))
        new, old = np.random.default_rng(seed), np.random.default_rng(seed)
        assert np.array_equal(_sample_multidiscrete(space, mask, new), _one_choice_per_subspace(space, mask, old))
        assert new.integers(2**62) == old.integers(2**62)
    with pytest.raises(ValueError, match="action mask has 3 entries"):
        _sample_multidiscrete(gym.spaces.MultiDiscrete([2, 2]), np.ones(3, dtype=bool), rng)


def _decode_and_observe(monkeypatch, scalar: bool, action_mode: str):
    """Decisions, ``repaired`` flags and observations of an episode under unmasked random actions (every repair
    of docs §10: clipping to the masks, halving to fit) with the scalar paths on or off."""
    import joulegym.envs.powerflow.actions as actions
    import joulegym.envs.powerflow.env as env_module

    monkeypatch.setattr(actions, "SCALAR_SLOTS", 1 << 30 if scalar else -1)
    monkeypatch.setattr(env_module, "SCALAR_SLOTS", 1 << 30 if scalar else -1)
    env = gym.make("joulegym/PowerFlow-tiny-v0", action_mode=action_mode).unwrapped
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(5)
    out = [obs]
    for _ in range(150):
        action = rng.integers(0, env.action_space.nvec)
        decision = env.action_type.decode(action)
        out.append((decision, env.action_type.repaired))
        obs, _, terminated, truncated, _ = env.step(action)
        out.append(obs)
        if terminated or truncated:
            obs, _ = env.reset()
            out.append(obs)
    return out


@pytest.mark.parametrize("action_mode", ["alloc", "request"])
def test_scalar_decode_and_observation_equal_the_numpy_paths(monkeypatch, action_mode):
    """With a few occupied slots, decode and the dynamic slot features run in scalar arithmetic: the same
    decisions, repaired flags and observation bits as the numpy paths."""
    scalar = _decode_and_observe(monkeypatch, True, action_mode)
    vectorised = _decode_and_observe(monkeypatch, False, action_mode)
    assert len(scalar) == len(vectorised) > 300
    for a, b in zip(scalar, vectorised):
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b)
        else:
            assert a == b
    assert any(r for item in scalar if isinstance(item, tuple) for r in [item[1]])  # repairs were exercised
