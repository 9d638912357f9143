"""Node-level policies inside the Qin simulator (joulegym.envs.qin.node_policies): qin.md §3.5-3.6, §4.1, §5.1."""

from __future__ import annotations

import numpy as np
import pytest

from joulegym.core.inner import InnerPolicy
from joulegym.core.policy import available, make_inner
from joulegym.envs.qin.node_policies import QinNodePolicy
from tests.qin.test_simulator import NO_LATENCY, make_jobs, make_sim, place_all

NODE_POLICIES = ("linux", "sniper-pinned", "qin-node")


def test_every_policy_follows_the_protocol():
    """The node policies are inner policies of the one registry (one spelling each) with Qin's node hooks."""
    assert set(NODE_POLICIES) <= set(available("qin", kind="QinNode", inner=True))
    for name in NODE_POLICIES:
        policy = make_inner(name, family="qin")
        assert isinstance(policy, InnerPolicy) and policy.name == name
        for hook in ("place", "on_change", "control", "decide"):
            assert callable(getattr(policy, hook))
    with pytest.raises(ValueError, match="node_policy"):
        make_sim(node_policy="cfs")
    with pytest.raises(ValueError, match="node_policy"):
        make_sim(node_policy="qin_node")  # one spelling
    with pytest.raises(ValueError, match="focus"):
        QinNodePolicy(focus="speed")
    with pytest.raises(ValueError, match="remap"):
        QinNodePolicy(remap="always")
    with pytest.raises(ValueError, match="pl"):
        QinNodePolicy(pl=1.0)


def test_linux_least_loaded_idle_balancing_and_hints():
    sim = make_sim(**NO_LATENCY)
    sim.reset(np.random.default_rng(0), make_jobs(["lu_cb", "fft"], [1e9, 1e12], [2, 4]))
    sim.advance()
    sim.apply((0, 1))  # job 0 (short) with V/F hint 1
    sim.advance()
    sim.apply((0, 3))
    np.testing.assert_array_equal(sim.core_threads, [2, 2, 1, 1])
    # shared cores run at the highest hint of their jobs; job 1 alone on cores 2, 3 at its hint
    np.testing.assert_array_equal(sim.core_level, [3, 3, 3, 3])
    while not sim.done:
        sim.advance()
        assert sim.core_threads.max() - sim.core_threads.min() <= 1 or sim.done
    assert sim.done


def test_linux_hint_applies_to_a_lone_job():
    sim = make_sim(**NO_LATENCY)
    sim.reset(np.random.default_rng(0), make_jobs(["fft"], [1e10], [2]))
    sim.advance()
    sim.apply((0, 1))
    busy = sim.core_threads > 0
    assert np.all(sim.core_level[busy] == 1)


def test_sniper_pinned_round_robin_never_migrates():
    sim = make_sim(node_policy="sniper-pinned", **NO_LATENCY)
    sim.reset(np.random.default_rng(0), make_jobs(["lu_cb", "fft"], [1e9, 1e12], [2, 4]))
    sim.advance()
    sim.apply((0, 0))  # the hint is ignored: no DVFS in Sniper's default
    sim.advance()
    sim.apply((0, 0))
    # job 0 -> cores 0, 1; job 1 -> free cores 2, 3, then round robin 0, 1
    np.testing.assert_array_equal(sim.thread_core[:6], [0, 1, 2, 3, 0, 1])
    assert np.all(sim.core_level == 3)
    before = sim.thread_core[2:6].copy()
    assert not sim.advance()
    np.testing.assert_array_equal(sim.thread_core[2:6], before)
    assert sim.migrations == 0


@pytest.mark.parametrize("focus", ["energy", "edp"])
def test_qin_node_keeps_every_app_within_pl(focus):
    sim = make_sim(servers=("i5-4690", "i7-4790"), node_policy=QinNodePolicy(focus=focus),
                   **NO_LATENCY)
    sim.reset(np.random.default_rng(1),
              make_jobs(["ocean_cp", "barnes", "fft", "lu_cb", "radix"], [3e9, 2e9, 4e9, 1e9, 2e9], [4] * 5))
    place_all(sim, [0, 1, 0, 1, 0])
    pl = {"energy": 0.5, "edp": 0.1}[focus]
    job_pl = sim.job_pl()
    assert sim.done
    # the controller bounds the *predicted* loss: the Kalman prediction error under CPI phases and completions or
    # migrations inside a period (shares change after the decision) let it overshoot slightly (measured over seeds
    # 0-7: <= 0.2 % relative; an unmeasured core counts as busy at CPI 1, so a job's first period stays within PL)
    assert job_pl.max() <= pl * 1.01
    assert job_pl.mean() > 0.5 * pl  # it does use the slack


