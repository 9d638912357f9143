"""RLlib: every joulegym id as an RLlib env, with action masks for the discrete action modes
(docs/ray.md, ``examples/rllib_ppo_etf.py``).

:func:`register_envs` registers each ``joulegym/...`` id with ``ray.tune.register_env`` under the same name, so
``PPOConfig().environment("joulegym/ETF-v0", env_config={...})`` works; ``env_config`` holds ``gym.make`` keyword
arguments (the env's config keys, docs/architecture.md).

Masks: an action mode whose action type has a mask (discrete modes: ``info["action_mask"]``,
``env.action_masks()``) is wrapped in :class:`MaskedObservation`, whose observation is the dict
``{"observations": <the env's Box>, "action_mask": Box(0, 1, (n,))}`` that RLlib's action-masking RL module
(``ActionMaskingTorchRLModule`` of the installed Ray, new API stack) reads: it sets the logits of masked-out actions
to the smallest float before sampling, so PPO never picks them. :func:`ppo_config` sets that module for masked envs.
Continuous modes (``Box`` actions) are passed through unchanged.
"""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym
import numpy as np

from joulegym.integrations import require_ray

PREFIX = "joulegym/"


class MaskedObservation(gym.ObservationWrapper):
    """``{"observations": obs, "action_mask": mask}``; the mask (float32 0/1) is the action type's current one."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.action_space  # the mask is flat: n (Discrete) or sum(nvec) (MultiDiscrete), sb3-contrib's layout
        size = int(space.n) if isinstance(space, gym.spaces.Discrete) else int(np.sum(space.nvec))
        self.observation_space = gym.spaces.Dict({
            "observations": env.observation_space,
            "action_mask": gym.spaces.Box(0.0, 1.0, shape=(size,), dtype=np.float32)})

    def observation(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        mask = np.asarray(self.env.unwrapped.action_masks(), dtype=np.float32)
        return {"observations": observation, "action_mask": mask}


def has_mask(env: gym.Env) -> bool:
    """Whether the env's action mode is a discrete one with an action mask."""
    action_type = getattr(env.unwrapped, "action_type", None)
    return bool(action_type is not None and action_type.has_mask
                and isinstance(env.action_space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)))


def make_env(env_id: str, env_config: Any = None) -> gym.Env:
    """The env RLlib runs for ``env_id``: ``gym.make(env_id, **env_config)``, masked if its action mode has a mask.
    ``env_config`` may be RLlib's ``EnvContext`` (a dict with worker attributes)."""
    import joulegym  # noqa: F401  (registers the ids in a fresh worker)

    env = gym.make(env_id, **dict(env_config or {}))
    return MaskedObservation(env) if has_mask(env) else env


def joulegym_ids() -> list[str]:
    """Every registered joulegym env id."""
    import joulegym  # noqa: F401

    return sorted(k for k in gym.registry if k.startswith(PREFIX))


def register_envs(ids: list[str] | None = None) -> list[str]:
    """Register ``ids`` (default: every joulegym id) with ``ray.tune.register_env``; returns them."""
    require_ray()
    from ray.tune.registry import register_env

    ids = joulegym_ids() if ids is None else list(ids)
    for env_id in ids:
        register_env(env_id, functools.partial(make_env, env_id))
    return ids


def ppo_config(env_id: str, env_config: dict[str, Any] | None = None, *, seed: int = 0, **training: Any) -> Any:
    """An RLlib ``PPOConfig`` for ``env_id`` (registered here), on the new API stack, with the action-masking RL
    module when the env has a mask; ``training`` goes to ``.training(...)`` (``train_batch_size_per_learner``,
    ``minibatch_size``, ``num_epochs``, ``lr``, ...)."""
    require_ray()
    from ray.rllib.algorithms.ppo import PPOConfig

    register_envs([env_id])
    config = (PPOConfig().environment(env_id, env_config=dict(env_config or {}))
              .framework("torch").debugging(seed=seed))
    if training:
        config = config.training(**training)
    probe = make_env(env_id, env_config)
    masked = isinstance(probe, MaskedObservation)
    probe.close()
    if masked:
        from ray.rllib.core.rl_module.rl_module import RLModuleSpec
        from ray.rllib.examples.rl_modules.classes.action_masking_rlm import ActionMaskingTorchRLModule

        config = config.rl_module(rl_module_spec=RLModuleSpec(module_class=ActionMaskingTorchRLModule))
    return config
