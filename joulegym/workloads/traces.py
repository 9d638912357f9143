"""Job traces of GPU clusters: the common record and the loaders of public trace formats.

A :class:`JobTrace` is a column store (numpy arrays, one entry per job, sorted by submit time): the
form every simulator of joulegym consumes, whatever the source (a real trace file or a seeded
synthetic generator). Loaders for the public formats live in this module
(:func:`load_trace`); family-specific conversion (e.g. a Philly duration into PowerFlow training
iterations) is done by the family, not here.

Units: seconds for times, GPUs as whole counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


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


_COLUMNS = ("job_id", "submit_time_s", "num_gpus", "duration_s", "model", "batch_size", "iterations")
