"""Property tests (hypothesis) for what holds of ETF (``docs/families/etf.md``, "Fairness properties").

Asserted: the time guarantee, Pareto efficiency (every unit used, no demand exceeded), max-min weighted
energy (Theorem 3: Algorithm 1 equals brute force for small T), the efficiency-incentive monotonicity,
discrete vs continuous within the docs page's bound, the phi extremes, phi_fair, and the two-app closed forms.

Deliberately NOT asserted, because they are false (docs page): strict strategy-proofness
(Lemma 2 lists two ways to gain; both are reproduced as expected behaviour in
``test_etf_allocation.py``), the DRF sharing incentive (fails for phi < 1), envy-freeness in time, and
leximin optimality (lowest-index tie-breaking can give a lexicographically smaller sorted energy vector).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from joulegym.envs.etf.allocation import (
    energy_fair_allocation,
    etf_allocate,
    etf_continuous_bound,
    etf_waterfill,
    guaranteed_units,
    largest_remainder,
    phi_fair,
    time_fair_allocation,
)
from joulegym.envs.etf.metrics import energy_fairness, system_fairness, time_fairness

FAST = settings(max_examples=150, deadline=None)
SLOW = settings(max_examples=60, deadline=None)

powers = st.floats(0.3, 12.0, allow_nan=False, allow_infinity=False)
int_powers = st.integers(1, 9).map(float)  # small integers make ties likely
weights = st.sampled_from([1, 2, 3])
phis_tenths = st.integers(0, 10)  # phi = k/10, so the guarantee can be computed exactly with Fractions


@st.composite
def instances(draw, n_min=1, n_max=5, t_max=60, demands=True, tie_prone=None):
    n = draw(st.integers(n_min, n_max))
    use_ints = draw(st.booleans()) if tie_prone is None else tie_prone
    p = [draw(int_powers if use_ints else powers) for _ in range(n)]
    w = [draw(weights) for _ in range(n)]
    T = draw(st.integers(0, t_max))
    k = draw(phis_tenths)
    if demands and draw(st.booleans()):
        d = [draw(st.one_of(st.just(math.inf), st.integers(0, t_max).map(float))) for _ in range(n)]
    else:
        d = [math.inf] * n
    return w, d, p, T, k


def exact_guarantee(w, d, T, k):
    """min(floor(phi * w_i * T / W), d_i) in exact rational arithmetic, phi = k/10."""
    W = sum(w)
    return [int(min(math.floor(Fraction(k, 10) * wi * T / W), di)) for wi, di in zip(w, d)]


def weighted_energy(units, p, w):
    return [u * pi / wi for u, pi, wi in zip(units, p, w)]


# --- time guarantee and Pareto efficiency ---------------------------------------------------------------
@FAST
@given(instances())
def test_guarantee_matches_exact_floor(inst):
    w, d, _, T, k = inst
    got = guaranteed_units(np.array(w, float), np.array(d, float), T, k / 10)
    assert got.tolist() == exact_guarantee(w, d, T, k)


@FAST
@given(instances())
def test_time_guarantee(inst):
    """T_i >= min(floor(phi*w_i*T/W), d_i) for every app (docs page, 'time guarantee')."""
    w, d, p, T, k = inst
    units = etf_allocate(w, d, p, T, k / 10)
    for u, g in zip(units.tolist(), exact_guarantee(w, d, T, k)):
        assert u >= g


@FAST
@given(instances())
def test_pareto_efficiency(inst):
    """Theorem 1: no app above its demand, and every unit handed out unless every demand is met."""
    w, d, p, T, k = inst
    units = etf_allocate(w, d, p, T, k / 10)
    assert all(0 <= u <= min(di, T) for u, di in zip(units.tolist(), d))
    assert units.sum() == min(T, sum(min(di, T) for di in d))


# --- Theorem 3: max-min weighted energy, against brute force ---------------------------------------------
@SLOW
@given(instances(n_min=1, n_max=3, t_max=12), st.booleans())
def test_algorithm1_is_the_integer_max_min_optimum(inst, draw_shared_power):
    """Over every whole-unit allocation with m_i <= t_i <= min(d_i, T) and the same total, none has a
    larger minimum weighted energy than Algorithm 1's (docs page "Closed forms": brute force, T <= 12, N <= 3). Equal up
    to float64 round-off: 9 x 3.226 / 3 and 3 x 3.226 / 1 are the same energy one ulp apart."""
    w, d, p, T, k = inst
    if draw_shared_power:  # equal powers with unequal weights: ties that float64 round-off can split
        p = [p[0]] * len(p)
    units = etf_allocate(w, d, p, T, k / 10).tolist()
    low = exact_guarantee(w, d, T, k)
    high = [int(min(di, T)) for di in d]
    total = sum(units)
    best = -math.inf
    for t in itertools.product(*(range(lo, hi + 1) for lo, hi in zip(low, high))):
        if sum(t) == total:
            best = max(best, min(weighted_energy(t, p, w)))
    assert min(weighted_energy(units, p, w)) == pytest.approx(best, rel=1e-12, abs=0.0)


# --- efficiency incentive (§6.6) --------------------------------------------------------------------------
@FAST
@given(instances(n_min=2, n_max=5), st.data())
def test_efficiency_incentive_monotone(inst, data):
    """Everything else fixed, an app's slice does not grow when its power grows."""
    w, d, p, T, k = inst
    i = data.draw(st.integers(0, len(w) - 1))
    factor = data.draw(st.floats(1.0, 5.0))
    before = etf_allocate(w, d, p, T, k / 10)[i]
    hotter = list(p)
    hotter[i] *= factor
    assert etf_allocate(w, d, hotter, T, k / 10)[i] <= before


