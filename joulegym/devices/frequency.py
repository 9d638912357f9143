"""Discrete DVFS frequency grids (MHz).

Every family speaks about frequencies the same way: an ascending grid of levels in MHz, with the
lowest level at index 0. ETF uses the 13 Jetson TX2 GPU levels, PowerFlow a V100 grid, Qin the CPU
P-states of a server.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FrequencyGrid:
    """An ascending grid of DVFS levels.

    :param levels_mhz: the frequency levels in MHz, strictly ascending and positive.
    """

    levels_mhz: tuple[float, ...]

    def __post_init__(self) -> None:
        levels = np.asarray(self.levels_mhz, dtype=float)
        if levels.ndim != 1 or levels.size == 0:
            raise ValueError("levels_mhz must be a non-empty 1-D sequence of frequencies in MHz")
        if not np.all(np.isfinite(levels)) or np.any(levels <= 0):
            raise ValueError(f"levels_mhz must be finite and > 0 MHz, got {self.levels_mhz}")
        if np.any(np.diff(levels) <= 0):
            raise ValueError(f"levels_mhz must be strictly ascending, got {self.levels_mhz}")

    @classmethod
    def from_sequence(cls, levels_mhz: Sequence[float]) -> FrequencyGrid:
        return cls(tuple(float(f) for f in levels_mhz))

    @classmethod
    def linear(cls, low_mhz: float, high_mhz: float, step_mhz: float) -> FrequencyGrid:
        """Levels ``low, low+step, ...`` up to ``high``; ``high`` is appended if the step misses it."""
        if not step_mhz > 0:
            raise ValueError(f"step_mhz must be > 0, got {step_mhz}")
        if not (np.isfinite(low_mhz) and np.isfinite(high_mhz) and 0 < low_mhz <= high_mhz):
            raise ValueError(f"need 0 < low_mhz <= high_mhz (MHz), got low_mhz={low_mhz}, high_mhz={high_mhz}")
        count = int(np.floor((high_mhz - low_mhz) / step_mhz + 1e-9)) + 1
        levels = [low_mhz + k * step_mhz for k in range(count)]
        if abs(levels[-1] - high_mhz) > 1e-9:
            levels.append(high_mhz)
        return cls(tuple(float(f) for f in levels))

    def __len__(self) -> int:
        return len(self.levels_mhz)

    @property
    def array(self) -> np.ndarray:
        """The levels as a float array (a fresh copy)."""
        return np.asarray(self.levels_mhz, dtype=float)

    @property
    def min_mhz(self) -> float:
        return self.levels_mhz[0]

    @property
    def max_mhz(self) -> float:
        return self.levels_mhz[-1]

    def index_of(self, frequency_mhz: float, tol_mhz: float = 0.5) -> int:
        """Index of the level equal to ``frequency_mhz`` (within ``tol_mhz``); ValueError otherwise."""
        levels = self.array
        index = int(np.argmin(np.abs(levels - frequency_mhz)))
        if abs(levels[index] - frequency_mhz) > tol_mhz:
            raise ValueError(
                f"frequency_mhz={frequency_mhz} is not a level of this grid; allowed: {list(self.levels_mhz)}"
            )
        return index

    def nearest_index(self, frequency_mhz: float) -> int:
        """Index of the level closest to ``frequency_mhz``."""
        return int(np.argmin(np.abs(self.array - frequency_mhz)))

    def step(self, index: int, delta: int) -> int:
        """Move ``delta`` levels from ``index``, clipped to the grid."""
        return int(min(max(index + delta, 0), len(self) - 1))
