"""EMRF env shells: checkers, determinism, rendering, action modes, config errors (spec §7, App. B 8)."""

from __future__ import annotations

import itertools
import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import joulegym  # noqa: F401  (registers the ids)
from joulegym import baselines
from joulegym.baselines.emrf import (
    EMRFSolverError,
    drf_allocate,
    drf_progressive_allocate,
    emrf_allocate,
    fair_share,
    wfq_allocate,
)
from joulegym.envs.emrf import allocation
from joulegym.envs.emrf.env import EMRFEnv
from joulegym.scenarios.emrf import SCENARIOS
from joulegym.scenarios import registered_ids

IDS = registered_ids("emrf")
KINDS = ("EMRF", "EMRFResidual", "EMRFKnob", "EMRFKnobDiscrete")


def test_every_scenario_registered_for_every_kind():
    assert len(IDS) == len(KINDS) * (len(SCENARIOS) + 1)
    for kind in KINDS:
        assert f"joulegym/{kind}-v0" in IDS
        for name in SCENARIOS:
            assert f"joulegym/{kind}-{name}-v0" in IDS
    for name in ("toy-ex1", "toy-ex2", "apu-m1", "apu-m2", "apu-m3", "apu-m4", "apu-m5", "apu-m1-eps",
                 "apu-nusers-2", "apu-nusers-5", "apu-random", "apu-phases", "apu-dynamic"):
        assert name in SCENARIOS


@pytest.mark.parametrize("env_id", IDS)
def test_checkers(env_id):
    gym_check_env(gym.make(env_id, render_mode="ansi").unwrapped, skip_render_check=False)
    if env_id.count("-") == 1:  # rgb_array through the checker on each kind's base id (test_render: all kinds)
        gym_check_env(gym.make(env_id, render_mode="rgb_array").unwrapped, skip_render_check=False)
    sb3_check_env(gym.make(env_id).unwrapped, warn=False)


def _rollout(env_id: str, seed: int, steps: int = 30, **kwargs):
    env = gym.make(env_id, **kwargs)
    obs, info = env.reset(seed=seed)
    env.action_space.seed(seed)
    trace = [obs]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        trace += [obs, np.array([reward])]
        if terminated or truncated:
            break
    metrics = {k: v for k, v in info["metrics"].items() if np.isscalar(v)}
    return np.concatenate([np.ravel(t) for t in trace]), metrics


@pytest.mark.parametrize("env_id", IDS)
def test_deterministic_under_seed_and_renders(env_id):
    """Every id: the same seed gives the same trajectory and metrics; ansi and rgb_array render."""
    kwargs = {"xi_noise": 0.02} if "phases" in env_id or env_id.count("-") == 1 else {}
    a, ma = _rollout(env_id, 7, **kwargs)
    b, mb = _rollout(env_id, 7, **kwargs)
    np.testing.assert_array_equal(a, b)
    assert ma == mb
    for mode in ("ansi", "rgb_array"):
        env = gym.make(env_id, render_mode=mode)
        env.reset(seed=0)
        env.step(env.action_space.sample())
        frame = env.render()
        if mode == "ansi":
            assert "GFLOPS" in frame and "U_cpu" in frame
        else:
            assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3 and frame.std() > 0
        env.close()


def test_random_scenario_seeds_differ():
    a, _ = _rollout("joulegym/EMRF-apu-random-v0", 7)
    c, _ = _rollout("joulegym/EMRF-apu-random-v0", 8)
    assert a.shape != c.shape or not np.array_equal(a, c)


def test_common_random_numbers_across_policies():
    """One seed gives every policy the same jobs at the same times (per-slot random streams)."""
    arrivals = {}
    for name in ("emrf", "wfq"):
        env = gym.make("joulegym/EMRF-apu-random-v0")
        policy = baselines.make(name)
        obs, info = env.reset(seed=4)
        policy.reset(env)
        trace = []
        for _ in range(80):
            obs, *_, info = env.step(policy.act(obs, info))
            trace.append(tuple(env.unwrapped.sim.jobs_total))
        arrivals[name] = trace
    assert arrivals["emrf"] == arrivals["wfq"] and arrivals["emrf"][-1] != arrivals["emrf"][0]


