"""EMRF evaluation hooks through the real evaluate.py entry point (front plot and --reproduce emrf)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from joulegym.evaluation.cli import main
from joulegym.evaluation.emrf import fig7_table, fig8_table, front_table
from joulegym.evaluation.hooks import hooks_for
from joulegym.workloads.rodinia import mix_arrays


def test_hooks_registered():
    hooks = hooks_for("emrf")
    assert hooks.summary_plot is not None and hooks.reproduce is not None
    assert "throughput_gflops" in hooks.headline_metrics


def test_front_is_monotone_on_m2():
    table = front_table((24.0, 480.0), *mix_arrays("M2"))
    sweep = table[table["eta"].notna()]
    assert np.all(np.diff(sweep["efficiency"]) < 0) and np.all(np.diff(sweep["soft_fairness"]) < 0)
    drf = table[table["policy"] == "drf"].iloc[0]
    assert drf["efficiency"] == pytest.approx(sweep.iloc[-1]["efficiency"])  # EMRF(1) = DRF on M2


def test_front_through_env_uses_weights_for_residual_and_levels_for_discrete():
    from joulegym.evaluation.emrf import front_through_env

    residual = front_through_env("joulegym/EMRFResidual-apu-m2-v0", [0], etas=[0.0, 1.0])
    weights = front_through_env("joulegym/EMRF-apu-m2-v0", [0], etas=[0.0, 1.0])
    pd.testing.assert_frame_equal(residual, weights)
    discrete = front_through_env("joulegym/EMRFKnobDiscrete-apu-m2-v0", [0], env_kwargs={"knob_levels": 5})
    assert discrete["eta"].tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert np.all(np.diff(discrete["mean_efficiency"]) < 0)


def test_reproduce_tables_match_the_model():
    t8 = fig8_table().set_index("n")
    assert t8.loc[5, "EMRF-0.1"] == pytest.approx(320.7, abs=0.05)
    t7 = fig7_table([0.0, 0.5, 1.0])
    m2 = t7[t7["scenario"] == "M2"].set_index("eta")
    np.testing.assert_allclose(m2["theta_over_eta1"], [1.5, 1.25, 1.0], rtol=1e-9)  # docs page §9: 1.5 - 0.5 eta
    np.testing.assert_allclose(m2["delta_bound"], [2.0, 1.0, 0.0], atol=1e-9)


def test_evaluate_cli_front_and_reproduce(tmp_path):
    out = tmp_path / "eval"
    rc = main(["--env", "joulegym/EMRF-apu-m2-v0", "--policies", "emrf,drf,wfq,static-partition,max-utilisation",
               "--seeds", "2", "--out", str(out)])
    assert rc == 0
    assert (out / "emrf_front_EMRF-apu-m2.png").stat().st_size > 10_000
    # the front is run through the env: on M2 it is Fig. 7's line, E = (342.86 - 114.29 eta) / 504, Δ = 2 (1 - eta)
    front = pd.read_csv(out / "emrf_front_EMRF-apu-m2.csv")
    np.testing.assert_allclose(front["mean_efficiency"], (2400 / 7 - 800 / 7 * front["eta"]) / 504, rtol=1e-9)
    np.testing.assert_allclose(front["soft_fairness"], 2 * (1 - front["eta"]), atol=1e-9)
    episodes = pd.read_csv(out / "episodes.csv")
    means = episodes.groupby("policy")["throughput_gflops"].mean()
    assert means["emrf"] >= means["drf"] >= means["wfq"]
    rc = main(["--reproduce", "emrf", "--quick", "--out", str(tmp_path / "paper")])
    assert rc == 0
    for name in ("emrf_fig6.csv", "emrf_fig7.csv", "emrf_fig8.csv", "emrf_reproduce.md", "emrf_figures.png"):
        assert (tmp_path / "paper" / name).stat().st_size > 0
    fig6 = pd.read_csv(tmp_path / "paper" / "emrf_fig6.csv").set_index("mix")
    assert fig6.loc["M5", "theta_emrf"] == pytest.approx(fig6.loc["M5", "theta_drf"])
