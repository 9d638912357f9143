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


def read_yaml(path: str | Path, what: str) -> Any:
    """The parsed YAML of the file ``path``, a ``ValueError`` naming ``what`` (e.g. ``"--sweep 'x.yml'"``) when the
    file does not exist or is not valid YAML (the first line of the parser's message)."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{what} does not exist (no such file)")
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ValueError(f"{what} is not valid YAML: "
                         f"{str(err).splitlines()[0] if str(err) else type(err).__name__}") from None


def check_result_dir(out: str | Path, *, create: bool = False) -> Path:
    """``out`` as a directory a run may write its results into, checked before any work is done: not a file,
    and writable (its parent, where :class:`ResultDir` builds the new directory; ``out`` itself with
    ``create=True``, which creates it).

    :raises ValueError: naming ``out`` and the problem.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {str(out)!r} is a file, not a directory")
    target = out if create else out.absolute().parent
    try:
        target.mkdir(parents=True, exist_ok=True)
        probe = target / f".write-test{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        raise ValueError(f"--out {str(out)!r} is not writable ({err.strerror or err})") from None
    return out


class ResultDir:
    """Write a run's files into a temporary directory beside ``out`` and move it into place as a whole.

    ``with ResultDir(out) as tmp: ...`` writes into ``tmp``; on success ``out`` is replaced by it (the previous
    ``out``, if any, is removed after the swap), so an interrupted run never leaves new files beside old ones.
    On an exception the temporary directory is removed and ``out`` is untouched. :meth:`final` maps a path
    inside ``tmp`` to its place in ``out``.
    """

    def __init__(self, out: str | Path) -> None:
        self.out = check_result_dir(out)
        self.tmp = self.out.with_name(f".{self.out.name}.tmp{os.getpid()}")

    def __enter__(self) -> Path:
        import shutil

        shutil.rmtree(self.tmp, ignore_errors=True)
        self.tmp.mkdir(parents=True)
        return self.tmp

    def __exit__(self, exc_type, exc, tb) -> None:
        import shutil

        if exc_type is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            return
        old = self.out.with_name(f".{self.out.name}.old{os.getpid()}")
        if self.out.exists():
            os.replace(self.out, old)
        os.replace(self.tmp, self.out)
        shutil.rmtree(old, ignore_errors=True)

    def final(self, path: str | Path) -> Path:
        return self.out / Path(path).relative_to(self.tmp)
