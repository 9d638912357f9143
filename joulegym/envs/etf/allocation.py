"""ETF time-slice allocation: Algorithm 1 and its closed forms (ETF paper §4; ``docs/families/etf.md``).

Pure functions over plain arrays; no Gymnasium. Units: time in whole scheduling units (the paper's
indivisible slices; 1 ms in the default scenarios), power in any consistent unit (W), weights
dimensionless. The algorithms depend only on relative powers and weights.

- :func:`etf_allocate` is Algorithm 1 exactly: a floored time guarantee ``floor(phi*w_i*T/W)``
  capped at the demand, then the rest handed out one unit at a time to the app with the lowest
  weighted energy ``t_i*P_i/w_i`` (ties to the lowest index, docs page "Assumptions"; energies equal up
  to float round-off, :data:`TIE_RTOL`, are ties), never above its demand. :func:`algorithm1_fill` is lines 2-8
  alone, for callers that bring their own guarantee (the ETF policy decoding a float32 observation).
  ``phi=1`` is time fairness (TF), ``phi=0`` energy fairness (EF).
- :func:`etf_waterfill` is the continuous form (docs page "Closed forms"): ``T_i = clip(lam*w_i/P_i, m_i, d_i)``.
- :func:`phi_fair` is the largest phi that still gives exact weighted energy fairness.
- :func:`time_fair_allocation` / :func:`energy_fair_allocation` are the closed-form baselines
  (Eq. 5 and the corrected Eq. 2, erratum E1 of the docs page: ``T_i^EF = (w_i/P_i)/sum_k(w_k/P_k) * T``).

The paper's Eqs. 9-15 are not implemented (errata E3/E4 of the docs page): Algorithm 1 is normative.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from joulegym.envs.etf import split

ArrayLike = Sequence[float] | np.ndarray


# The domain of the pure functions: weights and powers within 60 orders of magnitude keep every product of
# Algorithm 1 (t P / w, phi w T / W) finite; values outside raise (physical inputs are far inside).
MAGNITUDE = (1e-30, 1e30)
MAX_T_UNITS = 1_000_000  # Algorithm 1 hands out units one at a time: a bound on the work per call


def validate_inputs(weights: ArrayLike, demands: ArrayLike | None, power: ArrayLike, phi: float,
                    T: int | None = None, whole_demands: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arrays of weights, demands and powers, or ``ValueError`` naming the bad field."""
    w = np.asarray(weights, dtype=float).ravel()
    p = np.asarray(power, dtype=float).ravel()
    d = np.full(w.shape, np.inf) if demands is None else np.asarray(demands, dtype=float).ravel()
    if not w.size:
        raise ValueError("weights must hold at least one application")
    if p.shape != w.shape or d.shape != w.shape:
        raise ValueError(
            f"weights, demands and power must have the same length, got {w.size}, {d.size}, {p.size}"
        )
    low, high = MAGNITUDE
    if not np.all(np.isfinite(w)) or np.any(w < low) or np.any(w > high):
        raise ValueError(f"weights must be finite numbers in [{low:g}, {high:g}], got {w.tolist()}")
    if not np.all(np.isfinite(p)) or np.any(p < low) or np.any(p > high):
        raise ValueError(f"power must be finite numbers in [{low:g}, {high:g}] (W), got {p.tolist()}")
    if np.any(np.isnan(d)) or np.any(d < 0):
        raise ValueError(f"demands must be >= 0 units or inf, got {d.tolist()}")
    if whole_demands and np.any(np.isfinite(d) & (d != np.floor(d))):
        raise ValueError(f"demands must be whole units (slices are indivisible) or inf, got {d.tolist()}")
    if not (isinstance(phi, int | float | np.floating | np.integer) and 0.0 <= float(phi) <= 1.0):
        raise ValueError(f"phi must be in [0, 1], got {phi!r}")
    if T is not None and (isinstance(T, bool) or not np.isfinite(T) or int(T) != T or not 0 <= T <= MAX_T_UNITS):
        raise ValueError(f"T must be a whole number of units in [0, {MAX_T_UNITS}], got {T!r}")
    return w, d, p


