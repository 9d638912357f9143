"""A batched EMRF vector env: N instances of :class:`~joulegym.envs.emrf.env.EMRFEnv` behind one numpy interface.

``gym.make_vec("joulegym/EMRF-v0", num_envs=N, vectorization_mode="vector_entry_point", **kwargs)`` builds an
:class:`EMRFVectorEnv` (every EMRF id registers it as its Gymnasium ``vector_entry_point``; all four kinds). One
``step()`` takes a ``(N, ...)`` action array and returns ``(N, obs_dim)`` observations and ``(N,)`` rewards,
terminations and truncations. Instance by instance it gives the same observations, rewards, terminations,
truncations and ``info["metrics"]`` bits as N single envs (``gym.make``) under the same seeds:
``reset(seed=s)`` seeds instance ``i`` with ``s + i`` (as ``SyncVectorEnv`` does), and an ended instance is reset on
the next ``step()`` (Gymnasium's ``AutoresetMode.NEXT_STEP``, its default): its action is ignored, its reward is 0,
and it continues from its own random stream (``reset()`` without a seed).

How: an EMRF window is event-driven (completions, arrivals, phase switches split it into segments whose number
differs between instances). With ``weights`` actions (fluid, no measurement noise) and at least ``BATCH_FROM``
live instances, every *quiet* window (one segment: no completion, no arrival at an idle user, no phase switch
inside it; about 85 % of ``EMRF-v0``'s windows) runs as numpy arrays over the instances: the weights rule, the SI
and envy counts, the segment, the measurement, the reward parts and the observation's changed features. Each
float is computed with the scalar code's operations in the scalar code's order (elementwise numpy operations are
the IEEE operations Python's floats do; every sum is accumulated slot by slot from 0.0, as ``sum()`` over a list
does), and the results are written back into each instance's own state, so the instance stays a plain
:class:`EMRFEnv`. Every other window (an event inside it, a knob mode, Alg. 1's slices, noise, a user still to
arrive) runs through the single env's own code (:meth:`EMRFEnv._transition`, :meth:`EMRFEnv._observe`). The
step also runs with Python's cyclic garbage collector paused (:meth:`EMRFVectorEnv.step`). Measured
(``python benchmarks/bench_emrf.py --vector 1 16 256 --vector-ids ...``, random actions, CPU time, median of
3, no-op single env about 390,000 steps/s): ``EMRF-v0`` 13,100 / 15,100 / 12,600 aggregate steps/s at N = 1 / 16
/ 256; the knob modes 10,200 (``EMRFKnob``) and 8,900
(``EMRFKnobDiscrete``) at 256. Issue 14's 30,000 at N = 256 is not met (docs/families/emrf.md §11 says what
limits it).

Infos are lean and batched as ``SyncVectorEnv`` batches them: ``reward_parts`` (one array per part) and
``repaired``, each with its ``_key`` mask, and ``metrics`` for the instances whose episode ended
(``info_metrics="every_step"``: for every instance at every step). The per-step diagnostics (``allocation``,
``delivered``, ``scheduler_inputs``, ...) and rendering need the single env: use ``vectorization_mode="sync"``.
"""

from __future__ import annotations

import gc
from itertools import chain
from typing import Any, ClassVar

import numpy as np

from joulegym.core.rewards import weighted_sum
from joulegym.core.vector import BatchedVectorEnv, check_num_envs
from joulegym.envs.emrf.env import GLOBAL_FEATURES, SLOT_FEATURES, TINY_WEIGHT, EMRFEnv
from joulegym.envs.emrf.simulator import EPS_WORK, WindowResult

# observation features of an active slot that a quiet window changes (EMRFEnv._observe): xi_hat, w/W, S, F^max,
# F^solo (the decision's instance), remaining fraction, last F, last F/S; not "active" (0) and "jobs left" (7)
BATCH_FROM = 24  # live instances from which the batched windows beat the scalar path (measured, EMRF-v0 random
#                 actions: 0.5x at 8, 0.93x at 16, 1.19x at 32, 1.29x at 64, 1.20x at 256)
_CHANGING_SLOT_FEATURES = np.array([False, True, True, True, True, True, True, False, True, True])
assert len(_CHANGING_SLOT_FEATURES) == SLOT_FEATURES and GLOBAL_FEATURES == 7


