"""The cell-level parsing under :mod:`joulegym.workloads.traces`: reading a trace file's text and table, and
turning raw columns into checked numbers, times and strings, with the file line of every bad cell in the message
(the loaders' "Nothing is dropped silently" rule)."""

from __future__ import annotations

import csv
import io
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

# Raw cell values read as "missing" (lower-cased, stripped).
_MISSING = ("", "nan", "na", "n/a", "none", "null")


@dataclass
class _Context:
    """Where the rows of a table come from: file name and the file line of each row (for messages)."""

    name: str
    lines: np.ndarray
    unit: str = "line"

    def fail(self, pos: int, column: str, must: str, raw: Any) -> None:
        raise ValueError(f"{self.name} {self.unit} {self.lines[pos]}: {column} must be {must}, got {_show(raw)}")

    def subset(self, keep: np.ndarray) -> _Context:
        return _Context(self.name, self.lines[keep], self.unit)


def _show(raw: Any) -> str:
    return repr(raw.item() if isinstance(raw, np.generic) else raw)


def _read_text(path: Path) -> str:
    """The file as UTF-8 text; a byte that is not UTF-8 (a latin-1 or binary file) or a NUL byte is a
    ``ValueError`` naming its line and column (1-based, in characters before the bad byte)."""
    if not path.is_file():
        raise FileNotFoundError(f"trace file not found: {path}")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line, column = _line_column(data[: err.start].decode("utf-8-sig", errors="replace"))
        raise ValueError(
            f"{path.name} line {line} column {column}: a trace file must be UTF-8 text, got byte "
            f"0x{data[err.start]:02x} (a binary file, or another encoding such as latin-1: re-encode it as UTF-8)"
        ) from None
    nul = text.find("\0")
    if nul >= 0:  # pandas would read it as part of a cell: a binary file, not a CSV
        line, column = _line_column(text[:nul])
        raise ValueError(f"{path.name} line {line} column {column}: a trace file must be text, got a NUL byte")
    return text


def _line_column(before: str) -> tuple[int, int]:
    """1-based line and column of the character that follows ``before``."""
    return before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1


def _read_table(
    path: Path, text: str, *, names: tuple[str, ...] | None = None, sep: str = ",", quoting: int = csv.QUOTE_MINIMAL
) -> tuple[pd.DataFrame, _Context]:
    """All cells as stripped strings, blank lines removed, with the 1-based file line of each row."""
    if not text.strip():
        raise ValueError(f"{path.name}: empty file (no header, no rows)")
    header = 0 if names is None else None
    kind = "TSV" if sep == "\t" else "CSV"
    if names is None:  # pandas would rename a repeated column (or keep the last one after stripping): refuse it
        columns = [c.strip() for c in next(csv.reader([text.lstrip("\r\n").splitlines()[0]], delimiter=sep))]
        repeated = sorted({c for c in columns if columns.count(c) > 1})
        if repeated:
            raise ValueError(f"{path.name} line 1: column(s) {repeated} appear more than once; give each column once")
    try:
        with warnings.catch_warnings():
            # pandas truncates rows longer than the header with only a ParserWarning (index_col=False): an error here
            warnings.simplefilter("error", pd.errors.ParserWarning)
            df = pd.read_csv(
                io.StringIO(text), sep=sep, header=header, names=list(names) if names else None, dtype=str,
                keep_default_na=False, na_filter=False, skip_blank_lines=False, quoting=quoting, index_col=False,
            )  # fmt: skip
    except pd.errors.ParserWarning:
        _fail_long_row(path, text, names, sep, quoting)
        raise  # pragma: no cover (_fail_long_row raises)
    except (pd.errors.ParserError, UnicodeDecodeError, csv.Error) as err:
        raise ValueError(f"{path.name}: not a well-formed {kind} file: {str(err).strip()}") from err
    df.columns = [str(c).strip() for c in df.columns]  # cells keep their spaces: numbers are stripped when parsed
    # With skip_blank_lines=False row k is physical line k + 1 (+1 for a header) unless a quoted cell spans lines.
    physical = text.splitlines()
    first_line = 1 if names is not None else 2
    n_phys = len(physical) - (first_line - 1)
    blank_lines = np.array([not line.strip() for line in physical[first_line - 1 :]], dtype=bool)
    if n_phys == len(df):
        lines = np.arange(first_line, first_line + len(df))
        keep = ~blank_lines
    else:  # multi-line quoted cells: line numbers become row ordinals, blank rows are all-empty rows
        lines = np.arange(first_line, first_line + len(df))
        keep = ~(df == "").all(axis=1).to_numpy() if len(df) else np.zeros(0, dtype=bool)
    df = df.loc[keep].reset_index(drop=True)
    if not len(df):
        raise ValueError(f"{path.name}: no job rows (empty trace)")
    return df, _Context(path.name, lines[keep])


