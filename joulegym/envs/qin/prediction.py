"""Qin's profiling oracle and collaborative-filtering predictions (Guan & Ababei 2024, §4.1-4.3, Alg. 1 l. 5-8).

Every arriving app is "fast-profiled" on 2 random server configurations (SC = server type x V/F
level, §4.1); collaborative filtering then predicts the rest of its row in four utility matrices that
the env, Qin and the baselines share (docs/families/qin.md §2.1):

============ ====================== ============================================================
matrix       columns                entry
============ ====================== ============================================================
H            SCs                    MIPS of one thread on one core (eq. 17 in the MIPS form, A1)
E            SCs                    energy per instruction (nJ); a job's energy = alpha_hat x entry
t, c         the 15 SoIs            iBench tolerated / caused scores (§4.2)
============ ====================== ============================================================

- **Ground truth** (what profiling measures, before noise) comes from the §1.9 model of
  :mod:`joulegym.devices.cpu`: ``MIPS = 1/(tau 1e6)`` and ``E/instr`` of
  :func:`~joulegym.devices.cpu.energy_per_instruction_j` (the server loaded with copies of the app).
- **Offline rows** (§4.1: "we select a small number of applications (around 10%) and profile them on all
  different server configurations"): ``offline_fraction`` (default 0.1) of the catalog apps, at least 3, every
  entry measured once with noise; drawn from ``offline_seed``, so the offline campaign is a property of the
  cluster, not of the episode, and the trained filters are cached. Every other app is *held out*: its jobs
  arrive online and are known only through their 2 profiled SCs (with seed 0 the offline apps are 3 PARSEC
  apps, so every Splash-2 app of the RW mix is held out). ``offline_fraction=1.0`` trains on every app.
- **Online profiling** (§4.1, A6): per job, 2 distinct random SCs (their MIPS and energy), 2 random SoIs
  of ``t`` and 2 of ``c``; every measurement is ``truth x N(1, 0.05)`` [ASSUME]; the size estimate is
  ``alpha x N(1, 0.05)`` (the paper's scheduler knows ``alpha_m``, §5.2; we make it noisy too).
- **Fold-in**: each job's row is folded in against the frozen offline column factors
  (:meth:`~joulegym.envs.qin.predictors.CollaborativeFilter.fold_in`: the fixed point of the SGD
  fold-in, pulled towards the mean offline app with an empirical-Bayes strength), vectorised over the
  jobs: 10,000 jobs take well under a second, and no job triggers a re-factorisation. The full retrain
  every 10 arrivals (docs/families/qin.md §2.1) is ``refit_every=10``; it is off by default: each retrain is a
  full SVD + SGD fit of every matrix (~5 CPU s per 100-job episode in all) and, measured on 100 RW jobs (seeds
  0-2, ``offline_fraction=0.1``), it changes the errors on the unprofiled entries little (MIPS 10.0 % -> 10.4 %,
  energy 8.5 % -> 8.9 %, tolerated 11.2 -> 9.4 and caused 11.7 -> 11.5 points).
- **Accuracy** on the entries not profiled (100 RW jobs, seeds 0-2): with the default ``offline_fraction=0.1``,
  MIPS 10.0 % and energy 8.5 % relative error, tolerated and caused scores 11.2 and 11.7 points (of 100); with
  every app offline (1.0), 7.7 %, 6.1 %, 7.6 and 8.1 (the catalog has N(0, 5) per-SoI noise that no low-rank
  model predicts).

Predicted runtime ``T_hat = alpha_hat / (MIPS_hat 1e6)`` is the single-core-equivalent runtime of
docs/families/qin.md §3.5 (a ranking score, not the parallel runtime).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from joulegym.core.cache import BoundedCache
from joulegym.devices.cpu import N_LEVELS, N_SOI, ServerType, energy_per_instruction_j, get_server_type
from joulegym.envs.qin.model import PredictedScores
from joulegym.envs.qin.predictors import CollaborativeFilter
from joulegym.workloads.qin_jobs import QinCatalog, QinJobs, get_catalog

PROFILE_NOISE_SIGMA = 0.05  # N(1, 0.05) multiplicative profiling noise [ASSUME]
PROFILED_SCS = 2  # §4.1: "profile 0.05 s on any 2 SCs"
PROFILED_SOIS = 2  # A6: 2 random SoIs per interference matrix
MIN_OFFLINE_APPS = 3
NOISE_FLOOR = 0.01  # a noisy measurement never drops below 1 % of the truth
MATRICES = ("mips", "nj_per_instr", "t", "c")

_OFFLINE_CACHE: BoundedCache = BoundedCache(maxsize=32)


@dataclass(frozen=True)
class ServerConfigs:
    """The SC columns: every distinct server type x its levels (§1.3), type by type, levels ascending."""

    server_types: tuple[ServerType, ...]
    sc_type: np.ndarray
    sc_level: np.ndarray
    sc_freq_mhz: np.ndarray

    @property
    def n_sc(self) -> int:
        return int(self.sc_type.size)

    def columns(self, type_index: int | np.ndarray) -> np.ndarray:
        """Column indices of a type's levels: ``(L,)`` for one type, ``(N, L)`` for an array of types."""
        return np.asarray(type_index)[..., None] * N_LEVELS + np.arange(N_LEVELS)


