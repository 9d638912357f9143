"""CMOS power model and V-f curves (devices/power.py; ETF §2.3 Eq. 1, PowerFlow Eqs. 10-15)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from joulegym.devices import CMOSPowerModel, VoltageCurve, dynamic_power_w, integrate_energy_j


def test_voltage_curve_interpolates_and_clamps():
    curve = VoltageCurve((500.0, 1000.0), (0.8, 1.0))
    assert curve(500.0) == pytest.approx(0.8) and curve(750.0) == pytest.approx(0.9)
    assert curve(100.0) == pytest.approx(0.8) and curve(2000.0) == pytest.approx(1.0)  # flat outside
    assert np.allclose(curve(np.array([500.0, 1000.0])), [0.8, 1.0])
    assert VoltageCurve.constant(1.1)(123.0) == pytest.approx(1.1)


def test_knee_curve():
    knee = VoltageCurve.knee(800.0, 1600.0, 0.7, 1.05)
    assert knee.knee_mhz == 800.0
    assert knee(400.0) == pytest.approx(0.7) and knee(800.0) == pytest.approx(0.7)
    assert knee(1200.0) == pytest.approx(0.875) and knee(1600.0) == pytest.approx(1.05)
    with pytest.raises(ValueError, match="knee_mhz"):
        VoltageCurve.knee(1600.0, 800.0, 0.7, 1.0)


@pytest.mark.parametrize(("points", "volts", "field"), [
    ((), (), "equal length"), ((1.0, 2.0), (1.0,), "equal length"), ((2.0, 1.0), (1.0, 1.0), "ascending"),
    ((1.0,), (0.0,), "volts"), ((1.0,), (-1.0,), "volts"),
])
def test_voltage_curve_errors(points, volts, field):
    with pytest.raises(ValueError, match=field):
        VoltageCurve(points, volts)


def test_dynamic_power_is_a_c_v2_f():
    # 0.5 * 1 nF * (1 V)^2 * 1000 MHz = 0.5 W
    assert dynamic_power_w(0.5, 1e-9, 1.0, 1000.0) == pytest.approx(0.5)
    model = CMOSPowerModel(2e-9, VoltageCurve.constant(0.9))
    assert model.dynamic_w(500.0) == pytest.approx(2e-9 * 0.81 * 500e6)
    assert model.dynamic_w(500.0, activity=0.25) == pytest.approx(0.25 * 2e-9 * 0.81 * 500e6)
    assert model.total_w(500.0) == pytest.approx(model.dynamic_w(500.0))  # no leakage by default


def test_static_modes():
    curve = VoltageCurve.knee(1000.0, 2000.0, 0.8, 1.2)
    const = CMOSPowerModel(1e-9, curve, static_w=10.0)
    assert const.static(500.0) == pytest.approx(10.0) and const.static(2000.0) == pytest.approx(10.0)
    volt = CMOSPowerModel(1e-9, curve, static_w=10.0, static_mode="voltage")
    assert volt.static(1000.0) == pytest.approx(10.0) and volt.static(2000.0) == pytest.approx(15.0)
    freq = CMOSPowerModel(1e-9, curve, static_w=10.0, static_mode="frequency_above_knee")
    assert freq.static(500.0) == pytest.approx(10.0) and freq.static(1500.0) == pytest.approx(15.0)
    assert np.allclose(freq.static(np.array([500.0, 2000.0])), [10.0, 20.0])
    assert freq.total_w(2000.0) == pytest.approx(freq.dynamic_w(2000.0) + 20.0)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"capacitance_f": -1.0}, "capacitance_f"), ({"static_w": -1.0}, "static_w"),
    ({"static_mode": "quadratic"}, "static_mode"),
    ({"static_mode": "frequency_above_knee", "voltage": VoltageCurve.constant(1.0)}, "knee_mhz"),
])
def test_power_model_errors(kwargs, field):
    args = {"capacitance_f": 1e-9, "voltage": VoltageCurve.constant(1.0), **kwargs}
    with pytest.raises(ValueError, match=field):
        CMOSPowerModel(**args)


@settings(max_examples=100, deadline=None)
@given(knee=st.floats(200.0, 1000.0), span=st.floats(100.0, 2000.0), v_knee=st.floats(0.5, 1.0),
       dv=st.floats(0.0, 0.6), x=st.floats(0.1, 3.0))
def test_relative_dynamic_knee_shape(knee, span, v_knee, dv, x):
    """Below the knee s(x) = x; above it (1-k)^2 x + 2k(1-k) x^2 + k^2 x^3 with x = f/f0 and
    k = (V_max/V_knee - 1) * f0 / (f_max - f0) (docs/families/powerflow.md), up to f_max."""
    f_max = knee + span
    model = CMOSPowerModel(1e-9, VoltageCurve.knee(knee, f_max, v_knee, v_knee + dv))
    f = min(x * knee, f_max)
    x = f / knee
    k = ((v_knee + dv) / v_knee - 1) * knee / (f_max - knee)
    expected = x if x <= 1 else (1 - k) ** 2 * x + 2 * k * (1 - k) * x**2 + k**2 * x**3
    assert model.relative_dynamic(f) == pytest.approx(expected, rel=1e-9)


def test_energy_integral():
    assert integrate_energy_j([2.0, 3.0], [1.0, 0.5]) == pytest.approx(3.5)
    assert integrate_energy_j([], []) == 0.0
    with pytest.raises(ValueError, match="same shape"):
        integrate_energy_j([1.0, 2.0], [1.0])