def _fail_long_row(path: Path, text: str, names: tuple[str, ...] | None, sep: str, quoting: int) -> None:
    """Raise naming the first row with more fields than the header (pandas would drop the surplus cells)."""
    reader = csv.reader(io.StringIO(text), delimiter=sep, quoting=quoting)
    width = len(names) if names is not None else None
    for row in reader:
        if not row or not any(cell.strip() for cell in row):
            continue
        if width is None:
            width = len(row)
        elif len(row) > width:
            raise ValueError(
                f"{path.name} line {reader.line_num}: a row has {len(row)} fields, more than the header's {width} "
                f"(extra cells {row[width:]!r}; nothing is dropped silently)"
            )
    raise ValueError(f"{path.name}: not a well-formed {'TSV' if sep == chr(9) else 'CSV'} file (a row is longer "
                     "than the header)")  # fmt: skip


def _require(ctx: _Context, df: pd.DataFrame, columns: list[str | tuple[str, ...]]) -> dict[str, str]:
    """Map each required column (or first present alias of a tuple) to its name in ``df``; raise naming all missing."""
    found, missing = {}, []
    for want in columns:
        options = (want,) if isinstance(want, str) else want
        hit = next((c for c in options if c in df.columns), None)
        if hit is None:
            missing.append(" or ".join(options))
        else:
            found[options[0]] = hit
    if missing:
        raise ValueError(f"{ctx.name}: missing required columns {missing}; header has {list(df.columns)}")
    return found


def _first_present(df: pd.DataFrame, *names: str) -> str | None:
    return next((c for c in names if c in df.columns), None)


