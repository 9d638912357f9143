"""DREAM load calibration (docs/families/dream-cost-model.md §4.4): per-model latency scales
``min(level, cap_m)`` that keep every Table 3 model feasible alone on every Table 2 SoC (issue 15's
calibration defect: one scale per scenario left GNMT, SkipNet, GoogLeNet-car, FocalLengthDepth and TrailNet
missing every deadline even alone)."""

from __future__ import annotations

import numpy as np
import pytest

from joulegym.devices.accelerator import SOC_PRESETS, get_soc, switch_cost_per_byte
from joulegym.envs.dream.scheduling import FCFSScheduler, run_episode
from joulegym.envs.dream.simulator import App, DreamSim, Workload, catalog_table
from joulegym.workloads.dream_scenarios import (
    CALIBRATION_HW,
    DREAM_SCENARIOS,
    FEASIBLE_FRACTION,
    KAPPA,
    MODEL_SCALE,
    TARGET_LOAD,
    calibrate,
    calibrate_kappa,
    calibration_constants,
    cascade_chain,
    get_scenario,
    isolated_latency,
    latency_caps,
    model_loads,
    offered_load,
)

PATHS = [(name, cascade_chain(name, m.model)) for name, scn in DREAM_SCENARIOS.items()
         for m in scn.models if scn.is_leaf(m.model)]


def test_committed_calibration_reproduces():
    kappa, scale = calibration_constants()
    assert set(kappa) == set(KAPPA) == set(MODEL_SCALE) == set(DREAM_SCENARIOS)
    for name in DREAM_SCENARIOS:
        assert KAPPA[name] == pytest.approx(kappa[name], rel=1e-5), name
        assert dict(MODEL_SCALE[name]) == pytest.approx(scale[name], rel=1e-5), name


def test_calibration_reaches_the_target_load_unless_every_model_is_at_its_cap():
    for name in DREAM_SCENARIOS:
        cal = calibrate(name)
        rho = offered_load(name, CALIBRATION_HW)
        assert rho == pytest.approx(cal.rho, rel=1e-4)
        caps = latency_caps(name)
        at_cap = all(MODEL_SCALE[name][m] == pytest.approx(caps[m], rel=1e-5) for m in caps)
        if not at_cap:
            assert rho == pytest.approx(TARGET_LOAD, rel=1e-4), name
        else:
            assert rho <= TARGET_LOAD * (1 + 1e-4), name
        for m, s in MODEL_SCALE[name].items():
            assert s <= caps[m] * (1 + 1e-5), (name, m)


def test_calibrate_solves_a_hand_computed_case():
    """ar-social reaches rho = 1.1: the uncapped models share one level, the capped ones sit at their caps."""
    cal = calibrate("ar-social")
    loads = model_loads("ar-social", CALIBRATION_HW)
    assert sum(min(cal.level, cal.caps[m]) * load for m, load in loads.items()) == pytest.approx(TARGET_LOAD)
    assert cal.kappa == pytest.approx(TARGET_LOAD / sum(loads.values()))
    assert cal.kappa == pytest.approx(calibrate_kappa("ar-social"))  # the old uniform kappa, same rho
    # with no cap binding (fraction 1 and a tiny target) every model runs at one level: the uniform kappa
    tiny = calibrate("ar-social", target=0.01, fraction=1.0)
    assert set(np.round(list(tiny.scales.values()), 9)) == {round(tiny.level, 9)}
    assert tiny.level == pytest.approx(calibrate_kappa("ar-social", target=0.01))


@pytest.mark.parametrize(("scenario", "path"), PATHS, ids=[f"{s}:{'>'.join(p)}" for s, p in PATHS])
def test_every_cascade_path_fits_its_budget_alone_on_every_soc(scenario, path):
    """The bound: the path's worst-case frames on their best single accelerator take at most FEASIBLE_FRACTION
    of the root's period on every Table 2 SoC."""
    scn = get_scenario(scenario)
    budget = FEASIBLE_FRACTION / scn.entry(path[0]).fps
    for hw in SOC_PRESETS:
        total = sum(isolated_latency(m, hw, MODEL_SCALE[scenario][m]) for m in path)
        assert total <= budget * (1 + 1e-5), (hw, total, budget)


def _alone(scenario: str, path: tuple[str, ...], hw: str, scales: dict[str, float], kappa: float) -> DreamSim:
    """The simulator running only ``path`` (root -> leaf), every cascade activated (p = 1), no SkipNet skip or
    RAPID-RL exit (p_dynamic = 0): the worst case a model meets alone."""
    scn = get_scenario(scenario)
    soc = get_soc(hw)
    apps = tuple(App(m, scn.entry(m).fps, scn.entry(m).parent, 1.0, 0.0) for m in path)
    lat_b, e_b = switch_cost_per_byte(soc, kappa)
    return DreamSim({m: catalog_table(m, soc, scales[m]) for m in path}, Workload(f"{scenario}-alone", apps),
                    acc_pes=[int(x) for x in soc.pes], switch_lat_per_byte=lat_b, switch_energy_per_byte=e_b,
                    horizon_s=0.5)


@pytest.mark.parametrize("scenario", list(DREAM_SCENARIOS))
def test_every_model_meets_every_deadline_alone_in_the_simulator(scenario):
    """Run each cascade path alone on each SoC; FCFS on the fastest idle accelerator (the whole frame there)
    must miss no deadline."""
    for s, path in PATHS:
        if s != scenario:
            continue
        for hw in SOC_PRESETS:
            sim = _alone(scenario, path, hw, dict(MODEL_SCALE[scenario]), KAPPA[scenario])
            metrics = run_episode(sim, FCFSScheduler("fastest_idle"), 0)
            assert metrics["frames"] > 0 and metrics["violated"] == 0, (path, hw, metrics["violated"])


def test_the_uniform_kappa_left_models_infeasible_alone():
    """Regression (issue 15): the old single scale per scenario (rho = 1.1 on 4k-1ws2os, no caps) made GNMT miss
    every deadline even alone (VR_Gaming: 68.9 ms on 4k-1ws2os's best accelerator vs a 66.7 ms period); the same
    simulator check catches it."""
    kappa = calibrate_kappa("vr-gaming")
    assert kappa == pytest.approx(15.3704, rel=1e-4)  # the committed value before the caps
    sim = _alone("vr-gaming", ("kws-res8", "gnmt"), "4k-1ws2os", {"kws-res8": kappa, "gnmt": kappa}, kappa)
    metrics = run_episode(sim, FCFSScheduler("fastest_idle"), 0)
    assert metrics["frames/gnmt"] > 0 and metrics["dlv/gnmt"] == 1.0


def test_bad_fraction_names_the_field():
    with pytest.raises(ValueError, match="fraction"):
        latency_caps("vr-gaming", fraction=0.0)
    with pytest.raises(ValueError, match="fraction"):
        calibrate("vr-gaming", fraction=1.5)
