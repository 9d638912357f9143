"""Qin's pure algorithms (joulegym.envs.qin.scheduling): qin.md §7.7 and hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from joulegym.envs.qin import scheduling as sch


# --- d (paper §5.3, qin.md §2.7) ------------------------------------------------------------------------------------
def test_d_is_two_for_six_servers():
    assert sch.d_default(6) == 2  # ceil(ln 6) = 2 (the paper's "N = 6 ... d = 2")
    assert sch.d_default(5) == 2
    assert sch.d_default(1) == 2  # the floor of 2 (D >= 2)
    assert sch.d_default(100) == 5
    assert sch.d_default(1000) == 7


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_d_rejects_bad_n(bad):
    with pytest.raises(ValueError, match="n"):
        sch.d_default(bad)


# --- eq. 14-16 ---------------------------------------------------------------------------------------------------
def test_interference_literal_abs_and_hinge_by_hand():
    t_new = np.full(15, 60.0)
    c_new = np.full(15, 30.0)
    t_server = np.vstack([np.full(15, 100.0), np.full(15, 20.0)])  # empty server (A4), a busy one
    c_server = np.vstack([np.zeros(15), np.full(15, 80.0)])
    lit = sch.interference_score(t_new, c_new, t_server, c_server)
    # empty: |60 - 0| + |100 - 30| = 130 per SoI; busy: |60 - 80| + |20 - 30| = 30 per SoI
    np.testing.assert_allclose(lit, [15 * 130.0, 15 * 30.0])
    hinge = sch.interference_score(t_new, c_new, t_server, c_server, mode="hinge")
    # empty: no violation; busy: (80 - 60) + (30 - 20) = 30 per SoI
    np.testing.assert_allclose(hinge, [0.0, 15 * 30.0])
    with pytest.raises(ValueError, match="mode"):
        sch.interference_score(t_new, c_new, t_server, c_server, mode="l2")


# --- D-choice greedy (Alg. 3, qin.md §3.5) --------------------------------------------------------------------------
def test_flist_by_hand():
    inter = np.array([5.0, 1.0, 3.0, 2.0, 4.0])
    goal = np.array([10.0, 0.0, 30.0, 20.0, 5.0])
    # order_I = [1, 3, 2, 4, 0]; top-2 = [1, 3]; subset = top max(2, ceil(2.5)) = 3 = [1, 3, 2];
    # by goal: [2, 3, 1]; top-2 = [2, 3]  -> Flist = [1, 3, 2, 3] (3 twice: a multiset)
    np.testing.assert_array_equal(sch.dchoice_flist(inter, goal, d=2, p_frac=0.5), [1, 3, 2, 3])


def test_dchoice_returns_only_flist_members_uniformly_over_entries():
    rng = np.random.default_rng(0)
    inter = np.array([5.0, 1.0, 3.0, 2.0, 4.0])
    goal = np.array([10.0, 0.0, 30.0, 20.0, 5.0])
    picks = np.array([sch.dchoice_select(inter, goal, 2, rng) for _ in range(4000)])
    assert set(picks.tolist()) == {1, 2, 3}
    # server 3 holds two of the four entries
    assert abs(np.mean(picks == 3) - 0.5) < 0.04
    assert abs(np.mean(picks == 1) - 0.25) < 0.04


def test_dchoice_members_random_cases():
    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(1, 12))
        inter, goal = rng.random(n), rng.random(n)
        d = int(rng.integers(1, 5))
        flist = sch.dchoice_flist(inter, goal, d, p_frac=float(rng.uniform(0.1, 1.0)))
        assert len(flist) == 2 * min(d, n)
        assert sch.dchoice_select(inter, goal, d, rng) in set(sch.dchoice_flist(inter, goal, d).tolist())


def test_dchoice_d1_full_subset_reduces_to_argmin_argmax():
    rng = np.random.default_rng(2)
    for _ in range(100):
        inter, goal = rng.random(7), rng.random(7)
        flist = sch.dchoice_flist(inter, goal, d=1, p_frac=1.0)
        np.testing.assert_array_equal(flist, [np.argmin(inter), np.argmax(goal)])
    # when the two agree the choice is deterministic
    inter = np.array([3.0, 0.5, 2.0])
    goal = np.array([1.0, 9.0, 2.0])
    assert {sch.dchoice_select(inter, goal, 1, rng, p_frac=1.0) for _ in range(50)} == {1}


def test_dchoice_bad_input():
    with pytest.raises(ValueError, match="d must"):
        sch.dchoice_flist(np.ones(3), np.ones(3), d=0)
    with pytest.raises(ValueError, match="p_frac"):
        sch.dchoice_flist(np.ones(3), np.ones(3), d=1, p_frac=0.0)
    with pytest.raises(ValueError, match="shape"):
        sch.dchoice_flist(np.ones(3), np.ones(2), d=1)


# --- Qin_C goals (qin.md §3.5, A8-A9) ------------------------------------------------------------------------------
def test_energy_goal_uses_pl_eligible_levels():
    runtime = np.array([[4.0, 2.5, 1.5, 1.0]])  # levels ascending
    energy = np.array([[1.0, 2.0, 3.0, 4.0]])
    # PL 0.5: eligible iff T <= 1.0 / 0.5 = 2.0 -> levels 2, 3 -> min E = 3 at level 2
    goal, level = sch.qin_goal("energy", np.ones((1, 4)), energy, runtime)
    assert goal[0] == -3.0 and level[0] == 2
    # EDP (PL 0.1): only T <= 1.111 -> the top level
    goal, level = sch.qin_goal("edp", np.ones((1, 4)), energy, runtime)
    assert goal[0] == -4.0 and level[0] == 3
    goal, level = sch.qin_goal("perf", np.array([[1.0, 2.0, 3.0, 7.0]]), energy, runtime)
    assert goal[0] == 7.0 and level[0] == 3
    with pytest.raises(ValueError, match="focus"):
        sch.qin_goal("speed", np.ones((1, 4)), energy, runtime)


def test_qin_cluster_choose_respects_valid_mask():
    rng = np.random.default_rng(3)
    n, lv = 4, 4
    mips = rng.uniform(1000, 3000, (n, lv))
    args = (np.full(15, 60.0), np.full(15, 20.0), mips, np.ones((n, lv)), 1.0 / mips,
            np.full((n, 15), 100.0), np.zeros((n, 15)), np.zeros(n))
    valid = np.array([False, True, False, True])
    for _ in range(50):
        s, level = sch.qin_cluster_choose(*args, rng, valid=valid)
        assert s in (1, 3) and level == lv - 1
    with pytest.raises(ValueError, match="empty cluster"):
        sch.qin_cluster_choose(*args, rng, valid=np.zeros(n, dtype=bool))


# --- baselines (qin.md §5.1) ---------------------------------------------------------------------------------------
def test_kubernetes_scores_by_hand():
    rng = np.random.default_rng(4)
    # equal pods: the 8-core server has the lower cpu fraction -> higher LeastRequested
    assert sch.kubernetes_choose(np.array([3, 3]), np.array([4, 8]), np.array([16.0, 16.0]), rng) == 1
    # identical servers and pods: a random tie-break over both
    picks = {sch.kubernetes_choose(np.array([2, 2]), np.array([4, 4]), np.array([8.0, 8.0]), rng) for _ in range(40)}
    assert picks == {0, 1}
    # fewer pods wins on identical servers
    assert sch.kubernetes_choose(np.array([5, 1]), np.array([4, 4]), np.array([8.0, 8.0]), rng) == 1


def test_paragon_feasible_then_best_h():
    t_new, c_new = np.full(15, 70.0), np.full(15, 30.0)
    t_server = np.array([np.full(15, 100.0), np.full(15, 100.0), np.full(15, 10.0)])
    c_server = np.array([np.zeros(15), np.full(15, 50.0), np.zeros(15)])
    mips = np.array([[1.0, 2000.0], [1.0, 3000.0], [1.0, 9000.0]])
    # server 2 violates (t_server 10 < c_new 30); servers 0, 1 feasible -> the higher H: 1
    assert sch.paragon_choose(t_new, c_new, mips, t_server, c_server) == 1
    # nobody feasible -> minimum violation
    c_server2 = np.array([np.full(15, 90.0), np.full(15, 80.0), np.full(15, 95.0)])
    assert sch.paragon_choose(t_new, c_new, mips, np.full((3, 15), 100.0), c_server2) == 1


def test_mage_prefers_predicted_performance_under_colocation():
    t_new = np.full(15, 50.0)
    mips = np.array([[1.0, 3000.0], [1.0, 2000.0]])
    cores = np.array([4, 4])
    # server 0 is faster but oversubscribed (12 threads + 4 on 4 cores): 3000 / 4 < 2000
    assert sch.mage_choose(t_new, mips, np.zeros((2, 15)), cores, np.array([12, 0]), 4) == 1
    assert sch.mage_choose(t_new, mips, np.zeros((2, 15)), cores, np.array([0, 0]), 4) == 0


# --- DAC (paper §6, qin.md §3.7) -------------------------------------------------------------------------------------
def test_dac_all_at_once_equals_one_full_sort():
    rng = np.random.default_rng(5)
    for n in (1, 2, 7, 100, 257):
        keys = rng.integers(0, 10, n).astype(float)  # ties: the sort must be stable
        order, cost = sch.dac_double_and_rank(keys, sigma_s=None)
        np.testing.assert_array_equal(order, np.argsort(keys, kind="stable"))
        assert cost > 0


def test_dac_sigma_stops_early_on_a_ranked_prefix():
    keys = np.arange(100, 0, -1).astype(float)
    # cost of round k: 1 us * k log2(k + 1): 1 -> 1 us, 2 -> 3.17 us; sigma 2 us stops after high = 2
    order, cost = sch.dac_double_and_rank(keys, sigma_s=2e-6)
    np.testing.assert_array_equal(order, [1, 0])
    assert cost == pytest.approx(1e-6 * (1 + 2 * math.log2(3)))


def test_dac_keys():
    mips = np.array([[1.0, 3.0], [5.0, 5.0]])
    energy = np.array([[9.0, 9.0], [1.0, 2.0]])
    c_hat = np.array([np.full(15, 10.0), np.full(15, 1.0)])
    np.testing.assert_array_equal(sch.dac_order(sch.dac_keys("H_desc", mips, energy, c_hat)), [1, 0])
    np.testing.assert_array_equal(sch.dac_order(sch.dac_keys("E_asc", mips, energy, c_hat)), [1, 0])
    np.testing.assert_array_equal(sch.dac_order(sch.dac_keys("I_asc", mips, energy, c_hat)), [1, 0])
    with pytest.raises(ValueError, match="DAC key"):
        sch.dac_keys("H_asc", mips, energy, c_hat)


# --- eq. 19 and the DVFS controller (qin.md §2.3, §3.6) -----------------------------------------------------------
@pytest.mark.parametrize("f_ghz", [0.8, 1.7, 2.6, 3.5])
def test_eq19_identity_for_a_busy_core(f_ghz):
    period, f, f_high, cpi = 0.01, f_ghz * 1e9, 3.5e9, 1.37
    instr = period * f / cpi  # a core busy for the whole period
    assert sch.period_delay_s(instr, cpi, f, f_high) == pytest.approx(period * (1 - f / f_high))
    # eq. 18 over periods of a constant level: pl = 1 - f / f_H
    assert sch.period_delay_s(instr, cpi, f, f_high) / period == pytest.approx(1 - f / f_high)


def test_dvfs_levels_by_hand():
    freqs = np.tile(np.array([0.8, 1.7, 2.6, 3.5]) * 1e9, (3, 1))
    period = 0.01
    cpi = np.ones(3)
    ihat = 3.5e9 * period / cpi  # saturated cores: a full period of work at f_H
    big = np.full(3, 1e15)
    # fresh cores: PL 0 -> top; PL 0.5 -> 1 - 1.7/3.5 = 0.514 > 0.5, 1 - 2.6/3.5 = 0.257 ok -> level 2;
    # PL 0.8 -> 1 - 0.8/3.5 = 0.771 ok -> level 0
    levels = sch.dvfs_levels(np.zeros(3), np.zeros(3), period, freqs, cpi, ihat, big, np.array([0.0, 0.5, 0.8]))
    np.testing.assert_array_equal(levels, [3, 2, 0])
    # accumulated delay already over the threshold ((0.51 + 0.00257) / 1.01 > 0.5): f_H, the fallback
    levels = sch.dvfs_levels(np.full(3, 0.51), np.full(3, 1.0), period, freqs, cpi, ihat, big, 0.5)
    np.testing.assert_array_equal(levels, [3, 3, 3])
    # nothing left to run: no delay at any level -> the lowest
    levels = sch.dvfs_levels(np.zeros(3), np.zeros(3), period, freqs, cpi, ihat, np.zeros(3), 0.1)
    np.testing.assert_array_equal(levels, [0, 0, 0])


# --- Qin_N (Alg. 2 + 4) ------------------------------------------------------------------------------------------
def test_node_dchoice_places_new_threads_on_idle_cores_first():
    rng = np.random.default_rng(6)
    rate = np.full((8, 4), 1e9)
    cores = sch.node_dchoice(np.full(8, 1e9), np.full(8, -1), rate, np.ones(4), np.full(8, 1e7), rng,
                             focus="perf", d=2, p_frac=0.5)
    # the first four threads take the four idle cores, the next four one each (the least queued delay)
    assert sorted(cores[:4].tolist()) == [0, 1, 2, 3]
    np.testing.assert_array_equal(np.bincount(cores, minlength=4), [2, 2, 2, 2])
    for focus in sch.FOCUSES:
        out = sch.node_dchoice(rng.random(6), rng.integers(-1, 3, 6), rng.uniform(1e8, 1e9, (6, 3)),
                               rng.uniform(1, 5, 3), np.full(6, 1e6), rng, focus=focus)
        assert out.min() >= 0 and out.max() < 3


def test_node_dchoice_moves_a_thread_only_where_its_queueing_delay_is_lower():
    """§7.2.2: the node level cuts the threads' CPU queueing. A thread alone on its core never moves; a thread that
    shares a core moves to an idle core first, and never to a core where more work is queued ahead of it."""
    rng = np.random.default_rng(0)
    rate = np.full((4, 4), 1e9)
    # one thread per core: nothing to cut, for any rule and focus
    for rule in sch.DCHOICE_RULES:
        for focus in sch.FOCUSES:
            for _ in range(20):
                out = sch.node_dchoice(np.full(4, 1e9), np.arange(4), rate, np.ones(4), np.full(4, 1e7), rng,
                                       focus=focus, rule=rule)
                np.testing.assert_array_equal(out, [0, 1, 2, 3])
    # threads 0, 1 share core 0; core 1 holds thread 2 (5e9 left); core 2 is idle: thread 0 moves there
    rem = np.array([1e9, 1e9, 5e9])
    for _ in range(20):
        out = sch.node_dchoice(rem, np.array([0, 0, 1]), np.full((3, 3), 1e9), np.ones(3), np.full(3, 1e7), rng)
        np.testing.assert_array_equal(out, [2, 0, 1])
    # no idle core: a thread sharing core 0 (1e9 ahead of it) does not go to core 1 (5e9 queued)
    out = sch.node_dchoice(rem, np.array([0, 0, 1]), np.full((3, 2), 1e9), np.ones(2), np.full(3, 1e7), rng)
    np.testing.assert_array_equal(out, [0, 0, 1])


def test_dchoice_rules_random_of_top_d_and_least_loaded_of_d():
    inter = np.array([5.0, 1.0, 3.0, 2.0])
    goal = np.array([1.0, 2.0, 3.0, 4.0])
    load = np.array([0.0, 9.0, 1.0, 4.0])
    flist = sch.dchoice_flist(inter, goal, d=2, p_frac=0.5, tiebreak=load)  # [1, 3] by I, [3, 1] by goal
    assert sorted(set(flist.tolist())) == [1, 3]
    rng = np.random.default_rng(1)
    picks = {sch.dchoice_select(inter, goal, 2, rng, 0.5, load) for _ in range(200)}
    assert picks == {1, 3}  # the paper's uniform pick over the Flist
    assert {sch.dchoice_select(inter, goal, 2, rng, 0.5, load, "least-loaded-of-d") for _ in range(20)} == {3}
    with pytest.raises(ValueError, match="dchoice_rule"):
        sch.dchoice_select(inter, goal, 2, rng, 0.5, load, "best")


def test_dvfs_per_app_by_hand_and_equal_to_per_core_for_one_thread_per_core():
    freqs = np.tile(np.array([0.8, 1.7, 2.6, 3.5]) * 1e9, (2, 1))
    period, cpi = 0.01, np.ones(2)
    ihat = np.full(2, 3.5e9 * period)
    big = np.full(2, 1e15)
    # thread 0 alone on core 0 (fresh app) needs level 2; core 1 hosts a fresh app (level 2) and one whose
    # accumulated loss is already over PL (the top level): the core takes the highest need
    levels = sch.dvfs_levels_per_app(np.array([0.0, 0.51, 0.0]), np.array([0.0, 1.0, 0.0]), np.array([0, 1, 1]),
                                     np.array([1.0, 0.5, 0.5]), np.ones(3), period, freqs, cpi, ihat, big, 0.5)
    np.testing.assert_array_equal(levels, [2, 3])
    rng = np.random.default_rng(7)
    for _ in range(50):
        delay, elapsed = rng.uniform(0, 0.5, 2), rng.uniform(0.5, 1.0, 2)
        pl = float(rng.uniform(0.05, 0.6))
        per_core = sch.dvfs_levels(delay, elapsed, period, freqs, cpi, ihat, big, pl)
        per_app = sch.dvfs_levels_per_app(delay, elapsed, np.array([0, 1]), np.ones(2), np.ones(2), period, freqs,
                                          cpi, ihat, big, pl)
        np.testing.assert_array_equal(per_app, per_core)
