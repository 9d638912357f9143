"""Qin's node-level DVFS controller (Guan & Ababei, IEEE T-SUSC 2024, Alg. 2 l. 14-15, §4.4; ``docs/families/qin.md``
§2.2, §3.6): a bank of scalar Kalman filters predicts each core's next-period CPI and instruction count (eq. 7-11,
A14), and each busy core takes the lowest V/F level at which every thread on it keeps its app's accumulated
performance loss (eq. 18-19) within PL (:func:`~joulegym.envs.qin.scheduling.dvfs_levels_per_app`; qin.md §3.6:
threads migrate, so per-core totals would let an app exceed PL).

:meth:`DvfsController.step` runs every control period on the simulator's per-mapping gathers (the same numbers as
:meth:`DvfsController.reference`, which is written with the public functions and is what the fast form is tested
against, ``tests/qin/test_fast_paths.py``). Both return the levels as a
:class:`~joulegym.envs.qin.dynamics.NodeDecision` (``None``: no core changes level); the simulator applies it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from joulegym.envs.qin import scheduling as sch
from joulegym.envs.qin.dynamics import NodeDecision, add, div, mul, sub
from joulegym.envs.qin.predictors import ScalarKalmanFilter

# What the controller assumes of a core it has not measured yet (no Kalman estimate): CPI 1 and a whole period of
# work at f_H (the normalised instruction estimate of a core busy at CPI 1), so that its first period is held to
# PL like any other (eq. 19 for a busy core: dt (1 - f / f_H)) instead of being taken as idle.
UNMEASURED = 1.0


class DvfsController:
    """The Kalman bank and the §3.6 DVFS rule of one simulator (module docstring).

    :param pl: the performance-loss threshold PL (paper §7.2.1: 0.5 energy, 0.1 EDP).
    """

    def __init__(self, pl: float) -> None:
        self.pl = float(pl)

    def reset(self, sim: Any) -> None:
        """A fresh Kalman bank and the per-episode tables of ``sim``'s cores."""
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
        # step works on flat (level, core) arrays of the levels below the top (the top is always allowed), with
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


    def _kalman_update(self, measured: np.ndarray) -> np.ndarray:
        """``self.kalman.update(self._z, mask=(measured, measured))`` of the (CPI, instructions) bank (``self._z``
        holds the measurements), returns the estimates. With A14's ``a = h = 1`` the multiplications by 1 are
        dropped (exact in floating point, so the same numbers), on reused buffers: this runs every control period."""
        kf = self.kalman
        k = measured.size
        z, mask = self._z, self._zmask
        if measured.base is not mask:  # (step computes it in place as mask[:k])
            mask[:k] = measured
        mask[k:] = measured
        if kf.a != 1.0 or kf.h != 1.0:
            return kf.update(z, mask=mask)
        if self._all_star or (self._steady_variance is not None and not np.count_nonzero(mask & self._off_star)):
            # every measured filter is initialised at the fixed point p*: eq. 8-9 give the gain of p*, eq. 11 gives
            # p* again (so the variances stay), eq. 10 with that gain: the same operations on the same numbers
            est = kf.estimate
            innovation = sub(z, est, self._kbuf)
            mul(innovation, self._steady_gain, innovation)
            add(innovation, est, innovation)
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


    def step(self, sim: Any, servers: np.ndarray) -> NodeDecision | None:
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
        np.divide(mul(f, busy), instr, out=z_cpi, where=measured)
        z_instr = z[k:]
        div(div(mul(instr, f_high, z_instr), f, z_instr), self._f_high_period, z_instr)
        est = self._kalman_update(measured)
        if self._all_init:  # every filter initialised: the estimates as they are
            cpi_hat = est[:k]
            ihat = mul(est[k:], f_high)
        else:  # a core never measured yet is assumed busy the whole period at CPI 1 (UNMEASURED)
            ready = self.kalman.initialised[:k]
            cpi_hat = np.where(ready, est[:k], UNMEASURED)
            ihat = mul(np.where(ready, est[k:], UNMEASURED), f_high)
        mul(ihat, self._period_k, ihat)  # (x f_H) period
        ctx = sim._tick_context()
        g = ctx.dvfs
        if g is None:
            g = ctx.dvfs = self._gathers(sim, ctx)
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
        mul(ihat.take(rep), self._freqs_low, dly)
        div(dly, f_high_low, dly)
        np.minimum(dly, remaining.take(rep), out=dly)
        mul(dly, cpi_hat.take(rep), dly)
        mul(dly, self._dly_factor_low, dly)
        div(dly, f_high_low, dly)
        # per (thread, level), threads by core: D + share dly <= PL (cpu + share period) + 1e-15; the top level's
        # "delay" is -inf (always feasible)
        acc = sim._job_acc
        lhs = self._dly.take(dly_index)
        mul(lhs, share, lhs)
        add(lhs, acc.take(jobs_delay), lhs)
        rhs = acc.take(jobs_cpu)
        add(rhs, share_period, rhs)
        mul(rhs, pl_t, rhs)
        add(rhs, eps_t, rhs)
        ok = np.less_equal(lhs, rhs.take(rep_t), feasible)
        need = ok.reshape(th_bc.size, sim.n_levels).argmax(axis=1)  # each thread's first feasible level
        if ctx.occupied.size:  # a core takes the highest need of its threads (cores without threads keep theirs)
            levels = np.maximum.reduceat(need, ctx.core_starts)
            # re-derive the level caches only on a change (a period that keeps every level keeps the simulator's
            # rates and power: _refresh_busy skips them)
            if ctx.all_occupied:  # occupied is every core in order: no gather, no scatter
                if np.count_nonzero(np.not_equal(levels, sim.core_level)):
                    return NodeDecision(level_cores=slice(None), levels=levels)
            elif np.count_nonzero(levels != sim.core_level[ctx.occupied]):
                return NodeDecision(level_cores=ctx.occupied, levels=levels)
        return None


    def _gathers(self, sim: Any, ctx: Any) -> tuple:
        """step's per-mapping index arrays and constants, threads ordered by core (stable: each core keeps its
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


    def reference(self, sim: Any, servers: np.ndarray) -> NodeDecision | None:
        """:meth:`step` written with the public functions (the reference its fast form is tested against)."""
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
        cpi_hat = np.where(ready, pred[:k], UNMEASURED)
        ihat = np.where(ready, pred[k:], UNMEASURED) * f_high * period
        th = sim.alive_threads()
        tc = sim.thread_core[th]
        remaining = np.bincount(tc, sim.thread_rem[th], minlength=sim.n_cores)
        jobs = sim.thread_job[th]
        levels = sch.dvfs_levels_per_app(sim.job_delay_s[jobs], sim.job_cpu_s[jobs], tc,
                                         1.0 / sim.core_threads[tc], sim.job_alive_threads[jobs], period,
                                         sim.freq_hz, cpi_hat, ihat, remaining, self.pl)
        return NodeDecision(level_cores=slice(None), levels=np.where(sim.core_threads > 0, levels, -1))

