"""``joulegym/EMRF-v0`` and its action-mode kinds: sharing a coupled CPU-GPU APU (EMRF paper; spec §7).

Up to ``max_users`` users (apps with CPU fraction xi, weight w, job queues) share an APU of
``(C_cpu, C_gpu)`` GFLOPS (:mod:`~joulegym.envs.emrf.simulator`). Each decision step is one scheduling
window ΔT (Alg. 1; default 1 s) in which the agent sets the per-user allocation F_i (GFLOPS).

==================  ==========================================================================
Action modes        ``action_mode`` config key; each also has its own id (kind):

                    - ``weights`` (``joulegym/EMRF-v0``): ``Box(0, 1, (max_users,))`` weights ω;
                      F_i = ω_i t*, t* = 1 / max_d(sum ω_i xi_i^d / C_d) over the active users (WFQ
                      semantics: a device saturates). Inactive slots are ignored; all-zero ω on the
                      active users means equal ω (the spec's "ω + 1e-6" would make the reference
                      action inexact). ω = F*/max F* reproduces any saturating F* (EMRF's included).
                    - ``residual_weights`` (``EMRFResidual``): same Box; F_i = η F_i^max + ω_i t',
                      t' saturating the first device of C' (the fairness floor holds by construction).
                      Reference: ω = F'/max F'.
                    - ``knob`` (``EMRFKnob``): ``Box(0, 1, (1,))`` = η of this window; F = EMRF(η).
                    - ``knob_discrete`` (``EMRFKnobDiscrete``): ``Discrete(knob_levels)`` (default 11:
                      η in {0, 0.1, ..., 1}); ``action_masks()`` is all True.

                    On an event inside the window (completion, departure, arrival, xi phase switch)
                    the same ω is re-scaled over the users with work (knob modes re-solve EMRF at the
                    same η); an arriving user joins at once if that gives it F > 0, else it waits
                    (ω = 0 in ``weights`` mode, e.g. it was idle at the decision; simulator docstring,
                    "Admission"). ``admit_at_window=True``: arrivals wait for the next window.
                    With ``task_gflop`` set, every allocation goes through Alg. 1's discrete
                    scheduler (kernel slices by lowest F_i/F*_i) instead of its fluid limit.
Observation         ``Box(0, 1, (10 max_users + 7,), float32)``; GFLOPS over C_tot = C_cpu + C_gpu.
                    Per slot: active, xi_hat, w/W, S/C_tot, F^max/C_tot, F^solo/C_tot, remaining
                    fraction of the current job, jobs left (fraction), last F/C_tot, last
                    (F/S)/(W/min w). Globals: η_target, δ(η_target)/(W/min w), last U_cpu, last U_gpu,
                    C_cpu/C_tot, n_active/max_users, t/H. W, S, F^max over the active users.
Reward              E = sum F_i / C_tot (the LP objective), V = sum_i max(0, η_target F_i^max - F_i)
                    / C_tot (fairness-floor violation), Δ = max F/S - min F/S (realized soft fairness),
                    time-averaged over the window's segments.
                    ``floor`` (default): E - λ V (λ = ``lam`` = 50, spec §7); EMRF(η_target) maximises
                    it. ``scalarized``: (1 - β) E - β Δ/(W/min w). ``vector``: the scalar is ``floor``.
                    ``info["reward_vector"]`` is always ``[E, -Δ/(W/min w), -V]``.
Starting state      the scenario's users (``apu-random``: drawn from the seed; η_target drawn from
                    ``eta_choices`` when set).
Termination         every job of every user is done (finite-job scenarios, e.g. ``apu-m1``).
Truncation          after ``horizon`` windows (default 200).
Info                ``metrics`` (cumulative paper metrics), ``reward_vector``, ``allocation`` (F per
                    slot at the window start), ``delivered`` (mean GFLOPS per slot over the window),
                    ``utilisation`` / ``U_cpu`` / ``U_gpu``, ``soft_fairness`` (Δ), ``delta_bound``
                    (δ(η_target), Theorem 1 corrected), ``si_violations`` (users with F_i < S_i),
                    ``ef_violations`` (envious pairs), ``reference_allocations`` (what each reference
                    policy would allocate now: ``emrf`` (η_target), ``drf``, ``drf-progressive``,
                    ``wfq``, ``static-partition`` (S scaled until a device saturates),
                    ``max-utilisation`` (EMRF at η = 0); and ``fair-share`` S; tuples per slot),
                    ``scheduler_inputs`` (exact inputs for reference policies; tuples per slot),
                    ``eta`` (η used), ``arrivals_joined`` / ``arrivals_waited`` (users that got work
                    inside the window and joined at once / waited; ``arrivals_readmitted``: waiting
                    users that joined later in the window, e.g. at a departure), ``action_mask``
                    (discrete).
==================  ==========================================================================

Invalid actions (wrong shape, NaN, out of bounds) raise ``ValueError`` (DESIGN.md "Invalid input";
the spec's "NaN is clipped" is not followed, for consistency with the other families).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from joulegym.devices import get_device
from joulegym.envs.base import (
    LegacyEnv as JoulegymEnv,
    check_choice,
    check_positive,
    check_unit_interval,
    new_figure,
    validated_box_list,
    validated_discrete_action,
)
from joulegym.envs.emrf.allocation import (
    SOLVERS,
    TIE_BREAKS,
    algorithm1_fill_core,
    basics,
    delta_bound_from_residual,
    drf_progressive_core,
    emrf_core,
    residual_core,
)
from joulegym.envs.emrf.simulator import EMRFSimulator, UserSpec
from joulegym.scenarios.emrf import RANDOM_MIX, SCENARIOS
from joulegym.workloads.rodinia import DEFAULT_SOLO_SECONDS, MIXES, default_job_gflop, rodinia_app

ACTION_MODES = ("weights", "residual_weights", "knob", "knob_discrete")
REWARD_MODES = ("floor", "scalarized", "vector")
MODE_KIND = {"weights": "EMRF", "residual_weights": "EMRFResidual", "knob": "EMRFKnob",
             "knob_discrete": "EMRFKnobDiscrete"}
SLOT_FEATURES = 10
REFERENCE_KEYS = ("emrf", "drf", "drf-progressive", "wfq", "static-partition", "max-utilisation", "fair-share")
GLOBAL_FEATURES = 7
APP_KEYS = ("app", "name", "xi_cpu", "weight", "jobs", "job_gflop", "arrival", "arrival_rate", "job_sigma")
RANDOM_KEYS = ("n_users", "apps", "weights", "xi_jitter", "job_sigma", "arrival_rate", "initial_jobs")


def _spread(active: tuple[int, ...], values, n: int) -> tuple[float, ...]:
    """Per-active-user ``values`` as a per-slot tuple of length ``n`` (0 for the other slots)."""
    out = [0.0] * n
    for k, i in enumerate(active):
        out[i] = values[k]
    return tuple(out)


class ReferenceAllocations(Mapping):
    """``info["reference_allocations"]``: what each reference policy would allocate now, per slot.

    ``max-utilisation`` (one more EMRF solve) and ``drf-progressive`` are computed on first access (most
    training loops never read them) and then kept; the object holds plain data, so it pickles (vector envs).
    """

    __slots__ = ("_active", "_inst", "_n", "_solver", "_tie_break", "_values")

    def __init__(self, values: dict[str, tuple[float, ...]], inst, active: tuple[int, ...], n: int,
                 tie_break: str, solver: str) -> None:
        self._values, self._inst, self._active, self._n = values, inst, active, n
        self._tie_break, self._solver = tie_break, solver

    def __getitem__(self, key: str) -> tuple[float, ...]:
        value = self._values.get(key)
        if value is None:
            if key == "max-utilisation":
                alloc = emrf_core(*self._inst, 0.0, self._tie_break, self._solver)[0] if self._active else ()
            elif key == "drf-progressive":
                alloc = drf_progressive_core(*self._inst) if self._active else ()
            else:
                raise KeyError(key)
            value = self._values[key] = _spread(self._active, alloc, self._n)
        return value

    def __iter__(self):
        return iter(REFERENCE_KEYS)

    def __len__(self) -> int:
        return len(REFERENCE_KEYS)


class _Derived:
    """Everything the shell derives from one (active set, xi_hat, weights, eta_target): cached per key."""

    __slots__ = ("bound", "diag", "fmax", "inst", "m", "norm", "refs", "share", "slot_static", "total_w")

    def __init__(self, env: EMRFEnv, active: tuple[int, ...], inst) -> None:
        self.inst = inst
        self.m, self.share, self.fmax, _, self.total_w = basics(*inst)
        w = inst[3]
        self.norm = sum(w) / min(w)
        tie_break, solver = env.config["tie_break"], env.config["lp_solver"]
        xi = inst[2]
        n = env.max_users

        def saturating(omega) -> list[float]:  # omega scaled until the first device saturates (weights mode)
            t = 1.0 / max(sum(o * x for o, x in zip(omega, xi)) / inst[0],
                          sum(o * (1.0 - x) for o, x in zip(omega, xi)) / inst[1])
            return [o * t for o in omega]

        emrf, c_res_cpu, c_res_gpu = emrf_core(*inst, env.eta_target, tie_break, solver)
        self.bound = delta_bound_from_residual(xi, w, self.m, self.total_w, c_res_cpu, c_res_gpu)
        # what each reference policy would allocate now (baselines.emrf), and the fair shares S
        self.refs = ReferenceAllocations({
            "emrf": _spread(active, emrf, n), "drf": _spread(active, self.fmax, n),
            "wfq": _spread(active, saturating(w), n), "static-partition": _spread(active, saturating(self.share), n),
            "fair-share": _spread(active, self.share, n),
        }, inst, active, n, tie_break, solver)
        ctot = env.c_tot
        # observation features 0-5 of each active slot: active, xi_hat, w/W, S/C_tot, F^max/C_tot, F^solo/C_tot
        self.slot_static = [[1.0, x, wk / self.total_w, s / ctot, f / ctot, 1.0 / mk / ctot]
                            for x, wk, s, f, mk in zip(xi, w, self.share, self.fmax, self.m)]
        self.diag: dict[tuple[float, ...], tuple[int, int]] = {}


DERIVED_CACHE_SIZE = 4096  # distinct (active set, xi_hat, w, eta) kept per env; cleared when full


def _default_apps() -> list[dict]:
    mix = MIXES["M1"]
    return [{"app": a, "weight": w} for a, w in zip(mix.apps, mix.weights)]


class EMRFEnv(JoulegymEnv):
    """EMRF APU-sharing env; see the module docstring for spaces, reward and termination."""

    family: ClassVar[str] = "emrf"
    kind: ClassVar[str] = "EMRF"
    scenarios = SCENARIOS
    default_action_mode: ClassVar[str] = "weights"

    @classmethod
    def default_config(cls) -> dict[str, Any]:
        """Defaults: the ``apu-random`` training mix (2-8 random Rodinia users, η_target in {0.1, 0.5, 0.8}),
        8 slots, H = 200 windows of 1 s. ``apps`` (M1's, Table II) is used when ``random`` is ``None``.

        ===============  =====================================================================
        key              meaning
        ===============  =====================================================================
        device           APU preset (``amd-a8-3870k``, ``emrf-toy``)
        capacities       ``None`` or ``[C_cpu, C_gpu]`` GFLOPS overriding the device's
        apps             list of users: ``{"app": Rodinia name | "xi_cpu": x, "weight", "jobs"
                         (None = backlogged), "job_gflop" (None = 10 s x F_solo), "arrival",
                         "arrival_rate" (Poisson jobs/s), "job_sigma", "name"}``
        random           ``None`` or the ``apu-random`` generator (keys: n_users, apps, weights,
                         xi_jitter, job_sigma, arrival_rate, initial_jobs)
        eta              η_target in [0, 1] (fairness floor and the reference EMRF's knob)
        eta_choices      ``None`` or a list: η_target drawn per episode
        tie_break        EMRF's LP tie-break (``lexmaxmin`` | ``vertex``) for knob modes/info
        lp_solver        ``closed-form`` (default: the exact closed-form solution of the LP, a few
                         microseconds) | ``highs`` (scipy HiGHS, ~2 ms per new instance); both give
                         the same allocation (``allocation`` module docstring). ``vertex`` is HiGHS.
        action_mode      ``weights`` | ``residual_weights`` | ``knob`` | ``knob_discrete``
        reward           ``floor`` | ``scalarized`` | ``vector``
        lam              λ of the floor reward (spec §7: 50)
        beta             β of the scalarized reward
        window_s         ΔT, seconds per decision (Alg. 1; spec default 1 s)
        horizon          windows per episode H
        max_users        user slots
        xi_noise         std of the measurement noise on co-run apps' xi_hat
        phase_delta      ``None`` or δξ: co-run apps' xi alternates with xi + δξ every 20-40 s
        knob_levels      η levels of ``knob_discrete`` (11: steps of 0.1)
        task_gflop       ``None`` (Alg. 1's fluid limit, spec §3.2 default) or the GFLOPS of one kernel
                         slice of Alg. 1's discrete scheduler (lines 4-9), fed with the fluid F as F*
        strict_stop      with ``task_gflop``: stop at the first slice that does not fit (line 9 as
                         printed) instead of skipping that user and continuing (spec default)
        solo_seconds     default job size = solo_seconds x F_solo GFLOP (spec §8 row 10)
        admit_at_window  False (spec §3.2, §7: an arrival inside the window is an event and is
                         allocated at once when the window's rule gives it F > 0) | True (arrivals
                         are admitted at the next window boundary, the earlier simplification)
        ===============  =====================================================================
        """
        return {
            "scenario": None,
            "device": "amd-a8-3870k",
            "capacities": None,
            "apps": _default_apps(),
            "random": dict(RANDOM_MIX),
            "eta": 0.1,
            "eta_choices": [0.1, 0.5, 0.8],
            "tie_break": "lexmaxmin",
            "lp_solver": "closed-form",
            "action_mode": cls.default_action_mode,
            "reward": "floor",
            "lam": 50.0,
            "beta": 0.5,
            "window_s": 1.0,
            "horizon": 200,
            "max_users": 8,
            "xi_noise": 0.0,
            "phase_delta": None,
            "knob_levels": 11,
            "task_gflop": None,
            "strict_stop": False,
            "solo_seconds": DEFAULT_SOLO_SECONDS,
            "admit_at_window": False,
        }

    def __init__(self, scenario: str | None = None, render_mode: str | None = None, **overrides: Any) -> None:
        super().__init__(scenario=scenario, render_mode=render_mode, **overrides)
        self._validate_config()
        cfg = self.config
        self.action_mode = cfg["action_mode"]
        self.kind = MODE_KIND[self.action_mode]  # instance attribute: policy applicability follows the mode
        self.capacities = self._capacities()  # the Device itself is not kept: the env stays deep-copyable
        self.c_tot = self.capacities[0] + self.capacities[1]
        self.max_users = cfg["max_users"]
        self.horizon = cfg["horizon"]
        self._fixed_users = [self._user_from_config(a, k) for k, a in enumerate(cfg["apps"])]
        if cfg["random"] is None and not self._fixed_users:
            raise ValueError("apps must list at least one user (or set random for a random mix)")
        if len(self._fixed_users) > self.max_users:
            raise ValueError(f"apps lists {len(self._fixed_users)} users but max_users={self.max_users}")
        self.sim = EMRFSimulator(self.capacities, self.max_users, cfg["window_s"], self.horizon,
                                 xi_noise=cfg["xi_noise"], admit_at_window=cfg["admit_at_window"])
        n = self.max_users
        self.observation_space = gym.spaces.Box(0.0, 1.0, (n * SLOT_FEATURES + GLOBAL_FEATURES,), dtype=np.float32)
        if self.action_mode in ("weights", "residual_weights"):
            self.action_space = gym.spaces.Box(0.0, 1.0, (n,), dtype=np.float32)
        elif self.action_mode == "knob":
            self.action_space = gym.spaces.Box(0.0, 1.0, (1,), dtype=np.float32)
        else:
            self.action_space = gym.spaces.Discrete(cfg["knob_levels"])
        self.eta_target = cfg["eta"]
        self._derived_cache: dict[tuple, _Derived] = {}
        self._new_view()
        self._history: list[tuple[float, float, float, float]] = []
        self._reset_accumulators()

    # --- config -----------------------------------------------------------------------------------
    def _validate_config(self) -> None:
        cfg = self.config
        check_choice("action_mode", cfg["action_mode"], ACTION_MODES)
        check_choice("reward", cfg["reward"], REWARD_MODES)
        check_choice("tie_break", cfg["tie_break"], TIE_BREAKS)
        check_choice("lp_solver", cfg["lp_solver"], SOLVERS)
        cfg["eta"] = check_unit_interval("eta", cfg["eta"])
        if cfg["eta_choices"] is not None:
            if not cfg["eta_choices"]:
                raise ValueError("eta_choices must be None or a non-empty list of values in [0, 1]")
            cfg["eta_choices"] = [check_unit_interval("eta_choices[]", v) for v in cfg["eta_choices"]]
        cfg["beta"] = check_unit_interval("beta", cfg["beta"])
        cfg["lam"] = check_positive("lam", cfg["lam"], allow_zero=True)
        cfg["window_s"] = check_positive("window_s", cfg["window_s"])
        cfg["solo_seconds"] = check_positive("solo_seconds", cfg["solo_seconds"])
        cfg["xi_noise"] = check_positive("xi_noise", cfg["xi_noise"], allow_zero=True)
        if cfg["task_gflop"] is not None:
            cfg["task_gflop"] = check_positive("task_gflop", cfg["task_gflop"])
        for key in ("strict_stop", "admit_at_window"):
            if not isinstance(cfg[key], bool):
                raise ValueError(f"{key} must be True or False, got {cfg[key]!r}")
        if cfg["phase_delta"] is not None:
            cfg["phase_delta"] = check_unit_interval("phase_delta", cfg["phase_delta"])
        for key, least in (("horizon", 1), ("max_users", 1), ("knob_levels", 2)):
            value = cfg[key]
            if not isinstance(value, int | float) or isinstance(value, bool) or int(value) != value or value < least:
                raise ValueError(f"{key} must be a whole number >= {least}, got {value!r}")
            cfg[key] = int(value)
        if cfg["capacities"] is not None:
            caps = cfg["capacities"]
            ok = isinstance(caps, list | tuple) and len(caps) == 2
            if not ok or not all(isinstance(c, int | float) and math.isfinite(c) and c > 0 for c in caps):
                raise ValueError(f"capacities must be None or two finite numbers > 0 [C_cpu, C_gpu], got {caps!r}")
        if not isinstance(cfg["apps"], list | tuple):
            raise ValueError(f"apps must be a list of user dicts, got {cfg['apps']!r}")
        if cfg["random"] is not None:
            self._validate_random(cfg["random"])

    def _validate_random(self, spec: Any) -> None:
        if not isinstance(spec, dict):
            raise ValueError(f"random must be None or a dict with keys {RANDOM_KEYS}, got {spec!r}")
        unknown = set(spec) - set(RANDOM_KEYS)
        if unknown:
            raise ValueError(f"unknown random keys {sorted(unknown)}; allowed: {RANDOM_KEYS}")
        lo, hi = spec.get("n_users", [2, 8])
        if not 1 <= int(lo) <= int(hi) <= self.config["max_users"]:
            raise ValueError(f"random.n_users must satisfy 1 <= lo <= hi <= max_users "
                             f"({self.config['max_users']}), got {[lo, hi]}")
        for app in spec.get("apps", ()):
            rodinia_app(app)
        for w in spec.get("weights", [1.0]):
            check_positive("random.weights[]", w)
        check_unit_interval("random.xi_jitter", spec.get("xi_jitter", 0.0))
        check_positive("random.job_sigma", spec.get("job_sigma", 0.0), allow_zero=True)
        check_positive("random.arrival_rate", spec.get("arrival_rate", 0.0), allow_zero=True)

    def _user_from_config(self, app: Any, index: int) -> UserSpec:
        if not isinstance(app, dict):
            raise ValueError(f"apps[{index}] must be a dict, got {app!r}")
        unknown = set(app) - set(APP_KEYS)
        if unknown:
            raise ValueError(f"apps[{index}] has unknown keys {sorted(unknown)}; allowed: {APP_KEYS}")
        if app.get("app") is None and app.get("xi_cpu") is None:
            raise ValueError(f"apps[{index}] needs 'app' (a Rodinia name) or 'xi_cpu'")
        entry = rodinia_app(app["app"]) if app.get("app") is not None else None
        xi = app.get("xi_cpu")
        xi = entry.xi_cpu if xi is None else check_unit_interval(f"apps[{index}].xi_cpu", xi)
        co_run = 0.0 < xi < 1.0
        weight = check_positive(f"apps[{index}].weight", app.get("weight", 1.0))
        size = app.get("job_gflop")
        size = (default_job_gflop(xi, self._capacities(), self.config["solo_seconds"]) if size is None
                else check_positive(f"apps[{index}].job_gflop", size))
        jobs = app.get("jobs")
        if jobs is not None and (int(jobs) != jobs or jobs < 1):
            raise ValueError(f"apps[{index}].jobs must be None (backlogged) or a whole number >= 1, got {jobs!r}")
        delta = self.config["phase_delta"]
        xi_alt = min(xi + delta, 1.0) if (delta is not None and co_run) else None
        return UserSpec(
            name=str(app.get("name") or (entry.name if entry else f"user{index}")), xi_cpu=xi, weight=weight,
            job_gflop=size, jobs=None if jobs is None else int(jobs),
            arrival=check_positive(f"apps[{index}].arrival", app.get("arrival", 0.0), allow_zero=True),
            arrival_rate=check_positive(f"apps[{index}].arrival_rate", app.get("arrival_rate", 0.0), allow_zero=True),
            job_sigma=check_positive(f"apps[{index}].job_sigma", app.get("job_sigma", 0.0), allow_zero=True),
            xi_alt=xi_alt, co_run=co_run)

    def _capacities(self) -> tuple[float, float]:
        caps = self.config["capacities"]
        if caps is not None:
            return float(caps[0]), float(caps[1])
        device = get_device(self.config["device"])
        return float(device.capacities["cpu"]), float(device.capacities["gpu"])

    def _draw_users(self) -> list[UserSpec]:
        spec = self.config["random"]
        if spec is None:
            return list(self._fixed_users)
        rng = self.np_random
        lo, hi = spec.get("n_users", [2, 8])
        n = int(rng.integers(int(lo), int(hi) + 1))
        names = list(spec.get("apps", list(MIXES["M1"].apps)))
        weights = list(spec.get("weights", [1.0]))
        jitter = float(spec.get("xi_jitter", 0.0))
        users = []
        for _ in range(n):
            app = rodinia_app(names[int(rng.integers(len(names)))])
            xi = app.xi_cpu
            if app.co_run and jitter > 0:
                xi = min(max(xi + float(rng.uniform(-jitter, jitter)), 0.0), 1.0)
            users.append(UserSpec(
                name=app.name, xi_cpu=xi, weight=float(weights[int(rng.integers(len(weights)))]),
                job_gflop=default_job_gflop(xi, self.capacities, self.config["solo_seconds"]),
                jobs=int(spec.get("initial_jobs", 1)), arrival_rate=float(spec.get("arrival_rate", 0.0)),
                job_sigma=float(spec.get("job_sigma", 0.0)), co_run=0.0 < xi < 1.0))
        return users

    # --- instance helpers ---------------------------------------------------------------------------
    def _instance(self, active: tuple[int, ...]) -> tuple[float, float, tuple[float, ...], tuple[float, ...]]:
        """``(C_cpu, C_gpu, xi_hat, w)`` of ``active`` as the current decision sees them (cached per window)."""
        inst = self._inst_cache.get(active)
        if inst is None:
            sim = self.sim
            xi = self._xi_view
            inst = self._inst_cache[active] = (self.capacities[0], self.capacities[1],
                                               tuple(xi[i] for i in active), tuple(sim.weight[i] for i in active))
        return inst

    def _new_view(self) -> None:
        """The decision inputs changed (window end / reset): snapshot xi_hat, drop the per-window caches."""
        self._xi_view = list(self.sim.xi_hat)
        self._inst_cache: dict[tuple[int, ...], tuple] = {}
        self._active_cache: tuple[int, ...] | None = None

    def _derived(self, active: tuple[int, ...]) -> _Derived:
        inst = self._instance(active)
        key = (active, inst[2], inst[3], self.eta_target)
        d = self._derived_cache.get(key)
        if d is None:
            if len(self._derived_cache) >= DERIVED_CACHE_SIZE:
                self._derived_cache.clear()
            d = self._derived_cache[key] = _Derived(self, active, inst)
        return d

    def _spread(self, active: tuple[int, ...], values) -> list[float]:
        out = [0.0] * self.max_users
        for k, i in enumerate(active):
            out[i] = values[k]
        return out

    def _active_slots(self) -> tuple[int, ...]:
        """Active slots at the current decision point (cached until the next window)."""
        if self._active_cache is None:
            sim = self.sim
            self._active_cache = tuple(i for i in range(self.max_users) if sim.present[i] and sim.queue[i] > 0)
        return self._active_cache

    # --- decisions -----------------------------------------------------------------------------------
    def _weights_rule(self, omega: list[float]):
        c_cpu, c_gpu = self.capacities

        def rule(active: tuple[int, ...]) -> list[float]:
            out = [0.0] * self.max_users
            if not active:
                return out
            xi = self.sim.xi_hat
            w = [omega[i] for i in active]
            if sum(w) <= 0.0:
                w = [1.0] * len(active)
            load = max(sum(wk * xi[i] for wk, i in zip(w, active)) / c_cpu,
                       sum(wk * (1.0 - xi[i]) for wk, i in zip(w, active)) / c_gpu)
            t = 1.0 / load
            for wk, i in zip(w, active):
                out[i] = wk * t
            return out

        return rule

    def _residual_rule(self, omega: list[float], eta: float):
        def rule(active: tuple[int, ...]) -> list[float]:
            out = [0.0] * self.max_users
            if not active:
                return out
            inst = self._instance(active)
            fmax = basics(*inst)[2]
            a, b = residual_core(inst[0], inst[1], inst[2], fmax, eta)  # eta = eta_target: cached below
            xi = inst[2]
            w = [omega[i] for i in active]
            if sum(w) <= 0.0:
                w = [1.0] * len(active)
            need_cpu = sum(wk * x for wk, x in zip(w, xi))
            need_gpu = sum(wk * (1.0 - x) for wk, x in zip(w, xi))
            loads = []
            for need, room in ((need_cpu, a), (need_gpu, b)):
                if need > 0:
                    loads.append(math.inf if room <= 0 else need / room)
            load = max(loads) if loads else math.inf
            t = 0.0 if math.isinf(load) else 1.0 / load
            for k, i in enumerate(active):
                out[i] = eta * fmax[k] + w[k] * t
            return out

        return rule

    def _knob_rule(self, eta: float):
        def rule(active: tuple[int, ...]) -> list[float]:
            if not active:
                return [0.0] * self.max_users
            alloc = emrf_core(*self._instance(active), eta, self.config["tie_break"], self.config["lp_solver"])[0]
            return self._spread(active, alloc)

        return rule

    def decode_action(self, action: Any):
        """``(rule, eta_used)`` for ``action``: the window's allocation rule (validates the action).

        The rule gives Alg. 1's fluid limit (F = omega t*, spec §3.2 default) or, with ``task_gflop`` set,
        its discrete scheduler fed with that fluid allocation as the weights F* (lines 3-9).
        """
        rule, eta = self._fluid_rule(action)
        task = self.config["task_gflop"]
        if task is None:
            return rule, eta
        strict = self.config["strict_stop"]

        def discrete(active: tuple[int, ...]) -> list[float]:
            planned = rule(active)
            if not active:
                return planned
            c_cpu, c_gpu, xi, _ = self._instance(active)
            fill = algorithm1_fill_core(c_cpu, c_gpu, xi, tuple(planned[i] for i in active), task, strict)
            return self._spread(active, fill)

        return discrete, eta

    def _fluid_rule(self, action: Any):
        mode = self.action_mode
        if mode == "weights":
            return self._weights_rule(validated_box_list(action, self.action_space)), self.eta_target
        if mode == "residual_weights":
            omega = validated_box_list(action, self.action_space)
            return self._residual_rule(omega, self.eta_target), self.eta_target
        if mode == "knob":
            eta = validated_box_list(action, self.action_space)[0]
            return self._knob_rule(eta), eta
        level = validated_discrete_action(action, self.action_space)
        eta = level / (self.action_space.n - 1)
        return self._knob_rule(eta), eta

    def allocation_for(self, action: Any) -> np.ndarray:
        """The allocation (GFLOPS per slot) ``action`` gives the current active set (no state change)."""
        rule, _ = self.decode_action(action)
        return np.array(rule(self._active_slots()))

    def action_masks(self) -> np.ndarray:
        n = self.action_space.n if isinstance(self.action_space, gym.spaces.Discrete) else 1
        return np.ones(n, dtype=bool)

    # --- episode --------------------------------------------------------------------------------------
    def _reset_accumulators(self) -> None:
        n = self.max_users
        self._sum_e = 0.0
        self._sum_v = 0.0
        self._sum_delta = 0.0
        self._sum_delta_bound = 0.0
        self._sum_speedup = 0.0
        self._si_total = 0
        self._ef_total = 0
        self._steps = 0
        self._ratio_time = [0.0] * n
        self._active_time = [0.0] * n
        self._last_alloc = [0.0] * n
        self._last_ratio = [0.0] * n
        self._last_util = (0.0, 0.0)
        self._history = []

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        cfg = self.config
        self.eta_target = float(self.np_random.choice(cfg["eta_choices"])) if cfg["eta_choices"] else cfg["eta"]
        self.sim.reset(self._draw_users(), self.np_random)
        self._new_view()
        self._reset_accumulators()
        return self._observation(), self._info(None, None, self.eta_target, 0.0)

    def step(self, action: Any):
        rule, eta_used = self.decode_action(action)
        start_active = self._active_slots()
        planned = rule(start_active)
        memo = {start_active: planned}
        sim, view = self.sim, self._xi_view

        def cached_rule(active: tuple[int, ...]) -> list[float]:
            alloc = memo.get(active)
            if alloc is None:
                # a user arriving inside the window was not in the decision's xi_hat snapshot: it is
                # planned (and measured) with its app's xi, as it would be at the next decision
                for i in active:
                    if view[i] != sim.xi_hat[i]:
                        view[i] = sim.xi_hat[i]
                alloc = memo[active] = rule(active)
            return alloc

        si, ef = self._diagnostics(planned, start_active)
        bound = self._derived(start_active).bound if start_active else 0.0
        norm = self._delta_norm(start_active)
        result = self.sim.window(cached_rule)
        e, v, delta = self._window_measures(result)
        self._new_view()
        reward_vector = (e, -delta / norm, -v)
        cfg = self.config
        if cfg["reward"] == "scalarized":
            reward = (1.0 - cfg["beta"]) * e - cfg["beta"] * delta / norm
        else:
            reward = e - cfg["lam"] * v
        self._steps += 1
        self._sum_e += e
        self._sum_v += v
        self._sum_delta += delta
        self._last_alloc = planned
        terminated = self.sim.done
        truncated = self.sim.truncated and not terminated
        info = self._info(planned, reward_vector, eta_used, delta, (si, ef, bound))
        info["arrivals_joined"] = sum(1 for _, _, joined in result.arrivals if joined)
        info["arrivals_waited"] = len(result.arrivals) - info["arrivals_joined"]
        info["arrivals_readmitted"] = len(result.readmitted)
        return self._observation(), float(reward), terminated, truncated, info

    def _window_measures(self, result) -> tuple[float, float, float]:
        """Time averages over the window's segments of E, V and Δ; per-user F/S accumulators."""
        eta = self.eta_target
        total_e = total_v = total_delta = 0.0
        span = self.sim.window_s
        for dt, active, rates in result.segments:
            if not active or dt <= 0:
                continue
            d = self._derived(active)
            share, fmax, m = d.share, d.fmax, d.m
            total_e += dt * sum(rates[i] for i in active)
            total_v += dt * sum(max(0.0, eta * fmax[k] - rates[i]) for k, i in enumerate(active))
            ratios = [rates[i] / share[k] for k, i in enumerate(active)]
            total_delta += dt * (max(ratios) - min(ratios))
            self._sum_speedup += dt * sum(rates[i] * m[k] for k, i in enumerate(active))
            for k, i in enumerate(active):
                self._ratio_time[i] += dt * ratios[k]
                self._active_time[i] += dt
        self._last_ratio = [0.0] * self.max_users
        if result.segments:
            dt, active, rates = result.segments[-1]
            if active:
                d = self._derived(active)
                share, norm = d.share, d.norm
                for k, i in enumerate(active):
                    self._last_ratio[i] = rates[i] / share[k] / norm
        self._last_util = self.sim.last_utilisation
        return total_e / (span * self.c_tot), total_v / (span * self.c_tot), total_delta / span

    def _delta_norm(self, active: tuple[int, ...]) -> float:
        """W / min w over the active users (δ(0) = W / min w, so Δ / norm <= 1)."""
        return self._derived(active).norm if active else 1.0

    # --- observation and info ---------------------------------------------------------------------------
    def _observation(self) -> np.ndarray:
        sim = self.sim
        active = self._active_slots()
        ctot = self.c_tot
        n = self.max_users
        feats = [0.0] * (n * SLOT_FEATURES + GLOBAL_FEATURES)
        delta_norm_bound = 0.0
        if active:
            d = self._derived(active)
            for k, i in enumerate(active):
                base = i * SLOT_FEATURES
                feats[base:base + 6] = d.slot_static[k]
                feats[base + 6] = sim.remaining[i] / sim.current_size[i]
                feats[base + 7] = sim.jobs_left_fraction(i)
                feats[base + 8] = self._last_alloc[i] / ctot
                feats[base + 9] = self._last_ratio[i]
            delta_norm_bound = d.bound / d.norm
        for i in range(n):  # present users without work keep their identity features
            if sim.users[i] is not None and sim.present[i] and i not in active:
                feats[i * SLOT_FEATURES + 1] = sim.xi_hat[i]
        g = n * SLOT_FEATURES
        feats[g:] = [self.eta_target, delta_norm_bound, self._last_util[0], self._last_util[1],
                     self.capacities[0] / ctot, len(active) / n, min(sim.windows / self.horizon, 1.0)]
        obs = np.array(feats, dtype=np.float32)
        np.clip(obs, 0.0, 1.0, out=obs)
        return obs

    def scheduler_inputs(self) -> dict[str, Any]:
        """Exact inputs of the reference algorithms for the current window (tuples per slot)."""
        sim = self.sim
        active = self._active_slots()
        mask = tuple(i in active for i in range(self.max_users))
        return {"capacities": self.capacities, "xi_cpu": tuple(self._xi_view), "weights": tuple(sim.weight),
                "active": mask, "eta": self.eta_target, "tie_break": self.config["tie_break"],
                "lp_solver": self.config["lp_solver"],
                "action_mode": self.action_mode, "knob_levels": self.config["knob_levels"]}

    def reference_allocations(self) -> Mapping[str, tuple[float, ...]]:
        """What each reference policy (and the fair share S) allocates to the current active set."""
        active = self._active_slots()
        n = self.max_users
        if not active:
            return {k: (0.0,) * n for k in REFERENCE_KEYS}
        return self._derived(active).refs  # read-only mapping of tuples: safe to share between steps

    def _diagnostics(self, planned: list[float], active: tuple[int, ...]) -> tuple[int, int]:
        """(SI violations, envious pairs) of ``planned`` over ``active`` (Eqs. (1), (2), (19))."""
        if not active:
            return 0, 0
        d = self._derived(active)
        f = tuple(planned[i] for i in active)
        cached = d.diag.get(f)
        if cached is not None:
            return cached
        share, xi = d.share, d.inst[2]
        si = sum(1 for fk, s in zip(f, share) if fk < s * (1 - 1e-9))
        ef = 0
        for a, (xa, fa) in enumerate(zip(xi, f)):
            for b, (xb, fb) in enumerate(zip(xi, f)):
                if a == b:
                    continue
                got = min(fb * xb / xa if xa > 0 else math.inf, fb * (1 - xb) / (1 - xa) if xa < 1 else math.inf)
                if got > fa * (1 + 1e-9) + 1e-9:
                    ef += 1
        if len(d.diag) < DERIVED_CACHE_SIZE:
            d.diag[f] = (si, ef)
        return si, ef

    def _info(self, planned, reward_vector, eta_used: float, delta: float,
              diagnostics: tuple[int, int, float] = (0, 0, 0.0)) -> dict[str, Any]:
        sim = self.sim
        info: dict[str, Any] = {}
        n = self.max_users
        if planned is not None:
            si, ef, bound = diagnostics
            self._si_total += si
            self._ef_total += ef
            self._sum_delta_bound += bound
            self._history.append((sim.time, self._last_util[0], self._last_util[1], sum(sim.last_rates)))
            info.update({
                "allocation": np.array(planned), "delivered": np.array(sim.last_rates),
                "utilisation": np.array(self._last_util), "U_cpu": self._last_util[0], "U_gpu": self._last_util[1],
                "soft_fairness": delta, "delta_bound": bound, "si_violations": si, "ef_violations": ef,
                "reward_vector": np.array(reward_vector),
            })
        else:
            info.update({"allocation": np.zeros(n), "delivered": np.zeros(n), "utilisation": np.zeros(2),
                         "U_cpu": 0.0, "U_gpu": 0.0, "soft_fairness": 0.0, "si_violations": 0, "ef_violations": 0,
                         "delta_bound": 0.0, "reward_vector": np.zeros(3)})
        info["eta"] = float(eta_used)
        info["eta_target"] = self.eta_target
        info["arrivals_joined"] = info["arrivals_waited"] = info["arrivals_readmitted"] = 0
        info["scheduler_inputs"] = self.scheduler_inputs()
        info["reference_allocations"] = self.reference_allocations()
        info["metrics"] = self.metrics()
        if self.action_mode == "knob_discrete":
            info["action_mask"] = self.action_masks()
        return info

    def metrics(self) -> dict[str, Any]:
        """The paper's metrics over the episode so far (spec §2.4, §7 "At episode end")."""
        sim = self.sim
        elapsed = sim.time
        steps = max(self._steps, 1)
        ratios = [self._ratio_time[i] / self._active_time[i] for i in range(self.max_users) if self._active_time[i] > 0]
        times = sim.completion_times()
        finished = [(sim.work_done[i], t) for i, t in enumerate(times) if not math.isnan(t) and t > 0]
        metrics: dict[str, Any] = {
            "throughput_gflops": sim.total_gflop / elapsed if elapsed > 0 else 0.0,
            "mean_efficiency": self._sum_e / steps,
            "cpu_utilisation": sim.cpu_gflop / (self.capacities[0] * elapsed) if elapsed > 0 else 0.0,
            "gpu_utilisation": sim.gpu_gflop / (self.capacities[1] * elapsed) if elapsed > 0 else 0.0,
            "soft_fairness": self._sum_delta / steps,
            "delta_bound": self._sum_delta_bound / steps,
            "floor_violation": self._sum_v / steps,
            "si_violations": float(self._si_total),
            "ef_violations": float(self._ef_total),
            "jain_fairness": (sum(ratios) ** 2 / (len(ratios) * sum(r * r for r in ratios))
                              if ratios and any(ratios) else 1.0),  # Jain's index of mean F_i/S_i
            "weighted_speedup": self._sum_speedup / elapsed if elapsed > 0 else 0.0,
            "jobs_completed": float(sum(sim.jobs_done)),
            "job_throughput_gflops": float(sum(w / t for w, t in finished)),
            "eta_target": self.eta_target,
            "per_user_gflops": np.array([w / elapsed if elapsed > 0 else 0.0 for w in sim.work_done]),
            "completion_times_s": np.array([0.0 if math.isnan(t) else t for t in times]),  # 0: not finished
        }
        if sim.done:
            metrics["makespan_s"] = max((f for f in sim.finished_at if f is not None), default=0.0)
        return metrics

    # --- rendering --------------------------------------------------------------------------------------
    def _render_ansi(self) -> str:
        sim = self.sim
        lines = [f"t={sim.time:.1f}s window {sim.windows}/{self.horizon} eta_target={self.eta_target:.2f} "
                 f"C=({self.capacities[0]:g}, {self.capacities[1]:g}) GFLOPS mode={self.action_mode}",
                 f"{'slot':>4} {'app':>6} {'act':>3} {'xi_hat':>7} {'w':>5} {'F':>9} {'F_cpu':>8} {'F_gpu':>8} "
                 f"{'left':>5}"]
        for i in range(self.max_users):
            user = sim.users[i]
            if user is None:
                continue
            f = self._last_alloc[i]
            x = sim.xi_hat[i]
            active = sim.present[i] and sim.queue[i] > 0
            lines.append(f"{i:>4} {user.name:>6} {'*' if active else ' ':>3} {x:>7.3f} {sim.weight[i]:>5g} "
                         f"{f:>9.2f} {f * x:>8.2f} {f * (1 - x):>8.2f} {sim.remaining_fraction(i):>5.2f}")
        lines.append(f"U_cpu={self._last_util[0]:.3f} U_gpu={self._last_util[1]:.3f}")
        return "\n".join(lines)

    def _render_figure(self):
        sim = self.sim
        fig, axes = new_figure(1, 2, size=(9.0, 3.4))
        ax = axes[0, 0]
        slots = [i for i in range(self.max_users) if sim.users[i] is not None]
        labels = [f"{i}:{sim.users[i].name}" for i in slots]
        cpu = [self._last_alloc[i] * sim.xi_hat[i] for i in slots]
        gpu = [self._last_alloc[i] * (1 - sim.xi_hat[i]) for i in slots]
        ax.bar(labels, cpu, label="CPU GFLOPS")
        ax.bar(labels, gpu, bottom=cpu, label="GPU GFLOPS")
        ax.set_ylabel("allocation (GFLOPS)")
        ax.legend(fontsize=7)
        ax.tick_params(axis="x", labelsize=7, rotation=45)
        ax2 = axes[0, 1]
        if self._history:
            hist = np.array(self._history)
            ax2.plot(hist[:, 0], hist[:, 1], label="U_cpu")
            ax2.plot(hist[:, 0], hist[:, 2], label="U_gpu")
            ax2.legend(fontsize=7)
        ax2.set_ylim(0, 1.05)
        ax2.set_xlabel("time (s)")
        ax2.set_ylabel("utilisation")
        fig.suptitle(f"EMRF ({self.action_mode}), t = {sim.time:.1f} s", fontsize=9)
        fig.tight_layout()
        return fig


class EMRFResidualEnv(EMRFEnv):
    """``joulegym/EMRFResidual-v0``: ``residual_weights`` action mode."""

    kind: ClassVar[str] = "EMRFResidual"
    default_action_mode: ClassVar[str] = "residual_weights"


class EMRFKnobEnv(EMRFEnv):
    """``joulegym/EMRFKnob-v0``: the agent sets η each window."""

    kind: ClassVar[str] = "EMRFKnob"
    default_action_mode: ClassVar[str] = "knob"


class EMRFKnobDiscreteEnv(EMRFEnv):
    """``joulegym/EMRFKnobDiscrete-v0``: η from ``knob_levels`` levels (DQN)."""

    kind: ClassVar[str] = "EMRFKnobDiscrete"
    default_action_mode: ClassVar[str] = "knob_discrete"
