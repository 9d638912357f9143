"""EMRF, DRF and WFQ on a coupled CPU-GPU APU as pure functions (EMRF paper §III, §IV, §V; spec §2-§3).

Every function takes ``(capacities, xi_cpu, weights, ...)``: ``capacities = (C_cpu, C_gpu)`` in GFLOPS,
``xi_cpu[i]`` the fraction of user i's operations run on the CPU (xi^gpu = 1 - xi^cpu) and
``weights[i] > 0``; allocations are per-user GFLOPS ``F_i``, consumed as ``(F_i xi_i^cpu, F_i xi_i^gpu)``.

====================================  ===========================================================
function                              paper
====================================  ===========================================================
:func:`fair_share`                    Eq. (3): S_i = w_i / (W m_i), m_i = max_d xi_i^d / C_d
:func:`drf_allocate`                  Eq. (8): F_i^max = w_i / (D m_i) (stops at the first
                                      saturated device, spec §8 row 3)
:func:`wfq_allocate`                  §III proportional sharing: F_i = w_i t, first device saturates
:func:`static_partition`              the non-sharing partition (SI reference): F_i = S_i
:func:`drf_progressive_allocate`      extension: Ghodsi progressive-filling DRF (spec §3.3 DRF-PF)
:func:`residual_capacity`             C'_d = C_d - eta sum_k F_k^max xi_k^d (clamped at 0)
:func:`emrf_allocate`                 Eq. (10): F = eta F^max + F', F' the LP of Eqs. (15)-(17)
:func:`delta_bound`                   Theorem 1, corrected (spec §2.3): max_i (W/w_i) m_i min_d C'_d/xi_i^d
:func:`soft_fairness_degree`          LHS of Eq. (9): max_i F_i/S_i - min_i F_i/S_i
:func:`sharing_incentive_violations`  Eq. (1): users with F_i < S_i (counted, Theorem 2 is sufficient only)
:func:`envy_pairs`                    Eq. (2) with mu of Eq. (19) in min-form (Theorem 3 is false,
                                      spec §2.3: counted, never assumed)
:func:`pareto_efficient`              every user needs some saturated device (Leontief PE)
====================================  ===========================================================

**The efficiency LP.** With ``x_g`` the GFLOPS of a group g of users with equal xi (Eq. (17) makes
F'_i/S_i equal inside a group), the LP is ``max sum x_g`` s.t. ``sum x_g xi_g <= A`` and
``sum x_g (1 - xi_g) <= B`` (A, B = C'). Since xi^cpu + xi^gpu = 1 its optimum is exact in closed form:
``A + B`` when ``r = A / (A + B)`` lies in ``[min xi_g, max xi_g]`` (both devices saturate), else all
residual capacity goes to the group closest to r (unique optimum). The optimum is often a face, not a
point (spec §8 row 2); two tie-breaks are offered:

- ``"lexmaxmin"`` (default, spec §3.1 step 6): lexicographic max-min of F_i/S_i on the optimal face.
  In closed form: every group gets the same level ``t*`` except the one group at the opposite end of
  xi from the equal-share imbalance ``E = sum_g s_g (xi_g - r)``, which absorbs the rest;
  ``t* = -e_min T / (E - e_min S)`` (E > 0) or ``e_max T / (e_max S - E)`` (E < 0), ``T = A + B``,
  ``e = xi - r``, ``S = sum S_i``. The spec's iterative HiGHS procedure is :func:`emrf_allocate` with
  ``solver="highs"``; the tests check that both agree on random instances.
- ``"vertex"``: the vertex scipy's HiGHS returns for the per-group LP (the paper used GLPK, whose
  vertex is implementation-dependent; this is the parity option, not a unique answer).

A failed HiGHS solve raises :class:`EMRFSolverError`; no zero allocation is ever returned silently.
The env calls the cached pure-Python core (:func:`emrf_core`), a few microseconds per distinct input.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

TIE_BREAKS = ("lexmaxmin", "vertex")
SOLVERS = ("closed-form", "highs")
XI_GROUP_TOL = 1e-9  # spec §3.1 step 5: users with |xi_i - xi_j| < 1e-9 share constraint (17)
RESIDUAL_ZERO_RTOL = 1e-12  # C'_d below this fraction of C_d is floating-point noise: clamp to 0 (spec §3.1 step 4)
CHECK_RTOL = 1e-9  # relative slack of the diagnostics (saturation, SI, envy) against round-off
CACHE_SIZE = 65_536  # distinct (capacities, xi, weights, eta, tie-break) inputs kept by the core caches


class EMRFSolverError(RuntimeError):
    """The efficiency LP (Eqs. (15)-(17)) could not be solved; never replaced by a zero allocation."""


# --- validation --------------------------------------------------------------------------------------
def as_instance(capacities, xi_cpu, weights) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated ``(C, xi_cpu, w)`` float arrays, or ``ValueError`` naming the bad field."""
    c = np.asarray(capacities, dtype=float).ravel()
    if c.size != 2 or not np.all(np.isfinite(c)) or np.any(c <= 0):
        raise ValueError(f"capacities must be two finite numbers > 0 (C_cpu, C_gpu) in GFLOPS, got {capacities!r}")
    xi = np.asarray(xi_cpu, dtype=float).ravel()
    if xi.size == 0 or not np.all(np.isfinite(xi)) or np.any(xi < 0) or np.any(xi > 1):
        raise ValueError(f"xi_cpu must be a non-empty list of CPU fractions in [0, 1], got {xi_cpu!r}")
    w = np.asarray(weights, dtype=float).ravel()
    if w.size != xi.size:
        raise ValueError(f"weights must have one entry per user ({xi.size}), got {w.size}")
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ValueError(f"weights must be finite numbers > 0, got {weights!r}")
    return c, xi, w


