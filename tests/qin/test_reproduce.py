"""``evaluate.py --reproduce qin`` (joulegym.evaluation.qin): a small smoke run of every table and figure; the full
reproduction runs behind ``--reproduce``."""

from __future__ import annotations

import pandas as pd
import pytest

import joulegym  # noqa: F401
from joulegym.core.family import register_family
from joulegym.evaluation import qin as evaluation
from joulegym.evaluation import qin_experiments as ex
from joulegym.evaluation.verdict import VERDICTS
from joulegym.scenarios import qin as qin_scenarios

register_family(qin_scenarios.FAMILY)


def test_table4_and_fig7_smoke():
    runs = ex.cluster_runs(mixes=("rw",), sizes=(10,), seeds=(0,))
    assert set(runs.policy) == {"qin-perf", "qin-energy", "qin-edp", ex.QIN_OTHER_RULE, "kubernetes", "paragon",
                                "mage", "drain-time", "least-loaded", "drain-time-sized", "least-loaded-profiled",
                                "drain-time-profiled"}
    assert (runs.jobs_done == 10).all()
    table = ex.table4(runs, paper=evaluation.PAPER_TABLE4)
    assert list(table.baseline) == ["kubernetes", "paragon", "mage"]
    k8s = runs[runs.policy == "kubernetes"].iloc[0]
    qin = runs[runs.policy == "qin-perf"].iloc[0]
    assert table.perf_pct[0] == pytest.approx(100 * (k8s.makespan_s - qin.makespan_s) / k8s.makespan_s)
    assert table.perf_pct_paper[0] == 9.43
    at_max = ex.rw_at_largest_m(runs).set_index("policy")
    assert at_max.loc["qin-perf", "qin_gain_pct"] == 0.0 and at_max.makespan_s.is_monotonic_increasing
    assert set(ex.gain_by_m(runs).num_jobs) == {10}


def _small_tables() -> dict[str, pd.DataFrame]:
    runs = ex.cluster_runs(mixes=("rw",), sizes=(10, 20), seeds=(0,))
    t5 = pd.DataFrame({"focus": ["perf", "energy", "energy", "edp", "edp"],
                       "case": ["qin + qin-node PL 0", "qin + qin-node PL 0", "qin + qin-node", "qin + qin-node PL 0",
                                "qin + qin-node"], "gain_pct": [10.2, 3.0, 36.0, 2.0, -3.0]})
    large = pd.DataFrame({"n_servers": 10, "decision_latency_s": 0.09,
                          "decision_mode": ["serial"] * 3 + ["overlapped"] * 3,
                          "policy": ["qin", "kubernetes", "paragon"] * 2,
                          "makespan_s": [130.0, 105.0, 120.0, 100.0, 105.0, 120.0]})
    return {"t4": ex.table4(runs, paper=evaluation.PAPER_TABLE4), "runs": runs, "rw_max": ex.rw_at_largest_m(runs),
            "gain_by_m": ex.gain_by_m(runs), "t5_gains": t5, "t10": ex.fig10b(seeds=(0,), d_values=(1, 2, 4),
                                                                             num_jobs=10),
            "t12": ex.fig12(seeds=(0,), num_jobs=10), "t14": ex.fig14(apps=("fft",)),
            "mixes": ex.node_mixes(ex.NODE_MIXES[:1]), "large_n": large}


def test_paper_vs_joulegym_table_smoke(tmp_path):
    claims = evaluation.paper_claims(_small_tables())
    by_name = {c.quantity: c for c in claims}
    # 3 baselines x 1 mix x 3 columns, Table 5's three, the RW orderings and growths (2 + 3), Fig. 12's two,
    # Fig. 10b's two, the node level's two and the scaling claim
    assert len(claims) == 9 + 3 + 5 + 2 + 2 + 2 + 2
    assert by_name["Table 5: Qin + Qin vs Kubernetes + Sniper, JCT (%)"].verdict == "reproduced"
    assert by_name["Table 5: Qin + Qin vs Kubernetes + Sniper, energy (%)"].verdict == "within tolerance"
    edp = by_name["Table 5: Qin + Qin vs Kubernetes + Sniper, EDP (%)"]
    assert edp.verdict == "deviates" and "DVFS" in edp.note  # a deviation carries its reason
    scale = "§7.4: at N = 10, M = 100 ({} decisions) Qin's makespan within 10 % of the best paper baseline"
    assert by_name[scale.format("overlapped")].verdict == "reproduced"
    assert by_name[scale.format("serial")].verdict == "deviates"  # 130 s against Kubernetes' 105 s
    path = evaluation.write_report(tmp_path / "qin_reproduction.md", claims, quick=True)
    rows = [line.split(" | ") for line in path.read_text().splitlines() if line.startswith("| ")][1:]  # less the header
    assert len(rows) == len(claims) and all(row[3] in VERDICTS for row in rows)


