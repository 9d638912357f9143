"""The Qin cluster simulator (joulegym.envs.qin.simulator) on small hand-made inputs: qin.md §1.9 and §7.7."""

from __future__ import annotations

import time

import numpy as np
import pytest

from joulegym.devices import cpu
from joulegym.envs.qin import scheduling as sch
from joulegym.envs.qin.dynamics import NodeDecision
from joulegym.envs.qin.model import QinSimConfig, truth_tables
from joulegym.envs.qin.node_policies import AgentNodeLevel, QinNodePolicy
from joulegym.envs.qin.simulator import QinSim
from joulegym.workloads import qin_jobs as qj

NO_LATENCY = {"profile_latency_s": 0.0, "decision_latency_s": 0.0}


def make_jobs(apps, sizes, threads, arrivals=None) -> qj.QinJobs:
    catalog = qj.get_catalog()
    n = len(apps)
    app = [catalog.index(a) if isinstance(a, str) else a for a in apps]
    return qj.QinJobs(catalog, np.array(app), np.zeros(n) if arrivals is None else np.array(arrivals, dtype=float),
                      np.array(sizes, dtype=float), np.array(threads))


def make_sim(servers=("i5-4690",), **cfg) -> QinSim:
    return QinSim(cpu.build_core_table(list(servers)), QinSimConfig(**cfg))


def place_all(sim: QinSim, servers, levels=None) -> None:
    """Place the jobs in dispatch order on the given servers (and levels)."""
    k = 0
    while sim.advance():
        sim.apply((servers[k], None if levels is None else levels[k]))
        k += 1


def tau(sim: QinSim, job: int, server: int, level: int) -> float:
    """Stand-alone seconds per instruction on a big core (qin.md §1.9)."""
    f = sim.cores.freq_mhz[sim.first_core[server], level]
    return float(cpu.seconds_per_instruction(sim.cpi0[job], sim.beta[job], sim.ipc_job_server[job, server], f,
                                             sim.memlat[server]))


def test_single_thread_stand_alone_runtime_is_exact():
    sim = make_sim(**NO_LATENCY)
    sim.reset(np.random.default_rng(0), make_jobs(["lu_cb"], [2e10], [1]))
    place_all(sim, [0])
    assert sim.done and not sim.truncated
    expected = 2e10 * tau(sim, 0, 0, 3)
    assert sim.finish_s[0] == pytest.approx(expected, rel=1e-9)
    assert sim.job_slowdown[0] == 1.0  # alone: no pressure from others


def test_processor_sharing_two_threads_per_core():
    sim = make_sim(**NO_LATENCY)
    sim.reset(np.random.default_rng(0), make_jobs(["barnes"], [8e9], [8]))  # 8 threads on the i5-4690's 4 cores
    place_all(sim, [0])
    np.testing.assert_array_equal(np.bincount(sim.thread_core, minlength=4), [2, 2, 2, 2])
    # each thread gets half a core: its 1e9 instructions take 2 * 1e9 * tau
    assert sim.finish_s[0] == pytest.approx(2 * 1e9 * tau(sim, 0, 0, 3), rel=1e-9)


def test_interference_slowdown_from_the_other_jobs_activity():
    sim = make_sim(**NO_LATENCY)
    sim.reset(np.random.default_rng(0), make_jobs(["ocean_cp", "canneal"], [1e12, 1e12], [4, 4]))
    sim.advance()
    sim.apply((0, None))
    sim.advance()
    sim.apply((0, None))
    # 8 threads on 4 cores: every thread has half a core, so each job's activity is 0.5 (qin.md §1.9)
    c, t = sim.c_true, sim.t_true
    np.testing.assert_allclose(sim.job_slowdown[0], cpu.interference_slowdown(0.5 * c[1], t[0]))
    np.testing.assert_allclose(sim.job_slowdown[1], cpu.interference_slowdown(0.5 * c[0], t[1]))
    assert sim.job_slowdown[0] > 1.0


