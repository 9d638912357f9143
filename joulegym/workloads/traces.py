"""Job traces of GPU clusters: the common record and the loaders of public trace formats.

A :class:`JobTrace` is a column store (numpy arrays, one entry per job, sorted by submit time): the
form every simulator of joulegym consumes, whatever the source (a real trace file or a seeded
synthetic generator). Loaders for the public formats live in this module (:func:`load_trace`; the
cell-level parsing they share is :mod:`joulegym.workloads.trace_parsing`); family-specific conversion
(e.g. a Philly duration into PowerFlow training iterations) is done by the family, not here.

Units: seconds for times, GPUs as whole counts.

Formats read by :func:`load_trace` (``format="auto"`` picks one from the header line):

============ ====================================== ========================================= ==========================
format       source                                 columns used -> JobTrace field            units
============ ====================================== ========================================= ==========================
``openb``    Alibaba ``cluster-trace-gpu-v2023``    ``name`` -> job_id; ``creation_time`` ->  times in s; ``gpu_milli``
             ``openb_pod_list_*.csv`` (one row per  submit; ``deletion_time - creation_time``  in 1/1000 GPU per GPU
             pod)                                   -> duration (pod lifetime); ``num_gpu`` x
                                                    ``gpu_milli`` / 1000 -> num_gpus (ceil)
``pai2020``  Alibaba ``cluster-trace-gpu-v2020``    grouped by ``job_name``: earliest task    times in s; ``plan_gpu``
             ``pai_task_table.csv`` (headerless as  ``start_time`` -> submit; last            in % of one GPU per
             published; column names from           ``end_time`` - first ``start_time`` ->    instance
             ``pai_task_table.header``)             duration; sum of ``inst_num`` x
                                                    ``plan_gpu`` / 100 -> num_gpus (ceil)
``philly``   ElasticFlow ``philly_103959.csv``,     ``job_id``; ``submit_time`` -> submit;    s; GPUs
             Tiresias ``60_job.csv``, or any CSV    ``num_gpu``/``num_gpus``; ``duration``;
             with ``submit_time`` and ``num_gpu``   ``model_name``/``model``; ``batch_size``;
             (the spec's user CSV)                  ``iteration``/``iterations``
``philly``   Pollux ``philly.csv`` and its 24 h     ``timestamp`` (``YYYY-MM-DD hh:mm:ss``)  s; GPUs
             slice (``timestamp,duration,           -> submit; ``num_gpus``; ``duration``
             num_gpus,gpu_time,cluster``)           (no model, batch size or iterations)
``gavel``    Gavel ``*.trace`` (headerless, tab-    ``job_type`` "Model (batch size B)" ->    s; steps
             separated; 7 fields as in ``msr/``,    model, batch_size; ``total_steps`` ->
             10 fields as in ``physical_cluster``)  iterations; ``scale_factor`` -> num_gpus;
                                                    ``arrival_time`` -> submit (no duration)
``joulegym`` :func:`save_trace` output              every field; extras typed in the header   as in :class:`JobTrace`
============ ====================================== ========================================= ==========================

Decisions:

- **Fractional GPUs** (OpenB ``gpu_milli`` < 1000, PAI ``plan_gpu`` < 100): ``num_gpus`` is the
  *ceiling* of the total GPU request (a job holding half a GPU still occupies one in a
  whole-GPU simulator). The exact request is kept as ``extra["gpu_request"]`` (float, GPUs) next to
  the raw columns. A request of 0 (a CPU-only pod or job) is an error unless ``drop_zero_gpu=True``.
- **Missing values** become ``model=""``, ``batch_size=0``, ``iterations=NaN``, ``duration_s=NaN``;
  ``job_id`` defaults to the 0-based row number in file order (as a string) when the source has none.
- **Names are kept as written** (``resnet50``, ``ResNet-50``): mapping them onto a family's model
  catalog is the family's job.
- **Nothing is dropped silently.** Rows are only dropped through the explicit keywords
  ``drop_zero_gpu`` and ``drop_unstarted``; :func:`load_trace_with_report` returns how many rows each
  removed (:class:`TraceLoadReport`). Blank lines are not rows. Every other malformed row raises a
  ``ValueError`` "``<file> line <n>: <column> must be ..., got '<raw>'``" (1-based, the header is line
  1; in a headerless file the first row is line 1; if a quoted cell spans lines, rows are numbered as if
  each took one line). Among them: a row with more fields than the header, a repeated job id, an integer
  outside int64 (never wrapped), a submit time that is infinite or whose span overflows, a Pollux column
  mixing stamps with and without a UTC offset (stamps that all carry one are compared in UTC). A file that
  is not UTF-8 text (binary, latin-1, a NUL byte) raises naming the line and the character column.
- **OpenB durations** are pod lifetimes (``deletion_time - creation_time``, the FGD convention), so they
  include any pending time, and ``Running`` pods are cut at the end of the trace; ``pod_phase`` and
  ``scheduled_time`` (NaN for ``Pending`` pods) are in ``extra`` for callers who filter.
- **PAI-2020 submit times** are the first task *launch* (the task table has no submission time; the
  submission is ``pai_job_table.start_time``, not joined here). A task ``start_time``/``end_time`` of 0
  or empty means not launched / not finished; a job with an unfinished task has ``duration_s=NaN``.
  ``extra["status"]`` is the tasks' common status (``"mixed"`` if they differ): filter with
  :meth:`JobTrace.select` (e.g. PowerFlow §6.3 keeps ``Terminated`` whole-GPU jobs).
- Unused source columns go into ``extra`` under their own names, numeric when every non-empty value
  parses as a number, else as strings; times there are *not* rebased.
"""

