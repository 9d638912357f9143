"""EMRF, DRF and WFQ on a coupled CPU-GPU APU as pure functions (EMRF paper §III, §IV, §V;
docs/families/emrf.md §2-§3).

Every function takes ``(capacities, xi_cpu, weights, ...)``: ``capacities = (C_cpu, C_gpu)`` in GFLOPS,
``xi_cpu[i]`` the fraction of user i's operations run on the CPU (xi^gpu = 1 - xi^cpu) and
``weights[i] > 0``; allocations are per-user GFLOPS ``F_i``, consumed as ``(F_i xi_i^cpu, F_i xi_i^gpu)``.

====================================  ===========================================================
function                              paper
====================================  ===========================================================
:func:`fair_share`                    Eq. (3): S_i = w_i / (W m_i), m_i = max_d xi_i^d / C_d
:func:`drf_allocate`                  Eq. (8): F_i^max = w_i / (D m_i) (stops at the first
                                      saturated device, erratum E3)
:func:`wfq_allocate`                  §III proportional sharing: F_i = w_i t, first device saturates
:func:`static_partition`              the non-sharing partition (SI reference): F_i = S_i
:func:`drf_progressive_allocate`      extension: Ghodsi progressive-filling DRF (erratum E3)
:func:`residual_capacity`             C'_d = C_d - eta sum_k F_k^max xi_k^d (clamped at 0)
:func:`emrf_allocate`                 Eq. (10): F = eta F^max + F', F' the LP of Eqs. (15)-(17)
:func:`delta_bound`                   Theorem 1, corrected (erratum E1): max_i (W/w_i) m_i min_d C'_d/xi_i^d
:func:`soft_fairness_degree`          LHS of Eq. (9): max_i F_i/S_i - min_i F_i/S_i
:func:`sharing_incentive_violations`  Eq. (1): users with F_i < S_i (counted, Theorem 2 is sufficient only)
:func:`envy_pairs`                    Eq. (2) with mu of Eq. (19) in min-form (Theorem 3 is false,
                                      erratum E7: counted, never assumed)
:func:`pareto_efficient`              every user needs some saturated device (Leontief PE)
:func:`algorithm1_allocate`           Alg. 1 lines 3-9 (§V-C): discrete kernel slices by lowest F_i/F*_i
                                      (per-device check, skip-and-continue or ``strict_stop``)
====================================  ===========================================================

**The efficiency LP.** With ``z_g`` the level F'_i/S_i of a group g of users with equal xi (Eq. (17)
makes it common to the group), the LP of Eqs. (15)-(16) is ``max sum_g s_g z_g`` s.t. ``sum_g s_g z_g xi_g
<= A`` and ``sum_g s_g z_g (1 - xi_g) <= B`` (``s_g = sum_{i in g} S_i``; A, B = C'). Its optimum is
often a face, not a point (erratum E2); two tie-breaks are offered:

- ``"lexmaxmin"`` (default): the lexicographic max-min of F_i/S_i on the optimal face.
- ``"vertex"``: the vertex scipy's HiGHS returns for the per-group LP (the paper used GLPK, whose
  vertex is implementation-dependent; this is the parity option, not a unique answer).

**Two solvers, one answer.** :func:`emrf_allocate` solves the LP with scipy's HiGHS
(``linprog(method="highs")``; ``solver="highs"``, the default): for lexmaxmin, LP1
and then the sequential max-min LPs on the optimal face (:func:`_highs_lexmaxmin_levels`, at most
n + 1 LPs). The env cannot afford that per step (docs/families/emrf.md §11 has the costs), so it calls
the cached pure-Python core (:func:`emrf_core`, ``solver="closed-form"``), which solves the same LP exactly
(the batched env solves it for every row at once: :func:`joulegym.envs.emrf.rules.emrf_rows`). Since
xi^cpu + xi^gpu = 1 the objective is the total GFLOPS used (``A + B`` at most), so, with ``r = A / (A + B)``:

- ``r`` in ``[min xi_g, max xi_g]``: both devices saturate on the whole optimal face. Lexmaxmin gives
  every group the same level ``t*`` except the one group at the opposite end of xi from the
  equal-share imbalance ``E = sum_g s_g (xi_g - r)``, which absorbs the rest:
  ``t* = -e_min T / (E - e_min S)`` (E > 0) or ``e_max T / (e_max S - E)`` (E < 0), ``T = A + B``,
  ``e = xi - r``, ``S = sum S_i`` (maximising t with z_g = t + y_g, y >= 0, puts all of y on the
  extreme group: any other group corrects the imbalance at a worse rate, so t* and the point are unique).
- ``r < min xi_g`` (``r > max xi_g``): every group is CPU- (GPU-) bound first; the optimum is unique:
  all of C'_cpu (C'_gpu) to the group with the least CPU (GPU) need.

``tests/emrf/test_properties.py::test_closed_form_equals_highs`` checks on random instances (xi on a
1/1000 grid: 0, 1, equal and near-equal values) that both give the same F (lexmaxmin) and that the
closed form's total equals HiGHS's LP optimum; the env's solver is the ``lp_solver`` config key.

A failed HiGHS solve raises :class:`EMRFSolverError`; no zero allocation is ever returned silently.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from joulegym.core.summation import sequential_sum

TIE_BREAKS = ("lexmaxmin", "vertex")
SOLVERS = ("highs", "closed-form")  # emrf_allocate default first; the env uses closed-form
XI_GROUP_TOL = 1e-9  # users with |xi_i - xi_j| < 1e-9 share constraint (17) (equal rho, docs §2)
RESIDUAL_ZERO_RTOL = 1e-12  # C'_d below this fraction of C_d is floating-point noise: clamp to 0 (docs §2)
CHECK_RTOL = 1e-9  # relative slack of the diagnostics (saturation, SI, envy) against round-off
FILL_RTOL = 1e-12  # Algorithm 1's per-device check: a slice "fits" up to this relative round-off
DUAL_RTOL = 1e-9  # a HiGHS dual / reduced cost above this (relative to the largest dual) counts as positive
CACHE_SIZE = 65_536  # distinct (capacities, xi, weights, eta, tie-break) inputs kept by the core caches


class EMRFSolverError(RuntimeError):
    """The efficiency LP (Eqs. (15)-(17)) could not be solved; never replaced by a zero allocation."""


# --- validation --------------------------------------------------------------------------------------
# The domain of the pure functions (extreme but finite inputs give a correct answer or a ValueError
# naming the argument). Every public function solves in normalised units: capacities divided by a power of two
# near their maximum, weights by one near theirs (exact, so results in the ordinary range are bit for bit those of
# the unscaled formulas), and GFLOPS results multiplied back. What is left to bound is the conditioning: the
# max/min ratio of the two capacities and of the weights.
CAPACITY_RANGE = (1e-300, 1e300)  # GFLOPS: normal floats with room for C_cpu + C_gpu and for the rescaling
MAX_SPREAD = 1e4  # largest max/min ratio of the capacities and of the weights. Measured: HiGHS's lexmaxmin LPs
#                   (Eqs. (15)-(17), normalised) stay feasible on 3,000 random instances per spread at 1e3 and 1e4,
#                   and over-use a device by up to 0.2% (or report "unbounded") on 20 of 3,000 at 1e6 and 286 at 1e9
#                   (its matrix values below 1e-9 are dropped). Wider spreads raise ValueError; physical APUs
#                   (Table I: 24 / 480) and the paper's weights (2:1:3:4:1) are far inside.
MAX_TASK_SLICES = 1e6  # Algorithm 1 hands out at most (C_cpu + C_gpu) / task_gflop slices, one heap operation each:
#                       a smaller task_gflop would run for seconds per allocation
XI_DENORMAL = 1e-300  # a CPU fraction this close to 0 or 1 is taken as exactly 0 or 1


def as_instance(capacities, xi_cpu, weights) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated ``(C, xi_cpu, w)`` float arrays, or ``ValueError`` naming the bad field."""
    low, high = CAPACITY_RANGE
    try:
        c = np.asarray(capacities, dtype=float).ravel()
    except (TypeError, ValueError):
        c = np.array([np.nan])
    if (c.size != 2 or not np.all(np.isfinite(c)) or np.any(c < low) or np.any(c > high)
            or c.max() / MAX_SPREAD > c.min()):
        raise ValueError(f"capacities must be two finite numbers in [{low:g}, {high:g}] GFLOPS (C_cpu, C_gpu) within "
                         f"a factor {MAX_SPREAD:g} of each other, got {capacities!r}")
    try:
        xi = np.asarray(xi_cpu, dtype=float).ravel()
    except (TypeError, ValueError):
        xi = np.array([np.nan])
    if xi.size == 0 or not np.all(np.isfinite(xi)) or np.any(xi < 0) or np.any(xi > 1):
        raise ValueError(f"xi_cpu must be a non-empty list of CPU fractions in [0, 1], got {xi_cpu!r}")
    try:
        w = np.asarray(weights, dtype=float).ravel()
    except (TypeError, ValueError):
        w = np.array([np.nan])
    if w.size != xi.size:
        raise ValueError(f"weights must have one entry per user ({xi.size}), got {w.size}")
    if not np.all(np.isfinite(w)) or np.any(w <= 0) or w.max() / MAX_SPREAD > w.min():
        raise ValueError(f"weights must be finite numbers > 0 within a factor {MAX_SPREAD:g} of each other, "
                         f"got {weights!r}")
    xi = np.where(xi < XI_DENORMAL, 0.0, np.where(xi > 1.0 - XI_DENORMAL, 1.0, xi))  # denormal splits are 0 / 1
    return c, xi, w


