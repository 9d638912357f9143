"""``joulegym/PowerFlow-v0``: ids, spaces, action modes, repair, reward parts and config (docs/families/powerflow.md
§10)."""

from __future__ import annotations

import importlib
import inspect

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import joulegym  # noqa: F401  (registers the ids)
from joulegym.baselines.powerflow import paper_env_config
from joulegym.baselines.powerflow_simulate import simulate
from joulegym.core.actions import NO_DECISION, flat_mask
from joulegym.core.policy import make
from joulegym.core.rollout import ActionSequencePolicy, rollout
from joulegym.envs.powerflow import SimConfig
from joulegym.envs.powerflow.env import SIM_SETTINGS
from joulegym.scenarios import registered_ids
from joulegym.scenarios.powerflow import SCENARIOS
from joulegym.workloads import dl_jobs
from joulegym.workloads.traces import JobTrace
from tests.probe import Observe
from tests.reference_data import REF

IDS = registered_ids("powerflow")
PAPER_SCENARIOS = ("motivating2gpu", "tiny", "small100", "alibaba1901", "alibaba1901-long", "philly-103959",
                   "philly-24h")
REAL = {"joulegym/PowerFlow-philly-103959-v0": REF / "elasticflow" / "philly_103959.csv",
        "joulegym/PowerFlow-philly-24h-v0": REF / "pollux-philly" / "philly_2017-10-13_24h.csv"}
TINY = "joulegym/PowerFlow-tiny-v0"


def pf(name: str, **kw):
    return make(name, family="powerflow", **kw)


def make_env(env_id: str, **kw):
    if env_id in REAL:
        if not REAL[env_id].is_file():
            pytest.skip(f"{REAL[env_id]} is absent (reference data not shipped)")
        kw.setdefault("trace_path", str(REAL[env_id]))
    return gym.make(env_id, **kw)


def _episode(env_id: str, policy: str, seed: int, **kw):
    """A full episode of ``policy`` (the paper's settings for it and its env_config, under ``kw``), with every
    observation."""
    pol = pf(policy) if policy != "random" else make("random")
    env = make_env(env_id, **paper_env_config(pol, kw))
    observations = []
    episode = rollout(env, pol, seed, record=True, on_step=lambda obs, r, info: observations.append(obs))
    return episode, np.array(observations), env


def test_ids_are_the_paper_scenarios_only():
    """Paper scenarios are ids; the Fig. 10 parameter sweeps are kwargs, not ids."""
    assert IDS == ["joulegym/PowerFlow-v0", *(f"joulegym/PowerFlow-{name}-v0" for name in PAPER_SCENARIOS)]
    assert set(SCENARIOS) == set(PAPER_SCENARIOS)
    for gone in ("load-0.5", "cluster-16", "jobsize-8"):
        with pytest.raises(gym.error.NameNotFound):
            gym.make(f"joulegym/PowerFlow-{gone}-v0")


def test_sweeps_are_kwargs_merged_into_the_scenario():
    """``trace={...}`` is merged key by key into small100's trace; ``nodes=`` resizes the cluster."""
    env = gym.make("joulegym/PowerFlow-small100-v0", nodes=2, trace={"size_multiplier": 4})
    cfg = env.unwrapped.config
    assert cfg["trace"] == {**SCENARIOS["small100"].config["trace"], "size_multiplier": 4}
    assert env.unwrapped.cluster.num_gpus == 16
    env.reset(seed=0)
    jobs = env.unwrapped.sim.jobs
    base = gym.make("joulegym/PowerFlow-small100-v0")
    base.reset(seed=0)
    # the same seeded trace with every request x 4 (capped at the 16 GPUs)
    np.testing.assert_array_equal(jobs.n_req, np.minimum(base.unwrapped.sim.jobs.n_req * 4, 16))
    np.testing.assert_array_equal(jobs.submit_s, base.unwrapped.sim.jobs.submit_s)


