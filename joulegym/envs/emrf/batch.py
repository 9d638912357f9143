"""The EMRF fluid dynamics of R instances at once, as arrays: the batched vector env's transition (EMRF paper
§II-B, §V-C Algorithm 1; docs/families/emrf.md §5, §11).

:class:`EMRFBatch` holds the state of R independent APUs (a row each; ``max_users`` slots per row) and runs their
decision windows together. The model is :mod:`joulegym.envs.emrf.simulator`'s, word for word (fluid progress, the
segments of a window at every event, admission inside the window, xi phases, measurement, common random numbers:
its module docstring): each row of the batch gives the bits of that simulator under the same seed
(``tests/emrf/test_vector.py`` checks every kind and scenario family). Rows step in lockstep, one segment per pass:
a row whose window has no event takes one pass, the others as many as their events need; a row whose window ended
takes no more.

**Bits.** Every float is computed with the scalar simulator's operations in its order: elementwise numpy
operations are the IEEE operations Python's floats do, and every sum over slots is accumulated slot by slot from
0.0 (:func:`~joulegym.core.summation.row_sums`), as ``sum()`` and ``+=`` over a list do. Where a segment ends, the
device scale of its rates and the work its slots do in it (the fluid progress) are the simulator's own functions
(:mod:`joulegym.envs.emrf.segment`, over lanes of rows: the slots some row runs are visited in slot order as the
simulator visits its active slots; a row that does not run a visited slot gets exact no-ops there). Events
(completions, arrivals, phase switches, noise) touch single slots and run in Python, row by row, through the
simulator's own functions (:mod:`joulegym.envs.emrf.events` on a :class:`~joulegym.envs.emrf.events.BatchRow` of
numpy views).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from joulegym.core.summation import row_sums
from joulegym.envs.emrf.allocation import device_loads
from joulegym.envs.emrf.events import (
    ARRIVAL_EPS,
    BatchRow,
    SlotStreams,
    admit_due,
    arrive,
    complete,
    noise,
    switch_phases,
)
from joulegym.envs.emrf.segment import OVERUSE_RTOL, device_scale, progress, segment_length
from joulegym.envs.emrf.simulator import EPS_WORK, MAX_SEGMENTS, QUEUE_NORM, UserSpec


def selection(rows: int, sel: Any) -> tuple[np.ndarray, int]:
    """The row indices a selection (a slice or an index array) of ``rows`` rows picks, and how many."""
    index = np.arange(rows)[sel] if isinstance(sel, slice) else sel
    return index, index.size


# the per-slot state, (rows, max_users) each: float, int and bool arrays
SLOT_FLOATS = ("xi", "xi_hat", "weight", "w", "remaining", "size", "work_done", "work_window", "cpu_window",
               "next_arrival", "next_switch", "arrived_at", "finished_at", "last_rates", "arrival", "rate",
               "job_gflop", "job_sigma", "xi_cpu", "xi_alt")
SLOT_INTS = ("queue", "jobs_total", "jobs_done", "phase")
SLOT_BOOLS = ("present", "waiting", "backlogged", "occupied", "open_loop", "co_run", "events")
ROW_FLOATS = ("time", "total_gflop", "cpu_gflop", "gpu_gflop", "util_cpu", "util_gpu")


class EMRFBatch:
    """R instances of the APU-sharing fluid simulator as arrays (module docstring).

    :param rows: R.
    :param capacities: ``(C_cpu, C_gpu)`` GFLOPS.
    :param max_users: slots per row.
    :param window_s: ΔT, seconds per decision window.
    :param horizon: windows per episode (``truncated`` after it).
    :param xi_noise: std of the measurement noise on co-run apps.
    :param phase_period: ``(lo, hi)`` seconds between xi phase switches.
    :param admit_at_window: arrivals wait for the next window boundary.
    :param weight_unit: the weights enter the allocations as ``weight / weight_unit`` (:attr:`w`): a power of two
        near the largest weight of the config keeps ``W m_i`` from underflowing at extreme magnitudes (exact).
    """

    def __init__(self, rows: int, capacities: tuple[float, float], max_users: int, window_s: float = 1.0,
                 horizon: int = 200, xi_noise: float = 0.0, phase_period: tuple[float, float] = (20.0, 40.0),
                 admit_at_window: bool = False, weight_unit: float = 1.0) -> None:
        self.rows = int(rows)
        self.capacities = (float(capacities[0]), float(capacities[1]))
        self.max_users = n = int(max_users)
        self.window_s = float(window_s)
        self.horizon = int(horizon)
        self.xi_noise = float(xi_noise)
        self.phase_period = (float(phase_period[0]), float(phase_period[1]))
        if not 0.0 < self.phase_period[0] <= self.phase_period[1]:
            raise ValueError(f"phase_period must be (lo, hi) with 0 < lo <= hi seconds, got {phase_period!r}")
        self.admit_at_window = bool(admit_at_window)
        self.weight_unit = float(weight_unit)
        for name in SLOT_FLOATS:
            setattr(self, name, np.zeros((rows, n)))
        for name in SLOT_INTS:
            setattr(self, name, np.zeros((rows, n), dtype=np.int64))
        for name in SLOT_BOOLS:
            setattr(self, name, np.zeros((rows, n), dtype=bool))
        for name in ROW_FLOATS:
            setattr(self, name, np.zeros(rows))
        self.windows = np.zeros(rows, dtype=np.int64)
        self.phased = np.zeros(rows, dtype=bool)  # some user alternates xi
        self.has_events = np.zeros(rows, dtype=bool)  # some user arrives later or gets Poisson jobs
        self.users: list[list[UserSpec | None]] = [[None] * n for _ in range(rows)]
        self.event_slots: list[tuple[int, ...]] = [()] * rows
        self.streams: list[SlotStreams | None] = [None] * rows
        self.slots = [BatchRow(self, r) for r in range(rows)]  # each row as an instance of the events module

    # --- episodes ------------------------------------------------------------------------------------------
    def reset_row(self, r: int, users: list[UserSpec], rng: np.random.Generator) -> None:
        """Start row ``r``'s episode with ``users`` in its first slots; its streams are seeded from ``rng``."""
        n = self.max_users
        if len(users) > n:
            raise ValueError(f"{len(users)} users do not fit in max_users={n} slots")
        self.streams[r] = SlotStreams(rng, n)
        for name in SLOT_FLOATS:
            getattr(self, name)[r] = 0.0
        for name in SLOT_INTS + SLOT_BOOLS:
            getattr(self, name)[r] = 0
        self.weight[r] = self.w[r] = 1.0
        self.size[r] = 1.0
        self.next_arrival[r] = self.next_switch[r] = self.arrival[r] = math.inf
        self.finished_at[r] = math.nan
        self.xi_alt[r] = math.nan
        for name in ROW_FLOATS:
            getattr(self, name)[r] = 0.0
        self.windows[r] = 0
        row_users: list[UserSpec | None] = [None] * n
        for slot, user in enumerate(users):
            row_users[slot] = user
            self.occupied[r, slot] = True
            self.arrival[r, slot] = user.arrival
            self.rate[r, slot] = user.arrival_rate
            self.job_gflop[r, slot] = user.job_gflop
            self.job_sigma[r, slot] = user.job_sigma
            self.xi_cpu[r, slot] = user.xi_cpu
            self.xi_alt[r, slot] = math.nan if user.xi_alt is None else user.xi_alt
            self.co_run[r, slot] = user.co_run
            self.w[r, slot] = user.weight / self.weight_unit  # used where the slot is active (after its arrival)
            self.open_loop[r, slot] = user.arrival_rate > 0
            # slots that can get work later: users not yet arrived and open-loop (Poisson) users
            self.events[r, slot] = user.arrival > 0 or user.arrival_rate > 0
        self.users[r] = row_users
        self.event_slots[r] = tuple(np.flatnonzero(self.events[r]).tolist())
        self.has_events[r] = bool(self.event_slots[r])
        self.phased[r] = any(user.xi_alt is not None for user in users)
        row = self.slots[r]
        row.bind(self, r)
        for slot in range(len(users)):
            arrive(row, slot, ARRIVAL_EPS)

    def active_mask(self, r: Any = slice(None)) -> np.ndarray:
        """Slots with unfinished work that run (present, queued, not waiting), ``(rows, n)``."""
        return self.present[r] & (self.queue[r] > 0) & ~self.waiting[r]

    def done_rows(self) -> np.ndarray:
        """Per row: every user has arrived, finished its jobs, and no open-loop source is left."""
        left = self.occupied & (~self.present | (self.queue > 0) | self.backlogged | (self.rate > 0))
        return ~left.any(axis=1)

    def truncated_rows(self) -> np.ndarray:
        return self.windows >= self.horizon

    def next_arrival_event(self, r: Any) -> np.ndarray:
        """Per row, the time of the next arrival that can change the active set (a user arriving, a job at an empty
        queue); jobs arriving at a busy queue change nothing then (queued; absorbed by its completion)."""
        events, present = self.events[r], self.present[r]
        times = np.where(events & ~present, self.arrival[r],
                         np.where(events & present & (self.queue[r] == 0), self.next_arrival[r], math.inf))
        return times.min(axis=1)

    def admit(self, rows: list[int]) -> None:
        """At a window boundary: every arrival up to now (the next decision sees them all)."""
        for r in rows:
            admit_due(self.slots[r], self.time[r].item() + ARRIVAL_EPS)

    # --- the window -------------------------------------------------------------------------------------------------
    def window(self, sel: Any, rule: Any, measures: Any = None,
               plan: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """Run one window of the rows ``sel`` (a slice, or ascending indices) under ``rule`` (an
        :class:`~joulegym.envs.emrf.rules.AllocationRule`). ``measures`` (optional) is told every segment
        (``measures.segment(positions, dt, active, rates)``, positions into the selected rows); ``plan`` is the
        decision's ``(active slots, planned allocation)`` when the caller has it (the first segment's; both may be
        written to). Floating-point warnings are the caller's to silence (:meth:`EMRFEpisodes.step
        <joulegym.envs.emrf.episodes.EMRFEpisodes.step>` does)."""
        index, count = selection(self.rows, sel)
        span = self.window_s
        end = self.time[sel] + span
        self.work_window[sel] = 0.0
        self.cpu_window[sel] = 0.0
        in_window = self.has_events[sel] & (not self.admit_at_window)  # arrivals are events inside the window
        arrival_at = np.where(in_window, self.next_arrival_event(sel), math.inf) if np.count_nonzero(in_window) \
            else None
        phased = np.count_nonzero(self.phased[sel]) > 0
        if plan is None:
            planned_for = np.zeros((count, self.max_users), dtype=bool)
            planned = np.zeros((count, self.max_users))
        else:
            planned_for, planned = plan
        gpu_window = np.zeros(count)  # the GPU GFLOP of the window, added on slot by slot (as the scalar += does)
        segments = 0
        positions: Any = slice(None)  # the selected rows still inside their window
        r: Any = sel
        while True:
            now = self.time[r]
            active = self.present[r] & (self.queue[r] > 0) & ~self.waiting[r]
            if segments or plan is None:
                stale = (active != planned_for[positions]).any(axis=1)
                if np.count_nonzero(stale):
                    at = np.arange(count)[positions][stale]
                    planned[at] = rule.plan(self, index[at], active[stale])
                    planned_for[at] = active[stale]
            slots = np.flatnonzero(active.any(axis=0)).tolist()  # the lanes some row runs (module docstring)
            rates = self._rates(planned[positions], r, slots)
            rate_lanes = list(rates.T)
            remaining = self.remaining[r]
            dt = self._segment_length(now, end[positions] - now,
                                      math.inf if arrival_at is None else arrival_at[positions] - now,
                                      active, slots, rate_lanes, remaining, r if phased else None)
            gpu_window[positions] = self._progress(r, slots, dt, rate_lanes, remaining, gpu_window[positions])
            now = now + dt
            self.time[r] = now
            segments += 1
            if measures is not None:
                measures.segment(positions, dt, active, rates)
            if segments > MAX_SEGMENTS:
                raise RuntimeError(f"more than MAX_SEGMENTS={MAX_SEGMENTS} events in one window of {span} s (job "
                                   "completions and arrivals): use larger jobs, fewer arrivals or shorter windows")
            self._events(index, positions, now, end, active, in_window, arrival_at, phased, rule)
            going = self.time[r] < end[positions] - 1e-12
            if not np.count_nonzero(going):
                break
            positions = np.arange(count)[positions][going]
            r = index[positions]
        self._end_window(sel, index, end, gpu_window)

    def _rates(self, alloc: np.ndarray, r: Any, slots: list[int]) -> np.ndarray:
        """The delivered rates of a planned allocation: planned with ``xi_hat``, run with the true ``xi``; every rate
        scaled by ``min_d C_d / usage_d`` where the plan over-uses a device (module docstring, "Fluid progress")."""
        c_cpu, c_gpu = self.capacities
        xi = self.xi[r]
        use_cpu, use_gpu = device_loads(slots, list(alloc.T), list(xi.T), np.zeros(alloc.shape[0]))  # 0.0 off slots
        limit = 1 + OVERUSE_RTOL
        if not (np.count_nonzero(use_cpu > c_cpu * limit) or np.count_nonzero(use_gpu > c_gpu * limit)):
            return alloc  # device_scale is 1.0 on every row: alloc * 1.0 is alloc
        return alloc * device_scale(use_cpu, use_gpu, c_cpu, c_gpu, np.where)[:, None]

    def _segment_length(self, now: np.ndarray, until_end: np.ndarray, until_arrival: Any, active: np.ndarray,
                        slots: list[int], rate_lanes: list[np.ndarray], remaining: np.ndarray,
                        phased_rows: Any) -> np.ndarray:
        """:func:`~joulegym.envs.emrf.segment.segment_length` of the rows: slot lanes are columns, visited where
        some row runs the slot (``slots``; elsewhere the rate is 0 and the switch masked to inf: the lane changes
        nothing); ``phased_rows`` are the rows' indices when a slot may switch phases."""
        switches = None
        if phased_rows is not None:
            switches = list(np.where(active, self.next_switch[phased_rows], math.inf).T)
        return segment_length(until_end, until_arrival, now, slots, rate_lanes, list(remaining.T), switches, np.where)

    def _progress(self, r: Any, slots: list[int], dt: np.ndarray, rate_lanes: list[np.ndarray], remaining: np.ndarray,
                  gpu_window: np.ndarray) -> np.ndarray:
        """:func:`~joulegym.envs.emrf.segment.progress` of the rows ``r`` (``remaining`` is ``self.remaining[r]``):
        slot lanes are columns, visited where some row runs the slot (``slots``; elsewhere the rate is 0: the work
        is +0.0, an exact no-op). The lanes are views of the state when ``r`` is a slice, else copies written back.
        Returns ``gpu_window`` with the segment's GPU GFLOP added on."""
        state = [remaining, self.work_done[r], self.work_window[r], self.cpu_window[r]]
        gpu_window = progress(slots, dt, rate_lanes, list(self.xi[r].T), *(list(lane.T) for lane in state),
                              gpu_window)
        if not isinstance(r, slice):
            self.remaining[r], self.work_done[r], self.work_window[r], self.cpu_window[r] = state
        return gpu_window

    def _events(self, index: np.ndarray, positions: Any, now: np.ndarray, end: np.ndarray, active: np.ndarray,
                in_window: np.ndarray, arrival_at: np.ndarray | None, phased: bool, rule: Any) -> None:
        """The events at the end of a segment, row by row in Python: completions (and the Poisson jobs queued
        behind them), phase switches, arrivals inside the window and waiting slots tested again."""
        r = index[positions]
        finished = active & (self.remaining[r] <= EPS_WORK * self.size[r])
        eventful = finished.any(axis=1)
        if phased:
            switching = self.phased[r] & (self.next_switch[r] <= now[:, None] + 1e-12).any(axis=1)
            eventful |= switching
        if arrival_at is not None:
            inside = in_window[positions]
            eventful |= inside & (((now < end[positions] - 1e-12) & (arrival_at[positions] <= now + 1e-12))
                                  | self.waiting[r].any(axis=1))
        if not np.count_nonzero(eventful):
            return
        all_positions = np.arange(index.size)[positions]
        admitting: list[tuple[int, int, float, list[int]]] = []  # (position, row, time, slots that arrived)
        moved: list[int] = []  # positions whose next arrival event may have changed
        for k in np.flatnonzero(eventful).tolist():
            p = all_positions[k].item()
            row = index[p].item()
            t = now[k].item()
            departed = False
            instance = self.slots[row]
            for slot in np.flatnonzero(finished[k]).tolist():
                if in_window[p] and self.open_loop[row, slot]:
                    arrive(instance, slot, t + ARRIVAL_EPS)  # jobs that arrived while this one ran are queued behind
                departed |= complete(instance, slot, t)
            if phased and switching[k]:
                switch_phases(instance, t)  # every slot's switches, active or not (module docstring)
            if in_window[p]:
                if t < end[p] - 1e-12 and (arrival_at[p] <= t + 1e-12 or (departed and self.waiting[row].any())):
                    at = t + ARRIVAL_EPS
                    admitting.append((p, row, t, admit_due(instance, at)))
                    moved.append(p)
                elif departed:
                    moved.append(p)
        if admitting:
            self._admit_in_window(admitting, rule)
        if moved:
            arrival_at[moved] = self.next_arrival_event(index[moved])

    def _end_window(self, r: Any, index: np.ndarray, end: np.ndarray, gpu_window: np.ndarray) -> None:
        span = self.window_s
        c_cpu, c_gpu = self.capacities
        self.time[r] = end
        self.windows[r] += 1
        self.waiting[r] = False  # the next decision sees every user with work
        cpu_window, work_window = self.cpu_window[r], self.work_window[r]
        cpu_total = row_sums(cpu_window)
        self.total_gflop[r] += row_sums(work_window)
        self.cpu_gflop[r] += cpu_total
        self.gpu_gflop[r] += gpu_window
        self.util_cpu[r] = cpu_total / (c_cpu * span)
        self.util_gpu[r] = gpu_window / (c_gpu * span)
        self._measure(r, index, cpu_window, work_window)
        self.last_rates[r] = work_window / span
        if np.count_nonzero(self.has_events[r]):  # only rows with an arrival due by now go through Python
            events = index[self.has_events[r]]
            now = (self.time[events] + ARRIVAL_EPS)[:, None]
            due = self.events[events] & ((self.next_arrival[events] <= now)
                                         | (~self.present[events] & (self.arrival[events] <= now)))
            if np.count_nonzero(due):
                self.admit(events[due.any(axis=1)].tolist())

    def _measure(self, r: Any, index: np.ndarray, cpu_window: np.ndarray, work_window: np.ndarray) -> None:
        """Alg. 1 line 1: ``xi_hat`` = the CPU share of the operations each user ran in the window (plus noise on
        co-run apps), clipped to [0, 1]; users that ran nothing keep their estimate."""
        ran = self.occupied[r] & (work_window > 0)
        estimate = cpu_window / work_window
        if self.xi_noise > 0:
            noisy = ran & self.co_run[r]
            for p in np.flatnonzero(noisy.any(axis=1)).tolist():
                instance = self.slots[index[p]]
                for slot in np.flatnonzero(noisy[p]).tolist():  # one stream, drawn in slot order
                    estimate[p, slot] = estimate[p, slot] + noise(instance, self.xi_noise)
        estimate = np.where(0.0 > estimate, 0.0, estimate)
        estimate = np.where(1.0 < estimate, 1.0, estimate)
        self.xi_hat[r] = np.where(ran, estimate, self.xi_hat[r])

    # --- events inside the window ----------------------------------------------------------------------------------
    def _admit_in_window(self, admitting: list[tuple[int, int, float, list[int]]], rule: Any) -> None:
        """Arrivals inside the window, and waiting slots tested again (module docstring, "Admission"), for every row
        of ``admitting`` (``(position, row, time, slots that got work they lacked)``) with one rule application.

        The arrivals of one instant are decided together, against the set of every user with work, so the outcome
        does not depend on the slot order of simultaneous arrivals.
        """
        rows = np.array([row for _, row, _, _ in admitting])
        candidates = self.present[rows] & (self.queue[rows] > 0)
        retry = self.waiting[rows]
        alloc = rule.plan(self, rows, candidates) > 0.0
        for k, (_, row, _, arrived) in enumerate(admitting):
            for slot in arrived:
                self.waiting[row, slot] = not alloc[k, slot]
        self.waiting[rows] &= ~(retry & alloc)  # a waiting slot that now gets F > 0 joins

    # --- summaries ----------------------------------------------------------------------------------------------
    def jobs_left(self, r: Any) -> np.ndarray:
        """Per slot the jobs-left feature: 1 backlogged, ``min(queue / QUEUE_NORM, 1)`` open loop, else the
        fraction of its jobs left (0 for empty or absent slots)."""
        queue, total = self.queue[r], self.jobs_total[r]
        open_queue = queue / QUEUE_NORM
        left = np.where(self.backlogged[r], 1.0, np.where(
            self.rate[r] > 0, np.where(1.0 < open_queue, 1.0, open_queue),
            np.where(total > 0, queue / np.where(total > 0, total, 1), 0.0)))
        return np.where(self.occupied[r] & self.present[r], left, 0.0)

    def completion_times(self, r: int) -> list[float]:
        """Per slot of row ``r``: finish time - arrival of users that finished all their jobs (NaN otherwise)."""
        return (self.finished_at[r] - self.arrived_at[r]).tolist()


