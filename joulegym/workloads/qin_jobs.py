"""Jobs of the Qin family (Guan & Ababei, T-SUSC 2024, §7; docs/families/qin.md §4.2): catalog, mixes, loader.

The paper runs Splash-2 ("real-world", RW), PARSEC 3.0 ("throughput-bound", TB) and mutilate-generated
memcached load ("latency-critical", LC); it gives no app parameters, sizes, thread counts or
interference scores (A19). The catalog follows the recipe of docs/families/qin.md §4.2 [ASSUME]:

- memory-boundedness ``beta`` (at 3.5 GHz), 4 threads and the dominant sources of interference per app
  from the family page's table;
- a latent ``z in [0, 1]^3`` (compute, memory, IO/network) per app: ``(1 - beta, beta, io)`` with ``io``
  0.1 unless the app is storage- or network-heavy, +- U[-0.1, 0.1];
- caused scores ``c = clip(100 W z + N(0, 5), 0, 100)`` with a fixed 15x3 loading ``W`` (memory-side SoIs
  load on z_2, FP/int/vector/L1 on z_1, storage/network on z_3), plus 15 on the app's dominant SoIs
  (so that "dominant SoIs set c high and t low"), clipped to 100; tolerated ``t = clip(100 - 0.7 c +
  N(0, 5), 5, 100)``; the scores are low rank plus noise, so collaborative filtering is meaningful;
- ``cpi0 ~ U[0.6, 1.2]``, and a per-app IPC affinity ``U[0.9, 1.1]`` per server microarchitecture.

The drawn values are stored as data in :mod:`joulegym.workloads.qin_catalog_data` (seed 2024 of
:func:`catalog_recipe`), so the catalog does not depend on numpy's random streams.

Job sizes (§4.2): ``alpha`` = total instructions = the single-threaded stand-alone runtime on a
reference i5-4690 core at 3.5 GHz times that core's instruction rate. RW and TB runtimes are lognormal
(mean 180 s, sigma_log 0.5); LC runtimes are uniform U[0.5 mu, 1.5 mu], normal N(mu, 0.25 mu) truncated
at 0.1 mu, or exponential Exp(mu), mu = 180 s (the "uniform, normal and exponential distributions" of
§7, read as job-size distributions). RW/TB jobs replicate the suite's apps with equal likelihood in
random order (§7). Arrivals are a batch at t = 0 (A26) or Poisson(lambda).

A user workload file (:func:`load_jobs`) is CSV (header line) or JSON (a list of objects, or
``{"jobs": [...]}``) with the fields ``app`` (required, a catalog name), ``arrival_s`` (default 0),
``size_instr`` or ``runtime_s`` (one of them; runtime on the reference core) and ``threads`` (default:
the app's). Errors name the file, the 1-based line and the field. Bounds (docs/robustness.md): ``arrival_s`` in
[0, :data:`MAX_ARRIVAL_S`] (the simulator's horizon is ten times longer, so every job can arrive and run), a
reference runtime in [:data:`MIN_RUNTIME_S`, :data:`MAX_RUNTIME_S`] (from ``runtime_s`` or ``size_instr``), and
``threads`` in [1, :data:`MAX_THREADS`]; each column once, each JSON key once.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any

import numpy as np

from joulegym.devices.cpu import N_SOI, SOI_NAMES, ServerType, get_server_type, seconds_per_instruction
from joulegym.workloads import qin_catalog_data

MIXES = ("rw", "lc", "tb")
LC_SIZE_DISTS = ("uniform", "normal", "exp")
ARRIVALS = ("batch", "poisson")
MICROARCHS = ("sandy_bridge_ep", "skylake", "haswell", "kaby_lake")
MEAN_RUNTIME_S = 180.0  # §4.2: mean single-threaded stand-alone runtime on the reference core
SIZE_SIGMA_LOG = 0.5  # §4.2 lognormal sigma of RW/TB runtimes
REFERENCE_SERVER = "i5-4690"  # §4.2 reference core
REFERENCE_MHZ = 3500.0
CATALOG_SEED = 2024  # seed of the stored catalog draw (qin_catalog_data)
JOB_FIELDS = ("app", "arrival_s", "size_instr", "runtime_s", "threads")
# Bounds of a job table (docs/robustness.md): every reward part stays finite and every job arrives within the
# simulator's horizon (QinConfig.horizon_s = 1e7 s).
MAX_ARRIVAL_S = 1e6  # of a workload file's job
MIN_RUNTIME_S, MAX_RUNTIME_S = 1e-3, 1e6  # a workload file's job, on the reference core
MIN_TABLE_RUNTIME_S, MAX_TABLE_RUNTIME_S = 1e-6, 1e10  # any job table (generated sizes scaled by size_scale too)
MAX_THREADS = 1024  # the env's max_threads / max_cores bound

# Loading of the 15 SoIs on the latent (compute, memory, io) of docs/families/qin.md §4.2, in SOI_NAMES order [ASSUME].
SOI_LOADINGS = np.array([
    (0.1, 0.6, 0.1),  # memory capacity
    (0.0, 0.9, 0.1),  # memory bandwidth
    (0.0, 0.1, 0.6),  # storage capacity
    (0.0, 0.1, 0.8),  # storage bandwidth
    (0.0, 0.1, 0.9),  # network bandwidth
    (0.2, 0.7, 0.0),  # LLC capacity
    (0.1, 0.8, 0.0),  # LLC bandwidth
    (0.6, 0.1, 0.1),  # L1 i-cache
    (0.7, 0.2, 0.0),  # L1 d-cache
    (0.2, 0.6, 0.0),  # TLB
    (0.7, 0.0, 0.1),  # integer units
    (0.8, 0.0, 0.0),  # floating-point units
    (0.1, 0.7, 0.0),  # prefetchers
    (0.1, 0.6, 0.2),  # interconnect
    (0.7, 0.0, 0.0),  # vector units
])
DOMINANT_BUMP = 15.0  # added to the caused score of an app's dominant SoIs [ASSUME]
LATENT_JITTER = 0.1  # z +- U[-0.1, 0.1] (§4.2)
SCORE_NOISE = 5.0  # N(0, 5) on c and t (§4.2)


@dataclass(frozen=True)
class QinApp:
    """One catalog application (a Splash-2 or PARSEC program, or the mutilate memcached service)."""

    name: str
    suite: str
    job_class: str
    beta: float
    threads: int
    cpi0: float
    dominant: tuple[str, ...]
    latent: tuple[float, float, float]
    caused: tuple[float, ...]
    tolerated: tuple[float, ...]
    ipc_affinity: Mapping[str, float]

    def __post_init__(self) -> None:
        if self.job_class not in MIXES:
            raise ValueError(f"app {self.name!r}: job_class={self.job_class!r} is not one of {MIXES}")
        if not 0.0 <= self.beta < 1.0:
            raise ValueError(f"app {self.name!r}: beta must be in [0, 1), got {self.beta}")
        if len(self.caused) != N_SOI or len(self.tolerated) != N_SOI:
            raise ValueError(f"app {self.name!r}: caused and tolerated need {N_SOI} scores")
        unknown = [soi for soi in self.dominant if soi not in SOI_NAMES]
        if unknown:
            raise ValueError(f"app {self.name!r}: dominant SoIs {unknown} are not in {SOI_NAMES}")
        object.__setattr__(self, "ipc_affinity", MappingProxyType(dict(self.ipc_affinity)))

    def __reduce__(self):  # the read-only mapping view does not pickle: rebuild from a plain dict
        return (QinApp, (self.name, self.suite, self.job_class, self.beta, self.threads, self.cpi0, self.dominant,
                         self.latent, self.caused, self.tolerated, dict(self.ipc_affinity)))


def catalog_recipe(seed: int = CATALOG_SEED) -> list[dict[str, Any]]:
    """Draw the catalog's random columns (latent, caused, tolerated, cpi0, IPC affinity) by the §4.2 recipe.

    The stored catalog is this function's output for :data:`CATALOG_SEED`, rounded.
    """
    rng = np.random.default_rng(seed)
    rows = []
    for name, suite, job_class, beta, threads, dominant, io_load in qin_catalog_data.APP_TABLE:
        base = np.array([1.0 - beta, beta, io_load])
        latent = np.clip(base + rng.uniform(-LATENT_JITTER, LATENT_JITTER, 3), 0.0, 1.0)
        caused = 100.0 * SOI_LOADINGS @ latent + rng.normal(0.0, SCORE_NOISE, N_SOI)
        caused[[SOI_NAMES.index(soi) for soi in dominant]] += DOMINANT_BUMP
        caused = np.clip(caused, 0.0, 100.0)
        tolerated = np.clip(100.0 - 0.7 * caused + rng.normal(0.0, SCORE_NOISE, N_SOI), 5.0, 100.0)
        cpi0 = rng.uniform(0.6, 1.2)
        affinity = rng.uniform(0.9, 1.1, len(MICROARCHS))
        rows.append({"name": name, "suite": suite, "job_class": job_class, "beta": beta, "threads": threads,
                     "dominant": tuple(dominant), "latent": tuple(latent), "caused": tuple(caused),
                     "tolerated": tuple(tolerated), "cpi0": float(cpi0),
                     "ipc_affinity": dict(zip(MICROARCHS, affinity.tolist(), strict=True))})
    return rows


class QinCatalog:
    """The apps as arrays (``A`` apps; interference scores ``(A, 15)``)."""

    def __init__(self, apps: Sequence[QinApp]) -> None:
        if not apps:
            raise ValueError("a catalog needs at least one app")
        self.apps = tuple(apps)
        self.names = tuple(app.name for app in self.apps)
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"catalog app names must be unique, got {self.names}")
        self._index = {name: i for i, name in enumerate(self.names)}
        self.beta = np.array([app.beta for app in self.apps])
        self.cpi0 = np.array([app.cpi0 for app in self.apps])
        self.threads = np.array([app.threads for app in self.apps], dtype=np.intp)
        self.caused = np.array([app.caused for app in self.apps])
        self.tolerated = np.array([app.tolerated for app in self.apps])
        self.job_class = tuple(app.job_class for app in self.apps)
        # (A, len(MICROARCHS)); a microarchitecture an app does not list has affinity 1
        self.ipc_affinity = np.array([[app.ipc_affinity.get(arch, 1.0) for arch in MICROARCHS] for app in self.apps])
        for array in (self.beta, self.cpi0, self.threads, self.caused, self.tolerated, self.ipc_affinity):
            array.setflags(write=False)

    def __len__(self) -> int:
        return len(self.apps)

    def __reduce__(self):  # the shared catalog unpickles as the shared catalog (jobs keep `catalog is`)
        return (get_catalog, ()) if self is _CATALOG else (QinCatalog, (self.apps,))

    def __deepcopy__(self, memo: dict) -> QinCatalog:
        return self  # immutable: a copied env shares its catalog

    def index(self, name: str) -> int:
        """Catalog index of app ``name``; ValueError naming the field otherwise."""
        try:
            return self._index[name]
        except (KeyError, TypeError):
            raise ValueError(f"app={name!r} is not in the Qin catalog; known: {list(self.names)}") from None

    def apps_of(self, mix: str) -> np.ndarray:
        """Catalog indices of the apps of ``mix`` (``rw``, ``lc`` or ``tb``)."""
        if mix not in MIXES:
            raise ValueError(f"mix={mix!r} is not one of {MIXES}")
        return np.array([i for i, job_class in enumerate(self.job_class) if job_class == mix], dtype=np.intp)

    def ipc(self, server_types: Sequence[str | ServerType]) -> np.ndarray:
        """``(A, n)`` IPC of every app on each server type: ``ipc_rel * affinity[app, microarch]``."""
        types = [get_server_type(s) for s in server_types]
        return np.array([[server.ipc_rel * app.ipc_affinity.get(server.microarch, 1.0) for server in types]
                         for app in self.apps])

    def seconds_per_instruction(self, server_type: str | ServerType, f_mhz: float | np.ndarray) -> np.ndarray:
        """Stand-alone time per instruction (s) of every app on one big core of ``server_type`` (§1.9)."""
        server = get_server_type(server_type)
        ipc = self.ipc([server])[:, 0]
        f = np.asarray(f_mhz, dtype=float)
        shape = (-1,) + (1,) * f.ndim
        return seconds_per_instruction(self.cpi0.reshape(shape), self.beta.reshape(shape), ipc.reshape(shape), f,
                                       server.memlat)

    @cached_property
    def reference_seconds_per_instruction(self) -> np.ndarray:
        """``(A,)`` time per instruction on the reference i5-4690 core at 3.5 GHz (defines job sizes)."""
        return self.seconds_per_instruction(REFERENCE_SERVER, REFERENCE_MHZ)


def _build_catalog() -> QinCatalog:
    apps = []
    for (name, suite, job_class, beta, threads, dominant, _io), drawn in zip(
            qin_catalog_data.APP_TABLE, qin_catalog_data.DRAWN, strict=True):
        latent, caused, tolerated, cpi0, affinity = drawn
        apps.append(QinApp(name=name, suite=suite, job_class=job_class, beta=beta, threads=threads, cpi0=cpi0,
                           dominant=tuple(dominant), latent=tuple(latent), caused=tuple(caused),
                           tolerated=tuple(tolerated), ipc_affinity=dict(zip(MICROARCHS, affinity, strict=True))))
    return QinCatalog(apps)


_CATALOG: QinCatalog | None = None


def get_catalog() -> QinCatalog:
    """The shared Qin catalog (built once)."""
    global _CATALOG
    if _CATALOG is None:
        _CATALOG = _build_catalog()
    return _CATALOG


# --- jobs ---------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class QinJobs:
    """A workload as a column store (one entry per job, sorted by arrival; ties keep generation order).

    :param app: catalog index per job.
    :param arrival_s: arrival time (s).
    :param size_instr: ``alpha``, total instructions.
    :param threads: thread count.
    """

    catalog: QinCatalog
    app: np.ndarray
    arrival_s: np.ndarray
    size_instr: np.ndarray
    threads: np.ndarray

    def __post_init__(self) -> None:
        n = np.shape(self.app)[0] if np.ndim(self.app) else -1
        for name, dtype in (("app", np.intp), ("arrival_s", float), ("size_instr", float), ("threads", np.intp)):
            array = np.array(getattr(self, name), dtype=dtype)  # a private read-only copy
            if array.shape != (n,):
                raise ValueError(f"{name} must be a 1-D array of one entry per job, got shape {array.shape}")
            array.setflags(write=False)
            object.__setattr__(self, name, array)
        if n and (self.app.min() < 0 or self.app.max() >= len(self.catalog)):
            raise ValueError(f"app indices must be in [0, {len(self.catalog) - 1}]")
        if not np.all(np.isfinite(self.arrival_s)) or np.any(self.arrival_s < 0):
            raise ValueError("arrival_s must be finite and >= 0")
        if np.any(np.diff(self.arrival_s) < 0):
            raise ValueError("arrival_s must be sorted (ascending)")
        if not np.all(np.isfinite(self.size_instr)) or np.any(self.size_instr <= 0):
            raise ValueError("size_instr must be finite and > 0 instructions")
        runtime = self.reference_runtime_s if n else np.zeros(0)
        if np.any(runtime < MIN_TABLE_RUNTIME_S) or np.any(runtime > MAX_TABLE_RUNTIME_S):
            raise ValueError(f"size_instr must give a reference runtime in [{MIN_TABLE_RUNTIME_S:g}, "
                             f"{MAX_TABLE_RUNTIME_S:g}] s per job, got {runtime.min():.3g} to {runtime.max():.3g} s")
        if np.any(self.threads < 1) or np.any(self.threads > MAX_THREADS):
            raise ValueError(f"threads must be whole numbers in [1, {MAX_THREADS}]")

    @property
    def n_jobs(self) -> int:
        return int(self.app.shape[0])

    def __len__(self) -> int:
        return self.n_jobs

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.catalog.names[i] for i in self.app)

    @property
    def beta(self) -> np.ndarray:
        return self.catalog.beta[self.app]

    @property
    def cpi0(self) -> np.ndarray:
        return self.catalog.cpi0[self.app]

    @property
    def caused(self) -> np.ndarray:
        return self.catalog.caused[self.app]

    @property
    def tolerated(self) -> np.ndarray:
        return self.catalog.tolerated[self.app]

    @property
    def job_class(self) -> np.ndarray:
        return np.array(self.catalog.job_class)[self.app]

    @property
    def ipc_affinity(self) -> np.ndarray:
        """``(M, len(MICROARCHS))`` per-job IPC affinity, columns in :data:`MICROARCHS` order."""
        return self.catalog.ipc_affinity[self.app]

    @property
    def reference_runtime_s(self) -> np.ndarray:
        """Single-threaded stand-alone runtime (s) on the reference i5-4690 core at 3.5 GHz."""
        return self.size_instr * self.catalog.reference_seconds_per_instruction[self.app]


def _check_positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating) or not (
            math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def _runtimes(rng: np.random.Generator, n_jobs: int, job_class: np.ndarray, mean_s: float, sigma_log: float,
              lc_dist: str) -> np.ndarray:
    runtime = rng.lognormal(math.log(mean_s) - sigma_log**2 / 2, sigma_log, n_jobs) if sigma_log > 0 else \
        np.full(n_jobs, mean_s)
    lc = job_class == "lc"
    n_lc = int(lc.sum())
    if n_lc:
        if lc_dist == "uniform":
            lc_runtime = rng.uniform(0.5 * mean_s, 1.5 * mean_s, n_lc)
        elif lc_dist == "normal":
            lc_runtime = np.maximum(rng.normal(mean_s, 0.25 * mean_s, n_lc), 0.1 * mean_s)
        else:
            lc_runtime = rng.exponential(mean_s, n_lc)
        runtime[lc] = np.maximum(lc_runtime, 1e-3 * mean_s)  # an Exp draw of 0 would be an empty job
    return runtime


def generate_jobs(mix: str | Sequence[str], n_jobs: int, *, seed: int | np.random.Generator,
                  arrival: str = "batch", rate_per_s: float | None = None, lc_dist: str = "uniform",
                  mean_runtime_s: float = MEAN_RUNTIME_S, sigma_log: float = SIZE_SIGMA_LOG,
                  size_scale: float = 1.0, catalog: QinCatalog | None = None) -> QinJobs:
    """``n_jobs`` jobs of ``mix`` (``rw``, ``lc``, ``tb`` or a list of them), apps uniform over the mix.

    ``arrival="batch"`` submits everything at t = 0; ``"poisson"`` draws exponential gaps at
    ``rate_per_s`` jobs/s (first job at the first gap). ``size_scale`` multiplies every size (2 for
    the scale-up scenario, Fig. 11b). Same seed, same jobs.
    """
    catalog = catalog if catalog is not None else get_catalog()
    mixes = [mix] if isinstance(mix, str) else list(mix)
    if not mixes:
        raise ValueError(f"mix must be one of {MIXES} or a non-empty list of them, got {mix!r}")
    for one in mixes:
        if one not in MIXES:
            raise ValueError(f"mix={one!r} is not one of {MIXES}")
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int | np.integer) or n_jobs < 1:
        raise ValueError(f"n_jobs must be a whole number >= 1, got {n_jobs!r}")
    if arrival not in ARRIVALS:
        raise ValueError(f"arrival={arrival!r} is not one of {ARRIVALS}")
    if lc_dist not in LC_SIZE_DISTS:
        raise ValueError(f"lc_dist={lc_dist!r} is not one of {LC_SIZE_DISTS}")
    mean_runtime_s = _check_positive("mean_runtime_s", mean_runtime_s)
    size_scale = _check_positive("size_scale", size_scale)
    if isinstance(sigma_log, bool) or not isinstance(sigma_log, int | float) or not (
            math.isfinite(sigma_log) and sigma_log >= 0):
        raise ValueError(f"sigma_log must be a finite number >= 0, got {sigma_log!r}")
    if arrival == "poisson":
        rate_per_s = _check_positive("rate_per_s", rate_per_s)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    pool = np.concatenate([catalog.apps_of(one) for one in dict.fromkeys(mixes)])
    if pool.size == 0:
        raise ValueError(f"mix={mix!r} has no apps in the catalog")
    app = pool[rng.integers(0, pool.size, n_jobs)]
    job_class = np.array(catalog.job_class)[app]
    runtime = _runtimes(rng, int(n_jobs), job_class, mean_runtime_s, float(sigma_log), lc_dist)
    size = runtime * size_scale / catalog.reference_seconds_per_instruction[app]
    arrival_s = np.cumsum(rng.exponential(1.0 / rate_per_s, n_jobs)) if arrival == "poisson" else np.zeros(n_jobs)
    return QinJobs(catalog, app.astype(np.intp), arrival_s, size, catalog.threads[app].copy())


# --- user workload files ------------------------------------------------------------------------------------
def _parse_number(source: str, line: int, name: str, raw: Any, low: float, high: float, *,
                  integer: bool = False) -> float:
    """``raw`` as a number in ``[low, high]`` (a whole one with ``integer``); ``ValueError`` naming the file, the
    line, the field and the range otherwise."""
    what = f"a {'whole' if integer else 'finite'} number in [{low:g}, {high:g}]"
    try:
        if isinstance(raw, bool):
            raise ValueError
        value = float(raw)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{source} line {line}: {name} must be {what}, got {raw!r}") from None
    if not (math.isfinite(value) and low <= value <= high) or (integer and value != int(value)):
        raise ValueError(f"{source} line {line}: {name} must be {what}, got {raw!r}")
    return value


def _job_row(source: str, line: int, record: Mapping[str, Any], catalog: QinCatalog) -> tuple[int, float, float, int]:
    unknown = sorted(str(key) for key in record if key not in JOB_FIELDS)
    if unknown:
        raise ValueError(f"{source} line {line}: unknown field(s) {unknown}; allowed: {list(JOB_FIELDS)}")
    name = record.get("app")
    if name is None or (isinstance(name, str) and not name.strip()):
        raise ValueError(f"{source} line {line}: app is required (a catalog name, e.g. {catalog.names[0]!r})")
    if not isinstance(name, str) or name.strip() not in catalog.names:
        raise ValueError(f"{source} line {line}: app must be a catalog name {list(catalog.names)}, got {name!r}")
    app = catalog.index(name.strip())
    present = {key: value for key, value in record.items() if value is not None and value != ""}
    arrival = _parse_number(source, line, "arrival_s", present.get("arrival_s", 0.0), 0.0, MAX_ARRIVAL_S)
    if ("size_instr" in present) == ("runtime_s" in present):
        raise ValueError(f"{source} line {line}: give exactly one of size_instr and runtime_s")
    per_instr = float(catalog.reference_seconds_per_instruction[app])
    if "size_instr" in present:  # bounded as the reference runtime it gives
        size = _parse_number(source, line, "size_instr", present["size_instr"], MIN_RUNTIME_S / per_instr,
                             MAX_RUNTIME_S / per_instr)
    else:
        runtime = _parse_number(source, line, "runtime_s", present["runtime_s"], MIN_RUNTIME_S, MAX_RUNTIME_S)
        size = runtime / per_instr
    threads = int(_parse_number(source, line, "threads", present.get("threads", catalog.threads[app]), 1,
                                MAX_THREADS, integer=True))
    return app, arrival, size, threads


def _json_records(source: str, text: str) -> list[tuple[int, Any]]:
    """The job objects of a JSON file, each with the line its object starts on."""
    decoder = json.JSONDecoder(object_pairs_hook=lambda pairs: _unique_keys(source, pairs))
    try:
        document = decoder.decode(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{source} line {error.lineno}: not valid JSON ({error.msg})") from None
    except RecursionError:
        raise ValueError(f"{source}: JSON nested too deeply; a workload is a list of flat job objects") from None
    if isinstance(document, dict):
        if set(document) != {"jobs"} or not isinstance(document["jobs"], list):
            raise ValueError(f"{source} line 1: a JSON workload is a list of jobs or {{\"jobs\": [...]}}")
        start = text.index("[", text.index('"jobs"'))
    elif isinstance(document, list):
        start = text.index("[")
    else:
        raise ValueError(f"{source} line 1: a JSON workload is a list of jobs or {{\"jobs\": [...]}}")
    records, position = [], start + 1
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        if position >= len(text) or text[position] == "]":
            break
        record, end = decoder.raw_decode(text, position)
        records.append((text.count("\n", 0, position) + 1, record))
        position = end
    return records


def _unique_keys(source: str, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise ValueError(f"{source}: a job object gives {repeated} twice; give each field once")
    return dict(pairs)


def load_jobs(path: str | os.PathLike, *, catalog: QinCatalog | None = None) -> QinJobs:
    """Read a workload file (CSV or JSON, by extension; ``.json`` is JSON, anything else CSV).

    Jobs are sorted by arrival (stable). Every malformed entry raises ``ValueError`` naming the file,
    the 1-based line (the CSV header is line 1; a JSON job is the line its object starts on) and the
    field.
    """
    catalog = catalog if catalog is not None else get_catalog()
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as handle:
            text = handle.read()
    except UnicodeDecodeError as error:
        raise ValueError(f"{source}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise ValueError(f"{source}: cannot read the workload file ({error.strerror})") from None
    rows: list[tuple[int, float, float, int]] = []
    if source.lower().endswith(".json"):
        for line, record in _json_records(source, text):
            if not isinstance(record, dict):
                raise ValueError(f"{source} line {line}: a job must be a JSON object with fields {list(JOB_FIELDS)}")
            rows.append(_job_row(source, line, record, catalog))
    else:
        reader = csv.reader(io.StringIO(text))
        header = next(reader, None)
        if header is None:
            raise ValueError(f"{source} line 1: empty file; expected a header with fields {list(JOB_FIELDS)}")
        header = [name.strip() for name in header]
        repeated = sorted({name for name in header if header.count(name) > 1})
        if repeated:
            raise ValueError(f"{source} line 1: column(s) {repeated} appear more than once; give each column once")
        unknown = [name for name in header if name not in JOB_FIELDS]
        if unknown:
            raise ValueError(f"{source} line 1: unknown column(s) {unknown}; allowed: {list(JOB_FIELDS)}")
        if "app" not in header:
            raise ValueError(f"{source} line 1: the app column is required")
        for cells in reader:
            line = reader.line_num
            if not cells or all(not cell.strip() for cell in cells):
                continue
            if len(cells) != len(header):
                raise ValueError(f"{source} line {line}: {len(cells)} fields, the header has {len(header)}")
            rows.append(_job_row(source, line, dict(zip(header, (c.strip() for c in cells), strict=True)), catalog))
    if not rows:
        raise ValueError(f"{source}: the workload has no jobs")
    app, arrival, size, threads = (np.array(column) for column in zip(*rows, strict=True))
    order = np.argsort(arrival, kind="stable")
    return QinJobs(catalog, app[order].astype(np.intp), arrival[order].astype(float), size[order].astype(float),
                   threads[order].astype(np.intp))


def save_jobs(jobs: QinJobs, path: str | os.PathLike) -> None:
    """Write ``jobs`` as a CSV that :func:`load_jobs` reads back exactly (``repr`` floats)."""
    with open(os.fspath(path), "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["app", "arrival_s", "size_instr", "threads"])
        for name, arrival, size, threads in zip(jobs.names, jobs.arrival_s, jobs.size_instr, jobs.threads,
                                                strict=True):
            writer.writerow([name, repr(float(arrival)), repr(float(size)), int(threads)])
