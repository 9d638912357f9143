"""Result files and result directories (docs/robustness.md, "Result directories").

Files are written atomically: a temporary file in the same directory, then a rename, so an interrupted run leaves
either the previous file or the complete new one, never half of it.

A directory a run writes into is owned through a marker file, :data:`MARKER` (``.joulegym-run.json``), listing
the entries the run wrote. A run writes into a directory only when it does not exist, is empty or holds the
marker of an earlier joulegym run of the same kind and nothing else; it never deletes an entry its marker does
not list (:class:`ResultDir` for evaluation results, :func:`prepare_run_dir` for ``train.py`` runs).
"""

from __future__ import annotations

import json
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


# --- owned directories ----------------------------------------------------------------------------------------
MARKER = ".joulegym-run.json"
MARKER_FORMAT = 1
RESULTS = "results"  # the marker kind of evaluate.py's --out, --suite and --reproduce directories
RUN = "run"  # the marker kind of a train.py run directory
TUNING = "tuning"  # the marker kind of a ``python -m joulegym.tuning`` study directory
_STAGING = ".joulegym-staging"  # ``.<name>.joulegym-staging<pid>``: a run's new files, beside its directory


def read_marker(folder: str | Path) -> dict[str, Any] | None:
    """The marker of ``folder`` when it holds a valid one (a JSON object with a kind and a list of plain entry
    names), else None."""
    path = Path(folder) / MARKER
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not (isinstance(data, dict) and data.get("format") == MARKER_FORMAT and isinstance(data.get("kind"), str)
            and isinstance(data.get("entries"), list) and all(_plain_name(e) for e in data["entries"])):
        return None
    return data


def _plain_name(entry: Any) -> bool:
    return isinstance(entry, str) and entry not in ("", ".", "..", MARKER) and "/" not in entry and "\\" not in entry


def write_marker(folder: str | Path, kind: str, tool: str, entries: list[str], **extra: Any) -> Path:
    """Write ``folder``'s marker: ``kind`` (:data:`RESULTS`, :data:`RUN` or :data:`TUNING`), the program that
    wrote it and the top-level ``entries`` (files or folders) it owns."""
    from importlib import metadata

    try:
        version = metadata.version("joulegym")
    except metadata.PackageNotFoundError:  # a source checkout that is not installed
        version = "unknown"
    data = {"format": MARKER_FORMAT, "kind": kind, "tool": tool, "joulegym": version,
            "entries": sorted(set(entries)), **extra}
    return write_atomic(Path(folder) / MARKER, json.dumps(data, indent=2, sort_keys=True) + "\n")


def foreign_entries(folder: Path, marker: dict[str, Any] | None) -> list[str]:
    """The entries of ``folder`` its marker does not list (all of them without a marker)."""
    owned = set(marker["entries"]) if marker else set()
    return sorted(p.name for p in folder.iterdir() if p.name != MARKER and p.name not in owned)


def check_result_dir(out: str | Path, *, create: bool = False, flag: str = "--out", kind: str = RESULTS) -> Path:
    """``out`` as a directory a run may write into, checked before any work is done: not a file, writable (its
    parent, where :class:`ResultDir` stages the new files; ``out`` itself with ``create=True``, which creates
    it), and new, empty or written by an earlier joulegym run of ``kind`` holding nothing else.

    :raises ValueError: one line naming ``flag``, ``out`` and what is allowed.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{flag} {str(out)!r} is a file, not a directory")
    if out.is_dir():
        _check_owned(out, flag, kind)
    _check_writable(out if create else out.absolute().parent, out, flag)
    return out


def _check_writable(target: Path, out: Path, flag: str) -> None:
    try:
        target.mkdir(parents=True, exist_ok=True)
        probe = target / f".write-test{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        raise ValueError(f"{flag} {str(out)!r} is not writable ({err.strerror or err})") from None


def _check_owned(out: Path, flag: str, kind: str) -> dict[str, Any] | None:
    """The marker of the existing directory ``out``; ``ValueError`` if ``out`` holds anything but an earlier
    joulegym run of ``kind``."""
    marker = read_marker(out)
    if marker is not None and marker["kind"] != kind:
        raise ValueError(f"{flag} {str(out)!r} holds a joulegym {marker['kind']} directory (written by "
                         f"{marker.get('tool')}), not {kind}: choose a new or empty directory")
    foreign = foreign_entries(out, marker)
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise ValueError(f"{flag} {str(out)!r} holds files joulegym did not write ({shown}): choose a new or empty "
                         f"directory, or one an earlier joulegym run wrote (marked by {MARKER}); nothing was deleted")
    return marker


def remove_owned(folder: Path, marker: dict[str, Any] | None) -> None:
    """Remove the entries ``marker`` lists from ``folder``, then the marker; ``folder`` itself when that leaves
    it empty. Nothing else is touched."""
    for name in (marker or {}).get("entries", ()):
        _remove_entry(folder / name)
    (folder / MARKER).unlink(missing_ok=True)
    try:
        folder.rmdir()
    except OSError:
        pass  # something else is there: kept


def _exchange(a: Path, b: Path) -> bool:
    """Swap the directories ``a`` and ``b`` in one atomic step (Linux ``renameat2(RENAME_EXCHANGE)``); False
    where the system cannot."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        rename = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    return rename(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def _clean_stale_staging(out: Path) -> None:
    """Staging folders of ``out`` left by killed runs (their process is gone): removed through their markers."""
    for folder in out.parent.glob(f".{out.name}{_STAGING}*"):
        pid = folder.name.rpartition(_STAGING)[2]
        if not pid.isdigit() or int(pid) == os.getpid() or _alive(int(pid)):
            continue
        marker = read_marker(folder)
        if marker is not None and marker.get("kind") == RESULTS:
            remove_owned(folder, marker)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class ResultDir:
    """Write a run's files into a staging directory beside ``out`` and put them in place as a whole.

    ``with ResultDir(out) as tmp: ...`` writes into ``tmp``. On success the staging directory, with a marker
    listing its entries, and ``out`` are swapped in one atomic step (``renameat2(RENAME_EXCHANGE)``; elsewhere two
    renames), then the previous run's entries (those its marker lists) are removed: an interrupt leaves the
    previous complete set or the new one in ``out``. ``out`` must be new, empty or an earlier joulegym result
    directory holding nothing but what its marker lists (:func:`check_result_dir`); a file joulegym did not write
    is never deleted. On an exception the staging directory is removed and ``out`` is untouched.
    :meth:`final` maps a path inside ``tmp`` to its place in ``out``.
    """

    def __init__(self, out: str | Path, *, flag: str = "--out", tool: str = "evaluate.py") -> None:
        self.out = check_result_dir(out, flag=flag)
        self.flag, self.tool = flag, tool
        real = self.out.absolute()
        self._real = real.resolve() if real.is_symlink() else real
        self.tmp = self._real.with_name(f".{self._real.name}{_STAGING}{os.getpid()}")

    def __enter__(self) -> Path:
        _clean_stale_staging(self._real)
        if self.tmp.exists():
            remove_owned(self.tmp, read_marker(self.tmp))
        self.tmp.mkdir(parents=True)
        write_marker(self.tmp, RESULTS, self.tool, [], state="staging")
        return self.tmp

    def __exit__(self, exc_type, exc, tb) -> None:
        import shutil

        if exc_type is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)  # only this run's new files are there
            return
        entries = [p.name for p in self.tmp.iterdir() if p.name != MARKER]
        files = sorted(str(p.relative_to(self.tmp)) for p in self.tmp.rglob("*") if p.is_file() and p.name != MARKER)
        write_marker(self.tmp, RESULTS, self.tool, entries, files=files)
        out = self._real
        if not out.exists():
            os.rename(self.tmp, out)
            return
        try:
            previous = _check_owned(out, self.flag, RESULTS)  # again: files may have appeared during the run
        except ValueError:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise
        if not _exchange(self.tmp, out):
            old = out.with_name(f".{out.name}{_STAGING}old{os.getpid()}")
            os.rename(out, old)
            os.rename(self.tmp, out)
            self.tmp = old
        remove_owned(self.tmp, previous)  # the previous run's entries, now in the staging path

    def final(self, path: str | Path) -> Path:
        return self.out / Path(path).relative_to(self.tmp)


