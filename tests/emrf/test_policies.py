"""EMRF reference policies through the registry (issue #3 deliverable 6; spec §7 "Reference policies")."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest

from joulegym import baselines
from joulegym.baselines.emrf import drf_allocate, emrf_allocate, wfq_allocate
from joulegym.scenarios.emrf import SCENARIOS
from joulegym.scenarios import registered_ids

KINDS = ("EMRF", "EMRFResidual", "EMRFKnob", "EMRFKnobDiscrete")
NAMES = ("emrf", "drf", "drf-progressive", "wfq", "static-partition", "max-utilisation", "random")


def test_registry_names():
    assert set(NAMES) <= set(baselines.available("emrf"))
    assert set(baselines.applicable(gym.make("joulegym/EMRFKnob-v0"))) == {"random", "emrf", "max-utilisation"}
    assert set(baselines.applicable(gym.make("joulegym/EMRFResidual-v0"))) == {"random", "emrf"}


@pytest.mark.parametrize("env_id", registered_ids("emrf"))
def test_every_applicable_policy_drives_every_id(env_id):
    env = gym.make(env_id)
    for name in baselines.applicable(env):
        policy = baselines.make(name)
        obs, info = env.reset(seed=3)
        policy.reset(env, seed=3)
        for _ in range(3):
            obs, reward, terminated, truncated, info = env.step(policy.act(obs, info))
            assert np.isfinite(reward)
            if terminated or truncated:
                break


@pytest.mark.parametrize("kind", ["EMRFKnob", "EMRFKnobDiscrete", "EMRFResidual"])
@pytest.mark.parametrize("name", ["drf", "drf-progressive", "wfq", "static-partition"])
def test_not_applicable_raises_from_reset(kind, name):
    env = gym.make(f"joulegym/{kind}-v0")
    env.reset(seed=0)
    with pytest.raises(baselines.PolicyNotApplicable):
        baselines.make(name).reset(env)


def test_emrf_knob_discrete_off_grid_and_residual_other_eta():
    with pytest.raises(baselines.PolicyNotApplicable, match="knob_discrete"):
        baselines.make("emrf", eta=0.25).reset(gym.make("joulegym/EMRFKnobDiscrete-v0"))
    with pytest.raises(baselines.PolicyNotApplicable, match="residual"):
        baselines.make("emrf", eta=0.5).reset(gym.make("joulegym/EMRFResidual-v0"))
    with pytest.raises(ValueError, match="eta"):
        baselines.make("emrf", eta=1.5)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scenario", [None, *sorted(SCENARIOS)])
def test_reference_action_reproduces_emrf_exactly(kind, scenario):
    """The EMRF policy's action gives the EMRF(eta_target) allocation through every action mode.

    Exactly (to 1e-12) the env's solver (the closed form), and to 1e-9 of C_tot emrf_allocate's default
    scipy HiGHS solution; on the base id and every named scenario, over several windows.
    """
    env = gym.make(f"joulegym/{kind}-{scenario}-v0" if scenario else f"joulegym/{kind}-v0")
    base = env.unwrapped
    policy = baselines.make("emrf")
    obs, info = env.reset(seed=11)
    policy.reset(env, seed=11)
    for _ in range(4):
        inputs = info["scheduler_inputs"]
        active = np.flatnonzero(inputs["active"])
        caps = inputs["capacities"]
        xi, w = np.asarray(inputs["xi_cpu"])[active], np.asarray(inputs["weights"])[active]
        expected = emrf_allocate(caps, xi, w, inputs["eta"], solver="closed-form")
        action = policy.act(obs, info)
        got = base.allocation_for(action)
        np.testing.assert_allclose(got[active], expected, rtol=1e-12, atol=1e-12 * sum(caps))
        np.testing.assert_allclose(got[active], emrf_allocate(caps, xi, w, inputs["eta"]), rtol=0,
                                   atol=1e-9 * sum(caps))
        assert np.all(np.delete(got, active) == 0)
        # the observation alone (float32) gives the same allocation up to float32 round-off
        np.testing.assert_allclose(base.allocation_for(policy.act(obs, {}))[active], expected, rtol=2e-4, atol=1e-3)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break


@pytest.mark.parametrize(("name", "func"), [("drf", drf_allocate), ("wfq", wfq_allocate)])
def test_baseline_actions_reproduce_their_allocations(name, func):
    env = gym.make("joulegym/EMRF-apu-m1-v0")
    policy = baselines.make(name)
    obs, info = env.reset(seed=0)
    policy.reset(env)
    inputs = info["scheduler_inputs"]
    active = np.flatnonzero(inputs["active"])
    got = env.unwrapped.allocation_for(policy.act(obs, info))[active]
    xi, w = np.asarray(inputs["xi_cpu"])[active], np.asarray(inputs["weights"])[active]
    np.testing.assert_allclose(got, func(inputs["capacities"], xi, w), rtol=1e-9)


def _perturbations(action, space, rng: np.random.Generator, count: int) -> list:
    """Small and large Gaussian perturbations of ``action`` and fully random actions (other levels if Discrete)."""
    if isinstance(space, gym.spaces.Discrete):
        return [level for level in range(space.n) if level != action]
    out = []
    for k in range(count):
        if k % 3 == 2:
            out.append(rng.uniform(0, 1, action.shape))  # a fully random action
        else:
            scale = 0.02 if k % 3 == 0 else 0.2
            out.append(np.clip(action + rng.normal(0, scale, action.shape), 0, 1))
    return [a.astype(np.float32) for a in out]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("kind", KINDS)
def test_emrf_beats_random_perturbations_under_floor_reward(kind, scenario):
    """Spec §7: under the ``floor`` reward EMRF(eta_target) beats random perturbations of itself.

    Every named scenario, every action mode: from the same state (a deep copy of the env), the one-step
    reward of the EMRF action is >= that of each perturbed action (knob modes: other etas).
    """
    env = gym.make(f"joulegym/{kind}-{scenario}-v0").unwrapped
    assert env.config["reward"] == "floor"
    policy = baselines.make("emrf")
    obs, info = env.reset(seed=5)
    policy.reset(env)
    rng = np.random.default_rng(0)
    checked = 0
    for step in range(12):
        action = policy.act(obs, info)
        if step % 4 == 0:
            twin_ref = copy.deepcopy(env)
            _, reward_ref, *_ = twin_ref.step(action)
            for perturbed in _perturbations(action, env.action_space, rng, 9):
                twin = copy.deepcopy(env)
                _, reward_p, *_ = twin.step(perturbed)
                assert reward_ref >= reward_p - 1e-9, (step, reward_ref, reward_p, perturbed)
                checked += 1
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    assert checked >= 9


@pytest.mark.parametrize("scenario", ["apu-m2", "apu-m3", "apu-m4", "apu-m5"])
def test_fig6_orderings_through_the_env(scenario):
    """Fig. 6 via env episodes: EMRF >= DRF >= WFQ throughput (DRF ~ WFQ on M4), DRF = EMRF on M5."""
    theta = {}
    for name in ("emrf", "drf", "wfq"):
        env = gym.make(f"joulegym/EMRF-{scenario}-v0")
        policy = baselines.make(name)
        obs, info = env.reset(seed=0)
        policy.reset(env)
        while True:
            obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
            if terminated or truncated:
                break
        theta[name] = info["metrics"]["throughput_gflops"]
    assert theta["emrf"] >= theta["drf"] * (1 - 1e-9) and theta["emrf"] >= theta["wfq"]
    if scenario == "apu-m4":
        assert theta["drf"] == pytest.approx(theta["wfq"], rel=0.01)
    else:
        assert theta["drf"] >= theta["wfq"]
    if scenario == "apu-m5":
        assert theta["emrf"] == pytest.approx(theta["drf"], rel=1e-9)


def test_emrf_policy_beats_random_on_its_metric():
    returns = {}
    for name in ("emrf", "random"):
        env = gym.make("joulegym/EMRF-apu-random-v0")
        policy = baselines.make(name)
        total = 0.0
        for seed in range(3):
            obs, info = env.reset(seed=seed)
            policy.reset(env, seed=seed)
            for _ in range(30):
                obs, reward, terminated, truncated, info = env.step(policy.act(obs, info))
                total += reward
                if terminated or truncated:
                    break
        returns[name] = total
    assert returns["emrf"] > returns["random"]