def test_constant_power_integrates_to_p_times_t():
    sim = make_sim(servers=("i5-4690", "i5-6600"), profile_latency_s=0.3, decision_latency_s=0.0)
    sim.reset(np.random.default_rng(0), make_jobs(["fft"], [3e10], [4]))
    p_idle = sim.power_w.copy()
    sim.advance()
    sim.apply((0, None))
    p_busy = sim.power_w[0]
    assert p_busy > p_idle[0]
    assert not sim.advance()
    end = sim.finish_s[0]
    # the idle server draws a constant power for the whole episode
    assert sim.server_energy_j[1] == pytest.approx(p_idle[1] * end, rel=1e-12)
    # the busy one: idle during the 0.3 s of profiling, then one constant busy power until the end
    assert sim.server_energy_j[0] == pytest.approx(p_idle[0] * 0.3 + p_busy * (end - 0.3), rel=1e-12)
    assert sim.metrics()["energy_j"] == pytest.approx(sim.server_energy_j.sum(), rel=1e-12)


def test_power_matches_the_core_table_model():
    sim = make_sim(servers=("i5-4690", "i7-4790"), **NO_LATENCY)
    sim.reset(np.random.default_rng(0),
              make_jobs(["radix", "water_spatial", "memcached"], [1e12, 1e12, 1e12], [4, 4, 6]))
    for s, lv in ((0, 1), (1, 3), (1, 2)):
        sim.advance()
        sim.apply((s, lv))
    k = sim.n_cores
    busy = (sim.core_threads > 0).astype(float)
    th = sim.alive_threads()
    beta = np.bincount(sim.thread_core[th], sim.beta[sim.thread_job[th]], minlength=k) / np.maximum(
        sim.core_threads, 1)
    # the i7-4790's 4 physical cores run 10 threads: 2-3 per core, so its dynamic and DRAM-traffic power (the
    # work-proportional terms) carry the SMT yield (A22); one thread per core on the i5-4690
    gain = np.where(sim.core_threads > 1, sim.cores.smt_yield, 1.0)
    assert np.all(gain[4:] == cpu.SMT_YIELD) and np.all(gain[:4] == 1.0)
    rows = np.arange(k)
    dynamic = busy * sim.cores.dyn_w[rows, sim.core_level] * (1 - 0.5 * beta) * gain
    traffic = busy * beta * gain * cpu.DRAM_W_PER_GBS * (sim.cores.dram_bw_gbs / sim.cores.cores)[sim.server_of_core]
    static = busy * sim.cores.leak_w[rows, sim.core_level] + (1 - busy) * sim.cores.idle_w
    expected = np.bincount(sim.server_of_core, dynamic + traffic + static) + sim.cores.uncore_w + sim.cores.dram_idle_w
    np.testing.assert_allclose(sim.power_w, expected, rtol=1e-12)
    one_thread = sim.cores.server_power_w(sim.core_level, busy, beta)[0]  # the CoreTable model, one thread a core
    assert sim.power_w[0] == pytest.approx(one_thread, rel=1e-12)


def test_dynamic_only_keeps_eq12():
    sim = make_sim(power_terms="dynamic_only", **NO_LATENCY)
    sim.reset(np.random.default_rng(0), make_jobs(["lu_cb"], [1e11], [1]))
    assert sim.power_w[0] == 0.0  # no static, uncore or DRAM term
    sim.advance()
    sim.apply((0, None))
    act = 1 - 0.5 * sim.beta[0]
    assert sim.power_w[0] == pytest.approx(sim.cores.dyn_w[0, 3] * act)


@pytest.mark.parametrize("level", [0, 1, 2])
def test_eq19_identity_busy_core_in_the_simulator(level):
    sim = make_sim(**NO_LATENCY)
    sim.reset(np.random.default_rng(0), make_jobs(["lu_cb"], [5e9], [1]))
    place_all(sim, [0], [level])  # linux applies the job's V/F hint to its core
    core = sim.thread_core[0]
    f = sim.freq_hz[core, level]
    expected = 1 - f / sim.f_high_hz[core]
    assert sim.core_pl()[core] == pytest.approx(expected, rel=1e-12)  # busy for the whole elapsed time
    assert sim.job_pl()[0] == pytest.approx(expected, rel=1e-12)
    assert sim.metrics()["pl_mean"] == pytest.approx(expected, rel=1e-12)


