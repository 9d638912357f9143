"""The scripts of ``benchmarks/`` as modules, for the tests that run them or share their checks."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def load(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` imported as module ``name`` (the scripts import each other by plain name)."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    return importlib.import_module(name)
