"""PowerFlow evaluation hooks (Fig. 7-style plot)."""

from __future__ import annotations

import pandas as pd
import pytest

from joulegym.evaluation.hooks import hooks_for


def test_hooks_registered_and_summary_plot_writes(tmp_path):
    hooks = hooks_for("powerflow")
    assert "avg_jct_h" in hooks.headline_metrics and "total_energy_kwh" in hooks.headline_metrics
    results = pd.DataFrame([{"env_id": "joulegym/PowerFlow-tiny-v0", "policy": "powerflow-strict", "seed": 0,
                             "episode": 0, "return": -0.5, "length": 30, "avg_jct_h": 0.5, "total_energy_kwh": 3.0}])
    paths = hooks.summary_plot(results, tmp_path)
    names = {p.name for p in paths}
    assert "fig7_PowerFlow-tiny-v0.png" in names
    table = pd.read_csv(tmp_path / "fig7_PowerFlow-tiny-v0.csv")
    assert set(table.policy) >= {"powerflow", "gandiva", "tiresias", "afs", "gandiva-zeus", "tiresias-zeus"}
    assert (table.avg_jct_h > 0).all() and (table.total_energy_kwh > 0).all()


def test_summary_sweep_keeps_each_policys_life_cycle(tmp_path):
    """Only PowerFlow pre-runs and profiles (§6.1): the plotted baseline points are plain ``simulate`` runs."""
    import gymnasium as gym

    from joulegym import baselines
    from joulegym.envs.powerflow import simulate

    results = pd.DataFrame([{"env_id": "joulegym/PowerFlow-tiny-v0", "policy": "afs", "seed": 0, "episode": 0,
                             "return": -0.5, "length": 30}])
    hooks_for("powerflow").summary_plot(results, tmp_path)
    table = pd.read_csv(tmp_path / "fig7_PowerFlow-tiny-v0.csv")
    env = gym.make("joulegym/PowerFlow-tiny-v0")
    env.reset(seed=0)
    base = env.unwrapped
    expected = simulate(base.sim.jobs, baselines.make("tiresias", f_mhz=1530.0), cluster=base.cluster)
    row = table[(table.policy == "tiresias") & (table.value == 1530.0)].iloc[0]
    assert row.avg_jct_h == expected.avg_jct_h and expected.energy_breakdown_j["prerun"] == 0.0
    pf = simulate(base.sim.jobs, "powerflow", cluster=base.cluster, eta=0.6)
    assert table[(table.policy == "powerflow") & (table.value == 0.6)].iloc[0].avg_jct_h == pf.avg_jct_h


@pytest.mark.slow
def test_evaluate_reproduce_powerflow_quick(tmp_path):
    """``evaluate.py --reproduce powerflow --quick``: Fig. 7/9 on Small100 and Fig. 10 (seed 0, every panel)."""
    from joulegym.evaluation.cli import main
    from joulegym.evaluation.powerflow import SENSITIVITY_PANELS

    assert main(["--reproduce", "powerflow", "--quick", "--out", str(tmp_path)]) == 0
    for name in ("fig7_small100.csv", "fig7_small100.png", "improvement_small100.csv", "matched_energy_small100.csv",
                 "fig10_sensitivity.csv", "fig10_improvement.csv", "fig10.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    fig7 = pd.read_csv(tmp_path / "fig7_small100.csv")
    assert {"powerflow", "powerflow-oracle", "afs", "gandiva-zeus"} <= set(fig7.policy) and not fig7.truncated.any()
    fig10 = pd.read_csv(tmp_path / "fig10_sensitivity.csv")
    cases = {(p, float(v)) for p, values in SENSITIVITY_PANELS.items() for v in values}
    assert set(zip(fig10.panel, fig10.value.astype(float))) == cases
    assert len(fig10) == 6 * len(cases) and (fig10.truncated_runs >= 0).all()
    pf = fig10[fig10.policy == "powerflow"]
    assert (pf.improvement.dropna() == 1.0).all() and pf.improvement.notna().sum() >= len(cases) - 2
