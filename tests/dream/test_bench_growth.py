"""The DREAM growth curve that ``benchmarks/harness.py`` loads from ``benchmarks/bench_dream.py``: the
real hook registers and answers with one positive CPU time per episode length (no timings asserted)."""

from __future__ import annotations

from dataclasses import replace

from tests import scripts


def test_bench_dream_growth_curve_loads_and_measures(monkeypatch):
    harness = scripts.load("harness")
    monkeypatch.setattr(harness, "GROWTH", dict(harness.GROWTH))
    notes: list[str] = []
    assert harness.load_growth_modules(notes, names=("bench_dream",)) == ["dream-horizon"]
    assert notes == []
    rows = harness.growth_rows(["dream-horizon"], replace(harness.Settings(), quick=True))
    bench = scripts.load("bench_dream")
    assert [r["x"] for r in rows] == list(bench.GROWTH_QUICK_HORIZONS_S)
    assert all(r["cost"] > 0 for r in rows)
    # a longer episode schedules more layers (what the curve's CPU time grows with)
    dispatches = [row["dispatches"] for row in bench.episode_growth((0.25, 0.5))]
    assert dispatches[1] > dispatches[0] > 0
