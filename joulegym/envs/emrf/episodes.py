"""One batched EMRF env step for rows of episodes at once: decision diagnostics, the window, its reward parts, the
episode sums, the observation and the metrics (EMRF paper §III, §V; docs/families/emrf.md §6-§7, §11).

:class:`EMRFEpisodes` holds what :class:`~joulegym.envs.emrf.vector.EMRFVectorEnv` adds to the simulator rows
(:class:`~joulegym.envs.emrf.batch.EMRFBatch`): per row η_target, the decision's derived quantities (S, F^max, m,
δ(η), W / min w), the episode's running sums and the last window's diagnostics, with the single env's formulas
(:class:`~joulegym.envs.emrf.env.EMRFEnv`'s ``_transition`` and ``_window_measures``), so each row gives the single
env's bits; the observation's features 0-5 and globals and the metrics are the single env's functions
(:mod:`joulegym.envs.emrf.decisions`, :mod:`joulegym.envs.emrf.metrics`) on arrays.

Reward parts (time averages over the window's segments, each "more is better"): ``efficiency`` E = sum F_i / C_tot
(Eq. (15)); ``soft_fairness`` -Δ / (W / min w) with Δ = max F/S - min F/S (Eq. (9)); ``floor_violation`` -V,
V = sum_i max(0, η_target F_i^max - F_i) / C_tot.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from joulegym.envs.emrf.batch import EMRFBatch, selection
from joulegym.envs.emrf.decisions import SLOT_FEATURES, global_features, identity_features
from joulegym.envs.emrf.metrics import episode_metrics, segment_measures
from joulegym.envs.emrf.rules import RowRule, derived

DIAGNOSTIC_RTOL = 1e-9  # SI and envy count against round-off (allocation.CHECK_RTOL)


class EMRFEpisodes:
    """The env-level state of ``batch.rows`` EMRF episodes (module docstring).

    :param batch: the simulator rows.
    """

    def __init__(self, batch: EMRFBatch) -> None:
        self.batch = batch
        rows, n = batch.rows, batch.max_users
        self.c_tot = batch.capacities[0] + batch.capacities[1]
        self.eta_target = np.zeros(rows)
        for name in ("sum_e", "sum_v", "sum_delta", "sum_bound", "sum_speedup", "last_eta", "last_delta",
                     "last_bound", "d_total_w", "d_bound", "d_norm"):
            setattr(self, name, np.zeros(rows))
        for name in ("steps", "si_total", "ef_total", "last_si", "last_ef"):
            setattr(self, name, np.zeros(rows, dtype=np.int64))
        for name in ("ratio_time", "active_time", "last_alloc", "last_ratio", "d_m", "d_share", "d_fmax"):
            setattr(self, name, np.zeros((rows, n)))
        self.d_act = np.zeros((rows, n), dtype=bool)  # the active set the derived quantities are for
        self.d_ok = np.zeros(rows, dtype=bool)
        # the current window's sums of E, V and Δ (per position in the window's rows), and what divides them
        self._sel: Any = slice(0, 0)
        self._window_sums = np.zeros((3, 0))
        span = batch.window_s
        self._spans = np.array([[span * self.c_tot], [span * self.c_tot], [span]])
        self._no_self_envy = ~np.eye(n, dtype=bool)

    # --- episodes ----------------------------------------------------------------------------------------------
    def reset_row(self, r: int, users: list, rng: np.random.Generator, eta_target: float) -> None:
        """Start row ``r``'s episode: the simulator's reset, η_target and zero sums."""
        self.batch.reset_row(r, users, rng)
        self.eta_target[r] = eta_target
        for name in ("sum_e", "sum_v", "sum_delta", "sum_bound", "sum_speedup", "last_delta", "last_bound", "steps",
                     "si_total", "ef_total", "last_si", "last_ef", "ratio_time", "active_time", "last_alloc",
                     "last_ratio"):
            getattr(self, name)[r] = 0
        self.last_eta[r] = eta_target
        self.d_ok[r] = False

    def decision_active(self, sel: Any) -> np.ndarray:
        """The active slots at the decision point (nobody waits there)."""
        batch = self.batch
        return batch.present[sel] & (batch.queue[sel] > 0)

    def derive(self, sel: Any) -> None:
        """The derived quantities of the rows ``sel`` for their current decision (kept until their next window;
        floating-point warnings are the caller's to silence)."""
        if np.count_nonzero(self.d_ok[sel]) == selection(self.batch.rows, sel)[1]:
            return
        stale = selection(self.batch.rows, sel)[0]
        stale = stale[~self.d_ok[stale]]
        batch = self.batch
        act = self.decision_active(stale)
        (self.d_m[stale], self.d_share[stale], self.d_fmax[stale], self.d_total_w[stale], self.d_bound[stale],
         self.d_norm[stale]) = derived(batch.xi_hat[stale], batch.w[stale], act, self.eta_target[stale],
                                       *batch.capacities)
        self.d_act[stale] = act
        self.d_ok[stale] = True

    # --- one step ------------------------------------------------------------------------------------------------
    def step(self, sel: Any, rule: RowRule) -> np.ndarray:
        """Run one window of the rows ``sel`` (a slice, or ascending indices) under ``rule``; returns their reward
        parts ``(rows, 3)``: (E, -Δ / (W / min w), -V)."""
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            self.derive(sel)
            return self._step(sel, rule)

    def _step(self, sel: Any, rule: RowRule) -> np.ndarray:
        batch = self.batch
        act = self.d_act[sel].copy()
        planned = rule.plan(batch, sel, act)
        self.last_alloc[sel] = planned
        si, ef = self.diagnostics(sel, planned, act)
        bound = self.d_bound[sel].copy()  # 0 without users
        norm = self.d_norm[sel].copy()  # W / min w (1 without users): δ(0), so Δ/norm <= 1
        self._sel, self._window_sums = sel, np.zeros((3, act.shape[0]))
        self.last_ratio[sel] = 0.0  # the window's last segment sets it
        batch.window(sel, rule, measures=self, plan=(act, planned))
        e, v, delta = self._window_sums / self._spans
        self.steps[sel] += 1
        self.sum_e[sel] += e
        self.sum_v[sel] += v
        self.sum_delta[sel] += delta
        self.si_total[sel] += si
        self.ef_total[sel] += ef
        self.sum_bound[sel] += bound
        self.last_eta[sel] = rule.etas[0] if rule.etas.size == 1 else rule.etas[sel]
        self.last_delta[sel], self.last_bound[sel], self.last_si[sel], self.last_ef[sel] = delta, bound, si, ef
        self.d_ok[sel] = False  # xi_hat was measured: the next decision derives anew
        parts = np.empty((act.shape[0], 3))
        parts[:, 0] = e
        parts[:, 1] = 0.0 - delta / norm  # 0.0 - x: no -0.0 in the parts
        parts[:, 2] = 0.0 - v
        return parts

    def segment(self, positions: Any, dt: np.ndarray, active: np.ndarray, rates: np.ndarray) -> None:
        """The measures of one segment of the window (the batch calls it; ``rates`` are 0 off ``active``): time
        integrals of E, V and Δ, the per-user F/S time, and the last segment's F/S (``last_ratio``). A segment of
        zero length or without users adds exact zeros."""
        sel = self._sel if isinstance(positions, slice) else selection(self.batch.rows, self._sel)[0][positions]
        m, share, fmax, norm = self.d_m[sel], self.d_share[sel], self.d_fmax[sel], self.d_norm[sel]
        moved = (active != self.d_act[sel]).any(axis=1)  # an event changed the active set: derive for it
        if np.count_nonzero(moved):
            batch = self.batch
            at = selection(batch.rows, sel)[0][moved]
            d = derived(batch.xi_hat[at], batch.w[at], active[moved], self.eta_target[at], *batch.capacities)
            m, share, fmax, norm = m.copy(), share.copy(), fmax.copy(), norm.copy()
            m[moved], share[moved], fmax[moved], norm[moved] = d[0], d[1], d[2], d[5]
        ratios = rates / share  # 0 off the active slots (share > 0 there)
        self.last_ratio[sel] = ratios / norm[:, None]
        lanes = [(i, i) for i in np.flatnonzero(active.any(axis=0)).tolist()]  # the slots some row runs, in order
        e, v, speedup, spread, _ = segment_measures(
            lanes, dt, self.eta_target[sel], list(rates.T), list(np.where(active, share, math.nan).T),
            list(np.where(active, fmax, 0.0).T), list(m.T), np.fmax, np.fmin, np.zeros(dt.shape[0]))
        sums = self._window_sums[:, positions]
        sums[0] += e
        sums[1] += v
        sums[2] += np.where(spread > -math.inf, dt * spread, 0.0)  # -inf: no user in the segment
        self._window_sums[:, positions] = sums
        self.sum_speedup[sel] += speedup
        self.ratio_time[sel] += dt[:, None] * ratios
        self.active_time[sel] += dt[:, None] * active

    def diagnostics(self, sel: Any, planned: np.ndarray, act: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(SI violations, envious pairs) of ``planned`` over the active slots (Eqs. (1), (2), (19) in min-form;
        erratum E10): user a envies b if min_d (F_b xi_b^d) / xi_a^d > F_a (1 + 1e-9) + 1e-9 over the devices a
        uses (floating-point warnings are the caller's to silence)."""
        xi = self.batch.xi_hat[sel]
        si = np.count_nonzero(act & (planned < self.d_share[sel] * (1 - DIAGNOSTIC_RTOL)), axis=1)
        gpu_frac = 1 - xi
        via_cpu = np.where((xi > 0)[:, :, None], (planned * xi)[:, None, :] / xi[:, :, None], math.inf)
        via_gpu = np.where((xi < 1)[:, :, None], (planned * gpu_frac)[:, None, :] / gpu_frac[:, :, None], math.inf)
        envy = np.minimum(via_cpu, via_gpu) > (planned * (1 + DIAGNOSTIC_RTOL) + DIAGNOSTIC_RTOL)[:, :, None]
        envy &= act[:, :, None] & act[:, None, :]
        envy &= self._no_self_envy  # a never envies itself (F_a xi_a / xi_a = F_a up to an ulp)
        return si, np.count_nonzero(envy, axis=(1, 2))

    # --- observation and metrics -------------------------------------------------------------------------------
    def observe(self, sel: Any, out: np.ndarray) -> None:
        """The observations of the rows ``sel`` at their decision point into ``out`` (``(rows, 10 n + 7)``
        float32; GFLOPS over C_tot). Per slot: active, xi_hat, w/W, S/C_tot, F^max/C_tot, F^solo/C_tot, remaining
        fraction of the current job, jobs left (fraction), last F/C_tot, last (F/S)/(W/min w); present users without
        work keep xi_hat. Globals: η_target, δ(η_target)/(W/min w), last U_cpu, last U_gpu, C_cpu/C_tot,
        n_active/max_users, t/H."""
        batch, c_tot = self.batch, self.c_tot
        n = batch.max_users
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # inactive slots: masked below
            self.derive(sel)
            act = self.d_act[sel]
            xi_hat = batch.xi_hat[sel]
            values = np.empty((act.shape[0], n, SLOT_FEATURES))
            for j, feature in enumerate(identity_features(xi_hat, batch.w[sel], self.d_total_w[sel][:, None],
                                                          self.d_share[sel], self.d_fmax[sel], self.d_m[sel], c_tot)):
                values[:, :, j] = feature
            values[:, :, 6] = batch.remaining[sel] / batch.size[sel]
            values[:, :, 7] = batch.jobs_left(sel)
            values[:, :, 8] = self.last_alloc[sel] / c_tot
            values[:, :, 9] = self.last_ratio[sel]
            values = np.where(act[:, :, None], values, 0.0)
            values[:, :, 1] = np.where(batch.present[sel] & batch.occupied[sel], xi_hat, 0.0)  # idle users too
            progress = np.minimum(batch.windows[sel] / batch.horizon, 1.0)
            glob = out[:, n * SLOT_FEATURES:]
            for j, feature in enumerate(global_features(  # bound 0 and norm 1 without users
                    self.eta_target[sel], self.d_bound[sel], self.d_norm[sel], batch.util_cpu[sel], batch.util_gpu[sel],
                    batch.capacities[0], c_tot, np.count_nonzero(act, axis=1), n, progress)):
                glob[:, j] = feature
        out[:, :n * SLOT_FEATURES] = values.reshape(act.shape[0], n * SLOT_FEATURES)  # float32 as np.array rounds
        np.maximum(out, 0.0, out=out)
        np.minimum(out, 1.0, out=out)

    def metrics(self, r: int) -> dict[str, Any]:
        """The paper's metrics of row ``r``'s episode so far (docs/families/emrf.md §2 "Metrics")."""
        batch = self.batch
        makespan = None
        if batch.done_rows()[r]:
            makespan = max((f for f in batch.finished_at[r].tolist() if not math.isnan(f)), default=0.0)
        return episode_metrics(
            elapsed=batch.time[r].item(), capacities=batch.capacities, steps=self.steps[r].item(),
            sums=(self.sum_e[r].item(), self.sum_delta[r].item(), self.sum_bound[r].item(), self.sum_v[r].item(),
                  self.sum_speedup[r].item()),
            counts=(self.si_total[r].item(), self.ef_total[r].item()), ratio_time=self.ratio_time[r].tolist(),
            active_time=self.active_time[r].tolist(),
            gflop=(batch.total_gflop[r].item(), batch.cpu_gflop[r].item(), batch.gpu_gflop[r].item()),
            work_done=batch.work_done[r].tolist(), jobs_done=batch.jobs_done[r].tolist(),
            completion_times=batch.completion_times(r), eta_target=self.eta_target[r].item(), makespan=makespan)