# --- discrete vs continuous -----------------------------------------------------------------------------
@FAST
@given(instances(n_min=1, n_max=5, t_max=200, demands=False))
def test_discrete_within_bound_of_waterfill(inst):
    """Backlogged, same floored guarantee: |Alg. 1 - water-filling| < max(1, N-1) units per app."""
    w, d, p, T, k = inst
    discrete = etf_allocate(w, d, p, T, k / 10)
    continuous = etf_waterfill(w, d, p, float(T), k / 10, floor_guarantee=True)
    assert continuous.sum() == np.float64(T) or abs(continuous.sum() - T) < 1e-9
    bound = etf_continuous_bound(len(w))
    assert np.all(np.abs(discrete - continuous) < bound)
    if len(w) == 2:
        assert np.all(np.abs(discrete - continuous) < 1.0)


@FAST
@given(instances(n_min=1, n_max=5, t_max=100))
def test_waterfill_is_a_feasible_max_min_level(inst):
    """Continuous form: sum = min(T, sum caps), m_i <= T_i <= d_i, and every app strictly between its
    bounds sits at the common level lambda (T_i = lambda * w_i / P_i)."""
    w, d, p, T, k = inst
    phi = k / 10
    t = etf_waterfill(w, d, p, float(T), phi)
    W = sum(w)
    caps = [min(di, T) for di in d]
    m = [min(phi * wi * T / W, ci) for wi, ci in zip(w, caps)]
    assert abs(t.sum() - min(T, sum(caps))) < 1e-7
    assert all(mi - 1e-9 <= ti <= ci + 1e-9 for mi, ti, ci in zip(m, t, caps))
    if sum(caps) > T:
        levels = [ti * pi / wi for ti, pi, wi, mi, ci in zip(t, p, w, m, caps) if mi + 1e-7 < ti < ci - 1e-7]
        if levels:
            assert max(levels) - min(levels) < 1e-6 * max(1.0, max(levels))


# --- the extremes of phi --------------------------------------------------------------------------------
@FAST
@given(instances(n_min=1, n_max=5, t_max=80, demands=False))
def test_phi_zero_is_energy_fair(inst):
    """phi = 0, backlogged: weighted energies within max_i(P_i/w_i) of each other (one unit);
    the continuous form equals the corrected closed-form EF (erratum E1)."""
    w, d, p, T, _ = inst
    units = etf_allocate(w, d, p, T, 0.0)
    e = weighted_energy(units.tolist(), p, w)
    assert max(e) - min(e) <= max(pi / wi for pi, wi in zip(p, w)) * (1 + 1e-12)
    assert np.allclose(etf_waterfill(w, d, p, float(T), 0.0), energy_fair_allocation(w, p, float(T)), atol=1e-9)


