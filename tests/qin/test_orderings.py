"""The paper's orderings (qin.md §6.9, issue 16 "Done when") over 5 seeds, driving the simulator directly with the
scheduling functions (the env-level reproduction is ``evaluate.py --reproduce qin``).

Cluster-level runs use the ``linux`` node policy (the real cluster's default, qin.md §5.1) and are fast; the
hierarchical Table 5 runs tick the node level and sit behind ``--reproduce``. Orderings that do not
reproduce in this model are strict xfails whose reason holds the measured numbers (docs/families/qin.md
"What reproduces"). Improvement = (B - Q) / B on the seed means (A18).
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from joulegym.devices import cpu
from joulegym.envs.qin import scheduling as sch
from joulegym.envs.qin.model import QinSimConfig
from joulegym.envs.qin.node_policies import QinNodePolicy
from joulegym.envs.qin.simulator import QinSim
from joulegym.workloads import qin_jobs as qj

SEEDS = (0, 1, 2, 3, 4)
KUBERNETES_LATENCY = {"profile_latency_s": 0.0, "decision_latency_s": 0.005}  # A27


@cache
def episode(policy: str, mix: str = "rw", num_jobs: int = 100, seed: int = 0, focus: str = "perf",
            d: int | None = None, admission: str = "fifo", node: str = "linux",
            period_s: float = 0.01, power_terms: str = "full") -> dict[str, float]:
    """One batch episode on the paper's 5 workers (qin.md §7.5); same workload seed across policies."""
    if node == "qin-node":
        node_policy = QinNodePolicy(focus=focus)
    else:
        node_policy = node
    latency = KUBERNETES_LATENCY if policy == "kubernetes" else {}
    sim = QinSim(cpu.build_core_table(list(cpu.WORKER_TYPES)),
                 QinSimConfig(node_policy=node_policy, admission=admission, control_period_s=period_s,
                              power_terms=power_terms, **latency))
    sim.reset(np.random.default_rng(seed), qj.generate_jobs(mix, num_jobs, seed=seed))
    rng = np.random.default_rng(seed + 10_000)
    while sim.advance():
        j = sim.pending_job
        p = sim.prediction(j)
        level = None
        if policy == "qin":
            server, level = sch.qin_cluster_choose(p.tolerated, p.caused, p.mips, p.energy_j, p.runtime_s,
                                                   sim.t_server, sim.c_server, sim.load_instr, rng, focus, d=d)
        elif policy == "kubernetes":
            server = sch.kubernetes_choose(sim.jobs_on, sim.cores_per_server, sim.mem_gb, rng)
        elif policy == "paragon":
            server = sch.paragon_choose(p.tolerated, p.caused, p.mips, sim.t_server, sim.c_server)
        elif policy == "mage":
            server = sch.mage_choose(p.tolerated, p.mips, sim.c_server, sim.cores_per_server,
                                     sim.runnable_threads, int(sim.n_threads[j]))
        else:
            raise ValueError(policy)
        sim.apply((server, level))
    assert sim.done
    return sim.metrics()


def mean(metric: str, policy: str, **kw) -> float:
    return float(np.mean([episode(policy, seed=s, **kw)[metric] for s in SEEDS]))


def gain(metric: str, baseline: str, base_kw: dict | None = None, **kw) -> float:
    """(B - Q) / B of Qin against ``baseline`` on the seed means."""
    b = mean(metric, baseline, **(base_kw or {}))
    return (b - mean(metric, "qin", **kw)) / b


# --- Table 4 RW Perf / Fig. 7 (T1) -------------------------------------------------------------------------------
def test_qin_has_the_shortest_rw_jct():
    # measured RW makespan means over 5 seeds: Qin 1,116 s, Paragon 1,129 s, Mage 1,137 s, Kubernetes 1,240 s
    # (Qin vs Kubernetes 10.0 %; paper 9.43 %)
    qin = mean("makespan_s", "qin")
    assert qin < min(mean("makespan_s", p) for p in ("kubernetes", "mage", "paragon"))
    assert gain("makespan_s", "kubernetes") > 0.05


@pytest.mark.xfail(strict=True, reason=(
    "Table 4 ordering Kubernetes < Mage < Paragon does not reproduce: measured RW makespan means over 5 seeds "
    "Qin 1,116 s < Paragon 1,129 s < Mage 1,137 s < Kubernetes 1,240 s. In this model Paragon's min-violation "
    "rule (every server violates once a few jobs share it) places by the summed caused pressure, i.e. it "
    "balances job counts instead of piling onto the best server; Mage's share term balances threads per core; "
    "Kubernetes' requests ignore heterogeneity and overload the 8-logical-core i7-4790"))
def test_table4_rw_jct_ordering():
    qin, k8s, mage, paragon = (mean("makespan_s", p) for p in ("qin", "kubernetes", "mage", "paragon"))
    assert qin < k8s < mage < paragon


def test_jct_gap_widens_with_the_number_of_jobs():
    gains = [gain("makespan_s", "kubernetes", base_kw={"num_jobs": m}, num_jobs=m) for m in (20, 50, 100)]
    # measured: -2.3 %, -0.6 %, +10.0 % (Fig. 7: "gets even better as the number of workloads increases")
    assert gains[0] < gains[1] < gains[2]


