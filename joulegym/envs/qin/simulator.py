"""Discrete-event simulator of a heterogeneous CPU cluster under Qin-style hierarchical scheduling
(Guan & Ababei, IEEE T-SUSC 2024; the ground-truth model is ``docs/families/qin.md`` "Simulator", qin.md §1.9).

Section numbers (``qin.md §x``) and assumption ids (A1-A27) are those of ``docs/families/qin.md``.

:class:`QinSim` is a :class:`joulegym.core.simulator.Simulator`: ``reset(rng, instance)`` (a
:class:`~joulegym.envs.qin.model.QinInstance`: the jobs and their predicted scores), ``apply(decision)``,
``advance()``, ``view()`` (a read-only :class:`~joulegym.envs.qin.view.QinView`), ``metrics()``, ``done`` and
``truncated``. No Gymnasium here.

Decision points. One job placement per cluster decision: jobs arrive into the admission queue (FIFO, or DAC's
double-and-rank order, paper §6); each is profiled (profiling + CF prediction, qin.md §5.4 / A27: 0.18 s for the
profiling-based schedulers, 0 for Kubernetes) in one of ``profiling_slots`` parallel slots (§4.1: a job is profiled
on 2 server configurations, so by default one slot per two servers), then the decision stage charges it its
decision latency (A27: 0.09 s, 5 ms for Kubernetes; ``decision_mode="serial"``: one decision at a time, Alg. 1's
loop; ``"overlapped"``: the latencies of different jobs overlap) and DAC its ranking cost (A16); :meth:`QinSim.advance`
returns when a job is released for dispatch (:attr:`QinSim.pending_job`, ``decision_kind == "place"``); its
decision is ``(server, V/F level or None)``. Between decisions the servers run
their jobs under the node-level inner policy (:mod:`~joulegym.envs.qin.node_policies`). With an external node level
(an agent, ``QinNode-v0``) every control period is a decision point too (``decision_kind == "node"``), answered by
a :class:`~joulegym.envs.qin.dynamics.NodeDecision`.

CPI phases (qin.md §1.9): piecewise-constant multipliers ``U[0.7, 1.3]`` with Exp(20 ms) phase lengths and AR(1)
noise (rho 0.8, sigma 0.05). They re-weight *where* a thread's time goes along its instruction stream: the work unit
is the nominal instruction, a thread's stand-alone time is fixed by its size (qin.md §4.2 fixes sizes by
stand-alone runtime), and the phase multiplier sets how many instructions retire per unit of that work, which is
what the node level measures (per-core CPI and instruction count per control period, the inputs of the Kalman
filter, paper §4.4). So phases never need events of their own, and the random numbers are common to every policy:
thread ``i``'s draws in control period ``k`` come from a block generator seeded by (episode seed, block of k),
whatever the placement.

Engine: a binary heap (``heapq``) of (time, priority, seq, kind, arg, generation), not SimPy: every placement,
completion, migration or V/F change re-arms a server's next completion, and a superseded entry is skipped by the
server's generation number (SimPy cannot cancel a timeout; the heap does the same with less overhead). State
evolution between events: :mod:`~joulegym.envs.qin.dynamics`; control periods: :mod:`~joulegym.envs.qin.ticks`.
Static node policies (``linux``, ``sniper-pinned``) need no ticks at all, which is what makes the 1,000-server
scenario affordable.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from typing import Any

import numpy as np

from joulegym.core.inner import policy_rng
from joulegym.core.simulator import Simulator
from joulegym.devices.cpu import DRAM_W_PER_GBS, EMPTY_SERVER_TOLERATED, F_REF_MHZ, N_SOI, CoreTable
from joulegym.envs.qin import scheduling as sch
from joulegym.envs.qin.dynamics import (
    EPS_INSTR,
    EV_ARRIVAL,
    EV_DONE,
    EV_PROFILED,
    EV_SCHED,
    EV_TICK,
    DynamicsMixin,
    NodeDecision,
)
from joulegym.envs.qin.model import Prediction, QinInstance, QinSimConfig, oracle_predictions, server_types_of
from joulegym.envs.qin.ticks import PeriodicMixin
from joulegym.envs.qin.view import QinView
from joulegym.workloads.qin_jobs import QinJobs

# scheduler events without a job: look at the queue now / a DAC wait ended / a busy period (profiling + ranking) ended
SCHED_KICK, SCHED_WAKE, SCHED_IDLE = -1, -2, -3


def node_policy_from(spec: Any) -> Any:
    """A node-level inner policy: the object itself, or the registered one of that name (``linux``,
    ``sniper-pinned``, ``qin-node``; :func:`joulegym.core.policy.make_inner`)."""
    if not isinstance(spec, str):
        for hook in ("place", "on_change", "control", "reset"):
            if not callable(getattr(spec, hook, None)):
                raise ValueError(f"node_policy {spec!r} has no {hook}() hook (docs/families/qin.md §5.1)")
        return spec
    from joulegym.core.policy import available, make_inner
    from joulegym.core.policy import spec as policy_spec

    try:
        found = policy_spec(spec, family="qin")
    except ValueError:
        found = None
    if found is None or not found.inner or found.kinds != frozenset({"QinNode"}):
        names = [n for n in available("qin", kind="QinNode", inner=True) if n != "random"]
        raise ValueError(f"node_policy={spec!r} is not one of {names}")
    return make_inner(spec, family="qin")


class QinSim(DynamicsMixin, PeriodicMixin, Simulator):
    """The cluster simulator (module docstring).

    :param cores: the cluster (:func:`joulegym.devices.cpu.build_core_table`).
    :param config: :class:`~joulegym.envs.qin.model.QinSimConfig`.
    """

    def __init__(self, cores: CoreTable, config: QinSimConfig | None = None) -> None:
        self.cfg = config or QinSimConfig()
        self.cfg.validate()
        if not isinstance(cores, CoreTable) or cores.n_servers < 1:
            raise ValueError("cores must be a non-empty joulegym.devices.cpu.CoreTable (servers: empty cluster)")
        self.cores = cores
        self.n_servers = cores.n_servers
        self.n_cores = cores.n_cores
        self.n_levels = cores.freq_mhz.shape[1]
        self.first_core = np.asarray(cores.first_core, dtype=np.intp)
        self.server_of_core = np.asarray(cores.server_of_core, dtype=np.intp)
        self.freq_hz = cores.freq_mhz * 1e6  # (K, L)
        self.f_high_hz = self.freq_hz[:, -1].copy()
        self.memlat = np.array([s.memlat for s in cores.server_types])
        self.cores_per_server = np.asarray(cores.cores, dtype=np.intp)  # physical cores
        self.logical_cores = np.asarray(cores.logical_cores, dtype=np.intp)  # Table 2's, what schedulers see
        self._has_smt = bool(np.any(cores.smt_yield != 1.0))
        # one IPC scale per server (no big/little mix): a thread's cycles per instruction depend on its job and
        # server only, so they are computed once at its placement (DynamicsMixin._thread_constants)
        first = np.asarray(cores.first_core[:-1], dtype=np.intp)
        self._per_server_cycles = bool(np.all(cores.ipc_scale == cores.ipc_scale[first][cores.server_of_core]))
        self.mem_gb = np.array([s.mem_gb for s in cores.server_types], dtype=float)
        self._rows = np.arange(self.n_cores)
        # flat (core, level) tables: ``table_flat[core * L + level]`` is ``table[core, level]`` (one 1-D gather
        # instead of a 2-D fancy index on the per-event and per-tick paths)
        self._flat_base = self._rows * self.n_levels
        self._freq_flat = self.freq_hz.ravel()
        self._loss_flat = (1.0 - self.freq_hz / self.f_high_hz[:, None]).ravel()  # eq. 19's 1 - f / f_H
        self._dyn_flat = np.ascontiguousarray(cores.dyn_w).ravel()
        self._leak_flat = np.ascontiguousarray(cores.leak_w).ravel()
        self._full_power = self.cfg.power_terms == "full"
        # DRAM traffic power per busy core per unit of beta (the CoreTable model: 0.3 W per GB/s, qin.md §1.2)
        self._traffic_w = DRAM_W_PER_GBS * (cores.dram_bw_gbs / cores.cores)[self.server_of_core]
        # the same tables as Python lists, for the one-server power sum in scalars (DynamicsMixin._power_one)
        self._power_lists = {"dyn": self._dyn_flat.tolist(), "leak": self._leak_flat.tolist(),
                             "traffic": self._traffic_w.tolist(), "idle": cores.idle_w.tolist(),
                             "uncore": cores.uncore_w.tolist(), "dram_idle": cores.dram_idle_w.tolist()}
        self._smt_list = cores.smt_yield.tolist() if self._has_smt else None
        self.node_policy = node_policy_from(self.cfg.node_policy)
        self.jobs: QinJobs | None = None
        self._view = QinView(self)

    # --- episode start ---------------------------------------------------------------------------------------
    def reset(self, rng: np.random.Generator, instance: QinInstance | QinJobs | None = None) -> None:
        """Start an episode on ``instance`` (the jobs and their predicted scores; bare jobs: the built-in oracle,
        ground truth x N(1, ``oracle_noise``)). Every random stream (phases, the oracle's noise, the node policy's
        picks) is spawned from ``rng`` before anything depends on a policy's choices."""
        if instance is None:
            raise ValueError("instance: QinSim needs the jobs (a QinInstance or a QinJobs table)")
        if isinstance(instance, QinJobs):
            instance = QinInstance(instance)
        jobs = instance.jobs
        if jobs.n_jobs < 1:
            raise ValueError("jobs: the workload has no job (num_jobs must be >= 1)")
        arrival = np.asarray(jobs.arrival_s, dtype=float)
        if np.any(np.diff(arrival) < 0) or np.any(arrival < 0):
            raise ValueError("jobs.arrival_s must be >= 0 and sorted ascending")
        if not isinstance(rng, np.random.Generator):
            raise ValueError(f"rng must be a numpy Generator (np.random.default_rng(seed)), got {rng!r}")
        seeds = np.random.SeedSequence(int(rng.integers(2**63)))
        s_phase, s_oracle, s_policy = seeds.spawn(3)
        self._phase_seed = int(s_phase.generate_state(1, dtype=np.uint64)[0])
        self.jobs = jobs
        self._full_power = self.cfg.power_terms == "full"
        self._start_jobs(jobs, arrival)
        predictions = instance.predictions
        if predictions is None:
            predictions = oracle_predictions(self.cores, jobs, np.random.default_rng(s_oracle), self.cfg.oracle_noise,
                                             self.cfg.power_terms)
        self._start_predictions(predictions)
        self._start_threads()
        self._start_cores_and_servers()
        self._start_clock(arrival)
        self._periodic = bool(self.node_policy.periodic)
        node_seed = int(s_policy.generate_state(1, dtype=np.uint32)[0])
        self.node_policy.reset(self, policy_rng(node_seed, self.node_policy.name))

    def _start_jobs(self, jobs: QinJobs, arrival: np.ndarray) -> None:
        m = self.n_jobs = int(jobs.n_jobs)
        self.arrival_s = arrival
        self.size_instr = np.asarray(jobs.size_instr, dtype=float)
        self.n_threads = np.asarray(jobs.threads, dtype=np.intp)
        if np.any(self.size_instr <= 0) or np.any(self.n_threads < 1):
            raise ValueError("jobs: size_instr must be > 0 and threads >= 1")
        self.cpi0 = np.asarray(jobs.cpi0, dtype=float)
        self.beta = np.asarray(jobs.beta, dtype=float)
        self.t_true = np.asarray(jobs.tolerated, dtype=float)
        self._t_true_floor = np.maximum(self.t_true, 1e-9)  # the slowdown's divisor (devices.cpu, §1.9)
        self.c_true = np.asarray(jobs.caused, dtype=float)
        self.mem_term_s = self.beta / (1.0 - self.beta) * self.cpi0 / (F_REF_MHZ * 1e6)  # m_a (§1.9)
        types, type_of, _ = server_types_of(self.cores)
        self.ipc_job_server = np.ascontiguousarray(jobs.catalog.ipc(types)[jobs.app][:, type_of])
        self._ipc_flat = self.ipc_job_server.reshape(-1)  # a view: [job, server] = [job * N + server]
        self.act = 1.0 - 0.5 * self.beta
        self._act_list, self._beta_list = self.act.tolist(), self.beta.tolist()  # scalar paths (_core_activity)
        self.job_server = np.full(m, -1, dtype=np.intp)
        self.job_level_hint = np.full(m, self.n_levels - 1, dtype=np.intp)
        self.job_alive_threads = np.zeros(m, dtype=np.intp)
        self.job_slowdown = np.ones(m)
        self.start_s = np.full(m, np.nan)
        self.dispatch_s = np.full(m, np.nan)
        self.finish_s = np.full(m, np.nan)
        # job_cpu_s (CPU time its threads received) then job_delay_s (eq. 18-19 numerator over its threads) in one
        # array: the control period accumulates both with one bincount
        self._job_acc = np.zeros(2 * m)

    def _start_predictions(self, predictions: Any) -> None:
        """What the schedulers see (paper §4): the predicted scores per (job, SC column)."""
        cols = np.asarray(predictions.columns, dtype=np.intp)
        if cols.shape != (self.n_servers, self.n_levels):
            raise ValueError(f"predictions.columns must have shape {(self.n_servers, self.n_levels)}, got {cols.shape}")
        self._pred_cols = cols
        self.pred_mips = np.asarray(predictions.mips, dtype=float)
        self.pred_energy = np.asarray(predictions.energy_j, dtype=float)
        self.pred_runtime = np.asarray(predictions.runtime_s, dtype=float)
        self.pred_t = np.asarray(predictions.tolerated, dtype=float)
        self.pred_c = np.asarray(predictions.caused, dtype=float)
        self.pred_size = np.asarray(predictions.size_instr, dtype=float)
        if self.pred_size.shape != (self.n_jobs,):
            raise ValueError(f"predictions must have one row per job ({self.n_jobs}), got {self.pred_size.shape}")

    def _start_threads(self) -> None:
        m = self.n_jobs
        t = self.n_threads_total = int(self.n_threads.sum())
        self.thread_job = np.repeat(np.arange(m), self.n_threads)
        self.job_first_thread = np.concatenate([[0], np.cumsum(self.n_threads)]).astype(np.intp)
        self.thread_size = (self.size_instr / self.n_threads)[self.thread_job]
        self.thread_rem = self.thread_size.copy()
        self.thread_server = np.full(t, -1, dtype=np.intp)
        self.thread_core = np.full(t, -1, dtype=np.intp)
        self.thread_rate = np.zeros(t)
        self.thread_alive = np.zeros(t, dtype=bool)
        self.thread_phase = np.ones(t)  # phase multiplier x (1 + AR noise): instructions per unit of work
        self._thr_cycles = np.zeros(t)  # cpi0 / ipc on its core: seconds per instruction x f
        self._thr_mem_s = np.zeros(t)  # memory seconds per instruction (frequency-independent)
        self._thr_weight = np.zeros(t)  # CPU share / slowdown
        self._phase_level = np.ones(t)
        self._phase_noise = np.zeros(t)
        self._phase_buf = np.empty(t)  # _evolve_phases' whole-array scratch and constants
        self._phase_consts = (np.full(t, self.cfg.ar_rho), np.ones(t), np.full(t, 0.1))

    def _start_cores_and_servers(self) -> None:
        k, n = self.n_cores, self.n_servers
        self.core_level = np.full(k, self.n_levels - 1, dtype=np.intp)
        self._core_loss = np.zeros(k)  # 1 - f / f_H at the core's level (eq. 19 per busy second)
        self._lossless = True  # every core at f_H: eq. 19's delays stay exactly 0 (nothing to accumulate)
        self._core_f = self.f_high_hz.copy()  # the core's frequency (Hz) at its level
        self.core_threads = np.zeros(k, dtype=np.intp)
        self.core_delay_s = np.zeros(k)
        self.core_elapsed_s = np.zeros(k)
        self.core_busy_s = np.zeros(k)
        self.core_period_instr = np.zeros(k)  # instructions retired in the current control period
        self.core_period_busy_s = np.zeros(k)
        self.period_instr = np.zeros(k)  # the last control period's measurements (swapped in at each tick)
        self.period_busy_s = np.zeros(k)
        self._core_act = np.zeros(k)  # mean activity of the threads on each core (power)
        self._core_beta = np.zeros(k)  # mean beta (DRAM traffic)
        self.server_t = np.zeros(n)  # last integration time
        self._sync_t: float | None = 0.0  # the time every server was integrated to at once (None: they differ)
        self._rem_stash: tuple | None = None  # (tick context, time, its threads' remaining instructions then)
        self.server_energy_j = np.zeros(n)
        self.power_w = np.zeros(n)
        self.server_rate_sum = np.zeros(n)  # instr/s of the server's threads (load drains at this rate)
        self.server_load_instr = np.zeros(n)  # remaining instructions of assigned unfinished jobs, at server_t
        self._load_error = np.zeros(n)  # sum over those jobs of (predicted - true) size
        self.server_gen = np.zeros(n, dtype=np.int64)
        self.c_server = np.zeros((n, N_SOI))  # predicted, over assigned unfinished jobs (A5)
        self.t_server = np.full((n, N_SOI), EMPTY_SERVER_TOLERATED)
        self.jobs_on = np.zeros(n, dtype=np.intp)
        self._low_hints = [0] * n  # jobs on each server whose V/F hint is below the top level
        self._server_index = [np.array([s]) for s in range(n)]  # one-server index arrays of the event path
        self.runnable_threads = np.zeros(n, dtype=np.intp)
        self._server_jobs: list[list[int]] = [[] for _ in range(n)]
        self._server_threads: list[np.ndarray] = [np.zeros(0, dtype=np.intp) for _ in range(n)]
        self._alive_cache: np.ndarray | None = None
        self._busy_cache: np.ndarray | None = None
        self._ctx = None  # the tick context of the current mapping (ticks.TickContext)
        # the tick context whose rates/power _refresh_busy computed last, with no level or mapping change since
        # (then a tick that keeps every level recomputes the same numbers: skipped); None = recompute
        self._rates_ctx = None
        for s in range(n):
            self._power(np.array([s]))

    def _start_clock(self, arrival: np.ndarray) -> None:
        self.now = 0.0
        self._heap: list[tuple] = []
        self._seq = 0
        for j in range(self.n_jobs):
            self._push(arrival[j], EV_ARRIVAL, j)
        self._admission: deque[int] = deque()
        self._ready: deque[int] = deque()
        self._profiled = np.zeros(self.n_jobs, dtype=bool)
        self._profiling = 0  # jobs in the profiling slots
        slots = self.cfg.profiling_slots
        self._slots = max(1, self.n_servers // 2) if slots is None else int(slots)
        self._sched_busy = False
        self._overlapped = self.cfg.decision_mode == "overlapped"
        self._sched_wake_pending = False
        self._kick_pending = False
        self.pending_job = -1
        self.decision_kind = ""
        self.jobs_arrived = self.jobs_placed = self.jobs_done = 0
        self.dispatch_overhead_s = 0.0
        self.migrations = 0
        self._flow_done_s = 0.0
        self._tick_armed = False
        self._tick_index = 0
        self._next_tick_s = math.inf
        self._truncated = False
        self._im_c_sum = 0.0
        self._im_c_n = 0
        self.im_c_trace: list[tuple[float, float]] = []
        self.util_trace: list[tuple[float, np.ndarray]] = []
        self._phase_block_index = -1
        self._phase_draws: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._prediction_cache: tuple[int, int, Prediction | None] = (-2, -1, None)

    # --- what schedulers see ---------------------------------------------------------------------------------
    def view(self) -> QinView:
        """The read-only view a cluster scheduler decides on (:class:`~joulegym.envs.qin.view.QinView`)."""
        return self._view

    def prediction(self, job: int) -> Prediction:
        """The predicted scores of ``job`` per (server, level) (paper §4; what Qin, the baselines and agents use)."""
        cols = self._pred_cols
        return Prediction(self.pred_t[job], self.pred_c[job], self.pred_mips[job][cols],
                          self.pred_energy[job][cols], self.pred_runtime[job][cols], float(self.pred_size[job]))

    def pending_prediction(self) -> Prediction | None:
        """:meth:`prediction` of the pending job, computed once per decision (``None`` when no job is pending)."""
        key = (self.pending_job, self.jobs_placed)
        cached = self._prediction_cache
        if cached[0] == key[0] and cached[1] == key[1]:
            return cached[2]
        pred = self.prediction(self.pending_job) if self.pending_job >= 0 else None
        self._prediction_cache = (key[0], key[1], pred)
        return pred

    @property
    def load_instr(self) -> np.ndarray:
        """L_i(t) (paper §5.2): remaining instructions of each server's assigned unfinished jobs, now."""
        return np.maximum(self.server_load_instr - self.server_rate_sum * (self.now - self.server_t), 0.0)

    @property
    def predicted_load_instr(self) -> np.ndarray:
        """L_i as a deployed scheduler knows it: the predicted sizes (alpha_hat, paper §5.2) of each server's assigned
        unfinished jobs less the instructions they retired (hardware counters)."""
        return np.maximum(self.load_instr + self._load_error, 0.0)

    @property
    def energy_j(self) -> float:
        """Total energy (J) of every server from t = 0 to now (servers are on all the time)."""
        if self.n_servers < 8:  # scalars: numpy sums fewer than 8 terms in this same sequential order
            now = float(self.now)
            return sum(self.server_energy_j.tolist()) + sum([p * (now - t) for p, t in zip(self.power_w.tolist(),
                                                                                          self.server_t.tolist())])
        return float(self.server_energy_j.sum() + (self.power_w * (self.now - self.server_t)).sum())

    @property
    def job_cpu_s(self) -> np.ndarray:
        """CPU time each job's threads received (a view: the simulator accumulates it)."""
        return self._job_acc[: self.n_jobs]

    @property
    def job_delay_s(self) -> np.ndarray:
        """Eq. 18-19's accumulated delay over each job's threads (a view: the simulator accumulates it)."""
        return self._job_acc[self.n_jobs:]

    @property
    def util(self) -> np.ndarray:
        """Busy cores / cores per server, now."""
        busy = np.bincount(self.server_of_core, weights=(self.core_threads > 0), minlength=self.n_servers)
        return busy / self.cores_per_server

    @property
    def flowtime_s(self) -> float:
        """Sum over arrived jobs of (completion or now) - arrival."""
        in_system = self.jobs_arrived - self.jobs_done
        arrived_open = self.arrival_s[:self.jobs_arrived]
        open_mask = np.isnan(self.finish_s[:self.jobs_arrived])
        return self._flow_done_s + in_system * self.now - float(arrived_open[open_mask].sum())

    @property
    def queue_length(self) -> int:
        """Jobs arrived but not yet placed (the admission queue, the ranked DAC batch and the pending job)."""
        return self.jobs_arrived - self.jobs_placed

    @property
    def done(self) -> bool:
        return self.jobs_done == self.n_jobs

    @property
    def truncated(self) -> bool:
        return self._truncated and not self.done

    # --- decisions -------------------------------------------------------------------------------------------
    def _apply(self, decision: Any) -> None:
        """A placement ``(server, V/F level or None)`` of the pending job, or an external node decision
        (:class:`~joulegym.envs.qin.dynamics.NodeDecision`) at a control period."""
        if self.decision_kind == "node":
            self._apply_external_node(decision)
            return
        j = self.pending_job
        if j < 0 or self.decision_kind != "place":
            raise ValueError("apply: no decision is pending (call advance() first)")
        server, level = decision
        if isinstance(server, bool) or not (0 <= int(server) < self.n_servers):
            raise ValueError(f"server must be an integer in [0, {self.n_servers}), got {server!r}")
        top = self.n_levels - 1
        level = top if level is None or not self.cfg.level_hints else int(level)
        if not 0 <= level < self.n_levels:
            raise ValueError(f"vf_level must be None or an integer in [0, {self.n_levels}), got {decision[1]!r}")
        self._record_imbalance()
        self.pending_job = -1
        self.decision_kind = ""
        self._place(j, int(server), level)
        self._sched_busy = False
        self._kick_scheduler()

    def _apply_external_node(self, decision: NodeDecision) -> None:
        if not isinstance(decision, NodeDecision):
            raise ValueError(f"a node decision must be a NodeDecision, got {type(decision).__name__}")
        self.decision_kind = ""
        servers = self._busy_servers()
        self._apply_node_decision(decision)
        self._arm_tick()
        self._refresh(servers, mapping=True)

    # --- the event loop --------------------------------------------------------------------------------------
    def advance(self) -> bool:
        """Run events to the next decision point. ``True``: a decision is pending (``decision_kind``
        ``"place"`` with :attr:`pending_job`, or ``"node"``); ``False``: the episode ended (done or truncated)."""
        if self.decision_kind:
            raise ValueError(f"advance: a {self.decision_kind!r} decision is pending; apply it first")
        heap = self._heap
        while heap:
            t, _prio, _seq, kind, arg, gen = heapq.heappop(heap)
            if kind == EV_DONE and gen != self.server_gen[arg]:
                continue  # superseded
            if t > self.cfg.horizon_s:
                self._truncated = True
                self._integrate(np.arange(self.n_servers), self.cfg.horizon_s)
                self.now = self.cfg.horizon_s
                heap.clear()
                return False
            self.now = max(self.now, t)
            if kind == EV_DONE:
                self._completions(arg)
            elif kind == EV_ARRIVAL:
                self.jobs_arrived += 1
                self._admission.append(arg)
                if not self._kick_pending:
                    # simultaneous arrivals join the queue before the scheduler looks at it (a batch is one batch)
                    self._kick_pending = True
                    self._push(t, EV_SCHED, SCHED_KICK)
            elif kind == EV_SCHED:
                if self._scheduler_event(arg, t):
                    return True
            elif kind == EV_PROFILED:
                self._profiled_event(arg)
            elif kind == EV_TICK:
                self._tick_armed = False
                if self._tick():
                    return True
        return False

    def _scheduler_event(self, arg: int, t: float) -> bool:
        """A scheduler event: a job released for dispatch (True: a placement is pending) or a wake-up."""
        if arg >= 0:
            self.pending_job = arg
            self.decision_kind = "place"
            self.dispatch_s[arg] = t
            return True
        if arg == SCHED_KICK:
            self._kick_pending = False
        elif arg == SCHED_WAKE:
            self._sched_wake_pending = False
        else:  # SCHED_IDLE: a busy period without a dispatch (profiling + DAC ranking) ended
            self._sched_busy = False
        self._kick_scheduler()
        return False

    def run_to_end(self) -> None:
        """Fast-forward to the end (only once every job is placed)."""
        while self.advance():
            if self.decision_kind == "place":
                raise ValueError("run_to_end: a job still needs a placement")
            self.decision_kind = ""
            self._arm_tick()

    def _push(self, t: float, kind: int, arg: int, gen: int = 0) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, kind, self._seq, kind, arg, gen))

    # --- the scheduler: admission queue, DAC, latency (paper §6, qin.md §3.7, §5.4) --------------------------
    def _kick_scheduler(self) -> None:
        """Move the queues on: FIFO profiles arrivals in the free profiling slots and, while the decision stage is
        free, dispatches the next profiled job after its decision latency; DAC profiles a batch, ranks it, then
        dispatches it in rank order (paper §6)."""
        if self.cfg.admission == "fifo":
            self._start_profiling()
        if self._overlapped:
            while self._ready:  # every profiled job starts its own decision latency at once
                self._release_after(self.cfg.decision_latency_s, self._ready.popleft())
            if self._sched_busy:
                return
        else:
            if self._sched_busy or self.pending_job >= 0:
                return
            if self._ready:
                self._busy_for(self.cfg.decision_latency_s, self._ready.popleft())
                return
        if self.cfg.admission == "fifo" or not self._admission:
            return
        cfg = self.cfg
        more_coming = self.jobs_arrived < self.n_jobs
        oldest = self.arrival_s[self._admission[0]]
        if more_coming and len(self._admission) < cfg.dac_queue_len and self.now < oldest + cfg.dac_wait_s:
            if not self._sched_wake_pending:
                self._sched_wake_pending = True
                self._push(oldest + cfg.dac_wait_s, EV_SCHED, SCHED_WAKE)
            return
        self._rank_batch()

    def _start_profiling(self) -> None:
        """FIFO: arrivals start their profiling (profiling + CF prediction, A27) in the free slots, in order; a
        profiled job joins the decision queue (:meth:`_profiled_event`)."""
        latency = self.cfg.profile_latency_s
        while self._admission and self._profiling < self._slots:
            j = self._admission.popleft()
            if latency <= 0.0:
                self._ready.append(j)
                continue
            self._profiling += 1
            self.dispatch_overhead_s += latency
            self._push(self.now + latency, EV_PROFILED, j)

    def _profiled_event(self, j: int) -> None:
        self._profiling -= 1
        self._profiled[j] = True
        self._ready.append(j)
        self._kick_scheduler()

    def _rank_batch(self) -> None:
        """DAC (paper §6): profile the admission queue's next batch (in the profiling slots, all at once) and
        double-and-rank it (qin.md §3.7)."""
        cfg = self.cfg
        batch = [self._admission.popleft() for _ in range(min(cfg.dac_queue_len, len(self._admission)))]
        batch_arr = np.array(batch, dtype=np.intp)
        unprofiled = int(np.count_nonzero(~self._profiled[batch_arr]))
        self.dispatch_overhead_s += cfg.profile_latency_s * unprofiled
        profile = cfg.profile_latency_s * math.ceil(unprofiled / self._slots)  # rounds of the slots
        self._profiled[batch_arr] = True
        keys = sch.dac_keys(cfg.admission[4:], self.pred_mips[batch_arr], self.pred_energy[batch_arr],
                            self.pred_c[batch_arr])
        order, cost = sch.dac_double_and_rank(keys, cfg.sigma_dac_s)
        ranked = batch_arr[order]
        rest = np.setdiff1d(batch_arr, ranked, assume_unique=True)
        rest = batch_arr[np.isin(batch_arr, rest)]  # keep queue order for the unranked tail
        self._admission.extendleft(reversed(rest.tolist()))
        self._ready.extend(ranked.tolist())
        self.dispatch_overhead_s += cost
        self._sched_busy = True
        self._push(self.now + profile + cost, EV_SCHED, SCHED_IDLE)

    def _busy_for(self, latency_s: float, job: int) -> None:
        """The serial decision stage: busy with ``job`` for its latency (the next decision waits)."""
        self._sched_busy = True
        self._release_after(latency_s, job)

    def _release_after(self, latency_s: float, job: int) -> None:
        """Release ``job`` for its placement ``latency_s`` from now (its decision latency)."""
        self.dispatch_overhead_s += latency_s
        self._push(self.now + latency_s, EV_SCHED, job)

    # --- placement and completions ---------------------------------------------------------------------------
    def _place(self, j: int, s: int, level: int) -> None:
        self._integrate_one(s, self.now)
        first, end = self.job_first_thread[j], self.job_first_thread[j + 1]
        threads = np.arange(first, end)
        # the phase process starts here (multiplier 1, no noise): _evolve_phases may have run every thread id
        self._phase_level[first:end] = 1.0
        self._phase_noise[first:end] = 0.0
        self.thread_phase[first:end] = 1.0
        self.job_server[j] = s
        self.job_level_hint[j] = level
        self.start_s[j] = self.now
        self.job_alive_threads[j] = threads.size
        self.thread_server[threads] = s
        self.thread_alive[threads] = True
        cores = np.asarray(self.node_policy.place(self, s, threads), dtype=np.intp)
        lo, hi = self.first_core[s], self.first_core[s + 1]
        if cores.shape != threads.shape or cores.min() < lo or cores.max() >= hi:
            raise ValueError(f"node policy {self.node_policy.name!r} placed threads outside server {s}")
        self.thread_core[threads] = cores
        self._thread_constants(j, s, slice(first, end), cores)
        np.add.at(self.core_threads, cores, 1)
        self._server_jobs[s].append(j)
        self._server_threads[s] = np.concatenate([self._server_threads[s], threads])
        self._alive_cache = self._busy_cache = self._ctx = None
        self.jobs_on[s] += 1
        self._low_hints[s] += level < self.n_levels - 1
        self.runnable_threads[s] += threads.size
        self.c_server[s] += self.pred_c[j]
        np.minimum(self.t_server[s], self.pred_t[j], out=self.t_server[s])
        self.server_load_instr[s] += self.size_instr[j]
        self._load_error[s] += self.pred_size[j] - self.size_instr[j]
        self.jobs_placed += 1
        self._apply_node_decision(self.node_policy.on_change(self, s))
        self._refresh(self._server_index[s], mapping=True)
        self._arm_tick()

    def _completions(self, s: int) -> None:
        self._integrate_one(s, self.now)
        th = self._server_threads[s]
        fin = th[self.thread_rem[th] <= np.maximum(EPS_INSTR, self.thread_rate[th] * 1e-9)]
        if fin.size == 0:  # round-off: re-arm
            self._refresh(self._server_index[s], mapping=False)
            return
        self.thread_rem[fin] = 0.0
        self.thread_alive[fin] = False
        np.subtract.at(self.core_threads, self.thread_core[fin], 1)
        self._server_threads[s] = th[self.thread_alive[th]]
        self._alive_cache = self._busy_cache = self._ctx = None
        self.runnable_threads[s] -= fin.size
        jobs = self.thread_job[fin]
        np.subtract.at(self.job_alive_threads, jobs, 1)
        alive = self.job_alive_threads
        for j in sorted({j for j in jobs.tolist() if alive[j] == 0}):  # np.unique's order, without its overhead
            self._finish_job(j, s)
        self._apply_node_decision(self.node_policy.on_change(self, s))
        self._refresh(self._server_index[s], mapping=True)
        if self.done:
            self._finish()

    def _finish_job(self, j: int, s: int) -> None:
        self.finish_s[j] = self.now
        self.jobs_done += 1
        self._flow_done_s += self.now - self.arrival_s[j]
        self._server_jobs[s].remove(j)
        self.jobs_on[s] -= 1
        self._low_hints[s] -= self.job_level_hint[j] < self.n_levels - 1
        self.c_server[s] -= self.pred_c[j]
        self._load_error[s] -= self.pred_size[j] - self.size_instr[j]
        rest = self._server_jobs[s]
        if rest:
            self.t_server[s] = self.pred_t[rest].min(axis=0)
        else:
            self.c_server[s] = 0.0  # exact zero (no round-off residue)
            self._load_error[s] = 0.0
            self.t_server[s] = EMPTY_SERVER_TOLERATED

    def _finish(self) -> None:
        """All jobs are complete: integrate every server to now (the episode's energy ends here)."""
        self._integrate(np.arange(self.n_servers), self.now)
        self._heap.clear()

    # --- diagnostics and metrics -----------------------------------------------------------------------------
    def load_instr_list(self) -> list[float]:
        """:attr:`load_instr` as a list, in scalars (the same element-wise operations, without numpy calls)."""
        now = float(self.now)
        return [max(load - rate * (now - t), 0.0) for load, rate, t in
                zip(self.server_load_instr.tolist(), self.server_rate_sum.tolist(), self.server_t.tolist())]

    def _record_imbalance(self) -> None:
        if self.n_servers < 8:  # scalars: numpy sums fewer than 8 terms in this same sequential order
            values = self.load_instr_list()
            im_c = max(values) - sum(values) / self.n_servers  # eq. 30
        else:
            load = self.load_instr
            im_c = float(load.max() - load.mean())
        self._im_c_sum += im_c
        self._im_c_n += 1
        if self.cfg.record_traces:
            self.im_c_trace.append((self.now, im_c))
            self.util_trace.append((self.now, self.util))

    def im_n(self) -> np.ndarray:
        """Eq. 31 per server, now: max minus mean of the per-core loads L_j (remaining instructions of the
        threads on core j). On demand (O(threads)), not recorded per event."""
        th = self.alive_threads()
        rem = self.thread_rem[th] - self.thread_rate[th] * (self.now - self.server_t[self.thread_server[th]])
        load = np.bincount(self.thread_core[th], np.maximum(rem, 0.0), minlength=self.n_cores)
        peak = np.maximum.reduceat(load, self.first_core[:-1])
        return peak - np.add.reduceat(load, self.first_core[:-1]) / self.cores_per_server

    def job_pl(self) -> np.ndarray:
        """Per-job performance loss (eq. 18): accumulated eq. 19 delay over the CPU time its threads got."""
        return np.divide(self.job_delay_s, self.job_cpu_s, out=np.zeros(self.n_jobs), where=self.job_cpu_s > 0)

    def core_pl(self) -> np.ndarray:
        """Per-core performance loss (eq. 18 with T = elapsed time)."""
        return np.divide(self.core_delay_s, self.core_elapsed_s, out=np.zeros(self.n_cores),
                         where=self.core_elapsed_s > 0)

    def metrics(self) -> dict[str, float]:
        """The paper's metrics so far (qin.md §5.5): makespan (the primary JCT, A17), mean JCT, energy, EDP."""
        done = ~np.isnan(self.finish_s)
        first = float(self.arrival_s.min()) if self.n_jobs else 0.0
        makespan = (float(np.nanmax(self.finish_s)) - first) if done.any() else 0.0
        energy = self.energy_j
        elapsed = max(self.now, 1e-12)
        pl = self.job_pl()[done]
        return {
            "makespan_s": makespan,
            "mean_jct_s": float((self.finish_s[done] - self.arrival_s[done]).mean()) if done.any() else 0.0,
            "energy_j": energy,
            "edp_js": energy * makespan,
            "flowtime_s": self.flowtime_s,
            "jobs_done": float(self.jobs_done),
            "jobs_total": float(self.n_jobs),
            "mean_util": float(self.core_busy_s.sum() / (self.n_cores * elapsed)),
            "mean_power_w": energy / elapsed,
            "im_c_mean": self._im_c_sum / max(self._im_c_n, 1),
            "pl_mean": float(pl.mean()) if pl.size else 0.0,
            "pl_max": float(pl.max()) if pl.size else 0.0,
            "dispatch_overhead_s": self.dispatch_overhead_s,
            "migrations": float(self.migrations),
            "mean_slowdown": float(self.job_slowdown[done].mean()) if done.any() else 1.0,
        }
