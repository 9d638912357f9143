"""Property tests (hypothesis) of the EMRF algorithms: only properties that hold (docs/families/emrf.md §3).

Feasibility, saturation of at least one device, Pareto efficiency, realized soft fairness within the
(corrected) Theorem-1 bound, delta non-increasing in eta, sharing incentive whenever eta >= S_i/F_i^max,
envy-freeness of unweighted DRF, and equality of the env's closed-form efficiency LP with scipy HiGHS.
Envy-freeness of EMRF is *not* asserted (Theorem 3 is false; see test_allocation's counterexample).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from joulegym.baselines.emrf import (
    delta_bound,
    drf_allocate,
    drf_progressive_allocate,
    emrf_allocate,
    envy_pairs,
    fair_share,
    is_feasible,
    pareto_efficient,
    saturated_devices,
    sharing_incentive_eta,
    sharing_incentive_violations,
    soft_fairness_degree,
)
from joulegym.envs.emrf.allocation import basics

# xi on a 1/1000 grid: 0, 1 and repeated values (Eq. (17) groups), with extra weight on the extremes and
# on near-equal values (0 vs 0.001, 0.999 vs 1), where the optimal face is worst conditioned
XI = st.one_of(st.integers(0, 1000).map(lambda k: k / 1000), st.sampled_from([0.0, 0.001, 0.002, 0.998, 0.999, 1.0]))
WEIGHT = st.integers(1, 40).map(lambda k: k / 4)
CAPS = st.tuples(st.floats(1.0, 1000.0), st.floats(1.0, 1000.0))
ETA = st.floats(0.0, 1.0)


@st.composite
def instances(draw, max_users: int = 8):
    n = draw(st.integers(1, max_users))
    xi = draw(st.lists(XI, min_size=n, max_size=n))
    w = draw(st.lists(WEIGHT, min_size=n, max_size=n))
    return draw(CAPS), xi, w


SETTINGS = settings(max_examples=80, deadline=None)


def _no_pareto_improvement(caps, xi, f) -> bool:
    """Theorem 4 checked by an LP independent of :func:`pareto_efficient`: no feasible F~ >= F has a larger
    sum (so none is >= F everywhere and > F somewhere).

    HiGHS may exceed a capacity by its feasibility tolerance (~1e-7), which lets a user with a small
    xi^d > 0 rise by 1e-7 / xi^d: the tolerance on the sum is scaled by that conditioning.
    """
    x = np.asarray(xi, dtype=float)
    rows = np.array([x, 1 - x])
    room = np.maximum(np.asarray(caps, dtype=float), rows @ f)  # F itself is feasible (round-off)
    res = linprog(-np.ones(x.size), A_ub=rows, b_ub=room, bounds=[(fi, None) for fi in f], method="highs")
    assert res.status == 0, res.message
    smallest_need = rows[rows > 0].min()
    return -res.fun <= f.sum() + 1e-7 * sum(caps) / smallest_need


@pytest.mark.parametrize(("tie_break", "solver"), [("lexmaxmin", "highs"), ("lexmaxmin", "closed-form"),
                                                  ("vertex", "highs")])
@SETTINGS
@given(inst=instances(), eta=ETA)
def test_emrf_feasible_saturating_pe_and_within_bound(inst, eta, tie_break, solver):
    """Theorems 1 and 4: feasible, >= 1 device saturated, PE, realized Δ <= δ(eta)."""
    caps, xi, w = inst
    f = emrf_allocate(caps, xi, w, eta, tie_break=tie_break, solver=solver)
    assert is_feasible(caps, xi, f, rtol=1e-7)
    assert saturated_devices(caps, xi, f, rtol=1e-7).any()
    assert pareto_efficient(caps, xi, f, rtol=1e-7)
    assert _no_pareto_improvement(caps, xi, f)
    realized = soft_fairness_degree(f, fair_share(caps, xi, w))
    assert realized <= delta_bound(caps, xi, w, eta) * (1 + 1e-7) + 1e-7
    # the fairness stage is respected: F_i >= eta F_i^max
    assert np.all(f >= eta * drf_allocate(caps, xi, w) * (1 - 1e-9) - 1e-9)


@SETTINGS
@given(instances(), ETA, ETA)
def test_delta_non_increasing_in_eta(inst, a, b):
    caps, xi, w = inst
    lo, hi = min(a, b), max(a, b)
    assert delta_bound(caps, xi, w, hi) <= delta_bound(caps, xi, w, lo) * (1 + 1e-9) + 1e-9
    assert np.isclose(delta_bound(caps, xi, w, 0.0), sum(w) / min(w), rtol=1e-9)  # delta(0) = W / min w


@SETTINGS
@given(instances(), st.floats(0.0, 1.0))
def test_sharing_incentive_when_eta_above_threshold(inst, u):
    caps, xi, w = inst
    eta_si = sharing_incentive_eta(caps, xi, w)
    s = fair_share(caps, xi, w)
    fmax = drf_allocate(caps, xi, w)
    np.testing.assert_allclose(s / fmax, eta_si, rtol=1e-9)  # S_i / F_i^max is the same for every user
    eta = eta_si + u * (1 - eta_si)
    assert sharing_incentive_violations(caps, xi, w, emrf_allocate(caps, xi, w, eta), rtol=1e-7) == 0


@SETTINGS
@given(instances())
def test_unweighted_drf_is_envy_free(inst):
    caps, xi, _ = inst
    w = [1.0] * len(xi)
    assert envy_pairs(xi, drf_allocate(caps, xi, w), rtol=1e-7) == []


@settings(max_examples=150, deadline=None)
@given(instances(), ETA)
def test_closed_form_equals_highs(inst, eta):
    """The env's closed-form LP solution = scipy HiGHS (emrf_allocate's default), tie-break included.

    Lexmaxmin: the same F from HiGHS's LP1 + sequential max-min LPs on the optimal face and from the
    closed form; the total of both = the optimum of the per-group LP as HiGHS returns it (its vertex).
    Measured agreement on 3,000 random instances: 6e-13 of C_cpu + C_gpu; asserted to 1e-9.
    """
    caps, xi, w = inst
    scale = sum(caps)
    closed = emrf_allocate(caps, xi, w, eta, solver="closed-form")
    lp = emrf_allocate(caps, xi, w, eta, solver="highs")
    np.testing.assert_allclose(closed, lp, rtol=0, atol=1e-9 * scale)
    vertex = emrf_allocate(caps, xi, w, eta, tie_break="vertex")
    np.testing.assert_allclose(closed.sum(), vertex.sum(), rtol=0, atol=1e-9 * scale)


@SETTINGS
@given(instances(), ETA)
def test_lexmaxmin_is_fairest_on_the_optimal_face(inst, eta):
    """Lexmaxmin's min F_i/S_i is at least the HiGHS vertex's (both optimal)."""
    caps, xi, w = inst
    share = np.array(basics(float(caps[0]), float(caps[1]), tuple(xi), tuple(w))[1])
    lex = emrf_allocate(caps, xi, w, eta) / share
    vertex = emrf_allocate(caps, xi, w, eta, tie_break="vertex") / share
    assert lex.min() >= vertex.min() * (1 - 1e-7) - 1e-9


@SETTINGS
@given(instances())
def test_emrf_at_one_is_drf_when_everyone_needs_the_saturated_devices(inst):
    """EMRF(1) = DRF when every user has xi^d > 0 on every device DRF saturates (erratum E4)."""
    caps, xi, w = inst
    drf = drf_allocate(caps, xi, w)
    sat = saturated_devices(caps, xi, drf, rtol=1e-9)
    x = np.asarray(xi)
    needs = np.stack([x > 0, x < 1], axis=1)
    if np.all(needs[:, sat]):
        np.testing.assert_allclose(emrf_allocate(caps, xi, w, 1.0), drf, rtol=1e-9)
        assert delta_bound(caps, xi, w, 1.0) == 0.0
    else:  # someone can use the capacity DRF leaves idle: EMRF(1) backfills it (and is PE, DRF is not)
        assert emrf_allocate(caps, xi, w, 1.0).sum() >= drf.sum() * (1 - 1e-12)
        assert not pareto_efficient(caps, xi, drf, rtol=1e-9) or np.all(sat)


@SETTINGS
@given(instances())
def test_progressive_drf_equals_emrf_one(inst):
    """Erratum E3: progressive-filling DRF = EMRF(eta = 1) under the lexmaxmin tie-break; it is PE."""
    caps, xi, w = inst
    pf = drf_progressive_allocate(caps, xi, w)
    np.testing.assert_allclose(pf, emrf_allocate(caps, xi, w, 1.0), rtol=1e-7, atol=1e-9 * sum(caps))
    assert pareto_efficient(caps, xi, pf, rtol=1e-7)