def server_configs(servers: Sequence[str | ServerType]) -> tuple[ServerConfigs, np.ndarray]:
    """The SCs of a cluster and each server's type index (N,); ValueError on an empty/unknown list."""
    if isinstance(servers, str) or not isinstance(servers, Sequence) or len(servers) == 0:
        raise ValueError(f"servers must be a non-empty list of server types, got {servers!r}")
    instances = [get_server_type(server) for server in servers]
    distinct = tuple(dict.fromkeys(instances))
    position = {server: i for i, server in enumerate(distinct)}
    type_of_server = np.array([position[server] for server in instances], dtype=np.intp)
    sc_type = np.repeat(np.arange(len(distinct)), N_LEVELS)
    sc_level = np.tile(np.arange(N_LEVELS), len(distinct))
    freq = np.concatenate([server.levels_mhz for server in distinct])
    return ServerConfigs(distinct, sc_type, sc_level, freq), type_of_server


@dataclass(frozen=True)
class GroundTruth:
    """Stand-alone truth per catalog app and SC (one thread per core, §1.9): ``(A, n_sc)``."""

    mips: np.ndarray
    nj_per_instr: np.ndarray


def ground_truth(catalog: QinCatalog, scs: ServerConfigs, *, paper_dynamic_only: bool = False) -> GroundTruth:
    """MIPS and energy per instruction (nJ) of every catalog app on every SC."""
    mips, energy = [], []
    for server in scs.server_types:
        tau = catalog.seconds_per_instruction(server, server.levels_mhz)  # (A, L)
        mips.append(1.0 / (tau * 1e6))
        energy.append(1e9 * energy_per_instruction_j(server, np.arange(N_LEVELS)[None, :], tau,
                                                     catalog.beta[:, None], paper_dynamic_only=paper_dynamic_only))
    return GroundTruth(np.concatenate(mips, axis=1), np.concatenate(energy, axis=1))


@dataclass(frozen=True)
class JobPredictions(PredictedScores):
    """Predictions for a whole workload (never ground truth), per SC column (:class:`~joulegym.envs.qin.model.
    PredictedScores`: ``mips``, ``energy_j``, ``runtime_s`` ``(M, n_sc)``, ``tolerated``, ``caused`` ``(M, 15)``,
    ``size_instr`` ``(M,)``, ``columns`` ``(N, L)``), with the SCs and SoIs each job was profiled on."""

    profiled_scs: np.ndarray
    profiled_t_sois: np.ndarray
    profiled_c_sois: np.ndarray

    @property
    def n_jobs(self) -> int:
        return int(self.size_instr.size)


def with_size_estimates(predictions: JobPredictions, size_instr: np.ndarray) -> JobPredictions:
    """``predictions`` with every job's size estimate replaced by ``size_instr`` (``(M,)``, > 0) and the energy and
    runtime predictions made from it rescaled (a job's energy and runtime are its size times per-instruction
    entries)."""
    size = np.asarray(size_instr, dtype=float)
    if size.shape != predictions.size_instr.shape or not np.all(size > 0):
        raise ValueError(f"size_instr must be {predictions.size_instr.shape} positive sizes, got shape {size.shape}")
    factor = (size / predictions.size_instr)[:, None]
    return dataclasses.replace(predictions, size_instr=size, energy_j=predictions.energy_j * factor,
                               runtime_s=predictions.runtime_s * factor)