def power_of_two_below(value: float) -> float:
    """The power of two in ``(value / 2, value]``: dividing by it is exact and brings ``value`` into [1, 2)."""
    return math.ldexp(1.0, math.frexp(value)[1] - 1)


def check_eta(eta: float) -> float:
    try:
        value = float(eta)
    except (TypeError, ValueError):
        raise ValueError(f"eta must be a number in [0, 1], got {eta!r}") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"eta must be in [0, 1], got {eta!r}")
    return value


def _scaled_key(capacities, xi_cpu, weights) -> tuple[float, tuple[float, float, tuple[float, ...], tuple[float, ...]]]:
    """``(scale, (C_cpu, C_gpu, xi, w))`` in normalised units: capacities / scale (the larger in [1, 2)),
    weights over a power of two near their maximum (allocations are scale-free in w). GFLOPS results are
    ``scale`` times those of the normalised instance."""
    c, xi, w = as_instance(capacities, xi_cpu, weights)
    scale = power_of_two_below(float(c.max()))
    w = w / power_of_two_below(float(w.max()))
    return scale, (float(c[0]) / scale, float(c[1]) / scale, tuple(xi.tolist()), tuple(w.tolist()))


# --- the pure-Python core (cached; what the env calls) -------------------------------------------------
@lru_cache(maxsize=CACHE_SIZE)
def basics(c_cpu: float, c_gpu: float, xi: tuple[float, ...], w: tuple[float, ...]):
    """``(m, S, F^max, D, W)`` for a validated instance (Eqs. (3), (5), (8)); tuples of floats."""
    m = tuple(max(x / c_cpu, (1.0 - x) / c_gpu) for x in xi)
    total_w = sequential_sum(w)
    share = tuple(wi / (total_w * mi) for wi, mi in zip(w, m))
    d_cpu = sequential_sum(wi * (x / c_cpu) / mi for wi, x, mi in zip(w, xi, m))
    d_gpu = sequential_sum(wi * ((1.0 - x) / c_gpu) / mi for wi, x, mi in zip(w, xi, m))
    d = max(d_cpu, d_gpu)
    fmax = tuple(wi / (d * mi) for wi, mi in zip(w, m))
    return m, share, fmax, d, total_w