def check_eta(eta: float) -> float:
    try:
        value = float(eta)
    except (TypeError, ValueError):
        raise ValueError(f"eta must be a number in [0, 1], got {eta!r}") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"eta must be in [0, 1], got {eta!r}")
    return value


def _key(capacities, xi_cpu, weights) -> tuple[float, float, tuple[float, ...], tuple[float, ...]]:
    c, xi, w = as_instance(capacities, xi_cpu, weights)
    return float(c[0]), float(c[1]), tuple(xi.tolist()), tuple(w.tolist())


# --- the pure-Python core (cached; what the env calls) -------------------------------------------------
@lru_cache(maxsize=CACHE_SIZE)
def basics(c_cpu: float, c_gpu: float, xi: tuple[float, ...], w: tuple[float, ...]):
    """``(m, S, F^max, D, W)`` for a validated instance (Eqs. (3), (5), (8)); tuples of floats."""
    m = tuple(max(x / c_cpu, (1.0 - x) / c_gpu) for x in xi)
    total_w = sum(w)
    share = tuple(wi / (total_w * mi) for wi, mi in zip(w, m))
    d_cpu = sum(wi * (x / c_cpu) / mi for wi, x, mi in zip(w, xi, m))
    d_gpu = sum(wi * ((1.0 - x) / c_gpu) / mi for wi, x, mi in zip(w, xi, m))
    d = max(d_cpu, d_gpu)
    fmax = tuple(wi / (d * mi) for wi, mi in zip(w, m))
    return m, share, fmax, d, total_w


def residual_core(c_cpu: float, c_gpu: float, xi, fmax, eta: float) -> tuple[float, float]:
    used_cpu = eta * sum(f * x for f, x in zip(fmax, xi))
    used_gpu = eta * sum(f * (1.0 - x) for f, x in zip(fmax, xi))
    a = c_cpu - used_cpu
    b = c_gpu - used_gpu
    a = 0.0 if a <= RESIDUAL_ZERO_RTOL * c_cpu else a
    b = 0.0 if b <= RESIDUAL_ZERO_RTOL * c_gpu else b
    return a, b