from __future__ import annotations

import csv
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from joulegym.workloads.trace_parsing import (
    _as_array,
    _auto,
    _Context,
    _extras,
    _first_present,
    _floats,
    _ints,
    _read_table,
    _read_text,
    _require,
    _seconds_since_first,
    _strings,
)

#: Accepted values of ``format`` in :func:`load_trace` ("auto" detects one of the others).
FORMATS: tuple[str, ...] = ("openb", "pai2020", "philly", "gavel", "joulegym")

#: Column order of the headerless PAI-2020 task table, from ``cluster-trace-gpu-v2020/data/pai_task_table.header``.
PAI2020_TASK_COLUMNS: tuple[str, ...] = (
    "job_name", "task_name", "inst_num", "status", "start_time", "end_time",
    "plan_cpu", "plan_mem", "plan_gpu", "gpu_type",
)  # fmt: skip
#: Field order of Gavel traces (stanford-futuredata/gavel ``scheduler/traces``, as listed in the shared
#: reference-data PROVENANCE.md): ``traces/msr/*`` have 7 fields, ``traces/physical_cluster/*`` the current 10.
GAVEL_COLUMNS_7: tuple[str, ...] = (
    "job_type", "command", "num_steps_arg", "needs_data_dir", "total_steps", "arrival_time", "scale_factor",
)  # fmt: skip
GAVEL_COLUMNS_10: tuple[str, ...] = (
    "job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir", "total_steps",
    "scale_factor", "priority_weight", "SLO", "arrival_time",
)  # fmt: skip

# A fractional request within this many GPUs of an integer is that integer: PAI plan_gpu (%) times
# inst_num can land at 1.0000000000000002 in binary floating point.
_GPU_EPS = 1e-9
_GAVEL_JOB_TYPE = re.compile(r"^(?P<model>.*?)\s*\(batch size (?P<bs>\d+)\)\s*$")


@dataclass(frozen=True)
class JobTrace:
    """One job per index, sorted by ``submit_time_s`` (stable: ties keep file order).

    :param job_id: job identifiers (str array).
    :param submit_time_s: submit time relative to the first job (s, float64, starts at 0).
    :param num_gpus: GPUs requested (int64, >= 1).
    :param duration_s: measured run time in the source trace (s, float64; NaN when unknown).
    :param model: DNN model name (str array; ``""`` when the source does not say).
    :param batch_size: global batch size (int64; 0 when unknown).
    :param iterations: training iterations (float64; NaN when unknown).
    :param source: where the trace came from (path or generator description).
    :param extra: further per-job columns of the source (name -> array), untouched.
    """

    job_id: np.ndarray
    submit_time_s: np.ndarray
    num_gpus: np.ndarray
    duration_s: np.ndarray
    model: np.ndarray
    batch_size: np.ndarray
    iterations: np.ndarray
    source: str = ""
    extra: dict[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.job_id.size)

    def head(self, n: int) -> JobTrace:
        """The first ``n`` jobs (by submit time)."""
        return self.select(np.arange(min(n, len(self))))

    def select(self, index: Any) -> JobTrace:
        """The jobs at ``index`` (a mask or integer array), re-based so the first submit is 0."""
        pick = {name: getattr(self, name)[index] for name in _COLUMNS}
        if pick["submit_time_s"].size:
            pick["submit_time_s"] = pick["submit_time_s"] - pick["submit_time_s"].min()
        extra = {k: v[index] for k, v in self.extra.items()}
        return JobTrace(**pick, source=self.source, extra=extra)

    def to_dataframe(self) -> pd.DataFrame:
        """One row per job: the seven fields in order, then the ``extra`` columns; ``attrs["source"]`` = source.

        :raises ValueError: if an ``extra`` name equals a field name (the columns would collide).
        """
        clash = sorted(set(self.extra) & set(_COLUMNS))
        if clash:
            raise ValueError(f"extra columns {clash} collide with JobTrace fields {list(_COLUMNS)}")
        df = pd.DataFrame({name: getattr(self, name) for name in _COLUMNS} | dict(self.extra))
        df.attrs["source"] = self.source
        return df

    @classmethod
    def from_dataframe(cls, df: pd.DataFrame, source: str | None = None) -> JobTrace:
        """A validated, sorted (stable) and re-based trace from a table with the field names as columns.

        :param df: ``submit_time_s`` (s) and ``num_gpus`` (int >= 1) are required; ``job_id``, ``duration_s``
            (s, >= 0), ``model``, ``batch_size`` (int >= 0) and ``iterations`` (>= 0) are optional (defaults as in
            the module docstring); every other column goes to ``extra`` as is.
        :param source: recorded as :attr:`source`; default ``df.attrs.get("source", "")``.
        :raises ValueError: naming the row (0-based position) and the column of the first bad value.
        """
        src = df.attrs.get("source", "") if source is None else source
        ctx = _Context(name=src or "<DataFrame>", lines=np.arange(len(df)), unit="row")
        missing = [c for c in ("submit_time_s", "num_gpus") if c not in df.columns]
        if missing:
            raise ValueError(f"{ctx.name}: missing required columns {missing}; present: {list(df.columns)}")
        if not len(df):
            raise ValueError(f"{ctx.name}: no jobs (empty trace)")
        extra = {c: _as_array(df[c]) for c in df.columns if c not in _COLUMNS}
        return _build(ctx, src, _core_from_table(ctx, df), extra, drop_zero_gpu=False, report=None)


