"""The schedulers of §5 (spec §3.6) on toy workloads with known outcomes, and every scheduler on the catalog."""

from __future__ import annotations

import numpy as np
import pytest

from joulegym.baselines.dream import INNER
from joulegym.core.inner import run_inner
from joulegym.core.policy import available, make_inner
from joulegym.envs.dream import mapscore
from joulegym.envs.dream.mapscore import DreamPolicy, select_variant
from joulegym.envs.dream.schedulers import FCFSScheduler, PlanariaScheduler, StaticFCFSScheduler, VeltairScheduler
from joulegym.envs.dream.simulator import App, Dispatch, DreamSim, Drop, Wait
from tests.dream.toy import model, reset, sim, table

MULTI_LAYER = frozenset({"fcfs", "fcfs-static", "veltair"})  # dispatch more than one layer per decision


def skip_toy(**kw) -> DreamSim:
    # A: 2 layers of 20 ms, the second always skipped (p_dynamic = 1); B: one 50 ms layer; 10 FPS; one acc
    tabs = {"A": model("A", table("A", [[20.0], [20.0]], skip=[[1, 2]])), "B": model("B", table("B", [[50.0]]))}
    return sim(tabs, [App("A", 10, p_dynamic=1.0), App("B", 10)], horizon_s=0.3, record_timeline=True, **kw)


def test_fcfs_known_completion_times():
    s = skip_toy()
    run_inner(s, FCFSScheduler(), 0)
    names = s.model_names
    ends = {(names[s.f_model[i]], s.f_frame[i]): round(s.f_end[i], 9) for i in range(len(s.f_state))}
    # A skips its second layer (20 ms), then B (50 ms); every 100 ms
    assert ends[("A", 0)] == 0.02 and ends[("B", 0)] == 0.07
    assert ends[("A", 1)] == 0.12 and ends[("B", 1)] == 0.17
    assert s.dispatches == 6 and s.layers == 6  # one ALL_LAYERS dispatch per frame (A's layer 1 skipped)


def test_static_fcfs_waits_for_the_worst_case_reservation():
    s = skip_toy()
    sched = StaticFCFSScheduler()
    run_inner(s, sched, 0)
    # the offline plan assumes A's skippable layer runs (40 ms): B is reserved at 40 ms and may not start early
    assert sched.plan[(0, 0)] == (0.0, 0) and sched.plan[(1, 0)] == (pytest.approx(0.04), 0)
    names = s.model_names
    ends = {(names[s.f_model[i]], s.f_frame[i]): round(s.f_end[i], 9) for i in range(len(s.f_state))}
    assert ends[("A", 0)] == 0.02 and ends[("B", 0)] == 0.09
    assert ends[("B", 1)] == 0.19


def test_static_fcfs_leaves_the_slot_of_an_unactivated_child_idle():
    tabs = {"P": model("P", table("P", [[10.0]])), "C": model("C", table("C", [[30.0]])),
            "X": model("X", table("X", [[30.0]]))}
    apps = [App("P", 10), App("C", 10, parent="P", p=0.5), App("X", 10)]
    stat = sim(tabs, apps, horizon_s=1.0, record_timeline=True)
    dyn = sim(tabs, apps, horizon_s=1.0, record_timeline=True)
    plan = StaticFCFSScheduler()
    run_inner(stat, plan, 1)
    run_inner(dyn, FCFSScheduler(), 1)
    # plan per period: P [0, 10], then X (released at 0, older than C) [10, 40], C [40, 70]
    assert plan.plan[(2, 0)][0] == pytest.approx(0.01) and plan.plan[(1, 0)][0] == pytest.approx(0.04)
    for s in (stat, dyn):
        assert all(t1 - t0 > 0 for _a, t0, t1, *_ in s.timeline)
    x_stat = [stat.f_end[i] - stat.f_release[i] for i in range(len(stat.f_state)) if stat.f_model[i] == 2]
    x_dyn = [dyn.f_end[i] - dyn.f_release[i] for i in range(len(dyn.f_state)) if dyn.f_model[i] == 2]
    assert x_stat == pytest.approx([0.04] * len(x_stat))  # always at its reservation
    assert x_dyn == pytest.approx([0.04] * len(x_dyn))
    # static: every C runs at its reserved 40 ms -> finishes at 70 ms; dynamic runs C right after X too
    c_stat = [stat.f_end[i] - 0.1 * stat.f_frame[i] for i in range(len(stat.f_state)) if stat.f_model[i] == 1]
    assert c_stat and all(v == pytest.approx(0.07) for v in c_stat)


