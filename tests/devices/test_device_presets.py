"""Device presets used by ETF (jetson-tx2, a10g, toy-etf) and the registry.

The TX2 tables are checked against the authors' measured profiles in
``../shared/reference-data/etf-jetson-tx2/*.json``, read at test time (skipped if absent).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from joulegym.devices import Device, ProfileTable, available_devices, get_device, register_device

REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "reference-data" / "etf-jetson-tx2"
TX2_LEVELS = (114.75, 216.75, 318.75, 420.75, 522.75, 624.75, 726.75, 854.25, 930.75, 1032.75, 1122.0,
              1236.75, 1300.5)  # the 13 TX2 GPU levels (docs/families/etf.md)


def load_profile(model: str) -> dict:
    path = REFERENCE / f"{model}_profile.json"
    if not path.exists():
        pytest.skip(f"reference data not found: {path}")
    return json.loads(path.read_text())


@pytest.mark.parametrize("model", ["resnet50", "resnet18"])
def test_tx2_tables_equal_the_measured_profiles(model):
    data = load_profile(model)
    table = get_device("jetson-tx2").profile(model)
    hz = sorted(int(k) for k in data["exec_time"])
    assert tuple(h / 1e6 for h in hz) == table.frequencies_mhz
    assert table.time_s == pytest.approx(tuple(data["exec_time"][str(h)] * 1e-6 for h in hz), rel=1e-12)  # us -> s
    assert table.power_w == pytest.approx(tuple(data["gpu_power"][str(h)] * 1e-3 for h in hz), rel=1e-12)  # mW -> W
    # The JSON's energy is the measured mean of P*t (uJ); the table's P x t agrees to 0.1%.
    energy = np.array([data["energy"][str(h)] * 1e-6 for h in hz])
    assert table.energy_j == pytest.approx(energy, rel=1e-3)
    assert table.energy_optimal_mhz() == hz[int(np.argmin(energy))] / 1e6


def test_resnet50_energy_optimal_level_is_726():
    data = load_profile("resnet50")
    energy = {int(k): v for k, v in data["energy"].items()}
    assert min(energy, key=energy.get) == 726_750_000
    assert get_device("jetson-tx2").profile("resnet50").energy_optimal_mhz() == 726.75


def test_tx2_preset():
    tx2 = get_device("jetson-tx2")
    assert tx2.kind == "gpu" and tx2.frequencies.levels_mhz == TX2_LEVELS and tx2.tdp_w == 15.0
    r50 = tx2.profile("resnet50")
    # The paper's disparities (§6.3, §6.5): 1-to-7.9, 1-to-1.5, 1-to-2.5 against ResNet50 @ 1300.5.
    assert r50.at(1300.5)[1] / r50.at(114.75)[1] == pytest.approx(7.876, abs=1e-3)
    assert r50.at(1300.5)[1] / r50.at(1032.75)[1] == pytest.approx(1.514, abs=1e-3)
    assert r50.at(1300.5)[1] / r50.at(726.75)[1] == pytest.approx(2.482, abs=1e-3)


def test_tx2_synthetic_mobilenet():
    """Spec §6 [A]: 900 mW at 726.75 MHz (r = 4.73 against ResNet50 @ 1300.5), 0.6 x ResNet18's time; the
    text4x variant is 1065 mW at 726.75 MHz (r = 4.0)."""
    tx2 = get_device("jetson-tx2")
    mnv2, r18 = tx2.profile("mobilenetv2"), tx2.profile("resnet18")
    spec_mw = (498, 610, 714, 747, 835, 852, 900, 1094, 1205, 1324, 1485, 1766, 1907)
    assert mnv2.power_w == pytest.approx(tuple(p / 1000 for p in spec_mw))
    assert mnv2.time_s == pytest.approx(tuple(0.6 * t for t in r18.time_s))
    assert 4.261 / mnv2.at(726.75)[1] == pytest.approx(4.73, abs=0.01)
    assert tx2.profile("mobilenetv2-text4x").at(726.75)[1] == pytest.approx(1.065)
    assert "synthetic" in mnv2.source


def test_a10g_ratio():
    """§6.4: GPT-2 / MobileNetV2 power disparity "approximately 2.2x" at maximum frequency."""
    a10g = get_device("a10g")
    top = a10g.frequencies.max_mhz
    assert len(a10g.frequencies) == 1
    ratio = a10g.profile("gpt2").at(top)[1] / a10g.profile("mobilenetv2").at(top)[1]
    assert ratio == pytest.approx(2.2, abs=0.01)


def test_toy_device():
    toy = get_device("toy-etf")
    powers = [toy.profile(m).at(toy.frequencies.max_mhz) for m in ("toy-a", "toy-b", "toy-c")]
    assert powers == [(1.0, 2.0), (1.0, 3.0), (1.0, 8.0)]


def test_registry_errors():
    assert {"jetson-tx2", "a10g", "toy-etf"} <= set(available_devices())
    with pytest.raises(ValueError, match=r"device='nope' is unknown; available: \["):
        get_device("nope")
    with pytest.raises(ValueError, match="already registered"):
        register_device("jetson-tx2", get_device("jetson-tx2"))
    with pytest.raises(ValueError, match=r"workload='vgg16' has no profile.*known: \["):
        get_device("jetson-tx2").profile("vgg16")


def test_device_validation():
    table = ProfileTable.from_arrays("m", [1.0], [1.0], [1.0])
    with pytest.raises(ValueError, match="kind"):
        Device("d", "quantum", "x")
    with pytest.raises(ValueError, match="capacities"):
        Device("d", "gpu", "x", capacities={"gpu": 0.0})
    with pytest.raises(ValueError, match="profile key"):
        Device("d", "gpu", "x", profiles={"other": table})
    device = Device("d", "gpu", "x", profiles={"m": table})
    with pytest.raises(TypeError):
        device.profiles["n"] = table  # read-only mapping


def test_every_preset_is_plain_data():
    """Presets are :class:`Device` records (data), never subclasses: a family adds hardware as data."""
    for name in available_devices():
        device = get_device(name)
        assert type(device) is Device and device.name == name
        assert all(type(t) is ProfileTable for t in device.profiles.values())


def test_a_server_cpu_with_p_states_is_data():
    """Deliverable 2's design check: a server CPU with a P-state ladder (Qin) needs no new code, only data.
    The ladder and TDP of the i5-6600 come from ``cpu-specs/qin_intel_servers.csv`` (800-3900 MHz in
    100 MHz steps, 65 W); the voltages are illustrative, and C is fitted so that the top P-state draws
    the TDP at full activity."""
    import csv

    from joulegym.devices import CMOSPowerModel, FrequencyGrid, VoltageCurve
    from tests.reference_data import ref_file

    with open(ref_file("cpu-specs", "qin_intel_servers.csv"), newline="") as handle:
        row = next(r for r in csv.DictReader(handle) if r["processor"] == "i5-6600")
    low, high, step = (float(row[k]) for k in ("lfm_mhz", "max_turbo_mhz", "pstate_step_mhz"))
    grid = FrequencyGrid.linear(low, high, step)
    curve = VoltageCurve((low, high), (0.75, 1.25))
    static_w = 10.0
    unit = CMOSPowerModel(1.0, curve, static_w=static_w, static_mode="voltage")  # leakage ~ V
    capacitance = (float(row["tdp_w"]) - unit.static(high)) / unit.dynamic_w(high)
    model = CMOSPowerModel(capacitance, curve, static_w=static_w, static_mode="voltage")
    cpu = Device(row["processor"], "cpu", "Skylake desktop CPU with P-states", frequencies=grid, power_model=model,
                 capacities={"cores": float(row["cores"])}, capacity_unit="cores", tdp_w=float(row["tdp_w"]))
    assert len(cpu.frequencies) == 32 and cpu.frequencies.max_mhz == 3900.0
    power = cpu.power_model.total_w(cpu.frequencies.array)
    assert np.all(np.diff(power) > 0) and power[-1] == pytest.approx(65.0)
    # Dynamic power ~ V^2 f: the bottom P-state costs (0.75^2 x 800) / (1.25^2 x 3900) = 7.4% of the top's.
    ratio = cpu.power_model.dynamic_w(800.0) / cpu.power_model.dynamic_w(3900.0)
    assert ratio == pytest.approx(0.75**2 * 800 / (1.25**2 * 3900))
