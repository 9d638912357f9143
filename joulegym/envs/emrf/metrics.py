"""The paper's metrics of an EMRF episode (EMRF paper §VI; docs/families/emrf.md §2 "Metrics"), written once for the
single env and for a row of the batched env: both pass their running totals as Python numbers and lists."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from joulegym.core.summation import sequential_sum


def episode_metrics(*, elapsed: float, capacities: tuple[float, float], steps: int, sums: Sequence[float],
                    counts: Sequence[int], ratio_time: Sequence[float], active_time: Sequence[float],
                    gflop: Sequence[float], work_done: Sequence[float], jobs_done: Sequence[int],
                    completion_times: Sequence[float], eta_target: float,
                    makespan: float | None) -> dict[str, Any]:
    """The metrics of an episode so far.

    :param elapsed: simulated seconds.
    :param steps: windows run (decisions).
    :param sums: the episode sums of E, Δ, δ(η_target), V and the weighted speedup integral.
    :param counts: the episode's SI violations and envious pairs.
    :param ratio_time: per slot, the time integral of F_i / S_i while active; ``active_time`` the time active.
    :param gflop: GFLOP run in all, on the CPU and on the GPU.
    :param completion_times: per slot, finish - arrival (NaN: not finished).
    :param makespan: the last finish time when every job is done, else ``None`` (no ``makespan_s`` key).
    """
    sum_e, sum_delta, sum_bound, sum_v, sum_speedup = sums
    total, cpu, gpu = gflop
    c_cpu, c_gpu = capacities
    steps = max(steps, 1)
    ratios = [rt / at for rt, at in zip(ratio_time, active_time) if at > 0]
    finished = [(work_done[i], t) for i, t in enumerate(completion_times) if not math.isnan(t) and t > 0]
    metrics: dict[str, Any] = {
        "throughput_gflops": total / elapsed if elapsed > 0 else 0.0,
        "mean_efficiency": sum_e / steps,
        "cpu_utilisation": cpu / (c_cpu * elapsed) if elapsed > 0 else 0.0,
        "gpu_utilisation": gpu / (c_gpu * elapsed) if elapsed > 0 else 0.0,
        "soft_fairness": sum_delta / steps,
        "delta_bound": sum_bound / steps,
        "floor_violation": sum_v / steps,
        "si_violations": float(counts[0]),
        "ef_violations": float(counts[1]),
        "jain_fairness": (sequential_sum(ratios) ** 2 / (len(ratios) * sequential_sum(x * x for x in ratios))
                          if ratios and any(ratios) else 1.0),  # Jain's index of mean F_i/S_i
        "weighted_speedup": sum_speedup / elapsed if elapsed > 0 else 0.0,
        "jobs_completed": float(sum(jobs_done)),
        "job_throughput_gflops": float(sequential_sum(w / t for w, t in finished)),
        "eta_target": eta_target,
        "per_user_gflops": np.array([w / elapsed if elapsed > 0 else 0.0 for w in work_done]),
        "completion_times_s": np.array([0.0 if math.isnan(t) else t for t in completion_times]),  # 0: not finished
    }
    if makespan is not None:
        metrics["makespan_s"] = makespan
    return metrics