def test_veltair_blocks_group_layers_below_the_threshold():
    V = VeltairScheduler(theta_block_s=1e-3)
    s = sim({"m": model("m", table("m", [[0.4], [0.4], [0.4], [2.0], [0.3], [0.3]]))}, [App("m", 10)],
            horizon_s=0.1)
    reset(s, 0)
    s.advance()
    ends = V.block_end(s.view().tables_of(0))
    assert ends == [2, 2, 3, 4, 6, 6]  # [0.4 0.4] [0.4] [2.0] [0.3 0.3]
    d = V.decide(s.view())
    assert d == Dispatch(0, 0, 2)


def test_planaria_takes_the_smallest_accelerator_that_meets_the_deadline():
    # acc 0: 4096 PEs fast; acc 1: 1024 PEs slower but fast enough
    s = sim({"m": model("m", table("m", [[10.0, 30.0]]))}, [App("m", 10)], n_acc=2, pes=[4096, 1024],
            horizon_s=0.1)
    reset(s, 0)
    s.advance()
    assert PlanariaScheduler().decide(s.view()) == Dispatch(0, 1)
    tight = sim({"m": model("m", table("m", [[10.0, 120.0]]))}, [App("m", 10)], n_acc=2, pes=[4096, 1024],
                horizon_s=0.1)
    reset(tight, 0)
    tight.advance()
    assert PlanariaScheduler().decide(tight.view()) == Dispatch(0, 0)
    # size only ("pes"): 10 ms on 4096 PEs and 120 ms on 1024 are (40960 + 122880) / 2 PE-ms a layer, 80 ms on
    # the small array by its PEs, so it meets the 100 ms deadline there as far as a dataflow-blind Planaria knows
    assert PlanariaScheduler(estimates="pes").decide(tight.view()) == Dispatch(0, 1)
    with pytest.raises(ValueError, match="estimates"):
        PlanariaScheduler(estimates="maestro")


def test_planaria_serves_feasible_frames_before_a_late_one():
    """Planaria's rank (he-actlab/planaria.code ``assign_cores_if_tasks_not_fit``): a frame that can meet its
    deadline scores priority / slack / its minimal resource, one that cannot on any accelerator scores below zero
    and waits behind every feasible frame. The earlier least-slack reading served the late frame first."""
    # L: one 150 ms layer (late on its 100 ms period whatever the accelerator); F: one 50 ms layer; one accelerator
    tabs = {"L": model("L", table("L", [[150.0]])), "F": model("F", table("F", [[50.0]]))}
    s = reset(sim(tabs, [App("L", 10), App("F", 10)], horizon_s=0.1), 0)
    s.advance()
    late, feasible = (i for i in s.ready if s.model_names[s.f_model[i]] == "L"), \
        (i for i in s.ready if s.model_names[s.f_model[i]] == "F")
    late, feasible = next(late), next(feasible)
    assert PlanariaScheduler().decide(s.view()) == Dispatch(feasible, 0)
    assert PlanariaScheduler(rank="least-slack").decide(s.view()) == Dispatch(late, 0)
    with pytest.raises(ValueError, match="rank"):
        PlanariaScheduler(rank="edf")


def test_planaria_ranks_feasible_frames_by_slack_times_minimal_resource():
    """Among feasible frames the score priority / slack / minimal resource ranks a frame that fits the small
    accelerator (1024 PEs) ahead of one with less slack that needs the big one (4096 PEs): 100 ms x 1024 < 50 ms x 4096
    (planaria.code's score); least slack first takes the other."""
    # S (10 FPS): 60 ms on either accelerator, fits 1024 PEs; B (20 FPS): 40 ms on 4096 PEs, 80 ms on 1024
    tabs = {"S": model("S", table("S", [[60.0, 60.0]])), "B": model("B", table("B", [[40.0, 80.0]]))}
    s = reset(sim(tabs, [App("S", 10), App("B", 20)], n_acc=2, pes=[4096, 1024], horizon_s=0.05), 0)
    s.advance()
    small, big = (next(i for i in s.ready if s.model_names[s.f_model[i]] == n) for n in ("S", "B"))
    assert PlanariaScheduler().decide(s.view()) == Dispatch(small, 1)
    assert PlanariaScheduler(rank="least-slack").decide(s.view()) == Dispatch(big, 0)


