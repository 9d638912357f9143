"""Discrete-event simulator of a DL-training GPU cluster under a power budget (Gu et al. §5-§6;
``docs/families/powerflow.md`` §5-§7).

No Gymnasium here: :class:`PowerFlowSim` is a core :class:`~joulegym.core.simulator.Simulator`:
``reset(rng, jobs)`` (a trace of :class:`~joulegym.workloads.dl_jobs.DLJobs`; ``None``: the same trace again),
``view()`` (what a scheduler sees at a decision point, read-only), ``apply(decision)`` (a
:class:`~joulegym.envs.powerflow.interface.Decision`) and ``advance()`` (to the next decision point), ``metrics()``,
``done`` and ``truncated``. :func:`joulegym.baselines.powerflow_simulate.simulate` runs a whole trace through the
env (:class:`~joulegym.envs.powerflow.env.PowerFlowEnv`), so a standalone run and an env episode are one code path.

Engine: SimPy. The calendar holds every arrival and pre-run end, each running job's
next rate change (its completion or the end of its overhead/profiling window, re-armed whenever the job is
reconfigured; superseded timeouts are skipped by a per-job generation number, since SimPy cannot cancel
one), the policy's wake-up and an idle tick. Each calendar event integrates up to its time and processes
*everything* due then (state-based, 1e-9 s tolerance), so simultaneous events form one decision point;
``advance()`` steps the calendar until a decision point, handing control back to the caller (the Gym step)
exactly there. What the calendar costs: ``benchmarks/bench_powerflow.py --engine`` (docs §12 has the figures).

Events (docs §7): ``ARRIVAL`` (pre-run starts), ``PRERUN_DONE`` (the schedulable "submission" event),
``COMPLETION``, ``PROFILING_DONE`` (the "job scaling" event), ``OVERHEAD_DONE`` (rate change only) and
``TICK`` (a policy wake-up, e.g. a Tiresias queue threshold, or an idle tick when nothing can happen).
Decision points: submission, completion, profiling done, tick.

Exact integration: between events each job has a constant rate (1/T_iter; 0 during reconfiguration
overhead; the frequency-averaged rate during online profiling) and constant power, so progress,
GPU-seconds and energy integrate exactly; completions are recomputed after every change.

Placement (paper §5.3, docs §2.2): packed jobs get buddy blocks with migration (:func:`~.cluster.buddy_place`:
sticky best-fit, then a node is emptied by migration whenever that powers one node fewer); pinned jobs (profiling,
restarting) never move, and a job that finds no aligned block around them is halved (``placement_shrinks``,
flagged as a repair). Schedulers see a pinned job's *planned* power (its predicted draw once running, the
profiling mean while it profiles), not its idle draw while it restarts.
The non-elastic baselines place jobs of any size without migration: ``"first-fit"`` (Tiresias:
consolidated, else spread, :func:`~.cluster.first_fit_place`), ``"affinity"`` (nodes hosting jobs of the same
size first, else first-fit, :func:`~.cluster.affinity_place`) or ``"affinity-migrate"`` (Gandiva: the same, plus
migration of spread jobs to one node, :func:`~.cluster.affinity_migrate_place`).

Energy scope (paper §2.1, docs §5): GPU energy only = busy (training) + profiling (online profiling
windows) + overhead (GPUs held during reconfiguration, at ``P_idle``) + idle (free GPUs on powered
nodes at ``P_idle``) + pre-run (offline, 240 s split evenly over the frequency grid on one GPU).

Life-cycle (paper §5.1-§5.2, docs §6): with ``profiling=True`` (PowerFlow, not oracle) a job is pre-run for
``prerun_s`` before it becomes schedulable, and each new GPU count is profiled online for
``profile_s`` (pinned: n, GPUs and the frequency cycle are fixed). ``profile_scope="model"`` (default,
our reading): a (model, BS, n) profiled once — by the pre-run or any job's window — is not
profiled again, since every job of that (model, BS) has the same profile and PowerFlow pools fits per DNN
(docs §4); this makes profiling the transient cost of "the first few hours" that Fig. 8b describes.
``"job"`` is the literal per-job rule, under which elastic re-allocation at every event keeps many jobs in
profiling on the Alibaba-scale trace (measured at eta 0.6: 1.24 windows per job, 19 % of the energy, JCT
+7 %, against 0.09 windows per job and 2.5 % under ``"model"``).
``pin_overhead=True``: a job in its reconfiguration overhead is pinned too (a checkpoint-restart in
progress cannot be re-sized; without it, from-scratch re-allocation every ~20 s keeps resized jobs in
overhead forever). The predictor is either the per-DNN
pooled fit of the noisy profile (``predictor="fitted"``) or the true profile (``"oracle"``, Fig. 9);
baselines get the true profile and no pre-run, as the paper's simulator gives only PowerFlow the pre-run
overhead (§6.1). Every scheduler, PowerFlow included, knows each job's remaining iterations (the user's
termination condition, §5.2), so AFS-L's remaining-time knowledge is no extra information.

Ground truth: the §6.2 model (V100) or the ElasticFlow-fitted A100 model, times a deterministic
per-configuration lognormal factor (``truth_noise``, docs §4 "noisy ground truth").
"""

from __future__ import annotations

import heapq
import itertools
import math
import warnings
from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np
import simpy

