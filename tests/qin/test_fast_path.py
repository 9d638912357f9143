"""The simulator path (:func:`joulegym.core.rollout.rollout_inner`) of every Qin cluster-level policy gives the
env path's episode (:func:`joulegym.core.rollout.rollout`) on ``QinCluster-v0`` and ``Qin-v0``: return, length
and metrics equal bit for bit (the suite's rows come from either; docs/families/qin.md)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import joulegym  # noqa: F401  (registers the ids)
from joulegym import baselines
from joulegym.core.policy import available, env_config_for
from joulegym.core.rollout import rollout, rollout_inner, simulator_path

CLUSTER_POLICIES = sorted(set(available("qin", kind="QinCluster", inner=True)) - {"random"})


@pytest.mark.parametrize("kind", ["QinCluster", "Qin"])
@pytest.mark.parametrize("name", CLUSTER_POLICIES)
def test_simulator_path_equals_the_env_path(name, kind):
    policy = baselines.make(name, family="qin")
    env = gym.make(f"joulegym/{kind}-tiny-v0", **env_config_for(policy))
    assert simulator_path(env, policy)
    for seed in (10000, 10001):
        slow, fast = rollout(env, policy, seed), rollout_inner(env, policy, seed)
        assert (fast.total_return, fast.length, fast.metrics) == (slow.total_return, slow.length, slow.metrics)
        assert (fast.terminated, fast.truncated) == (slow.terminated, slow.truncated)


@pytest.mark.reproduce
@pytest.mark.parametrize("name", CLUSTER_POLICIES)
def test_simulator_path_equals_the_env_path_on_the_benchmark(name):
    """Every benchmark scenario, three held-out seeds (long)."""
    policy = baselines.make(name, family="qin")
    for scenario in ("paper-rw", "paper-lc", "paper-tb"):
        env = gym.make(f"joulegym/QinCluster-{scenario}-v0", **env_config_for(policy))
        for seed in (10000, 10001, 10002):
            slow, fast = rollout(env, policy, seed), rollout_inner(env, policy, seed)
            assert (fast.total_return, fast.length, fast.metrics) == (slow.total_return, slow.length, slow.metrics)
