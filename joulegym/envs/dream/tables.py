"""The DREAM simulator's inputs: cost tables, workloads, decisions, common random numbers and UXCost
(Kim et al., DREAM, ASPLOS'23 §3-§5; ``docs/families/dream.md`` §1-§3).

- :class:`LayerTable` / :class:`ModelTable`: one network's per-(layer, accelerator) latency and energy (the
  cost model of ``docs/families/dream-cost-model.md``); a Supernet has several variants sharing a stem.
- :class:`App` / :class:`Workload`: a Table 3 usage scenario as the simulator needs it.
- :class:`Dispatch`, :class:`Drop`, :class:`Wait`: the typed decisions a scheduler makes (§4.1).
- :class:`Variant`: a table compiled into the plain Python lists the event loop reads, at the dispatch
  granularity (one layer, or ``chunk:N``: every model cut into at most N chunks of consecutive layers).
- :func:`crn_uniform`: common random numbers, a pure function of (episode key, model, frame, draw).
- :func:`uxcost`: Algorithm 2 (§3.6).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ALL_LAYERS = 1 << 30  # Dispatch.n_layers for "the rest of the model" (FCFS, docs §3 #23)
EPS_SLACK_S = 1e-6  # docs §3 #5: slack <= 0 is replaced by 1 us
TOGO_MODES = ("worst", "expected")
_MASK64 = (1 << 64) - 1


# ----------------------------------------------------------------------------------------------- random numbers
def splitmix64(x: int) -> int:
    """SplitMix64's finaliser (Steele et al., OOPSLA'14)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def name_key(name: str) -> int:
    """A stable 64-bit key of a model name (FNV-1a; Python's ``hash`` is salted per process)."""
    h = 0xCBF29CE484222325
    for byte in name.encode():
        h = ((h ^ byte) * 0x100000001B3) & _MASK64
    return h


def crn_uniform(seed_key: int, model_key: int, frame: int, draw: int) -> float:
    """A uniform in [0, 1) that depends only on ``(episode, model, frame index, draw)`` (common random numbers).

    SplitMix64 chained over the four integers; 53 bits of the result.
    """
    x = splitmix64(seed_key ^ model_key)
    x = splitmix64(x ^ (frame & _MASK64))
    x = splitmix64(x ^ (draw & _MASK64))
    return (x >> 11) * (1.0 / (1 << 53))


# ----------------------------------------------------------------------------------------------- decisions
@dataclass(slots=True)  # not frozen: one is built per decision, and a frozen dataclass is several times slower to
class Dispatch:          # build; nothing mutates a decision once made
    """Run ``task``'s next ``n_layers`` nominal layer positions on idle accelerator ``acc``.

    Skipped SkipNet layers inside the span are not run; an early exit ends the span and the frame. At
    ``chunk:N`` granularity the span is extended to the end of the chunk it starts in. ``variant``
    (Supernet only, -1 = keep): index into the Supernet's variants (0 = original), allowed until the
    switch point has been dispatched.
    """

    task: int
    acc: int
    n_layers: int = 1
    variant: int = -1


@dataclass(frozen=True, slots=True)
class Drop:
    """Drop an outstanding frame (a deadline violation, [P §4.2.1]); a running span still finishes."""

    task: int


@dataclass(frozen=True, slots=True)
class Wait:
    """Do nothing now: advance to the next event (and to a timer at ``wakeup_s`` if given)."""

    wakeup_s: float | None = None


WAIT = Wait()
Decision = Dispatch | Drop | Wait


