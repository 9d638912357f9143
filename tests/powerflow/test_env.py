"""``joulegym/PowerFlow-v0`` and its scenario ids (spec §9; DESIGN.md conventions)."""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import joulegym  # noqa: F401  (registers the ids)
from joulegym import baselines
from joulegym.scenarios import registered_ids
from joulegym.scenarios.powerflow import SCENARIOS
from tests.reference_data import REF

IDS = registered_ids("powerflow")
REAL = {"joulegym/PowerFlow-philly-103959-v0": REF / "elasticflow" / "philly_103959.csv",
        "joulegym/PowerFlow-philly-24h-v0": REF / "pollux-philly" / "philly_2017-10-13_24h.csv"}


def make(env_id: str, **kw):
    if env_id in REAL:
        pytest.importorskip("joulegym.workloads.traces").__dict__.get("load_trace") or pytest.skip("no load_trace")
        if not REAL[env_id].is_file():
            pytest.skip(f"{REAL[env_id]} is absent (reference data not shipped)")
        kw.setdefault("trace_path", str(REAL[env_id]))
    return gym.make(env_id, **kw)


def test_every_scenario_is_registered():
    assert "joulegym/PowerFlow-v0" in IDS
    for name in ("motivating2gpu", "tiny", "small100", "alibaba1901", "load-0.5", "load-2.0", "cluster-16",
                 "cluster-128", "jobsize-1", "jobsize-8", "philly-103959", "philly-24h"):
        assert f"joulegym/PowerFlow-{name}-v0" in IDS and name in SCENARIOS


@pytest.mark.parametrize("env_id", IDS)
def test_checkers_pass_quickly(env_id):
    start = time.perf_counter()
    env = make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env(env.unwrapped)
    assert time.perf_counter() - start < 10.0  # "within a few seconds": ~1 s measured at worst (alibaba1901)
    env.close()


@pytest.mark.parametrize("mode", ["alloc", "micro", "priority"])
def test_action_modes_pass_checkers_and_run(mode):
    env = gym.make("joulegym/PowerFlow-tiny-v0", action_mode=mode)
    check_env(env.unwrapped, skip_render_check=True)
    obs, info = env.reset(seed=3)
    pol = baselines.make("powerflow-strict")
    pol.reset(env)
    for _ in range(5000):
        obs, _, term, trunc, info = env.step(pol.act(obs, info))
        assert env.observation_space.contains(obs)
        if term or trunc:
            break
    assert term and info["metrics"]["jobs_done"] == info["metrics"]["jobs_total"]


def _episode(env_id: str, policy: str, seed: int, **kw):
    env = make(env_id, **kw)
    obs, info = env.reset(seed=seed)
    pol = baselines.make(policy)
    pol.reset(env, seed=seed)
    total, obs_trace = 0.0, []
    while True:
        obs, r, term, trunc, info = env.step(pol.act(obs, info))
        total += r
        obs_trace.append(obs)
        if term or trunc:
            return total, info, np.array(obs_trace), term


@pytest.mark.parametrize("env_id", ["joulegym/PowerFlow-tiny-v0", "joulegym/PowerFlow-motivating2gpu-v0"])
def test_deterministic_under_seed(env_id):
    a = _episode(env_id, "powerflow-strict", 7)
    b = _episode(env_id, "powerflow-strict", 7)
    assert a[0] == b[0] and a[1]["metrics"] == b[1]["metrics"]
    np.testing.assert_array_equal(a[2], b[2])
    c = _episode("joulegym/PowerFlow-tiny-v0", "powerflow-strict", 8)
    assert c[1]["metrics"] != a[1]["metrics"] or env_id != "joulegym/PowerFlow-tiny-v0"


@pytest.mark.parametrize("env_id", IDS)
def test_every_id_is_deterministic_and_renders(env_id):
    """Same seed, same first 25 steps (obs, rewards, info metrics) with the reference policy; both render modes."""
    def run():
        env = make(env_id, render_mode="rgb_array")
        obs, info = env.reset(seed=11)
        pol = baselines.make("powerflow-strict")
        pol.reset(env, seed=11)
        trace = [obs]
        for _ in range(25):
            obs, r, term, trunc, info = env.step(pol.act(obs, info))
            trace.append(np.append(obs, r))
            if term or trunc:
                break
        return env, np.concatenate(trace), info["metrics"]

    env, a, m_a = run()
    _, b, m_b = run()
    np.testing.assert_array_equal(a, b)
    assert m_a == m_b
    img = env.render()
    assert img.ndim == 3 and img.shape[2] == 3 and img.dtype == np.uint8
    assert "slot" in env.unwrapped._render_ansi()


