"""The APU device presets and the Rodinia catalog / Table II mixes (EMRF paper Tables I-III)."""

from __future__ import annotations

import csv

import pytest

from joulegym.devices import available_devices, get_device
from joulegym.workloads.rodinia import (
    MIXES,
    RODINIA,
    TABLE_III_ORDER,
    RodiniaApp,
    default_job_gflop,
    mix_arrays,
    rodinia_app,
    solo_gflops,
    workload_mix,
)
from tests.reference_data import ref_file


def test_apu_presets_are_data_in_the_device_registry():
    assert {"amd-a8-3870k", "emrf-toy"} <= set(available_devices())
    apu = get_device("amd-a8-3870k")
    assert apu.kind == "apu" and apu.capacity_unit == "GFLOPS"
    assert dict(apu.capacities) == {"cpu": 24.0, "gpu": 480.0}  # Table I
    toy = get_device("emrf-toy")
    assert toy.kind == "apu" and dict(toy.capacities) == {"cpu": 100.0, "gpu": 800.0}  # §III examples


def test_a8_3870k_against_the_spec_sheet():
    """Table I's 480 GPU GFLOPS = 400 shaders x 600 MHz x 2 (FMA); 24 CPU GFLOPS = 4 cores x 3.0 GHz x 2."""
    with open(ref_file("cpu-specs", "emrf_amd_apu.csv"), newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["processor"] == "A8-3870K")
    apu = get_device("amd-a8-3870k")
    assert int(row["gpu_shaders"]) * int(row["gpu_mhz"]) * 2 / 1000 == apu.capacities["gpu"]
    assert int(row["cpu_cores"]) * int(row["cpu_base_mhz"]) * 2 / 1000 == apu.capacities["cpu"]
    assert float(row["tdp_w"]) == apu.tdp_w


@pytest.mark.parametrize(("app", "xi", "category", "stated"), [
    ("GE", 0.21, "co-run", True), ("KM", 0.07, "co-run", True), ("HW", 0.24, "co-run", True),
    ("MY", 1.0, "cpu-dominant", True), ("KNN", 1.0, "cpu-dominant", False),
    ("BT", 0.0, "gpu-dominant", True), ("CFD", 0.0, "gpu-dominant", False), ("LUD", 0.0, "gpu-dominant", False),
])
def test_rodinia_catalog(app, xi, category, stated):
    """Table III: CPU fractions (stated in §VI-B1, or from the category: docs/families/emrf.md, assumption A3)."""
    entry = rodinia_app(app.lower())
    assert (entry.xi_cpu, entry.category, entry.xi_stated) == (xi, category, stated)
    assert entry.co_run == (category == "co-run")


def test_solo_gflops_match_spec_table():
    """F^solo = 1/m on the A8-3870K (computed from Table III's xi; docs/families/emrf.md §4)."""
    expected = {"GE": 114.29, "KM": 342.86, "HW": 100.0, "MY": 24.0, "KNN": 24.0, "BT": 480.0, "CFD": 480.0,
                "LUD": 480.0}
    for app, value in expected.items():
        assert solo_gflops(RODINIA[app].xi_cpu, (24.0, 480.0)) == pytest.approx(value, abs=5e-3)
    assert default_job_gflop(0.24, (24.0, 480.0)) == pytest.approx(1000.0)  # T_solo 10 s x F_solo 100
    assert TABLE_III_ORDER == tuple(RODINIA)


def test_table_ii_mixes():
    assert MIXES["M1"].apps == ("GE", "KM", "HW", "MY", "BT") and MIXES["M1"].weights == (2, 1, 3, 4, 1)
    for name, apps in (("M2", ("GE", "KM")), ("M3", ("HW", "MY")), ("M4", ("KM", "BT")), ("M5", ("KNN", "CFD"))):
        assert MIXES[name].apps == apps and MIXES[name].weights == (1.0, 1.0)
    assert mix_arrays("m3") == ([0.24, 1.0], [1.0, 1.0])


def test_catalog_bad_input():
    with pytest.raises(ValueError, match="app"):
        rodinia_app("SPMV")
    with pytest.raises(ValueError, match="mix"):
        workload_mix("M6")
    with pytest.raises(ValueError, match="xi_cpu"):
        RodiniaApp("X", "x", "co-run", 1.5, True)
    with pytest.raises(ValueError, match="category"):
        RodiniaApp("X", "x", "fpga", 0.5, True)
