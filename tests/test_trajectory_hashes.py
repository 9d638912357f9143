"""Speed-ups keep trajectories and metrics bit-identical (issue 14): replay the reference episodes of
``benchmarks/trajectory_hashes.py`` and compare with the hashes stored in ``tests/data/trajectory_hashes.json``.

A deliberate dynamics change re-records its family with
``python benchmarks/trajectory_hashes.py --update --family <family>`` (and says so in the family's version
history).
"""

from __future__ import annotations

import pytest

from tests import scripts

trajectory_hashes = scripts.load("trajectory_hashes")

STORED = trajectory_hashes.load()


def test_hash_file_covers_the_default_families():
    assert set(trajectory_hashes.DEFAULT_FAMILIES) <= set(STORED)
    assert all(len(entries) >= 4 for entries in STORED.values())


@pytest.mark.filterwarnings("ignore::UserWarning")  # the env checker warns on vector rewards
@pytest.mark.parametrize("family", sorted(STORED))
def test_trajectories_unchanged(family):
    changed = trajectory_hashes.compare(family, STORED[family])
    assert not changed, (f"{len(changed)} reference episodes of {family!r} changed (re-record a deliberate change "
                         f"with benchmarks/trajectory_hashes.py --update --family {family}): {changed}")


def test_hash_sees_a_one_ulp_change():
    """The hash is exact: one ulp in a reward changes it (a check that could not fail would prove nothing)."""
    import hashlib

    import numpy as np

    def digest(value):
        h = hashlib.sha256()
        trajectory_hashes._update(h, value)
        return h.hexdigest()

    assert digest((np.float32([1.0]), 0.5, {"a": 1.0})) != digest((np.float32([1.0]), np.nextafter(0.5, 1.0),
                                                                    {"a": 1.0}))
    assert digest({"a": (1.0, 2.0)}) != digest({"a": (2.0, 1.0)})
