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
from joulegym.envs.etf.allocation import units_to_action
from joulegym.envs.etf.split import ONE, room_terms, split_units

if TYPE_CHECKING:  # pragma: no cover
    from joulegym.envs.etf.env import ETFEnv


class SplitAction(ActionType):
    """``split`` (``joulegym/ETF-v0``): shares of the interval above the action's floor."""

    name = "split"

    def __init__(self, env: ETFEnv) -> None:
        super().__init__(env)
        self.space = gym.spaces.Box(0.0, 1.0, (env.max_apps,), dtype=np.float32)
        self._room: list[int] | None = None  # the room (and floor) of the cached room_terms

    @property
    def default_reward(self) -> str:
        """``etf`` under Algorithm 1's guarantee (it is optimal there), the paper's F_S without it."""
        return "etf" if self.env.config["guarantee_mode"] == "project" else "system_fairness"

    def decode(self, action: Any) -> list[int]:
        """Whole units per slot for ``action`` (raises ``ValueError`` on a malformed one)."""
        return self.units_for(validated_box_list(action, self.space))

    def units_for(self, shares: list[float]) -> list[int]:
        """:meth:`decode` of shares already checked and clipped to the space (a list of floats): the split mapping
        of :mod:`joulegym.envs.etf.split` on this instance."""
        env = self.env
        room = env.room
        if room is not self._room:  # a new floor and room (a new app set or phi): what the mapping derives from them
            self._room, self._terms = room, room_terms(ONE, env.action_floor, room, env.T)
        units, self.repaired = split_units(ONE, shares, env.action_floor, room, self._terms)
        return units

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
