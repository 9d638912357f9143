"""Regression: a hypothesis-drawn ``EMRFKnob-v0`` config took more than 60 s for 60 steps. The pathological configs
(found by fuzzing the config keys and timing each) make a window hold thousands of events: tiny jobs
(``solo_seconds=1e-6``, ``job_sigma=5``), floods of arrivals, 256 slots, fine Alg. 1 slices. The env now checks
the implied work per window at ``gym.make`` (``env.MAX_WINDOW_WORK``, ``env.MAX_TASK_SLICES``) and the simulator
stops a window beyond ``simulator.MAX_SEGMENTS`` events."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import joulegym  # noqa: F401
from joulegym.envs.emrf.config import MAX_WINDOW_WORK
from joulegym.envs.emrf.simulator import MAX_SEGMENTS, EMRFSimulator, UserSpec

FOUND = [  # configs the fuzzer found (> 20 s for 60 steps before the bound; the first ran 180 s)
    {"random": {"initial_jobs": 1000000}, "lp_solver": "closed-form", "max_users": 256, "solo_seconds": 1e-06,
     "task_gflop": 1.0, "xi_noise": 0.05},
    {"task_gflop": 1000000.0, "solo_seconds": 0.001, "window_s": 3600.0, "lp_solver": "highs",
     "random": {"job_sigma": 5.0, "arrival_rate": 1000000.0, "initial_jobs": 1}},
    {"solo_seconds": 1e-06, "phase_delta": 1.0, "lp_solver": "highs", "task_gflop": 1.0,
     "random": {"initial_jobs": 1, "arrival_rate": 1000.0}, "xi_noise": 1.0},
    {"random": {"job_sigma": 5.0}},  # median job 3.7e-6 of the mean: ~27,000 completions per window per user
    {"task_gflop": 1e-9},
]


@pytest.mark.parametrize("config", FOUND)
def test_pathological_configs_fail_fast_naming_the_limit(config):
    """Refused at ``gym.make``, before any window runs (they took minutes per 60 steps)."""
    with pytest.raises(ValueError, match=r"MAX_WINDOW_WORK|task_gflop"):
        gym.make("joulegym/EMRFKnob-v0", **config)


CONFIGS = st.fixed_dictionaries({}, optional={
    "window_s": st.sampled_from([1e-3, 1.0, 10.0, 3600.0]),
    "xi_noise": st.sampled_from([0.0, 0.05, 100.0]),
    "phase_delta": st.sampled_from([None, 1.0]),
    "task_gflop": st.sampled_from([None, 0.1, 1.0, 1e6]),
    "solo_seconds": st.sampled_from([1e-6, 1e-3, 10.0]),
    "admit_at_window": st.booleans(),
    "lp_solver": st.sampled_from(["closed-form", "highs"]),
    "max_users": st.sampled_from([8, 256]),
    "random": st.fixed_dictionaries({}, optional={
        "job_sigma": st.sampled_from([0.0, 2.0, 5.0]), "arrival_rate": st.sampled_from([0.0, 10.0, 1e6]),
        "initial_jobs": st.sampled_from([0, 1, 10**6]), "n_users": st.sampled_from([[2, 8], [8, 8]])}),
})


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=True)
@given(CONFIGS, st.integers(0, 100))
def test_every_accepted_config_steps_in_bounded_work(config, seed):
    """Any config either fails at make or runs 5 random-knob steps whose windows do bounded work: events per
    window x operations per event (users + Alg. 1 slices), the quantity ``MAX_WINDOW_WORK`` bounds in expectation,
    stays within 10x of it (lognormal job sizes scatter around the estimate). Counted, not timed."""
    try:
        env = gym.make("joulegym/EMRFKnob-v0", **config)
    except ValueError:
        return
    base = env.unwrapped
    task = base.config["task_gflop"]
    per_event = base.max_users + (base.c_tot / task if task is not None else 0.0)
    env.reset(seed=seed)
    env.action_space.seed(seed)
    for _ in range(5):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        work = len(base.sim.last_window.segments) * per_event
        assert work <= 10 * MAX_WINDOW_WORK, (config, work)
        if terminated or truncated:
            break


def test_the_defaults_imply_little_work():
    env = gym.make("joulegym/EMRFKnob-v0", max_users=256, random={"n_users": [2, 256]})
    assert env.unwrapped.max_users == 256  # accepted: well under MAX_WINDOW_WORK
    assert MAX_WINDOW_WORK >= 1e5


def test_simulator_stops_a_window_with_too_many_events():
    sim = EMRFSimulator((100.0, 800.0), 1, window_s=1.0)
    sim.reset(np.random.default_rng(0), [UserSpec("tiny", 0.5, 1.0, job_gflop=1e-9)])
    with pytest.raises(RuntimeError, match="MAX_SEGMENTS"):
        sim.window(lambda active: [100.0])
    assert MAX_SEGMENTS == 100_000


@pytest.mark.parametrize(("env_id", "overrides", "field"), [
    # /tmp/fuzz-findings.md E1: solo_seconds=1e308 made the job sizes inf and the observation NaN at reset
    ("joulegym/EMRF-v0", {"solo_seconds": 1e308}, "solo_seconds"),
    ("joulegym/EMRF-v0", {"apps": [{"app": "GE", "job_gflop": 1e308}], "random": None}, r"apps\[0\].job_gflop"),
    # E2: knob_levels=1e308 overflowed gym.spaces.Discrete
    ("joulegym/EMRFKnobDiscrete-v0", {"knob_levels": 1e308}, "knob_levels"),
    # E3: a non-string random.apps entry gave a message without the field
    ("joulegym/EMRF-v0", {"random": {"apps": [1]}}, r"random.apps\[0\]"),
    ("joulegym/EMRF-v0", {"apps": [{"app": 1}], "random": None}, r"apps\[0\].app"),
])
def test_fuzz_findings_raise_naming_the_field(env_id, overrides, field):
    with pytest.raises(ValueError, match=field):
        gym.make(env_id, **overrides)


def test_largest_allowed_sizes_give_finite_observations():
    env = gym.make("joulegym/EMRF-v0", solo_seconds=1e9, random={"job_sigma": 5.0, "n_users": [2, 2]}, window_s=1.0)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    obs, reward, *_ = env.step(env.action_space.sample())
    assert env.observation_space.contains(obs) and np.isfinite(reward)
