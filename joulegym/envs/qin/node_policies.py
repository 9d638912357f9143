"""Pluggable node-level policies of the Qin simulator (thread-to-core mapping and per-core V/F; paper §5.1,
Alg. 2 + 4, §7.2; qin.md §3.5-3.6, §5.1; ``docs/families/qin.md`` "Node policies").

Section numbers (``qin.md §x``) and assumption ids (A1-A27) are those of ``docs/families/qin.md``.

One protocol (:class:`NodePolicy`) for every policy that runs inside :class:`~joulegym.envs.qin.simulator.
QinSim`'s servers:

==============  ================================================================================================
``name``        the policy's name
``periodic``    whether it acts every control period (the simulator then ticks at ``k * control_period_s``)
``reset``       ``reset(sim, rng)`` at the start of an episode (its own random stream)
``place``       ``place(sim, server, threads) -> cores``: the global core of each new thread of a placed job
``on_change``   ``on_change(sim, server)`` after a placement or a completion on ``server`` (may re-map threads
                and set levels through ``sim.set_node_decision``)
``control``     ``control(sim, servers) -> moved``: the end of a control period (periodic policies only);
                ``sim.period_instr`` / ``sim.period_busy_s`` hold the period's per-core measurements
==============  ================================================================================================

Policies (qin.md §5.1):

- ``linux``: the Linux-CFS stand-in of the real cluster: each new thread on the core with the fewest threads
  (ties: lowest index); after each completion, idle balancing moves threads from the most to the least loaded
  core until the thread counts differ by at most one (zero migration cost); cores run at the job's V/F hint
  (Qin's chosen level j*, qin.md §3.5; the top level for the baselines) — the highest hint on a shared core.
- ``sniper_pinned``: Sniper's default ``pinned`` scheduler (qin.md §4.1, [EXT] Sniper base.cfg): the next free
  core after the last assigned one, else the round-robin core; never migrates; no DVFS (f_H).
- ``qin_node``: Qin's node level (Alg. 2 + 4): threads re-mapped by the D-choice rule (:func:`~joulegym.envs.
  qin.scheduling.node_dchoice`, d = 2), a per-core Kalman filter (eq. 7-11, A14) predicting next-period CPI and
  instruction count, and the §3.6 DVFS controller under the focus's PL threshold (perf 0, energy 0.5,
  EDP 0.1), with per-app loss accounting (:func:`~joulegym.envs.qin.scheduling.dvfs_levels_per_app`;
  qin.md §3.6: threads migrate, so per-core totals would let an app exceed PL). ``remap="period"`` re-decides every
  thread every control period (the paper; affordable on one server, QinNode-v0); ``remap="events"``
  (default) re-decides a server's threads at its placements and completions only: in between, the inputs of
  the D-choice rule change only through the drained loads, so a per-period re-decision mostly re-draws the
  uniform Flist pick, and at 10 ms over a 100-job cluster episode it costs minutes of CPU. The performance
  focus with ``remap="events"`` never ticks (PL = 0 pins f_H).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from joulegym.core.predictors import ScalarKalmanFilter
from joulegym.envs.qin import scheduling as sch

if TYPE_CHECKING:
    from joulegym.envs.qin.simulator import QinSim

REMAP_MODES = ("events", "period")


@runtime_checkable
class NodePolicy(Protocol):
    """Structural type of a node policy (module docstring)."""

    name: str
    periodic: bool

    def reset(self, sim: QinSim, rng: np.random.Generator) -> None: ...

    def place(self, sim: QinSim, server: int, threads: np.ndarray) -> np.ndarray: ...

    def on_change(self, sim: QinSim, server: int) -> None: ...

    def control(self, sim: QinSim, servers: np.ndarray) -> bool: ...


def _hint_levels(sim: QinSim, server: int) -> np.ndarray:
    """Per core of ``server``: the highest V/F hint of the jobs whose threads share it (idle cores: keep)."""
    lo, hi = sim.first_core[server], sim.first_core[server + 1]
    th = sim._server_threads[server]
    levels = np.full(sim.n_cores, -1, dtype=np.intp)
    if th.size:
        hint = sim.job_level_hint[sim.thread_job[th]]
        top = np.full(hi - lo, -1, dtype=np.intp)
        np.maximum.at(top, sim.thread_core[th] - lo, hint)
        levels[lo:hi] = top
    return levels


class LinuxNodePolicy:
    """``linux``: least-loaded placement, idle balancing at events, the jobs' V/F hints (module docstring)."""

    name = "linux"
    periodic = False

    def reset(self, sim: QinSim, rng: np.random.Generator) -> None:
        self.rng = rng

    def place(self, sim: QinSim, server: int, threads: np.ndarray) -> np.ndarray:
        lo, hi = sim.first_core[server], sim.first_core[server + 1]
        count = sim.core_threads[lo:hi].copy()
        out = np.empty(threads.size, dtype=np.intp)
        for i in range(threads.size):
            c = int(np.argmin(count))
            out[i] = lo + c
            count[c] += 1
        return out

    def on_change(self, sim: QinSim, server: int) -> None:
        lo, hi = sim.first_core[server], sim.first_core[server + 1]
        th = sim._server_threads[server]
        if th.size:
            count = sim.core_threads[lo:hi]
            if count.max() - count.min() > 1:
                count = count.copy()
                target = sim.thread_core[th].copy()
                while count.max() - count.min() > 1:  # idle balancing: most -> least loaded, the last thread moves
                    src, dst = int(np.argmax(count)), int(np.argmin(count))
                    mover = np.flatnonzero(target == lo + src)[-1]
                    target[mover] = lo + dst
                    count[src] -= 1
                    count[dst] += 1
                sim.set_node_decision(th, target, None)
        if th.size:  # cores at their jobs' highest V/F hint (set_node_decision(th, None, _hint_levels(...)))
            lo = sim.first_core[server]
            top = np.full(sim.first_core[server + 1] - lo, -1, dtype=np.intp)
            np.maximum.at(top, sim.thread_core[th] - lo, sim.job_level_hint[sim.thread_job[th]])
            sim.set_server_core_levels(server, top)

    def control(self, sim: QinSim, servers: np.ndarray) -> bool:
        return False