def guaranteed_units(weights: np.ndarray, demands: np.ndarray, T: int, phi: float) -> np.ndarray:
    """Algorithm 1 line 1, floored (docs page "Algorithm 1"): ``min(floor(phi*w_i*T/W), d_i)``, as ints."""
    # +1e-9 so that a share that is whole in exact arithmetic (0.7*30/3 = 7) is not floored to 6 by
    # float round-off; no real share lies within 1e-9 below an integer for T < 1e6 units.
    share = np.floor(phi * weights * T / weights.sum() + 1e-9)
    return np.minimum(share, np.floor(demands)).astype(np.int64)


# Weighted energies within this relative distance are tied (ties go to the lowest index; the paper leaves
# ties open, see the docs page "Assumptions").
# Algorithm 1's ties are exact in real numbers, but float64 can break them: with P = 3.226 W and
# weights 1 and 3, 3 x 3.226 / 1 = 9.678 while 9 x 3.226 / 3 = 9.677999999999999. Inputs whose weighted
# energies genuinely differ by less than 1e-9 (relative) do not occur with physical powers and weights.
TIE_RTOL = 1e-9


def etf_allocate(weights: ArrayLike, demands: ArrayLike | None, power: ArrayLike, T: int, phi: float,
                 tie: str = "lowest_index") -> np.ndarray:
    """Algorithm 1 "Compute time slice", exactly; returns whole units per app (int64 array).

    :param weights: ``w_i > 0``.
    :param demands: ``d_i`` in units per interval (``inf`` for backlogged apps); ``None`` = all backlogged.
    :param power: ``P_i > 0`` (W, or any consistent unit).
    :param T: the scheduling interval in whole units.
    :param phi: time-fair factor in [0, 1].
    :param tie: only ``"lowest_index"`` (the paper leaves ties open; the authors' code breaks them FIFO).

    Line 1 is floored (slices are indivisible, paper §4.2); lines 2-8 are :func:`algorithm1_fill`. Weighted
    energies ``t*P/w`` equal to within :data:`TIE_RTOL` are ties, so float round-off never decides a tie.
    Complexity O(N + R log N) for R units handed out in step 2.
    """
    if tie != "lowest_index":
        raise ValueError(f"tie={tie!r} is not supported; allowed: ('lowest_index',)")
    w, d, p = validate_inputs(weights, demands, power, phi, T, whole_demands=True)
    return algorithm1_fill(w, d, p, int(T), guaranteed_units(w, d, int(T), float(phi)))


def algorithm1_fill(weights: np.ndarray, demands: np.ndarray, power: np.ndarray, T: int,
                    guarantee: ArrayLike, tie_rtol: float = TIE_RTOL) -> np.ndarray:
    """Algorithm 1 lines 2-8 from the line-1 slices ``guarantee``: hand out the rest of ``T`` one unit at
    a time to the app with the lowest weighted energy ``t_i*P_i/w_i`` whose demand is not met.

    Values within ``tie_rtol`` (relative) of the lowest are tied and the lowest index wins. No
    validation (callers validate); ``demands`` may hold ``inf``.
    """
    out = [int(g) for g in np.asarray(guarantee).ravel()]
    caps = [int(min(d, T)) for d in np.asarray(demands, dtype=float).ravel()]  # no app uses more than T
    w = np.asarray(weights, dtype=float).ravel().tolist()
    p = np.asarray(power, dtype=float).ravel().tolist()
    remaining = int(T) - sum(out)
    # Heap of (weighted energy, index) over apps whose demand is not met (Alg. 1 lines 4-8).
    heap = [(out[i] * p[i] / w[i], i) for i in range(len(out)) if out[i] < caps[i]]
    heapq.heapify(heap)
    while remaining > 0 and heap:
        energy, k = heapq.heappop(heap)
        if heap and heap[0][0] <= energy + tie_rtol * energy:  # near-equal: the lowest index wins
            tied = [(energy, k)]
            while heap and heap[0][0] <= energy + tie_rtol * energy:
                tied.append(heapq.heappop(heap))
            winner = min(tied, key=lambda item: item[1])
            for item in tied:
                if item is not winner:
                    heapq.heappush(heap, item)
            k = winner[1]
        out[k] += 1
        remaining -= 1
        if out[k] < caps[k]:
            heapq.heappush(heap, (out[k] * p[k] / w[k], k))
    return np.asarray(out, dtype=np.int64)