@pytest.mark.parametrize("env_id", IDS)
def test_checkers_pass(env_id):
    # speed is measured by benchmarks/harness.py, never by a wall-clock assert in a test
    env = make_env(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    sb3_check_env = pytest.importorskip("stable_baselines3.common.env_checker").check_env  # the train extra
    sb3_check_env(env.unwrapped)
    env.close()


@pytest.mark.parametrize("mode", ["alloc", "request", "micro", "priority"])
def test_action_modes_pass_checkers_and_finish_the_trace(mode):
    env = gym.make(TINY, action_mode=mode)
    check_env(env.unwrapped, skip_render_check=True)
    # one env class, one kind (core.family.kind_for): every action mode of PowerFlowEnv is the PowerFlow kind
    assert env.unwrapped.kind == "PowerFlow"
    observations = []
    episode = rollout(env, pf("powerflow-strict"), seed=3, on_step=lambda obs, r, info: observations.append(obs))
    assert all(env.observation_space.contains(o) for o in observations)
    assert episode.terminated and episode.metrics["jobs_done"] == episode.metrics["jobs_total"]


def test_micro_mode_is_algorithm_1_step_by_step():
    """Micro steps are no-decision steps (reward 0, time stands still); the commit applies the allocation the
    reference policy decided, so the micro episode equals the alloc episode."""
    micro, _, _ = _episode(TINY, "powerflow-strict", 4, action_mode="micro")
    alloc, _, _ = _episode(TINY, "powerflow-strict", 4)
    assert micro.metrics == alloc.metrics
    assert micro.length > alloc.length
    idle = [r for r, info in zip(micro.rewards, micro.infos) if all(v == 0.0 for v in info["reward_parts"].values())]
    assert len(idle) >= micro.length - alloc.length
    # the commits are flagged exactly where the alloc steps are (the power repair of strict mode)
    assert [i["repaired"] for i in micro.infos if i["reward_parts"]["jct"] != 0.0] == \
        [i["repaired"] for i in alloc.infos if i["reward_parts"]["jct"] != 0.0]


def test_masked_out_micro_action_is_a_flagged_no_op():
    env = gym.make(TINY, action_mode="micro")
    _, info = env.reset(seed=0)
    base = env.unwrapped
    mask = info["action_mask"]  # micro mode: Discrete, an int8 0/1 mask
    bad = int(np.flatnonzero(mask == 0)[0])
    now = base.sim.now
    assert base.action_type.decode(bad) is NO_DECISION and base.action_type.repaired
    _, reward, _, _, info = env.step(bad)
    assert info["repaired"] is True and reward == 0.0 and base.sim.now == now
    np.testing.assert_array_equal(info["action_mask"], mask)
    good = int(np.flatnonzero(mask)[0])
    _, _, _, _, info = env.step(good)
    assert info["repaired"] is False


@pytest.mark.parametrize("env_id", [TINY, "joulegym/PowerFlow-motivating2gpu-v0"])
def test_deterministic_under_seed(env_id):
    a, obs_a, _ = _episode(env_id, "powerflow-strict", 7)
    b, obs_b, _ = _episode(env_id, "powerflow-strict", 7)
    assert a.total_return == b.total_return and a.metrics == b.metrics
    np.testing.assert_array_equal(obs_a, obs_b)
    if env_id == TINY:  # another seed, another trace
        assert _episode(env_id, "powerflow-strict", 8)[0].metrics != a.metrics


@pytest.mark.parametrize("env_id", IDS)
def test_every_id_is_deterministic_and_renders(env_id):
    """Same seed, same first 25 steps (obs, rewards, final metrics) with the reference policy; both render modes."""
    def run():
        env = make_env(env_id, render_mode="rgb_array", max_steps=25)
        observations = []
        episode = rollout(env, pf("powerflow-strict"), 11, record=True,
                          on_step=lambda obs, r, info: observations.append(obs))
        return env, np.array(observations), episode

    env, obs_a, a = run()
    _, obs_b, b = run()
    np.testing.assert_array_equal(obs_a, obs_b)
    assert a.rewards == b.rewards and a.metrics == b.metrics
    img = env.render()
    assert img.ndim == 3 and img.shape[2] == 3 and img.dtype == np.uint8
    assert "slot" in env.unwrapped._render_ansi()


def test_vector_env_smoke():
    envs = gym.vector.SyncVectorEnv([lambda: gym.make(TINY) for _ in range(2)])
    obs, infos = envs.reset(seed=[0, 1])
    assert obs.shape == (2, *envs.single_observation_space.shape)
    for _ in range(20):
        obs, rew, _, _, infos = envs.step(envs.action_space.sample())
        assert np.all(np.isfinite(rew)) and obs.dtype == np.float32
        assert set(infos) >= {"overflow", "overflow_steps", "event", "reward_parts", "repaired", "action_mask"}
    envs.close()


def test_return_is_minus_average_jct_hours():
    episode, _, env = _episode(TINY, "powerflow-strict", 1)
    m = episode.metrics
    assert episode.terminated
    assert episode.total_return == pytest.approx(-m["avg_jct_h"], rel=1e-9)
    assert env.unwrapped.config["reward"] == "jct" and env.unwrapped.reward_weights == (1.0, 0.0, 0.0)
    for key in ("avg_jct_s", "avg_jct_h", "total_energy_j", "total_energy_kwh", "makespan_s", "cluster_power_w",
                "energy_busy_j", "energy_idle_j", "energy_prerun_j", "energy_profiling_j"):
        assert isinstance(m[key], float)
    for info in episode.infos:  # one structure per info key for the whole episode
        assert set(info["reward_parts"]) == {"jct", "power_violation", "energy"}
        assert isinstance(info["overflow"], int) and isinstance(info["event"], str)
    assert "metrics" not in episode.infos[0] and "metrics" in episode.infos[-1]
    every = rollout(gym.make(TINY, info_metrics="every_step"), pf("powerflow-strict"), 1, record=True)
    assert all("metrics" in info for info in every.infos) and every.metrics == m


def test_return_with_penalties_is_exact():
    """``power_constraint="penalty"`` (no repair) defaults to the ``penalty`` preset; with an energy weight the
    undiscounted return is exactly minus the average JCT in hours, minus overshoot / (3600 PL), minus
    w_E energy / (3600 G P_max); each part's sum is its term."""
    w_e = 0.3
    episode, _, env = _episode(TINY, "powerflow", 2, eta=0.4, power_constraint="penalty",
                               reward_weights={"energy": w_e})
    assert env.unwrapped.config["reward"] == "penalty" and env.unwrapped.reward_weights == (1.0, 1.0, w_e)
    assert episode.terminated
    m = episode.metrics
    g_pmax = m["power_limit_w"] / 0.4  # G * P_max = PL / eta
    violation = -m["power_violation_wh"] / m["power_limit_w"]
    energy = -m["total_energy_j"] / (3600 * g_pmax)
    assert episode.total_return == pytest.approx(-m["avg_jct_h"] + violation + w_e * energy, rel=1e-9)
    sums = {k: sum(info["reward_parts"][k] for info in episode.infos) for k in ("jct", "power_violation", "energy")}
    assert sums == pytest.approx({"jct": -m["avg_jct_h"], "power_violation": violation, "energy": energy}, rel=1e-9)
    assert m["power_violation_wh"] > 0  # the faithful policy overshoots without the repair: the penalty is live


def test_default_reward_is_bit_for_bit_the_jct_term():
    """The default reward is the jct part itself (weighted_sum skips zero weights), every step."""
    episode, _, _ = _episode(TINY, "powerflow", 5, power_constraint="penalty", reward="jct")
    assert all(r == info["reward_parts"]["jct"] for r, info in zip(episode.rewards, episode.infos))


def test_removed_reward_knobs_are_unknown_keys():
    for key in ("lambda_p", "lambda_e"):
        with pytest.raises(ValueError, match=f"unknown config key '{key}'"):
            gym.make(TINY, **{key: 1.0})
    with pytest.raises(ValueError, match="reward="):
        gym.make(TINY, reward="vector")


def test_strict_env_keeps_power_under_budget():
    episode, _, _ = _episode(TINY, "powerflow", 2, eta=0.4, power_constraint="repair")
    m = episode.metrics
    assert m["max_job_power_w"] <= m["power_limit_w"] * (1 + 1e-3)
    assert any(info["repaired"] for info in episode.infos)  # the faithful policy's overshoots were repaired


def test_masked_action_is_repaired_and_flagged():
    env = gym.make(TINY)
    env.reset(seed=0)
    base = env.unwrapped
    K = base.K
    bad = np.zeros(2 * K, dtype=np.int64)
    bad[:K] = base.n_levels - 1  # every slot (also empty ones) asks for the largest block
    _, _, _, _, info1 = env.step(bad)
    assert info1["repaired"] is True
    assert base.sim.n.sum() <= base.cluster.num_gpus
    env2 = gym.make(TINY)
    env2.reset(seed=0)
    env2.step(bad)
    np.testing.assert_array_equal(env2.unwrapped.sim.n, base.sim.n)  # deterministic repair
    mask = base.action_masks()
    assert mask.shape == (int(np.sum(env.action_space.nvec)),) and mask.dtype == np.int8
    np.testing.assert_array_equal(mask, np.concatenate(info1["action_mask"]))  # the info: one array per sub-space
    mask[:] = 0  # a fresh array every call
    assert base.action_masks().any()


def test_reference_actions_are_valid():
    """The reference policies' encoded actions lie inside the mask: no step is flagged unless the simulator
    itself changed the decision (placement shrinks)."""
    for policy in ("tiresias", "gandiva", "afs", "powerflow"):
        episode, _, _ = _episode(TINY, policy, 3, action_mode="request")
        flagged = sum(info["repaired"] for info in episode.infos)
        assert flagged == episode.metrics["placement_shrinks"], policy
        assert flagged == (1 if policy == "powerflow" else 0), policy  # one job halved around a profiling one
        for info, action in zip(episode.infos[:-1], episode.infos[1:]):
            assert all(m.dtype == np.int8 for m in info["action_mask"])  # one int8 array per sub-space
            assert [m.shape for m in action["action_mask"]] == [m.shape for m in info["action_mask"]]


def test_request_mode_runs_requests_that_are_not_powers_of_two():
    """The non-elastic baselines run the requested GPU count, a power of two or not (alloc rounds it down)."""
    jobs = dl_jobs.to_powerflow_jobs(JobTrace.from_dataframe(
        dl_jobs.gavel_trace(4, seed=0).to_dataframe().assign(num_gpus=[3, 6, 1, 5], submit_time_s=[0, 0, 0, 0])))
    held: dict[int, set[int]] = {}

    def watch(sim, decision):
        for j in sim.running.tolist():
            held.setdefault(j, set()).add(int(sim.n[j]))

    for mode, expected in (("request", {0: {3}, 1: {6}, 2: {1}, 3: {5}}), ("alloc", {0: {2}, 1: {4}, 2: {1}, 3: {4}})):
        held.clear()
        pol = pf("fifo")
        env = gym.make("joulegym/PowerFlow-v0", action_mode=mode, **paper_env_config(pol))
        episode = rollout(env, Observe(pol, watch), 0, options={"trace": jobs})
        assert episode.terminated and held == expected, mode


@pytest.mark.parametrize("field", [f for f in SIM_SETTINGS if f != "eta"])
def test_every_simulator_setting_is_a_config_key(field):
    """Every :class:`SimConfig` field is an env key with SimConfig's default (power_constraint: the env's cap is
    hard by default) and reaches the simulator."""
    default = getattr(SimConfig(), field)
    env_default = gym.make(TINY).unwrapped.config[field]
    assert env_default == ("repair" if field == "power_constraint" else default)
    other = {"predictor": "oracle", "profiling": False, "prerun_s": 60.0, "profile_s": 120.0, "overhead": "flat",
             "flat_overhead_s": 10.0, "truth_noise": 0.0, "placement": "first-fit", "power_constraint": "none",
             "node_shutdown": False, "horizon_s": 86400.0, "idle_tick_s": 60.0, "p_max_w": 250.0,
             "record_timeline": False, "profile_scope": "job", "pin_overhead": False,
             "switch_overhead_s": 2.0}[field]
    env = gym.make(TINY, **{field: other})
    env.reset(seed=0)
    assert getattr(env.unwrapped.sim.cfg, field) == other


def test_malformed_action_and_config_raise():
    env = gym.make(TINY)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match="out of bounds"):
        env.step(np.full(2 * env.unwrapped.K, 99, dtype=np.int64))
    for eta in (0.0, -1.0, 1.5):
        with pytest.raises(ValueError, match="eta"):
            gym.make("joulegym/PowerFlow-v0", eta=eta)
    for key, value, match in (("bogus", 1, "unknown config key"), ("action_mode", "nope", "action_mode"),
                              ("trace", {"num_jobs": 0}, "trace.num_jobs"), ("trace", {"bogus": 1}, "trace has"),
                              ("gpus_per_node", 6, "gpus_per_node"), ("profile_scope", "x", "profile_scope"),
                              ("prerun_s", -1.0, "prerun_s"), ("max_slots", 0, "max_slots"),
                              ("trace_format", "csv", "trace_format"), ("node_shutdown", 1, "node_shutdown")):
        with pytest.raises(ValueError, match=match):
            gym.make("joulegym/PowerFlow-v0", **{key: value})
    with pytest.raises(ValueError, match="reset options trace"):
        env.reset(seed=0, options={"trace": [1, 2]})


