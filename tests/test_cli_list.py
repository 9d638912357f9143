"""``python -m joulegym list [FAMILY]`` and ``families`` (docs/architecture.md, "Conventions")."""

from __future__ import annotations

import subprocess
import sys

from joulegym.__main__ import main
from joulegym.scenarios import registered_ids


def test_list_etf(capsys):
    assert main(["list", "etf"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == registered_ids("etf")
    row = next(line for line in lines if line.startswith("joulegym/ETF-tx2-fig5-v0 "))
    assert "Fig. 5" in row and "ResNet50" in row


def test_list_all_includes_etf(capsys):
    assert main(["list"]) == 0
    ids = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert set(registered_ids("etf")) <= set(ids) and "joulegym/ETF-v0" in ids


def test_list_unknown_family(capsys):
    assert main(["list", "nofamily"]) == 2
    err = capsys.readouterr().err
    assert "nofamily" in err and "etf" in err


def test_module_entry_point():
    out = subprocess.run([sys.executable, "-m", "joulegym", "list", "etf"], capture_output=True, text=True, check=True)
    assert "joulegym/ETFPhi-v0" in out.stdout and "joulegym/ETFDVFS-tx2-fig10-incentive-v0" in out.stdout


def test_list_into_a_closed_pipe():
    """`python -m joulegym list | head -1` ends quietly (no BrokenPipeError traceback)."""
    out = subprocess.run(f'"{sys.executable}" -m joulegym list | head -1', shell=True, capture_output=True,
                         text=True, check=True)
    assert out.stdout.startswith("joulegym/") and "Traceback" not in out.stderr


def test_families_lists_every_descriptor(capsys):
    from joulegym.core.family import families

    assert main(["families"]) == 0
    out = capsys.readouterr().out
    for descriptor in families():
        assert out.count(descriptor.title) == 1 and descriptor.docs in out
