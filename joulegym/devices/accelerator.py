"""Multi-accelerator SoCs of the DREAM family and their analytic per-layer cost model.

DREAM (Kim et al., ASPLOS'23) schedules real-time multi-model ML on a SoC of 2-3 dense DNN
sub-accelerators (docs/families/dream.md, CM §1.1):

- a :class:`SubAccelerator` is a PE array (``rows x cols``) with a weight-stationary (``"WS"``,
  NVDLA-like) or output-stationary (``"OS"``, ShiDianNao-like) dataflow [P §5.1];
- a :class:`SoC` groups them with 8 MiB of shared on-chip SRAM, 90 GB/s off-chip bandwidth and a
  700 MHz clock [P §5.1]; for table generation the shared SRAM and bandwidth are split statically in
  proportion to PEs (CM A15);
- :data:`SOC_PRESETS` holds the eight configurations of the paper's Table 2 as data.

The paper takes per-(layer, accelerator) latency and energy from MAESTRO; we substitute the analytic
model of CM §4.4 (:func:`layer_costs`, vectorised over a layer table). Its absolute numbers do not
match MAESTRO's; ``docs/families/dream-cost-model.md`` reports the comparison and the per-scenario load
calibration (a latency scale kappa) that makes the substitution usable. Energy is in units of one int8
MAC (CM §4.4: only ratios matter, UXCost normalises energy).

Context switch (CM A8): moving ``B`` activation bytes between DRAM and accelerator ``a`` takes
``B / BW_a`` seconds and costs ``B * ENERGY_PER_DRAM_BYTE`` (:func:`switch_cost_per_byte`).

``CM §x`` / ``CM Ax`` = section x / assumption x of docs/families/dream-cost-model.md (it keeps the numbering
of the family's implementation notes); ``[P §x]`` = the paper.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np

DATAFLOWS = ("WS", "OS")

# Layer types of the cost model (CM §4.3/§4.4). LSTM = one cell step, costed as an FC with
# C = input + hidden, K = 4 * hidden whose weights are streamed from DRAM every step.
LAYER_TYPES = ("CONV", "DWCONV", "FC", "LSTM")
CONV, DWCONV, FC, LSTM = range(4)

# Columns of a layer-dimension table (MAESTRO convention: Y, X are the INPUT rows/cols; Yo, Xo output).
DIM_COLUMNS = ("K", "C", "Y", "X", "R", "S", "Yo", "Xo")

# Energy per access in units of one int8 MAC [X: Eyeriss energy hierarchy (Chen et al., ISCA'16),
# as chosen by CM §4.4]; leakage/idle energy is excluded (CM A29).
ENERGY_PER_MAC = 1.0
ENERGY_PER_SRAM_BYTE = 6.0
ENERGY_PER_DRAM_BYTE = 200.0

BYTES_PER_ELEMENT = 1  # int8 weights and activations (CM §4.4)

# PE-array shapes (rows x cols) per PE count (CM §4.4).
ARRAY_SHAPES: Mapping[int, tuple[int, int]] = MappingProxyType({1024: (32, 32), 2048: (64, 32), 4096: (64, 64)})

OS_MAX_K_TILE = 16  # output-stationary: at most 16 output channels in flight (CM §4.4 "tile size optimizations")

SOURCE = "Kim et al. ASPLOS'23 (DREAM) §5.1, Table 2; cost model: docs/families/dream-cost-model.md (CM §4.4)"


@dataclass(frozen=True)
class SubAccelerator:
    """One dense DNN sub-accelerator: a ``rows x cols`` PE array with a WS or OS dataflow.

    :param dataflow: ``"WS"`` (weight-stationary: rows <- input channels, cols <- output channels) or
        ``"OS"`` (output-stationary: PEs <- output pixels x a tile of output channels).
    :param num_pes: number of PEs (1 int8 MAC per PE per cycle, CM §1.1).
    :param rows, cols: the array shape; ``rows * cols == num_pes``. ``None`` takes the CM §4.4 shape.
    """

    dataflow: str
    num_pes: int
    rows: int | None = None
    cols: int | None = None

    def __post_init__(self) -> None:
        if self.dataflow not in DATAFLOWS:
            raise ValueError(f"dataflow={self.dataflow!r} is not one of {DATAFLOWS}")
        if not isinstance(self.num_pes, (int, np.integer)) or isinstance(self.num_pes, bool) or self.num_pes < 1:
            raise ValueError(f"num_pes={self.num_pes!r} must be an integer >= 1")
        rows, cols = self.rows, self.cols
        if rows is None and cols is None:
            if self.num_pes not in ARRAY_SHAPES:
                raise ValueError(f"num_pes={self.num_pes}: give rows and cols (default shapes exist for "
                                 f"{sorted(ARRAY_SHAPES)})")
            rows, cols = ARRAY_SHAPES[self.num_pes]
        for field_name, value in (("rows", rows), ("cols", cols)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{field_name}={value!r} must be an integer >= 1")
        if rows * cols != self.num_pes:
            raise ValueError(f"rows*cols={rows}*{cols} must equal num_pes={self.num_pes}")
        object.__setattr__(self, "rows", int(rows))
        object.__setattr__(self, "cols", int(cols))
        object.__setattr__(self, "num_pes", int(self.num_pes))

    @property
    def label(self) -> str:
        return f"{self.dataflow}{self.num_pes}"


@dataclass(frozen=True)
class SoC:
    """A multi-accelerator SoC: sub-accelerators sharing SRAM, off-chip bandwidth and one clock [P §5.1].

    :param name: preset name, e.g. ``"4k-1ws2os"``.
    :param accelerators: the sub-accelerators, in the Table 2 order (ids 0, 1, 2).
    :param sram_bytes: shared on-chip SRAM (8 MiB in every Table 2 configuration).
    :param offchip_bw_bytes_per_s: off-chip (DRAM) bandwidth (90 GB/s).
    :param clock_hz: clock of every sub-accelerator (700 MHz).
    """

    name: str
    accelerators: tuple[SubAccelerator, ...]
    sram_bytes: int = 8 * 2**20
    offchip_bw_bytes_per_s: float = 90e9
    clock_hz: float = 700e6
    description: str = ""
    source: str = SOURCE

    def __post_init__(self) -> None:
        accs = tuple(self.accelerators)
        if not accs:
            raise ValueError(f"soc {self.name!r}: accelerators must hold at least one SubAccelerator")
        for i, acc in enumerate(accs):
            if not isinstance(acc, SubAccelerator):
                raise ValueError(f"soc {self.name!r}: accelerators[{i}] must be a SubAccelerator, got {acc!r}")
        object.__setattr__(self, "accelerators", accs)
        for field_name in ("sram_bytes", "offchip_bw_bytes_per_s", "clock_hz"):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not np.isfinite(value) \
                    or value <= 0:
                raise ValueError(f"soc {self.name!r}: {field_name}={value!r} must be a finite number > 0")

    @property
    def n_acc(self) -> int:
        return len(self.accelerators)

    @property
    def pes(self) -> np.ndarray:
        return np.array([a.num_pes for a in self.accelerators], dtype=np.int64)

    @property
    def total_pes(self) -> int:
        return int(self.pes.sum())

    @property
    def dataflows(self) -> tuple[str, ...]:
        return tuple(a.dataflow for a in self.accelerators)

    @property
    def is_heterogeneous(self) -> bool:
        return len({(a.dataflow, a.num_pes) for a in self.accelerators}) > 1

    @property
    def bw_share_bytes_per_s(self) -> np.ndarray:
        """Static off-chip bandwidth share of each sub-accelerator, proportional to PEs (CM A15)."""
        pes = self.pes
        return self.offchip_bw_bytes_per_s * pes / pes.sum()

    @property
    def sram_share_bytes(self) -> np.ndarray:
        """Static shared-SRAM share of each sub-accelerator, proportional to PEs (CM A15)."""
        pes = self.pes
        return self.sram_bytes * pes / pes.sum()


def _soc(name: str, description: str, *accs: tuple[str, int]) -> SoC:
    return SoC(name, tuple(SubAccelerator(flow, pes) for flow, pes in accs), description=description)


# The eight configurations of Table 2 [P §5.1]; "K" = 1024 PEs (CM §1.1).
SOC_PRESETS: Mapping[str, SoC] = MappingProxyType({
    "4k-2ws": _soc("4k-2ws", "4K PEs, homogeneous: WS 2048 + WS 2048", ("WS", 2048), ("WS", 2048)),
    "4k-2os": _soc("4k-2os", "4K PEs, homogeneous: OS 2048 + OS 2048", ("OS", 2048), ("OS", 2048)),
    "4k-1ws2os": _soc("4k-1ws2os", "4K PEs, heterogeneous: WS 2048 + OS 1024 + OS 1024",
                      ("WS", 2048), ("OS", 1024), ("OS", 1024)),
    "4k-1os2ws": _soc("4k-1os2ws", "4K PEs, heterogeneous: OS 2048 + WS 1024 + WS 1024",
                      ("OS", 2048), ("WS", 1024), ("WS", 1024)),
    "8k-2ws": _soc("8k-2ws", "8K PEs, homogeneous: WS 4096 + WS 4096", ("WS", 4096), ("WS", 4096)),
    "8k-2os": _soc("8k-2os", "8K PEs, homogeneous: OS 4096 + OS 4096", ("OS", 4096), ("OS", 4096)),
    "8k-1ws2os": _soc("8k-1ws2os", "8K PEs, heterogeneous: WS 4096 + OS 2048 + OS 2048",
                      ("WS", 4096), ("OS", 2048), ("OS", 2048)),
    "8k-1os2ws": _soc("8k-1os2ws", "8K PEs, heterogeneous: OS 4096 + WS 2048 + WS 2048",
                      ("OS", 4096), ("WS", 2048), ("WS", 2048)),
})


def get_soc(name: str | SoC) -> SoC:
    """The Table 2 preset ``name`` (case-insensitive, e.g. ``"4K-1WS2OS"``); a :class:`SoC` passes through."""
    if isinstance(name, SoC):
        return name
    key = name.lower() if isinstance(name, str) else name
    try:
        return SOC_PRESETS[key]
    except (KeyError, TypeError):
        raise ValueError(f"hw={name!r} is not one of {list(SOC_PRESETS)}") from None


SOC_KEYS = ("name", "accelerators", "sram_bytes", "offchip_bw_bytes_per_s", "clock_hz")


def soc_from_config(config: Mapping) -> SoC:
    """A custom SoC from a config dict (``hw={...}`` of the DREAM envs): ``accelerators`` a non-empty list of
    ``[dataflow, pes]`` pairs or ``{"dataflow", "pes", "rows", "cols"}`` dicts, optional ``name``, ``sram_bytes``,
    ``offchip_bw_bytes_per_s`` and ``clock_hz`` (Table 2's values by default)."""
    if not isinstance(config, Mapping) or set(config) - set(SOC_KEYS):
        raise ValueError(f"hw must be a preset name or a dict with keys from {list(SOC_KEYS)}, got {config!r}")
    accs = config.get("accelerators")
    if not isinstance(accs, list | tuple) or not accs:
        raise ValueError(f"hw['accelerators'] must be a non-empty list of [dataflow, pes] pairs, got {accs!r}")
    built = []
    for k, item in enumerate(accs):
        if isinstance(item, Mapping) and set(item) <= {"dataflow", "pes", "rows", "cols"} and "pes" in item:
            built.append(SubAccelerator(item.get("dataflow"), item["pes"], item.get("rows"), item.get("cols")))
        elif isinstance(item, list | tuple) and len(item) == 2:
            built.append(SubAccelerator(item[0], item[1]))
        else:
            raise ValueError(f"hw['accelerators'][{k}] must be [dataflow, pes] or a dict with dataflow, pes "
                             f"(rows, cols), got {item!r}")
    extra = {key: config[key] for key in ("sram_bytes", "offchip_bw_bytes_per_s", "clock_hz") if key in config}
    name = config.get("name", "custom")
    if not isinstance(name, str) or not name:
        raise ValueError(f"hw['name'] must be a non-empty string, got {name!r}")
    return SoC(name, tuple(built), description=f"custom: {', '.join(a.label for a in built)}", **extra)


def _check_layer_table(layer_type: np.ndarray, dims: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    layer_type = np.asarray(layer_type)
    dims = np.asarray(dims)
    if dims.ndim != 2 or dims.shape[1] != len(DIM_COLUMNS):
        raise ValueError(f"dims must have shape (n_layers, {len(DIM_COLUMNS)}) with columns {DIM_COLUMNS}, "
                         f"got {dims.shape}")
    if layer_type.shape != (dims.shape[0],):
        raise ValueError(f"layer_type must have shape ({dims.shape[0]},), got {layer_type.shape}")
    if not np.issubdtype(layer_type.dtype, np.integer) or (layer_type.size and (
            layer_type.min() < 0 or layer_type.max() >= len(LAYER_TYPES))):
        raise ValueError(f"layer_type must hold indices into {LAYER_TYPES}")
    if not np.issubdtype(dims.dtype, np.integer):
        raise ValueError("dims must be integers")
    if dims.size and dims.min() < 1:
        bad = np.argwhere(dims < 1)[0]
        raise ValueError(f"dims[{bad[0]}, {DIM_COLUMNS[bad[1]]}] = {dims[tuple(bad)]} must be >= 1")
    return layer_type.astype(np.int64), dims.astype(np.int64)


def layer_workload(layer_type: np.ndarray, dims: np.ndarray) -> dict[str, np.ndarray]:
    """MACs and weight/input/output bytes of each layer (int8; CM §4.4), as int64 arrays.

    CONV: ``K*C*R*S*Yo*Xo`` MACs, ``K*C*R*S`` weights. DWCONV (one filter per channel, ``C == K``):
    ``K*R*S*Yo*Xo`` MACs, ``K*R*S`` weights. FC/LSTM: ``K*C*Yo*Xo`` MACs, ``K*C`` weights.
    Inputs ``C*Y*X``, outputs ``K*Yo*Xo`` elements.
    """
    layer_type, dims = _check_layer_table(layer_type, dims)
    k, c, y, x, r, s, yo, xo = dims.T
    is_dw = layer_type == DWCONV
    is_fc = (layer_type == FC) | (layer_type == LSTM)
    taps = np.where(is_fc, 1, r * s)
    c_eff = np.where(is_dw, 1, c)
    weights = k * c_eff * taps
    macs = weights * yo * xo
    return {
        "macs": macs,
        "weight_bytes": weights * BYTES_PER_ELEMENT,
        "input_bytes": c * y * x * BYTES_PER_ELEMENT,
        "output_bytes": k * yo * xo * BYTES_PER_ELEMENT,
    }


def _ceil_div(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    return -(-a // b)


def layer_cycles(layer_type: np.ndarray, dims: np.ndarray, acc: SubAccelerator) -> np.ndarray:
    """Compute cycles of each layer on one sub-accelerator (CM §4.4), int64.

    WS: rows <- ``C_eff`` (C; R*S taps for DWCONV), cols <- K:
    ``ceil(C_eff/rows) * ceil(K/cols) * Yo*Xo * (R*S for CONV, 1 for DWCONV/FC)``.
    OS: ``Yt = min(Yo, rows)``, ``Xt = min(Xo, cols)``, ``Kt = min(K, max(1, P // (Yt*Xt)), 16)``:
    ``ceil(Yo/Yt) * ceil(Xo/Xt) * ceil(K/Kt) * (C*R*S for CONV, R*S for DWCONV, C for FC)``.
    """
    layer_type, dims = _check_layer_table(layer_type, dims)
    k, c, _y, _x, r, s, yo, xo = dims.T
    is_dw = layer_type == DWCONV
    is_fc = (layer_type == FC) | (layer_type == LSTM)
    if acc.dataflow == "WS":
        c_eff = np.where(is_dw, r * s, c)
        taps = np.where(is_dw | is_fc, 1, r * s)
        return _ceil_div(c_eff, acc.rows) * _ceil_div(k, acc.cols) * yo * xo * taps
    yt = np.minimum(yo, acc.rows)
    xt = np.minimum(xo, acc.cols)
    kt = np.minimum(np.minimum(k, np.maximum(1, acc.num_pes // (yt * xt))), OS_MAX_K_TILE)
    inner = np.where(is_fc, c, np.where(is_dw, r * s, c * r * s))
    return _ceil_div(yo, yt) * _ceil_div(xo, xt) * _ceil_div(k, kt) * inner


def _sram_bytes(layer_type: np.ndarray, dims: np.ndarray, work: dict[str, np.ndarray],
                acc: SubAccelerator) -> np.ndarray:
    """On-chip SRAM traffic (bytes) of each layer (CM §4.4)."""
    k, c, _y, _x, r, s, yo, xo = dims.T
    macs = work["macs"].astype(np.float64)
    if acc.dataflow == "WS":
        c_eff = np.where(layer_type == DWCONV, r * s, c)
        k_used = np.minimum(k, acc.cols)
        return work["weight_bytes"] + macs / k_used + work["output_bytes"] * (2 * _ceil_div(c_eff, acc.rows) - 1)
    yt = np.minimum(yo, acc.rows)
    xt = np.minimum(xo, acc.cols)
    kt = np.minimum(np.minimum(k, np.maximum(1, acc.num_pes // (yt * xt))), OS_MAX_K_TILE)
    return macs / (yt * xt) + work["input_bytes"] * _ceil_div(k, kt) + work["output_bytes"]


def layer_costs(layer_type: np.ndarray, dims: np.ndarray, soc: SoC | str, *,
                first_layer: np.ndarray | None = None,
                last_layer: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Spec §4.4 latency (s) and energy (MAC units) of every layer on every sub-accelerator.

    :param layer_type: ``(n,)`` indices into :data:`LAYER_TYPES`.
    :param dims: ``(n, 8)`` integer table with columns :data:`DIM_COLUMNS`.
    :param first_layer, last_layer: ``(n,)`` bool: the model's first layer reads its input from DRAM, its
        last layer writes its output to DRAM. Default: row 0 first, row n-1 last (one model).
    :returns: ``(latency_s, energy)``, both float64 ``(n, soc.n_acc)``.

    DRAM bytes = weights + input (first layer) + output (last layer) + (input + output) spilled when they
    exceed the accelerator's SRAM share. ``latency = (max(cycles, DRAM_bytes / (BW_a / f)) + rows + cols) / f``
    (fill/drain). ``energy = MACs + 6 * SRAM_bytes + 200 * DRAM_bytes``.
    """
    soc = get_soc(soc)
    layer_type, dims = _check_layer_table(layer_type, dims)
    n = dims.shape[0]
    first = np.zeros(n, dtype=bool) if first_layer is None else np.asarray(first_layer, dtype=bool)
    last = np.zeros(n, dtype=bool) if last_layer is None else np.asarray(last_layer, dtype=bool)
    if first_layer is None and n:
        first[0] = True
    if last_layer is None and n:
        last[-1] = True
    if first.shape != (n,) or last.shape != (n,):
        raise ValueError(f"first_layer and last_layer must have shape ({n},)")
    work = layer_workload(layer_type, dims)
    latency = np.empty((n, soc.n_acc))
    energy = np.empty((n, soc.n_acc))
    f = soc.clock_hz
    bw = soc.bw_share_bytes_per_s
    sram = soc.sram_share_bytes
    act = work["input_bytes"] + work["output_bytes"]
    for a, acc in enumerate(soc.accelerators):
        dram = (work["weight_bytes"] + np.where(first, work["input_bytes"], 0)
                + np.where(last, work["output_bytes"], 0) + np.where(act > sram[a], act, 0)).astype(np.float64)
        cycles = layer_cycles(layer_type, dims, acc).astype(np.float64)
        latency[:, a] = (np.maximum(cycles, dram / (bw[a] / f)) + acc.rows + acc.cols) / f
        energy[:, a] = (work["macs"] * ENERGY_PER_MAC + _sram_bytes(layer_type, dims, work, acc) * ENERGY_PER_SRAM_BYTE
                        + dram * ENERGY_PER_DRAM_BYTE)
    return latency, energy


def switch_cost_per_byte(soc: SoC | str, kappa: float = 1.0) -> tuple[np.ndarray, float]:
    """Context-switch cost per activation byte moved to/from DRAM (CM A8).

    :returns: ``(latency_s_per_byte, energy_per_byte)``: ``kappa / BW_a`` per sub-accelerator (the
        scenario's latency scale applies to switch time as to layer time) and ``ENERGY_PER_DRAM_BYTE``.
    """
    soc = get_soc(soc)
    kappa = check_kappa(kappa)
    return kappa / soc.bw_share_bytes_per_s, ENERGY_PER_DRAM_BYTE


def check_kappa(kappa: float) -> float:
    """A latency scale: a finite number > 0 (ValueError naming ``kappa`` otherwise)."""
    if isinstance(kappa, bool) or not isinstance(kappa, (int, float, np.number)) or not np.isfinite(kappa) \
            or kappa <= 0:
        raise ValueError(f"kappa={kappa!r} must be a finite number > 0")
    return float(kappa)
