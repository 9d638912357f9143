"""The paper's orderings (qin.md §6.9; docs/families/qin.md §6) over 10 seeds, through the path the env uses: every
policy reads the CF predictions of the env's offline_fraction=0.1 campaign (joulegym.evaluation.qin_experiments.run:
the env's instance on the simulator alone, the env path's metrics exactly).

Cluster-level runs use the ``linux`` node policy (the real cluster's default, qin.md §5.1) and are fast; the
hierarchical Table 5 runs tick the node level and sit behind ``--reproduce``. Orderings that do not reproduce in
this model are strict xfails whose reason holds the measured numbers and the mechanism (docs/families/qin.md §6).
Improvement = (B - Q) / B on the seed means (A18).
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from joulegym.evaluation.qin_experiments import run

SEEDS = tuple(range(10))
PAPER_BASELINES = ("kubernetes", "paragon", "mage")


@cache
def episode(policy: str, mix: str = "rw", num_jobs: int = 100, seed: int = 0, objective: str = "makespan",
            d: int | None = None, admission: str = "fifo", rule: str = "random-of-top-d") -> dict[str, float]:
    """One batch episode on the paper's 5 workers (qin.md §7.5); the same workload seed for every policy."""
    kwargs = {"workload": {"num_jobs": num_jobs}, "objective": objective, "admission": admission, "dchoice_rule": rule}
    policy_kw = {} if d is None else {"d": d}
    env_id = "joulegym/QinCluster-dac-rw-v0" if admission != "fifo" else f"joulegym/QinCluster-paper-{mix}-v0"
    return run(env_id, policy, seed, kwargs, **policy_kw)


def mean(metric: str, policy: str, **kw) -> float:
    return float(np.mean([episode(policy, seed=s, **kw)[metric] for s in SEEDS]))


def gain(metric: str, baseline: str, qin: str = "qin-perf", base_kw: dict | None = None, **kw) -> float:
    """(B - Q) / B of Qin against ``baseline`` on the seed means."""
    b = mean(metric, baseline, **(base_kw or {}))
    return (b - mean(metric, qin, **kw)) / b


# --- Table 4 RW Perf / Fig. 7 (T1) -------------------------------------------------------------------------------
@pytest.mark.xfail(strict=True, reason=(
    "Qin (the paper's uniform Flist pick) does not have the lowest RW JCT at M = 100: measured means over seeds 0-9 "
    "Paragon 1,078 s, Qin 1,084 s, Mage 1,220 s, Kubernetes 1,310 s (Qin 17 % ahead of Kubernetes, paper 9.4 %; "
    "0.6 % behind Paragon, paper 32 % ahead). Paragon's rule falls back to the least total violation once every "
    "server is loaded, i.e. it places each job where the summed caused pressure is least and balances the servers; "
    "Qin's pick among the finalists by interference and heterogeneity ignores the load (L is a tie-break only)"))
def test_qin_has_the_shortest_rw_jct():
    qin = mean("makespan_s", "qin-perf")
    assert qin < min(mean("makespan_s", p) for p in PAPER_BASELINES)


@pytest.mark.xfail(strict=True, reason=(
    "The other D-choice rule (of the d finalists, the least loaded by the size-blind load, assigned jobs over the "
    "measured rate) is level with Paragon, not ahead, at M = 100: measured means over seeds 0-9 Qin 1,087 s, Paragon "
    "1,078 s, Mage 1,220 s, Kubernetes 1,310 s. With the load built on the jobs' size estimates (privileged, "
    "docs/families/qin.md §6.1) it made 1,040 s"))
def test_qin_with_the_least_loaded_finalist_has_the_shortest_rw_jct():
    """The other D-choice rule (§5.2's balls-into-bins argument) against every paper baseline at M = 100."""
    qin = mean("makespan_s", "qin-perf", rule="least-loaded-of-d")
    assert qin < min(mean("makespan_s", p) for p in PAPER_BASELINES)


def test_qin_with_the_least_loaded_finalist_is_ahead_of_kubernetes():
    # measured at M = 100, seeds 0-9: 17.0 % ahead of Kubernetes
    assert gain("makespan_s", "kubernetes", rule="least-loaded-of-d") > 0.05


def test_qin_is_ahead_of_kubernetes_and_mage():
    # measured at M = 100: 17.2 % ahead of Kubernetes (paper 9.4 %), 11.1 % ahead of Mage (paper 26.2 %)
    assert gain("makespan_s", "kubernetes") > 0.1
    assert gain("makespan_s", "mage") > 0.05


@pytest.mark.parametrize("baseline", PAPER_BASELINES)
def test_jct_gap_widens_with_the_number_of_jobs(baseline):
    """Fig. 7: "the improvement in jobs completion time gets even better as the number of workloads increases"
    (measured gain at M = 20 / 50 / 100: Kubernetes -4.7 / +15.3 / +17.2 %, Paragon -24.2 / -4.1 / -0.6 %, Mage
    -30.0 / +8.2 / +11.1 %)."""
    gains = [gain("makespan_s", baseline, base_kw={"num_jobs": m}, num_jobs=m) for m in (20, 50, 100)]
    assert gains[0] < gains[1] < gains[2]


@pytest.mark.xfail(strict=True, reason=(
    "Table 4 ordering Kubernetes < Mage < Paragon does not reproduce: measured RW makespan means over seeds 0-9 "
    "Paragon 1,078 s < Mage 1,220 s < Kubernetes 1,310 s. Paragon balances the summed pressure (see above); "
    "Kubernetes' requests count Table 2's 8 logical cores of the i7-4790 and overload its 4 physical ones"))
