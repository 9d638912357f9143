"""``evaluate.py --suite --ray``: episodes as Ray tasks give the serial run's files bit for bit, on a local Ray and
on an external head reached by its address."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ray.conftest import RAY_MISSING

pytest.importorskip("ray", reason=RAY_MISSING)

ROOT = Path(__file__).resolve().parents[2]


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _serial(base: Path, monkeypatch: pytest.MonkeyPatch, **kwargs) -> dict[str, bytes]:
    from joulegym.evaluation.suite import run_suite

    (base / "serial").mkdir()
    monkeypatch.chdir(base / "serial")  # the same relative --out, so the command line on the page is the same
    run_suite(["etf"], quick=True, out="lb", plots=False, **kwargs)
    return _files(base / "serial" / "lb")


def test_ray_suite_equals_the_serial_suite(local_ray, tmp_path, monkeypatch):
    from joulegym.evaluation.runner import evaluate
    from joulegym.evaluation.suite import run_suite
    from joulegym.integrations.parallel import RayEvaluate

    serial = _serial(tmp_path, monkeypatch)  # the packaged zoo's agents included: SB3 policies in Ray workers
    (tmp_path / "ray").mkdir()
    monkeypatch.chdir(tmp_path / "ray")
    run_suite(["etf"], quick=True, out="lb", plots=False, evaluate_fn=RayEvaluate(evaluate))
    parallel = _files(tmp_path / "ray" / "lb")
    assert "episodes.csv" in serial and "leaderboard.csv" in serial
    assert parallel.keys() == serial.keys()
    for name in serial:
        assert parallel[name] == serial[name], f"{name} differs between the serial and the Ray run"


def test_ray_evaluate_keeps_the_serial_rows_and_episode_indices(local_ray):
    from joulegym.evaluation.runner import PolicyEntry, eval_seeds, evaluate
    from joulegym.integrations.parallel import RayEvaluate

    entries = [PolicyEntry("random", "reference", "random", family="etf"),
               PolicyEntry("etf", "reference", "etf", family="etf")]
    seeds = eval_seeds(3)
    serial, serial_traces, _ = evaluate("joulegym/ETF-v0", entries, seeds)
    parallel, parallel_traces, skipped = RayEvaluate(evaluate)("joulegym/ETF-v0", entries, seeds)
    assert skipped == []
    assert parallel.to_csv(index=False) == serial.to_csv(index=False)
    assert list(parallel["episode"]) == [0, 1, 2, 0, 1, 2]
    assert parallel_traces.keys() == serial_traces.keys() == {"random", "etf"}


def test_the_same_code_path_reaches_an_external_head(tmp_path, monkeypatch):
    """A second local Ray head (``ray start --head``) stands for a cluster: ``evaluate.py --suite --ray ADDR``
    connects to it and writes the serial run's files."""
    from joulegym.integrations.parallel import local_head

    zoo = tmp_path / "empty-zoo"  # reference policies only: keeps the external run short
    zoo.mkdir()
    serial = _serial(tmp_path, monkeypatch, zoo=zoo)
    (tmp_path / "external").mkdir()
    with local_head(num_cpus=2) as address:
        done = subprocess.run([sys.executable, str(ROOT / "evaluate.py"), "--suite", "etf", "--quick", "--no-plots",
                               "--zoo", str(zoo), "--out", "lb", "--ray", address],
                              cwd=tmp_path / "external", capture_output=True, text=True, timeout=300,
                              env={**os.environ, "RAY_AUTH_MODE": "token", "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Connecting to existing Ray cluster at address: " in done.stderr
    external = _files(tmp_path / "external" / "lb")
    assert external.keys() == serial.keys()
    # the page records the command; the zoo path is the same, so every file is byte-identical
    for name in serial:
        assert external[name] == serial[name], f"{name} differs between the serial and the external-head run"
