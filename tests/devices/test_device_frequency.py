"""FrequencyGrid: ascending DVFS levels in MHz (devices/frequency.py)."""

from __future__ import annotations

import numpy as np
import pytest

from joulegym.devices import FrequencyGrid


def test_basic_grid():
    grid = FrequencyGrid((114.75, 726.75, 1300.5))
    assert len(grid) == 3 and grid.min_mhz == 114.75 and grid.max_mhz == 1300.5
    assert grid.array.tolist() == [114.75, 726.75, 1300.5]
    grid.array[0] = 0.0  # a copy: the grid is unchanged
    assert grid.levels_mhz[0] == 114.75
    assert FrequencyGrid.from_sequence([1, 2]).levels_mhz == (1.0, 2.0)


def test_index_lookups():
    grid = FrequencyGrid((114.75, 726.75, 1300.5))
    assert grid.index_of(726.75) == 1 and grid.index_of(726.5) == 1  # within 0.5 MHz
    assert grid.nearest_index(1100.0) == 2 and grid.nearest_index(1000.0) == 1 and grid.nearest_index(0.0) == 0
    with pytest.raises(ValueError, match=r"frequency_mhz=1000.0 is not a level.*allowed: \[114.75, 726.75, 1300.5\]"):
        grid.index_of(1000.0)
    assert grid.step(1, +5) == 2 and grid.step(1, -5) == 0 and grid.step(0, 1) == 1


def test_linear():
    assert FrequencyGrid.linear(100, 200, 50).levels_mhz == (100.0, 150.0, 200.0)
    assert FrequencyGrid.linear(100, 200, 30).levels_mhz == (100.0, 130.0, 160.0, 190.0, 200.0)
    assert FrequencyGrid.linear(100, 100, 10).levels_mhz == (100.0,)
    with pytest.raises(ValueError, match="step_mhz"):
        FrequencyGrid.linear(100, 200, 0)
    with pytest.raises(ValueError, match="low_mhz <= high_mhz"):
        FrequencyGrid.linear(200, 100, 10)


@pytest.mark.parametrize("levels", [(), (100.0, 100.0), (200.0, 100.0), (0.0, 100.0), (-5.0,), (np.nan,),
                                    (np.inf,), ((1.0, 2.0),)])
def test_invalid_grids(levels):
    with pytest.raises(ValueError, match="levels_mhz"):
        FrequencyGrid(levels)
