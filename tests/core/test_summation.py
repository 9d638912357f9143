"""`joulegym.core.summation`: the sequential sum gives the left-to-right bits on this Python."""

from __future__ import annotations

import numpy as np
import pytest

from joulegym.core.summation import left_to_right_sum, row_sums, sequential_sum


def _cancelling_rows(seed: int) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(2000):
        n = int(rng.integers(0, 12))
        scale = 10.0 ** rng.integers(-8, 9, size=n)
        rows.append(list((rng.standard_normal(n) * scale).astype(float)))
    rows += [[1e16, 1.0, -1e16], [0.1] * 10, [-0.0], [], [1e308, 1e308, -1e308]]
    return rows


@pytest.mark.parametrize("seed", [0, 1])
def test_sequential_sum_is_the_left_to_right_sum(seed):
    for row in _cancelling_rows(seed):
        expected = left_to_right_sum(row)
        got = sequential_sum(row)
        assert repr(got) == repr(expected), row


def test_left_to_right_sum_equals_numpy_slot_by_slot_accumulation():
    """Slot-by-slot accumulation in numpy (``np.add.accumulate``) gives the left-to-right bits too."""
    for row in _cancelling_rows(2):
        if row and all(np.isfinite(row)):
            assert left_to_right_sum(row) == np.add.accumulate(np.array(row))[-1]


def test_row_sums_are_the_sequential_sums_of_the_rows():
    """The batched envs' slot-order row sums give every row the single env's :func:`sequential_sum` bits (the sign of
    a zero total included), and a row without columns sums to 0.0."""
    rows = [row for row in _cancelling_rows(3) if row and all(np.isfinite(row))]
    rows += [[-0.0, -0.0], [-0.0, 1.0, -1.0], [0.0, -0.0]]
    for row in rows:
        got = row_sums(np.array([row])).tolist()[0]
        assert repr(got) == repr(float(sequential_sum(row))), row
    assert row_sums(np.zeros((3, 0))).tolist() == [0.0, 0.0, 0.0]
