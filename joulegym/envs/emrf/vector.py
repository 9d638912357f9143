"""A batched EMRF vector env: N instances of :class:`~joulegym.envs.emrf.env.EMRFEnv` as the rows of one batch.

``gym.make_vec("joulegym/EMRF-v0", num_envs=N, vectorization_mode="vector_entry_point", **kwargs)`` builds an
:class:`EMRFVectorEnv` (every EMRF id registers it as its Gymnasium ``vector_entry_point``; all four kinds). One
``step()`` takes a ``(N, ...)`` action array and returns ``(N, obs_dim)`` observations and ``(N,)`` rewards,
terminations and truncations. The instances are the rows of one array state
(:class:`~joulegym.envs.emrf.episodes.EMRFEpisodes` over :class:`~joulegym.envs.emrf.batch.EMRFBatch`, the single
env's model and formulas as arrays over rows), stepped together for every kind; instance by instance the batch gives
the observations, rewards, terminations, truncations and ``info["metrics"]`` bits of N single envs (``gym.make``)
under the same seeds: ``reset(seed=s)``
seeds instance ``i`` with ``s + i`` (as ``SyncVectorEnv`` does), and an ended instance is reset on the next
``step()`` (Gymnasium's ``AutoresetMode.NEXT_STEP``, its default): its action is ignored, its reward is 0, and it
continues from its own random stream (``reset()`` without a seed).

With fewer than :data:`BATCH_FROM` instances the fixed cost of the array operations outweighs what they share, so
the instances are single envs stepped one by one (the same bits either way): each runs its own transition on its
checked row (``decode_checked``), and the batch converts their observations, flags and rewards once. Every row's
action is checked before any instance steps (:class:`joulegym.core.vector.BatchValidator`): a batch rejected for one
bad row changes no instance.

Infos are lean and batched as ``SyncVectorEnv`` batches them: ``reward_parts`` (one array per part) and
``repaired``, each with its ``_key`` mask, and ``metrics`` for the instances whose episode ended
(``info_metrics="every_step"``: for every instance at every step). The per-step diagnostics (``allocation``,
``delivered``, ``scheduler_inputs``, ...) and rendering need the single env: use ``vectorization_mode="sync"``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium.utils import seeding

from joulegym.core.config import check_options
from joulegym.core.rewards import weighted_sum
from joulegym.core.vector import BatchedVectorEnv, BatchValidator, check_num_envs
from joulegym.envs.emrf.batch import EMRFBatch
from joulegym.envs.emrf.env import EMRFEnv
from joulegym.envs.emrf.episodes import EMRFEpisodes
from joulegym.envs.emrf.rules import KnobRule, ResidualRule, RowRule, SlicedRule, WeightsRule

BATCH_FROM = 8  # instances from which the array rows are cheaper than stepping single envs (docs §11)


class EMRFVectorEnv(BatchedVectorEnv):
    """N EMRF instances stepped as one batch; see the module docstring."""

    horizon_hint: ClassVar[str] = "horizon (windows)"

    def __init__(self, num_envs: int, **kwargs: Any) -> None:
        num_envs = check_num_envs(num_envs)
        kwargs = self.check_kwargs(kwargs)
        template = EMRFEnv(**kwargs)  # the config, spaces and reward spec of every instance
        super().__init__(num_envs, template)
        self._template = template
        setup, cfg = template.setup, template.config
        self._obs = np.zeros((num_envs, *self.single_observation_space.shape), dtype=np.float32)
        self._validated = BatchValidator(self.single_action_space, num_envs)  # every row, before any steps
        self.envs: list[EMRFEnv] = []
        self._everyone = np.ones(num_envs, dtype=bool)
        if num_envs < BATCH_FROM:  # single envs, stepped one by one (module docstring)
            self.envs = [template] + [EMRFEnv(**kwargs) for _ in range(num_envs - 1)]
            return
        batch = EMRFBatch(num_envs, setup.capacities, setup.max_users, cfg["window_s"], setup.horizon,
                          cfg["xi_noise"], admit_at_window=cfg["admit_at_window"], weight_unit=setup.weight_unit)
        self.episodes = EMRFEpisodes(batch)
        self._rngs: list[np.random.Generator | None] = [None] * num_envs  # each instance's np_random

    def step(self, actions: Any):
        """Step every live instance in one batch and reset the ended ones (next-step autoreset)."""
        self._check_started()
        if self.envs:
            return self._step_instances(actions)
        N = self.num_envs
        batch = self._validated(actions, self._autoreset)  # every row, before any instance steps
        resetting = self._autoreset
        live = ~resetting
        parts = np.zeros((N, len(self.reward_spec.names)))
        terminated = np.zeros(N, dtype=bool)
        truncated = np.zeros(N, dtype=bool)
        if np.count_nonzero(live):
            rows: Any = slice(None) if np.count_nonzero(live) == N else np.flatnonzero(live)  # all: views, not copies
            parts[rows] = self.episodes.step(rows, self._rule(batch))
            sim = self.episodes.batch
            terminated[rows] = sim.done_rows()[rows]
            truncated[rows] = sim.truncated_rows()[rows] & ~terminated[rows]
            self._observe(rows)
        for n in np.flatnonzero(resetting).tolist():
            self._reset_one(n, None, None)
        self._parts[:] = parts
        if self._vector_reward:
            reward = parts.copy()
        else:
            reward = np.zeros(N) + weighted_sum(self.reward_weights, parts.T)  # the single env's sum, per row
        ended = terminated | truncated
        self._autoreset = ended
        return self._obs.copy(), reward, terminated, truncated, self._info(np.ones(N, dtype=bool), ended & live)

    def _step_instances(self, actions: Any):
        """:meth:`step` below :data:`BATCH_FROM` instances: each instance runs the single env's own transition on its
        row of the checked batch (the action type's ``decode_checked``: no second check); the batch stacks the
        results (Python values converted once)."""
        checked = self._validated.rows(actions, self._autoreset)  # every row, before any instance steps
        resetting = self._autoreset.tolist()
        weights, vector, zeros = self.reward_weights, self._vector_reward, self._template._zero_parts
        parts, rewards, terminated, truncated, features = [], [], [], [], []
        for n, env in enumerate(self.envs):
            if resetting[n]:
                env.reset()  # from its own random stream (next-step autoreset)
                step = zeros, False, False
            else:
                step = env._advance_decision(env.action_type.decode_checked(checked[n]))
            features.append(env._features())
            parts.append(step[0])
            rewards.append(0.0 if vector else weighted_sum(weights, step[0]))
            terminated.append(step[1])
            truncated.append(step[2])
        ended = [te or tr for te, tr in zip(terminated, truncated)]
        final = [e and not r for e, r in zip(ended, resetting)]  # the episodes this step ended
        flags = np.array((terminated, truncated, ended, final))  # one conversion, a row each
        self._parts = np.array(parts, dtype=np.float64)
        self._autoreset = flags[2]
        reward = self._parts.copy() if vector else np.array(rewards)
        obs = np.array(features, dtype=np.float32)  # as each instance's _observe converts and clips its row
        np.maximum(obs, 0.0, out=obs)
        np.minimum(obs, 1.0, out=obs)
        self._obs[:] = obs
        return obs, reward, flags[0], flags[1], self._info(self._everyone, flags[3])

    def close_extras(self, **kwargs: Any) -> None:
        for env in self.envs or [self._template]:
            env.close()

    # --- helpers ----------------------------------------------------------------------------------------------
    def _rule(self, actions: np.ndarray) -> RowRule:
        """The window's rule of every row from the validated action rows (the single env's action types, batched)."""
        cfg = self.config
        eta_target = self.episodes.eta_target
        mode = self.action_mode
        if mode == "weights":
            rule: RowRule = WeightsRule(actions, eta_target.copy())
        elif mode == "residual_weights":
            rule = ResidualRule(actions, eta_target.copy())
        elif mode == "knob":
            rule = KnobRule(actions[:, 0].copy(), cfg["tie_break"], cfg["lp_solver"])
        else:  # knob_discrete: eta = level / (knob_levels - 1)
            rule = KnobRule(actions / (int(self.single_action_space.n) - 1), cfg["tie_break"], cfg["lp_solver"])
        if cfg["task_gflop"] is not None:
            rule = SlicedRule(rule, cfg["task_gflop"], cfg["strict_stop"])
        return rule

    def _observe(self, rows: Any) -> None:
        if isinstance(rows, slice):  # a view: written in place
            self.episodes.observe(rows, self._obs[rows])
            return
        out = np.empty((rows.size, self._obs.shape[1]), dtype=np.float32)
        self.episodes.observe(rows, out)
        self._obs[rows] = out

    def _reset_one(self, n: int, seed: int | None, options: dict[str, Any] | None) -> None:
        """Reset instance ``n`` as ``EMRFEnv.reset(seed=seed)`` does (its own generator, drawn in the same order)."""
        if self.envs:
            self._obs[n], _ = self.envs[n].reset(seed=seed, options=options)
            return
        check_options(options, self._template.option_keys)
        if seed is not None or self._rngs[n] is None:
            self._rngs[n] = seeding.np_random(seed)[0]
        rng = self._rngs[n]
        setup = self._template.setup
        eta = setup.draw_eta(rng)
        self.episodes.reset_row(n, setup.draw_users(rng), rng, eta)
        self._observe(slice(n, n + 1))

    def _batch_obs(self) -> np.ndarray:
        return self._obs.copy()

    def metrics(self, n: int) -> dict[str, Any]:
        """The paper's metrics of instance ``n``'s episode so far (the single env's ``metrics()``)."""
        return self.envs[n].metrics() if self.envs else self.episodes.metrics(n)
