"""Validation of the DREAM cost model and catalog against MAESTRO / XRBench outputs.

The paper's per-(layer, accelerator) costs come from MAESTRO [P §5.1]; we substitute the analytic model of
CM §4.4 (:mod:`joulegym.devices.accelerator`). This module compares the two where public MAESTRO and
XRBench outputs exist (the reference-data checkout beside the repository, read at run time, never shipped):

- :func:`compare_maestro_layers`: a MAESTRO model file + its per-layer output CSV (ResNet-50 and
  MobileNetV2 with the KCP-WS dataflow) against our WS array with the same PE count, per layer;
- :func:`summarise_by_type`: rank correlation and ratio spread of cycles and energy per layer type;
- :func:`xrbench_model_costs`: per-model latency/energy of an XRBench schedule against our model of the
  same layers on the same single-accelerator system (the implied latency scale is what kappa absorbs).

Absolute numbers are not expected to match (CM §4.4); what should hold is the ordering of layers
(rank correlation) and MAC counts. Results: docs/families/dream-cost-model.md.

``CM §x`` / ``CM Ax`` = section x / assumption x of docs/families/dream-cost-model.md (it keeps the numbering
of the family's implementation notes); ``[P §x]`` = the paper.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass

import numpy as np

from joulegym.devices.accelerator import (
    CONV,
    DWCONV,
    FC,
    LAYER_TYPES,
    LSTM,
    SoC,
    SubAccelerator,
    layer_costs,
    layer_cycles,
    layer_workload,
)

_NETWORK = re.compile(r"Network\s+(\S+)\s*\{")
_LAYER = re.compile(r"Layer\s+(\S+)\s*\{")


def parse_maestro_networks(text: str) -> dict[str, dict]:
    """Networks of a MAESTRO ``.m`` model file: ``{name: {"fps", "probability", "dependency", "layers"}}``.

    ``layers`` = list of ``(name, type, dims, stride)``: ``dims`` the ``Dimensions`` dict (MAESTRO: Y, X
    are input rows/cols), ``stride`` = ``(sy, sx)`` when the file records it, else ``None``.
    """
    text = re.sub(r"//[^\n]*", "", text)
    starts = [(m.start(), m.group(1)) for m in _NETWORK.finditer(text)]
    networks: dict[str, dict] = {}
    for i, (pos, name) in enumerate(starts):
        block = text[pos: starts[i + 1][0] if i + 1 < len(starts) else len(text)]
        first_layer = _LAYER.search(block)
        head = block[: first_layer.start()] if first_layer else block
        fps = re.search(r"FPS:\s*([\d.]+)", head)
        prob = re.search(r"Probability:\s*([\d.]+)", head)
        dep = re.search(r"Dependency:\s*\{([^}]*)\}", head)
        layer_starts = [(m.start(), m.group(1)) for m in _LAYER.finditer(block)]
        layers = []
        for j, (lpos, lname) in enumerate(layer_starts):
            body = block[lpos: layer_starts[j + 1][0] if j + 1 < len(layer_starts) else len(block)]
            kind = re.search(r"Type:\s*(\w+)", body)
            dims_text = re.search(r"Dimensions:?\s*\{([^}]*)\}", body)
            stride_text = re.search(r"Stride\s*\{([^}]*)\}", body)
            if kind is None or dims_text is None:
                raise ValueError(f"MAESTRO network {name!r}, layer {lname!r}: missing Type or Dimensions")
            dims = {k: int(v) for k, v in re.findall(r"(\w+):\s*(\d+)", dims_text.group(1))}
            stride = None
            if stride_text:
                s = {k: int(v) for k, v in re.findall(r"(\w+):\s*(\d+)", stride_text.group(1))}
                stride = (s.get("Y", 1), s.get("X", 1))
            layers.append((lname, kind.group(1), dims, stride))
        networks[name] = {
            "fps": float(fps.group(1)) if fps else None,
            "probability": float(prob.group(1)) if prob else None,
            "dependency": dep.group(1).split() if dep else [],
            "layers": layers,
        }
    return networks


def maestro_layer_table(layers: list[tuple]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Our ``(names, layer_type, dims, is_residual_add)`` for MAESTRO layers with recorded strides.

    MAESTRO convolutions are unpadded: ``Yo = (Y - R) // stride + 1``. ``DSCONV`` with ``R = S = 1`` is
    MAESTRO's encoding of a residual addition (no MACs in our model; flagged, costed as a 1x1 DW).
    """
    names, types, rows, residual = [], [], [], []
    for name, kind, d, stride in layers:
        sy, sx = stride or (1, 1)
        yo = (d["Y"] - d["R"]) // sy + 1
        xo = (d["X"] - d["S"]) // sx + 1
        if kind == "DSCONV":
            channels = d["C"]
            types.append(DWCONV)
            rows.append((channels, channels, d["Y"], d["X"], d["R"], d["S"], yo, xo))
            residual.append(d["R"] == 1 and d["S"] == 1)
        else:
            types.append(CONV)
            rows.append((d["K"], d["C"], d["Y"], d["X"], d["R"], d["S"], yo, xo))
            residual.append(False)
        names.append(name)
    return names, np.array(types), np.array(rows, dtype=np.int64), np.array(residual)


