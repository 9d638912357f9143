"""The decisions of the batched EMRF env as allocation rules over rows of instances (EMRF paper §III, §V;
docs/families/emrf.md §6), and what every decision derives from its inputs (Eqs. (3)-(8), Theorem 1 corrected).

A decision holds for one window: at every event inside it the rule is applied again to the users with work then
(:mod:`.batch`). :meth:`RowRule.plan` gives the planned GFLOPS of every slot of several rows at once (0 on slots
outside the active set), with the single env's rules' formulas (:mod:`joulegym.envs.emrf.env`); the weight modes'
levels are the single env's functions (:func:`~joulegym.envs.emrf.decisions.saturating_level`,
:func:`~joulegym.envs.emrf.decisions.residual_level`) on arrays.

================================  ======================================================================
rule                              F over the active users
================================  ======================================================================
:class:`WeightsRule`              F_i = ω_i t*, t* = 1 / max_d(sum ω_i xi_i^d / C_d) (WFQ semantics; all-zero
                                  ω means equal ω, docs page assumption A18)
:class:`ResidualRule`             F_i = η F_i^max + ω_i t', t' saturating the first device of C'
:class:`KnobRule`                 F = EMRF(η) (:func:`~joulegym.envs.emrf.allocation.emrf_core`, per row)
:class:`SlicedRule`               another rule's F fed to Alg. 1's discrete scheduler (``task_gflop``)
================================  ======================================================================

Every float is computed with the scalar formulas' operations in their order (:func:`~joulegym.core.summation.row_sums`
for the sums), so a row gets the bits of the same rule applied to that row alone.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from joulegym.core.summation import row_sums
from joulegym.envs.emrf.allocation import (
    RESIDUAL_ZERO_RTOL,
    XI_GROUP_TOL,
    EMRFSolverError,
    algorithm1_fill_core,
    device_loads,
    emrf_core,
)
from joulegym.envs.emrf.batch import EMRFBatch, selection
from joulegym.envs.emrf.decisions import TINY_WEIGHT, residual_level, saturating_level


def row_loads(amounts: np.ndarray, xi: np.ndarray, act: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~joulegym.envs.emrf.allocation.device_loads` of every row (the single env's sums, slot by slot): the
    slot lanes are columns, visited where some row has the slot in its active set ``act`` (``amounts`` must be 0.0
    elsewhere: those rows add +0.0)."""
    slots = np.flatnonzero(act.any(axis=0)).tolist()
    return device_loads(slots, list(amounts.T), list(xi.T), np.zeros(act.shape[0]))


def derived(xi_hat: np.ndarray, w: np.ndarray, act: np.ndarray, eta: np.ndarray, c_cpu: float,
            c_gpu: float) -> tuple[np.ndarray, ...]:
    """What a decision derives from ``(xi_hat, w)`` over the active slots ``act`` and η (``eta``, per row), for
    every row at once: ``(m, S, F^max, W, δ(η), W / min w)`` (Eqs. (3), (5), (8); Theorem 1 corrected, erratum E1)
    with the operations of :func:`~joulegym.envs.emrf.allocation.basics`, ``residual_core`` and
    ``delta_bound_from_residual`` in their order (values on inactive slots are garbage: callers mask them; a row
    without active slots has W / min w = 1). Floating-point warnings are the caller's to silence."""
    m, share, fmax, total_w = basics_rows(xi_hat, w, act, c_cpu, c_gpu)
    gpu_frac = 1.0 - xi_hat
    res_cpu, res_gpu = residual(fmax, xi_hat, act, eta, c_cpu, c_gpu)
    via_cpu = np.where(xi_hat > 0, res_cpu[:, None] / xi_hat, math.inf)
    via_gpu = np.where(xi_hat < 1, res_gpu[:, None] / gpu_frac, math.inf)
    lim = np.where(via_gpu < via_cpu, via_gpu, via_cpu)
    value = (total_w[:, None] / w) * m * lim
    bound = np.maximum.reduce(np.where(act, value, 0.0), axis=1)  # best = 0.0, raised by every larger value
    lightest = np.minimum.reduce(np.where(act, w, math.inf), axis=1)
    norm = np.where(lightest < math.inf, total_w / lightest, 1.0)  # no user: 1 (the env's Δ/1)
    return m, share, fmax, total_w, bound, norm


