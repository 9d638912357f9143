"""``joulegym/ETF-v0``: the agent replaces Algorithm 1 and splits each interval (ETF spec §9.2).

One GPU is time-shared by up to ``max_apps`` model-serving tenants, each at its own GPU frequency
and profile power (ETF paper §3-§5). Every decision epoch (1 s) the agent says how to split the
scheduling interval T (40 units of 1 ms) among the active apps; the split repeats for every
interval of the epoch.

==================  ==========================================================================
Action              ``Box(0, 1, (max_apps,), float32)``: relative shares ``a_i``. Inactive slots
                    are ignored. ``guarantee_mode="project"`` (default): every app first gets
                    Algorithm 1's guarantee ``m_i = min(floor(phi*w_i*T/W), d_i)`` and the shares
                    split the rest ``T - sum m_i``; ``"none"``: the shares split all of T. Shares
                    become whole units by largest remainder, never above an app's demand; all-zero
                    shares mean equal shares. ``a_i = r_i / max_j r_j`` (``r`` = ETF's units above
                    ``m``) reproduces Algorithm 1 bit for bit. Ignored shares (free or full slots) and
                    the all-zero substitution set ``info["action_repaired"]``.
Observation         ``Box(0, inf, (9*max_apps + 6,), float32)``; see :mod:`joulegym.envs.etf.common`.
Reward              ``reward="etf"`` (default with ``project``): min over unsaturated apps of
                    ``(E_i/w_i) / eps_EF`` (eps_EF: the weighted-EF level), in [0, 1]; Algorithm 1
                    maximises it (Thm. 3), so an agent's gap to ETF is its regret.
                    ``"system_fairness"`` (default with ``none``): the epoch's F_S = min(F_T, F_E).
                    ``"scalarized"``: ``beta*F_T + (1-beta)*F_E``. ``info["reward_vector"]`` is
                    ``[F_T, F_E]`` of the epoch.
Starting state      the scenario's apps present at epoch 0 (random mix / random frequency / random
                    phi drawn from the seed).
Termination         a dynamic scenario whose apps have all left with none to come.
Truncation          after ``horizon`` epochs (default 60).
Info                ``metrics`` (the paper's F_T/F_E/F_S and Jain over the run, per-app time (s),
                    energy (J), inferences), ``reward_vector``, epoch ``time_fairness`` /
                    ``energy_fairness`` / ``system_fairness``, ``allocation_units``, ``slot_apps``
                    (who held each slot), ``scheduler_inputs`` (exact Algorithm 1 inputs per slot,
                    with ``action_floor_units``: the units the action cannot go below).
==================  ==========================================================================
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from joulegym.envs.base import validated_box_list
from joulegym.envs.etf.allocation import largest_remainder_list
from joulegym.envs.etf.common import ETFBaseEnv

REWARD_MODES = ("etf", "system_fairness", "scalarized")


class TimeShareEnv(ETFBaseEnv):
    """ETF time-share env; see the module docstring for spaces, reward and termination."""

    kind: ClassVar[str] = "ETF"
    reward_modes = REWARD_MODES

    def __init__(self, scenario: str | None = None, render_mode: str | None = None, **overrides: Any) -> None:
        super().__init__(scenario=scenario, render_mode=render_mode, **overrides)
        self.action_space = gym.spaces.Box(0.0, 1.0, (self.max_apps,), dtype=np.float32)

    def default_reward(self) -> str:
        return "etf" if self.config["guarantee_mode"] == "project" else "system_fairness"

    def _validate_config(self) -> None:
        super()._validate_config()
        if self.config["reward"] == "etf" and self.config["reward_window"] != "epoch":
            raise ValueError("reward_window='cumulative' needs reward 'system_fairness' or 'scalarized'")

    @property
    def uses_guarantee(self) -> bool:
        return self.config["guarantee_mode"] == "project"

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        self._reset_sim(seed)
        return self._observation(), self._info(None, 1.0, 1.0)

    def decode_action(self, action: Any) -> list[int]:
        """Whole units per slot for ``action`` (spec §9.2 mapping); validates the action.

        Sets :attr:`action_repaired` (reported as ``info["action_repaired"]``): a positive share on a slot
        that can take no unit (free, or at its demand) was ignored, or all-zero shares became equal ones.
        """
        shares = validated_box_list(action, self.action_space)
        units = list(self.action_floor)
        room = self._room
        left = self.T - sum(units)
        kept = [a if r > 0 else 0.0 for a, r in zip(shares, room, strict=True)]
        self.action_repaired = any(a > 0.0 and r <= 0 for a, r in zip(shares, room, strict=True))
        if left <= 0 or not any(room):
            return units
        if sum(kept) <= 0.0:
            self.action_repaired = True
            kept = [1.0 if r > 0 else 0.0 for r in room]
        extra = largest_remainder_list(kept, left, room)
        return [u + e for u, e in zip(units, extra, strict=True)]

    def step(self, action: Any):
        units = self.decode_action(action)
        result, f_t, f_e = self._apply_epoch(units)
        reward_etf = self._etf_reward(units, result.active) if self.config["reward"] == "etf" else None
        self._advance_epoch()
        info = self._info(result, f_t, f_e)
        info["action_repaired"] = self.action_repaired
        reward = reward_etf if reward_etf is not None else self._fairness_reward(f_t, f_e, info["metrics"])
        terminated = self.sim.done
        truncated = self.sim.truncated and not terminated
        return self._observation(), float(reward), terminated, truncated, info

    def _etf_reward(self, units: list[int], active: list[bool]) -> float:
        """min over unsaturated apps of weighted energy / eps_EF (1 if none is unsaturated)."""
        sim = self.sim
        weighted = [u * sim.power_w[k] / sim.weight[k] for k, u in enumerate(units)
                    if active[k] and u < min(sim.demand_units[k], self.T)]
        if not weighted or self.ef_level <= 0:
            return 1.0
        return min(min(weighted) / self.ef_level, 1.0)