def test_phase_timeline_does_not_depend_on_the_policy():
    """xi phases switch on time whether or not the user has work (simulator docstring, "xi phases"), so
    every policy sees the same phase timeline, also for open-loop users idle between jobs."""
    apps = [{"app": "GE", "jobs": 1, "arrival_rate": 0.05}, {"app": "KM", "jobs": 1, "arrival_rate": 0.05},
            {"app": "BT"}]
    timelines = {}
    for name in ("emrf", "wfq"):
        env = gym.make("joulegym/EMRF-v0", apps=apps, random=None, eta_choices=None, phase_delta=0.15,
                       horizon=150)
        policy = baselines.make(name)
        obs, info = env.reset(seed=0)
        policy.reset(env)
        sim = env.unwrapped.sim
        trace = []
        for _ in range(150):
            obs, *_, info = env.step(policy.act(obs, info))
            trace.append((tuple(sim.phase), tuple(sim.xi)))
        timelines[name] = trace
    assert timelines["emrf"] == timelines["wfq"]
    assert len({phase for phase, _ in timelines["emrf"]}) >= 3  # both users switched


def test_render_ansi_lists_the_users():
    env = gym.make("joulegym/EMRF-apu-m1-v0", render_mode="ansi")
    env.reset(seed=0)
    env.step(env.action_space.sample())
    frame = env.render()
    assert all(app in frame for app in ("GE", "KM", "HW", "MY", "BT"))


def test_vector_env_smoke():
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("joulegym/EMRF-apu-random-v0") for _ in range(2)])
    obs, _ = envs.reset(seed=[1, 2])
    for _ in range(3):
        obs, *_ = envs.step(envs.action_space.sample())
    assert obs.shape == (2, envs.single_observation_space.shape[0])


# --- App. B item 8: action maps ---------------------------------------------------------------------
def test_weights_action_reproduces_any_saturating_allocation():
    env = gym.make("joulegym/EMRF-toy-ex2-v0").unwrapped
    env.reset(seed=0)
    caps, xi, w = (100.0, 800.0), [0.1, 0.4, 0.5], [1.0, 1.0, 1.0]
    for target in (emrf_allocate(caps, xi, w, 0.5), drf_allocate(caps, xi, w), wfq_allocate(caps, xi, w),
                   emrf_allocate(caps, xi, w, 0.0, tie_break="vertex")):
        action = np.zeros(8)
        action[:3] = target / target.max()
        np.testing.assert_allclose(env.allocation_for(action)[:3], target, rtol=1e-12)
        # omega = F* up to any positive scale (the spec's "omega = F*, t* = 1" scaled into the Box)
        np.testing.assert_allclose(env.allocation_for(0.25 * action)[:3], target, rtol=1e-12)


def test_residual_action_reproduces_emrf():
    env = gym.make("joulegym/EMRFResidual-toy-ex2-v0").unwrapped
    env.reset(seed=0)
    caps, xi, w = (100.0, 800.0), [0.1, 0.4, 0.5], [1.0, 1.0, 1.0]
    target = emrf_allocate(caps, xi, w, 0.5)
    f_prime = target - 0.5 * drf_allocate(caps, xi, w)
    action = np.zeros(8)
    action[:3] = f_prime / f_prime.max()
    np.testing.assert_allclose(env.allocation_for(action)[:3], target, rtol=1e-12)
    # any residual action keeps the fairness floor (V = 0 by construction)
    rng = np.random.default_rng(0)
    for _ in range(20):
        f = env.allocation_for(rng.uniform(0, 1, 8).astype(np.float32))[:3]
        assert np.all(f >= 0.5 * drf_allocate(caps, xi, w) - 1e-9)


@pytest.mark.parametrize(("kind", "action"), [("EMRFKnob", np.array([0.5], dtype=np.float32)),
                                              ("EMRFKnobDiscrete", 5)])
