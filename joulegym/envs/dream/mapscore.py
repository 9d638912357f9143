"""DREAM's scheduler (Kim et al., ASPLOS'23 §3-§4, Table 4; ``docs/families/dream.md`` §2): MapScore
(Algorithm 1), smart frame drop (§4.2.1), Supernet switching (§4.5.1, Fig. 6) and the (alpha, beta) tuning
(§3.6 offline, §4.4 online), as the inner policy :class:`DreamPolicy`.

Pure functions (usable without a simulator; the unit tests call them): :func:`map_score_terms`,
:func:`map_score`, :func:`smart_drop_conditions`, :func:`smart_drop_select`, :func:`select_variant`.

"Tuned" alpha/beta ([A]): by default each DREAM variant locks its parameters with the offline search of §3.6 on
a tuning episode (a key no evaluation uses) of the same workload and hardware, cached per configuration;
``tuning="online"`` runs the adaptivity engine inside the episode instead, ``tuning="fixed"`` keeps the given
alpha, beta (what ``DREAMParams-v0``'s agent sets).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from joulegym.core.cache import BoundedCache
from joulegym.core.inner import policy_rng, run_inner
from joulegym.envs.dream.search import PARAM_HI, PARAM_LO, AdaptivityEngine, optimize
from joulegym.envs.dream.tables import EPS_SLACK_S, WAIT, Dispatch, Drop, Wait, uxcost
from joulegym.envs.dream.view import OUTSTANDING, DreamView

MAX_DROPS, DROP_WINDOW = 2, 10  # at most 2 drops per 10 frames [P §4.2.1, §5.1]
TUNE_KEY = 1_000_003  # the offline tuning episode's key [A]: evaluation episodes draw theirs from their seed
TUNE_HORIZON_S = 1.0  # the offline tuning episode's length [A] (docs §3 #11; the episode's own if shorter)
TUNE_EPISODES = 1  # tuning episodes per (alpha, beta) candidate, keys TUNE_KEY + k [A] (docs §3 #11)
SUPERNET_RULES = ("slack", "load-aware")
LATE_URGENCY = ("clamp", "signed")
ASSIGNMENTS = ("idle", "table")


# ================================================================================================ pure
def urgency_slack(slack: float, clamp: bool) -> float:
    """Slack(tsk) as Urgency divides by it (Algorithm 1 line 7): 0 becomes 1 us; a negative slack stays (signed,
    the paper) or becomes 1 us too (``clamp``, the earlier reading; docs §3 #5)."""
    return EPS_SLACK_S if slack <= 0 and (clamp or slack == 0) else slack


def map_score_terms(to_go: float, slack: float, t_queue: float, lat_next: Sequence[float],
                    energy_next: Sequence[float], acc: int, switch_energy: float, *,
                    late_urgency: str = "signed") -> dict[str, float]:
    """The unit scores of Algorithm 1 for one (task, accelerator) pair (§3.1-§3.4).

    :param to_go: ToGo(tsk), line 2: remaining latency averaged over accelerators.
    :param slack: Slack(tsk) = T_deadline - T_curr, line 3. ``late_urgency="signed"`` (Algorithm 1 as written):
        a late frame's negative slack makes its urgency negative (0 is replaced by 1 us); ``"clamp"`` (our earlier
        reading): slack <= 0 is replaced by 1 us, so a late frame gets the largest urgency (docs §3 #5).
    :param t_queue: T_queue(tsk) = T_curr - T_cmpl(tsk), line 4.
    :param lat_next: Est_Latency(NextLayer(tsk), i) for every accelerator i.
    :param energy_next: Est_Energy(NextLayer(tsk), i) for every accelerator i.
    :param acc: the accelerator scored.
    :param switch_energy: CswitchEnergy(tsk, acc.prevTask, acc), line 10.
    :returns: ``urgency`` (line 7), ``lat_pref`` (8), ``starvation`` (9), ``cost_switch`` (10),
        ``pref_energy`` (11), ``energy`` (12).
    """
    n_acc = len(lat_next)
    if late_urgency not in LATE_URGENCY:
        raise ValueError(f"late_urgency={late_urgency!r} is not one of {LATE_URGENCY}")
    slack = urgency_slack(slack, late_urgency == "clamp")
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
              acc: int, switch_energy: float, alpha: float, beta: float, *, late_urgency: str = "signed") -> float:
    """MapScore(tsk, acc), Algorithm 1 lines 14-15: ``Urgency x LatPref + alpha Starv + beta Energy``."""
    s = map_score_terms(to_go, slack, t_queue, lat_next, energy_next, acc, switch_energy, late_urgency=late_urgency)
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