def _noisy(rng: np.random.Generator, truth: np.ndarray, sigma: float) -> np.ndarray:
    return truth * np.maximum(rng.normal(1.0, sigma, truth.shape), NOISE_FLOOR)


def offline_rows(rng: np.random.Generator, n_apps: int, offline_fraction: float) -> np.ndarray:
    """The catalog apps of the offline training campaign (§4.1): ``offline_fraction`` of them, at least 3, drawn
    from ``rng`` (the campaign's generator, seeded by ``offline_seed``)."""
    count = min(n_apps, max(MIN_OFFLINE_APPS, round(offline_fraction * n_apps)))
    return np.sort(rng.choice(n_apps, count, replace=False)) if count < n_apps else np.arange(n_apps)


def _offline_models(catalog: QinCatalog, scs: ServerConfigs, truth: GroundTruth, offline_fraction: float,
                    offline_seed: int, noise_sigma: float) -> dict[str, CollaborativeFilter]:
    rng = np.random.default_rng(offline_seed)
    rows = offline_rows(rng, len(catalog), offline_fraction)
    matrices = {
        "mips": _noisy(rng, truth.mips[rows], noise_sigma),
        "nj_per_instr": _noisy(rng, truth.nj_per_instr[rows], noise_sigma),
        "t": np.clip(_noisy(rng, catalog.tolerated[rows], noise_sigma), 0.0, 100.0),
        "c": np.clip(_noisy(rng, catalog.caused[rows], noise_sigma), 0.0, 100.0),
    }
    return {name: CollaborativeFilter(seed=offline_seed).fit(matrix) for name, matrix in matrices.items()}


