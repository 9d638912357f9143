"""The paper's metrics of an EMRF episode (EMRF paper §VI; docs/families/emrf.md §2 "Metrics") and the measures of
one segment of a window they and the reward parts integrate (§III Eqs. (9), (15); docs/families/emrf.md §7), each
written once for the single env and for the batched env.

:func:`episode_metrics`: both pass their running totals as Python numbers and lists (a row of the batch at a time).
:func:`segment_measures`: over per-slot *lanes*, as :mod:`joulegym.envs.emrf.segment` does for the fluid dynamics:
slot ``i``'s value is a Python number in the single env and a numpy array with one value per row in the batch, and
the slots are visited in the single env's order, so each row of the batch gets the single env's floats.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from joulegym.core.summation import sequential_sum


def segment_measures(lanes: Iterable[tuple[int, int]], dt: Any, eta: Any, rates: Sequence[Any], share: Sequence[Any],
                     fmax: Sequence[Any], m: Sequence[Any], larger: Any, smaller: Any,
                     zero: Any = 0.0) -> tuple[Any, Any, Any, Any, list[Any]]:
    """The measures of one segment of length ``dt`` over its users, lane by lane: ``(dt sum F_i, dt sum max(0, η
    F_i^max - F_i), dt sum F_i m_i, max F/S - min F/S, [F_i / S_i per lane])``, each sum slot by slot from ``zero``
    (``sequential_sum``'s order). ``lanes`` are ``(k, i)`` pairs in slot order: ``k`` indexes the decision's derived
    quantities (``share`` S, ``fmax`` F^max, ``m``), ``i`` the delivered ``rates``; ``eta`` is η_target.

    ``larger`` / ``smaller`` are ``max`` / ``min`` on numbers, ``np.fmax`` / ``np.fmin`` on rows, where a row that
    does not run a visited slot holds rate 0.0, F^max 0.0 (its terms are +0.0) and S NaN (its F/S is NaN, which
    ``np.fmax`` and ``np.fmin`` pass over). Without users the spread is ``-inf``.
    """
    e = v = speedup = zero
    top, bottom = -math.inf, math.inf
    ratios = []
    for k, i in lanes:
        rate = rates[i]
        ratio = rate / share[k]
        e = e + rate
        v = v + larger(0.0, eta * fmax[k] - rate)
        speedup = speedup + rate * m[k]
        top, bottom = larger(top, ratio), smaller(bottom, ratio)
        ratios.append(ratio)
    return dt * e, dt * v, dt * speedup, top - bottom, ratios


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
