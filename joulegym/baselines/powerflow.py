"""PowerFlow reference policies (Gu et al. §5.2, §6.1; ``docs/families/powerflow.md`` §8): PowerFlow and the
five baselines.

Every policy has the one :class:`~joulegym.core.policy.Policy` interface: ``reset(env, seed)`` and
``act(obs, info)``. ``act`` reads the simulator's decision view (``env.unwrapped.sim.view()``, a
:class:`~joulegym.envs.powerflow.interface.SchedView`: queues, requested GPUs, attained service, remaining
iterations and the *predicted* throughput and energy tables, what a cluster scheduler with the scenario's
profiling knows), decides an allocation ``{job: (GPUs, frequency level)}`` (the private ``_decide(view)``),
forwards its wake-up request (Tiresias's next queue demotion) to ``env.unwrapped.request_wakeup`` and returns
``env.unwrapped.action_type.encode(decision)``. Reading that view is not privileged; ``powerflow-oracle`` reads the
true profiles (``view.true_tables``) and is.

Two sets of env settings per policy:

- ``env_config``: what is part of the system itself, its placement rule (packed, first-fit, affinity) and
  Gandiva's suspend/resume cost. The leaderboard runs every policy under the scenario's configuration (its power
  budget, predictor and profiling life-cycle bind every policy alike) and accepts only these keys
  (:meth:`joulegym.core.benchmark.Benchmark.check_env_config`).
- ``paper_config``: the conditions of the paper's evaluation (§6.1, Figs. 7-10): the baselines run unconstrained
  (they are compared at equal energy by sweeping the global frequency), on the simulator's true profiles, with no
  pre-run (only PowerFlow pre-runs and profiles); the oracle of Fig. 9 has neither.
  :func:`joulegym.baselines.powerflow_simulate.simulate` and the reproductions apply it, then ``env_config``, then
  the caller's settings (:func:`paper_env_config`).

- ``powerflow`` (faithful, paper §5.2) / ``powerflow-strict``: the two-phase greedy. Phase 1 hands out
  power-of-two GPU blocks (``n -> 2n``, priority per added GPU) by marginal ``dJCT/dE`` (Eq. 20) with each
  job at its most energy-efficient frequency (EDP minimiser at n = 1, docs §8); a job without GPUs
  is top tier, ordered by ``1/(R T E)`` (docs §9), as is a step that is faster *and* cheaper (by its
  JCT gain ``R dT``). Phase 2 raises frequencies by ``dJCT/dE`` (Eq. 21). Faithful checks the budget when a
  node fills up (Algorithm 1 line 18: the GPUs held, pinned ones included, cross a multiple of the node
  size) and before each raise (overshoot allowed); strict rejects any step that would exceed it. Pinned
  jobs' GPUs and planned power are taken off first. The Eq. 20/21 normalisers ``JCT``/``E`` scale every
  priority equally and are omitted (docs §9). ``powerflow-oracle``: true profiles, no
  pre-run/profiling (Fig. 9 "ideal case"); with a fitted predictor in the env it schedules on the
  true profiles the view exposes.
- ``gandiva`` (Gandiva OSDI '18 §4): requested GPU count, affinity placement with migration (a spread job moves
  to one node when one has room); when the cluster is oversubscribed, round-robin time-slicing: every job that
  has run a full quantum (60 s) can be suspended for the job that has waited longest since it last ran; each
  (re)start, suspend/resume or migration costs ``switch_s`` (2 s). ``fifo-backfill``: the former Gandiva (FIFO
  with backfill, non-preemptive, affinity placement without migration).
- ``tiresias`` (Tiresias NSDI '19 §4): discretised 2D-LAS on attained GPU-seconds (3 queues split at 3250 and
  7200 GPU-s, ElasticFlow's ``dlas-gpu``), FIFO inside a queue, preemptive across queues, backfill; jobs of
  models with skewed tensors (VGG) are started only where they can be consolidated (else they wait), the others
  consolidated if possible else spread.
- ``gandiva-zeus`` / ``tiresias-zeus``: the same with a per-job Zeus frequency
  ``argmin_f eta_z E + (1 - eta_z) MAXPOWER n T`` (eta_z = 0.5, MAXPOWER = TDP, docs §8).
- ``afs``: AFS-L elastic allocation (docs §8): zero-GPU jobs first by shortest remaining time on
  one GPU, then power-of-two steps to the largest relative throughput gain; packed placement.
- ``fifo``: strict FIFO (no backfill), requested GPUs.

Energy-unaware baselines run every GPU at ``f_mhz`` (default: the maximum; the Fig. 7 sweep varies it).
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any

import numpy as np

from joulegym.core.policy import PolicyNotApplicable, register_policy
from joulegym.envs.powerflow.cluster import first_fit_place

# Tiresias (NSDI '19) §4.2 leaves the queue count and thresholds to the operator. We use ElasticFlow's
# ``dlas-gpu`` settings (pkusys/ElasticFlow, ``ElasticFlow/scheduler/jobs.py``, ``_TFJobs.__init__``: ``num_queue =
# 3``, ``queue_limit = [3250, 7200, 18000]``): three queues split at 3250 and 7200 GPU-seconds; the third limit is
# unused with three queues (the last queue is unbounded). The former 1800/3600/7200 s was a mis-citation.
TIRESIAS_THRESHOLDS_GPU_S = (3250.0, 7200.0)
_THRESHOLDS = np.array(TIRESIAS_THRESHOLDS_GPU_S)
# Tiresias §3.2/§4.3: consolidate only models whose tensor sizes are skewed (one tensor holds most parameters,
# the VGG family and AlexNet in the paper); spread the others. The skew is the largest tensor's share of the
# parameters, computed from the published architectures: VGG16 fc6 25088 x 4096 of 138.4 M = 0.74; GPT-2 small
# token embedding 50257 x 768 of 124.4 M = 0.31; ResNet-18 3x3x512x512 of 11.7 M = 0.20; Inception-v3 fc
# 2048 x 1000 of 23.8 M = 0.09; DeepSpeech2 stacks equal-size recurrent layers (no dominant tensor).
TENSOR_SKEW = {"vgg16": 0.74, "gpt2": 0.31, "resnet18": 0.20, "inceptionv3": 0.09, "deepspeech2": 0.0}
# The consolidation cut: our assumption, between VGG (0.74) and the next most skewed model (GPT-2, 0.31), so that
# exactly the paper's skewed family is consolidation-sensitive. Unknown models are not consolidated.
TIRESIAS_SKEW_CUT = 0.5
# Gandiva (OSDI '18) §4.1: when the cluster is oversubscribed, jobs time-share GPUs by suspend/resume at
# mini-batch boundaries, round-robin, with a time slice of one minute.
GANDIVA_QUANTUM_S = 60.0
# Gandiva suspends a job at its GPU-memory nadir and resumes it in the same process (§4.1), far cheaper than a
# checkpoint-restart (the simulator's "elasticflow" overhead, 31-43 s). Assumption (the paper's own measurement
# is not in our seeds): a flat 2 s per (re)start, suspend/resume and migration (the simulator's
# ``switch_overhead_s``, in place of its checkpoint-restart model); configurable (``switch_s``).
GANDIVA_SWITCH_S = 2.0
ZEUS_ETA = 0.5  # Zeus default (docs §8)


def paper_env_config(policy: Any, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The env kwargs of the paper's evaluation for ``policy``: its ``paper_config``, its ``env_config``, then
    ``overrides`` (what :func:`joulegym.baselines.powerflow_simulate.simulate` applies)."""
    return {**(getattr(policy, "paper_config", None) or {}), **(getattr(policy, "env_config", None) or {}),
            **(overrides or {})}


