"""The EMRF simulator of one APU (EMRF paper §II-B, §V-C Algorithm 1; docs/families/emrf.md §5): a core
:class:`~joulegym.core.simulator.Simulator` over one row of :class:`~joulegym.envs.emrf.batch.EMRFBatch`.

No Gymnasium here. ``reset(rng, users)`` (a list of :class:`UserSpec`; ``None``: the same users again),
``apply(rule)`` (the window's allocation rule: an :class:`~joulegym.envs.emrf.rules.AllocationRule`, or any function
``active slots -> F per slot``), ``advance()`` (run the window), ``view()`` (a read-only :class:`APUView`),
``metrics()``, ``done``, ``truncated``; :meth:`EMRFSimulator.window` applies a rule and runs its window at once.
The model (fluid progress, events inside the window, admission, phases, measurement, common random numbers) is
:mod:`joulegym.envs.emrf.batch`'s; the window's measures (E, V, Δ, F/S) are :mod:`joulegym.envs.emrf.episodes`'.
The state reads as per-slot arrays of the one row (``sim.xi_hat``, ``sim.queue``, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from joulegym.core.simulator import Simulator
from joulegym.envs.emrf.batch import EPS_WORK, MAX_SEGMENTS, QUEUE_NORM, EMRFBatch, UserSpec, WindowResult
from joulegym.envs.emrf.episodes import EMRFEpisodes
from joulegym.envs.emrf.rules import AllocationRule, CallableRule

__all__ = ["EPS_WORK", "MAX_SEGMENTS", "QUEUE_NORM", "APUView", "EMRFSimulator", "UserSpec", "WindowResult"]

ROW = slice(0, 1)  # the simulator is row 0 of a batch of one
# the per-slot arrays of the row, readable (and, for tests, writable) as ``sim.<name>``
_SLOT_ARRAYS = {"xi", "xi_hat", "weight", "remaining", "work_done", "work_window", "next_arrival", "next_switch",
                "arrived_at", "finished_at", "last_rates", "queue", "jobs_total", "jobs_done", "phase", "present",
                "waiting", "backlogged"}
_ALIASES = {"current_size": "size", "cpu_ops_window": "cpu_window"}


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


class EMRFSimulator(Simulator):
    """The fluid APU-sharing simulator of one APU (module docstring).

    :param capacities: ``(C_cpu, C_gpu)`` GFLOPS.
    :param max_users: user slots.
    :param window_s: ΔT, seconds per decision window.
    :param horizon: windows per episode.
    :param xi_noise: std of the measurement noise on co-run apps.
    :param phase_period: ``(lo, hi)`` seconds between xi phase switches.
    :param admit_at_window: arrivals wait for the next window boundary.
    :param weight_unit: weights enter allocations as ``weight / weight_unit`` (:class:`EMRFBatch`).
    :param keep_history: keep ``(time, U_cpu, U_gpu, delivered)`` per window (the env's render).
    """

    def __init__(self, capacities: tuple[float, float], max_users: int, window_s: float = 1.0, horizon: int = 200,
                 xi_noise: float = 0.0, phase_period: tuple[float, float] = (20.0, 40.0),
                 admit_at_window: bool = False, weight_unit: float = 1.0, keep_history: bool = False) -> None:
        batch = EMRFBatch(1, capacities, max_users, window_s, horizon, xi_noise, phase_period, admit_at_window,
                          weight_unit)
        batch.record = True
        self.batch = batch
        self.episodes = EMRFEpisodes(batch, keep_history)
        self.capacities, self.max_users = batch.capacities, batch.max_users
        self.window_s, self.horizon, self.admit_at_window = batch.window_s, batch.horizon, batch.admit_at_window
        self.eta_target = 0.0  # η_target of the next episode (the fairness floor the window's measures use)
        self._users: list[UserSpec] = []
        self._rule: AllocationRule | None = None
        self.last_parts = np.zeros(3)
        self.reset(np.random.default_rng(0), [])

    def __getattr__(self, name: str) -> Any:  # the row's per-slot arrays (a view: writes reach the state)
        if name in _SLOT_ARRAYS or name in _ALIASES:
            return getattr(self.__dict__["batch"], _ALIASES.get(name, name))[0]
        raise AttributeError(name)

    # --- the Simulator protocol ------------------------------------------------------------------------------
    def reset(self, rng: np.random.Generator, instance: list[UserSpec] | None = None) -> None:
        """Start an episode with the users ``instance`` in the first slots (``None``: the previous users again);
        the per-slot random streams are seeded from ``rng``."""
        users = self._users if instance is None else list(instance)
        self.episodes.reset_row(0, users, rng, self.eta_target)
        self._users = users
        self._rule = None

    def _apply(self, decision: AllocationRule | Callable[[tuple[int, ...]], list[float]]) -> None:
        """Set the allocation rule of the coming window (active slots -> planned GFLOPS per slot)."""
        if isinstance(decision, AllocationRule):
            self._rule = decision
        elif callable(decision):
            self._rule = CallableRule(decision, batch=self.batch)
        else:
            raise ValueError(f"an EMRF decision is an AllocationRule or a function of the active slots, got "
                             f"{type(decision).__name__}")

    def advance(self) -> bool:
        """Run the window under the applied rule (used once, then dropped: the rule may close over the env).

        Its result is :attr:`last_window`; the window's reward parts (E, -Δ / (W / min w), -V) are
        :attr:`last_parts`. Returns ``True`` while the episode goes on.
        """
        rule, self._rule = self._rule, None
        if rule is None:
            raise RuntimeError("EMRFSimulator.advance() called without apply(rule) first")
        self.last_parts = self.episodes.step(ROW, rule)[0]
        return not (self.done or self.truncated)

    def window(self, rule: AllocationRule | Callable[[tuple[int, ...]], list[float]]) -> WindowResult:
        """Apply ``rule`` and run its window (observers told); returns the window's :class:`WindowResult`."""
        self.apply(rule)
        self.advance()
        return self.last_window

    def view(self) -> APUView:
        """A read-only snapshot of the state a scheduler decides on."""
        batch = self.batch
        active = batch.active_mask(0)
        return APUView(self.time, self.windows, self.capacities, tuple(active.tolist()), tuple(batch.xi_hat[0].tolist()),
                       tuple(batch.weight[0].tolist()), tuple(batch.queue[0].tolist()),
                       tuple(self.remaining_fraction(i) for i in range(self.max_users)))

    def metrics(self) -> dict[str, float]:
        """Work done so far (running totals): simulated seconds, windows, GFLOP in all / on each device, jobs."""
        batch = self.batch
        return {"time_s": self.time, "windows": float(self.windows), "total_gflop": batch.total_gflop[0].item(),
                "cpu_gflop": batch.cpu_gflop[0].item(), "gpu_gflop": batch.gpu_gflop[0].item(),
                "jobs_completed": float(sum(batch.jobs_done[0].tolist()))}

    @property
    def done(self) -> bool:
        """Every user has arrived, finished its jobs, and no open-loop source is left."""
        return bool(self.batch.done_rows()[0])

    @property
    def truncated(self) -> bool:
        return self.windows >= self.horizon

    # --- the row's state ---------------------------------------------------------------------------------------
    @property
    def time(self) -> float:
        return self.batch.time[0].item()

    @property
    def windows(self) -> int:
        return self.batch.windows[0].item()

    @property
    def users(self) -> list[UserSpec | None]:
        return self.batch.users[0]

    @property
    def active(self) -> list[bool]:
        """Per slot: present with unfinished work, not waiting."""
        return self.batch.active_mask(0).tolist()

    @property
    def last_window(self) -> WindowResult:
        return self.batch.last_window[0]

    @property
    def last_utilisation(self) -> tuple[float, float]:
        return self.batch.util_cpu[0].item(), self.batch.util_gpu[0].item()

    @property
    def total_gflop(self) -> float:
        return self.batch.total_gflop[0].item()

    @property
    def cpu_gflop(self) -> float:
        return self.batch.cpu_gflop[0].item()

    @property
    def gpu_gflop(self) -> float:
        return self.batch.gpu_gflop[0].item()

    def remaining_fraction(self, slot: int) -> float:
        batch = self.batch
        if not (batch.present[0, slot] and batch.queue[0, slot] > 0):
            return 0.0
        return min(max(batch.remaining[0, slot].item() / batch.size[0, slot].item(), 0.0), 1.0)

    def jobs_left_fraction(self, slot: int) -> float:
        return self.batch.jobs_left(ROW)[0, slot].item()

    def completion_times(self) -> list[float]:
        """Per slot: finish time - arrival of users that finished all their jobs (NaN otherwise)."""
        return self.batch.completion_times(0)
