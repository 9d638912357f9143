"""The Qin envs (docs/families/qin.md §7): QinCluster-v0, QinNode-v0, Qin-v0, the admission option, config checks."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

import joulegym  # noqa: F401  (registers the ids)
from joulegym import baselines
from joulegym.core.actions import flat_mask
from joulegym.core.family import register_family
from joulegym.core.rollout import rollout
from joulegym.envs.qin.cluster_env import QinClusterEnv, QinHierarchicalEnv
from joulegym.envs.qin.node_env import QinNodeEnv
from joulegym.scenarios import qin as qin_scenarios
from joulegym.workloads.qin_jobs import generate_jobs

register_family(qin_scenarios.FAMILY)  # idempotent: a no-op once "qin" is in FAMILY_MODULES

SMALL = {"workload": {"kind": "rw", "num_jobs": 12}}


def _random_episode(env, seed: int):
    policy = baselines.make("random")
    return rollout(env, policy, seed=seed, record=True)


def test_cluster_spaces_mask_and_observation():
    env = QinClusterEnv(**SMALL)
    obs, info = env.reset(seed=0)
    assert env.action_space == gym.spaces.Discrete(8)
    assert obs.shape == (8 * 15 + 6 + 7,) and env.observation_space.contains(obs)
    np.testing.assert_array_equal(info["action_mask"], [True] * 5 + [False] * 3)  # 5 workers, N_max = 8
    np.testing.assert_array_equal(env.action_masks(), info["action_mask"])
    rows = obs[: 8 * 15].reshape(8, 15)
    np.testing.assert_array_equal(rows[:, 14], [1, 1, 1, 1, 1, 0, 0, 0])  # the server mask
    assert np.all(rows[5:, :14] == 0)  # padding
    assert obs[-4] == 1.0 and obs[-3:].sum() == 0  # objective one-hot: makespan (the default)
    assert info["job"] >= 0 and info["queue"] == 12


def test_cluster_returns_are_the_paper_metrics_over_their_scales():
    """Potential shaping: the parts sum to -makespan / T_ref, -flowtime / (M t_job), -E / E_ref and
    -E x makespan / (E_ref T_ref) exactly (docs §7.1 reward)."""
    env = QinClusterEnv(**SMALL)
    episode = _random_episode(env, seed=3)
    m = episode.metrics
    parts = {name: sum(info["reward_parts"][name] for info in episode.infos) for name in env.reward_spec.names}
    assert m["jobs_done"] == 12
    assert parts["makespan"] == pytest.approx(-m["makespan_s"] / env.T_ref, rel=1e-9)
    assert parts["flowtime"] == pytest.approx(-m["flowtime_s"] / (env.M * env.t_job), rel=1e-9)
    assert parts["energy"] == pytest.approx(-m["energy_j"] / env.E_ref, rel=1e-9)
    assert parts["edp"] == pytest.approx(-m["edp_js"] / (env.E_ref * env.T_ref), rel=1e-9)
    assert episode.total_return == pytest.approx(parts["makespan"])  # the default objective
    assert 0.3 < -parts["makespan"] < 10  # O(1) returns


def _first_observations(jobs, steps: int = 3, **config) -> list[np.ndarray]:
    env = QinClusterEnv(workload={"kind": "rw", "num_jobs": jobs.n_jobs}, **config)
    obs, _ = env.reset(seed=0, options={"jobs": jobs})
    seen = [obs]
    for _ in range(steps - 1):  # batch arrivals: these placements all happen at t = 0, before any completion
        obs, *_ = env.step(0)
        seen.append(obs)
    return seen


def test_observation_is_blind_to_true_job_sizes_under_app_mean_estimates():
    """Two workloads that differ only in the jobs' true sizes look the same to the agent until a job completes: the
    observation's scales (T_ref, mean size) come from the size estimates, like its load and drain features."""
    jobs = generate_jobs("rw", 12, seed=0)
    factor = np.random.default_rng(1).uniform(0.8, 1.25, jobs.n_jobs)
    resized = dataclasses.replace(jobs, size_instr=jobs.size_instr * factor)
    for same, other in zip(_first_observations(jobs), _first_observations(resized)):
        np.testing.assert_array_equal(same, other)
    # per-job size knowledge ("profiled", for the privileged rules) does show in the observation
    profiled = zip(_first_observations(jobs, size_estimate="profiled"),
                   _first_observations(resized, size_estimate="profiled"))
    assert any(np.any(a != b) for a, b in profiled)


