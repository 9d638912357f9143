"""DREAM model catalog: per-layer tables of every Table 3 model and their per-accelerator cost tables.

DREAM (Kim et al., ASPLOS'23, §5.1 Table 3) schedules 17 networks layer by layer. The paper gives no
layer tables; ``benchmarks/dream_layers.py`` writes them from the public architectures (CM §4.3, choices in
docs/families/dream-cost-model.md) into ``joulegym/workloads/data/dream/`` (one CSV per model, MAESTRO
convention: ``name,type,K,C,Y,X,R,S,Yo,Xo`` with Y, X the input and Yo, Xo the output rows/cols; int8)
and ``catalog.json`` (dynamic structure as data):

- SkipNet (§2.2, §5.1): ``skip_blocks`` = [start, stop) layer ranges of the gated residual blocks, each
  skipped with probability 0.5; the gate resolves when the frame reaches ``start``.
- RAPID-RL: ``exits`` = layer indices after which the frame may leave early (p_exit each, CM §4.2).
- Once-for-all (§4.5.1): :data:`SUPERNETS` ``["ofa"]`` = four variants, heaviest (original, the default)
  first; layers ``[0, switch_point)`` are the shared stem, the variant is picked before layer
  ``switch_point`` (CM §2.4).

:func:`layer_cost_tables` gives ``(latency_s, energy)`` arrays of shape ``(n_layers, n_acc)`` from the
CM §4.4 model in :mod:`joulegym.devices.accelerator`, cached per (model, SoC, kappa).

``CM §x`` / ``CM Ax`` = section x / assumption x of docs/families/dream-cost-model.md (it keeps the numbering
of the family's implementation notes); ``[P §x]`` = the paper.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from types import MappingProxyType

import numpy as np

from joulegym.devices.accelerator import (
    DIM_COLUMNS,
    DWCONV,
    LAYER_TYPES,
    SoC,
    check_kappa,
    get_soc,
    layer_costs,
    layer_workload,
)

DATA_DIR = Path(__file__).resolve().parent / "data" / "dream"
LAYER_FILE_HEADER = ("name", "type", *DIM_COLUMNS)


@dataclass(frozen=True)
class Supernet:
    """A weight-sharing Supernet (Once-for-all, §4.5.1): variants heaviest -> lightest, one switch point."""

    name: str
    variants: tuple[str, ...]
    switch_point: int

    @property
    def original(self) -> str:
        """The heaviest variant, run unless the scheduler switches (CM §2.4)."""
        return self.variants[0]


@dataclass(frozen=True, eq=False)
class DreamModel:
    """One network as a layer table (arrays are read-only; ``n`` layers in topological order).

    :param layer_type: ``(n,)`` int8 indices into :data:`LAYER_TYPES`.
    :param dims: ``(n, 8)`` int64, columns ``K, C, Y, X, R, S, Yo, Xo``.
    :param skip_blocks: ``(n_blocks, 2)`` [start, stop) gated layer ranges (SkipNet), else ``(0, 2)``.
    :param exits: ``(n_exits,)`` layer indices after which an early exit may happen (RAPID-RL), else ``(0,)``.
    """

    name: str
    layer_names: tuple[str, ...]
    layer_type: np.ndarray
    dims: np.ndarray
    skip_blocks: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    exits: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    source: str = ""

    def __post_init__(self) -> None:
        n = len(self.layer_names)
        if n == 0:
            raise ValueError(f"model {self.name!r}: a model needs at least one layer")
        layer_type = np.asarray(self.layer_type, dtype=np.int8)
        dims = np.asarray(self.dims, dtype=np.int64)
        if layer_type.shape != (n,) or dims.shape != (n, len(DIM_COLUMNS)):
            raise ValueError(f"model {self.name!r}: layer_type must be ({n},) and dims ({n}, {len(DIM_COLUMNS)})")
        skip = np.asarray(self.skip_blocks, dtype=np.int64).reshape(-1, 2)
        exits = np.asarray(self.exits, dtype=np.int64).reshape(-1)
        if skip.size and (skip[:, 0].min() < 1 or skip[:, 1].max() > n or np.any(skip[:, 1] <= skip[:, 0])
                          or np.any(skip[1:, 0] < skip[:-1, 1])):
            raise ValueError(f"model {self.name!r}: skip_blocks must be sorted, non-overlapping [start, stop) "
                             f"ranges with 1 <= start < stop <= {n}")
        if exits.size and (exits.min() < 0 or exits.max() >= n - 1 or np.any(np.diff(exits) <= 0)):
            raise ValueError(f"model {self.name!r}: exits must be increasing layer indices in [0, {n - 1})")
        work = layer_workload(layer_type, dims)
        for key, value in (("layer_type", layer_type), ("dims", dims), ("skip_blocks", skip), ("exits", exits),
                           *work.items()):
            value.setflags(write=False)
            object.__setattr__(self, key, value)
        object.__setattr__(self, "layer_names", tuple(self.layer_names))

    # layer_workload's arrays, set in __post_init__ (declared for type checkers and docs)
    macs: np.ndarray = field(init=False, repr=False)
    weight_bytes: np.ndarray = field(init=False, repr=False)
    input_bytes: np.ndarray = field(init=False, repr=False)
    output_bytes: np.ndarray = field(init=False, repr=False)

    @property
    def n_layers(self) -> int:
        return len(self.layer_names)

    @property
    def total_macs(self) -> int:
        return int(self.macs.sum())

    def layer_type_names(self) -> tuple[str, ...]:
        return tuple(LAYER_TYPES[t] for t in self.layer_type)


def _malformed(path: Path | str, row: int, field_name: str, why: str) -> ValueError:
    return ValueError(f"layer file {path}: row {row}, field {field_name!r}: {why}")


def parse_layer_rows(path: Path | str, lines: list[str]) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """Parse and check the CSV text of a layer file; ValueError naming the file, row (1 = header) and field."""
    reader = csv.reader(lines)
    try:
        header = tuple(h.strip() for h in next(reader))
    except StopIteration:
        raise _malformed(path, 1, "header", f"empty file; expected {','.join(LAYER_FILE_HEADER)}") from None
    if header != LAYER_FILE_HEADER:
        raise _malformed(path, 1, "header", f"got {','.join(header)!r}, expected {','.join(LAYER_FILE_HEADER)!r}")
    names: list[str] = []
    types: list[int] = []
    dims: list[list[int]] = []
    for row_no, row in enumerate(reader, start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(LAYER_FILE_HEADER):
            raise _malformed(path, row_no, "row", f"{len(row)} fields, expected {len(LAYER_FILE_HEADER)}")
        name, kind, *values = (cell.strip() for cell in row)
        if not name:
            raise _malformed(path, row_no, "name", "empty")
        if kind not in LAYER_TYPES:
            raise _malformed(path, row_no, "type", f"{kind!r} is not one of {LAYER_TYPES}")
        parsed = []
        for column, text in zip(DIM_COLUMNS, values, strict=True):
            try:
                value = int(text)
            except ValueError:
                raise _malformed(path, row_no, column, f"{text!r} is not an integer") from None
            if value < 1:
                raise _malformed(path, row_no, column, f"{value} must be >= 1")
            parsed.append(value)
        if LAYER_TYPES.index(kind) == DWCONV and parsed[0] != parsed[1]:
            raise _malformed(path, row_no, "C", f"a DWCONV needs C == K, got C={parsed[1]}, K={parsed[0]}")
        names.append(name)
        types.append(LAYER_TYPES.index(kind))
        dims.append(parsed)
    if not names:
        raise _malformed(path, 2, "row", "no layers")
    return tuple(names), np.array(types, dtype=np.int8), np.array(dims, dtype=np.int64)


def load_layer_file(path: Path | str, *, name: str | None = None, skip_blocks=None, exits=None,
                    source: str = "") -> DreamModel:
    """A :class:`DreamModel` from a layer CSV (any path); ValueError naming file, row and field if malformed."""
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as err:
        raise ValueError(f"layer file {path}: cannot be read ({err.strerror})") from None
    names, types, dims = parse_layer_rows(path, lines)
    return DreamModel(name or path.stem, names, types, dims,
                      skip_blocks=np.zeros((0, 2)) if skip_blocks is None else skip_blocks,
                      exits=np.zeros(0) if exits is None else exits, source=source)


@lru_cache(maxsize=1)
def _catalog() -> dict:
    return json.loads((DATA_DIR / "catalog.json").read_text())


def _model_names() -> tuple[str, ...]:
    return tuple(_catalog()["models"])


MODEL_NAMES: tuple[str, ...] = _model_names()
SUPERNETS: Mapping[str, Supernet] = MappingProxyType({
    name: Supernet(name, tuple(spec["variants"]), int(spec["switch_point"]))
    for name, spec in _catalog()["supernets"].items()
})


@cache
def _load_catalog_model(name: str) -> DreamModel:
    catalog = _catalog()
    entry = catalog["models"][name]
    return load_layer_file(DATA_DIR / entry["file"], name=name, skip_blocks=catalog["skip_blocks"].get(name),
                           exits=catalog["exits"].get(name), source=entry["source"])


def load_model(name: str) -> DreamModel:
    """The catalog model ``name`` (cached); ValueError naming the known models otherwise.

    A Supernet name (``"ofa"``) gives its original (heaviest) variant.
    """
    if isinstance(name, str) and name in SUPERNETS:
        name = SUPERNETS[name].original
    if not isinstance(name, str) or name not in MODEL_NAMES:
        raise ValueError(f"model={name!r} is not one of {list(MODEL_NAMES) + list(SUPERNETS)}")
    return _load_catalog_model(name)


def get_model(model: str | DreamModel) -> DreamModel:
    return model if isinstance(model, DreamModel) else load_model(model)


_COST_CACHE: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
_COST_CACHE_MAX = 1024  # (model, soc, kappa) triples kept; a sweep over kappa empties it when full


def layer_cost_tables(model: str | DreamModel, soc: str | SoC, kappa: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """``(latency_s, energy)``, each ``(n_layers, n_acc)`` read-only float64, of ``model`` on ``soc``.

    Spec §4.4 model (:func:`joulegym.devices.accelerator.layer_costs`); latency is multiplied by the
    scenario's load-calibration scale ``kappa`` (CM §4.4 last bullet), energy is not. Cached.
    """
    model = get_model(model)
    soc = get_soc(soc)
    kappa = check_kappa(kappa)
    key = (model.name if model.name in MODEL_NAMES and model is _load_catalog_model(model.name) else model,
           soc, kappa)
    hit = _COST_CACHE.get(key)
    if hit is not None:
        return hit
    latency, energy = layer_costs(model.layer_type, model.dims, soc)
    latency = latency * kappa
    latency.setflags(write=False)
    energy.setflags(write=False)
    if len(_COST_CACHE) >= _COST_CACHE_MAX:
        _COST_CACHE.clear()
    _COST_CACHE[key] = (latency, energy)
    return latency, energy


def expected_layer_weights(model: str | DreamModel, p_dynamic: float = 0.5) -> np.ndarray:
    """Probability that each layer runs in a frame (1 for static models; CM §4.2 dynamicity).

    SkipNet: a gated block runs with probability ``1 - p_dynamic``. RAPID-RL: the layers after the j-th
    exit run with probability ``(1 - p_dynamic)^j``.
    """
    model = get_model(model)
    weights = np.ones(model.n_layers)
    for start, stop in model.skip_blocks:
        weights[start:stop] *= 1.0 - p_dynamic
    for exit_after in model.exits:
        weights[exit_after + 1:] *= 1.0 - p_dynamic
    return weights


def catalog_markdown() -> str:
    """The catalog table of docs/families/dream-cost-model.md: layers, MACs, weights and dynamic structure."""
    lines = ["| model | layers | MMACs | weights MB | dynamic structure | source |", "|---|---|---|---|---|---|"]
    for name in MODEL_NAMES:
        m = load_model(name)
        dynamic = []
        if len(m.skip_blocks):
            dynamic.append(f"{len(m.skip_blocks)} gated blocks")
        if len(m.exits):
            dynamic.append("exits after layers " + ", ".join(str(int(e)) for e in m.exits))
        for sn in SUPERNETS.values():
            if name in sn.variants:
                dynamic.append(f"{sn.name} variant {sn.variants.index(name) + 1}/{len(sn.variants)}, "
                               f"switch point {sn.switch_point}")
        lines.append(f"| {name} | {m.n_layers} | {m.total_macs / 1e6:.1f} | {m.weight_bytes.sum() / 1e6:.2f} | "
                     f"{'; '.join(dynamic) or '-'} | {m.source} |")
    return "\n".join(lines)
