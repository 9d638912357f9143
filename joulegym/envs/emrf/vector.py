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
inside it; about 88 % of ``EMRF-v0``'s windows with random actions, windows in which nobody has work included)
runs as numpy arrays over the instances: the derived quantities of the decision (S, F^max, m, δ(η), W / min w;
``_derived``), the weights rule, the SI and envy counts, the segment, the measurement, the reward parts and the
observation. Each float is computed with the scalar code's operations in the scalar code's order (elementwise
numpy operations are the IEEE operations Python's floats do; every sum is accumulated slot by slot from 0.0 with
``np.add.accumulate``, as ``sum()`` and ``+=`` over a list do).

The state of such an instance lives in ``(N, slots)`` and ``(N,)`` arrays (:class:`_Resident`) while its windows
stay quiet: it is copied in once (``_load``, at a decision point) and written back into the instance's own lists
and floats only when the instance leaves the arrays (``_flush``): an event in its window (the scalar path then runs
that window with the single env's own code, :meth:`EMRFEnv._transition`), a job arriving at an idle user at the
window's end, the episode's end (for ``metrics``), ``metrics(n)`` or :meth:`EMRFVectorEnv.sync`. Jobs that arrive
at busy users at the window's end are queued by the instance's own simulator (its random streams) without leaving.
After the scalar path ran a window, the instance is loaded again and observed from the arrays with the others.
An instance leaving for the scalar path with a valid action takes along the decision's SI and envy counts the
batch computed (``_seed_diagnostics``). Knob modes, Alg. 1's slices, noise, ξ phases and users still to arrive
take the scalar path throughout. Between write-backs ``self.envs[i]`` is stale: call ``sync()`` before reading it.
The step also runs with Python's cyclic garbage collector paused (:meth:`EMRFVectorEnv.step`).

Measured (2-core machine shared with 8 other jobs, load average 8-11, CPU time, random actions): ``EMRF-v0`` at
N = 256 about 32,700-35,700 aggregate steps/s with ``python benchmarks/bench_emrf.py --vector 256`` and
27,100-33,200 in ``benchmarks/harness.py``'s protocol, against 10,700-11,200 for the code before in alternating
runs under the same load (docs/families/emrf.md §11 has the table and what is left).

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
from joulegym.core.vector import BatchedVectorEnv, check_num_envs, validated_batch
from joulegym.envs.emrf.allocation import RESIDUAL_ZERO_RTOL
from joulegym.envs.emrf.env import GLOBAL_FEATURES, SLOT_FEATURES, TINY_WEIGHT, EMRFEnv
from joulegym.envs.emrf.simulator import EPS_WORK, QUEUE_NORM, WindowResult

BATCH_FROM = 16  # live instances from which the batched windows beat the scalar path (measured, EMRF-v0 random
#                 actions, same process, median of 5: 0.69x at 8, 1.10x at 16, 1.75x at 32)
HISTORY_ROWS = 64  # batched windows buffered before their history rows go to the instances' own lists
assert SLOT_FEATURES == 10 and GLOBAL_FEATURES == 7  # the layout _observe_full builds (EMRFEnv._observe)

# the resident state (module docstring, "How"): per-slot (N, n) float arrays, per-instance (N,) floats and ints
_SLOT_LOADED = ("remaining", "work_done", "xi_hat", "xi", "size", "next_arrival", "queue", "ratio_time",
                "active_time", "weight", "planned", "last_ratio", "present", "jobs_total", "backlogged",
                "open_loop")  # read from the instance at load, in this order
_SLOT_WINDOW = ("work_window", "cpu_window", "last_rates", "seg_rates")  # set by a window
_FLOAT_LOADED = ("time", "total_gflop", "cpu_gflop", "gpu_gflop", "sum_speedup", "sum_e", "sum_v", "sum_delta",
                 "sum_bound", "eta", "util_cpu", "util_gpu")
_FLOAT_WINDOW = ("last_delta", "last_bound", "seg_dt")
assert _FLOAT_LOADED[-3:] == ("eta", "util_cpu", "util_gpu") and len(_FLOAT_WINDOW) == 3  # _flush unpacks them
_INT_LOADED = ("windows", "steps", "si_total", "ef_total")
_INT_WINDOW = ("last_si", "last_ef", "fresh")


class _Resident:
    """Array state of the instances whose quiet windows run batched; authoritative while ``res[c]`` is set."""

    def __init__(self, num_envs: int, n: int) -> None:
        for name in _SLOT_LOADED + _SLOT_WINDOW:
            setattr(self, name, np.zeros((num_envs, n)))
        for name in _FLOAT_LOADED + _FLOAT_WINDOW:
            setattr(self, name, np.zeros(num_envs))
        for name in _INT_LOADED + _INT_WINDOW:
            setattr(self, name, np.zeros(num_envs, dtype=np.int64))
        self.act = np.zeros((num_envs, n), dtype=bool)
        # _derived's numbers for the current decision of each row (valid where derived_ok)
        self.d_m, self.d_share, self.d_fmax = (np.zeros((num_envs, n)) for _ in range(3))
        self.d_total_w, self.d_bound, self.d_norm = (np.zeros(num_envs) for _ in range(3))
        self.derived_ok = np.zeros(num_envs, dtype=bool)
        self.in_window = np.zeros(num_envs, dtype=bool)
        self.res = np.zeros(num_envs, dtype=bool)
        self.actives: list[tuple[int, ...]] = [()] * num_envs
        # history rows (sim.time, U_cpu, U_gpu, delivered) of the batched windows, handed over in blocks
        self.history = np.zeros((HISTORY_ROWS, num_envs, 4))
        self.history_at = 0
        self.history_from = np.zeros(num_envs, dtype=np.int64)


def _sums(*terms: np.ndarray) -> np.ndarray:
    """Row sums of each ``(rows, n)`` term accumulated slot by slot from 0.0, as Python's ``sum()`` and ``+=`` over a
    list do (``np.add.accumulate`` is sequential; ``np.sum`` is pairwise and may round differently). Slots left out
    of a sum must hold 0.0 (adding +0.0 is exact); the final ``+ 0.0`` turns a -0.0 total into Python's 0.0."""
    return np.add.accumulate(np.stack(terms), axis=-1)[..., -1] + 0.0


def _derived(xi_hat: np.ndarray, weight: np.ndarray, act: np.ndarray, eta: np.ndarray, c_cpu: float,
             c_gpu: float) -> tuple[np.ndarray, ...]:
    """``_Derived``'s numbers for every row at once: ``(m, S, F^max, W, δ(η), W / min w)`` (allocation.basics,
    residual_core, delta_bound_from_residual), with the scalar code's operations in its order over the active
    slots (garbage elsewhere: callers mask with ``act``)."""
    m = np.maximum(xi_hat / c_cpu, (1.0 - xi_hat) / c_gpu)
    cpu_term = weight * (xi_hat / c_cpu) / m
    gpu_term = weight * ((1.0 - xi_hat) / c_gpu) / m
    total_w, d_cpu, d_gpu = _sums(np.where(act, weight, 0.0), np.where(act, cpu_term, 0.0),
                                  np.where(act, gpu_term, 0.0))
    share = weight / (total_w[:, None] * m)
    d = np.where(d_gpu > d_cpu, d_gpu, d_cpu)
    fmax = weight / (d[:, None] * m)
    used_cpu, used_gpu = _sums(np.where(act, fmax * xi_hat, 0.0), np.where(act, fmax * (1.0 - xi_hat), 0.0))
    res_cpu = c_cpu - eta * used_cpu
    res_gpu = c_gpu - eta * used_gpu
    res_cpu = np.where(res_cpu <= RESIDUAL_ZERO_RTOL * c_cpu, 0.0, res_cpu)
    res_gpu = np.where(res_gpu <= RESIDUAL_ZERO_RTOL * c_gpu, 0.0, res_gpu)
    via_cpu = np.where(xi_hat > 0, res_cpu[:, None] / xi_hat, np.inf)
    via_gpu = np.where(xi_hat < 1, res_gpu[:, None] / (1.0 - xi_hat), np.inf)
    lim = np.where(via_gpu < via_cpu, via_gpu, via_cpu)
    value = (total_w[:, None] / weight) * m * lim
    bound = np.where(act, value, 0.0).max(axis=1)  # best = 0.0, raised by every larger value
    norm = total_w / np.where(act, weight, np.inf).min(axis=1)
    return m, share, fmax, total_w, bound, norm


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
        self._state = _Resident(N, first.max_users)
        self.batch_from = BATCH_FROM
        self.batched_steps = 0  # instance-steps taken by the batched quiet-window path (the rest: scalar path)
        # of those: windows without users with work, with Poisson jobs queued at their end, and windows after which
        # the instance left the arrays (a job started at its end, or the episode ended)
        self.batched_paths = {"idle": 0, "queued": 0, "left": 0}

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
        batch = validated_batch(actions, self.single_action_space, N, self._autoreset)  # every row, before any steps
        actions = list(batch)
        reward = np.zeros((N, len(self.reward_spec.names))) if self._vector_reward else np.zeros(N)
        terminated = np.zeros(N, dtype=bool)
        truncated = np.zeros(N, dtype=bool)
        parts_out = self._parts
        weights = self.reward_weights
        resetting = self._autoreset
        live = ~resetting
        stepped = np.zeros(N, dtype=bool)
        batching = (self._fast and batch.dtype.kind == "f" and batch.ndim == 2
                    and np.count_nonzero(live) >= self.batch_from)
        if batching:
            stepped = self._batched_windows(batch, live, parts_out, reward, truncated)
            self.batched_steps += int(np.count_nonzero(stepped))
        else:
            self.sync()
        envs = self.envs
        loading = []  # instances the scalar path stepped, observed from the arrays (and resident from now on)
        for n in np.flatnonzero(~stepped).tolist():
            env = envs[n]
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
            if batching and not env._episode_over and self._eligible(n):
                loading.append(n)
            else:
                self._obs[n] = env._observe()
        if loading:
            self._load(loading)
            stepped[loading] = True
        if stepped.any():  # the batched windows' and the loaded instances' observations, from the arrays
            self._observe_full(np.flatnonzero(stepped))
        ended = terminated | truncated
        self._autoreset = ended
        return self._obs.copy(), reward, terminated, truncated, self._info(np.ones(N, dtype=bool), ended & live)

    def sync(self) -> None:
        """Write the resident array state back into every instance (``self.envs[i]`` is then up to date)."""
        self._flush(np.flatnonzero(self._state.res).tolist())

    def close_extras(self, **kwargs: Any) -> None:
        self.sync()
        for env in self.envs:
            env.close()

    # --- helpers ----------------------------------------------------------------------------------------------
    def _reset_one(self, n: int, seed: int | None, options: dict[str, Any] | None) -> None:
        self._state.res[n] = False  # the reset replaces the whole state: nothing to write back
        self._obs[n], _ = self.envs[n].reset(seed=seed, options=options)

    def _batch_obs(self) -> np.ndarray:
        return self._obs.copy()

    def metrics(self, n: int) -> dict[str, Any]:
        """The paper's metrics of instance ``n``'s episode so far (the single env's ``metrics()``)."""
        if self._state.res[n]:
            self._flush([n])
        return self.envs[n].metrics()

    # --- the resident state (module docstring, "How") ------------------------------------------------------------
    def _fast_path_possible(self) -> bool:
        """Configs whose quiet windows the batch computes: fluid ``weights`` actions without measurement noise."""
        cfg = self.config
        return self.action_mode == "weights" and cfg["task_gflop"] is None and not cfg["xi_noise"] > 0

    def _load(self, cs: list[int]) -> None:
        """Copy the state of instances ``cs`` (each at a decision point) into the arrays; they become resident."""
        if not cs:
            return
        st, envs = self._state, self.envs
        n = envs[0].max_users
        lists = []
        for c in cs:
            env = envs[c]
            sim = env.sim
            lists += (sim.remaining, sim.work_done, sim.xi_hat, sim.xi, sim.current_size, sim.next_arrival, sim.queue,
                      env._ratio_time, env._active_time, sim.weight, env._last_alloc, env._last_ratio, sim.present,
                      sim.jobs_total, sim.backlogged, sim._open_loop)
        per_slot = np.fromiter(chain.from_iterable(lists), np.float64, len(lists) * n).reshape(
            len(cs), len(_SLOT_LOADED), n)
        for k, name in enumerate(_SLOT_LOADED):
            getattr(st, name)[cs] = per_slot[:, k]
        st.weight[cs] /= np.array([envs[c]._weight_unit for c in cs])[:, None]  # EMRFEnv._instance's weights
        floats = np.array([(env.sim.time, env.sim.total_gflop, env.sim.cpu_gflop, env.sim.gpu_gflop, env._sum_speedup,
                            env._sum_e, env._sum_v, env._sum_delta, env._sum_delta_bound, env.eta_target,
                            *env._last_util) for env in (envs[c] for c in cs)], dtype=np.float64)
        for k, name in enumerate(_FLOAT_LOADED):
            getattr(st, name)[cs] = floats[:, k]
        ints = np.array([(env.sim.windows, env._steps, env._si_total, env._ef_total) for env in (envs[c] for c in cs)],
                        dtype=np.int64)
        for k, name in enumerate(_INT_LOADED):
            getattr(st, name)[cs] = ints[:, k]
        act = np.zeros((len(cs), n), dtype=bool)
        rows, slots = [], []
        for row, c in enumerate(cs):
            active = st.actives[c] = envs[c]._active_slots()
            rows += [row] * len(active)
            slots += active
        act[rows, slots] = True
        st.act[cs] = act
        st.in_window[cs] = [bool(envs[c].sim._event_slots) and not envs[c].sim.admit_at_window for c in cs]
        st.fresh[cs] = 0
        st.derived_ok[cs] = False
        st.history_from[cs] = st.history_at
        st.res[cs] = True

    def _flush(self, cs: list[int]) -> None:
        """Write the arrays of resident instances ``cs`` back into their own state (lists and floats, as the scalar
        path leaves it after the last batched window) and end their residency."""
        st, envs = self._state, self.envs
        if not cs:
            return
        st.res[cs] = False
        cs = [c for c in cs if st.fresh[c] > 0]  # no batched window since the load: the instance is as it was
        if not cs:
            return
        slots = [getattr(st, name)[cs].tolist() for name in ("remaining", "work_done", "work_window", "cpu_window",
                                                             "xi_hat", "last_rates", "planned", "seg_rates",
                                                             "last_ratio", "ratio_time", "active_time")]
        floats = np.stack([getattr(st, name)[cs] for name in _FLOAT_LOADED + _FLOAT_WINDOW], axis=1).tolist()
        ints = np.stack([getattr(st, name)[cs] for name in _INT_LOADED + _INT_WINDOW], axis=1).tolist()
        parts = self._parts[cs].tolist()
        history = st.history[:st.history_at]
        rows = zip(cs, zip(*slots), floats, ints, parts, st.history_from[cs].tolist())
        for c, slot_values, float_values, int_values, parts_c, history_from in rows:
            env = envs[c]
            sim = env.sim
            (sim.remaining, sim.work_done, sim.work_window, sim.cpu_ops_window, sim.xi_hat, sim.last_rates, planned,
             seg_rates, env._last_ratio, env._ratio_time, env._active_time) = slot_values
            (sim.time, sim.total_gflop, sim.cpu_gflop, sim.gpu_gflop, env._sum_speedup, env._sum_e, env._sum_v,
             env._sum_delta, env._sum_delta_bound, _, util_cpu, util_gpu, last_delta, last_bound, seg_dt) = float_values
            sim.windows, env._steps, env._si_total, env._ef_total, si, ef, _ = int_values
            sim.last_utilisation = env._last_util = (util_cpu, util_gpu)
            sim.last_window = WindowResult(segments=[(seg_dt, st.actives[c], seg_rates)])
            env._new_view()
            env._last_alloc = planned
            env._history.extend(map(tuple, history[history_from:, c].tolist()))
            env._last_eta, env._last_delta, env._last_bound, env._last_diag = (float(env.eta_target), last_delta,
                                                                               last_bound, (si, ef))
            env._last_arrivals = (0, 0, 0)
            env.last_reward_parts = tuple(parts_c)
            env._episode_over = sim.windows >= env.horizon  # not terminated: a user still has work

    def _flush_history(self) -> None:
        """The history buffer is full: hand its rows to the resident instances' own lists."""
        st = self._state
        rows = st.history.transpose(1, 0, 2)
        for c in np.flatnonzero(st.res).tolist():
            if st.fresh[c] > 0:
                self.envs[c]._history.extend(map(tuple, rows[c, st.history_from[c]:].tolist()))
        st.history_at = 0
        st.history_from[:] = 0

    def _eligible(self, c: int) -> bool:
        """Whether instance ``c``'s windows can be batched while nothing happens in them: no user still to arrive,
        no ξ phases (a window without users with work is batched too: it only moves the time on)."""
        env = self.envs[c]
        sim = env.sim
        if sim._phased:
            return False
        return not sim._event_slots or all(sim.present[s] for s in sim._event_slots)

    # --- the batched quiet window (module docstring, "How") -------------------------------------------------------
    def _batched_windows(self, batch: np.ndarray, live: np.ndarray, parts_out: np.ndarray, reward: np.ndarray,
                         truncated: np.ndarray) -> np.ndarray:
        """Step the resident instances whose window is quiet (one segment: no completion, arrival or phase switch
        inside it) as numpy arrays over all rows; returns the mask of the instances it stepped (the others take the
        scalar path, their state written back first).

        Every float is computed with the scalar code's operations in its order: elementwise numpy ops are the
        IEEE operations Python's floats do, and every sum is accumulated slot by slot from 0.0 as ``sum()`` and
        ``+=`` do over a list (inactive slots add an exact 0.0 or are skipped), so each instance gets the single
        env's bits.
        """
        st, envs = self._state, self.envs
        loading = [c for c in np.flatnonzero(live & ~st.res).tolist() if self._eligible(c)]
        if loading:
            self._load(loading)
        res = st.res & live  # (an instance that ended leaves the arrays when its metrics are read; never stepped)
        if not res.any():
            return res
        n = envs[0].max_users
        act = st.act
        xi_hat, xi, remaining, size = st.xi_hat, st.xi, st.remaining, st.size
        now, eta = st.time, st.eta
        c_cpu, c_gpu = envs[0].capacities
        c_tot = envs[0].c_tot
        span = envs[0].sim.window_s
        rows = len(res)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            omega = batch.astype(np.float64)
            valid = ((omega >= 0.0) & (omega <= 1.0)).all(axis=1)  # else the scalar path validates (and raises)
            stale = np.flatnonzero(res & ~st.derived_ok)
            if stale.size:
                self._derive(stale)
            m, share, fmax, bound, norm = st.d_m, st.d_share, st.d_fmax, st.d_bound, st.d_norm
            # the weights rule (EMRFEnv._weights_rule with _normalised) on the start active set
            w = np.where(act, omega, 0.0)
            top = w.max(axis=1)
            w = np.where((top <= 0.0)[:, None], act * 1.0, w)
            tiny = (top > 0.0) & (top < TINY_WEIGHT)
            w = np.where(tiny[:, None], w / np.where(tiny, top, 1.0)[:, None], w)
            need_cpu, need_gpu = _sums(w * xi_hat, w * (1.0 - xi_hat))  # w is 0.0 on inactive slots
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
            use_cpu, use_gpu = _sums(planned * xi, planned * (1.0 - xi))
            scale = np.where(use_cpu > c_cpu * (1 + 1e-12), c_cpu / use_cpu, 1.0)
            gpu_scale = c_gpu / use_gpu
            scale = np.where((use_gpu > c_gpu * (1 + 1e-12)) & (gpu_scale < scale), gpu_scale, scale)
            rates = np.where(act, planned * scale[:, None], 0.0)
            end = now + span
            dt = end - now
            arrival_at = np.where(st.in_window, np.where(st.queue == 0, st.next_arrival, np.inf).min(axis=1), np.inf)
            idle = ~act.any(axis=1)  # nobody has work: the window only moves the time on
            norm = np.where(idle, 1.0, norm)  # EMRFEnv._transition's W / min w of an empty active set
            quiet = res & valid & (np.isfinite(t) | idle) & (dt > 0.0) & ~(arrival_at - now < dt)
            quiet &= ~(act & (rates > 0) & (remaining < rates * dt[:, None])).any(axis=1)
            done = rates * dt[:, None]
            remaining_after = np.where(act, remaining - done, remaining)
            quiet &= now + dt >= end - 1e-12  # the window ends after this segment
            quiet &= ~(act & (remaining_after <= EPS_WORK * size)).any(axis=1)  # no job completes
            work_done = np.where(act, st.work_done + done, st.work_done)
            work_window = done
            cpu_window = done * xi
            last_rates = work_window / span
            gap = eta[:, None] * fmax - rates
            gap = np.where(act & (gap > 0.0), gap, 0.0)
            rate_m = np.where(act, rates * m, 0.0)
            (gpu_window, cpu_total, window_total, rate_total, floor_gap, speedup,
             delivered_total) = _sums(done * (1.0 - xi), cpu_window, work_window, rates, gap, rate_m, last_rates)
            util_cpu = cpu_total / (c_cpu * span)
            util_gpu = gpu_window / (c_gpu * span)
            estimate = cpu_window / work_window  # the measurement (EMRFSimulator._measure, no noise)
            estimate = np.where(0.0 > estimate, 0.0, estimate)
            estimate = np.where(1.0 < estimate, 1.0, estimate)
            new_xi_hat = np.where(work_window > 0, estimate, xi_hat)
            due = (st.next_arrival <= (end + 1e-12)[:, None]).any(axis=1)  # job arrivals queued at the window's end
            # EMRFEnv._window_measures
            ratios = np.where(act, rates / np.where(act, share, 1.0), 0.0)
            spread = np.where(act, ratios, -np.inf).max(axis=1) - np.where(act, ratios, np.inf).min(axis=1)
            spread = np.where(idle, 0.0, spread)
            last_ratio = np.where(act, ratios / norm[:, None], 0.0)
            e = dt * rate_total / (span * c_tot)
            v = dt * floor_gap / (span * c_tot)
            delta = dt * spread / span
            soft = 0.0 - delta / norm
            floor = 0.0 - v
            ratio_time = np.where(act, st.ratio_time + dt[:, None] * ratios, st.ratio_time)
            active_time = np.where(act, st.active_time + dt[:, None], st.active_time)
        dropped = res & ~quiet
        if dropped.any():  # an event inside the window: the scalar path runs it from the last written state
            gone = np.flatnonzero(dropped).tolist()
            self._flush(gone)
            self._seed_diagnostics([c for c in gone if valid[c] and st.actives[c]], planned, si, ef)
        if not quiet.any():
            return quiet
        # commit the quiet windows (the state of the instances the scalar path left behind stays as it was)
        q2 = quiet[:, None]
        for name, value in (("remaining", remaining_after), ("work_done", work_done), ("work_window", work_window),
                            ("cpu_window", cpu_window), ("xi_hat", new_xi_hat), ("last_rates", last_rates),
                            ("planned", planned), ("seg_rates", rates), ("last_ratio", last_ratio),
                            ("ratio_time", ratio_time), ("active_time", active_time)):
            np.copyto(getattr(st, name), value, where=q2)
        windows = st.windows + 1
        for name, value in (("time", end), ("total_gflop", st.total_gflop + window_total),
                            ("cpu_gflop", st.cpu_gflop + cpu_total), ("gpu_gflop", st.gpu_gflop + gpu_window),
                            ("sum_speedup", st.sum_speedup + dt * speedup), ("sum_e", st.sum_e + e),
                            ("sum_v", st.sum_v + v), ("sum_delta", st.sum_delta + delta),
                            ("sum_bound", st.sum_bound + bound), ("util_cpu", util_cpu), ("util_gpu", util_gpu),
                            ("last_delta", delta), ("last_bound", bound), ("seg_dt", dt), ("windows", windows),
                            ("steps", st.steps + 1), ("si_total", st.si_total + si), ("ef_total", st.ef_total + ef),
                            ("last_si", si), ("last_ef", ef), ("fresh", st.fresh + 1)):
            np.copyto(getattr(st, name), value, where=quiet)
        st.history[st.history_at] = np.stack((end, util_cpu, util_gpu, delivered_total), axis=1)
        st.history_at += 1
        parts = np.stack((e, soft, floor), axis=1)
        parts_out[quiet] = parts[quiet]
        if self._vector_reward:
            reward[quiet] = parts[quiet]
        else:
            total = np.zeros(rows)
            for weight, part in zip(self.reward_weights, (e, soft, floor)):
                if weight:
                    total = total + (part if weight == 1.0 else weight * part)
            reward[quiet] = total[quiet]
        horizon = envs[0].horizon
        ended = quiet & (windows >= horizon)  # truncated; not terminated: a user still has work
        truncated[quiet] = ended[quiet]
        # Poisson jobs arriving by the window's end (EMRFSimulator._admit): at a busy queue they are only queued (the
        # instance stays resident); at an empty one they start a job, which changes the active set (it leaves)
        arriving = st.next_arrival <= (end + 1e-12)[:, None]
        starting = quiet & (arriving & (st.queue == 0)).any(axis=1)
        queued = quiet & due & ~starting
        st.derived_ok[quiet] = False  # xi_hat was measured: _observe_full derives the next decision's numbers
        if queued.any():
            self._queue_arrivals(np.flatnonzero(queued).tolist())
        leaving = np.flatnonzero(starting | ended).tolist()
        paths = self.batched_paths
        paths["idle"] += int(np.count_nonzero(quiet & idle))
        paths["queued"] += int(np.count_nonzero(queued))
        paths["left"] += len(leaving)
        if leaving:  # (the arrays keep their values: the step's observation is still built from them)
            self._flush(leaving)
            started = np.flatnonzero(starting).tolist()
            for c in started:
                envs[c].sim._admit()
            self._load(started)  # back at a decision point, with a new active set: resident again
        if st.history_at == HISTORY_ROWS:
            self._flush_history()
        return quiet

    def _seed_diagnostics(self, cs: list[int], planned: np.ndarray, si: np.ndarray, ef: np.ndarray) -> None:
        """Instances ``cs`` leave for the scalar path with a valid action: their decision's SI and envy counts, just
        computed here for the same planned allocation (the same bits), go into the per-allocation cache that
        :meth:`EMRFEnv._diagnostics` reads first, so the scalar window does not count the envious pairs again."""
        envs, actives = self.envs, self._state.actives
        for c, alloc, si_c, ef_c in zip(cs, planned[cs].tolist(), si[cs].tolist(), ef[cs].tolist()):
            active = actives[c]
            envs[c]._derived(active).diag.put(tuple(alloc[i] for i in active), (si_c, ef_c))

    def _queue_arrivals(self, cs: list[int]) -> None:
        """Resident instances ``cs`` whose Poisson jobs arriving by the window's end all meet busy queues: the
        simulator queues them (its own lists and streams; of what the arrays hold only ``queue``, ``jobs_total`` and
        ``next_arrival`` change, re-read here)."""
        st, envs = self._state, self.envs
        times = st.time[cs].tolist()
        for c, time in zip(cs, times):
            sim = envs[c].sim
            sim.time = time  # what _admit reads (the array value is the instance's own; written back later too)
            sim._admit()
            st.queue[c] = sim.queue
            st.jobs_total[c] = sim.jobs_total
            st.next_arrival[c] = sim.next_arrival

    def _derive(self, at: np.ndarray | list[int]) -> None:
        """``_derived``'s numbers of rows ``at`` for their current decision, kept until their next window."""
        st = self._state
        c_cpu, c_gpu = self.envs[0].capacities
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            (st.d_m[at], st.d_share[at], st.d_fmax[at], st.d_total_w[at], st.d_bound[at],
             st.d_norm[at]) = _derived(st.xi_hat[at], st.weight[at], st.act[at], st.eta[at], c_cpu, c_gpu)
        st.derived_ok[at] = True

    def _observe_full(self, at: np.ndarray) -> None:
        """EMRFEnv._observe from the arrays for rows ``at``, each at a decision point (after its window, or loaded
        after the scalar path ran it): every feature, with the scalar code's operations."""
        st, envs = self._state, self.envs
        n = envs[0].max_users
        c_cpu = envs[0].capacities[0]
        c_tot = envs[0].c_tot
        horizon = envs[0].horizon
        self._derive(at)
        act = st.act[at]
        xi_hat = st.xi_hat[at]
        queue = st.queue[at]
        jobs_total = st.jobs_total[at]
        present = st.present[at] > 0
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            open_queue = queue / QUEUE_NORM
            jobs_left = np.where(st.backlogged[at] > 0, 1.0, np.where(  # EMRFSimulator.jobs_left_fraction
                st.open_loop[at] > 0, np.where(1.0 < open_queue, 1.0, open_queue),
                np.where(jobs_total > 0, queue / jobs_total, 0.0)))
            values = np.stack([np.ones_like(xi_hat), xi_hat, st.weight[at] / st.d_total_w[at][:, None],
                               st.d_share[at] / c_tot, st.d_fmax[at] / c_tot, 1.0 / st.d_m[at] / c_tot,
                               st.remaining[at] / st.size[at], jobs_left, st.planned[at] / c_tot, st.last_ratio[at]],
                              axis=2)
            values = np.where(act[:, :, None], values, 0.0)
            values[:, :, 1] = np.where(~act & present, xi_hat, values[:, :, 1])  # idle users keep their identity
            progress = st.windows[at] / horizon
            glob = np.stack([st.eta[at], np.where(act.any(axis=1), st.d_bound[at] / st.d_norm[at], 0.0),
                             st.util_cpu[at], st.util_gpu[at], np.full(len(at), c_cpu / c_tot), act.sum(axis=1) / n,
                             np.where(1.0 < progress, 1.0, progress)], axis=1)
        obs = np.empty((len(at), n * SLOT_FEATURES + GLOBAL_FEATURES), dtype=np.float32)
        obs[:, :n * SLOT_FEATURES] = values.reshape(len(at), n * SLOT_FEATURES)  # rounded to float32 as np.array does
        obs[:, n * SLOT_FEATURES:] = glob
        np.maximum(obs, 0.0, out=obs)
        np.minimum(obs, 1.0, out=obs)
        self._obs[at] = obs