def device_loads(slots: Iterable[int], amounts: Sequence[Any], xi: Sequence[Any], zero: Any = 0.0) -> tuple[Any, Any]:
    """``(sum_i a_i xi_i, sum_i a_i (1 - xi_i))`` over ``slots`` in their order, from ``zero`` (0.0, or zeros with
    one value per row, the sums of no slot): what per-user amounts
    ``a`` (GFLOPS, or weights per unit of a level) ask of the CPU and of the GPU under the split xi (§II-B).

    Written once for one instance and for rows of them (docs/families/emrf.md §11): ``amounts[i]`` and ``xi[i]`` are
    Python numbers in the single env and the rules of :mod:`joulegym.envs.emrf.env`, and columns (one value per row)
    in the batch (:mod:`joulegym.envs.emrf.rules`, :mod:`joulegym.envs.emrf.batch`), where a row whose amount is 0.0
    in a visited slot adds +0.0 (exact). Slot by slot from 0.0 is ``sequential_sum``'s order, so the bits are those of
    ``sum()`` over the slots on Python <= 3.11, on every Python (and of ``row_sums`` over the rows).
    """
    cpu = gpu = zero
    for i in slots:
        a, x = amounts[i], xi[i]
        cpu = cpu + a * x  # not +=: zeros of rows are shared by both sums
        gpu = gpu + a * (1.0 - x)
    return cpu, gpu


