"""MapScore, Algorithm 1 lines 1-15 [P §3.1-§3.5] (spec §2.1), on a hand-computed 2-task x 3-accelerator
toy, and the DREAM scheduler's inlined argmax against the pure function on live states."""

from __future__ import annotations

import math

import numpy as np
import pytest

from joulegym.core.inner import run_inner
from joulegym.envs.dream.mapscore import (
    DreamPolicy,
    episode_evaluator,
    forget_tuning,
    map_score,
    map_score_terms,
    run_shared,
)
from joulegym.envs.dream.search import optimize
from joulegym.envs.dream.simulator import EPS_SLACK_S, App, DreamSim
from tests.dream import toy

# task A: ToGo 6 ms, Slack 12 ms, waited 2 ms; next layer 1/2/4 ms, energy 10/5/5; a switch to acc 1 costs 5
# task B: ToGo 9 ms, Slack 6 ms, waited 0; next layer 3/3/3 ms, energy 2/4/8; no switch cost anywhere
A = dict(to_go=6e-3, slack=12e-3, t_queue=2e-3, lat_next=(1e-3, 2e-3, 4e-3), energy_next=(10.0, 5.0, 5.0))
B = dict(to_go=9e-3, slack=6e-3, t_queue=0.0, lat_next=(3e-3, 3e-3, 3e-3), energy_next=(2.0, 4.0, 8.0))
SWITCH_A = (0.0, 5.0, 0.0)

# hand-computed (alpha = 0.5, beta = 2):
#   A, acc: urgency 0.5; latpref 7/1, 7/2, 7/4; starv 2 / (7/3) = 6/7; pref_energy 20/10, 20/5, 20/5;
#           cost_switch 0, 5/5, 0
#   B, acc: urgency 1.5; latpref 3, 3, 3; starv 0; pref_energy 14/2, 14/4, 14/8; cost_switch 0
EXPECTED = {
    ("A", 0): 0.5 * 7 + 0.5 * 6 / 7 + 2 * (2 - 0),
    ("A", 1): 0.5 * 3.5 + 0.5 * 6 / 7 + 2 * (4 - 1),
    ("A", 2): 0.5 * 1.75 + 0.5 * 6 / 7 + 2 * (4 - 0),
    ("B", 0): 1.5 * 3 + 2 * 7,
    ("B", 1): 1.5 * 3 + 2 * 3.5,
    ("B", 2): 1.5 * 3 + 2 * 1.75,
}


def test_unit_scores_by_hand():
    t = map_score_terms(**A, acc=1, switch_energy=5.0)
    assert t["urgency"] == pytest.approx(0.5)
    assert t["lat_pref"] == pytest.approx(3.5)
    assert t["starvation"] == pytest.approx(6 / 7)
    assert t["pref_energy"] == pytest.approx(4.0)
    assert t["cost_switch"] == pytest.approx(1.0)
    assert t["energy"] == pytest.approx(3.0)


def test_mapscore_table_by_hand_and_its_argmax():
    table = {}
    for name, task in (("A", A), ("B", B)):
        for acc in range(3):
            sw = SWITCH_A[acc] if name == "A" else 0.0
            table[(name, acc)] = map_score(**task, acc=acc, switch_energy=sw, alpha=0.5, beta=2.0)
    for key, value in EXPECTED.items():
        assert table[key] == pytest.approx(value), key
    assert max(table, key=table.get) == ("B", 0)  # the energy-cheap accelerator for the urgent task
    # with beta = 0 the urgency x latency preference decides: A on its fast acc 0 (3.5 + 0.43) < B (4.5)
    no_energy = {k: map_score(**(A if k[0] == "A" else B), acc=k[1], switch_energy=0.0, alpha=0.5, beta=0.0)
                 for k in EXPECTED}
    assert max(no_energy, key=no_energy.get) in {("B", 0), ("B", 1), ("B", 2)}