def select_variant(slack: float, to_go_variants: Sequence[float], work_ahead: float = 0.0) -> int:
    """Supernet switching (§4.5.1, Fig. 6): the heaviest variant whose slack ``Slack - (W_ahead + ToGo_v)`` is
    >= 0, else the lightest. ``to_go_variants`` is heaviest -> lightest; ``work_ahead`` the work expected
    before the frame's own (0 in the Fig. 6 reading, docs §3 #12)."""
    for v, togo in enumerate(to_go_variants):
        if slack - (work_ahead + togo) >= 0:
            return v
    return len(to_go_variants) - 1


def supernet_variant(view: DreamView, i: int, rule: str = "slack") -> int:
    """The sub-net of ready task ``i`` at its switch point (§4.5.1; docs §3 #12): :func:`select_variant` with
    ``Slack = deadline - now`` and ``ToGo_v`` the mean-over-accelerators latency of variant v's remaining
    layers (Alg. 1's ToGo: the frame's expected completion time). ``rule="slack"`` (Fig. 6: "slack = remaining
    time until deadline - expected completion time", so the original runs unless the frame itself is behind);
    ``rule="load-aware"`` also counts the ToGo of every other outstanding frame due no later, over N_acc."""
    now = view.now
    dl = view.f_deadline
    d_i = dl[i]
    ahead = 0.0
    if rule == "load-aware":
        for j in view.outstanding:
            if j != i and dl[j] <= d_i:
                ahead += view.to_go(j)
        ahead /= view.n_acc
    n = view.supernet_options(i)
    return select_variant(d_i - now, [view.remaining_mean(i, v) for v in range(n)], ahead)


def clip_pair(alpha: float, beta: float) -> tuple[float, float]:
    """(alpha, beta) clipped to the search range [PARAM_LO, PARAM_HI] (§5.2)."""
    return min(max(float(alpha), PARAM_LO), PARAM_HI), min(max(float(beta), PARAM_LO), PARAM_HI)


# ================================================================================================ tuning
_TUNED: BoundedCache[tuple[float, float]] = BoundedCache(512)
# the metrics of each tuning episode: (tuning simulator's signature, variant, settings, key, pair) -> metrics
_TUNING_RUNS: BoundedCache[dict[str, Any]] = BoundedCache(8192)


def forget_tuning() -> None:
    """Empty the caches of tuned (alpha, beta) pairs and of tuning episodes (benchmarks time the search cold)."""
    _TUNED.clear()
    _TUNING_RUNS.clear()


def _keep_run(base: tuple, variant: str, metrics: dict[str, Any]) -> None:
    """Keep a tuning episode's ``metrics`` under ``base + (variant,)``, and under DREAM-MapScore's key as well when
    it is a smart-drop episode that dropped nothing: smart drop only adds drops to MapScore (§4.2.1, Table 4), so
    such an episode is the one MapScore plays at the same (alpha, beta) (:meth:`DreamPolicy.alike_keys`)."""
    _TUNING_RUNS.put((*base, variant), metrics)
    if variant == "smartdrop" and not metrics["drops"]:
        _TUNING_RUNS.put((*base, "mapscore"), metrics)


@dataclass
class TuningRecord:
    """What the offline search did (for Fig. 10/11-style reports)."""

    params: tuple[float, float]
    trajectory: list[dict[str, Any]] = field(default_factory=list)


