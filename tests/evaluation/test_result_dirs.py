"""Result directories (docs/robustness.md): a run writes into a new or empty directory or one an earlier joulegym
run wrote (its ``.joulegym-run.json``), never deletes a file it did not write, and an interrupt leaves the
previous complete set or the new one."""

from __future__ import annotations

import json
import os

import pytest

from joulegym.core import io
from joulegym.core.io import MARKER, ResultDir, prepare_run_dir, read_marker, write_atomic
from joulegym.evaluation.cli import main

ETF = ["--env", "joulegym/ETF-v0", "--policies", "etf", "--seeds", "1", "--no-plots"]


def _user_folder(tmp_path):
    folder = tmp_path / "D"
    (folder / "keep").mkdir(parents=True)
    (folder / "precious.txt").write_text("x")
    return folder


@pytest.mark.parametrize("mode", [ETF, ["--reproduce", "etf", "--quick"], ["--suite", "etf", "--quick"]])
def test_a_folder_of_the_users_is_refused_and_kept(tmp_path, capsys, mode):
    folder = _user_folder(tmp_path)
    assert main([*mode, "--out", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err and "did not write (keep, precious.txt)" in err, err
    assert "choose a new or empty directory" in err
    assert sorted(p.name for p in folder.iterdir()) == ["keep", "precious.txt"]
    assert (folder / "precious.txt").read_text() == "x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["D"]  # no staging directory left


def test_an_earlier_run_is_replaced_and_marked(tmp_path):
    out = tmp_path / "ev"
    assert main([*ETF, "--out", str(out)]) == 0
    marker = read_marker(out)
    assert marker["kind"] == "results" and set(marker["entries"]) == {"episodes.csv", "leaderboard.md", "summary.csv"}
    assert set(marker["files"]) == set(marker["entries"])
    before = (out / "episodes.csv").read_bytes()
    assert main([*ETF, "--out", str(out)]) == 0
    assert (out / "episodes.csv").read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["ev"]
    (out / "notes.txt").write_text("mine")  # the user's file beside a run: the next run refuses, deletes nothing
    assert main([*ETF, "--out", str(out)]) == 2
    assert (out / "notes.txt").read_text() == "mine" and (out / "episodes.csv").is_file()


def test_an_empty_folder_is_used(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    assert main([*ETF, "--out", str(out)]) == 0 and (out / "leaderboard.md").is_file()


def _run_once(out, name: str) -> None:
    with ResultDir(out) as tmp:
        write_atomic(tmp / name, name)
        (tmp / "plots").mkdir()
        write_atomic(tmp / "plots" / "p.png", name)


def test_an_interrupt_before_the_swap_leaves_the_old_set_and_no_hidden_copy(tmp_path):
    out = tmp_path / "r"
    _run_once(out, "old.csv")
    with pytest.raises(KeyboardInterrupt), ResultDir(out) as tmp:
        write_atomic(tmp / "new.csv", "new")
        raise KeyboardInterrupt
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "old.csv", "plots"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def test_an_interrupt_after_the_swap_leaves_the_new_set_and_the_next_run_cleans_up(tmp_path, monkeypatch):
    out = tmp_path / "r"
    _run_once(out, "old.csv")

    def interrupted(folder, marker):  # the swap happened, the clean-up of the previous set did not
        raise KeyboardInterrupt

    monkeypatch.setattr(io, "remove_owned", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _run_once(out, "new.csv")
    monkeypatch.undo()
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "new.csv", "plots"]  # the new complete set
    (stale,) = [p for p in tmp_path.iterdir() if p.name != "r"]
    os.rename(stale, stale.with_name(stale.name.rpartition("staging")[0] + "staging999999999"))  # a dead process's
    _run_once(out, "third.csv")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]  # the stale copy, joulegym's own, is gone


def test_the_swap_falls_back_to_two_renames(tmp_path, monkeypatch):
    out = tmp_path / "r"
    _run_once(out, "old.csv")
    monkeypatch.setattr(io, "_exchange", lambda a, b: False)
    _run_once(out, "new.csv")
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "new.csv", "plots"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]


def test_a_marker_cannot_name_paths_outside_its_folder(tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    (tmp_path / "victim.txt").write_text("x")
    (out / MARKER).write_text(json.dumps({"format": 1, "kind": "results", "entries": ["../victim.txt"]}))
    assert read_marker(out) is None
    (out / MARKER).write_text(json.dumps({"format": 1, "kind": "run", "entries": []}))
    with pytest.raises(ValueError, match="holds a joulegym run directory"):
        ResultDir(out)  # evaluate.py never replaces a train.py run
    assert (tmp_path / "victim.txt").exists()


def test_train_overwrite_removes_only_what_its_marker_lists(tmp_path):
    run = prepare_run_dir(tmp_path / "run", resume=False, overwrite=False)
    for name in ("config.json", "model.zip"):
        (run / name).write_text("run")
    (run / "evaluation").mkdir()
    (run / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="is not empty"):
        prepare_run_dir(run, resume=False, overwrite=False)
    prepare_run_dir(run, resume=False, overwrite=True)
    assert sorted(p.name for p in run.iterdir()) == [MARKER, "evaluation", "notes.txt"]
    user = _user_folder(tmp_path)
    with pytest.raises(ValueError, match=r"--overwrite replaces only a train\.py run"):
        prepare_run_dir(user, resume=False, overwrite=True)
    assert sorted(p.name for p in user.iterdir()) == ["keep", "precious.txt"]