from joulegym.core.simulator import Simulator
from joulegym.envs.powerflow.cluster import (
    ClusterSpec,
    affinity_migrate_place,
    buddy_place,
    is_pow2,
    placement_shape,
)
from joulegym.envs.powerflow.interface import (
    NON_MIGRATING,
    Decision,
    SchedView,
    SimConfig,
    SimResult,
    _JobTables,
    overhead_s,
)
from joulegym.envs.powerflow.profiles import Profiles, catalog_p_max
from joulegym.workloads.dl_jobs import DLJobs

EPS_T = 1e-9
FUTURE, PRERUN, READY, DONE = 0, 1, 2, 3
EV_ARRIVAL, EV_COMPLETION, EV_PROFILING = 0, 1, 2  # last decision-event type (observation one-hot)
# Plain Python or numpy over the running jobs: a numpy call has a fixed cost whatever its size, a Python step a
# small cost per job, so the per-event bookkeeping loops in Python over fewer than SMALL_RUN running jobs and in
# numpy beyond (PowerFlow-tiny runs 1-8 jobs; the Philly traces hundreds; docs §12, "Cost of a step"). Both paths
# give the same bits: the elementwise arithmetic is the same IEEE operation, and a float sum goes through
# :func:`_sum_at`, which adds left to right only where numpy does (fewer than 8 values).
SMALL_RUN = 8


def _sum_at(values: np.ndarray, idx: np.ndarray) -> float:
    """``float(values[idx].sum())`` bit for bit: numpy adds fewer than 8 values left to right starting from -0.0
    (its pairwise summation unrolls 8 ways from 8 values on), so small sums loop in Python."""
    if idx.size < 8:
        total = -0.0
        for j in idx.tolist():
            total += values.item(j)
        return total
    return float(values[idx].sum())


