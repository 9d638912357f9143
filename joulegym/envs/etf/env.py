"""The ETF env: one GPU time-shared by model-serving tenants, each at its own GPU frequency (Liang et al., SEC '23).

One env class per decision problem on the core template (``docs/families/etf.md`` has the model, the equations
and the errata we chose): :class:`ETFEnv` (``ETF``: the agent allocates the interval), :class:`ETFPhiEnv`
(``ETFPhi``: the agent sets the operator's phi and Algorithm 1 allocates) and :class:`ETFDVFSEnv` (``ETFDVFS``:
the agent is one tenant picking its GPU level under a fixed scheduler). They share the simulator, the slot
features and the config keys (one scenario serves several kinds); each has one action type.

==================  =========================================================================================
Kind / mode         ``joulegym/ETF-v0`` (``split``), ``joulegym/ETFPhi-v0`` (``phi``), ``joulegym/ETFDVFS-v0``
                    (``dvfs``); :mod:`joulegym.envs.etf.actions`
Step                one decision epoch (``epoch_s`` = 1 s): ``epoch_s / (T_units * unit_s)`` identical
                    scheduling intervals of ``T_units`` = 40 units of 1 ms
Action              ``split``: ``Box(0, 1, (max_apps,))`` shares of the interval above the action's floor
                    (Algorithm 1's guarantee with ``guarantee_mode="project"``, nothing with ``"none"``);
                    ``phi``: ``Discrete(phi_levels)``, phi = k / (phi_levels - 1), Algorithm 1 allocates;
                    ``dvfs``: ``Discrete(levels)``, the GPU level of tenant ``tenant_app`` under the fixed
                    ``scheduler`` (``etf`` = Algorithm 1 at phi, ``tf`` = phi 1, ``ef`` = phi 0)
Observation         ``Box(0, high, (9*max_apps + 6,), float32)`` (below; ``high`` 1, and 3 for the log
                    disparity); ``dvfs`` appends ``max_apps + 2``
                    features: the tenant's slot (one-hot), its level / (levels - 1), its last throughput x its
                    fastest service time
Reward parts        ``split``/``phi``: ``time_fairness`` F_T, ``energy_fairness`` F_E, ``system_fairness``
                    F_S = min(F_T, F_E) (of the epoch, or of the run so far with ``reward_window=
                    "cumulative"``), ``etf_objective`` (min over unsaturated apps of E_i/w_i over the
                    weighted-EF level, in [0, 1]; Algorithm 1 maximises it, paper Thm. 3), all in [0, 1].
                    ``dvfs``: ``throughput`` (the tenant's inferences/s), ``power`` (minus its mean W)
Presets             ``split``: ``etf`` = {etf_objective: 1} (default with ``guarantee_mode="project"``),
                    ``system_fairness`` = {system_fairness: 1} (default with ``"none"``), ``scalarized`` =
                    {time_fairness: 0.5, energy_fairness: 0.5}; ``phi``: ``system_fairness`` (default),
                    ``scalarized``; ``dvfs``: ``throughput`` = {throughput: 1}
Starting state      the scenario's apps present at epoch 0 (a random mix, a random frequency or a random phi
                    are drawn from the seed)
Termination         a dynamic scenario whose apps have all left with none to come (never in ``dvfs``)
Truncation          after ``horizon`` epochs (default 60)
Info                lean (the default): the core's ``reward_parts``, ``repaired``, ``action_mask`` (``phi``/``dvfs``)
                    and ``metrics`` (last step). ``info_level="full"`` adds ``phi``; ``scheduler_inputs`` (Algorithm
                    1's exact inputs per slot: ``active``, ``weights``, ``power_w``, ``demand_units``,
                    ``guarantee_units``, ``action_floor_units``, ``T_units``, ``phi``, ``nominal_phi``,
                    ``frequency_mhz``); ``slot_apps`` (who held each slot during the epoch, e.g. ``"A2
                    mobilenetv2@726.75MHz"``); the epoch's ``allocation_units``, ``app_time_s``, ``app_energy_j``,
                    ``app_inferences`` per slot (zeros at reset); ``dvfs``: ``tenant_frequency_mhz``
Vector env          every id's ``vector_entry_point`` is :class:`joulegym.envs.etf.vector.ETFVectorEnv` (batched)
==================  =========================================================================================

Observation, per slot (``max_apps`` slots x 9): 0 active; 1 ``w_i / W``; 2 ``P_i / max P``; 3
``min(d_i / T, 1)`` (1 = backlogged); 4 Algorithm 1's guarantee ``m_i / T`` at the env's phi (in every mode
and ``guarantee_mode``); 5 the weighted-EF share ``(w_i/P_i) / sum_k(w_k/P_k)``; 6 last epoch's time share;
7 last epoch's weighted energy over the max of the active apps; 8 the current occupant's cumulative
weighted energy over the sum of the active apps. Globals: phi, t/H, N_active/N_max, last F_T, last F_E,
log10(P_max/P_min). Every input of Algorithm 1 is there, so the ETF policy is a function of the
observation; ``info["scheduler_inputs"]`` (``info_level="full"``) carries the same inputs at full precision.

Version history (``-v0`` throughout): the three kinds were one class with ``action_mode`` and are one class each
per decision problem again (same ids, kwargs and trajectories); the reward
knobs ``beta`` and ``energy_penalty`` gave way to ``reward_weights``; ``info["reward_vector"]``,
``info["action_repaired"]``, the per-step ``info["metrics"]`` and the epoch ``time_fairness`` /
``energy_fairness`` / ``system_fairness`` info keys gave way to the core's ``reward_parts``, ``repaired``
and end-of-episode ``metrics``; the phi and frequency sweeps became the ``phi`` and
``app_frequencies_mhz`` kwargs. Trajectories and default rewards are unchanged. Later, still ``-v0``: the
observation space is bounded (``high`` 1 for the shares and fractions, 3 for ``log10(P_max/P_min)``, which is
clipped there, and the tenant's throughput feature clipped at 1; the values of every scenario are unchanged) and
``observation_names`` names each value.

The per-epoch path works on plain lists (a handful of slots: list arithmetic beats numpy's per-call
overhead); only membership changes touch numpy, and what depends only on the active set is cached by content.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from joulegym.core.cache import BoundedCache
from joulegym.core.config import (
    check_choice,
    check_int,
    check_keys,
    check_positive,
    check_unit_interval,
    check_unit_interval_list,
)
from joulegym.core.env import JoulegymEnv, row_names
from joulegym.core.plotting import new_figure
from joulegym.core.rewards import RewardPart, RewardSpec
from joulegym.devices import get_device
from joulegym.envs.etf.actions import DVFSAction, PhiAction, SplitAction
from joulegym.envs.etf.allocation import _clip_level_solve, etf_allocate, guaranteed_units
from joulegym.envs.etf.epoch import SCALAR, epoch_fairness, epoch_features, epoch_shares, etf_objective
from joulegym.envs.etf.simulator import EpochResult, ETFSimulator
from joulegym.workloads.inference import FIG5_APPS, InferenceApp, check_mix, random_mix

SLOT_FEATURE_NAMES = ("active", "weight_share", "power_share", "demand", "guarantee", "ef_share", "time_share",
                      "energy_share", "cum_energy_share")  # the module docstring's slot features 0-8
GLOBAL_FEATURE_NAMES = ("phi", "time", "active_fraction", "last_time_fairness", "last_energy_fairness",
                        "log10_power_disparity")
SLOT_FEATURES = len(SLOT_FEATURE_NAMES)
GLOBAL_FEATURES = len(GLOBAL_FEATURE_NAMES)
# log10(P_max / P_min) is clipped here (a 1000x power ratio; Fig. 6's widest is 7.9x, log10 = 0.9): the one
# observation value that is not a share or a fraction in [0, 1]. Our bound, not the paper's.
DISPARITY_HIGH = 3.0
GUARANTEE_MODES = ("project", "none")
REWARD_WINDOWS = ("epoch", "cumulative")
SCHEDULERS = {"etf": None, "tf": 1.0, "ef": 0.0}  # the dvfs mode's fixed scheduler -> its phi (None: the env's)
MAX_APPS_LIMIT = 256  # slots; bounds the observation and the per-epoch work (fail fast, not a minutes-long hang)
# Our bound (not the paper's): phi in steps of 1e-4 is finer than any operator knob, and the action space and its
# mask hold one entry per level (a huge count overflowed Discrete or allocated gigabytes at reset).
PHI_LEVELS_LIMIT = 10_001
MIX_KEYS = tuple(n for n in inspect.signature(random_mix).parameters if n not in ("rng", "device", "horizon",
                                                                                    "max_apps"))
# Keys that only one or two action modes read: set on another mode they raise (a scenario's own value is
# allowed, since one scenario serves several kinds).
MODE_KEYS: dict[str, tuple[str, ...]] = {
    "guarantee_mode": ("split",),
    "reward_window": ("split", "phi"),
    "phi_levels": ("phi",),
    "scheduler": ("dvfs",),
    "tenant_app": ("dvfs",),
}
KIND_OF_MODE = {"split": "ETF", "phi": "ETFPhi", "dvfs": "ETFDVFS"}

FAIRNESS_PARTS = (
    RewardPart("time_fairness", 0.0, 1.0, "F_T: min/max of weight-normalised GPU time (epoch or run so far)"),
    RewardPart("energy_fairness", 0.0, 1.0, "F_E: min/max of weight-normalised energy (epoch or run so far)"),
    RewardPart("system_fairness", 0.0, 1.0, "F_S = min(F_T, F_E), the paper's metric"),
    RewardPart("etf_objective", 0.0, 1.0,
               "min over unsaturated apps of E_i/w_i over the weighted-EF level (Algorithm 1 maximises it)"),
)
SPLIT_PRESETS = {
    "etf": {"etf_objective": 1.0},
    "system_fairness": {"system_fairness": 1.0},
    "scalarized": {"time_fairness": 0.5, "energy_fairness": 0.5},
}
PHI_PRESETS = {name: SPLIT_PRESETS[name] for name in ("system_fairness", "scalarized")}
DVFS_PRESETS = {"throughput": {"throughput": 1.0}}
BOUND_SLACK = 1e-6  # relative: float round-off of a part against its analytic bound


class ETFEnv(JoulegymEnv):
    """``ETF``: the agent splits each scheduling interval (above Algorithm 1's guarantee with
    ``guarantee_mode="project"``); the base of the other ETF kinds. See the module docstring."""

    family: ClassVar[str] = "etf"
    full_info_keys: ClassVar[tuple[str, ...]] = ("phi", "scheduler_inputs", "slot_apps", "allocation_units",
                                                 "app_time_s", "app_energy_j", "app_inferences")
    action_types: ClassVar[dict[str, type]] = {"split": SplitAction}
    reward_parts = FAIRNESS_PARTS  # ETFDVFSEnv builds its own (its bounds depend on the tenant)
    reward_presets = SPLIT_PRESETS
    #: whether an epoch's :func:`~joulegym.envs.etf.epoch.epoch_shares` and ETF objective are remembered per units and
    #: app set (the kinds whose units are Algorithm 1's at a few phi or GPU levels; the agent's split rarely recurs)
    _memo_epochs: ClassVar[bool] = False

    @classmethod
    def default_config(cls) -> dict[str, Any]:
        """Defaults: the Fig. 5 apps (ResNet50@1300.5 vs MobileNetV2@726.75 on a TX2), phi = 0.7.

        ========================  ==================================================================
        key                       meaning
        ========================  ==================================================================
        device                    device preset name (``jetson-tx2``, ``a10g``, ``toy-etf``)
        apps                      list of app dicts (:class:`~joulegym.workloads.InferenceApp` fields)
        mix                       ``None`` or kwargs of :func:`~joulegym.workloads.random_mix` (apps
                                  drawn at every reset instead of ``apps``)
        random_frequency_apps     indices of ``apps`` whose frequency is drawn at reset (Fig. 6)
        app_frequencies_mhz       ``None`` or one GPU level (MHz) per app, ``None`` entries keep the
                                  app's own: e.g. ``[1300.5, 726.75]`` (the Fig. 6 sweep)
        phi                       time-fair factor in [0, 1] (``phi``: the nominal phi)
        phi_choices               ``None`` or a list: phi drawn from it at every reset
        T_units, unit_s           scheduling interval T in units, and one unit in s (40 x 1 ms)
        epoch_s                   decision epoch in s (a whole number of intervals)
        horizon                   epochs per episode H
        max_apps                  slots N_max
        guarantee_mode            ``split``: ``project`` (the action splits T - sum m_i) or ``none``
        reward_window             ``split``/``phi``: ``epoch`` or ``cumulative`` (fairness parts over
                                  the run so far)
        phi_levels                ``phi``: number of phi levels in [0, 1] (11 = steps of 0.1)
        scheduler                 ``dvfs``: the fixed scheduler ``etf`` / ``tf`` / ``ef``
        tenant_app                ``dvfs``: index in ``apps`` of the tenant that picks its frequency
        ========================  ==================================================================

        Plus the core keys (``action_mode``, ``reward``, ``reward_weights``, ``vector_reward``,
        ``info_metrics``).
        """
        return {
            **super().default_config(),
            "device": "jetson-tx2",
            "apps": [dict(a) for a in FIG5_APPS],
            "mix": None,
            "random_frequency_apps": [],
            "app_frequencies_mhz": None,
            "phi": 0.7,
            "phi_choices": None,
            "T_units": 40,
            "unit_s": 0.001,
            "epoch_s": 1.0,
            "horizon": 60,
            "max_apps": 4,
            "guarantee_mode": "project",
            "reward_window": "epoch",
            "phi_levels": 11,
            "scheduler": "etf",
            "tenant_app": 0,
        }

    def __init__(self, scenario: str | None = None, render_mode: str | None = None, **overrides: Any) -> None:
        super().__init__(scenario=scenario, render_mode=render_mode, **overrides)
        if self._cumulative and self.reward_weights[self.reward_spec.names.index("etf_objective")]:
            raise ValueError(
                "reward_window='cumulative' needs a reward without etf_objective (e.g. reward='system_fairness' "
                f"or 'scalarized'; got reward={self.config['reward']!r}): etf_objective is per epoch")

    # --- config -------------------------------------------------------------------------------------------
    def _configure(self) -> None:
        cfg = self.config
        self._check_mode_keys()
        self.device = get_device(cfg["device"])
        cfg["phi"] = check_unit_interval("phi", cfg["phi"])
        if cfg["phi_choices"] is not None:
            cfg["phi_choices"] = check_unit_interval_list("phi_choices", cfg["phi_choices"])
        cfg["T_units"] = check_int("T_units", cfg["T_units"], 1)
        cfg["horizon"] = check_int("horizon", cfg["horizon"], 1)
        cfg["max_apps"] = check_int("max_apps", cfg["max_apps"], 1, MAX_APPS_LIMIT)
        cfg["phi_levels"] = check_int("phi_levels", cfg["phi_levels"], 2, PHI_LEVELS_LIMIT)
        cfg["unit_s"] = check_positive("unit_s", cfg["unit_s"])
        cfg["epoch_s"] = check_positive("epoch_s", cfg["epoch_s"])
        check_choice("guarantee_mode", cfg["guarantee_mode"], GUARANTEE_MODES)
        check_choice("reward_window", cfg["reward_window"], REWARD_WINDOWS)
        check_choice("scheduler", cfg["scheduler"], tuple(SCHEDULERS))
        self.max_apps, self.T, self.horizon = cfg["max_apps"], cfg["T_units"], cfg["horizon"]
        self.sim = ETFSimulator(self.device, max_apps=self.max_apps, T_units=self.T, unit_s=cfg["unit_s"],
                                epoch_s=cfg["epoch_s"], horizon=self.horizon)
        self.sim.check_units = False  # the action types build whole units within T
        self._fixed_apps = self._checked_apps()
        self._cumulative = cfg["reward_window"] == "cumulative"
        self.uses_guarantee = self._uses_guarantee()
        size = self.max_apps * SLOT_FEATURES + GLOBAL_FEATURES + self._configure_kind()
        high = np.ones(size, dtype=np.float32)  # shares, fractions and normalised values
        high[self.max_apps * SLOT_FEATURES + GLOBAL_FEATURES - 1] = DISPARITY_HIGH
        self.observation_space = gym.spaces.Box(0.0, high, (size,), dtype=np.float32)
        self.phi = self.nominal_phi = cfg["phi"]
        # Caches keyed by content (the active set's weights, powers and demands; phi): the same app set recurs
        # across epochs, phi levels and resets.
        self._set_cache: BoundedCache[tuple] = BoundedCache()
        self._phi_cache: BoundedCache[tuple] = BoundedCache()
        self._units_cache: BoundedCache[list[int]] = BoundedCache()
        self._alg1_key: tuple | None = None  # the app set (its key object) and phi of _alg1_units
        self._alg1_phi, self._alg1_units = math.nan, [0] * self.max_apps
        self._memo_key: tuple | None = None  # the app set (its key object) of _memo
        self._memo: dict[tuple[int, ...], list] = {}
        self._memos: BoundedCache[dict[tuple[int, ...], list]] = BoundedCache()  # per app set: units -> entry
        n = self.max_apps
        self._zeros_int, self._zeros_float = (0,) * n, (0.0,) * n

    def _uses_guarantee(self) -> bool:
        """Whether the action's floor is Algorithm 1's guarantee (``split``: with ``guarantee_mode="project"``)."""
        return self.config["guarantee_mode"] == "project"

    def _configure_kind(self) -> int:
        """What a kind configures beyond the shared keys; returns its extra observation features."""
        return 0

    def _check_mode_keys(self) -> None:
        cfg, mode = self.config, self.action_mode
        defaults = self.default_config()
        scenario = self.scenario_table()[cfg["scenario"]].config if cfg["scenario"] else {}
        for key, modes in MODE_KEYS.items():
            value = cfg[key]
            if mode in modes or value == defaults[key] or (key in scenario and scenario[key] == value):
                continue
            users = " and ".join(f"action_mode={m!r} ({KIND_OF_MODE[m]})" for m in modes)
            raise ValueError(f"{key}={value!r} is a setting of {users}; it has no effect with "
                             f"action_mode={mode!r} ({KIND_OF_MODE[mode]}): leave it at its default "
                             f"{defaults[key]!r}")

    def _checked_apps(self) -> list[InferenceApp]:
        cfg = self.config
        if cfg["mix"] is not None:
            cfg["mix"] = check_mix(check_keys("mix", cfg["mix"], MIX_KEYS))
            models = cfg["mix"].get("models", ())
            for k, model in enumerate(models if isinstance(models, list | tuple) else [models]):
                try:
                    self.device.profile(model)
                except ValueError as error:
                    raise ValueError(f"mix.models[{k}]={model!r}: {error}") from None
            for key in ("random_frequency_apps", "app_frequencies_mhz"):
                if cfg[key]:
                    raise ValueError(f"{key} refers to apps; it has no effect with a random mix (mix={cfg['mix']})")
            return []
        apps = cfg["apps"]
        if not isinstance(apps, list | tuple) or not apps:
            raise ValueError("apps must list at least one app (or set mix for a random mix)")
        for k, entry in enumerate(apps):
            if not isinstance(entry, dict):
                raise ValueError(f"apps[{k}] must be a dict of app fields (model, frequency_mhz, ...), got {entry!r}")
        if not isinstance(cfg["random_frequency_apps"], list | tuple):
            raise ValueError(f"random_frequency_apps must be a list of indices of apps, "
                             f"got {cfg['random_frequency_apps']!r}")
        cfg["random_frequency_apps"] = [check_int("random_frequency_apps[]", k, 0, len(apps) - 1)
                                        for k in cfg["random_frequency_apps"]]
        entries = [dict(a) for a in apps]
        frequencies = cfg["app_frequencies_mhz"]
        if frequencies is not None:
            if not isinstance(frequencies, list | tuple) or len(frequencies) != len(apps):
                raise ValueError(f"app_frequencies_mhz must be None or a list of one GPU level (MHz, or None) per "
                                 f"app ({len(apps)} apps), got {frequencies!r}")
            grid = self.device.frequencies
            checked = []
            for k, f in enumerate(frequencies):
                if f is not None:
                    f = check_positive(f"app_frequencies_mhz[{k}]", f)
                    if grid is not None:
                        try:
                            f = grid.levels_mhz[grid.index_of(f)]
                        except ValueError:
                            raise ValueError(f"app_frequencies_mhz[{k}]={f} is not a GPU level of "
                                             f"{self.device.name}; allowed: {list(grid.levels_mhz)}") from None
                    if k in cfg["random_frequency_apps"]:
                        raise ValueError(f"app_frequencies_mhz[{k}] sets the frequency of app {k}, which "
                                         "random_frequency_apps draws at reset: set one of them")
                    entries[k]["frequency_mhz"] = f
                checked.append(f)
            cfg["app_frequencies_mhz"] = checked
        fixed = [InferenceApp.from_config(a) for a in entries]
        for k, app in enumerate(fixed):
            try:
                app.service_time_and_power(self.device)  # an unknown model or frequency fails here
            except ValueError as error:
                raise ValueError(f"apps[{k}] (model={app.model!r}, frequency_mhz={app.frequency_mhz!r}): "
                                 f"{error}") from None
            if app.arrival >= cfg["horizon"]:
                raise ValueError(f"apps[{k}].arrival={app.arrival} is at or after the horizon ({cfg['horizon']} "
                                 "epochs): the app would never run")
        return fixed

    def _reward_spec(self) -> RewardSpec:
        return RewardSpec(FAIRNESS_PARTS, SPLIT_PRESETS)

    # --- episode ----------------------------------------------------------------------------------------------
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

    def _begin_episode(self, options: dict[str, Any]) -> None:
        cfg = self.config
        self.phi = float(self.np_random.choice(cfg["phi_choices"])) if cfg["phi_choices"] else cfg["phi"]
        self.nominal_phi = self.phi
        self.sim.reset(self.np_random, self._draw_apps())
        n = self.max_apps
        self.last_units = [0] * n
        self.last_time_fairness = 1.0
        self.last_energy_fairness = 1.0
        self._slot_energy = [0.0] * n  # cumulative weighted energy of the current occupants
        self._slot_owner = [-1] * n
        self._dynamic = ([0.0] * n, [0.0] * n, [0.0] * n)  # features 6-8: a lane (per-slot list) each
        self._slot_labels_seen: list[list[str]] = [[] for _ in range(n)]  # occupants this episode (plots)
        self._last_result: EpochResult | None = None
        self._refresh_membership()

    def _refresh_membership(self) -> None:
        """The active set or a slot's power/demand changed: recompute what depends on it."""
        sim = self.sim
        for slot in range(self.max_apps):
            if sim.slot_app[slot] != self._slot_owner[slot]:  # a new occupant starts from zero
                self._slot_energy[slot] = 0.0
                for lane in self._dynamic:
                    lane[slot] = 0.0
        self._slot_owner = list(sim.slot_app)
        self._lanes = SCALAR.lanes(sim.active)  # the epoch functions visit the active slots
        self._membership_key = (tuple(sim.active), tuple(sim.weight), tuple(sim.power_w), tuple(sim.demand_units))
        self._set_static, self.ef_level, self._disparity = self._set_cache.get_or_compute(self._membership_key,
                                                                                          self._set_features)
        self._frequencies = tuple(sim.frequency_mhz)
        labels = tuple(self._app_label(k) if k >= 0 else "" for k in sim.slot_app)
        self._slot_apps = labels
        for seen, label in zip(self._slot_labels_seen, labels, strict=True):
            if label and label not in seen:
                seen.append(label)
        self._refresh_phi()

    def _refresh_frequency(self) -> None:
        """The tenant changed its GPU level: what :meth:`_refresh_membership` recomputes, less what depends on who
        holds the slots (occupants, their zeroed features and labels: unchanged, the labels name configured
        frequencies)."""
        sim = self.sim
        self._membership_key = (tuple(sim.active), tuple(sim.weight), tuple(sim.power_w), tuple(sim.demand_units))
        self._set_static, self.ef_level, self._disparity = self._set_cache.get_or_compute(self._membership_key,
                                                                                          self._set_features)
        self._frequencies = tuple(sim.frequency_mhz)
        self._refresh_phi()

    def _refresh_phi(self) -> None:
        """The active set or phi changed: Algorithm 1's guarantee, the features and the scheduler inputs."""
        key = (self._membership_key, self.phi)
        self._static, self.guarantee, self.action_floor, self.room = self._phi_cache.get_or_compute(
            key, self._phi_features)
        active, weights, power, demand = self._membership_key
        # Tuples: immutable, so every step's info can share them (no per-step array copies).
        self._scheduler_inputs = {
            "active": active,
            "weights": weights,
            "power_w": power,
            "demand_units": demand,
            "guarantee_units": tuple(self.guarantee),
            "action_floor_units": tuple(self.action_floor),
            "T_units": self.T,
            "phi": self.phi,
            "nominal_phi": self.nominal_phi,
            "frequency_mhz": self._frequencies,
        }

    def _app_label(self, app_index: int) -> str:
        """A human name for app ``app_index`` of the episode (legends, ``info["slot_apps"]``)."""
        app = self.sim.apps[app_index]
        return f"A{app_index + 1} {app.model}@{app.frequency_mhz:g}MHz"

    def _set_features(self) -> tuple[list[list[float]], float, float]:
        """What depends on the active set only: slot features 0-3 and 5, the EF level, the log disparity."""
        sim = self.sim
        act = sim.active_mask()
        static = np.zeros((self.max_apps, 5))
        ef_level = disparity = 0.0
        if act.any():
            w, p, d = np.array(sim.weight)[act], np.array(sim.power_w)[act], np.array(sim.demand_units)[act]
            ef = w / p
            static[act] = np.column_stack([np.ones(w.size), w / w.sum(), p / p.max(), np.minimum(d / self.T, 1.0),
                                           ef / ef.sum()])
            # The weighted-EF level with demand caps (units x W per weight): etf_objective's 1.0.
            caps = np.minimum(d, self.T)
            ef_units = _clip_level_solve(ef, np.zeros_like(w), caps, float(self.T))
            open_ = ef_units < caps - 1e-9
            ef_level = float((ef_units * p / w)[open_].min()) if open_.any() else 0.0
            disparity = min(float(np.log10(p.max() / p.min())), DISPARITY_HIGH)
        return static.tolist(), ef_level, disparity

    def _phi_features(self) -> tuple[list[list[float]], list[int], list[int], list[int]]:
        """What depends on phi too: slot features 0-5, Algorithm 1's guarantees m_i, the action's floor (m_i
        or 0) and the room above the floor."""
        sim = self.sim
        n = self.max_apps
        guarantee = np.zeros(n, dtype=np.int64)
        act = sim.active_mask()
        if act.any():
            guarantee[act] = guaranteed_units(np.array(sim.weight)[act], np.array(sim.demand_units)[act], self.T,
                                              self.phi)
        guarantee_list = guarantee.tolist()
        static = [[*s[:4], g / self.T, *s[4:]] for s, g in zip(self._set_static, guarantee_list, strict=True)]
        floor = guarantee_list if self.uses_guarantee else [0] * n
        room = [int(min(d, self.T)) - g if a else 0
                for d, g, a in zip(sim.demand_units, floor, sim.active, strict=True)]
        return static, guarantee_list, floor, room

    def _algorithm1(self, phi: float) -> list[int]:
        """Algorithm 1 units per slot at ``phi`` over the active set (cached by content)."""
        key = self._membership_key
        if key is not self._alg1_key or phi != self._alg1_phi:  # else the last epoch's (a fixed or repeated phi)
            self._alg1_units = self._units_cache.get_or_compute((key, phi), lambda: algorithm1_units(self.sim, phi))
            self._alg1_key, self._alg1_phi = key, phi
        return list(self._alg1_units)

    # --- one epoch --------------------------------------------------------------------------------------------
    def _transition(self, decision: list[int]) -> tuple[float, ...]:
        return self._fairness_epoch(decision)

    def _fairness_epoch(self, units: list[int]) -> tuple[float, float, float, float]:
        """Run the epoch with ``units`` and advance: the fairness parts (F_T, F_E, F_S, ETF objective)."""
        _, f_t, f_e = self._apply_epoch(units)
        objective = self._etf_objective(units)
        self._advance_epoch()
        if self._cumulative:
            metrics = self.sim.metrics()
            f_t, f_e = metrics["time_fairness"], metrics["energy_fairness"]
        return f_t, f_e, min(f_t, f_e), objective

    def _apply_epoch(self, units: list[int]) -> tuple[EpochResult, float, float]:
        """Run the current epoch with ``units``; returns (result, epoch F_T, epoch F_E)."""
        sim = self.sim
        result = sim.apply(units)
        self._last_result = result
        self._epoch_slot_apps = self._slot_apps  # who ran this epoch (membership may change next)
        if self._memo_epochs:
            energy_norm, f_t, f_e, inv_e = self._memo_entry(units, result.energy_j)[:4]
            epoch_features(SCALAR, self._lanes, units, energy_norm, inv_e, self._slot_energy, self._dynamic, self.T)
        else:
            f_t, f_e = epoch_fairness(SCALAR, self._lanes, units, result.energy_j, sim.weight, self._slot_energy,
                                      self._dynamic, self.T)
        self.last_units = units
        self.last_time_fairness, self.last_energy_fairness = f_t, f_e
        return result, f_t, f_e

    def _advance_epoch(self) -> None:
        """Move to the next epoch (arrivals/departures)."""
        sim = self.sim
        sim.advance()
        if sim.membership_changed:
            self._refresh_membership()

    def _etf_objective(self, units: list[int]) -> float:
        """min over unsaturated apps of weighted energy / eps_EF (1 if none is unsaturated), for the app set now."""
        sim = self.sim
        if not self._memo_epochs:
            return etf_objective(SCALAR, self._lanes, units, sim.power_w, sim.weight, sim.demand_units, self.T,
                                 self.ef_level)
        entry = self._memo_entry(units)
        if entry[4] is None:
            entry[4] = etf_objective(SCALAR, self._lanes, units, sim.power_w, sim.weight, sim.demand_units, self.T,
                                     self.ef_level)
        return entry[4]

    def _memo_entry(self, units: list[int], energy_j: list[float] | None = None) -> list:
        """``[*epoch_shares, ETF objective or None]`` of ``units`` on the current app set, remembered per app set
        (:attr:`_memo_epochs`: the kinds whose units are Algorithm 1's, which recur)."""
        if self._memo_key is not self._membership_key:  # another app set or other powers (a content-keyed cache)
            self._memo_key = self._membership_key
            self._memo = self._memos.get_or_compute(self._membership_key, dict)
        key = tuple(units)
        entry = self._memo.get(key)
        if entry is None:
            sim = self.sim
            if energy_j is None:
                energy_j = [u * sim._seconds_per_unit * p for u, p in zip(units, sim.power_w)]
            entry = self._memo[key] = [*epoch_shares(SCALAR, self._lanes, units, energy_j, sim.weight), None]
        return entry

    def _terminated(self) -> bool:
        return self.sim.done

    def _truncated(self) -> bool:
        return self.sim.truncated

    # --- observation and info ------------------------------------------------------------------------------
    def _observe(self) -> np.ndarray:
        return np.array(self._features(), dtype=np.float32)

    def _features(self) -> list[float]:
        """The observation as a list (slots, then globals); a kind appends its own."""
        flat: list[float] = []
        for static, time_share, energy_share, cumulative_share in zip(self._static, *self._dynamic, strict=True):
            flat += static
            flat += (time_share, energy_share, cumulative_share)
        sim = self.sim
        flat += (self.phi, min(sim.epoch / self.horizon, 1.0), sum(sim.active) / self.max_apps,
                 self.last_time_fairness, self.last_energy_fairness, self._disparity)
        return flat

    def _max_episode_steps(self) -> int:
        return int(self.horizon)  # one epoch per step in every mode

    def _observation_names(self) -> list[str]:
        """The module docstring's "Observation": 9 per slot, 6 globals, and the tenant's (``dvfs``)."""
        return row_names("slot", self.max_apps, SLOT_FEATURE_NAMES) + list(GLOBAL_FEATURE_NAMES)

    def _extra_info(self) -> dict[str, Any]:
        """Lean per-step info: nothing beyond the core's keys. The observation carries every input of Algorithm 1
        (the reference policies decode it), the reward parts carry the epoch's fairness; the rest is
        :meth:`_diagnostic_info` (``info_level="full"``)."""
        return {}

    def _diagnostic_info(self) -> dict[str, Any]:
        """``info_level="full"``: phi, Algorithm 1's exact inputs, the slot occupants and the epoch per slot."""
        result = self._last_result
        info: dict[str, Any] = {"phi": self.phi, "scheduler_inputs": dict(self._scheduler_inputs)}
        if result is None:  # at reset: the same keys, nothing allocated yet
            info["slot_apps"] = self._slot_apps
            info["allocation_units"] = self._zeros_int
            info["app_time_s"] = info["app_energy_j"] = info["app_inferences"] = self._zeros_float
        else:  # this epoch, per slot (tuples: immutable, cheap)
            info["slot_apps"] = self._epoch_slot_apps
            info["allocation_units"] = tuple(result.units)
            info["app_time_s"] = tuple(result.time_s)
            info["app_energy_j"] = tuple(result.energy_j)
            info["app_inferences"] = tuple(result.inferences)
        return info

    @property
    def scheduler_inputs(self) -> dict[str, Any]:
        """Algorithm 1's exact inputs now (what ``info["scheduler_inputs"]`` holds with ``info_level="full"``)."""
        return dict(self._scheduler_inputs)

    def metrics(self) -> dict[str, Any]:
        """F_T, F_E, F_S and Jain over the run so far (per-app rates), totals per app (paper §6.1)."""
        return self.sim.metrics()

    # --- rendering ---------------------------------------------------------------------------------------------
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


