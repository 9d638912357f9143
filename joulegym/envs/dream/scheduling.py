"""DREAM's algorithms and every scheduler the paper compares against (Kim et al., ASPLOS'23 §3-§5;
``docs/families/dream.md`` §2-§3).

Pure functions (usable without a simulator; the tier-A tests call them):

- :func:`map_score_terms` / :func:`map_score`: MapScore, Algorithm 1 lines 1-15 (§3.1-§3.5).
- :func:`uxcost`: Algorithm 2 (§3.6), re-exported from the simulator.
- :func:`smart_drop_conditions` / :func:`smart_drop_select`: the four smart-frame-drop conditions and the
  selection rule (§4.2.1).
- :func:`select_variant`: Supernet switching (§4.5.1, docs §3 #12).
- :class:`ParamSearch` / :func:`optimize`: the alpha/beta search (§3.6) as ask/tell;
  :class:`AdaptivityEngine`: the online engine (§4.4).

Schedulers share one protocol: ``name``, ``reset(sim, seed=None)`` and ``decide(view) -> Dispatch | Drop |
Wait`` (one decision per call; the simulator asks again at the same time while an idle accelerator and a
ready task remain). :func:`run_episode` and :func:`run_window` run one directly on a
:class:`~joulegym.envs.dream.simulator.DreamSim`; the env wraps the same objects as core policies.

=====================  ================================================================================
``dream-full``         MapScore + tuned alpha/beta + smart frame drop + Supernet switching (Table 4)
``dream-smartdrop``    MapScore + tuned alpha/beta + smart frame drop
``dream-mapscore``     MapScore + tuned alpha/beta
``mapscore-fixed``     MapScore with alpha = beta = 1 (the Fig. 9 ablation baseline)
``fcfs``               oldest request first, whole model on the first idle accelerator [P §5]
``fcfs-static``        FCFS planned offline with worst-case durations, started at the reserved slot (Fig. 2)
``veltair``            threshold-based layer blocks, earliest deadline, lowest-id idle accelerator [P §5]
``planaria``           least-slack task, smallest accelerator that meets its deadline [P §5]
``edf``                earliest deadline first, fastest idle accelerator per layer (not in the paper)
``random``             a uniformly random (ready task, idle accelerator) pair (not in the paper)
=====================  ================================================================================

"Tuned" alpha/beta ([A]): by default each DREAM variant locks its parameters with the offline
search on a tuning run (``tune_seed``, a seed no evaluation uses) of the same workload and hardware, cached
per configuration; ``tuning="online"`` runs the online adaptivity engine inside the episode instead, and
``tuning="fixed"`` uses the given alpha, beta.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from joulegym.envs.dream.simulator import (
    ALL_LAYERS,
    EPS_SLACK_S,
    WAIT,
    Dispatch,
    DreamSim,
    DreamView,
    Drop,
    Wait,
    uxcost,
)

__all__ = [
    "SCHEDULER_NAMES",
    "AdaptivityEngine",
    "DreamScheduler",
    "EDFScheduler",
    "FCFSScheduler",
    "ParamSearch",
    "PlanariaScheduler",
    "RandomScheduler",
    "Scheduler",
    "StaticFCFSScheduler",
    "VeltairScheduler",
    "episode_evaluator",
    "grid_optimum",
    "make_scheduler",
    "map_score",
    "map_score_terms",
    "optimize",
    "run_episode",
    "run_window",
    "select_variant",
    "smart_drop_conditions",
    "smart_drop_select",
    "uxcost",
]

PARAM_LO, PARAM_HI = 0.0, 2.0  # alpha, beta search range [P §5.2]
MAX_DROPS, DROP_WINDOW = 2, 10  # at most 2 drops per 10 frames [P §4.2.1, §5.1]
TUNE_SEED = 1_000_003  # the offline tuning run's seed [A]: evaluation seeds are small ints, never this one


# ================================================================================================ pure
def map_score_terms(to_go: float, slack: float, t_queue: float, lat_next: Sequence[float],
                    energy_next: Sequence[float], acc: int, switch_energy: float) -> dict[str, float]:
    """The unit scores of Algorithm 1 for one (task, accelerator) pair (§3.1-§3.4).

    :param to_go: ToGo(tsk), line 2: remaining latency averaged over accelerators.
    :param slack: Slack(tsk) = T_deadline - T_curr, line 3 (<= 0 is replaced by 1 us, docs §3 #5).
    :param t_queue: T_queue(tsk) = T_curr - T_cmpl(tsk), line 4.
    :param lat_next: Est_Latency(NextLayer(tsk), i) for every accelerator i.
    :param energy_next: Est_Energy(NextLayer(tsk), i) for every accelerator i.
    :param acc: the accelerator scored.
    :param switch_energy: CswitchEnergy(tsk, acc.prevTask, acc), line 10.
    :returns: ``urgency`` (line 7), ``lat_pref`` (8), ``starvation`` (9), ``cost_switch`` (10),
        ``pref_energy`` (11), ``energy`` (12).
    """
    n_acc = len(lat_next)
    if slack <= 0:
        slack = EPS_SLACK_S
    sum_lat = float(sum(lat_next))
    sum_en = float(sum(energy_next))
    e_acc = max(float(energy_next[acc]), 1e-30)
    cost_switch = switch_energy / e_acc
    pref_energy = sum_en / e_acc
    return {
        "urgency": to_go / slack,
        "lat_pref": sum_lat / float(lat_next[acc]),
        "starvation": t_queue / (sum_lat / n_acc),
        "cost_switch": cost_switch,
        "pref_energy": pref_energy,
        "energy": pref_energy - cost_switch,
    }


def map_score(to_go: float, slack: float, t_queue: float, lat_next: Sequence[float], energy_next: Sequence[float],
              acc: int, switch_energy: float, alpha: float, beta: float) -> float:
    """MapScore(tsk, acc), Algorithm 1 lines 14-15: ``Urgency x LatPref + alpha Starv + beta Energy``."""
    s = map_score_terms(to_go, slack, t_queue, lat_next, energy_next, acc, switch_energy)
    return s["urgency"] * s["lat_pref"] + alpha * s["starvation"] + beta * s["energy"]


def smart_drop_conditions(min_to_go: Sequence[float], slack: Sequence[float], is_leaf: Sequence[bool],
                          drops_in_window: Sequence[int], active: Sequence[bool] | None = None, *,
                          max_drops: int = MAX_DROPS) -> list[tuple[bool, bool, bool, bool]]:
    """The four conditions of smart frame drop (§4.2.1) for each outstanding frame, as ``(c1, c2, c3, c4)``.

    1. deadline-violation likelihood: ``minimum_to_go > Slack``;
    2. multi-model violation: at least 2 active frames (the candidate included) satisfy condition 1
       (docs §3 #9; ``active`` marks which frames count, default all outstanding);
    3. dependency-free: the frame's model is the last of its pipeline (``is_leaf``);
    4. maximum drop rate: fewer than ``max_drops`` drops among its model's last 10 released frames (docs §3 #10).
    """
    n = len(min_to_go)
    c1 = [min_to_go[k] > slack[k] for k in range(n)]
    act = [True] * n if active is None else list(active)
    likely = sum(1 for k in range(n) if c1[k] and act[k])
    return [(c1[k], c1[k] and act[k] and likely >= 2, bool(is_leaf[k]), drops_in_window[k] < max_drops)
            for k in range(n)]


def smart_drop_select(min_to_go: Sequence[float], slack: Sequence[float], is_leaf: Sequence[bool],
                      drops_in_window: Sequence[int], active: Sequence[bool] | None = None, *,
                      max_drops: int = MAX_DROPS) -> int:
    """The frame smart drop removes (§4.2.1): among frames meeting all four conditions, the highest
    ``minimum_to_go / Slack`` (+inf when Slack <= 0, docs §3 #5; ties: the first); -1 if none."""
    best, best_ratio = -1, -math.inf
    for k, conds in enumerate(smart_drop_conditions(min_to_go, slack, is_leaf, drops_in_window, active,
                                                    max_drops=max_drops)):
        if not all(conds):
            continue
        ratio = math.inf if slack[k] <= 0 else min_to_go[k] / slack[k]
        if ratio > best_ratio:
            best, best_ratio = k, ratio
    return best


def select_variant(slack: float, to_go_variants: Sequence[float], work_ahead: float) -> int:
    """Supernet switching (§4.5.1, docs §3 #12): the heaviest variant whose load-aware slack
    ``Slack - (W_ahead + ToGo_v)`` is >= 0, else the lightest. ``to_go_variants`` is heaviest -> lightest;
    ``work_ahead`` = Σ ToGo of the other outstanding frames with earlier-or-equal deadlines / N_acc."""
    for v, togo in enumerate(to_go_variants):
        if slack - (work_ahead + togo) >= 0:
            return v
    return len(to_go_variants) - 1


def supernet_variant(view: DreamView, i: int) -> int:
    """Supernet switching for ready task ``i`` at its switch point (§4.5.1, docs §3 #12): :func:`select_variant`
    with ``Slack = deadline - now``, ``ToGo_v`` = mean-over-accelerators latency of the remaining layers of
    variant v, and ``W_ahead`` = Σ ToGo of the other outstanding frames whose deadline is not later / N_acc."""
    now = view.now
    dl = view.f_deadline
    d_i = dl[i]
    ahead = 0.0
    for j in view.outstanding:
        if j != i and dl[j] <= d_i:
            ahead += view.to_go(j)
    n = view.supernet_options(i)
    return select_variant(d_i - now, [view.remaining_mean(i, v) for v in range(n)], ahead / view.n_acc)


# ------------------------------------------------------------------------------------------ parameter search
def _clip(p: tuple[float, float], lo: float, hi: float) -> tuple[float, float]:
    return (min(max(p[0], lo), hi), min(max(p[1], lo), hi))


class ParamSearch:
    """The alpha/beta search of §3.6 as ask/tell (docs §2).

    Each step samples the centre, its 4 neighbours at radius ``r`` and 4 distant pairs at ``2r`` on the
    diagonals (clipped to ``[lo, hi]^2``, duplicates removed), takes the two lowest UXCosts ``(p1, u1)``,
    ``(p2, u2)`` and moves to ``p1 + (p2 - p1) u1 / (u1 + u2)`` [P §3.6: "calculates the difference of the
    minimum two UXCost pairs, and moves to the interpolated point"]; then ``r *= shrink`` until
    ``r < r_min``: with the defaults (0.5, 0.5, 0.03) exactly 5 steps (docs §3 #11).
    """

    def __init__(self, c0: tuple[float, float], *, r0: float = 0.5, shrink: float = 0.5, r_min: float = 0.03,
                 lo: float = PARAM_LO, hi: float = PARAM_HI) -> None:
        if not (0 < shrink < 1 and r0 > 0 and r_min > 0 and lo < hi):
            raise ValueError(f"need r0 > 0, r_min > 0, 0 < shrink < 1 and lo < hi, got r0={r0}, r_min={r_min}, "
                             f"shrink={shrink}, lo={lo}, hi={hi}")
        self.lo, self.hi, self.shrink, self.r_min = lo, hi, shrink, r_min
        self.center = _clip((float(c0[0]), float(c0[1])), lo, hi)
        self.radius = float(r0)
        self.trajectory: list[dict[str, Any]] = []  # one entry per completed step
        self.evaluations: list[tuple[tuple[float, float], float]] = []
        self.best: tuple[tuple[float, float], float] | None = None
        self._pending: list[tuple[float, float]] = []
        self._results: list[tuple[tuple[float, float], float]] = []
        self._start_step()

    @property
    def done(self) -> bool:
        return self.radius < self.r_min

    def _start_step(self) -> None:
        if self.done:
            self._pending = []
            return
        c, r = self.center, self.radius
        cand = [c, (c[0] + r, c[1]), (c[0] - r, c[1]), (c[0], c[1] + r), (c[0], c[1] - r),
                (c[0] + 2 * r, c[1] + 2 * r), (c[0] + 2 * r, c[1] - 2 * r), (c[0] - 2 * r, c[1] + 2 * r),
                (c[0] - 2 * r, c[1] - 2 * r)]
        seen: list[tuple[float, float]] = []
        for p in cand:
            q = _clip(p, self.lo, self.hi)
            q = (round(q[0], 12), round(q[1], 12))
            if q not in seen:
                seen.append(q)
        self._pending = seen
        self._results = []

    def ask(self) -> tuple[float, float] | None:
        """The next pair to evaluate (None when the search is over)."""
        return self._pending[len(self._results)] if not self.done else None

    def tell(self, value: float) -> None:
        """The UXCost of the pair last returned by :meth:`ask`."""
        if self.done:
            raise ValueError("tell() after the search finished")
        p = self._pending[len(self._results)]
        value = float(value)
        self._results.append((p, value))
        self.evaluations.append((p, value))
        if self.best is None or value < self.best[1]:
            self.best = (p, value)
        if len(self._results) == len(self._pending):
            self._finish_step()

    def _finish_step(self) -> None:
        ranked = sorted(self._results, key=lambda pu: pu[1])  # stable: the earlier candidate wins ties
        (p1, u1), (p2, u2) = ranked[0], ranked[1] if len(ranked) > 1 else ranked[0]
        w = u1 / (u1 + u2) if (u1 + u2) > 0 else 0.0
        new = _clip((p1[0] + (p2[0] - p1[0]) * w, p1[1] + (p2[1] - p1[1]) * w), self.lo, self.hi)
        self.trajectory.append({"step": len(self.trajectory) + 1, "center": self.center, "radius": self.radius,
                                "evaluated": list(self._results), "best": p1, "best_uxcost": u1, "next": new})
        self.center = new
        self.radius *= self.shrink
        self._start_step()


def optimize(c0: tuple[float, float], evaluate: Callable[[tuple[float, float]], float], **kwargs: Any) -> ParamSearch:
    """Run :class:`ParamSearch` to the end with ``evaluate(pair) -> UXCost`` (offline mode);
    the locked parameters are ``result.center``; ``result.trajectory`` holds every step."""
    search = ParamSearch(c0, **kwargs)
    while (p := search.ask()) is not None:
        search.tell(evaluate(p))
    return search


def episode_evaluator(sim: DreamSim, variant: str = "mapscore", seed: int | Sequence[int] = TUNE_SEED, *,
                      metric: str = "uxcost", **kwargs: Any) -> Callable[[tuple[float, float]], float]:
    """``evaluate(pair)`` for :func:`optimize`: a full episode of ``sim``'s configuration at ``seed`` (the mean
    over the seeds if several) under DREAM-``variant`` with the fixed pair (offline mode; common random
    numbers, so every pair sees the same workload), returning ``metric`` (``"uxcost"``; Fig. 13 optimises
    ``"dlv_rate"`` or ``"energy_rate"`` instead). Results are memoised per pair."""
    seeds = (int(seed),) if isinstance(seed, int | np.integer) else tuple(int(x) for x in seed)
    if not seeds:
        raise ValueError("seed must be an int or a non-empty sequence of ints")
    runner = sim.spawn(seeds[0], record_timeline=False)
    memo: dict[tuple[float, float], float] = {}

    def evaluate(p: tuple[float, float]) -> float:
        key = (round(float(p[0]), 12), round(float(p[1]), 12))
        if key not in memo:
            values = [run_episode(runner, DreamScheduler(variant, "fixed", key[0], key[1], **kwargs), s)[metric]
                      for s in seeds]
            memo[key] = float(np.mean(values))
        return memo[key]

    evaluate.memo = memo  # type: ignore[attr-defined]
    return evaluate


def grid_optimum(evaluate: Callable[[tuple[float, float]], float], step: float = 0.1, lo: float = PARAM_LO,
                 hi: float = PARAM_HI) -> tuple[tuple[float, float], float, np.ndarray]:
    """Exhaustive grid over ``[lo, hi]^2`` (step 0.1: 441 pairs, our global optimum for Figs. 10/11):
    ``(best pair, best value, values[i_alpha, i_beta])``."""
    n = round((hi - lo) / step) + 1
    axis = np.linspace(lo, hi, n)
    values = np.array([[evaluate((float(a), float(b))) for b in axis] for a in axis])
    ia, ib = np.unravel_index(int(np.argmin(values)), values.shape)
    return (float(axis[ia]), float(axis[ib])), float(values[ia, ib]), values


class AdaptivityEngine:
    """DREAM's online adaptivity engine (§4.4, docs §2), one evaluation window at a time.

    :meth:`step` is called at the end of each window with what was measured under the pair in force and
    returns the pair for the next window: while a search runs, the next candidate of :class:`ParamSearch`
    (one candidate per window; schedules keep being produced); once it finishes, the locked centre. A change
    of the active model list restarts the search (from a random pair at boot, from the locked pair later);
    a drift of the window DLV or drop rate by more than ``delta`` from its value at lock time restarts it
    with radius ``r0_load`` (docs §3 #11; delta = 0.1 absolute, W_eval = 200 ms).
    """

    def __init__(self, *, window_s: float = 0.2, r0: float = 0.5, r0_load: float = 0.25, shrink: float = 0.5,
                 r_min: float = 0.03, delta: float = 0.1, init: tuple[float, float] | None = None,
                 seed: int | None = None) -> None:
        if not window_s > 0:
            raise ValueError(f"window_s={window_s!r} must be > 0")
        self.window_s = float(window_s)
        self.r0, self.r0_load, self.shrink, self.r_min, self.delta = r0, r0_load, shrink, r_min, delta
        self.init = init
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)
        self.models: tuple[int, ...] | None = None
        self.search: ParamSearch | None = None
        self.locked: tuple[float, float] | None = None
        self.params: tuple[float, float] = (1.0, 1.0)
        self.lock_rates: tuple[float, float] | None = None
        self.history: list[dict[str, Any]] = []

    def _start(self, c0: tuple[float, float], r0: float) -> None:
        self.search = ParamSearch(c0, r0=r0, shrink=self.shrink, r_min=self.r_min)
        self.locked = None
        self.params = self.search.ask() or c0

    def step(self, models: Sequence[int], window_uxcost: float | None, dlv_rate: float = 0.0,
             drop_rate: float = 0.0) -> tuple[float, float]:
        """Report the last window (``None`` before the first) and get the (alpha, beta) for the next one."""
        models = tuple(models)
        if window_uxcost is not None:
            self.history.append({"params": self.params, "uxcost": window_uxcost, "dlv_rate": dlv_rate,
                                 "drop_rate": drop_rate, "searching": self.search is not None})
        if models != self.models:  # task-level change (tracking the inference model list, §4.4)
            booting = self.models is None or (self.locked is None and self.search is None)
            self.models = models
            if booting and self.init is None:
                c0 = (float(self.rng.uniform(PARAM_LO, PARAM_HI)), float(self.rng.uniform(PARAM_LO, PARAM_HI)))
            elif booting:
                c0 = self.init
            else:
                c0 = self.locked or self.params
            self._start(c0, self.r0)
            return self.params
        if self.search is not None:
            if window_uxcost is not None:
                self.search.tell(window_uxcost)
            nxt = self.search.ask()
            if nxt is None:
                self.locked = self.search.center
                self.params = self.locked
                self.search = None
                self.lock_rates = None  # set by the first window run under the locked pair
            else:
                self.params = nxt
            return self.params
        if window_uxcost is not None:
            if self.lock_rates is None:
                self.lock_rates = (dlv_rate, drop_rate)
            elif abs(dlv_rate - self.lock_rates[0]) > self.delta or abs(drop_rate - self.lock_rates[1]) > self.delta:
                self._start(self.params, self.r0_load)  # system-load change (§4.4)
        return self.params


# ================================================================================================ schedulers
class Scheduler(Protocol):
    """One protocol for every scheduler (module docstring)."""

    name: str

    def reset(self, sim: DreamSim, seed: int | None = None) -> None: ...

    def decide(self, view: DreamView) -> Dispatch | Drop | Wait: ...


def run_window(sim: DreamSim, scheduler: Scheduler, until_s: float | None = None) -> None:
    """Let ``scheduler`` decide every decision point before ``until_s`` (the episode end when None)."""
    view = sim.view()
    while sim.advance(until_s):
        sim.apply(scheduler.decide(view))


def run_episode(sim: DreamSim, scheduler: Scheduler, seed: int | None = None) -> dict[str, float]:
    """Reset ``sim`` and ``scheduler`` with ``seed``, run to the horizon, return ``sim.metrics()``."""
    sim.reset(seed)
    scheduler.reset(sim, seed)
    run_window(sim, scheduler)
    return sim.metrics()


def _oldest(view: DreamView, tasks: Any) -> int:
    rel = view.f_release
    best, key = -1, None
    for i in tasks:
        k = (rel[i], view.f_model[i], i)
        if key is None or k < key:
            best, key = i, k
    return best


class FCFSScheduler:
    """FCFS [P §5]: "serves the oldest request in the queue immediately if there is a resource available in
    the granularity of the model": the oldest released frame (ties: Table 3 order) runs all its layers on
    the first idle accelerator (docs §3 #23; ``acc_choice="fastest_idle"``: the idle accelerator with the least
    remaining latency for it)."""

    def __init__(self, acc_choice: str = "first_idle", name: str = "fcfs") -> None:
        if acc_choice not in ("first_idle", "fastest_idle"):
            raise ValueError(f"acc_choice={acc_choice!r} is not one of ('first_idle', 'fastest_idle')")
        self.acc_choice = acc_choice
        self.name = name

    def reset(self, sim: DreamSim, seed: int | None = None) -> None:
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
            a = min(idle, key=lambda x: sum(row[x] for row in V.lat[p:]))
        return Dispatch(i, a, ALL_LAYERS)


class StaticFCFSScheduler:
    """Static FCFS (Fig. 2, docs §3 #23): FCFS planned offline with worst-case durations (every cascade
    activated, no skip, no exit) fixes each frame's (start time, accelerator); at run time a frame starts
    exactly at its reserved slot, never early (a frame that is not activated leaves its slot idle; one whose
    accelerator is still busy starts when it frees; one without a slot never runs)."""

    def __init__(self, name: str = "fcfs-static") -> None:
        self.name = name
        self.plan: dict[tuple[int, int], tuple[float, int]] = {}

    def reset(self, sim: DreamSim, seed: int | None = None) -> None:
        planner = sim.spawn(sim.seed, dynamics="worst", record_timeline=True)
        run_window(planner, FCFSScheduler())
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

    def __init__(self, theta_block_s: float = 1e-3, name: str = "veltair") -> None:
        if not theta_block_s > 0:
            raise ValueError(f"theta_block_s={theta_block_s!r} must be > 0")
        self.theta = float(theta_block_s)
        self.name = name
        self._blocks: dict[int, tuple[Any, list[int]]] = {}  # id(variant) -> (variant, block ends)

    def reset(self, sim: DreamSim, seed: int | None = None) -> None:
        pass

    def block_end(self, V: Any) -> list[int]:
        """``end[p]``: the exclusive end of the block containing layer ``p`` of a variant's layer list."""
        hit = self._blocks.get(id(V))
        if hit is None:
            ends = [0] * V.n
            start, acc = 0, 0.0
            starts = []
            for p in range(V.n):
                if p > start and acc + V.mean_lat[p] >= self.theta:
                    starts.append(start)
                    start, acc = p, 0.0
                acc += V.mean_lat[p]
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
        V = view.tables_of(i)
        p = view.f_pos[i]
        return Dispatch(i, idle[0], self.block_end(V)[p] - p)


class PlanariaScheduler:
    """Planaria [P §5] as a multi-accelerator layer scheduler (docs §3 #22, [X: Planaria MICRO'20]): the task
    with the least slack ``deadline - t - min_a rem_a`` first (rem_a = its remaining layers all on a); it
    gets the smallest idle accelerator (fewest PEs; ties: lower latency) that finishes it by its deadline,
    else the idle accelerator with the lowest latency for its next layer. No energy, no drops."""

    def __init__(self, name: str = "planaria") -> None:
        self.name = name
        self._suffix: dict[int, tuple[Any, list[list[float]]]] = {}  # id(variant) -> (variant, suffix sums)

    def reset(self, sim: DreamSim, seed: int | None = None) -> None:
        pass

    def _rem(self, V: Any) -> list[list[float]]:
        hit = self._suffix.get(id(V))
        if hit is None:  # the variant is kept in the value, so its id() cannot be reused
            arr = np.asarray(V.lat)
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
    """Earliest deadline first per layer on the fastest idle accelerator (an extra reference, not in the paper)."""

    def __init__(self, name: str = "edf") -> None:
        self.name = name

    def reset(self, sim: DreamSim, seed: int | None = None) -> None:
        pass

    def decide(self, view: DreamView) -> Dispatch | Drop | Wait:
        idle = view.idle_accs()
        if not idle or not view.ready:
            return WAIT
        dl, rel = view.f_deadline, view.f_release
        i = min(view.ready, key=lambda j: (dl[j], rel[j], j))
        lat = view.next_lat(i)
        return Dispatch(i, min(idle, key=lambda x: (lat[x], x)))


class RandomScheduler:
    """A uniformly random (ready task, idle accelerator) pair, one layer (never drops or waits)."""

    def __init__(self, name: str = "random") -> None:
        self.name = name
        self.rng = np.random.default_rng(0)

    def reset(self, sim: DreamSim, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def decide(self, view: DreamView) -> Dispatch | Drop | Wait:
        idle = view.idle_accs()
        if not idle or not view.ready:
            return WAIT
        ready = list(view.ready)
        k = int(self.rng.integers(len(ready) * len(idle)))
        return Dispatch(ready[k // len(idle)], idle[k % len(idle)])


# ------------------------------------------------------------------------------------------ DREAM
_TUNED: dict[tuple, tuple[float, float]] = {}
_TUNED_MAX = 512


@dataclass
class TuningRecord:
    """What the offline search did (for Fig. 10/11-style reports)."""

    params: tuple[float, float]
    trajectory: list[dict[str, Any]] = field(default_factory=list)


class DreamScheduler:
    """DREAM (§4, Table 4): MapScore dispatch of one layer to the idle accelerator with the highest score,
    with smart frame drop (``smartdrop``, ``full``) and Supernet switching (``full``).

    :param variant: ``"full"``, ``"smartdrop"`` or ``"mapscore"``.
    :param tuning: ``"offline"`` (lock alpha, beta with :func:`optimize` on a tuning run, cached),
        ``"online"`` (the :class:`AdaptivityEngine` inside the episode) or ``"fixed"``.
    :param alpha, beta: the fixed pair (``tuning="fixed"``) and the offline search's start.
    :param active_def: which frames count as "active" for smart-drop Cond 2 (docs §3 #9).
    Ties (docs §2): the earlier release, then the lower accelerator id.
    """

    VARIANTS = ("full", "smartdrop", "mapscore")
    TUNINGS = ("offline", "online", "fixed")

    def __init__(self, variant: str = "full", tuning: str = "offline", alpha: float = 1.0, beta: float = 1.0, *,
                 window_s: float = 0.2, tune_seed: int = TUNE_SEED, max_drops: int = MAX_DROPS,
                 drop_window: int = DROP_WINDOW, active_def: str = "outstanding", name: str | None = None) -> None:
        if variant not in self.VARIANTS:
            raise ValueError(f"variant={variant!r} is not one of {self.VARIANTS}")
        if tuning not in self.TUNINGS:
            raise ValueError(f"tuning={tuning!r} is not one of {self.TUNINGS}")
        for key, value in (("alpha", alpha), ("beta", beta)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not PARAM_LO <= value <= PARAM_HI:
                raise ValueError(f"{key}={value!r} must be in [{PARAM_LO}, {PARAM_HI}]")
        if active_def not in ("outstanding", "started"):
            raise ValueError(f"active_def={active_def!r} is not one of ('outstanding', 'started')")
        self.variant, self.tuning = variant, tuning
        self.smart_drop = variant in ("full", "smartdrop")
        self.supernet = variant == "full"
        self.alpha0, self.beta0 = float(alpha), float(beta)
        self.alpha, self.beta = float(alpha), float(beta)
        self.window_s = float(window_s)
        self.tune_seed = int(tune_seed)
        self.max_drops, self.drop_window, self.active_def = int(max_drops), int(drop_window), active_def
        self.name = name or f"dream-{variant}"
        self.engine: AdaptivityEngine | None = None
        self.tuning_record: TuningRecord | None = None

    def set_params(self, alpha: float, beta: float) -> None:
        """Set (alpha, beta) (DREAMParams-v0's action; clipped to the search range)."""
        self.alpha = min(max(float(alpha), PARAM_LO), PARAM_HI)
        self.beta = min(max(float(beta), PARAM_LO), PARAM_HI)

    def reset(self, sim: DreamSim, seed: int | None = None) -> None:
        self.alpha, self.beta = self.alpha0, self.beta0
        if self.tuning == "offline":
            self.set_params(*self.offline_params(sim))
        elif self.tuning == "online":
            self.engine = AdaptivityEngine(window_s=self.window_s, seed=seed)
            self._w0 = sim.now
            self.set_params(*self.engine.step(sim.active_models(), None))

    def offline_params(self, sim: DreamSim) -> tuple[float, float]:
        """Locked (alpha, beta) for ``sim``'s configuration: :func:`optimize` from (alpha0, beta0) where each
        evaluation is a full episode at ``tune_seed`` with the same variant and fixed parameters (cached)."""
        key = (sim.signature(), self.variant, self.tune_seed, self.alpha0, self.beta0, self.max_drops,
               self.drop_window, self.active_def)
        hit = _TUNED.get(key)
        if hit is not None:
            return hit
        evaluate = episode_evaluator(sim, self.variant, self.tune_seed, max_drops=self.max_drops,
                                     drop_window=self.drop_window, active_def=self.active_def)
        search = optimize((self.alpha0, self.beta0), evaluate)
        params = search.center
        self.tuning_record = TuningRecord(params, search.trajectory)
        if len(_TUNED) >= _TUNED_MAX:
            _TUNED.clear()
        _TUNED[key] = params
        return params

    # -------------------------------------------------------------------------------------- decide
    def _online_tick(self, view: DreamView) -> None:
        engine = self.engine
        now = view.now
        if engine is None or now < self._w0 + engine.window_s:
            return
        sim = view.sim
        w1 = self._w0 + engine.window_s * math.floor((now - self._w0) / engine.window_s)
        stats = sim.window_stats(self._w0, w1)
        frames = sum(stats["frames"])
        ux = uxcost(stats["violated"], stats["frames"], stats["energy"], stats["worst"])["uxcost"]
        dlv = sum(stats["violated"]) / frames if frames else 0.0
        drop = sum(stats["drops"]) / frames if frames else 0.0
        self._w0 = w1
        self.set_params(*engine.step(sim.active_models(), ux if frames else None, dlv, drop))

    def _drop_candidate(self, view: DreamView) -> int:
        """Smart frame drop (§4.2.1), inlined over the outstanding frames."""
        now = view.now
        dl, st = view.f_deadline, view.f_running
        started = self.active_def == "started"
        likely: list[tuple[int, float, float]] = []
        for i in view.outstanding:
            if started and st[i] < 0 and view.f_prev_acc[i] < 0:
                continue
            slack = dl[i] - now
            mtg = view.min_to_go(i)
            if mtg > slack:
                likely.append((i, mtg, slack))
        if len(likely) < 2:  # Cond 2
            return -1
        best, best_ratio = -1, -math.inf
        fm = view.f_model
        for i, mtg, slack in likely:
            m = fm[i]
            if not view.is_leaf(m):  # Cond 3
                continue
            ratio = math.inf if slack <= 0 else mtg / slack
            if ratio > best_ratio and view.drops_in_window(m, self.drop_window) < self.max_drops:  # Cond 4
                best, best_ratio = i, ratio
        return best

    def decide(self, view: DreamView) -> Dispatch | Drop | Wait:
        if self.engine is not None:
            self._online_tick(view)
        if self.smart_drop:
            victim = self._drop_candidate(view)
            if victim >= 0:
                return Drop(victim)
        idle = view.idle_accs()
        if not idle or not view.ready:
            return WAIT
        now = view.now
        n_acc = view.n_acc
        alpha, beta = self.alpha, self.beta
        sim = view.sim
        e_byte = sim.switch_energy_per_byte
        dl, rel, tc, pos = view.f_deadline, view.f_release, view.f_tcmpl, view.f_pos
        best_score, best_i, best_a, best_v = -math.inf, -1, -1, -1
        for i in view.ready:
            V = view.tables_of(i)
            v = -1
            if self.supernet and view.at_switch_point(i):
                v = supernet_variant(view, i)
                V = sim._f_vars[i][v]
            p = pos[i]
            slack = dl[i] - now
            if slack <= 0:
                slack = EPS_SLACK_S
            urgency = V.togo_from[p] / slack
            lat, en = V.lat[p], V.en[p]
            sum_lat, sum_en = V.sum_lat[p], V.sum_en[p]
            base = alpha * (now - tc[i]) / (sum_lat / n_acc)
            for a in idle:
                e_a = en[a] if en[a] > 0 else 1e-30
                # Alg 1 lines 14-15 with Score_Energy = (Σ_a E - CswitchEnergy) / E_acc (lines 10-12)
                e_switch = sim._switch_bytes_at(i, a, V, p) * e_byte
                score = urgency * sum_lat / lat[a] + base + beta * (sum_en - e_switch) / e_a
                if score > best_score or (score == best_score and (rel[i], a) < (rel[best_i], best_a)):
                    best_score, best_i, best_a, best_v = score, i, a, v
        return Dispatch(best_i, best_a, 1, best_v)


# ------------------------------------------------------------------------------------------ registry
SCHEDULER_NAMES = ("dream-full", "dream-smartdrop", "dream-mapscore", "mapscore-fixed", "fcfs", "fcfs-static",
                   "veltair", "planaria", "edf", "random")
MULTI_LAYER = frozenset({"fcfs", "fcfs-static", "veltair"})  # dispatch more than one layer per decision


def make_scheduler(name: str, **kwargs: Any) -> Scheduler:
    """A scheduler by name (:data:`SCHEDULER_NAMES`); keywords go to its constructor."""
    if name in ("dream-full", "dream-smartdrop", "dream-mapscore"):
        return DreamScheduler(name.split("-", 1)[1], name=name, **kwargs)
    if name == "mapscore-fixed":
        kwargs.setdefault("alpha", 1.0)
        kwargs.setdefault("beta", 1.0)
        return DreamScheduler("mapscore", "fixed", name=name, **kwargs)
    factories: dict[str, Callable[..., Scheduler]] = {
        "fcfs": FCFSScheduler, "fcfs-static": StaticFCFSScheduler, "veltair": VeltairScheduler,
        "planaria": PlanariaScheduler, "edf": EDFScheduler, "random": RandomScheduler}
    if name not in factories:
        raise ValueError(f"scheduler={name!r} is not one of {list(SCHEDULER_NAMES)}")
    return factories[name](**kwargs)