class _Base:
    """The policy plumbing shared by every PowerFlow reference policy: subclasses implement :meth:`_decide`
    (and set ``self._wakeup_s`` there to ask for a decision point at a simulated time)."""

    privileged = False  # the decision view holds what a scheduler with the scenario's profiling knows
    name = "powerflow-base"

    def __init__(self) -> None:
        self._env = None
        self._wakeup_s: float | None = None
        self._last: tuple[Any, int, int, Any] | None = None  # (simulator, its episode, decision index, decision)

    @property
    def env_config(self) -> dict[str, Any]:
        """The env settings that are part of this system: its placement rule (first-fit: no packing)."""
        return {"placement": "first-fit"}

    @property
    def paper_config(self) -> dict[str, Any]:
        """The paper's evaluation of the baselines (§6.1): true profiles, no pre-run or profiling (only PowerFlow
        pre-runs), no power cap (compared at equal energy by sweeping the global frequency, Fig. 7)."""
        return {"profiling": False, "predictor": "oracle", "power_constraint": "none"}

    def reset(self, env, seed: int | None = None) -> None:
        base = env.unwrapped
        if getattr(base, "family", None) != "powerflow":
            raise PolicyNotApplicable(f"{self.name} drives PowerFlow envs only, not {type(base).__name__}")
        self._env = base
        self._wakeup_s = None
        self._last = None

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        base = self._env
        if base is None:
            raise RuntimeError(f"{self.name}.act() called before reset(env)")
        last = self._last
        sim = base.sim
        if last is not None and last[0] is sim and last[1] == sim.episode and last[2] == base.decision_index:
            decision = last[3]  # the same decision point (micro steps): the same decision
        else:
            # decide over the jobs the action can address: with jobs overflowing the K slots, a decision that
            # gives GPUs to unslotted jobs is dropped by the encoding, and the slotted jobs it left out idle the
            # cluster for good (the powerflow-jobs growth curve: 10 of 96 jobs done in 14 days on PowerFlow-tiny)
            decision = self._decide(sim.view(base.occupied_jobs if base.slots.overflow else None))
            self._last = (sim, sim.episode, base.decision_index, decision)
        base.request_wakeup(self._wakeup_s)  # e.g. Tiresias's next queue demotion
        return base.action_type.encode(decision)

    def _decide(self, v) -> dict[int, tuple[int, int]]:  # pragma: no cover - abstract
        raise NotImplementedError