def test_objective_picks_the_reward_preset():
    for objective in ("makespan", "flowtime", "energy", "edp"):
        env = QinClusterEnv(objective=objective, **SMALL)
        assert env.config["reward"] == objective
        weights = dict(zip(env.reward_spec.names, env.reward_weights))
        assert weights[objective] == 1.0 and sum(weights.values()) == 1.0


def test_cluster_determinism_under_a_seed():
    runs = [_random_episode(QinClusterEnv(**SMALL), seed=7) for _ in range(2)]
    assert runs[0].rewards == runs[1].rewards
    assert runs[0].metrics == runs[1].metrics
    other = _random_episode(QinClusterEnv(**SMALL), seed=8)
    assert other.metrics != runs[0].metrics


def test_masked_server_is_repaired_to_the_shortest_drain():
    env = QinClusterEnv(**SMALL)
    env.reset(seed=0)
    for _ in range(3):
        env.step(0)  # load server 0
    expected = env.repair_server()
    job = env.pending_job
    _, _, _, _, info = env.step(6)  # a padded server
    assert info["repaired"] is True
    assert env.sim.job_server[job] == expected
    _, _, _, _, info = env.step(1)
    assert info["repaired"] is False
    with pytest.raises(ValueError, match="action"):
        env.step(8)


def test_server_vf_mode_applies_the_initial_level():
    env = QinClusterEnv(action_mode="server_vf", **SMALL)
    assert env.action_space.n == 8 * env.L
    _, info = env.reset(seed=0)
    assert info["action_mask"].sum() == 5 * env.L
    job = env.pending_job
    env.step(2 * env.L + 1)  # server 2, level 1
    assert env.sim.job_server[job] == 2 and env.sim.job_level_hint[job] == 1
    assert env.action_type.encode((3, None)) == 3 * env.L + env.L - 1  # None: the top level


def test_admission_dac_orders_the_dispatch():
    """DAC (paper §6) with all jobs at once ranks the whole queue (Fig. 12: one batch): jobs are dispatched by
    descending mean predicted H, where FIFO dispatches them in arrival order."""
    order = {}
    for admission in ("fifo", "dac_H_desc"):
        env = QinClusterEnv(admission=admission, **SMALL)
        env.reset(seed=1)
        seen = []
        done = False
        while not done:
            seen.append(env.pending_job)
            _, _, terminated, truncated, _ = env.step(len(seen) % 5)
            done = terminated or truncated
        order[admission] = seen
    assert order["fifo"] == list(range(12))
    assert sorted(order["dac_H_desc"]) == list(range(12)) and order["dac_H_desc"] != order["fifo"]
    env = QinClusterEnv(admission="dac_H_desc", **SMALL)
    env.reset(seed=1)
    mean_h = env.sim.pred_mips.mean(axis=1)
    assert np.all(np.diff(mean_h[order["dac_H_desc"]]) <= 1e-9)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"servers": {"kind": "list", "types": ["i9-9900"]}}, "server"),
    ({"servers": {"kind": "list", "types": []}}, "servers.types"),
    ({"servers": {"kind": "sampled", "count": 0}}, "servers.count"),
    ({"servers": {"kind": "paper", "include_master": "yes"}}, "servers.include_master"),
    ({"workload": {"num_jobs": -5}}, "workload.num_jobs"),
    ({"workload": {"size_scale": -1.0}}, "workload.size_scale"),
    ({"workload": {"kind": "hpc"}}, "workload.kind"),
    ({"workload": {"arrival": "burst"}}, "workload.arrival"),
    ({"workload": {"no_such": 1}}, "workload"),
    ({"objective": "latency"}, "objective"),
    ({"admission": "lifo"}, "admission"),
    ({"node_policy": "cfs"}, "node_policy"),
    ({"node_focus": "speed"}, "node_focus"),
    ({"control_period_ms": 0.0}, "control_period_ms"),
    ({"profile_latency_s": -1}, "profile_latency_s"),
    ({"max_servers": 3}, "max_servers"),
    ({"max_steps": 0}, "max_steps"),
])
def test_bad_cluster_config_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        QinClusterEnv(**kwargs)


