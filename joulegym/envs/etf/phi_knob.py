"""``joulegym/ETFPhi-v0``: the operator's knob. The agent sets phi; Algorithm 1 allocates (spec §9.3).

The paper presents phi as "a configurable knob" trading time fairness against energy fairness
(§4.1, Figs. 7/8/11). The best phi for F_S depends on the app set (for two equal-weight apps it is
``2/(1+sqrt(r))``, spec §2.3), so in the dynamic and random scenarios it changes over time.

==================  ==========================================================================
Action              ``Discrete(phi_levels)`` (default 11): phi = k / (phi_levels - 1) for the epoch.
Observation         as ``ETF-v0`` (:mod:`joulegym.envs.etf.common`); the phi feature is the phi
                    chosen last (the scenario's phi before the first step).
Reward              ``reward="system_fairness"`` (default): the epoch's F_S; ``"scalarized"``:
                    ``beta*F_T + (1-beta)*F_E``. ``info["reward_vector"] = [F_T, F_E]``.
Termination         a dynamic scenario whose apps have all left with none to come.
Truncation          after ``horizon`` epochs.
Info                as ``ETF-v0`` plus ``action_mask`` (all levels are always allowed).
==================  ==========================================================================
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from joulegym.envs.base import validated_discrete_action
from joulegym.envs.etf.common import ETFBaseEnv, algorithm1_units

REWARD_MODES = ("system_fairness", "scalarized")


class PhiKnobEnv(ETFBaseEnv):
    """ETF phi-knob env; see the module docstring."""

    kind: ClassVar[str] = "ETFPhi"
    reward_modes = REWARD_MODES

    def __init__(self, scenario: str | None = None, render_mode: str | None = None, **overrides: Any) -> None:
        super().__init__(scenario=scenario, render_mode=render_mode, **overrides)
        self.phi_levels = int(self.config["phi_levels"])
        self.action_space = gym.spaces.Discrete(self.phi_levels)
        self._mask = np.ones(self.phi_levels, dtype=bool)
        self._cache: dict[tuple[int, int], np.ndarray] = {}

    def phi_of(self, level: int) -> float:
        return level / (self.phi_levels - 1)

    def action_masks(self) -> np.ndarray:
        return self._mask.copy()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self._cache.clear()
        self._reset_sim(seed)
        self.nominal_phi = self.phi
        self._scheduler_inputs["nominal_phi"] = self.nominal_phi
        return self._observation(), self._info_with_mask(None, 1.0, 1.0)

    def allocation(self, level: int) -> list[int]:
        """Algorithm 1 units per slot at phi level ``level`` (cached per active set)."""
        key = (self._membership_version, level)
        units = self._cache.get(key)
        if units is None:
            units = algorithm1_units(self.sim, self.phi_of(level))
            if len(self._cache) > 4096:
                self._cache.clear()
            self._cache[key] = units
        return list(units)

    def step(self, action: Any):
        level = validated_discrete_action(action, self.action_space)
        phi = self.phi_of(level)
        if phi != self.phi:
            self.phi = phi
            self._refresh_membership()
            self._scheduler_inputs["nominal_phi"] = self.nominal_phi
        units = self.allocation(level)
        result, f_t, f_e = self._apply_epoch(units)
        if self._advance_epoch():
            self._scheduler_inputs["nominal_phi"] = self.nominal_phi
        info = self._info_with_mask(result, f_t, f_e)
        reward = self._fairness_reward(f_t, f_e, info["metrics"])
        terminated = self.sim.done
        truncated = self.sim.truncated and not terminated
        return self._observation(), float(reward), terminated, truncated, info

    def _info_with_mask(self, result, f_t: float, f_e: float) -> dict[str, Any]:
        info = self._info(result, f_t, f_e)
        info["action_mask"] = self._mask.copy()
        return info