def residual_core(c_cpu: float, c_gpu: float, xi, fmax, eta: float) -> tuple[float, float]:
    """C' = C - eta sum_k F_k^max xi_k (clamped at 0) for a validated instance."""
    used_cpu, used_gpu = device_loads(range(len(xi)), fmax, xi)
    a = c_cpu - eta * used_cpu
    b = c_gpu - eta * used_gpu
    a = 0.0 if a <= RESIDUAL_ZERO_RTOL * c_cpu else a
    b = 0.0 if b <= RESIDUAL_ZERO_RTOL * c_gpu else b
    return a, b


def _groups(xi: tuple[float, ...]) -> list[list[int]]:
    """Users with equal xi (|diff| < XI_GROUP_TOL), groups in increasing xi (Eq. (17))."""
    order = sorted(range(len(xi)), key=xi.__getitem__)  # stable: equal xi keep index order
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
    s_tot = sequential_sum(gs)
    imbalance = sequential_sum(s * (x - r) for s, x in zip(gs, gxi))
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


def _linprog(what: str, c, a_ub=None, b_ub=None, a_eq=None, b_eq=None, bounds=None):
    """scipy HiGHS; :class:`EMRFSolverError` (never a zero allocation) when it does not return an optimum."""
    from scipy.optimize import linprog

    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=bounds, method="highs")
    _check_result(res, what)
    return res


def _highs_vertex_levels(a: float, b: float, gxi: list[float], gs: list[float]) -> list[float]:
    """z_g of the vertex HiGHS returns for the per-group LP (variables x_g = group GFLOPS)."""
    n = len(gxi)
    if a + b <= 0.0:
        return [0.0] * n
    a_ub = np.array([gxi, [1.0 - x for x in gxi]])
    res = _linprog("efficiency LP", -np.ones(n), a_ub, [a, b], bounds=[(0, None)] * n)
    return [max(float(x), 0.0) / s for x, s in zip(res.x, gs)]


def _check_result(res, what: str) -> None:
    if res.status != 0 or res.x is None or not np.all(np.isfinite(res.x)):
        raise EMRFSolverError(
            f"HiGHS could not solve the EMRF {what} (Eqs. (15)-(17)): status {res.status}, {res.message!r}"
        )


def _marginals(res, field: str, what: str) -> np.ndarray:
    """HiGHS's duals (``ineqlin``) or reduced costs (``lower``); EMRFSolverError if it returned none."""
    values = getattr(getattr(res, field, None), "marginals", None)
    if values is None or not np.all(np.isfinite(values)):
        raise EMRFSolverError(f"HiGHS returned no usable {field} duals for the EMRF {what}: {values!r}")
    return np.asarray(values, dtype=float)