def test_knob_actions(kind, action):
    env = gym.make(f"joulegym/{kind}-toy-ex1-v0").unwrapped
    env.reset(seed=0)
    np.testing.assert_allclose(env.allocation_for(action)[:2], [735.2941176, 66.1764706], rtol=1e-7)
    if kind == "EMRFKnobDiscrete":
        _, info = env.reset(seed=0)
        assert info["action_mask"].all() and env.action_masks().shape == (11,)


def test_in_window_reallocation_rules():
    """On an event inside a window (spec §3.2): knob modes re-solve EMRF over the remaining users; weight
    modes re-scale the same ω over them (the weighted fair scheduler is work-conserving in t)."""
    caps = (24.0, 480.0)
    xi, w = [0.21, 0.07, 0.24, 1.0, 0.0], [2.0, 1.0, 3.0, 4.0, 1.0]  # M1
    remaining = (0, 1, 2, 3)  # BT (slot 4) has finished
    knob = gym.make("joulegym/EMRFKnob-apu-m1-v0").unwrapped
    knob.reset(seed=0)
    rule, _ = knob.decode_action(np.array([0.3]))
    got = np.array(rule(remaining))
    np.testing.assert_allclose(got[:4], emrf_allocate(caps, xi[:4], w[:4], 0.3), rtol=1e-9)
    assert np.all(got[4:] == 0)
    weights = gym.make("joulegym/EMRF-apu-m1-v0").unwrapped
    weights.reset(seed=0)
    omega = np.array([0.2, 0.4, 0.6, 0.8, 1.0, 0, 0, 0])
    rule, _ = weights.decode_action(omega)
    got = np.array(rule(remaining))[:4]
    np.testing.assert_allclose(got / got[0], omega[:4] / omega[0], rtol=1e-12)
    assert max(got @ np.array(xi[:4]) / 24.0, got @ (1 - np.array(xi[:4])) / 480.0) == pytest.approx(1.0)


LATE_PAIR = [{"name": "gpu", "xi_cpu": 0.0, "job_gflop": 1e9},  # backlogged, GPU only
             {"name": "cpu", "xi_cpu": 1.0, "job_gflop": 1e9, "jobs": 1, "arrival": 0.5}]  # CPU only, at 0.5 s


def _late_pair_env(mode: str, **kwargs) -> EMRFEnv:
    env = EMRFEnv(apps=LATE_PAIR, random=None, eta_choices=None, eta=0.5, action_mode=mode, **kwargs)
    env.reset(seed=0)
    return env


def test_admit_at_window_config_key():
    assert EMRFEnv.default_config()["admit_at_window"] is False
    assert _late_pair_env("knob").sim.admit_at_window is False
    assert _late_pair_env("knob", admit_at_window=True).sim.admit_at_window is True
    assert gym.make("joulegym/EMRF-v0", admit_at_window=True).unwrapped.sim.admit_at_window is True


def test_arrival_inside_the_window_through_the_env():
    """A user arriving at 0.5 s is allocated at once with its app's xi (EMRF: GPU 480 to one, CPU 24 to the
    other), not with the decision's stale xi_hat; with admit_at_window it waits for the next window."""
    env = _late_pair_env("knob")
    _, reward, _, _, info = env.step(np.array([0.5], dtype=np.float32))
    np.testing.assert_allclose(info["delivered"][:2], [480.0, 12.0])
    assert info["arrivals_joined"] == 1 and info["arrivals_waited"] == 0 and info["arrivals_readmitted"] == 0
    assert reward == pytest.approx((0.5 * 480 + 0.5 * 504) / 504)  # E, no floor violation
    _, _, _, _, info = env.step(np.array([0.5], dtype=np.float32))
    np.testing.assert_allclose(info["delivered"][:2], [480.0, 24.0])

    env = _late_pair_env("knob", admit_at_window=True)
    _, reward, _, _, info = env.step(np.array([0.5], dtype=np.float32))
    np.testing.assert_allclose(info["delivered"][:2], [480.0, 0.0])
    assert info["arrivals_joined"] == 0 and info["arrivals_waited"] == 0 and reward == pytest.approx(480 / 504)
    _, _, _, _, info = env.step(np.array([0.5], dtype=np.float32))
    np.testing.assert_allclose(info["delivered"][:2], [480.0, 24.0])


