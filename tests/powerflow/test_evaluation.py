"""PowerFlow evaluation hooks: the Fig. 7-style summary plot and ``evaluate.py --reproduce powerflow``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

from joulegym.baselines.powerflow_simulate import simulate
from joulegym.core.policy import make
from joulegym.evaluation.hooks import hooks_for
from joulegym.evaluation.powerflow import ETAS, FREQS_MHZ, UNAWARE, ZEUS

# regression pins of the quick reproduction (measured, not paper numbers)
# re-measured with the baselines as published and monotone truth noise (AFS at f_max no longer loses up to 5 % to
# an inverted noise draw), so PowerFlow's thinnest margin, over AFS, went 1.080 -> 1.018
SMALL100_AT_MOST_PINS = {"gandiva": 2.00043971559063, "tiresias": 1.9361649477275455, "afs": 1.0183858955966327,
                         "fifo": 2.8106095846834496, "gandiva-zeus": 1.844345761900704,
                         "tiresias-zeus": 1.8517433616064294}
# JCT_AFS / JCT_PowerFlow at the Zeus energy, unscaled Gavel traces, seed 0 (re-measured, baselines as published)
FIG10_AFS_PINS = {
    ("load", 0.5): 1.0948617352991223, ("load", 0.75): 1.1298756813183577, ("load", 1.0): 1.1446902977186988,
    ("load", 1.5): 1.2167683412673307, ("load", 2.0): 1.260666780850729, ("cluster", 16.0): 1.2731983273644683,
    ("cluster", 32.0): 1.1446902977186988, ("cluster", 64.0): 0.9413385543156493,
    ("cluster", 128.0): 0.7847262906452238, ("jobsize", 1.0): 1.1446902977186988,
    ("jobsize", 2.0): 1.2448479957475276, ("jobsize", 4.0): 1.4029064351477645,
    ("jobsize", 8.0): 1.491810408762108,
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


@pytest.mark.reproduce  # 7-8 min on 2 cores since the Gandiva/Tiresias rewrite: run with --reproduce
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


@pytest.mark.slow
def test_real_trace_report_table_and_offered_load(tmp_path):
    """The public-trace report's machinery on one trace and two schedulers (the whole report is the reproduce
    test below): every job counted, the offered load that of the file (876 jobs, 42,816 A100 GPU-hours of
    isolated run time over 91.6 days on 32 GPUs = 0.61), the Markdown table written."""
    from joulegym.evaluation.powerflow import reproduce_real_traces
    from tests.reference_data import REF, ref_file

    ref_file("elasticflow", "philly_103959.csv")  # skip without the reference data
    table, written = reproduce_real_traces(tmp_path, names=("philly-103959",), runs=(("fifo", 1.0), ("afs", 1.0)),
                                           data_root=REF)  # the reference data has the joulegym.datasets layout
    assert [p.name for p in written] == ["real_traces.csv", "real_traces.md"]
    assert (table.jobs_counted == 876).all() and not table.truncated.any()
    assert table.gpu_hours_offered.iloc[0] == pytest.approx(42816.08, rel=1e-5)
    assert table.offered_load.iloc[0] == pytest.approx(0.6089, abs=1e-4)
    jct = table.set_index("policy").avg_jct_h
    assert jct["afs"] < jct["fifo"]  # elastic, shortest-remaining-first AFS beats strict FIFO by far
    text = (tmp_path / "real_traces.md").read_text()
    assert "load 0.61" in text and "| fifo | 1 |" in text and "Ordering by avg JCT: afs < fifo" in text


@pytest.mark.reproduce
def test_real_trace_report_reproduces_the_documented_orderings(tmp_path):
    """``evaluate.py --reproduce powerflow`` on the two public traces of Philly VC 103959
    (docs/families/powerflow.md §13 explains every ordering that differs from the Tiresias and Gandiva papers)."""
    from joulegym.evaluation.powerflow import REAL_TRACE_RUNS, REAL_TRACES, reproduce_real_traces
    from tests.reference_data import REF, ref_file

    for spec in REAL_TRACES.values():
        ref_file(*spec["path"].parts)
    table, _ = reproduce_real_traces(tmp_path, data_root=REF)
    assert len(table) == len(REAL_TRACES) * len(REAL_TRACE_RUNS)
    assert not table.truncated.any() and (table.jobs_counted == table.jobs_total).all()
    load = table.groupby("trace").offered_load.first()
    assert load["philly-103959"] == pytest.approx(0.609, abs=1e-3) and load["gavel-103959"] == pytest.approx(
        0.888, abs=1e-3)
    for name, part in table.groupby("trace"):
        jct = {(r.policy, r.eta): r.avg_jct_h for r in part.itertuples()}
        fifo, gandiva, tiresias, afs = (jct[p, 1.0] for p in ("fifo", "gandiva", "tiresias", "afs"))
        # as the papers: every scheduler beats strict FIFO; the elastic ones (AFS, PowerFlow) beat the
        # non-elastic ones; PowerFlow with the whole budget beats its own 0.6 budget
        assert max(gandiva, tiresias, afs, jct["powerflow", 1.0]) < fifo, name
        assert max(afs, jct["powerflow", 1.0]) < min(gandiva, tiresias), name
        assert jct["powerflow", 1.0] < jct["powerflow", 0.6], name
        assert (part.total_energy_kwh > 0).all()