def _highs_lexmaxmin_levels(a: float, b: float, gxi: list[float], gs: list[float]) -> list[float]:
    """Lexicographic max-min z_g on the LP's optimal face (erratum E2), every LP solved by HiGHS.

    1. LP1 (Eqs. (15)-(16) in z, Eq. (17) built in): its optimum and HiGHS's duals. By complementary
       slackness the optimal face is *exactly* {z feasible : capacity rows with a positive dual are
       tight, groups with a positive reduced cost are 0} (for any one optimal dual). A relative slack
       "objective >= OPT (1 - 1e-9)" is not used: near-equal xi (0 vs 0.001) amplify that slack ~1000x
       into 1e-4-relative errors in z.
    2. Sequential max-min: maximise t s.t. z_g >= t for the free groups, the fixed ones at their level;
       the groups whose row z_g >= t has a positive dual are blocked at t* in every optimum and are
       fixed there (the duals sum to 1, so at least one is fixed per stage: <= n + 1 LPs in all).
    """
    n = len(gxi)
    if a + b <= 0.0:
        return [0.0] * n
    cpu_row = [s * x for s, x in zip(gs, gxi)]
    gpu_row = [s * (1.0 - x) for s, x in zip(gs, gxi)]
    res = _linprog("efficiency LP", -np.array(gs), np.array([cpu_row, gpu_row]), [a, b], bounds=[(0, None)] * n)
    duals = -_marginals(res, "ineqlin", "efficiency LP")  # y >= 0: d objective / d capacity
    reduced = _marginals(res, "lower", "efficiency LP")  # >= 0 for a minimisation
    dual_tol = DUAL_RTOL * max(1.0, float(np.max(np.abs(duals))))
    tight = [bool(duals[d] > dual_tol) for d in range(2)]
    fixed: dict[int, float] = {g: 0.0 for g in range(n) if reduced[g] > dual_tol * gs[g]}
    rows = [[*cpu_row, 0.0], [*gpu_row, 0.0]]  # variables (z_0 .. z_{n-1}, t)
    eq = [r for r, is_tight in zip(rows, tight) if is_tight]
    eq_rhs = [c for c, is_tight in zip((a, b), tight) if is_tight]
    ub = [r for r, is_tight in zip(rows, tight) if not is_tight]
    ub_rhs = [c for c, is_tight in zip((a, b), tight) if not is_tight]
    objective = [0.0] * n + [-1.0]
    while len(fixed) < n:
        free = [g for g in range(n) if g not in fixed]
        level_rows = []
        for g in free:  # t - z_g <= 0
            row = [0.0] * (n + 1)
            row[g] = -1.0
            row[n] = 1.0
            level_rows.append(row)
        bounds = [(fixed[g], fixed[g]) if g in fixed else (0.0, None) for g in range(n)] + [(0.0, None)]
        res = _linprog("lexmaxmin LP", objective, np.array(ub + level_rows), ub_rhs + [0.0] * len(free),
                       np.array(eq) if eq else None, eq_rhs or None, bounds)
        t_star = float(res.x[n])
        level_duals = -_marginals(res, "ineqlin", "lexmaxmin LP")[len(ub):]
        blocked = [g for g, y in zip(free, level_duals) if y > DUAL_RTOL]
        for g in blocked or [free[int(np.argmax(level_duals))]]:
            fixed[g] = max(t_star, 0.0)
    return [fixed[g] for g in range(n)]


def _highs_normalised(solve, a: float, b: float, gxi: list[float], gs: list[float]) -> list[float]:
    """``solve(a, b, gxi, gs)`` in O(1) units: HiGHS's tolerances are absolute (1e-7 feasibility, matrix values
    below 1e-9 dropped), so C' and the group shares are divided by powers of two near their maxima (exact) and
    the levels z = F'/S rescaled (z scales as C'/S)."""
    top_c, top_s = max(a, b), max(gs)
    if top_c <= 0.0:
        return [0.0] * len(gs)
    kc, ks = power_of_two_below(top_c), power_of_two_below(top_s)
    levels = solve(a / kc, b / kc, gxi, [s / ks for s in gs])
    return [z * (kc / ks) for z in levels]


@lru_cache(maxsize=CACHE_SIZE)
def emrf_core(c_cpu: float, c_gpu: float, xi: tuple[float, ...], w: tuple[float, ...], eta: float,
              tie_break: str = "lexmaxmin", solver: str = "closed-form") -> tuple[tuple[float, ...], float, float]:
    """``(F, C'_cpu, C'_gpu)`` of EMRF (Eqs. (3)-(17), docs/families/emrf.md §2) for a validated instance; cached."""
    _, share, fmax, _, _ = basics(c_cpu, c_gpu, xi, w)
    a, b = residual_core(c_cpu, c_gpu, xi, fmax, eta)
    groups = _groups(xi)
    gxi = [xi[g[0]] for g in groups]
    gs = [sequential_sum(share[i] for i in g) for g in groups]
    if tie_break == "vertex" or solver == "highs":
        levels = _highs_normalised(_highs_vertex_levels if tie_break == "vertex" else _highs_lexmaxmin_levels,
                                   a, b, gxi, gs)
    else:
        levels = _closed_form_group_levels(a, b, gxi, gs)
        if not all(math.isfinite(z) and z >= 0.0 for z in levels):  # cannot happen for a validated instance
            raise EMRFSolverError(f"the closed-form efficiency LP (Eqs. (15)-(17)) gave levels {levels} "
                                  f"for C' = ({a}, {b}), xi = {gxi}; use solver='highs'")
    alloc = [0.0] * len(xi)
    for g, members in enumerate(groups):
        for i in members:
            alloc[i] = eta * fmax[i] + share[i] * levels[g]
    return tuple(alloc), a, b