def test_bad_reset_option():
    env = QinClusterEnv(**SMALL)
    with pytest.raises(ValueError, match="jobs"):
        env.reset(seed=0, options={"jobs": [1, 2, 3]})


def test_include_master_and_sampled_servers():
    env = QinClusterEnv(servers={"kind": "paper", "include_master": True}, **SMALL)
    assert env.N == 6 and env.server_types[-1].name == "E5-1620"
    big = QinClusterEnv(servers={"kind": "sampled", "count": 40}, max_servers=40, **SMALL)
    again = QinClusterEnv(servers={"kind": "sampled", "count": 40}, max_servers=40, **SMALL)
    assert [s.name for s in big.server_types] == [s.name for s in again.server_types]
    assert len({s.name for s in big.server_types}) > 1


def test_scenarios_resolve():
    for name, scenario in qin_scenarios.SCENARIOS.items():
        if "QinCluster" in scenario.kinds:
            env = QinClusterEnv(scenario=name)
            assert env.config["scenario"] == name
    lc = QinClusterEnv(scenario="scaleup-2x")
    assert lc.config["workload"]["kind"] == "lc" and lc.config["workload"]["size_scale"] == 2.0
    assert QinClusterEnv(scenario="dac-rw").config["admission"] == "dac_H_desc"
    assert QinClusterEnv(scenario="large-n").N == 100


def test_hierarchical_env_defaults_to_qin_node():
    env = QinHierarchicalEnv(**SMALL)
    assert env.kind == "Qin" and env.config["node_policy"] == "qin-node"
    assert env.sim.node_policy.name == "qin-node" and env.sim.node_policy.focus == "perf"  # focus of the objective
    energy = QinHierarchicalEnv(objective="energy", **SMALL)
    assert energy.sim.node_policy.focus == "energy"
    episode = _random_episode(env, seed=0)
    assert episode.metrics["jobs_done"] == 12


def test_render_modes_cluster_and_node():
    for cls, kwargs in ((QinClusterEnv, SMALL), (QinNodeEnv, {})):
        env = cls(render_mode="ansi", **kwargs)
        env.reset(seed=0)
        assert isinstance(env.render(), str) and env.render()
        env = cls(render_mode="rgb_array", **kwargs)
        env.reset(seed=0)
        image = env.render()
        assert image.ndim == 3 and image.shape[2] == 3


# --- QinNode-v0 -----------------------------------------------------------------------------------------------------
def test_node_spaces_and_mask():
    env = QinNodeEnv()
    obs, info = env.reset(seed=0)
    assert env.action_space == gym.spaces.MultiDiscrete([9] * 16 + [4] * 8)
    assert env.observation_space.contains(obs)
    assert [m.shape for m in info["action_mask"]] == [(9,)] * 16 + [(4,)] * 8  # one int8 array per sub-space
    mask = flat_mask(info["action_mask"])
    rows = mask[: 16 * 9].reshape(16, 9)
    assert rows[:4, :4].all() and not rows[:4, 4:8].any() and rows[:, 8].all()  # 4 threads x 4 cores + keep
    assert not rows[4:, :8].any()  # no thread in slots 4..15
    levels = mask[16 * 9:].reshape(8, 4)
    assert levels[:4].all() and levels[4:, 0].all() and not levels[4:, 1:].any()


def test_node_decode_repairs_masked_choices_and_applies_levels():
    env = QinNodeEnv()
    env.reset(seed=0)
    action = np.array([8] * 16 + [0] * 8)
    action[5] = 2  # slot 5 holds no thread
    action[16 + 6] = 3  # core 6 does not exist
    _, _, _, _, info = env.step(action)
    assert info["repaired"] is True
    np.testing.assert_array_equal(env.sim.core_level[:4], [0, 0, 0, 0])
    action = np.array([8] * 16 + [3] * 4 + [0] * 4)
    action[0] = 3
    _, _, _, _, info = env.step(action)
    assert info["repaired"] is False
    assert env.sim.thread_core[0] == 3 and np.all(env.sim.core_level[:4] == 3)