_COLUMNS = ("job_id", "submit_time_s", "num_gpus", "duration_s", "model", "batch_size", "iterations")


@dataclass
class TraceLoadReport:
    """What :func:`load_trace_with_report` read and what it removed on request.

    :param path: the file read.
    :param format: the format used (after ``"auto"`` detection), with the variant, e.g. ``"philly (pollux)"``.
    :param rows_read: data rows in the file (blank lines excluded).
    :param dropped: rows (jobs for ``pai2020``) removed per reason (``"zero_gpu"``, ``"unstarted"``); counts.
    :param dropped_lines: the file line of each dropped row (first line of the job for ``pai2020``), per reason.
    """

    path: str
    format: str
    rows_read: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    dropped_lines: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def jobs_dropped(self) -> int:
        """Total number removed, all reasons together."""
        return sum(self.dropped.values())


# --------------------------------------------------------------------------------------------- loading


def load_trace(
    path: str | os.PathLike[str],
    format: str = "auto",
    *,
    drop_zero_gpu: bool = False,
    drop_unstarted: bool = False,
) -> JobTrace:
    """Read a job trace file into a :class:`JobTrace` (sorted by submit time, stable; submit re-based to 0).

    :param path: the CSV/TSV file.
    :param format: one of :data:`FORMATS` or ``"auto"`` (detect from the header; a headerless PAI task table
        is recognised by its file name ``pai_task_table*``, a Gavel trace by its tab-separated 7 or 10 fields).
    :param drop_zero_gpu: remove rows requesting no GPU (OpenB CPU-only pods, PAI jobs with ``plan_gpu`` 0,
        ``num_gpu == 0`` rows) instead of raising. Counted in :class:`TraceLoadReport`.
    :param drop_unstarted: ``pai2020`` only: remove jobs none of whose tasks has a ``start_time`` (> 0) instead
        of raising; such jobs were never launched, so the trace has no submit time for them.
    :returns: the trace; ``source`` is ``str(path)``.
    :raises ValueError: unknown format, undetectable format, empty file or no rows, missing columns, or a malformed
        row (message names the file, the line and the column).
    """
    return load_trace_with_report(path, format, drop_zero_gpu=drop_zero_gpu, drop_unstarted=drop_unstarted)[0]


def load_trace_with_report(
    path: str | os.PathLike[str],
    format: str = "auto",
    *,
    drop_zero_gpu: bool = False,
    drop_unstarted: bool = False,
) -> tuple[JobTrace, TraceLoadReport]:
    """:func:`load_trace`, plus the :class:`TraceLoadReport` saying how many rows each ``drop_*`` removed."""
    if format != "auto" and format not in FORMATS:
        raise ValueError(f"unknown trace format {format!r}; allowed: {['auto', *FORMATS]}")
    path = Path(path)
    text = _read_text(path)
    if not text.strip():
        raise ValueError(f"{path.name}: empty file (no header, no rows)")
    fmt = detect_format(path, _text=text) if format == "auto" else format
    report = TraceLoadReport(path=str(path), format=fmt)
    loader = _LOADERS[fmt]
    trace = loader(path, text, report, drop_zero_gpu=drop_zero_gpu, drop_unstarted=drop_unstarted)
    return trace, report