@pytest.mark.parametrize("name", ["philly-103959", "philly-24h"])
def test_real_trace_scenarios_need_trace_path(name):
    with pytest.raises(ValueError, match=r"data fetch .*trace_path=<file>.*\.csv"):
        gym.make(f"joulegym/PowerFlow-{name}-v0")


def test_oversized_job_gives_clear_error():
    env = gym.make(TINY)
    trace = dl_jobs.gavel_trace(3, seed=0)
    df = trace.to_dataframe().assign(num_gpus=[1, 16, 1])
    with pytest.raises(ValueError, match="requests 16 GPUs but the cluster has only 8"):
        env.reset(seed=0, options={"trace": JobTrace.from_dataframe(df)})
    with pytest.raises(ValueError, match="trace is empty"):
        env.reset(seed=0, options={"trace": trace.select(np.zeros(len(trace), dtype=bool))})


def test_render_modes():
    env = gym.make(TINY, render_mode="rgb_array", max_steps=5)
    rollout(env, pf("powerflow-strict"), 0)
    img = env.render()
    assert img.ndim == 3 and img.shape[2] == 3 and img.dtype == np.uint8 and img.std() > 0
    env2 = gym.make(TINY, render_mode="ansi")
    env2.reset(seed=0)
    text = env2.render()
    assert "power" in text and "slot" in text