def test_vector_env_smoke():
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("joulegym/PowerFlow-tiny-v0") for _ in range(2)])
    obs, _ = envs.reset(seed=[0, 1])
    assert obs.shape == (2, *envs.single_observation_space.shape)
    for _ in range(20):
        obs, rew, *_ = envs.step(envs.action_space.sample())
        assert np.all(np.isfinite(rew)) and obs.dtype == np.float32
    envs.close()


def test_return_is_minus_average_jct_hours():
    total, info, _, term = _episode("joulegym/PowerFlow-tiny-v0", "powerflow-strict", 1)
    assert term
    assert total == pytest.approx(-info["metrics"]["avg_jct_h"], rel=1e-9)
    for key in ("avg_jct_s", "avg_jct_h", "total_energy_j", "total_energy_kwh", "makespan_s", "cluster_power_w",
                "energy_busy_j", "energy_idle_j", "energy_prerun_j", "energy_profiling_j"):
        assert isinstance(info["metrics"][key], float)
    assert isinstance(info["reward_vector"], np.ndarray) and info["reward_vector"].shape == (2,)


def test_return_with_penalties_is_exact():
    """Penalty mode (no repair; lambda_P = 1) and an energy weight: the undiscounted return is exactly minus the
    average JCT in hours minus lambda_P * overshoot / (3600 PL) minus lambda_E * energy / (3600 G P_max)."""
    lam_e = 0.3
    total, info, _, term = _episode("joulegym/PowerFlow-tiny-v0", "powerflow", 2, eta=0.4, power_constraint="penalty",
                                    lambda_e=lam_e)
    assert term
    m = info["metrics"]
    g_pmax = m["power_limit_w"] / 0.4  # G * P_max = PL / eta
    expected = (-m["avg_jct_h"] - m["power_violation_wh"] / m["power_limit_w"]
                - lam_e * m["total_energy_j"] / (3600 * g_pmax))
    assert total == pytest.approx(expected, rel=1e-9)
    assert m["power_violation_wh"] > 0  # the faithful policy overshoots without the repair: the penalty is live


def test_strict_env_keeps_power_under_budget():
    _, info, _, _ = _episode("joulegym/PowerFlow-tiny-v0", "powerflow", 2, eta=0.4)
    m = info["metrics"]
    assert m["max_job_power_w"] <= m["power_limit_w"] * (1 + 1e-3)


def test_masked_action_is_repaired_and_flagged():
    env = gym.make("joulegym/PowerFlow-tiny-v0")
    env.reset(seed=0)
    K = env.unwrapped.K
    bad = np.zeros(2 * K, dtype=np.int64)
    bad[:K] = env.unwrapped.n_levels - 1  # every slot (also empty ones) asks for the largest block
    _, _, _, _, info1 = env.step(bad)
    assert info1["repaired"] is True
    assert info1["metrics"]["allocated_gpus"] <= env.unwrapped.cluster.num_gpus
    env2 = gym.make("joulegym/PowerFlow-tiny-v0")
    env2.reset(seed=0)
    _, _, _, _, info2 = env2.step(bad)
    assert info2["metrics"] == info1["metrics"]  # deterministic repair
    mask = env.unwrapped.action_masks()
    assert mask.shape == (int(np.sum(env.action_space.nvec)),) and mask.dtype == bool
    np.testing.assert_array_equal(mask, info1["action_mask"])


