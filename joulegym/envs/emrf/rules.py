"""The decisions of the EMRF env as allocation rules over rows of instances (EMRF paper §III, §V; docs/families/
emrf.md §6), and what every decision derives from its inputs (Eqs. (3)-(8), Theorem 1 corrected).

A decision holds for one window: at every event inside it the rule is applied again to the users with work then
(:mod:`.batch`). :meth:`AllocationRule.plan` gives the planned GFLOPS of every slot of several rows at once (0 on
slots outside the active set); the single env's rule is the same object over one row.

================================  ======================================================================
rule                              F over the active users
================================  ======================================================================
:class:`WeightsRule`              F_i = ω_i t*, t* = 1 / max_d(sum ω_i xi_i^d / C_d) (WFQ semantics; all-zero
                                  ω means equal ω, docs page assumption A18)
:class:`ResidualRule`             F_i = η F_i^max + ω_i t', t' saturating the first device of C'
:class:`KnobRule`                 F = EMRF(η) (:func:`~joulegym.envs.emrf.allocation.emrf_core`, per row)
:class:`SlicedRule`               another rule's F fed to Alg. 1's discrete scheduler (``task_gflop``)
:class:`CallableRule`             any function ``active slots -> F per slot`` (per row, in Python)
================================  ======================================================================

Every float is computed with the scalar formulas' operations in their order (:func:`~.batch.sums` for the sums),
so a row gets the bits of the same rule applied to that row alone.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from joulegym.envs.emrf.allocation import RESIDUAL_ZERO_RTOL, algorithm1_fill_core, emrf_core
from joulegym.envs.emrf.batch import AllocationFn, EMRFBatch, rowsum, selection

TINY_WEIGHT = 1e-100  # an action whose largest weight is below this is rescaled by it first (denormals)


def derived(xi_hat: np.ndarray, w: np.ndarray, act: np.ndarray, eta: np.ndarray, c_cpu: float,
            c_gpu: float) -> tuple[np.ndarray, ...]:
    """What a decision derives from ``(xi_hat, w)`` over the active slots ``act`` and η (``eta``, per row), for
    every row at once: ``(m, S, F^max, W, δ(η), W / min w)`` (Eqs. (3), (5), (8); Theorem 1 corrected, erratum E1)
    with the operations of :func:`~joulegym.envs.emrf.allocation.basics`, ``residual_core`` and
    ``delta_bound_from_residual`` in their order (values on inactive slots are garbage: callers mask them; a row
    without active slots has W / min w = 1). Floating-point warnings are the caller's to silence."""
    gpu_frac = 1.0 - xi_hat
    m = np.maximum(xi_hat / c_cpu, gpu_frac / c_gpu)
    w_on = np.where(act, w, 0.0)
    total_w, d_cpu, d_gpu = rowsum(w_on), rowsum(w_on * (xi_hat / c_cpu) / m), rowsum(w_on * (gpu_frac / c_gpu) / m)
    share = w / (total_w[:, None] * m)
    d = np.where(d_gpu > d_cpu, d_gpu, d_cpu)
    fmax = w / (d[:, None] * m)
    res_cpu, res_gpu = residual(fmax, xi_hat, act, eta, c_cpu, c_gpu)
    via_cpu = np.where(xi_hat > 0, res_cpu[:, None] / xi_hat, math.inf)
    via_gpu = np.where(xi_hat < 1, res_gpu[:, None] / gpu_frac, math.inf)
    lim = np.where(via_gpu < via_cpu, via_gpu, via_cpu)
    value = (total_w[:, None] / w) * m * lim
    bound = np.maximum.reduce(np.where(act, value, 0.0), axis=1)  # best = 0.0, raised by every larger value
    lightest = np.minimum.reduce(np.where(act, w, math.inf), axis=1)
    norm = np.where(lightest < math.inf, total_w / lightest, 1.0)  # no user: 1 (the env's Δ/1)
    return m, share, fmax, total_w, bound, norm


def residual(fmax: np.ndarray, xi_hat: np.ndarray, act: np.ndarray, eta: np.ndarray, c_cpu: float,
             c_gpu: float) -> tuple[np.ndarray, np.ndarray]:
    """C' = C - η sum_k F_k^max xi_k per device (clamped at 0), per row (``residual_core``'s operations)."""
    fmax_on = np.where(act, fmax, 0.0)
    used_cpu, used_gpu = rowsum(fmax_on * xi_hat), rowsum(fmax_on * (1.0 - xi_hat))
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