def episode_evaluator(sim: Any, variant: str = "mapscore", key: int | Sequence[int] = TUNE_KEY, *,
                      metric: str = "uxcost", horizon_s: float | None = None,
                      **kwargs: Any) -> Callable[[tuple[float, float]], float]:
    """``evaluate(pair)`` for :func:`~joulegym.envs.dream.search.optimize`: an episode of ``sim``'s configuration
    with episode key ``key`` (the mean over several keys) under DREAM-``variant`` at the fixed pair, run by
    :func:`joulegym.core.inner.run_inner` (offline mode; common random numbers, so every pair sees the same
    workload), returning ``metric`` (``"uxcost"``; Fig. 13 optimises the DLV or energy sums instead).
    ``horizon_s``: a shorter tuning episode. Results are memoised per pair, and each episode's metrics are kept in
    this process per tuning configuration, variant and pair (:func:`_keep_run`: a later search that asks for the
    same episode, or for the MapScore episode a smart-drop episode without drops was, does not run it again)."""
    keys = (int(key),) if isinstance(key, int | np.integer) else tuple(int(x) for x in key)
    if not keys:
        raise ValueError("key must be an int or a non-empty sequence of ints")
    runner = sim.spawn(keys[0], record_timeline=False, horizon_s=horizon_s)
    memo: dict[tuple[float, float], float] = {}
    settings = tuple(sorted(kwargs.items()))

    def run_key(pair: tuple[float, float], k: int) -> tuple:
        """The cache key of the episode with key ``k`` at ``pair``, less the variant (:func:`_keep_run`)."""
        return (runner.signature(), settings, k, pair)

    def evaluate(p: tuple[float, float]) -> float:
        pair = (round(float(p[0]), 12), round(float(p[1]), 12))
        if pair not in memo:
            values = []
            for k in keys:
                metrics = _TUNING_RUNS.get((*run_key(pair, k), variant))
                if metrics is None:
                    metrics = run_inner(runner, DreamPolicy(variant, "fixed", pair[0], pair[1], **kwargs), 0,
                                        instance=k)
                    _keep_run(run_key(pair, k), variant, metrics)
                values.append(metrics[metric])
            memo[pair] = float(np.mean(values))
        return memo[pair]

    def evaluate_many(pairs: Sequence[tuple[float, float]]) -> list[float]:
        """:func:`evaluate` of several pairs (one search step), their episodes not yet kept run together by
        :func:`run_shared` (the same values; DREAM at ``assignment="table"`` runs them one by one)."""
        todo = list(dict.fromkeys((round(float(p[0]), 12), round(float(p[1]), 12)) for p in pairs))
        todo = [pair for pair in todo if pair not in memo]
        if kwargs.get("assignment", "idle") == "idle":
            for k in keys:
                run = [pair for pair in todo if (*run_key(pair, k), variant) not in _TUNING_RUNS]
                if len(run) > 1:
                    shared = run_shared(runner, [DreamPolicy(variant, "fixed", a, b, **kwargs) for a, b in run], k)
                    for pair, metrics in zip(run, shared, strict=True):
                        _keep_run(run_key(pair, k), variant, metrics)
        return [evaluate(p) for p in pairs]

    evaluate.memo = memo  # type: ignore[attr-defined]
    evaluate.many = evaluate_many  # type: ignore[attr-defined]
    return evaluate


