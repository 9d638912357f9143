"""Smart frame drop [P §4.2.1] (spec §2.3, §3.3): each of the four conditions blocks a drop on its own; the
victim is the highest minimum_to_go / Slack; the simulator-level engine agrees with the pure function."""

from __future__ import annotations

import numpy as np

from joulegym.core.policy import make_inner
from joulegym.envs.dream.mapscore import DreamPolicy, smart_drop_conditions, smart_drop_select
from joulegym.envs.dream.simulator import App, Dispatch, Drop
from tests.dream.toy import model, reset, run_until, sim, table

# frame 0: the candidate (leaf, no drops yet) that cannot make it; frame 1: also late but not a leaf;
# frame 2: on time
BASE = dict(min_to_go=[5.0, 4.0, 1.0], slack=[2.0, 3.0, 6.0], is_leaf=[True, False, True],
            drops_in_window=[0, 0, 0])


def select(**changes) -> int:
    kw = {k: list(v) for k, v in BASE.items()}
    for key, (idx, value) in changes.items():
        kw[key][idx] = value
    return smart_drop_select(**kw)


def test_all_four_conditions_hold_for_the_candidate_only():
    conds = smart_drop_conditions(**BASE)
    assert conds[0] == (True, True, True, True)
    assert conds[1] == (True, True, False, True)
    assert conds[2][0] is False
    assert select() == 0


def test_condition_1_violation_likelihood_blocks_on_its_own():
    assert select(min_to_go=(0, 2.0)) == -1  # minimum_to_go == Slack: it can still make it


def test_condition_2_multi_model_violation_blocks_on_its_own():
    assert select(slack=(1, 4.5)) == -1  # frame 1 no longer expected to miss: only one violator
    kw = {k: list(v) for k, v in BASE.items()}
    assert smart_drop_select(**kw, active=[True, False, True]) == -1  # frame 1 not active (e.g. not started)


def test_condition_3_dependency_free_blocks_on_its_own():
    assert select(is_leaf=(0, False)) == -1


def test_condition_4_maximum_drop_rate_blocks_on_its_own():
    assert select(drops_in_window=(0, 2)) == -1
    assert select(drops_in_window=(0, 1)) == 0


def test_victim_is_the_highest_ratio_and_late_frames_rank_first():
    kw = dict(min_to_go=[5.0, 4.0, 3.0], slack=[2.0, 1.0, 0.0], is_leaf=[True, True, True], drops_in_window=[0] * 3)
    assert smart_drop_select(**kw) == 2  # slack 0: ratio +inf
    kw["slack"] = [2.0, 1.0, 2.9]
    assert smart_drop_select(**kw) == 1  # 4/1 > 5/2 > 3/2.9


def toy_sim(horizon_s: float = 1.0):
    # leaf model "a" (10 FPS, 60 ms) and the parent "p" of "c"; one accelerator
    tabs = {"a": model("a", table("a", [[60.0]])), "p": model("p", table("p", [[60.0]])),
            "c": model("c", table("c", [[5.0]]))}
    return sim(tabs, [App("a", 10), App("p", 10), App("c", 10, parent="p", p=1.0)], horizon_s=horizon_s, cap=None)


def test_scheduler_drops_only_leaf_frames_within_the_budget_and_matches_the_pure_rule():
    s = toy_sim()
    sched = DreamPolicy("smartdrop", "fixed", 1.0, 1.0)
    reset(s, 0)
    sched.reset(s, np.random.default_rng(0))
    view = s.view()
    drops = []
    while s.advance():
        now = s.now
        out = list(s.outstanding)
        expect = smart_drop_select([view.min_to_go(i) for i in out], [s.f_deadline[i] - now for i in out],
                                   [view.is_leaf(s.f_model[i]) for i in out],
                                   [view.drops_in_window(s.f_model[i], 9) for i in out])  # the generic count
        d = sched.decide(view)
        if isinstance(d, Drop):
            assert out[expect] == d.task
            drops.append(d.task)
        else:
            assert expect == -1
            assert isinstance(d, Dispatch)
        s.apply(d)
    assert drops, "the overloaded toy must trigger drops"
    names = s.model_names
    assert all(names[s.f_model[i]] in ("a", "c") for i in drops)  # never the parent "p"
    for m, name in enumerate(names):  # at most 2 drops among any 10 consecutive released frames
        rel = s._released[m]
        flags = [s.f_state[i] == 2 for i in rel]
        assert all(sum(flags[k:k + 10]) <= 2 for k in range(len(flags))), name


def test_drop_window_counts_the_last_ten_released_frames():
    s = reset(toy_sim(), 0)
    v = s.view()
    s.advance()
    s.apply(Drop(0))  # model a, frame 0
    assert v.drops_in_window(0) == 1 == s.recent_drops[0]
    edf = make_inner("edf", family="dream")
    run_until(s, edf, 0.95)  # frames 0..9 of "a" released: frame 0 is still among the last 10
    assert v.drops_in_window(0) == 1 == s.recent_drops[0]
    run_until(s, edf, None)  # frames 0..9 + 10: frame 0 has left the window
    assert len(s._released[0]) == 10 and v.drops_in_window(0) == 1
    longer = reset(toy_sim(1.15), 0)
    longer.advance()
    longer.apply(Drop(0))
    run_until(longer, edf, None)
    assert len(longer._released[0]) == 12 and longer.view().drops_in_window(0) == 0 == longer.recent_drops[0]
    assert longer.view().drops_in_window(0, 12) == 1  # a longer window still holds it


def test_smart_drop_reduces_violations_of_an_overloaded_toy():
    plain, smart = (DreamPolicy(v, "fixed", 1.0, 1.0) for v in ("mapscore", "smartdrop"))
    res = {}
    for sched in (plain, smart):
        s = reset(toy_sim(), 0)
        sched.reset(s, np.random.default_rng(0))
        v = s.view()
        while s.advance():
            s.apply(sched.decide(v))
        res[sched.variant] = s.metrics()
    assert res["smartdrop"]["drops"] > 0
    assert res["smartdrop"]["uxcost"] < res["mapscore"]["uxcost"]
