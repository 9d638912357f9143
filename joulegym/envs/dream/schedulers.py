"""The schedulers DREAM is compared with (Kim et al., ASPLOS'23 §5 "Schedulers", Fig. 2; ``docs/families/dream.md``
§3 #22-#23), as inner policies of :class:`~joulegym.envs.dream.simulator.DreamSim`.

=====================  ================================================================================
``fcfs``               oldest request first, whole model on the first idle accelerator [P §5]
``fcfs-static``        FCFS planned offline with worst-case durations, started at the reserved slot (Fig. 2)
``veltair``            threshold-based layer blocks, earliest deadline, lowest-id idle accelerator [P §5]
``planaria``           least slack x minimal resource first, late frames last; smallest sufficient acc. [P §5]
``edf``                earliest deadline first, fastest idle accelerator per unit (not in the paper)
``random-dispatch``    a uniformly random (ready task, idle accelerator) pair (not in the paper)
=====================  ================================================================================

Each reads what a real scheduler on the SoC knows (queues, deadlines, the offline cost tables; static FCFS
also the release schedule, which is periodic and known): none is privileged. DREAM itself is
:class:`joulegym.envs.dream.mapscore.DreamPolicy`.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from joulegym.core.inner import run_inner
from joulegym.envs.dream.tables import ALL_LAYERS, EPS_SLACK_S, WAIT, Dispatch, Drop, Wait
from joulegym.envs.dream.view import DreamView


def _oldest(view: DreamView, tasks: Any) -> int:
    rel, model = view.f_release, view.f_model
    best, key = -1, None
    for i in tasks:
        k = (rel[i], model[i], i)
        if key is None or k < key:
            best, key = i, k
    return best


class FCFSScheduler:
    """FCFS [P §5]: "serves the oldest request in the queue immediately if there is a resource available in
    the granularity of the model": the oldest released frame (ties: Table 3 order) runs all its layers on
    the first idle accelerator (docs §3 #23; ``acc_choice="fastest_idle"``: the idle accelerator with the least
    remaining latency for it)."""

    privileged = False

    def __init__(self, acc_choice: str = "first_idle", name: str = "fcfs") -> None:
        if acc_choice not in ("first_idle", "fastest_idle"):
            raise ValueError(f"acc_choice={acc_choice!r} is not one of ('first_idle', 'fastest_idle')")
        self.acc_choice = acc_choice
        self.name = name

    def reset(self, sim: Any, rng: np.random.Generator) -> None:
        pass

    def decide(self, view: DreamView) -> Dispatch | Drop | Wait:
        idle = view.idle_accs()
        if not idle or not view.ready:
            return WAIT
        i = _oldest(view, view.ready)
        a = idle[0]
        if self.acc_choice == "fastest_idle" and len(idle) > 1:
            V = view.tables_of(i)
            p = view.f_pos[i]
            a = min(idle, key=lambda x: sum(row[x] for row in V.lat_l[p:]))
        return Dispatch(i, a, ALL_LAYERS)


class StaticFCFSScheduler:
    """Static FCFS (Fig. 2, docs §3 #23): FCFS planned offline with worst-case durations (every cascade
    activated, no skip, no exit) fixes each frame's (start time, accelerator); at run time a frame starts
    exactly at its reserved slot, never early (a frame that is not activated leaves its slot idle; one whose
    accelerator is still busy starts when it frees; one without a slot never runs). It waits on purpose while an
    accelerator is idle, so its env runs with ``work_conserving=False`` (``env_config``; docs §4)."""

    privileged = False
    env_config: ClassVar[dict[str, Any]] = {"work_conserving": False}

    def __init__(self, name: str = "fcfs-static") -> None:
        self.name = name
        self.plan: dict[tuple[int, int], tuple[float, int]] = {}

    def reset(self, sim: Any, rng: np.random.Generator) -> None:
        planner = sim.spawn(dynamics="worst", record_timeline=True)
        run_inner(planner, FCFSScheduler(), 0, instance=sim.episode_key)
        self.plan = {(m, k): (t0, a) for a, t0, _t1, m, k, _i in planner.timeline}

    def decide(self, view: DreamView) -> Dispatch | Drop | Wait:
        now = view.now
        wake = math.inf
        best = None
        for i in view.ready:
            slot = self.plan.get((view.f_model[i], view.f_frame[i]))
            if slot is None:
                continue
            t0, a = slot
            if t0 <= now + 1e-12:
                if view.acc_running[a] < 0 and (best is None or (t0, i) < best[0]):
                    best = ((t0, i), a)
            elif t0 < wake:
                wake = t0
        if best is not None:
            return Dispatch(best[0][1], best[1], ALL_LAYERS)
        return Wait(wake if wake < math.inf else None)


class VeltairScheduler:
    """Veltair [P §5] (docs §3 #22): layers grouped offline into blocks (consecutive layers appended while
    the block's mean-over-accelerators latency stays below ``theta_block_s``, 1 ms, docs §3 #22); ready blocks by
    earliest deadline on the lowest-id idle accelerator (heterogeneity-unaware, no energy, no drops)."""

    privileged = False

    def __init__(self, theta_block_s: float = 1e-3, name: str = "veltair") -> None:
        if isinstance(theta_block_s, bool) or not isinstance(theta_block_s, int | float) or not theta_block_s > 0:
            raise ValueError(f"theta_block_s={theta_block_s!r} must be > 0")
        self.theta = float(theta_block_s)
        self.name = name
        self._blocks: dict[int, tuple[Any, list[int]]] = {}  # id(variant) -> (variant, block ends)

    def reset(self, sim: Any, rng: np.random.Generator) -> None:
        pass

    def block_end(self, V: Any) -> list[int]:
        """``end[p]``: the exclusive end of the block containing layer ``p`` of a variant's layer list."""
        hit = self._blocks.get(id(V))
        if hit is None:  # the variant is kept in the value, so its id() cannot be reused
            mean = V.mean_lat_l
            ends = [0] * V.n
            start, acc = 0, 0.0
            starts = []
            for p in range(V.n):
                if p > start and acc + mean[p] >= self.theta:
                    starts.append(start)
                    start, acc = p, 0.0
                acc += mean[p]
            starts.append(start)
            bounds = [*starts, V.n]
            for b in range(len(starts)):
                for p in range(bounds[b], bounds[b + 1]):
                    ends[p] = bounds[b + 1]
            hit = self._blocks[id(V)] = (V, ends)
        return hit[1]

    def decide(self, view: DreamView) -> Dispatch | Drop | Wait:
        idle = view.idle_accs()
        if not idle or not view.ready:
            return WAIT
        dl, rel = view.f_deadline, view.f_release
        i = min(view.ready, key=lambda j: (dl[j], rel[j], j))
        p = view.f_pos[i]
        return Dispatch(i, idle[0], self.block_end(view.tables_of(i))[p] - p)


PLANARIA_ESTIMATES = ("pes", "tables")
PLANARIA_RANKS = ("score", "least-slack")


class PlanariaScheduler:
    """Planaria's scheduler [P §5: "spatially co-locates multiple DNNs by dynamically partitioning the compute
    resources layerwise based on timing requirements and resource demands"; X: Ghodrati et al., MICRO'20, and its
    public scheduler, ``he-actlab/planaria.code`` ``scheduler/scheduler.py``] ported to a SoC of sub-accelerators
    (docs §3 #22). A resource allocation is one sub-accelerator per frame, re-decided at every layer boundary
    ("layerwise"); a layer is never split across sub-accelerators nor preempted.

    * Feasibility (``get_possible_num_cores``): with slack = deadline - now, a frame can meet its deadline on
      sub-accelerator a if its remaining layers all on a take at most the slack; its minimal resource is the
      feasible sub-accelerator with the fewest PEs (ties: lower estimate, lower id).
    * Rank (``assign_cores_if_tasks_not_fit``; ``rank="score"``, default): a feasible frame scores
      priority / slack / its minimal resource (every Table 3 model has the same priority); a frame that cannot meet
      its deadline on any sub-accelerator scores -priority / its remaining time on the fastest one and is served
      only after every feasible frame. The highest score goes first. ``rank="least-slack"`` is our earlier
      reading: least ``deadline - now - min_a rem_a`` first, late frames first.
    * Allocation: the frame gets its minimal resource if it is idle, else the smallest idle feasible one, else
      what is left (the idle sub-accelerator with the lowest estimate for its next unit). Planaria's spare-resource
      share has no counterpart here: a layer runs on one sub-accelerator. No energy, no drops.

    :param estimates: what Planaria knows of a layer's latency on an accelerator. ``"tables"`` (default): the
        per-accelerator cost tables DREAM reads (Planaria's scheduler reads per-configuration latency tables
        profiled offline, its "performance summary tables"). ``"pes"``: the accelerator's size only, the narrowest
        reading of §5.2 ("only DREAM considers accelerator size, shape, and dataflow entirely"): the layer's
        PE-seconds averaged over the SoC's accelerators, divided by the accelerator's PEs (dataflow ignored).
    :param rank: ``"score"`` (Planaria's, default) or ``"least-slack"`` (the earlier reading).
    """

    privileged = False

    def __init__(self, estimates: str = "tables", rank: str = "score", name: str = "planaria") -> None:
        if estimates not in PLANARIA_ESTIMATES:
            raise ValueError(f"estimates={estimates!r} is not one of {PLANARIA_ESTIMATES}")
        if rank not in PLANARIA_RANKS:
            raise ValueError(f"rank={rank!r} is not one of {PLANARIA_RANKS}")
        self.estimates = estimates
        self.rank = rank
        self.name = name
        # id(variant) -> (variant, per-position suffix sums rem[p][a], per-position unit estimates lat[p][a])
        self._est: dict[int, tuple[Any, list[list[float]], list[tuple[float, ...]]]] = {}

    def reset(self, sim: Any, rng: np.random.Generator) -> None:
        self._est = {}  # estimates depend on the SoC's PEs

    def _size_only(self, lat: np.ndarray, pes: np.ndarray) -> np.ndarray:
        return (lat * pes).mean(axis=1, keepdims=True) / pes

    def _tables(self, V: Any, pes: tuple[int, ...]) -> tuple[list[list[float]], list[tuple[float, ...]]]:
        hit = self._est.get(id(V))
        if hit is None:  # the variant is kept in the value, so its id() cannot be reused
            lat_l, unit = np.asarray(V.lat_l, dtype=float), V.lat
            if self.estimates == "pes":
                pe = np.asarray(pes, dtype=float)
                lat_l = self._size_only(lat_l, pe)
                unit = [tuple(row) for row in self._size_only(np.asarray(V.lat, dtype=float), pe).tolist()]
            suf = np.concatenate([np.cumsum(lat_l[::-1], axis=0)[::-1], np.zeros((1, lat_l.shape[1]))])
            hit = self._est[id(V)] = (V, suf.tolist(), unit)
        return hit[1], hit[2]

    def _key(self, slack: float, rem: list[float], pes: tuple[int, ...]) -> tuple[int, float]:
        """Sort key (lower first) of a frame with time to deadline ``slack`` and remaining time ``rem[a]``."""
        if self.rank == "least-slack":
            return 0, max(slack - min(rem), EPS_SLACK_S)
        feasible = [pes[a] for a in range(len(rem)) if rem[a] <= slack]
        if feasible:  # score = 1 / slack / minimal resource; higher first
            return 0, slack * min(feasible)
        return 1, 1.0 / min(rem)  # score = -1 / rem on the fastest; higher (closer to 0) first

    def decide(self, view: DreamView) -> Dispatch | Drop | Wait:
        idle = view.idle_accs()
        if not idle or not view.ready:
            return WAIT
        now = view.now
        pes = view.acc_pes
        best, best_key, best_rem, best_lat = -1, None, None, None
        for i in view.ready:
            rem_all, unit = self._tables(view.tables_of(i), pes)
            p = view.f_pos[i]
            rem = rem_all[p]
            key = (*self._key(view.f_deadline[i] - now, rem, pes), view.f_release[i], i)
            if best_key is None or key < best_key:
                best, best_key, best_rem, best_lat = i, key, rem, unit[p]
        dl = view.f_deadline[best]
        lat = best_lat
        feasible = [a for a in idle if now + best_rem[a] <= dl]
        if feasible:
            a = min(feasible, key=lambda x: (pes[x], lat[x], x))
        else:
            a = min(idle, key=lambda x: (lat[x], x))
        return Dispatch(best, a)


class EDFScheduler:
    """Earliest deadline first per unit on the fastest idle accelerator (an extra reference, not in the paper)."""

    privileged = False

    def __init__(self, name: str = "edf") -> None:
        self.name = name

    def reset(self, sim: Any, rng: np.random.Generator) -> None:
        pass

    def decide(self, view: DreamView) -> Dispatch | Drop | Wait:
        idle = view.idle_accs()
        if not idle or not view.ready:
            return WAIT
        dl, rel = view.f_deadline, view.f_release
        i = min(view.ready, key=lambda j: (dl[j], rel[j], j))
        lat = view.next_lat(i)
        return Dispatch(i, min(idle, key=lambda x: (lat[x], x)))


class RandomDispatch:
    """A uniformly random (ready task, idle accelerator) pair, one unit (never drops or waits); its draws come
    from the policy's own stream (:func:`joulegym.core.inner.policy_rng`)."""

    privileged = False

    def __init__(self, name: str = "random-dispatch") -> None:
        self.name = name
        self.rng = np.random.default_rng(0)

    def reset(self, sim: Any, rng: np.random.Generator) -> None:
        self.rng = rng

    def decide(self, view: DreamView) -> Dispatch | Drop | Wait:
        idle = view.idle_accs()
        if not idle or not view.ready:
            return WAIT
        ready = list(view.ready)
        k = int(self.rng.integers(len(ready) * len(idle)))
        return Dispatch(ready[k // len(idle)], idle[k % len(idle)])
