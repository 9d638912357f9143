"""A batched ETF vector env: N instances of :class:`~joulegym.envs.etf.env.ETFEnv` stepped as numpy arrays.

``gym.make_vec("joulegym/ETF-v0", num_envs=N, vectorization_mode="vector_entry_point", **kwargs)`` builds an
:class:`ETFVectorEnv` (the ids register it as their Gymnasium ``vector_entry_point``). One ``step()`` runs one
decision epoch of every instance with array operations over all N (below :attr:`ETFVectorEnv.ARRAY_MIN_N`
instances, with each instance's own single-env transition), and gives, instance by instance, the same
observations, rewards, terminations, truncations and ``info["metrics"]`` bits as N single envs (``gym.make``) in a
``SyncVectorEnv`` under the same seeds: ``reset(seed=s)`` seeds instance ``i`` with ``s + i``, and an ended
instance is reset on the next ``step()`` (Gymnasium's ``AutoresetMode.NEXT_STEP``, its default), its action
ignored, reward 0, from its own random stream.

How: the epoch is the single env's (:mod:`joulegym.envs.etf.epoch`: the fluid model's time, energy and inferences
with the per-app totals, the fairness parts, the observation's features 6-8 and the ETF objective, written once over
per-slot *lanes*); here each lane holds one value per instance. Each instance keeps a *shadow* ``ETFEnv`` for what
is rare (a reset; an app arriving or leaving; a phi level or a GPU level first seen since the app set last changed),
and the vector env copies the shadow's per-slot state into arrays: one row per instance and *variant* (``split``:
one; ``phi``: one per phi level plus the nominal phi; ``dvfs``: one per GPU level of the tenant). The ``split``
action's largest-remainder mapping is the single env's too (:func:`~joulegym.envs.etf.split.split_units`, run on
rows of instances). A batch's
actions are checked by the core's :class:`~joulegym.core.vector.BatchValidator` before any instance steps.

Infos are lean and batched as ``SyncVectorEnv`` batches them: ``reward_parts`` (one array per part),
``repaired``, ``action_mask`` (``phi``/``dvfs``), each with its ``_key`` mask, and ``metrics`` for the instances
whose episode ended. ``info_level="full"`` (per-slot diagnostics) and rendering need the single env: use
``vectorization_mode="sync"``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from joulegym.core.cache import BoundedCache
from joulegym.core.rewards import weighted_sum
from joulegym.core.vector import BatchedVectorEnv, BatchValidator, check_num_envs
from joulegym.envs.etf.env import SLOT_FEATURES, ETFDVFSEnv, ETFEnv, ETFPhiEnv
from joulegym.envs.etf.epoch import ArrayOps, epoch_fairness, etf_objective, run_epoch
from joulegym.envs.etf.simulator import run_metrics
from joulegym.envs.etf.split import ROWS, room_terms, split_units

ENV_CLASSES: dict[str, type[ETFEnv]] = {"split": ETFEnv, "phi": ETFPhiEnv, "dvfs": ETFDVFSEnv}
STATIC_FEATURES = 6  # slot features 0-5 (from the shadow's content-keyed caches); 6-8 are the epoch's


class ETFVectorEnv(BatchedVectorEnv):
    """``num_envs`` ETF instances of one configuration (any ETF kind, scenario and keyword arguments).

    :param num_envs: number of instances N.
    :param kwargs: what ``gym.make`` takes (``action_mode``, ``scenario``, config keys).
    """

    horizon_hint: ClassVar[str] = "horizon (epochs)"
    #: From this many instances on, one step is array work over all of them; below it each instance runs the single
    #: env's own transition (numpy's fixed cost per call outweighs a few list-code steps). The measured crossover
    #: lies between 16 and 20 instances for the split and phi kinds (docs/performance.md, "Batched envs").
    ARRAY_MIN_N: ClassVar[int] = 20

    def __init__(self, num_envs: int, **kwargs: Any) -> None:
        num_envs = check_num_envs(num_envs)
        kwargs = self.check_kwargs(kwargs)
        env_class = ENV_CLASSES.get(kwargs.get("action_mode", "split"), ETFEnv)  # ETFEnv names a bad mode
        first = env_class(**kwargs)
        super().__init__(num_envs, first)
        self._per_instance = num_envs < self.ARRAY_MIN_N
        self._all_levels: np.ndarray | None = None
        self._zero_parts = first._zero_parts
        mode = self.action_mode
        self._shadows = [first] + [env_class(**kwargs) for _ in range(num_envs - 1)]
        caches = (BoundedCache(), BoundedCache(), BoundedCache())
        for shadow in self._shadows:  # content-keyed, so one set of caches serves every instance
            shadow._set_cache, shadow._phi_cache, shadow._units_cache = caches
        self._M, self._T, self._horizon = first.max_apps, first.T, first.horizon
        self._seconds_per_unit = first.sim._seconds_per_unit
        self._epoch_s = first.sim.epoch_s
        self._cumulative = first._cumulative
        if mode == "phi":
            self._levels = first.action_type.levels
            variants = self._levels + 1  # the levels, then the nominal phi (reset's)
        elif mode == "dvfs":
            self._levels = len(first.levels_mhz)
            variants = self._levels
            self._fastest_s = first._fastest_s
        else:
            self._levels = 0
            variants = 1
        self._validated = BatchValidator(self.single_action_space, num_envs)
        N, M, V = self.num_envs, self._M, variants
        # Per instance and variant: what the shadow computed for that app set (and phi or GPU level).
        self._t_valid = np.zeros((N, V), dtype=bool)
        self._t_static = np.zeros((N, V, M, STATIC_FEATURES))
        self._t_floor = np.zeros((N, V, M), dtype=np.int64)
        self._t_room = np.zeros((N, V, M), dtype=np.int64)
        self._t_units = np.zeros((N, V, M), dtype=np.int64)
        self._t_power = np.ones((N, V, M))
        self._t_service = np.ones((N, V, M))
        self._t_demand = np.full((N, V, M), np.inf)
        self._t_ef_level = np.zeros((N, V))
        self._t_disparity = np.zeros((N, V))
        self._t_phi = np.zeros((N, V))
        self._table_keys: list[tuple | None] = [None] * N
        # Per instance.
        self._variant = np.zeros(N, dtype=np.int64)
        self._active = np.zeros((N, M), dtype=bool)
        self._weight = np.ones((N, M))
        self._slot_app = np.full((N, M), -1, dtype=np.int64)
        self._epoch = np.zeros(N, dtype=np.int64)
        self._done = np.zeros(N, dtype=bool)
        self._events = np.zeros((N, self._horizon + 1), dtype=bool)
        self._dynamic = np.zeros((N, M, 3))
        self._slot_energy = np.zeros((N, M))
        self._last_ft = np.ones(N)
        self._last_fe = np.ones(N)
        self._tenant_slot = np.zeros(N, dtype=np.int64)
        self._last_throughput = np.zeros(N)
        self._alloc_apps(1)
        self._rows = np.arange(N)
        self._everyone = np.ones(N, dtype=bool)  # read-only

    # --- state -------------------------------------------------------------------------------------------------
    def _alloc_apps(self, apps: int) -> None:
        """(Re)size the per-app accumulators to ``apps`` columns (a reset with more apps than seen so far)."""
        N = self.num_envs
        if apps <= getattr(self, "_app_time", np.zeros((N, 0))).shape[1]:
            return
        old = {k: getattr(self, k, None) for k in ("_app_time", "_app_energy", "_app_inferences", "_app_epochs",
                                                   "_app_weight")}
        self._app_time = np.zeros((N, apps))
        self._app_energy = np.zeros((N, apps))
        self._app_inferences = np.zeros((N, apps))
        self._app_epochs = np.zeros((N, apps), dtype=np.int64)
        self._app_weight = np.ones((N, apps))
        self._app_totals = (self._app_time, self._app_energy, self._app_inferences, self._app_epochs)
        self._n_apps = getattr(self, "_n_apps", np.zeros(N, dtype=np.int64))
        for key, value in old.items():
            if value is not None:
                getattr(self, key)[:, :value.shape[1]] = value

    def _fill(self, n: int, v: int) -> None:
        """Row ``(n, v)`` of the tables, from the shadow moved to variant ``v``."""
        s = self._shadows[n]
        mode = self.action_mode
        if mode == "phi":
            phi = s.nominal_phi if v == self._levels else s.action_type.phi_of(v)
            if s.phi != phi:
                s.phi = phi
                s._refresh_phi()
            self._t_units[n, v] = s._algorithm1(phi)
        elif mode == "dvfs":
            self._to_level(s, v)
            self._t_units[n, v] = s._algorithm1(s.scheduler_phi)
        sim = s.sim
        self._t_static[n, v] = s._static
        self._t_floor[n, v] = s.action_floor
        self._t_room[n, v] = s.room
        self._t_power[n, v] = sim.power_w
        self._t_service[n, v] = sim.service_s
        self._t_demand[n, v] = sim.demand_units
        self._t_ef_level[n, v] = s.ef_level
        self._t_disparity[n, v] = s._disparity
        self._t_phi[n, v] = s.phi
        self._t_valid[n, v] = True

    @staticmethod
    def _to_level(s: ETFEnv, level: int) -> None:
        if s.level != level:  # the single env's dvfs transition
            s.level = level
            s.sim.set_frequency(s.tenant_slot, s.levels_mhz[level])
            s._refresh_membership()

    def _sync_membership(self, n: int) -> None:
        """Copy instance ``n``'s app set from its shadow; new occupants start from zero (as in the single env)."""
        s = self._shadows[n]
        sim = s.sim
        slot_app = np.asarray(sim.slot_app, dtype=np.int64)
        changed = slot_app != self._slot_app[n]
        self._slot_energy[n, changed] = 0.0
        self._dynamic[n, changed] = 0.0
        self._slot_app[n] = slot_app
        self._active[n] = sim.active
        self._weight[n] = sim.weight
        self._done[n] = sim.done
        # The tables of every variant follow from the app set (which apps hold which slots, at which level) and
        # phi: when a reset brings the same ones back (every static scenario), they stay valid.
        key = (int(self._variant[n]), s._membership_key, s.phi, s.nominal_phi,
               tuple(repr(sim.apps[k]) if k >= 0 else "" for k in sim.slot_app))
        if key != self._table_keys[n]:
            self._table_keys[n] = key
            self._t_valid[n] = False
        if not self._t_valid[n, self._variant[n]]:
            self._fill(n, int(self._variant[n]))

    def _reset_one(self, n: int, seed: int | None, options: dict[str, Any] | None) -> None:
        s = self._shadows[n]
        s.reset(seed=seed, options=options)
        if self._per_instance:
            return
        sim = s.sim
        apps = len(sim.apps)
        self._alloc_apps(apps)
        self._n_apps[n] = apps
        for acc in (self._app_time, self._app_energy, self._app_inferences):
            acc[n] = 0.0
        self._app_epochs[n] = 0
        self._app_weight[n] = 1.0
        self._app_weight[n, :apps] = sim.app_weight
        self._epoch[n] = 0
        events = self._events[n]
        events[:] = False
        for app in sim.apps:
            for epoch in (app.arrival, app.departure):
                if epoch is not None and 0 < epoch <= self._horizon:
                    events[epoch] = True
        self._slot_app[n] = -2  # every slot's occupant is new
        self._last_ft[n] = self._last_fe[n] = 1.0
        self._last_throughput[n] = 0.0
        mode = self.action_mode
        if mode == "phi":
            self._variant[n] = self._levels
        elif mode == "dvfs":
            self._variant[n] = s.level
            self._tenant_slot[n] = s.tenant_slot
        else:
            self._variant[n] = 0
        self._sync_membership(n)

    # --- Gymnasium API (reset: the core shell's) -----------------------------------------------------------
    def step(self, actions: Any):
        if self._per_instance:
            return self._step_instances(actions)
        self._check_started()
        N = self.num_envs
        resetting = self._autoreset
        live = ~resetting
        decisions = self._decode(actions)
        parts = self._parts
        parts[:] = 0.0
        self._repaired[resetting] = False
        rows = np.flatnonzero(live)
        if rows.size:
            self._transition(rows, decisions)
        for n in np.flatnonzero(resetting):
            self._reset_one(int(n), None, None)
        terminated = self._done.copy()
        truncated = (self._epoch >= self._horizon) & ~terminated
        terminated[resetting] = False
        truncated[resetting] = False
        ended = terminated | truncated
        self._autoreset = ended
        return self._observe(), self._rewards(), terminated, truncated, self._info(np.ones(N, dtype=bool),
                                                                                   ended & live)

    def _rewards(self) -> np.ndarray:
        """The step's rewards: the parts (``vector_reward``) or their weighted sum, row by row in part order (the
        core's :func:`~joulegym.core.rewards.weighted_sum` over columns: the single env's bits)."""
        if self._vector_reward:
            return self._parts.copy()
        return np.broadcast_to(weighted_sum(self.reward_weights, self._parts.T), (self.num_envs,)).astype(np.float64)

    def _step_instances(self, actions: Any):
        """:meth:`step` below :attr:`ARRAY_MIN_N` instances: each instance runs the single env's own transition on its
        row of the checked batch (``JoulegymEnv._advance_decision``); the batch stacks the results."""
        self._check_started()
        checked = self._validated.rows(actions, self._autoreset)  # every row, before any instance steps
        resetting = self._autoreset.tolist()
        zeros = self._zero_parts
        weights, vector, split = self.reward_weights, self._vector_reward, self.action_mode == "split"
        parts, rewards, terminated, truncated, repaired, features = [], [], [], [], [], []
        for n, shadow in enumerate(self._shadows):
            if resetting[n]:
                shadow.reset()
                step = zeros, False, False
            else:
                decision = shadow.action_type.units_for(checked[n]) if split else checked[n]
                step = shadow._advance_decision(decision)
            parts.append(step[0])
            rewards.append(0.0 if vector else weighted_sum(weights, step[0]))
            terminated.append(step[1])
            truncated.append(step[2])
            repaired.append(not resetting[n] and shadow.action_type.repaired)
            features.append(shadow._features())
        ended = [te or tr for te, tr in zip(terminated, truncated)]
        final = [e and not r for e, r in zip(ended, resetting)]  # the episodes this step ended
        flags = np.array((terminated, truncated, repaired, ended, final))  # one conversion, a row each
        self._parts = np.array(parts, dtype=np.float64)
        self._repaired, self._autoreset = flags[2], flags[3]
        reward = self._parts.copy() if vector else np.array(rewards)
        obs = np.array(features, dtype=np.float32)
        return obs, reward, flags[0], flags[1], self._info(self._everyone, flags[4])

    def close_extras(self, **kwargs: Any) -> None:
        for shadow in self._shadows:
            shadow.close()

    # --- one epoch of the live instances -------------------------------------------------------------------------
    def _decode(self, actions: Any, clip: bool = True) -> np.ndarray:
        """Every row checked against the single action space (the core's
        :class:`~joulegym.core.vector.BatchValidator`: a ``ValueError`` naming the instance and what is allowed)
        before any instance steps; instances being reset are not checked (their action is ignored)."""
        return self._validated(actions, self._autoreset, clip=clip)

    def _current(self, rows: np.ndarray, table: np.ndarray) -> np.ndarray:
        return table[rows, self._variant[rows]]

    def _ensure(self, rows: np.ndarray) -> None:
        """Fill the table rows of the instances' current variants that the shadows have not given yet."""
        missing = rows[~self._t_valid[rows, self._variant[rows]]]
        for n in missing:
            self._fill(int(n), int(self._variant[n]))

    def _transition(self, rows: np.ndarray, decisions: np.ndarray) -> None:
        mode = self.action_mode
        T = self._T
        if mode == "split":
            self._ensure(rows)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # masked rows only
                floor, room = self._current(rows, self._t_floor), self._current(rows, self._t_room)
                units, repaired = split_units(ROWS, decisions[rows], floor, room, room_terms(ROWS, floor, room, T))
            self._repaired[rows] = repaired
        else:
            self._repaired[rows] = False
            level = decisions[rows]
            if mode == "phi":
                phi_now = self._current(rows, self._t_phi)
                change = (level / (self._levels - 1)) != phi_now
            else:
                change = level != self._variant[rows]
            self._variant[rows[change]] = level[change]
            self._ensure(rows)
            units = self._current(rows, self._t_units)
        # --- the epoch: the single env's functions (joulegym.envs.etf.epoch) over lanes of rows ---
        ops = ArrayOps(rows)
        active, weight, unit_lanes = list(self._active[rows].T), list(self._weight[rows].T), list(units.T)
        power = list(self._current(rows, self._t_power).T)
        _, energy, inferences = run_epoch(ops, unit_lanes, power, list(self._current(rows, self._t_service).T),
                                          list(self._slot_app[rows].T), self._seconds_per_unit, self._app_totals)
        slot_energy = list(self._slot_energy[rows].T)
        dynamic = self._dynamic[rows]
        lanes = [list(dynamic[:, :, j].T) for j in range(3)]
        every = ops.lanes(active)
        f_t, f_e = epoch_fairness(ops, every, unit_lanes, energy, weight, slot_energy, lanes, T)
        self._slot_energy[rows] = np.stack(slot_energy, axis=1)
        self._dynamic[rows] = np.stack([np.stack(lane, axis=1) for lane in lanes], axis=2)
        self._last_ft[rows] = f_t
        self._last_fe[rows] = f_e
        parts = self._parts
        if mode == "dvfs":
            tenant = (np.arange(rows.size), self._tenant_slot[rows])
            throughput = np.stack(inferences, axis=1)[tenant] / self._epoch_s
            parts[rows, 0] = throughput
            parts[rows, 1] = -(np.stack(energy, axis=1)[tenant] / self._epoch_s)
            self._last_throughput[rows] = throughput
        else:
            objective = etf_objective(ops, every, unit_lanes, power, weight,
                                      list(self._current(rows, self._t_demand).T), T,
                                      self._current(rows, self._t_ef_level))
        # --- advance (arrivals and departures through the shadows) ---
        self._epoch[rows] += 1
        epoch = self._epoch[rows]
        due = self._events[rows, np.minimum(epoch, self._horizon)]
        for n in rows[due]:
            self._membership_event(int(n))
        if mode != "dvfs":
            if self._cumulative:
                f_t, f_e = self._cumulative_fairness(rows)
            parts[rows, 0] = f_t
            parts[rows, 1] = f_e
            parts[rows, 2] = np.minimum(f_t, f_e)
            parts[rows, 3] = objective

    def _membership_event(self, n: int) -> None:
        s = self._shadows[n]
        v = int(self._variant[n])
        if self.action_mode == "phi":
            phi = self._t_phi[n, v]
            if s.phi != phi:
                s.phi = phi
                s._refresh_phi()
        elif self.action_mode == "dvfs":
            self._to_level(s, v)
        s.sim.epoch = int(self._epoch[n])
        if s.sim._update_membership():
            s._refresh_membership()
            self._sync_membership(n)
        else:
            self._done[n] = s.sim.done

    def _cumulative_fairness(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """F_T and F_E of :func:`run_metrics` over rows (``reward_window="cumulative"``)."""
        epochs = self._app_epochs[rows]
        present = epochs > 0
        with np.errstate(divide="ignore", invalid="ignore"):  # apps not yet present: masked out
            inv = 1.0 / (epochs * self._app_weight[rows])
            return (_min_max_rows(self._app_time[rows] * inv, present),
                    _min_max_rows(self._app_energy[rows] * inv, present))

    # --- observation and info ------------------------------------------------------------------------------------
    def _observe(self) -> np.ndarray:
        N, M = self.num_envs, self._M
        rows = self._rows
        static = self._t_static[rows, self._variant]
        slots = np.concatenate([static, self._dynamic], axis=2).reshape(N, M * SLOT_FEATURES)
        globals_ = np.stack([self._t_phi[rows, self._variant], np.minimum(self._epoch / self._horizon, 1.0),
                             self._active.sum(axis=1) / M, self._last_ft, self._last_fe,
                             self._t_disparity[rows, self._variant]], axis=1)
        parts = [slots, globals_]
        if self.action_mode == "dvfs":
            tenant = np.zeros((N, M + 2))
            tenant[rows, self._tenant_slot] = 1.0
            tenant[:, -2] = self._variant / (self._levels - 1)
            tenant[:, -1] = np.minimum(self._last_throughput * self._fastest_s, 1.0)  # the single env clips it too
            parts.append(tenant)
        return np.concatenate(parts, axis=1).astype(np.float32)

    def _batch_obs(self) -> np.ndarray:
        if self._per_instance:
            return np.stack([shadow._observe() for shadow in self._shadows])
        return self._observe()

    def _mask_info(self, info: dict[str, Any], present: np.ndarray) -> None:
        if self.action_mode != "split":  # every level is always valid
            if self._all_levels is None:
                self._all_levels = np.ones((self.num_envs, int(self.single_action_space.n)), dtype=np.int8)
            info["action_mask"] = self._all_levels.copy()
            info["_action_mask"] = present.copy()

    def metrics(self, n: int) -> dict[str, Any]:
        """The paper's metrics of instance ``n``'s episode so far (the single env's ``metrics()``)."""
        if self._per_instance:
            return self._shadows[n].metrics()
        apps = int(self._n_apps[n])
        return run_metrics(self._app_time[n, :apps].tolist(), self._app_energy[n, :apps].tolist(),
                           self._app_inferences[n, :apps].tolist(), self._app_epochs[n, :apps].tolist(),
                           self._app_weight[n, :apps].tolist(), int(self._epoch[n]), self._epoch_s)


def _min_max_rows(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """:func:`~joulegym.envs.etf.metrics.min_max` of each row's masked values (1.0 if none or all <= 0)."""
    high = np.where(mask, values, -np.inf).max(axis=1)
    low = np.where(mask, values, np.inf).min(axis=1)
    ok = mask.any(axis=1) & (high > 0.0)
    out = np.ones(values.shape[0])
    out[ok] = low[ok] / high[ok]
    return out
