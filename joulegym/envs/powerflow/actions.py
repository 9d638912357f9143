"""The action modes of :class:`~joulegym.envs.powerflow.env.PowerFlowEnv` (``docs/families/powerflow.md`` §10).

A *decision* is the simulator's allocation ``{job: (GPUs, frequency level)}`` of the jobs in the slots (a job
left out gets no GPU; pinned jobs keep theirs whatever the decision says). Each mode turns its action into a
decision (``decode``, with the deterministic repair of docs §10 and ``repaired`` set when it changed anything)
and a decision into its action (``encode``, what the reference policies do):

==============  ===========================================  ==================================================
mode            space                                        decision
==============  ===========================================  ==================================================
``alloc``       ``MultiDiscrete([L_n]*K + [F]*K)``           n-level per slot (0: none, l: ``2^(l-1)`` GPUs up
                                                             to ``min(G, 64)``), then f-level per slot
``request``     ``MultiDiscrete([L+1]*K + [F]*K)``           n-level per slot up to ``G`` or "the job's
                                                             requested GPU count", then f-level; encodes
                                                             every reference policy exactly (``simulate``)
``micro``       ``Discrete(2K+1)``                           grow slot k's block, raise slot k's f, or commit
``priority``    ``Box(0, 1, (K+1,))``                        slot scores + a power-usage fraction, the env's
                                                             greedy allocates
==============  ===========================================  ==================================================

Masks (``alloc``, ``request``, ``micro``) cost O(occupied slots) per decision point: rows of empty slots keep
their template, and only the rows of occupied (or just freed) slots are rewritten.
"""

from __future__ import annotations

import heapq
import math
from itertools import chain
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from joulegym.core.actions import (
    NO_DECISION,
    ActionType,
    validated_box_action,
    validated_discrete_action,
    validated_multidiscrete_action,
)

if TYPE_CHECKING:  # pragma: no cover
    from joulegym.envs.powerflow.env import PowerFlowEnv

Decision = dict[int, tuple[int, int]]
SCALAR_SLOTS = 16  # up to this many occupied slots, decode loops in Python (a numpy call per array costs more)


def _sorted_decision(want: dict[int, list[int]]) -> Decision:
    """The decision in job order (submit order): the order non-migrating placements admit new jobs in."""
    return {j: (int(want[j][0]), int(want[j][1])) for j in sorted(want)}


def _halve_to_fit(env: PowerFlowEnv, want: dict[int, list[int]]) -> bool:
    """Repair step 2 (docs §10): while more GPUs than the cluster's are asked for, halve the largest
    non-pinned allocation (ties: the latest arrival), dropping a job asked to halve from one GPU."""
    total = sum(v[0] for v in want.values())
    G = env.cluster.num_gpus
    if total <= G:
        return False
    submit = env.sim.jobs.submit_s
    pinned = env.pinned_jobs
    # the largest (GPUs, arrival, job) first, as max() over the jobs would pick it at every halving: a heap of the
    # negated keys, each job pushed back with its new size
    heap = [(-n_f[0], -submit.item(j), -j) for j, n_f in want.items() if j not in pinned]
    heapq.heapify(heap)
    while total > G:
        _, _, j = heapq.heappop(heap)
        j = -j
        if want[j][0] == 1:
            del want[j]
            total -= 1
        else:
            total -= want[j][0] - want[j][0] // 2
            want[j][0] //= 2
            heapq.heappush(heap, (-want[j][0], -submit.item(j), -j))
    return True


