"""One ETF decision epoch, written once for one instance and for a batch of instances (``docs/families/etf.md``,
"Model" and "Metrics"; paper §6.1).

The single env (:mod:`joulegym.envs.etf.env`, through :class:`~joulegym.envs.etf.simulator.ETFSimulator`) and the
batched vector env (:mod:`joulegym.envs.etf.vector`) run the same functions here. Per-slot quantities are *lanes*:
slot ``k``'s value is ``x[k]``, a Python number in the single env and a numpy array with one value per instance in
the batched env. The arithmetic is the same operators on both (IEEE doubles: the same bits); the few operations that
differ (a masked reduction over slots, writing the active slots back, a guarded division, adding into per-app
totals) come from an ops object, :data:`SCALAR` or :class:`ArrayOps`. The scalar ops visit the active slots only
(:meth:`ScalarOps.lanes`) and reduce with Python's built-ins, so the single env pays for no masking; the array ops
visit every slot and mask the inactive ones.

Sums run slot by slot from slot 0, as Python's ``sum`` over a list does, so both give the same floats.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from joulegym.envs.etf.metrics import min_max

INF = math.inf


class ScalarOps:
    """Lanes of one instance: Python numbers; only the active slots are visited, so every mask is true."""

    @staticmethod
    def lanes(active: Sequence[bool]) -> tuple[list[int], list[bool]]:
        """The slots to visit (the active ones) and their masks (all true)."""
        slots = [k for k, a in enumerate(active) if a]
        return slots, [True] * len(slots)

    @staticmethod
    def inverse_max(values: list[float], masks: list[bool]) -> float:
        """``1 / max(values)`` (0 where not > 0)."""
        high = max(values, default=-INF)
        return 1.0 / high if high > 0.0 else 0.0

    @staticmethod
    def inverse_sum(values: list[float], masks: list[bool]) -> float:
        """``1 / sum(values)`` (0 where not > 0)."""
        total = 0.0
        for value in values:  # slot by slot from 0.0, as the array ops add
            total += value
        return 1.0 / total if total > 0.0 else 0.0

    @staticmethod
    def min_over_max(a: list[float], b: list[float], masks: list[bool]) -> tuple[float, float]:
        """:func:`~joulegym.envs.etf.metrics.min_max` of ``a`` and of ``b``."""
        return min_max(a), min_max(b)

    @staticmethod
    def min_ratio_capped(values: list[float], masks: list[bool], den: float) -> float:
        """``min(min(values where masks) / den, 1)``; 1 without such a value or with ``den <= 0``."""
        chosen = [v for v, m in zip(values, masks) if m]
        if not chosen or den <= 0.0:
            return 1.0
        return min(min(chosen) / den, 1.0)

    @staticmethod
    def scatter(targets: Sequence[list], lanes: tuple[list[int], list[bool]], values: Sequence[list],
                scales: Sequence[float]) -> None:
        """Write ``values`` (one list per target, over the visited slots) times ``scales`` (one per target) into the
        active slots of ``targets``."""
        slots = lanes[0]
        for target, new, scale in zip(targets, values, scales):
            for k, value in zip(slots, new):
                target[k] = value * scale

    @staticmethod
    def add_to_apps(totals: Sequence[list], slot_app: Sequence[int], values: Sequence[Sequence[float]]) -> None:
        app_time, app_energy, app_inferences, app_epochs = totals
        time_s, energy_j, inferences = values
        for slot, app in enumerate(slot_app):
            if app >= 0:
                app_time[app] += time_s[slot]
                app_energy[app] += energy_j[slot]
                app_inferences[app] += inferences[slot]
                app_epochs[app] += 1


class ArrayOps:
    """Lanes of a batch: one numpy array per slot, a value per instance; ``rows`` are the instances' indices into
    the per-app totals. Every slot is visited and the inactive ones are masked."""

    def __init__(self, rows: np.ndarray) -> None:
        self.rows = rows

    @staticmethod
    def lanes(active: Sequence[np.ndarray]) -> tuple[range, Sequence[np.ndarray]]:
        """Every slot, and its mask of active instances."""
        return range(len(active)), active

    @classmethod
    def min_max(cls, values: list[np.ndarray], masks: list[np.ndarray]) -> np.ndarray:
        high = cls.masked_max(values, masks)
        return cls.ratio_or(1.0, cls.masked_min(values, masks), high)

    @staticmethod
    def masked_max(values: list[np.ndarray], masks: list[np.ndarray]) -> Any:
        high: Any = -INF
        for value, mask in zip(values, masks):
            high = np.where(mask & (value > high), value, high)
        return high

    @staticmethod
    def masked_min(values: list[np.ndarray], masks: list[np.ndarray]) -> Any:
        low: Any = INF
        for value, mask in zip(values, masks):
            low = np.where(mask & (value < low), value, low)
        return low

    @classmethod
    def inverse_max(cls, values: list[np.ndarray], masks: list[np.ndarray]) -> np.ndarray:
        return cls.ratio_or(0.0, 1.0, cls.masked_max(values, masks))

    @classmethod
    def inverse_sum(cls, values: list[np.ndarray], masks: list[np.ndarray]) -> np.ndarray:
        total: Any = 0.0
        for value, mask in zip(values, masks):
            total = total + np.where(mask, value, 0.0)  # + 0.0 is exact
        return cls.ratio_or(0.0, 1.0, total)

    @classmethod
    def min_over_max(cls, a: list[np.ndarray], b: list[np.ndarray],
                     masks: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        return cls.min_max(a, masks), cls.min_max(b, masks)

    @classmethod
    def min_ratio_capped(cls, values: list[np.ndarray], masks: list[np.ndarray], den: np.ndarray) -> np.ndarray:
        low = cls.masked_min(values, masks)
        ratio = cls.ratio_or(1.0, low, den)  # low = inf (no value): inf, capped to 1
        return np.where(1.0 < ratio, 1.0, ratio)

    @staticmethod
    def scatter(targets: Sequence[list], lanes: tuple[range, Sequence[np.ndarray]],
                values: Sequence[list[np.ndarray]], scales: Sequence[Any]) -> None:
        slots, masks = lanes
        for target, new, scale in zip(targets, values, scales):
            for k, mask, value in zip(slots, masks, new):
                target[k] = np.where(mask, value * scale, target[k])

    @staticmethod
    def ratio_or(value: float, num: Any, den: Any) -> np.ndarray:
        ok = den > 0.0
        return np.where(ok, num / np.where(ok, den, 1.0), value)

    def add_to_apps(self, totals: Sequence[np.ndarray], slot_app: Sequence[np.ndarray],
                    values: Sequence[Sequence[np.ndarray]]) -> None:
        for slot, apps in enumerate(slot_app):
            held = apps >= 0
            index = (self.rows[held], apps[held])
            for total, value in zip(totals, values):
                total[index] += value[slot][held]
            totals[3][index] += 1


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
    ops.add_to_apps(app_totals, slot_app, (time_s, energy_j, inferences))
    return time_s, energy_j, inferences


def epoch_fairness(ops: Any, lanes: tuple[Sequence[int], Sequence[Any]], units: Sequence[Any],
                   energy_j: Sequence[Any], weight: Sequence[Any], slot_energy: list, dynamic: Sequence[list],
                   T: int) -> tuple[Any, Any]:
    """The epoch's F_T and F_E over the active slots (1 with none, paper §6.1), and the observation's per-slot
    features 6-8 of the active slots, written into ``dynamic`` (three lanes: time share, weighted energy over the
    epoch's max, the occupant's cumulative weighted energy over the active sum); ``slot_energy`` (each occupant's
    cumulative weighted energy) grows by the epoch's. ``lanes`` is ``ops.lanes(active)``. It is
    :func:`epoch_shares` (what follows from the app set and the units alone) then :func:`epoch_features`."""
    energy_norm, f_t, f_e, inv_e = epoch_shares(ops, lanes, units, energy_j, weight)
    epoch_features(ops, lanes, units, energy_norm, inv_e, slot_energy, dynamic, T)
    return f_t, f_e


def epoch_shares(ops: Any, lanes: tuple[Sequence[int], Sequence[Any]], units: Sequence[Any],
                 energy_j: Sequence[Any], weight: Sequence[Any]) -> tuple[list, Any, Any, Any]:
    """What an epoch's fairness depends on beyond the run so far: the weighted energies ``E_i / w_i`` of the
    visited slots, F_T, F_E and ``1 / max E_i / w_i`` (0 with no active slot)."""
    slots, masks = lanes
    time_norm = [units[k] / weight[k] for k in slots]
    energy_norm = [energy_j[k] / weight[k] for k in slots]
    f_t, f_e = ops.min_over_max(time_norm, energy_norm, masks)
    return energy_norm, f_t, f_e, ops.inverse_max(energy_norm, masks)


def epoch_features(ops: Any, lanes: tuple[Sequence[int], Sequence[Any]], units: Sequence[Any],
                   energy_norm: list, inv_e: Any, slot_energy: list, dynamic: Sequence[list], T: int) -> None:
    """Features 6-8 of the active slots into ``dynamic`` and the occupants' cumulative weighted energy
    ``slot_energy``, from :func:`epoch_shares`' ``energy_norm`` and ``inv_e``."""
    slots, masks = lanes
    cumulative = [slot_energy[k] + e for k, e in zip(slots, energy_norm)]  # written to the active slots only
    # x * 1.0 is x: the occupants' cumulative energy is written as it is
    ops.scatter((slot_energy, *dynamic), lanes, (cumulative, [units[k] for k in slots], energy_norm, cumulative),
                (1.0, 1.0 / T, inv_e, ops.inverse_sum(cumulative, masks)))


def etf_objective(ops: Any, lanes: tuple[Sequence[int], Sequence[Any]], units: Sequence[Any],
                  power_w: Sequence[Any], weight: Sequence[Any], demand_units: Sequence[Any], T: int,
                  ef_level: Any) -> Any:
    """The ETF objective of the epoch: min over the active apps below their demand of ``u_i P_i / w_i`` over the
    weighted-EF level, at most 1 (1 if no app is below its demand or the level is 0; Algorithm 1 maximises it,
    paper Thm. 3). ``lanes`` is ``ops.lanes(active)``."""
    slots, masks = lanes
    below = [m & (units[k] < demand_units[k]) & (units[k] < T) for k, m in zip(slots, masks)]  # u < min(d, T)
    return ops.min_ratio_capped([units[k] * power_w[k] / weight[k] for k in slots], below, ef_level)