def test_node_eq19_identity_all_busy_cores():
    """Eq. 19: a core busy for a whole period at f accrues dt (1 - f / f_H), so pl = 1 - f / f_H."""
    env = QinNodeEnv(thread_instr=5e9)
    env.reset(seed=0)
    action = np.array([8] * 16 + [1] * 4 + [0] * 4)
    for _ in range(20):
        env.step(action)
    f = env.sim.freq_hz[0, 1]
    np.testing.assert_allclose(env.sim.core_pl()[:4], 1 - f / env.sim.f_high_hz[0], rtol=0.05)


def test_node_reference_decisions_reach_the_sim_only_through_the_action():
    env = QinNodeEnv()
    env.reset(seed=0)
    policy = baselines.make("qin-node", family="qin")
    policy.reset(env, seed=0)
    env.step(np.array([8] * 16 + [3] * 8))  # every core at the top level: the energy focus will lower some
    before = (env.sim.thread_core.copy(), env.sim.core_level.copy(), env.sim.core_threads.copy(),
              env.sim._core_loss.copy(), env.sim.migrations)
    action = policy.act(None, {})
    np.testing.assert_array_equal(env.sim.thread_core, before[0])
    np.testing.assert_array_equal(env.sim.core_level, before[1])
    np.testing.assert_array_equal(env.sim.core_threads, before[2])
    np.testing.assert_array_equal(env.sim._core_loss, before[3])
    assert env.sim.migrations == before[4]
    assert env.action_space.contains(action)
    assert np.any(action[16:20] < 3)  # the decision differs from the state, so the restore was exercised


def test_node_qin_saves_energy_against_sniper():
    """Fig. 14 direction: Qin's node level (energy focus, PL 0.5) uses less energy than Sniper's pinned default
    at f_max (fft: 13.9 J against 16.8 J, -17 %, measured), and keeps the app's performance loss at PL."""
    energy = {}
    for name in ("qin-node", "sniper-pinned"):
        env = gym.make("joulegym/QinNode-v0")
        episode = rollout(env, baselines.make(name, family="qin"), seed=0)
        energy[name] = episode.metrics["energy_j"]
        if name == "qin-node":
            assert 0.4 < episode.metrics["pl_max"] <= 0.5 + 0.01
    assert energy["qin-node"] < 0.9 * energy["sniper-pinned"]


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"server": "i9-9900"}, "server"),
    ({"apps": []}, "apps"),
    ({"apps": ["doom"]}, "apps"),
    ({"thread_instr": -1.0}, "thread_instr"),
    ({"threads_per_app": 32}, "threads_per_app"),
    ({"apps": ["fft"] * 5}, "max_threads"),
    ({"max_cores": 2}, "max_cores"),
    ({"pl_threshold": 1.5}, "pl_threshold"),
    ({"objective": "makespan"}, "objective"),
    ({"control_period_ms": 1000}, "control_period_ms"),
])
def test_bad_node_config_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        QinNodeEnv(**kwargs)


def test_node_determinism_and_truncation():
    a = _random_episode(QinNodeEnv(), seed=2)
    b = _random_episode(QinNodeEnv(), seed=2)
    assert a.rewards == b.rewards and a.metrics == b.metrics
    assert a.terminated and a.metrics["threads_done"] == 4
    env = QinNodeEnv(control_period_ms=20.0)
    env.reset(seed=0)
    action = np.array([0] * 4 + [8] * 12 + [0] * 8)  # every thread on core 0 at the lowest level
    truncated = terminated = False
    while not (truncated or terminated):
        _, _, terminated, truncated, _ = env.step(action)
    assert truncated and env.sim.now >= 10 * env.T0


def test_workload_file(tmp_path):
    good = tmp_path / "jobs.csv"
    good.write_text("app,arrival_s,runtime_s\nfft,0,60\nradix,0,90\nbarnes,5,30\n")
    env = QinClusterEnv(workload={"kind": "file", "path": str(good)})
    episode = _random_episode(env, seed=0)
    assert episode.length == 3 and episode.metrics["jobs_done"] == 3
    np.testing.assert_array_equal(env.jobs.arrival_s, [0, 0, 5])
    bad = tmp_path / "bad.csv"
    bad.write_text("app,arrival_s,runtime_s\nfft,0,60\nradix,0,-90\n")
    with pytest.raises(ValueError, match=r"bad\.csv line 3: runtime_s"):
        QinClusterEnv(workload={"kind": "file", "path": str(bad)})
    with pytest.raises(ValueError, match=r"workload\.path"):
        QinClusterEnv(workload={"kind": "file"})
    with pytest.raises(ValueError, match=r"workload\.path"):
        QinClusterEnv(workload={"kind": "rw", "path": str(good)})