def _groups(xi: tuple[float, ...]) -> list[list[int]]:
    """Users with equal xi (|diff| < XI_GROUP_TOL), groups in increasing xi (Eq. (17))."""
    order = sorted(range(len(xi)), key=lambda i: (xi[i], i))
    groups: list[list[int]] = []
    for i in order:
        if groups and xi[i] - xi[groups[-1][0]] < XI_GROUP_TOL:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def _closed_form_group_levels(a: float, b: float, gxi: list[float], gs: list[float]) -> list[float]:
    """Lexmaxmin-optimal z_g (F'_i = S_i z_g) of the efficiency LP, exactly (module docstring)."""
    total = a + b
    n = len(gxi)
    z = [0.0] * n
    if total <= 0.0:
        return z
    r = a / total
    lo, hi = gxi[0], gxi[-1]  # groups are sorted by xi
    if lo > r:  # every group is CPU-bound first: all of C'_cpu to the least CPU-hungry group (unique)
        z[0] = (a / lo) / gs[0]
        return z
    if hi < r:  # every group is GPU-bound first: all of C'_gpu to the least GPU-hungry group (unique)
        z[-1] = (b / (1.0 - hi)) / gs[-1]
        return z
    s_tot = sum(gs)
    imbalance = sum(s * (x - r) for s, x in zip(gs, gxi))
    if imbalance > 0.0:
        e_min = lo - r
        level = -e_min * total / (imbalance - e_min * s_tot)
        absorber = 0
    elif imbalance < 0.0:
        e_max = hi - r
        level = e_max * total / (e_max * s_tot - imbalance)
        absorber = n - 1
    else:
        return [total / s_tot] * n
    level = max(level, 0.0)
    z = [level] * n
    z[absorber] = level + max(total - level * s_tot, 0.0) / gs[absorber]
    return z


def _highs_vertex_levels(a: float, b: float, gxi: list[float], gs: list[float]) -> list[float]:
    """z_g of the vertex HiGHS returns for the per-group LP (variables x_g = group GFLOPS)."""
    from scipy.optimize import linprog

    n = len(gxi)
    if a + b <= 0.0:
        return [0.0] * n
    a_ub = np.array([gxi, [1.0 - x for x in gxi]])
    res = linprog(-np.ones(n), A_ub=a_ub, b_ub=[a, b], bounds=[(0, None)] * n, method="highs")
    _check_result(res, "efficiency LP")
    return [max(float(x), 0.0) / s for x, s in zip(res.x, gs)]


def _check_result(res, what: str) -> None:
    if res.status != 0 or res.x is None or not np.all(np.isfinite(res.x)):
        raise EMRFSolverError(
            f"HiGHS could not solve the EMRF {what} (Eqs. (15)-(17)): status {res.status}, {res.message!r}"
        )


