"""Jobs overflowing the K slots (docs/families/powerflow.md §10): the reference policies decide over the slotted
jobs only, so the cluster never idles while slotted jobs wait.

Regression for the stall seen in the harness's powerflow-jobs growth curve (PowerFlow-tiny, 96 jobs in 16 slots:
``powerflow-strict`` finished 10 of 96 in the 14-day horizon) and in ``gandiva`` on ``PowerFlow-alibaba1901-v0``
(734 of 1901): the policies decided over every schedulable job, the encoding dropped the GPUs given to unslotted
ones, and the slotted jobs left without GPUs never completed, so no slot ever freed.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

import joulegym  # noqa: F401  (registers the ids)
from joulegym import baselines
from joulegym.baselines.powerflow import paper_env_config
from joulegym.core.rollout import rollout

# 24 jobs in 4 slots on one 8-GPU node: every policy below overflowed within the first hours; before the fix they
# finished 1-8 of the 24 and idled to the horizon (measured: powerflow-strict 5, afs 8, tiresias 8, gandiva 1).
JOBS, SLOTS = 24, 4


def _env(policy_name: str) -> tuple[gym.Env, object]:
    policy = baselines.make(policy_name, family="powerflow")
    env = gym.make("joulegym/PowerFlow-tiny-v0", max_slots=SLOTS, trace={"num_jobs": JOBS},
                   **paper_env_config(policy))
    return env, policy


@pytest.mark.parametrize("policy_name", ["powerflow-strict", "powerflow", "afs", "tiresias", "gandiva"])
def test_overflowing_jobs_all_finish(policy_name: str) -> None:
    env, policy = _env(policy_name)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a truncation warning would mean the stall is back
        episode = rollout(env, policy, seed=0, max_steps=5_000)
    metrics = env.unwrapped.sim.metrics()
    assert episode.final_info["overflow_steps"] > 0  # the case under test: jobs did wait outside the slots
    assert episode.terminated and not episode.truncated
    assert metrics["jobs_done"] == JOBS and metrics["truncated"] == 0.0


def test_decisions_address_slotted_jobs_only() -> None:
    """While jobs overflow, every job a reference decision gives GPUs to has a slot (else the GPUs are lost)."""
    env, policy = _env("powerflow-strict")
    base = env.unwrapped
    obs, info = env.reset(seed=0)
    policy.reset(env, seed=0)
    checked = 0
    for _ in range(5_000):
        action = policy.act(obs, info)
        decided = np.fromiter(policy._last[-1], dtype=np.int64)
        if base.slots.overflow:
            assert np.isin(decided, base.occupied_jobs).all()
            checked += 1
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    assert checked > 0 and terminated and not truncated