def basics_rows(xi: np.ndarray, w: np.ndarray, act: np.ndarray, c_cpu: float,
                c_gpu: float) -> tuple[np.ndarray, ...]:
    """``(m, S, F^max, W)`` of every row over its active slots ``act`` (Eqs. (3), (5), (8)), with the operations of
    :func:`~joulegym.envs.emrf.allocation.basics` in their order (values on inactive slots are garbage)."""
    gpu_frac = 1.0 - xi
    m = np.maximum(xi / c_cpu, gpu_frac / c_gpu)
    w_on = np.where(act, w, 0.0)
    total_w, d_cpu, d_gpu = row_sums(w_on), row_sums(w_on * (xi / c_cpu) / m), row_sums(w_on * (gpu_frac / c_gpu) / m)
    d = np.where(d_gpu > d_cpu, d_gpu, d_cpu)
    return m, w / (total_w[:, None] * m), w / (d[:, None] * m), total_w


def residual(fmax: np.ndarray, xi_hat: np.ndarray, act: np.ndarray, eta: np.ndarray, c_cpu: float,
             c_gpu: float) -> tuple[np.ndarray, np.ndarray]:
    """C' = C - η sum_k F_k^max xi_k per device (clamped at 0), per row (``residual_core``'s operations)."""
    used_cpu, used_gpu = row_loads(np.where(act, fmax, 0.0), xi_hat, act)
    res_cpu = c_cpu - eta * used_cpu
    res_gpu = c_gpu - eta * used_gpu
    return (np.where(res_cpu <= RESIDUAL_ZERO_RTOL * c_cpu, 0.0, res_cpu),
            np.where(res_gpu <= RESIDUAL_ZERO_RTOL * c_gpu, 0.0, res_gpu))


def normalised(omega: np.ndarray, act: np.ndarray) -> np.ndarray:
    """ω of the active slots (0 elsewhere), safe to scale: all-zero -> equal; a tiny maximum -> divided by it.

    Allocations are scale-free in ω, so dividing by the maximum changes nothing but the round-off; it is only done
    when the maximum is so small (denormals) that the saturating scale would overflow.
    """
    w = np.where(act, omega, 0.0)
    top = np.maximum.reduce(w, axis=1)
    low = top < TINY_WEIGHT
    if np.count_nonzero(low):  # rare: rows without weight on their users, or denormal weights
        w = np.where((top <= 0.0)[:, None], act * 1.0, w)
        tiny = (top > 0.0) & low
        w = np.where(tiny[:, None], w / np.where(tiny, top, 1.0)[:, None], w)
    return w


class RowRule:
    """The decision of one window for rows of a batch: active slots -> planned GFLOPS per slot.

    :param eta: the η it applies per row (η_target for the weight modes).
    """

    def __init__(self, eta: Any) -> None:
        self.etas = np.atleast_1d(np.asarray(eta, dtype=np.float64))

    def plan(self, batch: EMRFBatch, sel: Any, act: np.ndarray) -> np.ndarray:
        """Planned GFLOPS ``(rows, n)`` of the rows ``sel`` of ``batch`` (a slice or indices) with active slots
        ``act`` (0 elsewhere; floating-point warnings are the caller's to silence)."""
        raise NotImplementedError

    def _param(self, values: np.ndarray, sel: Any) -> np.ndarray:
        """A per-row parameter for the rows ``sel`` (a one-row rule's broadcasts)."""
        return values[:1] if values.shape[0] == 1 else values[sel]


class WeightsRule(RowRule):
    """``weights``: F_i = ω_i t*, the first device saturating (ω per row and slot, ``omega``)."""

    def __init__(self, omega: np.ndarray, eta: Any) -> None:
        super().__init__(eta)
        self.omega = omega

    def plan(self, batch: EMRFBatch, sel: Any, act: np.ndarray) -> np.ndarray:
        c_cpu, c_gpu = batch.capacities
        w = normalised(self._param(self.omega, sel), act)
        xi = batch.xi_hat[sel]
        need_cpu, need_gpu = row_loads(w, xi, act)  # w is 0.0 on inactive slots
        t = saturating_level(need_cpu, need_gpu, c_cpu, c_gpu, np.maximum)  # a row without active slots: masked below
        return np.where(act, w * t[:, None], 0.0)


