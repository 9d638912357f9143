"""Where the tests find ``../shared/reference-data`` (read at run time, never copied into the repo)."""

from __future__ import annotations

from pathlib import Path

import pytest

REF = Path(__file__).resolve().parents[1] / ".." / "shared" / "reference-data"


def ref_file(*parts: str) -> Path:
    """A reference-data file, or skip the test with the reason (CI always has the checkout beside it)."""
    path = REF.joinpath(*parts)
    if not path.is_file():
        pytest.skip(f"reference data {path} is absent (../shared/reference-data is not shipped with the repo)")
    return path