def test_arrival_given_zero_weight_waits_outside_the_measures():
    """The EMRF policy's ω is 0 on the slot idle at the decision: the arrival waits (no rate, no floor
    violation counted for it) and is active at the next decision."""
    env = _late_pair_env("weights")
    obs, info = env.reset(seed=0)
    policy = baselines.make("emrf")
    policy.reset(env)
    action = policy.act(obs, info)
    assert action[1] == 0.0
    obs, _, _, _, info = env.step(action)
    np.testing.assert_allclose(info["delivered"][:2], [480.0, 0.0])
    assert info["arrivals_joined"] == 0 and info["arrivals_waited"] == 1 and info["reward_vector"][2] == 0.0
    assert info["scheduler_inputs"]["active"][:2] == (True, True)
    _, _, _, _, info = env.step(policy.act(obs, info))
    np.testing.assert_allclose(info["delivered"][:2], [480.0, 24.0])


def test_toy_step_info():
    env = gym.make("joulegym/EMRF-toy-ex1-v0")
    _, info = env.reset(seed=0)
    f = np.asarray(info["reference_allocations"]["emrf"])
    _, reward, _, _, info = env.step((f / f.max()).astype(np.float32))
    np.testing.assert_allclose(info["allocation"][:2], [735.29411765, 66.17647059], rtol=1e-6)
    assert info["U_cpu"] == pytest.approx(1.0, rel=1e-6) and info["U_gpu"] == pytest.approx(0.8768, abs=1e-4)
    assert info["delta_bound"] == pytest.approx(1.125)
    assert info["soft_fairness"] == pytest.approx(1.125, rel=1e-6)
    assert info["ef_violations"] == 1 and info["si_violations"] == 1  # Theorem 3 false; SI not guaranteed
    assert reward == pytest.approx(801.47 / 900, abs=1e-5)
    np.testing.assert_allclose(info["reward_vector"], [801.4705882 / 900, -1.125 / 2, 0.0], atol=1e-6)
    m = info["metrics"]
    assert m["throughput_gflops"] == pytest.approx(801.4705882, rel=1e-6)
    assert all(isinstance(v, float) for k, v in m.items() if k not in ("per_user_gflops", "completion_times_s"))


