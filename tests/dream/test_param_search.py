"""The alpha/beta search (§3.6, spec §3.4) and the online adaptivity engine (§4.4, spec §3.5)."""

from __future__ import annotations

import numpy as np
import pytest

from joulegym.envs.dream.search import AdaptivityEngine, ParamSearch, optimize


def bowl(center, floor=0.1):
    def f(p):
        return floor + (p[0] - center[0]) ** 2 + 2.0 * (p[1] - center[1]) ** 2
    return f


@pytest.mark.parametrize("c0", [(1.0, 1.0), (0.5, 0.5), (1.5, 0.2), (0.8, 1.4), (1.9, 1.0)])
def test_search_reaches_the_minimum_of_a_synthetic_bowl(c0):
    f = bowl((1.3, 0.6))
    s = optimize(c0, f)
    assert len(s.trajectory) == 5  # radii 0.5, 0.25, 0.125, 0.0625, 0.03125
    assert [st["radius"] for st in s.trajectory] == pytest.approx([0.5, 0.25, 0.125, 0.0625, 0.03125])
    assert np.hypot(s.center[0] - 1.3, s.center[1] - 0.6) < 0.05
    assert f(s.center) <= 1.02 * 0.1  # within 2 % of the minimum UXCost (R9/R10 criterion)
    assert len(s.evaluations) <= 45


def test_step_candidates_interpolation_and_clipping():
    s = ParamSearch((0.2, 1.0))
    cands = []
    while len(cands) < 20 and (p := s.ask()) is not None:
        cands.append(p)
        s.tell({(0.0, 0.0): 1.0, (0.7, 1.0): 2.0}.get(p, 5.0))  # two good pairs, the rest flat
        if s.trajectory:
            break
    step = s.trajectory[0]
    assert step["center"] == (0.2, 1.0) and step["radius"] == 0.5
    evaluated = [p for p, _ in step["evaluated"]]
    # centre, 4 neighbours at r, 4 diagonals at 2r; (-0.3, 1) and (-0.8, .) clip to alpha = 0
    assert evaluated == [(0.2, 1.0), (0.7, 1.0), (0.0, 1.0), (0.2, 1.5), (0.2, 0.5), (1.2, 2.0), (1.2, 0.0),
                         (0.0, 2.0), (0.0, 0.0)]
    # two lowest: (0, 0) u=1 and (0.7, 1) u=2 -> p1 + (p2 - p1) * 1/3
    assert s.center == pytest.approx((0.7 / 3, 1 / 3))
    assert all(0 <= a <= 2 and 0 <= b <= 2 for a, b in evaluated)


def test_reach_is_limited_from_far_corners_measured():
    """Not a paper claim: with 5 steps the centre can travel at most ~2 x (0.5 + ... + 0.03) per axis, less the
    pull toward the second-best pair, so a start in the opposite corner does not reach the minimum. Measured
    on a 9 x 9 grid of bowl centres from the range centre (1, 1): 73 of 81 land within 2 % of the minimum
    (the misses are bowls centred on the border); from all 81 starts x 81 centres: 5417 of 6561."""
    g = np.linspace(0, 2, 9)
    ok = sum(bowl((cx, cy))(optimize((1.0, 1.0), bowl((cx, cy))).center) <= 0.102 for cx in g for cy in g)
    assert ok == 73
    far = optimize((2.0, 2.0), bowl((0.0, 0.0))).center
    assert far[0] > 0.5  # stuck half-way


def test_tell_after_the_end_and_bad_arguments_raise():
    s = optimize((1.0, 1.0), bowl((1.0, 1.0)))
    assert s.done and s.ask() is None
    with pytest.raises(ValueError, match="finished"):
        s.tell(1.0)
    with pytest.raises(ValueError, match="shrink"):
        ParamSearch((1.0, 1.0), shrink=1.5)


def test_online_engine_converges_on_a_stationary_workload_and_then_locks():
    f = bowl((0.4, 1.5))
    eng = AdaptivityEngine(rng=np.random.default_rng(3))
    params = eng.step((0, 1, 2), None)
    assert eng.search is not None  # booting: a random start, one candidate per window
    for _ in range(60):
        params = eng.step((0, 1, 2), f(params), dlv_rate=0.2, drop_rate=0.05)
    assert eng.locked is not None and eng.search is None
    assert np.hypot(params[0] - 0.4, params[1] - 1.5) < 0.1
    assert sum(h["searching"] for h in eng.history) <= 45


def test_online_engine_restarts_on_task_change_from_the_locked_pair_and_on_load_change():
    eng = AdaptivityEngine(rng=np.random.default_rng(0))
    params = eng.step((0, 1), None)
    f = bowl((1.0, 1.0))
    while eng.locked is None:
        params = eng.step((0, 1), f(params), 0.1, 0.0)
    locked = eng.locked
    eng.step((0, 1), f(params), 0.1, 0.0)  # first window under the locked pair: the reference rates
    assert eng.search is None
    eng.step((0, 1), f(params), 0.15, 0.05)  # drift below delta = 0.1: stays locked
    assert eng.search is None
    eng.step((0, 1), f(params), 0.35, 0.0)  # load change: DLV rate moved by 0.25
    assert eng.search is not None and eng.search.radius == pytest.approx(0.25)
    eng2 = AdaptivityEngine(rng=np.random.default_rng(0))
    p = eng2.step((0, 1), None)
    while eng2.locked is None:
        p = eng2.step((0, 1), f(p), 0.1, 0.0)
    p = eng2.step((2, 3), f(p), 0.1, 0.0)  # task-level change: search again from the locked pair
    assert eng2.search is not None and eng2.search.center == pytest.approx(locked)
    assert eng2.search.radius == pytest.approx(0.5)
