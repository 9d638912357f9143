"""Discrete-event simulator of real-time multi-model ML on a multi-accelerator SoC (Kim et al., DREAM,
ASPLOS'23; ``docs/families/dream.md`` §1-§3).

No Gymnasium here: :class:`DreamSim` is a :class:`joulegym.core.simulator.Simulator` (``reset(rng, instance)``,
``apply(decision)``, ``advance()``, ``view()``, ``metrics()``). One scheduler run is
:func:`joulegym.core.inner.run_inner` with a DREAM inner policy (:mod:`joulegym.envs.dream.schedulers`); the
Gymnasium envs drive the same loop.

Model (paper §2-§4; [A] = our reading where the paper is silent, numbered as in docs §3):

- **Releases**: every root model releases a frame every ``1/FPS`` s from a phase drawn per episode and model
  (``release_phase="random"``, the default: independent sensor streams; ``"sync"``: every model at t = 0);
  deadline = release + 1/FPS (#1). A cascaded child is released at its parent frame's completion with
  probability ``p`` [P §5.1] and inherits the parent's deadline (#1; ``child_deadline="own_period"``: release
  + 1/FPS of the child).
- **Dispatch**: a :class:`~joulegym.envs.dream.tables.Dispatch` runs the task's next layers (at ``chunk:N``
  granularity, the rest of a chunk) on an idle accelerator, non-preemptively (§1.1). Latency and energy come
  from per-(layer, accelerator) tables. A **context switch** (#7, [P §3.4]) moves activation bytes through
  DRAM: the displaced, still-outstanding frame's last output is flushed (its energy charged to that frame's
  model) and the dispatched frame's input is fetched if it last ran on another accelerator (charged to it);
  each byte costs ``e_DRAM`` energy and ``lat_per_byte[acc]`` time.
- **Dynamic models**: SkipNet gates (each gated block skipped w.p. ``p_dynamic``), RAPID-RL early exits
  (exit after the gated layer w.p. ``p_dynamic``), resolved when the frame reaches them; Once-for-all
  Supernet variants chosen at the switch point by the scheduler (default: the original, heaviest).
- **Common random numbers**: every random outcome is a pure function of ``(episode key, model name, frame
  index, draw)`` (:func:`~joulegym.envs.dream.tables.crn_uniform`); the key is the episode's ``instance``,
  drawn from the reset's ``rng`` when not given, so every scheduler sees the same releases, cascades, skips
  and exits under one key, whatever order its events happen in.
- **Frame fate**: a frame is violated if it completes after its deadline, is dropped ([P §4.2.1]: completion
  time = infinity) or is discarded by the **safety cap** (#2: at most ``cap`` outstanding frames per model;
  releasing one more discards the oldest, for every scheduler alike). A late frame keeps running (#2).
- **Task-level switch** (#24): at ``switch_s`` the outstanding frames of models absent from the new scenario
  are cancelled (a frame whose deadline already passed keeps its violation; the others are not counted in any
  window), and the new scenario's releases start at ``switch_s``. Each phase keeps its own cost tables.
- **UXCost** (Algorithm 2): per model, ``Rate_DLV = violated / frames`` (``1 / (2 frames)`` when none is
  violated) and ``NormEnergy = actual / worst-case energy``, summed, then multiplied. A frame counts in a
  window iff its deadline lies in it; :meth:`DreamSim.metrics`'s window is ``[warmup_s, horizon_s)``. The
  worst case of a frame is its nominal full path on the most energy-hungry accelerator per layer plus every
  layer's input fetched and output flushed once (#3), so ``NormEnergy <= 1`` under any scheduler.

Engine: a binary heap of ``(time, kind, seq, arg)``: every event is a point event, and the hot path (~10^4
dispatches per 2 s episode) needs the few microseconds per event a plain heap gives; ``seq`` breaks ties in
push order. Ties at one time: layer completions, the scenario switch, arrivals, wake-up timers, then deadline
checks (a frame finishing exactly at its deadline meets it). Per-frame state lives in parallel Python lists
indexed by task id (no per-frame objects).
"""

from __future__ import annotations

import copy
import heapq
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from joulegym.core.simulator import Simulator
from joulegym.envs.dream.tables import (
    ALL_LAYERS,
    EPS_SLACK_S,
    TOGO_MODES,
    WAIT,
    App,
    Decision,
    Dispatch,
    Drop,
    LayerTable,
    ModelTable,
    Variant,
    Wait,
    Workload,
    catalog_table,
    check_prob,
    crn_uniform,
    name_key,
    parse_granularity,
    splitmix64,
    uxcost,
)
from joulegym.envs.dream.view import DreamView

__all__ = ["ALL_LAYERS", "EPS_SLACK_S", "WAIT", "App", "Dispatch", "DreamSim", "DreamView", "Drop", "LayerTable",
           "ModelTable", "Wait", "Workload", "crn_uniform", "uxcost"]

CHILD_DEADLINES = ("inherit", "own_period")
RELEASE_PHASES = ("random", "sync")
DYNAMICS = ("sampled", "worst")
MAX_KEY = 2**63  # episode keys are drawn in [0, 2^63)
DROP_WINDOW = 10  # frames a model's recent drops are counted over (smart-drop condition 4, [P §4.2.1])

# event kinds, in their tie order at one timestamp
EV_DONE, EV_SWITCH, EV_ARRIVAL, EV_TIMER, EV_DEADLINE = range(5)
_FORK_NESTED = ("_released", "_out_by_model", "subnet_counts")  # per-episode lists of lists (fork)
# frame states
OUTSTANDING, COMPLETED, DROPPED, DISCARDED, CANCELLED = range(5)
STATE_NAMES = ("outstanding", "completed", "dropped", "discarded", "cancelled")

