"""Where the tests find ``../shared/reference-data`` (read at run time, never copied into the repo).

The package itself never reads this folder: it resolves files through :mod:`joulegym.datasets` (the user cache
that ``python -m joulegym data fetch NAME`` fills, or ``$JOULEGYM_DATA``). The reference data has the registry's
layout (``<folder>/<file>``), so tests point the fetcher at it: as a data folder (``JOULEGYM_DATA=REF``,
:func:`use_reference_data`, or ``root=REF``), or as a mirror (``JOULEGYM_DATA_URL=file://REF`` or a loopback
HTTP server over it, tests/test_datasets.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

REF = (Path(__file__).resolve().parents[1] / ".." / "shared" / "reference-data").resolve()


def ref_file(*parts: str) -> Path:
    """A reference-data file, or skip the test with the reason (CI always has the checkout beside it)."""
    path = REF.joinpath(*parts)
    if not path.is_file():
        pytest.skip(f"reference data {path} is absent (../shared/reference-data is not shipped with the repo)")
    return path


def use_reference_data(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point :func:`joulegym.datasets.data_dir` at the reference data for one test (skip when it is absent)."""
    if not REF.is_dir():
        pytest.skip(f"reference data {REF} is absent (../shared/reference-data is not shipped with the repo)")
    monkeypatch.setenv("JOULEGYM_DATA", str(REF))
    return REF