def _pinned_alloc(v) -> dict[int, tuple[int, int]]:
    """Pinned jobs (profiling or restarting) keep their GPUs and frequency."""
    return {int(v.jobs[i]): (int(v.n[i]), int(v.fl[i])) for i in np.flatnonzero(v.pinned)}


def _flevel(v, f_mhz: float | None) -> int:
    if f_mhz is None:
        return len(v.freqs_mhz) - 1
    return int(np.argmin(np.abs(v.freqs_mhz - f_mhz)))


def _max_level(v, i: int) -> int:
    """The largest n-level job ``i`` may take (n_values are 1, 2, 4, ...: level = bit length - 1; -1: none)."""
    return min(v.num_gpus, int(v.batch_size[i])).bit_length() - 1


# ------------------------------------------------------------------------------------------------ PowerFlow


class PowerFlow(_Base):
    """Algorithm 1 as resolved in docs §8 (``mode="faithful"`` or ``"strict"``)."""

    def __init__(self, mode: str = "faithful", ee_freq_mode: str = "n1", oracle: bool = False,
                 name: str | None = None) -> None:
        super().__init__()
        if mode not in ("faithful", "strict"):
            raise ValueError(f"mode={mode!r} is not one of ('faithful', 'strict')")
        if ee_freq_mode not in ("n1", "per_n"):
            raise ValueError(f"ee_freq_mode={ee_freq_mode!r} is not one of ('n1', 'per_n')")
        self.mode, self.ee_freq_mode, self.oracle = mode, ee_freq_mode, oracle
        self.privileged = bool(oracle)  # the oracle reads the true profiles (Fig. 9's ideal case)
        self.name = name or ("powerflow" if mode == "faithful" else "powerflow-strict")
        self._cache: dict[int, tuple] = {}

    @property
    def env_config(self) -> dict[str, Any]:
        """PowerFlow packs with migration (network packing and buddy allocation, paper §5.3)."""
        return {"placement": "packed"}

    @property
    def paper_config(self) -> dict[str, Any]:
        """The paper's evaluation: PowerFlow pre-runs and profiles on a fitted predictor (§5.1, §6.1); the oracle
        knows the true profiles and needs neither (Fig. 9); strict mode keeps the power repair on."""
        return {"profiling": not self.oracle, "predictor": "oracle" if self.oracle else "fitted",
                "power_constraint": "repair" if self.mode == "strict" else "none"}

    def _tables(self, v, i: int) -> tuple[list, list, list, list[int]]:
        """Predicted ``T``, ``E``, power ``E/T`` (nested lists: fast scalar access) and the most
        energy-efficient frequency per n-level (EDP minimiser, docs §8) of ``v.jobs[i]``'s table, cached
        per table object (the simulator shares one table per (model, BS) and keeps it alive)."""
        T, E = v.T[i], v.E[i]
        if self.oracle and v.predictor != "oracle" and v.true_tables is not None:
            T, E = v.true_tables(i)  # the oracle knows the true profiles even where the env predicts
        hit = self._cache.get(id(T))
        if hit is None or hit[0] is not T:
            fee = np.argmin(T * E, axis=1).tolist()
            hit = self._cache[id(T)] = (T, T.tolist(), E.tolist(), (E / T).tolist(), fee)
        return hit[1], hit[2], hit[3], hit[4]

    def _decide(self, v) -> dict[int, tuple[int, int]]:
        return _Algorithm1(self, v).decide()


