"""Data resolution (docs/environments.md, "Public data"): the package finds the public traces through
:mod:`joulegym.datasets` (the folder ``data fetch`` fills, or ``$JOULEGYM_DATA``), never by reading
``../shared/reference-data`` itself. The tests point the data folder at the reference data (same layout) or at an
empty folder; no network."""

from __future__ import annotations

from pathlib import Path

import pytest

from joulegym import datasets
from joulegym.evaluation import powerflow as pf_eval
from tests import scripts
from tests.reference_data import REF, ref_file, use_reference_data

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def harness():
    return scripts.load("harness")


def test_package_code_never_reads_the_shared_reference_folder():
    """The old code built ``<checkout>/../shared/reference-data`` paths in the package and the harness."""
    assert not hasattr(pf_eval, "REFERENCE_DATA")
    for path in [*sorted((ROOT / "joulegym").rglob("*.py")), ROOT / "benchmarks" / "harness.py"]:
        text = path.read_text()
        assert '"shared" / "reference-data"' not in text and '"shared", "reference-data"' not in text, path


def test_real_trace_entries_name_registered_datasets_at_their_layout_paths():
    for name, spec in pf_eval.REAL_TRACES.items():
        ds = datasets.dataset(spec["dataset"])
        assert Path(ds.relpath(ds.files[0])) == spec["path"], name
        for needed in spec["needs"]:
            datasets.dataset(needed)


def test_missing_real_trace_data_names_the_fetch_command(tmp_path, monkeypatch):
    monkeypatch.setenv(datasets.DATA_DIR_ENV, str(tmp_path))  # an empty data folder
    assert pf_eval.missing_real_trace_datasets() == ["philly-103959", "gavel-103959", "gavel-throughputs"]
    with pytest.raises(datasets.DataError, match="python -m joulegym data fetch philly-103959"):
        pf_eval.real_trace_path("philly-103959")
    with pytest.raises(datasets.DataError, match="data fetch gavel-throughputs"):  # the trace alone is not enough
        pf_eval.real_trace_path("gavel-103959", tmp_path)


def test_real_trace_files_resolve_from_the_data_folder(monkeypatch):
    """A user who ran ``data fetch`` (here: ``$JOULEGYM_DATA`` = the reference data, same layout) gets the
    public-trace report's inputs: the Philly trace with its 876 jobs."""
    ref_file("elasticflow", "philly_103959.csv")
    use_reference_data(monkeypatch)
    assert pf_eval.missing_real_trace_datasets() == []
    assert pf_eval.real_trace_path("philly-103959") == REF / "elasticflow" / "philly_103959.csv"
    jobs, cluster, trace = pf_eval.real_trace_jobs("philly-103959")
    assert len(trace.submit_time_s) == 876 and len(jobs) == 876 and cluster.num_gpus == 32


def test_harness_real_trace_ids_resolve_through_the_datasets(harness, monkeypatch):
    ref_file("elasticflow", "philly_103959.csv")
    use_reference_data(monkeypatch)
    ids = harness.real_trace_ids("powerflow")
    assert "joulegym/PowerFlow-philly-103959-v0" in ids
    kwargs, note = harness.trace_kwargs("joulegym/PowerFlow-philly-103959-v0")
    assert note == "" and Path(kwargs["trace_path"]) == REF / "elasticflow" / "philly_103959.csv"


def test_harness_skips_a_real_trace_id_naming_the_fetch_command(harness, monkeypatch, tmp_path):
    monkeypatch.setenv(datasets.DATA_DIR_ENV, str(tmp_path))
    kwargs, note = harness.trace_kwargs("joulegym/PowerFlow-philly-24h-v0")
    assert kwargs is None and "python -m joulegym data fetch philly-24h" in note