def test_table4_rw_jct_ordering():
    k8s, mage, paragon = (mean("makespan_s", p) for p in PAPER_BASELINES)
    assert k8s < mage < paragon


# --- Fig. 10b: the d sweep (T3) ----------------------------------------------------------------------------------
def test_d1_is_worse_than_d2_and_many_choices_do_not_help():
    """Fig. 10b: d = 2 beats single choice, and going to every server (d = 6 > N = 5) is worst (measured RW means:
    d = 1 1,107 s, 2 1,084 s, 3 1,097 s, 4 1,074 s, 6 1,222 s)."""
    by_d = {d: mean("makespan_s", "qin-perf", d=d) for d in (1, 2, 6)}
    assert by_d[2] < by_d[1] < by_d[6]


# --- Fig. 12: DAC (T4) -------------------------------------------------------------------------------------------
@pytest.mark.xfail(strict=True, reason=(
    "Fig. 12 does not reproduce: measured over seeds 0-9 (100 RW, batch, queue 100, wait 0) makespan 1,084 s (FIFO) "
    "vs 1,111 s (DAC, H descending), mean JCT 677 s vs 689 s, energy 315.6 kJ vs 318.5 kJ. DAC profiles the whole "
    "batch before the first dispatch, and under processor sharing the dispatch order barely changes when work "
    "completes; the paper's ~21 % / ~6 % need a mechanism (queueing on the servers) this model does not have"))
def test_dac_improves_jct_and_energy():
    base = {"admission": "fifo"}
    dac = {"admission": "dac_H_desc"}
    assert mean("makespan_s", "qin-perf", **dac) < mean("makespan_s", "qin-perf", **base)
    assert mean("mean_jct_s", "qin-perf", **dac) < mean("mean_jct_s", "qin-perf", **base)
    assert mean("energy_j", "qin-perf", **dac) < mean("energy_j", "qin-perf", **base)


# --- T6: energy gains by mix ------------------------------------------------------------------------------------
def _energy_gain(mix: str) -> float:
    return gain("energy_j", "kubernetes", qin="qin-energy", base_kw={"mix": mix}, mix=mix, objective="energy")


def test_energy_aware_qin_saves_energy_on_every_mix():
    # measured energy gains vs Kubernetes (cluster level, Qin's V/F hint applied by the linux node policy):
    # RW 13.0 %, LC 20.1 %, TB 13.2 % (paper Table 4: 21.2 %, 4.0 %, 4.7 %)
    for mix in ("rw", "lc", "tb"):
        assert _energy_gain(mix) > 0.05


@pytest.mark.xfail(strict=True, reason=(
    "T6 does not reproduce for LC: measured energy gains vs Kubernetes RW 13.0 % ~ TB 13.2 % < LC 20.1 %; the LC "
    "catalog entry (memcached, beta 0.5) is memory-bound, so the energy focus's lower V/F levels (within PL) cost it "
    "little time and save much dynamic power, while the paper's LC gains were small (4.0 %)"))
def test_energy_gain_larger_for_rw_than_lc_and_tb():
    rw = _energy_gain("rw")
    assert rw > _energy_gain("lc") and rw > _energy_gain("tb")


# --- Table 5: hierarchical (T2) ----------------------------------------------------------------------------------
@pytest.mark.reproduce
def test_hierarchical_qin_beats_kubernetes_sniper_on_jct_and_energy():
    """Qin + Qin (each column with its focus at both levels) against Kubernetes + Sniper pinned at f_H, 100 RW jobs
    at a 100 ms control period (five seeds within a few minutes)."""
    from joulegym.evaluation.qin_experiments import table5, table5_gains

    gains = table5_gains(table5(seeds=SEEDS[:5], num_jobs=100, control_period_ms=100.0)).set_index(["focus", "case"])
    assert gains.loc[("perf", "qin + qin-node PL 0"), "gain_pct"] > 5.0
    assert gains.loc[("energy", "qin + qin-node"), "gain_pct"] > 5.0
    # the node mapping at PL 0 moves the metrics by little: what Qin + Qin adds over Qin + Sniper is its DVFS
    for focus in ("perf", "energy", "edp"):
        step = gains.loc[(focus, "qin + qin-node PL 0"), "gain_pct"] - gains.loc[(focus, "qin + sniper-pinned"),
                                                                                 "gain_pct"]
        assert abs(step) < 3.0, (focus, step)


# --- §7.4: scale -------------------------------------------------------------------------------------------------
@pytest.mark.reproduce
def test_qin_scales_to_1000_servers_once_decisions_overlap():
    """N = 1,000 servers, M = 10,000 RW jobs (docs/families/qin.md §6.6), Qin and the paper's baselines. With the
    decision latencies overlapped, Qin's makespan is within 10 % of the best paper baseline's; with Alg. 1's serial
    decisions at A27's 0.09 s (900 s of decisions in all) Kubernetes, at 5 ms a decision, is ahead of every
    profiling-based scheduler: the serial stage, not the placement, sets the makespan there."""
    from joulegym.evaluation.qin_experiments import large_n

    runs = large_n(1000, policies=("qin", *PAPER_BASELINES), stages=(("serial", None), ("overlapped", None)))
    makespan = runs.set_index(["decision_mode", "policy"])["makespan_s"]
    overlapped = makespan.loc["overlapped"]
    assert overlapped["qin"] <= 1.10 * overlapped[list(PAPER_BASELINES)].min()
    serial = makespan.loc["serial"]
    assert serial["kubernetes"] < serial[["qin", "paragon", "mage"]].min()
    assert serial["qin"] > 900.0  # at least the serial decisions of 10,000 jobs at 0.09 s