def _parse(raw: np.ndarray, *, any_bad: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Float values, missing mask and unparsable mask of an object array of cells.

    :param any_bad: stop at the first unparsable cell (its mask entry is the only one set): enough to tell a
        text column from a numeric one without scanning every cell.
    """
    try:
        vals = raw.astype(np.float64)  # fast path, one C-level cast; Python float() accepts spaces, "nan", "1e3"
        return vals, np.isnan(vals), np.isinf(vals)
    except (TypeError, ValueError):
        pass
    if any_bad:  # a text column fails at its first non-missing cell: no need to parse the rest
        for pos, cell in enumerate(raw):
            text = str(cell).strip()
            if text.lower() in _MISSING:
                continue
            try:
                float(text)
            except ValueError:
                flag = np.zeros(raw.size, dtype=bool)
                flag[pos] = True
                return np.full(raw.size, np.nan), np.zeros(raw.size, dtype=bool), flag
    vals = pd.to_numeric(pd.Series(raw, dtype=object), errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    missing = np.zeros(raw.size, dtype=bool)
    bad = np.isinf(vals)
    odd = np.flatnonzero(np.isnan(vals))  # missing or not a number: only these cells are looked at as text
    is_missing = pd.Series(raw[odd], dtype=object).astype(str).str.strip().str.lower().isin(_MISSING).to_numpy()
    missing[odd[is_missing]] = True
    bad[odd[~is_missing]] = True
    return vals, missing, bad


def _numbers(
    ctx: _Context, s: pd.Series, column: str, *, required: bool = True, allow_inf: bool = False, must: str = ""
) -> tuple[np.ndarray, np.ndarray]:
    """Finite floats and the missing-value mask; raise at the first cell that is neither a number nor missing."""
    if pd.api.types.is_numeric_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype):
        vals = s.to_numpy(dtype=float, na_value=np.nan)
        missing, bad = np.isnan(vals), np.isinf(vals)
    else:
        vals, missing, bad = _parse(s.to_numpy(dtype=object))
    if allow_inf:
        bad = bad & ~np.isinf(vals)
    if required:
        bad = bad | missing
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        ctx.fail(pos, column, must or ("a number" if not required else "a (non-missing) number"), s.iloc[pos])
    return vals, missing


def _floats(
    ctx: _Context,
    s: pd.Series,
    column: str,
    *,
    required: bool = True,
    minimum: float | None = None,
    allow_inf: bool = False,
) -> np.ndarray:
    """Float64 column (NaN where missing, if allowed), optionally >= ``minimum``; +-inf only if ``allow_inf``."""
    vals, missing = _numbers(ctx, s, column, required=required, allow_inf=allow_inf)
    if minimum is not None:
        low = ~missing & (vals < minimum)
        if low.any():
            pos = int(np.flatnonzero(low)[0])
            ctx.fail(pos, column, f"a number >= {minimum:g}", s.iloc[pos])
    return vals


def _ints(
    ctx: _Context, s: pd.Series, column: str, *, minimum: int, default: int | None = None, what: str | None = None
) -> np.ndarray:
    """Int64 column of integral values >= ``minimum``; missing cells become ``default`` (an error if None)."""
    must = what or ("a positive integer" if minimum == 1 else f"an integer >= {minimum}")
    vals, missing = _numbers(ctx, s, column, required=default is None, must=must)
    # < 2**63: a larger value would wrap to INT64_MIN in the int64 cast below
    ok = missing | ((vals == np.floor(vals)) & (vals >= minimum) & (vals < 2.0**63))
    if not ok.all():
        pos = int(np.flatnonzero(~ok)[0])
        ctx.fail(pos, column, must if vals[pos] < 2.0**63 else f"{must}, at most 2**63 - 1 (int64)", s.iloc[pos])
    out = np.where(missing, default if default is not None else 0, vals)
    return out.astype(np.int64)


# A UTC offset after a time of day ("...06Z", "...06+02:00"); a bare date's "-13" is not one.
_TZ_SUFFIX = r"\d:\d{2}(?::\d{2}(?:\.\d*)?)?\s*(?:Z|[+-]\d{2}(?::?\d{2})?)$"


def _seconds_since_first(ctx: _Context, s: pd.Series, column: str) -> np.ndarray:
    """Seconds since the earliest of the ISO-8601 date-times ``s``.

    Stamps with a UTC offset are compared as instants (converted to UTC); a column that mixes stamps with and
    without an offset is an error (a naive stamp's zone is unknown), naming the first row that differs from the
    first row.
    """
    aware = s.str.strip().str.contains(_TZ_SUFFIX, regex=True).to_numpy(dtype=bool)
    if aware.any() and not aware.all():
        pos = int(np.flatnonzero(aware != aware[0])[0])
        zone = "with a UTC offset" if aware[0] else "without a UTC offset"
        ctx.fail(pos, column, f"a date-time {zone} like the first row's (time zones must not be mixed)", s.iloc[pos])
    try:
        stamps = pd.to_datetime(s, format="ISO8601", errors="coerce", utc=bool(aware.all()))
    except (ValueError, OverflowError):
        stamps = pd.Series(pd.NaT, index=s.index)  # unparsable as a whole: reported as the first row below
    bad = stamps.isna().to_numpy()
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        ctx.fail(pos, column, "a date-time 'YYYY-MM-DD hh:mm:ss' (ISO 8601)", s.iloc[pos])
    return ((stamps - stamps.min()) / pd.Timedelta(seconds=1)).to_numpy(dtype=float)


def _strings(s: pd.Series) -> np.ndarray:
    return s.astype(str).to_numpy(dtype=str) if len(s) else np.zeros(0, dtype=str)


def _as_array(s: pd.Series) -> np.ndarray:
    """A DataFrame column as a plain numpy array (pandas string columns become ``str`` arrays)."""
    if pd.api.types.is_string_dtype(s.dtype) and not pd.api.types.is_object_dtype(s.dtype):
        return _strings(s)
    if pd.api.types.is_object_dtype(s.dtype) and all(isinstance(v, str) for v in s):
        return _strings(s)
    return s.to_numpy()


def _auto(s: pd.Series) -> np.ndarray:
    """An unused source column for ``extra``: int64/float64 if every non-missing cell is a number, else str."""
    vals, missing, bad = _parse(s.to_numpy(dtype=object), any_bad=True)
    if bad.any() or missing.all():
        return _strings(s)
    if not missing.any() and np.all(vals == np.floor(vals)) and np.all(np.abs(vals) < 2**53):
        return vals.astype(np.int64)
    return vals


def _extras(df: pd.DataFrame, used: set[str]) -> dict[str, np.ndarray]:
    return {c: _auto(df[c]) for c in df.columns if c not in used}