def _highs_lexmaxmin_levels(a: float, b: float, gxi: list[float], gs: list[float]) -> list[float]:
    """The spec §3.1 step-6 procedure with HiGHS: iterated max-min on the optimal face."""
    from scipy.optimize import linprog

    n = len(gxi)
    if a + b <= 0.0:
        return [0.0] * n
    cpu_row = [s * x for s, x in zip(gs, gxi)]
    gpu_row = [s * (1.0 - x) for s, x in zip(gs, gxi)]
    res = linprog(-np.array(gs), A_ub=np.array([cpu_row, gpu_row]), b_ub=[a, b], bounds=[(0, None)] * n,
                  method="highs")
    _check_result(res, "efficiency LP")
    opt = -float(res.fun)
    # "cannot exceed t*" is judged with a tolerance well above the 1e-9 objective slack's effect on z
    eps = 1e-6 * max(opt / sum(gs), 1e-12)
    fixed: dict[int, tuple[float, float]] = {}  # group -> (low, high): its level, within the tolerance
    # variables (z_0..z_{n-1}, t); base rows: capacities and sum s_g z_g >= opt (1 - 1e-9)
    base_rows = [[*cpu_row, 0.0], [*gpu_row, 0.0], [*(-s for s in gs), 0.0]]
    base_rhs = [a, b, -opt * (1.0 - 1e-9)]  # spec §3.1 step 6: objective >= OPT (1 - 1e-9)
    while len(fixed) < n:
        free = [g for g in range(n) if g not in fixed]
        rows = list(base_rows)
        rhs = list(base_rhs)
        for g in free:  # t - z_g <= 0
            row = [0.0] * (n + 1)
            row[g] = -1.0
            row[n] = 1.0
            rows.append(row)
            rhs.append(0.0)
        bounds = [fixed.get(g, (0.0, None)) for g in range(n)] + [(0.0, None)]
        c = [0.0] * n + [-1.0]
        res = linprog(c, A_ub=np.array(rows), b_ub=rhs, bounds=bounds, method="highs")
        _check_result(res, "lexmaxmin LP")
        t_star = float(res.x[n])
        low = max(t_star - eps, 0.0)
        bounds_t = [*bounds[:n], (low, low)]
        newly, highest = [], {}
        for g in free:
            c = [0.0] * (n + 1)
            c[g] = -1.0
            res = linprog(c, A_ub=np.array(rows), b_ub=rhs, bounds=bounds_t, method="highs")
            _check_result(res, "lexmaxmin LP")
            highest[g] = float(res.x[g])
            if highest[g] <= t_star + eps:
                newly.append(g)
        # in exact arithmetic some free group is always blocked at t*; under round-off fix the most blocked
        # one (the spec's "fix all free" fallback would freeze groups that can still rise)
        for g in newly or [min(free, key=highest.__getitem__)]:
            fixed[g] = (low, t_star + eps)
    # the levels: the best objective within the fixed intervals
    res = linprog(-np.array(gs), A_ub=np.array([cpu_row, gpu_row]), b_ub=[a, b],
                  bounds=[fixed[g] for g in range(n)], method="highs")
    _check_result(res, "lexmaxmin LP")
    return [max(float(z), 0.0) for z in res.x]


@lru_cache(maxsize=CACHE_SIZE)
def emrf_core(c_cpu: float, c_gpu: float, xi: tuple[float, ...], w: tuple[float, ...], eta: float,
              tie_break: str = "lexmaxmin", solver: str = "closed-form") -> tuple[tuple[float, ...], float, float]:
    """``(F, C'_cpu, C'_gpu)`` of EMRF_SOLVE (spec §3.1) for a validated instance; cached."""
    _, share, fmax, _, _ = basics(c_cpu, c_gpu, xi, w)
    a, b = residual_core(c_cpu, c_gpu, xi, fmax, eta)
    groups = _groups(xi)
    gxi = [xi[g[0]] for g in groups]
    gs = [sum(share[i] for i in g) for g in groups]
    if tie_break == "vertex":
        levels = _highs_vertex_levels(a, b, gxi, gs)
    elif solver == "highs":
        levels = _highs_lexmaxmin_levels(a, b, gxi, gs)
    else:
        levels = _closed_form_group_levels(a, b, gxi, gs)
    alloc = [0.0] * len(xi)
    for g, members in enumerate(groups):
        for i in members:
            alloc[i] = eta * fmax[i] + share[i] * levels[g]
    return tuple(alloc), a, b


def delta_bound_core(c_cpu: float, c_gpu: float, xi, w, eta: float) -> float:
    """Theorem 1 corrected: max_i (W/w_i) m_i min_{d: xi_i^d > 0} C'_d / xi_i^d."""
    m, _, fmax, _, total_w = basics(c_cpu, c_gpu, xi, w)
    a, b = residual_core(c_cpu, c_gpu, xi, fmax, eta)
    best = 0.0
    for x, wi, mi in zip(xi, w, m):
        lim = min(a / x if x > 0 else np.inf, b / (1.0 - x) if x < 1 else np.inf)
        best = max(best, (total_w / wi) * mi * lim)
    return float(best)


# --- public pure functions (validated, numpy in and out) -------------------------------------------------
def fair_share(capacities, xi_cpu, weights) -> np.ndarray:
    """Eq. (3): S_i = w_i / (W max{xi_i^cpu/C_cpu, xi_i^gpu/C_gpu}) (progressive filling in the partition)."""
    return np.array(basics(*_key(capacities, xi_cpu, weights))[1])


