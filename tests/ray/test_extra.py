"""The base install stays light: Ray is an optional extra, ``import joulegym`` never imports it, and the
``all`` extra (what CI installs) includes it so that the Ray tests run there."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _pyproject() -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli", reason="reading pyproject.toml on Python 3.10 needs tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _name(requirement: str) -> str:
    return re.split(r"[\[<>=!~;\s]", requirement, maxsplit=1)[0].lower()


def test_base_dependencies_do_not_pull_ray():
    project = _pyproject()["project"]
    base = [_name(r) for r in project["dependencies"]]
    assert base and "ray" not in base and not any(n.startswith("ray-") for n in base)
    extras = project["optional-dependencies"]
    assert any(_name(r) == "ray" and "tune" in r for r in extras["ray"])
    assert "ray" in re.search(r"\[(.*)\]", extras["all"][0]).group(1).split(",")


def test_import_joulegym_and_make_an_env_do_not_import_ray():
    code = ("import sys, gymnasium as gym, joulegym; gym.make('joulegym/ETF-v0').reset(seed=0); "
            "import joulegym.integrations; print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"
