"""Test-suite options.

``--reproduce`` runs the long paper reproductions (tests marked ``reproduce``); without it they are
skipped, so ``pytest -n auto`` stays within minutes. CI runs the fast suite; run
``pytest -m reproduce --reproduce`` for the reproductions.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--reproduce",
        action="store_true",
        default=False,
        help="also run the long paper reproductions (tests marked 'reproduce')",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--reproduce"):
        return
    skip = pytest.mark.skip(reason="long reproduction: run with --reproduce")
    for item in items:
        if "reproduce" in item.keywords:
            item.add_marker(skip)
