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
# the ufuncs of the per-period DVFS step, called with a positional output: cheaper than the in-place operators on
# these small arrays, and the same operation
_add, _sub, _mul, _div = np.add, np.subtract, np.multiply, np.divide


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
        self._kbuf = np.empty(2 * k)
        # a filter at the variance fixed point p* (initialised, measured often enough) has one constant gain (the
        # same floating-point numbers eq. 8-11 give) and keeps p*: when every measured filter is there,
        # _kalman_update skips the variance arithmetic. _off_star: the filters not at p* (all at first; p0 != p*
        # so an uninitialised filter is never taken for one at p*; only _kalman_update changes the bank, and an
        # update never moves a filter off p*), _all_star: none is off
        p_star = self.kalman.steady_variance()
        self._steady_variance = p_star if p_star is not None and p_star != self.kalman.p0 else None
        self._off_star = np.ones(2 * k, dtype=bool)
        self._all_star = False
        self._all_init = False  # every filter initialised (the estimates need no default)
        if self._steady_variance is not None:
            prior_var = self._steady_variance + self.kalman.q
            self._steady_gain = np.full(2 * k, prior_var / (prior_var + self.kalman.r))
        period = sim.cfg.control_period_s
        self._f_high_period = sim.f_high_hz * period
        # _dvfs works on flat (level, core) arrays of the levels below the top (the top is always allowed), with
        # every operand an array of the result's shape (no broadcasting, no Python scalars: numpy's cheapest
        # calls); the numbers are those of the (core, level) expressions of dvfs_levels_per_app
        levels = sim.n_levels
        low = levels - 1
        self._core_rep = np.tile(np.arange(k), low)  # flat (level, core) -> core
        self._freqs_low = np.ascontiguousarray(sim.freq_hz.T[:-1]).ravel()
        self._f_high_low = sim.f_high_hz.take(self._core_rep)
        self._dly_factor_low = np.ascontiguousarray((sim.freq_hz[:, -1:] / sim.freq_hz - 1.0).T[:-1]).ravel()
        self._period_k = np.full(k, period)
        self._zero_k = np.zeros(k)
        # the delays per (level, core), then k entries of -inf: the top level's "delay", always feasible
        self._dly = np.full(levels * k, -np.inf)

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
        if measured.base is not mask:  # (_dvfs computes it in place as mask[:k])
            mask[:k] = measured
        mask[k:] = measured
        if kf.a != 1.0 or kf.h != 1.0:
            return kf.update(z, mask=mask)
        if self._all_star or (self._steady_variance is not None and not np.count_nonzero(mask & self._off_star)):
            # every measured filter is initialised at the fixed point p*: eq. 8-9 give the gain of p*, eq. 11 gives
            # p* again (so the variances stay), eq. 10 with that gain: the same operations on the same numbers
            est = kf.estimate
            innovation = _sub(z, est, self._kbuf)
            _mul(innovation, self._steady_gain, innovation)
            _add(innovation, est, innovation)
            np.copyto(est, innovation, where=mask)
            return kf.estimate
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
        if self._steady_variance is not None:
            np.not_equal(kf.variance, self._steady_variance, out=self._off_star)
            self._all_star = not self._off_star.any()
        self._all_init = bool(kf.initialised.all())
        return kf.estimate

    def _dvfs(self, sim: QinSim, servers: np.ndarray) -> None:
        """PerCoreWorkloadPrediction + DVFS (Alg. 2 l. 14-15; qin.md §3.6) over the cores of ``servers``.

        The arithmetic of :func:`~joulegym.envs.qin.scheduling.dvfs_levels_per_app` on the simulator's cached
        per-mapping gathers (the same numbers; this runs every control period)."""
        f = sim._core_f  # freq_hz[core, core_level], kept in step with core_level by the simulator
        f_high = sim.f_high_hz
        instr, busy = sim.period_instr, sim.period_busy_s
        k = sim.n_cores
        zero = self._zero_k
        measured = np.logical_and(np.greater(instr, zero), np.greater(busy, zero), self._zmask[:k])  # mask: x 2
        z = self._z  # the bank's measurements: CPI per core, then instructions at f_H / (f_H period) (A14)
        z_cpi = z[:k]
        z_cpi.fill(1.0)
        np.divide(_mul(f, busy), instr, out=z_cpi, where=measured)
        z_instr = z[k:]
        _div(_div(_mul(instr, f_high, z_instr), f, z_instr), self._f_high_period, z_instr)
        est = self._kalman_update(measured)
        if self._all_init:  # every filter initialised: the estimates as they are
            cpi_hat = est[:k]
            ihat = _mul(est[k:], f_high)
        else:
            ready = self.kalman.initialised[:k]
            cpi_hat = np.where(ready, est[:k], 1.0)
            ihat = _mul(np.where(ready, est[k:], 0.0), f_high)
        _mul(ihat, self._period_k, ihat)  # (x f_H) period
        ctx = sim._tick_context()
        g = ctx.dvfs
        if g is None:
            g = ctx.dvfs = self._dvfs_gathers(sim, ctx)
        th_bc, tc_bc, dly_index, share, jobs_cpu, jobs_delay, share_period, pl_t, eps_t, rep_t, feasible = g
        # per core: the remaining instructions of its threads (each core's threads in the context's order either
        # way: the same sums)
        stash = sim._rem_stash
        if stash is not None and stash[0] is ctx and stash[1] == sim.now:  # this period's integration left them
            remaining = np.bincount(ctx.tc, stash[2], k)
        else:
            remaining = np.bincount(tc_bc, sim.thread_rem.take(th_bc), k)
        # dvfs_levels_per_app per (level, core): work = min(ihat f / f_H, remaining), dly = work cpi (f_H / f - 1)
        # / f_H
        rep = self._core_rep
        f_high_low = self._f_high_low
        dly = self._dly[: rep.size]
        _mul(ihat.take(rep), self._freqs_low, dly)
        _div(dly, f_high_low, dly)
        np.minimum(dly, remaining.take(rep), out=dly)
        _mul(dly, cpi_hat.take(rep), dly)
        _mul(dly, self._dly_factor_low, dly)
        _div(dly, f_high_low, dly)
        # per (thread, level), threads by core: D + share dly <= PL (cpu + share period) + 1e-15; the top level's
        # "delay" is -inf (always feasible)
        acc = sim._job_acc
        lhs = self._dly.take(dly_index)
        _mul(lhs, share, lhs)
        _add(lhs, acc.take(jobs_delay), lhs)
        rhs = acc.take(jobs_cpu)
        _add(rhs, share_period, rhs)
        _mul(rhs, pl_t, rhs)
        _add(rhs, eps_t, rhs)
        ok = np.less_equal(lhs, rhs.take(rep_t), feasible)
        need = ok.reshape(th_bc.size, sim.n_levels).argmax(axis=1)  # each thread's first feasible level
        if ctx.occupied.size:  # a core takes the highest need of its threads (cores without threads keep theirs)
            levels = np.maximum.reduceat(need, ctx.core_starts)
            # re-derive the level caches only on a change (a period that keeps every level keeps the simulator's
            # rates and power: _refresh_busy skips them)
            if ctx.all_occupied:  # occupied is every core in order: no gather, no scatter
                if np.count_nonzero(np.not_equal(levels, sim.core_level)):
                    np.copyto(sim.core_level, levels)
                    sim._sync_levels()
            elif np.count_nonzero(levels != sim.core_level[ctx.occupied]):
                sim.core_level[ctx.occupied] = levels
                sim._sync_levels()

    def _dvfs_gathers(self, sim: QinSim, ctx: Any) -> tuple:
        """_dvfs's per-mapping index arrays and constants, threads ordered by core (stable: each core keeps its
        threads' order) and (thread, level) flat over all L levels (the top one indexes the -inf block of
        ``self._dly``)."""
        k, levels = sim.n_cores, sim.n_levels
        by_core = ctx.by_core
        n = by_core.size
        th_bc, tc_bc, jobs_bc = ctx.th.take(by_core), ctx.tc.take(by_core), ctx.jobs.take(by_core)
        dly_index = (np.arange(levels)[None, :] * k + tc_bc[:, None]).ravel()
        rep_t = np.repeat(np.arange(n), levels)  # flat (thread, level) -> thread
        share = ctx.share_app.take(by_core).take(rep_t)
        jobs_delay = (jobs_bc + sim.n_jobs).take(rep_t)  # sim._job_acc: CPU time per job, then delay per job
        return (th_bc, tc_bc, dly_index, share, jobs_bc, jobs_delay, ctx.share_period.take(by_core),
                np.full(n, self.pl), np.full(n, 1e-15), rep_t, np.empty(n * levels, dtype=bool))

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