def test_edf_takes_the_earliest_deadline_on_the_fastest_idle_accelerator():
    tabs = {"slow": model("slow", table("slow", [[5.0, 1.0]])), "fast": model("fast", table("fast", [[2.0, 4.0]]))}
    s = sim(tabs, [App("slow", 5), App("fast", 50)], n_acc=2, horizon_s=0.1)
    reset(s, 0)
    s.advance()
    assert make_inner("edf", family="dream").decide(s.view()) == Dispatch(1, 0)


def test_random_is_reproducible_by_seed():
    sim_ = DreamSim.from_catalog("ar-call", "4k-1ws2os", horizon_s=0.4)
    a = run_inner(sim_, make_inner("random-dispatch", family="dream"), 9)
    b = run_inner(sim_, make_inner("random-dispatch", family="dream"), 9)
    c = run_inner(sim_, make_inner("random-dispatch", family="dream"), 10)
    assert a == b and a != c


def test_supernet_rule_prefers_the_heaviest_variant_that_fits():
    assert select_variant(10.0, [8.0, 6.0, 4.0, 2.0], 1.0) == 0
    assert select_variant(10.0, [9.5, 6.0, 4.0, 2.0], 1.0) == 1
    assert select_variant(10.0, [12.0, 11.0, 10.0, 9.5], 1.0) == 3  # none fits: the lightest


def test_dream_full_switches_to_a_lighter_variant_under_load_only():
    heavy = table("o-big", [[1.0], [1.0]] + [[8.0]] * 4)
    light = table("o-small", [[1.0], [1.0], [2.0]])
    tabs = {"o": model("o", heavy, light, switch_point=2), "x": model("x", table("x", [[5.0]]))}
    light_load = sim(tabs, [App("o", 20)], horizon_s=0.5)
    heavy_load = sim(tabs, [App("o", 20), App("x", 100)], horizon_s=0.5)  # offered load 1.18
    res = {}
    for key, s in (("light", light_load), ("heavy", heavy_load)):
        res[key] = run_inner(s, DreamPolicy("full", "fixed"), 0)
    assert res["light"]["subnet/o-small"] == 0 and res["light"]["subnet/o-big"] > 0
    assert res["heavy"]["subnet/o-small"] > 0
    smartdrop = run_inner(heavy_load, DreamPolicy("smartdrop", "fixed"), 0)
    assert smartdrop["subnet/o-small"] == 0  # only DREAM-Full switches


def test_fig6_rule_switches_only_a_frame_that_is_behind_and_the_load_aware_rule_earlier():
    """Fig. 6 reads "slack = remaining time until deadline - expected completion time": the frame's own ToGo;
    the load-aware option also counts the work of the frames due no later (docs §3 #12). The toy's overload reaches
    the switch point behind time when late frames go first (``late_urgency="clamp"``); with Algorithm 1's signed
    urgency (the default) late frames wait and both rules run the original sub-net equally often here."""
    heavy = table("o-big", [[1.0], [1.0]] + [[6.0]] * 4)
    light = table("o-small", [[1.0], [1.0], [2.0]])
    tabs = {"o": model("o", heavy, light, switch_point=2), "x": model("x", table("x", [[20.0]]))}
    s = sim(tabs, [App("o", 20), App("x", 25)], horizon_s=1.0)  # offered load 1.02 on one accelerator
    fig6 = run_inner(s, DreamPolicy("full", "fixed", supernet_rule="slack", late_urgency="clamp"), 0)
    load = run_inner(s, DreamPolicy("full", "fixed", supernet_rule="load-aware", late_urgency="clamp"), 0)
    assert fig6["subnet/o-small"] > 0  # frames that fell behind do switch
    assert fig6["subnet/o-big"] > load["subnet/o-big"] and load["subnet/o-small"] > fig6["subnet/o-small"]


