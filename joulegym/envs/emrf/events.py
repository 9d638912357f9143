"""The events of an EMRF instance, written once for the single env's simulator and for a row of the batched env
(EMRF paper §II-B, §V-C Algorithm 1; docs/families/emrf.md §5, assumptions A2, A9).

An *instance* is anything with the per-slot sequences below, indexable by slot: the scalar
:class:`~joulegym.envs.emrf.simulator.EMRFSimulator` holds Python lists, a row of the batched
:class:`~joulegym.envs.emrf.batch.EMRFBatch` holds numpy views of its row (:class:`BatchRow`). The functions here are
the whole event logic of both (arrivals, Poisson jobs, job starts and completions, xi phase switches, the due
arrivals and the measurement noise): the same Python operations on the same IEEE doubles, so a row of the batch and
the single env give the same bits.

Per-slot sequences: ``present``, ``queue``, ``jobs_total``, ``jobs_done``, ``backlogged``, ``xi``, ``xi_hat``,
``weight``, ``remaining``, ``current_size``, ``arrived_at``, ``finished_at``, ``next_arrival``, ``next_switch``,
``phase``; and ``users`` (a :class:`~joulegym.envs.emrf.simulator.UserSpec` or ``None`` per slot), ``event_slots``
(slots that can get work later), ``streams`` (:class:`SlotStreams`) and ``phase_period``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

ARRIVAL_EPS = 1e-12  # s: an arrival at t counts as due at t + ARRIVAL_EPS (round-off of the window ends)


class LazyStreams(dict):
    """Per-slot generators seeded from ``seeds``, each created on first use (``__missing__``; later lookups are plain
    dict hits): the same streams as creating them all at reset, without the cost of the ones never drawn from
    (empty slots, users without phases or arrivals)."""

    def __init__(self, seeds: list[int]) -> None:
        super().__init__()
        self.seeds = seeds

    def __missing__(self, slot: int) -> np.random.Generator:
        generator = self[slot] = np.random.default_rng(self.seeds[slot])
        return generator


class SlotStreams:
    """The random streams of one instance (common random numbers, docs/families/emrf.md assumption A9): each slot
    draws its job sizes, Poisson job arrivals and xi phase lengths from its own streams, so under one seed every
    policy sees the same jobs at the same times (the draws do not depend on the order in which a policy finishes
    jobs); the measurement noise has one stream of its own (``noise[0]``)."""

    __slots__ = ("arrival", "noise", "phase", "size")

    def __init__(self, rng: np.random.Generator, n: int) -> None:
        seeds = rng.integers(0, 2**63 - 1, size=3 * n + 1).tolist()
        self.size, self.arrival = LazyStreams(seeds[0:n]), LazyStreams(seeds[n:2 * n])
        self.phase, self.noise = LazyStreams(seeds[2 * n:3 * n]), LazyStreams(seeds[3 * n:])


def start_job(s: Any, slot: int) -> None:
    """The next job of ``slot`` starts: its size is W, or lognormal with mean W (``job_sigma``)."""
    user = s.users[slot]
    size = user.job_gflop
    if user.job_sigma > 0:
        sigma = user.job_sigma
        size = size * math.exp(sigma * float(s.streams.size[slot].standard_normal()) - 0.5 * sigma * sigma)
    s.current_size[slot] = size
    s.remaining[slot] = size


def arrive(s: Any, slot: int, now: float) -> bool:
    """Process ``slot``'s arrivals up to ``now`` (its own, its Poisson jobs); True if it got work it lacked."""
    user = s.users[slot]
    queue = s.queue
    present = bool(s.present[slot])
    had_work = present and queue[slot] > 0
    if not present:
        if user.arrival > now:
            return False
        s.present[slot] = True
        s.arrived_at[slot] = user.arrival
        s.xi[slot] = s.xi_hat[slot] = user.xi_cpu
        s.weight[slot] = user.weight
        backlogged = user.jobs is None and user.arrival_rate <= 0
        s.backlogged[slot] = backlogged
        queue[slot] = s.jobs_total[slot] = 1 if backlogged else int(user.jobs or 0)
        if user.arrival_rate > 0:
            s.next_arrival[slot] = user.arrival + float(s.streams.arrival[slot].exponential(1.0 / user.arrival_rate))
        if user.xi_alt is not None:
            s.next_switch[slot] = user.arrival + float(s.streams.phase[slot].uniform(*s.phase_period))
        if queue[slot] > 0:
            start_job(s, slot)
    if user.arrival_rate > 0:
        next_arrival = s.next_arrival
        while next_arrival[slot] <= now:
            if queue[slot] == 0:
                start_job(s, slot)
            queue[slot] += 1
            s.jobs_total[slot] += 1
            next_arrival[slot] += float(s.streams.arrival[slot].exponential(1.0 / user.arrival_rate))
    return not had_work and queue[slot] > 0


