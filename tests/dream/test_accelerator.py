"""DREAM hardware: Table 2 presets, the CM §4.4 analytic cost model (hand-computed), context-switch cost, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from joulegym.devices.accelerator import (
    CONV,
    DWCONV,
    ENERGY_PER_DRAM_BYTE,
    ENERGY_PER_SRAM_BYTE,
    FC,
    LSTM,
    SOC_PRESETS,
    SoC,
    SubAccelerator,
    check_kappa,
    get_soc,
    layer_costs,
    layer_cycles,
    layer_workload,
    switch_cost_per_byte,
)

TABLE2 = {  # Kim et al. ASPLOS'23 Table 2: (dataflow, PEs) per sub-accelerator
    "4k-2ws": [("WS", 2048), ("WS", 2048)],
    "4k-2os": [("OS", 2048), ("OS", 2048)],
    "4k-1ws2os": [("WS", 2048), ("OS", 1024), ("OS", 1024)],
    "4k-1os2ws": [("OS", 2048), ("WS", 1024), ("WS", 1024)],
    "8k-2ws": [("WS", 4096), ("WS", 4096)],
    "8k-2os": [("OS", 4096), ("OS", 4096)],
    "8k-1ws2os": [("WS", 4096), ("OS", 2048), ("OS", 2048)],
    "8k-1os2ws": [("OS", 4096), ("WS", 2048), ("WS", 2048)],
}


def test_presets_are_table_2():
    assert list(SOC_PRESETS) == list(TABLE2)
    for name, accs in TABLE2.items():
        soc = get_soc(name)
        assert [(a.dataflow, a.num_pes) for a in soc.accelerators] == accs
        assert soc.total_pes == (4096 if name.startswith("4k") else 8192)
        assert (soc.sram_bytes, soc.offchip_bw_bytes_per_s, soc.clock_hz) == (8 * 2**20, 90e9, 700e6)
        assert soc.is_heterogeneous == ("1" in name)
        for a in soc.accelerators:
            assert a.rows * a.cols == a.num_pes


def test_shared_resources_split_in_proportion_to_pes():
    soc = get_soc("4k-1ws2os")
    np.testing.assert_allclose(soc.bw_share_bytes_per_s, [45e9, 22.5e9, 22.5e9])
    np.testing.assert_allclose(soc.sram_share_bytes, [4 * 2**20, 2 * 2**20, 2 * 2**20])


def test_get_soc_is_case_insensitive_and_passes_socs_through():
    assert get_soc("4K-1WS2OS") is SOC_PRESETS["4k-1ws2os"]
    soc = SOC_PRESETS["8k-2os"]
    assert get_soc(soc) is soc


@pytest.mark.parametrize("bad", ["4k-3ws", "", None, ["4k-2ws"]])
def test_unknown_hw_names_the_field(bad):
    with pytest.raises(ValueError, match=r"hw=.*is not one of"):
        get_soc(bad)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"dataflow": "RS", "num_pes": 1024}, "dataflow"),
    ({"dataflow": "WS", "num_pes": 0}, "num_pes"),
    ({"dataflow": "WS", "num_pes": 1000}, "num_pes"),  # no default shape: rows/cols needed
    ({"dataflow": "WS", "num_pes": 1024, "rows": 16, "cols": 32}, "rows\\*cols"),
    ({"dataflow": "OS", "num_pes": 1024, "rows": 0, "cols": 32}, "rows"),
])
def test_bad_sub_accelerator_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        SubAccelerator(**kwargs)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"clock_hz": 0.0}, "clock_hz"), ({"offchip_bw_bytes_per_s": -1.0}, "offchip_bw_bytes_per_s"),
    ({"sram_bytes": float("nan")}, "sram_bytes"), ({"accelerators": ()}, "accelerators"),
    ({"accelerators": ("WS",)}, "accelerators"),
])
def test_bad_soc_names_the_field(kwargs, field):
    args = {"name": "x", "accelerators": (SubAccelerator("WS", 1024),), **kwargs}
    with pytest.raises(ValueError, match=field):
        SoC(**args)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan"), True, "2"])
def test_bad_kappa_names_the_field(bad):
    with pytest.raises(ValueError, match="kappa"):
        check_kappa(bad)


def test_bad_layer_table_names_the_problem():
    with pytest.raises(ValueError, match="dims must have shape"):
        layer_costs(np.array([CONV]), np.ones((1, 7), dtype=np.int64), "4k-2ws")
    with pytest.raises(ValueError, match=r"dims\[0, Yo\]"):
        layer_costs(np.array([CONV]), np.array([[1, 1, 1, 1, 1, 1, 0, 1]]), "4k-2ws")
    with pytest.raises(ValueError, match="layer_type"):
        layer_costs(np.array([7]), np.ones((1, 8), dtype=np.int64), "4k-2ws")


# One 3x3 CONV: K=64, C=32, 56x56 -> 56x56 (hand-computed below with CM §4.4's formulas).
K, C, Y, R, YO = 64, 32, 56, 3, 56
ROW = np.array([[K, C, Y, Y, R, R, YO, YO]])


def test_workload_counts():
    w = layer_workload(np.array([CONV]), ROW)
    assert w["macs"][0] == K * C * R * R * YO * YO
    assert w["weight_bytes"][0] == K * C * R * R
    assert (w["input_bytes"][0], w["output_bytes"][0]) == (C * Y * Y, K * YO * YO)
    dw = layer_workload(np.array([DWCONV]), np.array([[32, 32, 56, 56, 3, 3, 28, 28]]))
    assert (dw["macs"][0], dw["weight_bytes"][0]) == (32 * 9 * 28 * 28, 32 * 9)


def test_ws_and_os_cycles_hand_computed():
    ws = SubAccelerator("WS", 2048)  # 64 x 32
    os_ = SubAccelerator("OS", 2048)
    # WS: ceil(C/rows) * ceil(K/cols) * Yo*Xo * R*S = 1 * 2 * 3136 * 9
    assert layer_cycles(np.array([CONV]), ROW, ws)[0] == 1 * 2 * YO * YO * 9
    # OS: Yt = 56, Xt = 32, Kt = min(64, max(1, 2048 // 1792), 16) = 1 -> 1 * 2 * 64 * (32*9)
    assert layer_cycles(np.array([CONV]), ROW, os_)[0] == 1 * 2 * 64 * C * 9
    # FC on OS uses a 16-channel tile of a 1x1 map: ceil(K/16) * C cycles; on WS ceil(C/64)*ceil(K/32)
    fc = np.array([[4096, 2048, 1, 1, 1, 1, 1, 1]])
    assert layer_cycles(np.array([FC]), fc, os_)[0] == 256 * 2048
    assert layer_cycles(np.array([LSTM]), fc, ws)[0] == 32 * 128


def test_latency_and_energy_hand_computed():
    soc = SoC("one-ws", (SubAccelerator("WS", 2048),))
    lat, energy = layer_costs(np.array([CONV]), ROW, soc, first_layer=np.array([False]), last_layer=np.array([False]))
    cycles = 2 * YO * YO * 9
    dram = K * C * R * R  # weights only: not first, not last, activations fit in 8 MiB
    assert math.isclose(lat[0, 0], (max(cycles, dram / (90e9 / 700e6)) + 64 + 32) / 700e6)
    macs = K * C * 9 * YO * YO
    sram = dram + macs / 32 + K * YO * YO * (2 * 1 - 1)  # W + MACs/K_used + O * (2 ceil(C/rows) - 1)
    assert math.isclose(energy[0, 0], macs + ENERGY_PER_SRAM_BYTE * sram + ENERGY_PER_DRAM_BYTE * dram)


def test_first_last_layers_and_spills_add_dram_traffic():
    soc = SoC("one-os", (SubAccelerator("OS", 1024),), sram_bytes=100_000)
    rows = np.repeat(ROW, 3, axis=0)
    _, e_mid = layer_costs(np.array([CONV] * 3), rows, soc, first_layer=np.zeros(3, bool), last_layer=np.zeros(3, bool))
    _, e_def = layer_costs(np.array([CONV] * 3), rows, soc)  # row 0 first, row 2 last
    io = C * Y * Y + K * YO * YO  # 301,056 bytes > 100,000: spilled in every row
    np.testing.assert_allclose(e_mid[:, 0] - e_mid[1, 0], 0.0)
    np.testing.assert_allclose(e_def[:, 0] - e_mid[:, 0], [ENERGY_PER_DRAM_BYTE * C * Y * Y, 0.0,
                                                           ENERGY_PER_DRAM_BYTE * K * YO * YO])
    big = SoC("one-os-big", (SubAccelerator("OS", 1024),))
    _, e_big = layer_costs(np.array([CONV]), ROW, big, first_layer=np.array([False]), last_layer=np.array([False]))
    assert math.isclose(e_mid[1, 0] - e_big[0, 0], ENERGY_PER_DRAM_BYTE * io)


def test_memory_bound_layer_runs_at_the_bandwidth_share():
    soc = get_soc("4k-1ws2os")
    fc = np.array([[32000, 1024, 1, 1, 1, 1, 1, 1]])  # GNMT's softmax projection: 32.8 MB of weights
    lat, _ = layer_costs(np.array([FC]), fc, soc, first_layer=np.array([False]), last_layer=np.array([False]))
    weights = 32000 * 1024
    for a, acc in enumerate(soc.accelerators):
        memory_bound = weights / soc.bw_share_bytes_per_s[a] + (acc.rows + acc.cols) / 700e6
        if acc.dataflow == "WS":  # WS streams the weights faster than it computes: bandwidth-bound
            assert math.isclose(lat[0, a], memory_bound)
        else:  # OS computes an FC on a 16-channel tile: compute-bound, ceil(K/16) * C cycles
            assert lat[0, a] > memory_bound
            assert math.isclose(lat[0, a], (2000 * 1024 + acc.rows + acc.cols) / 700e6)


def test_vectorised_table_equals_row_by_row():
    rng = np.random.default_rng(0)
    n = 40
    types = rng.integers(0, 4, n)
    dims = np.column_stack([rng.integers(1, 600, n), rng.integers(1, 600, n), rng.integers(1, 120, n),
                            rng.integers(1, 120, n), rng.integers(1, 6, n), rng.integers(1, 6, n),
                            rng.integers(1, 60, n), rng.integers(1, 60, n)])
    dims[types == DWCONV, 1] = dims[types == DWCONV, 0]
    soc = get_soc("8k-1os2ws")
    lat, energy = layer_costs(types, dims, soc)
    for i in range(n):
        li, ei = layer_costs(types[i:i + 1], dims[i:i + 1], soc, first_layer=np.array([i == 0]),
                             last_layer=np.array([i == n - 1]))
        np.testing.assert_allclose(lat[i], li[0])
        np.testing.assert_allclose(energy[i], ei[0])


def test_dataflow_preferences_per_layer_type():
    """CM §4.4 goal: on equal PEs, OS wins depthwise and large-map early layers, WS wins FC/LSTM and
    deep-channel small-map late layers."""
    soc = SoC("ws-vs-os", (SubAccelerator("WS", 2048), SubAccelerator("OS", 2048)))
    layers = {
        "dw 112x112": (DWCONV, [96, 96, 112, 112, 3, 3, 112, 112]),
        "early 3x3 conv 112x112, C=3": (CONV, [32, 3, 224, 224, 3, 3, 112, 112]),
        "fc 1280->1000": (FC, [1000, 1280, 1, 1, 1, 1, 1, 1]),
        "lstm 1024": (LSTM, [4096, 2048, 1, 1, 1, 1, 1, 1]),
        "late 3x3 conv 7x7, C=512": (CONV, [512, 512, 7, 7, 3, 3, 7, 7]),
    }
    types = np.array([t for t, _ in layers.values()])
    dims = np.array([d for _, d in layers.values()])
    lat, _ = layer_costs(types, dims, soc, first_layer=np.zeros(5, bool), last_layer=np.zeros(5, bool))
    faster_os = dict(zip(layers, lat[:, 1] < lat[:, 0], strict=True))
    assert faster_os == {"dw 112x112": True, "early 3x3 conv 112x112, C=3": True, "fc 1280->1000": False,
                         "lstm 1024": False, "late 3x3 conv 7x7, C=512": False}


def test_switch_cost_per_byte():
    soc = get_soc("4k-1os2ws")
    lat, energy = switch_cost_per_byte(soc, kappa=2.0)
    np.testing.assert_allclose(lat, 2.0 / soc.bw_share_bytes_per_s)
    assert energy == ENERGY_PER_DRAM_BYTE
