"""Sequential float summation that gives the same bits on every Python version.

Python 3.12 changed the built-in ``sum()`` over floats to compensated (Neumaier) summation (Python docs, "What's New
In Python 3.12", Other Language Changes), so ``sum(xs)`` on 3.12+ may differ in the last bits from 3.11's
left-to-right sum and from the slot-by-slot sums of the batched envs (``np.add.accumulate``). Where a single env's
sum must equal a batched row sum bit for bit (and keep the floats pinned on 3.11), it uses :func:`sequential_sum`.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from functools import reduce


def sequential_sum(values: Iterable[float]) -> float:
    """``((0 + x0) + x1) + ...`` left to right, as ``sum()`` computes it on Python <= 3.11 (the empty sum is ``0``,
    and a first ``-0.0`` becomes ``0.0`` as ``0 + -0.0`` does)."""
    return reduce(operator.add, values, 0)
