"""The Qin reference policies (joulegym.baselines.qin) on small scenarios: each completes an episode and decides
as its paper describes it (docs/families/qin.md §5.1, §7.6)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import joulegym  # noqa: F401
from joulegym import baselines
from joulegym.core.family import register_family
from joulegym.core.policy import PolicyNotApplicable
from joulegym.core.rollout import rollout
from joulegym.envs.qin import scheduling
from joulegym.scenarios import qin as qin_scenarios

register_family(qin_scenarios.FAMILY)

CLUSTER_POLICIES = ("qin", "qin-perf", "qin-energy", "qin-edp", "qin-d1", "qin-dac", "kubernetes", "paragon", "mage",
                    "round-robin", "least-loaded", "drain-time", "drain-time-sized", "random")
NODE_POLICIES = ("qin-node", "sniper-pinned", "linux", "random")
SMALL = {"workload": {"num_jobs": 10}}


def _episode(env_id: str, name: str, seed: int = 0, **kwargs):
    policy = baselines.make(name, family="qin")
    env = gym.make(env_id, **baselines.env_config_for(policy, kwargs))
    return env, rollout(env, policy, seed=seed, record=True)


def test_registered_and_applicable():
    names = set(baselines.available("qin"))
    assert set(CLUSTER_POLICIES) | set(NODE_POLICIES) <= names
    assert set(baselines.applicable(gym.make("joulegym/QinNode-v0"))) >= set(NODE_POLICIES)
    assert "kubernetes" not in baselines.applicable(gym.make("joulegym/QinNode-v0"))


@pytest.mark.parametrize("name", CLUSTER_POLICIES)
def test_cluster_policy_completes_an_episode(name):
    _, episode = _episode("joulegym/QinCluster-tiny-v0", name, **SMALL)
    assert episode.terminated and episode.metrics["jobs_done"] == 10
    assert not any(info["repaired"] for info in episode.infos)  # reference policies choose valid servers
    assert np.isfinite(episode.total_return)


@pytest.mark.parametrize("name", NODE_POLICIES)
def test_node_policy_completes_an_episode(name):
    _, episode = _episode("joulegym/QinNode-v0", name)
    assert episode.terminated and episode.metrics["threads_done"] == 4


def test_policy_env_configs():
    assert baselines.make("qin-energy", family="qin").env_config == {"action_mode": "server_vf"}
    assert baselines.make("qin-dac", family="qin").env_config == {"admission": "dac_H_desc"}
    assert baselines.make("qin-dac", family="qin", key="E_asc").env_config == {"admission": "dac_E_asc"}
    assert baselines.make("kubernetes", family="qin").env_config == {"profile_latency_s": 0.0,
                                                                     "decision_latency_s": 0.005}
    with pytest.raises(ValueError, match="focus"):
        baselines.make("qin", family="qin", focus="speed")
    with pytest.raises(ValueError, match="d must be"):
        baselines.make("qin", family="qin", d=0)


def _decisions(name: str, seed: int = 0, **policy_kw):
    """Every (pending job, chosen server, state before the choice) of one tiny episode."""
    policy = baselines.make(name, family="qin", **policy_kw)
    env = gym.make("joulegym/QinCluster-tiny-v0", **baselines.env_config_for(policy, SMALL)).unwrapped
    obs, info = env.reset(seed=seed)
    policy.reset(env, seed=seed)
    out = []
    done = False
    while not done:
        sim = env.sim
        view = sim.view()
        state = {"job": env.pending_job, "pred": view.prediction(), "load": view.load_instr.copy(),
                 "drain": view.drain_s.copy(), "jobs_drain": view.jobs_drain_s.copy(),
                 "rate": view.server_rate.copy(), "rate_writeable": view.server_rate.flags.writeable,
                 "pods": sim.jobs_on.copy(), "t_server": sim.t_server.copy(), "c_server": sim.c_server.copy(),
                 "threads": sim.runnable_threads.copy()}
        action = policy.act(obs, info)
        out.append((state, int(action)))
        obs, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    return env, out


def test_qin_picks_from_the_flist():
    """Alg. 3: every Qin choice is a member of the Flist of the D-choice rule (d = max(2, ceil(ln 5)) = 2)."""
    env, decisions = _decisions("qin")
    assert scheduling.d_default(env.N) == 2
    for state, server in decisions:
        p = state["pred"]
        inter = scheduling.interference_score(p.tolerated, p.caused, state["t_server"], state["c_server"])
        flist = scheduling.dchoice_flist(inter, p.mips[:, -1], 2, 0.5, state["jobs_drain"])
        assert server in flist.tolist()


def test_view_drain_times_are_over_the_measured_rate():
    """The view's documented relations (envs/qin/view.py): ``drain_s = load_instr / server_rate`` and
    ``jobs_drain_s = jobs_on / server_rate``, 0 on a server without a rate; the rate is read-only."""
    _, decisions = _decisions("drain-time")
    rates = np.array([state["rate"] for state, _ in decisions])
    assert (rates == 0).any() and (rates > 0).any()  # idle servers at the start, running ones later
    for state, _ in decisions:
        rate, running = state["rate"], state["rate"] > 0
        assert not state["rate_writeable"]
        np.testing.assert_allclose(state["drain"][running], state["load"][running] / rate[running], rtol=1e-12)
        np.testing.assert_allclose(state["jobs_drain"][running], state["pods"][running] / rate[running], rtol=1e-12)
        assert (state["drain"][~running] == 0).all() and (state["jobs_drain"][~running] == 0).all()


def test_qin_d1_is_the_greedy_pick():
    """With d = 1 the Flist holds the least-interference server and the best-H server of the top half."""
    _, decisions = _decisions("qin-d1")
    for state, server in decisions:
        p = state["pred"]
        inter = scheduling.interference_score(p.tolerated, p.caused, state["t_server"], state["c_server"])
        flist = scheduling.dchoice_flist(inter, p.mips[:, -1], 1, 0.5, state["jobs_drain"])
        assert flist.size == 2 and server in flist.tolist()


def test_greedy_baselines_match_their_rules():
    env, k8s = _decisions("kubernetes")
    cores, mem = env.server_cores, env.server_mem_gb
    for state, server in k8s:  # v1.14 LeastRequested + BalancedAllocation with 0.1 CPU / 200 MB per pod: argmax
        cpu = (state["pods"] + 1) * 0.1 / cores
        ram = (state["pods"] + 1) * 0.2 / mem
        score = 5.0 * ((1 - cpu) + (1 - ram)) + 10.0 - 10.0 * np.abs(cpu - ram)
        assert score[server] >= score.max() - 1e-9
    _, paragon = _decisions("paragon")
    for state, server in paragon:
        p = state["pred"]
        assert server == scheduling.paragon_choose(p.tolerated, p.caused, p.mips, state["t_server"], state["c_server"])
    env, mage = _decisions("mage")
    for state, server in mage:
        p = state["pred"]
        assert server == scheduling.mage_choose(p.tolerated, p.mips, state["c_server"], env.server_cores,
                                                state["threads"], int(env.jobs.threads[state["job"]]))
    _, rr = _decisions("round-robin")
    assert [s for _, s in rr] == [k % 5 for k in range(10)]
    _, ll = _decisions("least-loaded")
    for state, server in ll:
        assert state["load"][server] == state["load"].min()
    _, dt = _decisions("drain-time")
    for state, server in dt:  # an idle server drains at once, so it is chosen first
        assert state["jobs_drain"][server] == state["jobs_drain"].min()
    assert [s for _, s in dt][:5] == [0, 1, 2, 3, 4]
    _, sized = _decisions("drain-time-sized")
    for state, server in sized:
        assert state["drain"][server] == state["drain"].min()


def test_qin_energy_applies_its_level():
    """The energy focus picks the least-energy PL-eligible level (PL 0.5) and the env applies it (server_vf)."""
    policy = baselines.make("qin-energy", family="qin")
    env = gym.make("joulegym/QinCluster-tiny-v0", objective="energy", **baselines.env_config_for(policy, SMALL))
    base = env.unwrapped
    obs, info = env.reset(seed=0)
    policy.reset(env, seed=0)
    job = base.pending_job
    p = base.pending_prediction()
    action = policy.act(obs, info)
    server, level = divmod(int(action), base.L)
    _, best = scheduling.eligible_min(p.energy_j, p.runtime_s, 0.5)
    assert level == best[server]
    env.step(action)
    assert base.sim.job_level_hint[job] == level


def test_policies_refuse_other_envs():
    with pytest.raises(PolicyNotApplicable):
        baselines.make("kubernetes", family="qin").reset(gym.make("joulegym/QinNode-v0"))
    with pytest.raises(PolicyNotApplicable):
        baselines.make("qin-node", family="qin").reset(gym.make("joulegym/QinCluster-tiny-v0"))


def test_same_seed_same_decisions():
    _, a = _decisions("qin", seed=4)
    _, b = _decisions("qin", seed=4)
    assert [s for _, s in a] == [s for _, s in b]


HIERARCHICAL = [("joulegym/Qin-tiny-v0", "qin-energy", "energy"), ("joulegym/Qin-tiny-v0", "qin", "makespan"),
                ("joulegym/Qin-tiny-v0", "kubernetes", "edp")]


@pytest.mark.parametrize(("env_id", "name", "objective"),
                         [("joulegym/QinCluster-tiny-v0", n, "energy") for n in CLUSTER_POLICIES if n != "random"]
                         + HIERARCHICAL)
def test_simulator_path_gives_the_env_path_metrics(env_id, name, objective):
    """run_inner on the simulator alone (the fast path of evaluation.qin.run) reproduces rollout through the env
    exactly: the same instance and generator (QinClusterEnv.episode_inputs), the same policy stream (policy_rng),
    with the node level inside (Qin-tiny: qin-node with DVFS every control period)."""
    from joulegym.evaluation.qin_experiments import run

    kwargs = {"workload": {"num_jobs": 8, "size_scale": 0.1 if env_id.startswith("joulegym/Qin-") else 1.0},
              "objective": objective}
    through_env = run(env_id, name, 3, kwargs, through_env=True)
    assert run(env_id, name, 3, kwargs) == through_env
    assert through_env["jobs_done"] == 8
