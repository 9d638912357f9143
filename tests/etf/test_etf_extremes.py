"""Extreme but finite inputs to Algorithm 1: a correct allocation (whole units, within T and the demands, no NaN)
or a ValueError naming the argument; never an impossible allocation (issue: ``etf_allocate([1e308, 1], ...)``
returned 50 units of T = 30)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from joulegym.baselines.etf import etf_allocate

WIDE = st.one_of(st.floats(min_value=5e-324, max_value=1.7e308, allow_nan=False, allow_infinity=False),
                 st.sampled_from([5e-324, 1e-320, 1e-300, 1e-30, 1.0, 1e30, 1e300, 1e308]))


def test_the_reported_case_is_rejected_naming_weights():
    with pytest.raises(ValueError, match="weights"):
        etf_allocate([1e308, 1], [50, math.inf], [1, 1], 30, 1.0)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(WIDE, WIDE, st.one_of(st.just(math.inf), st.integers(0, 100))), min_size=1, max_size=5),
       st.integers(0, 200), st.floats(0.0, 1.0))
def test_any_finite_input_gives_a_feasible_allocation_or_a_named_error(apps, T, phi):
    weights, power, demands = ([a[k] for a in apps] for k in range(3))
    try:
        units = etf_allocate(weights, demands, power, T, phi)
    except ValueError as err:
        assert any(name in str(err) for name in ("weights", "power")), err
        return
    assert units.dtype.kind == "i" and np.all(units >= 0)
    assert units.sum() <= T and np.all(units <= np.minimum(demands, T))
    assert units.sum() == min(T, int(np.minimum(demands, T).sum()))  # Algorithm 1 uses the whole quantum


# --- config fuzz findings (/tmp/fuzz-findings.md F1-F3): a ValueError naming the key, not a crash ------------------
@pytest.mark.parametrize("env_id, kwargs, field", [
    ("joulegym/ETF-v0", {"unit_s": 1e-320}, "unit_s"),  # was OverflowError: cannot convert float infinity
    ("joulegym/ETF-v0", {"epoch_s": 1e308}, "epoch_s"),
    ("joulegym/ETFPhi-v0", {"phi_levels": 1e308}, "phi_levels"),  # was OverflowError in Discrete(n)
    ("joulegym/ETFPhi-v0", {"phi_levels": 10**12}, "phi_levels"),  # was a 931 GiB mask at reset
    ("joulegym/ETF-v0", {"apps": [{"model": "x", "frequency_mhz": 1300.5}]}, r"apps\[0\].*model='x'"),
    ("joulegym/ETF-v0", {"mix": {"models": ["resnet50", "x"]}}, r"mix\.models\[1\]"),
])
def test_extreme_config_names_the_field(env_id, kwargs, field):
    import gymnasium as gym

    import joulegym  # noqa: F401  (registers the ids)

    with pytest.raises(ValueError, match=field):
        gym.make(env_id, **kwargs)
