"""A bounded memo cache: a dict that forgets everything when it is full.

Simulators and policies cache results keyed by the *content* of their inputs (the active set, the
weights, a phi level, ...). Clearing the whole dict when it reaches ``maxsize`` keeps memory bounded
at the cost of an occasional recomputation; lookups stay a plain ``dict.get``.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")

DEFAULT_MAXSIZE = 4096  # distinct keys kept before the cache is emptied


class BoundedCache(dict, Generic[V]):
    """``dict`` with :meth:`get_or_compute`; emptied when it holds ``maxsize`` entries."""

    def __init__(self, maxsize: int = DEFAULT_MAXSIZE) -> None:
        super().__init__()
        if maxsize < 1:
            raise ValueError(f"maxsize must be >= 1, got {maxsize!r}")
        self.maxsize = int(maxsize)

    def get_or_compute(self, key: Hashable, compute: Callable[[], V]) -> V:
        """The cached value for ``key``, computing (and keeping) it on a miss."""
        value = self.get(key)
        if value is None:
            if len(self) >= self.maxsize:
                self.clear()
            value = self[key] = compute()
        return value

    def put(self, key: Hashable, value: V) -> V:
        if key not in self and len(self) >= self.maxsize:
            self.clear()
        self[key] = value
        return value

    def __reduce__(self):  # pickles as a cache, not as a dict subclass without its maxsize
        return (type(self), (self.maxsize,), None, None, iter(self.items()))