def test_homogeneous_preferences_equal_n_acc_and_late_tasks_get_negative_urgency():
    """Algorithm 1 lines 3 and 7 as written: a late frame's slack is negative and so is its urgency; the earlier
    reading (``late_urgency="clamp"``, docs §3 #5) replaced it by 1 us, the largest urgency there is."""
    late = {"to_go": 1e-3, "t_queue": 0.0, "lat_next": (2e-3, 2e-3), "energy_next": (3.0, 3.0), "acc": 0,
            "switch_energy": 0.0}
    t = map_score_terms(slack=-5e-3, **late)
    assert t["lat_pref"] == pytest.approx(2.0) and t["pref_energy"] == pytest.approx(2.0)
    assert t["urgency"] == pytest.approx(-0.2)
    assert map_score_terms(slack=0.0, **late)["urgency"] == pytest.approx(1e-3 / EPS_SLACK_S)
    assert map_score_terms(slack=-5e-3, late_urgency="clamp", **late)["urgency"] == pytest.approx(1e-3 / EPS_SLACK_S)
    with pytest.raises(ValueError, match="late_urgency"):
        map_score_terms(slack=1.0, late_urgency="max", **late)


def test_a_late_frame_waits_behind_frames_that_can_still_make_their_deadline():
    """One accelerator, L (two 60 ms layers) and F (one 50 ms layer) at 10 FPS: L runs [0, 120 ms] and F's first
    frame is late at 120 ms, when L's and F's second frames (released at 100 ms) are ready too. With Algorithm 1's
    signed slack the late frame scores below both; the clamped reading serves it first."""
    tabs = {"L": toy.model("L", toy.table("L", [[60.0], [60.0]])), "F": toy.model("F", toy.table("F", [[50.0]]))}
    s = toy.reset(toy.sim(tabs, [App("L", 10), App("F", 10)], horizon_s=0.3), 0)
    toy.run_until(s, DreamPolicy("mapscore", "fixed", 0.0, 0.0), 0.12)
    assert s.advance() and s.now == pytest.approx(0.12)
    view = s.view()
    late = next(i for i in view.ready if view.f_deadline[i] < s.now)
    assert DreamPolicy("mapscore", "fixed", 0.0, 0.0).decide(view).task != late
    assert DreamPolicy("mapscore", "fixed", 0.0, 0.0, late_urgency="clamp").decide(view).task == late


def _decisions(scenario: str, hw: str, variant: str, horizon_s: float, sim_seed: int):
    """Each decision of a fixed-(0.7, 1.3) DREAM policy over one short episode, with the simulator, its view and the
    policy as they were when it decided; the decision is applied after the caller's checks."""
    sim = DreamSim.from_catalog(scenario, hw, horizon_s=horizon_s)
    sched = DreamPolicy(variant, "fixed", 0.7, 1.3)
    sim.reset(np.random.default_rng(sim_seed))
    sched.reset(sim, np.random.default_rng(0))
    view = sim.view()
    while sim.advance():
        decision = sched.decide(view)
        yield sim, view, sched, decision
        sim.apply(decision)


@pytest.mark.parametrize(("scenario", "hw"), [("vr-gaming", "4k-1ws2os"), ("ar-social", "4k-1os2ws")])
def test_dream_dispatch_is_the_argmax_of_the_pure_mapscore(scenario, hw):
    checked = 0
    for sim, view, _sched, decision in _decisions(scenario, hw, "mapscore", horizon_s=0.3, sim_seed=2):
        now = sim.now
        best, best_key = None, None
        for i in view.ready:
            for a in view.idle_accs():
                s = map_score(view.to_go(i), view.f_deadline[i] - now, now - view.f_tcmpl[i], view.next_lat(i),
                              view.next_stats(i)[1], a, view.switch_energy(i, a), 0.7, 1.3)
                key = (s, -sim.f_release[i], -a)
                if best_key is None or key > best_key:
                    best, best_key = (i, a), key
        assert (decision.task, decision.acc) == best or math.isclose(
            best_key[0], map_score(view.to_go(decision.task), view.f_deadline[decision.task] - now,
                                   now - view.f_tcmpl[decision.task], view.next_lat(decision.task),
                                   view.next_stats(decision.task)[1], decision.acc,
                                   view.switch_energy(decision.task, decision.acc), 0.7, 1.3), rel_tol=1e-12)
        checked += 1
    assert checked > 500