def test_qin_node_saves_energy_under_eq12_power():
    """With only eq. 12's dynamic term, running below f_H within PL saves energy (the node-level claim)."""
    out = {}
    for focus in ("perf", "energy"):
        sim = make_sim(power_terms="dynamic_only", node_policy=QinNodePolicy(focus=focus),
                       **NO_LATENCY)
        sim.reset(np.random.default_rng(0), make_jobs(["barnes"], [4e9], [4]))
        place_all(sim, [0])
        out[focus] = sim.metrics()
    assert out["energy"]["energy_j"] < 0.8 * out["perf"]["energy_j"]
    assert out["energy"]["makespan_s"] <= out["perf"]["makespan_s"] / (1 - 0.5) * 1.01


def test_qin_node_perf_focus_never_ticks_and_runs_at_f_high():
    policy = QinNodePolicy(focus="perf")
    assert not policy.periodic
    sim = make_sim(node_policy=policy, **NO_LATENCY)
    sim.reset(np.random.default_rng(0), make_jobs(["fft", "barnes"], [1e10, 1e10], [4, 4]))
    place_all(sim, [0, 0], [0, 0])
    assert sim.done and sim.metrics()["pl_max"] == 0.0


def test_qin_node_period_remap_redecides_each_period():
    policy = QinNodePolicy(focus="perf", remap="period")
    assert policy.periodic
    sim = make_sim(node_policy=policy, control_period_s=0.001, **NO_LATENCY)
    sim.reset(np.random.default_rng(0), make_jobs(["fft", "barnes"], [4e8, 4e8], [3, 3]))
    place_all(sim, [0, 0])
    # 6 threads on 4 cores, each period a uniform pick over the Flist: threads do move
    assert sim.done and sim.migrations > 0


def test_qin_node_kalman_tracks_the_measured_cpi():
    from tests.qin.test_simulator import tau

    policy = QinNodePolicy(focus="energy")
    sim = make_sim(node_policy=policy, control_period_s=0.01, phases=False, **NO_LATENCY)
    # a second job arrives at t = 1 s: the decision point where the filter is inspected (100 periods in)
    sim.reset(np.random.default_rng(0), make_jobs(["lu_cb", "fft"], [2e10, 1e9], [1, 1], arrivals=[0.0, 1.0]))
    sim.advance()
    sim.apply((0, None))
    assert sim.advance() and sim.now == pytest.approx(1.0)
    core = sim.thread_core[0]
    # with phases off a lone thread's CPI at level l is f_l * tau(f_l): the estimate lies in that range
    cpis = [sim.freq_hz[core, lv] * tau(sim, 0, 0, lv) for lv in range(sim.n_levels)]
    assert policy.initialised[core]
    assert min(cpis) * 0.999 <= policy.cpi_estimate[core] <= max(cpis) * 1.001
    # the instruction filter tracks instructions per period extrapolated to f_H, normalised by f_H * period
    # (A14): for a lone busy thread that is 1 / CPI at the level it ran
    assert 1 / max(cpis) * 0.999 <= policy.instr_estimate[core] <= 1 / min(cpis) * 1.001
    sim.apply((0, None))
    assert not sim.advance() and sim.done


def _node_runtime(policy: str, **env_kwargs) -> float:
    import gymnasium as gym

    import joulegym  # noqa: F401
    from joulegym.core.policy import make
    from joulegym.core.rollout import rollout

    kwargs = {"focus": "perf"} if policy == "qin-node" else {}
    env = gym.make("joulegym/QinNode-v0", objective="perf", **env_kwargs)
    return rollout(env, make(policy, family="qin", **kwargs), seed=0).metrics["runtime_s"]


def test_qin_node_at_pl_0_is_never_slower_than_sniper_pinned_on_any_splash2_app():
    """Fig. 14 at PL = 0 (f_H, no DVFS): one 4-thread Splash-2 app on the i5-4690's 4 cores. Qin's node level
    puts each thread on an idle core and never moves a thread alone on its core, so it runs exactly as Sniper's
    pinned default (measured: equal runtimes on all 14 apps); the reference policy never loses to doing nothing."""
    from joulegym.scenarios.qin import SPLASH2

    for app in SPLASH2:
        qin, sniper = _node_runtime("qin-node", apps=[app]), _node_runtime("sniper-pinned", apps=[app])
        assert qin <= sniper * (1 + 1e-12), (app, qin, sniper)


def test_qin_node_balances_several_apps_better_than_sniper_pinned():
    """§7.2.2: "D-Choices ... achieves better load balancing over best choice ... it reduces the threads CPU queuing
    time". With more threads than cores, Sniper's pinned threads stay where round robin put them while Qin's move
    to idle cores as others finish (measured runtime: 0.45 s against 0.59 s for fft + barnes + lu_cb at 3 threads
    each; 0.31 against 0.41 for fft + water_nsquared)."""
    for apps in (["fft", "barnes", "lu_cb"], ["fft", "water_nsquared"]):
        qin = _node_runtime("qin-node", apps=apps, threads_per_app=3)
        sniper = _node_runtime("sniper-pinned", apps=apps, threads_per_app=3)
        assert qin < 0.85 * sniper, (apps, qin, sniper)
