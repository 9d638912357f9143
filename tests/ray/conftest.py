"""One local Ray per test process (2 CPUs, no dashboard, its own short temp dir), shared by the Ray tests of that
process and shut down at the end of the session, so that ``pytest -n auto`` starts at most one Ray per xdist worker.
Every test module skips with a clear reason when Ray is not installed."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest

RAY_MISSING = 'Ray is not installed (pip install "joulegym[ray]"): the Ray integration tests skip'


@pytest.fixture(scope="session")
def local_ray() -> Iterator[Any]:
    ray = pytest.importorskip("ray", reason=RAY_MISSING)
    temp_dir = tempfile.mkdtemp(prefix="jgr")  # short: Ray's unix socket paths must stay under 107 characters
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=100 * 2**20, _temp_dir=temp_dir,
             log_to_driver=False, configure_logging=False)
    try:
        yield ray
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)