@pytest.mark.parametrize(("scenario", "hw", "variant"), [("vr-gaming", "4k-1ws2os", "full"),
                                                          ("ar-call", "4k-1os2ws", "smartdrop")])
def test_best_pair_loop_is_the_argmax_of_the_score_list(scenario, hw, variant):
    """The dispatch loop keeps the best pair as it scores; it picks what the arg-max over the list of every
    (ready task, idle accelerator) score picks, ties included (earlier release, then lower accelerator)."""
    checked = 0
    for _sim, view, sched, decision in _decisions(scenario, hw, variant, horizon_s=0.4, sim_seed=3):
        idle = view.idle_accs()
        if type(decision).__name__ == "Dispatch":
            _s, i, a, v = min(sched._scores(view, idle), key=lambda row: (-row[0], view.f_release[row[1]], row[2]))
            assert (decision.task, decision.acc, decision.variant) == (i, a, v)
            checked += 1
    assert checked > 300


PAIRS = [(0.0, 0.0), (1.0, 1.0), (1.5, 1.0), (0.5, 2.0), (2.0, 0.25), (0.0, 2.0), (1.0, 1.5)]


@pytest.mark.parametrize(("scenario", "hw", "variant"), [("drone-outdoor", "4k-1os2ws", "full"),
                                                          ("ar-call", "4k-1os2ws", "smartdrop")])
def test_shared_episodes_equal_the_episodes_run_one_by_one(scenario, hw, variant):
    """run_shared (one simulation while the candidates decide alike, forked where they differ) gives each pair
    the metrics of its own run_inner episode, key for key and bit for bit."""
    runner = DreamSim.from_catalog(scenario, hw, horizon_s=0.5)
    shared = run_shared(runner, [DreamPolicy(variant, "fixed", a, b) for a, b in PAIRS], 77)
    alone = [run_inner(runner, DreamPolicy(variant, "fixed", a, b), 0, instance=77) for a, b in PAIRS]
    assert shared == alone
    assert len({m["uxcost"] for m in alone}) > 2  # the pairs do decide differently: the forks are exercised


def test_offline_search_with_shared_steps_locks_the_same_pair():
    sim = DreamSim.from_catalog("drone-outdoor", "4k-1os2ws", horizon_s=0.5)
    forget_tuning()  # no episode kept from another test: the shared steps run
    evaluate = episode_evaluator(sim, "full", horizon_s=None)
    calls = []

    def one_by_one(pair):  # the same evaluator without .many, each episode run afresh
        calls.append(pair)
        forget_tuning()
        return episode_evaluator(sim, "full", horizon_s=None)(pair)

    shared = optimize((1.0, 1.0), evaluate)
    alone = optimize((1.0, 1.0), one_by_one)
    assert shared.center == alone.center and shared.evaluations == alone.evaluations
    assert len(set(calls)) == len(evaluate.memo) > 20


def test_run_shared_refuses_what_it_cannot_share():
    runner = DreamSim.from_catalog("ar-call", "4k-1os2ws", horizon_s=0.2)
    with pytest.raises(ValueError, match="fixed"):
        run_shared(runner, [DreamPolicy("full", "fixed"), DreamPolicy("full", "fixed", assignment="table")], 1)
    with pytest.raises(ValueError, match="fixed"):
        run_shared(runner, [DreamPolicy("full", "online")], 1)
