"""Sequential float summation that gives the same bits on every Python version and in every batch row.

Python 3.12 changed the built-in ``sum()`` over floats to compensated (Neumaier) summation (Python docs, "What's New
In Python 3.12", Other Language Changes), so ``sum(xs)`` on 3.12+ may differ in the last bits from 3.11's
left-to-right sum and from the slot-by-slot sums of the batched envs. Where a single env's sum must equal a batched
row sum bit for bit (and keep the floats pinned on 3.11), it uses :func:`sequential_sum` over a list and the batch
:func:`row_sums` over the rows of an array: both add left to right from 0 (docs/testing.md, "``sum()`` over floats").
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Iterable
from functools import reduce

import numpy as np


def left_to_right_sum(values: Iterable[float]) -> float:
    """``((0 + x0) + x1) + ...`` left to right, as ``sum()`` computes it on Python <= 3.11 (the empty sum is ``0``,
    and a first ``-0.0`` becomes ``0.0`` as ``0 + -0.0`` does)."""
    return reduce(operator.add, values, 0)


#: :func:`left_to_right_sum`; on Python <= 3.11 the built-in ``sum``, which computes exactly that in C (the single
#: envs call it in their step, where the ``reduce`` form cost about 10 % of an EMRF step).
sequential_sum = sum if sys.version_info < (3, 12) else left_to_right_sum


def row_sums(values: np.ndarray) -> np.ndarray:
    """The :func:`sequential_sum` of every row of a ``(rows, n)`` array: ``((0.0 + x0) + x1) + ...`` column by column
    (``np.sum`` is pairwise and may round differently; ``np.add.accumulate`` along the rows gives the same bits but
    walks a strided axis). A sum from +0.0 is never -0.0, as ``sum()`` from the integer 0; a row without columns
    sums to 0.0; integer columns sum as float64. Columns left out of a sum must hold 0.0 (adding +0.0 is exact)."""
    total = np.zeros(values.shape[0], dtype=values.dtype if values.dtype.kind == "f" else np.float64)
    for column in values.T:
        total = total + column
    return total
