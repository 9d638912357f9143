"""The shell of a family's batched vector env (Gymnasium 1.x ``vector_entry_point``, docs/architecture.md).

A family that registers ``EnvKind(vector_entry_point=...)`` subclasses :class:`BatchedVectorEnv`: the shell
builds the N single envs' shared spaces and reward spec, checks the arguments Gymnasium passes, parses
``reset(seed=..., options={"reset_mask": ...})`` as ``SyncVectorEnv`` does (``reset(seed=s)`` seeds instance ``i``
with ``s + i``) and batches the lean info in ``SyncVectorEnv``'s layout. The family supplies how one instance is
reset (``_reset_one``), the batched observation (``_batch_obs``), ``step()`` (next-step autoreset) and the
per-instance ``metrics(n)``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from joulegym.core.actions import ACTION_TOLERANCE
from joulegym.core.config import check_seed
from joulegym.core.env import JoulegymEnv


def check_num_envs(num_envs: Any) -> int:
    """``num_envs`` as an int >= 1, or a ``ValueError`` naming it."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, int | np.integer) or num_envs < 1:
        raise ValueError(f"num_envs must be an integer >= 1, got {num_envs!r}")
    return int(num_envs)


class BatchValidator:
    """Checks batches of actions against a single action space ``single`` for ``num_envs`` instances, with the
    space's bounds prepared once (a batched env calls it every step): a call gives ``actions`` as one array with a
    row per instance, every row checked before any instance steps, so that a rejected batch steps none: ``Box`` rows
    finite and inside the bounds up to :data:`~joulegym.core.actions.ACTION_TOLERANCE` (returned as float64,
    clipped), ``Discrete`` rows whole numbers in range (returned as int64). Rows where ``ignore`` is set (instances
    being reset, whose action is ignored) are not checked. A ``ValueError`` names the space and the first bad row."""

    def __init__(self, single: gym.Space, num_envs: int) -> None:
        if not isinstance(single, gym.spaces.Box | gym.spaces.Discrete):
            raise ValueError(f"BatchValidator checks Box and Discrete action spaces, not {single}")
        self.single, self.num_envs = single, int(num_envs)
        self._none = np.zeros(self.num_envs, dtype=bool)
        self.shape_of_batch = (self.num_envs, *single.shape)  # Discrete: (num_envs,)
        self._bounds: tuple[float, float] | None = None
        if isinstance(single, gym.spaces.Box):
            self.shape = (self.num_envs, *single.shape)
            self._size = int(np.prod(self.shape))
            self._low, self._high = single.low.astype(np.float64), single.high.astype(np.float64)
            self._low_tol, self._high_tol = self._low - ACTION_TOLERANCE, self._high + ACTION_TOLERANCE
            self._finite = bool(np.isfinite(self._low).all() and np.isfinite(self._high).all())
            # uniform finite bounds (a scalar pair): a batch inside them is checked by its min and max alone
            uniform = (self._finite and self._size and len(single.shape) == 1 and np.ptp(self._low) == 0
                       and np.ptp(self._high) == 0)
            self._bounds = (float(self._low.flat[0]), float(self._high.flat[0])) if uniform else None

    def __call__(self, actions: Any, ignore: np.ndarray | None = None, clip: bool = True) -> np.ndarray:
        """The checked rows (``clip=False``: ``Box`` rows as given, for callers that clip again, e.g. each single
        env's own decode)."""
        array = actions if isinstance(actions, np.ndarray) else np.asarray(actions)
        skip = self._none if ignore is None else ignore  # rows whose action is ignored
        if isinstance(self.single, gym.spaces.Box):
            return self._box(actions, array, skip, clip)
        return self._discrete(actions, array, skip)

    def rows(self, actions: Any, ignore: np.ndarray | None = None) -> list:
        """The checked (clipped) rows as Python lists, for a batched env that steps its instances one by one: a
        batch of plain values inside uniform bounds (or of whole levels in range) is checked on the list, anything
        else goes through :meth:`__call__` (which raises with its message)."""
        array = actions if isinstance(actions, np.ndarray) else None
        if array is not None and array.shape == self.shape_of_batch:
            values = array.tolist()
            if isinstance(self.single, gym.spaces.Discrete):
                low, high = int(self.single.start), int(self.single.start + self.single.n) - 1
                if array.dtype.kind in "iu" and all(low <= v <= high for v in values):
                    return values
            elif self._bounds is not None and array.dtype.kind == "f":
                low, high = self._bounds
                if all(low <= v <= high for row in values for v in row):  # False for NaN
                    return values
        return self(actions, ignore).tolist()

    def _box(self, actions: Any, array: np.ndarray, skip: np.ndarray, clip: bool) -> np.ndarray:
        num_envs, single = self.num_envs, self.single
        if array.dtype.kind not in "biuf" or array.size != self._size or array.ndim < 1 or array.shape[0] != num_envs:
            raise ValueError(f"actions must be a float array of shape {self.shape} (one row per instance in "
                             f"{single}), got {type(actions).__name__} of shape {np.shape(actions)}")
        rows = array.reshape(self.shape).astype(np.float64, copy=False)
        if self._bounds is not None and rows.min() >= self._bounds[0] and rows.max() <= self._bounds[1]:
            return rows  # inside the bounds (NaN fails the comparisons): clipping would change nothing
        inside = (rows >= self._low_tol) & (rows <= self._high_tol)  # False for NaN
        if not self._finite:
            inside &= np.isfinite(rows)
        if not inside.all():
            bad = ~inside.reshape(num_envs, -1).all(axis=1) & ~skip
            if bad.any():
                n = int(np.flatnonzero(bad)[0])
                raise ValueError(f"actions[{n}] must be an element of {single} (finite, inside the bounds), "
                                 f"got {rows[n].tolist()}")
        return np.minimum(np.maximum(rows, self._low), self._high) if clip else rows

    def _discrete(self, actions: Any, array: np.ndarray, skip: np.ndarray) -> np.ndarray:
        num_envs, single = self.num_envs, self.single
        n_levels, start = int(single.n), int(single.start)
        if array.shape != (num_envs,) or array.dtype.kind not in "iuf":
            raise ValueError(f"actions must be an integer array of shape ({num_envs},) with values in "
                             f"[{start}, {start + n_levels}), got {type(actions).__name__} of shape "
                             f"{np.shape(actions)}")
        if array.dtype.kind == "f":
            whole = np.isfinite(array) & (array == np.round(np.nan_to_num(array)))
            if not (whole | skip).all():
                n = int(np.flatnonzero(~whole & ~skip)[0])
                raise ValueError(f"actions[{n}] must be an integer in [{start}, {start + n_levels}), got {array[n]}")
            outside = ((array < start) | (array >= start + n_levels)) & ~skip  # before the cast: 1e308 overflows it
            if outside.any():
                n = int(np.flatnonzero(outside)[0])
                raise ValueError(f"actions[{n}] must be in [{start}, {start + n_levels}), got {array[n]}")
            array = np.where(whole & ~outside, array, start)
        levels = array.astype(np.int64)
        bad = ((levels < start) | (levels >= start + n_levels)) & ~skip
        if bad.any():
            n = int(np.flatnonzero(bad)[0])
            raise ValueError(f"actions[{n}] must be in [{start}, {start + n_levels}), got {levels[n]}")
        return levels