def test_reference_policies_beat_random_on_tiny():
    seeds = range(3)
    ref = [_episode(TINY, "powerflow-strict", s)[0].total_return for s in seeds]
    rnd = [_episode(TINY, "random", s)[0].total_return for s in seeds]
    assert np.mean(ref) > np.mean(rnd)
    # regression pins (measured, not paper numbers): minus the average JCT in hours per seed (the repair prices jobs
    # as placed, docs §10; the performance model's noise is monotone in f, docs §4)
    assert ref == pytest.approx([-0.3516258472600514, -1.011356607275122, -0.5768008104680985], rel=1e-6)


def _env_vs_simulate(policy: str, seed: int, forward_wakeups: bool = True):
    """One ``tiny`` episode of ``policy`` through gym.make (alloc mode, 16 slots, the policy's env_config) next to
    ``simulate`` on the same trace and settings."""
    pol = pf(policy)
    env = gym.make(TINY, **paper_env_config(pol))
    env.reset(seed=seed)
    base = env.unwrapped
    jobs = base.sim.jobs
    if not forward_wakeups:
        base.request_wakeup = lambda t_s: None
    episode = rollout(env, pol, seed, options={"trace": jobs})
    assert episode.terminated and episode.final_info["overflow_steps"] == 0  # every ready job had a slot
    ref = simulate(jobs, pol, cluster=base.cluster, eta=base.config["eta"])  # the same policy object
    return episode.metrics, ref.metrics


