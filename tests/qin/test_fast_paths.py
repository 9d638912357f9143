"""The simulator's per-control-period fast paths (issue 16 speed targets) compute exactly what the general
paths compute: cached gathers (``_TickContext``), the fused DVFS step of ``qin_node`` and the one-server level
update of ``linux`` must leave bit-identical state (same seed -> same metrics)."""

from __future__ import annotations

import copy

import numpy as np

from joulegym.envs.qin.node_policies import _hint_levels, make_node_policy
from tests.qin.test_simulator import NO_LATENCY, make_jobs, make_sim

SERVERS = ("i5-4690", "i7-4790", "i5-6600")
STATE = ("thread_rem", "thread_rate", "job_cpu_s", "job_delay_s", "core_period_instr", "core_period_work",
         "core_busy_s", "core_period_busy_s", "core_delay_s", "core_elapsed_s", "server_energy_j",
         "server_load_instr", "server_t", "power_w", "server_rate_sum", "server_gen", "core_level", "_core_f",
         "_core_loss")


def mid_run_sim(node_policy):
    """Three servers mid-episode: five jobs placed at t = 0, the simulator stopped at the sixth arrival (0.5 s),
    after ~50 control periods of 10 ms."""
    sim = make_sim(SERVERS, node_policy=node_policy, **NO_LATENCY)
    apps = ["fft", "lu_cb", "radix", "ocean_cp", "barnes", "fmm"]
    sim.reset(make_jobs(apps, [3e10, 2e10, 4e10, 3e10, 5e10, 1e10], [4, 2, 4, 3, 4, 2],
                        arrivals=[0, 0, 0, 0, 0, 0.5]), seed=3)
    for k in range(5):
        assert sim.advance()
        sim.apply(k % 3, None if k % 2 else 1)
    assert sim.advance() and sim.pending_job == 5
    assert sim.now == 0.5 and sim._busy_servers().size == 3
    return sim


def assert_same(a, b):
    for name in STATE:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert sorted(a._heap) == sorted(b._heap)


def test_tick_fast_paths_equal_the_general_paths():
    fast = mid_run_sim(make_node_policy("qin_node", focus="energy"))
    ref = copy.deepcopy(fast)
    t = fast.now + 0.004
    fast._integrate_busy(t)
    ref._integrate(ref._busy_servers(), t)
    assert_same(fast, ref)
    servers = fast._busy_servers()
    fast.node_policy._dvfs(fast, servers)
    ref.node_policy._dvfs_reference(ref, servers)
    assert_same(fast, ref)
    np.testing.assert_array_equal(fast.node_policy.kalman.estimate, ref.node_policy.kalman.estimate)
    np.testing.assert_array_equal(fast.node_policy.kalman.variance, ref.node_policy.kalman.variance)
    assert not np.array_equal(fast.core_level[fast.core_threads > 0], np.full(np.count_nonzero(
        fast.core_threads), fast.n_levels - 1)), "PL 0.5 should lower some level (the check must see a change)"
    fast._refresh_busy()
    ref._refresh(ref._busy_servers(), mapping=False)
    assert_same(fast, ref)


def test_linux_server_level_update_equals_set_node_decision():
    fast = mid_run_sim("linux")
    ref = copy.deepcopy(fast)
    for s in range(3):
        th = fast._server_threads[s]
        top = _hint_levels(fast, s)
        lo, hi = fast.first_core[s], fast.first_core[s + 1]
        top[lo:hi] = np.where(top[lo:hi] >= 0, 0, -1)  # a change: every busy core to level 0
        fast.set_server_core_levels(s, top[lo:hi])
        ref.set_node_decision(th, None, top)
        assert_same(fast, ref)


def test_control_periods_reuse_the_cached_gathers(monkeypatch):
    """The per-period cost rests on re-using the gathers between mapping changes: far fewer context builds than
    control periods (a build per period would bring back the old ~200 us tick)."""
    import joulegym.envs.qin.simulator as simulator

    builds = []

    class Counting(simulator._TickContext):
        __slots__ = ()

        def __init__(self, sim):
            builds.append(sim.now)
            super().__init__(sim)

    monkeypatch.setattr(simulator, "_TickContext", Counting)
    sim = mid_run_sim(make_node_policy("qin_node", focus="energy"))
    ticks_before = sim._tick_index
    sim.apply(0, None)
    while sim.advance():
        pass
    ticks = sim._tick_index - ticks_before
    assert sim.done and ticks > 100
    assert 0 < len(builds) <= ticks // 5, (len(builds), ticks)