Phase = tuple[float, Workload, Mapping[str, ModelTable], Any]  # (start s, workload, tables, lat per byte)


def _check_settings(horizon_s: Any, warmup_s: Any, child_deadline: str, cap: Any, togo_mode: str,
                    release_phase: str, dynamics: str, energy_exponent: Any) -> None:
    for key, value, allowed in (("child_deadline", child_deadline, CHILD_DEADLINES),
                                ("togo_mode", togo_mode, TOGO_MODES), ("release_phase", release_phase, RELEASE_PHASES),
                                ("dynamics", dynamics, DYNAMICS)):
        if value not in allowed:
            raise ValueError(f"{key}={value!r} is not one of {allowed}")
    if isinstance(horizon_s, bool) or not isinstance(horizon_s, int | float) or not 0 < horizon_s < math.inf:
        raise ValueError(f"horizon_s={horizon_s!r} must be a finite number > 0")
    if isinstance(warmup_s, bool) or not isinstance(warmup_s, int | float) or not 0 <= warmup_s < horizon_s:
        raise ValueError(f"warmup_s={warmup_s!r} must be in [0, horizon_s={horizon_s})")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        raise ValueError(f"cap={cap!r} must be an int >= 1 or None")
    if not (isinstance(energy_exponent, int | float) and energy_exponent > 0):
        raise ValueError(f"uxcost_energy_exponent={energy_exponent!r} must be > 0")


