"""PowerFlow evaluation hooks: the Fig. 7-style summary plot and ``evaluate.py --reproduce powerflow``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

from joulegym.core.policy import make
from joulegym.envs.powerflow import simulate
from joulegym.evaluation.hooks import hooks_for
from joulegym.evaluation.powerflow import ETAS, FREQS_MHZ, UNAWARE, ZEUS

# regression pins of the quick reproduction (measured, not paper numbers)
SMALL100_AT_MOST_PINS = {"gandiva": 2.2426447639779146, "tiresias": 1.9963435763032618, "afs": 1.08002393144801,
                         "fifo": 2.805665525339881, "gandiva-zeus": 1.9763089009573185,
                         "tiresias-zeus": 1.859788560252415}
FIG10_AFS_PINS = {  # JCT_AFS / JCT_PowerFlow at the Zeus energy, unscaled Gavel traces, seed 0
    ("load", 0.5): 1.0535236758322473, ("load", 0.75): 1.1000755722938498, ("load", 1.0): 1.124712384311599,
    ("load", 1.5): 1.1927339006212778, ("load", 2.0): 1.2053245806849837, ("cluster", 16.0): 1.2620787938763527,
    ("cluster", 32.0): 1.124712384311599, ("cluster", 64.0): 0.9357247776466369,
    ("cluster", 128.0): 0.7645066856908258, ("jobsize", 1.0): 1.124712384311599,
    ("jobsize", 2.0): 1.2637165780782182, ("jobsize", 4.0): 1.3486486973081782,
    ("jobsize", 8.0): 1.4269983587677983,
}
FIG10_TRUNCATED = {("jobsize", 8.0): 1}  # PowerFlow at eta 0.1 on JobSize-8 hits the horizon (seed 0)


def test_hooks_registered_and_summary_plot_writes(tmp_path):
    hooks = hooks_for("powerflow")
    assert "avg_jct_h" in hooks.headline_metrics and "total_energy_kwh" in hooks.headline_metrics
    results = pd.DataFrame([{"env_id": "joulegym/PowerFlow-tiny-v0", "policy": "powerflow-strict", "seed": 0,
                             "episode": 0, "return": -0.5, "length": 30, "avg_jct_h": 0.5, "total_energy_kwh": 3.0}])
    paths = hooks.summary_plot(results, tmp_path)
    assert {p.name for p in paths} == {"fig7_PowerFlow-tiny-v0.png", "fig7_PowerFlow-tiny-v0.csv"}
    table = pd.read_csv(tmp_path / "fig7_PowerFlow-tiny-v0.csv")
    # PowerFlow over eta, every energy-unaware baseline over the frequencies, the Zeus combinations once
    counts = table.policy.value_counts().to_dict()
    assert counts == {"powerflow": len(ETAS), **{p: len(FREQS_MHZ) for p in UNAWARE}, **{p: 1 for p in ZEUS}}
    assert (table.avg_jct_h > 0).all() and (table.total_energy_kwh > 0).all() and not table.truncated.any()
    pf = table[table.policy == "powerflow"].sort_values("value")
    assert pf.value.tolist() == list(ETAS)
    assert pf.total_energy_kwh.iloc[-1] > pf.total_energy_kwh.iloc[0]  # a larger budget spends more energy
    assert pf.avg_jct_h.iloc[-1] < pf.avg_jct_h.iloc[0]  # ... and finishes jobs sooner


def test_summary_sweep_keeps_each_policys_life_cycle(tmp_path):
    """Only PowerFlow pre-runs and profiles (§6.1): the plotted baseline points are plain ``simulate`` runs."""
    results = pd.DataFrame([{"env_id": "joulegym/PowerFlow-tiny-v0", "policy": "afs", "seed": 0, "episode": 0,
                             "return": -0.5, "length": 30}])
    hooks_for("powerflow").summary_plot(results, tmp_path)
    table = pd.read_csv(tmp_path / "fig7_PowerFlow-tiny-v0.csv")
    env = gym.make("joulegym/PowerFlow-tiny-v0")
    env.reset(seed=0)
    base = env.unwrapped
    expected = simulate(base.sim.jobs, make("tiresias", family="powerflow", f_mhz=1530.0), cluster=base.cluster)
    row = table[(table.policy == "tiresias") & (table.value == 1530.0)].iloc[0]
    assert row.avg_jct_h == expected.avg_jct_h and expected.energy_breakdown_j["prerun"] == 0.0
    pf = simulate(base.sim.jobs, "powerflow", cluster=base.cluster, eta=0.6)
    assert table[(table.policy == "powerflow") & (table.value == 0.6)].iloc[0].avg_jct_h == pf.avg_jct_h
    assert pf.energy_breakdown_j["prerun"] > 0


def test_summary_sweep_applies_the_users_run_settings(tmp_path):
    """Settings the user passed to the env (here no reconfiguration overhead) reach every point of the sweep."""
    results = pd.DataFrame([{"env_id": "joulegym/PowerFlow-tiny-v0", "policy": "afs", "seed": 0, "episode": 0,
                             "return": -0.5, "length": 30}])
    results.attrs["env_kwargs"] = {"overhead": "none"}
    hooks_for("powerflow").summary_plot(results, tmp_path)
    table = pd.read_csv(tmp_path / "fig7_PowerFlow-tiny-v0.csv")
    env = gym.make("joulegym/PowerFlow-tiny-v0")
    env.reset(seed=0)
    base = env.unwrapped
    for overhead in ("none", "elasticflow"):
        r = simulate(base.sim.jobs, make("afs", family="powerflow", f_mhz=1530.0), cluster=base.cluster,
                     overhead=overhead)
        row = table[(table.policy == "afs") & (table.value == 1530.0)].iloc[0]
        assert (row.avg_jct_h == r.avg_jct_h) == (overhead == "none")


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
    at_most = pd.read_csv(tmp_path / "improvement_small100.csv").set_index("baseline").max_improvement
    assert (at_most > 1.0).all() and at_most.idxmin() == "afs"  # PowerFlow beats all; AFS is the closest
    assert at_most.to_dict() == pytest.approx(SMALL100_AT_MOST_PINS, rel=1e-6)
    fig10 = pd.read_csv(tmp_path / "fig10_sensitivity.csv")
    cases = {(p, float(v)) for p, values in SENSITIVITY_PANELS.items() for v in values}
    assert set(zip(fig10.panel, fig10.value.astype(float))) == cases
    assert len(fig10) == 6 * len(cases)  # PowerFlow, Gandiva, Tiresias, AFS and the two Zeus combinations
    truncated = fig10.groupby(["panel", "value"]).truncated_runs.first()
    assert {case: n for case, n in truncated.items() if n} == FIG10_TRUNCATED
    for _, case in fig10.groupby(["panel", "value"]):
        pf = case[case.policy == "powerflow"].iloc[0]
        zeus = case[case.policy.isin(ZEUS)]
        assert pf.energy_kwh == pf.target_energy_kwh == pytest.approx(zeus.energy_kwh.mean())
        for _, row in case[~case.policy.isin([*ZEUS, "powerflow"])].iterrows():
            assert row.improvement == pytest.approx(row.avg_jct_h / pf.avg_jct_h, rel=1e-12, nan_ok=True)
    afs = fig10[fig10.policy == "afs"].set_index(["panel", "value"]).improvement
    assert {(p, float(v)): x for (p, v), x in afs.items()} == pytest.approx(FIG10_AFS_PINS, rel=1e-6, nan_ok=True)
    assert np.isfinite(afs).sum() >= len(cases) - 2
