"""The Qin simulator's state evolution between events (Guan & Ababei, IEEE T-SUSC 2024; the ground truth of
``docs/families/qin.md`` §1.9): processor sharing per core, the interference slowdown, power per server and the next
thread completion, integrated exactly between events (rates and power are constant in between).

Servers integrate lazily: each keeps its last integration time; an event on a server (a placement, a completion,
a node decision) integrates it to now, then re-derives its rates, power and next completion. The periodic paths
of :mod:`joulegym.envs.qin.ticks` do the same for every busy server at once.

Ground truth (qin.md §1.9):

- stand-alone time per instruction ``tau = cpi0 / (ipc f) + m memlat`` (:func:`joulegym.devices.cpu.
  seconds_per_instruction`; ipc = server IPC x the app's micro-architecture affinity x the core type's scale);
- interference slowdown ``S = min(3, 1 + sum_k 0.05 w_k (P_k / t_k)^2)`` with ``P_k`` the caused pressure of
  the *other* jobs on the server weighted by their activity (the CPU share their threads get);
- per-core processor sharing: a thread's rate is ``(g / k_core) / (tau S)`` (1 ms quanta are fine-grained
  next to the seconds-long jobs, so sharing is modelled as exact processor sharing), with ``g`` the core's SMT
  yield when it runs two or more threads (Hyper-Threading, A22; 1 on other cores and with one thread);
- power per server (:class:`joulegym.devices.cpu.CoreTable`): uncore + per core busy (1/2 C V^2 f act +
  leakage(V) + DRAM traffic) or idle + DRAM idle; ``power_terms="dynamic_only"`` keeps eq. 12's term only;
- performance loss (eq. 18-19): a core busy for ``dt`` at ``f`` accrues the delay ``dt (1 - f / f_H)`` (eq. 19
  with ``I = dt f / CPI``), per core (for the DVFS controller) and per job (over its threads' CPU time).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from joulegym.devices.cpu import MAX_SLOWDOWN, N_SOI, SLOWDOWN_PER_UNIT, SOI_WEIGHTS

# event kinds, in the order simultaneous events are processed (completions before the decision they inform)
EV_DONE, EV_ARRIVAL, EV_TICK, EV_PROFILED, EV_SCHED = 0, 1, 2, 3, 4
SCALAR_THREADS = 12  # up to this many threads on a server, its per-core sums run in scalars (cheaper than numpy calls)
EPS_INSTR = 1e-3  # a thread with less than this many instructions left is finished (float round-off)
# the ufuncs of the per-period paths, called with a positional output: cheaper than the in-place operators
# (``a += b`` dispatches through ``__iadd__``) on these small arrays, and the same operation
add, sub, mul, div = np.add, np.subtract, np.multiply, np.divide


class NodeDecision(NamedTuple):
    """A node level's decision (qin.md §3.5 node level): move ``threads`` to ``cores`` (global core ids, ``-1`` =
    keep) and set the V/F level of ``level_cores`` (global core ids or a slice) to ``levels`` (``-1`` = keep).
    ``None`` fields change nothing."""

    threads: np.ndarray | None = None
    cores: np.ndarray | None = None
    level_cores: np.ndarray | slice | None = None
    levels: np.ndarray | None = None


class DynamicsMixin:
    """The state evolution of :class:`~joulegym.envs.qin.simulator.QinSim` (module docstring)."""

    def alive_threads(self) -> np.ndarray:
        """Alive (placed, unfinished) thread ids, grouped by server in server order."""
        if self._alive_cache is None:
            parts = [x for x in self._server_threads if x.size]
            self._alive_cache = np.concatenate(parts) if parts else np.zeros(0, dtype=np.intp)
        return self._alive_cache

    def _busy_servers(self) -> np.ndarray:
        if self._busy_cache is None:
            self._busy_cache = np.flatnonzero(self.runnable_threads > 0)
        return self._busy_cache

    def _threads_of(self, servers: np.ndarray) -> np.ndarray:
        if servers.size == 1:
            return self._server_threads[int(servers[0])]
        if servers is self._busy_cache or servers.size == self.n_servers:
            return self.alive_threads()
        parts = [self._server_threads[s] for s in servers.tolist()]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.intp)

    def _core_index(self, servers: np.ndarray) -> np.ndarray:
        if servers.size == 1:
            s = int(servers[0])
            return self._rows[self.first_core[s]:self.first_core[s + 1]]
        if servers.size == self.n_servers:
            return self._rows
        return np.concatenate([self._rows[self.first_core[s]:self.first_core[s + 1]] for s in servers.tolist()])

    def _integrate(self, servers: np.ndarray, t: float) -> None:
        """Advance ``servers`` from their last integration time to ``t`` (rates and power constant meanwhile)."""
        if servers.size == 1:
            self._integrate_one(int(servers[0]), t)
            return
        dt_s = t - self.server_t[servers]
        if dt_s.max() <= 0:
            return
        th = self._threads_of(servers)
        cores = self._core_index(servers)
        dt_all = t - self.server_t
        dt_core = dt_all[self.server_of_core[cores]]
        if th.size:
            dt_th = dt_all[self.thread_server[th]]
            work = self.thread_rate[th] * dt_th
            self.thread_rem[th] -= work
            tc = self.thread_core[th]
            share = 1.0 / self.core_threads[tc]
            loss = self._core_loss[tc]
            jobs = self.thread_job[th]
            cpu = share * dt_th
            m, k = self.n_jobs, self.n_cores
            acc = self._job_acc
            acc[:m] += np.bincount(jobs, cpu, minlength=m)
            acc[m:] += np.bincount(jobs, cpu * loss, minlength=m)
            if self._periodic:  # per-period measurements only matter to a ticking node policy
                self.core_period_instr += np.bincount(tc, work * self.thread_phase[th], minlength=k)
        busy_dt = (self.core_threads[cores] > 0) * dt_core
        self.core_busy_s[cores] += busy_dt
        self.core_period_busy_s[cores] += busy_dt
        self.core_delay_s[cores] += busy_dt * self._core_loss[cores]  # eq. 19 for a busy core: dt (1 - f / f_H)
        self.core_elapsed_s[cores] += dt_core
        pos = dt_s > 0
        srv = servers[pos]
        self.server_energy_j[srv] += self.power_w[srv] * dt_s[pos]
        self.server_load_instr[srv] = np.maximum(
            self.server_load_instr[srv] - self.server_rate_sum[srv] * dt_s[pos], 0.0)
        self.server_t[srv] = t
        self._sync_t = None

    def _integrate_one(self, s: int, t: float) -> None:
        """:meth:`_integrate` for one server (the event path): scalars and core slices instead of gathers."""
        dt = t - self.server_t[s]
        if dt <= 0:
            return
        lo, hi = self.first_core[s], self.first_core[s + 1]
        th = self._server_threads[s]
        if th.size:
            work = self.thread_rate[th] * dt
            self.thread_rem[th] -= work
            tc = self.thread_core[th]
            cpu = dt / self.core_threads[tc]
            jobs = self.thread_job[th]
            np.add.at(self.job_cpu_s, jobs, cpu)
            if not self._lossless:  # (at f_H every term is +0.0, which leaves the sums as they are)
                np.add.at(self.job_delay_s, jobs, cpu * self._core_loss[tc])
            if self._periodic:
                np.add.at(self.core_period_instr, tc, work * self.thread_phase[th])
        busy_dt = (self.core_threads[lo:hi] > 0) * dt
        self.core_busy_s[lo:hi] += busy_dt
        if self._periodic:  # the period's busy time only matters to a ticking node policy
            self.core_period_busy_s[lo:hi] += busy_dt
        if not self._lossless:
            self.core_delay_s[lo:hi] += busy_dt * self._core_loss[lo:hi]
        self.core_elapsed_s[lo:hi] += dt
        self.server_energy_j[s] += self.power_w[s] * dt
        self.server_load_instr[s] = max(self.server_load_instr[s] - self.server_rate_sum[s] * dt, 0.0)
        self.server_t[s] = t
        self._sync_t = None

    def _refresh(self, servers: np.ndarray, mapping: bool) -> None:
        """Recompute the rates (and, after a mapping change, the slowdowns), power and next completion of
        ``servers`` (already integrated to now)."""
        self._rates_ctx = None
        th = self._threads_of(servers)
        rate = None
        if th.size:
            tc = self.thread_core[th]
            if mapping:
                weight, cycles, memory = self._mapping_constants(servers, th, tc)
            else:
                weight, cycles, memory = self._thr_weight[th], self._thr_cycles[th], self._thr_mem_s[th]
            rate = weight / (cycles / self._core_f[tc] + memory)
            self.thread_rate[th] = rate
            if servers.size == 1:
                self.server_rate_sum[servers[0]] = rate.sum()
            else:
                self.server_rate_sum[servers] = np.bincount(self.thread_server[th], rate,
                                                            minlength=self.n_servers)[servers]
        else:
            self.server_rate_sum[servers] = 0.0
        self._power(servers, mapping)
        if mapping:
            self._ctx = None  # the per-thread constants and core activities of the tick context changed
        if servers.size == 1:
            self._arm_completion_of(int(servers[0]), th, rate)
        else:
            self._arm_completions(servers, th)

    def _mapping_constants(self, servers: np.ndarray, th: np.ndarray, tc: np.ndarray) -> tuple:
        """The per-thread constants of a mapping, stored and returned (weight, cycles, memory time): time per
        instruction = cycles / f + memory time (§1.9), weight = the CPU share (x the SMT yield) over the job's
        slowdown; a V/F change (a tick) only changes f."""
        on_core = self.core_threads[tc]
        share = 1.0 / on_core
        jobs = self.thread_job[th]
        self._slowdowns(servers, jobs, share)
        if self._has_smt:  # the core's throughput with two or more threads on it (A22)
            share = share * np.where(on_core > 1, self.cores.smt_yield[tc], 1.0)
        weight = share / self.job_slowdown[jobs]
        self._thr_weight[th] = weight
        if self._per_server_cycles:  # kept since the placement (_thread_constants): only the weight changed
            return weight, self._thr_cycles[th], self._thr_mem_s[th]
        if servers.size == 1:  # the event path: one server
            s = int(servers[0])
            ipc = self._ipc_flat.take(jobs * self.n_servers + s)  # [jobs, s], a 1-D gather
            memory = self.mem_term_s[jobs] * self.memlat[s]
        else:
            srv = self.thread_server[th]
            ipc = self._ipc_flat.take(jobs * self.n_servers + srv)
            memory = self.mem_term_s[jobs] * self.memlat[srv]
        cycles = self.cpi0[jobs] / (ipc * self.cores.ipc_scale[tc])
        self._thr_cycles[th], self._thr_mem_s[th] = cycles, memory
        return weight, cycles, memory

    def _thread_constants(self, j: int, s: int, threads: slice, cores: np.ndarray) -> None:
        """At a placement, when every server's cores share one IPC scale: the cycles and memory time per
        instruction of job ``j``'s threads on server ``s`` (:meth:`_mapping_constants`' element-wise operations;
        a move between the server's cores cannot change them)."""
        if self._per_server_cycles:
            self._thr_cycles[threads] = self.cpi0[j] / (self._ipc_flat[j * self.n_servers + s]
                                                        * self.cores.ipc_scale[cores])
            self._thr_mem_s[threads] = self.mem_term_s[j] * self.memlat[s]

    def _slowdowns(self, servers: np.ndarray, jobs: np.ndarray, share: np.ndarray) -> None:
        """§1.9 interference: each job's slowdown from the other jobs' caused pressure on its server, weighted
        by their activity (the CPU share their threads get, over their thread count); ``jobs``: the job of each
        thread of ``servers``."""
        per_job = np.bincount(jobs, weights=share)  # up to the largest job id only: the same nonzero entries
        js = per_job.nonzero()[0]
        active = per_job[js] / self.n_threads[js]
        caused = self.c_true.take(js, axis=0) * active[:, None]  # take: a fast row gather
        if servers.size == 1:
            pressure = caused.sum(axis=0) - caused
        else:
            srv = self.job_server[js]
            total = np.zeros((self.n_servers, N_SOI))
            np.add.at(total, srv, caused)
            pressure = total[srv] - caused
        # devices.cpu.interference_slowdown's operations, in place, on the per-episode clamped tolerances
        ratio = np.divide(pressure, self._t_true_floor.take(js, axis=0), out=pressure)
        np.square(ratio, out=ratio)
        np.multiply(ratio, SOI_WEIGHTS, out=ratio)
        slowdown = np.add.reduce(ratio, axis=-1)
        np.multiply(slowdown, SLOWDOWN_PER_UNIT, out=slowdown)
        np.add(slowdown, 1.0, out=slowdown)
        self.job_slowdown[js] = np.minimum(slowdown, MAX_SLOWDOWN, out=slowdown)

    def _power(self, servers: np.ndarray, mapping: bool = True) -> None:
        """Server power (qin.md §1.2, §1.9; the CoreTable model): per core busy (dynamic x activity + leakage +
        DRAM traffic, the work-proportional terms x the SMT yield when two or more threads share a Hyper-Threading
        core) or idle, plus uncore and DRAM idle; ``dynamic_only`` keeps eq. 12's term."""
        if servers.size == 1:
            self._power_one(int(servers[0]), mapping)
            return
        cores = self._core_index(servers)
        n_on = self.core_threads[cores]
        busy = n_on > 0
        if mapping:
            th = self._threads_of(servers)
            if th.size:
                tc = self.thread_core[th]
                act_sum = np.bincount(tc, self.act[self.thread_job[th]], minlength=self.n_cores)[cores]
                beta_sum = np.bincount(tc, self.beta[self.thread_job[th]], minlength=self.n_cores)[cores]
            else:
                act_sum = beta_sum = np.zeros(cores.size)
            denom = np.maximum(n_on, 1)
            self._core_act[cores] = act_sum / denom  # time-sliced threads: the mean activity
            self._core_beta[cores] = beta_sum / denom
            if self._has_smt:  # power follows the retired work: x the SMT yield with two or more threads
                gain = np.where(n_on > 1, self.cores.smt_yield[cores], 1.0)
                self._core_act[cores] *= gain
                self._core_beta[cores] *= gain
        act = self._core_act[cores]
        beta = self._core_beta[cores]
        lv = self.core_level[cores]
        flat = self._flat_base[cores] + lv  # (core, level) in the flat tables
        per_core = busy * self._dyn_flat[flat] * act
        if self._full_power:
            per_core = per_core + busy * (self._leak_flat[flat] + beta * self._traffic_w[cores]) \
                + (~busy) * self.cores.idle_w[cores]
        total = np.bincount(self.server_of_core[cores], weights=per_core, minlength=self.n_servers)[servers]
        if self._full_power:
            total = total + self.cores.uncore_w[servers] + self.cores.dram_idle_w[servers]
        self.power_w[servers] = total

    def _power_one(self, s: int, mapping: bool) -> None:
        """:meth:`_power` for one server, on core slices; the per-core sum in scalars (a server's handful of cores:
        the same sequential sum as numpy's below 8 terms, and the same products)."""
        lo, hi = self.first_core[s], self.first_core[s + 1]
        n_on = self.core_threads[lo:hi]
        if mapping:
            act, beta = self._core_activity(s, lo, hi, n_on)
        if hi - lo >= 8:
            self._power_one_vector(s, lo, hi, n_on)
            return
        if not mapping:
            act, beta = self._core_act[lo:hi].tolist(), self._core_beta[lo:hi].tolist()
        tables = self._power_lists
        dyn, leak, traffic, idle = tables["dyn"], tables["leak"], tables["traffic"], tables["idle"]
        levels = self.core_level[lo:hi].tolist()
        on = n_on.tolist()
        full = self._full_power
        total = 0.0
        n_levels = self.n_levels
        for i in range(hi - lo):
            core = lo + i
            flat = core * n_levels + levels[i]
            if on[i] > 0:
                value = dyn[flat] * act[i]
                if full:
                    value = value + (leak[flat] + beta[i] * traffic[core])
            else:
                value = idle[core] if full else 0.0
            total += value
        self.power_w[s] = total + tables["uncore"][s] + tables["dram_idle"][s] if full else total

    def _core_activity(self, s: int, lo: int, hi: int, n_on: np.ndarray) -> tuple[list, list]:
        """Mean activity and beta of the threads on each core of server ``s`` (time-sliced threads: the mean), x the
        SMT yield with two or more threads on a Hyper-Threading core (power follows the retired work); stored and
        returned as lists."""
        th = self._server_threads[s]
        if th.size > SCALAR_THREADS:
            return self._core_activity_vector(th, lo, hi, n_on)
        # a few threads: scalars (the per-core sums in thread order are bincount's; the division and the yield
        # product are numpy's same IEEE operations)
        n = hi - lo
        act, beta = [0.0] * n, [0.0] * n
        if th.size:
            act_of, beta_of = self._act_list, self._beta_list
            for c, j in zip((self.thread_core[th] - lo).tolist(), self.thread_job[th].tolist()):
                act[c] += act_of[j]
                beta[c] += beta_of[j]
            smt = self._smt_list
            for i, k in enumerate(n_on.tolist()):
                if k > 1:
                    a, b = act[i] / k, beta[i] / k
                    if smt is not None:  # (as in _power)
                        a, b = a * smt[lo + i], b * smt[lo + i]
                    act[i], beta[i] = a, b
        self._core_act[lo:hi] = act
        self._core_beta[lo:hi] = beta
        return act, beta

    def _core_activity_vector(self, th: np.ndarray, lo: int, hi: int, n_on: np.ndarray) -> tuple[list, list]:
        local = self.thread_core[th] - lo
        jobs = self.thread_job[th]
        denom = np.maximum(n_on, 1)
        act = np.bincount(local, self.act[jobs], minlength=hi - lo) / denom
        beta = np.bincount(local, self.beta[jobs], minlength=hi - lo) / denom
        if self._has_smt:  # (as in _power)
            gain = np.where(n_on > 1, self.cores.smt_yield[lo:hi], 1.0)
            act *= gain
            beta *= gain
        self._core_act[lo:hi] = act
        self._core_beta[lo:hi] = beta
        return act.tolist(), beta.tolist()

    def _power_one_vector(self, s: int, lo: int, hi: int, n_on: np.ndarray) -> None:
        busy = n_on > 0
        flat = self._flat_base[lo:hi] + self.core_level[lo:hi]  # (core, level) in the flat tables
        per_core = busy * self._dyn_flat[flat] * self._core_act[lo:hi]
        if self._full_power:
            traffic = self._core_beta[lo:hi] * self._traffic_w[lo:hi]
            per_core = per_core + busy * (self._leak_flat[flat] + traffic) + (~busy) * self.cores.idle_w[lo:hi]
            self.power_w[s] = per_core.sum() + self.cores.uncore_w[s] + self.cores.dram_idle_w[s]
        else:
            self.power_w[s] = per_core.sum()

    def _arm_completion_of(self, s: int, th: np.ndarray, rate: np.ndarray | None = None) -> None:
        """:meth:`_arm_completions` for one server (the event path): its next thread completion, in scalars
        (``rate``: the threads' rates when the caller has them)."""
        self.server_gen[s] += 1
        if th.size == 0:
            return
        nxt = (self.thread_rem[th] / np.maximum(self.thread_rate[th] if rate is None else rate, 1e-300)).min()
        when = self.server_t[s] + float(nxt)
        if when < (self._next_tick_s if self._tick_armed else math.inf):  # later: re-armed by the next tick
            self._push(when, EV_DONE, s, int(self.server_gen[s]))

    def _arm_completions(self, servers: np.ndarray, th: np.ndarray) -> None:
        """Push each server's next thread completion (``th`` is grouped by server in ``servers`` order)."""
        self.server_gen[servers] += 1
        counts = self.runnable_threads[servers]
        nz = counts > 0
        if th.size == 0 or not nz.any():
            return
        ttf = self.thread_rem[th] / np.maximum(self.thread_rate[th], 1e-300)
        if servers.size == 1:  # the event path: one server, its minimum
            nxt = ttf.min(keepdims=True)
        else:
            starts = np.concatenate(([0], np.cumsum(counts[nz])[:-1]))
            nxt = np.minimum.reduceat(ttf, starts)
        limit = self._next_tick_s if self._tick_armed else math.inf
        for s, dt in zip(servers[nz].tolist(), nxt.tolist()):
            when = self.server_t[s] + dt
            if when < limit:  # a completion after the next tick is re-armed by that tick
                self._push(when, EV_DONE, s, int(self.server_gen[s]))

    # --- node decisions (thread-to-core mapping and per-core V/F levels) ------------------------------------
    def _sync_levels(self) -> None:
        """Re-derive the per-core caches of ``core_level`` (frequency and eq. 19's loss per busy second)."""
        flat = add(self._flat_base, self.core_level)
        self._core_f = self._freq_flat.take(flat)
        self._core_loss = self._loss_flat.take(flat)  # 1 - core_f / f_H, tabulated
        self._lossless = not self._core_loss.any()
        self._rates_ctx = None

    def _move_threads(self, threads: np.ndarray, cores: np.ndarray) -> bool:
        """Move ``threads`` to ``cores`` (global ids, ``-1`` = keep; a core of another server is a ValueError);
        True if some thread moved (the mapping changed)."""
        target = np.asarray(cores, dtype=np.intp)
        if target.shape != threads.shape:
            raise ValueError(f"thread cores must have one entry per thread ({threads.shape[0]}), got shape "
                             f"{target.shape}")
        move = (target >= 0) & (target != self.thread_core[threads])
        if not move.any():
            return False
        th, dest = threads[move], target[move]
        if np.any(dest >= self.n_cores) or np.any(self.server_of_core[dest] != self.thread_server[th]):
            raise ValueError("thread cores: a thread may only move to a core of its own server")
        np.subtract.at(self.core_threads, self.thread_core[th], 1)
        np.add.at(self.core_threads, dest, 1)
        self.thread_core[th] = dest
        self._ctx = None
        self.migrations += int(th.size)
        return True

    def _apply_node_decision(self, decision: NodeDecision | None) -> bool:
        """Apply a node policy's :class:`NodeDecision` (moves, then levels); True if the mapping changed."""
        if decision is None:
            return False
        moved = False
        if decision.threads is not None and decision.cores is not None:
            moved = self._move_threads(decision.threads, decision.cores)
        if decision.levels is not None:
            index = decision.level_cores
            current = self.core_level[index]
            levels = np.asarray(decision.levels, dtype=np.intp)
            if levels.shape != current.shape or np.any(levels >= self.n_levels):
                raise ValueError(f"levels must have one entry per core set ({current.shape[0]}) below "
                                 f"{self.n_levels} (-1 = keep), got {decision.levels!r}")
            update = (levels >= 0) & (levels != current)
            if np.count_nonzero(update):
                self.core_level[index] = np.where(update, levels, current)
                self._sync_levels()
        return moved