class _Algorithm1:
    """One decision of PowerFlow's Algorithm 1 (docs §8) over the view ``v``: phase 1 hands out power-of-two GPU
    blocks by marginal ``dJCT/dE`` (Eq. 20), phase 2 raises frequencies by Eq. 21. Per view position ``i`` it holds
    the job's n-level (``level[i]``, -1: no GPU; ``2^level`` GPUs), its planned power and its profile tables."""

    def __init__(self, policy: PowerFlow, v) -> None:
        self.strict = policy.mode == "strict"
        self.per_n = policy.ee_freq_mode == "per_n"
        self.v = v
        jobs = len(v.jobs)
        self.limit = v.power_limit_w
        self.free_gpus = v.num_gpus - int(v.n[v.pinned].sum())  # pinned jobs' GPUs and power are taken off first
        self.power = float(v.pinned_power.sum())
        self.level = [-1] * jobs
        self.job_power = [0.0] * jobs
        self.max_level = [0] * jobs
        self.remaining = v.remaining.tolist()  # R: iterations left
        self.tables: list = [None] * jobs  # (T, E, power E/T, f_ee per n-level) of the unpinned jobs
        pinned, batch_size = v.pinned.tolist(), v.batch_size.tolist()
        for i in range(jobs):
            if not pinned[i]:
                self.tables[i] = policy._tables(v, i)
                self.max_level[i] = min(v.num_gpus, int(batch_size[i])).bit_length() - 1  # largest power of two

    def decide(self) -> dict[int, tuple[int, int]]:
        self._grow_gpus()
        freq = {i: self._f_at(i, self.level[i]) for i in range(len(self.level)) if self.level[i] >= 0}
        self._raise_frequencies(freq)
        jobs, level = self.v.jobs, self.level
        return {int(jobs[i]): (1 << level[i], freq[i]) for i in freq}

    def _f_at(self, i: int, level: int) -> int:
        """The most energy-efficient frequency of job ``i`` at n-level ``level`` (per n, or the one at n = 1)."""
        fee = self.tables[i][3]
        return fee[level] if self.per_n else fee[0]

    def _gpu_priority(self, i: int) -> tuple | None:
        """Job ``i``'s heap entry for its next block (``n -> 2n``), or ``None`` when it cannot grow usefully."""
        now = self.level[i]
        nxt = now + 1
        if nxt > self.max_level[i]:
            return None
        f0, f1 = self._f_at(i, now), self._f_at(i, nxt)
        T, E = self.tables[i][0], self.tables[i][1]
        faster = T[now][f0] - T[nxt][f1]
        costlier = E[nxt][f1] - E[now][f0]
        if faster <= 0:
            return None
        if costlier <= 0:  # faster and cheaper: top tier, by the JCT reduction R * dT (docs §8)
            return (-1, -faster * self.remaining[i], i)
        return (0, -(faster / costlier) / (1 << now), i)  # Eq. 20 per added GPU (n -> 2n adds n); R cancels

    def _grow_gpus(self) -> None:
        """Phase 1: a job without GPUs is top tier, highest energy efficiency of its remaining work first (docs §9);
        then blocks by Eq. 20. Faithful mode checks the budget when a node fills up (lines 18-20), strict mode
        rejects any step that would exceed it; a waiting job whose first GPU breaks the budget waits in both."""
        heap: list[tuple] = []
        remaining, tables = self.remaining, self.tables
        for i, table in enumerate(tables):
            if table is not None:
                T, E, _, fee = table
                f = fee[0]
                heapq.heappush(heap, (-1, -1.0 / (remaining[i] * T[0][f] * E[0][f]), i))
        gpn, limit, strict = self.v.gpn, self.limit, self.strict
        used = self.v.num_gpus - self.free_gpus  # GPUs held (pinned + allocated so far): line 18's node boundary
        while heap and self.free_gpus > 0:
            _, _, i = heapq.heappop(heap)
            now = self.level[i]
            nxt = now + 1
            added = (1 << nxt) - ((1 << now) if now >= 0 else 0)
            if added > self.free_gpus:
                continue
            new_power = tables[i][2][nxt][self._f_at(i, nxt)]
            step = new_power - self.job_power[i]
            if (strict or now < 0) and self.power + step > limit:
                continue
            before = used
            self.level[i] = nxt
            self.free_gpus -= added
            used += added
            self.power += step
            self.job_power[i] = new_power
            entry = self._gpu_priority(i)
            if entry is not None:
                heapq.heappush(heap, entry)
            if not strict and (used // gpn) != (before // gpn) and self.power >= limit:
                break  # faithful lines 18-20: the budget is checked when a node fills up

    def _frequency_priority(self, i: int, freq: dict[int, int]) -> tuple | None:
        """Job ``i``'s heap entry for its next useful frequency level (Eq. 21), or ``None`` at the top."""
        f = freq[i]
        T, E = self.tables[i][0][self.level[i]], self.tables[i][1][self.level[i]]
        # the next level that is faster: measured/true profiles are noisy, so a level that is not faster is
        # skipped rather than ending the job's raises (Delta_f = one *useful* level)
        n_freq = len(T)
        t0 = T[f]
        f1 = f + 1
        while f1 < n_freq and T[f1] >= t0:
            f1 += 1
        if f1 >= n_freq:
            return None
        faster = T[f] - T[f1]
        costlier = E[f1] - E[f]
        return (-1, -faster * self.remaining[i], i, f1) if costlier <= 0 else (0, -faster / costlier, i, f1)

    def _raise_frequencies(self, freq: dict[int, int]) -> None:
        """Phase 2: raise frequencies by Eq. 21 while the power stays within the budget (strict: every raise)."""
        heap = [e for e in (self._frequency_priority(i, freq) for i in freq) if e is not None]
        heapq.heapify(heap)
        while heap and self.power <= self.limit:
            _, _, i, f1 = heapq.heappop(heap)
            new_power = self.tables[i][2][self.level[i]][f1]
            step = new_power - self.job_power[i]
            if self.strict and self.power + step > self.limit:
                continue
            freq[i] = f1
            self.power += step
            self.job_power[i] = new_power
            entry = self._frequency_priority(i, freq)
            if entry is not None:
                heapq.heappush(heap, entry)


# ------------------------------------------------------------------------------------------------ baselines


class _NonElastic(_Base):
    """Requested GPU count, one global frequency (or per-job Zeus frequency), non-migrating placement."""

    preemptive = False
    backfill = True

    def __init__(self, f_mhz: float | None = None, zeus: bool = False, name: str | None = None,
                 zeus_eta: float = ZEUS_ETA, max_power_w: float | None = None) -> None:
        super().__init__()
        self.f_mhz, self.zeus, self.zeus_eta, self.max_power_w = f_mhz, zeus, zeus_eta, max_power_w
        self._exclude: set[int] = set()  # jobs left out of this decision (Tiresias: no consolidated room)
        if name:
            self.name = name

    def _freq(self, v, i: int, n: int) -> int:
        if not self.zeus:
            return _flevel(v, self.f_mhz)
        t, e = v.row(i, n)
        maxp = self.max_power_w if self.max_power_w is not None else 300.0  # V100 TDP (docs §8)
        return int(np.argmin(self.zeus_eta * e + (1 - self.zeus_eta) * maxp * n * t))

    def _order(self, v) -> np.ndarray:
        """FIFO: by submission time, then job id (view positions)."""
        return np.lexsort((v.jobs, v.submit))

    def _decide(self, v) -> dict[int, tuple[int, int]]:
        out = _pinned_alloc(v)
        free = v.num_gpus - sum(k for k, _ in out.values())
        order = self._order(v)
        jobs, n_now = v.jobs.tolist(), v.n.tolist()
        level = None if self.zeus else _flevel(v, self.f_mhz)  # one global frequency level for every job
        freq = self._freq if self.zeus else (lambda v, i, n: level)

        taken = v.pinned.copy()  # jobs already decided (pinned: their GPUs are in ``out``)
        if not self.preemptive:  # running jobs keep their GPUs
            run = np.flatnonzero((v.n > 0) & ~taken).tolist()
            for i in run:
                out[jobs[i]] = (n_now[i], freq(v, i, n_now[i]))
            free -= int(v.n[run].sum())
            taken[run] = True
        if self._exclude:
            taken |= np.isin(v.jobs, np.fromiter(self._exclude, dtype=np.int64))
        queue = order[~taken[order]]
        wants = np.minimum(v.n_req, v.num_gpus)[queue]
        # the smallest request from each place in the queue on: once the free GPUs are fewer, nobody else fits
        # (stopping there skips a tail of hundreds of jobs on the overloaded Philly traces; the same decision)
        smallest = np.minimum.accumulate(wants[::-1])[::-1].tolist()
        for i, k, least in zip(queue.tolist(), wants.tolist(), smallest):
            if free <= 0 or free < least:  # every job needs at least one GPU: nothing more can start
                break
            if k <= free:
                out[jobs[i]] = (k, freq(v, i, k) if self.zeus else level)
                free -= k
            elif not self.backfill:
                break
        self._wakeup_s = self._wakeup(v, out)
        return out

    def _wakeup(self, v, out) -> float | None:
        return None


class FIFOBackfill(_NonElastic):
    """FIFO with backfill, non-preemptive, affinity placement without migration: the former ``gandiva``."""

    name = "fifo-backfill"

    @property
    def env_config(self) -> dict[str, Any]:
        return {**super().env_config, "placement": "affinity"}


class Gandiva(_NonElastic):
    """Gandiva (Xiao et al., OSDI '18, §4): affinity placement with migration and, when the cluster is
    oversubscribed, round-robin suspend/resume time-slicing with quantum ``quantum_s``.

    At a decision point: jobs restarting (pinned) and running jobs whose current slice is younger than a quantum
    keep their GPUs; every other job (running past its quantum, or waiting) is granted its requested GPUs in
    round-robin queue order with backfill: a job joins the queue's back on arrival and when its quantum ends
    (of those ending together, the one running longest since its last suspension last). With room for
    everyone nobody is suspended. While jobs wait, the policy asks for a wake-up at the next round boundary (a
    multiple of the quantum) by which some job has run a full quantum.
    ``time_slicing=False`` / ``migration=False`` switch the mechanisms off.
    """

    name = "gandiva"
    preemptive = True

    def __init__(self, f_mhz: float | None = None, zeus: bool = False, name: str | None = None,
                 zeus_eta: float = ZEUS_ETA, max_power_w: float | None = None, time_slicing: bool = True,
                 migration: bool = True, quantum_s: float = GANDIVA_QUANTUM_S,
                 switch_s: float = GANDIVA_SWITCH_S) -> None:
        super().__init__(f_mhz=f_mhz, zeus=zeus, name=name, zeus_eta=zeus_eta, max_power_w=max_power_w)
        if not (isinstance(quantum_s, (int, float)) and np.isfinite(quantum_s) and quantum_s > 0):
            raise ValueError(f"quantum_s must be a finite number > 0, got {quantum_s!r}")
        if not (isinstance(switch_s, (int, float)) and np.isfinite(switch_s) and switch_s >= 0):
            raise ValueError(f"switch_s must be a finite number >= 0, got {switch_s!r}")
        self.time_slicing, self.migration = bool(time_slicing), bool(migration)
        self.quantum_s, self.switch_s = float(quantum_s), float(switch_s)
        self._slice_start = self._run_since = self._ticket = np.zeros(0)
        self._next_ticket = 0

    @property
    def env_config(self) -> dict[str, Any]:
        return {**super().env_config, "placement": "affinity-migrate" if self.migration else "affinity",
                "switch_overhead_s": self.switch_s}

    def reset(self, env, seed: int | None = None) -> None:
        super().reset(env, seed)
        J = len(env.unwrapped.sim.jobs)
        self._slice_start = np.full(J, np.nan)  # when the job's current quantum began (nan: not running)
        self._run_since = np.full(J, np.nan)  # when its current uninterrupted run began
        self._ticket = np.full(J, np.nan)  # its place in the round-robin queue (nan: not yet queued)
        self._next_ticket = 0

    def _queue(self, idx: np.ndarray) -> None:
        """Put jobs ``idx`` (already in the intended order) at the back of the round-robin queue."""
        self._ticket[idx] = self._next_ticket + np.arange(idx.size)
        self._next_ticket += idx.size

    def _decide(self, v) -> dict[int, tuple[int, int]]:
        if not self.time_slicing:
            return self._fifo_backfill(v)
        if self._ticket.size != len(self._env.sim.jobs):  # the env was reset without the policy: start afresh
            self.reset(self._env)
        jobs = v.jobs
        running = v.n > 0
        start = self._slice_start[jobs]
        fresh = running & ~np.isnan(start) & (v.now - np.nan_to_num(start) < self.quantum_s - 1e-6)
        fixed = v.pinned | fresh | (running & np.isnan(start))  # started by someone else: keep (first sight)
        # round-robin queue: new jobs join the back in arrival order; then running jobs whose quantum is over,
        # the longest-running last (so the job that has run longest since its last suspension yields first)
        new = jobs[np.isnan(self._ticket[jobs])]
        self._queue(new)
        expired = running & ~fixed
        if expired.any():
            ex = jobs[expired]
            self._queue(ex[np.lexsort((ex, -self._run_since[ex]))])
        order = np.argsort(self._ticket[jobs], kind="stable").tolist()
        out = _pinned_alloc(v)
        n_now, n_req, job_list = v.n.tolist(), v.n_req.tolist(), jobs.tolist()
        level = None if self.zeus else _flevel(v, self.f_mhz)
        free = v.num_gpus - sum(k for k, _ in out.values())
        for i in np.flatnonzero(fixed & ~v.pinned).tolist():
            out[job_list[i]] = (n_now[i], self._freq(v, i, n_now[i]) if level is None else level)
            free -= n_now[i]
        for i in order:
            if free <= 0:  # every job needs at least one GPU
                break
            j = job_list[i]
            if j in out:
                continue
            k = min(n_req[i], v.num_gpus)
            if k <= free:
                out[j] = (k, self._freq(v, i, k) if level is None else level)
                free -= k
        # bookkeeping: a quantum begins when a job gets GPUs or wins a new one; a suspension ends the run
        granted = np.array([j in out for j in job_list], dtype=bool)
        began = granted & ~running
        self._slice_start[jobs[began | (granted & expired) | (running & np.isnan(start))]] = v.now
        self._run_since[jobs[began | (running & np.isnan(self._run_since[jobs]))]] = v.now
        ended = running & ~granted
        self._slice_start[jobs[ended]] = np.nan
        self._run_since[jobs[ended]] = np.nan
        self._wakeup_s = None
        if not granted.all():  # oversubscribed: the next quantum end may let a waiting job in
            ends = self._slice_start[jobs[granted]] + self.quantum_s  # restarting (pinned) jobs' quanta too
            ends = ends[ends > v.now + 1e-6]
            if ends.size:  # quanta end on a global grid of rounds: one decision per round, not one per job
                self._wakeup_s = float(np.ceil(ends.min() / self.quantum_s - 1e-9) * self.quantum_s)
        return out

    def _fifo_backfill(self, v) -> dict[int, tuple[int, int]]:
        self.preemptive = False
        try:
            return _NonElastic._decide(self, v)
        finally:
            self.preemptive = True


class FIFO(_NonElastic):
    name = "fifo"
    backfill = False


class Tiresias(_NonElastic):
    """Tiresias (Gu et al., NSDI '19, §4): discretised 2D-LAS with its consolidation rule (module docstring)."""

    name = "tiresias"
    preemptive = True
    _sensitive = np.zeros(0, dtype=bool)
    _sensitive_jobs: frozenset[int] = frozenset()

    def reset(self, env, seed: int | None = None) -> None:
        super().reset(env, seed)
        models = env.unwrapped.sim.jobs.model
        self._sensitive = np.array([TENSOR_SKEW.get(str(m), 0.0) > TIRESIAS_SKEW_CUT for m in models], dtype=bool)
        self._sensitive_jobs = frozenset(np.flatnonzero(self._sensitive).tolist())  # set lookups per decision

    def _order(self, v) -> np.ndarray:
        """2D-LAS: by queue (thresholds passed by the attained GPU-seconds), then submission time, then job id
        (one numpy lexsort over the waiting and running jobs: no Python-keyed sort)."""
        queue = np.searchsorted(_THRESHOLDS, v.attained, side="right")
        return np.lexsort((v.jobs, v.submit, queue))

    def _decide(self, v) -> dict[int, tuple[int, int]]:
        """The 2D-LAS admission; then the simulator's own placement is previewed, and a consolidation-sensitive
        job that would be spread (a new start or a resumption after preemption) is left waiting and the
        admission redone without it (backfill: its GPUs go to the next jobs in priority order)."""
        self._exclude = set()
        sim = self._env.sim
        gpn, G = v.gpn, v.num_gpus
        if self._sensitive.size != len(sim.jobs):  # the env was reset without the policy
            self.reset(self._env)
        sensitive = self._sensitive_jobs
        out = super()._decide(v)
        # only a sensitive job placed afresh (a start, a resumption, a resize) can be spread: else no preview
        held = [(j, k) for j, (k, _) in out.items() if j in sensitive]
        if not held:
            return out
        n_now = dict(zip(v.jobs.tolist(), v.n.tolist()))
        if not any(n_now[j] != k for j, k in held):
            return out
        for _ in range(len(v.jobs)):
            sizes = {j: k for j, (k, _) in out.items()}
            previous = {j: sim.gpus[j] for j in sizes if sim.gpus[j]}
            placed = first_fit_place(sizes, previous, G, gpn)
            bad = {j for j, g in placed.items() if j in sensitive and g != previous.get(j)
                   and len({x // gpn for x in g}) > -(-len(g) // gpn)}
            if not bad:
                break
            self._exclude |= bad
            out = super()._decide(v)
        self._exclude = set()
        return out

    def _wakeup(self, v, out) -> float | None:
        """The first time a job with GPUs crosses its queue's threshold (+1 us): its demotion."""
        if not out:
            return None
        held = np.fromiter(out, dtype=np.int64, count=len(out))
        k = np.fromiter(itertools.chain.from_iterable(out.values()), dtype=np.int64, count=2 * len(out))[::2]
        attained = v.attained[np.searchsorted(v.jobs, held)]  # v.jobs is sorted (job index order)
        queue = np.searchsorted(_THRESHOLDS, attained, side="right")
        below = queue < _THRESHOLDS.size  # jobs in the last queue are never demoted
        if not below.any():
            return None
        return float(np.min(v.now + (_THRESHOLDS[queue[below]] - attained[below]) / k[below])) + 1e-6


class AFS(_Base):
    """AFS-L (docs §8): elastic, energy-unaware, packed placement, all GPUs at ``f_mhz``."""

    name = "afs"

    def __init__(self, f_mhz: float | None = None, name: str | None = None) -> None:
        super().__init__()
        self.f_mhz = f_mhz
        if name:
            self.name = name

    @property
    def env_config(self) -> dict[str, Any]:
        return {**super().env_config, "placement": "packed"}

    def _decide(self, v) -> dict[int, tuple[int, int]]:
        f = _flevel(v, self.f_mhz)
        J = len(v.jobs)
        g = v.num_gpus - int(v.n[v.pinned].sum())
        lvl = [-1] * J
        waiting = sorted((i for i in range(J) if not v.pinned[i]),
                         key=lambda i: (v.remaining[i] * v.T[i][0, f], v.submit[i], int(v.jobs[i])))
        for i in waiting:
            if g <= 0:
                break
            if _max_level(v, i) >= 0:
                lvl[i] = 0
                g -= 1

        def entry(i: int):
            l0 = lvl[i]
            if l0 + 1 > _max_level(v, i):
                return None
            gain = 1.0 - v.T[i][l0 + 1, f] / v.T[i][l0, f]
            return None if gain <= 0 else (-gain, 1 << l0, i)

        heap = [e for e in (entry(i) for i in range(J) if lvl[i] >= 0) if e is not None]
        heapq.heapify(heap)
        while heap and g > 0:
            _, _, i = heapq.heappop(heap)
            added = 1 << lvl[i]
            if added > g:
                continue
            lvl[i] += 1
            g -= added
            e = entry(i)
            if e is not None:
                heapq.heappush(heap, e)
        out = _pinned_alloc(v)
        out.update({int(v.jobs[i]): (1 << lvl[i], f) for i in range(J) if lvl[i] >= 0})
        return out


# ------------------------------------------------------------------------------------------------ registry


def _reg(name: str, factory, description: str) -> None:
    # every kind and action mode: the policies act through the env's action type (``encode``)
    register_policy(name, factory, family="powerflow", description=description)


_reg("powerflow", lambda **kw: PowerFlow(mode="faithful", **kw),
     "PowerFlow §5.2 two-phase greedy, faithful power check (node boundaries), fitted models + profiling")
_reg("powerflow-strict", lambda **kw: PowerFlow(mode="strict", **kw),
     "PowerFlow with a hard power cap (every step checked; the env's reference policy)")
_reg("powerflow-oracle", lambda **kw: PowerFlow(oracle=True, name="powerflow-oracle", **kw),
     "PowerFlow on the true profiles (privileged; Fig. 9's ideal case, which also skips the pre-run in the paper)")
_reg("gandiva", lambda **kw: Gandiva(**kw),
     "Gandiva: round-robin suspend/resume time-slicing (60 s) when oversubscribed, affinity placement + migration")
_reg("fifo-backfill", lambda **kw: FIFOBackfill(**kw),
     "FIFO + backfill, non-preemptive, affinity placement (the former gandiva)")
_reg("tiresias", lambda **kw: Tiresias(**kw),
     "Tiresias: 2D-LAS (3 queues at 3250 / 7200 GPU-s), preemptive, consolidates skewed models")
_reg("gandiva-zeus", lambda **kw: Gandiva(zeus=True, name="gandiva-zeus", **kw),
     "Gandiva + Zeus per-job frequency (eta_z = 0.5, MAXPOWER = TDP)")
_reg("tiresias-zeus", lambda **kw: Tiresias(zeus=True, name="tiresias-zeus", **kw),
     "Tiresias + Zeus per-job frequency (eta_z = 0.5, MAXPOWER = TDP)")
_reg("afs", lambda **kw: AFS(**kw), "AFS-L: elastic, shortest-first then largest throughput gain, global frequency")
_reg("fifo", lambda **kw: FIFO(**kw), "strict FIFO, requested GPUs, global frequency")