def test_scheduler_latency_fifo_and_kubernetes():
    """A27: 0.18 s of profiling + CF and a 0.09 s decision per job. With one server there is one profiling slot
    (one per two servers): the next job's profiling overlaps this one's decision, so jobs leave every 0.18 s; with
    two slots two jobs are profiled at once and the sequential decisions set the pace (0.09 s)."""
    jobs = make_jobs(["fft"] * 3, [1e12] * 3, [4] * 3)
    sim = make_sim()
    sim.reset(np.random.default_rng(0), jobs)
    times = []
    while sim.advance():
        times.append(sim.now)
        sim.apply((0, None))
    np.testing.assert_allclose(times, [0.27, 0.45, 0.63])
    np.testing.assert_allclose(sim.start_s, [0.27, 0.45, 0.63])
    assert sim.metrics()["dispatch_overhead_s"] == pytest.approx(0.81)  # the latency charged, 3 x 0.27
    two = make_sim(profiling_slots=2)
    two.reset(np.random.default_rng(0), make_jobs(["fft"] * 4, [1e12] * 4, [4] * 4))
    place_all(two, [0, 0, 0, 0])
    # jobs 0, 1 profiled at 0.18, decided at 0.27 and 0.36; jobs 2, 3 profiled at 0.36, decided at 0.45, 0.54
    np.testing.assert_allclose(two.start_s, [0.27, 0.36, 0.45, 0.54])
    k8s = make_sim(profile_latency_s=0.0, decision_latency_s=0.005)
    k8s.reset(np.random.default_rng(0), jobs)
    place_all(k8s, [0, 0, 0])
    np.testing.assert_allclose(k8s.start_s, [0.005, 0.010, 0.015])


def test_overlapped_decisions_delay_only_their_own_job():
    """docs §5.4 ``decision_mode="overlapped"``: each job's decision latency delays that job only (decisions of
    different jobs overlap), so with two profiling slots the jobs leave 0.09 s after their profiles end; the serial
    stage (Alg. 1's loop) spaces them by the decision latency."""
    starts = {}
    for mode in ("serial", "overlapped"):
        sim = make_sim(profiling_slots=2, decision_mode=mode)
        sim.reset(np.random.default_rng(0), make_jobs(["fft"] * 4, [1e12] * 4, [4] * 4))
        place_all(sim, [0, 0, 0, 0])
        starts[mode] = sim.start_s.copy()
        assert sim.metrics()["dispatch_overhead_s"] == pytest.approx(4 * 0.27)  # the same latency charged
    np.testing.assert_allclose(starts["serial"], [0.27, 0.36, 0.45, 0.54])
    # jobs 0, 1 profiled at 0.18, placed at 0.27; jobs 2, 3 profiled at 0.36, placed at 0.45
    np.testing.assert_allclose(starts["overlapped"], [0.27, 0.27, 0.45, 0.45])
    with pytest.raises(ValueError, match="decision_mode"):
        make_sim(decision_mode="parallel").reset(np.random.default_rng(0), make_jobs(["fft"], [1e12], [4]))


def test_dac_profiles_the_batch_then_dispatches_in_rank_order():
    apps = ["ocean_cp", "water_spatial", "radix", "blackscholes", "canneal"]
    jobs = make_jobs(apps, [1e11] * 5, [4] * 5)
    sim = make_sim(admission="dac_H_desc")
    sim.reset(np.random.default_rng(1), jobs)
    order, times = [], []
    while sim.advance():
        order.append(sim.pending_job)
        times.append(sim.now)
        sim.apply((0, None))
    keys = sch.dac_keys("H_desc", sim.pred_mips, sim.pred_energy, sim.pred_c)
    np.testing.assert_array_equal(order, np.argsort(keys, kind="stable"))
    _, cost = sch.dac_double_and_rank(keys)
    np.testing.assert_allclose(times, 5 * 0.18 + cost + 0.09 * np.arange(1, 6))