class ETFPhiEnv(ETFEnv):
    """``ETFPhi``: the operator's knob (paper §4.1). The agent sets the time-fair factor phi of each epoch and
    Algorithm 1 allocates at it; phi is part of the state (the observation's phi and guarantees follow it)."""

    action_types: ClassVar[dict[str, type]] = {"phi": PhiAction}
    reward_presets = PHI_PRESETS
    _memo_epochs: ClassVar[bool] = True

    def _uses_guarantee(self) -> bool:
        return True

    def _reward_spec(self) -> RewardSpec:
        return RewardSpec(FAIRNESS_PARTS, PHI_PRESETS)

    def _transition(self, decision: int) -> tuple[float, ...]:
        phi = self.action_type.phi_of(decision)
        if phi != self.phi:
            self.phi = phi
            self._refresh_phi()
        return self._fairness_epoch(self._algorithm1(phi))


class ETFDVFSEnv(ETFEnv):
    """``ETFDVFS``: another decision problem (paper §6.6, the efficiency incentive). The agent is one tenant
    choosing its own GPU level each epoch under a fixed scheduler (``scheduler``: ETF at phi, TF or EF); its reward
    is its own throughput and power, and its slot, level and last throughput extend the observation."""

    action_types: ClassVar[dict[str, type]] = {"dvfs": DVFSAction}
    reward_presets = DVFS_PRESETS
    _memo_epochs: ClassVar[bool] = True
    full_info_keys: ClassVar[tuple[str, ...]] = (*ETFEnv.full_info_keys, "tenant_frequency_mhz")

    def _uses_guarantee(self) -> bool:
        return True

    def _configure_kind(self) -> int:
        self._cumulative = False
        self._configure_dvfs()
        return self.max_apps + 2

    def _configure_dvfs(self) -> None:
        cfg = self.config
        grid = self.device.frequencies
        if grid is None or len(grid.levels_mhz) < 2:
            raise ValueError(f"device={cfg['device']!r} has a single frequency; action_mode='dvfs' (ETFDVFS) "
                             "needs DVFS levels")
        if cfg["mix"] is not None:
            raise ValueError("action_mode='dvfs' (ETFDVFS) needs a fixed app list (mix must be None): the tenant "
                             "must stay present")
        cfg["tenant_app"] = check_int("tenant_app", cfg["tenant_app"], 0, len(cfg["apps"]) - 1)
        tenant = self._fixed_apps[cfg["tenant_app"]]
        if tenant.arrival != 0 or tenant.departure is not None:
            raise ValueError("tenant_app must be present for the whole episode (arrival 0, no departure)")
        self.levels_mhz = tuple(grid.levels_mhz)
        self._fastest_s = min(self.device.profile(tenant.model).time_s)
        self._tenant_power_max = (math.inf if tenant.power_w is not None else
                                  max(self.sim.tenant_profile(tenant, f)[1] for f in self.levels_mhz))

    def _reward_spec(self) -> RewardSpec:
        slack = 1.0 + BOUND_SLACK
        return RewardSpec((
            RewardPart("throughput", 0.0, slack / self._fastest_s, "the tenant's inferences per second"),
            RewardPart("power", -slack * self._tenant_power_max, 0.0, "minus the tenant's mean power (W)"),
        ), DVFS_PRESETS)

    @property
    def scheduler_phi(self) -> float:
        """The phi Algorithm 1 runs at in the ``dvfs`` mode (the env's phi under ``scheduler="etf"``)."""
        fixed = SCHEDULERS[self.config["scheduler"]]
        return self.phi if fixed is None else fixed

    def _begin_episode(self, options: dict[str, Any]) -> None:
        super()._begin_episode(options)
        self.tenant_slot = self.sim.slot_app.index(self.config["tenant_app"])
        self.level = self.levels_mhz.index(self.sim.frequency_mhz[self.tenant_slot])
        self.last_throughput = 0.0

    def _app_label(self, app_index: int) -> str:
        if app_index == self.config["tenant_app"]:
            return f"A{app_index + 1} {self.sim.apps[app_index].model} (tenant, DVFS)"
        return super()._app_label(app_index)

    def _transition(self, decision: int) -> tuple[float, float]:
        if decision != self.level:
            self.level = decision
            self.sim.set_frequency(self.tenant_slot, self.levels_mhz[decision])
            self._refresh_frequency()
        result, _, _ = self._apply_epoch(self._algorithm1(self.scheduler_phi))
        epoch_s = self.config["epoch_s"]
        throughput = float(result.inferences[self.tenant_slot] / epoch_s)
        power = float(result.energy_j[self.tenant_slot] / epoch_s)
        self.last_throughput = throughput
        self._advance_epoch()
        return throughput, -power

    def _features(self) -> list[float]:
        flat = super()._features()
        tenant = [0.0] * (self.max_apps + 2)
        tenant[self.tenant_slot] = 1.0
        tenant[-2] = self.level / (len(self.levels_mhz) - 1)
        tenant[-1] = min(self.last_throughput * self._fastest_s, 1.0)  # 1: the fastest service time
        return flat + tenant

    def _observation_names(self) -> list[str]:
        tenant = [f"tenant_slot{k}" for k in range(self.max_apps)] + ["tenant_level", "tenant_throughput"]
        return super()._observation_names() + tenant

    def _diagnostic_info(self) -> dict[str, Any]:
        info = super()._diagnostic_info()
        info["tenant_frequency_mhz"] = self.levels_mhz[self.level]
        return info


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
