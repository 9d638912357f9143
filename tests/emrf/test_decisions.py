"""The formulas the single EMRF env and the batched env share (joulegym/envs/emrf/decisions.py): one function, called
with Python numbers by the single env and with numpy arrays by the batched env, gives both the same bits (the batched
env's parity with the single env rests on it)."""

from __future__ import annotations

import math

import numpy as np

from joulegym.envs.emrf.decisions import (
    global_features,
    identity_features,
    residual_level,
    saturating_level,
    scalar_where,
)

CORNERS = [0.0, 5e-324, 1e-300, 1e-9, 0.3, 1.0, 7.5, 480.0, 1e300]


def _inputs(rng: np.random.Generator, count: int, width: int) -> np.ndarray:
    """``count`` rows of ``width`` non-negative values, corner values (0, denormals, huge) mixed in."""
    values = rng.random((count, width)) * 10.0
    corner = rng.random((count, width)) < 0.4
    return np.where(corner, rng.choice(CORNERS, (count, width)), values)


def _same_bits(numbers: list, array: np.ndarray) -> bool:
    return np.array_equal(np.array(numbers, dtype=np.float64).view(np.int64), array.view(np.int64))


def test_residual_level_on_numbers_and_on_arrays():
    """t' of ``residual_weights``: 0 when a needed device has no room left or no device is needed, else the level
    at which the first device of C' saturates; the same floats on numbers and on arrays."""
    assert residual_level(2.0, 1.0, 4.0, 4.0, scalar_where) == 1.0 / (2.0 / 4.0)
    assert residual_level(2.0, 1.0, 0.0, 4.0, scalar_where) == 0.0  # the CPU is needed and full
    assert residual_level(0.0, 1.0, 0.0, 4.0, scalar_where) == 1.0 / (1.0 / 4.0)  # the full CPU is not needed
    assert residual_level(0.0, 0.0, 4.0, 4.0, scalar_where) == 0.0  # no device needed: no level
    rows = _inputs(np.random.default_rng(0), 4000, 4)
    numbers = []
    for need_cpu, need_gpu, room_cpu, room_gpu in rows.tolist():
        try:
            numbers.append(residual_level(need_cpu, need_gpu, room_cpu, room_gpu, scalar_where))
        except ZeroDivisionError:  # a load that underflows to 0 (as the single env's former code raised)
            numbers.append(math.nan)
    keep = ~np.isnan(numbers)
    with np.errstate(all="ignore"):
        array = residual_level(*rows.T, np.where)
    assert keep.sum() > 3900
    assert _same_bits(np.array(numbers)[keep].tolist(), array[keep])


def test_saturating_level_on_numbers_and_on_arrays():
    rows = _inputs(np.random.default_rng(1), 4000, 2)
    rows = rows[(rows >= 1e-9).any(axis=1) & (rows < 1e300).all(axis=1)]  # some work on some device (normalised)
    caps = (24.0, 480.0)
    numbers = [saturating_level(a, b, *caps, max) for a, b in rows.tolist()]
    assert numbers[0] == 1.0 / max(rows[0, 0] / caps[0], rows[0, 1] / caps[1])
    assert _same_bits(numbers, saturating_level(rows[:, 0], rows[:, 1], *caps, np.maximum))


def test_observation_features_on_numbers_and_on_arrays():
    rng = np.random.default_rng(2)
    rows = _inputs(rng, 500, 12) + 1e-3  # divisors > 0
    c_tot = 504.0
    array = (*identity_features(*rows[:, :6].T, c_tot),
             *global_features(*rows[:, 6:11].T, 24.0, c_tot, np.arange(rows.shape[0]) % 9, 8,
                              np.minimum(rows[:, 11], 1.0)))
    array = np.stack([np.broadcast_to(a, rows.shape[0]) for a in array], axis=1).astype(np.float64)
    assert array.shape == (rows.shape[0], 6 + 7)
    for k, row in enumerate(rows.tolist()):
        numbers = (*identity_features(*row[:6], c_tot), *global_features(*row[6:11], 24.0, c_tot, k % 9, 8,
                                                                         min(row[11], 1.0)))
        assert _same_bits(list(numbers), array[k])