@FAST
@given(instances(n_min=1, n_max=5, t_max=80, demands=False))
def test_phi_one_is_time_fair(inst):
    """phi = 1, backlogged: every app gets at least floor(w_i*T/W) units; exactly w_i*T/W when it is whole;
    the continuous form equals Eq. 5."""
    w, d, p, T, _ = inst
    units = etf_allocate(w, d, p, T, 1.0)
    W = sum(w)
    assert all(u >= (wi * T) // W for u, wi in zip(units.tolist(), w))
    exact = etf_allocate(w, d, p, T * W, 1.0)
    assert exact.tolist() == [wi * T for wi in w]
    assert np.allclose(etf_waterfill(w, d, p, float(T), 1.0), time_fair_allocation(w, float(T)), atol=1e-9)


# --- phi_fair and the two-app closed forms (docs page) --------------------------------------------------
@FAST
@given(st.lists(st.tuples(weights, powers), min_size=2, max_size=5))
def test_phi_fair_matches_bisection(apps):
    """phi_fair = the largest phi at which backlogged water-filling is still exactly weighted EF."""
    w = [a[0] for a in apps]
    p = [a[1] for a in apps]
    ef = energy_fair_allocation(w, p, 1.0)

    def is_ef(phi):
        return np.allclose(etf_waterfill(w, None, p, 1.0, phi), ef, rtol=0.0, atol=1e-10)

    lo, hi = 0.0, 1.0
    if is_ef(1.0):
        lo = 1.0
    else:
        for _ in range(40):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if is_ef(mid) else (lo, mid)
    assert abs(phi_fair(w, p) - lo) < 1e-6


@FAST
@given(st.floats(1.0, 12.0), st.floats(0.01, 1.0))
def test_two_app_closed_forms(r, phi):
    """Equal weights, app 1 r times the power of app 2 (docs page, "Closed forms"): below 2/(1+r) F_T = 1/r and F_E = 1;
    above it F_T = phi/(2-phi), F_E = (2-phi)/(phi*r) and F_T * F_E = 1/r (the Pareto front);
    F_S(ETF)/F_S(TF) <= (2-phi)/phi."""
    p = [r, 1.0]
    t = etf_waterfill([1, 1], None, p, 1.0, phi)
    f_t, f_e = time_fairness(t, [1, 1]), energy_fairness(t * np.array(p), [1, 1])
    if phi <= 2 / (1 + r):
        assert abs(f_t - 1 / r) < 1e-9 and abs(f_e - 1.0) < 1e-9
    else:
        assert abs(f_t - phi / (2 - phi)) < 1e-9
        assert abs(f_e - (2 - phi) / (phi * r)) < 1e-9
        assert abs(f_t * f_e - 1 / r) < 1e-9
    tf = time_fair_allocation([1, 1], 1.0)
    fs_tf = system_fairness(tf, tf * np.array(p), [1, 1])
    assert abs(fs_tf - 1 / r) < 1e-12
    assert min(f_t, f_e) / fs_tf <= (2 - phi) / phi + 1e-9


@FAST
@given(st.floats(1.0, 12.0))
def test_best_phi_for_system_fairness(r):
    """phi* = 2/(1+sqrt(r)) gives F_S = 1/sqrt(r), and no phi on a fine grid does better."""
    p = np.array([r, 1.0])

    def fs(phi):
        t = etf_waterfill([1, 1], None, p, 1.0, phi)
        return system_fairness(t, t * p, [1, 1])

    star = 2 / (1 + math.sqrt(r))
    assert abs(fs(star) - 1 / math.sqrt(r)) < 1e-9
    assert max(fs(x) for x in np.linspace(0, 1, 101)) <= 1 / math.sqrt(r) + 1e-9


# --- invariances and the action mapping -----------------------------------------------------------------
@FAST
@given(instances(), st.integers(-3, 3), st.integers(-2, 2))
def test_scale_invariance(inst, power_exp, weight_exp):
    """Alg. 1 depends only on relative powers and weights (paper §4.2); powers of two keep floats exact."""
    w, d, p, T, k = inst
    base = etf_allocate(w, d, p, T, k / 10)
    scaled = etf_allocate([wi * 2.0**weight_exp for wi in w], d, [pi * 2.0**power_exp for pi in p], T, k / 10)
    assert scaled.tolist() == base.tolist()


@FAST
@given(st.lists(st.floats(0.0, 10.0), min_size=1, max_size=6), st.integers(0, 60), st.data())
def test_largest_remainder_properties(quotas, total, data):
    assume(sum(quotas) > 0)
    units = largest_remainder(quotas, total)
    assert units.sum() == total and np.all(units >= 0)
    exact = np.array(quotas) * total / sum(quotas)
    assert np.all(np.abs(units - exact) < 1.0 + 1e-9)  # Hamilton's quota property
    caps = data.draw(st.lists(st.integers(0, 30), min_size=len(quotas), max_size=len(quotas)))
    capped = largest_remainder(quotas, total, caps=caps)
    assert np.all(capped <= np.array(caps)) and np.all(capped >= 0)
    assert capped.sum() == min(total, sum(caps))