@pytest.mark.parametrize("name", sorted(INNER))
def test_every_scheduler_runs_a_catalog_episode(name):
    kwargs = {"tuning": "fixed"} if name.startswith("dream-") else {}
    s = DreamSim.from_catalog("vr-gaming", "4k-1os2ws", horizon_s=0.3)
    sched = make_inner(name, family="dream", **kwargs)
    assert sched.name == name
    m = run_inner(s, sched, 0)
    assert m["frames"] > 0 and m["dispatches"] > 0 and np.isfinite(m["uxcost"]) and m["uxcost"] > 0
    assert (m["layers"] > m["dispatches"]) == (name in MULTI_LAYER)
    if not name.startswith("dream-") or name == "dream-mapscore":
        assert m["drops"] == 0
    if name != "dream-full":
        assert m["subnet/ofa-219"] == m["subnet/ofa-219"] + m["subnet/ofa-145"] + m["subnet/ofa-96"] \
            + m["subnet/ofa-66"]


def test_offline_tuning_locks_the_search_result_and_is_cached(monkeypatch):
    tabs = {"a": model("a", table("a", [[3.0, 6.0], [6.0, 3.0]], [[1.0, 3.0], [3.0, 1.0]])),
            "b": model("b", table("b", [[4.0, 4.0]], [[2.0, 1.0]]))}
    s = sim(tabs, [App("a", 40), App("b", 40)], n_acc=2, horizon_s=0.5)
    sched = DreamPolicy("mapscore", "offline")
    sched.reset(s, np.random.default_rng(0))
    rec = sched.tuning_record
    assert rec is not None and len(rec.trajectory) == 5
    assert (sched.alpha, sched.beta) == rec.params
    calls = []
    monkeypatch.setattr(mapscore, "optimize", lambda *a, **k: calls.append(a))
    again = DreamPolicy("mapscore", "offline")
    again.reset(s.spawn(3), np.random.default_rng(3))
    assert not calls and (again.alpha, again.beta) == rec.params


def test_full_shares_smartdrops_search_where_no_supernet(monkeypatch):
    # Table 4: DREAM-Full is DREAM-SmartDrop + Supernet switching; without a Supernet no frame reaches a switch
    # point, so the two decide alike (checked on two fixed pairs) and Full reuses SmartDrop's search
    s = DreamSim.from_catalog("ar-call", "4k-1ws2os", horizon_s=0.3)
    assert not s.has_supernet and DreamSim.from_catalog("vr-gaming", "4k-1ws2os", horizon_s=0.3).has_supernet
    for pair in ((1.0, 1.0), (0.25, 1.75)):
        full, smart = (run_inner(s.spawn(7), DreamPolicy(v, "fixed", *pair), 0) for v in ("full", "smartdrop"))
        assert full == smart and full["dispatches"] > 0
    mapscore.forget_tuning()
    searched = []
    real = mapscore.optimize
    monkeypatch.setattr(mapscore, "optimize", lambda *a, **k: searched.append(1) or real(*a, **k))
    smartdrop, full = DreamPolicy("smartdrop", tune_horizon_s=0.2), DreamPolicy("full", tune_horizon_s=0.2)
    smartdrop.reset(s, np.random.default_rng(0))
    full.reset(s, np.random.default_rng(0))
    assert len(searched) == 1 and full.tuning_variant(s) == "smartdrop"
    assert (full.alpha, full.beta) == (smartdrop.alpha, smartdrop.beta)
    vr = DreamSim.from_catalog("vr-gaming", "4k-1ws2os", horizon_s=0.3)
    assert full.tuning_variant(vr) == "full" and smartdrop.tuning_variant(vr) == "smartdrop"
    mapscore.forget_tuning()


