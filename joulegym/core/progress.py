"""Progress of long work: a ``tqdm`` bar on a terminal, plain log lines otherwise.

The reproductions, suite evaluation, benchmarks and training call :func:`track` (an iterable) or
:class:`ProgressLog` (manual ``update``). On an interactive stream a ``tqdm`` bar is drawn; when the stream is
not a terminal (piped to a file, CI, a subprocess) plain lines ``[desc] k/n what (elapsed s)`` are written: the
first update and the one that reaches ``total`` always, the others at most one per ``interval_s`` seconds (updates
past the total too), and on ``close`` a final line when updates came after the last one, so a log file shows that
the work moves without being flooded. Lines go to ``stderr`` by default, leaving ``stdout`` to the results.
``JOULEGYM_PROGRESS=plain`` forces plain lines, ``=off`` silences both (e.g. inside tests that print tables).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import IO, Any, TypeVar

T = TypeVar("T")

#: Seconds between two plain lines (ours: often enough that a piped 10-minute run logs ~60 lines).
PLAIN_INTERVAL_S = 10.0
MODES = ("auto", "plain", "off")


def progress_mode() -> str:
    """``JOULEGYM_PROGRESS`` (``auto`` by default): ``auto``, ``plain`` or ``off``."""
    mode = os.environ.get("JOULEGYM_PROGRESS", "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise ValueError(f"JOULEGYM_PROGRESS must be one of {list(MODES)}, got {mode!r}")
    return mode


def is_terminal(stream: IO[str]) -> bool:
    """Whether ``stream`` is an interactive terminal (a bar can be redrawn in place)."""
    return bool(getattr(stream, "isatty", lambda: False)())


def log(message: str, stream: IO[str] | None = None) -> None:
    """One plain progress line (``[joulegym HH:MM:SS] message``), unless progress is ``off``."""
    if progress_mode() == "off":
        return
    out = stream if stream is not None else sys.stderr
    out.write(f"[joulegym {time.strftime('%H:%M:%S')}] {message}\n")
    out.flush()


class ProgressLog:
    """``total`` units of work called ``desc``: a tqdm bar on a terminal, periodic plain lines otherwise."""

    def __init__(self, total: int | None, desc: str, *, stream: IO[str] | None = None,
                 interval_s: float = PLAIN_INTERVAL_S, unit: str = "it") -> None:
        if total is not None and total < 0:
            raise ValueError(f"total must be >= 0 or None, got {total}")
        if interval_s < 0:
            raise ValueError(f"interval_s must be >= 0, got {interval_s}")
        self.total, self.desc, self.done, self.interval_s = total, desc, 0, interval_s
        self.lines = 0  # plain lines written so far (a caller resets its per-line statistics on a new one)
        self._reported = 0  # ``done`` at the last count line
        self._unreported: str | None = None  # ``what`` of the latest update not shown in a line
        self.stream = stream if stream is not None else sys.stderr
        self.start = self._last_line = time.perf_counter()
        mode = progress_mode()
        self.enabled = mode != "off"
        self._bar: Any = None
        if self.enabled and mode == "auto" and is_terminal(self.stream):
            try:
                from tqdm.auto import tqdm
            except ImportError:  # plain lines then
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(total=total, desc=desc, unit=unit, file=self.stream, leave=True)
        if self.enabled and self._bar is None:
            self._line(f"started ({'?' if total is None else total} {unit})")

    @property
    def plain(self) -> bool:
        """Whether plain lines (not a bar) are written."""
        return self.enabled and self._bar is None

    def _line(self, text: str) -> None:
        elapsed = time.perf_counter() - self.start
        self.stream.write(f"[{self.desc}] {text} ({elapsed:.1f} s)\n")
        self.stream.flush()
        self._last_line = time.perf_counter()
        self.lines += 1

    def update(self, n: int = 1, what: str = "") -> None:
        """``n`` more units done (``what``: the unit just finished, shown in the line / bar postfix)."""
        self.done += n
        if not self.enabled:
            return
        if self._bar is not None:
            if what:
                self._bar.set_postfix_str(what, refresh=False)
            self._bar.update(n)
            return
        reached = self.total is not None and self.done - n < self.total <= self.done  # this update reached it
        if self.done == n or reached or time.perf_counter() - self._last_line >= self.interval_s:
            self._count_line(what)
        else:
            self._unreported = what

    def _count_line(self, what: str) -> None:
        count = f"{self.done}/{self.total}" if self.total is not None else str(self.done)
        self._line(f"{count} {what}".rstrip())
        self._reported, self._unreported = self.done, None

    def close(self) -> None:
        """End the work: the bar closes; in plain lines, a final line if updates came after the last one."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self.plain and self._unreported is not None and self.done != self._reported:
            self._count_line(self._unreported)

    def __enter__(self) -> ProgressLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def track(items: Iterable[T], desc: str, *, total: int | None = None, stream: IO[str] | None = None,
          interval_s: float = PLAIN_INTERVAL_S, label=None) -> Iterator[T]:
    """Yield ``items`` while reporting progress; ``label(item) -> str`` names the finished item in the lines."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with ProgressLog(total, desc, stream=stream, interval_s=interval_s) as progress:
        for item in items:
            yield item
            progress.update(1, label(item) if label is not None else "")


class heartbeat:
    """``with heartbeat("reproduce dream"):`` — a start line, a ``still running`` line every ``interval_s`` seconds
    (from a daemon thread) and an end line with the elapsed time: work with no progress hooks of its own (a
    family's reproduction) is never silent. Plain lines, on a terminal too (no bar: the total is unknown)."""

    def __init__(self, desc: str, interval_s: float = 30.0, stream: IO[str] | None = None) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.desc, self.interval_s, self.stream = desc, interval_s, stream
        self._stop: Any = None
        self._thread: Any = None
        self.start = 0.0

    def __enter__(self) -> heartbeat:
        import threading

        self.start = time.perf_counter()
        log(f"{self.desc}: started", self.stream)
        self._stop = threading.Event()

        def beat() -> None:
            while not self._stop.wait(self.interval_s):
                log(f"{self.desc}: still running ({time.perf_counter() - self.start:.0f} s)", self.stream)

        self._thread = threading.Thread(target=beat, name=f"heartbeat {self.desc}", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        state = "failed" if exc_type is not None else "done"
        log(f"{self.desc}: {state} in {time.perf_counter() - self.start:.1f} s", self.stream)