@pytest.mark.parametrize("policy", ["powerflow-strict", "powerflow", "tiresias", "gandiva", "afs", "tiresias-zeus"])
def test_env_episode_reproduces_simulate(policy):
    """``simulate`` is an env episode (request mode, one slot per job); a gym.make episode in the default alloc
    mode with the policy's env_config makes the same decisions: same avg JCT, energy, makespan, bit for bit —
    Tiresias's queue-demotion wake-ups included."""
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
    env = gym.make(TINY)
    env.reset(seed=0)
    for bad in (float("nan"), float("inf"), "soon"):
        with pytest.raises(ValueError, match="wake-up time"):
            env.unwrapped.request_wakeup(bad)


def test_policies_have_one_interface():
    """``reset``/``act``, ``env_config`` (its system: placement) and ``paper_config`` (the paper's evaluation
    conditions) only: the decision logic is private, and no module of the env imports the policies or their
    registry (a policy by name comes from the family-scoped registry, a layer above:
    ``joulegym.baselines.powerflow_simulate``)."""
    import ast
    import pkgutil

    import joulegym.envs.powerflow as package

    for name in ("powerflow", "powerflow-strict", "powerflow-oracle", "gandiva", "tiresias", "gandiva-zeus",
                 "tiresias-zeus", "afs", "fifo", "fifo-backfill"):
        pol = pf(name)
        public = {n for n in dir(pol) if not n.startswith("_")}
        gandiva = name.startswith("gandiva")
        assert public == {"name", "privileged", "reset", "act", "env_config", "paper_config"} | (
            {"mode", "ee_freq_mode", "oracle"} if name.startswith("powerflow") else
            {"f_mhz"} if name == "afs" else {"f_mhz", "zeus", "zeus_eta", "max_power_w", "preemptive", "backfill"}
            | ({"time_slicing", "migration", "quantum_s", "switch_s"} if gandiva else set()))
        # Gandiva's suspend/resume cost is part of the system: its own (flat) reconfiguration overhead
        assert set(pol.env_config) == {"placement"} | ({"switch_overhead_s"} if gandiva else set())
        assert set(pol.paper_config) == {"profiling", "predictor", "power_constraint"}
        assert pol.privileged == (name == "powerflow-oracle")  # only the oracle reads the true profiles
    for info in pkgutil.iter_modules(package.__path__):
        tree = ast.parse(inspect.getsource(importlib.import_module(f"{package.__name__}.{info.name}")))
        imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        imported |= {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
                     and isinstance(node.value, str) and node.value.startswith("joulegym.")}  # import_module strings
        assert not {m for m in imported if m.startswith(("joulegym.baselines", "joulegym.core.policy"))}, info.name