def xrbench_layer_table(layers: list[tuple]) -> tuple[np.ndarray, np.ndarray]:
    """Our ``(layer_type, dims)`` for an XRBench network (no strides; input dims; DW listed as CONV).

    The output size of a layer is the next layer's input size when the next layer consumes its channels
    (``C_next == K``), else its own input size (same padding); a 1x1 map is an FC.
    """
    types, rows = [], []
    for i, (_name, _kind, d, _stride) in enumerate(layers):
        yo, xo = d["Y"], d["X"]
        if i + 1 < len(layers):
            nxt = layers[i + 1][2]
            if nxt["C"] == d["K"] and nxt["Y"] <= d["Y"] and nxt["X"] <= d["X"]:
                yo, xo = nxt["Y"], nxt["X"]
        is_fc = d["Y"] == d["X"] == d["R"] == d["S"] == 1
        types.append(FC if is_fc else CONV)
        rows.append((d["K"], d["C"], d["Y"], d["X"], d["R"], d["S"], yo, xo))
    return np.array(types), np.array(rows, dtype=np.int64)


def report_type(layer_type: np.ndarray, dims: np.ndarray) -> np.ndarray:
    """Reporting class of each layer: ``conv-kxk``, ``conv-1x1``, ``dwconv``, ``fc`` (1x1 output map)."""
    r, s, yo, xo = dims[:, 4], dims[:, 5], dims[:, 6], dims[:, 7]
    out = np.where(layer_type == DWCONV, "dwconv", np.where((r == 1) & (s == 1), "conv-1x1", "conv-kxk"))
    return np.where((yo * xo == 1) & (layer_type != DWCONV), "fc", out).astype(object)


def read_maestro_csv(text: str) -> dict[str, dict[str, float]]:
    """MAESTRO per-layer output rows by layer name (runtime cycles, energy nJ, MACs)."""
    reader = csv.reader(text.splitlines())
    header = [h.strip() for h in next(reader)]
    col = {name: header.index(name) for name in ("Layer Number", "Runtime (Cycles)",
                                                 "Activity count-based Energy (nJ)", "Num MACs")}
    rows = {}
    for row in reader:
        if not row:
            continue
        rows[row[col["Layer Number"]].strip()] = {
            "cycles": float(row[col["Runtime (Cycles)"]]),
            "energy_nj": float(row[col["Activity count-based Energy (nJ)"]]),
            "macs": float(row[col["Num MACs"]]),
        }
    return rows