# --- Fig. 10b: the d sweep (T3) ----------------------------------------------------------------------------------
def test_more_than_two_choices_do_not_help():
    # measured RW makespan means: d=2 1,116 s, d=3 1,152 s, d=4 1,171 s, d=6 (all 5 servers) 1,424 s
    d2 = mean("makespan_s", "qin", d=2)
    assert min(mean("makespan_s", "qin", d=d) for d in (3, 4, 6)) >= d2


@pytest.mark.xfail(strict=True, reason=(
    "Fig. 10b's d=1 worst does not reproduce: measured RW makespan means over 5 seeds d=1 1,112 s vs d=2 "
    "1,116 s (d=3 1,152 s, d=4 1,171 s, d=6 1,424 s). With d=1 the Flist still holds two entries (the least "
    "interfering server and the fastest of the top-50 % subset, qin.md §3.5), and the eq. 16 score already "
    "spreads jobs by summed pressure, so single choice shows no end-of-run pile-up"))
def test_d1_is_worst():
    d1 = mean("makespan_s", "qin", d=1)
    assert d1 > max(mean("makespan_s", "qin", d=d) for d in (2, 3, 4))


# --- Fig. 12: DAC (T4) -------------------------------------------------------------------------------------------
@pytest.mark.xfail(strict=True, reason=(
    "Fig. 12 does not reproduce: measured over 5 seeds (100 RW, batch, queue 100, wait 0) makespan 1,115.9 s "
    "(FIFO) vs 1,117.2 s (DAC, H descending), mean JCT 673 s vs 693 s, energy 316.2 kJ vs 316.7 kJ. DAC must "
    "profile the whole batch (100 x 0.18 s, A27) before the first dispatch, and under processor sharing the "
    "dispatch order barely changes when work completes; the paper's ~21 % / ~6 % need a mechanism (queueing "
    "on the servers) this model does not have"))
def test_dac_improves_jct_and_energy():
    base = {"admission": "fifo"}
    dac = {"admission": "dac_H_desc"}
    assert mean("makespan_s", "qin", **dac) < mean("makespan_s", "qin", **base)
    assert mean("mean_jct_s", "qin", **dac) < mean("mean_jct_s", "qin", **base)
    assert mean("energy_j", "qin", **dac) < mean("energy_j", "qin", **base)


# --- T6: energy gains by mix ------------------------------------------------------------------------------------
def _energy_gain(mix: str) -> float:
    return gain("energy_j", "kubernetes", base_kw={"mix": mix}, mix=mix, focus="energy")


def test_energy_aware_qin_saves_energy_on_every_mix():
    # measured energy gains vs Kubernetes (cluster level, Qin's V/F hint applied by the linux node policy):
    # RW 8.7 %, LC 18.5 %, TB 6.2 % (paper Table 4: 21.2 %, 4.0 %, 4.7 %)
    for mix in ("rw", "lc", "tb"):
        assert _energy_gain(mix) > 0.03


@pytest.mark.xfail(strict=True, reason=(
    "T6 does not reproduce for LC: measured energy gains vs Kubernetes RW 8.7 % > TB 6.2 % but LC 18.5 %; the "
    "LC catalog entry (memcached, beta 0.5) is memory-bound, so the energy focus's lower V/F levels (within PL) "
    "cost it little time and save much dynamic power, while the paper's LC gains were small (4.0 %)"))
def test_energy_gain_larger_for_rw_than_lc_and_tb():
    rw = _energy_gain("rw")
    assert rw > _energy_gain("lc") and rw > _energy_gain("tb")


# --- Table 5: hierarchical (T2) ----------------------------------------------------------------------------------
@pytest.mark.reproduce
def test_hierarchical_qin_beats_kubernetes_sniper_on_energy_and_edp():
    """Qin + Qin (energy / EDP variants, node level at a 100 ms control period to keep five seeds within a
    minute) against Kubernetes + Sniper pinned at f_H."""
    base = {"node": "sniper-pinned", "period_s": 0.1}
    energy = gain("energy_j", "kubernetes", base_kw=base, focus="energy", node="qin-node", period_s=0.1)
    edp = gain("edp_js", "kubernetes", base_kw=base, focus="edp", node="qin-node", period_s=0.1)
    # measured over seeds 0-4: energy 11.0 % (energy focus), EDP 10.7 % (EDP focus; its JCT gain 7.9 %, energy
    # 3.2 %); paper 38.65 %, 41.98 %, 10.2 %. The direction reproduces; the size does not: static, uncore and
    # DRAM power (A20) keep drawing while DVFS stretches the runtime
    assert energy > 0.05
    assert edp > 0.05
    assert gain("makespan_s", "kubernetes", base_kw=base, focus="edp", node="qin-node", period_s=0.1) > 0.0


@pytest.mark.reproduce
def test_table5_energy_size_with_eq12_power_only():
    """With only eq. 12's computational power (the paper's energy model, A20) Qin + Qin's energy saving against
    Kubernetes + Sniper reaches the paper's size (38.65 %)."""
    base = {"node": "sniper-pinned", "period_s": 0.1, "power_terms": "dynamic_only"}
    energy = gain("energy_j", "kubernetes", base_kw=base, focus="energy", node="qin-node", period_s=0.1,
                  power_terms="dynamic_only")
    # measured over seeds 0-4: energy 44.8 % (paper 38.65 %); the EDP focus then gains 8.8 % EDP and 5.5 % JCT
    assert energy > 0.3