# ----------------------------------------------------------------------------------------------- inputs
def check_prob(name: str, value: Any) -> float:
    """A probability in [0, 1] (ValueError naming ``name`` otherwise)."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.number) or not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name}={value!r} must be a probability in [0, 1]")
    return float(value)


def _checked_bytes(name: str, key: str, value: Any, n: int) -> np.ndarray:
    arr = np.zeros(n, dtype=np.int64) if value is None else np.asarray(value, dtype=np.int64).reshape(-1)
    if arr.shape != (n,) or np.any(arr < 0):
        raise ValueError(f"{key} of model {name!r} must be ({n},) and >= 0")
    return arr


@dataclass(frozen=True, eq=False)
class LayerTable:
    """One network's per-(layer, accelerator) costs: arrays are ``(n_layers, n_acc)`` (the cost model:
    ``docs/families/dream-cost-model.md``).

    :param latency: seconds (scaled by the load calibration). :param energy: MAC-units.
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
        object.__setattr__(self, "input_bytes", _checked_bytes(self.name, "input_bytes", self.input_bytes, n))
        object.__setattr__(self, "output_bytes", _checked_bytes(self.name, "output_bytes", self.output_bytes, n))
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
        check_prob("p", self.p)
        check_prob("p_dynamic", self.p_dynamic)


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
        parent = {a.model: a.parent for a in self.apps}
        for a in self.apps:  # a parent chain must end (no cycles)
            seen, m = set(), a.model
            while m is not None:
                if m in seen:
                    raise ValueError(f"workload {self.name!r}: cascade cycle through {m!r}")
                seen.add(m)
                m = parent[m]


# ----------------------------------------------------------------------------------------------- granularity
_CHUNK = re.compile(r"chunk:([0-9]+)")


def parse_granularity(value: Any) -> int | None:
    """``"layer"`` -> ``None`` (one layer per dispatch); ``"chunk:N"`` -> N (>= 1 chunks per model)."""
    if value == "layer":
        return None
    match = _CHUNK.fullmatch(value) if isinstance(value, str) else None
    if match is None or int(match.group(1)) < 1:
        raise ValueError(f"granularity={value!r} must be 'layer' or 'chunk:N' with N an integer >= 1")
    return int(match.group(1))