def due(s: Any, now: float) -> list[int]:
    """Event slots with an arrival (the user's own or a Poisson job) at or before ``now``."""
    present, users, next_arrival = s.present, s.users, s.next_arrival
    return [slot for slot in s.event_slots
            if next_arrival[slot] <= now or (not present[slot] and users[slot].arrival <= now)]


def admit_due(s: Any, now: float) -> list[int]:
    """Every arrival due by ``now`` (:func:`due`, :func:`arrive`); the slots that got work they lacked."""
    return [slot for slot in due(s, now) if arrive(s, slot, now)]


def complete(s: Any, slot: int, now: float) -> bool:
    """The current job of ``slot`` is done at ``now``: start the next one (closed loop) or let the user depart
    (True)."""
    s.jobs_done[slot] += 1
    if s.backlogged[slot]:
        start_job(s, slot)
        return False
    s.queue[slot] -= 1
    if s.queue[slot] > 0:
        start_job(s, slot)
        return False
    s.remaining[slot] = 0.0
    s.finished_at[slot] = now
    return True


def switch_phases(s: Any, now: float) -> None:
    """Apply every xi phase switch due by ``now``, of every slot, active or not.

    A switch happens at its scheduled time and the next one is drawn from that time, so a slot's phase timeline is
    a function of its own random stream only: it does not depend on when the slot had work (common random numbers
    across policies). Only an active slot's switch ends a segment (its rate's split changes); an idle or waiting
    slot's switch is applied at the end of the segment it falls in, which is early enough: its ``xi`` is not used
    before it is active again.
    """
    next_switch, users, xi, phase = s.next_switch, s.users, s.xi, s.phase
    lo, hi = s.phase_period
    for slot in range(len(users)):
        while next_switch[slot] <= now + 1e-12:
            user = users[slot]
            phase[slot] ^= 1
            xi[slot] = user.xi_alt if phase[slot] else user.xi_cpu
            next_switch[slot] += float(s.streams.phase[slot].uniform(lo, hi))


def noise(s: Any, xi_noise: float) -> float:
    """The measurement noise of one co-run user's estimate (Gaussian, one stream per instance, drawn in slot
    order)."""
    return xi_noise * float(s.streams.noise[0].standard_normal())


class BatchRow:
    """Row ``r`` of an :class:`~joulegym.envs.emrf.batch.EMRFBatch` as an instance for the functions here: numpy
    views of the row's per-slot arrays (writes go to the batch), its users, event slots and streams."""

    __slots__ = ("arrived_at", "backlogged", "current_size", "event_slots", "finished_at", "jobs_done", "jobs_total",
                 "next_arrival", "next_switch", "phase", "phase_period", "present", "queue", "remaining", "streams",
                 "users", "weight", "xi", "xi_hat")

    def __init__(self, batch: Any, r: int) -> None:
        for name in ("arrived_at", "backlogged", "finished_at", "jobs_done", "jobs_total", "next_arrival",
                     "next_switch", "phase", "present", "queue", "remaining", "weight", "xi", "xi_hat"):
            setattr(self, name, getattr(batch, name)[r])
        self.current_size = batch.size[r]
        self.phase_period = batch.phase_period
        self.bind(batch, r)

    def bind(self, batch: Any, r: int) -> None:
        """Take the row's episode objects (users, event slots, streams) after its reset."""
        self.users, self.event_slots, self.streams = batch.users[r], batch.event_slots[r], batch.streams[r]
