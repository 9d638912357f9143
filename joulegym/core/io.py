"""Result files written atomically: a temporary file in the same directory, then a rename.

An interrupted run leaves either the previous file or the complete new one, never half of it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any


def _tmp(path: Path) -> Path:
    return path.with_name(f".{path.stem}.tmp{os.getpid()}{path.suffix}")


def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write text or bytes to ``path`` atomically; returns the path."""
    path = Path(path)
    tmp = _tmp(path)
    try:
        with open(tmp, "wb" if isinstance(data, bytes) else "w") as handle:
            handle.write(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def write_csv(frame: Any, path: str | Path) -> Path:
    """Write a :class:`pandas.DataFrame` as CSV (no index) atomically."""
    return write_atomic(path, frame.to_csv(index=False))


def save_figure(fig: Any, path: str | Path, dpi: int = 120) -> Path:
    """Save a matplotlib figure atomically and close it."""
    import matplotlib.pyplot as plt

    path = Path(path)
    tmp = _tmp(path)
    try:
        fig.savefig(tmp, dpi=dpi, bbox_inches="tight")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
        plt.close(fig)
    return path
