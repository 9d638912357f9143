"""One ETF decision epoch, written once for one instance and for a batch of instances (``docs/families/etf.md``,
"Model" and "Metrics"; paper §6.1).

The single env (:mod:`joulegym.envs.etf.env`, through :class:`~joulegym.envs.etf.simulator.ETFSimulator`) and the
batched vector env (:mod:`joulegym.envs.etf.vector`) run the same functions here. Per-slot quantities are *lanes*:
slot ``k``'s value is ``x[k]``, a Python number in the single env and a numpy array with one value per instance in
the batched env. The arithmetic is the same operators on both (IEEE doubles: the same bits); the few operations that
differ (a masked fold, a guarded division, adding into per-app totals) come from an ops object, :data:`SCALAR` or
:data:`ARRAY`. The scalar ops visit the active slots only (:meth:`ScalarOps.lanes`), so the single env pays for
no masking; the array ops visit every slot and mask the inactive ones.

Sums run slot by slot from slot 0, as Python's ``sum`` over a list does, so both give the same floats.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

INF = math.inf


class ScalarOps:
    """Lanes of one instance: Python numbers, and a loop over the active slots only."""

    @staticmethod
    def lanes(active: Sequence[Any]) -> list[int]:
        return [k for k, a in enumerate(active) if a]

    @staticmethod
    def keep(active: bool, new: Any, old: Any) -> Any:
        return new if active else old

    @staticmethod
    def fold_max(active: bool, high: float, x: float) -> float:
        return x if active and x > high else high

    @staticmethod
    def fold_min(active: bool, low: float, x: float) -> float:
        return x if active and x < low else low

    @staticmethod
    def fold_sum(active: bool, total: float, x: float) -> float:
        return total + x if active else total

    @staticmethod
    def minimum(a: float, b: float) -> float:
        return b if b < a else a  # Python's min(a, b)

    @staticmethod
    def ratio_or(value: float, num: float, den: float) -> float:
        """``num / den`` where ``den > 0``, else ``value``."""
        return num / den if den > 0.0 else value

    @staticmethod
    def add_to_apps(totals: Sequence[list], slot_app: int, values: Sequence[float]) -> None:
        if slot_app >= 0:
            for total, value in zip(totals, values):
                total[slot_app] += value


class ArrayOps:
    """Lanes of a batch: one numpy array per slot with a value per instance ``rows`` (indices into per-app totals)."""

    def __init__(self, rows: np.ndarray | None = None) -> None:
        self.rows = rows

    @staticmethod
    def lanes(active: Sequence[Any]) -> range:
        return range(len(active))

    @staticmethod
    def keep(active: np.ndarray, new: np.ndarray, old: np.ndarray) -> np.ndarray:
        return np.where(active, new, old)

    @staticmethod
    def fold_max(active: np.ndarray, high: Any, x: np.ndarray) -> np.ndarray:
        return np.where(active & (x > high), x, high)

    @staticmethod
    def fold_min(active: np.ndarray, low: Any, x: np.ndarray) -> np.ndarray:
        return np.where(active & (x < low), x, low)

    @staticmethod
    def fold_sum(active: np.ndarray, total: Any, x: np.ndarray) -> np.ndarray:
        return total + np.where(active, x, 0.0)  # + 0.0 is exact

    @staticmethod
    def minimum(a: Any, b: Any) -> np.ndarray:
        return np.where(b < a, b, a)

    @staticmethod
    def ratio_or(value: float, num: np.ndarray, den: np.ndarray) -> np.ndarray:
        ok = den > 0.0
        return np.where(ok, num / np.where(ok, den, 1.0), value)

    def add_to_apps(self, totals: Sequence[np.ndarray], slot_app: np.ndarray, values: Sequence[Any]) -> None:
        held = slot_app >= 0
        rows, apps = self.rows[held], slot_app[held]
        for total, value in zip(totals, values):
            total[rows, apps] += value[held] if isinstance(value, np.ndarray) else value


SCALAR = ScalarOps()


def run_epoch(ops: Any, units: Sequence[Any], power_w: Sequence[Any], service_s: Sequence[Any],
              slot_app: Sequence[Any], seconds_per_unit: float,
              app_totals: Sequence[Any]) -> tuple[list, list, list]:
    """The fluid model's epoch (``docs/families/etf.md``, "Model"): per slot the GPU seconds ``u_i * D / T``, the
    joules ``P_i * t_i`` and the inferences ``t_i / s_i``, added to the per-app totals ``app_totals`` (time, energy,
    inferences, epochs present). Returns the three per-slot lanes."""
    time_s = [u * seconds_per_unit for u in units]
    energy_j = [p * t for p, t in zip(power_w, time_s)]
    inferences = [t / s for t, s in zip(time_s, service_s)]
    for slot, app in enumerate(slot_app):
        ops.add_to_apps(app_totals, app, (time_s[slot], energy_j[slot], inferences[slot], 1))
    return time_s, energy_j, inferences


def epoch_fairness(ops: Any, units: Sequence[Any], energy_j: Sequence[Any], weight: Sequence[Any],
                   active: Sequence[Any], slot_energy: list, dynamic: Sequence[list], T: int) -> tuple[Any, Any]:
    """The epoch's F_T and F_E over the active slots (1 with none, paper §6.1), and the observation's per-slot
    features 6-8 of the active slots, written into ``dynamic`` (three lanes: time share, weighted energy over the
    epoch's max, the occupant's cumulative weighted energy over the active sum); ``slot_energy`` (each occupant's
    cumulative weighted energy) grows by the epoch's."""
    high_t = high_e = -INF
    low_t = low_e = INF
    energy_norm = list(energy_j)
    slots = ops.lanes(active)
    for k in slots:
        a = active[k]
        time_k = units[k] / weight[k]
        energy_k = energy_norm[k] = energy_j[k] / weight[k]
        high_t, low_t = ops.fold_max(a, high_t, time_k), ops.fold_min(a, low_t, time_k)
        high_e, low_e = ops.fold_max(a, high_e, energy_k), ops.fold_min(a, low_e, energy_k)
        slot_energy[k] = ops.keep(a, slot_energy[k] + energy_k, slot_energy[k])
    total = 0.0
    for k in slots:
        total = ops.fold_sum(active[k], total, slot_energy[k])
    inv_e, inv_total, inv_t = ops.ratio_or(0.0, 1.0, high_e), ops.ratio_or(0.0, 1.0, total), 1.0 / T
    time_share, energy_share, cumulative_share = dynamic
    for k in slots:
        a = active[k]
        time_share[k] = ops.keep(a, units[k] * inv_t, time_share[k])
        energy_share[k] = ops.keep(a, energy_norm[k] * inv_e, energy_share[k])
        cumulative_share[k] = ops.keep(a, slot_energy[k] * inv_total, cumulative_share[k])
    return ops.ratio_or(1.0, low_t, high_t), ops.ratio_or(1.0, low_e, high_e)


def etf_objective(ops: Any, units: Sequence[Any], power_w: Sequence[Any], weight: Sequence[Any],
                  demand_units: Sequence[Any], active: Sequence[Any], T: int, ef_level: Any) -> Any:
    """The ETF objective of the epoch: min over the active apps below their demand of ``u_i P_i / w_i`` over the
    weighted-EF level, at most 1 (1 if no app is below its demand or the level is 0; Algorithm 1 maximises it,
    paper Thm. 3)."""
    low = INF
    for k in ops.lanes(active):
        u = units[k]
        low = ops.fold_min(active[k] & (u < ops.minimum(demand_units[k], T)), low, u * power_w[k] / weight[k])
    return ops.minimum(ops.ratio_or(1.0, low, ef_level), 1.0)  # low = inf (none below demand): 1