static_partition = fair_share  # the non-sharing partition; F_i = S_i (spec §3.3, SI reference)


def dominant_coefficients(capacities, xi_cpu) -> np.ndarray:
    """m_i = max{gamma_i^cpu, gamma_i^gpu}, gamma_i^d = xi_i^d / C_d (Table I, Eq. (5))."""
    c, xi, _ = as_instance(capacities, xi_cpu, np.ones(np.size(xi_cpu)))
    return np.maximum(xi / c[0], (1.0 - xi) / c[1])


def solo_allocation(capacities, xi_cpu) -> np.ndarray:
    """F_i^solo = 1 / m_i: GFLOPS of each app alone on the whole APU (spec §2.4)."""
    return 1.0 / dominant_coefficients(capacities, xi_cpu)


def drf_allocate(capacities, xi_cpu, weights) -> np.ndarray:
    """Eq. (8): F_i^max = w_i / (D m_i), D = max_d sum_k w_k gamma_k^d / m_k (first device saturates)."""
    return np.array(basics(*_key(capacities, xi_cpu, weights))[2])


def drf_progressive_allocate(capacities, xi_cpu, weights) -> np.ndarray:
    """Ghodsi-style DRF by progressive filling (spec §3.3 "DRF-PF", an extension; not the paper's DRF).

    Users rise at equal weighted dominant share (F_i proportional to w_i / m_i); when a device
    saturates, the users needing it stop and the others keep filling until no one can grow. Unlike
    Eq. (8) it is Pareto efficient; under the lexmaxmin tie-break it equals EMRF(eta = 1).
    """
    c, xi, w = as_instance(capacities, xi_cpu, weights)
    cap = [float(c[0]), float(c[1])]
    need = [[x > 0 for x in xi.tolist()], [x < 1 for x in xi.tolist()]]
    speed = (w / np.maximum(xi / c[0], (1.0 - xi) / c[1])).tolist()  # dF_i / d(level)
    alloc = [0.0] * xi.size
    used = [0.0, 0.0]
    growing = set(range(xi.size))
    while growing:
        rates = [sum(speed[i] * (xi[i] if d == 0 else 1.0 - xi[i]) for i in growing) for d in (0, 1)]
        steps = [(cap[d] - used[d]) / rates[d] for d in (0, 1) if rates[d] > 0]
        if not steps:
            break
        step = max(min(steps), 0.0)
        for i in growing:
            alloc[i] += step * speed[i]
        for d in (0, 1):
            used[d] += step * rates[d]
        full = [d for d in (0, 1) if used[d] >= cap[d] * (1 - 1e-12)]
        growing = {i for i in growing if not any(need[d][i] for d in full)}
    return np.array(alloc)


def sharing_incentive_eta(capacities, xi_cpu, weights) -> float:
    """eta_SI = D / W = S_i / F_i^max (the same for every user): Theorem 2's sufficient knob."""
    _, _, _, d, total_w = basics(*_key(capacities, xi_cpu, weights))
    return min(float(d / total_w), 1.0)  # D <= W exactly; clamp the round-off


def wfq_allocate(capacities, xi_cpu, weights) -> np.ndarray:
    """§III proportional sharing (spec §3.3): F_i = w_i t, t = 1 / max_d(sum_i w_i xi_i^d / C_d)."""
    c, xi, w = as_instance(capacities, xi_cpu, weights)
    t = 1.0 / max(float(w @ xi) / c[0], float(w @ (1.0 - xi)) / c[1])
    return w * t


def residual_capacity(capacities, xi_cpu, weights, eta: float) -> np.ndarray:
    """C' = C - eta sum_k F_k^max xi_k (clamped at 0): what the fairness stage leaves (§V-B)."""
    eta = check_eta(eta)
    c_cpu, c_gpu, xi, w = _key(capacities, xi_cpu, weights)
    fmax = basics(c_cpu, c_gpu, xi, w)[2]
    return np.array(residual_core(c_cpu, c_gpu, xi, fmax, eta))


