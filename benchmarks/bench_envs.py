"""Steps per second of joulegym envs next to a no-op env: now :mod:`harness` (the one benchmark harness).

``python benchmarks/bench_envs.py [args]`` runs ``python benchmarks/harness.py [args]``; the helpers that
``bench_powerflow.py`` and ``bench_emrf.py`` import (:class:`NoOpEnv`, :data:`NOOP_ID`, :class:`FixedActionPolicy`,
:func:`steps_per_second`, :func:`reference_policy_name`) live in :mod:`harness` and are re-exported here.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    NOOP_ID,
    FixedActionPolicy,
    NoOpEnv,
    cpu_steps_per_second,
    main,
    reference_policy_name,
    steps_per_second,
)

__all__ = ["NOOP_ID", "FixedActionPolicy", "NoOpEnv", "cpu_steps_per_second", "main", "reference_policy_name",
           "steps_per_second"]

if __name__ == "__main__":
    main()
