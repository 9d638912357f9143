"""The EMRF event-driven fluid simulator (EMRF paper §II-B, §V-C Algorithm 1; docs/families/emrf.md §5).

No Gymnasium here. :class:`EMRFSimulator` is a core :class:`~joulegym.core.simulator.Simulator`: ``reset(rng,
users)`` (a list of :class:`UserSpec`; ``None``: the same users again), ``apply(rule)`` (the window's allocation
rule), ``advance()`` (run the window), ``view()`` (a read-only :class:`APUView`), ``metrics()``, ``done``,
``truncated``; :meth:`EMRFSimulator.window` runs one window directly. The events of a window (arrivals, job starts
and completions, xi phase switches, measurement noise) are :mod:`joulegym.envs.emrf.events` and where a segment of
the window ends, the device scale of its rates and the work its slots do in it are :mod:`joulegym.envs.emrf.segment`,
both shared with the batched vector env, which runs the rest of the window for N instances as arrays
(:mod:`joulegym.envs.emrf.batch`; a test per kind proves the bits equal).

``max_users`` user slots share an APU of capacities ``(C_cpu, C_gpu)`` GFLOPS. Each occupied slot
is a user with an app split ``xi`` (true) and ``xi_hat`` (what the scheduler measured over the last
window), a weight and a job queue; a job is W GFLOP. A user with unfinished work is *active*.

**Fluid progress.** At allocation F_i (GFLOPS) the current job progresses at F_i GFLOP/s, its CPU
and GPU parts in lockstep (the coupling, §II-B). The allocation is planned with ``xi_hat``; the
hardware runs the true ``xi``: if the planned allocation over-uses a device under the true split,
every rate is scaled by the same factor ``min_d C_d / usage_d`` (a fluid device cannot exceed its
capacity). Without drift or noise ``xi_hat == xi`` and the planned allocation runs exactly
(docs/families/emrf.md, assumption A1).

**One decision window** (:meth:`EMRFSimulator.window`, Algorithm 1's ΔT, default 1 s) is split into
segments at every event (Alg. 1 re-allocates every ΔT and on changes; docs/families/emrf.md, assumption A2):
a job completion (the next job of the user starts at once, closed loop), a departure (the user's queue
is empty), an *arrival* (a user arriving at its ``arrival`` time, or an open-loop Poisson job arriving
at a present user's empty queue) and a phase switch of ``xi`` of an active user (``apu-phases``). At the
start of each segment the window's allocation rule is re-applied to the current active set (the same ω
re-scaled over the remaining users, as a work-conserving weighted fair scheduler does, or EMRF re-solved for
a knob).

**xi phases.** A user with ``xi_alt`` alternates between ``xi_cpu`` and ``xi_alt`` at switch times drawn
from its own stream from its arrival on (gaps uniform in ``phase_period``). Every switch is applied at its
time whether or not the user has work then, so the phase timeline does not depend on the policy; the
switch of a user without work (departed, between Poisson jobs, waiting) ends no segment (nothing that
runs changes) and is applied at the end of the segment it falls in, before that user can run again.

**Admission of an arrival inside the window.** The arrivals of one instant are taken together: the
window's rule is applied to the set of every user with work (the active set, the arriving slots and
the slots already waiting); an arriving slot joins at once if it gets a positive allocation there,
otherwise (a ``weights`` action that gave its slot ω = 0, e.g. because it was idle at the decision) it
*waits*: it holds its job but is not in the active set (no rate, not in the window's measures). A
waiting slot is tested again, the same way, at every later arrival or departure in the window (a
departure can leave the APU to it: the weighted fair scheduler is work-conserving) and is active like
any user with work at the next decision. A Poisson job arriving at a non-empty queue changes no
allocation: it is queued (counted at the latest when the current job completes, so a user whose job
arrived before its previous one finished does not depart). ``admit_at_window=True`` restores the
earlier simplification: every arrival is admitted at the next window boundary (arrivals wait at most
ΔT). The arrival times themselves do not depend on the mode or the policy (common random numbers).

**Measurement** (Alg. 1 line 1): at the end of a window ``xi_hat_i`` = CPU operations / all operations
user i ran in the window (the ops-weighted true split), plus optional Gaussian noise (``xi_noise``) on
co-run apps (0 < xi < 1), clipped to [0, 1]. Users that ran nothing keep their previous estimate.
A change of xi is therefore seen at the next decision (a re-solve trigger on a change of xi cannot fire
inside the window that produces the measurement; docs/families/emrf.md, assumption A7).

**Randomness** (common random numbers): each slot draws its job sizes, Poisson job arrivals and xi
phase lengths from its own stream (seeded from the env's generator at reset), and the measurement noise
from another, so one seed gives every policy the same jobs at the same times (docs/families/emrf.md,
assumption A9).

The per-window path uses plain lists (a handful of slots: list arithmetic beats small numpy calls; docs §11).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from joulegym.core.simulator import Simulator
from joulegym.core.summation import sequential_sum
from joulegym.envs.emrf.allocation import device_loads
from joulegym.envs.emrf.decisions import scalar_where
from joulegym.envs.emrf.events import ARRIVAL_EPS, SlotStreams, admit_due, arrive, complete, noise, switch_phases
from joulegym.envs.emrf.segment import device_scale, progress, segment_length

EPS_WORK = 1e-9  # relative remaining work below which a job counts as finished (fp round-off)
MAX_SEGMENTS = 100_000  # events in one window: beyond this the window would run for seconds; raise instead of hanging
#                        (the env bounds the implied events at config time; this catches the rest)
QUEUE_NORM = 4.0  # open-loop users: queue feature = min(queued jobs / 4, 1) (joulegym choice, observation only)


@dataclass(frozen=True)
class UserSpec:
    """One user (slot occupant).

    :param name: label (app name).
    :param xi_cpu: true CPU fraction of the app's work.
    :param weight: w_i > 0.
    :param job_gflop: mean job size W (GFLOP).
    :param jobs: jobs submitted at ``arrival`` (closed loop); ``None`` = backlogged (never runs out).
    :param arrival: time (s) the user arrives (an event inside the window; with ``admit_at_window``, admitted
        at the first window boundary >= it).
    :param arrival_rate: Poisson job arrivals per second after ``arrival`` (open loop), 0 = none.
    :param job_sigma: lognormal sigma of job sizes (mean kept at ``job_gflop``); 0 = fixed size.
    :param xi_alt: ``apu-phases``: the second value ``xi`` alternates with (None = no drift).
    :param co_run: whether measurement noise applies (co-run friendly apps, 0 < xi < 1).
    """

    name: str
    xi_cpu: float
    weight: float
    job_gflop: float
    jobs: int | None = None
    arrival: float = 0.0
    arrival_rate: float = 0.0
    job_sigma: float = 0.0
    xi_alt: float | None = None
    co_run: bool = False


AllocationRuleFn = Callable[[tuple[int, ...]], list[float]]  # active slots -> planned GFLOPS per slot


@dataclass(frozen=True)
class APUView:
    """What a scheduler decides on at a window boundary (:meth:`EMRFSimulator.view`); tuples per slot."""

    time: float
    windows: int
    capacities: tuple[float, float]
    active: tuple[bool, ...]  # present with unfinished work
    xi_hat: tuple[float, ...]  # measured CPU fraction (the decision's xi)
    weight: tuple[float, ...]
    queue: tuple[int, ...]  # jobs not finished (current one included)
    remaining_fraction: tuple[float, ...]  # of the current job


@dataclass
class WindowResult:
    """What happened in one window: segments ``(dt, active slots, delivered GFLOPS per slot)``.

    ``arrivals``: ``(time, slot, joined)`` of every slot that got work it lacked inside the window
    (``joined``: it joined the active set at once; False: it waits). ``readmitted``: ``(time, slot)`` of
    waiting slots that joined later in the window (module docstring, "Admission").
    """

    segments: list[tuple[float, tuple[int, ...], list[float]]] = field(default_factory=list)
    completed_jobs: int = 0
    departures: list[int] = field(default_factory=list)
    arrivals: list[tuple[float, int, bool]] = field(default_factory=list)
    readmitted: list[tuple[float, int]] = field(default_factory=list)


class EMRFSimulator(Simulator):
    """Fluid APU-sharing simulator; see the module docstring."""

    def __init__(self, capacities: tuple[float, float], max_users: int, window_s: float = 1.0,
                 horizon: int = 200, xi_noise: float = 0.0, phase_period: tuple[float, float] = (20.0, 40.0),
                 admit_at_window: bool = False) -> None:
        self.admit_at_window = bool(admit_at_window)
        self.capacities = (float(capacities[0]), float(capacities[1]))
        self.max_users = int(max_users)
        self.window_s = float(window_s)
        self.horizon = int(horizon)
        self.xi_noise = float(xi_noise)
        self.phase_period = (float(phase_period[0]), float(phase_period[1]))
        if not 0.0 < self.phase_period[0] <= self.phase_period[1]:
            raise ValueError(f"phase_period must be (lo, hi) with 0 < lo <= hi seconds, got {phase_period!r}")
        self.rng = np.random.default_rng(0)
        self._rule: AllocationRuleFn | None = None
        self._users: list[UserSpec] = []
        self.last_window = WindowResult()
        self.reset(self.rng, [])

    # --- state -------------------------------------------------------------------------------------
    def reset(self, rng: np.random.Generator, instance: list[UserSpec] | None = None) -> None:
        """Start an episode with the users ``instance`` in the first slots (``None``: the previous users again);
        the per-slot random streams are seeded from ``rng``."""
        users = self._users if instance is None else list(instance)
        self._users = users
        if len(users) > self.max_users:
            raise ValueError(f"{len(users)} users do not fit in max_users={self.max_users} slots")
        self.rng = rng
        self._rule = None
        self.last_window = WindowResult()
        n = self.max_users
        self.streams = SlotStreams(rng, n)  # common random numbers (events.SlotStreams)
        self.time = 0.0
        self.windows = 0
        self.users: list[UserSpec | None] = [None] * n
        self.present = [False] * n  # arrived (occupies the slot)
        self.waiting = [False] * n  # has work that arrived in this window but was not admitted (module docstring)
        self.xi = [0.0] * n
        self.xi_hat = [0.0] * n
        self.weight = [1.0] * n
        self.queue = [0] * n  # jobs not finished (current one included); backlogged: 1 forever
        self.backlogged = [False] * n
        self.remaining = [0.0] * n  # GFLOP left of the current job
        self.current_size = [1.0] * n
        self.jobs_total = [0] * n
        self.jobs_done = [0] * n
        self.work_done = [0.0] * n
        self.work_window = [0.0] * n
        self.cpu_ops_window = [0.0] * n
        self.arrived_at = [0.0] * n
        self.finished_at: list[float | None] = [None] * n
        self.next_arrival = [math.inf] * n  # next Poisson job
        self.next_switch = [math.inf] * n
        self.phase = [0] * n
        self.last_rates = [0.0] * n
        self.last_utilisation = (0.0, 0.0)
        self.total_gflop = 0.0
        self.cpu_gflop = 0.0
        self.gpu_gflop = 0.0
        for slot, user in enumerate(users):
            self.users[slot] = user
        # slots that can get work later: users not yet arrived and open-loop (Poisson) users
        self.event_slots = tuple(slot for slot, user in enumerate(users) if user.arrival > 0 or user.arrival_rate > 0)
        self._open_loop = [user is not None and user.arrival_rate > 0 for user in self.users]
        self._phased = any(user.xi_alt is not None for user in users)
        for slot in range(len(users)):
            arrive(self, slot, ARRIVAL_EPS)

    @property
    def active(self) -> list[bool]:
        return [p and q > 0 and not w for p, q, w in zip(self.present, self.queue, self.waiting)]

    @property
    def done(self) -> bool:
        """Every user has arrived, finished its jobs, and no open-loop source is left."""
        for slot, user in enumerate(self.users):
            if user is None:
                continue
            if not self.present[slot] or self.queue[slot] > 0 or self.backlogged[slot] or user.arrival_rate > 0:
                return False
        return True

    @property
    def truncated(self) -> bool:
        return self.windows >= self.horizon

    # --- arrivals ----------------------------------------------------------------------------------
    def _admit(self) -> None:
        """At a window boundary: process every arrival up to now (the next decision sees them all)."""
        admit_due(self, self.time + ARRIVAL_EPS)

    def _next_arrival_event(self) -> float:
        """Time of the next arrival that can change the active set (a user arriving, a job at an empty queue)."""
        t = math.inf
        present, queue = self.present, self.queue
        for slot in self.event_slots:
            if not present[slot]:
                ts = self.users[slot].arrival
            elif queue[slot] == 0:
                ts = self.next_arrival[slot]
            else:
                continue  # jobs arriving at a busy queue change nothing now (queued; absorbed by its completion)
            if ts < t:
                t = ts
        return t

    # --- the Simulator protocol ----------------------------------------------------------------------
    def _apply(self, rule: AllocationRuleFn) -> None:
        """Set the allocation rule of the coming window (active slots -> planned GFLOPS per slot)."""
        if not callable(rule):
            raise ValueError(f"an EMRF decision is an allocation rule (active slots -> GFLOPS per slot), got "
                             f"{type(rule).__name__}")
        self._rule = rule

    def advance(self) -> bool:
        """Run the window under the applied rule (:meth:`window`; its result is :attr:`last_window`).

        The rule is used once and dropped (it may close over the env: the simulator stays picklable).
        Returns ``True`` while the episode goes on.
        """
        rule, self._rule = self._rule, None
        if rule is None:
            raise RuntimeError("EMRFSimulator.advance() called without apply(rule) first")
        self.last_window = self.window(rule)
        return not (self.done or self.truncated)

    def view(self) -> APUView:
        """A read-only snapshot of the state a scheduler decides on."""
        n = self.max_users
        return APUView(self.time, self.windows, self.capacities, tuple(self.active), tuple(self.xi_hat),
                       tuple(self.weight), tuple(self.queue), tuple(self.remaining_fraction(i) for i in range(n)))

    def metrics(self) -> dict[str, float]:
        """Work done so far (running totals): simulated seconds, windows, GFLOP in all / on each device, jobs."""
        return {"time_s": self.time, "windows": float(self.windows), "total_gflop": self.total_gflop,
                "cpu_gflop": self.cpu_gflop, "gpu_gflop": self.gpu_gflop, "jobs_completed": float(sum(self.jobs_done))}

    # --- one window ---------------------------------------------------------------------------------
    def window(self, rule: AllocationRuleFn) -> WindowResult:
        """Advance one window of ``window_s`` seconds under ``rule`` (active slots -> planned GFLOPS per slot)."""
        result = WindowResult()
        end = self.time + self.window_s
        c_cpu, c_gpu = self.capacities
        n = self.max_users
        xi, remaining, present, queue, waiting = self.xi, self.remaining, self.present, self.queue, self.waiting
        next_switch, work_done, phased = self.next_switch, self.work_done, self._phased
        work_window = self.work_window = [0.0] * n
        cpu_window = self.cpu_ops_window = [0.0] * n
        gpu_window = 0.0
        planned: dict[tuple[int, ...], list[float]] = {}
        in_window = bool(self.event_slots) and not self.admit_at_window  # arrivals are events in the window
        # the next arrival that can change the active set; recomputed only when an arrival or a departure
        # happened (no per-segment scan while nothing is pending)
        arrival_at = self._next_arrival_event() if in_window else math.inf
        while self.time < end - 1e-12:
            now = self.time
            active = tuple(i for i in range(n) if present[i] and queue[i] > 0 and not waiting[i])
            alloc = planned.get(active)
            if alloc is None:
                alloc = planned[active] = rule(active)
            use_cpu, use_gpu = device_loads(active, alloc, xi)  # the plan run with the true xi
            scale = device_scale(use_cpu, use_gpu, c_cpu, c_gpu, scalar_where)
            rates = [0.0] * n
            for i in active:
                rates[i] = alloc[i] * scale
            dt = segment_length(end - now, arrival_at - now, now, active, rates, remaining,
                                next_switch if phased else None, scalar_where)
            gpu_window = progress(active, dt, rates, xi, remaining, work_done, work_window, cpu_window, gpu_window)
            self.time = now = now + dt
            result.segments.append((dt, active, rates))
            if len(result.segments) > MAX_SEGMENTS:
                raise RuntimeError(f"more than MAX_SEGMENTS={MAX_SEGMENTS} events in one window of {self.window_s} s "
                                   "(job completions and arrivals): use larger jobs, fewer arrivals or shorter windows")
            arrival_at = self._segment_events(active, now, end, in_window, arrival_at, rule, planned, result)
        self._end_window(end, gpu_window)
        return result

    def _segment_events(self, active: tuple[int, ...], now: float, end: float, in_window: bool, arrival_at: float,
                        rule: AllocationRuleFn, planned: dict[tuple[int, ...], list[float]],
                        result: WindowResult) -> float:
        """The events at the end of a segment: completions (and the Poisson jobs queued behind them), phase switches,
        arrivals inside the window and waiting slots tested again; returns the next arrival event's time."""
        remaining, size, open_loop = self.remaining, self.current_size, self._open_loop
        departures = len(result.departures)
        for i in active:
            if remaining[i] <= EPS_WORK * size[i]:
                if in_window and open_loop[i]:
                    arrive(self, i, now + ARRIVAL_EPS)  # jobs that arrived while this one ran are queued behind it
                self._complete(i, result)
        if self._phased:
            switch_phases(self, now)  # every slot's switches, active or not (module docstring)
        if in_window:
            departed = len(result.departures) > departures  # a departed open-loop slot waits for jobs again
            if now < end - 1e-12 and (arrival_at <= now + 1e-12 or (departed and any(self.waiting))):
                self._admit_in_window(now, rule, planned, result)
                return self._next_arrival_event()
            if departed:
                return self._next_arrival_event()
        return arrival_at

    def _end_window(self, end: float, gpu_window: float) -> None:
        """Close the window: totals, utilisation, the measurement of xi_hat, and the arrivals due at its end."""
        c_cpu, c_gpu = self.capacities
        work_window, cpu_window = self.work_window, self.cpu_ops_window
        self.time = end
        self.windows += 1
        self.waiting[:] = [False] * self.max_users  # the next decision sees every user with work
        cpu_total = sequential_sum(cpu_window)
        self.total_gflop += sequential_sum(work_window)
        self.cpu_gflop += cpu_total
        self.gpu_gflop += gpu_window
        self.last_utilisation = (cpu_total / (c_cpu * self.window_s), gpu_window / (c_gpu * self.window_s))
        self._measure()
        self.last_rates = [w / self.window_s for w in work_window]
        if self.event_slots:
            self._admit()

    def _admit_in_window(self, now: float, rule: AllocationRuleFn,
                         planned: dict[tuple[int, ...], list[float]], result: WindowResult) -> None:
        """Arrivals at ``now`` inside the window, and waiting slots tested again (module docstring, "Admission").

        The arrivals of one instant are decided together, against the set of every user with work, so the
        outcome does not depend on the slot order of simultaneous arrivals.
        """
        at = now + ARRIVAL_EPS
        arrived = admit_due(self, at)
        waiting = self.waiting
        retry = [slot for slot in range(self.max_users) if waiting[slot]]
        if not arrived and not retry:
            return
        present, queue = self.present, self.queue
        candidate = tuple(i for i in range(self.max_users) if present[i] and queue[i] > 0)
        alloc = planned.get(candidate)
        if alloc is None:
            alloc = planned[candidate] = rule(candidate)
        for slot in arrived:
            joined = alloc[slot] > 0.0
            waiting[slot] = not joined
            result.arrivals.append((now, slot, joined))
        for slot in retry:
            if alloc[slot] > 0.0:
                waiting[slot] = False
                result.readmitted.append((now, slot))

    def _complete(self, i: int, result: WindowResult) -> None:
        """User ``i``'s current job is done: start the next one (closed loop) or let the user depart."""
        result.completed_jobs += 1
        if complete(self, i, self.time):
            result.departures.append(i)

    def _measure(self) -> None:
        for i in range(self.max_users):
            user = self.users[i]
            if user is None or self.work_window[i] <= 0:
                continue
            estimate = self.cpu_ops_window[i] / self.work_window[i]
            if self.xi_noise > 0 and user.co_run:
                estimate += noise(self, self.xi_noise)
            self.xi_hat[i] = min(max(estimate, 0.0), 1.0)

    # --- summaries ------------------------------------------------------------------------------------
    def remaining_fraction(self, slot: int) -> float:
        if not (self.present[slot] and self.queue[slot] > 0):
            return 0.0
        return min(max(self.remaining[slot] / self.current_size[slot], 0.0), 1.0)

    def jobs_left_fraction(self, slot: int) -> float:
        user = self.users[slot]
        if user is None or not self.present[slot]:
            return 0.0
        if self.backlogged[slot]:
            return 1.0
        if user.arrival_rate > 0:
            return min(self.queue[slot] / QUEUE_NORM, 1.0)
        return self.queue[slot] / self.jobs_total[slot] if self.jobs_total[slot] else 0.0

    def completion_times(self) -> list[float]:
        """Per slot: finish time - arrival of users that finished all their jobs (NaN otherwise)."""
        return [f - a if f is not None else math.nan for f, a in zip(self.finished_at, self.arrived_at)]
