"""The ``split`` action mapping, written once for one instance and for a batch of instances (``docs/families/etf.md``,
"Action modes").

Every active app first gets the action's floor; the shares then split the rest of the interval by largest remainder
(Hamilton's method), never above an app's room (its demand, less the floor): a capped app's overflow goes to the
others in proportion to their shares, round after round. A positive share on a slot without room is ignored and
all-zero shares become equal shares on the slots with room; both mark the action ``repaired``.

The single env (:class:`~joulegym.envs.etf.actions.SplitAction`), the batched vector env
(:mod:`joulegym.envs.etf.vector`) and :func:`~joulegym.envs.etf.allocation.largest_remainder` run the functions
here. A *vector* holds one value per slot: a list in one instance (:data:`ONE`), a ``(rows, slots)`` array in a
batch (:data:`ROWS`); a per-instance value (the units left, whether a round goes on) is a Python number or an array
with one value per row. The algorithm, its branches and the order of its operations are written once below; the ops
object gives the few slot-wise primitives (a masked copy, a slot-order sum, a floor, the ranks of the
remainders), each of them one comprehension on lists and one or two array operations on rows. A branch that
depends on values is a mask (``pick``/``choose``): in one instance it is a plain choice, in a batch a ``where``.
Sums over slots run slot by slot from slot 0 (:func:`~joulegym.core.summation.sequential_sum` over a list,
:func:`~joulegym.core.summation.row_sums` over rows), so one instance and a row of a batch get the same units on every
Python.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from joulegym.core.summation import row_sums, sequential_sum

NUDGE = 1e-9  # a quota that is whole in exact arithmetic (2.9999999999999996) is not floored down
RENORMALISE_ABOVE = 1e300  # a scale above this ((sub)normal-tiny quotas): divide the quotas by their maximum first


class OneInstance:
    """One instance: vectors are lists over the slots, per-instance values Python numbers."""

    @staticmethod
    def pick(condition: bool, value: Any, other: Any) -> Any:
        return value if condition else other

    choose = pick  # a whole vector or another
    some = staticmethod(bool)
    total = staticmethod(sequential_sum)  # slot by slot on every Python (3.12's sum() is compensated)

    @staticmethod
    def opened(room: list[int]) -> list[bool]:
        return [r > 0 for r in room]

    @staticmethod
    def any_of(mask: list[bool]) -> bool:
        return True in mask

    @staticmethod
    def closed(room: list[int]) -> list[int]:
        """The slots that can take no unit (their indices)."""
        return [k for k, r in enumerate(room) if r <= 0]

    @staticmethod
    def misplaced(shares: list[float], closed: list[int]) -> bool:
        """A positive share on a slot that can take no unit."""
        for k in closed:
            if shares[k] > 0.0:
                return True
        return False

    @staticmethod
    def keep(values: list[float], mask: list[bool]) -> list[float]:
        """``values`` on the slots of ``mask``, 0.0 elsewhere."""
        return [v if m else 0.0 for v, m in zip(values, mask)]

    @staticmethod
    def ones(mask: list[bool]) -> list[float]:
        return [1.0 if m else 0.0 for m in mask]

    @staticmethod
    def below(out: list[int], caps: list[int]) -> list[bool]:
        return [o < c for o, c in zip(out, caps)]

    @staticmethod
    def divided(values: list[float], by: float) -> list[float]:
        return [v / by for v in values]

    @staticmethod
    def times(values: list[float], by: float) -> list[float]:
        return [v * by for v in values]

    @staticmethod
    def top(values: list[float]) -> float:
        return max(values)

    @staticmethod
    def floors(values: list[float]) -> list[int]:
        """``floor(x + NUDGE)`` of values >= 0 (``int`` of a value >= 0 is its floor)."""
        return [int(x + NUDGE) for x in values]

    @staticmethod
    def shift_smallest(units: list[int], keys: list[float], count: int, delta: int) -> list[int]:
        """``units`` with ``delta`` added to the ``count`` slots of the smallest finite ``keys`` (a stable order:
        ties to the lower slot)."""
        out = list(units)
        for slot in sorted(range(len(keys)), key=keys.__getitem__)[:count]:
            if keys[slot] < math.inf:
                out[slot] += delta
        return out

    @staticmethod
    def remainders_up(floors: list[int], share: list[float]) -> list[float]:
        return [f - x for f, x in zip(floors, share)]

    @staticmethod
    def remainders_down(floors: list[int], share: list[float]) -> list[float]:
        return [x - f if f > 0 else math.inf for f, x in zip(floors, share)]

    @staticmethod
    def take(units: list[int], out: list[int], caps: list[int], live: list[float]) -> tuple[list, list, int, bool]:
        """Each slot takes its ``units``, at most its room ``cap - out``; a slot that reaches its cap takes no more
        quota: ``(out, live, units taken, whether a slot reached its cap)``."""
        out, live = list(out), list(live)
        taken, hit = 0, False
        for k, u in enumerate(units):
            if u > 0:
                room = caps[k] - out[k]
                if u >= room:
                    u, live[k], hit = room, 0.0, True
                out[k] += u
                taken += u
        return out, live, taken, hit

    @staticmethod
    def add(a: list, b: list) -> list:
        return [x + y for x, y in zip(a, b)]

    copy = staticmethod(list)

    @staticmethod
    def zeros(like: list) -> list[int]:
        return [0] * len(like)


class Rows:
    """A batch: vectors are ``(rows, slots)`` arrays, per-instance values arrays with one value per row."""

    pick = staticmethod(np.where)

    @staticmethod
    def total(values: np.ndarray) -> np.ndarray:
        """Slot-order row sums (whole units: exact in any order)."""
        return values.sum(axis=1) if values.dtype.kind == "i" else row_sums(values)

    @staticmethod
    def choose(condition: np.ndarray, value: np.ndarray, other: np.ndarray) -> np.ndarray:
        return np.where(condition[:, None], value, other)

    @staticmethod
    def some(condition: Any) -> bool:
        return bool(np.any(condition))

    @staticmethod
    def opened(room: np.ndarray) -> np.ndarray:
        return room > 0

    @staticmethod
    def any_of(mask: np.ndarray) -> np.ndarray:
        return mask.any(axis=1)

    @staticmethod
    def closed(room: np.ndarray) -> np.ndarray:
        return room <= 0

    @staticmethod
    def misplaced(shares: np.ndarray, closed: np.ndarray) -> np.ndarray:
        return ((shares > 0.0) & closed).any(axis=1)

    @staticmethod
    def keep(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return np.where(mask, values, 0.0)

    @staticmethod
    def ones(mask: np.ndarray) -> np.ndarray:
        return mask.astype(np.float64)

    @staticmethod
    def below(out: np.ndarray, caps: np.ndarray) -> np.ndarray:
        return out < caps

    @staticmethod
    def divided(values: np.ndarray, by: np.ndarray) -> np.ndarray:
        return values / by[:, None]

    @staticmethod
    def times(values: np.ndarray, by: np.ndarray) -> np.ndarray:
        return values * by[:, None]

    @staticmethod
    def top(values: np.ndarray) -> np.ndarray:
        return values.max(axis=1)

    @staticmethod
    def floors(values: np.ndarray) -> np.ndarray:
        return np.floor(values + NUDGE).astype(np.int64)

    @staticmethod
    def shift_smallest(units: np.ndarray, keys: np.ndarray, count: np.ndarray, delta: int) -> np.ndarray:
        """Per row, ``units`` with ``delta`` added to the ``count`` slots of the smallest finite ``keys`` (a stable
        order: ties to the lower slot; nothing where ``count <= 0``)."""
        order = np.argsort(keys, axis=1, kind="stable")
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.broadcast_to(np.arange(order.shape[1]), order.shape), axis=1)
        return units + np.where((rank < count[:, None]) & (keys < math.inf), delta, 0)

    @staticmethod
    def remainders_up(floors: np.ndarray, share: np.ndarray) -> np.ndarray:
        return floors - share

    @staticmethod
    def remainders_down(floors: np.ndarray, share: np.ndarray) -> np.ndarray:
        return np.where(floors > 0, share - floors, math.inf)

    @staticmethod
    def take(units: np.ndarray, out: np.ndarray, caps: np.ndarray, live: np.ndarray) -> tuple[np.ndarray, ...]:
        room = caps - out
        hit = (units > 0) & (units >= room)
        give = np.where(hit, room, units)
        return out + give, np.where(hit, 0.0, live), give.sum(axis=1), hit.any(axis=1)

    @staticmethod
    def add(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return a + b

    @staticmethod
    def copy(values: np.ndarray) -> np.ndarray:
        return values.copy()

    @staticmethod
    def zeros(like: np.ndarray) -> np.ndarray:
        return np.zeros(like.shape, dtype=np.int64)


ONE = OneInstance()
ROWS = Rows()


def room_terms(ops: Any, floor: Any, room: Any, T: int) -> tuple[Any, ...]:
    """What the mapping derives from the ``floor`` and the ``room`` alone (the single env keeps it while they hold):
    the slots with room and those without, the units left above the floor of ``T`` and whether there is anything
    to split."""
    opened = ops.opened(room)
    left = T - ops.total(floor)
    return opened, ops.closed(room), left, (left > 0) & ops.any_of(opened)


def split_units(ops: Any, shares: Sequence[Any], floor: Any, room: Any, terms: tuple[Any, ...]) -> tuple[Any, Any]:
    """Whole units per slot for checked ``shares`` above ``floor`` (units), at most ``room`` more units per slot;
    and whether the action was repaired (module docstring). ``terms``: :func:`room_terms` of the floor and room."""
    opened, closed, left, work = terms
    repaired = ops.misplaced(shares, closed)
    if not ops.some(work):
        return ops.copy(floor), repaired
    kept = ops.keep(shares, opened)
    empty = work & (ops.total(kept) <= 0.0)
    if ops.some(empty):  # all-zero shares on the slots with room: equal shares there
        repaired = repaired | empty
        kept = ops.choose(empty, ops.ones(opened), kept)
    extra = largest_remainder(ops, kept, ops.pick(work, left, 0), room, opened)
    return ops.add(floor, extra), repaired


def largest_remainder(ops: Any, quotas: Any, total: Any, caps: Any, opened: Any = None) -> Any:
    """Non-negative ``quotas`` rounded to whole units summing to ``total``, never above ``caps`` (Hamilton's method;
    a capped slot's overflow goes to the others in proportion to their quotas, round after round); fewer units only
    when every slot is at its cap. ``opened``: the slots with ``caps > 0`` when the caller has them."""
    pick, some, total_of, choose = ops.pick, ops.some, ops.total, ops.choose
    out = ops.zeros(quotas)
    live = ops.keep(quotas, ops.opened(caps) if opened is None else opened)
    left = total
    going = left > 0
    while some(going):
        mass = total_of(live)
        dry = going & (mass <= 0.0)
        if some(dry):  # every positive quota is capped: spread over the slots with room
            live = choose(dry, ops.ones(ops.below(out, caps)), live)
            mass = pick(dry, total_of(live), mass)
            going = going & (mass > 0.0)
        scale = pick(going, left / pick(going, mass, 1.0), 0.0)
        tiny = going & (scale > RENORMALISE_ABOVE)
        if some(tiny):  # renormalise so that q * scale stays finite
            live = choose(tiny, ops.divided(live, pick(tiny, ops.top(live), 1.0)), live)
            scale = pick(tiny, left / pick(tiny, total_of(live), 1.0), scale)
        units = hamilton(ops, ops.times(live, scale), pick(going, left, 0))  # 0 units where done
        out, live, taken, capped = ops.take(units, out, caps, live)
        left = left - taken
        going = going & capped & (left > 0)
    return out


def hamilton(ops: Any, share: Any, total: Any) -> Any:
    """Non-negative ``share`` floored (with :data:`NUDGE`) to whole units summing to ``total``: the largest remainders
    get one more unit, ties to the lowest slot; a sum above ``total`` (only through the nudge) gives units back from
    the smallest remainders of the slots that have one."""
    floors = ops.floors(share)
    rest = total - ops.total(floors)
    some = ops.some
    if some(rest > 0):
        floors = ops.shift_smallest(floors, ops.remainders_up(floors, share), rest, 1)
    if some(rest < 0):
        floors = ops.shift_smallest(floors, ops.remainders_down(floors, share), -rest, -1)
    return floors