# --- train.py run directories ----------------------------------------------------------------------------------
RUN_ENTRIES = ("config.json", "checkpoints", "model.zip", ".model.tmp.zip", "agent", "best", "monitor", "tb",
               "learning_curve.png")


def prepare_run_dir(out: str | Path, *, resume: bool, overwrite: bool, tool: str = "train.py") -> Path:
    """Check (and create) a ``train.py`` run directory: new or empty (marked as a run); with ``resume``, one
    holding a run (``config.json``); with ``overwrite``, a run directory joulegym marked, whose marked entries
    are removed first (anything else in it is kept).

    :raises ValueError: one line naming ``--out``/``--resume``/``--overwrite`` and what is allowed.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {str(out)!r} is a file, not a directory")
    busy = out.is_dir() and any(out.iterdir())
    if resume:
        if not (out / "config.json").is_file():
            raise ValueError(f"--resume: {str(out)!r} holds no run (no config.json)")
        _check_writable(out, out, "--out")
        return out
    if busy and not overwrite:
        raise ValueError(f"--out {str(out)!r} is not empty: choose a new or empty directory, pass --resume to "
                         "continue the run there or --overwrite to replace it (only a run train.py wrote)")
    if busy:
        marker = read_marker(out)
        if marker is None or marker["kind"] != RUN:
            raise ValueError(f"--overwrite: {str(out)!r} was not written by train.py (no {MARKER} of a run); "
                             "--overwrite replaces only a train.py run's files: choose a new or empty directory")
        for name in marker["entries"]:
            _remove_entry(out / name)
    _check_writable(out, out, "--out")
    write_marker(out, RUN, tool, list(RUN_ENTRIES))
    return out


def _remove_entry(path: Path) -> None:
    import shutil

    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


# --- files joulegym wrote for this user -------------------------------------------------------------------------
RUN_KEY_ENV = "JOULEGYM_RUN_KEY"  # a file holding the key (default: the user data folder's run-key)


def _run_key() -> bytes:
    """This user's key for :func:`sign_file`: 32 random bytes in a file only the user can read, made once."""
    import secrets

    if os.environ.get(RUN_KEY_ENV):
        path = Path(os.environ[RUN_KEY_ENV]).expanduser()
    else:
        import platformdirs

        path = Path(platformdirs.user_data_dir("joulegym")) / "run-key"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(32))
        try:
            os.link(tmp, path)  # never replaces a key another process made first
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
    return path.read_bytes()


def sign_file(path: str | Path) -> str:
    """An HMAC-SHA256 of the file's bytes with this user's key: proof that this user's joulegym wrote it (a
    ``train.py`` checkpoint, which ``--resume`` unpickles)."""
    import hashlib
    import hmac

    digest = hmac.new(_run_key(), digestmod=hashlib.sha256)
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def signed_by_this_user(path: str | Path, signature: Any) -> bool:
    """True when ``signature`` is :func:`sign_file` of ``path`` (compared in constant time)."""
    import hmac

    return isinstance(signature, str) and Path(path).is_file() and hmac.compare_digest(sign_file(path), signature)