def test_reference_allocations_in_info():
    """info["reference_allocations"]: what every reference policy would allocate now (spec §7 info)."""
    env = gym.make("joulegym/EMRF-toy-ex2-v0")
    _, info = env.reset(seed=0)
    caps, xi, w = (100.0, 800.0), [0.1, 0.4, 0.5], [1.0, 1.0, 1.0]
    refs = {k: np.asarray(v)[:3] for k, v in info["reference_allocations"].items()}
    share = fair_share(caps, xi, w)
    expected = {"emrf": emrf_allocate(caps, xi, w, 0.5), "drf": drf_allocate(caps, xi, w),
                "drf-progressive": drf_progressive_allocate(caps, xi, w), "wfq": wfq_allocate(caps, xi, w),
                "static-partition": share / max(0.1 * share[0] + 0.4 * share[1] + 0.5 * share[2],
                                                (0.9 * share[0] + 0.6 * share[1] + 0.5 * share[2]) / 8) * 100,
                "max-utilisation": emrf_allocate(caps, xi, w, 0.0), "fair-share": share}
    assert set(refs) == set(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(refs[key], value, rtol=1e-9, err_msg=key)
    assert np.all(np.asarray(info["reference_allocations"]["emrf"])[3:] == 0)
    again = pickle.loads(pickle.dumps(info["reference_allocations"]))  # vector envs pickle info
    assert dict(again) == dict(info["reference_allocations"])
    _, _, _, _, info = env.step(np.ones(8, dtype=np.float32))
    for key in ("U_cpu", "U_gpu", "allocation", "delivered", "soft_fairness", "delta_bound", "si_violations",
                "ef_violations", "reward_vector", "metrics", "scheduler_inputs", "eta"):
        assert key in info, key


def test_episode_end_metrics_on_m1():
    """Spec §7 "At episode end": makespan, per-user completion times, Θ = sum W_i / T_i, mean E, Jain."""
    env = gym.make("joulegym/EMRFKnob-apu-m1-v0")
    env.reset(seed=0)
    efficiencies = []
    while True:
        *_, terminated, truncated, info = env.step(np.array([0.1], dtype=np.float32))
        efficiencies.append(info["reward_vector"][0])
        if terminated or truncated:
            break
    assert terminated
    m = info["metrics"]
    sim = env.unwrapped.sim
    times = m["completion_times_s"][:5]
    sizes = [u.job_gflop for u in sim.users[:5]]
    assert m["makespan_s"] == pytest.approx(times.max())
    assert m["job_throughput_gflops"] == pytest.approx(sum(s / t for s, t in zip(sizes, times)), rel=1e-12)
    assert m["mean_efficiency"] == pytest.approx(np.mean(efficiencies), rel=1e-12)
    assert 0 < m["jain_fairness"] <= 1
    # BT (pure GPU) finishes first under EMRF(0.1): it gets the idle GPU (spec §6.2 Fig. 5: BT ends first)
    assert times.argmin() == 4


def test_algorithm1_discrete_scheduler_option():
    """``task_gflop``: every allocation goes through Alg. 1's discrete scheduler (spec §3.2 option)."""
    fluid = gym.make("joulegym/EMRF-apu-m1-v0").unwrapped
    policy = baselines.make("emrf")
    _, info = fluid.reset(seed=0)
    policy.reset(fluid)
    action = policy.act(None, info)
    target = fluid.allocation_for(action)
    for strict in (False, True):
        env = gym.make("joulegym/EMRF-apu-m1-v0", task_gflop=0.01, strict_stop=strict).unwrapped
        env.reset(seed=0)
        got = env.allocation_for(action)
        assert np.all(np.abs(got - target) <= 0.2)  # M1 at 0.01-GFLOPS slices: within 0.13 (strict) / 0.02
        if strict:  # line 9's stop: nobody gets more than a slice above F*
            assert np.all(got <= target + 0.01 + 1e-9)
        _, _, _, _, info = env.step(action)
        np.testing.assert_allclose(info["allocation"], got)
    drf = baselines.make("drf")
    drf.reset(fluid)
    skip = gym.make("joulegym/EMRF-apu-m1-v0", task_gflop=0.01).unwrapped
    skip.reset(seed=0)
    assert skip.allocation_for(drf.act(None, info))[4] == pytest.approx(407.26, abs=0.05)  # BT backfills the GPU


def test_lp_solver_highs_gives_the_same_episode():
    """The env's closed-form LP (default) and lp_solver="highs" give the same trajectory (to round-off)."""
    runs = {}
    for solver in ("closed-form", "highs"):
        env = gym.make("joulegym/EMRFKnob-apu-random-v0", lp_solver=solver)
        env.reset(seed=2)
        allocs = []
        for k in range(15):
            *_, info = env.step(np.array([(k % 5) / 4], dtype=np.float32))
            allocs.append(info["allocation"])
        runs[solver] = np.array(allocs)
    np.testing.assert_allclose(runs["closed-form"], runs["highs"], rtol=0, atol=1e-9 * 504)


def test_solver_failure_propagates_through_the_env(monkeypatch):
    """With HiGHS in the loop (lp_solver="highs" or tie_break="vertex") a failed solve raises; no zero allocation."""
    import scipy.optimize

    for kwargs in ({"lp_solver": "highs"}, {"tie_break": "vertex"}):
        env = gym.make("joulegym/EMRFKnob-toy-ex1-v0", **kwargs)
        monkeypatch.setattr(scipy.optimize, "linprog", lambda *a, **k: type(
            "Failed", (), {"status": 4, "message": "numerical difficulties (simulated)", "x": None})())
        allocation.emrf_core.cache_clear()
        try:
            with pytest.raises(EMRFSolverError, match="numerical difficulties"):
                env.reset(seed=0)
                env.step(np.array([0.3], dtype=np.float32))
        finally:
            monkeypatch.undo()
            allocation.emrf_core.cache_clear()


def test_scalarized_reward():
    env = gym.make("joulegym/EMRFKnob-toy-ex1-v0", reward="scalarized", beta=0.25)
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.array([0.5], dtype=np.float32))
    e, neg_delta, _ = info["reward_vector"]
    assert reward == pytest.approx(0.75 * e + 0.25 * neg_delta)


