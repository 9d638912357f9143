"""Measured profile tables: service time and average power of one workload at each DVFS level.

ETF (§5, §6) charges energy as profile power x time, so its whole device model is one of these
tables per (device, model). Between measured levels, :meth:`ProfileTable.at` interpolates time
linearly in ``1/f`` (service time is ``a + b/f`` for a frequency-bound kernel) and power linearly in
``f``; at a measured level it returns the measurement exactly.

Units: frequency MHz, time s (per inference / per unit of work), power W, energy J.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from joulegym.devices.frequency import FrequencyGrid


@dataclass(frozen=True)
class ProfileTable:
    """Time and power of one workload at each frequency level.

    :param workload: workload name, e.g. ``"resnet50"``.
    :param frequencies_mhz: the measured levels (ascending).
    :param time_s: service time per unit of work (e.g. one batch-1 inference) at each level, in s.
    :param power_w: average power while running at each level, in W.
    :param source: where the numbers come from (a citation, or ``"synthetic: ..."``).
    """

    workload: str
    frequencies_mhz: tuple[float, ...]
    time_s: tuple[float, ...]
    power_w: tuple[float, ...]
    source: str = ""
    notes: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        n = len(self.frequencies_mhz)
        if n == 0 or len(self.time_s) != n or len(self.power_w) != n:
            raise ValueError(
                f"profile {self.workload!r}: frequencies_mhz, time_s and power_w must be non-empty and "
                f"of equal length, got {n}, {len(self.time_s)}, {len(self.power_w)}"
            )
        FrequencyGrid(tuple(self.frequencies_mhz))  # validates ascending, positive
        if np.any(np.asarray(self.time_s) <= 0) or np.any(np.asarray(self.power_w) <= 0):
            raise ValueError(f"profile {self.workload!r}: time_s and power_w must be > 0")

    @classmethod
    def from_arrays(
        cls,
        workload: str,
        frequencies_mhz: Sequence[float],
        time_s: Sequence[float],
        power_w: Sequence[float],
        source: str = "",
        notes: str = "",
    ) -> ProfileTable:
        as_tuple = lambda xs: tuple(float(x) for x in xs)  # noqa: E731
        return cls(workload, as_tuple(frequencies_mhz), as_tuple(time_s), as_tuple(power_w), source, notes)

    @property
    def grid(self) -> FrequencyGrid:
        return FrequencyGrid(self.frequencies_mhz)

    @property
    def energy_j(self) -> np.ndarray:
        """Energy per unit of work at each level (J) = power x time."""
        return np.asarray(self.time_s) * np.asarray(self.power_w)

    def at(self, frequency_mhz: float) -> tuple[float, float]:
        """``(time_s, power_w)`` at ``frequency_mhz``; exact at a measured level, interpolated between.

        Raises ``ValueError`` outside the measured range (no extrapolation).
        """
        f = float(frequency_mhz)
        lo, hi = self.frequencies_mhz[0], self.frequencies_mhz[-1]
        if not lo - 1e-9 <= f <= hi + 1e-9:
            raise ValueError(
                f"frequency_mhz={f} is outside the measured range [{lo}, {hi}] MHz of {self.workload!r}"
            )
        freqs = np.asarray(self.frequencies_mhz)
        exact = np.flatnonzero(np.abs(freqs - f) < 1e-6)
        if exact.size:
            k = int(exact[0])
            return self.time_s[k], self.power_w[k]
        inv = 1.0 / freqs
        time = float(np.interp(1.0 / f, inv[::-1], np.asarray(self.time_s)[::-1]))
        power = float(np.interp(f, freqs, self.power_w))
        return time, power

    def level(self, index: int) -> tuple[float, float, float]:
        """``(frequency_mhz, time_s, power_w)`` of the measured level ``index``."""
        return self.frequencies_mhz[index], self.time_s[index], self.power_w[index]

    def scaled(self, *, power_factor: float = 1.0, time_factor: float = 1.0, workload: str | None = None,
               source: str | None = None) -> ProfileTable:
        """A copy with power and/or time multiplied by constant factors (for synthetic variants)."""
        if power_factor <= 0 or time_factor <= 0:
            raise ValueError("power_factor and time_factor must be > 0")
        return ProfileTable.from_arrays(
            workload or self.workload,
            self.frequencies_mhz,
            np.asarray(self.time_s) * time_factor,
            np.asarray(self.power_w) * power_factor,
            source=source if source is not None else self.source,
        )

    def energy_optimal_mhz(self) -> float:
        """The measured level with the lowest energy per unit of work."""
        return self.frequencies_mhz[int(np.argmin(self.energy_j))]
