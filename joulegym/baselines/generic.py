"""Generic reference policies that drive any family: ``random`` (the normalised score's zero)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from joulegym.core.policy import GENERIC, PolicyNotApplicable, register_policy


class RandomPolicy:
    """Uniform random actions from the env's action space (masked where the env offers a mask).

    The normalised score of ``evaluate.py`` puts this policy at 0.
    """

    privileged = False

    def __init__(self, name: str = "random") -> None:
        self.name = name
        self._space: gym.Space | None = None
        self._env: gym.Env | None = None
        self._rng = np.random.default_rng(0)

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self._env = env
        self._space = space = env.action_space
        self._rng = np.random.default_rng(seed)
        if isinstance(space, gym.spaces.Box):  # the bounds once per episode, not per step (an RL inner loop)
            self._box = (np.where(np.isfinite(space.low), space.low, -1.0),
                         np.where(np.isfinite(space.high), space.high, 1.0), space.dtype)

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        space = self._space
        if space is None:
            raise RuntimeError("RandomPolicy.act() called before reset(env)")
        mask = info.get("action_mask")
        if isinstance(space, gym.spaces.Discrete):
            choices = np.arange(space.n) if mask is None else np.flatnonzero(mask)
            # rng.integers(len) is the draw Generator.choice makes (the same stream), without its overhead
            return int(space.start + choices[self._rng.integers(len(choices))])
        if isinstance(space, gym.spaces.MultiDiscrete):
            return _sample_multidiscrete(space, mask, self._rng)
        if isinstance(space, gym.spaces.Box):
            low, high, dtype = self._box
            return self._rng.uniform(low, high).astype(dtype)
        raise PolicyNotApplicable(f"RandomPolicy cannot sample from {space}")


def _sample_multidiscrete(space: gym.spaces.MultiDiscrete, mask, rng: np.random.Generator) -> np.ndarray:
    nvec = np.asarray(space.nvec).ravel()
    action = np.empty(nvec.size, dtype=np.int64)
    offset = 0
    for k, n in enumerate(nvec):
        allowed = np.arange(n) if mask is None else np.flatnonzero(np.asarray(mask)[offset:offset + n])
        action[k] = rng.choice(allowed) if allowed.size else 0
        offset += n
    return action.reshape(space.shape)


register_policy(
    "random", RandomPolicy, family=GENERIC, description="uniform random action (masked); the score's zero"
)