def test_vector_reward_mode():
    """``vector``: the scalar is the floor reward E - λ V; the objectives are in info["reward_vector"]."""
    rewards = {}
    for mode in ("floor", "vector"):
        env = gym.make("joulegym/EMRF-apu-m1-v0", reward=mode)
        env.reset(seed=0)
        _, rewards[mode], _, _, info = env.step(np.array([1, 0, 1, 1, 0.5, 0, 0, 0], dtype=np.float32))
        e, _, neg_v = info["reward_vector"]
        assert neg_v < 0  # KM and BT starved below the floor: V > 0
        assert rewards[mode] == pytest.approx(e + 50.0 * neg_v)
    assert rewards["floor"] == rewards["vector"]


def test_batch_scenario_terminates():
    env = gym.make("joulegym/EMRFKnob-apu-m1-v0")
    env.reset(seed=0)
    for _ in range(200):
        *_, terminated, truncated, info = env.step(np.array([0.1], dtype=np.float32))
        if terminated or truncated:
            break
    assert terminated and not truncated
    m = info["metrics"]
    assert m["jobs_completed"] == 5 and m["makespan_s"] > 0
    assert np.all(np.isfinite(m["completion_times_s"][:5]))


@pytest.mark.parametrize("kind", KINDS)
def test_dynamic_scenario_arrivals_inside_windows_and_emrf_saturates(kind):
    """``apu-dynamic``: the late users arrive inside windows (events, not boundary admissions), the active
    set changes inside windows, and the EMRF policy's allocation is feasible and saturates a device in every
    window with work: at the decision (planned F, decision xi_hat) and in every segment of the window
    (delivered rates, true xi: the re-scaled/re-solved allocation after an arrival or departure)."""
    env = gym.make(f"joulegym/{kind}-apu-dynamic-v0")
    base = env.unwrapped
    sim = base.sim
    segments: list[list] = []
    window = sim.window

    def recording_window(rule):
        result = window(rule)
        segments.append(result.segments)
        return result

    sim.window = recording_window
    policy = baselines.make("emrf")
    obs, info = env.reset(seed=0)
    policy.reset(env)
    caps = np.array(base.capacities)
    joined = waited = windows_with_work = 0
    inner_changes = 0
    for _ in range(base.horizon):
        inputs = info["scheduler_inputs"]
        active = np.flatnonzero(inputs["active"])
        xi = np.asarray(inputs["xi_cpu"])
        action = policy.act(obs, info)
        segments.clear()
        sim_window_start = sim.time
        obs, _, terminated, truncated, info = env.step(action)
        joined += info["arrivals_joined"]
        waited += info["arrivals_waited"]
        if active.size:
            windows_with_work += 1
            f = info["allocation"]
            use = np.array([f[active] @ xi[active], f[active] @ (1 - xi[active])]) / caps
            assert use.max() <= 1 + 1e-9 and use.max() == pytest.approx(1.0, abs=1e-9), (sim_window_start, use)
        (segs,) = segments
        inner_changes += sum(1 for a, b in itertools.pairwise(segs) if a[1] != b[1])
        for dt, seg_active, rates in segs:
            if not seg_active or dt <= 0:
                continue
            r = np.array([rates[i] for i in seg_active])
            x = np.array([sim.xi[i] for i in seg_active])
            use = np.array([r @ x, r @ (1 - x)]) / caps
            assert use.max() <= 1 + 1e-9 and use.max() == pytest.approx(1.0, abs=1e-9), (sim_window_start, use)
        if terminated or truncated:
            break
    assert terminated and not truncated
    late = [slot for slot, user in enumerate(sim.users) if user is not None and user.arrival > 0]
    assert len(late) == 3 and joined + waited == len(late)  # each late user arrived inside a window
    # weights: the EMRF action gives a slot without work omega = 0, so the arrival waits for the next
    # decision; the other modes re-solve (or re-split the residual) and admit it at once
    assert (joined, waited) == ((0, 3) if kind == "EMRF" else (3, 0))
    assert inner_changes >= 5  # departures (and arrivals that join) change the active set inside windows
    assert windows_with_work == sim.windows
    m = info["metrics"]
    assert m["jobs_completed"] == 8 and np.all(m["completion_times_s"][:5] > 0)