class QinPredictor:
    """The profiling oracle and the four CF matrices of a cluster (see the module docstring).

    :param servers: the cluster's servers (names or :class:`~joulegym.devices.cpu.ServerType`), one per server.
    :param catalog: the app catalog (default: :func:`~joulegym.workloads.qin_jobs.get_catalog`).
    :param offline_fraction: share of catalog apps in the offline training rows (at least 3 apps).
    :param offline_seed: seed of the offline profiling campaign (and of the SGD order).
    :param noise_sigma: standard deviation of the multiplicative profiling noise.
    :param paper_dynamic_only: energy truth from eq. 12 alone (A20 flag).
    :param refit_every: retrain every matrix on the offline rows plus all profiled rows so far after this
        many arrivals (docs/families/qin.md §2.1: 10); ``None`` (default) never retrains.
    """

    def __init__(self, servers: Sequence[str | ServerType], *, catalog: QinCatalog | None = None,
                 offline_fraction: float = 0.1, offline_seed: int = 0, noise_sigma: float = PROFILE_NOISE_SIGMA,
                 paper_dynamic_only: bool = False, refit_every: int | None = None) -> None:
        if isinstance(offline_fraction, bool) or not isinstance(offline_fraction, int | float) or not (
                0.0 < offline_fraction <= 1.0):
            raise ValueError(f"offline_fraction must be in (0, 1], got {offline_fraction!r}")
        if isinstance(noise_sigma, bool) or not isinstance(noise_sigma, int | float) or not (0.0 <= noise_sigma < 1.0):
            raise ValueError(f"noise_sigma must be in [0, 1), got {noise_sigma!r}")
        if isinstance(offline_seed, bool) or not isinstance(offline_seed, int | np.integer) or offline_seed < 0:
            raise ValueError(f"offline_seed must be a whole number >= 0, got {offline_seed!r}")
        if refit_every is not None and (isinstance(refit_every, bool) or not isinstance(refit_every, int)
                                        or refit_every < 1):
            raise ValueError(f"refit_every must be None or a whole number >= 1, got {refit_every!r}")
        self.catalog = catalog if catalog is not None else get_catalog()
        self.scs, self.type_of_server = server_configs(servers)
        self.columns_by_server = self.scs.columns(self.type_of_server)
        self.noise_sigma = float(noise_sigma)
        self.paper_dynamic_only = bool(paper_dynamic_only)
        self.refit_every = refit_every
        self.offline_seed = int(offline_seed)
        self.truth = ground_truth(self.catalog, self.scs, paper_dynamic_only=self.paper_dynamic_only)
        key = (self.scs.server_types, id(self.catalog), float(offline_fraction), self.offline_seed,
               self.noise_sigma, self.paper_dynamic_only)
        cached = _OFFLINE_CACHE.get_or_compute(key, lambda: (self.catalog, _offline_models(
            self.catalog, self.scs, self.truth, float(offline_fraction), self.offline_seed, self.noise_sigma)))
        self.models: dict[str, CollaborativeFilter] = cached[1]
        #: the catalog names of the offline apps (every other app is held out, known only online)
        rows = offline_rows(np.random.default_rng(self.offline_seed), len(self.catalog), float(offline_fraction))
        self.offline_apps = tuple(self.catalog.names[i] for i in rows)

    @property
    def n_servers(self) -> int:
        return int(self.type_of_server.size)

    def profile(self, jobs: QinJobs, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """The oracle: each job's profiled rows (NaN = not measured) and the chosen SCs/SoIs (§4.1, A6)."""
        if jobs.catalog is not self.catalog:
            raise ValueError("jobs must come from the predictor's catalog")
        m, n_sc = jobs.n_jobs, self.scs.n_sc
        if n_sc < PROFILED_SCS:
            raise ValueError(f"profiling needs at least {PROFILED_SCS} server configurations, got {n_sc}")
        rows = np.arange(m)[:, None]
        scs = np.argsort(rng.random((m, n_sc)), axis=1)[:, :PROFILED_SCS]
        t_sois = np.argsort(rng.random((m, N_SOI)), axis=1)[:, :PROFILED_SOIS]
        c_sois = np.argsort(rng.random((m, N_SOI)), axis=1)[:, :PROFILED_SOIS]
        app = jobs.app[:, None]
        observed = {name: np.full((m, width), np.nan) for name, width in
                    (("mips", n_sc), ("nj_per_instr", n_sc), ("t", N_SOI), ("c", N_SOI))}
        sigma = self.noise_sigma
        observed["mips"][rows, scs] = _noisy(rng, self.truth.mips[app, scs], sigma)
        observed["nj_per_instr"][rows, scs] = _noisy(rng, self.truth.nj_per_instr[app, scs], sigma)
        observed["t"][rows, t_sois] = np.clip(_noisy(rng, self.catalog.tolerated[app, t_sois], sigma), 0.0, 100.0)
        observed["c"][rows, c_sois] = np.clip(_noisy(rng, self.catalog.caused[app, c_sois], sigma), 0.0, 100.0)
        observed["alpha"] = _noisy(rng, jobs.size_instr, sigma)
        observed["profiled_scs"], observed["t_sois"], observed["c_sois"] = scs, t_sois, c_sois
        return observed

    def predict(self, jobs: QinJobs, rng: np.random.Generator) -> JobPredictions:
        """Profile every job (in arrival order) and fold its rows into the four CF matrices."""
        observed = self.profile(jobs, rng)
        predicted = {name: np.empty_like(observed[name]) for name in MATRICES}
        models = dict(self.models)
        step = jobs.n_jobs if self.refit_every is None else self.refit_every
        for start in range(0, jobs.n_jobs, max(step, 1)):
            chunk = slice(start, min(start + step, jobs.n_jobs))
            for name in MATRICES:
                predicted[name][chunk] = models[name].fold_in(observed[name][chunk])
            if self.refit_every is not None and chunk.stop < jobs.n_jobs:
                models = {name: self._refit(name, observed[name][:chunk.stop]) for name in MATRICES}
        mips = np.maximum(predicted["mips"], 1e-6)
        alpha = observed["alpha"]
        energy = np.maximum(predicted["nj_per_instr"], 0.0) * 1e-9 * alpha[:, None]
        runtime = alpha[:, None] / (mips * 1e6)
        return JobPredictions(mips=mips, energy_j=energy, runtime_s=runtime,
                              tolerated=np.clip(predicted["t"], 0.0, 100.0), caused=np.clip(predicted["c"], 0.0, 100.0),
                              size_instr=alpha, columns=self.columns_by_server,
                              profiled_scs=observed["profiled_scs"], profiled_t_sois=observed["t_sois"],
                              profiled_c_sois=observed["c_sois"])

    def _refit(self, name: str, profiled: np.ndarray) -> CollaborativeFilter:
        """Full retrain on the offline rows plus the profiled rows so far (docs/families/qin.md §2.1)."""
        offline = self.models[name]
        return CollaborativeFilter(seed=self.offline_seed).fit(np.vstack([offline.training_matrix, profiled]))
