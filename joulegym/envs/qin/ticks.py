"""The Qin simulator's control periods (Guan & Ababei, IEEE T-SUSC 2024, Alg. 2: "for every default power update
time interval"; ``docs/families/qin.md`` §1.9, §7.6): the periodic tick of every busy server, on gathers cached per
thread-to-core mapping.

With a periodic node policy (DVFS under a PL threshold, or per-period re-mapping) every busy server is integrated,
measured and re-decided each control period (aligned to ``k * control_period_s``). A 100-job episode at 10 ms has
~200k periods and a handful of mapping changes per second, so the per-thread and per-core gathers of the busy
servers are built once per mapping (:class:`TickContext`) and every period works on them with whole-array numpy
operations: the same arithmetic as the general per-event paths of :mod:`joulegym.envs.qin.dynamics`, element by
element (``tests/qin/test_fast_paths.py`` checks them bit for bit).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from joulegym.envs.qin.dynamics import EPS_INSTR, EV_DONE, EV_TICK, add, div, mul, sub

PHASE_BLOCK = 64  # control periods of phase draws generated at once (memory: 64 x threads x 3 floats)
# _evolve_phases evolves every thread id at once while the thread ids number at most 4 x the alive threads + this
# (beyond it, the gathers of the alive threads' entries are cheaper than whole-array operations)
PHASE_WHOLE_ARRAY_SLACK = 1024


class TickContext:
    """Gathers of the busy servers' alive threads and cores that stay valid while the mapping (placements,
    completions, migrations) does not change: a control period re-uses them instead of re-gathering ~20 arrays
    (a 100-job episode at 10 ms has ~200k periods and a handful of mapping changes per second)."""

    __slots__ = ("act", "all_cores", "all_occupied", "all_servers", "busy_all", "busy_core", "by_core", "core_starts",
                 "cores", "dram_idle", "dvfs", "idle_term", "job_weights", "jobs", "jobs2", "loss",
                 "occupied", "power_bins", "power_in", "power_table", "rate", "rate_index", "rate_max", "rate_table",
                 "rem_floor", "rem_floor_t", "row_base", "servers", "share", "share_app", "share_period", "soc",
                 "srv", "starts", "tc", "th", "thr_cycles", "thr_mem", "thr_weight", "traffic_term", "uncore")

    def __init__(self, sim: Any) -> None:
        servers = sim._busy_servers()
        th = sim.alive_threads()
        self.servers, self.th = servers, th
        self.all_servers = servers.size == sim.n_servers  # whole-array updates instead of gathers/scatters
        self.tc = sim.thread_core[th]
        self.jobs = sim.thread_job[th]
        self.jobs2 = np.concatenate((self.jobs, self.jobs + sim.n_jobs))  # bins of sim._job_acc (CPU, then delay)
        self.job_weights = np.empty(2 * th.size)
        self.srv = sim.thread_server[th]
        self.share = 1.0 / sim.core_threads[self.tc]
        self.cores = sim._core_index(servers)
        self.all_cores = self.cores.size == sim.n_cores
        self.soc = sim.server_of_core[self.cores]
        self.busy_core = sim.core_threads[self.cores] > 0
        # the same over every core of the cluster (False outside these servers): a whole-array update adds 0 there
        self.busy_all = sim.core_threads > 0
        self.act = sim._core_act[self.cores]
        self.traffic_term = sim._core_beta[self.cores] * sim._traffic_w[self.cores]
        self.idle_term = (~self.busy_core) * sim.cores.idle_w[self.cores]
        self.uncore = sim.cores.uncore_w[servers]
        self.dram_idle = sim.cores.dram_idle_w[servers]
        counts = sim.runnable_threads[servers]
        self.starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        self.thr_weight = sim._thr_weight[th]
        self.thr_cycles = sim._thr_cycles[th]
        self.thr_mem = sim._thr_mem_s[th]
        # the DVFS rule's per-thread weight: CPU share x the app's running threads (as floats)
        self.share_app = self.share * sim.job_alive_threads[self.jobs].astype(float)
        self.share_period = self.share_app * sim.cfg.control_period_s  # the DVFS rule's CPU-time term
        # the threads grouped by core (a per-core maximum is one reduceat) and the occupied cores in that order
        self.by_core = np.argsort(self.tc, kind="stable")
        sorted_tc = self.tc[self.by_core]
        first = np.flatnonzero(np.diff(sorted_tc, prepend=-1)) if th.size else np.zeros(0, dtype=np.intp)
        self.core_starts = first
        self.occupied = sorted_tc[first]
        self.all_occupied = self.occupied.size == sim.n_cores  # then occupied is every core in order
        self.dvfs: tuple | None = None  # the DVFS step's gathers, built by the node policy (QinNodePolicy._dvfs)
        # the (thread, level) rates and (core, level) powers of this mapping (build_tables, on first use); ``rate``
        # and ``loss`` are the threads' rates and eq. 19 loss rates at the current levels (valid while
        # sim._rates_ctx is this context)
        self.rate_table: np.ndarray | None = None
        self.power_table = self.rate_index = self.row_base = self.rate = self.loss = np.zeros(0)
        self.power_in = self.power_bins = np.zeros(0)
        # _refresh_busy's completion bound: the least remaining instructions of these threads at rem_floor_t (-1:
        # not known yet) and the highest rate any of them can have (any level)
        self.rate_max = math.inf
        self.rem_floor = 0.0
        self.rem_floor_t = -1.0

    def build_tables(self, sim: Any) -> None:
        """Every (thread, level) rate and (core, level) power of this mapping, so that a level change costs one
        gather each: the expressions of :meth:`QinSim._refresh` and :meth:`QinSim._power`, element by element
        (the same numbers)."""
        levels = sim.n_levels
        cores = self.cores
        self.row_base = np.arange(cores.size) * levels
        self.rate_index = np.arange(self.th.size) * levels
        f = sim.freq_hz[self.tc]  # (T, L)
        self.rate_table = (self.thr_weight[:, None] / (self.thr_cycles[:, None] / f + self.thr_mem[:, None])).ravel()
        self.rate_max = float(self.rate_table.max()) if self.rate_table.size else math.inf
        busy = self.busy_core[:, None]
        table = busy * sim.cores.dyn_w[cores] * self.act[:, None]
        if sim._full_power:
            table = table + busy * (sim.cores.leak_w[cores] + self.traffic_term[:, None]) + self.idle_term[:, None]
        self.power_table = table.ravel()
        # bincount's input for the servers' power: the per-core powers, then each server's uncore and DRAM idle
        # power, so one bincount adds ((cores) + uncore) + DRAM idle in the order of _power
        c, servers = cores.size, self.servers
        if sim._full_power:
            self.power_in = np.concatenate((np.zeros(c), self.uncore, self.dram_idle))
            self.power_bins = np.concatenate((self.soc, servers, servers))
        else:
            self.power_in, self.power_bins = np.zeros(c), self.soc



class PeriodicMixin:
    """The control-period paths of :class:`~joulegym.envs.qin.simulator.QinSim` (module docstring)."""

    def _arm_tick(self) -> None:
        if self._tick_armed or not self.node_policy.periodic or self._busy_servers().size == 0:
            return
        period = self.cfg.control_period_s
        k = math.floor(self.now / period + 1e-9) + 1
        self._tick_index = k
        self._tick_armed = True
        self._next_tick_s = k * period
        self._push(k * period, EV_TICK, k)

    def _tick(self) -> bool:
        """A control period ends for every busy server: integrate, measure (per-core instructions, busy time,
        CPI), evolve the CPI phases, then let the node policy re-decide. Returns True for an external decision."""
        servers = self._busy_servers()
        if servers.size == 0:
            return False
        if servers.size > 1:
            self._integrate_busy(self.now)
        else:
            self._integrate(servers, self.now)
        if self.cfg.phases:
            self._evolve_phases()
        # the period's measurements become period_*; the accumulators start from zero (swap, then clear: the
        # arrays handed out last period are reused, so callers copy what they keep)
        self.period_instr, self.core_period_instr = self.core_period_instr, self.period_instr
        self.period_busy_s, self.core_period_busy_s = self.core_period_busy_s, self.period_busy_s
        self.core_period_instr.fill(0.0)
        self.core_period_busy_s.fill(0.0)
        if self.node_policy.external:
            self.decision_kind = "node"
            return True
        moved = self._apply_node_decision(self.node_policy.control(self, servers))
        self._arm_tick()
        if moved or servers.size == 1:
            self._refresh(servers, mapping=moved)
        else:
            self._refresh_busy()
        return False

    def _tick_context(self) -> TickContext:
        ctx = self._ctx
        if ctx is None:
            ctx = self._ctx = TickContext(self)
        return ctx

    def _integrate_busy(self, t: float) -> None:
        """:meth:`_integrate` of every busy server (more than one) on the cached gathers (same arithmetic)."""
        ctx = self._tick_context()
        steps = self._period_steps(ctx, t)
        if steps is None:
            return
        dt_first, dt_all, dt_s, positive, uniform = steps
        dt_core = dt_first if uniform else dt_all[ctx.soc]
        if ctx.th.size:
            self._integrate_busy_threads(ctx, t, dt_first if uniform else dt_all[ctx.srv])
        self._integrate_busy_cores(ctx, dt_core, uniform)
        if ctx.all_servers and positive:  # the usual tick: every server is busy and moves on
            dt_srv = dt_first if uniform else dt_s
            add(self.server_energy_j, mul(self.power_w, dt_srv), self.server_energy_j)
            load = self.server_load_instr
            np.maximum(sub(load, mul(self.server_rate_sum, dt_srv)), 0.0, out=load)
            self.server_t.fill(t)
            self._sync_t = t
            return
        srv = ctx.servers
        if not positive:
            pos = dt_s > 0
            srv, dt_s = srv[pos], dt_s[pos]
        self.server_energy_j[srv] += self.power_w[srv] * dt_s
        self.server_load_instr[srv] = np.maximum(self.server_load_instr[srv] - self.server_rate_sum[srv] * dt_s, 0.0)
        self.server_t[srv] = t
        self._sync_t = None

    def _period_steps(self, ctx: TickContext, t: float) -> tuple | None:
        """The time steps of the busy servers to ``t``: ``(dt_first, dt_all, dt_s, positive, uniform)``, or ``None``
        when no server moves."""
        if ctx.all_servers and self._sync_t is not None:
            # every server was last integrated at _sync_t (the previous tick, no event since): the same
            # subtraction as t - server_t, once
            dt_first = t - self._sync_t
            return None if dt_first <= 0 else (dt_first, None, None, True, True)
        dt_all = t - self.server_t
        dt_s = dt_all if ctx.all_servers else dt_all[ctx.servers]
        # a handful of servers: Python's min/max over a list beat the ndarray reductions' call overhead
        dt_list = dt_s.tolist()
        if max(dt_list) <= 0:
            return None
        # the usual tick brings every busy server from the same time: one Python float multiplies like the
        # gathered vector of equal values (the same products) without the two gathers
        dt_first = dt_list[0]
        return dt_first, dt_all, dt_s, min(dt_list) > 0, dt_list.count(dt_first) == len(dt_list)

    def _integrate_busy_threads(self, ctx: TickContext, t: float, dt_th: Any) -> None:
        """The threads' part of :meth:`_integrate_busy`: work, CPU time and eq. 19 delay, retired instructions."""
        th, tc = ctx.th, ctx.tc
        cached = self._rates_ctx is ctx  # the rates and loss rates of these levels are the context's
        work = mul(ctx.rate if cached else self.thread_rate.take(th), dt_th)
        rem = self.thread_rem
        new_rem = sub(rem.take(th), work)
        rem[th] = new_rem
        self._rem_stash = (ctx, t, new_rem)  # the DVFS step of this period sums it per core
        # CPU time and eq. 19 delay per job, one bincount over (job, job + M)
        n = th.size
        weights = ctx.job_weights
        cpu = mul(ctx.share, dt_th, weights[:n])
        mul(cpu, ctx.loss if cached else self._core_loss[tc], weights[n:])
        acc = self._job_acc
        add(acc, np.bincount(ctx.jobs2, weights, 2 * self.n_jobs), acc)
        if self._periodic:
            mul(work, self.thread_phase.take(th), work)  # instructions retired (work is not needed after)
            instr = self.core_period_instr
            add(instr, np.bincount(tc, work, self.n_cores), instr)

    def _integrate_busy_cores(self, ctx: TickContext, dt_core: Any, uniform: bool) -> None:
        """The cores' part of :meth:`_integrate_busy`: busy time, eq. 19 delay and elapsed time."""
        if ctx.all_cores:
            busy_dt = mul(ctx.busy_core, dt_core)
            add(self.core_busy_s, busy_dt, self.core_busy_s)
            add(self.core_period_busy_s, busy_dt, self.core_period_busy_s)
            add(self.core_delay_s, mul(busy_dt, self._core_loss), self.core_delay_s)
            add(self.core_elapsed_s, dt_core, self.core_elapsed_s)
        elif uniform:  # busy and loss accumulators over every core (+0 outside these servers), elapsed time not
            busy_dt = mul(ctx.busy_all, dt_core)
            add(self.core_busy_s, busy_dt, self.core_busy_s)
            add(self.core_period_busy_s, busy_dt, self.core_period_busy_s)
            add(self.core_delay_s, mul(busy_dt, self._core_loss), self.core_delay_s)
            self.core_elapsed_s[ctx.cores] += dt_core
        else:
            cores = ctx.cores
            busy_dt = ctx.busy_core * dt_core
            self.core_busy_s[cores] += busy_dt
            self.core_period_busy_s[cores] += busy_dt
            self.core_delay_s[cores] += busy_dt * self._core_loss[cores]
            self.core_elapsed_s[cores] += dt_core

    def _refresh_busy(self) -> None:
        """:meth:`_refresh` with ``mapping=False`` of every busy server (more than one) after a V/F change, on
        the cached gathers (same arithmetic): rates, power, next completions."""
        ctx = self._tick_context()
        servers, th = ctx.servers, ctx.th
        if self._rates_ctx is ctx:
            # no level or mapping change since this context's last rates/power: the same inputs give the same
            # numbers, so only the generation and the completions below are renewed
            if ctx.all_servers:
                add(self.server_gen, 1, self.server_gen)
            else:
                self.server_gen[servers] += 1
        else:
            self._refresh_busy_rates(ctx)
        # _arm_completions(servers, th)
        if th.size == 0:
            return
        limit = self._next_tick_s if self._tick_armed else math.inf
        now = self.now
        if ctx.rem_floor_t >= 0.0 and limit < math.inf:
            # A thread's remaining instructions only shrink, by at most rate_max per second, while this mapping
            # lasts; if even then none could finish before the next tick (1 % margin, far above the round-off),
            # the exact pass below would push no completion: skip it (every busy server is integrated to now)
            reach = ctx.rate_max * ((now - ctx.rem_floor_t) + (limit - now)) * 1.01 + 2.0 * EPS_INSTR
            if ctx.rem_floor > reach:
                return
        rem = self.thread_rem[th]
        ttf = rem / np.maximum(ctx.rate, 1e-300)  # (ctx.rate: the rates just computed or still valid)
        nxt = np.minimum.reduceat(ttf, ctx.starts)
        ctx.rem_floor, ctx.rem_floor_t = float(rem.min()), now
        server_t, gen = self.server_t, self.server_gen
        for s, dt in zip(servers.tolist(), nxt.tolist()):
            when = server_t[s] + dt
            if when < limit:
                self._push(when, EV_DONE, s, int(gen[s]))

    def _refresh_busy_rates(self, ctx: TickContext) -> None:
        """The rates and power part of :meth:`_refresh_busy` (recorded in ``_rates_ctx``)."""
        servers, th, tc = ctx.servers, ctx.th, ctx.tc
        if ctx.rate_table is None:
            ctx.build_tables(self)
        if th.size:
            # thr_weight / (thr_cycles / f + thr_mem), tabulated per (thread, level)
            rate = ctx.rate_table.take(add(ctx.rate_index, self.core_level.take(tc)))
            self.thread_rate[th] = rate
            per_server = np.bincount(ctx.srv, rate, self.n_servers)
            if ctx.all_servers:
                np.copyto(self.server_rate_sum, per_server)  # in place: callers may hold the array
            else:
                self.server_rate_sum[servers] = per_server[servers]
        else:
            self.server_rate_sum[servers] = 0.0
        # _power(servers, mapping=False), from the context's (core, level) table
        power_in = ctx.power_in
        ctx.power_table.take(add(ctx.row_base, self.core_level if ctx.all_cores else self.core_level[ctx.cores]),
                             out=power_in[: ctx.row_base.size])
        total = np.bincount(ctx.power_bins, power_in, self.n_servers)  # (+ uncore + DRAM idle: power_in's tail)
        if not ctx.all_servers:
            total = total[servers]
        if ctx.all_servers:
            np.copyto(self.power_w, total)
            add(self.server_gen, 1, self.server_gen)
        else:
            self.power_w[servers] = total
            self.server_gen[servers] += 1
        if th.size:
            ctx.rate = rate
            ctx.loss = self._core_loss.take(tc)
        self._rates_ctx = ctx

    def _evolve_phases(self) -> None:
        """One control period of the §1.9 phase process for the alive threads: a new phase starts with
        probability 1 - exp(-period / mean) (Exp phase lengths), multiplier U[low, high]; AR(1) noise.
        Draws come from a block generator keyed by (seed, period block), indexed by thread id: common random
        numbers across policies."""
        cfg = self.cfg
        k = self._tick_index
        block = k // PHASE_BLOCK
        if block != self._phase_block_index:
            gen = np.random.default_rng([self._phase_seed, block])
            draws = gen.random((3, PHASE_BLOCK, self.n_threads_total))
            p_switch = 1.0 - math.exp(-cfg.control_period_s / cfg.phase_mean_s)
            # the block's draws turned into what a period uses (elementwise, so the same numbers as per period):
            # phase switch flags, new multipliers U[low, high], and the uniform innovation with the variance of
            # N(0, sigma^2): sigma sqrt(3) (2u - 1)
            self._phase_draws = (draws[0] < p_switch,
                                 cfg.phase_low + (cfg.phase_high - cfg.phase_low) * draws[1],
                                 (cfg.ar_sigma * math.sqrt(3.0)) * (2.0 * draws[2] - 1.0))
            self._phase_block_index = block
        row = k % PHASE_BLOCK
        th = self.alive_threads()
        switches, levels, innovations = self._phase_draws
        if self.n_threads_total <= 4 * th.size + PHASE_WHOLE_ARRAY_SLACK:
            # most threads are alive: evolve every thread id with whole-array operations (7 calls instead of 16
            # with gathers and scatters). The same elementwise arithmetic, so an alive thread gets the same
            # numbers; the others' values are never read (_place restarts a thread's process at 1 and 0)
            np.copyto(self._phase_level, levels[row], where=switches[row])
            noise, buf = self._phase_noise, self._phase_buf
            rho, one, floor = self._phase_consts  # rho, 1 and 0.1 as arrays: cheaper calls than Python scalars
            mul(noise, rho, noise)
            add(noise, innovations[row], noise)
            add(noise, one, buf)
            mul(self._phase_level, buf, buf)
            np.maximum(buf, floor, out=buf)
            div(one, buf, self.thread_phase)
            return
        # row views, then 1-D gathers (``take``: a mixed scalar/array index is numpy's slow path)
        switch = th[switches[row].take(th)]
        self._phase_level[switch] = levels[row].take(switch)
        noise = cfg.ar_rho * self._phase_noise.take(th) + innovations[row].take(th)
        self._phase_noise[th] = noise
        # instructions per unit of nominal work: the inverse of the CPI multiplier
        self.thread_phase[th] = 1.0 / np.maximum(self._phase_level.take(th) * (1.0 + noise), 0.1)
