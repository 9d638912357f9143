"""PowerFlow reference policies (Gu et al. §5.2, §6.1; spec §5.2, §5.5): PowerFlow and the five baselines.

Each policy is a *scheduler* — ``schedule(view) -> {job: (n, frequency level)}`` over a
:class:`~joulegym.envs.powerflow.simulator.SchedView` — usable by the standalone
:func:`joulegym.envs.powerflow.simulate`, and a Gymnasium :class:`~joulegym.baselines.base.Policy`
(``privileged = True``: it reads ``env.unwrapped.view()`` and encodes its decision as the env's action).
``sim_config`` holds the simulator options the policy implies (profiling life-cycle, placement, power
repair); ``simulate`` applies them unless overridden.

- ``powerflow`` (faithful, spec §5.2) / ``powerflow-strict``: the two-phase greedy. Phase 1 hands out
  power-of-two GPU blocks (``n -> 2n``, priority per added GPU) by marginal ``dJCT/dE`` (Eq. 20) with each
  job at its most energy-efficient frequency (EDP minimiser at n = 1, spec §4 [I]); a job without GPUs
  is top tier, ordered by ``1/(R T E)`` (spec §10 #10), as is a step that is faster *and* cheaper (by its
  JCT gain ``R dT``). Phase 2 raises frequencies by ``dJCT/dE`` (Eq. 21). Faithful checks the budget when a
  node fills up (Algorithm 1 line 18: the GPUs held, pinned ones included, cross a multiple of the node
  size) and before each raise (overshoot allowed); strict rejects any step that would exceed it. Pinned
  jobs' GPUs and planned power are taken off first. The Eq. 20/21 normalisers ``JCT``/``E`` scale every
  priority equally and are omitted (spec §4 [I], §10 #27). ``powerflow-oracle``: true profiles, no
  pre-run/profiling (Fig. 9 "ideal case"); inside an env (whose life-cycle is the env's) it schedules on the
  true profiles the view exposes.
- ``gandiva``: FIFO with backfill, non-preemptive, requested GPU count, affinity placement (a node already
  hosting a job of the same size first, else first-fit; no migration).
- ``tiresias``: discretised 2D-LAS on attained GPU-seconds (queues 30 min / 1 h / 2 h, ElasticFlow's
  ``dlas_sim_jobs``), FIFO inside a queue, preemptive across queues, consolidated-else-spread placement.
- ``gandiva-zeus`` / ``tiresias-zeus``: the same with a per-job Zeus frequency
  ``argmin_f eta_z E + (1 - eta_z) MAXPOWER n T`` (eta_z = 0.5, MAXPOWER = TDP, spec §5.5 [A]).
- ``afs``: AFS-L elastic allocation (spec §5.5 [A]): zero-GPU jobs first by shortest remaining time on
  one GPU, then power-of-two steps to the largest relative throughput gain; packed placement.
- ``fifo``: strict FIFO (no backfill), requested GPUs.

Energy-unaware baselines run every GPU at ``f_mhz`` (default: the maximum; the Fig. 7 sweep varies it).
"""

from __future__ import annotations

import heapq
import math
from typing import Any

import numpy as np

from joulegym.core.policy import PolicyNotApplicable, register_policy

TIRESIAS_THRESHOLDS_GPU_S = (1800.0, 3600.0, 7200.0)  # ElasticFlow dlas_sim_jobs (spec §5.5 [A])
ZEUS_ETA = 0.5  # Zeus default (spec §5.5 [A])


class _Base:
    """Scheduler + Gym-policy plumbing shared by every PowerFlow reference policy."""

    privileged = True
    name = "powerflow-base"

    def __init__(self) -> None:
        self._env = None
        self.wakeup_s: float | None = None

    @property
    def sim_config(self) -> dict[str, Any]:
        return {"profiling": False, "predictor": "oracle", "placement": "first-fit", "power_constraint": "none"}

    # Gym Policy protocol ----------------------------------------------------------------------
    def reset(self, env, seed: int | None = None) -> None:
        base = env.unwrapped
        if getattr(base, "family", None) != "powerflow":
            raise PolicyNotApplicable(f"{self.name} drives PowerFlow envs only, not {type(base).__name__}")
        self._env = base

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        if self._env is None:
            raise RuntimeError(f"{self.name}.act() called before reset(env)")
        action = self._env.encode_action(self.schedule(self._env.view()))
        self._env.request_wakeup(self.wakeup_s)  # e.g. Tiresias's next queue demotion, as ``simulate`` honours it
        return action

    def schedule(self, v) -> dict[int, tuple[int, int]]:  # pragma: no cover - abstract
        raise NotImplementedError