def test_dac_dispatches_when_the_queue_is_full_not_at_the_wait():
    """Regression: arrivals during a DAC wait used to be ignored until the wait ended."""
    jobs = make_jobs(["fft", "lu_cb", "radix", "barnes"], [1e10] * 4, [4] * 4, arrivals=[0.0, 1.0, 2.0, 10.0])
    sim = make_sim(admission="dac_E_asc", dac_queue_len=3, dac_wait_s=5.0)
    sim.reset(np.random.default_rng(0), jobs)
    times = []
    while sim.advance():
        times.append(sim.now)
        sim.apply((0, None))
    # the queue is full at t = 2 (not the 5 s wait): 3 x 0.18 s profiling + ranking, then one decision each;
    # the last job arrives alone and is dispatched at once (no more arrivals to wait for)
    _, cost = sch.dac_double_and_rank(np.zeros(3))
    np.testing.assert_allclose(times[:3], 2.0 + 3 * 0.18 + cost + 0.09 * np.arange(1, 4))
    assert times[3] == pytest.approx(10.0 + 0.18 + 1e-6 * 1 + 0.09)


def test_one_sequential_scheduler_under_random_arrivals():
    """Property: one job in service at a time (no scheduler event may start a second one), FIFO and DAC."""
    rng = np.random.default_rng(0)
    arrivals = np.sort(np.round(rng.uniform(0, 3, 30) / 0.09) * 0.09)  # many coincide with decision times
    jobs = make_jobs(["fft"] * 30, [1e9] * 30, [1] * 30, arrivals=arrivals)
    for admission in ("fifo", "dac_H_desc"):
        sim = make_sim(servers=("i5-4690", "i7-4790"), admission=admission)
        sim.reset(np.random.default_rng(0), jobs)
        while sim.advance():
            sim.apply((sim.pending_job % 2, None))
        gaps = np.diff(np.sort(sim.dispatch_s))
        assert gaps.min() >= 0.09 - 1e-9  # at least one decision latency between dispatches


def test_poisson_arrivals_and_flowtime():
    jobs = make_jobs(["fft", "lu_cb"], [1e10, 1e10], [4, 4], arrivals=[0.0, 100.0])
    sim = make_sim(**NO_LATENCY)
    sim.reset(np.random.default_rng(0), jobs)
    place_all(sim, [0, 0])
    assert sim.start_s[1] == pytest.approx(100.0)
    m = sim.metrics()
    assert np.all(sim.im_n() == 0.0)  # nothing left on any core
    assert m["makespan_s"] == pytest.approx(sim.finish_s.max())
    assert m["flowtime_s"] == pytest.approx(float((sim.finish_s - sim.arrival_s).sum()))
    assert m["mean_jct_s"] == pytest.approx(float((sim.finish_s - sim.arrival_s).mean()))
    assert m["edp_js"] == pytest.approx(m["energy_j"] * m["makespan_s"])


def _episode(seed: int, node_policy) -> tuple[dict, np.ndarray]:
    sim = QinSim(cpu.build_core_table(["i5-4690", "i7-4790"]), QinSimConfig(node_policy=node_policy))
    sim.reset(np.random.default_rng(seed), qj.generate_jobs("rw", 12, seed=seed, mean_runtime_s=2.0))
    rng = np.random.default_rng(seed)
    while sim.advance():
        p = sim.prediction(sim.pending_job)
        s, lv = sch.qin_cluster_choose(p.tolerated, p.caused, p.mips, p.energy_j, p.runtime_s, sim.t_server,
                                       sim.c_server, sim.load_instr, rng, "energy")
        sim.apply((s, lv))
    return sim.metrics(), sim.finish_s.copy()


@pytest.mark.parametrize("node", ["linux", "sniper-pinned", "qin-node"])
def test_determinism_under_a_seed(node):
    policy = (lambda: QinNodePolicy(focus="energy")) if node == "qin-node" else (lambda: node)
    m1, f1 = _episode(3, policy())
    m2, f2 = _episode(3, policy())
    assert m1 == m2
    np.testing.assert_array_equal(f1, f2)
    m3, _ = _episode(4, policy())
    assert m3 != m1