class BatchedVectorEnv(VectorEnv):
    """N instances of one family env behind one numpy interface (module docstring).

    :param num_envs: number of instances N.
    :param first: the first instance (built by the family from the ``gym.make`` keyword arguments); its
        spaces, config and reward spec are every instance's.
    """

    metadata: ClassVar[dict[str, Any]] = {"autoreset_mode": AutoresetMode.NEXT_STEP, "render_modes": []}
    #: what to set instead of Gymnasium's ``max_episode_steps`` (named in the error)
    horizon_hint: ClassVar[str] = "horizon"

    @classmethod
    def check_kwargs(cls, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The ``gym.make`` keyword arguments minus Gymnasium's ``max_episode_steps=None``; a ``ValueError`` for
        what the batch cannot do (a step limit, rendering, per-step diagnostics)."""
        kwargs = dict(kwargs)
        if kwargs.pop("max_episode_steps", None) is not None:
            raise ValueError(f"max_episode_steps is not supported by {cls.__name__}; set {cls.horizon_hint}")
        if kwargs.get("render_mode") is not None:
            raise ValueError(f"{cls.__name__} does not render; use vectorization_mode='sync' to render")
        if kwargs.get("info_level", "lean") == "full":
            raise ValueError("info_level='full' (per-step diagnostics) needs the single env: use "
                             "vectorization_mode='sync'")
        return kwargs

    def __init__(self, num_envs: int, first: JoulegymEnv) -> None:
        self.num_envs = N = check_num_envs(num_envs)
        self.config = first.config
        self.kind = first.kind
        self.action_mode = first.action_mode
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, N)
        self.action_space = batch_space(self.single_action_space, N)
        self.reward_spec = first.reward_spec
        self.reward_weights = first.reward_weights
        self.reward_space = first.reward_space
        self.render_mode = None
        self.spec = None
        self._vector_reward = bool(first._vector_reward)
        self._every_step_metrics = first._every_step_metrics
        self._parts = np.zeros((N, len(first.reward_spec.names)))
        self._repaired = np.zeros(N, dtype=bool)
        self._autoreset = np.zeros(N, dtype=bool)
        self._started = False

    # --- the family's part -------------------------------------------------------------------------------------
    def _reset_one(self, n: int, seed: int | None, options: dict[str, Any] | None) -> None:
        raise NotImplementedError

    def _batch_obs(self) -> np.ndarray:
        """The ``(N, ...)`` observation (a fresh array)."""
        raise NotImplementedError

    def metrics(self, n: int) -> dict[str, Any]:
        """The paper's metrics of instance ``n``'s episode so far."""
        raise NotImplementedError

    def _mask_info(self, info: dict[str, Any], present: np.ndarray) -> None:
        """Add batched ``action_mask`` entries (action types with a mask)."""

    # --- Gymnasium API -------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        """Reset every instance (or those of ``options["reset_mask"]``); ``seed`` as ``SyncVectorEnv`` takes it."""
        N = self.num_envs
        if seed is None:
            seeds: list[int | None] = [None] * N
        elif isinstance(seed, int | np.integer) and not isinstance(seed, bool):
            seeds = [check_seed(int(seed) + i if int(seed) >= 0 else seed) for i in range(N)]
        elif isinstance(seed, list | tuple) and len(seed) == N:
            seeds = [check_seed(s, f"seed[{i}]") for i, s in enumerate(seed)]
        else:
            raise ValueError(f"seed must be None, a whole number >= 0 or a list of num_envs={N} seeds, got {seed!r}")
        if options is not None and not isinstance(options, dict):
            raise ValueError(f"reset options must be a dict (e.g. {{'reset_mask': ...}}), got {options!r}")
        options = dict(options) if options else None
        mask = np.ones(N, dtype=bool)
        if options is not None and "reset_mask" in options:
            mask = options.pop("reset_mask")
            if not isinstance(mask, np.ndarray) or mask.shape != (N,) or mask.dtype != np.bool_ or not mask.any():
                raise ValueError(f"options['reset_mask'] must be a bool array of shape ({N},) with a True value")
            if not self._started and not mask.all():
                raise ValueError("the first reset() must reset every instance (no reset_mask)")
        for n in np.flatnonzero(mask):
            self._reset_one(int(n), seeds[n], options or None)
        self._autoreset[mask] = False
        self._started = True
        self._parts[mask] = 0.0
        self._repaired[mask] = False
        return self._batch_obs(), self._info(mask, np.zeros(N, dtype=bool))

    def _check_started(self) -> None:
        if not self._started:
            raise gym.error.ResetNeeded("step() called before reset(); call reset() first")

    def _info(self, present: np.ndarray, ended: np.ndarray) -> dict[str, Any]:
        """The batched lean info (``SyncVectorEnv``'s layout, ``_key`` masks included): ``reward_parts``,
        ``repaired``, the action mask where the action type has one, and ``metrics`` for the instances whose
        episode ended (every present instance with ``info_metrics="every_step"``)."""
        parts: dict[str, Any] = {}
        every = bool(present.all())
        given = present.copy()  # one fresh mask per step, shared by the "_key" entries (read-only by convention)
        # one fresh array holds every part's column (each entry a row view of it)
        columns = self._parts.T.copy() if every else np.where(present, self._parts.T, 0.0)
        for k, name in enumerate(self.reward_spec.names):
            parts[name] = columns[k]
            parts[f"_{name}"] = given
        info: dict[str, Any] = {"reward_parts": parts, "_reward_parts": given,
                                "repaired": self._repaired & present, "_repaired": given}
        self._mask_info(info, present)
        which = present if self._every_step_metrics else ended
        if which.any():
            for n in np.flatnonzero(which):
                info = self._add_info(info, {"metrics": self.metrics(int(n))}, int(n))
        return info