def delta_bound_core(c_cpu: float, c_gpu: float, xi, w, eta: float) -> float:
    """Theorem 1 corrected: max_i (W/w_i) m_i min_{d: xi_i^d > 0} C'_d / xi_i^d."""
    m, _, fmax, _, total_w = basics(c_cpu, c_gpu, xi, w)
    return delta_bound_from_residual(xi, w, m, total_w, *residual_core(c_cpu, c_gpu, xi, fmax, eta))


def delta_bound_from_residual(xi, w, m, total_w: float, a: float, b: float) -> float:
    """:func:`delta_bound_core` given ``m``, ``W`` (:func:`basics`) and ``C' = (a, b)``."""
    best = 0.0
    for x, wi, mi in zip(xi, w, m):
        lim = min(a / x if x > 0 else math.inf, b / (1.0 - x) if x < 1 else math.inf)
        value = (total_w / wi) * mi * lim
        if value > best:
            best = value
    return float(best)


# --- public pure functions (validated, numpy in and out) -------------------------------------------------
def fair_share(capacities, xi_cpu, weights) -> np.ndarray:
    """Eq. (3): S_i = w_i / (W max{xi_i^cpu/C_cpu, xi_i^gpu/C_gpu}) (progressive filling in the partition)."""
    scale, key = _scaled_key(capacities, xi_cpu, weights)
    return np.array(basics(*key)[1]) * scale


static_partition = fair_share  # the non-sharing partition; F_i = S_i (the SI reference of Eq. (1))


def dominant_coefficients(capacities, xi_cpu) -> np.ndarray:
    """m_i = max{gamma_i^cpu, gamma_i^gpu}, gamma_i^d = xi_i^d / C_d (Table I, Eq. (5))."""
    scale, (c_cpu, c_gpu, xi, _) = _scaled_key(capacities, xi_cpu, np.ones(np.size(xi_cpu)))
    x = np.array(xi)
    return np.maximum(x / c_cpu, (1.0 - x) / c_gpu) / scale


def solo_allocation(capacities, xi_cpu) -> np.ndarray:
    """F_i^solo = 1 / m_i: GFLOPS of each app alone on the whole APU (weighted speedup, erratum E12)."""
    scale, (c_cpu, c_gpu, xi, _) = _scaled_key(capacities, xi_cpu, np.ones(np.size(xi_cpu)))
    x = np.array(xi)
    return scale / np.maximum(x / c_cpu, (1.0 - x) / c_gpu)


def drf_allocate(capacities, xi_cpu, weights) -> np.ndarray:
    """Eq. (8): F_i^max = w_i / (D m_i), D = max_d sum_k w_k gamma_k^d / m_k (first device saturates)."""
    scale, key = _scaled_key(capacities, xi_cpu, weights)
    return np.array(basics(*key)[2]) * scale


@lru_cache(maxsize=CACHE_SIZE)
def drf_progressive_core(c_cpu: float, c_gpu: float, xi: tuple[float, ...], w: tuple[float, ...]) -> tuple[float, ...]:
    """:func:`drf_progressive_allocate` for a validated instance (pure Python, cached; what the env calls)."""
    m = basics(c_cpu, c_gpu, xi, w)[0]
    speed = [wi / mi for wi, mi in zip(w, m)]  # dF_i / d(level): equal weighted dominant shares
    alloc = [0.0] * len(xi)
    used_cpu = used_gpu = 0.0
    growing = list(range(len(xi)))
    while growing:
        rate_cpu = sequential_sum(speed[i] * xi[i] for i in growing)
        rate_gpu = sequential_sum(speed[i] * (1.0 - xi[i]) for i in growing)
        steps = []
        if rate_cpu > 0:
            steps.append((c_cpu - used_cpu) / rate_cpu)
        if rate_gpu > 0:
            steps.append((c_gpu - used_gpu) / rate_gpu)
        if not steps:
            break
        step = max(min(steps), 0.0)
        for i in growing:
            alloc[i] += step * speed[i]
        used_cpu += step * rate_cpu
        used_gpu += step * rate_gpu
        cpu_full = used_cpu >= c_cpu * (1 - 1e-12)
        gpu_full = used_gpu >= c_gpu * (1 - 1e-12)
        # a user stops when a device it needs is full (each pass fills a device, so <= 2 passes)
        growing = [i for i in growing if not ((cpu_full and xi[i] > 0) or (gpu_full and xi[i] < 1))]
    return tuple(alloc)