def test_conservation_everything_finishes():
    m, finish = _episode(5, "linux")
    assert m["jobs_done"] == m["jobs_total"] == 12
    assert np.all(np.isfinite(finish))


def test_external_node_decisions_each_period():
    sim = make_sim(node_policy=AgentNodeLevel(), control_period_s=0.01, **NO_LATENCY)
    sim.reset(np.random.default_rng(0), make_jobs(["fft"], [2e8], [2]))
    assert sim.advance() and sim.decision_kind == "place"
    sim.apply((0, None))
    ticks = 0
    while sim.advance():
        assert sim.decision_kind == "node"
        assert sim.now == pytest.approx((ticks + 1) * 0.01)
        ticks += 1
        sim.apply(NodeDecision(level_cores=slice(None), levels=np.zeros(sim.n_cores, dtype=int)))  # lowest level
        assert np.all(sim.core_level == 0)
        # per-period measurements: both busy cores retired instructions
        assert np.count_nonzero(sim.period_instr) == 2
    assert sim.done and ticks > 0
    with pytest.raises(ValueError, match="no decision is pending"):
        sim.apply((0, None))


def test_node_policies_decide_without_changing_the_simulator():
    """A node policy's hooks return a NodeDecision; the simulator alone applies it."""
    sim = make_sim(node_policy=AgentNodeLevel(), **NO_LATENCY)
    sim.reset(np.random.default_rng(0), make_jobs(["fft", "barnes"], [1e9, 1e9], [3, 3]))
    for _ in range(2):
        sim.advance()
        sim.apply((0, None))
    assert sim.advance() and sim.decision_kind == "node"
    before = (sim.thread_core.copy(), sim.core_level.copy(), sim.thread_rate.copy(), sim.migrations)
    trial = QinNodePolicy(focus="energy", remap="period")
    trial.reset(sim, np.random.default_rng(0))
    decision = trial.control(sim, np.array([0]))
    assert isinstance(decision, NodeDecision) and decision.threads is not None
    np.testing.assert_array_equal(sim.thread_core, before[0])
    np.testing.assert_array_equal(sim.core_level, before[1])
    assert sim.migrations == before[3]
    sim.apply(NodeDecision())  # keep everything: the rates are those before the trial
    np.testing.assert_allclose(sim.thread_rate, before[2])


def test_phase_draws_are_common_across_policies():
    """Thread i's phase in period k does not depend on where it runs (common random numbers)."""
    phases = []
    for server in (0, 1):
        sim = make_sim(servers=("i5-4690", "i5-6600"), node_policy=AgentNodeLevel(), **NO_LATENCY)
        sim.reset(np.random.default_rng(9), make_jobs(["fft"], [1e9], [4]))
        sim.advance()
        sim.apply((server, None))
        trace = []
        for _ in range(5):
            assert sim.advance()
            trace.append(sim.thread_phase[:4].copy())
            sim.apply(NodeDecision())
        phases.append(np.array(trace))
    np.testing.assert_array_equal(phases[0], phases[1])
    assert np.ptp(phases[0]) > 0  # they do vary


def test_truth_tables_shapes_and_consistency():
    cores = cpu.build_core_table(["i5-4690", "i5-6600", "i5-4690"])
    jobs = make_jobs(["fft", "barnes"], [1e10, 2e10], [4, 4])
    truth = truth_tables(cores, jobs)
    assert truth["mips"].shape == (2, 3, 4)
    np.testing.assert_allclose(truth["mips"][:, 0], truth["mips"][:, 2])  # same server type
    np.testing.assert_allclose(truth["runtime_s"], jobs.size_instr[:, None, None] / (truth["mips"] * 1e6))
    assert np.all(np.diff(truth["mips"], axis=2) > 0)  # faster at higher levels