def test_malformed_action_and_config_raise():
    env = gym.make("joulegym/PowerFlow-tiny-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match="out of bounds"):
        env.step(np.full(2 * env.unwrapped.K, 99, dtype=np.int64))
    for eta in (0.0, -1.0):
        with pytest.raises(ValueError, match="eta"):
            gym.make("joulegym/PowerFlow-v0", eta=eta)
    with pytest.raises(ValueError, match="unknown config key"):
        gym.make("joulegym/PowerFlow-v0", bogus=1)
    with pytest.raises(ValueError, match="action_mode"):
        gym.make("joulegym/PowerFlow-v0", action_mode="nope")


@pytest.mark.parametrize("name", ["philly-103959", "philly-24h"])
def test_real_trace_scenarios_need_trace_path(name):
    with pytest.raises(ValueError, match=r"trace_path=.*reference-data"):
        gym.make(f"joulegym/PowerFlow-{name}-v0")


def test_oversized_job_gives_clear_error():
    from joulegym.workloads import dl_jobs

    env = gym.make("joulegym/PowerFlow-tiny-v0")
    trace = dl_jobs.gavel_trace(3, seed=0)
    df = trace.to_dataframe().assign(num_gpus=[1, 16, 1])
    from joulegym.workloads.traces import JobTrace

    with pytest.raises(ValueError, match="requests 16 GPUs but the cluster has only 8"):
        env.reset(seed=0, options={"trace": JobTrace.from_dataframe(df)})
    with pytest.raises(ValueError, match="trace is empty"):
        env.reset(seed=0, options={"trace": trace.select(np.zeros(len(trace), dtype=bool))})


def test_render_modes():
    env = gym.make("joulegym/PowerFlow-tiny-v0", render_mode="rgb_array")
    obs, info = env.reset(seed=0)
    pol = baselines.make("powerflow-strict")
    pol.reset(env)
    for _ in range(5):
        obs, *_, info = env.step(pol.act(obs, info))
    img = env.render()
    assert img.ndim == 3 and img.shape[2] == 3 and img.dtype == np.uint8 and img.std() > 0
    env2 = gym.make("joulegym/PowerFlow-tiny-v0", render_mode="ansi")
    env2.reset(seed=0)
    text = env2.render()
    assert "power" in text and "slot" in text


def test_reference_policies_beat_random_on_tiny():
    seeds = range(3)
    ref = np.mean([_episode("joulegym/PowerFlow-tiny-v0", "powerflow-strict", s)[0] for s in seeds])
    rnd = np.mean([_episode("joulegym/PowerFlow-tiny-v0", "random", s)[0] for s in seeds])
    assert ref > rnd


def _env_vs_simulate(policy: str, seed: int, forward_wakeups: bool = True):
    """One ``tiny`` episode of ``policy`` in the env, run with the policy's own simulator settings, next to
    ``simulate`` on the same trace and settings."""
    from joulegym.envs.powerflow import simulate

    pol = baselines.make(policy)
    settings = {k: pol.sim_config[k] for k in ("profiling", "predictor", "placement", "power_constraint")}
    env = gym.make("joulegym/PowerFlow-tiny-v0", **settings)
    obs, info = env.reset(seed=seed)
    base = env.unwrapped
    jobs = base.sim.jobs
    if not forward_wakeups:
        base.request_wakeup = lambda t_s: None
    pol.reset(env, seed=seed)
    term = trunc = False
    while not (term or trunc):
        obs, _, term, trunc, info = env.step(pol.act(obs, info))
    assert term and info["overflow_steps"] == 0  # every ready job had a slot
    ref = simulate(jobs, baselines.make(policy), cluster=base.cluster, eta=base.config["eta"])
    return info["metrics"], ref.metrics


@pytest.mark.parametrize("policy", ["powerflow-strict", "powerflow", "tiresias", "gandiva", "afs", "tiresias-zeus"])
def test_env_episode_reproduces_simulate(policy):
    """With the policy's own simulator settings (``policy.sim_config``: PowerFlow's pre-run/profiling and packing,
    the baselines' true profiles and their own placement) the env episode *is* the ``simulate`` run: same
    decisions, same avg JCT, energy and makespan, bit for bit — Tiresias's queue-demotion wake-ups included."""
    env_m, sim_m = _env_vs_simulate(policy, seed=3)
    assert env_m == sim_m


def test_env_honours_tiresias_wakeups():
    """The equality above needs the wake-ups: without them Tiresias only re-ranks at arrivals/completions, so jobs
    crossing a queue threshold in between are demoted late (a different schedule)."""
    with_wake, sim_m = _env_vs_simulate("tiresias", seed=3)
    without, _ = _env_vs_simulate("tiresias", seed=3, forward_wakeups=False)
    assert with_wake == sim_m
    assert without["decisions"] < with_wake["decisions"] and without["avg_jct_s"] != with_wake["avg_jct_s"]


def test_request_wakeup_rejects_bad_times():
    env = gym.make("joulegym/PowerFlow-tiny-v0")
    env.reset(seed=0)
    for bad in (float("nan"), float("inf"), "soon"):
        with pytest.raises(ValueError, match="wake-up time"):
            env.unwrapped.request_wakeup(bad)