class PowerFlowSim(Simulator):
    """The event-driven cluster simulator (see module docstring).

    :param jobs: the first trace (``None``: the first :meth:`reset` brings one).
    :param cluster: nodes, GPUs per node and device (default :class:`ClusterSpec`).
    :param config: the settings (default :class:`SimConfig`).
    """

    def __init__(self, jobs: DLJobs | None = None, cluster: ClusterSpec | None = None,
                 config: SimConfig | None = None) -> None:
        self.cluster = cluster or ClusterSpec()
        self.cfg = config or SimConfig()
        self.cfg.validate()
        G = self.cluster.num_gpus
        self.jobs: DLJobs | None = None
        self.episode = 0  # resets so far: with the decision index, what names a decision point
        self.G, self.gpn = G, self.cluster.gpus_per_node
        self.prof = Profiles(self.cluster.device, self.gpn, self.cfg.truth_noise, self.cfg.predictor)
        self.hw = self.prof.hw
        self.F = len(self.hw.freqs_mhz)
        self._freqs_mhz = self.hw.freqs_mhz.copy()  # the views share one read-only copy
        self._freqs_mhz.flags.writeable = False
        self.p_max = self.cfg.p_max_w if self.cfg.p_max_w is not None else catalog_p_max(self.cluster.device)
        self.power_limit = self.cfg.eta * G * self.p_max
        nv, k = [], 1
        while k <= min(G, 1 << 30):
            nv.append(k)
            k *= 2
        self.n_values = tuple(nv)
        if jobs is not None:
            self.reset(np.random.default_rng(0), jobs)

    # ------------------------------------------------------------------------------------------ state
    def _check_jobs(self, jobs: Any) -> DLJobs:
        if not isinstance(jobs, DLJobs):
            raise ValueError(f"a PowerFlow episode needs a trace (DLJobs), got {type(jobs).__name__}")
        if len(jobs) == 0:
            raise ValueError("trace is empty: a PowerFlow episode needs at least one job")
        too_big = np.flatnonzero(np.asarray(jobs.n_req) > self.G)
        if too_big.size:
            j = int(too_big[0])
            raise ValueError(f"job {jobs.job_id[j]!r} requests {int(jobs.n_req[j])} GPUs but the cluster has only "
                             f"{self.G} ({self.cluster.nodes} nodes x {self.cluster.gpus_per_node})")
        return jobs

    def reset(self, rng: np.random.Generator, instance: DLJobs | None = None) -> None:
        """Start an episode on the trace ``instance`` (``None``: the current trace again). The simulator draws
        nothing: the trace and the ground-truth noise (a function of the configuration) fix the episode, so
        ``rng`` is not used."""
        if instance is None and self.jobs is None:
            raise ValueError("PowerFlowSim.reset(rng, jobs): the first reset needs a trace (DLJobs)")
        self.jobs = self._check_jobs(instance) if instance is not None else self.jobs
        self.episode += 1
        J = len(self.jobs)
        self.now = 0.0
        self.status = np.full(J, FUTURE, dtype=np.int8)
        self.n = np.zeros(J, dtype=np.int64)
        self.fl = np.full(J, self.F - 1, dtype=np.int64)
        self.done_it = np.zeros(J)
        self.rate = np.zeros(J)
        self.power = np.zeros(J)
        self.phase = np.zeros(J, dtype=np.int8)  # 0 run, 1 overhead, 2 profiling (after its overhead)
        self.overhead_until = np.zeros(J)
        self.profile_until = np.zeros(J)
        self.finish = np.full(J, np.nan)
        self.gpu_s = np.zeros(J)
        self.attained = np.zeros(J)
        self.energy_job = np.zeros(J)
        self.gpus: list[tuple[int, ...]] = [()] * J
        self.shape: list[tuple[int, bool]] = [(0, False)] * J
        self.profiled: list[set[int]] = [set() for _ in range(J)]
        self.profiled_cfg: set[tuple[str, int, int]] = set()
        self.migrations = 0
        self.placement_shrinks = 0
        self.profilings = 0
        self.energy = {"busy": 0.0, "profiling": 0.0, "overhead": 0.0, "idle": 0.0, "prerun": 0.0}
        self.energy_integral = 0.0  # integral of the cluster power (cross-check of the breakdown)
        self.gpu_s_idle = 0.0
        self.gpu_s_off = 0.0
        self.jct_integral = 0.0  # integral of the number of submitted, unfinished jobs
        self.violation_ws = 0.0
        self.max_job_power = 0.0
        self.running = np.zeros(0, dtype=np.int64)
        self.wakeup = math.inf
        self.last_event = EV_ARRIVAL
        self.done_count = 0
        self.steps = 0
        self._truncated = False
        self.repaired = False
        self._cap_enforced = False  # the last repair held the power budget: checked while time passes
        self.max_completion_residual = 0.0
        prerun = self.cfg.prerun_s if self.cfg.profiling else 0.0
        self._arrive = np.asarray(self.jobs.submit_s, dtype=float)
        self._ready_at = self._arrive + prerun
        # per-job constants as Python values, read once (the decision view and the power model look them up for
        # hundreds of jobs per decision on the Philly traces)
        self._model_of = [str(m) for m in self.jobs.model]
        self._bs_of = np.asarray(self.jobs.batch_size).tolist()
        self._tables_of: list[tuple[np.ndarray, np.ndarray] | None] = [None] * J  # predicted tables per job
        self._zero_levels = [0.0] * self.F
        self._ready: np.ndarray | None = None  # ready_jobs() until a status changes
        self._pinned: np.ndarray | None = None  # pinned_mask() of every job until time passes or a decision applies
        self._ai = 0  # next arrival pointer
        self._ri = 0  # next ready pointer
        self._t_log: list[float] = [0.0]
        self._alloc_log: list[int] = [0]
        self._power_log: list[float] = [0.0]
        self._cluster_power = 0.0
        self._idle_gpus = 0
        self._powered_nodes = 0 if self.cfg.node_shutdown else self.cluster.nodes
        # the SimPy calendar: every arrival and pre-run end now; each running job's next rate change (its
        # completion or the end of its overhead/profiling) whenever that job is reconfigured (``_arm``);
        # superseded timeouts stay queued and are ignored by generation number (SimPy cannot cancel)
        self.env = simpy.Environment()
        self._job_gen = np.zeros(J, dtype=np.int64)
        self._wake_gen = 0
        self._decided = False
        for t in np.unique(np.concatenate([self._arrive, self._ready_at])).tolist():
            self.env.timeout(t).callbacks.append(self._on_time)
        self._refresh_power()

    # ------------------------------------------------------------------------------------------ views
    def ready_jobs(self) -> np.ndarray:
        """The schedulable jobs in job (submit) order (cached until a status changes: read-only)."""
        if self._ready is None:
            self._ready = np.flatnonzero(self.status == READY)
            self._ready.flags.writeable = False  # shared by the view, the slots and apply until a status changes
        return self._ready

    def predicted_tables_of(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Job ``j``'s predicted ``(T, E)`` over ``n_values`` (the shared per-(model, BS) tables, kept per job)."""
        tab = self._tables_of[j]
        if tab is None:
            tab = self._tables_of[j] = self.prof.predicted_tables(self._model_of[j], self._bs_of[j], self.n_values)
        return tab

    def view(self, idx: np.ndarray | None = None) -> SchedView:
        """The scheduler's view of the schedulable jobs, or of the subset ``idx`` of them (ascending job ids): an
        env's slotted jobs, the only ones its action can give GPUs while others overflow the slots."""
        if idx is None:
            idx = self.ready_jobs()
        jobs = self.jobs
        prof = self.prof
        ids = idx.tolist()
        T, E = _JobTables(self, ids, 0), _JobTables(self, ids, 1)
        pinned = self.pinned_mask(idx)
        pinned_power = np.zeros(idx.size)
        pinned_power[pinned] = self.planned_power(idx[pinned])

        def row(i: int, k: int):
            j = int(idx[i])
            return prof.predicted(jobs.model[j], int(jobs.batch_size[j]), int(k))

        def true_row(i: int, k: int):
            j = int(idx[i])
            return prof.true(jobs.model[j], int(jobs.batch_size[j]), int(k))

        def true_tables(i: int):
            j = int(idx[i])
            return prof.true_tables(jobs.model[j], int(jobs.batch_size[j]), self.n_values)

        arrays = (  # fancy indexing copies already: the view owns its arrays (marked read-only below)
            self._arrive[idx], jobs.iterations[idx] - self.done_it[idx], np.asarray(jobs.n_req)[idx],
            np.asarray(jobs.batch_size)[idx], self.n[idx], self.fl[idx], pinned, pinned_power, self.attained[idx])
        for array in arrays:
            array.flags.writeable = False
        submit, remaining, n_req, batch_size, n, fl, pinned, pinned_power, attained = arrays
        if idx.flags.writeable:
            idx = idx.copy()
            idx.flags.writeable = False
        return SchedView(
            now=self.now, jobs=idx, submit=submit, remaining=remaining, n_req=n_req, batch_size=batch_size,
            model=[self._model_of[j] for j in ids], n=n, fl=fl, pinned=pinned, pinned_power=pinned_power,
            attained=attained, T=T, E=E, n_values=self.n_values, freqs_mhz=self._freqs_mhz, num_gpus=self.G,
            gpn=self.gpn, power_limit_w=self.power_limit, p_max_w=self.p_max, row=row, true_row=true_row,
            predictor=self.cfg.predictor, true_tables=true_tables,
        )

    def planned_power(self, idx) -> np.ndarray:
        """Predicted power of placed jobs ``idx`` once their overhead is over (the profiling-window mean while
        they profile): what a pinned job draws over the interval a scheduler plans, not its idle draw while it
        restarts (0 for jobs without GPUs)."""
        idx = np.asarray(idx, dtype=np.int64)
        out = np.zeros(idx.size)
        for i in np.flatnonzero(self.n[idx] > 0).tolist():
            j = idx.item(i)
            n = self.n.item(j)
            if self.profile_until.item(j) > self.now + EPS_T:
                out[i] = self.prof.predicted_profiling_power(self._model_of[j], self._bs_of[j], n)
            else:
                t, e = self.prof.predicted(self._model_of[j], self._bs_of[j], n)
                f = self.fl.item(j)
                out[i] = e.item(f) / t.item(f)
        return out

    def pinned_mask(self, idx: np.ndarray) -> np.ndarray:
        """Jobs whose ``n``/GPUs are fixed now: in online profiling, or restarting (``pin_overhead``). Computed for
        every job once per state (a decision point asks several times: the env's slots, the view, apply)."""
        pinned = self._pinned
        if pinned is None:
            pinned = self.profile_until > self.now + EPS_T
            if self.cfg.pin_overhead:
                pinned |= (self.overhead_until > self.now + EPS_T) & (self.n > 0)
            self._pinned = pinned
        return pinned[idx]

    def needs_profiling(self, j: int, k: int) -> bool:
        """Whether running job ``j`` on ``k`` GPUs starts an online-profiling window (docs §6)."""
        if not self.cfg.profiling or k in self.profiled[j]:
            return False
        if self.cfg.profile_scope == "model":
            return (self._model_of[j], self._bs_of[j], int(k)) not in self.profiled_cfg
        return True

    @property
    def done(self) -> bool:
        """Every job has finished."""
        return self.done_count == len(self.jobs)

    @property
    def truncated(self) -> bool:
        """The simulated time reached ``horizon_s`` with jobs left."""
        return self._truncated

    # ------------------------------------------------------------------------------------------ power
    def _job_power(self, j: int) -> tuple[float, float, int]:
        """(rate, power, phase) of running job ``j`` in its current phase (truth; phase 0 run, 1 overhead, 2
        profiling). Scalars read with ``.item``: Python floats, the same IEEE operations as numpy's scalars."""
        n = self.n.item(j)
        if n == 0:
            return 0.0, 0.0, 0
        now = self.now
        if now < self.overhead_until.item(j) - EPS_T:
            return 0.0, n * self.hw.p_idle_w, 1
        r, multi = self.shape[j]
        if now < self.profile_until.item(j) - EPS_T:
            return (*self.prof.profiling_means(self._model_of[j], self._bs_of[j], n, r, multi), 2)
        t, e = self.prof.true(self._model_of[j], self._bs_of[j], n, r, multi)
        f = self.fl.item(j)
        t_f = t.item(f)
        return 1.0 / t_f, e.item(f) / t_f, 0

    def _refresh_power(self, changed: Any = None, placement: bool = True) -> None:
        """Recompute rate/power of ``changed`` running jobs (all if None) and the cluster aggregates."""
        run = self.running
        n_of = self.n
        for j in (run.tolist() if changed is None else changed):
            if n_of.item(j) == 0:
                continue
            self.rate[j], self.power[j], self.phase[j] = self._job_power(j)
            self._arm(j)
        allocated = int(self.n[run].sum()) if run.size >= SMALL_RUN else sum(self.n.item(j) for j in run.tolist())
        if placement and self.cfg.node_shutdown:
            gpn = self.gpn
            gpus = self.gpus
            if self.cfg.placement not in NON_MIGRATING:  # contiguous blocks: first..last node
                used = set()
                for j in run.tolist():
                    g = gpus[j]
                    used.update(range(g[0] // gpn, g[-1] // gpn + 1))
                self._powered_nodes = len(used)
            elif run.size:  # GPUs of any node: one pass over every held GPU (hundreds of jobs on the Philly traces)
                held = np.fromiter(itertools.chain.from_iterable(gpus[j] for j in run.tolist()), dtype=np.int64)
                self._powered_nodes = int(np.count_nonzero(np.bincount(held // gpn)))
            else:
                self._powered_nodes = 0
        self._allocated = allocated
        self._idle_gpus = self._powered_nodes * self.gpn - allocated
        job_power = _sum_at(self.power, run) if run.size else 0.0
        self._job_power_total = job_power
        self._cluster_power = job_power + self._idle_gpus * self.hw.p_idle_w
        if self.cfg.record_timeline:
            self._t_log.append(self.now)
            self._alloc_log.append(allocated)
            self._power_log.append(self._cluster_power)

    # ------------------------------------------------------------------------------------------ decisions
    def _apply(self, decision: Decision | Mapping[int, tuple[int, int]]) -> None:
        """Set ``(n, frequency level)`` of every ready job (absent: 0 GPUs; pinned jobs keep theirs) and the wake-up
        (a :class:`~joulegym.envs.powerflow.interface.Decision`; a plain mapping: the allocation, no wake-up).

        :raises ValueError: an unknown/unready job, an infeasible size, or more GPUs than the cluster has.
        """
        self._pinned = None
        if isinstance(decision, Decision):
            alloc, wakeup_s = decision.alloc, decision.wakeup_s
        elif isinstance(decision, Mapping):
            alloc, wakeup_s = decision, None
        else:
            raise ValueError(f"a PowerFlow decision is a Decision or a mapping {{job: (GPUs, frequency level)}}, "
                             f"got {type(decision).__name__}")
        ready = self.ready_jobs()
        ready_set = set(ready.tolist())
        pinned = set(ready[self.pinned_mask(ready)].tolist())
        target: dict[int, tuple[int, int]] = {}
        for j, (k, f) in alloc.items():
            j, k, f = int(j), int(k), int(f)
            if j not in ready_set:
                raise ValueError(f"job {j} is not schedulable now (status {int(self.status[j])})")
            if k < 0 or not 0 <= f < self.F:
                raise ValueError(f"job {j}: n must be >= 0 and frequency level in [0, {self.F}), got ({k}, {f})")
            if k > 0:
                target[j] = (k, f)
        for j in pinned:
            target[j] = (int(self.n[j]), int(self.fl[j]))
        total = sum(k for k, _ in target.values())
        if total > self.G:
            raise ValueError(f"allocation of {total} GPUs exceeds the cluster's {self.G}")
        if self.cfg.power_constraint == "repair":
            target, placed = self._repair_power(target, pinned)
        else:
            placed = self._place({j: k for j, (k, _) in target.items()}, pinned)
        sizes = {j: k for j, (k, _) in target.items()}
        changed = []
        gpus, fl_now = self.gpus, self.fl.tolist()
        # only a job placed, sized or holding GPUs (the running ones) can change; job order, as the events are armed
        for j in sorted(placed.keys() | sizes.keys() | set(self.running.tolist())):
            new = placed.get(j, ())
            old = gpus[j]
            k = len(new)
            if new != old:
                changed.append(j)
                if old and new and j not in pinned:
                    self.migrations += 1
                self.gpus[j] = new
                self.shape[j] = placement_shape(new, self.gpn)
                self.n[j] = k
                if k > 0:
                    switch = self.cfg.switch_overhead_s
                    self.overhead_until[j] = self.now + (overhead_s(self.cfg.overhead, k, self.cfg.flat_overhead_s)
                                                         if switch is None else switch)
                    # a fresh placement interrupts any profiling window (only pinned jobs keep theirs)
                    self.profile_until[j] = 0.0
                    if self.needs_profiling(j, k):
                        self.profile_until[j] = self.overhead_until[j] + self.cfg.profile_s
                        self.profilings += 1
                else:
                    self.overhead_until[j] = 0.0
                    self.profile_until[j] = 0.0
                    self._job_gen[j] += 1  # its pending completion is void
            if k > 0 and j not in pinned and fl_now[j] != target[j][1]:
                self.fl[j] = target[j][1]
                if not changed or changed[-1] != j:  # once: a second arm would only supersede the first
                    changed.append(j)
            if 0 < k < sizes.get(j, 0) or (k == 0 and j in sizes):
                self.repaired = True  # no aligned block around pinned jobs: the placement halved the job
                self.placement_shrinks += 1
        self.running = np.array(sorted(j for j, g in placed.items() if g), dtype=np.int64)
        self.wakeup = math.inf if wakeup_s is None else max(float(wakeup_s), self.now)
        self._arm_wakeup()
        self.steps += 1
        self._refresh_power(changed, placement=True)
        self._pinned = None  # sizes and restarts changed

    def _place(self, sizes: dict[int, int], pinned: set[int]) -> dict[int, tuple[int, ...]]:
        """The GPUs each job of ``sizes`` gets under ``cfg.placement`` (a pure function of the current holdings)."""
        previous = {j: self.gpus[j] for j in sizes if self.gpus[j]}
        if self.cfg.placement == "affinity-migrate":  # pinned jobs (restarting) are never migrated
            return affinity_migrate_place(sizes, previous, self.G, self.gpn, frozenset(pinned))
        place = NON_MIGRATING.get(self.cfg.placement)
        if place is not None:
            return place(sizes, previous, self.G, self.gpn)
        return buddy_place(sizes, previous, self.G, frozenset(pinned), compact=self.cfg.placement == "packed",
                           gpn=self.gpn)

    def _steady_power_levels(self, j: int, gpus: tuple[int, ...], pinned: set[int]) -> list[float]:
        """True power of job ``j`` on ``gpus`` as placed (its shape: GPUs per node, spanning nodes or not), once its
        overhead is over, per frequency level: the profiling-window mean at every level when it profiles."""
        k = len(gpus)
        if k == 0:
            return self._zero_levels
        model, bs = self._model_of[j], self._bs_of[j]
        if j in pinned:  # profiling (maybe still in its overhead) or restarting: its power once running
            r, multi = self.shape[j]
            if self.profile_until[j] > self.now + EPS_T:
                return [self.prof.profiling_means(model, bs, k, r, multi)[1]] * self.F
            return self.prof.true_power(model, bs, k, r, multi)
        r, multi = placement_shape(gpus, self.gpn)
        if self.needs_profiling(j, k):
            return [self.prof.profiling_means(model, bs, k, r, multi)[1]] * self.F
        return self.prof.true_power(model, bs, k, r, multi)

    def _repair_power(self, target: dict[int, tuple[int, int]],
                      pinned: set[int]) -> tuple[dict[int, tuple[int, int]], dict[int, tuple[int, ...]]]:
        """``power_constraint="repair"`` (docs §10): lower every running job's f one level while the true job power
        exceeds the limit (1e-3 slack); at f_min halve the latest arrival's GPUs, de-allocating it at one GPU
        (de-allocating at once, the first reading, starves a job whose profiling window at n GPUs alone exceeds
        the budget; docs §9). Jobs are priced as the placement actually puts them (``"affinity"``
        spreads a job over nodes: pricing it as packed would let the held power break the budget); the placement
        is recomputed whenever the sizes change. Returns the repaired target and its placement."""
        target = dict(target)
        limit = self.power_limit * (1 + 1e-3)
        placed = self._place({j: k for j, (k, _) in target.items()}, pinned)
        levels = {j: self._steady_power_levels(j, placed.get(j, ()), pinned) for j in target}  # per placement

        def total() -> float:
            return sum(levels[j][f] for j, (_, f) in target.items())

        self.repaired = False
        self._cap_enforced = True
        while target and total() > limit:
            self.repaired = True
            movable = [j for j, (k, f) in target.items() if j not in pinned and f > 0]
            if movable:
                for j in movable:
                    k, f = target[j]
                    target[j] = (k, f - 1)
                continue
            free = [j for j in target if j not in pinned]
            if not free:  # pinned jobs alone exceed the budget (a budget below their draw): nothing to repair
                self._cap_enforced = False
                break
            latest = max(free, key=lambda j: (self._arrive[j], j))
            k, f = target[latest]
            if k > 1 and is_pow2(k):  # halve before dropping (a 1-GPU job at f_min always fits a sane budget)
                target[latest] = (k // 2, f)
            else:
                del target[latest]
            placed = self._place({j: k for j, (k, _) in target.items()}, pinned)
            levels = {j: self._steady_power_levels(j, placed.get(j, ()), pinned) for j in target}
        return target, placed

    # ------------------------------------------------------------------------------------------ time
    def _arm(self, j: int) -> None:
        """Schedule running job ``j``'s next rate change: its completion, or the end of its overhead or
        profiling window, whichever comes first (rates are constant in between)."""
        gen = self._job_gen.item(j) + 1
        self._job_gen[j] = gen
        now = self.now
        nxt = math.inf
        overhead_until, profile_until = self.overhead_until.item(j), self.profile_until.item(j)
        if overhead_until > now + EPS_T:
            nxt = overhead_until
        elif profile_until > now + EPS_T:
            nxt = profile_until
        rate = self.rate.item(j)
        if rate > 0:
            nxt = min(nxt, now + (self.jobs.iterations.item(j) - self.done_it.item(j)) / rate)
        if math.isfinite(nxt):
            self.env.timeout(max(0.0, nxt - now)).callbacks.append(partial(self._on_job, j, gen))

    def _arm_wakeup(self) -> None:
        self._wake_gen += 1
        if math.isfinite(self.wakeup):
            self.env.timeout(max(0.0, self.wakeup - self.now)).callbacks.append(partial(self._on_wake, self._wake_gen))

    def _on_time(self, _event: simpy.Event) -> None:
        self._tick()

    def _on_job(self, j: int, gen: int, _event: simpy.Event) -> None:
        if self._job_gen[j] == gen:
            self._tick()
            if self._job_gen[j] == gen and self.n[j] > 0:  # round-off left it a sliver short: re-arm
                self._arm(j)

    def _on_wake(self, gen: int, _event: simpy.Event) -> None:
        if self._wake_gen == gen:
            self._tick()

    def _tick(self) -> None:
        """A calendar event fired: integrate up to it and process everything due (a decision point or not)."""
        t = float(self.env.now)
        self._integrate(t)
        if self._process_events(t):
            self._decided = True

    def _pending(self) -> bool:
        """Whether anything can happen by itself (else the next decision is an idle tick)."""
        return (self._ai < len(self._arrive) or self._ri < len(self._ready_at) or math.isfinite(self.wakeup)
                or self.running.size > 0)

    def _integrate(self, t: float) -> None:
        dt = t - self.now
        if dt <= 0:
            return
        run = self.running
        if 0 < run.size < min(SMALL_RUN, 8):  # fewer than 8: numpy's sums below add left to right, as here
            done, rate, power, energy_job = self.done_it, self.rate, self.power, self.energy_job
            phase, n, gpu_s, attained = self.phase, self.n, self.gpu_s, self.attained
            by_phase = [-0.0, -0.0, -0.0]  # busy, overhead, profiling
            for j in run.tolist():
                done[j] += rate.item(j) * dt
                e = power.item(j) * dt
                energy_job[j] += e
                ph = phase.item(j)
                by_phase[ph] += e
                gs = n.item(j) * dt
                gpu_s[j] += gs
                if ph != 1:  # overhead (a restart) attains no service
                    attained[j] += gs
            self.energy["busy"] += by_phase[0]
            self.energy["overhead"] += by_phase[1]
            self.energy["profiling"] += by_phase[2]
        elif run.size:
            self.done_it[run] += self.rate[run] * dt
            e = self.power[run] * dt
            self.energy_job[run] += e
            ph = self.phase[run]
            self.energy["busy"] += float(e[ph == 0].sum())
            self.energy["overhead"] += float(e[ph == 1].sum())
            self.energy["profiling"] += float(e[ph == 2].sum())
            gs = self.n[run] * dt
            self.gpu_s[run] += gs
            self.attained[run] += np.where(ph == 1, 0.0, gs)
        self.energy["idle"] += self._idle_gpus * self.hw.p_idle_w * dt
        self.energy_integral += self._cluster_power * dt
        self.gpu_s_idle += self._idle_gpus * dt
        self.gpu_s_off += (self.G - self._powered_nodes * self.gpn) * dt
        in_system = self._ai - self.done_count
        self.jct_integral += in_system * dt
        self.violation_ws += max(0.0, self._job_power_total - self.power_limit) * dt
        if self._cap_enforced and self._job_power_total > self.power_limit * (1 + 1e-3) + 1e-6:
            # the power budget is an invariant under repair (docs §10): held power above it is a simulator bug
            raise RuntimeError(f"power budget broken under power_constraint='repair': {self._job_power_total:.3f} W "
                               f"held over {dt:.3f} s against a limit of {self.power_limit:.3f} W "
                               f"at t={self.now:.3f} s")
        self.max_job_power = max(self.max_job_power, self._job_power_total)  # power held for dt > 0 only
        self.now = t
        self._pinned = None

    def advance(self) -> bool:
        """Run to the next decision point; False when every job is done or the horizon is reached."""
        while True:
            if self.done:
                return False
            if not self._pending():  # nothing can happen by itself: idle tick, a decision point
                self.wakeup = self.now + self.cfg.idle_tick_s
                self._arm_wakeup()
            if self.env.peek() > self.cfg.horizon_s:
                self._integrate(self.cfg.horizon_s)
                self._truncated = True
                self._warn_truncated()
                return False
            self._decided = False
            self.env.step()
            if self._decided:
                return not self.done  # the last completion leaves nothing to decide

    def _warn_truncated(self) -> None:
        """Truncation is loud (docs §12, "Horizon"): the average JCT then counts only the finished jobs."""
        warnings.warn(f"PowerFlow simulation truncated at horizon_s={self.cfg.horizon_s:g} s "
                      f"({self.cfg.horizon_s / 86400:.3g} days): {self.done_count} of {len(self.jobs)} jobs finished; "
                      f"avg_jct_s counts only those (metrics jobs_counted / jobs_total). Raise horizon_s (or leave "
                      f"simulate()'s default, which runs until every job is done).", RuntimeWarning, stacklevel=3)

    def _process_events(self, t: float) -> bool:
        self._pinned = None  # profiling windows end, jobs complete
        decision = False
        changed = False
        jobs = self.jobs
        tol = t + EPS_T * max(1.0, abs(t))
        while self._ai < len(self._arrive) and self._arrive[self._ai] <= tol:
            j = self._ai
            self.status[j] = PRERUN
            self._ai += 1
        while self._ri < len(self._ready_at) and self._ready_at[self._ri] <= tol and self._ri < self._ai:
            j = self._ri
            self.status[j] = READY
            self._ready = None
            if self.cfg.profiling and self.cfg.prerun_s > 0:
                mean_p = self.prof.profiling_means(str(jobs.model[j]), int(jobs.batch_size[j]), 1, 1, False)[1]
                self.energy["prerun"] += self.cfg.prerun_s * mean_p
                self.profiled[j].add(1)
                self.profiled_cfg.add((str(jobs.model[j]), int(jobs.batch_size[j]), 1))
            self._ri += 1
            decision = True
            self.last_event = EV_ARRIVAL
        run = self.running
        if run.size:
            fin, due = self._due(run, t, tol)
            for j in fin:
                self.max_completion_residual = max(self.max_completion_residual,
                                                   abs(self.done_it[j] - jobs.iterations[j]) / jobs.iterations[j])
                self.done_it[j] = jobs.iterations[j]  # exact (the residual above is round-off only)
                self.status[j] = DONE
                self._ready = None
                self.finish[j] = t
                self.n[j] = 0
                self.gpus[j] = ()
                self._job_gen[j] += 1
                self.done_count += 1
                decision = True
                changed = True
                self.last_event = EV_COMPLETION
            if fin:
                self.running = run = run[self.status[run] != DONE]
            touched = []
            for j in due:
                touched.append(j)
                if self.profile_until[j] > 0 and self.profile_until[j] <= tol:
                    self.profile_until[j] = 0.0
                    self.profiled[j].add(int(self.n[j]))
                    self.profiled_cfg.add((str(jobs.model[j]), int(jobs.batch_size[j]), int(self.n[j])))
                    decision = True
                    self.last_event = EV_PROFILING
        else:
            touched = []
        if self.wakeup <= tol:
            self.wakeup = math.inf
            decision = True
        if changed or touched or decision:
            self._refresh_power(touched, placement=changed)
        return decision

    def _due(self, run: np.ndarray, t: float, tol: float) -> tuple[list[int], list[int]]:
        """Of the running jobs ``run``: those finished at ``t`` (round-off tolerance), and of the others those whose
        overhead or profiling window ends by ``tol``; in job order (a Python loop for few jobs, numpy for many)."""
        its, done, rate = self.jobs.iterations, self.done_it, self.rate
        phase, overhead_until, profile_until = self.phase, self.overhead_until, self.profile_until
        limit = EPS_T * max(1.0, t)
        if run.size < SMALL_RUN:
            fin, due = [], []
            for j in run.tolist():
                it = its[j]
                rem = it - done.item(j)
                r = rate.item(j)
                if rem <= 1e-9 * max(1.0, it) or (r > 0 and rem / r <= limit):
                    fin.append(j)
                elif (phase.item(j) == 1 and overhead_until.item(j) <= tol) or 0 < profile_until.item(j) <= tol:
                    due.append(j)
            return fin, due
        rem = its[run] - done[run]
        finished = (rem <= 1e-9 * np.maximum(1.0, its[run])) | ((rate[run] > 0) & (
            rem / np.where(rate[run] > 0, rate[run], 1.0) <= limit))
        rest = run[~finished]
        ou, pu = overhead_until[rest], profile_until[rest]
        return run[finished].tolist(), rest[((phase[rest] == 1) & (ou <= tol)) | ((pu > 0) & (pu <= tol))].tolist()

    # ------------------------------------------------------------------------------------------ metrics
    # ------------------------------------------------------------------------------------------ copies
    def __getstate__(self) -> dict[str, Any]:
        """Copies (``copy.deepcopy``, ``pickle``; search-based planners, checkpoints) carry the SimPy calendar as
        data: every pending event's exact time, priority, order and callback, rebuilt by :meth:`__setstate__`."""
        state = self.__dict__.copy()
        env = state.pop("env")
        calendar = [(t, priority, eid, [self._callback_spec(cb) for cb in event.callbacks or ()])
                    for t, priority, eid, event in env._queue]
        state["_calendar"] = (env.now, calendar)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        now, calendar = state.pop("_calendar")
        self.__dict__.update(state)
        env = simpy.Environment(initial_time=now)
        last = -1
        for t, priority, eid, specs in calendar:
            event = simpy.Event(env)
            event._ok, event._value = True, None  # a triggered timeout
            event.callbacks = [self._callback(spec) for spec in specs]
            env._queue.append((t, priority, eid, event))
            last = max(last, eid)
        heapq.heapify(env._queue)  # (time, priority, eid) are unique: the same order as the original's
        env._eid = itertools.count(last + 1)
        self.env = env

    @staticmethod
    def _callback_spec(callback: Any) -> tuple:
        if isinstance(callback, partial):  # _on_job(j, generation) or _on_wake(generation)
            return (callback.func.__name__, *callback.args)
        return (callback.__name__,)  # _on_time

    def _callback(self, spec: tuple) -> Any:
        name, *args = spec
        method = getattr(self, name)
        return partial(method, *args) if args else method

    def metrics(self) -> dict[str, float]:
        J = len(self.jobs)
        done = self.status == DONE
        jct = self.finish[done] - self._arrive[done]
        total_e = float(sum(self.energy.values()))
        out = {
            "avg_jct_s": float(jct.mean()) if jct.size else 0.0,
            "jobs_done": float(done.sum()),
            "jobs_counted": float(jct.size),  # the jobs avg_jct_s averages over (all of them unless truncated)
            "jobs_total": float(J),
            "truncated": float(self._truncated),
            "total_energy_j": total_e,
            "makespan_s": float(np.nanmax(self.finish)) if done.any() else 0.0,
            "now_s": float(self.now),
            "cluster_power_w": float(self._cluster_power),
            "job_power_w": float(self._job_power_total),
            "power_limit_w": float(self.power_limit),
            "max_job_power_w": float(self.max_job_power),
            "power_violation_wh": self.violation_ws / 3600.0,
            "allocated_gpus": float(self.n[self.running].sum()) if self.running.size else 0.0,
            "powered_nodes": float(self._powered_nodes),
            "migrations": float(self.migrations),
            "placement_shrinks": float(self.placement_shrinks),
            "profilings": float(self.profilings),
            "decisions": float(self.steps),
        }
        out["avg_jct_h"] = out["avg_jct_s"] / 3600.0
        out["total_energy_kwh"] = total_e / 3.6e6
        for k, v in self.energy.items():
            out[f"energy_{k}_j"] = float(v)
        return out

    def balance(self) -> dict[str, float]:
        """The books of the run: GPU-seconds, iterations and energy, each computed two ways."""
        run_e = self.energy["busy"] + self.energy["profiling"] + self.energy["overhead"]
        return {
            "gpu_s_capacity": float(self.G * self.now),
            "gpu_s_jobs": float(self.gpu_s.sum()), "gpu_s_idle": float(self.gpu_s_idle),
            "gpu_s_off": float(self.gpu_s_off),
            "energy_breakdown_j": float(sum(self.energy.values()) - self.energy["prerun"]),
            "energy_integral_j": float(self.energy_integral),
            "energy_jobs_j": float(self.energy_job.sum()), "energy_running_j": float(run_e),
            "iterations_done": float(self.done_it.sum()), "iterations_total": float(self.jobs.iterations.sum()),
            "max_completion_residual": float(self.max_completion_residual),
        }

    def result(self) -> SimResult:
        m = self.metrics()
        tl = {"t_s": np.array(self._t_log), "allocated_gpus": np.array(self._alloc_log),
              "cluster_power_w": np.array(self._power_log)}
        return SimResult(avg_jct_s=m["avg_jct_s"], total_energy_j=m["total_energy_j"], makespan_s=m["makespan_s"],
                         energy_breakdown_j=dict(self.energy), metrics=m, jct_s=self.finish - self._arrive,
                         finish_s=self.finish.copy(), timeline=tl, truncated=self.truncated,
                         balance=self.balance())

