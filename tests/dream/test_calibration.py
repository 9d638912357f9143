"""DREAM load calibration (docs/families/dream-cost-model.md §4.4): one latency scale per scenario, for every model
and SoC, at offered load 0.7 on 4K-1WS2OS; the models that cannot meet their deadline alone at that scale are
reported (and the simulator agrees with the report), never capped."""

from __future__ import annotations

import numpy as np
import pytest

from joulegym.core.inner import run_inner
from joulegym.core.policy import make_inner
from joulegym.devices.accelerator import SOC_PRESETS, get_soc, switch_cost_per_byte
from joulegym.envs.dream.simulator import App, DreamSim, Workload
from joulegym.envs.dream.tables import catalog_table
from joulegym.workloads.dream_models import layer_cost_tables, load_model
from joulegym.workloads.dream_scenarios import (
    CALIBRATION_HW,
    DREAM_SCENARIOS,
    KAPPA,
    TARGET_LOAD,
    calibrate,
    calibration_constants,
    cascade_chain,
    get_scenario,
    infeasible_alone,
    offered_load,
    scenario_from_config,
    scenario_scale,
)

PATHS = [(name, cascade_chain(name, m.name)) for name, scn in DREAM_SCENARIOS.items() for m in scn.models
         if scn.is_leaf(m.name)]


def test_committed_calibration_reproduces_and_puts_every_scenario_at_the_target_load():
    assert calibration_constants() == dict(KAPPA)
    for name in DREAM_SCENARIOS:
        assert offered_load(name, CALIBRATION_HW) == pytest.approx(TARGET_LOAD, rel=1e-5)


def test_one_scale_per_scenario_keeps_the_relative_model_sizes():
    """Within a scenario every model's latency table is the cost model's times the scenario's one scale; the
    same network (SSD-MobileNetV2 in three scenarios) keeps its size relative to its neighbours."""
    for name in ("vr-gaming", "drone-outdoor", "ar-social"):
        sim = DreamSim.from_catalog(name, "4k-1ws2os")
        assert sim.scale == KAPPA[name]
        ssd = sim.model_names.index("ssd-mobilenetv2")
        table = sim._vars[0][ssd][0]
        base, _ = layer_cost_tables(load_model("ssd-mobilenetv2"), "4k-1ws2os", 1.0)
        assert np.allclose(np.asarray(table.lat_l), base * KAPPA[name], rtol=1e-12)


def test_the_cascade_sweep_keeps_the_scale_and_a_custom_scenario_is_calibrated():
    heavy = get_scenario("ar-social").with_cascade_p(0.99)
    assert scenario_scale(heavy) == KAPPA["ar-social"]  # Fig. 12 loads the same models harder
    assert offered_load(heavy, CALIBRATION_HW) > TARGET_LOAD
    custom = scenario_from_config({"name": "pair", "models": [{"model": "fbnet-c", "fps": 60},
                                                               {"model": "gnmt", "fps": 15}]})
    assert offered_load(custom, CALIBRATION_HW) == pytest.approx(TARGET_LOAD, rel=1e-9)
    assert calibrate(custom, 1.4) == pytest.approx(2 * calibrate(custom, 0.7))


def _alone(scenario: str, path: tuple[str, ...], hw: str) -> DreamSim:
    """The simulator running only ``path`` (root -> leaf), every cascade activated (p = 1), no SkipNet skip or
    RAPID-RL exit (p_dynamic = 0), at the scenario's scale: the worst case a model meets alone."""
    scn = get_scenario(scenario)
    soc = get_soc(hw)
    scale = KAPPA[scenario]
    apps = tuple(App(m, scn.entry(m).fps, scn.entry(m).parent, 1.0, 0.0) for m in path)
    lat_b, e_b = switch_cost_per_byte(soc, scale)
    return DreamSim({m: catalog_table(scn.entry(m).model, soc, scale) for m in path},
                    Workload(f"{scenario}-alone", apps), acc_pes=[int(x) for x in soc.pes], switch_lat_per_byte=lat_b,
                    switch_energy_per_byte=e_b, horizon_s=0.5)


@pytest.mark.parametrize("scenario", list(DREAM_SCENARIOS))
def test_the_infeasible_alone_report_is_what_the_simulator_sees(scenario):
    """Each cascade path alone on each SoC, FCFS on the fastest idle accelerator (the whole frame there): it misses
    every deadline exactly where :func:`infeasible_alone` reports the path, and none elsewhere."""
    reported = {(leaf, hw) for leaf, hw, _ in infeasible_alone(scenario)}
    for s, path in PATHS:
        if s != scenario:
            continue
        for hw in SOC_PRESETS:
            fastest = make_inner("fcfs", family="dream", acc_choice="fastest_idle")
            metrics = run_inner(_alone(scenario, path, hw), fastest, 0)
            leaf = path[-1]
            assert metrics[f"frames/{leaf}"] > 0
            expected = 1.0 if (leaf, hw) in reported else 0.0
            assert metrics[f"dlv/{leaf}"] == expected, (path, hw)
    assert all(ratio > 1.0 for *_, ratio in infeasible_alone(scenario))


def test_the_calibration_soc_reports_the_heavy_models_and_8k_2ws_none():
    """At 0.7 the heaviest model of AR_Call, Drone_Outdoor and Drone_Indoor cannot meet its worst case alone on
    4K-1WS2OS (reported; its expected path can), and nothing is infeasible on the compute-sufficient 8K-2WS."""
    on_calibration = {(s, leaf) for s in DREAM_SCENARIOS for leaf, hw, _ in infeasible_alone(s) if hw == CALIBRATION_HW}
    assert on_calibration == {("ar-call", "skipnet"), ("drone-outdoor", "trailnet"), ("drone-indoor", "googlenet-car")}
    assert not [case for s in DREAM_SCENARIOS for case in infeasible_alone(s) if case[1] == "8k-2ws"]


@pytest.mark.parametrize("scenario", list(DREAM_SCENARIOS))
def test_8k_2ws_is_compute_sufficient_at_the_calibrated_load(scenario):
    """Why 0.7 (CM §4.4): on the paper's compute-sufficient SoC (Fig. 8(c)) no scheduler misses a deadline."""
    sim = DreamSim.from_catalog(scenario, "8k-2ws")
    for name in ("fcfs", "veltair", "planaria", "edf", "mapscore-fixed"):
        assert run_inner(sim, make_inner(name, family="dream"), 0)["violated"] == 0, name


def test_the_next_load_of_the_grid_overloads_8k_2ws():
    """At 0.85 Drone_Indoor misses deadlines on 8K-2WS (MapScore(1, 1)): 0.7 is the largest load of the grid."""
    scale = calibrate("drone-indoor", 0.85)
    sim = DreamSim.from_catalog("drone-indoor", "8k-2ws", kappa=scale)
    missed = sum(run_inner(sim, make_inner("mapscore-fixed", family="dream"), seed)["violated"] for seed in range(3))
    assert missed > 0


def test_bad_target_names_the_field():
    with pytest.raises(ValueError, match="kappa"):
        calibrate("vr-gaming", 0.0)
    with pytest.raises(ValueError, match="workload\\['models'\\]\\[0\\]"):
        scenario_from_config({"name": "x", "models": [{"model": "nope", "fps": 1}]})
    with pytest.raises(ValueError, match="workload\\['name'\\]"):
        scenario_from_config({"name": "vr-gaming", "models": [{"model": "gnmt", "fps": 1}]})
