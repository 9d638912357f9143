"""What goes into and out of the PowerFlow simulator (Gu et al. §5-§6; ``docs/families/powerflow.md`` §7, §10):
its settings (:class:`SimConfig`), a scheduler's decision (:class:`Decision`), the scheduler's read-only view of a
decision point (:class:`SchedView`) and the outcome of a whole trace (:class:`SimResult`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from joulegym.envs.powerflow.cluster import affinity_migrate_place, affinity_place, first_fit_place

OVERHEAD_MODES = ("elasticflow", "flat", "none")
PREDICTORS = ("fitted", "oracle")
# jobs of any size, not aligned blocks (placed GPU by GPU); "affinity-migrate" also migrates (Gandiva)
NON_MIGRATING = {"first-fit": first_fit_place, "affinity": affinity_place, "affinity-migrate": affinity_migrate_place}
PLACEMENTS = ("packed", "packed-sticky", *NON_MIGRATING)
POWER_CONSTRAINTS = ("none", "repair")
TRUTH_NOISE_MAX = 1.0  # sigma of the truth noise: factors e^(+-1) at one sigma already dwarf the model [A]


def overhead_s(mode: str, n: int, flat_s: float = 30.0) -> float:
    """Reconfiguration overhead (docs §6): ElasticFlow ``2 + 27 + 2 (log2 n + 1)`` s, flat, or 0."""
    if mode == "none" or n <= 0:
        return 0.0
    if mode == "flat":
        return flat_s
    return 2.0 + 27.0 + 2.0 * (math.log2(n) + 1.0)


@dataclass
class SimConfig:
    """The simulator's settings (every one is also a :class:`~joulegym.envs.powerflow.env.PowerFlowEnv` config key;
    ``docs/families/powerflow.md`` §10 "Config keys" says what each does)."""

    eta: float = 0.6
    predictor: str = "fitted"
    profiling: bool = True
    prerun_s: float = 240.0
    profile_s: float = 240.0
    overhead: str = "elasticflow"
    flat_overhead_s: float = 30.0
    truth_noise: float = 0.03
    placement: str = "packed"
    power_constraint: str = "none"
    node_shutdown: bool = True
    horizon_s: float = 14 * 86400.0
    idle_tick_s: float = 600.0
    p_max_w: float | None = None  # default: mean per-GPU power at (n=1, f_max) over the catalog pool (docs §5)
    record_timeline: bool = True
    profile_scope: str = "model"  # "model": a (model, BS, n) profiled once serves later jobs; "job": per job
    pin_overhead: bool = True  # a job in its reconfiguration (checkpoint-restart) cannot be resized again
    # a scheduler's own cost per (re)start, suspend/resume or migration, replacing ``overhead`` (None: the
    # ``overhead`` model); set by a policy's env_config (Gandiva's in-process suspend/resume, 2 s)
    switch_overhead_s: float | None = None

    def validate(self) -> None:
        if not (isinstance(self.eta, (int, float)) and math.isfinite(self.eta) and 0 < self.eta <= 1):
            raise ValueError(f"eta must be in (0, 1], got {self.eta!r}")
        for name, allowed in (("predictor", PREDICTORS), ("overhead", OVERHEAD_MODES), ("placement", PLACEMENTS),
                              ("power_constraint", POWER_CONSTRAINTS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name}={getattr(self, name)!r} is not one of {allowed}")
        if self.profile_scope not in ("model", "job"):
            raise ValueError(f"profile_scope={self.profile_scope!r} is not one of ('model', 'job')")
        for name in ("prerun_s", "profile_s", "flat_overhead_s", "truth_noise"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if not self.truth_noise <= TRUTH_NOISE_MAX:  # the lognormal factor would swamp the model (and the fit)
            raise ValueError(f"truth_noise must be in [0, {TRUTH_NOISE_MAX}] (a lognormal sigma), got "
                             f"{self.truth_noise!r}")
        if self.switch_overhead_s is not None and not (isinstance(self.switch_overhead_s, (int, float))
                                                       and 0 <= self.switch_overhead_s < math.inf):
            raise ValueError(f"switch_overhead_s must be None or a finite number >= 0, got {self.switch_overhead_s!r}")
        if not self.horizon_s > 0 or not self.idle_tick_s > 0:
            raise ValueError("horizon_s and idle_tick_s must be > 0")


@dataclass(frozen=True)
class Decision:
    """A scheduler's decision at a decision point (what :meth:`PowerFlowSim.apply
    <joulegym.envs.powerflow.simulator.PowerFlowSim.apply>` takes; a plain mapping is ``alloc`` without a wake-up).

    :param alloc: ``{job: (GPUs, frequency level)}`` of the ready jobs (absent: no GPU; pinned jobs keep theirs).
    :param wakeup_s: a simulated time at which the scheduler asks for a decision point (Tiresias's next queue
        demotion), or ``None``.
    """

    alloc: Mapping[int, tuple[int, int]]
    wakeup_s: float | None = None


class _JobTables(Sequence):
    """``T`` or ``E`` of a :class:`SchedView`: item ``i`` is job ``jobs[i]``'s predicted table, looked up on access
    (a policy that reads no table, e.g. Tiresias over hundreds of queued jobs, pays nothing)."""

    __slots__ = ("_ids", "_part", "_sim")

    def __init__(self, sim: Any, ids: list[int], part: int) -> None:
        self._sim, self._ids, self._part = sim, ids, part

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._sim.predicted_tables_of(j)[self._part] for j in self._ids[i]]
        return self._sim.predicted_tables_of(self._ids[i])[self._part]


@dataclass(frozen=True)
class SchedView:
    """What a scheduler sees at a decision point (read-only: frozen, its arrays copies marked not writeable; arrays
    indexed by position in ``jobs``).

    ``T[i]``/``E[i]``: predicted ``(n_levels, F)`` tables of job ``jobs[i]`` over ``n_values`` (packed
    placement); ``row(i, n)`` gives predicted rows for any ``n``; ``true_row``/``true_tables`` the true ones
    (privileged: for oracle policies; ``predictor`` says which ``T``/``E`` are). ``pinned[i]``: in online profiling or
    restarting (its ``n``/GPUs are fixed); ``pinned_power`` is its predicted power once running (the
    profiling-window mean while it profiles).
    """

    now: float
    jobs: np.ndarray
    submit: np.ndarray
    remaining: np.ndarray
    n_req: np.ndarray
    batch_size: np.ndarray
    model: list[str]
    n: np.ndarray
    fl: np.ndarray
    pinned: np.ndarray
    pinned_power: np.ndarray
    attained: np.ndarray
    T: Sequence[np.ndarray]
    E: Sequence[np.ndarray]
    n_values: tuple[int, ...]
    freqs_mhz: np.ndarray
    num_gpus: int
    gpn: int
    power_limit_w: float
    p_max_w: float
    row: Callable[[int, int], tuple[np.ndarray, np.ndarray]]
    true_row: Callable[[int, int], tuple[np.ndarray, np.ndarray]]
    predictor: str = "fitted"
    true_tables: Callable[[int], tuple[np.ndarray, np.ndarray]] | None = None


@dataclass
class SimResult:
    """The outcome of a whole trace (:func:`joulegym.baselines.powerflow_simulate.simulate`; plain floats, per-job
    arrays, the allocation/power timeline)."""

    avg_jct_s: float
    total_energy_j: float
    makespan_s: float
    energy_breakdown_j: dict[str, float]
    metrics: dict[str, float]
    jct_s: np.ndarray
    finish_s: np.ndarray
    timeline: dict[str, np.ndarray] = field(default_factory=dict)
    truncated: bool = False
    balance: dict[str, float] = field(default_factory=dict)

    @property
    def avg_jct_h(self) -> float:
        return self.avg_jct_s / 3600.0

    @property
    def total_energy_kwh(self) -> float:
        return self.total_energy_j / 3.6e6
