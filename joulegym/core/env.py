"""The env template: every joulegym env is a :class:`JoulegymEnv` and no family writes ``step()``.

In the style of highway-env's ``AbstractEnv``, the template owns the episode loop of one step::

    decision = action_type.decode(action)          # validate, repair (info["repaired"])
    parts    = env._transition(decision)           # simulator apply + advance; named reward parts
    reward   = sum_k w_k parts_k                   # or the parts vector (vector_reward=True)
    terminated, truncated = env._terminated(), env._truncated()
    obs, info = env._observe(), {..., "reward_parts": ..., "repaired": ..., "action_mask": ...}

A family supplies, as methods of its env class:

==========================  ==================================================================
``default_config()``        every config key with its default (``super().default_config()`` has
                            the core keys below)
``action_types``            ``{action_mode: ActionType subclass}`` (:mod:`joulegym.core.actions`)
``_configure()``            validate the resolved ``self.config``; build the simulator and the
                            ``observation_space``
``_reward_spec()``          the :class:`~joulegym.core.rewards.RewardSpec` (parts and presets)
``_begin_episode(options)`` reset the simulator from ``self.np_random`` (options: checked dict)
``_transition(decision)``   apply the decision, advance to the next decision point, return the
                            reward parts (a sequence in the spec's order)
``_observe()``              the observation (inside ``observation_space``)
``_observation_names()``    a name per observation value, in order (``observation_names``)
``_max_episode_steps()``    the most steps an episode takes when the family's own truncation fixes it
                            (``env.spec.max_episode_steps``; ``None``: not known in advance)
``_terminated()`` /         episode end: the task is done / a time limit
``_truncated()``
``_extra_info()``           the family's lean per-step info keys (every step; few and flat), named
                            in ``lean_info_keys``
``_diagnostic_info()``      heavy per-step diagnostics, only with ``info_level="full"``, named in
                            ``full_info_keys``
``metrics()``               the paper's metrics of the episode so far
``_render_ansi()`` /        the two render modes
``_render_figure()``
==========================  ==================================================================

Core config keys (in every family): ``scenario``, ``action_mode``, ``reward`` (weight preset; ``None``:
the action mode's default), ``reward_weights`` (``{part: weight}`` overrides), ``vector_reward``
(return the parts vector, MO-Gymnasium style), ``info_metrics`` (``"episode_end"``: ``info["metrics"]``
on the last step only, the default; ``"every_step"``) and ``info_level`` (``"lean"``: the core keys and the
family's lean keys, the default; ``"full"``: plus the family's diagnostics). A lean info matters in the RL
inner loop: Gymnasium's ``SyncVectorEnv`` merges every info key of every sub-env into arrays, and that merge
cost grows with the number of keys (docs/architecture.md). Whatever the level, the info of every step of an episode
has the same keys (``metrics`` aside, on the last step).

Stepping after the episode ended raises :class:`gymnasium.error.ResetNeeded`; so does stepping before
the first ``reset()``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from joulegym.core.actions import NO_DECISION, ActionType, gymnasium_mask, int8_mask
from joulegym.core.config import Scenario, check_bool, check_choice, check_options, check_seed, resolve_config
from joulegym.core.plotting import figure_to_rgb
from joulegym.core.rewards import RewardPart, RewardSpec, weighted_sum

INFO_METRICS = ("episode_end", "every_step")
INFO_LEVELS = ("lean", "full")
CORE_INFO_KEYS = ("reward_parts", "repaired", "action_mask", "metrics")  # the template's own info keys


def row_names(prefix: str, rows: int, features: Sequence[str]) -> list[str]:
    """``[f"{prefix}{r}.{feature}" ...]`` row by row: the names of ``rows`` observation rows (slots, servers)."""
    return [f"{prefix}{r}.{feature}" for r in range(rows) for feature in features]


def _built_by_gymnasium_vector_env() -> bool:
    """True when Gymnasium's ``SyncVectorEnv`` / ``AsyncVectorEnv`` is building this env (they batch scalar rewards:
    a reward vector fails at their first step, so ``vector_reward=True`` is refused at ``make_vec``)."""
    import sys

    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_code.co_filename.replace("\\", "/")
        if "gymnasium/vector/" in name and name.endswith(("/sync_vector_env.py", "/async_vector_env.py")):
            owner = frame.f_locals.get("self")  # a subclass (e.g. MOSyncVectorEnv) may batch reward vectors
            if owner is not None:
                return type(owner).__module__.startswith("gymnasium.vector")
        frame = frame.f_back
    return False


class JoulegymEnv(gym.Env):
    """Base of every joulegym env; see the module docstring for what a family implements."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    family: ClassVar[str] = ""
    action_types: ClassVar[Mapping[str, type[ActionType]]] = {}
    reward_parts: ClassVar[tuple[RewardPart, ...]] = ()
    reward_presets: ClassVar[Mapping[str, Mapping[str, float]]] = {}
    option_keys: ClassVar[tuple[str, ...]] = ()  # allowed keys of reset(options=...)
    lean_info_keys: ClassVar[tuple[str, ...]] = ()  # the keys _extra_info() gives (some only in some action modes)
    full_info_keys: ClassVar[tuple[str, ...]] = ()  # the keys _diagnostic_info() adds with info_level="full"
    # The family's trajectory, reward and metrics do not depend on the observation being read: an inner policy's
    # episode may run on the simulator path (:func:`joulegym.core.rollout.rollout_inner`), which steps
    # ``_advance_decision`` with ``observing`` False and never calls ``_observe``. A family sets it once a test
    # proves both paths equal for every inner policy.
    inner_fast_path: ClassVar[bool] = False
    # The family's transition, reward, info and action mask never read the state only ``_observe`` writes: a policy
    # that reads only the info and the action space (``reads_observation = False``) may step without observations
    # (:func:`joulegym.core.rollout.rollout`). A family sets it once a test proves both loops give the same episode.
    observation_free_steps: ClassVar[bool] = False
    observing: bool = True  # False on the simulator path: a family may skip its observation and mask upkeep

    def __init__(self, scenario: str | None = None, render_mode: str | None = None, **overrides: Any) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode={render_mode!r} is not one of {self.metadata['render_modes']}")
        self.render_mode = render_mode
        defaults = self.default_config()
        mode = overrides.get("action_mode", defaults["action_mode"])
        check_choice("action_mode", mode, tuple(self.action_types))
        self.kind = self._kind_of(mode)
        self.config = resolve_config(defaults, self.scenario_table(), scenario, overrides, kind=self.kind)
        cfg = self.config
        check_bool("vector_reward", cfg["vector_reward"])
        if cfg["vector_reward"] and _built_by_gymnasium_vector_env():
            raise ValueError("vector_reward=True needs a vector env that batches reward vectors: Gymnasium's sync and "
                             "async vector envs batch scalar rewards only; use vectorization_mode="
                             "'vector_entry_point' (the family's batched env) or mo_gymnasium's MOSyncVectorEnv")
        check_choice("info_metrics", cfg["info_metrics"], INFO_METRICS)
        check_choice("info_level", cfg["info_level"], INFO_LEVELS)
        # Read once: the config is fixed for the env's life, and step() should not look keys up.
        self._full_info = cfg["info_level"] == "full"
        self._every_step_metrics = cfg["info_metrics"] == "every_step"
        self._vector_reward = cfg["vector_reward"]
        self.action_mode = mode
        self._configure()
        self.action_type = self.action_types[mode](self)
        self.action_space = self.action_type.space
        self.reward_spec = self._reward_spec()
        preset = cfg["reward"] if cfg["reward"] is not None else self._default_reward()
        self.reward_weights = self.reward_spec.weights(preset, cfg["reward_weights"])
        cfg["reward"] = preset
        self.reward_space = self.reward_spec.space
        self._zero_parts = (0.0,) * len(self.reward_spec.names)
        self._episode_over = True
        self._started = False

    # --- what a family provides ----------------------------------------------------------------------------
    @classmethod
    def default_config(cls) -> dict[str, Any]:
        """Every config key with its default. Families extend ``super().default_config()``."""
        return {"scenario": None, "action_mode": next(iter(cls.action_types), None), "reward": None,
                "reward_weights": None, "vector_reward": False, "info_metrics": "episode_end",
                "info_level": "lean"}

    @classmethod
    def scenario_table(cls) -> Mapping[str, Scenario]:
        """The family's named scenarios (registered by its family descriptor)."""
        from joulegym.core.family import scenarios_of

        return scenarios_of(cls.family)

    @classmethod
    def _kind_of(cls, action_mode: str) -> str:
        from joulegym.core.family import kind_for

        return kind_for(cls.family, action_mode, cls) or f"{cls.__name__}[{action_mode}]"

    def _configure(self) -> None:  # pragma: no cover - every family overrides
        raise NotImplementedError

    def _reward_spec(self) -> RewardSpec:
        return RewardSpec(self.reward_parts, self.reward_presets)

    def _default_reward(self) -> str:
        preset = getattr(self.action_type, "default_reward", None)
        return preset if preset is not None else self.reward_spec.default_preset

    def _begin_episode(self, options: dict[str, Any]) -> None:  # pragma: no cover
        raise NotImplementedError

    def _transition(self, decision: Any) -> Sequence[float]:  # pragma: no cover
        raise NotImplementedError

    def _observe(self) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _terminated(self) -> bool:  # pragma: no cover
        raise NotImplementedError

    def _truncated(self) -> bool:  # pragma: no cover
        raise NotImplementedError

    def _max_episode_steps(self) -> int | None:
        """The most steps an episode can take, when the family's own truncation fixes it from the config (a
        horizon in steps); ``None`` when it depends on events (decision points, job completions)."""
        return None

    @property
    def spec(self) -> gym.envs.registration.EnvSpec | None:
        """The spec ``gym.make`` gave, with ``max_episode_steps`` set to :meth:`_max_episode_steps` where the
        registration left it ``None``. The ids register no ``TimeLimit`` (a user's ``horizon=`` may lengthen
        an episode past any registered bound); the env truncates itself at that bound, so a ``TimeLimit`` added
        by ``gym.make(env.spec)`` would end the same step."""
        return self.__dict__.get("_spec")

    @spec.setter
    def spec(self, value: gym.envs.registration.EnvSpec | None) -> None:
        if value is not None and value.max_episode_steps is None:
            bound = self._max_episode_steps()
            if bound is not None:
                value = dataclasses.replace(value, max_episode_steps=int(bound))
        self.__dict__["_spec"] = value

    def _observation_names(self) -> Sequence[str]:
        """A name per value of the flat observation, in order (:attr:`observation_names`)."""
        raise NotImplementedError(f"{type(self).__name__} does not name its observation values")

    @property
    def observation_names(self) -> list[str]:
        """A name per value of the flat observation, in order: ``"slot0.active"`` (a slot row's feature),
        ``"phi"`` (a global one); the family's module docstring says what each means. Checked against the
        observation space's size."""
        names = list(self._observation_names())
        size = int(np.prod(self.observation_space.shape))
        if len(names) != size:
            raise RuntimeError(f"{type(self).__name__} names {len(names)} observation values, its space has {size}")
        return names

    def _extra_info(self) -> dict[str, Any]:
        """The family's lean per-step keys (a new dict each call)."""
        return {}

    def _diagnostic_info(self) -> dict[str, Any]:
        """The family's heavy per-step diagnostics, added with ``info_level="full"`` only."""
        return {}

    def metrics(self) -> dict[str, Any]:
        """The paper's metrics over the episode so far."""
        return {}

    # --- the template ----------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=check_seed(seed))
        self._begin_episode(check_options(options, self.option_keys))
        self.action_type.reset()
        self._episode_over = False
        self._started = True
        self.last_reward_parts = self._zero_parts
        return self._observe(), self._info(final=False)

    def step(self, action: Any):
        if self._episode_over:
            raise gym.error.ResetNeeded(
                "step() called after the episode ended (terminated or truncated); call reset() first"
                if self._started else "step() called before reset(); call reset() first")
        parts, terminated, truncated = self._advance(action)
        if self._vector_reward:
            reward: Any = np.array(parts, dtype=np.float64)
        else:
            reward = float(weighted_sum(self.reward_weights, parts))
        return self._observe(), reward, terminated, truncated, self._info(final=self._episode_over)

    def _advance(self, action: Any) -> tuple[tuple[float, ...], bool, bool]:
        """One step without the observation and the info: ``(reward parts, terminated, truncated)``. The
        template's ``step()`` and a family's batched vector env (:mod:`joulegym.core.vector`) both step this way."""
        return self._advance_decision(self.action_type.decode(action))

    def _advance_decision(self, decision: Any) -> tuple[tuple[float, ...], bool, bool]:
        """:meth:`_advance` from an already decoded ``decision`` (a batched env that checked and decoded its whole
        batch of actions steps its instances this way)."""
        parts = self._zero_parts if decision is NO_DECISION else tuple(self._transition(decision))
        self.last_reward_parts = parts
        terminated = bool(self._terminated())
        truncated = bool(self._truncated()) and not terminated
        self._episode_over = terminated or truncated
        return parts, terminated, truncated

    def _info(self, final: bool, mask: bool = True) -> dict[str, Any]:
        """The step's info; ``mask=False`` leaves out ``action_mask`` (the simulator path keeps no mask)."""
        info = self._extra_info()
        if self._full_info:
            info.update(self._diagnostic_info())
        action_type = self.action_type
        info["reward_parts"] = dict(zip(self.reward_spec.names, self.last_reward_parts))
        info["repaired"] = bool(action_type.repaired)
        if mask and action_type.has_mask:  # the form action_space.sample(mask=) takes (core.actions.gymnasium_mask)
            info["action_mask"] = gymnasium_mask(action_type.space, action_type.mask())
        if final or self._every_step_metrics:
            info["metrics"] = self.metrics()
        return info

    def action_masks(self) -> np.ndarray:
        """The valid actions now, flattened, ``int8`` 0/1 (sb3-contrib MaskablePPO; for a ``Discrete`` space also
        what ``action_space.sample(mask=)`` takes), from the action type."""
        return int8_mask(self.action_type.mask())

    # --- rendering -------------------------------------------------------------------------------------------
    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'")
            return None
        if self.render_mode == "ansi":
            return self._render_ansi()
        return figure_to_rgb(self._render_figure())

    def _render_ansi(self) -> str:  # pragma: no cover - every family overrides
        raise NotImplementedError

    def _render_figure(self):  # pragma: no cover - every family overrides
        raise NotImplementedError