class AllocationRule:
    """The decision of one window for rows of a batch: active slots -> planned GFLOPS per slot.

    :param eta: the η it applies per row (η_target for the weight modes; ``info["eta"]``).
    :param batch: the batch it was decoded for (a one-row rule can then be called on an active set directly).
    """

    def __init__(self, eta: Any, batch: EMRFBatch | None = None) -> None:
        self.etas = np.atleast_1d(np.asarray(eta, dtype=np.float64))
        self.batch = batch

    @property
    def eta(self) -> float:
        """The η of a one-row rule."""
        return float(self.etas[0])

    def plan(self, batch: EMRFBatch, sel: Any, act: np.ndarray) -> np.ndarray:
        """Planned GFLOPS ``(rows, n)`` of the rows ``sel`` of ``batch`` (a slice or indices) with active slots
        ``act`` (0 elsewhere; floating-point warnings are the caller's to silence)."""
        raise NotImplementedError

    def _param(self, values: np.ndarray, sel: Any) -> np.ndarray:
        """A per-row parameter for the rows ``sel`` (a one-row rule's broadcasts)."""
        return values[:1] if values.shape[0] == 1 else values[sel]

    def __call__(self, active: tuple[int, ...]) -> list[float]:
        """The allocation of a one-row rule's row for the active slots ``active`` (a list of ``max_users``)."""
        batch = self.batch
        act = np.zeros((1, batch.max_users), dtype=bool)
        act[0, list(active)] = True
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return self.plan(batch, slice(0, 1), act)[0].tolist()


class WeightsRule(AllocationRule):
    """``weights``: F_i = ω_i t*, the first device saturating (ω per row and slot, ``omega``)."""

    def __init__(self, omega: np.ndarray, eta: Any, batch: EMRFBatch | None = None) -> None:
        super().__init__(eta, batch)
        self.omega = omega

    def plan(self, batch: EMRFBatch, sel: Any, act: np.ndarray) -> np.ndarray:
        c_cpu, c_gpu = batch.capacities
        w = normalised(self._param(self.omega, sel), act)
        xi = batch.xi_hat[sel]
        need_cpu, need_gpu = rowsum(w * xi), rowsum(w * (1.0 - xi))  # w is 0.0 on inactive slots
        load_cpu, load_gpu = need_cpu / c_cpu, need_gpu / c_gpu
        t = 1.0 / np.where(load_gpu > load_cpu, load_gpu, load_cpu)  # a row without active slots: masked below
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
        need_cpu, need_gpu = rowsum(w * xi), rowsum(w * (1.0 - xi))
        load_cpu = np.where(need_cpu > 0, np.where(room_cpu <= 0, math.inf, need_cpu / room_cpu), -math.inf)
        load_gpu = np.where(need_gpu > 0, np.where(room_gpu <= 0, math.inf, need_gpu / room_gpu), -math.inf)
        load = np.where(load_gpu > load_cpu, load_gpu, load_cpu)
        load = np.where(load == -math.inf, math.inf, load)  # no device needed: no level
        t = np.where(np.isinf(load), 0.0, 1.0 / load)
        return np.where(act, eta[:, None] * fmax + w * t[:, None], 0.0)


class KnobRule(AllocationRule):
    """``knob`` / ``knob_discrete``: F = EMRF(η) of the active users (η per row), solved row by row by the cached
    closed form (or HiGHS: ``solver``) of :func:`~joulegym.envs.emrf.allocation.emrf_core`."""

    def __init__(self, eta: Any, tie_break: str, solver: str, batch: EMRFBatch | None = None) -> None:
        super().__init__(eta, batch)
        self.tie_break, self.solver = tie_break, solver

    def plan(self, batch: EMRFBatch, sel: Any, act: np.ndarray) -> np.ndarray:
        c_cpu, c_gpu = batch.capacities
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


class SlicedRule(AllocationRule):
    """Alg. 1 lines 3-9 (§V-C): ``inner``'s fluid allocation as the weights F* of the discrete scheduler that hands
    out kernel slices of ``task_gflop`` (per row, cached :func:`~joulegym.envs.emrf.allocation.algorithm1_fill_core`;
    ``strict_stop``: line 9 as printed)."""

    def __init__(self, inner: AllocationRule, task_gflop: float, strict_stop: bool) -> None:
        super().__init__(inner.etas, inner.batch)
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


class CallableRule(AllocationRule):
    """Any function ``active slots -> planned GFLOPS per slot`` (a list of ``max_users``), applied row by row."""

    def __init__(self, fn: AllocationFn, eta: float = math.nan, batch: EMRFBatch | None = None) -> None:
        super().__init__(eta, batch)
        self.fn = fn

    def plan(self, batch: EMRFBatch, sel: Any, act: np.ndarray) -> np.ndarray:
        out = np.zeros(act.shape)
        for k, slots in enumerate(act.tolist()):
            active = tuple(i for i, on in enumerate(slots) if on)
            if active:
                out[k] = np.where(act[k], self.fn(active), 0.0)  # only the active slots' allocation is used
        return out