class _MaskedSlots(ActionType):
    """Shared by ``alloc`` and ``request``: ``MultiDiscrete([N]*K + [F]*K)`` with a per-slot n-mask and f-mask.

    Subclasses give the table of allowed n-values (:meth:`_row_table`, one row per job class), each job's row
    (:meth:`_rows_of_jobs`) and the map between values and GPU counts (:meth:`_gpus_of`, :meth:`_values_of`).
    """

    def __init__(self, env: PowerFlowEnv, n_choices: int) -> None:
        super().__init__(env)
        K, F = env.K, env.F
        self.K, self.N, self.F = K, n_choices, F
        self.space = gym.spaces.MultiDiscrete([n_choices] * K + [F] * K)
        self._nvec = np.asarray(self.space.nvec)
        self._nvec_u = self._nvec.astype(np.uint64)
        # one flat buffer: the n-mask (K x N) then the f-mask (K x F); empty slots: only n = 0, any f
        self._flat = np.zeros(K * n_choices + K * F, dtype=bool)
        self._views()
        self._table = self._row_table()  # row r: the n-values a job of row index r may take
        self._row_of = np.zeros(0, dtype=np.int64)  # job -> its row index (per episode)
        self._built = -1
        self._written = np.zeros(0, dtype=np.int64)  # the slots whose rows differ from the empty-slot template

    def _views(self) -> None:
        K, N = self.K, self.N
        self._mn = self._flat[: K * N].reshape(K, N)
        self._mf = self._flat[K * N:].reshape(K, self.F)

    def __getstate__(self) -> dict[str, Any]:  # copies (deepcopy, pickle) rebuild the views into the flat mask
        state = self.__dict__.copy()
        del state["_mn"], state["_mf"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._views()

    @property
    def has_mask(self) -> bool:
        return True

    def reset(self) -> None:
        super().reset()
        self._mn[:] = False
        self._mn[:, 0] = True
        self._mf[:] = True
        self._built = -1
        self._written = np.zeros(0, dtype=np.int64)
        self._row_of = self._rows_of_jobs(self.env.sim.jobs)

    # --- masks ------------------------------------------------------------------------------------------
    def _row_table(self) -> np.ndarray:  # pragma: no cover - subclasses override
        raise NotImplementedError

    def _rows_of_jobs(self, jobs) -> np.ndarray:  # pragma: no cover - subclasses override
        raise NotImplementedError

    def _build(self) -> None:
        """Bring the masks to the current decision point: rows of the occupied slots and of the slots emptied
        since the last build only (O(occupied slots))."""
        env = self.env
        if self._built == env.decision_index:
            return
        mn, mf = self._mn, self._mf
        written = self._written
        if written.size:
            stale = written[env.empty_slot_mask[written]]
            if stale.size:
                mn[stale] = self._table[0]
                mf[stale] = True
        ks, js, pinned = env.occupied_slots, env.occupied_jobs, env.occupied_pinned
        if ks.size:
            mn[ks] = self._table[self._row_of[js]]
            mf[ks] = True
            if pinned.any():  # a pinned job keeps its n and f: the only valid choice
                pk, pj = ks[pinned], js[pinned]
                sim = env.sim
                mn[pk] = False
                mn[pk, self._values_of(sim.n[pj], pj)] = True
                mf[pk] = False
                mf[pk, sim.fl[pj]] = True
        self._written = ks
        self._built = env.decision_index

    def mask(self) -> np.ndarray:
        self._build()
        return self._flat.copy()  # a fresh array: callers may keep or modify it

    # --- decode -----------------------------------------------------------------------------------------
    def _validated(self, action: Any) -> np.ndarray:
        """``action`` as an int64 array inside the space (fast path for an integer array of the right shape;
        anything else goes through the core validator, which raises with the message)."""
        if isinstance(action, np.ndarray) and action.shape == self._nvec.shape and action.dtype.kind in "iu":
            array = action.astype(np.int64, copy=False)
            if (array.view(np.uint64) < self._nvec_u).all():  # a negative value wraps to a huge one: out too
                return array
        return validated_multidiscrete_action(action, self.space)

    def decode(self, action: Any) -> Decision:
        """Validate, then repair deterministically (docs §10): clip each slot to its mask (empty slots get no
        GPU; pinned jobs keep their n and f; a job asked for more than it may take gets the largest it may),
        then halve while the GPUs asked for exceed the cluster's. Placement and the power repair follow in the
        simulator (and set ``repaired`` too). The decision lists the jobs in job (submit) order."""
        env = self.env
        flat = self._validated(action)
        self._build()
        ks, js = env.occupied_slots, env.occupied_jobs  # in job order
        if ks.size <= SCALAR_SLOTS:
            return self._decode_scalar(flat, ks, js)
        arr = flat.reshape(2, self.K)
        a_n = arr[0]
        n_req, f_req = a_n[ks], arr[1, ks]
        repaired = np.count_nonzero(a_n) != np.count_nonzero(n_req)  # empty slots only allow n = 0
        ok = self._mn[ks, n_req] & self._mf[ks, f_req]
        if ok.all():  # the common case, vectorised
            gpus = self._gpus_of(n_req, js)
            sel = np.flatnonzero(gpus)
            if gpus.sum() <= env.cluster.num_gpus:
                self.repaired = bool(repaired)
                return dict(zip(js[sel].tolist(), zip(gpus[sel].tolist(), f_req[sel].tolist())))
        values, freqs = n_req.tolist(), f_req.tolist()
        for i in np.flatnonzero(~ok).tolist():  # clip the slots outside their masks (Python: a few slots)
            repaired = True
            k, v, f = int(ks[i]), values[i], freqs[i]
            if not self._mn[k, v]:  # the largest allowed value below the asked one, else the smallest
                allowed = np.flatnonzero(self._mn[k])
                below = allowed[allowed <= v]
                values[i] = int(below[-1]) if below.size else int(allowed[0])
            if not self._mf[k, f]:
                freqs[i] = int(np.flatnonzero(self._mf[k])[0])
        gpus = self._gpus_of(np.array(values, dtype=np.int64), js).tolist()  # one lookup for every slot
        want: dict[int, list[int]] = {j: [n, f] for j, n, f in zip(js.tolist(), gpus, freqs) if n > 0}
        if _halve_to_fit(env, want):
            repaired = True
        self.repaired = bool(repaired)
        return _sorted_decision(want)

    def _decode_scalar(self, flat: np.ndarray, ks: np.ndarray, js: np.ndarray) -> Decision:
        """:meth:`decode` for a few occupied slots, in scalar arithmetic: the same decision and ``repaired``."""
        K = self.K
        a = flat.tolist()
        ks_list = ks.tolist()
        repaired = sum(1 for v in a[:K] if v) != sum(1 for k in ks_list if a[k])  # empty slots only allow n = 0
        mn, mf = self._mn, self._mf
        want: dict[int, list[int]] = {}
        for k, j in zip(ks_list, js.tolist()):
            v, f = a[k], a[K + k]
            if not mn.item(k, v):  # the largest allowed value below the asked one, else the smallest
                repaired = True
                allowed = np.flatnonzero(mn[k])
                below = allowed[allowed <= v]
                v = int(below[-1]) if below.size else int(allowed[0])
            if not mf.item(k, f):
                repaired = True
                f = int(np.flatnonzero(mf[k])[0])
            n = self._gpus_of_one(v, j)
            if n > 0:
                want[j] = [n, f]
        if _halve_to_fit(self.env, want):
            repaired = True
        self.repaired = repaired
        return {j: (n, f) for j, (n, f) in want.items()}  # job order: the slots' jobs are listed in it

    def _gpus_of(self, values: np.ndarray, jobs: np.ndarray) -> np.ndarray:  # pragma: no cover - subclasses
        raise NotImplementedError

    def _gpus_of_one(self, value: int, job: int) -> int:  # pragma: no cover - subclasses
        raise NotImplementedError

    def encode(self, decision: Decision) -> np.ndarray:
        """The action giving each slot's job its decided GPUs and frequency; a slotted job the decision leaves
        out keeps its frequency and gets no GPU, unless it is pinned (it keeps its GPUs: the only valid choice).
        Jobs outside the slots (overflow) are dropped."""
        env = self.env
        K = self.K
        a = np.zeros(2 * K, dtype=np.int64)
        a2 = a.reshape(2, K)
        ks, js = env.occupied_slots, env.occupied_jobs
        if ks.size:
            sim = env.sim
            a2[1, ks] = sim.fl[js]
            pinned = env.occupied_pinned
            if pinned.any():
                pj = js[pinned]
                a2[0, ks[pinned]] = self._values_of(sim.n[pj], pj)
        if decision:
            m = len(decision)
            jobs = np.fromiter(decision, dtype=np.int64, count=m)
            nf = np.fromiter(chain.from_iterable(decision.values()), dtype=np.int64, count=2 * m).reshape(m, 2)
            at = env.slot_index[jobs]
            if at.min() < 0:
                seated = at >= 0
                at, nf, jobs = at[seated], nf[seated], jobs[seated]
            a2[0, at] = self._values_of(nf[:, 0], jobs)
            a2[1, at] = nf[:, 1]
        return a

    def _values_of(self, gpus: np.ndarray, jobs: np.ndarray) -> np.ndarray:  # pragma: no cover - subclasses
        raise NotImplementedError


class _Levels(_MaskedSlots):
    """Per slot an n-level (0: no GPU; level l: ``2^(l-1)`` GPUs, up to ``cap``), optionally one more choice
    "the job's requested GPU count" (``with_request``), and an f-level."""

    with_request = False

    def __init__(self, env: PowerFlowEnv, cap: int) -> None:
        self.cap = int(cap)
        self.L = self.cap.bit_length() + 1  # levels 0 .. bit_length(cap)
        self._levels = np.array([0] + [1 << (lv - 1) for lv in range(1, self.L)], dtype=np.int64)
        self._packed = env.config["placement"] in ("packed", "packed-sticky")
        self._req_of = np.zeros(0, dtype=np.int64)  # job -> requested GPUs, capped at G (per episode)
        counts = np.arange(env.cluster.num_gpus + 1)
        self._level_of_count = self._level(counts)  # rounded down to a power of two, capped
        self._inexact = ((counts & (counts - 1)) != 0) | (counts > self.cap)  # a count no level expresses
        super().__init__(env, self.L + int(self.with_request))

    def _level(self, gpus: np.ndarray) -> np.ndarray:
        """The n-level of GPU counts (the bit length: rounds down to a power of two; capped at ``cap``)."""
        capped = np.minimum(gpus, self.cap)
        return np.where(capped > 0, np.floor(np.log2(np.maximum(capped, 1))).astype(np.int64) + 1, 0)

    def _row_table(self) -> np.ndarray:
        levels = np.arange(self.N)
        table = levels[None, :] <= np.arange(self.L)[:, None]  # row l: levels 0 .. l (not the request)
        if not self.with_request:
            return table
        with_request = table.copy()
        with_request[:, self.L] = True
        return np.concatenate([table, with_request])  # rows L + l: levels 0 .. l and the request

    def _rows_of_jobs(self, jobs) -> np.ndarray:
        G = self.env.cluster.num_gpus
        self._req_of = np.minimum(np.asarray(jobs.n_req, dtype=np.int64), G)
        cap = np.minimum(self.cap, np.asarray(jobs.batch_size, dtype=np.int64))
        rows = self._level(cap)
        if self.with_request:  # packed placement takes powers of two (within the job's cap) only
            req = self._req_of
            ok = ((req & (req - 1)) == 0) & (req <= cap) if self._packed else np.ones(req.size, dtype=bool)
            rows = rows + self.L * ok
            # job x value -> GPUs: the levels, then the job's request
            self._gpus_table = np.concatenate([np.broadcast_to(self._levels, (req.size, self.L)), req[:, None]], axis=1)
        return rows

    def _gpus_of(self, values: np.ndarray, jobs: np.ndarray) -> np.ndarray:
        return self._gpus_table[jobs, values] if self.with_request else self._levels[values]

    def _gpus_of_one(self, value: int, job: int) -> int:
        return self._gpus_table.item(job, value) if self.with_request else self._levels.item(value)

    def _values_of(self, gpus: np.ndarray, jobs: np.ndarray) -> np.ndarray:
        gpus = np.minimum(gpus, self._level_of_count.size - 1)
        levels = self._level_of_count[gpus]
        if self.with_request:
            inexact = self._inexact[gpus]
            if inexact.any():  # the job's requested count, where a level cannot express it
                levels[inexact & (gpus == self._req_of[jobs])] = self.L
        return levels


class AllocAction(_Levels):
    """``alloc`` (default): per slot an n-level (0: no GPU; level l: ``2^(l-1)`` GPUs, up to ``min(G, 64)``)
    and an f-level. Mask: ``n <= min(G, 64, BS)``; empty slots only level 0; pinned jobs only their current
    n and f. A requested GPU count that is not a power of two (the non-elastic baselines) rounds down."""

    name = "alloc"

    def __init__(self, env: PowerFlowEnv) -> None:
        super().__init__(env, env.n_cap)


class RequestAction(_Levels):
    """``request``: ``MultiDiscrete([L+1]*K + [F]*K)``: per slot an n-level up to ``G`` (no cap of 64) or the
    choice ``L`` "the job's requested GPU count" (capped at ``G``; a power of two or not, as the non-elastic
    baselines run), then an f-level. Mask: levels up to ``min(G, BS)``; the request under a non-migrating
    placement (``first-fit``, ``affinity``), under packed placement only when it is a power of two within the
    cap; empty slots only level 0; pinned jobs only their current n and f. Every reference policy's decision
    encodes exactly, which is why :func:`~joulegym.baselines.powerflow_simulate.simulate` runs in this mode."""

    name = "request"
    with_request = True

    def __init__(self, env: PowerFlowEnv) -> None:
        super().__init__(env, env.cluster.num_gpus)


class MicroAction(ActionType):
    """``micro``: ``Discrete(2K+1)``. Action ``k < K`` gives slot k its next power-of-two block (0 -> 1 -> 2
    -> 4 ...), ``K + k`` raises slot k's f one level, ``2K`` commits. Each decision point starts from n = 0 and
    the most energy-efficient f (pinned jobs: their current n and f), as Algorithm 1 does. Only the commit
    advances time; the other steps return :data:`~joulegym.core.actions.NO_DECISION` (reward 0). A masked-out
    micro action is a no-op and sets ``repaired``."""

    name = "micro"

    def __init__(self, env: PowerFlowEnv) -> None:
        super().__init__(env)
        self.K = env.K
        self.space = gym.spaces.Discrete(2 * env.K + 1)
        self._at = -1
        self._n: dict[int, int] = {}
        self._f: dict[int, int] = {}

    @property
    def has_mask(self) -> bool:
        return True

    def reset(self) -> None:
        super().reset()
        self._at = -1

    def _state(self) -> tuple[dict[int, int], dict[int, int]]:
        """Per occupied slot the pending ``(n, f)`` of this decision point."""
        env = self.env
        if self._at != env.decision_index:
            sim = env.sim
            self._n, self._f = {}, {}
            for k, j, pinned in sorted(zip(env.occupied_slots.tolist(), env.occupied_jobs.tolist(),
                                           env.occupied_pinned.tolist())):  # slot order
                if pinned:
                    self._n[k], self._f[k] = int(sim.n[j]), int(sim.fl[j])
                else:
                    self._n[k], self._f[k] = 0, env.f_ee(j)
            self._at = env.decision_index
        return self._n, self._f

    def mask(self) -> np.ndarray:
        env = self.env
        n, f = self._state()
        K = self.K
        m = np.zeros(2 * K + 1, dtype=bool)
        used = sum(n.values())
        G = env.cluster.num_gpus
        bs = env.sim.jobs.batch_size
        for k, j, pinned in zip(env.occupied_slots.tolist(), env.occupied_jobs.tolist(),
                                env.occupied_pinned.tolist()):
            if pinned:
                continue
            nxt = 1 if n[k] == 0 else 2 * n[k]
            m[k] = nxt <= min(env.n_cap, int(bs[j])) and used + nxt - n[k] <= G
            m[K + k] = n[k] > 0 and f[k] < env.F - 1
        m[2 * K] = True
        return m

    def decode(self, action: Any) -> Any:
        env = self.env
        a = validated_discrete_action(action, self.space)
        n, f = self._state()
        K = self.K
        if a < 2 * K:
            env.steps += 1  # a step without a transition still counts towards max_steps
            self.repaired = not bool(self.mask()[a])  # a masked-out micro action is a no-op, flagged
            if not self.repaired:
                if a < K:
                    n[a] = 1 if n[a] == 0 else 2 * n[a]
                else:
                    f[a - K] += 1
            return NO_DECISION
        self.repaired = False
        items = env.slot_items
        return _sorted_decision({items[k]: [n[k], f[k]] for k in n if n[k] > 0})

    def encode(self, decision: Decision) -> int:
        """The next micro action towards ``decision``: grow the first slot (in slot order) whose job should
        have more GPUs, else raise the first slot whose f is below the decided one, else commit."""
        env = self.env
        n, f = self._state()
        K = self.K
        pinned = env.pinned_jobs
        items = env.slot_items
        for k in n:
            j = items[k]
            if j not in pinned and decision.get(j, (0, 0))[0] > n[k]:
                return k
        for k in n:
            j = items[k]
            if j not in pinned and decision.get(j, (0, 0))[0] > 0 and decision[j][1] > f[k]:
                return K + k
        return 2 * K


class PriorityAction(ActionType):
    """``priority``: ``Box(0, 1, (K+1,))``, per-slot scores and a power-usage fraction ``u``. The env's greedy
    gives one GPU (at the job's most energy-efficient f) to each job in score order while GPUs remain and the
    predicted job power stays under ``u * PL``, then doubles allocations round-robin in score order, then raises
    frequencies in score order (pinned jobs keep theirs; their GPUs and planned power are taken off first)."""

    name = "priority"

    def __init__(self, env: PowerFlowEnv) -> None:
        super().__init__(env)
        self.K = env.K
        self.space = gym.spaces.Box(0.0, 1.0, (env.K + 1,), dtype=np.float32)

    def decode(self, action: Any) -> Decision:
        env = self.env
        a = validated_box_action(action, self.space)
        K = self.K
        sim = env.sim
        limit = float(a[K]) * sim.power_limit
        slots = list(zip(env.occupied_slots.tolist(), env.occupied_jobs.tolist(), env.occupied_pinned.tolist()))
        pinned = [j for _, j, p in slots if p]
        G = env.cluster.num_gpus - sum(int(sim.n[j]) for j in pinned)
        power = float(sim.planned_power(pinned).sum())
        order = [j for _, _, j in sorted((-a[k], k, j) for k, j, p in slots if not p)]  # score, then slot order
        n: dict[int, int] = {}
        f: dict[int, int] = {}
        pw: dict[int, float] = {}
        n_cap = env.n_cap
        bs = sim.jobs.batch_size

        def p_of(j: int, nn: int, ff: int) -> float:
            T, E = env.job_tables(j)
            lv = nn.bit_length() - 1
            return float(E[lv, ff] / T[lv, ff])

        for j in order:
            ff = env.f_ee(j)
            p = p_of(j, 1, ff)
            if G >= 1 and power + p <= limit:
                n[j], f[j], pw[j] = 1, ff, p
                G -= 1
                power += p
        grew = True
        while grew:
            grew = False
            for j in order:
                if j not in n or 2 * n[j] > min(n_cap, int(bs[j])) or n[j] > G:
                    continue
                p = p_of(j, 2 * n[j], f[j])
                if power + p - pw[j] <= limit:
                    G -= n[j]
                    power += p - pw[j]
                    n[j] *= 2
                    pw[j] = p
                    grew = True
        for j in order:
            while j in n and f[j] < env.F - 1:
                p = p_of(j, n[j], f[j] + 1)
                if power + p - pw[j] > limit:
                    break
                power += p - pw[j]
                f[j] += 1
                pw[j] = p
        self.repaired = False
        return _sorted_decision({j: [n[j], f[j]] for j in n})

    def encode(self, decision: Decision) -> np.ndarray:
        """Scores that rank the decided jobs by their GPU count (an approximation: the greedy re-decides)."""
        env = self.env
        K = self.K
        a = np.zeros(K + 1, dtype=np.float32)
        for k, j in zip(env.occupied_slots.tolist(), env.occupied_jobs.tolist()):
            n = decision.get(j, (0, 0))[0]
            if n > 0:
                a[k] = 0.5 + 0.5 * min(1.0, math.log2(n + 1) / 7.0)
        a[K] = 1.0
        return a


ACTION_TYPES: dict[str, type[ActionType]] = {"alloc": AllocAction, "request": RequestAction, "micro": MicroAction,
                                             "priority": PriorityAction}
