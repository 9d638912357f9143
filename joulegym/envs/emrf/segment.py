"""The arithmetic of one segment of an EMRF decision window, written once for the single simulator and the batched
one (EMRF paper §II-B; docs/families/emrf.md §5, §11; the simulator's module docstring, "Fluid progress" and "One
decision window").

Both run the functions here over per-slot *lanes*, as :mod:`joulegym.envs.emrf.decisions` does for the observation
and the weight modes' levels: slot ``i``'s value is a Python number in
:class:`~joulegym.envs.emrf.simulator.EMRFSimulator` and a numpy array with one value per instance (row) in
:class:`~joulegym.envs.emrf.batch.EMRFBatch`. Branches on values are ``where`` (:func:`scalar_where
<joulegym.envs.emrf.decisions.scalar_where>` on numbers, ``np.where`` on arrays), so each row of the batch takes
the single simulator's operations in its order and gets its floats.

- :func:`device_scale`: the factor ``min_d C_d / usage_d`` every planned rate is scaled by where the plan, run
  with the true xi, over-uses a device (1 otherwise).
- :func:`segment_length`: the segment ends at the first event: the window's end, the next arrival, a job
  completion or a phase switch of a running user. Slots are visited in slot order and each one can only shorten
  the segment, with the test ``remaining < rate * dt`` (then ``dt = remaining / rate``), exactly as the single
  simulator has always done it (its trajectories are pinned).
- :func:`progress`: the fluid work of the segment at the delivered rates: each running slot's job advances by
  ``rate * dt`` GFLOP, its CPU and GPU parts in lockstep (xi and 1 - xi of it), the GPU part added on to the
  window's running total slot by slot.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

OVERUSE_RTOL = 1e-12  # a device counts as over-used above C_d (1 + this): round-off of a plan that fills it exactly


def device_scale(use_cpu: Any, use_gpu: Any, c_cpu: float, c_gpu: float, where: Any) -> Any:
    """The factor every planned rate is multiplied by: ``min_d C_d / usage_d`` over the over-used devices, 1 when
    none is (``use_d``: what the plan asks of device d under the true xi)."""
    cpu_over = use_cpu > c_cpu * (1 + OVERUSE_RTOL)
    gpu_over = use_gpu > c_gpu * (1 + OVERUSE_RTOL)
    scale = where(cpu_over, c_cpu / where(cpu_over, use_cpu, 1.0), 1.0)
    gpu_scale = c_gpu / where(gpu_over, use_gpu, 1.0)
    return where(gpu_over & (gpu_scale < scale), gpu_scale, scale)


def segment_length(until_end: Any, until_arrival: Any, now: Any, slots: Iterable[int], rates: Sequence[Any],
                   remaining: Sequence[Any], switches: Sequence[Any] | None, where: Any) -> Any:
    """The length of the segment that starts at ``now``: at most ``until_end`` (to the window's end) and
    ``until_arrival`` (to the next arrival that changes the active set); then, slot by slot in the order of
    ``slots``, until the slot's job completes at its ``rates`` (``remaining`` GFLOP left) and until its phase
    switch (``switches``; ``None``: no slot switches phases; a lane that must not end the segment holds inf).
    Never below 0."""
    dt = where(until_arrival < until_end, until_arrival, until_end)
    for i in slots:
        rate, left = rates[i], remaining[i]
        shorter = (rate > 0) & (left < rate * dt)
        dt = where(shorter, left / where(shorter, rate, 1.0), dt)
        if switches is not None:
            gap = switches[i] - now
            dt = where(gap < dt, gap, dt)
    return where(0.0 > dt, 0.0, dt)


def progress(slots: Iterable[int], dt: Any, rates: Sequence[Any], xi: Sequence[Any], remaining: Any, work_done: Any,
             work_window: Any, cpu_window: Any, gpu_window: Any) -> Any:
    """The fluid work of a segment of length ``dt``, slot by slot in the order of ``slots``: ``rates[i] * dt`` GFLOP
    off ``remaining[i]`` and onto ``work_done[i]`` and ``work_window[i]``, its CPU part (``xi[i]`` of it) onto
    ``cpu_window[i]``; the lanes are updated in place (``lane[i] -= x``: a list item, or a numpy view in place).
    Returns ``gpu_window`` with the segment's GPU parts added on, in slot order."""
    for i in slots:
        done = rates[i] * dt
        remaining[i] -= done
        work_done[i] += done
        work_window[i] += done
        cpu_window[i] += done * xi[i]
        gpu_window += done * (1.0 - xi[i])
    return gpu_window
