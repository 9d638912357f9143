"""Without the ``train`` extra, a suite whose zoo ships agents stops before any episode with one line naming the
zoo, the agents and the install (docs/leaderboard.md), instead of a traceback midway."""

from __future__ import annotations

import sys

import pytest

from joulegym.evaluation.cli import main


@pytest.fixture
def no_torch(monkeypatch):
    """``import torch`` raises ImportError, as on an install without the ``train`` extra."""
    monkeypatch.setitem(sys.modules, "torch", None)


@pytest.mark.parametrize("extra", [[], ["--pareto"]], ids=["suite", "pareto"])
def test_a_zoo_with_agents_without_torch_is_a_one_line_error_before_any_work(no_torch, tmp_path, capsys, extra):
    out = tmp_path / "board"
    code = main(["--suite", "etf", *(["--quick"] if not extra else extra), "--no-plots", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "error: --zoo" in err
    assert "sac (trained on tx2-fig6-random)" in err and "pip install 'joulegym[train]'" in err
    assert not out.exists()


def test_an_empty_zoo_needs_no_torch(no_torch, tmp_path):
    from joulegym.evaluation.zoo import require_agent_libraries

    require_agent_libraries([], tmp_path)  # nothing plays: nothing to load
