"""The events of an EMRF window (``envs/emrf/events.py``) are one code for the single env's simulator (lists) and a row
of the batched env (numpy views, ``BatchRow``): the same calls on both give the same state, bit for bit, and a row's
writes land in the batch's arrays. The batched env's few-instance path decodes the checked rows with
``decode_checked``, which gives the rule ``decode`` gives."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import joulegym  # noqa: F401
from joulegym.core.actions import ACTION_TOLERANCE
from joulegym.core.vector import BatchValidator
from joulegym.envs.emrf.batch import EMRFBatch
from joulegym.envs.emrf.events import admit_due, complete, noise, switch_phases
from joulegym.envs.emrf.simulator import EMRFSimulator
from tests.emrf.test_simulator import CAPS, random_mix

FIELDS = ("present", "queue", "jobs_total", "jobs_done", "backlogged", "xi", "xi_hat", "weight", "remaining",
          "current_size", "arrived_at", "next_arrival", "next_switch", "phase")


def _state(instance) -> dict[str, list]:
    return {name: [float(v) for v in getattr(instance, name)] for name in FIELDS}


def _twins(seed: int):
    """A simulator and row 1 of a three-row batch, reset with the same users from generators of the same seed."""
    users = random_mix(seed)
    sim = EMRFSimulator(CAPS, max_users=8, phase_period=(2.0, 4.0))
    sim.reset(np.random.default_rng(seed), users)
    batch = EMRFBatch(3, CAPS, max_users=8, phase_period=(2.0, 4.0))
    for r in range(3):
        batch.reset_row(r, users if r == 1 else users[:2], np.random.default_rng(seed if r == 1 else seed + 100 + r))
    return sim, batch, batch.slots[1]


@pytest.mark.parametrize("seed", [0, 3, 11])
def test_the_same_event_calls_give_the_same_state_on_the_simulator_and_a_batch_row(seed):
    sim, batch, row = _twins(seed)
    assert _state(row) == _state(sim)  # the reset's arrivals at t = 0
    others = [_state(batch.slots[r]) for r in (0, 2)]
    for t in (1.5, 4.0, 9.0, 25.0):
        assert admit_due(row, t) == admit_due(sim, t)  # users arriving, Poisson jobs at empty queues
        switch_phases(row, t)
        switch_phases(sim, t)
        for slot in range(8):
            if sim.present[slot] and sim.queue[slot] > 0:
                assert complete(row, slot, t) == complete(sim, slot, t)  # next job (its size drawn) or departure
        assert _state(row) == _state(sim)
        assert noise(row, 0.02) == noise(sim, 0.02)  # one noise stream per instance, in the same order
    finished = [f if f is not None else math.nan for f in sim.finished_at]
    np.testing.assert_array_equal(batch.finished_at[1], finished)
    np.testing.assert_array_equal(batch.queue[1], sim.queue)  # the row's writes are the batch's
    assert [_state(batch.slots[r]) for r in (0, 2)] == others  # the other rows are untouched


@pytest.mark.parametrize("env_id", ["joulegym/EMRF-v0", "joulegym/EMRFResidual-v0", "joulegym/EMRFKnob-v0",
                                    "joulegym/EMRFKnobDiscrete-v0"])
def test_decode_checked_gives_the_rule_decode_gives(env_id):
    env = gym.make(env_id).unwrapped
    env.reset(seed=4)
    active = env._active_slots()
    assert active
    space = env.action_space
    validator = BatchValidator(space, 8)
    space.seed(4)
    batch = np.stack([space.sample() for _ in range(8)])
    if isinstance(space, gym.spaces.Box):
        batch = batch.astype(np.float64)
        batch[0, 0] = 1.0 + ACTION_TOLERANCE / 2  # outside the bounds, inside the tolerance: clipped by both
    for action, checked in zip(batch, validator.rows(batch)):
        plain, trusted = env.action_type.decode(action), env.action_type.decode_checked(checked)
        assert trusted.eta == plain.eta
        assert trusted(active) == plain(active)