class ResidualRule(WeightsRule):
    """``residual_weights``: F_i = η F_i^max + ω_i t', t' saturating the first device of C' (the fairness floor
    holds by construction)."""

    def plan(self, batch: EMRFBatch, sel: Any, act: np.ndarray) -> np.ndarray:
        c_cpu, c_gpu = batch.capacities
        eta = self._param(self.etas, sel)
        xi = batch.xi_hat[sel]
        fmax = derived(xi, batch.w[sel], act, eta, c_cpu, c_gpu)[2]
        room_cpu, room_gpu = residual(fmax, xi, act, eta, c_cpu, c_gpu)
        w = normalised(self._param(self.omega, sel), act)
        t = residual_level(*row_loads(w, xi, act), room_cpu, room_gpu, np.where)
        return np.where(act, eta[:, None] * fmax + w * t[:, None], 0.0)


def emrf_rows(xi: np.ndarray, w: np.ndarray, act: np.ndarray, eta: np.ndarray, c_cpu: float,
              c_gpu: float) -> np.ndarray:
    """EMRF(η) (Eqs. (10)-(17), lexmaxmin tie-break) of every row at once: the closed form of
    :func:`~joulegym.envs.emrf.allocation.emrf_core` (``_groups``, ``_closed_form_group_levels``), with its
    operations in its order, so each row gets the bits of ``emrf_core`` on its active users.

    :raises EMRFSolverError: as ``emrf_core``, if a level is not finite and >= 0 (cannot happen for a valid row).
    """
    rows, n = act.shape
    _, share, fmax, _ = basics_rows(xi, w, act, c_cpu, c_gpu)
    room_cpu, room_gpu = residual(fmax, xi, act, eta, c_cpu, c_gpu)
    # Eq. (17)'s groups: users sorted by xi (stable: ties in slot order), a new group where xi moves XI_GROUP_TOL
    # away from the group's first user; the group's xi is that user's, its share the sum of its users' S
    every = np.arange(rows)
    order = np.argsort(np.where(act, xi, math.inf), axis=1, kind="stable")
    picked = (every[:, None], order)
    sorted_xi, sorted_share, valid = xi[picked], np.where(act, share, 0.0)[picked], act[picked]
    group = np.zeros((rows, n), dtype=np.int64)
    group_xi = np.zeros((rows, n))
    group_share = np.zeros((rows, n))
    leader = sorted_xi[:, 0]
    group_xi[:, 0] = leader
    group_share[:, 0] = sorted_share[:, 0]
    for j in range(1, n):  # inactive users come last (xi = inf): they start no group and add 0.0 (exact)
        new = valid[:, j] & ~(sorted_xi[:, j] - leader < XI_GROUP_TOL)
        at = group[:, j] = group[:, j - 1] + new
        leader = np.where(new, sorted_xi[:, j], leader)
        group_xi[every, at] = leader
        group_share[every, at] += sorted_share[:, j]
    groups = np.where(valid, group, -1).max(axis=1) + 1
    levels = _group_levels(room_cpu, room_gpu, group_xi, group_share, groups)
    levels = np.where((np.arange(n)[None, :] < groups[:, None]), levels, 0.0)  # rows without users: none
    if not (np.isfinite(levels) & (levels >= 0.0)).all():  # cannot happen for a validated instance
        raise EMRFSolverError(f"the closed-form efficiency LP (Eqs. (15)-(17)) gave levels {levels.tolist()}; use "
                              "solver='highs'")
    slot_group = np.empty((rows, n), dtype=np.int64)
    slot_group[picked] = group
    return np.where(act, eta[:, None] * fmax + share * levels[every[:, None], slot_group], 0.0)


