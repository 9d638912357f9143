"""What the Qin simulator starts an episode from (Guan & Ababei, IEEE T-SUSC 2024; ``docs/families/qin.md`` §1.9,
§5.4): its settings (:class:`QinSimConfig`), the problem instance (:class:`QinInstance`: the jobs and what the
schedulers predict about them), the per-job predicted scores a scheduler reads (:class:`Prediction`) and the
stand-alone ground truth per (job, server type, V/F level) that the profiling oracles measure.

Section numbers (``qin.md §x``) and assumption ids (A1-A27) are those of ``docs/families/qin.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from joulegym.devices.cpu import CoreTable, energy_per_instruction_j, seconds_per_instruction
from joulegym.workloads.qin_jobs import QinJobs

ADMISSIONS = ("fifo", "dac_H_desc", "dac_E_asc", "dac_I_asc")
POWER_TERMS = ("full", "dynamic_only")
INTERFERENCE_MODES = ("literal_abs", "hinge")
# the decision stage (docs/families/qin.md §5.4): "serial", Alg. 1's one loop (a job's decision waits for the
# previous one's); "overlapped", each job's decision latency delays that job only
DECISION_MODES = ("serial", "overlapped")
FOCUSES = ("perf", "energy", "edp")
DCHOICE_RULES = ("random-of-top-d", "least-loaded-of-d")


@dataclass
class QinSimConfig:
    """Simulator settings (qin.md §1.9, §3.6-3.7, §5.4, §7.1). Every constant not from the paper is an
    assumption listed in ``docs/families/qin.md`` under its section.

    ``node_policy`` is a node-level inner policy (an object with the node hooks of
    :mod:`joulegym.envs.qin.node_policies`) or its registered name (``linux``, ``sniper-pinned``, ``qin-node``).
    ``level_hints``: a placement's V/F level is applied (the env's ``server_vf`` action mode); otherwise every job
    starts at the top level. ``focus``, ``interference_mode`` and ``dchoice_rule`` are the operator's settings that
    the view hands to the cluster schedulers (docs §5.1): the objective's focus, eq. 16's reading (A4) and the
    D-choice rule's Flist pick.
    """

    node_policy: Any = "linux"
    control_period_s: float = 0.01  # node-level control period (qin.md §7.1: 10 ms; 1 ms = the paper's fidelity)
    admission: str = "fifo"
    dac_queue_len: int = 100  # Fig. 12 settings: queue 100, wait 0, no sigma (rank all)
    dac_wait_s: float = 0.0
    sigma_dac_s: float | None = None
    profile_latency_s: float = 0.18  # A27: profiling + CF per job (Kubernetes: 0)
    decision_latency_s: float = 0.09  # A27: D-choice decision per job (Kubernetes: 0.005)
    profiling_slots: int | None = None  # jobs profiled at once (None: one per two servers, §4.1's 2 SCs per job)
    decision_mode: str = "serial"  # DECISION_MODES: Alg. 1's sequential loop, or the latencies of jobs overlapping
    phases: bool = True  # §1.9 CPI phases + AR(1) noise (only observed by node policies that measure)
    phase_mean_s: float = 0.02
    phase_low: float = 0.7
    phase_high: float = 1.3
    ar_rho: float = 0.8
    ar_sigma: float = 0.05
    power_terms: str = "full"
    oracle_noise: float = 0.05  # multiplicative N(1, sigma) noise of the built-in predictor (qin.md §1.9)
    horizon_s: float = 1e7
    record_traces: bool = False
    level_hints: bool = True
    focus: str = "perf"
    interference_mode: str = "literal_abs"
    dchoice_rule: str = "random-of-top-d"

    def validate(self) -> None:
        for name, allowed in (("admission", ADMISSIONS), ("power_terms", POWER_TERMS), ("focus", FOCUSES),
                              ("interference_mode", INTERFERENCE_MODES), ("dchoice_rule", DCHOICE_RULES),
                              ("decision_mode", DECISION_MODES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name}={getattr(self, name)!r} is not one of {allowed}")
        for name in ("control_period_s", "phase_mean_s", "horizon_s"):
            _check_finite(name, getattr(self, name), positive=True)
        for name in ("dac_wait_s", "profile_latency_s", "decision_latency_s", "ar_sigma", "oracle_noise"):
            _check_finite(name, getattr(self, name), positive=False)
        if self.sigma_dac_s is not None and not self.sigma_dac_s >= 0:
            raise ValueError(f"sigma_dac_s must be None or >= 0, got {self.sigma_dac_s!r}")
        for name in ("dac_queue_len", "profiling_slots"):
            value = getattr(self, name)
            if value is None and name == "profiling_slots":
                continue
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1{' or None' if name == 'profiling_slots' else ''}, "
                                 f"got {value!r}")
        if not 0 < self.phase_low <= self.phase_high:
            raise ValueError(f"phase_low/phase_high must satisfy 0 < low <= high, got {self.phase_low!r}, "
                             f"{self.phase_high!r}")
        if not 0 <= self.ar_rho < 1:
            raise ValueError(f"ar_rho must be in [0, 1), got {self.ar_rho!r}")


def _check_finite(name: str, value: Any, *, positive: bool) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or (value <= 0 if positive else value < 0):
        raise ValueError(f"{name} must be a finite number {'>' if positive else '>='} 0, got {value!r}")


class Prediction(NamedTuple):
    """What a scheduler knows about one job (never ground truth): CF-predicted scores (paper §4)."""

    tolerated: np.ndarray  # (15,)
    caused: np.ndarray  # (15,)
    mips: np.ndarray  # (N, L), eq. 17 (A1), one core, levels ascending
    energy_j: np.ndarray  # (N, L), whole job on one core of that SC
    runtime_s: np.ndarray  # (N, L), size_hat / (mips 1e6)
    size_instr: float  # alpha_hat


@dataclass(frozen=True)
class PredictedScores:
    """Every job's predicted scores over the SC columns (qin.md §1.3): ``mips``, ``energy_j``, ``runtime_s``
    ``(M, n_sc)``, ``tolerated``, ``caused`` ``(M, 15)``, ``size_instr`` ``(M,)``, and ``columns`` ``(N, L)``: the
    SC column of each (server, level)."""

    mips: np.ndarray
    energy_j: np.ndarray
    runtime_s: np.ndarray
    tolerated: np.ndarray
    caused: np.ndarray
    size_instr: np.ndarray
    columns: np.ndarray


@dataclass(frozen=True)
class QinInstance:
    """One episode's problem instance: the jobs and, optionally, the schedulers' predictions of them (``None``:
    the simulator's built-in oracle, ground truth x N(1, ``oracle_noise``))."""

    jobs: QinJobs
    predictions: PredictedScores | None = None


def server_types_of(cores: CoreTable) -> tuple[list, np.ndarray, np.ndarray]:
    """Distinct server types (order of first appearance), the type of each server and a big core of each type."""
    names = [s.name for s in cores.server_types]
    distinct = list(dict.fromkeys(names))
    type_of = np.array([distinct.index(n) for n in names], dtype=np.intp)
    first = [names.index(n) for n in distinct]
    return [cores.server_types[i] for i in first], type_of, np.asarray(cores.first_core)[first]


def truth_by_type(cores: CoreTable, jobs: QinJobs, power_terms: str = "full") -> dict[str, np.ndarray]:
    """Stand-alone ground truth per (job, server *type*, level) on one big core (qin.md §1.9; eq. 12-13, 17):
    ``mips`` (M, U, L), ``runtime_s`` (the whole job serially) and ``energy_j`` (size x the RAPL-like energy per
    instruction of :func:`joulegym.devices.cpu.energy_per_instruction_j`, the truth the profiling oracle of
    :mod:`joulegym.envs.qin.prediction` measures; ``dynamic_only``: eq. 12's term only), plus ``type_of`` (N,)."""
    types, type_of, core0 = server_types_of(cores)
    ipc = jobs.catalog.ipc(types)[jobs.app]  # (M, U)
    memlat = np.array([t.memlat for t in types])
    f = cores.freq_mhz[core0]  # (U, L), big core
    tau = seconds_per_instruction(jobs.cpi0[:, None, None], jobs.beta[:, None, None], ipc[:, :, None], f[None],
                                  memlat[None, :, None])
    levels = np.arange(f.shape[1])
    epi = np.stack([energy_per_instruction_j(t, levels[None, :], tau[:, u, :], jobs.beta[:, None],
                                             paper_dynamic_only=power_terms == "dynamic_only")
                    for u, t in enumerate(types)], axis=1)
    size = jobs.size_instr[:, None, None]
    return {"mips": 1e-6 / tau, "runtime_s": size * tau, "energy_j": size * epi, "type_of": type_of}


def truth_tables(cores: CoreTable, jobs: QinJobs, power_terms: str = "full") -> dict[str, np.ndarray]:
    """:func:`truth_by_type` expanded to every server: ``mips``, ``runtime_s``, ``energy_j`` as (M, N, L) (for
    tests and small clusters; large clusters should index :func:`truth_by_type` by ``type_of``)."""
    truth = truth_by_type(cores, jobs, power_terms)
    return {key: truth[key][:, truth["type_of"]] for key in ("mips", "runtime_s", "energy_j")}


def oracle_predictions(cores: CoreTable, jobs: QinJobs, rng: np.random.Generator, sigma: float,
                       power_terms: str = "full") -> PredictedScores:
    """The built-in predictor: ground truth x N(1, sigma) per job and entry (qin.md §1.9 profiling noise), with one
    column per (server type, level) as the CF matrices have (qin.md §1.3), so it stays small for 1,000 servers."""
    truth = truth_by_type(cores, jobs, power_terms)
    m, _, lv = truth["mips"].shape
    columns = truth["type_of"][:, None] * lv + np.arange(lv)[None, :]

    def noisy(x: np.ndarray) -> np.ndarray:
        return x * np.maximum(0.05, rng.normal(1.0, sigma, x.shape)) if sigma > 0 else x.copy()

    tolerated = np.clip(noisy(jobs.tolerated), 1.0, 100.0)
    caused = np.clip(noisy(jobs.caused), 0.0, 100.0)
    size = noisy(jobs.size_instr)
    mips = noisy(truth["mips"].reshape(m, -1))
    runtime = size[:, None] / (mips * 1e6)
    energy = noisy(truth["energy_j"].reshape(m, -1) / truth["runtime_s"].reshape(m, -1)) * runtime
    return PredictedScores(mips, energy, runtime, tolerated, caused, size, columns)
