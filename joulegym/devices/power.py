"""CMOS power model shared by the DVFS families (ETF §2.3 Eq. 1, PowerFlow §4.2 Eqs. 10-15, Qin).

Dynamic power is ``P_dyn = a * C * V(f)**2 * f`` (activity ``a`` in [0, 1], switched capacitance ``C`` in
farads, voltage ``V`` in volts, frequency ``f`` in Hz); static power is leakage, paid whenever the
device is powered. Energy is the integral of power over time (J = W * s).

The voltage-frequency curve is piecewise linear. PowerFlow (after Guerreiro et al., HPCA'18) uses a
*knee* curve: voltage is constant below a breakpoint ``f_0`` and rises linearly above it, so that
dynamic power is linear in ``f`` below ``f_0`` and cubic above it. :meth:`VoltageCurve.knee` builds it.

Units: MHz for frequencies at the API (the unit of every paper's tables), V, W, J, s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

STATIC_MODES = ("constant", "voltage", "frequency_above_knee")


@dataclass(frozen=True)
class VoltageCurve:
    """Piecewise-linear supply voltage as a function of frequency.

    :param points_mhz: ascending frequencies (MHz) of the curve's corners.
    :param volts: voltage (V) at each corner; clamped flat outside the first/last corner.
    :param knee_mhz: the breakpoint ``f_0`` where voltage starts rising, if the curve has one.
    """

    points_mhz: tuple[float, ...]
    volts: tuple[float, ...]
    knee_mhz: float | None = None

    def __post_init__(self) -> None:
        if len(self.points_mhz) != len(self.volts) or len(self.points_mhz) == 0:
            raise ValueError("points_mhz and volts must be non-empty and of equal length")
        if np.any(np.diff(self.points_mhz) <= 0):
            raise ValueError(f"points_mhz must be strictly ascending, got {self.points_mhz}")
        if np.any(np.asarray(self.volts) <= 0):
            raise ValueError(f"volts must be > 0, got {self.volts}")

    @classmethod
    def knee(cls, knee_mhz: float, max_mhz: float, v_knee: float, v_max: float) -> VoltageCurve:
        """Constant ``v_knee`` up to ``knee_mhz``, then linear to ``v_max`` at ``max_mhz``."""
        if not 0 < knee_mhz < max_mhz:
            raise ValueError(f"need 0 < knee_mhz < max_mhz, got knee_mhz={knee_mhz}, max_mhz={max_mhz}")
        return cls((knee_mhz, max_mhz), (v_knee, v_max), knee_mhz=knee_mhz)

    @classmethod
    def constant(cls, volts: float) -> VoltageCurve:
        return cls((1.0,), (volts,))

    def __call__(self, frequency_mhz: float | np.ndarray) -> np.ndarray | float:
        """Voltage (V) at ``frequency_mhz``; linear inside, flat outside the corners."""
        return np.interp(frequency_mhz, self.points_mhz, self.volts)


@dataclass(frozen=True)
class CMOSPowerModel:
    """``P(f) = activity * capacitance * V(f)^2 * f + P_static(f)`` for one device.

    :param capacitance_f: effective switched capacitance ``C`` (F).
    :param voltage: the V-f curve.
    :param static_w: leakage power (W) at the reference point (the knee, or the lowest corner).
    :param static_mode: how leakage scales: ``"constant"``; ``"voltage"`` (``∝ V``, Eq. 11's
        ``V*N*K*I_leak``); or ``"frequency_above_knee"`` (constant below ``f_0``, ``∝ f`` above, as in
        PowerFlow Eq. 15 with the continuity constraint ``c_h = P_static_l / f_0``).
    """

    capacitance_f: float
    voltage: VoltageCurve
    static_w: float = 0.0
    static_mode: str = "constant"

    def __post_init__(self) -> None:
        if self.capacitance_f < 0:
            raise ValueError(f"capacitance_f must be >= 0 F, got {self.capacitance_f}")
        if self.static_w < 0:
            raise ValueError(f"static_w must be >= 0 W, got {self.static_w}")
        if self.static_mode not in STATIC_MODES:
            raise ValueError(f"static_mode={self.static_mode!r} is not one of {STATIC_MODES}")
        if self.static_mode == "frequency_above_knee" and self.voltage.knee_mhz is None:
            raise ValueError("static_mode='frequency_above_knee' needs a voltage curve with knee_mhz")

    @property
    def _reference_mhz(self) -> float:
        return self.voltage.knee_mhz if self.voltage.knee_mhz is not None else self.voltage.points_mhz[0]

    def dynamic_w(self, frequency_mhz: float | np.ndarray, activity: float | np.ndarray = 1.0):
        """Dynamic power ``a*C*V^2*f`` in W."""
        volts = self.voltage(frequency_mhz)
        return dynamic_power_w(activity, self.capacitance_f, volts, frequency_mhz)

    def static(self, frequency_mhz: float | np.ndarray):
        """Leakage power in W at ``frequency_mhz``."""
        f = np.asarray(frequency_mhz, dtype=float)
        if self.static_mode == "constant":
            out = np.full_like(f, self.static_w)
        elif self.static_mode == "voltage":
            out = self.static_w * self.voltage(f) / self.voltage(self._reference_mhz)
        else:
            out = self.static_w * np.maximum(1.0, f / self._reference_mhz)
        return out if out.ndim else float(out)

    def total_w(self, frequency_mhz: float | np.ndarray, activity: float | np.ndarray = 1.0):
        """Dynamic plus static power in W."""
        return self.dynamic_w(frequency_mhz, activity) + self.static(frequency_mhz)

    def relative_dynamic(self, frequency_mhz: float | np.ndarray):
        """``V(f)^2 f / (V(f_ref)^2 f_ref)``: dynamic power relative to the reference point.

        For a knee curve this is PowerFlow's shape ``s(f)`` (docs/families/powerflow.md): ``x`` below the knee and
        ``(1-k)^2 x + 2k(1-k) x^2 + k^2 x^3`` above it, with ``x = f/f_0``.
        """
        ref = self._reference_mhz
        return self.dynamic_w(frequency_mhz) / self.dynamic_w(ref)


def dynamic_power_w(activity, capacitance_f, volts, frequency_mhz):
    """The CMOS form ``a * C * V^2 * f`` (W), with ``f`` given in MHz."""
    return np.asarray(activity) * capacitance_f * np.square(volts) * np.asarray(frequency_mhz) * 1e6


def integrate_energy_j(power_w: Sequence[float] | np.ndarray, durations_s: Sequence[float] | np.ndarray):
    """Energy (J) of piecewise-constant power: ``sum(P_k * dt_k)``."""
    power = np.asarray(power_w, dtype=float)
    durations = np.asarray(durations_s, dtype=float)
    if power.shape != durations.shape:
        raise ValueError(f"power_w and durations_s must have the same shape, got {power.shape} and {durations.shape}")
    return float(np.dot(power, durations))
