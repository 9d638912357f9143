"""The event-slot shell of the event-driven families (PowerFlow; DREAM and Qin next).

An event-driven env sees a changing set of schedulable items (jobs, requests, threads) but has fixed
observation and action spaces, so items are shown in ``K`` **slots**: an item that becomes
schedulable takes the lowest free slot and keeps it until it leaves; items that find no free slot
wait in order, invisible to the agent (counted as ``overflow``). A policy may ask for a decision point
at a given simulated time (a **wake-up**, e.g. a queue-demotion time); the request travels with the
next committed decision.

:class:`SlotTable` holds that bookkeeping; the family keeps the per-slot features and masks.
:class:`SlotRows` keeps an env's slot rows as a view into its flat observation buffer across copies.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from typing import Any

import numpy as np


class SlotRows:
    """Mixin for an env whose flat observation buffer ``_obs_buf`` starts with ``K`` slot rows of
    ``slot_features`` values each, written through the ``(K, slot_features)`` view ``_slot_obs``.

    A copy (``copy.deepcopy``, ``pickle``) would turn the view into an array of its own, so writes to it would no
    longer reach the copy's buffer: the view is left out of the state and rebuilt on the copy's buffer.
    """

    slot_features: int  # the env class sets it: the width of one slot row
    K: int
    _obs_buf: np.ndarray
    _slot_obs: np.ndarray

    def _bind_slot_rows(self) -> None:
        """(Re)build ``_slot_obs`` as the view of the first ``K * slot_features`` values of ``_obs_buf``."""
        self._slot_obs = self._obs_buf[: self.K * self.slot_features].reshape(self.K, self.slot_features)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_slot_obs", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if "_obs_buf" in state:  # (an env kind without slot rows has no buffer)
            self._bind_slot_rows()


class SlotTable:
    """``K`` slots over a changing set of item ids (ints >= 0).

    :param num_slots: ``K``.
    """

    def __init__(self, num_slots: int) -> None:
        if int(num_slots) < 1:
            raise ValueError(f"num_slots must be >= 1, got {num_slots!r}")
        self.num_slots = int(num_slots)
        self.reset()

    def reset(self) -> None:
        self.items: list[int] = [-1] * self.num_slots  # item id per slot, -1 when free
        self.slot_of: dict[int, int] = {}
        self.overflow = 0
        self.overflow_steps = 0
        self._wakeup: float | None = None
        self._free = list(range(self.num_slots))  # a heap: the lowest free slot first
        self.freed: list[tuple[int, int]] = []  # (slot, item) freed by the last sync
        self.seated: list[tuple[int, int]] = []  # (slot, item) seated by the last sync

    def sync(self, present: Iterable[int]) -> bool:
        """Free the slots of items no longer present, then seat new ones in ``present``'s order.

        O(present items) with a heap of free slots (not O(K)); :attr:`freed` and :attr:`seated` record what
        changed.

        :param present: the schedulable item ids now, in priority order (e.g. arrival order).
        :returns: whether the seating changed.
        """
        present = present.tolist() if hasattr(present, "tolist") else [int(j) for j in present]
        keep = set(present)
        items, slot_of, free = self.items, self.slot_of, self._free
        self.freed, self.seated = [], []
        for j in sorted(slot_of.keys() - keep):
            k = slot_of.pop(j)
            items[k] = -1
            heapq.heappush(free, k)
            self.freed.append((k, j))
        for j in present if len(slot_of) < len(keep) else ():  # someone is still without a slot
            if j in slot_of:
                continue
            if not free:
                break
            k = heapq.heappop(free)
            items[k] = j
            slot_of[j] = k
            self.seated.append((k, j))
        self.overflow = len(keep) - len(slot_of)
        return bool(self.freed or self.seated)

    def count_step(self) -> None:
        """Count a decision step (for ``overflow_steps``: steps with items left outside the slots)."""
        if self.overflow > 0:
            self.overflow_steps += 1

    def occupied(self) -> list[tuple[int, int]]:
        """``(slot, item)`` of the occupied slots, in slot order."""
        return [(k, j) for k, j in enumerate(self.items) if j >= 0]

    # --- wake-ups ----------------------------------------------------------------------------------------
    def request_wakeup(self, t_s: Any) -> None:
        """Ask for a decision point at simulated time ``t_s`` (s; ``None``: no request) after the next
        committed decision. A later event may come first; the request is used once and dropped.

        :raises ValueError: if ``t_s`` is not a finite number (or None).
        """
        if t_s is None:
            self._wakeup = None
            return
        if isinstance(t_s, bool) or (not isinstance(t_s, int | float) and not hasattr(t_s, "__float__")):
            raise ValueError(f"wake-up time t_s must be a finite number of seconds or None, got {t_s!r}")
        value = float(t_s)
        if not math.isfinite(value):
            raise ValueError(f"wake-up time t_s must be a finite number of seconds or None, got {t_s!r}")
        self._wakeup = value

    def take_wakeup(self) -> float | None:
        """The pending wake-up request (and clear it)."""
        value, self._wakeup = self._wakeup, None
        return value