def _group_levels(a: np.ndarray, b: np.ndarray, gxi: np.ndarray, gs: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """The lexmaxmin levels z_g per row (``_closed_form_group_levels`` row by row: its cases and operations)."""
    rows, n = gxi.shape
    every = np.arange(rows)
    last = np.maximum(groups - 1, 0)
    in_group = np.arange(n)[None, :] < groups[:, None]
    total = a + b
    r = a / np.where(total > 0.0, total, 1.0)
    lo, hi = gxi[:, 0], gxi[every, last]
    s_tot = row_sums(np.where(in_group, gs, 0.0))
    imbalance = row_sums(np.where(in_group, gs * (gxi - r[:, None]), 0.0))
    e_min, e_max = lo - r, hi - r
    up = -e_min * total / (imbalance - e_min * s_tot)  # imbalance > 0: the lowest-xi group absorbs
    down = e_max * total / (e_max * s_tot - imbalance)  # imbalance < 0: the highest-xi group absorbs
    level = np.where(imbalance > 0.0, up, down)
    level = np.where(0.0 > level, 0.0, level)
    absorber = np.where(imbalance > 0.0, 0, last)
    gap = total - level * s_tot
    top_up = np.where(0.0 > gap, 0.0, gap) / gs[every, absorber]
    z = np.where(in_group, level[:, None], 0.0)
    z[every, absorber] = level + top_up
    z = np.where((imbalance == 0.0)[:, None] & in_group, (total / s_tot)[:, None], z)  # balanced: one level
    cpu_bound = np.zeros((rows, n))  # every group CPU-bound first: all of C'_cpu to the least CPU-hungry one
    cpu_bound[:, 0] = (a / lo) / gs[:, 0]
    gpu_bound = np.zeros((rows, n))  # every group GPU-bound first: all of C'_gpu to the least GPU-hungry one
    gpu_bound[every, last] = (b / (1.0 - hi)) / gs[every, last]
    z = np.where((hi < r)[:, None], gpu_bound, z)
    z = np.where((lo > r)[:, None], cpu_bound, z)
    return np.where((total <= 0.0)[:, None], 0.0, z)


class KnobRule(RowRule):
    """``knob`` / ``knob_discrete``: F = EMRF(η) of the active users (η per row): the closed form for every row at
    once (:func:`emrf_rows`) with the default lexmaxmin tie-break and closed-form solver, else row by row by the
    cached :func:`~joulegym.envs.emrf.allocation.emrf_core` (HiGHS)."""

    def __init__(self, eta: Any, tie_break: str, solver: str) -> None:
        super().__init__(eta)
        self.tie_break, self.solver = tie_break, solver

    def plan(self, batch: EMRFBatch, sel: Any, act: np.ndarray) -> np.ndarray:
        c_cpu, c_gpu = batch.capacities
        if self.tie_break == "lexmaxmin" and self.solver == "closed-form":
            eta = self._param(self.etas, sel)
            eta = np.broadcast_to(eta, (act.shape[0],)) if eta.shape[0] == 1 else eta
            return emrf_rows(batch.xi_hat[sel], batch.w[sel], act, eta, c_cpu, c_gpu)
        out = np.zeros(act.shape)
        etas = self.etas.tolist()
        one = len(etas) == 1
        xi_rows, w_rows = batch.xi_hat[sel].tolist(), batch.w[sel].tolist()
        for k, (r, slots) in enumerate(zip(selection(batch.rows, sel)[0].tolist(), act.tolist())):
            active = [i for i, on in enumerate(slots) if on]
            if not active:
                continue
            xi, w = xi_rows[k], w_rows[k]
            alloc = emrf_core(c_cpu, c_gpu, tuple(xi[i] for i in active), tuple(w[i] for i in active),
                              etas[0] if one else etas[r], self.tie_break, self.solver)[0]
            out[k, active] = alloc
        return out


class SlicedRule(RowRule):
    """Alg. 1 lines 3-9 (§V-C): ``inner``'s fluid allocation as the weights F* of the discrete scheduler that hands
    out kernel slices of ``task_gflop`` (per row, cached :func:`~joulegym.envs.emrf.allocation.algorithm1_fill_core`;
    ``strict_stop``: line 9 as printed)."""

    def __init__(self, inner: RowRule, task_gflop: float, strict_stop: bool) -> None:
        super().__init__(inner.etas)
        self.inner, self.task_gflop, self.strict_stop = inner, float(task_gflop), bool(strict_stop)

    def plan(self, batch: EMRFBatch, sel: Any, act: np.ndarray) -> np.ndarray:
        c_cpu, c_gpu = batch.capacities
        fluid = self.inner.plan(batch, sel, act).tolist()
        out = np.zeros(act.shape)
        xi_rows = batch.xi_hat[sel].tolist()
        for k, slots in enumerate(act.tolist()):
            active = [i for i, on in enumerate(slots) if on]
            if active:
                xi, planned = xi_rows[k], fluid[k]
                out[k, active] = algorithm1_fill_core(c_cpu, c_gpu, tuple(xi[i] for i in active),
                                                      tuple(planned[i] for i in active), self.task_gflop,
                                                      self.strict_stop)
        return out
