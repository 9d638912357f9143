"""The benchmark harness (issue 14) runs and writes well-formed tables and a plot (a smoke test: no timings
asserted), and rewrites only the README's marked performance section."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests import scripts

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def harness():
    return scripts.load("harness")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_quick_run_writes_tables_and_plot(harness, tmp_path):
    written = harness.main(["--quick", "--ids", "joulegym/ETF-v0", "--growth", "none", "--out", str(tmp_path)])
    with open(written["kinds_csv"]) as handle:
        rows = list(csv.DictReader(handle))
    assert {r["policy"] for r in rows} == {"random", "etf"}
    for row in rows:
        assert row["id"] == "joulegym/ETF-v0" and float(row["steps_per_s"]) > 0 and float(row["ratio"]) > 0
    with open(written["vector_csv"]) as handle:
        vector = list(csv.DictReader(handle))
    assert {r["kind"] for r in vector} == {"sync (fixed action)", "sync (sampled actions)", "batched"}
    assert all(float(r["value"]) > 0 for r in vector)
    report = written["report"].read_text()
    assert "| `joulegym/ETF-v0` | random |" in report and "## Vector envs" in report
    assert written["plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_real_trace_ids_are_skipped_with_a_note_without_their_data(harness, monkeypatch, tmp_path):
    monkeypatch.setattr(harness, "ROOT", tmp_path)  # no ../shared/reference-data beside this root
    ids = harness.real_trace_ids("powerflow")
    assert ids, "PowerFlow has real-trace scenarios"
    for env_id in ids:
        kwargs, note = harness.trace_kwargs(env_id)
        assert kwargs is None and "skipped" in note
    assert harness.trace_kwargs("joulegym/ETF-v0") == ({}, "")


def test_readme_rewrite_touches_only_the_marked_section(harness, tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"# title\n\nbefore\n{harness.README_START}\nold table\n{harness.README_END}\nafter\n")
    harness.rewrite_readme("| new | table |", readme)
    assert readme.read_text() == (f"# title\n\nbefore\n{harness.README_START}\n| new | table |\n"
                                  f"{harness.README_END}\nafter\n")
    text = (ROOT / "README.md").read_text()
    assert text.count(harness.README_START) == 1 and text.count(harness.README_END) == 1
    with pytest.raises(ValueError, match="harness"):
        harness.rewrite_readme("x", _without_markers(tmp_path))


def _without_markers(tmp_path: Path) -> Path:
    path = tmp_path / "plain.md"
    path.write_text("# no markers\n")
    return path
