"""Fig. 10 (§6.4) sensitivity machinery: energy matching, trace rescaling, the per-panel comparison."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

from joulegym.evaluation.powerflow import (
    SENSITIVITY_BASE,
    SENSITIVITY_DURATION_SCALE,
    SENSITIVITY_HORIZON_S,
    ZEUS,
    _sensitivity_rows,
    jct_at_energy,
    reproduce_sensitivity,
    sensitivity,
    sensitivity_kwargs,
)
from joulegym.scenarios.powerflow import SCENARIOS, gavel_interval

# regression pins of test_fig10_trends_vs_afs_on_the_papers_traces (measured, not paper numbers)
FIG10_AFS_PINS = {
    ("cluster", 16, 0): 1.2731983273644683, ("cluster", 16, 1): 1.0600503101903571,
    ("cluster", 16, 2): 1.1327659973203275, ("cluster", 32, 0): 1.1446902977186988,
    ("cluster", 32, 1): 0.9612770948110317, ("cluster", 32, 2): 0.549499851908506,
    ("jobsize", 1, 0): 1.1446902977186988, ("jobsize", 1, 1): 0.9612770948110317,
    ("jobsize", 1, 2): 0.549499851908506, ("jobsize", 4, 0): 1.4029064351477645,
    ("jobsize", 4, 1): 1.2079474379125763, ("jobsize", 4, 2): 1.156558708328057,
}


def _table(rows):
    return pd.DataFrame(rows, columns=["policy", "knob", "value", "total_energy_kwh", "avg_jct_h"])


CURVES = _table([
    ("powerflow", "eta", 0.2, 10.0, 2.0), ("powerflow", "eta", 0.5, 20.0, 1.0), ("powerflow", "eta", 1.0, 30.0, 0.8),
    ("afs", "f_mhz", 1020.0, 18.0, 3.0), ("afs", "f_mhz", 1530.0, 24.0, 2.0),
    ("gandiva-zeus", "zeus", 0.0, 19.0, 4.0), ("tiresias-zeus", "zeus", 0.0, 21.0, 3.5),
])


def test_jct_at_energy_interpolates_then_takes_a_close_end_then_gives_up():
    assert jct_at_energy(CURVES, "powerflow", 15.0) == (pytest.approx(1.5), "interpolated")
    assert jct_at_energy(CURVES, "afs", 21.0) == (pytest.approx(2.5), "interpolated")
    assert jct_at_energy(CURVES, "afs", 24.9) == (2.0, "end")  # 3.75 % beyond the 1530 MHz point
    jct, how = jct_at_energy(CURVES, "afs", 30.0)
    assert math.isnan(jct) and how == "outside"
    assert jct_at_energy(CURVES, "gandiva-zeus", 19.5) == (4.0, "end")  # a one-point policy within 5 %
    with pytest.raises(ValueError, match="policy 'fifo' is not in the table"):
        jct_at_energy(CURVES, "fifo", 20.0)


def test_sensitivity_rows_compare_at_the_mean_zeus_energy():
    rows = pd.DataFrame(_sensitivity_rows(CURVES, "cluster", 16, 0)).set_index("policy")
    target = 20.0  # mean of the two Zeus energies
    assert (rows.target_energy_kwh == target).all()
    assert rows.zeus_spread.iloc[0] == pytest.approx(21.0 / 19.0 - 1.0)
    assert rows.loc["powerflow", "avg_jct_h"] == pytest.approx(1.0) and rows.loc["powerflow", "improvement"] == 1.0
    assert rows.loc["afs", "avg_jct_h"] == pytest.approx(8 / 3)  # 3 - (20 - 18) / 6
    assert rows.loc["afs", "improvement"] == pytest.approx(8 / 3)
    # a Zeus point keeps its own energy and is compared with PowerFlow's curve there
    assert rows.loc["gandiva-zeus", "energy_kwh"] == 19.0
    assert rows.loc["gandiva-zeus", "improvement"] == pytest.approx(4.0 / 1.1)
    assert rows.loc["tiresias-zeus", "improvement"] == pytest.approx(3.5 / 0.98)
    with pytest.raises(ValueError, match="Zeus"):
        _sensitivity_rows(CURVES[~CURVES.policy.isin(ZEUS)], "cluster", 16, 0)


def test_sensitivity_rows_leave_truncated_runs_out_of_the_curves():
    """A run that hit the horizon averages finished jobs only: it must not move the curve (here it would make
    PowerFlow's JCT at 20 kWh 0.5 h instead of 1.0 h)."""
    table = CURVES.assign(truncated=False)
    bogus = pd.DataFrame([{"policy": "powerflow", "knob": "eta", "value": 0.4, "total_energy_kwh": 20.0,
                           "avg_jct_h": 0.5, "truncated": True}])
    rows = pd.DataFrame(_sensitivity_rows(pd.concat([table, bogus]), "jobsize", 8, 0)).set_index("policy")
    assert rows.loc["afs", "avg_jct_h"] / rows.loc["afs", "improvement"] == pytest.approx(1.0)
    assert (rows.truncated_runs == 1).all()


def test_gavel_interval_gives_the_offered_load():
    """rho = E[n] E[duration] / (interval G): 1.9 GPUs x 6036.3 s (scale 0.1) / (358.4 s x 32 GPUs) = 1.0."""
    assert gavel_interval(1.0) == pytest.approx(1.9 * 6036.3 / 32)
    assert gavel_interval(0.5) == pytest.approx(2 * gavel_interval(1.0))
    assert gavel_interval(1.0, num_gpus=64, size_multiplier=2) == pytest.approx(gavel_interval(1.0))
    assert SCENARIOS["small100"].config["trace"]["mean_interarrival_s"] == round(gavel_interval(1.0), 1) == 358.4
    with pytest.raises(ValueError, match="rho"):
        gavel_interval(0.0)


@pytest.mark.parametrize(("panel", "value", "nodes", "interval", "multiplier"), [
    ("load", 0.5, 4, 716.8, 1), ("load", 2.0, 4, 179.2, 1), ("cluster", 16, 2, 358.4, 1),
    ("cluster", 128, 16, 358.4, 1), ("jobsize", 8, 4, 358.4, 8)])
def test_sensitivity_kwargs_make_the_fig10_points(panel, value, nodes, interval, multiplier):
    """The Fig. 10 points are kwargs on small100 (no ids): the same Gavel generator, the swept knob changed."""
    kwargs = sensitivity_kwargs(panel, value)
    env = gym.make(SENSITIVITY_BASE, **kwargs).unwrapped
    trace = env.config["trace"]
    assert env.config["nodes"] == nodes and env.cluster.num_gpus == 8 * nodes
    assert trace["mean_interarrival_s"] == pytest.approx(interval) and trace["size_multiplier"] == multiplier
    assert trace["num_jobs"] == 100 and trace["duration_scale"] == 0.1
    assert SCENARIOS["small100"].config["trace"]["size_multiplier"] == 1  # the scenario itself is not modified


@pytest.mark.parametrize("panel", ["load", "cluster", "jobsize"])
def test_rescaled_durations_keep_the_offered_load(panel):
    value = {"load": 0.75, "cluster": 64, "jobsize": 2}[panel]
    base, scaled = sensitivity_kwargs(panel, value), sensitivity_kwargs(panel, value, duration_scale=1.0)
    assert scaled["trace"]["duration_scale"] == 1.0
    assert scaled["trace"]["mean_interarrival_s"] == pytest.approx(base["trace"]["mean_interarrival_s"] * 10.0)
    assert {k: v for k, v in scaled.items() if k != "trace"} == {k: v for k, v in base.items() if k != "trace"}


def test_sensitivity_kwargs_reject_bad_points():
    with pytest.raises(ValueError, match="duration_scale must be > 0"):
        sensitivity_kwargs("load", 1.0, duration_scale=0.0)
    with pytest.raises(ValueError, match="panel='size'"):
        sensitivity_kwargs("size", 1)
    with pytest.raises(ValueError, match="multiple of 8"):
        sensitivity_kwargs("cluster", 12)


def test_reproduce_sensitivity_writes_one_row_per_policy_and_consistent_ratios(tmp_path):
    table, written = reproduce_sensitivity(tmp_path, seeds=(0,), panels={"cluster": (16,)}, duration_scale=None,
                                           horizon_s=None, etas=(0.2, 0.5, 1.0), freqs=(1020.0, 1530.0))
    assert {p.name for p in written} == {"fig10_sensitivity.csv", "fig10_improvement.csv", "fig10.png"}
    assert all(p.stat().st_size > 0 for p in written)
    assert set(table.policy) == {"powerflow", "gandiva", "tiresias", "afs", *ZEUS}
    pf = table[table.policy == "powerflow"].iloc[0]
    # read on PowerFlow's curve, or at its end when the Zeus energy lies within 5 % beyond it (docs §13): since
    # Gandiva time-slices (docs §8), Gandiva+Zeus spends more and the Zeus mean sits just above eta = 1's energy
    assert pf.how in ("interpolated", "end") and pf.energy_kwh == pf.target_energy_kwh
    zeus = table[table.policy.isin(ZEUS)]
    assert pf.target_energy_kwh == pytest.approx(zeus.energy_kwh.mean())
    for _, row in table[~table.policy.isin([*ZEUS, "powerflow"])].iterrows():  # read at PowerFlow's energy
        assert row.energy_kwh == pf.target_energy_kwh
        assert row.improvement == pytest.approx(row.avg_jct_h / pf.avg_jct_h, rel=1e-12, nan_ok=True)
    assert (table.truncated_runs == 0).all()
    finite = table[np.isfinite(table.avg_jct_h)]
    assert (finite.avg_jct_h > 0).all()
    summary = pd.read_csv(tmp_path / "fig10_improvement.csv").set_index("policy")
    afs = table.set_index("policy").loc["afs", "improvement"]
    assert summary.loc["afs", "improvement_mean"] == pytest.approx(afs, nan_ok=True)
    assert summary.loc["afs", "seeds_compared"] == int(np.isfinite(afs))
    assert "powerflow" not in summary.index


@pytest.mark.reproduce  # 7-8 min on 2 cores since the Gandiva/Tiresias rewrite: run with --reproduce
def test_fig10_trends_vs_afs_on_the_papers_traces():
    """Fig. 10b/c on the unscaled Gavel traces (§6.4), per seed: PowerFlow's gain over AFS (the elastic, strongest
    baseline) is larger on a smaller cluster (16 vs 32 GPUs) and for larger jobs (x4 vs x1 requested GPUs).

    Measured (seeds 0-4): cluster 16/32 1.26/1.12, 1.06/0.95, 1.12/0.54, 1.13/0.91, 1.10/0.60; jobsize x1/x4
    1.12/1.35, 0.95/1.23, 0.54/1.17, 0.91/1.23, 0.60/1.23. Fig. 10a (load) is not reproduced: the gain over AFS
    moves by seed with no common direction, and over the non-elastic baselines it mostly *falls* with load
    (documented in the README's reproduction notes)."""
    table = sensitivity({"cluster": (16, 32), "jobsize": (1, 4)}, seeds=(0, 1, 2),
                        duration_scale=SENSITIVITY_DURATION_SCALE, horizon_s=SENSITIVITY_HORIZON_S)
    assert (table.truncated_runs == 0).all()
    afs = table[table.policy == "afs"].set_index(["panel", "value", "seed"]).improvement
    for seed in (0, 1, 2):
        assert afs["cluster", 16, seed] > afs["cluster", 32, seed]
        assert afs["jobsize", 4, seed] > afs["jobsize", 1, seed]
    # regression pins (measured, not paper numbers): JCT_AFS / JCT_PowerFlow at the Zeus energy
    assert afs.to_dict() == pytest.approx(FIG10_AFS_PINS, rel=1e-6)