def etf_waterfill(weights: ArrayLike, demands: ArrayLike | None, power: ArrayLike, T: float, phi: float,
                  floor_guarantee: bool = False) -> np.ndarray:
    """Continuous ETF (docs page "Closed forms"): ``T_i = clip(lam*w_i/P_i, m_i, d_i)`` with ``sum T_i = T``.

    ``m_i = min(phi*w_i*T/W, d_i)``; with ``floor_guarantee`` the guarantee is floored like Alg. 1's,
    which is the comparison the discrete-vs-continuous bound (< N-1 units) refers to. If every
    demand fits, ``T_i = d_i`` (the GPU idles for the rest).
    """
    w, d, p = validate_inputs(weights, demands, power, phi)
    if T < 0:
        raise ValueError(f"T must be >= 0, got {T}")
    if floor_guarantee:
        m = guaranteed_units(w, d, int(T), float(phi)).astype(float)
    else:
        m = np.minimum(phi * w * T / w.sum(), d)
    if np.sum(np.minimum(d, T)) <= T:
        return np.minimum(d, T).astype(float)
    slope = w / p  # T_i = lam * slope_i inside the clip
    return _clip_level_solve(slope, m, d, T)


def _clip_level_solve(slope: np.ndarray, low: np.ndarray, high: np.ndarray, total: float) -> np.ndarray:
    """Solve ``sum clip(lam*slope_i, low_i, high_i) = total`` exactly (piecewise linear in lam)."""
    if np.sum(low) >= total:  # the guarantees alone fill the interval
        return low.copy()
    if np.sum(high) <= total:  # every cap fits
        return high.astype(float)
    breaks = np.unique(np.concatenate([low / slope, high / slope]))
    breaks = breaks[np.isfinite(breaks)]
    fill = lambda lam: np.clip(lam * slope, low, high)  # noqa: E731
    sums = np.array([fill(b).sum() for b in breaks])
    k = int(np.searchsorted(sums, total))
    if k == len(breaks):  # beyond the last finite breakpoint only uncapped apps grow
        lam0, base = (breaks[-1], sums[-1]) if len(breaks) else (0.0, fill(0.0).sum())
        # Every low_i/slope_i and finite high_i/slope_i is a breakpoint <= lam0: past lam0 exactly the
        # uncapped apps grow. (Testing lam0*slope >= low instead drops an app whose own breakpoint is
        # lam0 when the product rounds just below low, and the sum then misses T.)
        growing = np.isinf(high)
        lam = lam0 + (total - base) / slope[growing].sum()
        return fill(lam)
    if k == 0:
        return fill(breaks[0])
    lam_lo, lam_hi = breaks[k - 1], breaks[k]
    s_lo, s_hi = sums[k - 1], sums[k]
    lam = lam_lo + (total - s_lo) * (lam_hi - lam_lo) / (s_hi - s_lo)
    return fill(lam)