class SniperPinnedPolicy:
    """``sniper_pinned``: Sniper's default scheduler: next free core after the last one, else round robin;
    never migrates; no DVFS (module docstring)."""

    name = "sniper_pinned"
    periodic = False

    def reset(self, sim: QinSim, rng: np.random.Generator) -> None:
        self.last = np.full(sim.n_servers, -1, dtype=np.intp)  # last assigned core (local) per server

    def place(self, sim: QinSim, server: int, threads: np.ndarray) -> np.ndarray:
        lo, hi = sim.first_core[server], sim.first_core[server + 1]
        n = hi - lo
        count = sim.core_threads[lo:hi].copy()
        out = np.empty(threads.size, dtype=np.intp)
        for i in range(threads.size):
            start = (int(self.last[server]) + 1) % n
            order = (start + np.arange(n)) % n
            free = order[count[order] == 0]
            c = int(free[0]) if free.size else start
            out[i] = lo + c
            count[c] += 1
            self.last[server] = c
        return out

    def on_change(self, sim: QinSim, server: int) -> None:
        lo, hi = sim.first_core[server], sim.first_core[server + 1]
        levels = np.full(sim.n_cores, -1, dtype=np.intp)
        levels[lo:hi] = sim.n_levels - 1
        sim.set_node_decision(sim._server_threads[server], None, levels)

    def control(self, sim: QinSim, servers: np.ndarray) -> bool:
        return False