def detect_format(path: str | os.PathLike[str], *, _text: str | None = None) -> str:
    """The format of a trace file, from its first non-blank line (see :func:`load_trace`).

    :raises ValueError: if no format matches (the message lists the allowed formats).
    """
    path = Path(path)
    text = _read_text(path) if _text is None else _text
    first = next((line for line in text.splitlines() if line.strip()), "")
    if not first:
        raise ValueError(f"{path.name}: empty file (no header, no rows)")
    if "\t" in first and len(first.split("\t")) in (len(GAVEL_COLUMNS_7), len(GAVEL_COLUMNS_10)):
        return "gavel"
    header = {c.strip() for c in next(csv.reader([first]))}
    if {"job_id", "submit_time_s", "num_gpus"} <= header:
        return "joulegym"
    if {"name", "num_gpu", "gpu_milli", "creation_time"} <= header:
        return "openb"
    if {"job_name", "task_name", "inst_num", "plan_gpu"} <= header or path.name.startswith("pai_task_table"):
        return "pai2020"
    if ("submit_time" in header or "timestamp" in header) and header & {"num_gpu", "num_gpus"}:
        return "philly"
    raise ValueError(
        f"{path.name}: cannot detect the trace format from the header {sorted(header)}; "
        f"pass format= one of {list(FORMATS)}"
    )


# --------------------------------------------------------------------------------------------- saving


