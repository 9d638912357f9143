"""benchmarks/soak.py: the --quick smoke run finds nothing, and its checks do fire on broken states."""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from joulegym.core.family import families
from tests import scripts

ROOT = Path(__file__).resolve().parents[1]


soak = scripts.load("soak")


def test_quick_soak_of_every_family_finds_nothing(tmp_path, capsys):
    out = tmp_path / "soak.json"
    assert soak.main(["--quick", "--out", str(out)]) == 0, capsys.readouterr().out
    payload = json.loads(out.read_text())
    assert set(payload["results"]) == {f.name for f in families()}
    for name, rows in payload["results"].items():
        assert sum(r["steps"] for r in rows) == soak.QUICK_STEPS, name
        assert all(r["episodes"] >= 1 and r["violations"] == {} for r in rows), rows
    assert "| etf | joulegym/ETF-v0 |" in capsys.readouterr().out


def test_the_checks_fire_on_broken_states():
    assert soak.non_finite({"a": [1.0, {"b": np.array([0.0, math.nan])}]})
    assert soak.non_finite(np.float32("inf")) and not soak.non_finite({"a": (1, 2.0, "x", np.zeros(3))})
    sim = SimpleNamespace(now=5.0, energy={"busy": 1.0}, running=np.array([0, 1]), n=np.array([8, 4]), G=8,
                          cfg=SimpleNamespace(power_constraint="repair"), max_job_power=2052.0, power_limit=2045.0)
    state: dict[str, float] = {"time": 6.0, "energy": 2.0}
    broken = soak.powerflow_invariants(SimpleNamespace(sim=sim), {}, state)
    assert broken == ["time_decreased", "energy_decreased", "gpus_over_capacity", "power_budget_broken"]
    emrf = soak.emrf_invariants(SimpleNamespace(sim=SimpleNamespace(time=1.0, total_gflop=3.0)),
                                {"U_cpu": 1.01, "U_gpu": 0.2, "allocation": np.array([1.0, -0.5])}, {})
    assert emrf == ["utilisation_over_capacity", "negative_allocation"]
    etf_sim = SimpleNamespace(epoch=3, app_energy_j=[1.0], app_time_s=[2.5], epoch_s=1.0, T_units=40,
                              history=[((30, 20), (1.0, 1.0))])
    assert soak.etf_invariants(SimpleNamespace(sim=etf_sim), {}, {"busy": 1.0}) == [
        "device_time_over_epoch", "units_over_T"]