def drf_progressive_allocate(capacities, xi_cpu, weights) -> np.ndarray:
    """Ghodsi-style DRF by progressive filling (an extension, erratum E3; not the paper's DRF).

    Users rise at equal weighted dominant share (F_i proportional to w_i / m_i); when a device
    saturates, the users needing it stop and the others keep filling until no one can grow. Unlike
    Eq. (8) it is Pareto efficient; under the lexmaxmin tie-break it equals EMRF(eta = 1).
    """
    scale, key = _scaled_key(capacities, xi_cpu, weights)
    return np.array(drf_progressive_core(*key)) * scale


def sharing_incentive_eta(capacities, xi_cpu, weights) -> float:
    """eta_SI = D / W = S_i / F_i^max (the same for every user): Theorem 2's sufficient knob."""
    _, _, _, d, total_w = basics(*_scaled_key(capacities, xi_cpu, weights)[1])
    return min(float(d / total_w), 1.0)  # D <= W exactly; clamp the round-off


def wfq_allocate(capacities, xi_cpu, weights) -> np.ndarray:
    """§III proportional sharing (erratum E5): F_i = w_i t, t = 1 / max_d(sum_i w_i xi_i^d / C_d)."""
    scale, (c_cpu, c_gpu, xi_n, w_n) = _scaled_key(capacities, xi_cpu, weights)
    xi, w = np.array(xi_n), np.array(w_n)
    t = 1.0 / max(float(w @ xi) / c_cpu, float(w @ (1.0 - xi)) / c_gpu)
    return w * t * scale


def residual_capacity(capacities, xi_cpu, weights, eta: float) -> np.ndarray:
    """C' = C - eta sum_k F_k^max xi_k (clamped at 0): what the fairness stage leaves (§V-B)."""
    eta = check_eta(eta)
    scale, (c_cpu, c_gpu, xi, w) = _scaled_key(capacities, xi_cpu, weights)
    fmax = basics(c_cpu, c_gpu, xi, w)[2]
    return np.array(residual_core(c_cpu, c_gpu, xi, fmax, eta)) * scale


def emrf_allocate(capacities, xi_cpu, weights, eta: float, tie_break: str = "lexmaxmin",
                  solver: str = "highs") -> np.ndarray:
    """EMRF (Eq. (10)): F_i = eta F_i^max + F'_i with F' the efficiency LP of Eqs. (15)-(17).

    :param tie_break: ``"lexmaxmin"`` (default; unique) or ``"vertex"`` (HiGHS's vertex, paper parity).
    :param solver: ``"highs"`` (default: scipy ``linprog(method="highs")``) or
        ``"closed-form"`` (the env's exact pure-Python solution of the same LP, lexmaxmin only; see the
        module docstring). ``vertex`` always uses HiGHS.
    :raises EMRFSolverError: HiGHS could not solve the LP.
    """
    eta = check_eta(eta)
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break={tie_break!r} is not one of {TIE_BREAKS}")
    if solver not in SOLVERS:
        raise ValueError(f"solver={solver!r} is not one of {SOLVERS}")
    scale, key = _scaled_key(capacities, xi_cpu, weights)
    return np.array(emrf_core(*key, eta, tie_break, solver)[0]) * scale


@dataclass(frozen=True)
class EMRFSolution:
    """Everything the EMRF solve (docs/families/emrf.md §2) computes, for reports and tests."""

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
               solver: str = "highs") -> EMRFSolution:
    """:func:`emrf_allocate` with its intermediates (S, F^max, C', F', delta)."""
    alloc = emrf_allocate(capacities, xi_cpu, weights, eta, tie_break, solver)
    scale, key = _scaled_key(capacities, xi_cpu, weights)
    eta = float(eta)
    _, share, fmax, _, _ = basics(*key)
    share, fmax = np.array(share) * scale, np.array(fmax) * scale
    return EMRFSolution(
        allocation=alloc, fairness_stage=eta * fmax, efficiency_stage=alloc - eta * fmax, fair_share=share,
        drf=fmax, residual=residual_capacity(capacities, xi_cpu, weights, eta),
        delta_bound=delta_bound_core(*key, eta), soft_fairness=soft_fairness_degree(alloc, share), eta=eta)


def delta_bound(capacities, xi_cpu, weights, eta: float) -> float:
    """Theorem 1's unfairness bound, corrected (erratum E1): max_i (W/w_i) m_i min_d C'_d/xi_i^d.

    The paper's typeset form gives 0.28125 on Example 1 (eta = 0.5); this form gives its printed 1.125.
    """
    return delta_bound_core(*_scaled_key(capacities, xi_cpu, weights)[1], check_eta(eta))  # dimensionless