def chunk_ends(n_layers: int, chunks: int | None, switch_point: int = -1) -> list[int]:
    """``end[p]``: the exclusive end of the chunk containing layer ``p`` (docs §4 ``granularity``).

    ``None``: every layer is its own chunk. ``N``: the layers split into at most ``N`` chunks of consecutive
    layers whose counts differ by at most one [A]; a Supernet's stem ``[0, switch_point)``
    is a chunk of its own (and the rest gets ``N - 1``) so the sub-net can still be chosen at the switch point.
    """
    if chunks is None:
        return list(range(1, n_layers + 1))
    segments = [(0, n_layers)]
    if 0 < switch_point < n_layers and chunks >= 2:
        segments, chunks = [(0, switch_point), (switch_point, n_layers)], chunks - 1
        counts = [1, chunks]
    else:
        counts = [chunks]
    ends = [0] * n_layers
    for (lo, hi), count in zip(segments, counts, strict=True):
        count = min(count, hi - lo)
        bounds = [lo + (hi - lo) * k // count for k in range(count + 1)]
        for b in range(count):
            for p in range(bounds[b], bounds[b + 1]):
                ends[p] = bounds[b + 1]
    return ends


# ----------------------------------------------------------------------------------------------- compiled
class Variant:
    """One variant's costs as plain Python lists (the hot path reads scalars), at the dispatch granularity.

    Per layer (execution): ``lat_l[l][a]``, ``en_l[l][a]``, ``mean_lat_l``, ``in_b``, ``out_b``. Per position
    ``p`` (what a scheduler decides on, the unit a dispatch at ``p`` runs: layer ``p``, or the rest of ``p``'s
    chunk): ``lat[p][a]``, ``en[p][a]``, ``sum_lat``, ``sum_en``, ``unit_end``.
    Remaining work (Alg. 1 ToGo, §4.2.1 minimum_to_go) from position ``p`` with its gates resolved
    (``togo_from``, ``best_from``) and after layer ``j`` with the gates after it unresolved (``togo_after``,
    ``best_after``).
    ``worst_energy``: one nominal frame's worst case (docs §3 #3).
    """

    __slots__ = ("best_after", "best_from", "block_idx", "en", "en_l", "exit_idx", "in_b", "lat", "lat_l",
                 "mean_lat_l", "n", "n_blocks", "name", "out_b", "skip_end", "sum_en", "sum_lat", "togo_after",
                 "togo_from", "unit_end", "worst_energy")

    def __init__(self, table: LayerTable, p_dynamic: float, togo_mode: str, *, e_byte: float,
                 chunks: int | None = None, switch_point: int = -1) -> None:
        lat, en = table.latency, table.energy
        n = table.n_layers
        self.name, self.n = table.name, n
        self.lat_l = [tuple(row) for row in lat.tolist()]
        self.en_l = [tuple(row) for row in en.tolist()]
        self.mean_lat_l = lat.mean(axis=1).tolist()
        self.in_b = table.input_bytes.tolist()
        self.out_b = table.output_bytes.tolist()
        self.skip_end = {int(s): int(e) for s, e in table.skip_blocks}
        self.block_idx = {int(s): b for b, (s, _e) in enumerate(table.skip_blocks)}
        self.n_blocks = len(self.skip_end)
        self.exit_idx = {int(j): b for b, j in enumerate(table.exits)}
        # worst case of one frame (docs §3 #3): nominal full path, most energy-hungry accelerator per layer, and
        # every layer's input fetched and output flushed through DRAM once (context switches, docs §3 #7)
        moved = (table.input_bytes + table.output_bytes).astype(float) * e_byte
        self.worst_energy = float((en.max(axis=1) + moved).sum())
        self.unit_end = chunk_ends(n, chunks, switch_point)
        if chunks is None:
            self.lat, self.en = self.lat_l, self.en_l
            unit_lat, unit_en = lat, en
        else:  # the rest of the chunk from each position (what one dispatch at p runs, skips aside)
            rest_lat, rest_en = np.empty_like(lat), np.empty_like(en)
            for p in range(n - 1, -1, -1):
                nxt = p + 1 < self.unit_end[p]
                rest_lat[p] = lat[p] + (rest_lat[p + 1] if nxt else 0.0)
                rest_en[p] = en[p] + (rest_en[p + 1] if nxt else 0.0)
            self.lat = [tuple(row) for row in rest_lat.tolist()]
            self.en = [tuple(row) for row in rest_en.tolist()]
            unit_lat, unit_en = rest_lat, rest_en
        self.sum_lat = unit_lat.sum(axis=1).tolist()
        self.sum_en = unit_en.sum(axis=1).tolist()
        in_block_end = [-1] * n  # end of the skip block containing layer j
        for s, e in self.skip_end.items():
            for j in range(s, e):
                in_block_end[j] = e
        # best = min-latency accelerator, gated blocks skipped, earliest exit; worst/expected = mean over accs
        self.best_from, self.best_after = self._remaining(lat.min(axis=1).tolist(), in_block_end, "best", p_dynamic)
        if togo_mode == "worst":
            cum = np.concatenate([[0.0], np.cumsum(lat.mean(axis=1))])
            self.togo_from = (cum[-1] - cum).tolist()
            self.togo_after = self.togo_from[1:]
        else:
            self.togo_from, self.togo_after = self._remaining(self.mean_lat_l, in_block_end, "expected", p_dynamic)

    def _remaining(self, cost: list[float], in_block_end: list[int], mode: str,
                   p: float) -> tuple[list[float], list[float]]:
        """Backward pass: ``from_[p]`` (gates at p resolved) and ``after[j]`` (gates after layer j unresolved)."""
        n = self.n
        from_ = [0.0] * (n + 1)
        after = [0.0] * n
        fresh = [0.0] * (n + 1)  # at q with q's skip gate unresolved (q not inside a block)
        for j in range(n - 1, -1, -1):
            q = j + 1
            rest = from_[q] if q < n and in_block_end[j] > q else fresh[q]  # same running block: q is mandatory
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


def catalog_table(model: str, soc: Any, scale: float) -> ModelTable:
    """A :class:`ModelTable` for catalog model (or Supernet) ``model`` on ``soc`` at latency scale ``scale`` (the
    cost model: ``docs/families/dream-cost-model.md``)."""
    from joulegym.workloads import dream_models as dm

    if model in dm.SUPERNETS:
        net = dm.SUPERNETS[model]
        names, sp = net.variants, net.switch_point
    else:
        names, sp = (model,), -1
    layers = []
    for name in names:
        dmod = dm.load_model(name)
        lat, en = dm.layer_cost_tables(dmod, soc, scale)
        layers.append(LayerTable(name, lat, en, dmod.input_bytes, dmod.output_bytes, dmod.skip_blocks, dmod.exits))
    return ModelTable(model, tuple(layers), sp, tuple(names))
