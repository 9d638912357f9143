"""Discrete-event simulator of a heterogeneous CPU cluster under Qin-style hierarchical scheduling
(Guan & Ababei, IEEE T-SUSC 2024; the ground-truth model is ``docs/families/qin.md`` "Simulator", qin.md §1.9).

Section numbers (``qin.md §x``) and assumption ids (A1-A27) are those of ``docs/families/qin.md``.

No Gymnasium here: :class:`QinSim` follows the core simulator protocol (:mod:`joulegym.core.simulator`):
``reset``, ``apply`` (place the pending job), ``advance`` (to the next decision point), ``view``, ``metrics``,
``done`` and ``truncated``.

Decision points. One job placement per cluster decision: jobs arrive into the admission queue (FIFO, or
DAC's double-and-rank order, paper §6), one sequential scheduler charges each job its profiling and decision
latency (qin.md §5.4 / A27: 0.18 s + 0.09 s for the profiling-based schedulers, 5 ms for Kubernetes) and the DAC
ranking cost (A16), and :meth:`QinSim.advance` returns when a job is released for dispatch
(:attr:`QinSim.pending_job`). Between decisions the servers run their jobs under the pluggable node policy
(:mod:`~joulegym.envs.qin.node_policies`). With ``node_policy="external"`` every control period is a
decision point too (:attr:`QinSim.decision_kind` ``"node"``, answered by :meth:`QinSim.apply_node`).

Ground truth (qin.md §1.9):

- stand-alone time per instruction ``tau = cpi0 / (ipc f) + m memlat`` (:func:`joulegym.devices.cpu.
  seconds_per_instruction`; ipc = server IPC x the app's micro-architecture affinity x the core type's scale);
- interference slowdown ``S = min(3, 1 + sum_k 0.05 w_k (P_k / t_k)^2)`` with ``P_k`` the caused pressure of
  the *other* jobs on the server weighted by their activity (the CPU share their threads get);
- per-core processor sharing: a thread's rate is ``(1 / k_core) / (tau S)`` (1 ms quanta are fine-grained
  next to the seconds-long jobs, so sharing is modelled as exact processor sharing);
- CPI phases: piecewise-constant multipliers ``U[0.7, 1.3]`` with Exp(20 ms) phase lengths and AR(1) noise
  (rho 0.8, sigma 0.05). They re-weight *where* a thread's time goes along its instruction stream: the work
  unit is the nominal instruction, a thread's stand-alone time is fixed by its size (qin.md §4.2 fixes sizes
  by stand-alone runtime), and the phase multiplier sets how many instructions retire per unit of that work,
  which is what the node level measures (per-core CPI and instruction count per control period, the inputs
  of the Kalman filter, paper §4.4). So phases never need events of their own, and the random numbers are
  common to every policy: thread ``i``'s draws in control period ``k`` come from a block generator seeded
  by (episode seed, block of k), whatever the placement;
- power per server (:class:`joulegym.devices.cpu.CoreTable`): uncore + per core busy (1/2 C V^2 f act +
  leakage(V) + DRAM traffic) or idle + DRAM idle; ``power_terms="dynamic_only"`` keeps eq. 12's term only;
- performance loss (eq. 18-19): a core busy for ``dt`` at ``f`` accrues the delay ``dt (1 - f / f_H)`` (eq. 19
  with ``I = dt f / CPI``), per core (for the DVFS controller) and per job (over its threads' CPU time).

Engine: a binary heap (``heapq``) of (time, priority, seq, kind, arg, generation), not SimPy: every
placement, completion, migration or V/F change re-arms a server's next completion, and a superseded entry
is skipped by the server's generation number (SimPy cannot cancel a timeout; the heap does the same with
less overhead). Servers integrate lazily: each keeps its last integration time, work and energy are
integrated exactly between that server's events (rates and power are constant in between), and the
control-period ticks (``control_period_s``, aligned to ``k * period`` for every server) integrate, measure and
re-decide all busy servers at once with numpy, on per-thread and per-core gathers cached until the next
placement, completion or migration (``_TickContext``). Static node policies (``linux``, ``sniper_pinned``) need
no ticks at all, which is what makes the 1,000-server scenario affordable.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from joulegym.devices.cpu import (
    DRAM_W_PER_GBS,
    EMPTY_SERVER_TOLERATED,
    F_REF_MHZ,
    N_SOI,
    CoreTable,
    interference_slowdown,
)
from joulegym.envs.qin import scheduling as sch

if TYPE_CHECKING:
    from joulegym.envs.qin.node_policies import NodePolicy
    from joulegym.workloads.qin_jobs import QinJobs

ADMISSIONS = ("fifo", "dac_H_desc", "dac_E_asc", "dac_I_asc")
POWER_TERMS = ("full", "dynamic_only")
NODE_POLICY_NAMES = ("linux", "sniper_pinned", "qin_node", "external")
# event kinds, in the order simultaneous events are processed (completions before the decision they inform)
EV_DONE, EV_ARRIVAL, EV_TICK, EV_SCHED = 0, 1, 2, 3
# scheduler events without a job: look at the queue now / a DAC wait ended / a busy period (profiling + ranking) ended
SCHED_KICK, SCHED_WAKE, SCHED_IDLE = -1, -2, -3
PHASE_BLOCK = 64  # control periods of phase draws generated at once (memory: 64 x threads x 3 floats)
EPS_INSTR = 1e-3  # a thread with less than this many instructions left is finished (float round-off)
# _evolve_phases evolves every thread id at once while the thread ids number at most 4 x the alive threads + this
# (a speed choice: beyond it, the gathers of the alive threads' entries are cheaper than whole-array operations)
PHASE_WHOLE_ARRAY_SLACK = 1024
# the ufuncs of the per-period paths, called with a positional output: cheaper than the in-place operators
# (``a += b`` dispatches through ``__iadd__``) on these small arrays, and the same operation
_add, _sub, _mul, _div = np.add, np.subtract, np.multiply, np.divide


@dataclass
class QinSimConfig:
    """Simulator settings (qin.md §1.9, §3.6-3.7, §5.4, §7.1). Every constant not from the paper is an
    assumption listed in ``docs/families/qin.md`` under its section."""

    node_policy: Any = "linux"  # a name of NODE_POLICY_NAMES or a NodePolicy object
    control_period_s: float = 0.01  # node-level control period (qin.md §7.1: 10 ms; 1 ms = the paper's fidelity)
    admission: str = "fifo"
    dac_queue_len: int = 100  # Fig. 12 settings: queue 100, wait 0, no sigma (rank all)
    dac_wait_s: float = 0.0
    sigma_dac_s: float | None = None
    profile_latency_s: float = 0.18  # A27: profiling + CF per job (Kubernetes: 0)
    decision_latency_s: float = 0.09  # A27: D-choice decision per job (Kubernetes: 0.005)
    phases: bool = True  # §1.9 CPI phases + AR(1) noise (only observed by node policies that measure)
    phase_mean_s: float = 0.02
    phase_low: float = 0.7
    phase_high: float = 1.3
    ar_rho: float = 0.8
    ar_sigma: float = 0.05
    power_terms: str = "full"
    oracle_noise: float = 0.05  # multiplicative N(1, sigma) noise of the built-in predictor (qin.md §1.9)
    horizon_s: float = 1e7
    record_traces: bool = False

    def validate(self) -> None:
        if isinstance(self.node_policy, str) and self.node_policy not in NODE_POLICY_NAMES:
            raise ValueError(f"node_policy={self.node_policy!r} is not one of {NODE_POLICY_NAMES}")
        for name, allowed in (("admission", ADMISSIONS), ("power_terms", POWER_TERMS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name}={getattr(self, name)!r} is not one of {allowed}")
        for name in ("control_period_s", "phase_mean_s", "horizon_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        for name in ("dac_wait_s", "profile_latency_s", "decision_latency_s", "ar_sigma", "oracle_noise"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.sigma_dac_s is not None and not self.sigma_dac_s >= 0:
            raise ValueError(f"sigma_dac_s must be None or >= 0, got {self.sigma_dac_s!r}")
        if isinstance(self.dac_queue_len, bool) or int(self.dac_queue_len) != self.dac_queue_len \
                or self.dac_queue_len < 1:
            raise ValueError(f"dac_queue_len must be an integer >= 1, got {self.dac_queue_len!r}")
        if not 0 < self.phase_low <= self.phase_high:
            raise ValueError(f"phase_low/phase_high must satisfy 0 < low <= high, got {self.phase_low!r}, "
                             f"{self.phase_high!r}")
        if not 0 <= self.ar_rho < 1:
            raise ValueError(f"ar_rho must be in [0, 1), got {self.ar_rho!r}")


@dataclass(frozen=True)
class Prediction:
    """What a scheduler knows about one job (never ground truth): CF-predicted scores (paper §4)."""

    tolerated: np.ndarray  # (15,)
    caused: np.ndarray  # (15,)
    mips: np.ndarray  # (N, L), eq. 17 (A1), one core, levels ascending
    energy_j: np.ndarray  # (N, L), whole job on one core of that SC
    runtime_s: np.ndarray  # (N, L), size_hat / (mips 1e6)
    size_instr: float  # alpha_hat


def _server_types(cores: CoreTable) -> tuple[list, np.ndarray, np.ndarray]:
    """Distinct server types (order of first appearance), the type of each server and a big core of each type."""
    names = [s.name for s in cores.server_types]
    distinct = list(dict.fromkeys(names))
    type_of = np.array([distinct.index(n) for n in names], dtype=np.intp)
    first = [names.index(n) for n in distinct]
    return [cores.server_types[i] for i in first], type_of, np.asarray(cores.first_core)[first]


def truth_by_type(cores: CoreTable, jobs: QinJobs, power_terms: str = "full") -> dict[str, np.ndarray]:
    """Stand-alone ground truth per (job, server *type*, level) on one big core (qin.md §1.9; eq. 12-13, 17):
    ``mips`` (M, U, L), ``runtime_s`` (the whole job serially) and ``energy_j`` (size x the RAPL-like energy per
    instruction of :func:`joulegym.devices.cpu.energy_per_instruction_j`, the truth the profiling oracle of
    :mod:`joulegym.envs.qin.prediction` measures; ``dynamic_only``: eq. 12's term only), plus ``type_of`` (N,)."""
    from joulegym.devices.cpu import energy_per_instruction_j, seconds_per_instruction

    types, type_of, core0 = _server_types(cores)
    ipc = jobs.catalog.ipc(types)[jobs.app]  # (M, U)
    memlat = np.array([t.memlat for t in types])
    f = cores.freq_mhz[core0]  # (U, L), big core
    tau = seconds_per_instruction(jobs.cpi0[:, None, None], jobs.beta[:, None, None], ipc[:, :, None], f[None],
                                  memlat[None, :, None])
    levels = np.arange(f.shape[1])
    epi = np.stack([energy_per_instruction_j(t, levels[None, :], tau[:, u, :], jobs.beta[:, None],
                                             paper_dynamic_only=power_terms == "dynamic_only")
                    for u, t in enumerate(types)], axis=1)
    size = jobs.size_instr[:, None, None]
    return {"mips": 1e-6 / tau, "runtime_s": size * tau, "energy_j": size * epi, "type_of": type_of}


def truth_tables(cores: CoreTable, jobs: QinJobs, power_terms: str = "full") -> dict[str, np.ndarray]:
    """:func:`truth_by_type` expanded to every server: ``mips``, ``runtime_s``, ``energy_j`` as (M, N, L) (for
    tests and small clusters; large clusters should index :func:`truth_by_type` by ``type_of``)."""
    truth = truth_by_type(cores, jobs, power_terms)
    return {key: truth[key][:, truth["type_of"]] for key in ("mips", "runtime_s", "energy_j")}


class _TickContext:
    """Gathers of the busy servers' alive threads and cores that stay valid while the mapping (placements,
    completions, migrations) does not change: a control period re-uses them instead of re-gathering ~20 arrays
    (a 100-job episode at 10 ms has ~200k periods and a handful of mapping changes per second)."""

    __slots__ = ("act", "all_cores", "all_occupied", "all_servers", "busy_all", "busy_core", "by_core", "core_starts",
                 "cores", "dram_idle", "dvfs", "flat_core", "idle_term", "job_weights", "jobs", "jobs2", "loss",
                 "occupied", "power_bins", "power_in", "power_table", "rate", "rate_index", "rate_max", "rate_table",
                 "rem_floor", "rem_floor_t", "row_base", "servers", "share", "share_app", "share_period", "soc",
                 "srv", "starts", "tc", "th", "thr_cycles", "thr_mem", "thr_weight", "traffic_term", "uncore")

    def __init__(self, sim: QinSim) -> None:
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
        self.flat_core = sim._flat_base[self.cores]
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

    def build_tables(self, sim: QinSim) -> None:
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


class QinSim:
    """The cluster simulator (module docstring).

    :param cores: the cluster (:func:`joulegym.devices.cpu.build_core_table`).
    :param config: :class:`QinSimConfig`.
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
        self.cores_per_server = np.asarray(cores.cores, dtype=np.intp)
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
        self.node_policy = self._make_node_policy(self.cfg.node_policy)
        self.jobs: QinJobs | None = None

    @staticmethod
    def _make_node_policy(spec: Any) -> NodePolicy:
        from joulegym.envs.qin.node_policies import make_node_policy

        return make_node_policy(spec) if isinstance(spec, str) else spec

    # --- episode start ---------------------------------------------------------------------------------------
    def reset(self, jobs: QinJobs, seed: int | np.random.Generator | None = None,
              predictions: Any = None, sc_columns: np.ndarray | None = None) -> None:
        """Start an episode.

        :param jobs: the workload (:class:`joulegym.workloads.qin_jobs.QinJobs`), sorted by arrival.
        :param seed: the episode seed; every random stream (phases, the built-in predictor's noise, the node
            policy's picks) is spawned from it before anything depends on a policy's choices.
        :param predictions: a :class:`joulegym.envs.qin.prediction.JobPredictions` (arrays over (job, SC
            column)); ``None``: the built-in oracle, ground truth x N(1, ``oracle_noise``).
        :param sc_columns: ``(N, L)`` SC column of each (server, level) in ``predictions`` (required with it).
        """
        if jobs.n_jobs < 1:
            raise ValueError("jobs: the workload has no job (num_jobs must be >= 1)")
        arrival = np.asarray(jobs.arrival_s, dtype=float)
        if np.any(np.diff(arrival) < 0) or np.any(arrival < 0):
            raise ValueError("jobs.arrival_s must be >= 0 and sorted ascending")
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        ss = np.random.SeedSequence(int(rng.integers(2**63)))
        s_phase, s_oracle, s_policy = ss.spawn(3)
        self._phase_seed = int(s_phase.generate_state(1, dtype=np.uint64)[0])
        self.jobs = jobs
        self._full_power = self.cfg.power_terms == "full"
        m = self.n_jobs = int(jobs.n_jobs)
        n = self.n_servers
        self.arrival_s = arrival
        self.size_instr = np.asarray(jobs.size_instr, dtype=float)
        self.n_threads = np.asarray(jobs.threads, dtype=np.intp)
        if np.any(self.size_instr <= 0) or np.any(self.n_threads < 1):
            raise ValueError("jobs: size_instr must be > 0 and threads >= 1")
        self.cpi0 = np.asarray(jobs.cpi0, dtype=float)
        self.beta = np.asarray(jobs.beta, dtype=float)
        self.t_true = np.asarray(jobs.tolerated, dtype=float)
        self.c_true = np.asarray(jobs.caused, dtype=float)
        self.mem_term_s = self.beta / (1.0 - self.beta) * self.cpi0 / (F_REF_MHZ * 1e6)  # m_a (§1.9)
        types, type_of, _ = _server_types(self.cores)
        self.ipc_job_server = np.ascontiguousarray(jobs.catalog.ipc(types)[jobs.app][:, type_of])
        self._ipc_flat = self.ipc_job_server.reshape(-1)  # a view: [job, server] = [job * N + server]
        self.act = 1.0 - 0.5 * self.beta
        # predictions (what schedulers see)
        if predictions is None:
            self._oracle(np.random.default_rng(s_oracle))
        else:
            if sc_columns is None:
                raise ValueError("sc_columns must be given with predictions: the (N, L) SC column per server level")
            cols = np.asarray(sc_columns, dtype=np.intp)
            if cols.shape != (n, self.n_levels):
                raise ValueError(f"sc_columns must have shape {(n, self.n_levels)}, got {cols.shape}")
            self._pred_cols = cols
            self.pred_mips = np.asarray(predictions.mips, dtype=float)
            self.pred_energy = np.asarray(predictions.energy_j, dtype=float)
            self.pred_runtime = np.asarray(predictions.runtime_s, dtype=float)
            self.pred_t = np.asarray(predictions.tolerated, dtype=float)
            self.pred_c = np.asarray(predictions.caused, dtype=float)
            self.pred_size = np.asarray(predictions.size_instr, dtype=float)
        # threads
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
        # jobs
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
        # cores
        k = self.n_cores
        self.core_level = np.full(k, self.n_levels - 1, dtype=np.intp)
        self._core_loss = np.zeros(k)  # 1 - f / f_H at the core's level (eq. 19 per busy second)
        self._core_f = self.f_high_hz.copy()  # the core's frequency (Hz) at its level
        self.core_threads = np.zeros(k, dtype=np.intp)
        self.core_delay_s = np.zeros(k)
        self.core_elapsed_s = np.zeros(k)
        self.core_busy_s = np.zeros(k)
        self.core_period_instr = np.zeros(k)  # instructions retired in the current control period
        self.core_period_busy_s = np.zeros(k)
        self.period_instr = np.zeros(k)  # the last control period's measurements (swapped in at each tick)
        self.period_busy_s = np.zeros(k)
        # servers
        self.server_t = np.zeros(n)  # last integration time
        self._sync_t: float | None = 0.0  # the time every server was integrated to at once (None: they differ)
        self._rem_stash: tuple | None = None  # (tick context, time, its threads' remaining instructions then)
        self.server_energy_j = np.zeros(n)
        self.power_w = np.zeros(n)
        self.server_rate_sum = np.zeros(n)  # instr/s of the server's threads (load drains at this rate)
        self.server_load_instr = np.zeros(n)  # remaining instructions of assigned unfinished jobs, at server_t
        self.server_gen = np.zeros(n, dtype=np.int64)
        self.c_server = np.zeros((n, N_SOI))  # predicted, over assigned unfinished jobs (A5)
        self.t_server = np.full((n, N_SOI), EMPTY_SERVER_TOLERATED)
        self.jobs_on = np.zeros(n, dtype=np.intp)
        self.runnable_threads = np.zeros(n, dtype=np.intp)
        self._server_jobs: list[list[int]] = [[] for _ in range(n)]
        self._server_threads: list[np.ndarray] = [np.zeros(0, dtype=np.intp) for _ in range(n)]
        self._alive_cache: np.ndarray | None = None
        self._busy_cache: np.ndarray | None = None
        self._ctx: _TickContext | None = None
        # the tick context whose rates/power _refresh_busy computed last, with no level or mapping change since
        # (then a tick that keeps every level recomputes the same numbers: skipped); None = recompute
        self._rates_ctx: _TickContext | None = None
        self._core_act = np.zeros(self.n_cores)  # mean activity of the threads on each core (power)
        self._core_beta = np.zeros(self.n_cores)  # mean beta (DRAM traffic)
        for s in range(n):
            self._power(np.array([s]))
        # clock, events, scheduler
        self.now = 0.0
        self._heap: list[tuple] = []
        self._seq = 0
        for j in range(m):
            self._push(arrival[j], EV_ARRIVAL, j)
        self._admission: deque[int] = deque()
        self._ready: deque[int] = deque()
        self._profiled = np.zeros(m, dtype=bool)
        self._sched_busy = False
        self._sched_wake_pending = False
        self._kick_pending = False
        self.pending_job = -1
        self.decision_kind = ""
        self.jobs_arrived = 0
        self.jobs_placed = 0
        self.jobs_done = 0
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
        self._periodic = bool(self.node_policy.periodic)
        self.node_policy.reset(self, np.random.default_rng(s_policy))

    def _oracle(self, rng: np.random.Generator) -> None:
        """Built-in predictor: ground truth x N(1, sigma) per job and entry (qin.md §1.9 profiling noise), with
        one column per (server type, level) as the CF matrices have (qin.md §1.3), so it stays small for 1,000
        servers."""
        truth = truth_by_type(self.cores, self.jobs, self.cfg.power_terms)
        m, _, lv = truth["mips"].shape
        sigma = self.cfg.oracle_noise
        self._pred_cols = truth["type_of"][:, None] * lv + np.arange(lv)[None, :]

        def noisy(x: np.ndarray) -> np.ndarray:
            return x * np.maximum(0.05, rng.normal(1.0, sigma, x.shape)) if sigma > 0 else x.copy()

        self.pred_t = np.clip(noisy(self.t_true), 1.0, 100.0)
        self.pred_c = np.clip(noisy(self.c_true), 0.0, 100.0)
        self.pred_size = noisy(self.size_instr)
        mips = noisy(truth["mips"].reshape(m, -1))
        self.pred_mips = mips
        self.pred_runtime = self.pred_size[:, None] / (mips * 1e6)
        self.pred_energy = noisy(truth["energy_j"].reshape(m, -1) / truth["runtime_s"].reshape(m, -1)) \
            * self.pred_runtime

    # --- what schedulers see ---------------------------------------------------------------------------------
    def prediction(self, job: int) -> Prediction:
        """The predicted scores of ``job`` per (server, level) (paper §4; what Qin, the baselines and agents use)."""
        cols = self._pred_cols
        return Prediction(self.pred_t[job], self.pred_c[job], self.pred_mips[job][cols],
                          self.pred_energy[job][cols], self.pred_runtime[job][cols], float(self.pred_size[job]))

    @property
    def load_instr(self) -> np.ndarray:
        """L_i(t) (paper §5.2): remaining instructions of each server's assigned unfinished jobs, now."""
        return np.maximum(self.server_load_instr - self.server_rate_sum * (self.now - self.server_t), 0.0)

    @property
    def energy_j(self) -> float:
        """Total energy (J) of every server from t = 0 to now (servers are on all the time)."""
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

    def view(self) -> QinSim:
        """The simulator itself is the read-only view (its documented arrays and properties; the scheduling
        functions take them directly)."""
        return self

    # --- cluster decisions -----------------------------------------------------------------------------------
    def apply(self, server: int, vf_level: int | None = None) -> None:
        """Place the pending job on ``server`` with the initial V/F level hint ``vf_level`` (None: the top)."""
        j = self.pending_job
        if j < 0 or self.decision_kind != "place":
            raise ValueError("apply: no job is pending placement (call advance() first)")
        if isinstance(server, bool) or not (0 <= int(server) < self.n_servers):
            raise ValueError(f"server must be an integer in [0, {self.n_servers}), got {server!r}")
        level = self.n_levels - 1 if vf_level is None else int(vf_level)
        if not 0 <= level < self.n_levels:
            raise ValueError(f"vf_level must be None or an integer in [0, {self.n_levels}), got {vf_level!r}")
        self._record_imbalance()
        self.pending_job = -1
        self.decision_kind = ""
        self._place(j, int(server), level)
        self._sched_busy = False
        self._kick_scheduler()

    def apply_node(self, thread_core: np.ndarray | None, core_level: np.ndarray | None) -> None:
        """The external node decision of a control period: ``thread_core`` (global core per alive thread id in
        :meth:`alive_threads` order, ``-1`` = keep) and ``core_level`` (per core of the cluster, ``-1`` = keep)."""
        if self.decision_kind != "node":
            raise ValueError("apply_node: no node decision is pending (node_policy='external' ticks only)")
        self.decision_kind = ""
        servers = self._busy_servers()
        self._sync_levels()  # core_level may have been restored by hand since the last decision
        self.set_node_decision(self.alive_threads(), thread_core, core_level)
        self._arm_tick()
        self._refresh(servers, mapping=True)

    def _sync_levels(self) -> None:
        """Re-derive the per-core caches of ``core_level`` (frequency and eq. 19's loss per busy second)."""
        flat = _add(self._flat_base, self.core_level)
        self._core_f = self._freq_flat.take(flat)
        self._core_loss = self._loss_flat.take(flat)  # 1 - core_f / f_H, tabulated
        self._rates_ctx = None

    def node_snapshot(self) -> tuple:
        """The node-level state a node policy changes through :meth:`set_node_decision` (to try a policy's
        decision and roll it back with :meth:`restore_node`; the policy's own state, e.g. its Kalman filters,
        is not included)."""
        return self.thread_core.copy(), self.core_level.copy(), self.core_threads.copy(), self.migrations

    def restore_node(self, snapshot: tuple) -> None:
        """Undo node decisions since :meth:`node_snapshot` (before any time passes)."""
        self.thread_core[:], self.core_level[:], self.core_threads[:] = snapshot[0], snapshot[1], snapshot[2]
        self.migrations = snapshot[3]
        self._ctx = None
        self._sync_levels()

    def set_node_decision(self, threads: np.ndarray, thread_core: np.ndarray | None,
                          core_level: np.ndarray | None, levels_only: bool = False) -> np.ndarray:
        """Apply a node decision (node policies call this): move ``threads`` to ``thread_core`` (-1 = keep; a
        core of another server is a ValueError) and set ``core_level`` (-1 = keep). Returns the servers
        whose mapping changed (their rates must be refreshed; not computed with ``levels_only``)."""
        changed: set[int] = set()
        if thread_core is not None:
            target = np.asarray(thread_core, dtype=np.intp)
            if target.shape != threads.shape:
                raise ValueError(f"thread_core must have one entry per alive thread ({threads.shape[0]}), "
                                 f"got shape {target.shape}")
            move = (target >= 0) & (target != self.thread_core[threads])
            if move.any():
                th, dest = threads[move], target[move]
                if np.any(dest >= self.n_cores) or np.any(self.server_of_core[dest] != self.thread_server[th]):
                    raise ValueError("thread_core: a thread may only move to a core of its own server")
                np.subtract.at(self.core_threads, self.thread_core[th], 1)
                np.add.at(self.core_threads, dest, 1)
                self.thread_core[th] = dest
                self._ctx = None
                self.migrations += int(th.size)
                changed.update(set(self.thread_server[th].tolist()))
        if core_level is not None:
            lv = np.asarray(core_level, dtype=np.intp)
            if lv.shape != (self.n_cores,) or np.any(lv >= self.n_levels):
                raise ValueError(f"core_level must have shape ({self.n_cores},) with values < {self.n_levels} "
                                 f"(-1 = keep), got {core_level!r}")
            upd = (lv >= 0) & (lv != self.core_level)
            if upd.any():
                self.core_level[upd] = lv[upd]
                if not levels_only:
                    changed.update(set(self.server_of_core[upd].tolist()))
            self._sync_levels()
        return np.array(sorted(changed), dtype=np.intp)

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
            elif kind == EV_TICK:
                self._tick_armed = False
                if self._tick():
                    return True
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
        if self._sched_busy or self.pending_job >= 0:
            return
        cfg = self.cfg
        if cfg.admission == "fifo":
            if self._admission:
                j = self._admission.popleft()
                lat = cfg.decision_latency_s + (0.0 if self._profiled[j] else cfg.profile_latency_s)
                self._profiled[j] = True
                self._busy_for(lat, j)
            return
        if self._ready:
            self._busy_for(cfg.decision_latency_s, self._ready.popleft())
            return
        if not self._admission:
            return
        more_coming = self.jobs_arrived < self.n_jobs
        oldest = self.arrival_s[self._admission[0]]
        if more_coming and len(self._admission) < cfg.dac_queue_len and self.now < oldest + cfg.dac_wait_s:
            if not self._sched_wake_pending:
                self._sched_wake_pending = True
                self._push(oldest + cfg.dac_wait_s, EV_SCHED, SCHED_WAKE)
            return
        batch = [self._admission.popleft() for _ in range(min(cfg.dac_queue_len, len(self._admission)))]
        batch_arr = np.array(batch, dtype=np.intp)
        profile = cfg.profile_latency_s * float(np.count_nonzero(~self._profiled[batch_arr]))
        self._profiled[batch_arr] = True
        keys = sch.dac_keys(cfg.admission[4:], self.pred_mips[batch_arr], self.pred_energy[batch_arr],
                            self.pred_c[batch_arr])
        order, cost = sch.dac_double_and_rank(keys, cfg.sigma_dac_s)
        ranked = batch_arr[order]
        rest = np.setdiff1d(batch_arr, ranked, assume_unique=True)
        rest = batch_arr[np.isin(batch_arr, rest)]  # keep queue order for the unranked tail
        self._admission.extendleft(reversed(rest.tolist()))
        self._ready.extend(ranked.tolist())
        self._busy_for(profile + cost, SCHED_IDLE)

    def _busy_for(self, latency_s: float, job: int) -> None:
        self._sched_busy = True
        self.dispatch_overhead_s += latency_s
        self._push(self.now + latency_s, EV_SCHED, job)

    # --- placement and completions ---------------------------------------------------------------------------
    def _place(self, j: int, s: int, level: int) -> None:
        self._integrate(np.array([s]), self.now)
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
        if cores.shape != threads.shape or np.any(cores < lo) or np.any(cores >= hi):
            raise ValueError(f"node policy {self.node_policy.name!r} placed threads outside server {s}")
        self.thread_core[threads] = cores
        np.add.at(self.core_threads, cores, 1)
        self._server_jobs[s].append(j)
        self._server_threads[s] = np.concatenate([self._server_threads[s], threads])
        self._alive_cache = self._busy_cache = self._ctx = None
        self.jobs_on[s] += 1
        self.runnable_threads[s] += threads.size
        self.c_server[s] += self.pred_c[j]
        np.minimum(self.t_server[s], self.pred_t[j], out=self.t_server[s])
        self.server_load_instr[s] += self.size_instr[j]
        self.jobs_placed += 1
        self.node_policy.on_change(self, s)
        self._refresh(np.array([s]), mapping=True)
        self._arm_tick()

    def _completions(self, s: int) -> None:
        self._integrate(np.array([s]), self.now)
        th = self._server_threads[s]
        fin = th[self.thread_rem[th] <= np.maximum(EPS_INSTR, self.thread_rate[th] * 1e-9)]
        if fin.size == 0:  # round-off: re-arm
            self._refresh(np.array([s]), mapping=False)
            return
        self.thread_rem[fin] = 0.0
        self.thread_alive[fin] = False
        np.subtract.at(self.core_threads, self.thread_core[fin], 1)
        self._server_threads[s] = th[self.thread_alive[th]]
        self._alive_cache = self._busy_cache = self._ctx = None
        self.runnable_threads[s] -= fin.size
        jobs = self.thread_job[fin]
        np.subtract.at(self.job_alive_threads, jobs, 1)
        for j in np.unique(jobs[self.job_alive_threads[jobs] == 0]).tolist():
            self.finish_s[j] = self.now
            self.jobs_done += 1
            self._flow_done_s += self.now - self.arrival_s[j]
            self._server_jobs[s].remove(j)
            self.jobs_on[s] -= 1
            self.c_server[s] -= self.pred_c[j]
            rest = self._server_jobs[s]
            if rest:
                self.t_server[s] = self.pred_t[rest].min(axis=0)
            else:
                self.c_server[s] = 0.0  # exact zero (no round-off residue)
                self.t_server[s] = EMPTY_SERVER_TOLERATED
        self.node_policy.on_change(self, s)
        self._refresh(np.array([s]), mapping=True)
        if self.done:
            self._finish()

    def _finish(self) -> None:
        """All jobs are complete: integrate every server to now (the episode's energy ends here)."""
        self._integrate(np.arange(self.n_servers), self.now)
        self._heap.clear()

    # --- state evolution -------------------------------------------------------------------------------------
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
            np.add.at(self.job_delay_s, jobs, cpu * self._core_loss[tc])
            if self._periodic:
                np.add.at(self.core_period_instr, tc, work * self.thread_phase[th])
        busy_dt = (self.core_threads[lo:hi] > 0) * dt
        self.core_busy_s[lo:hi] += busy_dt
        self.core_period_busy_s[lo:hi] += busy_dt
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
        if th.size:
            tc = self.thread_core[th]
            if mapping:
                # per-thread constants of the mapping: time per instruction = cycles / f + memory time (§1.9),
                # the CPU share and the job's slowdown; a V/F change (a tick) only changes f
                share = 1.0 / self.core_threads[tc]
                jobs = self.thread_job[th]
                srv = self.thread_server[th]
                self._slowdowns(servers, th, share)
                ipc = self._ipc_flat.take(jobs * self.n_servers + srv)  # [jobs, srv], a 1-D gather
                self._thr_cycles[th] = self.cpi0[jobs] / (ipc * self.cores.ipc_scale[tc])
                self._thr_mem_s[th] = self.mem_term_s[jobs] * self.memlat[srv]
                self._thr_weight[th] = share / self.job_slowdown[jobs]
            rate = self._thr_weight[th] / (self._thr_cycles[th] / self._core_f[tc] + self._thr_mem_s[th])
            self.thread_rate[th] = rate
            if servers.size == 1:
                self.server_rate_sum[servers] = rate.sum()
            else:
                self.server_rate_sum[servers] = np.bincount(self.thread_server[th], rate,
                                                            minlength=self.n_servers)[servers]
        else:
            self.server_rate_sum[servers] = 0.0
        self._power(servers, mapping)
        if mapping:
            self._ctx = None  # the per-thread constants and core activities of the tick context changed
        self._arm_completions(servers, th)

    def _slowdowns(self, servers: np.ndarray, th: np.ndarray, share: np.ndarray) -> None:
        """§1.9 interference: each job's slowdown from the other jobs' caused pressure on its server, weighted
        by their activity (the CPU share their threads get, over their thread count)."""
        per_job = np.bincount(self.thread_job[th], weights=share, minlength=self.n_jobs)
        js = np.flatnonzero(per_job)
        active = per_job[js] / self.n_threads[js]
        caused = self.c_true.take(js, axis=0) * active[:, None]  # take: a fast row gather
        if servers.size == 1:
            pressure = caused.sum(axis=0) - caused
        else:
            srv = self.job_server[js]
            total = np.zeros((self.n_servers, N_SOI))
            np.add.at(total, srv, caused)
            pressure = total[srv] - caused
        self.job_slowdown[js] = interference_slowdown(pressure, self.t_true.take(js, axis=0))

    def _power(self, servers: np.ndarray, mapping: bool = True) -> None:
        """Server power (qin.md §1.2, §1.9; the CoreTable model): per core busy (dynamic x activity + leakage +
        DRAM traffic) or idle, plus uncore and DRAM idle; ``dynamic_only`` keeps eq. 12's term."""
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
        """:meth:`_power` for one server, on core slices."""
        lo, hi = self.first_core[s], self.first_core[s + 1]
        n_on = self.core_threads[lo:hi]
        busy = n_on > 0
        if mapping:
            th = self._server_threads[s]
            if th.size:
                local = self.thread_core[th] - lo
                jobs = self.thread_job[th]
                denom = np.maximum(n_on, 1)
                self._core_act[lo:hi] = np.bincount(local, self.act[jobs], minlength=hi - lo) / denom
                self._core_beta[lo:hi] = np.bincount(local, self.beta[jobs], minlength=hi - lo) / denom
            else:
                self._core_act[lo:hi] = 0.0
                self._core_beta[lo:hi] = 0.0
        flat = self._flat_base[lo:hi] + self.core_level[lo:hi]  # (core, level) in the flat tables
        per_core = busy * self._dyn_flat[flat] * self._core_act[lo:hi]
        if self._full_power:
            traffic = self._core_beta[lo:hi] * self._traffic_w[lo:hi]
            per_core = per_core + busy * (self._leak_flat[flat] + traffic) + (~busy) * self.cores.idle_w[lo:hi]
            self.power_w[s] = per_core.sum() + self.cores.uncore_w[s] + self.cores.dram_idle_w[s]
        else:
            self.power_w[s] = per_core.sum()

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

    # --- node-level control periods --------------------------------------------------------------------------
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
        if self.node_policy.name == "external":
            self.decision_kind = "node"
            return True
        moved = self.node_policy.control(self, servers)
        self._arm_tick()
        if moved or servers.size == 1:
            self._refresh(servers, mapping=bool(moved))
        else:
            self._refresh_busy()
        return False

    def set_server_core_levels(self, server: int, levels: np.ndarray) -> None:
        """Set the levels of ``server``'s cores to ``levels`` (local, ``-1`` = keep; valid by construction): the
        fast form of ``set_node_decision(threads, None, levels)`` for one server (no mapping change)."""
        lo, hi = self.first_core[server], self.first_core[server + 1]
        seg = self.core_level[lo:hi]
        keep = levels < 0
        if keep.all() or np.array_equal(np.where(keep, seg, levels), seg):
            return
        np.copyto(seg, levels, where=~keep)
        self._sync_levels()

    def _tick_context(self) -> _TickContext:
        ctx = self._ctx
        if ctx is None:
            ctx = self._ctx = _TickContext(self)
        return ctx

    def _integrate_busy(self, t: float) -> None:
        """:meth:`_integrate` of every busy server (more than one) on the cached gathers (same arithmetic)."""
        ctx = self._tick_context()
        servers = ctx.servers
        if ctx.all_servers and self._sync_t is not None:
            # every server was last integrated at _sync_t (the previous tick, no event since): the same
            # subtraction as t - server_t, once
            dt_first = t - self._sync_t
            if dt_first <= 0:
                return
            dt_all = dt_s = None
            positive = uniform = True
        else:
            dt_all = t - self.server_t
            dt_s = dt_all if ctx.all_servers else dt_all[servers]
            # a handful of servers: Python's min/max over a list beat the ndarray reductions' call overhead
            dt_list = dt_s.tolist()
            if max(dt_list) <= 0:
                return
            positive = min(dt_list) > 0
            # the usual tick brings every busy server from the same time: one Python float multiplies like the
            # gathered vector of equal values (the same products) without the two gathers
            dt_first = dt_list[0]
            uniform = dt_list.count(dt_first) == len(dt_list)
        th, tc = ctx.th, ctx.tc
        dt_core = dt_first if uniform else dt_all[ctx.soc]
        if th.size:
            dt_th = dt_first if uniform else dt_all[ctx.srv]
            cached = self._rates_ctx is ctx  # the rates and loss rates of these levels are the context's
            work = _mul(ctx.rate if cached else self.thread_rate.take(th), dt_th)
            rem = self.thread_rem
            new_rem = _sub(rem.take(th), work)
            rem[th] = new_rem
            self._rem_stash = (ctx, t, new_rem)  # the DVFS step of this period sums it per core
            # CPU time and eq. 19 delay per job, one bincount over (job, job + M)
            n = th.size
            weights = ctx.job_weights
            cpu = _mul(ctx.share, dt_th, weights[:n])
            _mul(cpu, ctx.loss if cached else self._core_loss[tc], weights[n:])
            acc = self._job_acc
            _add(acc, np.bincount(ctx.jobs2, weights, 2 * self.n_jobs), acc)
            if self._periodic:
                _mul(work, self.thread_phase.take(th), work)  # instructions retired (work is not needed after)
                instr = self.core_period_instr
                _add(instr, np.bincount(tc, work, self.n_cores), instr)
        if ctx.all_cores:
            busy_dt = _mul(ctx.busy_core, dt_core)
            _add(self.core_busy_s, busy_dt, self.core_busy_s)
            _add(self.core_period_busy_s, busy_dt, self.core_period_busy_s)
            _add(self.core_delay_s, _mul(busy_dt, self._core_loss), self.core_delay_s)
            _add(self.core_elapsed_s, dt_core, self.core_elapsed_s)
        elif uniform:  # busy and loss accumulators over every core (+0 outside these servers), elapsed time not
            busy_dt = _mul(ctx.busy_all, dt_core)
            _add(self.core_busy_s, busy_dt, self.core_busy_s)
            _add(self.core_period_busy_s, busy_dt, self.core_period_busy_s)
            _add(self.core_delay_s, _mul(busy_dt, self._core_loss), self.core_delay_s)
            self.core_elapsed_s[ctx.cores] += dt_core
        else:
            cores = ctx.cores
            busy_dt = ctx.busy_core * dt_core
            self.core_busy_s[cores] += busy_dt
            self.core_period_busy_s[cores] += busy_dt
            self.core_delay_s[cores] += busy_dt * self._core_loss[cores]
            self.core_elapsed_s[cores] += dt_core
        if ctx.all_servers and positive:  # the usual tick: every server is busy and moves on
            dt_srv = dt_first if uniform else dt_s
            _add(self.server_energy_j, _mul(self.power_w, dt_srv), self.server_energy_j)
            load = self.server_load_instr
            np.maximum(_sub(load, _mul(self.server_rate_sum, dt_srv)), 0.0, out=load)
            self.server_t.fill(t)
            self._sync_t = t
            return
        if positive:
            srv = servers
        else:
            pos = dt_s > 0
            srv, dt_s = servers[pos], dt_s[pos]
        self.server_energy_j[srv] += self.power_w[srv] * dt_s
        self.server_load_instr[srv] = np.maximum(self.server_load_instr[srv] - self.server_rate_sum[srv] * dt_s, 0.0)
        self.server_t[srv] = t
        self._sync_t = None

    def _refresh_busy(self) -> None:
        """:meth:`_refresh` with ``mapping=False`` of every busy server (more than one) after a V/F change, on
        the cached gathers (same arithmetic): rates, power, next completions."""
        ctx = self._tick_context()
        servers, th = ctx.servers, ctx.th
        if self._rates_ctx is ctx:
            # no level or mapping change since this context's last rates/power: the same inputs give the same
            # numbers, so only the generation and the completions below are renewed
            if ctx.all_servers:
                _add(self.server_gen, 1, self.server_gen)
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

    def _refresh_busy_rates(self, ctx: _TickContext) -> None:
        """The rates and power part of :meth:`_refresh_busy` (recorded in ``_rates_ctx``)."""
        servers, th, tc = ctx.servers, ctx.th, ctx.tc
        if ctx.rate_table is None:
            ctx.build_tables(self)
        if th.size:
            # thr_weight / (thr_cycles / f + thr_mem), tabulated per (thread, level)
            rate = ctx.rate_table.take(_add(ctx.rate_index, self.core_level.take(tc)))
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
        ctx.power_table.take(_add(ctx.row_base, self.core_level if ctx.all_cores else self.core_level[ctx.cores]),
                             out=power_in[: ctx.row_base.size])
        total = np.bincount(ctx.power_bins, power_in, self.n_servers)  # (+ uncore + DRAM idle: power_in's tail)
        if not ctx.all_servers:
            total = total[servers]
        if ctx.all_servers:
            np.copyto(self.power_w, total)
            _add(self.server_gen, 1, self.server_gen)
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
            _mul(noise, rho, noise)
            _add(noise, innovations[row], noise)
            _add(noise, one, buf)
            _mul(self._phase_level, buf, buf)
            np.maximum(buf, floor, out=buf)
            _div(one, buf, self.thread_phase)
            return
        # row views, then 1-D gathers (``take``: a mixed scalar/array index is numpy's slow path)
        switch = th[switches[row].take(th)]
        self._phase_level[switch] = levels[row].take(switch)
        noise = cfg.ar_rho * self._phase_noise.take(th) + innovations[row].take(th)
        self._phase_noise[th] = noise
        # instructions per unit of nominal work: the inverse of the CPI multiplier
        self.thread_phase[th] = 1.0 / np.maximum(self._phase_level.take(th) * (1.0 + noise), 0.1)

    # --- diagnostics and metrics -----------------------------------------------------------------------------
    def _record_imbalance(self) -> None:
        load = self.load_instr
        im_c = float(load.max() - load.mean())  # eq. 30
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