class DreamSim(Simulator):
    """The DREAM event loop (module docstring). Build with :meth:`from_catalog` or from tables.

    :param tables: per workload phase, ``{model name: ModelTable}`` covering its workload's models (a
        single mapping serves every phase).
    :param workload: the usage scenario (:class:`~joulegym.envs.dream.tables.Workload`).
    :param acc_pes: PEs per accelerator (Planaria's resource fit reads it).
    :param switch_lat_per_byte: ``(n_acc,)`` s per byte moved in a context switch (#7);
        :param switch_energy_per_byte: energy per byte (e_DRAM).
    :param horizon_s: episode length (T_exec = 2 s, [P §3.6]). :param warmup_s: frames with deadlines
        before it are not counted.
    :param switch: ``(t_s, workload2, tables2, switch_lat_per_byte2)`` task-level switch (docs §3 #24).
    :param child_deadline: ``"inherit"`` (#1) or ``"own_period"``. :param cap: safety cap (#2), ``None`` off.
    :param togo_mode: ToGo over the worst-case remaining path (default) or its expectation.
    :param release_phase: ``"random"`` (a phase per model drawn from the episode key) or ``"sync"``.
    :param dynamics: ``"sampled"`` or ``"worst"`` (every cascade activated, nothing skipped, no exit: the
        offline plan of static FCFS, docs §3 #23).
    :param granularity: ``"layer"`` or ``"chunk:N"`` (every model cut into at most N chunks; a dispatch
        runs the rest of the chunk it starts in, whatever the scheduler asks).
    :param record_timeline: keep the per-dispatch Gantt log.
    """

    def __init__(self, tables: Mapping[str, ModelTable], workload: Workload, *, acc_pes: Sequence[int],
                 switch_lat_per_byte: Sequence[float] | np.ndarray, switch_energy_per_byte: float,
                 horizon_s: float = 2.0, warmup_s: float = 0.0,
                 switch: tuple[float, Workload, Mapping[str, ModelTable], Any] | None = None,
                 child_deadline: str = "inherit", cap: int | None = 4, togo_mode: str = "worst",
                 release_phase: str = "random", dynamics: str = "sampled", granularity: str = "layer",
                 record_timeline: bool = False, uxcost_energy_exponent: float = 1.0, name: str = "") -> None:
        _check_settings(horizon_s, warmup_s, child_deadline, cap, togo_mode, release_phase, dynamics,
                        uxcost_energy_exponent)
        pes = [int(p) for p in acc_pes]
        if not pes or any(p <= 0 for p in pes):
            raise ValueError(f"acc_pes={acc_pes!r} must be a non-empty list of positive PE counts")
        if not float(switch_energy_per_byte) >= 0:
            raise ValueError(f"switch_energy_per_byte={switch_energy_per_byte!r} must be >= 0")
        self.n_acc, self.acc_pes = len(pes), pes
        self.horizon_s, self.warmup_s = float(horizon_s), float(warmup_s)
        self.child_deadline, self.cap, self.togo_mode = child_deadline, cap, togo_mode
        self.release_phase, self.dynamics = release_phase, dynamics
        self.granularity, self.chunks = granularity, parse_granularity(granularity)
        self.record_timeline = bool(record_timeline)
        self.energy_exponent = float(uxcost_energy_exponent)
        self.name = name or workload.name
        self.switch_energy_per_byte = float(switch_energy_per_byte)
        self.soc: Any = None  # the SoC preset when built by from_catalog
        self.scale: float | None = None  # the latency scale of from_catalog (docs/families/dream-cost-model.md)
        self._compile_phases(self._phases(workload, tables, switch_lat_per_byte, switch))
        self._signature: tuple | None = None
        self.reset(np.random.default_rng(0), 0)

    # ------------------------------------------------------------------------------------ construction
    def _phases(self, workload: Workload, tables: Mapping[str, ModelTable], lat_per_byte: Any,
                switch: Any) -> list[Phase]:
        phases: list[Phase] = [(0.0, workload, tables, lat_per_byte)]
        if switch is not None:
            if not (isinstance(switch, tuple | list) and len(switch) == 4):
                raise ValueError("switch must be (t_s, workload, tables, switch_lat_per_byte)")
            t_sw = switch[0]
            if isinstance(t_sw, bool) or not isinstance(t_sw, int | float) or not 0 < t_sw < self.horizon_s:
                raise ValueError(f"switch time {t_sw!r} must be in (0, horizon_s={self.horizon_s})")
            phases.append((float(t_sw), switch[1], switch[2], switch[3]))
        self.switch_s = phases[1][0] if len(phases) > 1 else math.inf
        names: list[str] = []  # model slots: unique names over the phases (first appearance order)
        for _t, wl, _tb, _lb in phases:
            names.extend(app.model for app in wl.apps if app.model not in names)
        self.model_names = tuple(names)
        self.n_models = len(names)
        self._name_keys = [name_key(n) for n in names]
        return phases

    def _compile_phases(self, phases: list[Phase]) -> None:
        """Per phase and model slot: active flag, FPS, parent, children, dynamic probability, compiled variants."""
        M = self.n_models
        slot = {n: i for i, n in enumerate(self.model_names)}
        self._phase_start = [t0 for t0, *_ in phases]
        self._phase_end = [*self._phase_start[1:], self.horizon_s]
        self._active, self._pdyn, self._fps, self._parent, self._children, self._vars, self._worst = \
            [], [], [], [], [], [], []
        self._sp: list[int] = [-1] * M
        self._variant_names: list[tuple[str, ...]] = [()] * M
        self._lat_per_byte: list[list[float]] = []
        for _t0, wl, tb, lpb in phases:
            lpb_arr = np.asarray(lpb, dtype=float).reshape(-1)
            if lpb_arr.shape != (self.n_acc,) or np.any(lpb_arr < 0) or not np.all(np.isfinite(lpb_arr)):
                raise ValueError(f"switch_lat_per_byte must be ({self.n_acc},) finite and >= 0, got {lpb!r}")
            self._lat_per_byte.append(lpb_arr.tolist())
            active, fps, parent, pdyn, worst = [False] * M, [0.0] * M, [-1] * M, [0.0] * M, [0.0] * M
            children: list[list[tuple[int, float]]] = [[] for _ in range(M)]
            variants: list[list[Variant] | None] = [None] * M
            for app in wl.apps:
                m = slot[app.model]
                table = self._table_of(wl, tb, app.model)
                active[m], fps[m], pdyn[m] = True, float(app.fps), float(app.p_dynamic)
                parent[m] = -1 if app.parent is None else slot[app.parent]
                if app.parent is not None:
                    children[slot[app.parent]].append((m, float(app.p)))
                sp = int(table.switch_point) if table.is_supernet else -1
                variants[m] = [Variant(v, app.p_dynamic, self.togo_mode, e_byte=self.switch_energy_per_byte,
                                       chunks=self.chunks, switch_point=sp) for v in table.variants]
                worst[m] = max(v.worst_energy for v in variants[m])  # docs §3 #3 (any sub-net a frame may run)
                self._sp[m], self._variant_names[m] = sp, table.variant_names
            for store, value in ((self._active, active), (self._pdyn, pdyn), (self._fps, fps),
                                 (self._parent, parent), (self._children, children), (self._vars, variants),
                                 (self._worst, worst)):
                store.append(value)
        # per model slot, from the first phase it appears in: FPS and one nominal frame's worst-case energy
        self.model_fps = [next(ph[m] for ph in self._fps if ph[m] > 0) for m in range(M)]
        self.model_worst_energy = [next(ph[m] for ph, act in zip(self._worst, self._active) if act[m])
                                   for m in range(M)]

    def _table_of(self, wl: Workload, tables: Mapping[str, ModelTable], model: str) -> ModelTable:
        if model not in tables:
            raise ValueError(f"model={model!r} of workload {wl.name!r} has no cost table; tables: {sorted(tables)}")
        table = tables[model]
        for v in table.variants:
            if v.n_acc != self.n_acc:
                raise ValueError(f"cost table of {v.name!r} has {v.n_acc} accelerators, acc_pes has {self.n_acc}")
        return table

    @classmethod
    def from_catalog(cls, scenario: Any = "vr-gaming", hw: Any = "4k-1ws2os", *, kappa: float | None = None,
                     p: float | None = None, switch: tuple[float, Any] | None = None, **kwargs: Any) -> DreamSim:
        """Build from the catalog: ``scenario`` (a Table 3 name or a ``DreamScenario``), ``hw`` (a Table 2 preset
        or a ``SoC``), one latency scale ``kappa`` for every model and context switch (default: the scenario's
        calibrated scale, docs/families/dream-cost-model.md §4.4), cascade probability ``p`` (every cascade,
        Fig. 12), ``switch=(t_s, scenario2)``; other keywords go to the constructor."""
        from joulegym.devices.accelerator import get_soc, switch_cost_per_byte
        from joulegym.workloads import dream_scenarios as ds

        soc = get_soc(hw)
        if p is not None:
            check_prob("p", p)

        def phase(scn: Any) -> tuple[Workload, dict[str, ModelTable], np.ndarray, float, float]:
            scn = ds.get_scenario(scn)
            if p is not None:
                scn = scn.with_cascade_p(p)
            scale = ds.scenario_scale(scn) if kappa is None else float(kappa)
            tabs = {m.name: catalog_table(m.model, soc, scale) for m in scn.models}
            wl = Workload(scn.name, tuple(App(m.name, m.fps, m.parent, m.p, m.p_dynamic) for m in scn.models))
            lat_b, e_b = switch_cost_per_byte(soc, scale)
            return wl, tabs, lat_b, e_b, scale

        wl, tabs, lat_b, e_b, scale = phase(scenario)
        sw = None
        if switch is not None:
            if not (isinstance(switch, tuple | list) and len(switch) == 2):
                raise ValueError(f"switch={switch!r} must be (t_s, scenario)")
            wl2, tabs2, lat_b2, _, _ = phase(switch[1])
            sw = (switch[0], wl2, tabs2, lat_b2)
        sim = cls(tabs, wl, acc_pes=[int(x) for x in soc.pes], switch_lat_per_byte=lat_b, switch_energy_per_byte=e_b,
                  switch=sw, name=wl.name if sw is None else f"{wl.name}->{sw[1].name}", **kwargs)
        sim.soc, sim.scale = soc, scale
        return sim

    # ------------------------------------------------------------------------------------ episode
    def reset(self, rng: np.random.Generator, instance: int | None = None) -> None:
        """Start an episode: ``instance`` is the episode's common-random-number key (``None``: drawn from ``rng``)."""
        if instance is None:
            if not isinstance(rng, np.random.Generator):
                raise ValueError(f"rng must be a numpy Generator, got {rng!r}")
            instance = int(rng.integers(0, MAX_KEY))
        if isinstance(instance, bool) or not isinstance(instance, int | np.integer) or not 0 <= instance < MAX_KEY:
            raise ValueError(f"instance={instance!r} must be an episode key, an int in [0, 2^63)")
        self.episode_key = int(instance)
        self._seed_key = splitmix64(self.episode_key)
        self.now = 0.0
        self.phase = 0
        self._reset_state()
        self._heap: list[tuple[float, int, int, Any]] = []
        self._seq = 0
        self._push_releases()
        self._view = DreamView(self)

    def _reset_state(self) -> None:
        A, M = self.n_acc, self.n_models
        self.acc_running, self.acc_busy_until, self.acc_resident = [-1] * A, [0.0] * A, [-1] * A
        self.acc_busy_total = [0.0] * A  # dispatched time per accelerator so far
        self.ready: dict[int, None] = {}
        self.outstanding: dict[int, None] = {}
        self._n_idle = A
        # per task id (parallel lists)
        self.f_model, self.f_frame, self.f_phase = [], [], []
        self.f_release, self.f_deadline, self.f_tcmpl, self.f_end = [], [], [], []
        self.f_pos, self.f_next_pos, self.f_last, self.f_prev_acc = [], [], [], []
        self.f_variant, self.f_locked, self.f_running, self.f_state = [], [], [], []
        self.f_violated, self.f_counted, self.f_energy, self.f_worst, self.f_layers = [], [], [], [], []
        self._f_vars: list[list[Variant]] = []
        self._f_skip: list[dict[int, int] | None] = []
        self._f_exit: list[frozenset[int] | None] = []
        self._released: list[list[int]] = [[] for _ in range(M)]  # task ids per model, release order
        self.f_rank: list[int] = []  # a frame's index in its model's release order
        self._out_by_model: list[list[int]] = [[] for _ in range(M)]
        self.out_counts = [0] * M  # outstanding frames per model
        self.recent_drops = [0] * M  # drops among each model's last DROP_WINDOW released frames
        self._next_k = [0] * M
        # running accumulators per model (frames with deadline in [warmup_s, horizon_s))
        self.acc_frames, self.acc_violated, self.acc_drops = [0] * M, [0] * M, [0] * M
        self.acc_energy, self.acc_worst = [0.0] * M, [0.0] * M
        self.drops = self.cap_discards = self.cancelled = self.dispatches = self.layers = 0
        self.context_switches = self.completed = self.decisions = 0
        self.switch_energy_total = self.energy_total = 0.0
        self.subnet_counts = [[0] * len(self._variant_names[m]) for m in range(M)]
        self.timeline: list[tuple[int, float, float, int, int, int]] = []
        self.drop_log: list[tuple[float, int, int, str]] = []
        self.miss_log: list[tuple[float, int, int]] = []
        self._waited = self._finished = self._truncated = False

    def _push_releases(self) -> None:
        """Every periodic release of every phase, known in advance (a phase per model and workload phase)."""
        for ph in range(len(self._active)):
            t0, t1 = self._phase_start[ph], min(self._phase_end[ph], self.horizon_s)
            for m in range(self.n_models):
                if not self._active[ph][m] or self._parent[ph][m] >= 0:
                    continue
                period = 1.0 / self._fps[ph][m]
                offset = 0.0
                if self.release_phase == "random":
                    offset = crn_uniform(self._seed_key, self._name_keys[m], -1 - ph, 0) * period
                k = 0
                while (t := t0 + offset + k * period) < t1:
                    self._push(t, EV_ARRIVAL, (ph, m))
                    k += 1
        if self.switch_s < math.inf:
            self._push(self.switch_s, EV_SWITCH, 1)

    def _push(self, t: float, kind: int, arg: Any) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, kind, self._seq, arg))

    def spawn(self, instance: int | None = None, *, dynamics: str | None = None, record_timeline: bool | None = None,
              horizon_s: float | None = None) -> DreamSim:
        """An independent simulator of the same configuration (shared read-only tables), reset with episode key
        ``instance`` (default this episode's): offline tuning runs (``horizon_s``: a shorter episode), static
        FCFS's worst-case plan."""
        other = copy.copy(self)
        other._signature = None  # the overrides below may change it
        other._observers = ()
        if horizon_s is not None and horizon_s != self.horizon_s:
            if isinstance(horizon_s, bool) or not isinstance(horizon_s, int | float) \
                    or not self.warmup_s < horizon_s < math.inf:
                raise ValueError(f"horizon_s={horizon_s!r} must be a finite number above warmup_s={self.warmup_s}")
            other.horizon_s = float(horizon_s)
            other._phase_end = [*self._phase_end[:-1], other.horizon_s]
        if dynamics is not None:
            if dynamics not in DYNAMICS:
                raise ValueError(f"dynamics={dynamics!r} is not one of {DYNAMICS}")
            other.dynamics = dynamics
        if record_timeline is not None:
            other.record_timeline = bool(record_timeline)
        other.reset(np.random.default_rng(0), self.episode_key if instance is None else instance)
        return other

    def fork(self) -> DreamSim:
        """A copy of this simulator in the middle of its episode that continues independently of it (the read-only
        tables shared, every per-episode list and dict copied, no observers): the offline (alpha, beta) search
        runs the candidates' episodes as one until their decisions differ
        (:func:`~joulegym.envs.dream.mapscore.run_shared`)."""
        other = copy.copy(self)
        other._observers = ()
        for key, value in vars(self).items():
            if key in _FORK_NESTED:
                setattr(other, key, [list(x) for x in value])
            elif type(value) is list or type(value) is dict:
                setattr(other, key, value.copy())
        other._view = DreamView(other)
        return other

    @property
    def has_supernet(self) -> bool:
        """Whether a model of any phase is a Supernet with a switch point (§4.5.1): without one, no frame ever
        reaches a switch point and a scheduler's sub-net choice has no effect."""
        return max(self._sp, default=-1) >= 0

    def signature(self) -> tuple:
        """A hashable key of everything that determines an episode except its key (tuning caches)."""
        if self._signature is None:
            tabs = tuple(tuple(tuple((V.name, V.n, round(sum(V.mean_lat_l), 15), round(sum(map(sum, V.en_l)), 6))
                                     for V in vs) if vs else None for vs in ph) for ph in self._vars)
            self._signature = (self.name, tuple(self.acc_pes), self.model_names, tuple(map(tuple, self._active)),
                               tuple(map(tuple, self._fps)), tuple(map(tuple, self._parent)),
                               tuple(tuple(tuple(c) for c in ph) for ph in self._children),
                               tuple(map(tuple, self._pdyn)), tuple(map(tuple, self._lat_per_byte)),
                               self.switch_energy_per_byte, self.horizon_s, self.warmup_s, self.switch_s,
                               self.child_deadline, self.cap, self.togo_mode, self.release_phase, self.dynamics,
                               self.granularity, self.energy_exponent, tuple(self._sp), tabs)
        return self._signature

    # ------------------------------------------------------------------------------------ protocol
    @property
    def done(self) -> bool:
        """No terminal state: an episode ends by its time limit (``truncated``)."""
        return False

    @property
    def truncated(self) -> bool:
        return self._truncated

    def view(self) -> DreamView:
        return self._view

    def active_models(self) -> tuple[int, ...]:
        """Model slots of the current phase's workload (the adaptivity engine tracks this list, §4.4)."""
        act = self._active[self.phase]
        return tuple(m for m in range(self.n_models) if act[m])

    def advance(self, until_s: float | None = None) -> bool:
        """Run to the next decision point (an idle accelerator and a ready task after every event at the
        current time was processed). ``True`` there; ``False`` at the horizon (``truncated``), or, with
        ``until_s``, when the next decision point would be at or after ``until_s`` (then ``now = until_s``)."""
        if self._finished:
            return False
        if not self._waited and self.ready and self._n_idle > 0 and (until_s is None or self.now < until_s):
            return True
        self._waited = False
        heap = self._heap
        horizon = self.horizon_s
        while heap:
            t = heap[0][0]
            if t >= horizon:
                break
            if until_s is not None and t >= until_s:
                self.now = max(self.now, float(until_s))
                return False
            self.now = t
            while heap and heap[0][0] <= t:
                _t, kind, _s, arg = heapq.heappop(heap)
                if kind == EV_DONE:
                    self._on_done(arg, t)
                elif kind == EV_ARRIVAL:
                    self._release_root(arg[0], arg[1], t)
                elif kind == EV_DEADLINE:
                    if self.f_state[arg] == OUTSTANDING:
                        self._mark_violated(arg, t)
                elif kind == EV_SWITCH:
                    self._on_switch(arg, t)
                # EV_TIMER: a wake-up, nothing to do but offer a decision point
            if self.ready and self._n_idle > 0:
                return True
        if until_s is not None and until_s < horizon:
            self.now = max(self.now, float(until_s))
            return False
        self.now = horizon
        self._finished = self._truncated = True
        return False

    def _apply(self, decision: Decision) -> None:
        """Carry out one scheduling decision at the current time (ValueError naming the field if invalid)."""
        if self._finished:
            raise ValueError("apply() after the episode ended (reset the simulator)")
        self.decisions += 1
        cls = type(decision)
        if cls is Dispatch:
            self._dispatch(decision.task, decision.acc, decision.n_layers, decision.variant)
        elif cls is Wait:
            self._waited = True
            w = decision.wakeup_s
            if w is not None:
                if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w):
                    raise ValueError(f"wakeup_s={w!r} must be a finite number of seconds or None")
                if w > self.now:
                    self._push(float(w), EV_TIMER, None)
        elif cls is Drop:
            self._drop(decision.task)
        else:
            raise ValueError(f"decision={decision!r} must be a Dispatch, Drop or Wait")

    # ------------------------------------------------------------------------------------ events
    def _check_task(self, i: Any, field_name: str) -> None:
        if isinstance(i, bool) or not isinstance(i, int | np.integer) or not 0 <= i < len(self.f_state):
            raise ValueError(f"{field_name}={i!r} is not a released task id (0..{len(self.f_state) - 1})")

    def _drop(self, i: Any) -> None:
        self._check_task(i, "Drop.task")
        if self.f_state[i] != OUTSTANDING:
            raise ValueError(f"Drop.task={i} is not outstanding (state {STATE_NAMES[self.f_state[i]]})")
        self.drops += 1
        m = self.f_model[i]
        if self.f_counted[i]:
            self.acc_drops[m] += 1
        if len(self._released[m]) - self.f_rank[i] <= DROP_WINDOW:
            self.recent_drops[m] += 1
        self._finish(i, DROPPED, self.now)
        if self.record_timeline:
            self.drop_log.append((self.now, m, i, "drop"))

    def _release_root(self, ph: int, m: int, t: float) -> None:
        k = self._next_k[m]
        self._next_k[m] = k + 1
        self._release(ph, m, k, t, t + 1.0 / self._fps[ph][m])

    def _sample_dynamics(self, v0: Variant, ph: int, m: int, k: int
                         ) -> tuple[dict[int, int] | None, frozenset[int] | None]:
        """The frame's SkipNet skips and RAPID-RL exits, from the common random numbers."""
        if self.dynamics != "sampled":
            return None, None
        pd = self._pdyn[ph][m]
        seed_key, model_key = self._seed_key, self._name_keys[m]
        skip = {s: e for s, e in v0.skip_end.items()
                if crn_uniform(seed_key, model_key, k, 1 + v0.block_idx[s]) < pd} if v0.n_blocks else None
        exits = frozenset(j for j, b in v0.exit_idx.items()
                          if crn_uniform(seed_key, model_key, k, 1001 + b) < pd) if v0.exit_idx else None
        return skip or None, exits or None

    def _release(self, ph: int, m: int, k: int, t: float, deadline: float) -> None:
        i = len(self.f_state)
        variants = self._vars[ph][m]
        v0 = variants[0]
        skip, exits = self._sample_dynamics(v0, ph, m, k)
        counted = self.warmup_s <= deadline < self.horizon_s
        worst = self._worst[ph][m]
        pos = 0
        while skip and pos in skip:
            pos = skip[pos]
        for store, value in ((self.f_model, m), (self.f_frame, k), (self.f_phase, ph), (self.f_release, t),
                             (self.f_deadline, deadline), (self.f_pos, pos), (self.f_next_pos, pos),
                             (self.f_last, -1), (self.f_tcmpl, t), (self.f_prev_acc, -1), (self.f_variant, 0),
                             (self.f_locked, self._sp[m] < 0), (self.f_running, -1), (self.f_state, OUTSTANDING),
                             (self.f_violated, False), (self.f_counted, counted), (self.f_energy, 0.0),
                             (self.f_worst, worst), (self.f_end, math.inf), (self.f_layers, 0),
                             (self._f_vars, variants), (self._f_skip, skip), (self._f_exit, exits)):
            store.append(value)
        released = self._released[m]
        self.f_rank.append(len(released))
        released.append(i)
        if len(released) > DROP_WINDOW and self.f_state[released[-1 - DROP_WINDOW]] == DROPPED:
            self.recent_drops[m] -= 1  # it left the window
        if counted:
            self.acc_frames[m] += 1
            self.acc_worst[m] += worst
        out_m = self._out_by_model[m]
        if self.cap is not None and len(out_m) >= self.cap:  # the safety cap (#2): the oldest gives way
            old = out_m[0]
            self.cap_discards += 1
            self._finish(old, DISCARDED, t)
            if self.record_timeline:
                self.drop_log.append((t, m, old, "cap"))
        out_m.append(i)
        self.out_counts[m] += 1
        self.outstanding[i] = None
        if pos >= v0.n:  # everything skipped (degenerate table)
            self._complete(i, t)
            return
        self.ready[i] = None
        if deadline <= t:
            self._mark_violated(i, t)
        elif deadline < self.horizon_s:
            self._push(deadline, EV_DEADLINE, i)

    def _mark_violated(self, i: int, t: float) -> None:
        if not self.f_violated[i]:
            self.f_violated[i] = True
            if self.f_counted[i]:
                self.acc_violated[self.f_model[i]] += 1
            if self.record_timeline:
                self.miss_log.append((t, self.f_model[i], i))

    def _finish(self, i: int, state: int, t: float) -> None:
        """End an outstanding frame by a drop, a cap discard or a cancellation (a running span finishes)."""
        self.f_state[i] = state
        self.f_end[i] = t
        del self.outstanding[i]
        self.ready.pop(i, None)
        self._out_by_model[self.f_model[i]].remove(i)
        self.out_counts[self.f_model[i]] -= 1
        if state in (DROPPED, DISCARDED):
            self._mark_violated(i, t)

    def _complete(self, i: int, t: float) -> None:
        self.f_state[i] = COMPLETED
        self.f_end[i] = t
        self.completed += 1
        del self.outstanding[i]
        self.ready.pop(i, None)
        m = self.f_model[i]
        self._out_by_model[m].remove(i)
        self.out_counts[m] -= 1
        if t > self.f_deadline[i]:
            self._mark_violated(i, t)
        if self._sp[m] >= 0:
            self.subnet_counts[m][self.f_variant[i]] += 1
        ph = self.phase
        k = self.f_frame[i]
        for c, p in self._children[ph][m]:
            if self.dynamics == "sampled" and crn_uniform(self._seed_key, self._name_keys[c], k, 0) >= p:
                continue
            deadline = self.f_deadline[i] if self.child_deadline == "inherit" else t + 1.0 / self._fps[ph][c]
            self._release(ph, c, k, t, deadline)

    def _on_done(self, a: int, t: float) -> None:
        i = self.acc_running[a]
        self.acc_running[a] = -1
        self._n_idle += 1
        self.f_running[i] = -1
        if self.f_state[i] != OUTSTANDING:  # dropped, discarded or cancelled while its span ran
            return
        self.f_tcmpl[i] = t
        self.f_prev_acc[i] = a
        self.acc_resident[a] = i
        pos = self.f_next_pos[i]
        self.f_pos[i] = pos
        if pos >= self._f_vars[i][self.f_variant[i]].n:
            self._complete(i, t)
        else:
            self.ready[i] = None

    def _on_switch(self, ph: int, t: float) -> None:
        """Task-level switch (docs §3 #24): cancel the outstanding frames of models absent from the new phase."""
        self.phase = ph
        active = self._active[ph]
        for i in list(self.outstanding):
            m = self.f_model[i]
            if active[m]:
                continue
            self.cancelled += 1
            if self.f_counted[i] and not self.f_violated[i]:  # not counted in any window (docs §3 #24)
                self.f_counted[i] = False
                self.acc_frames[m] -= 1
                self.acc_worst[m] -= self.f_worst[i]
                self.acc_energy[m] -= self.f_energy[i]
            self._finish(i, CANCELLED, t)
            if self.record_timeline:
                self.drop_log.append((t, m, i, "switch"))

    # ------------------------------------------------------------------------------------ dispatch
    def _check_dispatch(self, i: Any, a: Any, n_layers: Any) -> None:
        if type(i) is int and type(a) is int and type(n_layers) is int and i in self.ready and n_layers >= 1 \
                and 0 <= a < self.n_acc and self.acc_running[a] < 0:
            return  # the common case, checked cheaply
        self._check_task(i, "Dispatch.task")
        if isinstance(a, bool) or not isinstance(a, int | np.integer) or not 0 <= a < self.n_acc:
            raise ValueError(f"Dispatch.acc={a!r} is not an accelerator id (0..{self.n_acc - 1})")
        if self.acc_running[a] >= 0:
            raise ValueError(f"Dispatch.acc={a} is busy until {self.acc_busy_until[a]:.6f} s")
        if i not in self.ready:
            raise ValueError(f"Dispatch.task={i} is not ready (state {STATE_NAMES[self.f_state[i]]}, "
                             f"running on {self.f_running[i]})")
        if isinstance(n_layers, bool) or not isinstance(n_layers, int | np.integer) or n_layers < 1:
            raise ValueError(f"Dispatch.n_layers={n_layers!r} must be an int >= 1 (ALL_LAYERS for the rest)")

    def _choose_variant(self, i: int, m: int, variant: Any) -> None:
        if self._sp[m] < 0:
            raise ValueError(f"Dispatch.variant={variant!r}: model {self.model_names[m]!r} is not a Supernet")
        if isinstance(variant, bool) or not isinstance(variant, int | np.integer) \
                or not 0 <= variant < len(self._f_vars[i]):
            raise ValueError(f"Dispatch.variant={variant!r} must be -1 or in [0, {len(self._f_vars[i])})")
        if self.f_locked[i] and variant != self.f_variant[i]:
            raise ValueError(f"Dispatch.variant={variant}: task {i} is past its switch point")
        self.f_variant[i] = int(variant)

    def _switch(self, i: int, a: int, V: Variant, pos: int) -> tuple[int, int, int]:
        """Context switch of dispatching ``i`` on ``a`` (#7): ``(resident frame, its flushed bytes, fetched bytes)``."""
        flush = 0
        r = self.acc_resident[a]
        if r >= 0 and r != i and self.f_state[r] == OUTSTANDING and self.f_last[r] >= 0:
            flush = self._f_vars[r][self.f_variant[r]].out_b[self.f_last[r]]
        prev = self.f_prev_acc[i]
        return r, flush, (V.in_b[pos] if prev >= 0 and prev != a else 0)

    def _charge(self, i: int, energy: float) -> None:
        self.f_energy[i] += energy
        self.energy_total += energy
        if self.f_counted[i]:
            self.acc_energy[self.f_model[i]] += energy

    def _dispatch(self, i: Any, a: Any, n_layers: Any, variant: Any) -> None:
        running = self.acc_running
        if not (type(i) is int and type(a) is int and type(n_layers) is int and i in self.ready and n_layers >= 1
                and 0 <= a < self.n_acc and running[a] < 0):
            self._check_dispatch(i, a, n_layers)  # the ValueError naming the field (the common case passes above)
        m = self.f_model[i]
        pos = self.f_pos[i]
        if variant != -1:
            self._choose_variant(i, m, variant)
        V = self._f_vars[i][self.f_variant[i]]
        limit, end = pos + n_layers, V.unit_end[pos]
        if end > limit:  # at chunk:N the whole chunk (docs §4 granularity)
            limit = end
        if not self.f_locked[i] and limit > self._sp[m]:
            self.f_locked[i] = True
        resident, flush, fetch = self._switch(i, a, V, pos)
        prev = self.f_prev_acc[i]
        if prev >= 0 and prev != a and self.acc_resident[prev] == i:
            self.acc_resident[prev] = -1  # its activation moves with it (the fetch)
        dur = en = 0.0
        if flush or fetch:
            e_byte = self.switch_energy_per_byte
            dur = (flush + fetch) * self._lat_per_byte[self.f_phase[i]][a]
            self.context_switches += 1
            self.switch_energy_total += (flush + fetch) * e_byte
            if flush:  # the displaced frame's own data movement (docs §3 #7)
                self._charge(resident, flush * e_byte)
            en = fetch * e_byte
        if limit == pos + 1 and self._f_skip[i] is None and self._f_exit[i] is None:  # one layer: _run_span's sums
            dur += V.lat_l[pos][a]
            en += V.en_l[pos][a]
            count, self.f_last[i], self.f_next_pos[i] = 1, pos, pos + 1
        else:
            last, nxt, count, dur, en = self._run_span(i, a, V, pos, limit, dur, en)
            self.f_last[i] = last
            self.f_next_pos[i] = nxt
        self.f_energy[i] += en  # _charge, inlined on the hot path
        self.energy_total += en
        if self.f_counted[i]:
            self.acc_energy[m] += en
        t_end = self.now + dur
        self.acc_busy_total[a] += dur
        running[a] = i
        self.acc_busy_until[a] = t_end
        self._n_idle -= 1
        self.f_running[i] = a
        del self.ready[i]
        self.dispatches += 1
        self.layers += count
        self.f_layers[i] += count
        self._seq += 1
        heapq.heappush(self._heap, (t_end, EV_DONE, self._seq, a))
        if self.record_timeline:
            self.timeline.append((a, self.now, t_end, m, self.f_frame[i], i))

    def _run_span(self, i: int, a: int, V: Variant, pos: int, limit: int, dur: float,
                  en: float) -> tuple[int, int, int, float, float]:
        """Layers ``[pos, limit)`` of task ``i`` on ``a`` (skips skipped, an exit ends the frame): ``(last layer run,
        next position, layers run, duration, energy)``."""
        lat_row, en_row = V.lat_l, V.en_l
        n = V.n
        skip = self._f_skip[i]
        exits = self._f_exit[i]
        p = pos
        count = 0
        while True:
            dur += lat_row[p][a]
            en += en_row[p][a]
            count += 1
            last = p
            if exits is not None and p in exits:
                p = n
                break
            p += 1
            if p >= limit or p >= n:
                break
            while skip is not None and p in skip:
                p = skip[p]
            if p >= limit or p >= n:
                break
        if skip is not None and p < n:  # the gate at the span's end (resolved at LAYER_DONE, known here)
            while p in skip:
                p = skip[p]
        return last, p, count, dur, en

    # ------------------------------------------------------------------------------------ metrics
    def energy_floor(self, i: int) -> float:
        """The least energy frame ``i`` can cost: its sampled path (its skips and exit) with every layer on the
        accelerator that spends the least on it and no context switch; a Supernet frame whose sub-net is open, the
        cheapest sub-net (the bound of the energy analysis, docs/families/dream-cost-model.md "Energy")."""
        variants = self._f_vars[i] if not self.f_locked[i] else (self._f_vars[i][self.f_variant[i]],)
        skip, exits = self._f_skip[i], self._f_exit[i]
        best = math.inf
        for V in variants:
            total, p = 0.0, 0
            while p < V.n:
                while skip is not None and p in skip:
                    p = skip[p]
                if p >= V.n:
                    break
                total += min(V.en_l[p])
                if exits is not None and p in exits:
                    break
                p += 1
            best = min(best, total)
        return best

    def window_stats(self, t0: float, t1: float) -> dict[str, list[float]]:
        """Per-model sums over frames with deadline in ``[t0, t1)`` (not cancelled): ``frames``,
        ``violated``, ``energy``, ``worst``, ``drops`` (what is known now)."""
        M = self.n_models
        out = {k: [0.0] * M for k in ("frames", "violated", "energy", "worst", "drops")}
        fr, vi, en, wo, dr = out["frames"], out["violated"], out["energy"], out["worst"], out["drops"]
        st, viol = self.f_state, self.f_violated
        for i, d in enumerate(self.f_deadline):
            if not t0 <= d < t1 or (st[i] == CANCELLED and not viol[i]):
                continue
            m = self.f_model[i]
            fr[m] += 1
            vi[m] += viol[i]
            en[m] += self.f_energy[i]
            wo[m] += self.f_worst[i]
            dr[m] += st[i] == DROPPED
        return out

    def window_uxcost(self, t0: float, t1: float) -> float:
        """UXCost (Alg 2) over the frames with deadline in ``[t0, t1)``."""
        s = self.window_stats(t0, t1)
        return uxcost(s["violated"], s["frames"], s["energy"], s["worst"],
                      energy_exponent=self.energy_exponent)["uxcost"]

    def metrics(self) -> dict[str, float]:
        """The paper's metrics over the frames with deadline in ``[warmup_s, horizon_s)`` (running sums)."""
        ux = uxcost(self.acc_violated, self.acc_frames, self.acc_energy, self.acc_worst,
                    energy_exponent=self.energy_exponent)
        frames, violated, worst = sum(self.acc_frames), sum(self.acc_violated), sum(self.acc_worst)
        out: dict[str, float] = {
            **ux,
            "dlv_rate": violated / frames if frames else 0.0,
            "energy_rate": sum(self.acc_energy) / worst if worst > 0 else 0.0,
            "frames": float(frames), "violated": float(violated), "drops": float(self.drops),
            "cap_discards": float(self.cap_discards), "cancelled": float(self.cancelled),
            "completed": float(self.completed), "dispatches": float(self.dispatches), "layers": float(self.layers),
            "decisions": float(self.decisions), "context_switches": float(self.context_switches),
            "switch_energy": float(self.switch_energy_total), "energy_total": float(self.energy_total),
            "now_s": float(self.now),
        }
        for m, name in enumerate(self.model_names):
            f = self.acc_frames[m]
            out[f"frames/{name}"] = float(f)
            out[f"dlv/{name}"] = self.acc_violated[m] / f if f else 0.0
            out[f"norm_energy/{name}"] = self.acc_energy[m] / self.acc_worst[m] if self.acc_worst[m] > 0 else 0.0
            out[f"drops/{name}"] = float(self.acc_drops[m])
            for v, vname in enumerate(self._variant_names[m] if self._sp[m] >= 0 else ()):
                out[f"subnet/{vname}"] = float(self.subnet_counts[m][v])
        return out
