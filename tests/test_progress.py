"""Long work reports progress (plain lines when not on a terminal, at most one per interval plus the first, the one
reaching the total and a final one) and every reproduce report puts the paper's value beside ours with a verdict."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from joulegym.core.progress import ProgressLog, progress_mode, track
from joulegym.evaluation.verdict import claim, comparison_markdown, qualitative, verdict

ROOT = Path(__file__).resolve().parents[1]


def test_plain_lines_first_last_and_throttled():
    stream = io.StringIO()  # not a terminal: plain lines, never a bar
    with ProgressLog(100, "work", stream=stream, interval_s=3600.0) as progress:
        for k in range(100):
            progress.update(1, f"item {k}")
    lines = stream.getvalue().splitlines()
    # started, the first update, the last one; the 98 in between are throttled by the interval
    expected = ["[work] started", "[work] 1/100 item 0", "[work] 100/100 item 99"]
    assert [line.split(" (")[0] for line in lines] == expected


def test_updates_past_the_total_do_not_flood_a_piped_log():
    """Updates after the total is reached (SB3 finishes its rollout past the requested steps; a resumed run) write
    no line each: only the interval's, and one final line on close."""
    stream = io.StringIO()
    with ProgressLog(10, "work", stream=stream, interval_s=3600.0) as progress:
        for k in range(10):
            progress.update(1, f"item {k}")
        for _ in range(300):
            progress.update(0, "at the total")
        for k in range(5):
            progress.update(1, f"extra {k}")
    lines = [line.split(" (")[0] for line in stream.getvalue().splitlines()]
    assert lines == ["[work] started", "[work] 1/10 item 0", "[work] 10/10 item 9", "[work] 15/10 extra 4"]


def test_no_final_line_when_the_last_update_was_shown():
    stream = io.StringIO()
    with ProgressLog(3, "w", stream=stream, interval_s=3600.0) as progress:
        progress.update(3, "all")
        progress.update(0, "same count")
    assert [line.split(" (")[0] for line in stream.getvalue().splitlines()] == ["[w] started", "[w] 3/3 all"]


def test_plain_lines_every_update_with_zero_interval():
    stream = io.StringIO()
    assert list(track(range(4), "t", stream=stream, interval_s=0.0, label=str)) == [0, 1, 2, 3]
    assert [line.split(" (")[0] for line in stream.getvalue().splitlines()[1:]] == \
        ["[t] 1/4 0", "[t] 2/4 1", "[t] 3/4 2", "[t] 4/4 3"]


def test_progress_mode_off_and_bad_value(monkeypatch):
    monkeypatch.setenv("JOULEGYM_PROGRESS", "off")
    stream = io.StringIO()
    list(track(range(3), "quiet", stream=stream))
    assert stream.getvalue() == ""
    monkeypatch.setenv("JOULEGYM_PROGRESS", "loud")
    with pytest.raises(ValueError, match="JOULEGYM_PROGRESS must be one of"):
        progress_mode()


def test_verdicts():
    assert verdict(0.211, 0.21, tol=0.04, exact_tol=0.005) == "reproduced"
    assert verdict(0.25, 0.21, tol=0.04, exact_tol=0.005) == "within tolerance"
    assert verdict(0.30, 0.21, tol=0.04) == "deviates"
    assert verdict(2.0, 3.39, tol=0.25, relative=True) == "deviates"
    assert verdict(float("nan"), 1.0, tol=1.0) == "deviates"
    c = claim("x", 3.39, 2.0, tol=0.25, relative=True, why="synthetic trace")
    assert c.verdict == "deviates" and "synthetic trace" in c.note
    table = comparison_markdown([c, qualitative("order", "a > b", "a > b", True)])
    assert "| quantity | paper | joulegym | verdict | note |" in table and "| reproduced |" in table


