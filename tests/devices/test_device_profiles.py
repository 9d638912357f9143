"""ProfileTable: measured time and power per DVFS level, with interpolation (devices/profiles.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from joulegym.devices import ProfileTable

LEVELS = (100.0, 200.0, 400.0, 800.0)


def table_from(a: float, b: float, c: float, d: float) -> ProfileTable:
    """time = a + b/f (s), power = c + d*f (W): the shapes the interpolation is exact for."""
    return ProfileTable.from_arrays("toy", LEVELS, [a + b / f for f in LEVELS], [c + d * f for f in LEVELS],
                                    source="test")


def test_exact_at_measured_levels():
    table = ProfileTable.from_arrays("m", LEVELS, [0.4, 0.2, 0.1, 0.06], [1.0, 1.5, 2.5, 4.0])
    for f, t, p in zip(LEVELS, (0.4, 0.2, 0.1, 0.06), (1.0, 1.5, 2.5, 4.0)):
        assert table.at(f) == (t, p)
    assert table.level(2) == (400.0, 0.1, 2.5)
    assert table.energy_j.tolist() == pytest.approx([0.4, 0.3, 0.25, 0.24])
    assert table.energy_optimal_mhz() == 800.0
    assert table.grid.levels_mhz == LEVELS


@settings(max_examples=100, deadline=None)
@given(a=st.floats(0.0, 0.1), b=st.floats(0.1, 50.0), c=st.floats(0.1, 5.0), d=st.floats(0.0, 0.01),
       f=st.floats(100.0, 800.0))
def test_interpolation_time_in_inverse_frequency_power_in_frequency(a, b, c, d, f):
    time, power = table_from(a, b, c, d).at(f)
    assert time == pytest.approx(a + b / f, rel=1e-9)
    assert power == pytest.approx(c + d * f, rel=1e-9)


def test_interpolation_between_two_levels():
    table = ProfileTable.from_arrays("m", (100.0, 200.0), (0.2, 0.1), (1.0, 3.0))
    time, power = table.at(150.0)
    # 1/f: 0.01 -> 0.2 s, 0.005 -> 0.1 s; at 1/150 the line gives 0.1 + (1/150 - 0.005)/0.005 * 0.1 = 0.1333
    assert time == pytest.approx(0.1 + (1 / 150 - 0.005) / 0.005 * 0.1)
    assert power == pytest.approx(2.0)


@pytest.mark.parametrize("f", [99.0, 801.0, 0.0])
def test_no_extrapolation(f):
    with pytest.raises(ValueError, match=r"outside the measured range \[100.0, 800.0\] MHz of 'toy'"):
        table_from(0.0, 1.0, 1.0, 0.0).at(f)


@pytest.mark.parametrize(("freqs", "times", "powers", "match"), [
    ((), (), (), "non-empty"), ((1.0, 2.0), (1.0,), (1.0, 1.0), "equal length"),
    ((2.0, 1.0), (1.0, 1.0), (1.0, 1.0), "ascending"), ((1.0,), (0.0,), (1.0,), "> 0"),
    ((1.0,), (1.0,), (-1.0,), "> 0"),
])
def test_invalid_tables(freqs, times, powers, match):
    with pytest.raises(ValueError, match=match):
        ProfileTable.from_arrays("bad", freqs, times, powers)


def test_scaled_copy():
    base = table_from(0.0, 10.0, 1.0, 0.0)
    hot = base.scaled(power_factor=2.0, time_factor=0.5, workload="hot")
    assert hot.workload == "hot" and hot.source == base.source
    assert hot.power_w == tuple(2.0 * p for p in base.power_w)
    assert hot.time_s == pytest.approx(tuple(0.5 * t for t in base.time_s))
    with pytest.raises(ValueError, match="power_factor"):
        base.scaled(power_factor=0.0)