def _padded_rows(derived, active: tuple[int, ...], n: int) -> tuple[list[float], ...]:
    """Per-slot copies (0 on other slots) of what the batch reads from a cached ``_Derived``: active flag, S,
    F^max, m and observation features 1-5; kept on it (its key includes the active set)."""
    act, share, fmax, m = [0.0] * n, [0.0] * n, [0.0] * n, [0.0] * n
    static = [0.0] * (5 * n)
    for k, i in enumerate(active):
        act[i], share[i], fmax[i], m[i] = 1.0, derived.share[k], derived.fmax[k], derived.m[k]
        static[5 * i:5 * i + 5] = derived.slot_static[k][1:6]
    derived.vector_rows = (act, share, fmax, m, static)
    return derived.vector_rows


class EMRFVectorEnv(BatchedVectorEnv):
    """N EMRF instances stepped as one batch; see the module docstring."""

    horizon_hint: ClassVar[str] = "horizon (windows)"

    def __init__(self, num_envs: int, **kwargs: Any) -> None:
        num_envs = check_num_envs(num_envs)
        kwargs = self.check_kwargs(kwargs)
        first = EMRFEnv(**kwargs)
        super().__init__(num_envs, first)
        self.envs = [first] + [EMRFEnv(**kwargs) for _ in range(num_envs - 1)]
        N = self.num_envs
        self._obs = np.zeros((N, *self.single_observation_space.shape), dtype=self.single_observation_space.dtype)
        self._fast = self._fast_path_possible()
        self.batch_from = BATCH_FROM
        self.batched_steps = 0  # instance-steps taken by the batched quiet-window path (the rest: scalar path)

    def step(self, actions: Any):
        """Step every instance (next-step autoreset), with Python's cyclic garbage collector paused.

        Why paused: at N = 256 the collector's passes over the N instances' long-lived objects (their caches) cost
        about a quarter of the step (measured: 8,300 -> 10,800 aggregate steps/s without the batched windows). A
        step creates no reference cycles (``tests/emrf/test_vector.py::test_step_creates_no_garbage_cycles``), so
        pausing delays no memory release; the collector's previous state is restored even when the step raises.
        """
        self._check_started()
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self._step(actions)
        finally:
            if collecting:
                gc.enable()

    def _step(self, actions: Any):
        N = self.num_envs
        batch = self._batch(actions)
        actions = list(batch)
        reward = np.zeros((N, len(self.reward_spec.names))) if self._vector_reward else np.zeros(N)
        terminated = np.zeros(N, dtype=bool)
        truncated = np.zeros(N, dtype=bool)
        parts_out = self._parts
        weights = self.reward_weights
        resetting = self._autoreset
        stepped: set[int] = set()
        candidates = np.flatnonzero(~resetting).tolist() if self._fast else []
        if len(candidates) >= self.batch_from and batch.dtype.kind == "f" and batch.ndim == 2:
            stepped = set(self._batched_windows(batch, candidates, parts_out, reward, truncated))
            self.batched_steps += len(stepped)
        for n, env in enumerate(self.envs):
            if n in stepped:
                continue
            if resetting[n]:
                self._reset_one(n, None, None)
                parts_out[n] = 0.0
                continue
            parts, terminated[n], truncated[n] = env._advance(actions[n])
            parts_out[n] = parts
            if self._vector_reward:
                reward[n] = parts
            else:
                reward[n] = weighted_sum(weights, parts)
            self._obs[n] = env._observe()
        ended = terminated | truncated
        live = ~resetting
        self._autoreset = ended
        return self._obs.copy(), reward, terminated, truncated, self._info(np.ones(N, dtype=bool), ended & live)

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs:
            env.close()

    # --- helpers ----------------------------------------------------------------------------------------------
    def _reset_one(self, n: int, seed: int | None, options: dict[str, Any] | None) -> None:
        self._obs[n], _ = self.envs[n].reset(seed=seed, options=options)

    def _batch_obs(self) -> np.ndarray:
        return self._obs.copy()

    def _batch(self, actions: Any) -> np.ndarray:
        """The actions as one array, a row per instance (each validated by its instance's action type, which
        names the space)."""
        N = self.num_envs
        try:
            batch = np.asarray(actions)
        except (TypeError, ValueError):
            batch = None
        if batch is None or batch.dtype == object or batch.ndim < 1 or batch.shape[0] != N:
            raise ValueError(f"actions must be an array in the batched action space {self.action_space} "
                             f"(one row per instance, {N} rows), got {actions!r}")
        return batch

    # --- the batched quiet window (module docstring, "How") -------------------------------------------------------
    def _fast_path_possible(self) -> bool:
        """Configs whose quiet windows the batch computes: fluid ``weights`` actions without measurement noise."""
        cfg = self.config
        return self.action_mode == "weights" and cfg["task_gflop"] is None and not cfg["xi_noise"] > 0

    def _batched_windows(self, batch: np.ndarray, candidates: list[int], parts_out: np.ndarray, reward: np.ndarray,
                         truncated: np.ndarray) -> list[int]:
        """Step the ``candidates`` whose window is quiet (one segment: no completion, arrival or phase switch inside
        it) as numpy arrays over instances; returns the instances it stepped (the others take the scalar path).

        Every float is computed with the scalar code's operations in its order: elementwise numpy ops are the
        IEEE operations Python's floats do, and every sum is accumulated slot by slot from 0.0 as ``sum()`` and
        ``+=`` do over a list (inactive slots add an exact 0.0), so each instance gets the single env's bits.
        """
        envs = self.envs
        n = envs[0].max_users
        idx: list[int] = []
        actives: list[tuple[int, ...]] = []
        derived = []
        rows = []
        sims = []
        for c in candidates:
            env = envs[c]
            sim = env.sim
            if sim._phased:
                continue
            active = env._active_slots()
            if not active:
                continue
            if sim._event_slots and not all(sim.present[s] for s in sim._event_slots):
                continue  # a user still to arrive: the scalar path handles its arrival
            d = env._derived(active)
            idx.append(c)
            actives.append(active)
            derived.append(d)
            rows.append(d.vector_rows or _padded_rows(d, active, n))
            sims.append(sim)
        if not idx:
            return []
        omega = batch[idx].astype(np.float64)
        valid = ((omega >= 0.0) & (omega <= 1.0)).all(axis=1)  # else the scalar path validates (and raises)
        # one pass over the instances' lists (np.fromiter over a chain: no intermediate Python objects)
        lists = []
        for r, sim, c in zip(rows, sims, idx):
            env = envs[c]
            lists += (r[0], r[1], r[2], r[3], sim.xi_hat, sim.xi, sim.remaining, sim.current_size, sim.next_arrival,
                      sim.queue, sim.work_done, env._ratio_time, env._active_time)
        per_slot = np.fromiter(chain.from_iterable(lists), np.float64, len(lists) * n).reshape(len(idx), 13, n)
        act = per_slot[:, 0] > 0.0
        (share, fmax, m, xi_hat, xi, remaining, size, next_arrival, queue, work_done, ratio_time,
         active_time) = (per_slot[:, k] for k in range(1, 13))
        now = np.array([s.time for s in sims])
        eta = np.array([envs[c].eta_target for c in idx])
        c_cpu, c_gpu = envs[0].capacities
        c_tot = envs[0].c_tot
        span = envs[0].sim.window_s
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # the weights rule (EMRFEnv._weights_rule with _normalised) on the start active set
            w = np.where(act, omega, 0.0)
            top = w.max(axis=1)
            w = np.where((top <= 0.0)[:, None], act * 1.0, w)
            tiny = (top > 0.0) & (top < TINY_WEIGHT)
            w = np.where(tiny[:, None], w / np.where(tiny, top, 1.0)[:, None], w)
            need_cpu = np.zeros(len(idx))
            need_gpu = np.zeros(len(idx))
            for j in range(n):
                need_cpu = need_cpu + w[:, j] * xi_hat[:, j]
                need_gpu = need_gpu + w[:, j] * (1.0 - xi_hat[:, j])
            load_cpu, load_gpu = need_cpu / c_cpu, need_gpu / c_gpu
            t = 1.0 / np.where(load_gpu > load_cpu, load_gpu, load_cpu)
            planned = np.where(act, w * t[:, None], 0.0)
            # diagnostics (EMRFEnv._diagnostics): SI violations and envious pairs (_envy_count), over active slots
            si = (act & (planned < share * (1 - 1e-9))).sum(axis=1)
            cpu_part = planned * xi_hat
            gpu_frac = 1 - xi_hat
            gpu_part = planned * gpu_frac
            via_cpu = np.where((xi_hat > 0)[:, :, None], cpu_part[:, None, :] / xi_hat[:, :, None], np.inf)
            via_gpu = np.where((xi_hat < 1)[:, :, None], gpu_part[:, None, :] / gpu_frac[:, :, None], np.inf)
            thr = planned * (1 + 1e-9) + 1e-9
            envy = np.minimum(via_cpu, via_gpu) > thr[:, :, None]
            envy &= act[:, :, None] & act[:, None, :]
            envy &= ~np.eye(n, dtype=bool)
            ef = envy.sum(axis=(1, 2))
            # the window's one segment (EMRFSimulator.window), planned with xi_hat, run with the true xi
            use_cpu = np.zeros(len(idx))
            use_gpu = np.zeros(len(idx))
            for j in range(n):
                use_cpu = use_cpu + planned[:, j] * xi[:, j]
                use_gpu = use_gpu + planned[:, j] * (1.0 - xi[:, j])
            scale = np.where(use_cpu > c_cpu * (1 + 1e-12), c_cpu / use_cpu, 1.0)
            gpu_scale = c_gpu / use_gpu
            scale = np.where((use_gpu > c_gpu * (1 + 1e-12)) & (gpu_scale < scale), gpu_scale, scale)
            rates = np.where(act, planned * scale[:, None], 0.0)
            end = now + span
            dt = end - now
            in_window = np.array([bool(s._event_slots) and not s.admit_at_window for s in sims])
            arrival_at = np.where(in_window, np.where(queue == 0, next_arrival, np.inf).min(axis=1), np.inf)
            quiet = valid & np.isfinite(t) & (dt > 0.0) & ~(arrival_at - now < dt)
            quiet &= ~(act & (rates > 0) & (remaining < rates * dt[:, None])).any(axis=1)
            done = rates * dt[:, None]
            remaining_after = np.where(act, remaining - done, remaining)
            quiet &= now + dt >= end - 1e-12  # the window ends after this segment
            quiet &= ~(act & (remaining_after <= EPS_WORK * size)).any(axis=1)  # no job completes
            work_done = np.where(act, work_done + done, work_done)
            work_window = done
            cpu_window = done * xi
            gpu_window = np.zeros(len(idx))
            cpu_total = np.zeros(len(idx))
            window_total = np.zeros(len(idx))
            rate_total = np.zeros(len(idx))
            floor_gap = np.zeros(len(idx))
            speedup = np.zeros(len(idx))
            last_rates = work_window / span
            delivered_total = np.zeros(len(idx))
            gap = eta[:, None] * fmax - rates
            gap = np.where(act & (gap > 0.0), gap, 0.0)
            rate_m = rates * m
            for j in range(n):
                gpu_window = gpu_window + done[:, j] * (1.0 - xi[:, j])
                cpu_total = cpu_total + cpu_window[:, j]
                window_total = window_total + work_window[:, j]
                rate_total = rate_total + rates[:, j]
                floor_gap = floor_gap + gap[:, j]
                speedup = speedup + rate_m[:, j]
                delivered_total = delivered_total + last_rates[:, j]
            util_cpu = cpu_total / (c_cpu * span)
            util_gpu = gpu_window / (c_gpu * span)
            estimate = cpu_window / work_window  # the measurement (EMRFSimulator._measure, no noise)
            estimate = np.where(0.0 > estimate, 0.0, estimate)
            estimate = np.where(1.0 < estimate, 1.0, estimate)
            new_xi_hat = np.where(work_window > 0, estimate, xi_hat)
            due = (next_arrival <= (end + 1e-12)[:, None]).any(axis=1)  # job arrivals queued at the window's end
            # EMRFEnv._window_measures
            ratios = np.where(act, rates / np.where(act, share, 1.0), 0.0)
            spread = np.where(act, ratios, -np.inf).max(axis=1) - np.where(act, ratios, np.inf).min(axis=1)
            norm = np.array([d.norm for d in derived])
            bound = np.array([d.bound for d in derived])
            last_ratio = np.where(act, ratios / norm[:, None], 0.0)
            e = dt * rate_total / (span * c_tot)
            v = dt * floor_gap / (span * c_tot)
            delta = dt * spread / span
            soft = 0.0 - delta / norm
            floor = 0.0 - v
            ratio_time = np.where(act, ratio_time + dt[:, None] * ratios, ratio_time)
            active_time = np.where(act, active_time + dt[:, None], active_time)
        stepped = np.flatnonzero(quiet)
        if stepped.size == 0:
            return []
        # back into the instances' own state (lists and floats, as the scalar path leaves it)
        cols = np.stack((remaining_after, work_done, work_window, cpu_window, new_xi_hat, last_rates, planned, rates,
                         last_ratio, ratio_time, active_time), axis=1)[stepped].tolist()
        scal = np.stack((end, util_cpu, util_gpu, window_total, cpu_total, gpu_window, e, v, soft, floor, delta, dt,
                         speedup, delivered_total, si, ef, bound), axis=1)[stepped].tolist()
        horizon = envs[0].horizon
        vector_reward, weights = self._vector_reward, self.reward_weights
        observed: list[int] = []  # unchanged active set: the observation is batched below
        observed_rows = []
        next_bound = np.zeros(len(idx))  # δ(η_target) / (W / min w) of the next decision
        for j, slot_values, values in zip(stepped.tolist(), cols, scal):
            c = idx[j]
            env, sim = envs[c], sims[j]
            (rem_j, wd_j, ww_j, cw_j, xh_j, lr_j, plan_j, rate_j, lratio_j, rt_j, at_j) = slot_values
            (end_j, uc_j, ug_j, wt_j, ct_j, gw_j, e_j, v_j, soft_j, floor_j, delta_j, dt_j, sp_j, dl_j, si_j, ef_j,
             bound_j) = values
            si_j, ef_j = int(si_j), int(ef_j)
            # EMRFSimulator.window's effects
            sim.remaining, sim.work_done, sim.work_window, sim.cpu_ops_window = rem_j, wd_j, ww_j, cw_j
            sim.xi_hat, sim.last_rates = xh_j, lr_j
            sim.time = end_j
            sim.windows += 1
            sim.total_gflop += wt_j
            sim.cpu_gflop += ct_j
            sim.gpu_gflop += gw_j
            sim.last_utilisation = (uc_j, ug_j)
            sim.last_window = WindowResult(segments=[(dt_j, actives[j], rate_j)])
            if due[j]:
                sim._admit()  # Poisson jobs queued at the window's end (may start a departed user's job)
            # EMRFEnv._window_measures' and _transition's effects
            env._sum_speedup += dt_j * sp_j
            env._ratio_time, env._active_time, env._last_ratio = rt_j, at_j, lratio_j
            env._last_util = sim.last_utilisation
            env._record_window(e_j, v_j, delta_j, si_j, ef_j, bound_j, plan_j, dl_j, float(env.eta_target))
            env._last_arrivals = (0, 0, 0)
            parts = (e_j, soft_j, floor_j)
            env.last_reward_parts = parts
            trunc = sim.windows >= horizon  # not terminated: a user still has work (it was active all window)
            env._episode_over = trunc
            truncated[c] = trunc
            parts_out[c] = parts
            reward[c] = parts if vector_reward else weighted_sum(weights, parts)
            if due[j]:
                self._obs[c] = env._observe()
            else:
                active = actives[j]
                d = env._derived(active)
                observed.append(j)
                observed_rows.append((d.vector_rows or _padded_rows(d, active, n))[4])
                next_bound[j] = d.bound / d.norm
        if observed:
            # EMRFEnv._observe for an unchanged active set: features 1-6, 8, 9 of the active slots and globals 1-3, 6
            # change; the rest (activity, jobs left, idle users' xi_hat, η, C_cpu share, n_active) stays as it was
            rows_at = np.array(observed)
            at = np.array([idx[j] for j in observed])
            obs = self._obs[at]
            slots = obs[:, :n * SLOT_FEATURES].reshape(len(observed), n, SLOT_FEATURES)
            values = np.zeros(slots.shape)
            values[:, :, 1:6] = np.array(observed_rows).reshape(len(observed), n, 5)
            with np.errstate(divide="ignore", invalid="ignore"):
                values[:, :, 6] = remaining_after[rows_at] / size[rows_at]
            values[:, :, 8] = planned[rows_at] / c_tot
            values[:, :, 9] = last_ratio[rows_at]
            new = values.astype(np.float32)
            np.maximum(new, 0.0, out=new)
            np.minimum(new, 1.0, out=new)
            slots[...] = np.where(act[rows_at][:, :, None] & _CHANGING_SLOT_FEATURES, new, slots)
            g = n * SLOT_FEATURES
            windows = np.array([sims[j].windows for j in observed]) / horizon
            glob = np.stack([next_bound[rows_at], util_cpu[rows_at], util_gpu[rows_at],
                             np.where(1.0 < windows, 1.0, windows)], axis=1).astype(np.float32)
            np.maximum(glob, 0.0, out=glob)
            np.minimum(glob, 1.0, out=glob)
            obs[:, [g + 1, g + 2, g + 3, g + 6]] = glob
            self._obs[at] = obs
        return [idx[j] for j in stepped.tolist()]

    def metrics(self, n: int) -> dict[str, Any]:
        """The paper's metrics of instance ``n``'s episode so far (the single env's ``metrics()``)."""
        return self.envs[n].metrics()
