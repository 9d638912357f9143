"""What the three ETF shells share: config, observation encoding, epoch fairness, info, rendering.

Spec §9.2 fixes the observation: ``N_max`` slots x 9 features plus 6 globals (float32):

=====  =====================================================================================
slot   feature
=====  =====================================================================================
0      active (1/0)
1      w_i / W (W over active apps)
2      P_i / max_active P
3      min(d_i / T, 1) (1 = backlogged)
4      Algorithm 1's guarantee m_i / T at the env's phi (``floor(phi*w_i*T/W)`` capped by demand), in
       every ``guarantee_mode`` (with ``"none"`` it is information, not a floor of the action)
5      weighted-EF time share (w_i/P_i) / sum_k(w_k/P_k)
6      last epoch's time share u_i / T
7      last epoch's weighted energy E_i/w_i over the max of the active apps
8      cumulative weighted energy of the current occupant over the sum of the active apps
=====  =====================================================================================

Globals: phi, t/H, N_active/N_max, last F_T, last F_E, log10(P_max/P_min). Every input Algorithm 1
needs is there, so ETF is a function of the observation; ``info["scheduler_inputs"]`` carries the
same inputs at full precision for reference policies that must match Algorithm 1 bit for bit
(``guarantee_units`` = feature 4 in units; ``action_floor_units`` = what ``ETF-v0``'s action cannot
go below: the guarantee with ``guarantee_mode="project"``, zeros with ``"none"``).
``info["slot_apps"]`` names the occupant of each slot (``"A2 resnet50@1032.75MHz"``, ``""`` if free)
during the epoch that ``info["allocation_units"]`` describes; plots use it for their legends.

The per-epoch path works on plain lists (a handful of slots: list arithmetic beats numpy's per-call
overhead several times); only membership changes touch numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from joulegym.devices import get_device
from joulegym.envs.base import (
    LegacyEnv as JoulegymEnv,
    check_choice,
    check_positive,
    check_unit_interval,
    new_figure,
)
from joulegym.envs.etf.allocation import _clip_level_solve, etf_allocate, guaranteed_units
from joulegym.envs.etf.metrics import min_max
from joulegym.envs.etf.simulator import EpochResult, ETFSimulator
from joulegym.scenarios.etf import FIG5_APPS, SCENARIOS
from joulegym.workloads.inference import InferenceApp, random_mix

SLOT_FEATURES = 9
GLOBAL_FEATURES = 6
GUARANTEE_MODES = ("project", "none")
REWARD_WINDOWS = ("epoch", "cumulative")


class ETFBaseEnv(JoulegymEnv):
    """Config, simulator, observation and info shared by ``ETF``, ``ETFPhi`` and ``ETFDVFS``."""

    family: ClassVar[str] = "etf"
    scenarios = SCENARIOS
    reward_modes: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def default_config(cls) -> dict[str, Any]:
        """Defaults: the Fig. 5 apps (ResNet50@1300.5 vs MobileNetV2@726.75 on a TX2), phi = 0.7.

        ===========================  ===============================================================
        key                          meaning
        ===========================  ===============================================================
        device                       device preset name (``jetson-tx2``, ``a10g``, ``toy-etf``)
        apps                         list of app dicts (:class:`~joulegym.workloads.InferenceApp`)
        mix                          ``None`` or kwargs of :func:`~joulegym.workloads.random_mix`
                                     (apps drawn at every reset instead of ``apps``)
        random_frequency_apps        indices of ``apps`` whose frequency is drawn at reset (Fig. 6)
        phi                          time-fair factor in [0, 1]
        phi_choices                  ``None`` or a list: phi drawn from it at every reset
        T_units, unit_s              scheduling interval T in units, and one unit in s (40 x 1 ms)
        epoch_s                      decision epoch D in s (a whole number of intervals)
        horizon                      epochs per episode H
        max_apps                     slots N_max
        guarantee_mode               ETF: ``project`` (the agent splits T - sum m_i) or ``none``
        reward                       reward mode; ``None`` = the kind's default
        reward_window                ``epoch`` or ``cumulative`` (fairness over the run so far)
        beta                         weight of F_T in the ``scalarized`` reward
        phi_levels                   ETFPhi: number of phi levels in [0, 1] (11 = steps of 0.1)
        scheduler                    ETFDVFS: the fixed scheduler ``etf`` / ``tf`` / ``ef``
        tenant_app                   ETFDVFS: index in ``apps`` of the tenant that picks its frequency
        energy_penalty               ETFDVFS: reward = inferences/s - energy_penalty * W
        ===========================  ===============================================================
        """
        return {
            "scenario": None,
            "device": "jetson-tx2",
            "apps": [dict(a) for a in FIG5_APPS],
            "mix": None,
            "random_frequency_apps": [],
            "phi": 0.7,
            "phi_choices": None,
            "T_units": 40,
            "unit_s": 0.001,
            "epoch_s": 1.0,
            "horizon": 60,
            "max_apps": 4,
            "guarantee_mode": "project",
            "reward": None,
            "reward_window": "epoch",
            "beta": 0.5,
            "phi_levels": 11,
            "scheduler": "etf",
            "tenant_app": 0,
            "energy_penalty": 0.0,
        }

    def __init__(self, scenario: str | None = None, render_mode: str | None = None, **overrides: Any) -> None:
        super().__init__(scenario=scenario, render_mode=render_mode, **overrides)
        self._validate_config()
        cfg = self.config
        self.device = get_device(cfg["device"])
        self.max_apps = int(cfg["max_apps"])
        self.T = int(cfg["T_units"])
        self.horizon = int(cfg["horizon"])
        self.sim = ETFSimulator(self.device, max_apps=self.max_apps, T_units=self.T, unit_s=cfg["unit_s"],
                                epoch_s=cfg["epoch_s"], horizon=self.horizon)
        self._fixed_apps = [InferenceApp.from_config(a) for a in cfg["apps"]] if cfg["mix"] is None else []
        for app in self._fixed_apps:
            app.service_time_and_power(self.device)  # an unknown model or frequency fails here
        if cfg["mix"] is not None:
            for model in cfg["mix"].get("models", ()):
                self.device.profile(model)
        self.observation_space = gym.spaces.Box(0.0, np.inf, (self.obs_size,), dtype=np.float32)
        self.phi = float(cfg["phi"])
        self._membership_version = 0
        self._derived_cache: dict[tuple, tuple] = {}

    # --- config -----------------------------------------------------------------------------------
    def _validate_config(self) -> None:
        cfg = self.config
        cfg["phi"] = check_unit_interval("phi", cfg["phi"])
        if cfg["phi_choices"] is not None:
            if not cfg["phi_choices"]:
                raise ValueError("phi_choices must be None or a non-empty list of values in [0, 1]")
            cfg["phi_choices"] = [check_unit_interval("phi_choices[]", v) for v in cfg["phi_choices"]]
        for key in ("T_units", "horizon", "max_apps", "phi_levels"):
            least = 2 if key == "phi_levels" else 1
            value = cfg[key]
            if not isinstance(value, int | float) or int(value) != value or value < least:
                raise ValueError(f"{key} must be a whole number >= {least}, got {value!r}")
            cfg[key] = int(value)
        check_positive("unit_s", cfg["unit_s"])
        check_positive("epoch_s", cfg["epoch_s"])
        check_positive("energy_penalty", cfg["energy_penalty"], allow_zero=True)
        check_choice("guarantee_mode", cfg["guarantee_mode"], GUARANTEE_MODES)
        check_choice("reward_window", cfg["reward_window"], REWARD_WINDOWS)
        cfg["beta"] = check_unit_interval("beta", cfg["beta"])
        if cfg["reward"] is None:
            cfg["reward"] = self.default_reward()
        check_choice("reward", cfg["reward"], self.reward_modes)
        if cfg["mix"] is None:
            if not cfg["apps"]:
                raise ValueError("apps must list at least one app (or set mix for a random mix)")
            for index in cfg["random_frequency_apps"]:
                if not 0 <= int(index) < len(cfg["apps"]):
                    raise ValueError(f"random_frequency_apps holds {index}, not an index of apps")
        elif not isinstance(cfg["mix"], dict):
            raise ValueError(f"mix must be None or a dict of random_mix kwargs, got {cfg['mix']!r}")

    def default_reward(self) -> str:
        return self.reward_modes[0]

    @property
    def obs_size(self) -> int:
        return self.max_apps * SLOT_FEATURES + GLOBAL_FEATURES

    @property
    def uses_guarantee(self) -> bool:
        """Whether Algorithm 1's time guarantee is part of the action's semantics."""
        return True

    # --- episode ----------------------------------------------------------------------------------
    def _draw_apps(self) -> list[InferenceApp]:
        cfg = self.config
        rng = self.np_random
        if cfg["mix"] is not None:
            return random_mix(rng, self.device, horizon=self.horizon, max_apps=self.max_apps, **cfg["mix"])
        apps = list(self._fixed_apps)
        levels = self.device.frequencies.levels_mhz
        for index in cfg["random_frequency_apps"]:
            app = apps[index].as_config()
            app["frequency_mhz"] = float(levels[int(rng.integers(len(levels)))])
            apps[index] = InferenceApp(**app)
        return apps

    def _reset_sim(self, seed: int | None) -> None:
        gym.Env.reset(self, seed=seed)
        cfg = self.config
        self.phi = float(self.np_random.choice(cfg["phi_choices"])) if cfg["phi_choices"] else cfg["phi"]
        self.sim.reset(self._draw_apps())
        n = self.max_apps
        self.last_units = [0] * n
        self.last_time_fairness = 1.0
        self.last_energy_fairness = 1.0
        self._slot_energy = [0.0] * n  # cumulative weighted energy of the current occupants
        self._slot_owner = [-1] * n
        self._dynamic = [[0.0, 0.0, 0.0] for _ in range(n)]  # features 6-8 per slot
        self._slot_labels_seen: list[list[str]] = [[] for _ in range(n)]  # occupants this episode (plots)
        # The version restarts every episode: info["scheduler_inputs"] must be the same for the same
        # seed (check_env, vector-env determinism). Caches keyed on it are cleared at reset.
        self._membership_version = 0
        self._refresh_membership()

    def _refresh_membership(self) -> None:
        """Recompute what depends only on the active set (and phi / frequencies)."""
        sim = self.sim
        n = self.max_apps
        self._membership_version += 1
        for slot in range(n):
            if sim.slot_app[slot] != self._slot_owner[slot]:  # a new occupant starts from zero
                self._slot_energy[slot] = 0.0
                self._dynamic[slot] = [0.0, 0.0, 0.0]
        self._slot_owner = list(sim.slot_app)
        key = (tuple(sim.active), tuple(sim.weight), tuple(sim.power_w), tuple(sim.demand_units), self.phi,
               self.uses_guarantee)
        derived = self._derived_cache.get(key)
        if derived is None:  # the same app set recurs across epochs and resets: compute it once
            if len(self._derived_cache) > 4096:
                self._derived_cache.clear()
            derived = self._derived_cache[key] = self._membership_features()
        self._static, self.guarantee, self.action_floor, self._room, self.ef_level, self._disparity = derived
        labels = tuple(self._app_label(k) if k >= 0 else "" for k in sim.slot_app)
        self._slot_apps = labels
        for seen, label in zip(self._slot_labels_seen, labels, strict=True):
            if label and label not in seen:
                seen.append(label)
        # Tuples: immutable, so every step's info can share them (no per-step array copies).
        self._scheduler_inputs = {
            "active": tuple(sim.active),
            "weights": tuple(sim.weight),
            "power_w": tuple(sim.power_w),
            "demand_units": tuple(sim.demand_units),
            "guarantee_units": tuple(self.guarantee),
            "action_floor_units": tuple(self.action_floor),
            "T_units": self.T,
            "phi": self.phi,
            "frequency_mhz": tuple(sim.frequency_mhz),
            "version": self._membership_version,
        }

    def _app_label(self, app_index: int) -> str:
        """A human name for app ``app_index`` of the episode (legends, ``info["slot_apps"]``)."""
        app = self.sim.apps[app_index]
        return f"A{app_index + 1} {app.model}@{app.frequency_mhz:g}MHz"

    def _membership_features(self) -> tuple[list, list[int], list[int], list[int], float, float]:
        """Static slot features, Algorithm 1's guarantees m_i, the action's floor (m_i or 0), the room
        above the floor, the EF level and the log power disparity."""
        sim = self.sim
        n = self.max_apps
        act = sim.active_mask()
        weight, power = np.array(sim.weight), np.array(sim.power_w)
        demand = np.array(sim.demand_units)
        guarantee = np.zeros(n, dtype=np.int64)
        static = np.zeros((n, 6))
        ef_level = disparity = 0.0
        if act.any():
            w, p, d = weight[act], power[act], demand[act]
            guarantee[act] = guaranteed_units(w, d, self.T, self.phi)
            ef = w / p
            static[act] = np.column_stack([
                np.ones(w.size), w / w.sum(), p / p.max(), np.minimum(d / self.T, 1.0),
                guarantee[act] / self.T, ef / ef.sum(),
            ])
            # The weighted-EF level with demand caps (units x W per weight): the "etf" reward's 1.0.
            caps = np.minimum(d, self.T)
            ef_units = _clip_level_solve(ef, np.zeros_like(w), caps, float(self.T))
            open_ = ef_units < caps - 1e-9
            ef_level = float((ef_units * p / w)[open_].min()) if open_.any() else 0.0
            disparity = float(np.log10(p.max() / p.min()))
        guarantee_list = guarantee.tolist()
        floor = guarantee_list if self.uses_guarantee else [0] * n
        room = [int(min(d, self.T)) - g if a else 0
                for d, g, a in zip(sim.demand_units, floor, sim.active, strict=True)]
        return static.tolist(), guarantee_list, floor, room, ef_level, disparity

    # --- one epoch --------------------------------------------------------------------------------
    def _apply_epoch(self, units: list[int]) -> tuple[EpochResult, float, float]:
        """Run the current epoch with ``units``; returns (result, epoch F_T, epoch F_E)."""
        sim = self.sim
        result = sim.apply(units, check=False)  # built by the env: whole units within T
        self._epoch_slot_apps = self._slot_apps  # who ran this epoch (membership may change next)
        weight, energy, slot_energy = sim.weight, result.energy_j, self._slot_energy
        slots = [k for k, a in enumerate(result.active) if a]
        if slots:
            time_norm = [units[k] / weight[k] for k in slots]
            energy_norm = [energy[k] / weight[k] for k in slots]
            f_t, f_e = min_max(time_norm), min_max(energy_norm)
            for k, e in zip(slots, energy_norm, strict=True):
                slot_energy[k] += e
            e_max = max(energy_norm)
            total = sum(slot_energy[k] for k in slots)
            inv_e = 1.0 / e_max if e_max > 0 else 0.0
            inv_total = 1.0 / total if total > 0 else 0.0
            inv_t = 1.0 / self.T
            for k, e in zip(slots, energy_norm, strict=True):
                self._dynamic[k] = [units[k] * inv_t, e * inv_e, slot_energy[k] * inv_total]
        else:
            f_t = f_e = 1.0
        self.last_units = units
        self.last_time_fairness, self.last_energy_fairness = f_t, f_e
        return result, f_t, f_e

    def _advance_epoch(self) -> bool:
        """Move to the next epoch (arrivals/departures); True if the active set changed."""
        changed = self.sim.advance()
        if changed:
            self._refresh_membership()
        return changed

    def _observation(self) -> np.ndarray:
        flat: list[float] = []
        for static, dynamic in zip(self._static, self._dynamic, strict=True):
            flat += static
            flat += dynamic
        sim = self.sim
        flat += (self.phi, min(sim.epoch / self.horizon, 1.0), sum(sim.active) / self.max_apps,
                 self.last_time_fairness, self.last_energy_fairness, self._disparity)
        return np.array(flat, dtype=np.float32)

    def _fairness_reward(self, f_t: float, f_e: float, metrics: dict[str, Any]) -> float:
        """``system_fairness`` / ``scalarized`` rewards, over the epoch or the run so far."""
        if self.config["reward_window"] == "cumulative":
            f_t, f_e = metrics["time_fairness"], metrics["energy_fairness"]
        if self.config["reward"] == "scalarized":
            beta = self.config["beta"]
            return beta * f_t + (1.0 - beta) * f_e
        return min(f_t, f_e)

    def _info(self, result: EpochResult | None, f_t: float, f_e: float) -> dict[str, Any]:
        info: dict[str, Any] = {
            "metrics": self.sim.metrics(),
            "reward_vector": np.array([f_t, f_e]),
            "time_fairness": f_t,
            "energy_fairness": f_e,
            "system_fairness": min(f_t, f_e),
            "phi": self.phi,
            "scheduler_inputs": dict(self._scheduler_inputs),
            "slot_apps": self._slot_apps,
        }
        if result is not None:  # this epoch, per slot (tuples: immutable, cheap)
            info["slot_apps"] = self._epoch_slot_apps
            info["allocation_units"] = tuple(result.units)
            info["app_time_s"] = tuple(result.time_s)
            info["app_energy_j"] = tuple(result.energy_j)
            info["app_inferences"] = tuple(result.inferences)
        return info

    # --- rendering --------------------------------------------------------------------------------
    def _render_ansi(self) -> str:
        sim = self.sim
        lines = [f"{self.kind} epoch {sim.epoch}/{self.horizon}  phi={self.phi:.2f}  "
                 f"F_T={self.last_time_fairness:.3f}  F_E={self.last_energy_fairness:.3f}",
                 "slot  model               MHz      P(W)    w   units  cumE/w(J)"]
        for slot in range(self.max_apps):
            if not sim.active[slot]:
                lines.append(f"{slot:>4}  (free)")
                continue
            app = sim.apps[sim.slot_app[slot]]
            lines.append(
                f"{slot:>4}  {app.model:<18} {sim.frequency_mhz[slot]:>7.2f} {sim.power_w[slot]:>7.3f} "
                f"{sim.weight[slot]:>4.1f} {int(self.last_units[slot]):>6}  {self._slot_energy[slot]:>9.3f}"
            )
        return "\n".join(lines)

    def _render_figure(self):
        _, time_s, energy_j = self.sim.history_arrays()
        epochs = max(time_s.shape[0], 1)
        if not time_s.shape[0]:
            time_s = energy_j = np.zeros((1, self.max_apps))
        fig, axes = new_figure(2, 1, size=(8.0, 4.8))
        time_share = time_s / self.config["epoch_s"]
        energy_share = energy_j / np.maximum(energy_j.sum(axis=1, keepdims=True), 1e-12)
        x = np.arange(epochs)
        used = [k for k, seen in enumerate(self._slot_labels_seen) if seen] or list(range(self.max_apps))
        labels = slot_legend_labels(self._slot_labels_seen)
        for ax, data, label in ((axes[0, 0], time_share, "GPU time share"),
                                (axes[1, 0], energy_share, "energy share")):
            ax.stackplot(x, data[:, used].T, labels=[labels[k] for k in used], step="post")
            ax.set_ylabel(label)
            ax.set_ylim(0, 1)
        axes[1, 0].set_xlabel("epoch")
        axes[0, 0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7)
        axes[0, 0].set_title(f"{self.kind} {self.config.get('scenario') or ''} phi={self.phi:.2f}")
        fig.tight_layout()
        return fig


def slot_legend_labels(seen: Sequence[Sequence[str]], max_names: int = 2) -> list[str]:
    """One legend entry per slot from the occupants it had over an episode, in order of arrival.

    A slot with one occupant is labelled by it (``"A1 resnet50@1300.5MHz"``); a reused slot (dynamic and
    random scenarios) lists its first ``max_names`` occupants and how many more there were.
    """
    labels = []
    for slot, names in enumerate(seen):
        if not names:
            labels.append(f"slot {slot} (free)")
        elif len(names) == 1:
            labels.append(names[0])
        else:
            more = f", +{len(names) - max_names} more" if len(names) > max_names else ""
            labels.append(f"slot {slot}: " + ", ".join(names[:max_names]) + more)
    return labels


def algorithm1_units(sim: ETFSimulator, phi: float) -> list[int]:
    """Algorithm 1 over the simulator's active slots, as a per-slot list (0 on free slots)."""
    act = sim.active_mask()
    units = np.zeros(sim.max_apps, dtype=np.int64)
    if act.any():
        units[act] = etf_allocate(np.array(sim.weight)[act], np.array(sim.demand_units)[act],
                                  np.array(sim.power_w)[act], sim.T_units, phi)
    return units.tolist()