@pytest.mark.parametrize(("workload", "kappa", "all_kept"), [("ar-call", None, True), ("ar-social", 4.0, False)])
def test_mapscore_search_reuses_smartdrops_tuning_episodes_without_drops(monkeypatch, workload, kappa, all_kept):
    """Smart drop only adds drops to MapScore (§4.2.1): a DREAM-SmartDrop tuning episode that dropped nothing is
    DREAM-MapScore's at the same pair, so MapScore's search after SmartDrop's runs only the episodes with drops
    (none on a light workload, some on an overloaded one) and locks what a cold search locks, step for step."""
    s = DreamSim.from_catalog(workload, "4k-1ws2os", horizon_s=0.3, kappa=kappa)
    mapscore.forget_tuning()
    cold = DreamPolicy("mapscore", tune_horizon_s=0.2)
    cold.reset(s, np.random.default_rng(0))
    mapscore.forget_tuning()
    runs: list[int] = []
    real_inner, real_shared = mapscore.run_inner, mapscore.run_shared
    monkeypatch.setattr(mapscore, "run_inner", lambda *a, **k: runs.append(1) or real_inner(*a, **k))
    monkeypatch.setattr(mapscore, "run_shared",
                        lambda sim, policies, key: runs.extend([1] * len(policies)) or real_shared(sim, policies, key))
    DreamPolicy("smartdrop", tune_horizon_s=0.2).reset(s, np.random.default_rng(0))
    after_smartdrop = len(runs)
    warm = DreamPolicy("mapscore", tune_horizon_s=0.2)
    warm.reset(s, np.random.default_rng(0))
    assert after_smartdrop > 0 and (len(runs) == after_smartdrop) == all_kept
    assert (warm.alpha, warm.beta) == (cold.alpha, cold.beta)
    assert warm.tuning_record.trajectory == cold.tuning_record.trajectory
    mapscore.forget_tuning()


def test_online_tuning_changes_parameters_during_the_episode():
    s = DreamSim.from_catalog("ar-social", "4k-1ws2os", horizon_s=1.0)
    sched = DreamPolicy("mapscore", "online", window_s=0.1)
    run_inner(s, sched, 1)
    hist = sched.engine.history
    assert len(hist) >= 8 and len({h["params"] for h in hist}) > 3


def test_bad_scheduler_arguments():
    with pytest.raises(ValueError, match="policy='lottery'"):
        make_inner("lottery", family="dream")
    with pytest.raises(ValueError, match="supernet_rule="):
        DreamPolicy("full", supernet_rule="greedy")
    with pytest.raises(ValueError, match="variant="):
        DreamPolicy("turbo")
    with pytest.raises(ValueError, match="alpha="):
        DreamPolicy("full", "fixed", alpha=3.0)
    with pytest.raises(ValueError, match="theta_block_s"):
        VeltairScheduler(0.0)
    with pytest.raises(ValueError, match="acc_choice"):
        FCFSScheduler("slowest")


def test_schedulers_return_only_protocol_decisions():
    s = DreamSim.from_catalog("drone-indoor", "4k-1ws2os", horizon_s=0.2)
    assert set(INNER) == set(available("dream", "DREAM", inner=True))
    for name in INNER:
        sched = make_inner(name, family="dream", **({"tuning": "fixed"} if name.startswith("dream-") else {}))
        assert sched.name == name and sched.privileged is False
        reset(s, 0)
        sched.reset(s, np.random.default_rng(0))
        v = s.view()
        while s.advance():
            d = sched.decide(v)
            assert type(d) in (Dispatch, Drop, Wait)
            s.apply(d)


def test_table_assignment_waits_for_a_busy_preferred_accelerator():
    """``assignment="table"`` (§4.1's MapScore table over every accelerator): a frame whose best pair is a busy
    accelerator waits for it instead of taking a slower idle one; ``"idle"`` (the default) dispatches there."""
    tabs = {"big": model("big", table("big", [[30.0, 1000.0]])), "small": model("small", table("small", [[1.0, 90.0]]))}
    s = sim(tabs, [App("big", 10), App("small", 10)], n_acc=2, horizon_s=0.1)
    reset(s, 0)
    s.advance()
    s.apply(Dispatch(0, 0))  # "big" takes accelerator 0; "small" is ready, only accelerator 1 is idle
    assert s.advance()
    view = s.view()
    assert DreamPolicy("mapscore", "fixed", 0.0, 0.0).decide(view) == Dispatch(1, 1)
    assert DreamPolicy("mapscore", "fixed", 0.0, 0.0, assignment="table").decide(view) == Wait()
