"""``joulegym/ETFDVFS-v0``: one tenant picks its GPU frequency under a fixed scheduler (spec §9.4).

The efficiency incentive of ETF (§6.6, Fig. 10): under ETF a tenant that lowers its frequency draws
less power and is given more GPU time, which can raise its throughput. Under time fairness it
cannot gain. There is no paper algorithm for this env (an extension); the reference policies are
"always max frequency" and the best response by enumeration (e.g. against ResNet50@1300.5 under
ETF(0.7), 1032.75 or 1122 MHz: 9.10/s against 8.77/s at 1300.5 MHz).

==================  ==========================================================================
Action              ``Discrete(len(frequency grid))``: the tenant's GPU level for the epoch.
Observation         ``ETF-v0``'s plus ``max_apps + 2`` features: the tenant's slot (one-hot), its
                    level / (levels - 1), and its last throughput x its fastest service time.
Reward              the tenant's throughput (inferences/s) minus ``energy_penalty`` x its
                    average power (W). ``info["reward_vector"] = [throughput, -power]``.
Scheduler           ``scheduler="etf"`` (Algorithm 1 at the scenario's phi), ``"tf"`` (phi = 1),
                    ``"ef"`` (phi = 0).
Termination         never (the tenant is present throughout); truncation after ``horizon`` epochs.
==================  ==========================================================================
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from joulegym.envs.base import check_choice, validated_discrete_action
from joulegym.envs.etf.common import ETFBaseEnv, algorithm1_units

SCHEDULERS = {"etf": None, "tf": 1.0, "ef": 0.0}
REWARD_MODES = ("throughput",)


class TenantDVFSEnv(ETFBaseEnv):
    """ETF tenant-DVFS env; see the module docstring."""

    kind: ClassVar[str] = "ETFDVFS"
    reward_modes = REWARD_MODES

    def __init__(self, scenario: str | None = None, render_mode: str | None = None, **overrides: Any) -> None:
        super().__init__(scenario=scenario, render_mode=render_mode, **overrides)
        grid = self.device.frequencies
        if grid is None or len(grid) < 2:
            raise ValueError(f"device={self.config['device']!r} has a single frequency; ETFDVFS needs DVFS levels")
        self.levels_mhz = grid.levels_mhz
        self.action_space = gym.spaces.Discrete(len(self.levels_mhz))
        extra = self.max_apps + 2
        self.observation_space = gym.spaces.Box(0.0, np.inf, (self.obs_size + extra,), dtype=np.float32)
        self._mask = np.ones(len(self.levels_mhz), dtype=bool)
        tenant = self._fixed_apps[self.config["tenant_app"]]
        self._fastest_s = min(self.device.profile(tenant.model).time_s)
        self._cache: dict[tuple[int, float], np.ndarray] = {}

    def _validate_config(self) -> None:
        super()._validate_config()
        cfg = self.config
        check_choice("scheduler", cfg["scheduler"], tuple(SCHEDULERS))
        if cfg["mix"] is not None:
            raise ValueError("ETFDVFS needs a fixed app list (mix must be None): the tenant must stay present")
        index = cfg["tenant_app"]
        if int(index) != index or not 0 <= index < len(cfg["apps"]):
            raise ValueError(f"tenant_app must index apps (0..{len(cfg['apps']) - 1}), got {index!r}")
        tenant = cfg["apps"][index]
        if tenant.get("arrival", 0) != 0 or tenant.get("departure") is not None:
            raise ValueError("tenant_app must be present for the whole episode (arrival 0, no departure)")

    def action_masks(self) -> np.ndarray:
        return self._mask.copy()

    def _app_label(self, app_index: int) -> str:
        if app_index != self.config["tenant_app"]:
            return super()._app_label(app_index)
        return f"A{app_index + 1} {self.sim.apps[app_index].model} (tenant, DVFS)"

    @property
    def scheduler_phi(self) -> float:
        fixed = SCHEDULERS[self.config["scheduler"]]
        return self.phi if fixed is None else fixed

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self._cache.clear()
        self._reset_sim(seed)
        self.tenant_slot = self.sim.slot_app.index(self.config["tenant_app"])
        self.level = self.levels_mhz.index(self.sim.frequency_mhz[self.tenant_slot])
        self.last_throughput = 0.0
        return self._tenant_observation(), self._tenant_info(None, 0.0, 0.0)

    def allocation(self) -> list[int]:
        """Algorithm 1 units per slot under the fixed scheduler (cached per active set)."""
        key = (self._membership_version, self.scheduler_phi)
        units = self._cache.get(key)
        if units is None:
            units = algorithm1_units(self.sim, self.scheduler_phi)
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[key] = units
        return list(units)

    def step(self, action: Any):
        level = validated_discrete_action(action, self.action_space)
        if level != self.level:
            self.level = level
            self.sim.set_frequency(self.tenant_slot, self.levels_mhz[level])
            self._refresh_membership()
        units = self.allocation()
        result, f_t, f_e = self._apply_epoch(units)
        epoch_s = self.config["epoch_s"]
        throughput = float(result.inferences[self.tenant_slot] / epoch_s)
        power = float(result.energy_j[self.tenant_slot] / epoch_s)
        self.last_throughput = throughput
        self._advance_epoch()
        reward = throughput - self.config["energy_penalty"] * power
        info = self._tenant_info(result, throughput, power)
        info["time_fairness"], info["energy_fairness"] = f_t, f_e
        return self._tenant_observation(), float(reward), False, self.sim.truncated, info

    def _tenant_observation(self) -> np.ndarray:
        base = self._observation()
        extra = np.zeros(self.max_apps + 2, dtype=np.float32)
        extra[self.tenant_slot] = 1.0
        extra[-2] = self.level / (len(self.levels_mhz) - 1)
        extra[-1] = self.last_throughput * self._fastest_s
        return np.concatenate([base, extra])

    def _tenant_info(self, result, throughput: float, power: float) -> dict[str, Any]:
        info = self._info(result, self.last_time_fairness, self.last_energy_fairness)
        info["reward_vector"] = np.array([throughput, -power])
        info["tenant_throughput"] = throughput
        info["tenant_power_w"] = power
        info["tenant_frequency_mhz"] = self.levels_mhz[self.level]
        info["action_mask"] = self._mask.copy()
        return info