def test_reproduce_writes_the_results_page_and_the_verdicts(tmp_path, monkeypatch):
    """reproduce() end to end with every experiment shrunk (10 jobs, one seed): each file, the results page and the
    verdict table."""
    small = {"cluster_runs": lambda sizes, seeds: _cluster_runs(mixes=("rw",), sizes=(10, 20), seeds=(0,)),
             "fig10b": lambda seeds, d_values: _fig10b(seeds=(0,), d_values=(1, 2), num_jobs=10),
             "fig12": lambda seeds: _fig12(seeds=(0,), num_jobs=10),
             "table5": lambda seeds, num_jobs: _table5(seeds=(0,), num_jobs=4, control_period_ms=100.0),
             "table5_power_terms": lambda seeds, num_jobs: _power(seeds=(0,), num_jobs=4, control_period_ms=100.0),
             "fig14": lambda apps, seeds: _fig14(apps=("fft",)),
             "node_mixes": lambda mixes, seeds: _mixes(ex.NODE_MIXES[:1]),
             "large_n": lambda n, seeds: _large_n(10, seeds=seeds, policies=("qin", "kubernetes", "drain-time")),
             "leaderboard": lambda scenarios, seeds: _board(("tiny",), (10_000,), ("qin", "drain-time")),
             "rules_gap": lambda seeds: _gap((10_000, 10_001), num_jobs=10, cases=ex.RULE_GAP_CASES[:2])}
    for name, function in small.items():
        monkeypatch.setattr(ex, name, function)
    written = evaluation.reproduce(tmp_path, quick=True)
    assert {"table4.csv", "fig7.png", "fig10b.png", "fig12.csv", "table5.csv", "fig14.png", "large_n.csv",
            "leaderboard.csv", "rules_gap.csv", "qin_results.md", "qin_reproduction.md"} <= {p.name for p in written}
    results = (tmp_path / "qin_results.md").read_text()
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ")[1].strip() for line in results.splitlines()
            if line.startswith("| ")}
    assert "the mean over the seeds and M = 10, 20 of" in results  # the run's M values, not the full run's
    assert rows["drain-time-profiled"] == "yes" and rows["drain-time-sized"] == "" and rows["qin-perf"] == ""
    for section in ("## Cluster level at the largest M", "## Table 4", "## Fig 7", "## Fig 10b", "## Fig 12",
                    "## Table 5", "## Fig 14", "## Several apps per server", "## Scale", "## Leaderboard",
                    "## What the simple rules read"):
        assert section in results, section
    text = (tmp_path / "qin_reproduction.md").read_text()
    rows = [line.split(" | ") for line in text.split("## Paper vs joulegym", 1)[1].splitlines()
            if line.startswith("| ")][1:]
    assert len(rows) == 9 + 3 + 5 + 2 + 2 + 2 + 2 and all(row[3] in VERDICTS for row in rows)


_cluster_runs, _fig10b, _fig12, _table5, _power = ex.cluster_runs, ex.fig10b, ex.fig12, ex.table5, ex.table5_power_terms
_fig14, _mixes, _large_n, _board, _gap = ex.fig14, ex.node_mixes, ex.large_n, ex.leaderboard, ex.rules_gap


def test_privileged_rows_are_the_profiled_rules():
    """A table row's privileged mark follows the registry: the -profiled rules read per-job sizes, the same rules on
    app means and every paper scheduler do not."""
    assert ex.privileged("drain-time-profiled") and ex.privileged("least-loaded-profiled")
    assert not any(ex.privileged(label) for label in ("drain-time-sized", "least-loaded", "drain-time", "qin",
                                                      ex.QIN_OTHER_RULE, *ex.PAPER_BASELINES))


def test_small_figures_smoke():
    d_table = ex.fig10b(seeds=(0,), d_values=(1, 2), num_jobs=10)
    assert list(d_table.d) == [1, 2]
    dac = ex.fig12(seeds=(0,), num_jobs=10)
    assert list(dac.panel) == ["12a", "12b"]
    node = ex.fig14(apps=("fft",))
    assert set(node.policy) == {case[0] for case in ex.NODE_CASES}
    assert node.energy_j_norm.between(0, 1).all()
    pl0 = node[node.policy == "qin-node PL 0"].iloc[0]
    assert pl0.runtime_s_vs_sniper == pytest.approx(1.0, abs=1e-12)  # one thread per core: Sniper's mapping


def test_rules_gap_pairs_each_row_with_drain_time():
    gap = ex.rules_gap((10_000, 10_001), num_jobs=30, cases=(("drain-time", "drain-time", {}),
                                                             ("qin, smt_yield 1", "qin", {"smt_yield": 1.0})))
    assert gap.minus_drain_time_s[0] == 0.0 and gap.drain_time_faster[0] == 0  # drain-time against itself
    assert list(gap.smt_yield) == [1.3, 1.0] and (gap.seeds == 2).all()
    assert gap.drain_time_s[1] != gap.drain_time_s[0]  # paired with drain-time at its own smt_yield


@pytest.mark.reproduce
def test_simple_rules_gap_mechanisms():
    """docs §6.1, 40 seeds: knowing the job sizes is worth most of the privileged drain rule's lead; the size-blind
    drain-time leads Qin with the i7-4790's Hyper-Threading (which Qin's per-core H cannot see) and not without it."""
    gap = ex.rules_gap().set_index("case")
    qin, qin_smt1 = gap.loc["qin"], gap.loc["qin, smt_yield 1"]
    assert qin.minus_drain_time_s - qin.ci95_s > 0  # drain-time ahead of Qin, paired 95 % CI above 0
    assert abs(qin_smt1.minus_drain_time_s) < qin_smt1.ci95_s  # no difference on physical cores
    sized = gap.loc["drain-time-profiled (privileged)"]
    assert sized.minus_drain_time_s + sized.ci95_s < 0  # sizes help ...
    blind_sizes = gap.loc["drain-time-sized, app-mean sizes"]
    assert blind_sizes.minus_drain_time_s > sized.minus_drain_time_s  # ... and only the per-job ones much


@pytest.mark.reproduce
def test_full_reproduction(tmp_path):
    written = evaluation.reproduce(tmp_path, quick=False)
    names = {p.name for p in written}
    assert {"table4.csv", "fig7.png", "fig10b.png", "fig12.csv", "table5.csv", "fig14.png", "large_n.csv",
            "qin_results.md", "qin_reproduction.md"} <= names
    assert len(pd.read_csv(tmp_path / "table4.csv")) == 9
