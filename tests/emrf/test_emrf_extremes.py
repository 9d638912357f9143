"""Extreme but finite inputs to the EMRF/DRF/WFQ allocators: a feasible allocation (no NaN, within the device
capacities) or a ValueError naming the argument (issue: ``drf_allocate((400, 1e-320), ...)`` returned NaN).

TODO(hardening part two): a property test over wide magnitudes; HiGHS still fails on tiny absolute capacities
(e.g. (1e-30, 1e-30)) until the LP is solved in normalised units."""

from __future__ import annotations

import pytest

from joulegym.baselines.emrf import drf_allocate


def test_the_reported_case_is_rejected_naming_capacities():
    with pytest.raises(ValueError, match="capacities"):
        drf_allocate((400, 1e-320), [1e-320], [1e-320])