def test_reproduce_etf_piped_prints_progress_and_verdicts(tmp_path):
    """`evaluate.py --reproduce etf --quick` with stdout/stderr piped (not a TTY): plain progress lines, and the
    report has the paper-vs-ours table with verdicts (a quick run: ~2 s)."""
    env = {k: v for k, v in os.environ.items() if k != "JOULEGYM_PROGRESS"}
    done = subprocess.run([sys.executable, str(ROOT / "evaluate.py"), "--reproduce", "etf", "--quick", "--out",
                           str(tmp_path / "etf")], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "[reproduce etf] started" in done.stderr and "[reproduce etf] 5/5 fig10" in done.stderr
    assert "reproduce etf: started" in done.stderr and "reproduce etf: done in" in done.stderr  # the CLI's heartbeat
    report = (tmp_path / "etf" / "reproduce.md").read_text()
    assert "| quantity | paper | joulegym | verdict | note |" in report
    assert "| Fig. 5 F_S(ETF, phi 0.7) | 0.42 | 0.392 | within tolerance |" in report
    assert "| Fig. 10 A2/A1 throughput under ETF (phi 0.7) | 1.3 | 1.29 | reproduced |" in report


def test_reproduce_emrf_report_has_verdicts(tmp_path):
    from joulegym.evaluation.emrf import reproduce

    reproduce(tmp_path, quick=True)
    report = (tmp_path / "emrf_reproduce.md").read_text()
    assert "| Fig. 4 Θ(DRF) / Θ(WFQ) on M1 | 2.856 | 2.856 | reproduced |" in report
    assert "| Fig. 8 Θ at n = 5, EMRF-0.1 (GFLOPS) | 320.7 | 320.7 | reproduced |" in report


def test_powerflow_claims_verdicts():
    import pandas as pd

    from joulegym.evaluation.powerflow import PAPER_AT_MOST, paper_claims

    gains = pd.DataFrame({"baseline": list(PAPER_AT_MOST), "max_improvement": [2.0, 1.84, 1.94, 1.85, 1.02]})
    fig10 = pd.DataFrame({"panel": ["cluster", "cluster"], "value": [16, 32], "policy": ["afs", "afs"],
                          "improvement": [1.1, 1.0]})
    claims = {c.quantity: c for c in paper_claims(gains, fig10)}
    assert claims['Fig. 7 "at most" over gandiva'].verdict == "deviates"
    assert claims['Fig. 7 "at most" over tiresias'].verdict == "within tolerance"  # 1.94 vs 1.73: +12 %
    assert claims["Fig. 7: PowerFlow below every baseline curve"].verdict == "reproduced"
    assert claims["Fig. 7: ordering of the factors"].verdict == "deviates"
    assert claims["Fig. 10b: larger gain over AFS on a smaller cluster"].verdict == "reproduced"


def test_sweep_reports_each_run(capsys):
    from joulegym.envs.powerflow import ClusterSpec
    from joulegym.evaluation.powerflow import sweep
    from joulegym.workloads import dl_jobs

    trace = dl_jobs.gavel_trace(8, seed=0, mean_interarrival_s=60.0, duration_scale=0.01, max_gpus=8)
    jobs = dl_jobs.to_powerflow_jobs(trace, seed=0)
    table = sweep(jobs, ClusterSpec(1, 8), etas=(0.5, 1.0), freqs=(1530.0,), policies=("fifo",),
                  progress="pf sweep")
    err = capsys.readouterr().err
    assert len(table) == 3 and "[pf sweep] started (3 it)" in err and "[pf sweep] 3/3 fifo 1530" in err


def test_train_piped_logs_progress_and_writes_learning_curve(tmp_path, capsys):
    """A tiny PPO run on a randomised ETF scenario: plain progress lines (stderr is captured, not a terminal) and
    ``learning_curve.png`` in the run directory."""
    from joulegym.training import main as train_main

    run = tmp_path / "run"
    assert train_main(["--env", "joulegym/ETF-tx2-fig6-random-v0", "--timesteps", "256", "--seed", "0",
                       "--out", str(run), "--no-tensorboard"]) == 0
    err = capsys.readouterr().err
    assert "[train run] started (256 step)" in err and "[train run] 256/256" in err
    # PPO collects its whole rollout (n_steps > 256) before it stops: those steps past the total write no line each
    assert len([line for line in err.splitlines() if line.startswith("[train run]")]) <= 4, err[-2000:]
    assert (run / "learning_curve.png").stat().st_size > 5_000


def test_heartbeat_lines_while_work_runs():
    import time

    from joulegym.core.progress import heartbeat

    stream = io.StringIO()
    with heartbeat("reproduce x", interval_s=0.05, stream=stream):
        time.sleep(0.3)
    text = stream.getvalue()
    assert "reproduce x: started" in text and "reproduce x: still running" in text and "reproduce x: done in" in text
    with pytest.raises(ValueError, match="interval_s must be > 0"):
        heartbeat("x", interval_s=0)