def test_an_agent_that_never_allocates_is_truncated_at_max_steps():
    """A plain (non-privileged) policy drives the env through the same loop; giving no GPU finishes no job, and
    the episode ends at ``max_steps``."""
    env = gym.make(TINY, max_steps=50)
    episode = rollout(env, ActionSequencePolicy([np.zeros(2 * env.unwrapped.K, dtype=np.int64)]), 0)
    assert episode.truncated and not episode.terminated and episode.length == 50
    assert episode.metrics["jobs_done"] == 0 and episode.total_return < 0


@pytest.mark.parametrize("mode", ["alloc", "request", "micro", "priority"])
def test_copies_finish_the_episode_like_the_original(mode):
    """A deepcopy and a pickle of the env mid-episode (the SimPy calendar travels as data) replay the rest of the
    episode bit for bit: same observations, rewards and final metrics."""
    import copy
    import pickle

    pol = pf("powerflow")
    env = gym.make(TINY, action_mode=mode, **paper_env_config(pol)).unwrapped
    obs, info = env.reset(seed=6)
    pol.reset(env, seed=6)
    for _ in range(8):
        obs, _, _, _, info = env.step(pol.act(obs, info))
    copies = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    done = False
    while not done:  # the original's actions, replayed into the copies
        action = pol.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        done = terminated or truncated
        for other in copies:
            other_obs, other_reward, other_term, other_trunc, other_info = other.step(action)
            np.testing.assert_array_equal(other_obs, obs)
            assert (other_reward, other_term, other_trunc) == (reward, terminated, truncated)
            np.testing.assert_array_equal(flat_mask(other_info.get("action_mask", [])),
                                          flat_mask(info.get("action_mask", [])))
    assert terminated and all(other.metrics() == env.metrics() for other in copies)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"truth_noise": 1e308}, "truth_noise"),  # fuzz P1
    ({"nodes": 1e12}, "nodes"),  # fuzz P2: 58 TiB of per-GPU tables
    ({"nodes": 1e308}, "nodes"),
    ({"nodes": 8192, "gpus_per_node": 16}, "nodes x gpus_per_node"),
    ({"gpus_per_node": 2**63}, "gpus_per_node"),  # fuzz P3: TypeError from numpy
    ({"trace": {"duration_scale": 1e308}}, "trace.duration_scale"),  # fuzz P4: misleading error at reset
    ({"p_max_w": 1e-320}, "p_max_w"),  # fuzz P5: -inf energy reward
    ({"p_max_w": 1e9}, "p_max_w"),
])
def test_fuzz_findings_raise_naming_the_field(kwargs, field):
    """The fuzz helper's PowerFlow findings P1-P5: extreme config values fail at make with a ValueError naming the
    field and its range."""
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        gym.make("joulegym/PowerFlow-v0", **kwargs)
