"""UXCost, Algorithm 2 [P §3.6] (spec §2.2): per-model rates and normalised energies, summed, then multiplied;
the 1/(2N) zero-violation floor; never aggregated over frames first (spec §6 R5 check)."""

from __future__ import annotations

import pytest

from joulegym.core.inner import run_inner
from joulegym.core.policy import make_inner
from joulegym.envs.dream.simulator import CANCELLED, DreamSim
from joulegym.envs.dream.tables import uxcost


def test_hand_made_counts():
    # model A: 3 of 10 frames violated, energy 5 of worst 10; model B: 0 of 20 violated (floor 1/40), 8 of 10
    out = uxcost([3, 0], [10, 20], [5.0, 8.0], [10.0, 10.0])
    assert out["overall_rate_dlv"] == pytest.approx(0.3 + 1 / 40)
    assert out["overall_norm_energy"] == pytest.approx(0.5 + 0.8)
    assert out["uxcost"] == pytest.approx((0.3 + 0.025) * 1.3)


def test_zero_violation_floor_keeps_uxcost_positive():
    out = uxcost([0, 0, 0], [120, 60, 30], [1.0, 1.0, 1.0], [2.0, 4.0, 4.0])
    assert out["overall_rate_dlv"] == pytest.approx(1 / 240 + 1 / 120 + 1 / 60)  # spec §4.1 floors
    assert out["uxcost"] == pytest.approx((1 / 240 + 1 / 120 + 1 / 60) * (0.5 + 0.25 + 0.25))
    assert out["uxcost"] > 0
    # one violation is worse than none, however few frames
    assert uxcost([1], [30], [1.0], [2.0])["uxcost"] > uxcost([0], [30], [1.0], [2.0])["uxcost"]


def test_models_without_counted_frames_are_not_part_of_the_workload():
    assert uxcost([1, 0], [4, 0], [1.0, 0.0], [2.0, 0.0]) == uxcost([1], [4], [1.0], [2.0])


def test_per_model_terms_are_multiplied_not_aggregated_first():
    """Two runs with the same aggregate violation rate (10/100) and energy rate (50 %) but different UXCost:
    Alg 2 sums per-model rates, so where the violations fall matters (the paper's R5 numbers cannot be
    multiplied from its aggregate rates either: 1.88 x (1 - 0.629) = 0.70, not 1 - 0.274)."""
    frames = [10, 90]
    worst = [10.0, 90.0]
    spread = uxcost([1, 9], frames, [5.0, 45.0], worst)  # 1/10 + 9/90 = 0.2
    lumped = uxcost([0, 10], frames, [5.0, 45.0], worst)  # floor 1/20 + 10/90
    aggregate = (10 / 100) * (50 / 100)
    assert spread["uxcost"] == pytest.approx(0.2 * 1.0)
    assert lumped["uxcost"] == pytest.approx((1 / 20 + 10 / 90) * 1.0)
    assert spread["uxcost"] != pytest.approx(lumped["uxcost"])
    assert spread["uxcost"] != pytest.approx(aggregate)
    # energy too: the same total energy split differently gives a different sum of normalised energies
    assert uxcost([1, 9], frames, [9.0, 41.0], worst)["overall_norm_energy"] == pytest.approx(0.9 + 41 / 90)


def test_energy_exponent_option():
    base = uxcost([1], [10], [5.0], [10.0])
    sq = uxcost([1], [10], [5.0], [10.0], energy_exponent=2.0)
    assert sq["uxcost"] == pytest.approx(0.1 * 0.25) and base["uxcost"] == pytest.approx(0.1 * 0.5)


def test_simulator_uxcost_equals_alg2_over_its_frames():
    """metrics()["uxcost"] (running sums) equals Alg 2 recomputed from the per-frame record."""
    sim = DreamSim.from_catalog("vr-gaming", "4k-1os2ws", horizon_s=1.0, warmup_s=0.1)  # loaded: frames are dropped
    m = run_inner(sim, make_inner("dream-smartdrop", family="dream", tuning="fixed"), 3)
    M = sim.n_models
    v, f, e, w = [0] * M, [0] * M, [0.0] * M, [0.0] * M
    for i, d in enumerate(sim.f_deadline):
        if 0.1 <= d < 1.0 and sim.f_state[i] != CANCELLED:
            k = sim.f_model[i]
            f[k] += 1
            v[k] += sim.f_violated[i]
            e[k] += sim.f_energy[i]
            w[k] += sim.f_worst[i]
    assert m["uxcost"] == pytest.approx(uxcost(v, f, e, w)["uxcost"])
    assert m["drops"] > 0 and m["violated"] >= m["drops"]  # drops count as violations (completion = infinity)
    for k, name in enumerate(sim.model_names):
        assert m[f"dlv/{name}"] == pytest.approx(v[k] / f[k] if f[k] else 0.0)
