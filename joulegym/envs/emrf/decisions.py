"""What the single EMRF env derives from a decision's inputs (EMRF paper §III-§V; docs/families/emrf.md §2, §6):
per (active set, xi_hat, weights, η_target) the fair shares S, F^max, m, δ(η) and W / min w (:class:`Derived`,
cached per key), the reference allocations of the info, and the diagnostics of an allocation (sharing incentive,
envious pairs); and what the single env (Python numbers) and the batched env (numpy arrays of rows and slots)
compute with the same operations, so with the same floats: the observation's features 0-5 and its globals
(:func:`identity_features`, :func:`global_features`) and the levels of the weight modes' allocation rules
(:func:`saturating_level`, :func:`residual_level`; ``where`` is :func:`scalar_where` or ``np.where``, ``larger``
``max`` or ``np.maximum``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from joulegym.core.cache import BoundedCache
from joulegym.core.summation import sequential_sum
from joulegym.envs.emrf.allocation import (
    basics,
    delta_bound_from_residual,
    device_loads,
    drf_progressive_core,
    emrf_core,
    residual_core,
)

SLOT_FEATURE_NAMES = ("active", "xi_hat", "weight_share", "fair_share", "f_max", "f_solo", "job_remaining",
                      "jobs_left", "last_allocation", "last_fairness_ratio")  # the env's module docstring's order
GLOBAL_FEATURE_NAMES = ("eta_target", "delta_bound", "last_U_cpu", "last_U_gpu", "cpu_capacity_share",
                        "active_fraction", "time")
SLOT_FEATURES = len(SLOT_FEATURE_NAMES)  # observation features per user slot
GLOBAL_FEATURES = len(GLOBAL_FEATURE_NAMES)
REFERENCE_KEYS = ("emrf", "drf", "drf-progressive", "wfq", "static-partition", "max-utilisation", "fair-share")
DERIVED_CACHE_SIZE = 4096  # distinct (active set, xi_hat, w, eta) kept per env
ENVY_NUMPY_FROM = 12  # users from which the numpy envy count is cheaper than the Python one (docs §11)
TINY_WEIGHT = 1e-100  # a Box action whose largest weight is below this is rescaled by it first (denormals)


def scalar_where(condition: bool, value: Any, other: Any) -> Any:
    """``np.where`` for Python numbers (the ``where`` of the formulas below in the single env)."""
    return value if condition else other


def saturating_level(need_cpu: Any, need_gpu: Any, c_cpu: float, c_gpu: float, larger: Any) -> Any:
    """t* = 1 / max_d(need_d / C_d): the scale at which weights that need ``need_d`` GFLOPS of device d per unit
    saturate the first device (the ``weights`` mode's WFQ semantics; the ``static-partition`` and ``wfq``
    references). ``larger`` is ``max`` or ``np.maximum`` (the loads are never NaN)."""
    return 1.0 / larger(need_cpu / c_cpu, need_gpu / c_gpu)


def residual_level(need_cpu: Any, need_gpu: Any, room_cpu: Any, room_gpu: Any, where: Any) -> Any:
    """t' saturating the first device of the residual capacities C' (``residual_weights``): the weights need
    ``need_d`` of device d per unit; 0 when a device they need has no room left, or when they need no device."""
    load_cpu = where(need_cpu > 0, where(room_cpu <= 0, math.inf, need_cpu / where(room_cpu <= 0, 1.0, room_cpu)),
                     -math.inf)
    load_gpu = where(need_gpu > 0, where(room_gpu <= 0, math.inf, need_gpu / where(room_gpu <= 0, 1.0, room_gpu)),
                     -math.inf)
    load = where(load_gpu > load_cpu, load_gpu, load_cpu)
    unbounded = (load == math.inf) | (load == -math.inf)  # no room on a needed device, or no device needed
    return where(unbounded, 0.0, 1.0 / where(unbounded, 1.0, load))


def identity_features(xi: Any, w: Any, total_w: Any, share: Any, fmax: Any, m: Any, c_tot: float) -> tuple:
    """Observation features 0-5 of an active slot (:data:`SLOT_FEATURE_NAMES`): active, xi_hat, w/W, S/C_tot,
    F^max/C_tot, F^solo/C_tot (F^solo = 1 / m)."""
    return 1.0, xi, w / total_w, share / c_tot, fmax / c_tot, 1.0 / m / c_tot


def global_features(eta_target: Any, bound: Any, norm: Any, util_cpu: Any, util_gpu: Any, c_cpu: float,
                    c_tot: float, n_active: Any, n: int, progress: Any) -> tuple:
    """The observation's globals (:data:`GLOBAL_FEATURE_NAMES`): η_target, δ(η_target)/(W/min w) (``bound`` 0 and
    ``norm`` 1 without users), the last U_cpu and U_gpu, C_cpu/C_tot, n_active/max_users and ``progress`` (t/H, at
    most 1)."""
    return eta_target, bound / norm, util_cpu, util_gpu, c_cpu / c_tot, n_active / n, progress


def spread(active: tuple[int, ...], values, n: int) -> tuple[float, ...]:
    """Per-active-user ``values`` as a per-slot tuple of length ``n`` (0 for the other slots)."""
    out = [0.0] * n
    for k, i in enumerate(active):
        out[i] = values[k]
    return tuple(out)


def normalised(w: list[float]) -> list[float]:
    """Weights of the active users, safe to scale: all-zero -> equal; a tiny maximum -> divided by it.

    Allocations are scale-free in ω, so dividing by the maximum changes nothing but the round-off; it is
    only done when the maximum is so small (denormals) that the saturating scale 1/load would overflow.
    """
    top = max(w)
    if top <= 0.0:
        return [1.0] * len(w)
    if top < TINY_WEIGHT:
        return [wk / top for wk in w]
    return w


class ReferenceAllocations(Mapping):
    """``info["reference_allocations"]``: what each reference policy would allocate now, per slot.

    ``max-utilisation`` (one more EMRF solve) and ``drf-progressive`` are computed on first access (most
    training loops never read them) and then kept; the object holds plain data, so it pickles (vector
    envs). It is the type of this info key at every step, also when no user has work (all zeros).
    """

    __slots__ = ("_active", "_inst", "_n", "_solver", "_tie_break", "_values")

    def __init__(self, values: dict[str, tuple[float, ...]], inst, active: tuple[int, ...], n: int,
                 tie_break: str, solver: str) -> None:
        self._values, self._inst, self._active, self._n = values, inst, active, n
        self._tie_break, self._solver = tie_break, solver

    @classmethod
    def empty(cls, n: int, tie_break: str, solver: str) -> ReferenceAllocations:
        """No user has work: every policy allocates 0 to every slot."""
        zeros = (0.0,) * n
        return cls({key: zeros for key in REFERENCE_KEYS}, None, (), n, tie_break, solver)

    def __getitem__(self, key: str) -> tuple[float, ...]:
        value = self._values.get(key)
        if value is None:
            if key == "max-utilisation":
                alloc = emrf_core(*self._inst, 0.0, self._tie_break, self._solver)[0]
            elif key == "drf-progressive":
                alloc = drf_progressive_core(*self._inst)
            else:
                raise KeyError(key)
            value = self._values[key] = spread(self._active, alloc, self._n)
        return value

    def __iter__(self):
        return iter(REFERENCE_KEYS)

    def __len__(self) -> int:
        return len(REFERENCE_KEYS)


def envy_count(xi: tuple[float, ...], f: tuple[float, ...]) -> int:
    """Envious pairs (Eq. (2), mu of Eq. (19) in min-form; erratum E10) in plain Python, O(N^2) divisions.

    User a envies b if min_d (F_b xi_b^d) / xi_a^d > F_a (1 + 1e-9) + 1e-9 over the devices a uses; the
    vectors F_b xi_b^d are formed once (the divisions are the same as in the pairwise form, so are the counts).
    """
    cpu = [fb * xb for fb, xb in zip(f, xi)]
    gpu = [fb * (1 - xb) for fb, xb in zip(f, xi)]
    ef = 0
    for a, (xa, fa) in enumerate(zip(xi, f)):
        thr = fa * (1 + 1e-9) + 1e-9
        if xa <= 0:  # a uses only the GPU
            ga = 1 - xa
            hits = [b for b, g in enumerate(gpu) if g / ga > thr]
        elif xa >= 1:  # only the CPU
            hits = [b for b, c in enumerate(cpu) if c / xa > thr]
        else:
            ga = 1 - xa
            hits = [b for b, (c, g) in enumerate(zip(cpu, gpu)) if c / xa > thr and g / ga > thr]
        ef += len(hits) - (a in hits)  # a never envies itself (F_a xi_a / xi_a = F_a up to an ulp)
    return ef


class EnvyArrays:
    """The per-instance arrays of the vectorised envy count (numpy, for many users; same divisions, same count)."""

    __slots__ = ("gpu_frac", "n", "uses_cpu", "uses_gpu", "xi")

    def __init__(self, xi: tuple[float, ...]) -> None:
        n = self.n = len(xi)
        self.xi = np.array(xi)
        self.gpu_frac = 1 - self.xi
        self.uses_cpu = np.broadcast_to((self.xi > 0)[:, None], (n, n))
        self.uses_gpu = np.broadcast_to((self.xi < 1)[:, None], (n, n))

    def count(self, f: tuple[float, ...]) -> int:
        n = self.n
        fv = np.array(f)
        via_cpu = np.full((n, n), np.inf)  # [a, b]: what a would get from b's CPU share (inf: a needs no CPU)
        via_gpu = np.full((n, n), np.inf)
        with np.errstate(over="ignore"):  # a tiny xi overflows to inf, as Python's float division does
            np.divide(np.broadcast_to(fv * self.xi, (n, n)), self.xi[:, None], out=via_cpu, where=self.uses_cpu)
            np.divide(np.broadcast_to(fv * self.gpu_frac, (n, n)), self.gpu_frac[:, None], out=via_gpu,
                      where=self.uses_gpu)
        np.minimum(via_cpu, via_gpu, out=via_cpu)
        envy = via_cpu > (fv * (1 + 1e-9) + 1e-9)[:, None]
        np.fill_diagonal(envy, False)
        return int(np.count_nonzero(envy))


class Derived:
    """Everything the env derives from one (active set, xi_hat, weights, eta_target): cached per key.

    ``refs`` (the reference allocations of the info, one EMRF solve and two saturating scalings) is built when first
    needed; the bound needs only the fairness stage's residual capacities (the same ones ``emrf_core`` computes).
    """

    __slots__ = ("_c_tot", "_envy", "_refs", "_slot_static", "_solve", "active", "bound", "diag", "fmax", "inst",
                 "m", "norm", "share", "total_w")

    def __init__(self, env: Any, active: tuple[int, ...], inst) -> None:
        self.inst = inst
        self.active = active
        # what the lazy refs need: (max_users, eta_target, tie_break, lp_solver) of the key (no reference to the env)
        self._solve = (env.max_users, env.eta_target, env.config["tie_break"], env.config["lp_solver"])
        self.m, self.share, self.fmax, _, self.total_w = basics(*inst)
        w = inst[3]
        self.norm = sequential_sum(w) / min(w)
        xi = inst[2]
        c_res_cpu, c_res_gpu = residual_core(inst[0], inst[1], xi, self.fmax, env.eta_target)  # as emrf_core's
        self.bound = delta_bound_from_residual(xi, w, self.m, self.total_w, c_res_cpu, c_res_gpu)
        self._c_tot = env.c_tot
        self._slot_static: tuple[tuple[float, ...], ...] | None = None
        self.diag: BoundedCache[tuple[int, int]] = BoundedCache(DERIVED_CACHE_SIZE)
        self._envy: EnvyArrays | None = None
        self._refs: ReferenceAllocations | None = None

    @property
    def slot_static(self) -> tuple[tuple[float, ...], ...]:
        """Observation features 0-5 of each active slot: active, xi_hat, w/W, S/C_tot, F^max/C_tot, F^solo/C_tot
        (built when first observed)."""
        if self._slot_static is None:
            ctot = self._c_tot
            # tuples of floats: the cyclic garbage collector stops tracking them (a cache of many entries over many
            # users would otherwise make every full collection of the process scan them; docs §11)
            total_w = self.total_w
            self._slot_static = tuple(identity_features(x, wk, total_w, s, f, mk, ctot)
                                      for x, wk, s, f, mk in zip(self.inst[2], self.inst[3], self.share, self.fmax,
                                                                 self.m))
        return self._slot_static

    @property
    def refs(self) -> ReferenceAllocations:
        """What each reference policy would allocate now (baselines.emrf), and the fair shares S."""
        if self._refs is None:
            inst, active = self.inst, self.active
            n, eta, tie_break, solver = self._solve
            xi, w = inst[2], inst[3]

            def saturating(omega) -> list[float]:  # omega scaled until the first device saturates (weights mode)
                t = saturating_level(*device_loads(range(len(xi)), omega, xi), inst[0], inst[1], max)
                return [o * t for o in omega]

            emrf = emrf_core(*inst, eta, tie_break, solver)[0]
            self._refs = ReferenceAllocations({
                "emrf": spread(active, emrf, n), "drf": spread(active, self.fmax, n),
                "wfq": spread(active, saturating(w), n),
                "static-partition": spread(active, saturating(self.share), n),
                "fair-share": spread(active, self.share, n),
            }, inst, active, n, tie_break, solver)
        return self._refs

    def envy_arrays(self) -> EnvyArrays:
        if self._envy is None:
            self._envy = EnvyArrays(self.inst[2])
        return self._envy