def _single_ws(num_pes: int) -> SubAccelerator:
    side = round(num_pes ** 0.5)
    rows = side if side * side == num_pes else num_pes // 32
    return SubAccelerator("WS", num_pes, rows, num_pes // rows)


@dataclass(frozen=True)
class LayerComparison:
    names: list[str]
    kind: np.ndarray           # report_type
    ours_cycles: np.ndarray
    ours_energy: np.ndarray    # MAC units
    ours_macs: np.ndarray
    maestro_cycles: np.ndarray
    maestro_energy_nj: np.ndarray
    maestro_macs: np.ndarray
    excluded: list[str]        # layers whose MAC count differs from MAESTRO's (a different layer definition)


def compare_maestro_layers(model_text: str, csv_text: str, num_pes: int, network: str | None = None,
                           ) -> LayerComparison:
    """Per-layer compute cycles and energy of our WS model vs MAESTRO's KCP-WS output.

    Residual additions are dropped; layers whose MAC count differs from MAESTRO's output row (the output
    CSV was produced from another revision of the model file) are listed in ``excluded``.

    Our side: a single WS array with ``num_pes`` PEs (square when possible), compute cycles of CM §4.4
    (MAESTRO's runtime is compute + NoC; off-chip traffic is not in its per-layer runtime) and §4.4 energy.
    """
    nets = parse_maestro_networks(model_text)
    net = nets[network] if network else next(iter(nets.values()))
    names, types, dims, residual = maestro_layer_table(net["layers"])
    maestro = read_maestro_csv(csv_text)
    keep = np.array([not res and name in maestro for name, res in zip(names, residual, strict=True)])
    names = [n for n, k in zip(names, keep, strict=True) if k]
    types, dims = types[keep], dims[keep]
    ours_macs = layer_workload(types, dims)["macs"].astype(float)
    match = np.array([maestro[n]["macs"] == m for n, m in zip(names, ours_macs, strict=True)])
    excluded = [n for n, ok in zip(names, match, strict=True) if not ok]
    names = [n for n, ok in zip(names, match, strict=True) if ok]
    types, dims, ours_macs = types[match], dims[match], ours_macs[match]
    acc = _single_ws(num_pes)
    soc = SoC("maestro-ws", (acc,))
    cycles = layer_cycles(types, dims, acc).astype(float)
    _, energy = layer_costs(types, dims, soc, first_layer=np.zeros(len(names), bool),
                            last_layer=np.zeros(len(names), bool))
    return LayerComparison(
        names=names, kind=report_type(types, dims), ours_cycles=cycles, ours_energy=energy[:, 0],
        ours_macs=ours_macs,
        maestro_cycles=np.array([maestro[n]["cycles"] for n in names]),
        maestro_energy_nj=np.array([maestro[n]["energy_nj"] for n in names]),
        maestro_macs=np.array([maestro[n]["macs"] for n in names]), excluded=excluded)


def _ranks(values: np.ndarray) -> np.ndarray:
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    sorted_values = values[order]
    i = 0
    while i < len(values):  # average ranks over ties
        j = i
        while j + 1 < len(values) and sorted_values[j + 1] == sorted_values[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0
        i = j + 1
    return ranks


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation (average ranks for ties); nan for fewer than 3 points or constant input."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 3:
        return float("nan")
    ra, rb = _ranks(a), _ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def summarise_by_type(cmp: LayerComparison) -> dict[str, dict[str, float]]:
    """Per report type (and ``all``): layer count, Spearman of cycles and of energy, and the median and
    10-90 % range of the cycle ratio ours / MAESTRO."""
    out = {}
    for kind in [*sorted(set(cmp.kind)), "all"]:
        sel = np.ones(len(cmp.kind), bool) if kind == "all" else cmp.kind == kind
        ratio = cmp.ours_cycles[sel] / cmp.maestro_cycles[sel]
        out[kind] = {
            "n": int(sel.sum()),
            "spearman_cycles": spearman(cmp.ours_cycles[sel], cmp.maestro_cycles[sel]),
            "spearman_energy": spearman(cmp.ours_energy[sel], cmp.maestro_energy_nj[sel]),
            "ratio_median": float(np.median(ratio)),
            "ratio_p10": float(np.percentile(ratio, 10)),
            "ratio_p90": float(np.percentile(ratio, 90)),
        }
    return out


def xrbench_schedule_costs(csv_text: str) -> dict[str, dict[str, float]]:
    """Per-model latency (s) and energy (J) of one inference in an XRBench schedule CSV (median over frames)."""
    reader = csv.DictReader(csv_text.splitlines())
    per_model: dict[str, tuple[list[float], list[float]]] = {}
    for row in reader:
        lat = (float(row["Completion Time (ms)"]) - float(row["Dispatch Time (ms)"])) * 1e-3
        lats, energies = per_model.setdefault(row["Model Name"], ([], []))
        lats.append(lat)
        energies.append(float(row["Energy (mJ)"]) * 1e-3)
    return {m: {"latency_s": float(np.median(v[0])), "energy_j": float(np.median(v[1]))}
            for m, v in per_model.items()}


# XRBench Single_4K (hw_configs/single/Single_4K.m): 4096 PEs, 4 MiB shared SRAM, off-chip 128 (bytes per
# cycle at XRBench's 1 GHz clock: 128 GB/s) [X: XRBench-MLSys2023 @ 8915666].
XRBENCH_SINGLE_4K_WS = SoC("xrbench-single-4k-ws", (SubAccelerator("WS", 4096),), sram_bytes=4 * 2**20,
                           offchip_bw_bytes_per_s=128e9, clock_hz=1e9)


def xrbench_model_costs(scenario_text: str, schedule_csv_text: str,
                        soc: SoC = XRBENCH_SINGLE_4K_WS) -> dict[str, dict[str, float]]:
    """Per model: XRBench's latency/energy vs ours for the same layers on the same system."""
    nets = parse_maestro_networks(scenario_text)
    ref = xrbench_schedule_costs(schedule_csv_text)
    out = {}
    for name, r in ref.items():
        types, dims = xrbench_layer_table(nets[name]["layers"])
        latency, energy = layer_costs(types, dims, soc)
        out[name] = {"xrbench_latency_s": r["latency_s"], "ours_latency_s": float(latency[:, 0].sum()),
                     "xrbench_energy_j": r["energy_j"], "ours_energy_mac_units": float(energy[:, 0].sum()),
                     "layers": len(types), "macs": float(layer_workload(types, dims)["macs"].sum())}
    return out


__all__ = ["LAYER_TYPES", "compare_maestro_layers", "parse_maestro_networks", "spearman", "summarise_by_type",
           "xrbench_layer_table", "xrbench_model_costs", "xrbench_schedule_costs"]


MAESTRO_CASES = (  # (model file, per-layer output CSV, PEs) in maestro-project/maestro @ 4eb08d1
    ("Resnet50_model.m", "Resnet50_kcp_ws_pe256.csv", 256),
    ("Resnet50_model.m", "Resnet50_kcp_ws_pe1024.csv", 1024),
    ("MobileNetV2_model.m", "MobileNetV2_kcp_ws_pe256.csv", 256),
)


def validation_markdown(reference_dir) -> str:
    """The two validation tables of docs/families/dream-cost-model.md, from a reference-data checkout."""
    from pathlib import Path

    ref = Path(reference_dir)
    lines = ["| MAESTRO case | layer type | layers | Spearman cycles | Spearman energy | cycles ours/MAESTRO "
             "median [p10, p90] |", "|---|---|---|---|---|---|"]
    for model, csv_name, pes in MAESTRO_CASES:
        cmp = compare_maestro_layers((ref / "maestro" / "data" / "model" / model).read_text(),
                                     (ref / "maestro" / "tools" / "jupyter_notebook" / "data" / csv_name).read_text(),
                                     pes)
        case = csv_name.removesuffix(".csv") + (f" ({len(cmp.excluded)} excluded)" if cmp.excluded else "")
        for kind, s in summarise_by_type(cmp).items():
            lines.append(f"| {case} | {kind} | {s['n']} | {s['spearman_cycles']:.2f} | {s['spearman_energy']:.2f} | "
                         f"{s['ratio_median']:.2f} [{s['ratio_p10']:.2f}, {s['ratio_p90']:.2f}] |")
    costs = xrbench_model_costs((ref / "xrbench" / "usage_scenarios" / "VR_gaming.m").read_text(),
                                (ref / "xrbench" / "eval_data" / "schedule" /
                                 "schedule_VR_gaming__Single_4K__WS.csv").read_text())
    lines += ["", "| XRBench model (VR_gaming, Single_4K WS) | layers | GMACs | XRBench ms | ours ms | "
              "XRBench/ours latency | XRBench mJ | ours 1e9 MAC-units | mJ per 1e9 MAC-units |",
              "|---|---|---|---|---|---|---|---|---|"]
    for name, c in costs.items():
        lines.append(f"| {name} | {c['layers']} | {c['macs'] / 1e9:.2f} | {c['xrbench_latency_s'] * 1e3:.3f} | "
                     f"{c['ours_latency_s'] * 1e3:.3f} | {c['xrbench_latency_s'] / c['ours_latency_s']:.2f} | "
                     f"{c['xrbench_energy_j'] * 1e3:.2f} | {c['ours_energy_mac_units'] / 1e9:.2f} | "
                     f"{c['xrbench_energy_j'] * 1e3 / (c['ours_energy_mac_units'] / 1e9):.2f} |")
    return "\n".join(lines)


def dataflow_preference_markdown(pes: int = 2048) -> str:
    """Per layer type over the whole catalog: share of layers that run faster / cheaper on an OS array than on
    a WS array with the same PEs (CM §4.4's intended heterogeneity), and the summed-latency ratio WS/OS."""
    from joulegym.workloads.dream_models import MODEL_NAMES, load_model

    soc = SoC(f"ws{pes}-vs-os{pes}", (SubAccelerator("WS", pes), SubAccelerator("OS", pes)))
    kinds, lat, energy = [], [], []
    for name in MODEL_NAMES:
        model = load_model(name)
        la, en = layer_costs(model.layer_type, model.dims, soc)
        kinds.append(np.where(model.layer_type == LSTM, "lstm", report_type(model.layer_type, model.dims)))
        lat.append(la)
        energy.append(en)
    kind, la, en = np.concatenate(kinds), np.vstack(lat), np.vstack(energy)
    lines = [f"| layer type (catalog, WS{pes} vs OS{pes}) | layers | OS faster | OS less energy | "
             "sum latency WS/OS |", "|---|---|---|---|---|"]
    for k in [*sorted(set(kind)), "all"]:
        sel = np.ones(len(kind), bool) if k == "all" else kind == k
        lines.append(f"| {k} | {int(sel.sum())} | {np.mean(la[sel, 1] < la[sel, 0]):.0%} | "
                     f"{np.mean(en[sel, 1] < en[sel, 0]):.0%} | {la[sel, 0].sum() / la[sel, 1].sum():.2f} |")
    return "\n".join(lines)
