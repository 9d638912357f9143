"""Server CPUs of the Qin family (Guan & Ababei, T-SUSC 2024, Table 2; docs/families/qin.md §1.2-1.9).

A :class:`ServerType` is one Table 2 machine: its P-state table (server configurations, §4.1), a
TDP-calibrated power model in the shared DVFS vocabulary of :mod:`joulegym.devices.power`, and the
performance constants of the ground-truth model. The paper gives no power data, no V/F tables and no
voltages (§7 uses RAPL through ``perf``), so everything below the spec-sheet facts is an assumption of
docs/families/qin.md, named where it is used:

- **P-states** (A13, docs/families/qin.md §1.2): 4 levels per server, ``f_k = f_lfm + k (f_base - f_lfm)/3`` snapped to
  the 100 MHz P-state step, ``V_k = 0.70 + k 0.40/3`` V. ``f_lfm`` is the spec-sheet lowest-frequency
  mode (800 MHz for the five workers, as the family page's 0.8 GHz; 1200 MHz for the E5-1620). Turbo is ignored
  (``f_H`` = base GHz of Table 2).
- **Cores are physical cores** (docs/families/qin.md §1.2, A22). Table 2's "8 cores" of the E5-1620 and the
  i7-4790 are Hyper-Threading's logical processors (4 physical cores each): a physical core runs up to two
  threads at once and delivers :data:`SMT_YIELD` times one thread's throughput when it does (Intel's measurement,
  cited there); more threads than that time-slice. Schedulers (Kubernetes, Mage's share term) still see Table
  2's logical count (``logical_cores``), as the operating system reports it.
- **Dynamic power** is eq. 12, ``P = 1/2 C V^2 f``, times the app's activity ``act = 1 - 0.5 beta``
  (§1.9). In the shared ``a C V^2 f`` vocabulary, ``a = act/2``. ``C`` is calibrated per physical core so that
  the dynamic power with every hardware thread busy at ``(V_max, f_base)`` is ``0.7 TDP`` (A20); a core running
  two threads draws the yield's multiple of its one-thread dynamic power (power follows the retired work).
- **Static power** (RAPL includes it; A20): leakage ``0.1 TDP/cores * V/V_max`` per busy physical core,
  ``0.02 TDP/cores`` per idle one, uncore ``0.1 TDP`` while the server is on; DRAM ("ram" domain)
  ``0.25 W/GB`` of installed memory plus ``0.3 W`` per GB/s of traffic. A fully loaded server at
  ``f_max`` therefore draws ``0.9 TDP`` in its package. ``paper_dynamic_only=True`` keeps eq. 12's
  dynamic term alone.
- **Interference** over the 15 sources of §4.2 (iBench scale [0, 100]); the slowdown of §1.9,
  ``S = min(3, 1 + sum_k 0.05 w_k (P_k / t_k)^2)``: a pressure equal to the tolerated score costs 5 %.
- **Big/little cores** (abstract only; §1.4 placeholder values): little cores have 0.55x IPC,
  0.30x capacitance, 0.70x frequencies and the same voltages; leakage and idle power scale with
  capacitance (assumed).

Per-core arrays for a whole cluster (:class:`CoreTable`) let the simulator price power for every server
in one vectorised call.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

import numpy as np

from joulegym.devices.device import Device
from joulegym.devices.frequency import FrequencyGrid
from joulegym.devices.power import CMOSPowerModel, VoltageCurve
from joulegym.devices.presets.intel_servers import SERVER_SPECS, SOURCE

# --- interference (§4.2; docs/families/qin.md §1.6, §1.9) ---------------------------------------------
SOI_NAMES: tuple[str, ...] = (
    "memory_capacity", "memory_bandwidth", "storage_capacity", "storage_bandwidth", "network_bandwidth",
    "llc_capacity", "llc_bandwidth", "l1_icache", "l1_dcache", "tlb", "integer_units", "fp_units",
    "prefetchers", "interconnect", "vector_units",
)
N_SOI = len(SOI_NAMES)
_HEAVY_SOIS = ("memory_bandwidth", "llc_capacity", "llc_bandwidth")  # w_k = 1.0 (§1.9); others 0.3
SOI_WEIGHTS = np.array([1.0 if name in _HEAVY_SOIS else 0.3 for name in SOI_NAMES])
SOI_WEIGHTS.setflags(write=False)
SLOWDOWN_PER_UNIT = 0.05  # iBench convention: pressure = tolerated score -> 5 % slowdown
MAX_SLOWDOWN = 3.0  # §1.9 cap
EMPTY_SERVER_TOLERATED = 100.0  # A4: an empty server tolerates everything and causes nothing

# --- performance model constants (§1.9) ---------------------------------------------------------------------
F_REF_MHZ = 3500.0  # beta is memory-boundedness measured at 3.5 GHz
REF_DRAM_BW_GBS = 25.6  # memlat = 25.6 GB/s / BW, clipped to [0.7, 1.0]
MEMLAT_BOUNDS = (0.7, 1.0)

# --- P-states and power (A13, A20) --------------------------------------------------------------------------
N_LEVELS = 4
V_MIN, V_MAX = 0.70, 1.10
DYNAMIC_TDP_SHARE = 0.7  # dynamic power at (V_max, f_base), all cores busy
LEAKAGE_TDP_SHARE = 0.1  # leakage of all cores at V_max
IDLE_CORE_TDP_SHARE = 0.02  # per idle core, as a share of TDP/cores
# Throughput of a physical core running two Hyper-Threading threads, relative to one thread: Intel measured "up to
# 30 %" more on common server benchmarks (D. T. Marr et al., "Hyper-Threading Technology Architecture and
# Microarchitecture", Intel Technology Journal 6(1), 2002). The vendor's upper figure, used as the yield of the
# E5-1620 and i7-4790 (A22); a lower one is a config key (smt_yield, 1 = physical cores only).
SMT_YIELD = 1.3
UNCORE_TDP_SHARE = 0.1  # package baseline while on
DRAM_W_PER_GB = 0.25  # idle DRAM power per installed GB
DRAM_W_PER_GBS = 0.3  # DRAM power per GB/s of traffic
ROLES = ("worker", "master")


@dataclass(frozen=True)
class CoreType:
    """A core flavour inside a server (§1.4): scales of IPC, switched capacitance and frequencies."""

    name: str
    ipc_scale: float
    capacitance_scale: float
    f_max_scale: float


BIG_CORE = CoreType("big", 1.0, 1.0, 1.0)
LITTLE_CORE = CoreType("little", 0.55, 0.30, 0.70)  # placeholder values, docs/families/qin.md §1.4 (not from the paper)


def _check_number(where: str, name: str, value: Any, *, positive: bool = True, integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise ValueError(f"{where}: {name} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or (positive and number <= 0):
        raise ValueError(f"{where}: {name} must be a finite number > 0, got {value!r}")
    if integer and number != int(number):
        raise ValueError(f"{where}: {name} must be a whole number, got {value!r}")
    return number


@dataclass(frozen=True)
class ServerType:
    """One server hardware type (Table 2 row plus spec-sheet facts).

    :param name: Table 2 name, e.g. ``"i5-4690"``.
    :param role: ``"worker"`` or ``"master"``.
    :param microarch: e.g. ``"haswell"``; apps carry a per-microarchitecture IPC affinity.
    :param cores: logical processors as in Table 2 (Hyper-Threading's counted, what the OS reports).
    :param physical_cores: physical cores (what the simulator schedules on, A22).
    :param base_mhz: ``f_H``, the highest level (turbo ignored).
    :param lfm_mhz: the lowest P-state.
    :param mem_gb: installed memory (GB).
    :param tdp_w: thermal design power (W).
    :param dram_bw_gbs: peak DRAM bandwidth (GB/s).
    :param ipc_rel: relative IPC of the microarchitecture (E5-1620 = 1).
    """

    name: str
    role: str
    microarch: str
    cores: int
    physical_cores: int
    base_mhz: float
    lfm_mhz: float
    mem_gb: float
    tdp_w: float
    dram_bw_gbs: float
    ipc_rel: float
    turbo_mhz: float | None = None
    l1_kb: float | None = None
    l3_mb: float | None = None
    pstate_step_mhz: float = 100.0
    source: str = ""

    def __post_init__(self) -> None:
        where = f"server {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"server name must be a non-empty string, got {self.name!r}")
        if self.role not in ROLES:
            raise ValueError(f"{where}: role={self.role!r} is not one of {ROLES}")
        if not isinstance(self.microarch, str) or not self.microarch:
            raise ValueError(f"{where}: microarch must be a non-empty string, got {self.microarch!r}")
        for name in ("cores", "physical_cores"):
            _check_number(where, name, getattr(self, name), integer=True)
        if self.physical_cores > self.cores:
            raise ValueError(f"{where}: physical_cores={self.physical_cores} must be <= cores={self.cores}")
        for name in ("base_mhz", "lfm_mhz", "mem_gb", "tdp_w", "dram_bw_gbs", "ipc_rel", "pstate_step_mhz"):
            _check_number(where, name, getattr(self, name))
        if self.lfm_mhz >= self.base_mhz:
            raise ValueError(f"{where}: lfm_mhz={self.lfm_mhz} must be < base_mhz={self.base_mhz}")
        for name in ("turbo_mhz", "l1_kb", "l3_mb"):
            if getattr(self, name) is not None:
                _check_number(where, name, getattr(self, name))

    # --- P-states ------------------------------------------------------------------------------------------
    @cached_property
    def levels_mhz(self) -> np.ndarray:
        """The 4 P-states (MHz), ascending; ``f_k = lfm + k (base - lfm)/3`` on the P-state step (A13)."""
        raw = self.lfm_mhz + np.arange(N_LEVELS) * (self.base_mhz - self.lfm_mhz) / (N_LEVELS - 1)
        levels = np.round(raw / self.pstate_step_mhz) * self.pstate_step_mhz
        levels[0], levels[-1] = self.lfm_mhz, self.base_mhz  # the ends are exact whatever the step
        levels.setflags(write=False)
        return levels

    @cached_property
    def volts(self) -> np.ndarray:
        """Voltage (V) per level: 0.700, 0.833, 0.967, 1.100 (A13)."""
        volts = np.linspace(V_MIN, V_MAX, N_LEVELS)
        volts.setflags(write=False)
        return volts

    @property
    def n_levels(self) -> int:
        return N_LEVELS

    @property
    def f_max_mhz(self) -> float:
        return float(self.base_mhz)

    @cached_property
    def frequencies(self) -> FrequencyGrid:
        return FrequencyGrid.from_sequence(self.levels_mhz)

    # --- power ---------------------------------------------------------------------------------------------
    @property
    def smt(self) -> bool:
        """Hyper-Threading: two logical processors per physical core."""
        return self.cores > self.physical_cores

    @property
    def full_load_yield(self) -> float:
        """A physical core's throughput with every hardware thread busy, in one thread's (:data:`SMT_YIELD` with
        Hyper-Threading, else 1)."""
        return SMT_YIELD if self.smt else 1.0

    @property
    def capacitance_f(self) -> float:
        """``C_core = 2 (0.7 TDP / (cores yield)) / (V_max^2 f_base)`` (F) per physical core: eq. 12 at the top level
        with every hardware thread busy gives 0.7 TDP in all."""
        return (2.0 * DYNAMIC_TDP_SHARE * self.tdp_w / (self.physical_cores * self.full_load_yield)
                / (V_MAX**2 * self.base_mhz * 1e6))

    @cached_property
    def power_model(self) -> CMOSPowerModel:
        """One big core in the shared vocabulary: ``a C V(f)^2 f + leakage`` with ``a = act/2`` (eq. 12)."""
        curve = VoltageCurve(tuple(float(f) for f in self.levels_mhz), tuple(float(v) for v in self.volts))
        leak_at_lowest = LEAKAGE_TDP_SHARE * self.tdp_w / self.physical_cores * V_MIN / V_MAX
        return CMOSPowerModel(self.capacitance_f, curve, static_w=leak_at_lowest, static_mode="voltage")

    def core_dynamic_w(self, level: int | np.ndarray, activity: float | np.ndarray = 1.0) -> np.ndarray | float:
        """Eq. 12 dynamic power (W) of one busy big core at ``level``: ``1/2 C V^2 f * activity``."""
        level = np.asarray(level)
        return 0.5 * np.asarray(activity) * self.capacitance_f * self.volts[level] ** 2 * self.levels_mhz[level] * 1e6

    def core_leakage_w(self, level: int | np.ndarray) -> np.ndarray | float:
        """Leakage (W) of one busy physical core at ``level``: ``0.1 TDP/cores * V/V_max`` (A20)."""
        return LEAKAGE_TDP_SHARE * self.tdp_w / self.physical_cores * self.volts[np.asarray(level)] / V_MAX

    @property
    def idle_core_w(self) -> float:
        return IDLE_CORE_TDP_SHARE * self.tdp_w / self.physical_cores

    @property
    def uncore_w(self) -> float:
        return UNCORE_TDP_SHARE * self.tdp_w

    @property
    def dram_idle_w(self) -> float:
        return DRAM_W_PER_GB * self.mem_gb

    @property
    def memlat(self) -> float:
        """Memory-latency factor of §1.9: ``clip(25.6 GB/s / BW, 0.7, 1.0)``."""
        return float(np.clip(REF_DRAM_BW_GBS / self.dram_bw_gbs, *MEMLAT_BOUNDS))

    def power_w(self, level: np.ndarray, busy: np.ndarray, beta: np.ndarray, *,
                paper_dynamic_only: bool = False) -> float:
        """Server power (W) with per physical core ``level`` (int), ``busy`` fraction and running app's ``beta``
        (one thread per core).

        ``uncore + sum_c [busy (1/2 C V^2 f act + leak) + (1 - busy) idle] + DRAM``, with
        ``act = 1 - 0.5 beta`` and DRAM traffic ``BW * sum_c busy beta / cores`` (GB/s, assumed: a core
        running a fully memory-bound app streams its share of peak bandwidth).
        """
        level = np.asarray(level, dtype=np.intp)
        busy = np.asarray(busy, dtype=float)
        beta = np.asarray(beta, dtype=float)
        dynamic = busy * self.core_dynamic_w(level, activity_factor(beta))
        if paper_dynamic_only:
            return float(dynamic.sum())
        cores = busy * self.core_leakage_w(level) + (1.0 - busy) * self.idle_core_w
        traffic = self.dram_bw_gbs * float(np.sum(busy * beta)) / self.physical_cores
        return float(self.uncore_w + dynamic.sum() + cores.sum() + self.dram_idle_w + DRAM_W_PER_GBS * traffic)

    def device(self) -> Device:
        """This server as a shared :class:`~joulegym.devices.device.Device` record (kind ``"cpu"``)."""
        return Device(
            name=f"qin-{self.name}",
            kind="cpu",
            description=(f"{self.name} ({self.microarch}, {self.role}): {self.cores} cores, "
                         f"{self.lfm_mhz:.0f}-{self.base_mhz:.0f} MHz in {N_LEVELS} P-states, TDP {self.tdp_w:g} W"),
            frequencies=self.frequencies,
            power_model=self.power_model,
            capacities={"cores": float(self.cores), "mem_gb": float(self.mem_gb)},  # logical, as Table 2
            capacity_unit="cores / GB",
            tdp_w=float(self.tdp_w),
            idle_w=self.uncore_w + self.physical_cores * self.idle_core_w + self.dram_idle_w,
            source=self.source,
        )


_FIELDS = ("name", "role", "microarch", "cores", "physical_cores", "base_mhz", "lfm_mhz", "mem_gb", "tdp_w",
           "dram_bw_gbs", "ipc_rel", "turbo_mhz", "l1_kb", "l3_mb", "pstate_step_mhz", "source")
_REQUIRED = _FIELDS[:11]


def server_type_from_dict(spec: Mapping[str, Any], *, where: str = "server") -> ServerType:
    """A user-defined server from a mapping of :class:`ServerType` fields; ValueError naming the field."""
    if not isinstance(spec, Mapping):
        raise ValueError(f"{where} must be a dict of server fields {list(_FIELDS)}, got {spec!r}")
    unknown = sorted(set(spec) - set(_FIELDS))
    if unknown:
        raise ValueError(f"{where} has unknown fields {unknown}; allowed: {list(_FIELDS)}")
    missing = [name for name in _REQUIRED if name not in spec]
    if missing:
        raise ValueError(f"{where} is missing fields {missing}")
    values = dict(spec)
    for name in ("cores", "physical_cores"):
        values[name] = int(_check_number(where, name, values[name], integer=True))
    try:
        return ServerType(**values)
    except TypeError as error:  # pragma: no cover - guarded by the field checks above
        raise ValueError(f"{where}: {error}") from None


SERVER_TYPES: Mapping[str, ServerType] = MappingProxyType(
    {spec["name"]: server_type_from_dict({**spec, "source": SOURCE}) for spec in SERVER_SPECS}
)
WORKER_TYPES: tuple[str, ...] = tuple(name for name, server in SERVER_TYPES.items() if server.role == "worker")
MASTER_TYPE = "E5-1620"


def get_server_type(name: str | ServerType) -> ServerType:
    """The Table 2 server ``name`` (a :class:`ServerType` passes through); ValueError otherwise."""
    if isinstance(name, ServerType):
        return name
    try:
        return SERVER_TYPES[name]
    except (KeyError, TypeError):
        raise ValueError(f"server_type={name!r} is unknown; available: {list(SERVER_TYPES)}") from None


# --- the ground-truth performance and interference model (§1.9) ---------------------------------------------
def activity_factor(beta: float | np.ndarray) -> np.ndarray | float:
    """Switching activity of an app with memory-boundedness ``beta``: ``1 - 0.5 beta`` (§1.9)."""
    return 1.0 - 0.5 * np.asarray(beta)


def seconds_per_instruction(cpi0, beta, ipc, f_mhz, memlat) -> np.ndarray:
    """Stand-alone time per instruction (s) of §1.9, broadcasting over all arguments.

    ``tau = cpi0 / (ipc f) + m memlat`` with ``m = beta/(1 - beta) * cpi0 / f_ref``: the compute part
    scales with frequency, the memory part does not; at ``f_ref`` and ``memlat = 1`` the memory share of
    the time is ``beta`` (for ``ipc = 1``).
    """
    cpi0 = np.asarray(cpi0, dtype=float)
    beta = np.asarray(beta, dtype=float)
    memory_s = beta / (1.0 - beta) * cpi0 / (F_REF_MHZ * 1e6)
    return cpi0 / (np.asarray(ipc, dtype=float) * np.asarray(f_mhz, dtype=float) * 1e6) + memory_s * np.asarray(memlat)


def energy_per_instruction_j(server: ServerType, level: int | np.ndarray, seconds_per_instr: np.ndarray,
                             beta: np.ndarray, *, paper_dynamic_only: bool = False) -> np.ndarray:
    """Stand-alone energy per instruction (J) of an app on ``server`` at ``level`` (broadcasting).

    Defined as the server's power with every physical core running a copy of the app (:meth:`ServerType.power_w`,
    so uncore, idle DRAM and traffic are shared among the cores) divided by the cores' instruction rate:
    ``E/instr = P_server(level, busy=1, beta) / cores * tau``. This is what RAPL-based profiling of one app
    per core measures (§4.1, A20); with ``paper_dynamic_only`` it is eq. 12-13's ``1/2 C V^2 f act * tau``.
    """
    level = np.asarray(level, dtype=np.intp)
    beta = np.asarray(beta, dtype=float)
    per_core = server.core_dynamic_w(level, activity_factor(beta))
    if not paper_dynamic_only:
        cores = server.physical_cores
        per_core = (per_core + server.core_leakage_w(level) + (server.uncore_w + server.dram_idle_w) / cores
                    + DRAM_W_PER_GBS * server.dram_bw_gbs * beta / cores)
    return per_core * np.asarray(seconds_per_instr, dtype=float)


def interference_slowdown(pressure: np.ndarray, tolerated: np.ndarray) -> np.ndarray:
    """Slowdown ``S = min(3, 1 + sum_k 0.05 w_k (P_k / t_k)^2)`` over the last axis (15 SoIs, §1.9)."""
    ratio = np.asarray(pressure, dtype=float) / np.maximum(np.asarray(tolerated, dtype=float), 1e-9)
    # numpy's reduction, not a BLAS product: BLAS sums in an order that depends on the CPU's kernel
    return np.minimum(MAX_SLOWDOWN, 1.0 + SLOWDOWN_PER_UNIT * np.sum(np.square(ratio) * SOI_WEIGHTS, axis=-1))


def server_caused(caused: np.ndarray, active: np.ndarray | None = None) -> np.ndarray:
    """``c_server``: sum of the caused scores (rows, 15 columns) weighted by ``active`` (§1.6, §1.9)."""
    caused = np.asarray(caused, dtype=float).reshape(-1, N_SOI)
    if active is None:
        return caused.sum(axis=0)
    return (np.asarray(active, dtype=float)[:, None] * caused).sum(axis=0)  # not BLAS: same bits on every CPU


def server_tolerated(tolerated: np.ndarray) -> np.ndarray:
    """``t_server``: the minimum tolerated score per SoI over the rows; 100 for an empty server (A4)."""
    tolerated = np.asarray(tolerated, dtype=float).reshape(-1, N_SOI)
    if tolerated.shape[0] == 0:
        return np.full(N_SOI, EMPTY_SERVER_TOLERATED)
    return tolerated.min(axis=0)


# --- a cluster's cores as flat arrays -----------------------------------------------------------------------
@dataclass(frozen=True)
class CoreTable:
    """Per-core and per-server arrays of a cluster, for vectorised power and speed.

    Cores are physical cores, numbered server by server; ``first_core[i]:first_core[i+1]`` are server ``i``'s.
    ``smt_yield`` (K,): a core's throughput with two or more threads on it, in one thread's (the SMT yield on a
    Hyper-Threading server's cores, 1 elsewhere, A22); ``logical_cores`` (N,): Table 2's count (what the OS and
    Kubernetes see).
    """

    server_types: tuple[ServerType, ...]
    server_of_core: np.ndarray
    first_core: np.ndarray
    freq_mhz: np.ndarray  # (K, L)
    volts: np.ndarray  # (L,)
    dyn_w: np.ndarray  # (K, L): 1/2 C V^2 f at activity 1
    leak_w: np.ndarray  # (K, L)
    idle_w: np.ndarray  # (K,)
    ipc_scale: np.ndarray  # (K,)
    is_little: np.ndarray  # (K,)
    smt_yield: np.ndarray  # (K,)
    uncore_w: np.ndarray  # (N,)
    dram_idle_w: np.ndarray  # (N,)
    dram_bw_gbs: np.ndarray  # (N,)
    cores: np.ndarray  # (N,) physical
    tdp_w: np.ndarray  # (N,)
    logical_cores: np.ndarray  # (N,) Table 2
    _traffic_w_per_busy_beta: np.ndarray = field(init=False, repr=False)  # (K,): 0.3 W/GBs * BW / cores

    _rows: np.ndarray = field(init=False, repr=False)  # (K,) 0..K-1, for gathering each core's level

    def __post_init__(self) -> None:
        per_core = DRAM_W_PER_GBS * (self.dram_bw_gbs / self.cores)[self.server_of_core]
        object.__setattr__(self, "_traffic_w_per_busy_beta", per_core)
        object.__setattr__(self, "_rows", np.arange(self.server_of_core.size))

    @property
    def n_servers(self) -> int:
        return len(self.server_types)

    @property
    def n_cores(self) -> int:
        return int(self.server_of_core.size)

    @property
    def f_max_mhz(self) -> np.ndarray:
        return self.freq_mhz[:, -1]

    @property
    def full_load_cores(self) -> np.ndarray:
        """Per server: its throughput with every hardware thread busy, in single-thread cores (cores x yield)."""
        return np.bincount(self.server_of_core, weights=self.smt_yield, minlength=self.n_servers)

    def server_power_w(self, level: np.ndarray, busy: np.ndarray, beta: np.ndarray, *,
                       paper_dynamic_only: bool = False) -> np.ndarray:
        """Power (W) of every server; ``level`` (int), ``busy`` in [0, 1] and ``beta`` are per core (K,).

        Same model as :meth:`ServerType.power_w` (which it equals server by server).
        """
        level = np.asarray(level, dtype=np.intp)
        busy = np.asarray(busy, dtype=float)
        beta = np.asarray(beta, dtype=float)
        rows = self._rows
        per_core = busy * self.dyn_w[rows, level] * activity_factor(beta)
        if not paper_dynamic_only:
            per_core = (per_core + busy * (self.leak_w[rows, level] + beta * self._traffic_w_per_busy_beta)
                        + (1.0 - busy) * self.idle_w)
        total = np.bincount(self.server_of_core, weights=per_core, minlength=self.n_servers)
        if not paper_dynamic_only:
            total += self.uncore_w + self.dram_idle_w
        return total


def build_core_table(servers: Sequence[str | ServerType], *, biglittle: bool = False,
                     smt_yield: float = SMT_YIELD) -> CoreTable:
    """Flat per physical core arrays for ``servers`` (names or types); ``biglittle``: the upper half of each
    server's cores are :data:`LITTLE_CORE` (§1.4); ``smt_yield``: the throughput of a Hyper-Threading core running
    two threads (1: physical cores only). ValueError on an empty or unknown server list or a yield below 1."""
    if isinstance(servers, str) or not isinstance(servers, Sequence) or len(servers) == 0:
        raise ValueError(f"servers must be a non-empty list of server types {list(SERVER_TYPES)}, got {servers!r}")
    if isinstance(smt_yield, bool) or not isinstance(smt_yield, int | float) or not 1.0 <= smt_yield <= 2.0:
        raise ValueError(f"smt_yield must be a number in [1, 2] (two threads' throughput on one core), got "
                         f"{smt_yield!r}")
    types = tuple(get_server_type(name) for name in servers)
    freq, dyn, leak, idle, ipc, little, yields, owner = [], [], [], [], [], [], [], []
    for index, server in enumerate(types):
        n = server.physical_cores
        n_little = n // 2 if biglittle else 0
        for core in range(n):
            kind = LITTLE_CORE if core >= n - n_little else BIG_CORE
            levels = server.levels_mhz * kind.f_max_scale
            capacitance = server.capacitance_f * kind.capacitance_scale
            freq.append(levels)
            dyn.append(0.5 * capacitance * server.volts**2 * levels * 1e6)
            leak.append(server.core_leakage_w(np.arange(N_LEVELS)) * kind.capacitance_scale)
            idle.append(server.idle_core_w * kind.capacitance_scale)
            ipc.append(kind.ipc_scale)
            little.append(kind is LITTLE_CORE)
            yields.append(float(smt_yield) if server.smt else 1.0)
            owner.append(index)
    cores = np.array([server.physical_cores for server in types])
    return CoreTable(
        server_types=types,
        server_of_core=np.array(owner, dtype=np.intp),
        first_core=np.concatenate([[0], np.cumsum(cores)]).astype(np.intp),
        freq_mhz=np.array(freq), volts=types[0].volts.copy(), dyn_w=np.array(dyn), leak_w=np.array(leak),
        idle_w=np.array(idle), ipc_scale=np.array(ipc), is_little=np.array(little), smt_yield=np.array(yields),
        uncore_w=np.array([s.uncore_w for s in types]), dram_idle_w=np.array([s.dram_idle_w for s in types]),
        dram_bw_gbs=np.array([s.dram_bw_gbs for s in types]), cores=cores,
        tdp_w=np.array([s.tdp_w for s in types]), logical_cores=np.array([server.cores for server in types]),
    )

