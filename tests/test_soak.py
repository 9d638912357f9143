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


def test_the_soak_covers_five_families_at_their_step_counts():
    assert {"etf", "emrf", "powerflow", "dream", "qin"} <= set(soak.STEPS) == set(soak.INVARIANTS)
    assert soak.STEPS["etf"] == soak.STEPS["emrf"] == soak.STEPS["powerflow"] == 10**6
    assert soak.STEPS["dream"] == soak.STEPS["qin"] == 2 * 10**5
    assert soak.family_steps("qin", None, 0.1) == 20_000 and soak.family_steps("qin", 500, 0.1) == 500
    runs = soak.family_runs("qin")
    (path,) = [kw["workload"]["path"] for _, kw in runs if kw.get("workload", {}).get("kind") == "file"]
    assert Path(path).is_file()  # the loader's output is soaked too


def test_the_dream_and_qin_checks_fire_on_broken_states():
    dream = SimpleNamespace(now=1.0, energy_total=1.0, dispatches=3, layers=5, switch_energy_total=0.0,
                            acc_energy=np.array([-1.0]), acc_frames=np.array([2]), acc_violated=np.array([3]))
    assert soak.dream_invariants(SimpleNamespace(sim=dream), {}, {"time": 2.0, "energy": 0.5}) == [
        "time_decreased", "negative_accelerator_counter", "violations_over_frames"]
    qin = SimpleNamespace(now=1.0, energy_j=np.array([1.0, 1.0]), util=np.array([0.5, 1.2]),
                          load_instr=np.array([-1.0]), core_threads=np.array([0]))
    assert soak.qin_invariants(SimpleNamespace(sim=qin), {}, {"energy": 3.0}) == [
        "energy_decreased", "utilisation_outside_0_1", "negative_load"]
