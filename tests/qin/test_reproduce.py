"""``evaluate.py --reproduce qin`` (joulegym.evaluation.qin): a small smoke run of every table and figure; the full
reproduction runs behind ``--reproduce``."""

from __future__ import annotations

import pandas as pd
import pytest

import joulegym  # noqa: F401
from joulegym.core.family import register_family
from joulegym.evaluation import qin as evaluation
from joulegym.evaluation.verdict import VERDICTS
from joulegym.scenarios import qin as qin_scenarios

register_family(qin_scenarios.FAMILY)


def test_table4_and_fig7_smoke(tmp_path):
    runs = evaluation.cluster_runs(mixes=("rw",), sizes=(10,), seeds=(0,))
    assert set(runs.policy) == {"qin-perf", "qin-energy", "qin-edp", "kubernetes", "paragon", "mage"}
    assert (runs.jobs_done == 10).all()
    table = evaluation.table4(runs)
    assert list(table.baseline) == ["kubernetes", "paragon", "mage"]
    k8s = runs[runs.policy == "kubernetes"].iloc[0]
    qin = runs[runs.policy == "qin-perf"].iloc[0]
    assert table.perf_pct[0] == pytest.approx(100 * (k8s.makespan_s - qin.makespan_s) / k8s.makespan_s)
    assert table.perf_pct_paper[0] == 9.43
    curve, _ = evaluation.fig7(runs)
    assert set(curve.num_jobs) == {10}


def test_paper_vs_joulegym_table_smoke(tmp_path):
    runs = evaluation.cluster_runs(mixes=("rw",), sizes=(10, 20), seeds=(0,))
    t10, _ = evaluation.fig10b(seeds=(0,), d_values=(1, 2, 4), num_jobs=10)
    t12 = evaluation.fig12(seeds=(0,), num_jobs=10)
    t5 = pd.DataFrame({"focus": ["perf", "energy", "edp"], "improvement_pct": [10.2, 36.0, -3.0]})
    claims = evaluation.paper_claims(evaluation.table4(runs), t5, t12, t10, runs)
    # 3 baselines x 1 mix x 3 columns, Table 5's three, Fig. 12's two, Fig. 10b and the growth with M
    assert len(claims) == 9 + 3 + 2 + 2
    by_name = {c.quantity: c for c in claims}
    assert by_name["Table 5: Qin + Qin vs Kubernetes + Sniper, JCT (%)"].verdict == "reproduced"
    assert by_name["Table 5: Qin + Qin vs Kubernetes + Sniper, energy (%)"].verdict == "within tolerance"
    edp = by_name["Table 5: Qin + Qin vs Kubernetes + Sniper, EDP (%)"]
    assert edp.verdict == "deviates" and "DVFS" in edp.note  # a deviation carries its reason
    path = evaluation.write_report(tmp_path / "qin_reproduction.md", claims, quick=True)
    rows = [line.split(" | ") for line in path.read_text().splitlines() if line.startswith("| ")][1:]  # less the header
    assert len(rows) == len(claims) and all(row[3] in VERDICTS for row in rows)


def test_reproduce_writes_the_verdict_report(tmp_path, monkeypatch):
    """reproduce() end to end with every stage shrunk to 10 jobs, one seed: each file and the verdict table."""
    for name, small in {"cluster_runs": lambda sizes, seeds: _cluster_runs(mixes=("rw",), sizes=(10, 20), seeds=(0,)),
                        "fig10b": lambda seeds, d_values: _fig10b(seeds=(0,), d_values=(1, 2), num_jobs=10),
                        "fig12": lambda seeds: _fig12(seeds=(0,), num_jobs=10),
                        # Table 5's hierarchical episodes take seconds even at 10 jobs: a hand-made table here
                        "table5": lambda seeds, num_jobs: pd.DataFrame(
                            {"focus": ["perf", "energy", "edp"], "improvement_pct": [1.0, 2.0, 3.0],
                             "paper_pct": [10.2, 38.65, 41.98]}),
                        "fig14": lambda apps, seeds: _fig14(apps=("fft",))}.items():
        monkeypatch.setattr(evaluation, name, small)
    written = evaluation.reproduce(tmp_path, quick=True)
    assert {"table4.md", "fig7.png", "fig10b.png", "fig12.csv", "table5.md", "fig14.png",
            "qin_reproduction.md"} <= {p.name for p in written}
    text = (tmp_path / "qin_reproduction.md").read_text()
    rows = [line.split(" | ") for line in text.split("## Paper vs joulegym", 1)[1].splitlines()
            if line.startswith("| ")][1:]
    assert len(rows) == 9 + 3 + 2 + 2 and all(row[3] in VERDICTS for row in rows)


_cluster_runs, _fig10b, _fig12 = evaluation.cluster_runs, evaluation.fig10b, evaluation.fig12
_fig14 = evaluation.fig14


def test_small_figures_smoke():
    d_table, _ = evaluation.fig10b(seeds=(0,), d_values=(1, 2), num_jobs=10)
    assert list(d_table.d) == [1, 2]
    dac = evaluation.fig12(seeds=(0,), num_jobs=10)
    assert list(dac.panel) == ["12a", "12b"]
    node, _ = evaluation.fig14(apps=("fft",))
    assert set(node.policy) == {"qin-node-energy", "qin-node-edp", "sniper-pinned"}
    assert node.energy_j_norm.between(0, 1).all()


@pytest.mark.reproduce
def test_full_reproduction(tmp_path):
    written = evaluation.reproduce(tmp_path, quick=False)
    names = {p.name for p in written}
    assert {"table4.csv", "table4.md", "fig7.png", "fig10b.png", "fig12.csv", "table5.md", "fig14.png"} <= names
    table = pd.read_csv(tmp_path / "table4.csv")
    assert len(table) == 9