@lru_cache(maxsize=CACHE_SIZE)
def algorithm1_fill_core(c_cpu: float, c_gpu: float, xi: tuple[float, ...], omega: tuple[float, ...],
                         task_gflop: float, strict_stop: bool = False) -> tuple[float, ...]:
    """:func:`algorithm1_allocate` for a validated instance (pure Python, cached)."""
    n = len(xi)
    alloc = [0.0] * n
    heap = [(0.0, i) for i in range(n) if omega[i] > 0.0]  # (F_i / omega_i, i): ties -> lowest index
    heapq.heapify(heap)
    used_cpu = used_gpu = 0.0
    cap_cpu, cap_gpu = c_cpu * (1.0 + FILL_RTOL), c_gpu * (1.0 + FILL_RTOL)
    while heap:
        _, i = heapq.heappop(heap)  # line 4: the user with the lowest normalized share F_i / F_i^*
        need_cpu, need_gpu = task_gflop * xi[i], task_gflop * (1.0 - xi[i])  # line 5: its next task
        if used_cpu + need_cpu <= cap_cpu and used_gpu + need_gpu <= cap_gpu:  # line 6, per device
            alloc[i] += task_gflop  # line 7
            used_cpu += need_cpu
            used_gpu += need_gpu
            heapq.heappush(heap, (alloc[i] / omega[i], i))
        elif strict_stop:  # line 9 as printed: "the system is full and the allocation stops"
            break
        # else: user i is blocked; the others continue (erratum E6: skip-and-continue, the default)
    return tuple(alloc)


def algorithm1_allocate(capacities, xi_cpu, omega, task_gflop: float, strict_stop: bool = False) -> np.ndarray:
    """Algorithm 1 lines 3-9 (§V-C), the paper-like discrete scheduler (docs/families/emrf.md §5).

    The allocations ``omega`` (e.g. EMRF's F*) are relative weights (line 3); kernel slices of
    ``task_gflop`` GFLOPS go one at a time to the user with the lowest F_i / omega_i (line 4, ties to
    the lowest index). Line 6 (``F_i + D <= C_cpu + C_gpu``) is not a feasibility check; the slice must
    fit on every device it uses (erratum E6). A slice that does not fit blocks that user and the
    others continue (the default), or stops everything (``strict_stop``, line 9 as printed, which can
    leave a device idle). Users with omega_i = 0 get nothing. As ``task_gflop`` -> 0 with omega = F*
    saturating a device this tends to the fluid limit F = omega t* the env uses by default, except that
    users who need no saturated device keep receiving slices (skip-and-continue).
    """
    scale, (c_cpu, c_gpu, xi, _) = _scaled_key(capacities, xi_cpu, np.ones(np.size(xi_cpu)))
    try:
        w = np.asarray(omega, dtype=float).ravel()
    except (TypeError, ValueError):
        w = np.array([np.nan])
    if w.size != len(xi) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"omega must be one finite number >= 0 per user ({len(xi)}), got {omega!r}")
    if w.max() > 0:
        w = w / power_of_two_below(float(w.max()))  # exact; keeps F_i / omega_i finite for denormal omega
    try:
        task = float(task_gflop)
    except (TypeError, ValueError):
        task = math.nan
    if not (math.isfinite(task) and task > 0) or (c_cpu + c_gpu) * scale > MAX_TASK_SLICES * task:
        raise ValueError(f"task_gflop must be a finite number > 0 GFLOPS per kernel slice and at least "
                         f"(C_cpu + C_gpu) / {MAX_TASK_SLICES:g} (at most {MAX_TASK_SLICES:g} slices per allocation), "
                         f"got {task_gflop!r}")
    fill = algorithm1_fill_core(c_cpu, c_gpu, xi, tuple(w.tolist()), task / scale, bool(strict_stop))
    return np.array(fill) * scale


def soft_fairness_degree(allocation, fair_shares) -> float:
    """Realized soft-fairness degree (Eq. (9) LHS, erratum E12): max_i F_i/S_i - min_i F_i/S_i (smaller = fairer)."""
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
    "algorithm1_allocate",
    "algorithm1_fill_core",
    "as_instance",
    "check_eta",
    "delta_bound",
    "device_usage",
    "dominant_coefficients",
    "drf_allocate",
    "drf_progressive_allocate",
    "drf_progressive_core",
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
