"""Algorithm 1 and the closed forms on hand-checked inputs (ETF paper §4.2-§4.4; ``docs/families/etf.md``).

Every expected number here is worked out by hand from the paper or the docs page, never by the code under
test. The randomised versions of these checks are in ``test_etf_properties.py``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

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
from joulegym.envs.etf.metrics import (
    energy_fairness,
    jain_index,
    min_max_ratio,
    power_disparity,
    system_fairness,
    time_fairness,
)

TOY_POWER = [2.0, 3.0, 8.0]  # Fig. 3: apps A, B, C (W)


# --- the worked example (§4.3, Fig. 3), tier A --------------------------------------------------------
def test_toy_example_final_slices_and_energies():
    """T = 30, phi = 0.7, equal weights, backlogged: slices 14, 9, 7 and energies 28, 27, 56."""
    units = etf_allocate([1, 1, 1], None, TOY_POWER, 30, 0.7)
    assert units.tolist() == [14, 9, 7]
    assert (units * np.array(TOY_POWER)).tolist() == [28.0, 27.0, 56.0]
    assert units.dtype.kind == "i"


def test_toy_example_step_one_gives_seven_units_each():
    """Line 1: floor(0.7 * 30 / 3) = 7 units each (energies 14, 21, 56); 9 units are left for step 2."""
    m = guaranteed_units(np.ones(3), np.full(3, np.inf), 30, 0.7)
    assert m.tolist() == [7, 7, 7]
    assert 30 - m.sum() == 9


def test_toy_example_lemma2_glutton_keeps_its_time():
    """Lemma 2 exception (a): C at 10 W instead of 8 W gets the same 7 units; its energy goes 56 -> 70."""
    base = etf_allocate([1, 1, 1], None, TOY_POWER, 30, 0.7)
    glutton = etf_allocate([1, 1, 1], None, [2.0, 3.0, 10.0], 30, 0.7)
    assert glutton.tolist() == base.tolist() == [14, 9, 7]
    assert glutton[2] * 10.0 == 70.0


def test_lemma2_least_energy_app_can_raise_its_power_for_free():
    """Lemma 2 exception (b), expected behaviour: the app taking every remaining unit may raise its power
    up to the next app's energy without losing time. A: 1 W, B: 10 W, T = 10, phi = 0.6 -> m = (3, 3);
    A's keys 3..6 x P_A stay below B's 30 for P_A up to 4.5 W, so A keeps 7 units."""
    for p_a in (1.0, 2.0, 4.0, 4.5):
        assert etf_allocate([1, 1], None, [p_a, 10.0], 10, 0.6).tolist() == [7, 3]
    assert etf_allocate([1, 1], None, [5.1, 10.0], 10, 0.6).tolist() == [6, 4]  # 6 x 5.1 > 30: B gets one


# --- the extremes of phi (§4.1), tier A ---------------------------------------------------------------
def test_phi_one_is_time_fairness():
    assert etf_allocate([1, 1, 1], None, TOY_POWER, 30, 1.0).tolist() == [10, 10, 10]
    assert etf_allocate([2, 1], None, [4.261, 0.9], 60, 1.0).tolist() == [40, 20]
    assert time_fair_allocation([2, 1, 1], 40.0).tolist() == [20.0, 10.0, 10.0]


def test_phi_zero_is_energy_fairness():
    """EF with P = 1 and 3 W over T = 40: 30 and 10 units, weighted energies 30 and 30 (exact)."""
    assert etf_allocate([1, 1], None, [1.0, 3.0], 40, 0.0).tolist() == [30, 10]
    # Weighted: w = (1, 3), P = (1, 1): T_i proportional to w_i -> 10 and 30, E_i/w_i = 10 and 10.
    assert etf_allocate([1, 3], None, [1.0, 1.0], 40, 0.0).tolist() == [10, 30]
    ef = energy_fair_allocation([1, 1], [1.0, 3.0], 40.0)
    assert ef == pytest.approx([30.0, 10.0])


def test_energy_fair_closed_form_fixes_erratum_e1():
    """Erratum E1: Eq. 2 gives 25.4 + 23.1 + 11.5 = 60 for P = 2, 3, 8; the corrected EF sums to T and
    equalises P_i * T_i."""
    t = energy_fair_allocation([1, 1, 1], TOY_POWER, 30.0)
    assert t.sum() == pytest.approx(30.0)
    energies = t * np.array(TOY_POWER)
    assert energies == pytest.approx(np.full(3, 30.0 / (1 / 2 + 1 / 3 + 1 / 8)))


def test_full_use_of_the_quantum():
    """Theorem 1 / §6.5, tier A: backlogged apps share every unit of T."""
    for phi in (0.0, 0.3, 0.7, 1.0):
        assert etf_allocate([1, 2, 1], None, [4.0, 1.0, 2.5], 37, phi).sum() == 37


def test_demand_caps_and_idle_gpu():
    """Alg. 1 never exceeds a demand; when every demand fits, the GPU idles for the rest."""
    assert etf_allocate([1, 1], [3, 4], [1.0, 1.0], 40, 0.7).tolist() == [3, 4]
    # Guarantee 14 each capped at A's demand 5; B takes the rest of T.
    assert etf_allocate([1, 1], [5, np.inf], [1.0, 8.0], 40, 0.7).tolist() == [5, 35]
    assert etf_allocate([1, 1], [0, np.inf], [1.0, 1.0], 10, 0.5).tolist() == [0, 10]


def test_ties_go_to_the_lowest_index():
    assert etf_allocate([1, 1], None, [1.0, 1.0], 3, 0.0).tolist() == [2, 1]
    assert etf_allocate([1, 1, 1], None, [1.0, 1.0, 1.0], 4, 0.0).tolist() == [2, 1, 1]


def test_ties_broken_by_float_round_off_still_go_to_the_lowest_index():
    """w = (1, 3), both at 3.226 W, EF over T = 13. By hand: the weighted energies t_0*P and t_1*P/3 tie at
    (0,0), (1,3), (2,6) and (3,9), and each tie goes to app 0, so the result is (4, 9). In float64
    3 x 3.226 / 1 = 9.678 but 9 x 3.226 / 3 = 9.677999999999999: a bare float comparison gave (3, 10)."""
    assert 9 * 3.226 / 3 < 3 * 3.226 / 1  # the round-off this test is about
    assert etf_allocate([1, 3], None, [3.226, 3.226], 13, 0.0).tolist() == [4, 9]
    assert etf_allocate([3, 1], None, [3.226, 3.226], 13, 0.0).tolist() == [10, 3]


def test_guarantee_is_floored_not_rounded():
    """0.7 * 40 / 3 = 9.33 -> 9 (Fig. 9's '33.3% * phi ~ 23%'); 0.7 * 30 / 3 = 7 exactly stays 7."""
    assert guaranteed_units(np.ones(3), np.full(3, np.inf), 40, 0.7).tolist() == [9, 9, 9]
    assert guaranteed_units(np.ones(3), np.full(3, np.inf), 30, 0.7).tolist() == [7, 7, 7]
    assert guaranteed_units(np.ones(2), np.array([3.0, np.inf]), 40, 0.7).tolist() == [3, 14]


# --- continuous water-filling (docs page, "Closed forms") --------------------------------------------------
def test_waterfill_two_apps_regimes():
    """Two equal-weight apps, r = 4: phi_fair = 2/5. Below it EF: T_1 = T/(1+r); above it T_1 = phi*T/2."""
    power = [4.0, 1.0]
    assert etf_waterfill([1, 1], None, power, 10.0, 0.2) == pytest.approx([2.0, 8.0])
    assert etf_waterfill([1, 1], None, power, 10.0, 0.7) == pytest.approx([3.5, 6.5])
    assert etf_waterfill([1, 1], None, power, 10.0, 1.0) == pytest.approx([5.0, 5.0])


def test_waterfill_demands():
    assert etf_waterfill([1, 1], [2.0, 3.0], [1.0, 1.0], 10.0, 0.5) == pytest.approx([2.0, 3.0])
    assert etf_waterfill([1, 1], [2.0, np.inf], [1.0, 5.0], 10.0, 0.0) == pytest.approx([2.0, 8.0])


def test_waterfill_floor_guarantee_uses_algorithm1_guarantee():
    # m = floor(0.7 * 10 / 2) = 3 each (not 3.5); r = 4: the level gives (2, 8) -> clipped to (3, 7).
    assert etf_waterfill([1, 1], None, [4.0, 1.0], 10.0, 0.7, floor_guarantee=True) == pytest.approx([3.0, 7.0])


def test_phi_fair_formulas():
    """2/(1+r) for two equal-weight apps; 3/(2+r) at 2:1 with the heavy app high-power; HM/P_max in general."""
    r = 4261 / 900
    assert phi_fair([1, 1], [4.261, 0.9]) == pytest.approx(2 / (1 + r))
    assert phi_fair([2, 1], [4.261, 0.9]) == pytest.approx(3 / (2 + r))
    p = np.array(TOY_POWER)
    assert phi_fair([1, 1, 1], p) == pytest.approx((3 / np.sum(1 / p)) / 8.0)
    assert phi_fair([1, 1], [2.0, 2.0]) == pytest.approx(1.0)


def test_continuous_bound_values():
    assert [etf_continuous_bound(n) for n in (1, 2, 3, 5)] == [1.0, 1.0, 2.0, 4.0]


# --- largest remainder (the ETF-v0 action mapping) ------------------------------------------------------
def test_largest_remainder_hamilton():
    assert largest_remainder([1, 1, 1], 10).tolist() == [4, 3, 3]  # ties to the lowest index
    assert largest_remainder([0.5, 0.3, 0.2], 7).tolist() == [4, 2, 1]  # 3.5, 2.1, 1.4
    assert largest_remainder([0, 1], 5).tolist() == [0, 5]
    assert largest_remainder([3, 1], 4).tolist() == [3, 1]


def test_largest_remainder_caps_redistribute():
    assert largest_remainder([1, 1, 1], 9, caps=[1, 10, 10]).tolist() == [1, 4, 4]
    # Every positive quota capped: the rest spreads over the apps with room.
    assert largest_remainder([1, 0, 0], 6, caps=[2, 10, 10]).tolist() == [2, 2, 2]
    # Every app at its cap: fewer than total units.
    assert largest_remainder([1, 1], 10, caps=[2, 3]).tolist() == [2, 3]


def test_largest_remainder_rejects_bad_quotas():
    with pytest.raises(ValueError, match="quotas"):
        largest_remainder([1, -1], 3)
    with pytest.raises(ValueError, match="quotas"):
        largest_remainder([1, np.nan], 3)


# --- metrics (paper §6.1) -----------------------------------------------------------------------------------
def test_metrics_are_weight_normalised_min_max_ratios():
    assert time_fairness([14, 26], [1, 1]) == pytest.approx(14 / 26)
    assert time_fairness([20, 10], [2, 1]) == pytest.approx(1.0)
    assert energy_fairness([2.0, 1.0], [2, 1]) == pytest.approx(1.0)
    assert system_fairness([14, 26], [14 * 4.261, 26 * 0.9], [1, 1]) == pytest.approx(26 * 0.9 / (14 * 4.261))
    assert min_max_ratio([]) == 1.0 and min_max_ratio([0.0, 0.0]) == 1.0
    assert jain_index([1, 1, 1]) == pytest.approx(1.0) and jain_index([1, 0]) == pytest.approx(0.5)
    assert power_disparity([4.261, 0.541]) == pytest.approx(7.876, abs=1e-3)  # "1-to-7.9" (§6.3)


# --- bad input: ValueError naming the field and what is allowed ------------------------------------------
@pytest.mark.parametrize(("kwargs", "field", "allowed"), [
    ({"weights": [1, -1]}, "weights", r"in \[1e-30, 1e\+30\]"),
    ({"weights": [1, np.nan]}, "weights", r"in \[1e-30, 1e\+30\]"),
    ({"power": [1.0, -2.0]}, "power", r"in \[1e-30, 1e\+30\]"),
    ({"power": [1.0, 0.0]}, "power", r"in \[1e-30, 1e\+30\]"),
    ({"demands": [1, -1]}, "demands", ">= 0"),
    ({"demands": [1.5, 2]}, "demands", "whole units"),
    ({"phi": 1.5}, "phi", r"\[0, 1\]"),
    ({"phi": -0.1}, "phi", r"\[0, 1\]"),
    ({"phi": float("nan")}, "phi", r"\[0, 1\]"),
    ({"T": -1}, "T", r"whole number of units in \[0, 1000000\]"),
    ({"T": 2.5}, "T", r"whole number of units in \[0, 1000000\]"),
    ({"power": [1.0, 2.0, 3.0]}, "same length", ""),
    ({"tie": "fifo"}, "tie", "lowest_index"),
])
def test_etf_allocate_rejects_bad_input(kwargs, field, allowed):
    args = {"weights": [1, 1], "demands": None, "power": [1.0, 2.0], "T": 10, "phi": 0.5, **kwargs}
    with pytest.raises(ValueError, match=field) as err:
        etf_allocate(**args)
    assert re.search(allowed, str(err.value))


def test_closed_forms_reject_bad_input():
    with pytest.raises(ValueError, match="weights"):
        time_fair_allocation([1, 0], 10.0)
    with pytest.raises(ValueError, match="power"):
        energy_fair_allocation([1, 1], [1.0, -1.0], 10.0)
    with pytest.raises(ValueError, match="phi"):
        etf_waterfill([1, 1], None, [1.0, 1.0], 10.0, 2.0)
    with pytest.raises(ValueError, match="T must be >= 0"):
        etf_waterfill([1, 1], None, [1.0, 1.0], -1.0, 0.5)
    with pytest.raises(ValueError, match="power"):
        phi_fair([1, 1], [1.0, np.inf])