# ================================================================================================ the policy
class DreamPolicy:
    """DREAM (§4, Table 4) as an inner policy: MapScore dispatch of one unit (a layer, or a chunk) to the idle
    accelerator with the highest score, with smart frame drop (``smartdrop``, ``full``) and Supernet switching
    (``full``). It reads only what DREAM's engines read on a real SoC (queues, deadlines, the offline cost
    tables, accelerator availability): not privileged.

    :param variant: ``"full"``, ``"smartdrop"`` or ``"mapscore"``.
    :param tuning: ``"offline"`` (lock alpha, beta with the §3.6 search on a tuning episode, cached),
        ``"online"`` (the :class:`AdaptivityEngine` inside the episode) or ``"fixed"``.
    :param alpha, beta: the fixed pair (``tuning="fixed"``) and the offline search's start.
    :param supernet_rule: ``"slack"`` (Fig. 6) or ``"load-aware"`` (:func:`supernet_variant`).
    :param tune_horizon_s: length of the offline tuning episodes (1 s; ``None`` or longer than the episode: the
        simulator's horizon). :param tune_episodes: tuning episodes per candidate (their mean UXCost; each draws its
        own release phases, so the tuned pair does not fit one phase alignment).
    :param assignment: ``"idle"`` (the arg-max over idle accelerators, work-conserving, docs §3 #8) or ``"table"``
        (the MapScore table over every accelerator, §4.1: a frame whose best pair is a busy accelerator waits).
    :param active_def: which frames count as "active" for smart-drop Cond 2 (docs §3 #9).
    :param late_urgency: ``"signed"`` (Algorithm 1 lines 3 and 7 as written: Urgency = ToGo / (T_deadline - T_curr),
        negative for a late frame, which so comes after every frame that can still make its deadline) or
        ``"clamp"`` (our earlier reading, docs §3 #5: a late frame's slack is 1 us, the largest urgency).
    Ties (docs §2): the earlier release, then the lower accelerator id.
    """

    VARIANTS = ("full", "smartdrop", "mapscore")
    TUNINGS = ("offline", "online", "fixed")
    privileged = False

    def __init__(self, variant: str = "full", tuning: str = "offline", alpha: float = 1.0, beta: float = 1.0, *,
                 window_s: float = 0.2, tune_key: int = TUNE_KEY, tune_horizon_s: float | None = TUNE_HORIZON_S,
                 tune_episodes: int = TUNE_EPISODES,
                 supernet_rule: str = "slack", assignment: str = "idle", max_drops: int = MAX_DROPS,
                 drop_window: int = DROP_WINDOW,
                 active_def: str = "outstanding", late_urgency: str = "signed", name: str | None = None) -> None:
        for key, value, allowed in (("variant", variant, self.VARIANTS), ("tuning", tuning, self.TUNINGS),
                                    ("late_urgency", late_urgency, LATE_URGENCY),
                                    ("supernet_rule", supernet_rule, SUPERNET_RULES),
                                    ("assignment", assignment, ASSIGNMENTS),
                                    ("active_def", active_def, ("outstanding", "started"))):
            if value not in allowed:
                raise ValueError(f"{key}={value!r} is not one of {allowed}")
        for key, value in (("alpha", alpha), ("beta", beta)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not PARAM_LO <= value <= PARAM_HI:
                raise ValueError(f"{key}={value!r} must be in [{PARAM_LO}, {PARAM_HI}]")
        if tune_horizon_s is not None and not (isinstance(tune_horizon_s, int | float) and tune_horizon_s > 0):
            raise ValueError(f"tune_horizon_s={tune_horizon_s!r} must be a number of seconds > 0 or None")
        self.variant, self.tuning = variant, tuning
        self.smart_drop = variant in ("full", "smartdrop")
        self.supernet = variant == "full"
        self.alpha0, self.beta0 = float(alpha), float(beta)
        self.alpha, self.beta = float(alpha), float(beta)
        self.window_s = float(window_s)
        if isinstance(tune_episodes, bool) or not isinstance(tune_episodes, int) or tune_episodes < 1:
            raise ValueError(f"tune_episodes={tune_episodes!r} must be an int >= 1")
        self.tune_key, self.tune_horizon_s, self.tune_episodes = int(tune_key), tune_horizon_s, tune_episodes
        self.supernet_rule, self.assignment = supernet_rule, assignment
        self.max_drops, self.drop_window, self.active_def = int(max_drops), int(drop_window), active_def
        self.late_urgency = late_urgency
        self.name = name or f"dream-{variant}"
        self.engine: AdaptivityEngine | None = None
        self.tuning_record: TuningRecord | None = None

    @property
    def env_config(self) -> dict[str, Any]:
        """``{"work_conserving": False}`` for ``assignment="table"`` (a frame waits for its busy best accelerator
        while another is idle: a wait the work-conserving mask would refuse, docs §4); nothing otherwise."""
        return {"work_conserving": False} if self.assignment == "table" else {}

    def set_params(self, alpha: float, beta: float) -> None:
        """Set (alpha, beta) (DREAMParams-v0's action; clipped to the search range)."""
        self.alpha, self.beta = clip_pair(alpha, beta)

    def reset(self, sim: Any, rng: np.random.Generator) -> None:
        self.alpha, self.beta = self.alpha0, self.beta0
        self.engine = None
        if self.tuning == "offline":
            self.set_params(*self.offline_params(sim))
        elif self.tuning == "online":
            self.engine = AdaptivityEngine(window_s=self.window_s, rng=rng)
            self._w0 = sim.now
            self.set_params(*self.engine.step(sim.active_models(), None))

    def _tuning_settings(self) -> dict[str, Any]:
        return {"max_drops": self.max_drops, "drop_window": self.drop_window, "active_def": self.active_def,
                "supernet_rule": self.supernet_rule, "assignment": self.assignment, "late_urgency": self.late_urgency}

    def tuning_variant(self, sim: Any) -> str:
        """The variant the offline search runs for ``sim``: this policy's, except DREAM-Full on a workload without a
        Supernet, which is DREAM-SmartDrop there (Table 4: Full adds only Supernet switching, and no frame reaches a
        switch point), so the two share one search and its cache entry."""
        return "smartdrop" if self.variant == "full" and not sim.has_supernet else self.variant

    def decisions_key(self, sim: Any) -> tuple | None:
        """A key equal for two DREAM policies that take the same decisions on every episode of ``sim`` (the suite
        then plays such an episode once, :func:`joulegym.core.rollout.rollout_inner`): the variant as
        :meth:`tuning_variant` (DREAM-Full is DREAM-SmartDrop without a Supernet), the (alpha, beta) it decides with
        (:meth:`decision_pair`: offline tuning locked at a pair decides as that pair fixed) and every other setting
        a decision reads, the name aside; ``None`` for online tuning (its engine draws from the name's random
        stream)."""
        if self.tuning == "online":
            return None
        return self._key_of(self.tuning_variant(sim), self.decision_pair(sim))

    def alike_keys(self, sim: Any) -> tuple[tuple, ...]:
        """After an episode on ``sim``: the :meth:`decisions_key` of other policies that, it turns out, decided as
        this one on it. Smart drop only adds drops to MapScore (§4.2.1, Table 4): a DREAM-SmartDrop episode (or
        DREAM-Full's, without a Supernet) that dropped no frame is the one DREAM-MapScore plays at the same (alpha,
        beta) and settings."""
        if self.tuning == "online" or sim.drops or self.tuning_variant(sim) != "smartdrop":
            return ()
        return (self._key_of("mapscore", self.decision_pair(sim)),)

    def decision_pair(self, sim: Any) -> tuple[float, float]:
        """The (alpha, beta) this policy decides with on ``sim``'s episodes (not online): the offline search's
        locked pair as :meth:`reset` sets it, or the fixed pair."""
        if self.tuning == "offline":
            return clip_pair(*self.offline_params(sim))
        return self.alpha0, self.beta0

    def _key_of(self, variant: str, pair: tuple[float, float]) -> tuple:
        return type(self).__name__, variant, pair, tuple(sorted(self._tuning_settings().items()))

    def offline_params(self, sim: Any) -> tuple[float, float]:
        """Locked (alpha, beta) for ``sim``'s configuration: the §3.6 search from (alpha0, beta0) where each
        evaluation is an episode with key ``tune_key`` of the same variant (:meth:`tuning_variant`) at fixed
        parameters (cached)."""
        settings = self._tuning_settings()
        variant = self.tuning_variant(sim)
        key = (sim.signature(), variant, self.tune_key, self.tune_horizon_s, self.tune_episodes, self.alpha0,
               self.beta0, tuple(sorted(settings.items())))
        hit = _TUNED.get(key)
        if hit is not None:
            return hit
        horizon = self.tune_horizon_s if self.tune_horizon_s is not None and self.tune_horizon_s < sim.horizon_s \
            else None
        keys = tuple(self.tune_key + k for k in range(self.tune_episodes))
        evaluate = episode_evaluator(sim, variant, keys, horizon_s=horizon, **settings)
        search = optimize((self.alpha0, self.beta0), evaluate)
        self.tuning_record = TuningRecord(search.center, search.trajectory)
        return _TUNED.put(key, search.center)

    # -------------------------------------------------------------------------------------- decide
    def _online_tick(self, view: DreamView) -> None:
        engine = self.engine
        now = view.now
        if engine is None or now < self._w0 + engine.window_s:
            return
        w1 = self._w0 + engine.window_s * math.floor((now - self._w0) / engine.window_s)
        stats = view.window_stats(self._w0, w1)
        frames = sum(stats["frames"])
        ux = uxcost(stats["violated"], stats["frames"], stats["energy"], stats["worst"])["uxcost"]
        dlv = sum(stats["violated"]) / frames if frames else 0.0
        drop = sum(stats["drops"]) / frames if frames else 0.0
        self._w0 = w1
        self.set_params(*engine.step(view.active_models(), ux if frames else None, dlv, drop))

    def _drop_candidate(self, view: DreamView) -> int:
        """Smart frame drop (§4.2.1) over the outstanding frames (:func:`smart_drop_select`, inlined)."""
        if len(view.outstanding) < 2:  # Cond 2 needs two frames likely to be late
            return -1
        likely = view.likely_late(self.active_def == "started")  # Cond 1
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
        early, idle = self._before_scores(view)
        if early is not None:
            return early
        if self.assignment == "table":
            return self._table_pick(view, idle)
        return self._best_pair(view, idle)

    def _before_scores(self, view: DreamView) -> tuple[Drop | Wait | None, list[int]]:
        """What comes before MapScore and does not depend on (alpha, beta): a smart drop (§4.2.1), or a wait when
        no (ready task, idle accelerator) pair exists; ``(None, idle accelerators)`` otherwise."""
        if self.smart_drop:
            victim = self._drop_candidate(view)
            if victim >= 0:
                return Drop(victim), []
        idle = view.idle_accs()
        if not idle or not view.ready:
            return WAIT, idle
        return None, idle

    def _table_pick(self, view: DreamView, idle: list[int]) -> Dispatch | Wait:
        """The MapScore table over every accelerator (§4.1, §4.5): pairs in decreasing score, each task and each
        accelerator taken once; the first pair whose accelerator is idle is dispatched, a task whose best free pair
        is a busy accelerator waits for it."""
        pairs = self._scores(view, list(range(view.n_acc)))
        pairs.sort(key=lambda row: (-row[0], view.f_release[row[1]], row[2]))
        busy_taken, tasks_taken = set(), set()
        running = view.acc_running
        for _score, i, a, v in pairs:
            if i in tasks_taken or a in busy_taken:
                continue
            if running[a] < 0:
                return Dispatch(i, a, 1, v)
            tasks_taken.add(i)
            busy_taken.add(a)
        return WAIT

    def _scores(self, view: DreamView, accs: list[int]) -> list[tuple[float, int, int, int]]:
        """``(MapScore, task, accelerator, sub-net)`` of every ready task on every accelerator of ``accs``."""
        now = view.now
        n_acc = view.n_acc
        alpha, beta = self.alpha, self.beta
        e_byte = view.switch_energy_per_byte
        flush = view.flush_bytes()
        dl, tc, prev_acc = view.f_deadline, view.f_tcmpl, view.f_prev_acc
        clamp = self.late_urgency == "clamp"
        out = []
        for i in view.ready:
            V, v, p, urgency = self._task(view, i, dl[i] - now, clamp)
            lat, en = V.lat[p], V.en[p]
            sum_lat, sum_en = V.sum_lat[p], V.sum_en[p]
            base = alpha * (now - tc[i]) / (sum_lat / n_acc)
            prev, fetch = prev_acc[i], V.in_b[p]
            for a in accs:
                e_a = en[a] if en[a] > 0 else 1e-30
                resident, moved = flush[a]
                moved = (moved if resident != i else 0) + (fetch if prev >= 0 and prev != a else 0)
                # Alg 1 lines 14-15 with Score_Energy = (Σ_a E - CswitchEnergy) / E_acc (lines 10-12)
                out.append((urgency * sum_lat / lat[a] + base + beta * (sum_en - moved * e_byte) / e_a, i, a, v))
        return out

    def _task(self, view: DreamView, i: int, slack: float, clamp: bool) -> tuple[Any, int, int, float]:
        """A ready task's tables (its Supernet variant at a switch point, else its current one), the variant chosen
        (-1: none), its next layer and its Urgency (Algorithm 1 lines 2-3 and 7)."""
        V = view.tables_of(i)
        v = -1
        if self.supernet and view.at_switch_point(i):
            v = supernet_variant(view, i, self.supernet_rule)
            V = view.variant_of(i, v)
        p = view.f_pos[i]
        return V, v, p, V.togo_from[p] / urgency_slack(slack, clamp)

    def _best_pair(self, view: DreamView, idle: list[int]) -> Dispatch:
        """The arg-max of MapScore (Alg. 1 lines 14-15) over (ready task, idle accelerator); ties go to the earlier
        release, then the lower accelerator index."""
        i, a, v = self._best_pairs(view, idle, ((self.alpha, self.beta),))[0]
        if i < 0:  # no score compares (NaN): the key order of _scores
            release = view.f_release
            _score, i, a, v = min(self._scores(view, idle), key=lambda row: (-row[0], release[row[1]], row[2]))
        return Dispatch(i, a, 1, v)

    def _best_pairs(self, view: DreamView, idle: list[int],
                    params: Sequence[tuple[float, float]]) -> list[tuple[int, int, int]]:
        """``(task, accelerator, sub-net)`` of :meth:`_best_pair` for each ``(alpha, beta)`` of ``params``: the score
        is :meth:`_scores`' expression, term for term (the same floats), its (alpha, beta)-free parts computed once;
        the loop keeps the best pair instead of listing every pair and reads the context-switch flush of the idle
        accelerators only. ``(-1, -1, -1)`` where no score compares."""
        now = view.now
        n_acc = view.n_acc
        e_byte = view.switch_energy_per_byte
        dl, tc, prev_acc, release = view.f_deadline, view.f_tcmpl, view.f_prev_acc, view.f_release
        f_vars, f_variant, f_state, f_last, resident_of = view._f_vars, view.f_variant, view.f_state, view.f_last, \
            view.acc_resident
        flush = []
        for a in idle:
            r = resident_of[a]
            if r >= 0 and f_state[r] == OUTSTANDING and f_last[r] >= 0:
                flush.append((a, r, f_vars[r][f_variant[r]].out_b[f_last[r]]))
            else:
                flush.append((a, r, 0))
        clamp = self.late_urgency == "clamp"
        n = len(params)
        if n == 1:  # every decision of an episode, and of a search's candidate once it runs alone
            alpha, beta = params[0]
            bs, br, ba, bi, bv = -math.inf, math.inf, -1, -1, -1  # (score, release, accelerator, task, sub-net)
            for i in view.ready:
                V, v, p, urgency = self._task(view, i, dl[i] - now, clamp)
                lat, en = V.lat[p], V.en[p]
                sum_lat, sum_en = V.sum_lat[p], V.sum_en[p]
                base = alpha * (now - tc[i]) / (sum_lat / n_acc)  # alpha x Score_Starv (line 9)
                prev, fetch = prev_acc[i], V.in_b[p]
                rel = release[i]
                for a, resident, moved in flush:
                    e_a = en[a] if en[a] > 0 else 1e-30
                    moved = (moved if resident != i else 0) + (fetch if prev >= 0 and prev != a else 0)
                    # Alg 1 lines 14-15 with Score_Energy = (Σ_a E - CswitchEnergy) / E_acc (lines 10-12)
                    score = urgency * sum_lat / lat[a] + base + beta * (sum_en - moved * e_byte) / e_a
                    if score > bs or (score == bs and (rel < br or (rel == br and a < ba))):
                        bs, br, ba, bi, bv = score, rel, a, i, v
            return [(bi, ba, bv)]
        betas = [b for _a, b in params]
        best = [(-math.inf, math.inf, -1, -1, -1)] * n
        for i in view.ready:
            V, v, p, urgency = self._task(view, i, dl[i] - now, clamp)
            lat, en = V.lat[p], V.en[p]
            sum_lat, sum_en = V.sum_lat[p], V.sum_en[p]
            waited, mean_lat = now - tc[i], sum_lat / n_acc
            bases = [alpha * waited / mean_lat for alpha, _b in params]
            prev, fetch = prev_acc[i], V.in_b[p]
            rel = release[i]
            for a, resident, moved in flush:
                e_a = en[a] if en[a] > 0 else 1e-30
                moved = (moved if resident != i else 0) + (fetch if prev >= 0 and prev != a else 0)
                lat_term, energy_left = urgency * sum_lat / lat[a], sum_en - moved * e_byte
                for k in range(n):
                    score = lat_term + bases[k] + betas[k] * energy_left / e_a
                    b = best[k]
                    if score > b[0] or (score == b[0] and (rel < b[1] or (rel == b[1] and a < b[2]))):
                        best[k] = (score, rel, a, i, v)
        return [(b[3], b[2], b[4]) for b in best]


def run_shared(sim: Any, policies: Sequence[DreamPolicy], instance: int) -> list[dict[str, Any]]:
    """The metrics of each of ``policies`` (DREAM at fixed (alpha, beta), idle assignment, the same settings
    otherwise) on ``sim``'s episode with key ``instance``: what ``run_inner(sim, policy, 0, instance=instance)``
    gives for each, bit for bit. The candidates share one simulation while they decide alike (a smart drop and a
    wait do not depend on (alpha, beta); a dispatch is the arg-max of each pair's MapScore, scored together); where
    their dispatches differ the simulator forks (:meth:`DreamSim.fork`) and each group runs on alone."""
    lead = policies[0]
    if any(p.assignment != "idle" or p.tuning != "fixed" for p in policies):
        raise ValueError("run_shared runs DREAM at fixed (alpha, beta) with assignment='idle' only")
    sim.reset(np.random.default_rng(0), instance)
    for policy in policies:
        policy.reset(sim, policy_rng(0, policy.name))
    results: list[dict[str, Any]] = [{} for _ in policies]
    stack = [(sim, list(range(len(policies))))]
    while stack:
        s, members = stack.pop()
        # Simulator.apply is _apply then the observers; a spawned or forked simulator has none
        view, apply, advance = s.view(), s._apply if not s._observers else s.apply, s.advance
        params = [(policies[k].alpha, policies[k].beta) for k in members]
        while advance():
            early, idle = lead._before_scores(view)
            if early is not None:
                apply(early)
                continue
            picks = lead._best_pairs(view, idle, params)
            pick = picks[0]
            if pick[0] < 0 or picks.count(pick) != len(picks):
                if (-1, -1, -1) in picks:  # no score compares: each candidate's whole episode on its own
                    for k in members:
                        results[k] = run_inner(s.fork(), policies[k], 0, instance=instance)
                    members = []
                    break
                groups: dict[tuple[int, int, int], list[int]] = {}
                for k, other_pick in zip(members, picks, strict=True):
                    groups.setdefault(other_pick, []).append(k)
                for (i, a, v), ks in list(groups.items())[1:]:
                    other = s.fork()
                    other.apply(Dispatch(i, a, 1, v))
                    stack.append((other, ks))
                members = groups[pick]
                params = [(policies[k].alpha, policies[k].beta) for k in members]
            apply(Dispatch(pick[0], pick[1], 1, pick[2]))
        for k in members:
            results[k] = s.metrics()
    return results
