"""Discrete-event simulator of real-time multi-model ML on a multi-accelerator SoC (Kim et al., DREAM,
ASPLOS'23; ``docs/families/dream.md`` §1-§3).

No Gymnasium here: :class:`DreamSim` follows the core simulator protocol (:mod:`joulegym.core.simulator`):
``reset(seed)``, ``view()``, ``apply(decision)``, ``advance()``, ``metrics()``, ``done`` and ``truncated``.
One scheduler run is ``while sim.advance(): sim.apply(scheduler.decide(sim.view()))``
(:func:`joulegym.envs.dream.scheduling.run_episode`); the Gymnasium env drives the same loop.

Model (paper §2-§4; [A] = our reading where the paper is silent, numbered as in docs §3):

- **Releases**: every root model releases a frame every ``1/FPS`` s from t = 0 ([A]; flag
  ``release_phase="random"``); deadline = release + 1/FPS (#1). A cascaded child is released at its parent
  frame's completion with probability ``p`` [P §5.1] and inherits the parent's deadline (docs §3 #1; flag
  ``child_deadline="own_period"``: release + 1/FPS of the child).
- **Dispatch**: a :class:`Dispatch` runs the task's next layers on an idle accelerator, non-preemptively
  (§1.1: a running layer is never preempted). Latency and energy come from per-(layer, accelerator) tables
  (the cost model of ``docs/families/dream-cost-model.md``). A **context switch** (docs §3 #7, [P §3.4]) moves
  ``flush + fetch`` activation bytes between DRAM and the accelerator: ``flush`` = the output of the
  displaced, still-outstanding task's last layer; ``fetch`` = the input of the dispatched layer if the task
  last ran on another accelerator; it costs ``bytes * e_DRAM`` energy and ``bytes * lat_per_byte[acc]`` time.
- **Dynamic models**: SkipNet gates (each gated block skipped w.p. ``p_dynamic``), RAPID-RL early exits
  (exit after the gated layer w.p. ``p_dynamic``), resolved when the frame reaches them; Once-for-all
  Supernet variants chosen at the switch point by the scheduler (default: the original, heaviest).
- **Common random numbers**: every random outcome is a pure function of ``(seed, model name, frame index,
  draw)`` (a SplitMix64 hash, :func:`crn_uniform`), so every scheduler sees the same releases, cascades,
  skips and exits under a seed, whatever order its events happen in.
- **Frame fate**: a frame is violated if it completes after its deadline, is dropped (:class:`Drop`,
  [P §4.2.1]: completion time = infinity) or is discarded by the **safety cap** (#2: at most ``cap``
  outstanding frames per model; releasing one more discards the oldest, for every scheduler alike;
  ``metrics()["cap_discards"]`` counts them). A late frame keeps running (soft real time, #2).
- **Task-level switch** (docs §3 #24): at ``switch_s`` the outstanding frames of models absent from the new
  scenario are cancelled (a frame whose deadline already passed keeps its violation; the others are not
  counted in any window), and the new scenario's periodic releases start at ``switch_s``. Each phase keeps
  its own cost tables (its own load calibration kappa); frames of models present in both keep running.
- **UXCost** (Algorithm 2, :func:`uxcost`): per model, ``Rate_DLV = violated / frames`` (``1 / (2 frames)``
  when no frame is violated) and ``NormEnergy = actual / worst-case energy``; ``UXCost = (Σ_m Rate_DLV) x
  (Σ_m NormEnergy)``: the per-model terms are summed then multiplied, never aggregated over frames first.
  A frame counts in a window iff its deadline lies in it; the window of :meth:`DreamSim.metrics` is
  ``[warmup_s, horizon_s)``. Actual energy = the frame's executed layers + the context switches charged
  to it (dropped frames' partial work included); worst case = its nominal full path (no skip, no exit,
  original Supernet) on the most energy-hungry accelerator per layer (#3).

Engine: a binary heap of ``(time, kind, seq, arg)`` (``heapq``), not SimPy: every event is a point event
with nothing to integrate between events, and the hot path (~10^4 dispatches per 2 s episode) needs the
few microseconds per event that a plain heap gives; ``seq`` breaks ties in push order, so runs are
deterministic. Ties at one time: layer completions, the scenario switch, arrivals, wake-up timers, then
deadline checks (a frame finishing exactly at its deadline meets it). Per-frame state lives in parallel
Python lists indexed by task id (no per-job objects; scalar list access is faster than numpy here).
"""

from __future__ import annotations

import copy
import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ALL_LAYERS = 1 << 30  # Dispatch.n_layers for "the rest of the model" (FCFS, docs §3 #23)
EPS_SLACK_S = 1e-6  # docs §3 #5: slack <= 0 is replaced by 1 us
CHILD_DEADLINES = ("inherit", "own_period")
TOGO_MODES = ("worst", "expected")
RELEASE_PHASES = ("sync", "random")
DYNAMICS = ("sampled", "worst")

# event kinds, in their tie order at one timestamp
EV_DONE, EV_SWITCH, EV_ARRIVAL, EV_TIMER, EV_DEADLINE = range(5)
# frame states
OUTSTANDING, COMPLETED, DROPPED, DISCARDED, CANCELLED = range(5)
STATE_NAMES = ("outstanding", "completed", "dropped", "discarded", "cancelled")

_MASK64 = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def _name_key(name: str) -> int:
    """A stable 64-bit key of a model name (FNV-1a; Python's ``hash`` is salted per process)."""
    h = 0xCBF29CE484222325
    for byte in name.encode():
        h = ((h ^ byte) * 0x100000001B3) & _MASK64
    return h


def crn_uniform(seed_key: int, name_key: int, frame: int, draw: int) -> float:
    """A uniform in [0, 1) that depends only on ``(seed, model, frame index, draw)`` (common random numbers).

    SplitMix64 (Steele et al., OOPSLA'14) chained over the four integers; 53 bits of the result.
    """
    x = _splitmix64(seed_key ^ name_key)
    x = _splitmix64(x ^ (frame & _MASK64))
    x = _splitmix64(x ^ (draw & _MASK64))
    return (x >> 11) * (1.0 / (1 << 53))


