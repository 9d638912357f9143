"""Fluid simulator of one time-shared GPU with per-app DVFS (``docs/families/etf.md``, "Model").

Time advances in decision epochs of ``epoch_s`` seconds. Each epoch is ``epoch_s / (T_units*unit_s)``
identical scheduling rounds; in each round app ``i`` runs for ``u_i`` units at its own frequency and
profile power. So over the epoch it gets ``time_i = epoch_s * u_i / T_units`` seconds of GPU time and
``energy_i = P_i * time_i`` joules: the profile-based accounting of the authors' code ("E = P x t").

Apps arrive and depart at epoch boundaries (Fig. 9's timeline, the random mix). An arriving app
takes the lowest free slot and keeps it until it leaves. Everything the paper reports over a run is
kept in running accumulators (no recomputation over the history in a step).

The per-slot state is kept in plain Python lists: with at most a handful of slots, list arithmetic
beats numpy's per-call overhead, and this loop is an RL inner loop. No Gymnasium here; it is a
:class:`joulegym.core.simulator.Simulator`: ``reset(rng, apps)`` (the env draws the apps; the fluid model
draws nothing itself), ``apply(units)`` runs the current epoch, ``advance()`` moves to the next epoch
(:attr:`~ETFSimulator.membership_changed` says whether an app arrived or left), ``view()`` is a read-only
snapshot of the per-slot state, ``metrics()``, ``done``, ``truncated``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np

from joulegym.core.cache import BoundedCache
from joulegym.core.simulator import Simulator
from joulegym.devices import Device
from joulegym.envs.etf.epoch import SCALAR, run_epoch
from joulegym.envs.etf.metrics import jain, min_max
from joulegym.workloads.inference import InferenceApp


class EpochResult(NamedTuple):
    """What happened in one epoch, per slot (lists of length ``max_apps``)."""

    units: list[int]  # whole units per round given to each slot
    time_s: list[float]  # GPU seconds in the epoch
    energy_j: list[float]  # joules in the epoch
    inferences: list[float]  # completed inferences (fluid: time / service time)
    active: list[bool]  # the slots that were active


class ETFSimulator(Simulator):
    """Time-shared GPU with ``max_apps`` tenant slots.

    :param device: the device preset (profiles per model and frequency).
    :param max_apps: number of slots ``N_max``.
    :param T_units: scheduling interval T in whole units.
    :param unit_s: the length of one unit (s).
    :param epoch_s: decision epoch length D (s); a whole number of intervals.
    :param horizon: number of epochs H.
    """

    def __init__(self, device: Device, *, max_apps: int, T_units: int, unit_s: float, epoch_s: float,
                 horizon: int) -> None:
        rounds = epoch_s / (T_units * unit_s)
        if not math.isfinite(rounds):  # a subnormal unit_s or a huge epoch_s: no whole number of intervals
            raise ValueError(f"epoch_s / (T_units * unit_s) must be a finite whole number of intervals, got "
                             f"epoch_s={epoch_s}, unit_s={unit_s}, T_units={T_units}")
        if abs(rounds - round(rounds)) > 1e-9 or round(rounds) < 1:
            raise ValueError(
                f"epoch_s must be a whole number (>= 1) of intervals T_units*unit_s = {T_units * unit_s} s, "
                f"got epoch_s={epoch_s}"
            )
        self.device = device
        self.max_apps = int(max_apps)
        self.T_units = int(T_units)
        self.unit_s = float(unit_s)
        self.epoch_s = float(epoch_s)
        self.horizon = int(horizon)
        self._seconds_per_unit = self.epoch_s / self.T_units
        n = self.max_apps
        self.active = [False] * n
        self.weight = [1.0] * n
        self.power_w = [1.0] * n
        self.service_s = [1.0] * n
        self.demand_units = [math.inf] * n
        self.frequency_mhz = [0.0] * n
        self.slot_app = [-1] * n  # index in self.apps, -1 if free
        self.apps: list[InferenceApp] = []
        self.epoch = 0
        self.membership_changed = False  # the last advance() saw an app arrive or leave
        self.check_units = True  # validate apply()'s units (the envs build them whole and within T: they skip it)
        self._applied = False  # an epoch ran since the last advance()
        self._params_cache: BoundedCache[tuple[float, float]] = BoundedCache()  # per app: its profile lookups

    # --- episode control -----------------------------------------------------------------------
    def reset(self, rng: np.random.Generator | None, instance: Sequence[InferenceApp] | None = None) -> None:
        """Start an episode on the apps ``instance`` (their arrival/departure epochs form the timeline).

        The env draws the apps (a random mix, random frequencies) from its own generator; the fluid model
        draws nothing, so ``rng`` is unused.
        """
        if instance is None:
            raise ValueError("ETFSimulator.reset needs the episode's apps (instance=[InferenceApp, ...]); the env "
                             "draws them from its scenario")
        self.apps = list(instance)
        if not self.apps:
            raise ValueError("apps must hold at least one application")
        m = len(self.apps)
        n = self.max_apps
        self.active[:] = [False] * n
        self.slot_app[:] = [-1] * n
        # Free slots show the same defaults in every episode: stale values of the previous episode's
        # occupants would leak into info["scheduler_inputs"] and break same-seed determinism.
        self.weight[:] = [1.0] * n
        self.power_w[:] = [1.0] * n
        self.service_s[:] = [1.0] * n
        self.demand_units[:] = [math.inf] * n
        self.frequency_mhz[:] = [0.0] * n
        self.epoch = 0
        self.app_time_s = [0.0] * m
        self.app_energy_j = [0.0] * m
        self.app_inferences = [0.0] * m
        self.app_epochs = [0] * m
        self._app_totals = (self.app_time_s, self.app_energy_j, self.app_inferences, self.app_epochs)
        self.app_weight = [a.weight for a in self.apps]
        params = self._params_cache
        self.app_params = [params.get_or_compute(a, lambda a=a: a.service_time_and_power(self.device))
                           for a in self.apps]
        self._frequency_cache: dict[tuple[int, float], tuple[float, float, float]] = {}
        self.history: list[tuple[tuple[int, ...], tuple[float, ...]]] = []  # (units, power_w) per epoch
        self._arrivals = sorted(range(m), key=lambda k: (self.apps[k].arrival, k))
        self._next_arrival = 0
        self._applied = False
        self.membership_changed = self._update_membership()

    @property
    def done(self) -> bool:
        """No app is present and none will arrive (a dynamic scenario that has emptied)."""
        return not any(self.active) and self._next_arrival >= len(self._arrivals)

    @property
    def truncated(self) -> bool:
        return self.epoch >= self.horizon

    def active_mask(self) -> np.ndarray:
        return np.array(self.active, dtype=bool)

    def view(self) -> Mapping[str, Any]:
        """The per-slot state a scheduler decides on: a read-only snapshot (a mapping proxy of tuples), with
        ``T_units`` and ``max_apps``."""
        return MappingProxyType({
            "active": tuple(self.active), "weight": tuple(self.weight), "power_w": tuple(self.power_w),
            "service_s": tuple(self.service_s), "demand_units": tuple(self.demand_units),
            "frequency_mhz": tuple(self.frequency_mhz), "slot_app": tuple(self.slot_app), "epoch": self.epoch,
            "T_units": self.T_units, "max_apps": self.max_apps})

    def _update_membership(self) -> bool:
        """Apply departures then arrivals for the current epoch; True if the active set changed."""
        changed = False
        for slot in range(self.max_apps):
            if self.active[slot]:
                departure = self.apps[self.slot_app[slot]].departure
                if departure is not None and departure <= self.epoch:
                    self.active[slot] = False
                    self.slot_app[slot] = -1
                    changed = True
        while self._next_arrival < len(self._arrivals):
            k = self._arrivals[self._next_arrival]
            if self.apps[k].arrival > self.epoch:
                break
            if all(self.active):
                raise ValueError(
                    f"more than max_apps={self.max_apps} apps are present at epoch {self.epoch}; "
                    "raise max_apps or thin the timeline"
                )
            self._occupy(self.active.index(False), k)
            self._next_arrival += 1
            changed = True
        # The next epoch at which anything can change: advance() skips the scan until then.
        upcoming = [self.apps[self._arrivals[self._next_arrival]].arrival] if self._next_arrival < len(
            self._arrivals) else []
        upcoming += [d for slot, k in enumerate(self.slot_app) if k >= 0
                     and (d := self.apps[k].departure) is not None]
        self._next_event = min(upcoming, default=math.inf)
        return changed

    def _occupy(self, slot: int, app_index: int) -> None:
        app = self.apps[app_index]
        service_s, power_w = self.app_params[app_index]
        self.active[slot] = True
        self.slot_app[slot] = app_index
        self.weight[slot] = app.weight
        self.power_w[slot] = power_w
        self.service_s[slot] = service_s
        self.frequency_mhz[slot] = app.frequency_mhz
        self.demand_units[slot] = self.demand_for(app, service_s)

    def demand_for(self, app: InferenceApp, service_s: float) -> float:
        """Units per interval an open-loop app needs: rate x service time x T, rounded up; inf if backlogged."""
        if app.demand_rps is None:
            return math.inf
        busy_fraction = app.demand_rps * service_s
        return float(min(math.ceil(busy_fraction * self.T_units - 1e-9), self.T_units))

    def set_frequency(self, slot: int, frequency_mhz: float) -> None:
        """Per-app DVFS: move the occupant of ``slot`` to another level (the ``dvfs`` action mode)."""
        if not self.active[slot]:
            raise ValueError(f"slot {slot} is not active")
        key = (self.slot_app[slot], frequency_mhz)
        state = self._frequency_cache.get(key)
        if state is None:  # the profile lookups once per app and level and episode (a tenant revisits levels)
            app = self.apps[key[0]]
            service_s, power_w = self.tenant_profile(app, frequency_mhz)
            state = self._frequency_cache[key] = (service_s, power_w, self.demand_for(app, service_s))
        self.frequency_mhz[slot] = frequency_mhz
        self.service_s[slot], self.power_w[slot], self.demand_units[slot] = state

    def tenant_profile(self, app: InferenceApp, frequency_mhz: float) -> tuple[float, float]:
        """``(service s, W)`` of ``app`` at another level; a power override scales the whole curve."""
        profile = self.device.profile(app.model)
        service_s, power_w = profile.at(frequency_mhz)
        if app.power_w is not None:
            power_w *= app.power_w / profile.at(app.frequency_mhz)[1]
        return service_s, power_w

    # --- one epoch -----------------------------------------------------------------------------
    def _apply(self, units: Sequence[int]) -> EpochResult:
        """Run the current epoch with ``units`` per round per slot (ints, 0 on free slots, sum <= T).

        Validated unless :attr:`check_units` is off (the envs build ``units`` themselves).
        """
        active = self.active
        if self.check_units:
            units = self._checked_units(units)
        self._applied = True
        time_s, energy_j, inferences = run_epoch(SCALAR, units, self.power_w, self.service_s, self.slot_app,
                                                 self._seconds_per_unit, self._app_totals)
        if self.epoch < self.horizon:
            self.history.append((tuple(units), tuple(self.power_w)))
        return EpochResult(units, time_s, energy_j, inferences, list(active))

    def _checked_units(self, units: Sequence[int]) -> list[int]:
        if len(units) != self.max_apps:
            raise ValueError(f"units must have length {self.max_apps}, got {len(units)}")
        if any(int(u) != u for u in units):
            raise ValueError(f"units must be whole numbers, got {list(units)}")
        units = [int(u) for u in units]
        if sum(units) > self.T_units or min(units) < 0 or any(u and not a for u, a in zip(units, self.active)):
            raise ValueError(f"units must be >= 0, 0 on free slots and sum to <= T={self.T_units}, got {units}")
        return units

    def advance(self) -> bool:
        """Move to the next epoch once the current one ran (a no-op before the first :meth:`apply` of an
        episode: reset leaves the simulator at its first decision point); ``True`` while the episode goes on.
        :attr:`membership_changed` says whether the active set changed."""
        if self._applied:
            self._applied = False
            self.epoch += 1
            self.membership_changed = self.epoch >= self._next_event and self._update_membership()
        else:
            self.membership_changed = False
        return not (self.done or self.truncated)

    # --- results -------------------------------------------------------------------------------
    def metrics(self) -> dict[str, float | tuple[float, ...]]:
        """The paper's metrics over the run so far (paper §6.1): :func:`run_metrics` of the accumulators."""
        return run_metrics(self.app_time_s, self.app_energy_j, self.app_inferences, self.app_epochs,
                           self.app_weight, self.epoch, self.epoch_s)

    def history_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(units, time_s, energy_j)`` per epoch x slot, for plots."""
        if not self.history:
            zeros = np.zeros((0, self.max_apps))
            return zeros.astype(np.int64), zeros, zeros
        units = np.array([h[0] for h in self.history], dtype=np.int64)
        power = np.array([h[1] for h in self.history])
        time_s = units * self._seconds_per_unit
        return units, time_s, time_s * power


def run_metrics(app_time_s: Sequence[float], app_energy_j: Sequence[float], app_inferences: Sequence[float],
                app_epochs: Sequence[int], app_weight: Sequence[float], epoch: int,
                epoch_s: float) -> dict[str, float | tuple[float, ...]]:
    """The paper's metrics over a run so far (paper §6.1), over every app present so far (index = app).

    Time and energy are normalised by weight and by the number of epochs each app was present, so that apps
    with different lifetimes (Fig. 9, random mix) are compared as rates; for the static scenarios this is
    exactly the paper's F_T / F_E over the whole run. Jain's index of the same normalised values is an extra.
    Per-app totals are tuples. One function for the single env and the batched vector env (the same bits).
    """
    time_rate, energy_rate = [], []
    for time_s, energy_j, epochs, weight in zip(app_time_s, app_energy_j, app_epochs, app_weight):
        if epochs:
            inv = 1.0 / (epochs * weight)
            time_rate.append(time_s * inv)
            energy_rate.append(energy_j * inv)
    f_t, f_e = min_max(time_rate), min_max(energy_rate)
    total_energy = sum(app_energy_j)
    elapsed = max(epoch, 1) * epoch_s
    return {
        "time_fairness": f_t,
        "energy_fairness": f_e,
        "system_fairness": min(f_t, f_e),
        "jain_time": jain(time_rate),
        "jain_energy": jain(energy_rate),
        "total_energy_j": total_energy,
        "gpu_utilisation": sum(app_time_s) / elapsed,
        # Per-app tuples, not arrays: their length is the episode's app count, which varies across the
        # sub-envs of a vector env (random mix); Gymnasium's vector info merge stacks same-named arrays and
        # fails on unequal shapes, while tuples become an object array.
        "app_time_s": tuple(app_time_s),
        "app_energy_j": tuple(app_energy_j),
        "app_inferences": tuple(app_inferences),
    }
