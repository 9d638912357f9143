"""Real traces as PowerFlow jobs (docs/families/powerflow.md §3, "Real traces"): no silent model substitution,
Gavel's run times kept, impossible jobs rejected, truncation loud."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from joulegym.baselines.powerflow_simulate import simulate
from joulegym.envs.powerflow import ClusterSpec, PowerFlowSim, SimConfig
from joulegym.workloads import dl_jobs
from joulegym.workloads import dl_models as dm
from joulegym.workloads.traces import JobTrace, gavel_durations, load_trace
from tests.reference_data import ref_file

GAVEL = ("gavel", "traces", "msr", "seed=0", "103959.trace")


def _trace(models, bss, n, durations=None, iterations=None) -> JobTrace:
    k = len(models)
    return JobTrace(job_id=np.array([str(i) for i in range(k)]), submit_time_s=np.arange(k, dtype=float) * 60.0,
                    num_gpus=np.asarray(n, dtype=np.int64),
                    duration_s=np.asarray(durations if durations is not None else np.full(k, 3600.0), dtype=float),
                    model=np.asarray(models, dtype=str), batch_size=np.asarray(bss, dtype=np.int64),
                    iterations=np.asarray(iterations if iterations is not None else np.full(k, np.nan), dtype=float),
                    source="test")


def _gpu_hours(jobs: dl_jobs.DLJobs, device: str) -> np.ndarray:
    """Isolated GPU-hours of each job on its catalog model at (n_req, f_max)."""
    return np.array([jobs.iterations[i] * dl_jobs._t_iter_fmax(str(jobs.model[i]), int(jobs.batch_size[i]),
                                                                int(jobs.n_req[i]), device, 8) * jobs.n_req[i]
                     for i in range(len(jobs))]) / 3600.0


def test_philly_models_run_as_themselves_and_keep_their_work():
    """Regression: ResNet-50 and BERT were run as ResNet18 and GPT-2, removing a fifth of the trace's GPU work
    without a word. Now no job of the file is substituted (no warning, even as an error) and, in either duration
    mode on A100, the isolated GPU-hours match the file's (``duration`` = iterations / ElasticFlow's A100
    throughput) within the fits' error."""
    trace = load_trace(ref_file("elasticflow", "philly_103959.csv"))
    offered = float(np.sum(trace.duration_s * trace.num_gpus)) / 3600.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for mode in ("trace", "iterations"):
            jobs = dl_jobs.to_powerflow_jobs(trace, device="a100", duration_mode=mode)
            assert {"resnet50", "bert"} <= set(jobs.model)
            assert (jobs.model == np.char.replace(np.char.lower(trace.model.astype(str)), "inception3",
                                                  "inceptionv3")).all()
            assert (jobs.batch_size == trace.batch_size).all()
            hours = _gpu_hours(jobs, "a100").sum()
            assert hours == pytest.approx(offered, rel=0.03 if mode == "iterations" else 1e-3), mode