def phi_fair(weights: ArrayLike, power: ArrayLike) -> float:
    """Largest phi for which backlogged ETF is exactly weighted EF: ``W / (P_max * sum_k w_k/P_k)``.

    Two equal-weight apps with disparity r: ``2/(1+r)``; at 2:1 with the heavy app high-power,
    ``3/(2+r)`` (docs page "Closed forms").
    """
    w, _, p = validate_inputs(weights, None, power, 0.0)
    return float(w.sum() / (p.max() * np.sum(w / p)))


def time_fair_allocation(weights: ArrayLike, T: float) -> np.ndarray:
    """Eq. 5: ``T_i^TF = w_i/W * T`` (continuous)."""
    w = np.asarray(weights, dtype=float)
    if np.any(w <= 0) or not np.all(np.isfinite(w)):
        raise ValueError(f"weights must be finite and > 0, got {w.tolist()}")
    return w / w.sum() * T


def energy_fair_allocation(weights: ArrayLike, power: ArrayLike, T: float) -> np.ndarray:
    """Corrected Eq. 2 (erratum E1): ``T_i^EF = (w_i/P_i) / sum_k(w_k/P_k) * T`` (continuous)."""
    w, _, p = validate_inputs(weights, None, power, 0.0)
    share = w / p
    return share / share.sum() * T


def largest_remainder(quotas: ArrayLike, total: int, caps: ArrayLike | None = None) -> np.ndarray:
    """Round non-negative ``quotas`` to whole units summing to ``total`` (Hamilton's method).

    Leftover units go to the largest fractional parts (ties to the lowest index). With ``caps``, an
    app never gets more than its cap; overflow is redistributed over the uncapped apps
    proportionally to their quotas, repeatedly (the ``split`` action mapping, docs page "Action modes").
    Fewer than ``total`` units are handed out only when every app is at its cap.
    """
    q = np.asarray(quotas, dtype=float).ravel()
    if np.any(q < 0) or not np.all(np.isfinite(q)):
        raise ValueError(f"quotas must be finite and >= 0, got {q.tolist()}")
    cap_list = None if caps is None else [int(c) for c in np.asarray(caps).ravel()]
    return np.asarray(largest_remainder_list(q.tolist(), int(total), cap_list), dtype=np.int64)


def largest_remainder_list(quotas: list[float], total: int, caps: list[int] | None = None) -> list[int]:
    """:func:`largest_remainder` on plain lists, without validation: the ``split`` mapping's rounding
    (:func:`joulegym.envs.etf.split.largest_remainder` on one instance)."""
    return split.largest_remainder(split.ONE, quotas, total, [total] * len(quotas) if caps is None else caps)


def units_to_action(units: np.ndarray, floor: np.ndarray, active: np.ndarray) -> np.ndarray:
    """The ``split`` action that reproduces ``units``: ``a_i = r_i / max r`` with ``r = units - floor``.

    ``floor`` is the env's action floor (``info["scheduler_inputs"]["action_floor_units"]``: Algorithm 1's
    guarantee with ``guarantee_mode="project"``, zeros with ``"none"``). Exact whenever ``units >= floor``
    (Algorithm 1 at the env's phi always is). Units below the floor (e.g. EF under a phi = 0.7 guarantee)
    cannot be expressed; they are clipped to it.
    """
    above = np.where(active, np.maximum(units - floor, 0), 0).astype(float)
    top = above.max() if above.size else 0.0
    return (above / top if top > 0 else np.zeros_like(above)).astype(np.float32)


def etf_continuous_bound(n_apps: int) -> float:
    """With the same floored guarantee, Alg. 1 and water-filling differ by < max(1, N-1) units per app
    (docs page "Closed forms")."""
    return float(max(1, n_apps - 1))


__all__ = [
    "TIE_RTOL",
    "algorithm1_fill",
    "energy_fair_allocation",
    "etf_allocate",
    "etf_continuous_bound",
    "etf_waterfill",
    "guaranteed_units",
    "largest_remainder",
    "largest_remainder_list",
    "phi_fair",
    "time_fair_allocation",
    "units_to_action",
    "validate_inputs",
]