def test_bad_input_raises_value_error_naming_the_field():
    with pytest.raises(ValueError, match="admission"):
        QinSimConfig(admission="lifo").validate()
    with pytest.raises(ValueError, match="node_policy"):
        make_sim(node_policy="cfs")
    with pytest.raises(ValueError, match="control_period_s"):
        make_sim(control_period_s=0.0)
    with pytest.raises(ValueError, match="cores"):
        QinSim(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="servers"):
        cpu.build_core_table([])
    sim = make_sim()
    sim.reset(np.random.default_rng(0), make_jobs(["fft"], [1e10], [4]))
    with pytest.raises(ValueError, match="no decision is pending"):
        sim.apply((0, None))
    sim.advance()
    with pytest.raises(ValueError, match="server must be"):
        sim.apply((3, None))
    with pytest.raises(ValueError, match="vf_level"):
        sim.apply((0, 7))
    with pytest.raises(ValueError, match="pending"):
        sim.advance()


def test_large_cluster_completes_quickly():
    """A 100-server, 1,000-job batch completes (the 1,000-server run is in benchmarks/bench_qin.py)."""
    names = list(cpu.WORKER_TYPES)
    cores = cpu.build_core_table([names[i % len(names)] for i in range(100)])
    sim = QinSim(cores, QinSimConfig(profile_latency_s=0.0, decision_latency_s=0.005))
    sim.reset(np.random.default_rng(0), qj.generate_jobs("rw", 1000, seed=0))
    rng = np.random.default_rng(0)
    t0 = time.process_time()
    while sim.advance():
        sim.apply((sch.kubernetes_choose(sim.jobs_on, sim.cores_per_server, sim.mem_gb, rng), None))
    assert sim.done and sim.metrics()["jobs_done"] == 1000
    assert time.process_time() - t0 < 20.0


def test_horizon_truncates_and_integrates_to_it():
    sim = make_sim(horizon_s=5.0, **NO_LATENCY)
    sim.reset(np.random.default_rng(0), make_jobs(["fft"], [1e13], [4]))
    sim.advance()
    sim.apply((0, None))
    p = sim.power_w[0]
    assert not sim.advance()
    assert sim.truncated and not sim.done and sim.now == 5.0
    assert sim.energy_j == pytest.approx(p * 5.0, rel=1e-12)
    assert sim.metrics()["jobs_done"] == 0.0


def test_hyper_threading_core_runs_two_threads_at_the_smt_yield():
    """A22: the i7-4790's 8 logical processors are 4 physical cores; two threads on one core share it with the SMT
    yield (1.3, Intel's measurement: each runs at 0.65 of a lone thread), a lone thread runs at full speed, and
    schedulers still see Table 2's 8 cores."""
    sim = make_sim(servers=("i7-4790",), **NO_LATENCY)
    assert sim.n_cores == 4 and sim.view().cores.tolist() == [8]
    sim.reset(np.random.default_rng(0), make_jobs(["lu_cb", "lu_cb"], [4e12, 5e12], [4, 1]))
    for _ in range(2):  # both jobs placed; the episode runs on (long jobs)
        assert sim.advance()
        sim.apply((0, None))
    alone = 1.0 / tau(sim, 0, 0, 3)  # stand-alone instructions per second
    on_core = sim.core_threads[sim.thread_core[:5]]
    rates = sim.thread_rate[:5] * sim.job_slowdown[sim.thread_job[:5]]  # without the interference slowdown
    expected = np.where(on_core > 1, cpu.SMT_YIELD / on_core, 1.0) * alone
    np.testing.assert_allclose(rates, expected, rtol=1e-12)
    assert on_core.max() == 2  # the fifth thread shares a core with one of the first four
    ones = QinSim(cpu.build_core_table(["i7-4790"], smt_yield=1.0), QinSimConfig(**NO_LATENCY))
    ones.reset(np.random.default_rng(0), make_jobs(["lu_cb", "lu_cb"], [4e12, 5e12], [4, 1]))
    place_all(ones, [0, 0])  # physical cores only: two threads on a core get half of it each
    assert ones.done