def emrf_allocate(capacities, xi_cpu, weights, eta: float, tie_break: str = "lexmaxmin",
                  solver: str = "closed-form") -> np.ndarray:
    """EMRF (Eq. (10)): F_i = eta F_i^max + F'_i with F' the efficiency LP of Eqs. (15)-(17).

    :param tie_break: ``"lexmaxmin"`` (default; unique) or ``"vertex"`` (HiGHS's vertex, paper parity).
    :param solver: for ``lexmaxmin``: ``"closed-form"`` (default, exact) or ``"highs"`` (spec §3.1's
        iterated LPs with scipy HiGHS). ``vertex`` always uses HiGHS.
    :raises EMRFSolverError: HiGHS could not solve the LP.
    """
    eta = check_eta(eta)
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break={tie_break!r} is not one of {TIE_BREAKS}")
    if solver not in SOLVERS:
        raise ValueError(f"solver={solver!r} is not one of {SOLVERS}")
    return np.array(emrf_core(*_key(capacities, xi_cpu, weights), eta, tie_break, solver)[0])


@dataclass(frozen=True)
class EMRFSolution:
    """Everything EMRF_SOLVE (spec §3.1) computes, for reports and tests."""

    allocation: np.ndarray  # F (GFLOPS per user)
    fairness_stage: np.ndarray  # eta F^max
    efficiency_stage: np.ndarray  # F'
    fair_share: np.ndarray  # S
    drf: np.ndarray  # F^max
    residual: np.ndarray  # C'
    delta_bound: float  # Theorem 1 (corrected)
    soft_fairness: float  # realized max F/S - min F/S
    eta: float


def emrf_solve(capacities, xi_cpu, weights, eta: float, tie_break: str = "lexmaxmin",
               solver: str = "closed-form") -> EMRFSolution:
    """:func:`emrf_allocate` with its intermediates (S, F^max, C', F', delta)."""
    alloc = emrf_allocate(capacities, xi_cpu, weights, eta, tie_break, solver)
    key = _key(capacities, xi_cpu, weights)
    eta = float(eta)
    _, share, fmax, _, _ = basics(*key)
    share, fmax = np.array(share), np.array(fmax)
    return EMRFSolution(
        allocation=alloc, fairness_stage=eta * fmax, efficiency_stage=alloc - eta * fmax, fair_share=share,
        drf=fmax, residual=residual_capacity(capacities, xi_cpu, weights, eta),
        delta_bound=delta_bound_core(*key, eta), soft_fairness=soft_fairness_degree(alloc, share), eta=eta)


def delta_bound(capacities, xi_cpu, weights, eta: float) -> float:
    """Theorem 1's unfairness bound, corrected (spec §2.3, §8 row 1): max_i (W/w_i) m_i min_d C'_d/xi_i^d.

    The paper's typeset form gives 0.28125 on Example 1 (eta = 0.5); this form gives its printed 1.125.
    """
    return delta_bound_core(*_key(capacities, xi_cpu, weights), check_eta(eta))


def soft_fairness_degree(allocation, fair_shares) -> float:
    """Realized soft-fairness degree (Eq. (9) LHS, spec §2.4): max_i F_i/S_i - min_i F_i/S_i (smaller = fairer)."""
    ratio = np.asarray(allocation, dtype=float) / np.asarray(fair_shares, dtype=float)
    return float(ratio.max() - ratio.min()) if ratio.size else 0.0


def device_usage(xi_cpu, allocation) -> np.ndarray:
    """``(CPU GFLOPS, GPU GFLOPS)`` used by ``allocation`` (coupling F_i^d = F_i xi_i^d)."""
    xi = np.asarray(xi_cpu, dtype=float)
    f = np.asarray(allocation, dtype=float)
    return np.array([float(f @ xi), float(f @ (1.0 - xi))])


def utilisation(capacities, xi_cpu, allocation) -> np.ndarray:
    """``(U_cpu, U_gpu)`` = device usage / capacity."""
    return device_usage(xi_cpu, allocation) / np.asarray(capacities, dtype=float)


