"""PowerFlow workloads (Gu et al. §6.1, §6.4; docs/families/powerflow.md, §6.3): job traces and their DL jobs.

- :func:`alibaba_like_trace`: the seeded synthetic stand-in for the paper's Alibaba PAI subset
  (1901 jobs in 24 h, §6.1). Spec §6.3 [A] defaults: Poisson arrivals (mean 86400/1901 = 45.45 s),
  requested GPUs {1: .75, 2: .10, 4: .08, 8: .05, 16: .015, 32: .005}, lognormal durations (median
  16 min, sigma 1.3, truncated to [2 min, 24 h]); durations are then rescaled so the offered load
  ``sum(n * duration) / (24 h * G)`` equals ``rho`` (default 0.8 on 128 GPUs, the calibration knob).
  ``span_s`` stretches time: the same number of arrivals over ``span_s`` (interarrivals x ``span_s / 24 h``) with
  ``rho`` fixed rescales every duration by the same factor (the ``alibaba1901-long`` scenario: 16 days, jobs of
  hours to days, the premise under which §4 calls the 4-minute pre-run "rather small").
- :func:`gavel_trace`: the Gavel/Philly generator of the sensitivity traces (§6.4 "following [47]"):
  scale factor 1/2/4/8 w.p. .70/.10/.15/.05, duration ``60 * 10^U(1.5, 3)`` s w.p. 0.8 else
  ``60 * 10^U(3, 4)`` s, Poisson arrivals; ``duration_scale`` shortens jobs for RL (docs/families/powerflow.md [A]).
- :func:`to_powerflow_jobs`: a :class:`~joulegym.workloads.traces.JobTrace` (synthetic or loaded by
  :func:`~joulegym.workloads.traces.load_trace`) into the arrays the simulator runs. Model names map onto the
  catalog with :func:`~joulegym.workloads.dl_models.canonical_model` (ResNet-50 and BERT have their own models;
  other networks run as a substitute and unknown names as a random Table 1 model, both warned);
  missing models and batch sizes are drawn uniformly from the Table 1 pools (docs/families/powerflow.md); each
  job keeps its source's isolated run time (``duration_mode="trace"``, ``iterations = duration /
  T_iter(model, BS, n_req, f_max)``, following [31, 47]) or runs the trace's iterations (``"iterations"``), see
  docs/families/powerflow.md §3 "Real traces".
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from joulegym.workloads import dl_models as dm
from joulegym.workloads.traces import JobTrace

ALIBABA_JOBS = 1901  # §6.1
ALIBABA_SPAN_S = 86400.0  # §6.1: 24 h
ALIBABA_GPU_DIST = {1: 0.75, 2: 0.10, 4: 0.08, 8: 0.05, 16: 0.015, 32: 0.005}  # docs/families/powerflow.md [A]
ALIBABA_DUR_MEDIAN_S = 16 * 60.0  # docs/families/powerflow.md [A]
ALIBABA_DUR_SIGMA = 1.3  # docs/families/powerflow.md [A]
ALIBABA_DUR_RANGE_S = (120.0, 86400.0)  # docs/families/powerflow.md [A]
GAVEL_SCALE_DIST = {1: 0.70, 2: 0.10, 4: 0.15, 8: 0.05}  # Gavel scheduler/utils.py (docs/families/powerflow.md)
# duration_mode="iterations" warns when the isolated GPU-hours move by more than this: 5 %, above the A100 fits'
# MAPE (1-3 %, dl_models.A100_FITTED), so ElasticFlow's Philly iterations on A100 pass quietly
WORK_CHANGE_TOL = 0.05


def _trace(submit, n, dur, source, models=None, bss=None) -> JobTrace:
    k = len(submit)
    return JobTrace(
        job_id=np.array([str(i) for i in range(k)]),
        submit_time_s=np.asarray(submit, dtype=float) - float(submit[0]) if k else np.zeros(0),
        num_gpus=np.asarray(n, dtype=np.int64),
        duration_s=np.asarray(dur, dtype=float),
        model=np.asarray(models if models is not None else [""] * k, dtype=object).astype(str),
        batch_size=np.asarray(bss if bss is not None else np.zeros(k), dtype=np.int64),
        iterations=np.full(k, np.nan),
        source=source,
    )


def alibaba_like_trace(num_jobs: int = ALIBABA_JOBS, *, seed: int = 0, num_gpus: int = 128, rho: float = 0.8,
                       span_s: float = ALIBABA_SPAN_S) -> JobTrace:
    """Synthetic Alibaba-like trace (docs/families/powerflow.md): ``num_jobs`` Poisson arrivals over about
    ``span_s``, durations
    rescaled so the offered load over ``span_s`` on ``num_gpus`` GPUs is ``rho``."""
    if num_jobs < 1:
        raise ValueError(f"num_jobs must be >= 1, got {num_jobs}")
    if not rho > 0:
        raise ValueError(f"rho must be > 0, got {rho}")
    if not span_s > 0:
        raise ValueError(f"span_s must be > 0, got {span_s}")
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(span_s / num_jobs, size=num_jobs)
    gaps[0] = 0.0
    submit = np.cumsum(gaps)
    sizes = np.array(list(ALIBABA_GPU_DIST))
    n = rng.choice(sizes, size=num_jobs, p=np.array(list(ALIBABA_GPU_DIST.values())))
    n = np.minimum(n, num_gpus)
    dur = np.exp(np.log(ALIBABA_DUR_MEDIAN_S) + ALIBABA_DUR_SIGMA * rng.standard_normal(num_jobs))
    dur = np.clip(dur, *ALIBABA_DUR_RANGE_S)
    dur *= rho * span_s * num_gpus / float(np.sum(n * dur))  # offered load = rho exactly
    return _trace(submit, n, dur, f"synthetic alibaba-like (seed={seed}, jobs={num_jobs}, rho={rho}, G={num_gpus}, "
                                  f"span={span_s / 86400:g} d)")


def gavel_trace(num_jobs: int = 100, *, seed: int = 0, mean_interarrival_s: float = 600.0,
                duration_scale: float = 1.0, size_multiplier: int = 1, max_gpus: int | None = None,
                initial_jobs: int = 0) -> JobTrace:
    """The Gavel (Philly-derived) generator used for the §6.4 sensitivity traces (docs/families/powerflow.md)."""
    if num_jobs < 1:
        raise ValueError(f"num_jobs must be >= 1, got {num_jobs}")
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(mean_interarrival_s, size=num_jobs)
    gaps[: max(1, initial_jobs)] = 0.0
    submit = np.cumsum(gaps)
    sizes = np.array(list(GAVEL_SCALE_DIST))
    n = rng.choice(sizes, size=num_jobs, p=np.array(list(GAVEL_SCALE_DIST.values()))) * int(size_multiplier)
    if max_gpus is not None:
        n = np.minimum(n, max_gpus)
    short = rng.random(num_jobs) < 0.8
    expo = np.where(short, rng.uniform(1.5, 3.0, num_jobs), rng.uniform(3.0, 4.0, num_jobs))
    dur = 60.0 * 10.0**expo * duration_scale
    return _trace(submit, n, dur, f"gavel generator (seed={seed}, jobs={num_jobs}, interval={mean_interarrival_s})")


@dataclass(frozen=True)
class DLJobs:
    """Per-job columns the PowerFlow simulator runs (sorted by submit time).

    :param model: Table 1 model name per job.
    :param batch_size: global batch size BS (fixed by the user, never changed).
    :param n_req: GPUs the user requested (honoured by the non-elastic baselines).
    :param iterations: iterations to run (the termination condition).
    """

    job_id: np.ndarray
    submit_s: np.ndarray
    model: np.ndarray
    batch_size: np.ndarray
    n_req: np.ndarray
    iterations: np.ndarray
    source: str = ""

    def __len__(self) -> int:
        return int(self.submit_s.size)


DURATION_MODES = ("auto", "trace", "iterations")


def to_powerflow_jobs(trace: JobTrace, *, device: str = "v100", seed: int = 0, gpn: int = 8,
                      iterations_scale: float = 1.0, duration_mode: str = "auto") -> DLJobs:
    """Turn a trace into PowerFlow jobs (model and batch-size completion, the work of each job).

    Models: a name of a catalog network runs as itself (ResNet-50, BERT and the Table 1 models);
    a network the catalog lacks runs as its substitute (:data:`~joulegym.workloads.dl_models.SUBSTITUTES`) and an
    unknown name as a Table 1 model drawn at random; both warn (``UserWarning`` naming the models, the jobs and
    the change of work). A trace without model names (the synthetic generators, Pollux's Philly) draws models
    silently, the documented completion. A substituted or drawn model never keeps the trace's batch size: it
    takes the nearest batch of its own pool (substitute) or a uniform draw from it (drawn), at least ``n_req``.

    Work, ``duration_mode``:

    - ``"trace"``: each job keeps the isolated run time its source implies (``duration_s``: ElasticFlow's A100
      ``duration``, Gavel's ``total_steps`` over its own measured throughput, a Philly run time): it runs
      ``duration / T_iter(model, BS, n_req, f_max)`` iterations. A job without a duration is an error.
    - ``"iterations"``: the trace's iteration count where it has one (else the duration as above). When the job
      also has a duration and its catalog model runs those iterations in a different time (another network's
      steps, another GPU), the change of GPU-hours is warned.
    - ``"auto"`` (default): ``"trace"`` when every job has a duration (real traces with run times, the
      synthetic generators), else ``"iterations"``.

    :raises ValueError: an unknown ``duration_mode``; a job with a non-positive GPU count; a job whose model is
        named and whose batch is impossible (below one sample per GPU, or above the model's
        :data:`~joulegym.workloads.dl_models.MAX_LOCAL_BS` per GPU); ``"trace"`` with a missing duration.
    """
    if duration_mode not in DURATION_MODES:
        raise ValueError(f"duration_mode={duration_mode!r} is not one of {DURATION_MODES}")
    k = len(trace)
    if k == 0:
        raise ValueError("trace is empty: a PowerFlow episode needs at least one job")
    rng = np.random.default_rng(seed)
    dm.hardware(device)  # validates the device name
    models = np.empty(k, dtype=object)
    bss = np.zeros(k, dtype=np.int64)
    iters = np.zeros(k)
    n_req = np.asarray(trace.num_gpus, dtype=np.int64)
    if np.any(n_req < 1):
        raise ValueError(f"num_gpus must be >= 1 for every job; got {int(n_req.min())}")
    durations, has_duration, mode = _durations_and_mode(trace, duration_mode)
    draws_model = rng.integers(0, len(dm.MODEL_NAMES), size=k)
    draws_bs = rng.random(k)
    substituted: dict[tuple[str, str], list[int]] = {}
    for i in range(k):
        raw = str(trace.model[i])
        name = dm.canonical_model(raw) if raw else None
        exact = name is not None and not dm.is_substitute(raw)
        if name is None:
            name = dm.MODEL_NAMES[draws_model[i]]
        pool = np.array(dm.CATALOG[name].bs_pool)
        bs = int(trace.batch_size[i])
        if exact and bs > 0:
            _check_batch(str(trace.job_id[i]), raw, name, bs, int(n_req[i]))
        else:
            ok = pool[pool >= n_req[i]]
            ok = ok if ok.size else pool[-1:]
            if bs > 0 and raw and name is not None and dm.is_substitute(raw):  # the nearest batch of its own pool
                bs = int(ok[np.argmin(np.abs(np.log2(ok) - np.log2(bs)))])
            else:
                bs = int(ok[int(draws_bs[i] * ok.size)])
            if raw and not exact:
                substituted.setdefault((raw, name), []).append(i)
        models[i] = name
        bss[i] = bs
        it = float(trace.iterations[i])
        if mode == "trace" or not np.isfinite(it):
            dur = float(durations[i])
            if not np.isfinite(dur):
                raise ValueError(f"job {str(trace.job_id[i])!r} has neither iterations nor a duration")
            it = dur / _t_iter_fmax(name, bs, int(n_req[i]), device, gpn)
        iters[i] = max(1.0, np.ceil(it * iterations_scale))
    jobs = DLJobs(job_id=np.asarray(trace.job_id).astype(str), submit_s=np.asarray(trace.submit_time_s, dtype=float),
                  model=models.astype(str), batch_size=bss, n_req=n_req, iterations=iters, source=trace.source)
    _warn_work_change(trace, jobs, substituted, mode, has_duration, device, gpn, iterations_scale)
    return jobs


def _durations_and_mode(trace: JobTrace, duration_mode: str) -> tuple[np.ndarray, np.ndarray, str]:
    """The trace's run times (NaN: unknown), which jobs have one, and the work mode ``"auto"`` resolves to."""
    durations = np.asarray(trace.duration_s, dtype=float)
    bad = np.isinf(durations) | (durations < 0)  # NaN is "unknown"; inf or negative is an error (e.g. an overflow)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"job {str(trace.job_id[i])!r}: duration_s must be a finite run time >= 0 s, got "
                         f"{float(durations[i])!r} (an overflow? e.g. a huge trace.duration_scale)")
    has_duration = np.isfinite(durations)
    mode = duration_mode
    if mode == "auto":
        mode = "trace" if has_duration.all() else "iterations"
    if mode == "trace" and not has_duration.all():
        i = int(np.flatnonzero(~has_duration)[0])
        raise ValueError(f"duration_mode='trace' needs every job's isolated run time (duration_s); job "
                         f"{str(trace.job_id[i])!r} has none (a Gavel trace gets it from simulation_throughputs.json "
                         f"above the trace: see joulegym.workloads.traces.gavel_durations), or use "
                         f"duration_mode='iterations'")
    return durations, has_duration, mode


def _check_batch(job_id, raw: str, model: str, bs: int, n: int) -> None:
    """Reject a job whose named model cannot run its batch (impossible jobs are errors)."""
    if bs < n:
        raise ValueError(f"job {job_id!r}: batch_size {bs} of {raw!r} is below its {n} GPUs (at least one sample "
                         f"per GPU)")
    if bs / n > dm.MAX_LOCAL_BS[model]:
        raise ValueError(f"job {job_id!r}: batch_size {bs} of {raw!r} on {n} GPU(s) is {bs / n:g} samples per GPU; "
                         f"{model} runs at most {dm.MAX_LOCAL_BS[model]} per GPU (MAX_LOCAL_BS)")


def _job_hours(jobs: DLJobs, idx: np.ndarray, device: str, gpn: int) -> float:
    """GPU-hours of jobs ``idx`` run in isolation at (n_req, f_max) on the catalog model."""
    return float(sum(jobs.iterations[i] * _t_iter_fmax(str(jobs.model[i]), int(jobs.batch_size[i]),
                                                       int(jobs.n_req[i]), device, gpn) * jobs.n_req[i]
                     for i in idx)) / 3600.0


def _warn_work_change(trace: JobTrace, jobs: DLJobs, substituted: dict[tuple[str, str], list[int]], mode: str,
                      has_duration: np.ndarray, device: str, gpn: int, iterations_scale: float) -> None:
    """Warn when the conversion changes the trace's models or work (never silently)."""
    durations = np.asarray(trace.duration_s, dtype=float)
    n_req = np.asarray(trace.num_gpus, dtype=float)
    if substituted:
        by_name: dict[str, dict[str, list[int]]] = {}
        for (raw, name), idx in substituted.items():
            by_name.setdefault(raw, {})[name] = idx
        parts = []
        for raw, targets in sorted(by_name.items(), key=lambda kv: -sum(map(len, kv[1].values()))):
            idx = np.concatenate([np.asarray(v) for v in targets.values()])
            how = "substitute" if dm.is_substitute(raw) else "unknown, drawn at random"
            into = ", ".join(f"{name} x{len(v)}" for name, v in sorted(targets.items(), key=lambda kv: -len(kv[1])))
            known = idx[has_duration[idx]]
            if known.size:
                before = float(np.sum(durations[known] * n_req[known])) / 3600.0 * iterations_scale
                after = _job_hours(jobs, known, device, gpn)
                work = f"GPU-hours {before:.4g} -> {after:.4g}" if before > 0 else "no work"
            else:
                work = "work unknown: no duration in the trace"
            parts.append(f"{raw!r} ({how}; {idx.size} jobs -> {into}; {work})")
        kept = "each keeps its isolated run time" if mode == "trace" else "the trace's iterations run as these models"
        warnings.warn(f"{trace.source or 'trace'}: models the catalog lacks run as other networks ({kept}): "
                      + "; ".join(parts), UserWarning, stacklevel=3)
    if mode == "iterations":
        idx = np.flatnonzero(has_duration & np.isfinite(np.asarray(trace.iterations, dtype=float)))
        if idx.size:
            before = float(np.sum(durations[idx] * n_req[idx])) / 3600.0 * iterations_scale
            after = _job_hours(jobs, idx, device, gpn)
            if before > 0 and abs(after / before - 1.0) > WORK_CHANGE_TOL:
                warnings.warn(f"{trace.source or 'trace'}: duration_mode='iterations' runs the trace's iterations on "
                              f"the {device} models: {idx.size} jobs take {after:.4g} GPU-hours in isolation against "
                              f"the trace's {before:.4g} (x{after / before:.3g}); duration_mode='trace' keeps the "
                              f"trace's run times", UserWarning, stacklevel=3)


@lru_cache(maxsize=4096)
def _t_iter_fmax(model: str, bs: int, n: int, device: str, gpn: int) -> float:
    """Ground-truth step time at (n, f_max) under packing: the duration -> iterations conversion
    (docs/families/powerflow.md)."""
    hw = dm.hardware(device)
    return float(dm.iteration(dm.perf_params(model, device), hw, bs, n, hw.fmax_ghz, gpn=gpn)[0])


def motivating_jobs() -> DLJobs:
    """§3.1: VGG16 BS 64 requesting 1 GPU and GPT-2 BS 32 requesting 2, 1000 iterations each, both at t = 0."""
    return DLJobs(job_id=np.array(["A", "B"]), submit_s=np.zeros(2), model=np.array(["vgg16", "gpt2"]),
                  batch_size=np.array([64, 32]), n_req=np.array([1, 2]), iterations=np.array([1000.0, 1000.0]),
                  source="PowerFlow §3.1 motivating example")
