"""ETF fairness metrics (ETF paper §6.1; ``docs/families/etf.md``, "Metrics").

``F_T = min_i(t_i/w_i) / max_i(t_i/w_i)``, ``F_E`` the same over energies ``E_i/w_i``, and
``F_S = min(F_T, F_E)``: min/max ratios over the apps considered, both normalised by weight ("both
time and energy allocations are normalized by application weights"). 1 is perfectly fair. Jain's
index is not used by the paper; it is offered as an extra.

Convention: with no app, or when every normalised value is 0, a ratio is 1 (nothing is unequal).
The list-based :func:`min_max` / :func:`jain` serve the simulator's hot loop; the array functions
below wrap them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def min_max(values: Sequence[float]) -> float:
    """``min/max`` of non-negative values; 1.0 when empty or all zero."""
    if not len(values):
        return 1.0
    high = max(values)
    return 1.0 if high <= 0.0 else min(values) / high


def jain(values: Sequence[float]) -> float:
    """Jain's index ``(sum x)^2 / (n sum x^2)`` in [1/n, 1]; 1.0 when empty or all zero."""
    squares = sum(v * v for v in values)
    return 1.0 if squares <= 0.0 else sum(values) ** 2 / (len(values) * squares)


def _normalised(values, weights) -> list[float]:
    return (np.asarray(values, dtype=float).ravel() / np.asarray(weights, dtype=float).ravel()).tolist()


def min_max_ratio(values) -> float:
    """``min/max`` of a non-negative array (1.0 for an empty or all-zero array)."""
    return min_max(np.asarray(values, dtype=float).ravel().tolist())


def time_fairness(times, weights) -> float:
    """F_T: min over max of weight-normalised time."""
    return min_max(_normalised(times, weights))


def energy_fairness(energies, weights) -> float:
    """F_E: min over max of weight-normalised energy."""
    return min_max(_normalised(energies, weights))


def system_fairness(times, energies, weights) -> float:
    """F_S = min(F_T, F_E)."""
    return min(time_fairness(times, weights), energy_fairness(energies, weights))


def jain_index(values) -> float:
    """Jain's fairness index of an array (extra; not a paper metric)."""
    return jain(np.asarray(values, dtype=float).ravel().tolist())


def power_disparity(power) -> float:
    """P_max / P_min, the x-axis of the paper's Fig. 6 ("1-to-7.9")."""
    p = np.asarray(power, dtype=float)
    return float(p.max() / p.min())


__all__ = [
    "energy_fairness",
    "jain",
    "jain_index",
    "min_max",
    "min_max_ratio",
    "power_disparity",
    "system_fairness",
    "time_fairness",
]