def test_substitution_always_warns_with_the_models_and_the_work():
    """Any job run as another network warns, naming the trace's model, the catalog model and the GPU-hours;
    exact names and a trace without model names (the documented random completion) do not."""
    trace = _trace(["Transformer", "A3C", "vgg16", "ResNet-50"], [64, 0, 64, 128], [1, 1, 1, 2],
                   iterations=[1000.0, 1000.0, 1000.0, 1000.0])
    for mode in ("trace", "iterations"):
        with pytest.warns(UserWarning, match=r"'Transformer' \(substitute; 1 jobs -> gpt2 x1; GPU-hours") as record:
            dl_jobs.to_powerflow_jobs(trace, duration_mode=mode)
        text = " ".join(str(w.message) for w in record)
        assert "'A3C' (unknown, drawn at random" in text and "vgg16" not in text.split("'A3C'")[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dl_jobs.to_powerflow_jobs(_trace(["vgg16", "ResNet-50", "bert"], [64, 128, 64], [1, 2, 4]))
        dl_jobs.to_powerflow_jobs(dl_jobs.gavel_trace(20, seed=0))


def test_iterations_that_change_the_work_warn():
    """duration_mode="iterations" on another GPU (ElasticFlow's A100 iterations on V100) changes the work x5.5:
    loud, with the GPU-hours before and after."""
    trace = load_trace(ref_file("elasticflow", "philly_103959.csv"))
    with pytest.warns(UserWarning, match=r"duration_mode='iterations'.*\(x5\.\d+\)"):
        dl_jobs.to_powerflow_jobs(trace, device="v100", duration_mode="iterations")


def test_gavel_trace_keeps_its_isolated_run_times():
    """Regression: Gavel's steps were run as iterations of substitute models (offered load x10.8). The loader
    now reads each job's isolated run time from Gavel's own throughput table (``simulation_throughputs.json``
    above ``traces/``); the default ``duration_mode`` keeps it, so the GPU-hours offered are the trace's."""
    path = ref_file(*GAVEL)
    trace = load_trace(path)
    assert np.isfinite(trace.duration_s).all() and len(trace) == 986
    # one job by hand: the trace's second line, Recommendation (batch 8192) on 4 GPUs, measured on 1 GPU only
    i = int(np.flatnonzero(trace.job_id == "1")[0])
    table = __import__("json").loads(ref_file("gavel", "simulation_throughputs.json").read_text())["v100"]
    assert trace.duration_s[i] == pytest.approx(1079657 / table["('Recommendation (batch size 8192)', 1)"]["null"])
    assert trace.extra["throughput_scale_factor"][i] == 1
    with pytest.warns(UserWarning, match="each keeps its isolated run time"):
        jobs = dl_jobs.to_powerflow_jobs(trace, device="v100")
    hours = _gpu_hours(jobs, "v100")
    offered = trace.duration_s * trace.num_gpus / 3600.0
    # ceil to whole iterations: at most one iteration per job more
    assert np.all(hours >= offered * (1 - 1e-9)) and hours.sum() == pytest.approx(offered.sum(), rel=1e-3)


def test_drawn_or_substituted_models_never_keep_an_impossible_batch():
    """Regression: a model drawn at random kept the trace's batch (GPT-2 at batch 8192 on one GPU, 4,078 days).
    Every job of the Gavel trace now runs a batch its model can run: at least one sample per GPU, at most
    ``MAX_LOCAL_BS`` per GPU, from the model's pool when the model is not the trace's own."""
    trace = load_trace(ref_file(*GAVEL))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jobs = dl_jobs.to_powerflow_jobs(trace, device="v100")
    local = jobs.batch_size / jobs.n_req
    assert np.all(jobs.batch_size >= jobs.n_req)
    assert all(local[i] <= dm.MAX_LOCAL_BS[m] for i, m in enumerate(jobs.model))
    own = np.array([dm.canonical_model(m) is not None and not dm.is_substitute(m) for m in trace.model])
    foreign = ~own
    assert foreign.sum() > 400
    assert all(jobs.batch_size[i] in dm.CATALOG[jobs.model[i]].bs_pool for i in np.flatnonzero(foreign))
    assert (jobs.batch_size[own] == trace.batch_size[own]).all()
    hours = _gpu_hours(jobs, "v100") / jobs.n_req  # wall-clock hours in isolation
    assert hours.max() < 24 * 30  # no multi-year job


def test_impossible_jobs_are_rejected():
    """A named model with a batch it cannot run is an error naming the job, the batch and the limit."""
    with pytest.raises(ValueError, match=r"job '0': batch_size 8192 of 'gpt2' on 1 GPU\(s\).*at most 256"):
        dl_jobs.to_powerflow_jobs(_trace(["gpt2"], [8192], [1]))
    with pytest.raises(ValueError, match=r"batch_size 4 of 'vgg16' is below its 8 GPUs"):
        dl_jobs.to_powerflow_jobs(_trace(["vgg16"], [4], [8]))
    with pytest.raises(ValueError, match=r"duration_mode='trace' needs every job's isolated run time"):
        dl_jobs.to_powerflow_jobs(_trace(["vgg16"], [64], [1], durations=[np.nan], iterations=[10.0]),
                                  duration_mode="trace")
    with pytest.raises(ValueError, match=r"duration_mode='steps' is not one of"):
        dl_jobs.to_powerflow_jobs(_trace(["vgg16"], [64], [1]), duration_mode="steps")


def test_gavel_durations_rules():
    """The scale-factor fallback and unknown job types, on a hand-made table."""
    table = {"v100": {"('A (batch size 8)', 1)": {"null": 2.0}, "('A (batch size 8)', 4)": {"null": 6.0},
                      "('B', 1)": {"null": 0.0}}}
    dur, used = gavel_durations(np.array(["A (batch size 8)", "A (batch size 8)", "A (batch size 8)", "B", "C"]),
                                np.array([1, 2, 8, 1, 1]), np.array([10.0, 10.0, 60.0, 5.0, 5.0]), table)
    np.testing.assert_allclose(dur[:3], [5.0, 5.0, 10.0])
    assert np.isnan(dur[3:]).all() and list(used) == [1, 1, 4, 0, 0]
    with pytest.raises(ValueError, match=r"worker_type='k80'"):
        gavel_durations(np.array(["A"]), np.array([1]), np.array([1.0]), table, worker_type="k80")


def _long_job() -> dl_jobs.DLJobs:
    """One VGG16 job of about 20 days on one V100 (longer than the former 14-day default horizon)."""
    t = dl_jobs._t_iter_fmax("vgg16", 64, 1, "v100", 8)
    return dl_jobs.DLJobs(job_id=np.array(["long"]), submit_s=np.zeros(1), model=np.array(["vgg16"]),
                          batch_size=np.array([64]), n_req=np.array([1]), iterations=np.array([20 * 86400.0 / t]))


def test_truncation_is_loud_and_counted():
    """Regression: a run cut at its horizon warns and its metrics say how many jobs the average counts."""
    cfg = SimConfig(profiling=False, predictor="oracle", horizon_s=5 * 86400.0)
    jobs = dl_jobs.to_powerflow_jobs(_trace(["vgg16", "vgg16"], [64, 64], [1, 1], durations=[3600.0, 30 * 86400.0]))
    sim = PowerFlowSim(jobs, ClusterSpec(1, 8), cfg)
    with pytest.warns(RuntimeWarning, match=r"truncated at horizon_s=432000 s .*1 of 2 jobs finished"):
        while sim.advance():
            sim.apply({int(j): (1, sim.F - 1) for j in sim.ready_jobs()})
    m = sim.metrics()
    assert sim.truncated and (m["jobs_counted"], m["jobs_total"], m["truncated"]) == (1.0, 2.0, 1.0)
    with pytest.warns(RuntimeWarning, match="truncated"):
        r = simulate(_long_job(), "fifo", cluster=(1, 8), horizon_s=86400.0)
    assert r.truncated and r.metrics["jobs_counted"] == 0.0


def test_simulate_runs_until_every_job_is_done_by_default():
    """Regression: simulate() stopped at 14 days by default (75 of 876 Philly jobs counted)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = simulate(_long_job(), "fifo", cluster=(1, 8))
    assert not r.truncated and r.metrics["jobs_done"] == 1 and r.makespan_s > 14 * 86400.0
    assert math.isfinite(r.avg_jct_s)


def test_fuzz_findings_name_the_field():
    """Fuzz findings P1 and P4 (/tmp/fuzz-findings.md): a huge truth_noise failed inside scipy, an overflowing
    duration said the job had no duration; both now name the field."""
    with pytest.raises(ValueError, match=r"truth_noise must be in \[0, 1.0\]"):
        SimConfig(truth_noise=1e308).validate()
    trace = _trace(["vgg16"], [64], [1], durations=[math.inf])
    with pytest.raises(ValueError, match=r"job '0': duration_s must be a finite run time >= 0 s, got inf"):
        dl_jobs.to_powerflow_jobs(trace)