def is_feasible(capacities, xi_cpu, allocation, rtol: float = CHECK_RTOL) -> bool:
    """F >= 0 and sum_i F_i xi_i^d <= C_d for both devices (up to ``rtol``)."""
    f = np.asarray(allocation, dtype=float)
    cap = np.asarray(capacities, dtype=float)
    return bool(np.all(f >= -rtol * cap.sum()) and np.all(device_usage(xi_cpu, f) <= cap * (1 + rtol)))


def saturated_devices(capacities, xi_cpu, allocation, rtol: float = CHECK_RTOL) -> np.ndarray:
    """Boolean ``(cpu, gpu)``: which devices ``allocation`` uses to capacity (up to ``rtol``)."""
    cap = np.asarray(capacities, dtype=float)
    return device_usage(xi_cpu, allocation) >= cap * (1 - rtol)


def pareto_efficient(capacities, xi_cpu, allocation, rtol: float = CHECK_RTOL) -> bool:
    """PE under the coupling (Leontief demands): every user needs (xi_i^d > 0) some saturated device d.

    A user who needs only unsaturated devices could be raised alone; conversely raising a user who
    needs a saturated device must lower another. So this is exactly "no user can be raised alone".
    """
    sat = saturated_devices(capacities, xi_cpu, allocation, rtol)
    xi = np.asarray(xi_cpu, dtype=float)
    needs = np.stack([xi > 0, xi < 1], axis=1)
    return bool(np.all(np.any(needs & sat[None, :], axis=1)))


def mu(xi_cpu_i: float, vector) -> float:
    """Eq. (19) in min-form: GFLOPS a user with split xi_i gets from ``vector = (V_cpu, V_gpu)``."""
    xi = float(xi_cpu_i)
    v_cpu, v_gpu = float(vector[0]), float(vector[1])
    return min(v_cpu / xi if xi > 0 else np.inf, v_gpu / (1.0 - xi) if xi < 1 else np.inf)


def sharing_incentive_violations(capacities, xi_cpu, weights, allocation, rtol: float = CHECK_RTOL) -> int:
    """Eq. (1): how many users get less than their fair share S_i (F_i < S_i)."""
    share = fair_share(capacities, xi_cpu, weights)
    return int(np.sum(np.asarray(allocation, dtype=float) < share * (1 - rtol)))


def envy_pairs(xi_cpu, allocation, rtol: float = CHECK_RTOL) -> list[tuple[int, int]]:
    """Eq. (2): pairs ``(i, j)`` where user i would get more from j's resource vector: mu_i(F_j) > F_i."""
    xi = np.asarray(xi_cpu, dtype=float)
    f = np.asarray(allocation, dtype=float)
    vectors = np.stack([f * xi, f * (1.0 - xi)], axis=1)
    pairs = []
    for i in range(f.size):
        for j in range(f.size):
            if i != j and mu(xi[i], vectors[j]) > f[i] * (1 + rtol) + rtol:
                pairs.append((i, j))
    return pairs


def envy_free_violations(xi_cpu, allocation) -> int:
    """Number of envious pairs (0 means envy-free)."""
    return len(envy_pairs(xi_cpu, allocation))


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2) in (0, 1]; 1 for an empty or all-zero input."""
    x = np.asarray(values, dtype=float)
    denom = x.size * float(x @ x)
    return float(x.sum() ** 2 / denom) if denom > 0 else 1.0


__all__ = [
    "SOLVERS",
    "TIE_BREAKS",
    "EMRFSolution",
    "EMRFSolverError",
    "as_instance",
    "check_eta",
    "delta_bound",
    "device_usage",
    "dominant_coefficients",
    "drf_allocate",
    "drf_progressive_allocate",
    "emrf_allocate",
    "emrf_solve",
    "envy_free_violations",
    "envy_pairs",
    "fair_share",
    "is_feasible",
    "jain_index",
    "mu",
    "pareto_efficient",
    "residual_capacity",
    "saturated_devices",
    "sharing_incentive_eta",
    "sharing_incentive_violations",
    "soft_fairness_degree",
    "solo_allocation",
    "static_partition",
    "utilisation",
    "wfq_allocate",
]