def _pinned_alloc(v) -> dict[int, tuple[int, int]]:
    """Pinned jobs (profiling or restarting) keep their GPUs and frequency."""
    return {int(v.jobs[i]): (int(v.n[i]), int(v.fl[i])) for i in np.flatnonzero(v.pinned)}


def _flevel(v, f_mhz: float | None) -> int:
    if f_mhz is None:
        return len(v.freqs_mhz) - 1
    return int(np.argmin(np.abs(v.freqs_mhz - f_mhz)))


def _level_of(v, n: int) -> int:
    return int(n).bit_length() - 1  # n_values are 1, 2, 4, ...


def _max_level(v, i: int) -> int:
    cap = min(v.num_gpus, int(v.batch_size[i]))
    return _level_of(v, cap) if cap >= 1 else -1


# ------------------------------------------------------------------------------------------------ PowerFlow


class PowerFlow(_Base):
    """Algorithm 1 as resolved in spec §5.2 (``mode="faithful"`` or ``"strict"``)."""

    def __init__(self, mode: str = "faithful", ee_freq_mode: str = "n1", oracle: bool = False,
                 name: str | None = None) -> None:
        super().__init__()
        if mode not in ("faithful", "strict"):
            raise ValueError(f"mode={mode!r} is not one of ('faithful', 'strict')")
        if ee_freq_mode not in ("n1", "per_n"):
            raise ValueError(f"ee_freq_mode={ee_freq_mode!r} is not one of ('n1', 'per_n')")
        self.mode, self.ee_freq_mode, self.oracle = mode, ee_freq_mode, oracle
        self.name = name or ("powerflow" if mode == "faithful" else "powerflow-strict")
        self._cache: dict[int, tuple] = {}

    @property
    def sim_config(self) -> dict[str, Any]:
        return {"profiling": not self.oracle, "predictor": "oracle" if self.oracle else "fitted",
                "placement": "packed", "power_constraint": "repair" if self.mode == "strict" else "none"}

    def _tables(self, v, i: int) -> tuple[list, list, list, list[int]]:
        """Predicted ``T``, ``E``, power ``E/T`` (nested lists: fast scalar access) and the most
        energy-efficient frequency per n-level (EDP minimiser, spec §4 [I]) of ``v.jobs[i]``'s table, cached
        per table object (the simulator shares one table per (model, BS) and keeps it alive)."""
        T, E = v.T[i], v.E[i]
        if self.oracle and v.predictor != "oracle" and v.true_tables is not None:
            T, E = v.true_tables(i)  # the oracle knows the true profiles even where the env predicts
        hit = self._cache.get(id(T))
        if hit is None or hit[0] is not T:
            fee = np.argmin(T * E, axis=1).tolist()
            hit = self._cache[id(T)] = (T, T.tolist(), E.tolist(), (E / T).tolist(), fee)
        return hit[1], hit[2], hit[3], hit[4]

    def schedule(self, v) -> dict[int, tuple[int, int]]:
        strict = self.mode == "strict"
        per_n = self.ee_freq_mode == "per_n"
        J = len(v.jobs)
        limit = v.power_limit_w
        gpn = v.gpn
        g = v.num_gpus - int(v.n[v.pinned].sum())
        power = float(v.pinned_power.sum())
        lvl = [-1] * J
        cur_p = [0.0] * J
        maxl = [0] * J
        R = v.remaining.tolist()
        tabs: list = [None] * J
        heap: list[tuple] = []
        pinned = v.pinned.tolist()
        bsz = v.batch_size.tolist()
        for i in range(J):
            if pinned[i]:
                continue
            tabs[i] = T, E, _, fee = self._tables(v, i)
            maxl[i] = min(v.num_gpus, int(bsz[i])).bit_length() - 1  # largest feasible power of two
            f = fee[0]
            # a job without GPUs: top tier, highest energy efficiency of its remaining work first (spec §10 #10)
            heapq.heappush(heap, (-1, -1.0 / (R[i] * T[0][f] * E[0][f]), i))

        def f_at(i: int, level: int) -> int:
            fee = tabs[i][3]
            return fee[level] if per_n else fee[0]

        def prio_g(i: int):
            l0 = lvl[i]
            nl = l0 + 1
            if nl > maxl[i]:
                return None
            f0, f1 = f_at(i, l0), f_at(i, nl)
            T, E = tabs[i][0], tabs[i][1]
            dj = T[l0][f0] - T[nl][f1]
            de = E[nl][f1] - E[l0][f0]
            if dj <= 0:
                return None
            if de <= 0:  # faster and cheaper: top tier, by the JCT reduction R * dT (spec §5.2)
                return (-1, -dj * R[i], i)
            return (0, -(dj / de) / (1 << l0), i)  # Eq. 20 per added GPU (n -> 2n adds n); R cancels

        used = v.num_gpus - g  # GPUs held in the cluster (pinned + allocated so far): line 18's node boundary
        while heap and g > 0:
            _, _, i = heapq.heappop(heap)
            l0 = lvl[i]
            nl = l0 + 1
            added = (1 << nl) - ((1 << l0) if l0 >= 0 else 0)
            if added > g:
                continue
            new_p = tabs[i][2][nl][f_at(i, nl)]
            dp = new_p - cur_p[i]
            if (strict or l0 < 0) and power + dp > limit:
                continue  # strict: reject the step; both modes: a waiting job whose first GPU breaks PL waits
            before = used
            lvl[i] = nl
            g -= added
            used += added
            power += dp
            cur_p[i] = new_p
            entry = prio_g(i)
            if entry is not None:
                heapq.heappush(heap, entry)
            if not strict and (used // gpn) != (before // gpn) and power >= limit:
                break  # faithful lines 18-20: the budget is checked when a node fills up
        freq = {i: f_at(i, lvl[i]) for i in range(J) if lvl[i] >= 0}
        # phase 2: raise frequencies
        n_freq = len(v.freqs_mhz)

        def prio_f(i: int):
            f = freq[i]
            T, E = tabs[i][0][lvl[i]], tabs[i][1][lvl[i]]
            # the next level that is faster: measured/true profiles are noisy, so a level that is not faster
            # is skipped rather than ending the job's raises (Delta_f = one *useful* level)
            t0 = T[f]
            f1 = f + 1
            while f1 < n_freq and T[f1] >= t0:
                f1 += 1
            if f1 >= n_freq:
                return None
            dj = T[f] - T[f1]
            de = E[f1] - E[f]
            return (-1, -dj * R[i], i, f1) if de <= 0 else (0, -dj / de, i, f1)  # Eq. 21 (as Eq. 20)

        heap = [e for e in (prio_f(i) for i in freq) if e is not None]
        heapq.heapify(heap)
        while heap and power <= limit:
            _, _, i, f1 = heapq.heappop(heap)
            new_p = tabs[i][2][lvl[i]][f1]
            dp = new_p - cur_p[i]
            if strict and power + dp > limit:
                continue
            freq[i] = f1
            power += dp
            cur_p[i] = new_p
            entry = prio_f(i)
            if entry is not None:
                heapq.heappush(heap, entry)
        return {int(v.jobs[i]): (1 << lvl[i], freq[i]) for i in freq}


# ------------------------------------------------------------------------------------------------ baselines


class _NonElastic(_Base):
    """Requested GPU count, one global frequency (or per-job Zeus frequency), non-migrating placement."""

    preemptive = False
    backfill = True

    def __init__(self, f_mhz: float | None = None, zeus: bool = False, name: str | None = None,
                 zeus_eta: float = ZEUS_ETA, max_power_w: float | None = None) -> None:
        super().__init__()
        self.f_mhz, self.zeus, self.zeus_eta, self.max_power_w = f_mhz, zeus, zeus_eta, max_power_w
        if name:
            self.name = name

    def _freq(self, v, i: int, n: int) -> int:
        if not self.zeus:
            return _flevel(v, self.f_mhz)
        t, e = v.row(i, n)
        maxp = self.max_power_w if self.max_power_w is not None else 300.0  # V100 TDP (spec §5.5 [A])
        return int(np.argmin(self.zeus_eta * e + (1 - self.zeus_eta) * maxp * n * t))

    def _order(self, v) -> list[int]:
        return sorted(range(len(v.jobs)), key=lambda i: (v.submit[i], int(v.jobs[i])))

    def schedule(self, v) -> dict[int, tuple[int, int]]:
        out = _pinned_alloc(v)
        free = v.num_gpus - sum(k for k, _ in out.values())
        order = self._order(v)
        if not self.preemptive:  # running jobs keep their GPUs
            for i in order:
                if v.n[i] > 0 and int(v.jobs[i]) not in out:
                    out[int(v.jobs[i])] = (int(v.n[i]), self._freq(v, i, int(v.n[i])))
                    free -= int(v.n[i])
        for i in order:
            j = int(v.jobs[i])
            if j in out:
                continue
            k = min(int(v.n_req[i]), v.num_gpus)
            if k <= free:
                out[j] = (k, self._freq(v, i, k))
                free -= k
            elif not self.backfill:
                break
        self.wakeup_s = self._wakeup(v, out)
        return out

    def _wakeup(self, v, out) -> float | None:
        return None


class Gandiva(_NonElastic):
    """FIFO with backfill, non-preemptive, Gandiva's affinity placement (spec §5.5)."""

    name = "gandiva"

    @property
    def sim_config(self) -> dict[str, Any]:
        return {**super().sim_config, "placement": "affinity"}


class FIFO(_NonElastic):
    name = "fifo"
    backfill = False


class Tiresias(_NonElastic):
    name = "tiresias"
    preemptive = True

    def _queue(self, attained: float) -> int:
        return sum(attained >= t for t in TIRESIAS_THRESHOLDS_GPU_S)

    def _order(self, v) -> list[int]:
        return sorted(range(len(v.jobs)), key=lambda i: (self._queue(v.attained[i]), v.submit[i], int(v.jobs[i])))

    def _wakeup(self, v, out) -> float | None:
        best = math.inf
        pos = {int(j): i for i, j in enumerate(v.jobs)}
        for j, (k, _) in out.items():
            a = v.attained[pos[j]]
            for t in TIRESIAS_THRESHOLDS_GPU_S:
                if a < t:
                    best = min(best, v.now + (t - a) / k)
                    break
        return None if not math.isfinite(best) else best + 1e-6


class AFS(_Base):
    """AFS-L (spec §5.5 [A]): elastic, energy-unaware, packed placement, all GPUs at ``f_mhz``."""

    name = "afs"

    def __init__(self, f_mhz: float | None = None, name: str | None = None) -> None:
        super().__init__()
        self.f_mhz = f_mhz
        if name:
            self.name = name

    @property
    def sim_config(self) -> dict[str, Any]:
        return {"profiling": False, "predictor": "oracle", "placement": "packed", "power_constraint": "none"}

    def schedule(self, v) -> dict[int, tuple[int, int]]:
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

_KINDS = ("PowerFlow",)


def _reg(name: str, factory, description: str) -> None:
    register_policy(name, factory, family="powerflow", kinds=_KINDS, description=description)


_reg("powerflow", lambda **kw: PowerFlow(mode="faithful", **kw),
     "PowerFlow §5.2 two-phase greedy, faithful power check (node boundaries), fitted models + profiling")
_reg("powerflow-strict", lambda **kw: PowerFlow(mode="strict", **kw),
     "PowerFlow with a hard power cap (every step checked; the env's reference policy)")
_reg("powerflow-oracle", lambda **kw: PowerFlow(oracle=True, name="powerflow-oracle", **kw),
     "PowerFlow with the true profiles, no pre-run/profiling (Fig. 9 ideal case)")
_reg("gandiva", lambda **kw: Gandiva(**kw), "Gandiva: FIFO + backfill, requested GPUs, global frequency")
_reg("tiresias", lambda **kw: Tiresias(**kw), "Tiresias: 2D-LAS (30 min / 1 h / 2 h GPU-time queues), preemptive")
_reg("gandiva-zeus", lambda **kw: Gandiva(zeus=True, name="gandiva-zeus", **kw),
     "Gandiva + Zeus per-job frequency (eta_z = 0.5, MAXPOWER = TDP)")
_reg("tiresias-zeus", lambda **kw: Tiresias(zeus=True, name="tiresias-zeus", **kw),
     "Tiresias + Zeus per-job frequency (eta_z = 0.5, MAXPOWER = TDP)")
_reg("afs", lambda **kw: AFS(**kw), "AFS-L: elastic, shortest-first then largest throughput gain, global frequency")
_reg("fifo", lambda **kw: FIFO(**kw), "strict FIFO, requested GPUs, global frequency")