# ----------------------------------------------------------------------------------------------- decisions
@dataclass(frozen=True, slots=True)
class Dispatch:
    """Run ``task``'s next ``n_layers`` nominal layer positions on idle accelerator ``acc``.

    Skipped SkipNet layers inside the span are not run; an early exit ends the chunk and the frame.
    ``variant`` (Supernet only, -1 = keep): index into the Supernet's variants (0 = original), allowed
    until the switch point has been dispatched.
    """

    task: int
    acc: int
    n_layers: int = 1
    variant: int = -1


@dataclass(frozen=True, slots=True)
class Drop:
    """Drop an outstanding frame (a deadline violation, [P §4.2.1]); a running chunk still finishes."""

    task: int


@dataclass(frozen=True, slots=True)
class Wait:
    """Do nothing now: advance to the next event (and to a timer at ``wakeup_s`` if given)."""

    wakeup_s: float | None = None


WAIT = Wait()
Decision = Dispatch | Drop | Wait


# ----------------------------------------------------------------------------------------------- inputs
def _check_prob(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name}={value!r} must be a probability in [0, 1]")
    return float(value)


@dataclass(frozen=True, eq=False)
class LayerTable:
    """One network's per-(layer, accelerator) costs: arrays are ``(n_layers, n_acc)`` (the cost model:
    ``docs/families/dream-cost-model.md``).

    :param latency: seconds (kappa-scaled). :param energy: MAC-units.
    :param input_bytes: input activation bytes per layer (fetched on a context switch).
    :param output_bytes: output activation bytes per layer (flushed when displaced).
    :param skip_blocks: ``(n_blocks, 2)`` [start, stop) gated layer ranges (SkipNet).
    :param exits: layer indices after which a frame may exit (RAPID-RL).
    """

    name: str
    latency: np.ndarray
    energy: np.ndarray
    input_bytes: np.ndarray | None = None
    output_bytes: np.ndarray | None = None
    skip_blocks: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    exits: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __post_init__(self) -> None:
        lat = np.asarray(self.latency, dtype=float)
        en = np.asarray(self.energy, dtype=float)
        if lat.ndim != 2 or lat.shape[0] < 1 or lat.shape[1] < 1:
            raise ValueError(f"latency of model {self.name!r} must be (n_layers >= 1, n_acc >= 1), got {lat.shape}")
        if en.shape != lat.shape:
            raise ValueError(f"energy of model {self.name!r} must have the latency's shape {lat.shape}, got {en.shape}")
        if not (np.all(np.isfinite(lat)) and np.all(lat > 0)):
            raise ValueError(f"latency of model {self.name!r} must be finite and > 0")
        if not (np.all(np.isfinite(en)) and np.all(en >= 0)):
            raise ValueError(f"energy of model {self.name!r} must be finite and >= 0")
        n = lat.shape[0]
        for key in ("input_bytes", "output_bytes"):
            value = getattr(self, key)
            arr = np.zeros(n, dtype=np.int64) if value is None else np.asarray(value, dtype=np.int64).reshape(-1)
            if arr.shape != (n,) or np.any(arr < 0):
                raise ValueError(f"{key} of model {self.name!r} must be ({n},) and >= 0")
            object.__setattr__(self, key, arr)
        skip = np.asarray(self.skip_blocks, dtype=np.int64).reshape(-1, 2)
        if skip.size and (skip[:, 0].min() < 0 or skip[:, 1].max() > n or np.any(skip[:, 1] <= skip[:, 0])
                          or np.any(skip[1:, 0] < skip[:-1, 1])):
            raise ValueError(f"skip_blocks of model {self.name!r} must be sorted, disjoint [start, stop) in [0, {n}]")
        exits = np.asarray(self.exits, dtype=np.int64).reshape(-1)
        if exits.size and (exits.min() < 0 or exits.max() >= n or np.any(np.diff(exits) <= 0)):
            raise ValueError(f"exits of model {self.name!r} must be increasing layer indices in [0, {n})")
        object.__setattr__(self, "latency", lat)
        object.__setattr__(self, "energy", en)
        object.__setattr__(self, "skip_blocks", skip)
        object.__setattr__(self, "exits", exits)

    @property
    def n_layers(self) -> int:
        return int(self.latency.shape[0])

    @property
    def n_acc(self) -> int:
        return int(self.latency.shape[1])


@dataclass(frozen=True, eq=False)
class ModelTable:
    """A model slot's cost tables: one :class:`LayerTable` per variant (``[0]`` = the original, heaviest;
    several only for a Supernet, whose variants share layers ``[0, switch_point)``)."""

    name: str
    variants: tuple[LayerTable, ...]
    switch_point: int = -1
    variant_names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.variants:
            raise ValueError(f"model {self.name!r}: variants must not be empty")
        if len(self.variants) > 1:
            sp = int(self.switch_point)
            if not 0 <= sp < min(v.n_layers for v in self.variants):
                raise ValueError(f"switch_point={self.switch_point!r} of Supernet {self.name!r} must be in "
                                 f"[0, {min(v.n_layers for v in self.variants)})")
        names = self.variant_names or tuple(v.name for v in self.variants)
        if len(names) != len(self.variants):
            raise ValueError(f"variant_names of model {self.name!r} must name every variant")
        object.__setattr__(self, "variant_names", tuple(names))

    @property
    def is_supernet(self) -> bool:
        return len(self.variants) > 1


@dataclass(frozen=True)
class App:
    """One model of a workload (a Table 3 row): ``parent`` names a model of the same workload (cascade)."""

    model: str
    fps: float
    parent: str | None = None
    p: float = 1.0
    p_dynamic: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.fps, bool) or not isinstance(self.fps, int | float | np.number) \
                or not math.isfinite(self.fps) or self.fps <= 0:
            raise ValueError(f"fps={self.fps!r} of model {self.model!r} must be a finite number > 0")
        _check_prob("p", self.p)
        _check_prob("p_dynamic", self.p_dynamic)


@dataclass(frozen=True)
class Workload:
    """A usage scenario as the simulator needs it: its models (unique names), FPS, cascades."""

    name: str
    apps: tuple[App, ...]

    def __post_init__(self) -> None:
        names = [a.model for a in self.apps]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"workload {self.name!r}: apps must be a non-empty list of unique models, got {names}")
        for a in self.apps:
            if a.parent is not None and (a.parent not in names or a.parent == a.model):
                raise ValueError(f"workload {self.name!r}: parent={a.parent!r} of {a.model!r} is not another model "
                                 f"of the workload {names}")
        # a parent chain must end (no cycles)
        parent = {a.model: a.parent for a in self.apps}
        for a in self.apps:
            seen, m = set(), a.model
            while m is not None:
                if m in seen:
                    raise ValueError(f"workload {self.name!r}: cascade cycle through {m!r}")
                seen.add(m)
                m = parent[m]