def save_trace(trace: JobTrace, path: str | os.PathLike[str]) -> Path:
    """Write ``trace`` as the canonical ``joulegym`` CSV atomically (a temp file in the folder, then ``os.replace``).

    Columns: the seven fields (NaN written as an empty cell), then one column per ``extra`` entry named
    ``extra.<name>:<kind>`` with kind ``int``/``float``/``bool``/``str`` so that :func:`load_trace` restores the
    dtypes. Floats are written with full (round-trip) precision. ``source`` is not stored; the loaded trace's
    ``source`` is the file path.

    :returns: the path written.
    """
    path = Path(path)
    df = trace.to_dataframe()
    df.columns = [*_COLUMNS, *(f"extra.{k}:{_kind(v)}" for k, v in trace.extra.items())]
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            df.to_csv(f, index=False, lineterminator="\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# --------------------------------------------------------------------------------------------- internals


def _core_from_table(ctx: _Context, df: pd.DataFrame) -> dict[str, np.ndarray]:
    """The seven fields from a table named like :class:`JobTrace` (``joulegym`` CSV or a DataFrame)."""
    n = len(df)
    core = {
        "job_id": _strings(df["job_id"]) if "job_id" in df else np.arange(n).astype(str),
        "submit_time_s": _floats(ctx, df["submit_time_s"], "submit_time_s"),
        "num_gpus": _ints(ctx, df["num_gpus"], "num_gpus", minimum=0, what="a positive integer"),
        "duration_s": _opt_floats(ctx, df, "duration_s", n),
        "model": _strings(df["model"].fillna("")) if "model" in df else np.full(n, "", dtype=str),
        "batch_size": _ints(ctx, df["batch_size"], "batch_size", minimum=0, default=0) if "batch_size" in df
        else np.zeros(n, dtype=np.int64),
        "iterations": _opt_floats(ctx, df, "iterations", n),
    }  # fmt: skip
    return core


def _opt_floats(ctx: _Context, df: pd.DataFrame, column: str | None, n: int) -> np.ndarray:
    if column is None or column not in df:
        return np.full(n, np.nan)
    return _floats(ctx, df[column], column, required=False, minimum=0.0)


def _drop(
    ctx: _Context, keep: np.ndarray, reason: str, report: TraceLoadReport | None, core: dict, extra: dict
) -> tuple[_Context, dict, dict]:
    if report is not None:
        report.dropped[reason] = report.dropped.get(reason, 0) + int((~keep).sum())
        report.dropped_lines[reason] = ctx.lines[~keep]
    return ctx.subset(keep), {k: v[keep] for k, v in core.items()}, {k: v[keep] for k, v in extra.items()}


def _build(
    ctx: _Context,
    source: str,
    core: dict[str, np.ndarray],
    extra: dict[str, np.ndarray],
    *,
    drop_zero_gpu: bool,
    report: TraceLoadReport | None,
    gpu_column: str = "num_gpus",
    raw_gpus: Callable[[dict[str, np.ndarray], int], Any] | None = None,
    id_column: str = "job_id",
) -> JobTrace:
    """Zero-GPU rule, stable sort by submit time, re-base to 0, dtypes; the one exit of every loader."""
    zero = core["num_gpus"] < 1
    if zero.any():
        if not drop_zero_gpu:
            pos = int(np.flatnonzero(zero)[0])
            raw = raw_gpus(extra, pos) if raw_gpus is not None else core["num_gpus"][pos]
            ctx.fail(pos, gpu_column, "a request of at least one GPU (pass drop_zero_gpu=True to drop such rows)", raw)
        ctx, core, extra = _drop(ctx, ~zero, "zero_gpu", report, core, extra)
        if not len(core["num_gpus"]):
            raise ValueError(f"{ctx.name}: no jobs left after drop_zero_gpu=True (empty trace)")
    job_id = np.asarray(core["job_id"], dtype=str)
    unique, first = np.unique(job_id, return_index=True)
    if unique.size < job_id.size:  # a job is one record: a repeated id is two jobs the simulators cannot tell apart
        repeat = np.ones(job_id.size, dtype=bool)
        repeat[first] = False
        pos = int(np.flatnonzero(repeat)[0])
        earlier = ctx.lines[first[np.searchsorted(unique, job_id[pos])]]
        ctx.fail(pos, id_column, f"a unique job id (it is also on {ctx.unit} {earlier})", job_id[pos])
    order = np.argsort(core["submit_time_s"], kind="stable")
    submit = core["submit_time_s"][order].astype(np.float64)
    with np.errstate(over="ignore"):
        submit = submit - submit[0]
    if not np.isfinite(submit[-1]):  # sorted, so the last is the largest; e.g. -1e308 and 1e308 in one file
        pos = int(order[np.flatnonzero(~np.isfinite(submit))[0]])
        ctx.fail(pos, "submit time", "within 1.7e308 s of the first job's (the span overflows float64)",
                 core["submit_time_s"][pos])  # fmt: skip
    return JobTrace(
        job_id=job_id[order],
        submit_time_s=submit,
        num_gpus=core["num_gpus"][order].astype(np.int64),
        duration_s=core["duration_s"][order].astype(np.float64),
        model=np.asarray(core["model"][order], dtype=str),
        batch_size=core["batch_size"][order].astype(np.int64),
        iterations=core["iterations"][order].astype(np.float64),
        source=source,
        extra={k: v[order] for k, v in extra.items()},
    )


def _ceil_gpus(request: np.ndarray) -> np.ndarray:
    return np.ceil(request - _GPU_EPS).clip(min=0).astype(np.int64)


# --------------------------------------------------------------------------------------------- per format


def _load_openb(path: Path, text: str, report: TraceLoadReport, *, drop_zero_gpu: bool, **_: Any) -> JobTrace:
    df, ctx = _read_table(path, text)
    report.rows_read = len(df)
    _require(ctx, df, ["name", "num_gpu", "gpu_milli", "creation_time", "deletion_time"])
    n_gpu = _ints(ctx, df["num_gpu"], "num_gpu", minimum=0)
    milli = _floats(ctx, df["gpu_milli"], "gpu_milli", minimum=0.0)
    over = milli > 1000
    if over.any():  # gpu_milli is the share of *each* GPU in 1/1000 (FGD, ATC'23), so at most 1000
        pos = int(np.flatnonzero(over)[0])
        ctx.fail(pos, "gpu_milli", "a share of one GPU in [0, 1000]", df["gpu_milli"].iloc[pos])
    created = _floats(ctx, df["creation_time"], "creation_time")
    deleted = _floats(ctx, df["deletion_time"], "deletion_time", required=False)
    early = deleted < created  # NaN compares False
    if early.any():
        pos = int(np.flatnonzero(early)[0])
        ctx.fail(pos, "deletion_time", f"a time >= creation_time ({created[pos]:g})", df["deletion_time"].iloc[pos])
    request = n_gpu * milli / 1000.0
    n = len(df)
    core = {
        "job_id": _strings(df["name"]),
        "submit_time_s": created,
        "num_gpus": _ceil_gpus(request),
        "duration_s": deleted - created,
        "model": np.full(n, "", dtype=str),
        "batch_size": np.zeros(n, dtype=np.int64),
        "iterations": np.full(n, np.nan),
    }
    extra = _extras(df, {"name", "creation_time"})
    extra["gpu_request"] = request
    return _build(ctx, str(path), core, extra, drop_zero_gpu=drop_zero_gpu, report=report, gpu_column="num_gpu",
                  id_column="name",
                  raw_gpus=lambda ex, i: f"num_gpu={ex['num_gpu'][i]}, gpu_milli={ex['gpu_milli'][i]}")  # fmt: skip


def _load_pai2020(
    path: Path, text: str, report: TraceLoadReport, *, drop_zero_gpu: bool, drop_unstarted: bool
) -> JobTrace:
    first = next(line for line in text.splitlines() if line.strip())
    has_header = "job_name" in {c.strip() for c in next(csv.reader([first]))}
    width = len(next(csv.reader([first])))
    if not has_header and width != len(PAI2020_TASK_COLUMNS):
        raise ValueError(
            f"{path.name} line 1: a headerless PAI-2020 task table has {len(PAI2020_TASK_COLUMNS)} fields "
            f"{list(PAI2020_TASK_COLUMNS)}, got {width} (is this pai_task_table.csv?)"
        )
    df, ctx = _read_table(path, text, names=None if has_header else PAI2020_TASK_COLUMNS)
    report.rows_read = len(df)
    _require(ctx, df, ["job_name", "inst_num", "start_time", "end_time", "plan_gpu"])
    no_name = (df["job_name"].str.strip() == "").to_numpy()
    if no_name.any():
        pos = int(np.flatnonzero(no_name)[0])
        ctx.fail(pos, "job_name", "a non-empty job name", df["job_name"].iloc[pos])
    inst = _floats(ctx, df["inst_num"], "inst_num", minimum=0.0)
    plan_gpu = _floats(ctx, df["plan_gpu"], "plan_gpu", required=False, minimum=0.0)
    plan_gpu = np.nan_to_num(plan_gpu, nan=0.0)  # empty plan_gpu = a CPU-only task (e.g. a parameter server)
    # A start or end of 0 (or empty) means "not launched" / "not finished" (the trace authors' analysis/utils.py).
    start = _floats(ctx, df["start_time"], "start_time", required=False, minimum=0.0)
    end = _floats(ctx, df["end_time"], "end_time", required=False, minimum=0.0)
    start = np.where(start == 0, np.nan, start)
    end = np.where(end == 0, np.nan, end)
    early = end < start
    if early.any():
        pos = int(np.flatnonzero(early)[0])
        ctx.fail(pos, "end_time", f"a time >= start_time ({start[pos]:g})", df["end_time"].iloc[pos])
    tasks = pd.DataFrame({
        "job": df["job_name"].to_numpy(dtype=str), "pos": np.arange(len(df)), "start": start, "end": end,
        "no_end": np.isnan(end), "gpu": inst * plan_gpu / 100.0, "inst": inst,
        "cpu": inst * _opt_floats(ctx, df, "plan_cpu", len(df)) / 100.0,
        "mem": inst * _opt_floats(ctx, df, "plan_mem", len(df)),
        "status": df["status"].replace("", None) if "status" in df else None,  # empty: ignored by first/nunique
        "gpu_type": df["gpu_type"].replace("", None) if "gpu_type" in df else None,
    })  # fmt: skip
    g = tasks.groupby("job", sort=False)
    jobs = g.agg(
        pos=("pos", "min"), start=("start", "min"), end=("end", "max"), no_end=("no_end", "any"),
        gpu=("gpu", "sum"), inst=("inst", "sum"), cpu=("cpu", "sum"), mem=("mem", "sum"), tasks=("pos", "size"),
        status=("status", "first"), n_status=("status", "nunique"), gpu_type=("gpu_type", "first"),
        n_type=("gpu_type", "nunique"),
    )  # fmt: skip
    job_ctx = ctx.subset(jobs["pos"].to_numpy())
    n = len(jobs)
    submit = jobs["start"].to_numpy(dtype=float)
    core = {
        "job_id": jobs.index.to_numpy(dtype=str),
        "submit_time_s": submit,
        "num_gpus": _ceil_gpus(jobs["gpu"].to_numpy(dtype=float)),
        "duration_s": np.where(jobs["no_end"].to_numpy(), np.nan, jobs["end"].to_numpy(dtype=float) - submit),
        "model": np.full(n, "", dtype=str),
        "batch_size": np.zeros(n, dtype=np.int64),
        "iterations": np.full(n, np.nan),
    }
    status = np.where(jobs["n_status"].to_numpy() > 1, "mixed", jobs["status"].fillna("").to_numpy(dtype=str))
    extra = {
        "status": status.astype(str),  # the tasks' common status; "mixed" when they differ
        "gpu_request": jobs["gpu"].to_numpy(dtype=float),  # GPUs (sum over tasks of inst_num x plan_gpu / 100)
        "cpu_request": jobs["cpu"].to_numpy(dtype=float),  # vCPUs
        "mem_request_gb": jobs["mem"].to_numpy(dtype=float),
        "num_tasks": jobs["tasks"].to_numpy(dtype=np.int64),
        "num_instances": jobs["inst"].to_numpy(dtype=float),
        "gpu_type": np.where(jobs["n_type"].to_numpy() > 1, "mixed", jobs["gpu_type"].fillna("").to_numpy(dtype=str)),
        "end_time": jobs["end"].to_numpy(dtype=float),  # raw, not re-based; NaN if a task has not finished
    }
    unstarted = np.isnan(submit)
    if unstarted.any():
        if not drop_unstarted:
            pos = int(np.flatnonzero(unstarted)[0])
            raw = df["start_time"].iloc[jobs["pos"].iloc[pos]]
            must = "a launch time > 0 in some task of the job (it never started; drop_unstarted=True drops such jobs)"
            job_ctx.fail(pos, "start_time", must, raw)
        job_ctx, core, extra = _drop(job_ctx, ~unstarted, "unstarted", report, core, extra)
        if not len(core["num_gpus"]):
            raise ValueError(f"{path.name}: no jobs left after drop_unstarted=True (empty trace)")
    return _build(job_ctx, str(path), core, extra, drop_zero_gpu=drop_zero_gpu, report=report, gpu_column="plan_gpu",
                  raw_gpus=lambda ex, i: f"{ex['gpu_request'][i]:g} GPUs summed over the tasks")  # fmt: skip


def _load_philly(path: Path, text: str, report: TraceLoadReport, *, drop_zero_gpu: bool, **_: Any) -> JobTrace:
    df, ctx = _read_table(path, text)
    report.rows_read = len(df)
    n = len(df)
    if "submit_time" not in df and "timestamp" in df:  # Pollux/AdaptDL philly.csv: absolute wall-clock stamps
        cols = _require(ctx, df, ["timestamp", ("num_gpus", "num_gpu")])
        report.format = "philly (pollux)"
        submit = _seconds_since_first(ctx, df["timestamp"], "timestamp")
        gpu_col, used = cols["num_gpus"], set()  # the raw timestamp stays in extra: submit times are re-based
    else:
        cols = _require(ctx, df, ["submit_time", ("num_gpu", "num_gpus")])
        report.format = "philly (elasticflow)" if "ddl" in df else "philly (submit_time)"
        submit = _floats(ctx, df["submit_time"], "submit_time")
        gpu_col, used = cols["num_gpu"], {"submit_time"}
    used.add(gpu_col)
    id_col = _first_present(df, "job_id")
    model_col = _first_present(df, "model_name", "model")
    iter_col = _first_present(df, "iteration", "iterations")
    dur_col = _first_present(df, "duration")
    core = {
        "job_id": _strings(df[id_col]) if id_col else np.arange(n).astype(str),
        "submit_time_s": submit,
        "num_gpus": _ints(ctx, df[gpu_col], gpu_col, minimum=0, what="a positive integer"),
        "duration_s": _opt_floats(ctx, df, dur_col, n),
        "model": _strings(df[model_col]) if model_col else np.full(n, "", dtype=str),
        "batch_size": _ints(ctx, df["batch_size"], "batch_size", minimum=0, default=0) if "batch_size" in df
        else np.zeros(n, dtype=np.int64),
        "iterations": _opt_floats(ctx, df, iter_col, n),
    }  # fmt: skip
    used |= {c for c in (id_col, model_col, iter_col, dur_col, "batch_size") if c}
    return _build(ctx, str(path), core, _extras(df, used), drop_zero_gpu=drop_zero_gpu, report=report,
                  gpu_column=gpu_col)  # fmt: skip


def _load_gavel(path: Path, text: str, report: TraceLoadReport, *, drop_zero_gpu: bool, **_: Any) -> JobTrace:
    first = next((line for line in text.splitlines() if line.strip()), "")
    width = len(first.split("\t"))
    if width not in (len(GAVEL_COLUMNS_7), len(GAVEL_COLUMNS_10)):
        raise ValueError(f"{path.name} line 1: a Gavel trace has 7 or 10 tab-separated fields, got {width}")
    names = GAVEL_COLUMNS_7 if width == len(GAVEL_COLUMNS_7) else GAVEL_COLUMNS_10
    df, ctx = _read_table(path, text, names=names, sep="\t", quoting=csv.QUOTE_NONE)
    report.rows_read = len(df)
    report.format = f"gavel ({width} fields)"
    parsed = df["job_type"].str.extract(_GAVEL_JOB_TYPE)
    has_bs = parsed["bs"].notna().to_numpy()
    n = len(df)
    core = {
        "job_id": np.arange(n).astype(str),
        "submit_time_s": _floats(ctx, df["arrival_time"], "arrival_time"),
        "num_gpus": _ints(ctx, df["scale_factor"], "scale_factor", minimum=0, what="a positive integer"),
        "duration_s": np.full(n, np.nan),
        "model": np.where(has_bs, parsed["model"].fillna("").to_numpy(dtype=str), _strings(df["job_type"])),
        "batch_size": np.where(has_bs, pd.to_numeric(parsed["bs"]).fillna(0).to_numpy(), 0).astype(np.int64),
        "iterations": _floats(ctx, df["total_steps"], "total_steps", minimum=0.0),
    }
    extra = _extras(df, {"arrival_time", "scale_factor", "total_steps"})
    table = find_gavel_throughputs(path)
    if table is not None:  # isolated run times from Gavel's own measured throughputs (docs/families/powerflow.md)
        core["duration_s"], used = gavel_durations(_strings(df["job_type"]), core["num_gpus"], core["iterations"],
                                                   table)
        extra["throughput_scale_factor"] = used
    return _build(ctx, str(path), core, extra,
                  drop_zero_gpu=drop_zero_gpu, report=report, gpu_column="scale_factor")  # fmt: skip


#: Gavel's measured throughput table (stanford-futuredata/gavel ``scheduler/simulation_throughputs.json``: steps/s
#: per worker type and ``(job_type, scale_factor)``, key ``"null"`` = the job alone). In Gavel's repository, and in
#: ``../shared/reference-data/gavel``, it sits above the ``traces/`` folder; a Gavel trace below it gets its
#: isolated run times from it (:func:`gavel_durations`).
GAVEL_THROUGHPUTS_FILE = "simulation_throughputs.json"
#: The worker type whose throughputs give a Gavel job's run time: V100, the PowerFlow default GPU (§6.1).
GAVEL_WORKER_TYPE = "v100"


def find_gavel_throughputs(trace_path: str | os.PathLike[str], levels: int = 5) -> Path | None:
    """``simulation_throughputs.json`` in the trace's folder or up to ``levels`` folders above it, else None."""
    folder = Path(trace_path).resolve().parent
    for candidate in [folder, *folder.parents][: levels + 1]:
        if (candidate / GAVEL_THROUGHPUTS_FILE).is_file():
            return candidate / GAVEL_THROUGHPUTS_FILE
    return None


def gavel_durations(job_types: np.ndarray, scale_factors: np.ndarray, total_steps: np.ndarray,
                    throughputs: str | os.PathLike[str] | dict, worker_type: str = GAVEL_WORKER_TYPE
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Each Gavel job's isolated run time: ``total_steps / throughput[worker_type][(job_type, scale_factor)]``.

    Gavel measured Recommendation, A3C and CycleGAN on one GPU only (they are not data-parallel in its workloads),
    yet its Philly-derived traces give some of them 2 or 4 GPUs: such a job runs at the throughput of the largest
    measured scale factor not above its own (1: the extra GPUs do not speed it up).

    :param throughputs: the JSON file or its parsed content.
    :returns: durations (s; NaN where the job type has no positive throughput) and the scale factor whose
        throughput was used per job (0 where none).
    :raises ValueError: if ``worker_type`` is not in the table.
    """
    if not isinstance(throughputs, dict):
        import json

        throughputs = json.loads(Path(throughputs).read_text())
    if worker_type not in throughputs:
        raise ValueError(f"worker_type={worker_type!r} is not in the Gavel throughput table; allowed: "
                         f"{sorted(throughputs)}")
    table = throughputs[worker_type]
    measured: dict[str, dict[int, float]] = {}
    for key, value in table.items():
        match = re.fullmatch(r"\('(?P<type>.*)', (?P<sf>\d+)\)", key)
        if match and isinstance(value, dict) and float(value.get("null", 0.0)) > 0:
            measured.setdefault(match["type"], {})[int(match["sf"])] = float(value["null"])
    out = np.full(len(job_types), np.nan)
    used = np.zeros(len(job_types), dtype=np.int64)
    for i, (job_type, sf) in enumerate(zip(job_types, scale_factors)):
        sfs = [k for k in measured.get(str(job_type).strip(), {}) if k <= int(sf)]
        if sfs:
            used[i] = max(sfs)
            out[i] = float(total_steps[i]) / measured[str(job_type).strip()][used[i]]
    return out, used


_KINDS: dict[str, Callable[[np.ndarray], bool]] = {
    "bool": lambda a: a.dtype == np.bool_,
    "int": lambda a: np.issubdtype(a.dtype, np.integer),
    "float": lambda a: np.issubdtype(a.dtype, np.floating),
}


def _kind(values: np.ndarray) -> str:
    return next((k for k, test in _KINDS.items() if test(np.asarray(values))), "str")


def _load_joulegym(path: Path, text: str, report: TraceLoadReport, *, drop_zero_gpu: bool, **_: Any) -> JobTrace:
    df, ctx = _read_table(path, text)
    report.rows_read = len(df)
    _require(ctx, df, ["job_id", "submit_time_s", "num_gpus"])
    core = _core_from_table(ctx, df)
    extra: dict[str, np.ndarray] = {}
    for col in df.columns:
        if col in _COLUMNS:
            continue
        name, _, kind = col.removeprefix("extra.").rpartition(":") if col.startswith("extra.") else (col, "", "")
        s = df[col]
        if kind == "int":
            try:  # exact beyond 2**53, which a detour through float64 is not
                extra[name] = s.to_numpy(dtype=object).astype(np.int64)
            except (TypeError, ValueError, OverflowError):
                extra[name] = _ints(ctx, s, col, minimum=-(2**63), what="an integer")
        elif kind == "float":
            extra[name] = _floats(ctx, s, col, required=False, allow_inf=True)
        elif kind == "bool":
            ok = s.isin(["True", "False"]).to_numpy()
            if not ok.all():
                pos = int(np.flatnonzero(~ok)[0])
                ctx.fail(pos, col, "True or False", s.iloc[pos])
            extra[name] = (s == "True").to_numpy()
        elif kind == "str":
            extra[name] = _strings(s)
        else:  # a column added by hand: typed like an unused source column
            extra[col] = _auto(s)
    return _build(ctx, str(path), core, extra, drop_zero_gpu=drop_zero_gpu, report=report)


_LOADERS: dict[str, Callable[..., JobTrace]] = {
    "openb": _load_openb,
    "pai2020": _load_pai2020,
    "philly": _load_philly,
    "gavel": _load_gavel,
    "joulegym": _load_joulegym,
}