class QinNodePolicy:
    """``qin_node``: Alg. 2 + 4 with the Kalman filter and the §3.6 DVFS controller (module docstring).

    :param focus: ``perf`` / ``energy`` / ``edp`` (the goal of the D-choice rule and the default PL).
    :param pl: the performance-loss threshold (default by focus: 0 / 0.5 / 0.1, paper §7.2.1, A15).
    :param d: number of choices (the paper uses 2 at node level, §7.2.1).
    :param p_frac: the top-P fraction (A7).
    :param remap: ``"events"`` or ``"period"``.
    """

    name = "qin_node"

    def __init__(self, focus: str = "energy", pl: float | None = None, d: int = 2, p_frac: float = 0.5,
                 remap: str = "events") -> None:
        if focus not in sch.FOCUSES:
            raise ValueError(f"focus={focus!r} is not one of {sch.FOCUSES}")
        if remap not in REMAP_MODES:
            raise ValueError(f"remap={remap!r} is not one of {REMAP_MODES}")
        self.focus = focus
        self.pl = sch.DEFAULT_PL[focus] if pl is None else float(pl)
        if not 0.0 <= self.pl < 1.0:
            raise ValueError(f"pl must be in [0, 1), got {pl!r}")
        if isinstance(d, bool) or int(d) != d or d < 1:
            raise ValueError(f"d must be an integer >= 1, got {d!r}")
        self.d, self.p_frac, self.remap = int(d), float(p_frac), remap
        self.periodic = self.pl > 0 or remap == "period"

    def reset(self, sim: QinSim, rng: np.random.Generator) -> None:
        self.rng = rng
        # A14: A = 1, B = 0, H = 1, Q = 0.01, R = 0.1; one bank: CPI of each core, then its instructions per
        # period at f_H normalised by f_H * period
        self.kalman = ScalarKalmanFilter(2 * sim.n_cores)
        k = sim.n_cores
        self._z = np.empty(2 * k)  # the bank's measurement and mask buffers (no per-period allocation)
        self._zmask = np.empty(2 * k, dtype=bool)
        period = sim.cfg.control_period_s
        self._f_high_period = sim.f_high_hz * period
        self._f_high_col = sim.freq_hz[:, -1:]
        self._dly_factor = self._f_high_col / sim.freq_hz - 1.0  # (f_H / f - 1) per (core, level), eq. 19

    @property
    def cpi_estimate(self) -> np.ndarray:
        return self.kalman.estimate[: self.kalman.size // 2]

    @property
    def instr_estimate(self) -> np.ndarray:
        return self.kalman.estimate[self.kalman.size // 2:]

    @property
    def initialised(self) -> np.ndarray:
        return self.kalman.initialised[: self.kalman.size // 2]

    # the D-choice rule of one server (Alg. 2 l. 6-13 with Alg. 4)
    def _remap(self, sim: QinSim, server: int, threads: np.ndarray, current: np.ndarray) -> np.ndarray:
        lo, hi = sim.first_core[server], sim.first_core[server + 1]
        cores = np.arange(lo, hi)
        lv = sim.core_level[cores]
        jobs = sim.thread_job[threads]
        # predicted instruction rate of each thread on each core: the job's predicted MIPS at the core's level x
        # the core type's IPC scale ("H = instruction count", A12)
        cols = sim._pred_cols[server, lv]
        rate = sim.pred_mips[jobs][:, cols] * 1e6 * sim.cores.ipc_scale[cores][None, :]
        busy_power = sim.cores.dyn_w[cores, lv] + sim.cores.leak_w[cores, lv]
        instr_hat = rate.mean(axis=1) * sim.cfg.control_period_s
        local = np.where(current >= 0, current - lo, -1)
        new = sch.node_dchoice(sim.thread_rem[threads], local, rate, busy_power, instr_hat, self.rng, self.focus,
                               self.d, self.p_frac)
        return new + lo

    def place(self, sim: QinSim, server: int, threads: np.ndarray) -> np.ndarray:
        existing = sim._server_threads[server]
        allt = np.concatenate([existing, threads])
        current = np.concatenate([sim.thread_core[existing], np.full(threads.size, -1, dtype=np.intp)])
        # existing threads keep their cores here (on_change re-maps them next); new ones choose by D-choice
        order = np.concatenate([np.arange(existing.size, allt.size), np.arange(existing.size)])
        chosen = self._remap(sim, server, allt[order], current[order])
        return chosen[: threads.size]

    def on_change(self, sim: QinSim, server: int) -> None:
        th = sim._server_threads[server]
        if th.size:
            sim.set_node_decision(th, self._remap(sim, server, th, sim.thread_core[th]), None)
        if self.pl == 0.0:
            lo, hi = sim.first_core[server], sim.first_core[server + 1]
            levels = np.full(sim.n_cores, -1, dtype=np.intp)
            levels[lo:hi] = sim.n_levels - 1
            sim.set_node_decision(th, None, levels)

    def control(self, sim: QinSim, servers: np.ndarray) -> bool:
        moved = False
        if self.remap == "period":
            for s in servers.tolist():
                th = sim._server_threads[s]
                before = sim.migrations
                sim.set_node_decision(th, self._remap(sim, s, th, sim.thread_core[th]), None)
                moved = moved or sim.migrations != before
        if self.pl > 0.0:
            self._dvfs(sim, servers)
        return moved

    def _kalman_update(self, measured: np.ndarray) -> np.ndarray:
        """``self.kalman.update(self._z, mask=(measured, measured))`` of the (CPI, instructions) bank (``self._z``
        holds the measurements), returns the estimates. With A14's ``a = h = 1`` the multiplications by 1 are
        dropped (exact in floating point, so the same numbers), on reused buffers: this runs every control period."""
        kf = self.kalman
        k = measured.size
        z, mask = self._z, self._zmask
        mask[:k] = measured
        mask[k:] = measured
        if kf.a != 1.0 or kf.h != 1.0:
            return kf.update(z, mask=mask)
        prior = kf.estimate  # eq. 7 (B u = 0)
        prior_var = kf.variance + kf.q  # eq. 8
        gain = prior_var / (prior_var + kf.r)  # eq. 9
        estimate = prior + gain * (z - prior)  # eq. 10
        variance = (1.0 - gain) * prior_var  # eq. 11
        first = mask > kf.initialised  # measured and not yet initialised
        if np.count_nonzero(first):  # a filter's first measurement sets x0 = z with variance p0
            estimate = np.where(first, z, estimate)
            variance = np.where(first, kf.p0, variance)
            kf.initialised |= mask  # (otherwise every measured filter is initialised already)
        np.copyto(kf.estimate, estimate, where=mask)
        np.copyto(kf.variance, variance, where=mask)
        return kf.estimate

    def _dvfs(self, sim: QinSim, servers: np.ndarray) -> None:
        """PerCoreWorkloadPrediction + DVFS (Alg. 2 l. 14-15; qin.md §3.6) over the cores of ``servers``.

        The arithmetic of :func:`~joulegym.envs.qin.scheduling.dvfs_levels_per_app` on the simulator's cached
        per-mapping gathers (the same numbers; this runs every control period)."""
        period = sim.cfg.control_period_s
        f = sim._core_f  # freq_hz[core, core_level], kept in step with core_level by the simulator
        f_high = sim.f_high_hz
        instr, busy = sim.period_instr, sim.period_busy_s
        measured = (instr > 0) & (busy > 0)
        k = sim.n_cores
        z = self._z  # the bank's measurements: CPI per core, then instructions at f_H / (f_H period) (A14)
        z[:k] = 1.0
        np.divide(f * busy, instr, out=z[:k], where=measured)
        np.divide(instr * f_high / f, self._f_high_period, out=z[k:])
        est = self._kalman_update(measured)
        ready = self.kalman.initialised[:k]
        cpi_hat = np.where(ready, est[:k], 1.0)
        ihat = np.where(ready, est[k:], 0.0) * f_high * period
        ctx = sim._tick_context()
        th, tc = ctx.th, ctx.tc
        remaining = np.bincount(tc, sim.thread_rem[th], minlength=k)
        # dvfs_levels_per_app (same expressions, static factors cached)
        freqs, f_high_col = sim.freq_hz, self._f_high_col
        work = np.minimum(ihat[:, None] * freqs / f_high_col, remaining[:, None])
        dly = work * cpi_hat[:, None] * self._dly_factor / f_high_col  # (C, L)
        share = ctx.share_app[:, None]
        # levels below the top only (the top is always allowed); take: a fast row gather
        lhs = sim.job_delay_s[ctx.jobs][:, None] + share * dly[:, :-1].take(tc, axis=0)
        rhs = self.pl * (sim.job_cpu_s[ctx.jobs] + ctx.share_period) + 1e-15  # share x period cached per mapping
        ok = ctx.feasible
        np.less_equal(lhs, rhs[:, None], out=ok[:, :-1])
        need = ok.argmax(axis=1)  # each thread's first feasible level
        if ctx.occupied.size:  # a core takes the highest need of its threads (cores without threads keep theirs)
            levels = np.maximum.reduceat(need.take(ctx.by_core), ctx.core_starts)
            # re-derive the level caches only on a change (a period that keeps every level keeps the simulator's
            # rates and power: _refresh_busy skips them)
            if np.count_nonzero(levels != sim.core_level[ctx.occupied]):
                sim.core_level[ctx.occupied] = levels
                sim._sync_levels()

    def _dvfs_reference(self, sim: QinSim, servers: np.ndarray) -> None:
        """:meth:`_dvfs` written with the public functions (the reference its fast form is tested against)."""
        period = sim.cfg.control_period_s
        f = sim.freq_hz[sim._rows, sim.core_level]
        f_high = sim.f_high_hz
        instr, busy = sim.period_instr, sim.period_busy_s
        measured = (instr > 0) & (busy > 0)
        cpi = np.divide(f * busy, instr, out=np.ones(sim.n_cores), where=measured)
        instr_high = instr * f_high / f / (f_high * period)  # normalised by f_H * period (A14)
        k = sim.n_cores
        self.kalman.update(np.concatenate((cpi, instr_high)), mask=np.concatenate((measured, measured)))
        pred = self.kalman.predict()
        ready = self.kalman.initialised[:k]
        cpi_hat = np.where(ready, pred[:k], 1.0)
        ihat = np.where(ready, pred[k:], 0.0) * f_high * period
        th = sim.alive_threads()
        tc = sim.thread_core[th]
        remaining = np.bincount(tc, sim.thread_rem[th], minlength=sim.n_cores)
        jobs = sim.thread_job[th]
        levels = sch.dvfs_levels_per_app(sim.job_delay_s[jobs], sim.job_cpu_s[jobs], tc,
                                         1.0 / sim.core_threads[tc], sim.job_alive_threads[jobs], period,
                                         sim.freq_hz, cpi_hat, ihat, remaining, self.pl)
        levels = np.where(sim.core_threads > 0, levels, -1)
        sim.set_node_decision(th, None, levels, levels_only=True)


class ExternalNodePolicy:
    """``external``: every control period is a decision point answered by :meth:`QinSim.apply_node` (an
    agent in QinNode-v0); new threads start on the least-loaded core."""

    name = "external"
    periodic = True

    def reset(self, sim: QinSim, rng: np.random.Generator) -> None:
        self._linux = LinuxNodePolicy()
        self._linux.reset(sim, rng)

    def place(self, sim: QinSim, server: int, threads: np.ndarray) -> np.ndarray:
        return self._linux.place(sim, server, threads)

    def on_change(self, sim: QinSim, server: int) -> None:
        return None

    def control(self, sim: QinSim, servers: np.ndarray) -> bool:
        return False


NODE_POLICIES: dict[str, Any] = {
    "linux": LinuxNodePolicy,
    "sniper_pinned": SniperPinnedPolicy,
    "qin_node": QinNodePolicy,
    "external": ExternalNodePolicy,
}


def make_node_policy(name: str, **kwargs: Any) -> NodePolicy:
    """A node policy by name (``linux``, ``sniper_pinned``, ``qin_node`` with ``focus``/``pl``/``d``/``remap``,
    ``external``)."""
    if name not in NODE_POLICIES:
        raise ValueError(f"node_policy={name!r} is not one of {tuple(NODE_POLICIES)}")
    return NODE_POLICIES[name](**kwargs)