# ----------------------------------------------------------------------------------------------- compiled
class _Variant:
    """Per-layer lists of one variant (plain Python lists: the hot path reads scalars)."""

    __slots__ = (
        "best_after",
        "best_from",
        "block_idx",
        "en",
        "exit_idx",
        "in_b",
        "lat",
        "mean_lat",
        "min_lat",
        "n",
        "n_blocks",
        "name",
        "out_b",
        "skip_end",
        "sum_en",
        "sum_lat",
        "togo_from",
        "worst_energy",
    )

    def __init__(self, table: LayerTable, p_dynamic: float, togo_mode: str) -> None:
        lat, en = table.latency, table.energy
        n = table.n_layers
        self.name = table.name
        self.n = n
        self.lat = [tuple(row) for row in lat.tolist()]
        self.en = [tuple(row) for row in en.tolist()]
        self.mean_lat = lat.mean(axis=1).tolist()
        self.sum_lat = lat.sum(axis=1).tolist()
        self.min_lat = lat.min(axis=1).tolist()
        self.sum_en = en.sum(axis=1).tolist()
        self.in_b = table.input_bytes.tolist()
        self.out_b = table.output_bytes.tolist()
        self.skip_end = {int(s): int(e) for s, e in table.skip_blocks}
        self.block_idx = {int(s): b for b, (s, _e) in enumerate(table.skip_blocks)}
        self.n_blocks = len(self.skip_end)
        self.exit_idx = {int(j): b for b, j in enumerate(table.exits)}
        # worst-case energy of one frame (docs §3 #3): nominal full path, most energy-hungry accelerator
        self.worst_energy = float(en.max(axis=1).sum())
        in_block_end = [-1] * n  # end of the skip block containing layer j
        for s, e in self.skip_end.items():
            for j in range(s, e):
                in_block_end[j] = e
        # remaining time from position p with the gates at p resolved (Alg 1 ToGo, §4.2.1 minimum_to_go):
        # best = min-latency accelerator, gated blocks skipped, earliest exit; worst/expected = mean over accs
        self.best_from, self.best_after = self._remaining(self.min_lat, in_block_end, "best", p_dynamic)
        if togo_mode == "worst":
            cum = np.concatenate([[0.0], np.cumsum(lat.mean(axis=1))])
            self.togo_from = (cum[-1] - cum).tolist()
        else:
            self.togo_from, _ = self._remaining(self.mean_lat, in_block_end, "expected", p_dynamic)

    def _remaining(self, cost: list[float], in_block_end: list[int], mode: str,
                   p: float) -> tuple[list[float], list[float]]:
        """Backward pass: ``from_[p]`` (gates at p resolved) and ``after[j]`` (gates after layer j unresolved)."""
        n = self.n
        from_ = [0.0] * (n + 1)
        after = [0.0] * n
        fresh = [0.0] * (n + 1)  # at q with q's skip gate unresolved (q not inside a block)
        for j in range(n - 1, -1, -1):
            q = j + 1
            if q < n and in_block_end[j] > q:  # j and q in the same (running) block: q is mandatory
                rest = from_[q]
            else:
                rest = fresh[q]
            if j in self.exit_idx:
                rest = 0.0 if mode == "best" else (1.0 - p) * rest
            after[j] = rest
            from_[j] = cost[j] + rest
            if j in self.skip_end:
                e = self.skip_end[j]
                fresh[j] = min(fresh[e], from_[j]) if mode == "best" else p * fresh[e] + (1.0 - p) * from_[j]
            else:
                fresh[j] = from_[j]
        return from_, after


# ----------------------------------------------------------------------------------------------- metrics
def uxcost(violated: Sequence[float], frames: Sequence[float], energy: Sequence[float], worst: Sequence[float],
           *, energy_exponent: float = 1.0) -> dict[str, float]:
    """UXCost, Algorithm 2 [P §3.6]: per-model rates and normalised energies, summed, then multiplied.

    ``Rate_DLV[m] = violated[m] / frames[m]``, replaced by ``1 / (2 frames[m])`` when ``violated[m] == 0``
    (Alg 2 lines 7-8); ``NormEnergy[m] = energy[m] / worst[m]``; ``UXCost = (Σ Rate_DLV) (Σ NormEnergy)^x``
    with ``x = energy_exponent`` (1 in the paper; §3.6 lets users change it). Models with no counted frame
    are not part of ``Md``. Returns ``uxcost``, ``overall_rate_dlv``, ``overall_norm_energy``.
    """
    rate = 0.0
    norm = 0.0
    for v, f, e, w in zip(violated, frames, energy, worst, strict=True):
        if f <= 0:
            continue
        rate += v / f if v > 0 else 1.0 / (2.0 * f)
        norm += e / w if w > 0 else 0.0
    return {"uxcost": rate * norm ** energy_exponent, "overall_rate_dlv": rate, "overall_norm_energy": norm}


# ----------------------------------------------------------------------------------------------- view
class DreamView:
    """What a scheduler decides on: live references to the simulator's lists (read-only by convention).

    Per task id: ``f_model`` (model slot), ``f_frame`` (frame index k), ``f_release``, ``f_deadline``,
    ``f_pos`` (next nominal layer), ``f_tcmpl`` (last layer's completion; the release before the first),
    ``f_prev_acc`` (-1 before the first layer), ``f_variant``, ``f_running`` (acc or -1), ``f_state``,
    ``f_violated``. Per accelerator: ``acc_running`` (task or -1), ``acc_busy_until``, ``acc_resident``
    (task whose activation is on it, or -1), ``acc_pes``. ``ready`` and ``outstanding``: dicts of task
    ids (insertion order). Methods are the simulator's (:class:`DreamSim`).
    """

    def __init__(self, sim: DreamSim) -> None:
        self.sim = sim
        for key in ("n_acc", "acc_pes", "acc_running", "acc_busy_until", "acc_resident", "ready", "outstanding",
                    "f_model", "f_frame", "f_release", "f_deadline", "f_pos", "f_tcmpl", "f_prev_acc", "f_variant",
                    "f_running", "f_state", "f_violated", "model_names", "n_models", "horizon_s",
                    "to_go", "min_to_go", "next_lat", "next_energy", "next_stats", "switch_bytes", "switch_energy",
                    "at_switch_point", "supernet_options", "is_leaf", "drops_in_window", "idle_accs",
                    "active_models", "remaining_mean", "tables_of"):
            setattr(self, key, getattr(sim, key))

    @property
    def now(self) -> float:
        return self.sim.now


