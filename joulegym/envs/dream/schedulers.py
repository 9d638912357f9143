"""The schedulers DREAM is compared with (Kim et al., ASPLOS'23 §5 "Schedulers", Fig. 2; ``docs/families/dream.md``
§3 #22-#23), as inner policies of :class:`~joulegym.envs.dream.simulator.DreamSim`.

=====================  ================================================================================
``fcfs``               oldest request first, whole model on the first idle accelerator [P §5]
``fcfs-static``        FCFS planned offline with worst-case durations, started at the reserved slot (Fig. 2)
``veltair``            threshold-based layer blocks, earliest deadline, lowest-id idle accelerator [P §5]
``planaria``           least-slack task, smallest accelerator that meets its deadline [P §5]
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


class PlanariaScheduler:
    """Planaria [P §5] as a multi-accelerator layer scheduler (docs §3 #22, [X: Planaria MICRO'20]): the task
    with the least slack ``deadline - t - min_a rem_a`` first (rem_a = its remaining layers all on a); it
    gets the smallest idle accelerator (fewest PEs; ties: lower latency) that finishes it by its deadline,
    else the idle accelerator with the lowest latency for its next unit. No energy, no drops."""

    privileged = False

    def __init__(self, name: str = "planaria") -> None:
        self.name = name
        self._suffix: dict[int, tuple[Any, list[list[float]]]] = {}  # id(variant) -> (variant, suffix sums)

    def reset(self, sim: Any, rng: np.random.Generator) -> None:
        pass

    def _rem(self, V: Any) -> list[list[float]]:
        hit = self._suffix.get(id(V))
        if hit is None:  # the variant is kept in the value, so its id() cannot be reused
            arr = np.asarray(V.lat_l)
            suf = np.concatenate([np.cumsum(arr[::-1], axis=0)[::-1], np.zeros((1, arr.shape[1]))])
            hit = self._suffix[id(V)] = (V, suf.tolist())
        return hit[1]

    def decide(self, view: DreamView) -> Dispatch | Drop | Wait:
        idle = view.idle_accs()
        if not idle or not view.ready:
            return WAIT
        now = view.now
        best, best_key, best_rem = -1, None, None
        for i in view.ready:
            rem = self._rem(view.tables_of(i))[view.f_pos[i]]
            slack = max(view.f_deadline[i] - now - min(rem), EPS_SLACK_S)
            key = (slack, view.f_release[i], i)
            if best_key is None or key < best_key:
                best, best_key, best_rem = i, key, rem
        dl = view.f_deadline[best]
        lat = view.next_lat(best)
        feasible = [a for a in idle if now + best_rem[a] <= dl]
        pes = view.acc_pes
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
