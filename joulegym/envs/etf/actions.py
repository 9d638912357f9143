"""The three ETF action modes (``action_mode=``), one :class:`~joulegym.core.actions.ActionType` each.

==========  ==========  =====================================================================================
mode        kind        action
==========  ==========  =====================================================================================
``split``   ``ETF``     ``Box(0, 1, (max_apps,), float32)``: relative shares of the scheduling interval (the
                        agent replaces Algorithm 1); decision: whole units per slot
``phi``     ``ETFPhi``  ``Discrete(phi_levels)``: the time-fair factor ``phi = k / (phi_levels - 1)`` for the
                        epoch (the operator's knob, paper §4.1); decision: the level ``k``
``dvfs``    ``ETFDVFS`` ``Discrete(len(frequency grid))``: the tenant's GPU level for the epoch (the efficiency
                        incentive, paper §6.6); decision: the level index
==========  ==========  =====================================================================================

The split mapping (``docs/families/etf.md``, "Action modes"): every active app first gets the action's floor
(Algorithm 1's guarantee ``m_i = min(floor(phi*w_i*T/W), d_i)`` with ``guarantee_mode="project"``, nothing with
``"none"``); the shares then split the rest of the interval by largest remainder, never above an app's
demand. A positive share on a slot that can take no unit (free, or at its demand) is ignored and all-zero
shares become equal shares; both set ``info["repaired"]``. :func:`~joulegym.envs.etf.allocation.units_to_action`
is the inverse (``encode``): ``a_i = r_i / max_j r_j`` with ``r`` the units above the floor, which reproduces
Algorithm 1 bit for bit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from joulegym.core.actions import (
    ActionType,
    validated_box_list,
    validated_discrete_action,
)
from joulegym.envs.etf.allocation import largest_remainder_list, units_to_action

if TYPE_CHECKING:  # pragma: no cover
    from joulegym.envs.etf.env import ETFEnv


class SplitAction(ActionType):
    """``split`` (``joulegym/ETF-v0``): shares of the interval above the action's floor."""

    name = "split"

    def __init__(self, env: ETFEnv) -> None:
        super().__init__(env)
        self.space = gym.spaces.Box(0.0, 1.0, (env.max_apps,), dtype=np.float32)
        self._room: list[int] | None = None  # the room units_for's cached values follow from

    @property
    def default_reward(self) -> str:
        """``etf`` under Algorithm 1's guarantee (it is optimal there), the paper's F_S without it."""
        return "etf" if self.env.config["guarantee_mode"] == "project" else "system_fairness"

    def decode(self, action: Any) -> list[int]:
        """Whole units per slot for ``action`` (raises ``ValueError`` on a malformed one)."""
        return self.units_for(validated_box_list(action, self.space))

    def units_for(self, shares: list[float]) -> list[int]:
        """:meth:`decode` of shares already checked and clipped to the space (a list of floats)."""
        env = self.env
        room = env.room
        if room is not self._room:  # the floor and room changed (a new app set or phi): what follows from them
            self._room, self._left = room, env.T - sum(env.action_floor)
            self._no_room, self._has_room = [k for k, r in enumerate(room) if r <= 0], any(room)
        self.repaired = False
        for k in self._no_room:  # a positive share on a slot that can take no unit is ignored
            if shares[k] > 0.0:
                self.repaired = True
                break
        left = self._left
        if left <= 0 or not self._has_room:
            return list(env.action_floor)
        kept = [a if r > 0 else 0.0 for a, r in zip(shares, room)]
        if sum(kept) <= 0.0:
            self.repaired = True
            kept = [1.0 if r > 0 else 0.0 for r in room]
        extra = largest_remainder_list(kept, left, room)
        return [u + e for u, e in zip(env.action_floor, extra)]

    def encode(self, decision: Any) -> np.ndarray:
        """The action whose decode is ``decision`` (whole units per slot, at least the floor)."""
        env = self.env
        return units_to_action(np.asarray(decision, dtype=np.int64), np.asarray(env.action_floor, dtype=np.int64),
                               np.asarray(env.sim.active, dtype=bool))


class _LevelAction(ActionType):
    """A ``Discrete`` level; every level is always allowed (the mask is all ones, for MaskablePPO)."""

    @property
    def has_mask(self) -> bool:
        return True

    def mask(self) -> np.ndarray:
        """All ones (a copy of one array: a fresh object per step, as Gymnasium's checker asks, without np.ones)."""
        mask = getattr(self, "_all_levels", None)
        if mask is None:
            mask = self._all_levels = np.ones(int(self.space.n), dtype=bool)
        return mask.copy()

    def decode(self, action: Any) -> int:
        return validated_discrete_action(action, self.space)

    def encode(self, decision: Any) -> int:
        return validated_discrete_action(decision, self.space, "decision")


class PhiAction(_LevelAction):
    """``phi`` (``joulegym/ETFPhi-v0``): the time-fair factor of the epoch; Algorithm 1 allocates."""

    name = "phi"
    default_reward = None  # the first preset: system_fairness

    def __init__(self, env: ETFEnv) -> None:
        super().__init__(env)
        self.levels = int(env.config["phi_levels"])
        self.space = gym.spaces.Discrete(self.levels)

    def phi_of(self, level: int) -> float:
        return level / (self.levels - 1)

    def level_of(self, phi: float) -> int:
        """The level nearest to ``phi``."""
        return round(phi * (self.levels - 1))


class DVFSAction(_LevelAction):
    """``dvfs`` (``joulegym/ETFDVFS-v0``): the tenant's GPU frequency level; a fixed scheduler allocates."""

    name = "dvfs"
    default_reward = None  # the first preset: throughput

    def __init__(self, env: ETFEnv) -> None:
        super().__init__(env)
        self.levels_mhz = env.levels_mhz
        self.space = gym.spaces.Discrete(len(self.levels_mhz))
