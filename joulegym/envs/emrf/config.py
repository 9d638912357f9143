"""The EMRF env's configuration: validation of every key, the users of a config (fixed ``apps`` or the
``apu-random`` generator), the bound on the work a window implies (docs/families/emrf.md §7 "Config keys").

:class:`EMRFSetup` is what a resolved config fixes for every episode (capacities, slots, horizon, the fixed users,
the weight unit) and draws what changes per episode (the users of a random mix, η_target).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from joulegym.core.config import (
    check_bool,
    check_choice,
    check_int,
    check_keys,
    check_number,
    check_positive,
    check_unit_interval,
    check_unit_interval_list,
)
from joulegym.devices import get_device
from joulegym.envs.emrf.allocation import MAX_SPREAD, SOLVERS, TIE_BREAKS, as_instance, power_of_two_below
from joulegym.envs.emrf.batch import UserSpec
from joulegym.workloads.rodinia import MIXES, default_job_gflop, rodinia_app

WINDOW_S_RANGE = (1e-3, 3600.0)  # ΔT (s): below 1 ms or above an hour a window is not a scheduling window
MAX_USERS_LIMIT = 256  # slots; bounds the observation and the per-window work (fail fast)
MAX_JOB_SIGMA = 5.0  # lognormal sigma of job sizes: above ~5 the mean-preserving factor exp(-sigma^2/2) underflows
APP_KEYS = ("app", "name", "xi_cpu", "weight", "jobs", "job_gflop", "arrival", "arrival_rate", "job_sigma")
RANDOM_KEYS = ("n_users", "apps", "weights", "xi_jitter", "job_sigma", "arrival_rate", "initial_jobs")
# A window costs about (events in it + 1) x (slots + Alg. 1 slices per allocation) elementary operations; the config
# is checked for this implied work (joulegym choices, found with the config fuzzer: default configs imply < 100).
MAX_WINDOW_WORK = 2e5  # implied operations per window; more raises ValueError naming the keys
MAX_TASK_SLICES = 1e5  # Alg. 1 slices per allocation ((C_cpu + C_gpu) / task_gflop); the docs test of Alg. 1 (M1,
#                       task_gflop = 0.01) needs 50,400
# Size bounds (found by fuzzing the config: solo_seconds=1e308 made job sizes inf and the observation NaN;
# knob_levels=1e308 overflowed Discrete): job sizes stay finite after the lognormal factor (<= e^(sigma^2/2) ~ 3e5
# at sigma = 5) and the time integrals; eta finer than 0.001 is no use to a knob (joulegym choices).
MAX_SOLO_SECONDS = 1e9  # s (~32 years alone on the APU)
MAX_JOB_GFLOP = 1e200  # GFLOP per job
MAX_KNOB_LEVELS = 1001  # knob_discrete levels (steps of 0.001)


class EMRFSetup:
    """What the resolved ``config`` fixes (validated; a ``ValueError`` names the bad key) and draws per episode."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = cfg = config
        self._validate_config()
        self.capacities = self._device_capacities()  # the Device itself is not kept: the env stays deep-copyable
        self.c_tot = self.capacities[0] + self.capacities[1]
        self.max_users = cfg["max_users"]
        self.horizon = cfg["horizon"]
        self.fixed_users = [self._user_from_config(a, k) for k, a in enumerate(cfg["apps"])]
        if cfg["random"] is None and not self.fixed_users:
            raise ValueError("apps must list at least one user (or set random for a random mix)")
        if len(self.fixed_users) > self.max_users:
            raise ValueError(f"apps lists {len(self.fixed_users)} users but max_users={self.max_users}")
        weights = self.config_weights()
        if max(weights) / MAX_SPREAD > min(weights):
            field = "random.weights" if cfg["random"] is not None else "apps[].weight"
            raise ValueError(f"{field} must lie within a factor {MAX_SPREAD:g} of each other (the EMRF allocators' "
                             f"domain, allocation.MAX_SPREAD), got {weights!r}")
        self._check_implied_work()
        # weights enter the allocations only as ratios: dividing them by a power of two near the largest one is
        # exact and keeps W m_i (Eq. (3)) from underflowing at extreme magnitudes
        self.weight_unit = power_of_two_below(max(weights))

    def draw_eta(self, rng: np.random.Generator) -> float:
        """η_target of an episode: drawn from ``eta_choices`` when set, else ``eta``."""
        cfg = self.config
        return float(rng.choice(cfg["eta_choices"])) if cfg["eta_choices"] else cfg["eta"]

    def _validate_config(self) -> None:
        cfg = self.config
        check_choice("tie_break", cfg["tie_break"], TIE_BREAKS)
        check_choice("lp_solver", cfg["lp_solver"], SOLVERS)
        cfg["eta"] = check_unit_interval("eta", cfg["eta"])
        if cfg["eta_choices"] is not None:
            cfg["eta_choices"] = check_unit_interval_list("eta_choices", cfg["eta_choices"])
        cfg["window_s"] = check_number("window_s", cfg["window_s"], *WINDOW_S_RANGE)
        cfg["solo_seconds"] = check_positive("solo_seconds", cfg["solo_seconds"])
        if cfg["solo_seconds"] > MAX_SOLO_SECONDS:
            raise ValueError(f"solo_seconds must be a finite number > 0 and <= {MAX_SOLO_SECONDS:g} s, "
                             f"got {cfg['solo_seconds']!r}")
        cfg["xi_noise"] = check_positive("xi_noise", cfg["xi_noise"], allow_zero=True)
        if cfg["task_gflop"] is not None:
            cfg["task_gflop"] = check_positive("task_gflop", cfg["task_gflop"])
        check_bool("strict_stop", cfg["strict_stop"])
        check_bool("admit_at_window", cfg["admit_at_window"])
        if cfg["phase_delta"] is not None:
            cfg["phase_delta"] = check_unit_interval("phase_delta", cfg["phase_delta"])
        cfg["horizon"] = check_int("horizon", cfg["horizon"], 1)
        cfg["max_users"] = check_int("max_users", cfg["max_users"], 1, MAX_USERS_LIMIT)
        cfg["knob_levels"] = check_int("knob_levels", cfg["knob_levels"], 2, MAX_KNOB_LEVELS)
        if cfg["capacities"] is not None:
            caps = cfg["capacities"]
            ok = isinstance(caps, list | tuple) and len(caps) == 2
            if not ok or not all(isinstance(c, int | float) and not isinstance(c, bool) and math.isfinite(c) and c > 0
                                 for c in caps):
                raise ValueError(f"capacities must be None or two finite numbers > 0 [C_cpu, C_gpu], got {caps!r}")
            as_instance(caps, [0.5], [1.0])  # the allocators' domain: magnitude and spread (names capacities)
        if not isinstance(cfg["apps"], list | tuple):
            raise ValueError(f"apps must be a list of user dicts, got {cfg['apps']!r}")
        if cfg["random"] is not None:
            self._validate_random(cfg["random"])

    def _validate_random(self, spec: Any) -> None:
        spec = check_keys("random", spec, RANDOM_KEYS)
        bounds = spec.get("n_users", [2, 8])
        if not isinstance(bounds, list | tuple) or len(bounds) != 2:
            raise ValueError(f"random.n_users must be [lo, hi], got {bounds!r}")
        lo, hi = (check_int("random.n_users[]", b, 1) for b in bounds)
        if not lo <= hi <= self.config["max_users"]:
            raise ValueError(f"random.n_users must satisfy 1 <= lo <= hi <= max_users "
                             f"({self.config['max_users']}), got {list(bounds)}")
        apps = spec.get("apps", ())
        if not isinstance(apps, list | tuple) or (("apps" in spec) and not apps):
            raise ValueError(f"random.apps must be a non-empty list of Rodinia app names, got {apps!r}")
        for k, app in enumerate(apps):
            try:
                rodinia_app(app)
            except (TypeError, ValueError) as err:
                raise ValueError(f"random.apps[{k}]: {err}") from None
        weights = spec.get("weights", [1.0])
        if not isinstance(weights, list | tuple) or not weights:
            raise ValueError(f"random.weights must be a non-empty list of numbers > 0, got {weights!r}")
        for w in weights:
            check_positive("random.weights[]", w)
        check_unit_interval("random.xi_jitter", spec.get("xi_jitter", 0.0))
        check_number("random.job_sigma", spec.get("job_sigma", 0.0), 0.0, MAX_JOB_SIGMA)
        check_positive("random.arrival_rate", spec.get("arrival_rate", 0.0), allow_zero=True)
        check_int("random.initial_jobs", spec.get("initial_jobs", 1), 0)

    def _user_from_config(self, app: Any, index: int) -> UserSpec:
        app = check_keys(f"apps[{index}]", app, APP_KEYS)
        if app.get("app") is None and app.get("xi_cpu") is None:
            raise ValueError(f"apps[{index}] needs 'app' (a Rodinia name) or 'xi_cpu'")
        try:
            entry = rodinia_app(app["app"]) if app.get("app") is not None else None
        except ValueError as err:
            raise ValueError(f"apps[{index}].app: {err}") from None
        xi = app.get("xi_cpu")
        xi = entry.xi_cpu if xi is None else check_unit_interval(f"apps[{index}].xi_cpu", xi)
        co_run = 0.0 < xi < 1.0
        weight = check_positive(f"apps[{index}].weight", app.get("weight", 1.0))
        size = app.get("job_gflop")
        size = (default_job_gflop(xi, self.capacities, self.config["solo_seconds"]) if size is None
                else check_number(f"apps[{index}].job_gflop", size, 0.0, MAX_JOB_GFLOP))
        if size <= 0:
            raise ValueError(f"apps[{index}].job_gflop must be a finite number in (0, {MAX_JOB_GFLOP:g}], got {size!r}")
        jobs = app.get("jobs")
        if jobs is not None:
            jobs = check_int(f"apps[{index}].jobs", jobs, 1)
        delta = self.config["phase_delta"]
        xi_alt = min(xi + delta, 1.0) if (delta is not None and co_run) else None
        return UserSpec(
            name=str(app.get("name") or (entry.name if entry else f"user{index}")), xi_cpu=xi, weight=weight,
            job_gflop=size, jobs=jobs,
            arrival=check_positive(f"apps[{index}].arrival", app.get("arrival", 0.0), allow_zero=True),
            arrival_rate=check_positive(f"apps[{index}].arrival_rate", app.get("arrival_rate", 0.0), allow_zero=True),
            job_sigma=check_number(f"apps[{index}].job_sigma", app.get("job_sigma", 0.0), 0.0, MAX_JOB_SIGMA),
            xi_alt=xi_alt, co_run=co_run)

    def _device_capacities(self) -> tuple[float, float]:
        caps = self.config["capacities"]
        if caps is not None:
            return float(caps[0]), float(caps[1])
        device = get_device(self.config["device"])
        if not {"cpu", "gpu"} <= set(device.capacities):
            raise ValueError(f"device={self.config['device']!r} has no CPU and GPU capacities (it is a "
                             f"{device.kind!r}); EMRF needs an APU preset, e.g. 'amd-a8-3870k', or capacities=[C_cpu, "
                             "C_gpu]")
        return float(device.capacities["cpu"]), float(device.capacities["gpu"])

    def _check_implied_work(self) -> None:
        """Fail fast on configs whose windows would take seconds (constants at the module top).

        Events per window per user: job completions, at most ``window_s`` over the median job's solo time
        (a user never runs faster than alone; lognormal sizes have median ``mean exp(-sigma^2 / 2)``), plus
        Poisson job arrivals ``arrival_rate window_s``.
        """
        cfg = self.config
        window = cfg["window_s"]
        if cfg["random"] is not None:
            spec = cfg["random"]
            sigma, rate = float(spec.get("job_sigma", 0.0)), float(spec.get("arrival_rate", 0.0))
            per_user = [window / (cfg["solo_seconds"] * math.exp(-0.5 * sigma * sigma)) + rate * window]
            users = int(spec.get("n_users", [2, 8])[1])
        else:
            per_user = []
            for u in self.fixed_users:
                solo_s = u.job_gflop * max(u.xi_cpu / self.capacities[0], (1.0 - u.xi_cpu) / self.capacities[1])
                per_user.append(window / (solo_s * math.exp(-0.5 * u.job_sigma ** 2)) + u.arrival_rate * window)
            users = len(self.fixed_users)
        slices = 0.0
        if cfg["task_gflop"] is not None:
            slices = self.c_tot / cfg["task_gflop"]
            if slices > MAX_TASK_SLICES:
                raise ValueError(f"task_gflop must be at least (C_cpu + C_gpu) / {MAX_TASK_SLICES:g} = "
                                 f"{self.c_tot / MAX_TASK_SLICES:g} GFLOP (at most {MAX_TASK_SLICES:g} Alg. 1 slices "
                                 f"per allocation), got {cfg['task_gflop']!r}")
        events = users * max(per_user)
        work = (events + 1.0) * (self.max_users + slices)
        if work > MAX_WINDOW_WORK:
            raise ValueError(
                f"the config implies about {events:.3g} events per window x {self.max_users + slices:.3g} operations "
                f"each = {work:.3g} > {MAX_WINDOW_WORK:g} (MAX_WINDOW_WORK, ~0.2 s per step): lower window_s, "
                "max_users, arrival_rate or job_sigma, or raise solo_seconds / job_gflop / task_gflop")

    def config_weights(self) -> list[float]:
        """Every weight a user of this config can have (the random mix's list, or the fixed users')."""
        if self.config["random"] is not None:
            return [float(w) for w in self.config["random"].get("weights", [1.0])]
        return [u.weight for u in self.fixed_users]

    def draw_users(self, rng: np.random.Generator) -> list[UserSpec]:
        spec = self.config["random"]
        if spec is None:
            return list(self.fixed_users)
        rng = rng
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
