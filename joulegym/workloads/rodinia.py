"""Rodinia benchmarks and the Table II workload mixes of the EMRF paper (Tang et al., §VI-A/B).

Each app is described by its CPU fraction of work ``xi_cpu`` (xi^gpu = 1 - xi^cpu, §II-B) and its
category (§VI-A, from Rodinia [41]). Stated values (§VI-B1): GE 0.21, KM 0.07, HW 0.24 (co-run
friendly), MY 1.0 (CPU-dominant), BT 0.0 (GPU-dominant). KNN, CFD and LUD are not given a value in
the paper; we take them from the category: KNN 1.0, CFD 0.0, LUD 0.0 (docs/families/emrf.md,
assumption A3).

Mixes (Table II): M1 = GE, KM, HW, MY, BT at weights 2:1:3:4:1 (in that order, assumption A5);
M2 = GE+KM, M3 = HW+MY, M4 = KM+BT, M5 = KNN+CFD, equal weights.

Job sizes are not in the paper: the default one-job size of an app is ``T_solo * F_solo`` GFLOP with
``T_solo = 10 s`` and ``F_solo`` the app's GFLOPS alone on the whole APU (:func:`solo_gflops`;
assumption A4).

:data:`RANDOM_MIX` is the generator of the ``apu-random`` training mix (assumption A11); the EMRF env's
defaults and the scenario both use it.
"""

from __future__ import annotations

from dataclasses import dataclass

CATEGORIES = ("co-run", "cpu-dominant", "gpu-dominant")
DEFAULT_SOLO_SECONDS = 10.0  # T_solo = 10 s for every app (not in the paper; docs/families/emrf.md, A4)


@dataclass(frozen=True)
class RodiniaApp:
    """One benchmark: ``xi_cpu`` is the fraction of its operations run on the CPU."""

    name: str
    description: str
    category: str
    xi_cpu: float
    xi_stated: bool  # True: the paper states xi; False: taken from the category (assumption A3)

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"app {self.name!r}: category={self.category!r} is not one of {CATEGORIES}")
        if not 0.0 <= self.xi_cpu <= 1.0:
            raise ValueError(f"app {self.name!r}: xi_cpu must be in [0, 1], got {self.xi_cpu}")

    @property
    def co_run(self) -> bool:
        return self.category == "co-run"


RODINIA: dict[str, RodiniaApp] = {
    app.name: app
    for app in (
        RodiniaApp("GE", "Gaussian Elimination, 4096x4096 matrix", "co-run", 0.21, True),
        RodiniaApp("KM", "K-means, KDD CUP dataset", "co-run", 0.07, True),
        RodiniaApp("HW", "Heart Wall, 20 frames", "co-run", 0.24, True),
        RodiniaApp("MY", "Myocyte, simulation time 2000", "cpu-dominant", 1.0, True),
        RodiniaApp("KNN", "k-Nearest Neighbors, 5000 synthetic records", "cpu-dominant", 1.0, False),
        RodiniaApp("BT", "B+Tree, 'mil' dataset", "gpu-dominant", 0.0, True),
        RodiniaApp("CFD", "CFD Solver, fvcorr.domn.097K", "gpu-dominant", 0.0, False),
        RodiniaApp("LUD", "LU Decomposition, 2048x2048 matrix", "gpu-dominant", 0.0, False),
    )
}

# Table III order; the Fig. 8 scenarios take the first n of these (docs/families/emrf.md, assumption A6).
TABLE_III_ORDER = ("GE", "KM", "HW", "MY", "KNN", "BT", "CFD", "LUD")


# The ``apu-random`` training mix (docs/families/emrf.md, assumption A11): the EMRF env's ``random`` config
# key. The user count, the app set, the weights and the xi jitter follow the paper's setting (Tables II and
# III, weights as in M1); the rest are joulegym choices (the paper trains no agent).
RANDOM_MIX = {
    "n_users": [2, 8],  # n ~ U{2..8}
    "apps": list(TABLE_III_ORDER),  # uniform over the 8 Rodinia apps
    "weights": [1.0, 2.0, 3.0, 4.0],  # w ~ U{1, 2, 3, 4}
    "xi_jitter": 0.03,  # +-0.03 on co-run apps' xi
    "job_sigma": 0.5,  # lognormal sigma of job sizes (mean = 10 s x F_solo)
    "arrival_rate": 0.03,  # Poisson jobs/s per user (~0.3 x the APU per user)
    "initial_jobs": 1,  # every user starts with one job
}


@dataclass(frozen=True)
class WorkloadMix:
    """A Table II mix: apps (one user each) and their weights."""

    name: str
    apps: tuple[str, ...]
    weights: tuple[float, ...]
    description: str


MIXES: dict[str, WorkloadMix] = {
    m.name: m
    for m in (
        WorkloadMix("M1", ("GE", "KM", "HW", "MY", "BT"), (2.0, 1.0, 3.0, 4.0, 1.0),
                    "co-run friendly + GPU-dominant + CPU-dominant, weights 2:1:3:4:1"),
        WorkloadMix("M2", ("GE", "KM"), (1.0, 1.0), "co-run + co-run"),
        WorkloadMix("M3", ("HW", "MY"), (1.0, 1.0), "co-run + CPU-dominant"),
        WorkloadMix("M4", ("KM", "BT"), (1.0, 1.0), "co-run + GPU-dominant"),
        WorkloadMix("M5", ("KNN", "CFD"), (1.0, 1.0), "CPU-dominant + GPU-dominant"),
    )
}


def rodinia_app(name: str) -> RodiniaApp:
    """The catalog entry ``name`` (case-insensitive); ValueError naming the known apps otherwise."""
    key = str(name).upper()
    if key not in RODINIA:
        raise ValueError(f"app={name!r} is not a Rodinia app of the EMRF catalog; known: {list(RODINIA)}")
    return RODINIA[key]


def workload_mix(name: str) -> WorkloadMix:
    """The Table II mix ``name`` (``M1`` ... ``M5``); ValueError naming the known mixes otherwise."""
    key = str(name).upper()
    if key not in MIXES:
        raise ValueError(f"mix={name!r} is unknown; known: {list(MIXES)}")
    return MIXES[key]


def mix_arrays(name: str) -> tuple[list[float], list[float]]:
    """``(xi_cpu, weights)`` of mix ``name``, in Table II order."""
    mix = workload_mix(name)
    return [RODINIA[a].xi_cpu for a in mix.apps], list(mix.weights)


def solo_gflops(xi_cpu: float, capacities: tuple[float, float]) -> float:
    """GFLOPS of an app alone on the whole APU: F_solo = 1 / max(xi^cpu/C_cpu, xi^gpu/C_gpu) (1 / m_i, Eq. (5))."""
    c_cpu, c_gpu = capacities
    return 1.0 / max(xi_cpu / c_cpu, (1.0 - xi_cpu) / c_gpu)


def default_job_gflop(xi_cpu: float, capacities: tuple[float, float],
                      solo_seconds: float = DEFAULT_SOLO_SECONDS) -> float:
    """One job's work (GFLOP): ``T_solo * F_solo`` (docs/families/emrf.md, assumption A4)."""
    return solo_seconds * solo_gflops(xi_cpu, capacities)