def test_traces_record_imbalance_and_jobs():
    env = QinClusterEnv(record_traces=True, **SMALL)
    _random_episode(env, seed=0)
    traces = env.traces()
    assert traces["im_c"].shape == (12,) and traces["util"].shape == (12, 5)
    assert np.all(traces["im_c"] >= 0)
    assert np.all(traces["finish_s"] >= traces["start_s"]) and np.all(traces["start_s"] >= traces["arrival_s"])
    assert set(traces["server"]) <= set(range(5))


@pytest.mark.parametrize(("cls", "kwargs"), [(QinNodeEnv, {}), (QinHierarchicalEnv, {"objective": "energy", **SMALL})])
def test_copies_of_node_and_hierarchical_envs_continue_like_the_original(cls, kwargs):
    """The contract checks copies on QinCluster; the node env (Kalman filters, masks) and the hierarchical env (a
    node-policy object inside the simulator) are copied too."""
    import copy
    import pickle

    env = cls(**kwargs)
    policy = baselines.make("random")
    obs, info = env.reset(seed=4)
    policy.reset(env, seed=4)
    for _ in range(3):
        obs, _, _, _, info = env.step(policy.act(obs, info))
    copies = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    for _ in range(8):
        action = policy.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        for other in copies:
            other_obs, other_reward, *_ = other.step(action)
            np.testing.assert_array_equal(other_obs, obs)
            assert other_reward == reward
        if terminated or truncated:
            break


def test_one_interference_mode_and_dchoice_rule_for_env_and_policy():
    """interference_mode and dchoice_rule are env keys that mean the same for the observation and for Qin's
    policies (read from the simulator's view); the policy has no key of its own."""
    from joulegym.envs.qin import scheduling

    for mode in scheduling.INTERFERENCE_MODES:
        for rule in scheduling.DCHOICE_RULES:
            env = QinClusterEnv(interference_mode=mode, dchoice_rule=rule, **SMALL)
            obs, info = env.reset(seed=1)
            view = env.sim.view()
            assert (view.interference_mode, view.dchoice_rule) == (mode, rule)
            p = view.prediction()
            expected = scheduling.interference_score(p.tolerated, p.caused, view.t_server, view.c_server, mode)
            rows = obs[: 8 * 15].reshape(8, 15)
            np.testing.assert_allclose(rows[:5, 10], np.minimum(expected / 3000.0, 10.0), rtol=1e-6)
            policy = baselines.make("qin", family="qin")
            policy.reset(env, seed=1)
            server = int(policy.act(obs, info))
            flist = scheduling.dchoice_flist(expected, p.mips[:, -1], 2, 0.5, view.load_instr)
            if rule == "least-loaded-of-d":
                assert server == int(flist[np.argmin(view.load_instr[flist])])
            else:
                assert server in flist.tolist()
    with pytest.raises(ValueError, match="takes no keyword"):
        baselines.make("qin", family="qin", interference_mode="hinge")  # one key: the env's


def test_held_out_apps_smt_and_profiling_keys():
    env = QinClusterEnv(**SMALL)
    assert env.config["offline_fraction"] == 0.1 and env._predictor_for_episode().offline_apps
    assert env.cluster.cores.tolist() == [4, 4, 4, 4, 4] and env.server_cores.tolist() == [4, 8, 4, 4, 4]
    assert QinClusterEnv(smt_yield=1.0, **SMALL).cluster.full_load_cores.tolist() == [4, 4, 4, 4, 4]
    for kwargs, field in (({"offline_fraction": 0.0}, "offline_fraction"), ({"smt_yield": 0.5}, "smt_yield"),
                          ({"profiling_slots": 0}, "profiling_slots"), ({"dchoice_rule": "best"}, "dchoice_rule"),
                          ({"decision_latency_s": -1}, "decision_latency_s"),
                          ({"decision_mode": "parallel"}, "decision_mode")):
        with pytest.raises(ValueError, match=field):
            QinClusterEnv(**kwargs, **SMALL)
