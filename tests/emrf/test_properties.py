"""Property tests (hypothesis) of the EMRF algorithms: only properties the spec says hold (§2.3, App. B 7).

Feasibility, saturation of at least one device, Pareto efficiency, realized soft fairness within the
(corrected) Theorem-1 bound, delta non-increasing in eta, sharing incentive whenever eta >= S_i/F_i^max,
envy-freeness of unweighted DRF, and agreement of the closed-form efficiency stage with scipy HiGHS.
Envy-freeness of EMRF is *not* asserted (Theorem 3 is false; see test_allocation's counterexample).
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

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

XI = st.integers(0, 1000).map(lambda k: k / 1000)  # includes 0, 1 and repeated values (Eq. (17) groups)
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


@SETTINGS
@given(instances(), ETA, st.sampled_from(["lexmaxmin", "vertex"]))
def test_emrf_feasible_saturating_pe_and_within_bound(inst, eta, tie_break):
    caps, xi, w = inst
    f = emrf_allocate(caps, xi, w, eta, tie_break=tie_break)
    assert is_feasible(caps, xi, f, rtol=1e-7)
    assert saturated_devices(caps, xi, f, rtol=1e-7).any()
    assert pareto_efficient(caps, xi, f, rtol=1e-7)
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


@settings(max_examples=30, deadline=None)
@given(instances(max_users=5), ETA)
def test_closed_form_agrees_with_highs(inst, eta):
    """The exact closed form = spec §3.1's iterated HiGHS LPs (lexmaxmin), and its total = the LP optimum."""
    caps, xi, w = inst
    closed = emrf_allocate(caps, xi, w, eta)
    lp = emrf_allocate(caps, xi, w, eta, solver="highs")
    scale = sum(caps)  # HiGHS works to ~1e-6 (its feasibility tolerance and the procedure's eps)
    np.testing.assert_allclose(closed, lp, rtol=1e-4, atol=1e-5 * scale)
    vertex = emrf_allocate(caps, xi, w, eta, tie_break="vertex")
    np.testing.assert_allclose(closed.sum(), vertex.sum(), rtol=1e-7, atol=1e-9 * scale)


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
    """App. B item 6: EMRF(1) = DRF when every user has xi^d > 0 on every device DRF saturates (spec §8 row 4)."""
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
    """Spec §3.3: progressive-filling DRF = EMRF(eta = 1) under the lexmaxmin tie-break; it is PE."""
    caps, xi, w = inst
    pf = drf_progressive_allocate(caps, xi, w)
    np.testing.assert_allclose(pf, emrf_allocate(caps, xi, w, 1.0), rtol=1e-7, atol=1e-9 * sum(caps))
    assert pareto_efficient(caps, xi, pf, rtol=1e-7)