# ----------------------------------------------------------------------------------------------- simulator
class DreamSim:
    """The DREAM event loop (module docstring). Build with :meth:`from_catalog` or from tables.

    :param tables: per workload phase, ``{model name: ModelTable}`` covering its workload's models (a
        single mapping serves every phase).
    :param workload: the usage scenario (:class:`Workload`).
    :param acc_pes: PEs per accelerator (Planaria's resource fit reads it).
    :param switch_lat_per_byte: ``(n_acc,)`` s per byte moved in a context switch (#7; per phase if a list of
        arrays); :param switch_energy_per_byte: energy per byte (e_DRAM).
    :param horizon_s: episode length (T_exec = 2 s, [P §3.6]). :param warmup_s: frames with deadlines
        before it are not counted.
    :param switch: ``(t_s, workload2, tables2, switch_lat_per_byte2)`` task-level switch (docs §3 #24).
    :param child_deadline: ``"inherit"`` (#1) or ``"own_period"``. :param cap: safety cap (#2), ``None`` off.
    :param togo_mode: ToGo over the worst-case remaining path (default) or its expectation.
    :param release_phase: ``"sync"`` (all models start at 0, [A]) or ``"random"`` (a CRN phase per model).
    :param dynamics: ``"sampled"`` or ``"worst"`` (every cascade activated, nothing skipped, no exit: the
        offline plan of static FCFS, docs §3 #23).
    :param record_timeline: keep the per-dispatch Gantt log.
    """

    def __init__(self, tables: Mapping[str, ModelTable], workload: Workload, *, acc_pes: Sequence[int],
                 switch_lat_per_byte: Sequence[float] | np.ndarray, switch_energy_per_byte: float,
                 horizon_s: float = 2.0, warmup_s: float = 0.0,
                 switch: tuple[float, Workload, Mapping[str, ModelTable], Any] | None = None,
                 child_deadline: str = "inherit", cap: int | None = 4, togo_mode: str = "worst",
                 release_phase: str = "sync", dynamics: str = "sampled", record_timeline: bool = False,
                 uxcost_energy_exponent: float = 1.0, name: str = "") -> None:
        if child_deadline not in CHILD_DEADLINES:
            raise ValueError(f"child_deadline={child_deadline!r} is not one of {CHILD_DEADLINES}")
        if togo_mode not in TOGO_MODES:
            raise ValueError(f"togo_mode={togo_mode!r} is not one of {TOGO_MODES}")
        if release_phase not in RELEASE_PHASES:
            raise ValueError(f"release_phase={release_phase!r} is not one of {RELEASE_PHASES}")
        if dynamics not in DYNAMICS:
            raise ValueError(f"dynamics={dynamics!r} is not one of {DYNAMICS}")
        if isinstance(horizon_s, bool) or not isinstance(horizon_s, int | float) or not 0 < horizon_s < math.inf:
            raise ValueError(f"horizon_s={horizon_s!r} must be a finite number > 0")
        if isinstance(warmup_s, bool) or not isinstance(warmup_s, int | float) or not 0 <= warmup_s < horizon_s:
            raise ValueError(f"warmup_s={warmup_s!r} must be in [0, horizon_s={horizon_s})")
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise ValueError(f"cap={cap!r} must be an int >= 1 or None")
        if not (isinstance(uxcost_energy_exponent, int | float) and uxcost_energy_exponent > 0):
            raise ValueError(f"uxcost_energy_exponent={uxcost_energy_exponent!r} must be > 0")
        pes = [int(p) for p in acc_pes]
        if not pes or any(p <= 0 for p in pes):
            raise ValueError(f"acc_pes={acc_pes!r} must be a non-empty list of positive PE counts")
        self.n_acc = len(pes)
        self.acc_pes = pes
        self.horizon_s = float(horizon_s)
        self.warmup_s = float(warmup_s)
        self.child_deadline = child_deadline
        self.cap = cap
        self.togo_mode = togo_mode
        self.release_phase = release_phase
        self.dynamics = dynamics
        self.record_timeline = bool(record_timeline)
        self.energy_exponent = float(uxcost_energy_exponent)
        self.name = name or workload.name
        self.switch_energy_per_byte = float(switch_energy_per_byte)
        if not self.switch_energy_per_byte >= 0:
            raise ValueError(f"switch_energy_per_byte={switch_energy_per_byte!r} must be >= 0")

        phases: list[tuple[float, Workload, Mapping[str, ModelTable], Any]] = [
            (0.0, workload, tables, switch_lat_per_byte)]
        if switch is not None:
            if not (isinstance(switch, tuple | list) and len(switch) == 4):
                raise ValueError("switch must be (t_s, workload, tables, switch_lat_per_byte)")
            t_sw = switch[0]
            if isinstance(t_sw, bool) or not isinstance(t_sw, int | float) or not 0 < t_sw < horizon_s:
                raise ValueError(f"switch time {t_sw!r} must be in (0, horizon_s={horizon_s})")
            phases.append((float(t_sw), switch[1], switch[2], switch[3]))
        self.switch_s = phases[1][0] if len(phases) > 1 else math.inf
        # model slots: unique names over the phases (first appearance order)
        names: list[str] = []
        for _t, wl, _tb, _lb in phases:
            for app in wl.apps:
                if app.model not in names:
                    names.append(app.model)
        self.model_names = tuple(names)
        self.n_models = len(names)
        slot = {n: i for i, n in enumerate(names)}
        self._name_keys = [_name_key(n) for n in names]
        M = self.n_models
        self._phase_start: list[float] = []
        self._phase_end: list[float] = []
        self._active: list[list[bool]] = []
        self._pdyn: list[list[float]] = []
        self._fps: list[list[float]] = []
        self._parent: list[list[int]] = []
        self._children: list[list[list[tuple[int, float]]]] = []
        self._vars: list[list[list[_Variant] | None]] = []  # [phase][slot] -> variants
        self._sp: list[int] = [-1] * M
        self._variant_names: list[tuple[str, ...]] = [()] * M
        self._lat_per_byte: list[list[float]] = []
        for ph, (t0, wl, tb, lpb) in enumerate(phases):
            self._phase_start.append(t0)
            self._phase_end.append(phases[ph + 1][0] if ph + 1 < len(phases) else self.horizon_s)
            active, fps, parent, pdyn = [False] * M, [0.0] * M, [-1] * M, [0.0] * M
            children: list[list[tuple[int, float]]] = [[] for _ in range(M)]
            variants: list[list[_Variant] | None] = [None] * M
            lpb_arr = np.asarray(lpb, dtype=float).reshape(-1)
            if lpb_arr.shape != (self.n_acc,) or np.any(lpb_arr < 0) or not np.all(np.isfinite(lpb_arr)):
                raise ValueError(f"switch_lat_per_byte must be ({self.n_acc},) finite and >= 0, got {lpb!r}")
            self._lat_per_byte.append(lpb_arr.tolist())
            for app in wl.apps:
                m = slot[app.model]
                if app.model not in tb:
                    raise ValueError(f"model={app.model!r} of workload {wl.name!r} has no cost table; "
                                     f"tables: {sorted(tb)}")
                table = tb[app.model]
                for v in table.variants:
                    if v.n_acc != self.n_acc:
                        raise ValueError(f"cost table of {v.name!r} has {v.n_acc} accelerators, acc_pes has "
                                         f"{self.n_acc}")
                active[m] = True
                fps[m] = float(app.fps)
                pdyn[m] = float(app.p_dynamic)
                parent[m] = -1 if app.parent is None else slot[app.parent]
                if app.parent is not None:
                    children[slot[app.parent]].append((m, float(app.p)))
                variants[m] = [_Variant(v, app.p_dynamic, togo_mode) for v in table.variants]
                self._sp[m] = int(table.switch_point) if table.is_supernet else -1
                self._variant_names[m] = table.variant_names
            self._active.append(active)
            self._pdyn.append(pdyn)
            self._fps.append(fps)
            self._parent.append(parent)
            self._children.append(children)
            self._vars.append(variants)
        self._signature: tuple | None = None
        # per model slot, from the first phase it appears in: FPS and one nominal frame's worst-case energy
        self.model_fps = [next(ph[m] for ph in self._fps if ph[m] > 0) for m in range(M)]
        self.model_worst_energy = [next(vs[m][0].worst_energy for vs in self._vars if vs[m] is not None)
                                   for m in range(M)]
        self.reset(0)

    # ------------------------------------------------------------------------------------ construction
    @classmethod
    def from_catalog(cls, scenario: Any = "vr-gaming", hw: Any = "4k-1ws2os", *, kappa: float | None = None,
                     p: float | None = None, switch: tuple[float, Any] | None = None, **kwargs: Any) -> DreamSim:
        """Build from D1's catalog: ``scenario`` (a Table 3 name or ``DreamScenario``), ``hw`` (a Table 2
        preset or ``SoC``), a uniform latency scale ``kappa`` (default: the calibration, ``MODEL_SCALE[scenario]``
        per model and ``KAPPA[scenario]`` for context switches, docs/families/dream-cost-model.md §4.4), cascade
        probability ``p`` (every cascade, Fig. 12), ``switch=(t_s, scenario2)``; other keywords go to the
        constructor."""
        from joulegym.devices.accelerator import get_soc, switch_cost_per_byte
        from joulegym.workloads import dream_scenarios as ds

        soc = get_soc(hw)
        if p is not None:
            _check_prob("p", p)

        def phase(scn: Any) -> tuple[Workload, dict[str, ModelTable], np.ndarray, float]:
            scn = ds.get_scenario(scn)
            if p is not None:
                scn = scn.with_cascade_p(p)
            if scn.name not in ds.KAPPA and kappa is None:
                raise ValueError(f"scenario {scn.name!r} has no calibrated kappa; pass kappa=")
            # per-model latency scales (capped so each model is feasible alone, CM §4.4) unless kappa overrides
            k = ds.KAPPA[scn.name] if kappa is None else kappa
            scales = ds.MODEL_SCALE[scn.name] if kappa is None else dict.fromkeys(scn.model_names, kappa)
            tabs = {m.model: catalog_table(m.model, soc, scales[m.model]) for m in scn.models}
            wl = Workload(scn.name, tuple(App(m.model, m.fps, m.parent, m.p, m.p_dynamic) for m in scn.models))
            lat_b, e_b = switch_cost_per_byte(soc, k)
            return wl, tabs, lat_b, e_b

        wl, tabs, lat_b, e_b = phase(scenario)
        sw = None
        if switch is not None:
            if not (isinstance(switch, tuple | list) and len(switch) == 2):
                raise ValueError(f"switch={switch!r} must be (t_s, scenario)")
            wl2, tabs2, lat_b2, _ = phase(switch[1])
            sw = (switch[0], wl2, tabs2, lat_b2)
        sim = cls(tabs, wl, acc_pes=[int(x) for x in soc.pes], switch_lat_per_byte=lat_b, switch_energy_per_byte=e_b,
                  switch=sw, name=wl.name if sw is None else f"{wl.name}->{sw[1].name}", **kwargs)
        sim.soc = soc
        return sim

    # ------------------------------------------------------------------------------------ state
    def reset(self, seed: int | None = None) -> None:
        """Start an episode. Every random outcome derives from ``seed`` (common random numbers)."""
        if seed is None:
            seed = int(np.random.default_rng().integers(0, 2**63 - 1))
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
            raise ValueError(f"seed={seed!r} must be an int or None")
        self.seed = int(seed)
        self._seed_key = _splitmix64(int(seed) & _MASK64)
        self.now = 0.0
        self.phase = 0
        A = self.n_acc
        self.acc_running = [-1] * A
        self.acc_busy_until = [0.0] * A
        self.acc_resident = [-1] * A
        self.ready: dict[int, None] = {}
        self.outstanding: dict[int, None] = {}
        self._n_idle = A
        # per task id
        self.f_model: list[int] = []
        self.f_frame: list[int] = []
        self.f_phase: list[int] = []
        self.f_release: list[float] = []
        self.f_deadline: list[float] = []
        self.f_pos: list[int] = []
        self.f_next_pos: list[int] = []
        self.f_last: list[int] = []
        self.f_tcmpl: list[float] = []
        self.f_prev_acc: list[int] = []
        self.f_variant: list[int] = []
        self.f_locked: list[bool] = []
        self.f_running: list[int] = []
        self.f_state: list[int] = []
        self.f_violated: list[bool] = []
        self.f_counted: list[bool] = []
        self.f_energy: list[float] = []
        self.f_worst: list[float] = []
        self.f_end: list[float] = []  # completion / drop time (inf while outstanding)
        self.f_layers: list[int] = []  # layers executed so far
        self._f_vars: list[list[_Variant]] = []
        self._f_skip: list[dict[int, int] | None] = []
        self._f_exit: list[frozenset[int] | None] = []
        M = self.n_models
        self._released: list[list[int]] = [[] for _ in range(M)]  # task ids per model, release order
        self._out_by_model: list[list[int]] = [[] for _ in range(M)]
        self._next_k = [0] * M
        # running accumulators per model (frames with deadline in [warmup_s, horizon_s))
        self.acc_frames = [0] * M
        self.acc_violated = [0] * M
        self.acc_energy = [0.0] * M
        self.acc_worst = [0.0] * M
        self.acc_drops = [0] * M
        self.drops = 0
        self.cap_discards = 0
        self.cancelled = 0
        self.dispatches = 0
        self.layers = 0
        self.context_switches = 0
        self.switch_energy_total = 0.0
        self.energy_total = 0.0
        self.completed = 0
        self.decisions = 0
        self.subnet_counts = [[0] * len(self._variant_names[m]) for m in range(M)]
        self.timeline: list[tuple[int, float, float, int, int, int]] = []
        self.drop_log: list[tuple[float, int, int, str]] = []
        self.miss_log: list[tuple[float, int, int]] = []
        self._waited = False
        self._finished = False
        self.truncated = False
        self._heap: list[tuple[float, int, int, Any]] = []
        self._seq = 0
        # every periodic release of every phase, known in advance
        for ph in range(len(self._active)):
            t0, t1 = self._phase_start[ph], min(self._phase_end[ph], self.horizon_s)
            for m in range(M):
                if not self._active[ph][m] or self._parent[ph][m] >= 0:
                    continue
                period = 1.0 / self._fps[ph][m]
                offset = 0.0
                if self.release_phase == "random":
                    offset = crn_uniform(self._seed_key, self._name_keys[m], -1 - ph, 0) * period
                k = 0
                while True:
                    t = t0 + offset + k * period
                    if t >= t1:
                        break
                    self._push(t, EV_ARRIVAL, (ph, m))
                    k += 1
        if self.switch_s < math.inf:
            self._push(self.switch_s, EV_SWITCH, 1)
        self._view = DreamView(self)

    def _push(self, t: float, kind: int, arg: Any) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, kind, self._seq, arg))

    def spawn(self, seed: int | None = None, *, dynamics: str | None = None,
              record_timeline: bool | None = None) -> DreamSim:
        """An independent simulator of the same configuration (shared read-only tables), reset with ``seed``
        (offline tuning runs, static FCFS's worst-case plan)."""
        other = copy.copy(self)
        other._signature = None  # the overrides below may change it
        if dynamics is not None:
            if dynamics not in DYNAMICS:
                raise ValueError(f"dynamics={dynamics!r} is not one of {DYNAMICS}")
            other.dynamics = dynamics
        if record_timeline is not None:
            other.record_timeline = bool(record_timeline)
        other.reset(self.seed if seed is None else seed)
        return other

    def signature(self) -> tuple:
        """A hashable key of everything that determines an episode except the seed (tuning caches)."""
        if self._signature is None:
            tabs = tuple(tuple(tuple((V.name, V.n, round(sum(V.sum_lat), 15), round(sum(V.sum_en), 6))
                                     for V in vs) if vs else None for vs in ph) for ph in self._vars)
            self._signature = (self.name, tuple(self.acc_pes), self.model_names, tuple(map(tuple, self._active)),
                               tuple(map(tuple, self._fps)), tuple(map(tuple, self._parent)),
                               tuple(tuple(tuple(c) for c in ph) for ph in self._children),
                               tuple(map(tuple, self._pdyn)), tuple(map(tuple, self._lat_per_byte)),
                               self.switch_energy_per_byte, self.horizon_s, self.warmup_s, self.switch_s,
                               self.child_deadline, self.cap, self.togo_mode, self.release_phase, self.dynamics,
                               self.energy_exponent, tuple(self._sp), tabs)
        return self._signature

    # ------------------------------------------------------------------------------------ protocol
    @property
    def done(self) -> bool:
        """No terminal state: an episode ends by its time limit (``truncated``)."""
        return False

    @property
    def finished(self) -> bool:
        return self._finished

    def view(self) -> DreamView:
        return self._view

    def idle_accs(self) -> list[int]:
        return [a for a in range(self.n_acc) if self.acc_running[a] < 0]

    def active_models(self) -> tuple[int, ...]:
        """Model slots of the current phase's workload (the adaptivity engine tracks this list, §4.4)."""
        act = self._active[self.phase]
        return tuple(m for m in range(self.n_models) if act[m])

    def is_decision_point(self) -> bool:
        return bool(self.ready) and self._n_idle > 0

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
                    ph, m = arg
                    self._release_root(ph, m, t)
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
        self._finished = True
        self.truncated = True
        return False

    def apply(self, decision: Decision) -> None:
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
            i = decision.task
            self._check_task(i, "Drop.task")
            if self.f_state[i] != OUTSTANDING:
                raise ValueError(f"Drop.task={i} is not outstanding (state {STATE_NAMES[self.f_state[i]]})")
            self.drops += 1
            m = self.f_model[i]
            if self.f_counted[i]:
                self.acc_drops[m] += 1
            self._finish(i, DROPPED, self.now)
            if self.record_timeline:
                self.drop_log.append((self.now, m, i, "drop"))
        else:
            raise ValueError(f"decision={decision!r} must be a Dispatch, Drop or Wait")

    # ------------------------------------------------------------------------------------ events
    def _check_task(self, i: Any, field_name: str) -> None:
        if isinstance(i, bool) or not isinstance(i, int | np.integer) or not 0 <= i < len(self.f_state):
            raise ValueError(f"{field_name}={i!r} is not a released task id (0..{len(self.f_state) - 1})")

    def _release_root(self, ph: int, m: int, t: float) -> None:
        k = self._next_k[m]
        self._next_k[m] = k + 1
        self._release(ph, m, k, t, t + 1.0 / self._fps[ph][m])

    def _release(self, ph: int, m: int, k: int, t: float, deadline: float) -> None:
        i = len(self.f_state)
        variants = self._vars[ph][m]
        v0 = variants[0]
        seed_key, name_key = self._seed_key, self._name_keys[m]
        skip: dict[int, int] | None = None
        exits: frozenset[int] | None = None
        if self.dynamics == "sampled":
            pd = self._pdyn[ph][m]
            if v0.n_blocks:
                skip = {s: e for s, e in v0.skip_end.items()
                        if crn_uniform(seed_key, name_key, k, 1 + v0.block_idx[s]) < pd}
            if v0.exit_idx:
                exits = frozenset(j for j, b in v0.exit_idx.items()
                                  if crn_uniform(seed_key, name_key, k, 1001 + b) < pd)
        counted = self.warmup_s <= deadline < self.horizon_s
        self.f_model.append(m)
        self.f_frame.append(k)
        self.f_phase.append(ph)
        self.f_release.append(t)
        self.f_deadline.append(deadline)
        pos = 0
        while skip and pos in skip:
            pos = skip[pos]
        self.f_pos.append(pos)
        self.f_next_pos.append(pos)
        self.f_last.append(-1)
        self.f_tcmpl.append(t)
        self.f_prev_acc.append(-1)
        self.f_variant.append(0)
        self.f_locked.append(self._sp[m] < 0)
        self.f_running.append(-1)
        self.f_state.append(OUTSTANDING)
        self.f_violated.append(False)
        self.f_counted.append(counted)
        self.f_energy.append(0.0)
        self.f_worst.append(v0.worst_energy)
        self.f_end.append(math.inf)
        self.f_layers.append(0)
        self._f_vars.append(variants)
        self._f_skip.append(skip or None)
        self._f_exit.append(exits or None)
        self._released[m].append(i)
        if counted:
            self.acc_frames[m] += 1
            self.acc_worst[m] += v0.worst_energy
        # the safety cap (docs §3 #2): the oldest outstanding frame of m gives way
        out_m = self._out_by_model[m]
        if self.cap is not None and len(out_m) >= self.cap:
            old = out_m[0]
            self.cap_discards += 1
            self._finish(old, DISCARDED, t)
            if self.record_timeline:
                self.drop_log.append((t, m, old, "cap"))
        out_m.append(i)
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
        """End an outstanding frame by a drop, a cap discard or a cancellation (a running chunk finishes)."""
        self.f_state[i] = state
        self.f_end[i] = t
        self.outstanding.pop(i, None)
        self.ready.pop(i, None)
        self._out_by_model[self.f_model[i]].remove(i)
        if state in (DROPPED, DISCARDED):
            self._mark_violated(i, t)

    def _complete(self, i: int, t: float) -> None:
        self.f_state[i] = COMPLETED
        self.f_end[i] = t
        self.completed += 1
        self.outstanding.pop(i, None)
        self.ready.pop(i, None)
        m = self.f_model[i]
        self._out_by_model[m].remove(i)
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
        if self.f_state[i] != OUTSTANDING:  # dropped, discarded or cancelled while its chunk ran
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
    def _dispatch(self, i: Any, a: Any, n_layers: Any, variant: Any) -> None:
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
        m = self.f_model[i]
        pos = self.f_pos[i]
        if variant != -1:
            if self._sp[m] < 0:
                raise ValueError(f"Dispatch.variant={variant!r}: model {self.model_names[m]!r} is not a Supernet")
            if isinstance(variant, bool) or not isinstance(variant, int | np.integer) \
                    or not 0 <= variant < len(self._f_vars[i]):
                raise ValueError(f"Dispatch.variant={variant!r} must be -1 or in [0, {len(self._f_vars[i])})")
            if self.f_locked[i] and variant != self.f_variant[i]:
                raise ValueError(f"Dispatch.variant={variant}: task {i} is past its switch point")
            self.f_variant[i] = int(variant)
        V = self._f_vars[i][self.f_variant[i]]
        if not self.f_locked[i] and pos + n_layers > self._sp[m]:
            self.f_locked[i] = True
        # context switch (Alg 1 line 10, docs §3 #7)
        nbytes = self._switch_bytes_at(i, a, V, pos)
        prev = self.f_prev_acc[i]
        if prev >= 0 and prev != a and self.acc_resident[prev] == i:
            self.acc_resident[prev] = -1  # its activation moves with it (the fetch below)
        lat_row, en_row = V.lat, V.en
        dur = 0.0
        en = 0.0
        if nbytes:
            dur = nbytes * self._lat_per_byte[self.f_phase[i]][a]
            en = nbytes * self.switch_energy_per_byte
            self.context_switches += 1
            self.switch_energy_total += en
        limit = pos + n_layers
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
        if skip is not None and p < n:  # the gate at the chunk's end (resolved at LAYER_DONE, known here)
            while p in skip:
                p = skip[p]
        self.f_last[i] = last
        self.f_next_pos[i] = p
        self.f_energy[i] += en
        self.energy_total += en
        if self.f_counted[i]:
            self.acc_energy[m] += en
        t_end = self.now + dur
        self.acc_running[a] = i
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

    # ------------------------------------------------------------------------------------ estimates
    def _switch_bytes_at(self, i: int, a: int, V: _Variant, pos: int) -> int:
        r = self.acc_resident[a]
        flush = 0
        if r >= 0 and r != i and self.f_state[r] == OUTSTANDING and self.f_last[r] >= 0:
            flush = self._f_vars[r][self.f_variant[r]].out_b[self.f_last[r]]
        prev = self.f_prev_acc[i]
        fetch = V.in_b[pos] if prev >= 0 and prev != a else 0
        return flush + fetch

    def switch_bytes(self, i: int, a: int) -> int:
        """Bytes a context switch moves if ready task ``i``'s next layer runs on ``a`` (Alg 1 line 10, docs §3 #7)."""
        return self._switch_bytes_at(i, a, self._f_vars[i][self.f_variant[i]], self.f_pos[i])

    def switch_energy(self, i: int, a: int) -> float:
        """CswitchEnergy(tsk, acc.prevTask, acc) of Algorithm 1 line 10 (docs §3 #7)."""
        return self.switch_bytes(i, a) * self.switch_energy_per_byte

    def tables_of(self, i: int) -> _Variant:
        """The cost lists of task ``i``'s current variant (``lat[l][a]``, ``en[l][a]``, ``mean_lat`` ...)."""
        return self._f_vars[i][self.f_variant[i]]

    def next_stats(self, i: int) -> tuple[tuple[float, ...], tuple[float, ...], float, float]:
        """``(lat over accs, energy over accs, Σ_a lat, Σ_a energy)`` of ready task ``i``'s next layer."""
        V = self._f_vars[i][self.f_variant[i]]
        p = self.f_pos[i]
        return V.lat[p], V.en[p], V.sum_lat[p], V.sum_en[p]

    def next_lat(self, i: int) -> tuple[float, ...]:
        return self._f_vars[i][self.f_variant[i]].lat[self.f_pos[i]]

    def next_energy(self, i: int) -> tuple[float, ...]:
        return self._f_vars[i][self.f_variant[i]].en[self.f_pos[i]]

    def to_go(self, i: int) -> float:
        """ToGo (Alg 1 line 2): remaining time averaged over accelerators, worst-case path (or expected,
        ``togo_mode``); a running task adds what is left of its chunk."""
        V = self._f_vars[i][self.f_variant[i]]
        a = self.f_running[i]
        if a >= 0:
            return max(0.0, self.acc_busy_until[a] - self.now) + V.togo_from[min(self.f_next_pos[i], V.n)]
        return V.togo_from[self.f_pos[i]]

    def remaining_mean(self, i: int, variant: int) -> float:
        """Σ mean_a latency over the remaining layers of ready task ``i`` under ``variant`` (§4.5.1, docs §3 #12)."""
        V = self._f_vars[i][variant]
        return V.togo_from[self.f_pos[i]]

    def min_to_go(self, i: int) -> float:
        """minimum_to_go (§4.2.1 Cond 1): best-latency accelerator per layer, no context switch, best
        case of the unresolved dynamics (gated blocks skipped, earliest exit, lightest open variant)."""
        variants = self._f_vars[i]
        a = self.f_running[i]
        open_variants = (variants if not self.f_locked[i] else (variants[self.f_variant[i]],))
        if a >= 0:
            last = self.f_last[i]
            rest = min(V.best_after[last] for V in open_variants) if len(open_variants) > 1 else \
                open_variants[0].best_after[last]
            return max(0.0, self.acc_busy_until[a] - self.now) + rest
        p = self.f_pos[i]
        if len(open_variants) > 1:
            return min(V.best_from[p] for V in open_variants)
        return open_variants[0].best_from[p]

    def at_switch_point(self, i: int) -> bool:
        """Task ``i`` is a Supernet frame whose next layer is the switch point (variant still open)."""
        return not self.f_locked[i] and self.f_pos[i] == self._sp[self.f_model[i]]

    def supernet_options(self, i: int) -> int:
        """Number of variants of task ``i``'s model (1 unless a Supernet)."""
        return len(self._f_vars[i])

    def is_leaf(self, m: int) -> bool:
        """No model of the current workload depends on model slot ``m`` (§4.2.1 Cond 3)."""
        return not self._children[self.phase][m]

    def drops_in_window(self, m: int, window: int = 10) -> int:
        """Drops among model ``m``'s last ``window`` released frames (§4.2.1 Cond 4)."""
        st = self.f_state
        return sum(1 for i in self._released[m][-window:] if st[i] == DROPPED)

    # ------------------------------------------------------------------------------------ metrics
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

    def uxcost_now(self) -> float:
        """Alg 2 over the running per-model sums (frames counted at release, violations as known now)."""
        return uxcost(self.acc_violated, self.acc_frames, self.acc_energy, self.acc_worst,
                      energy_exponent=self.energy_exponent)["uxcost"]

    def metrics(self) -> dict[str, float]:
        """The paper's metrics over the frames with deadline in ``[warmup_s, horizon_s)`` (running sums)."""
        ux = uxcost(self.acc_violated, self.acc_frames, self.acc_energy, self.acc_worst,
                    energy_exponent=self.energy_exponent)
        frames = sum(self.acc_frames)
        violated = sum(self.acc_violated)
        worst = sum(self.acc_worst)
        out: dict[str, float] = {
            **ux,
            "dlv_rate": violated / frames if frames else 0.0,
            "energy_rate": sum(self.acc_energy) / worst if worst > 0 else 0.0,
            "frames": float(frames),
            "violated": float(violated),
            "drops": float(self.drops),
            "cap_discards": float(self.cap_discards),
            "cancelled": float(self.cancelled),
            "completed": float(self.completed),
            "dispatches": float(self.dispatches),
            "layers": float(self.layers),
            "decisions": float(self.decisions),
            "context_switches": float(self.context_switches),
            "switch_energy": float(self.switch_energy_total),
            "energy_total": float(self.energy_total),
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


def catalog_table(model: str, soc: Any, kappa: float) -> ModelTable:
    """A :class:`ModelTable` for catalog model (or Supernet) ``model`` on ``soc`` (its cost model:
    ``docs/families/dream-cost-model.md``)."""
    from joulegym.workloads import dream_models as dm

    if model in dm.SUPERNETS:
        sn = dm.SUPERNETS[model]
        names, sp = sn.variants, sn.switch_point
    else:
        names, sp = (model,), -1
    layers = []
    for name in names:
        dmod = dm.load_model(name)
        lat, en = dm.layer_cost_tables(dmod, soc, kappa)
        layers.append(LayerTable(name, lat, en, dmod.input_bytes, dmod.output_bytes, dmod.skip_blocks, dmod.exits))
    return ModelTable(model, tuple(layers), sp, tuple(names))