# --- invalid input ------------------------------------------------------------------------------------
@pytest.mark.parametrize("action", [np.full(8, np.nan), np.full(8, 1.5), np.full(3, 0.5), -np.ones(8)])
def test_bad_box_action(action):
    env = gym.make("joulegym/EMRF-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(action)


def test_bad_discrete_action():
    env = gym.make("joulegym/EMRFKnobDiscrete-v0")
    env.reset(seed=0)
    for bad in (11, -1, 2.5):
        with pytest.raises(ValueError, match="action"):
            env.step(bad)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"capacities": [0, 480]}, "capacities"),
    ({"capacities": [-24, 480]}, "capacities"),
    ({"apps": [{"xi_cpu": 1.3}], "random": None}, "xi_cpu"),
    ({"apps": [{"xi_cpu": -0.1}]}, "xi_cpu"),
    ({"apps": [{"app": "GE", "weight": 0}]}, "weight"),
    ({"apps": [{"app": "GE", "weight": -1}]}, "weight"),
    ({"apps": [{"app": "NOPE"}]}, "app"),
    ({"apps": [{"app": "GE", "colour": 1}]}, "colour"),
    ({"eta": 1.5}, "eta"),
    ({"eta": -0.2}, "eta"),
    ({"eta_choices": [0.1, 2.0]}, "eta_choices"),
    ({"action_mode": "bogus"}, "action_mode"),
    ({"reward": "bogus"}, "reward"),
    ({"tie_break": "glpk"}, "tie_break"),
    ({"lp_solver": "glpk"}, "lp_solver"),
    ({"task_gflop": 0}, "task_gflop"),
    ({"strict_stop": "yes"}, "strict_stop"),
    ({"admit_at_window": 1}, "admit_at_window"),
    ({"admit_at_window": "no"}, "admit_at_window"),
    ({"window_s": 0}, "window_s"),
    ({"apps": [{"app": "GE", "jobs": 0}], "random": None}, "jobs"),
    ({"max_users": 2}, "max_users"),  # M1 has 5 users: infeasible
    ({"apps": [], "random": None}, "apps"),
    ({"random": {"n_users": [2, 9]}}, "n_users"),
    ({"random": {"apps": ["NOPE"]}}, "app"),
    ({"horizon": 0}, "horizon"),
    ({"bogus_key": 1}, "bogus_key"),
])
def test_bad_config(kwargs, field):
    with pytest.raises(ValueError, match=field):
        gym.make("joulegym/EMRF-v0", **kwargs)


def test_unknown_scenario():
    with pytest.raises(ValueError, match="scenario"):
        gym.make("joulegym/EMRF-v0", scenario="apu-m9")


def test_kind_follows_action_mode_kwarg():
    env = gym.make("joulegym/EMRF-v0", action_mode="knob").unwrapped
    assert env.kind == "EMRFKnob" and env.action_space.shape == (1,)
    assert isinstance(env, EMRFEnv)
