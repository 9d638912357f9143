"""The one episode loop: evaluation, benchmarks, standalone simulation helpers and tests all use it.

::

    episode = rollout(env, policy, seed=0)
    episode.total_return, episode.length, episode.metrics   # metrics: the final info["metrics"]

The policy is reset after the env (``policy.reset(env, seed)`` sees the first observation's state).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MAX_EPISODE_STEPS = 10_000_000  # a guard against an env that never ends


@dataclass
class Episode:
    """One finished episode.

    :param total_return: undiscounted return (an array for vector rewards).
    :param length: steps taken.
    :param final_info: the last step's ``info``.
    :param rewards: per-step rewards (with ``record=True``).
    :param infos: per-step infos (with ``record=True``).
    """

    seed: int | None
    policy: str
    total_return: Any
    length: int
    terminated: bool
    truncated: bool
    final_info: dict[str, Any]
    rewards: list[Any] = field(default_factory=list)
    infos: list[dict[str, Any]] = field(default_factory=list)

    @property
    def metrics(self) -> dict[str, Any]:
        """The paper's metrics of the episode (the last ``info["metrics"]``)."""
        return dict(self.final_info.get("metrics") or {})


def rollout(env: Any, policy: Any, seed: int | None = None, *, record: bool = False,
            options: dict[str, Any] | None = None, max_steps: int = MAX_EPISODE_STEPS,
            on_step: Callable[[Any, float, dict[str, Any]], None] | None = None) -> Episode:
    """Run one episode of ``policy`` on ``env`` from ``seed``.

    :param record: keep every reward and info (for plots).
    :param on_step: called as ``on_step(obs, reward, info)`` after every step.
    :raises RuntimeError: if the episode has not ended after ``max_steps`` steps.
    """
    obs, info = env.reset(seed=seed, options=options)
    policy.reset(env, seed=seed)
    total: Any = 0.0
    length = 0
    rewards: list[Any] = []
    infos: list[dict[str, Any]] = []
    terminated = truncated = False
    while not (terminated or truncated):
        if length >= max_steps:
            raise RuntimeError(f"the episode did not end within {max_steps} steps")
        obs, reward, terminated, truncated, info = env.step(policy.act(obs, info))
        if isinstance(reward, np.ndarray):
            total = total + reward
        else:
            total += float(reward)
        length += 1
        if record:
            rewards.append(reward)
            infos.append(info)
        if on_step is not None:
            on_step(obs, reward, info)
    return Episode(seed, getattr(policy, "name", type(policy).__name__), total, length, bool(terminated),
                   bool(truncated), info, rewards, infos)


class ActionSequencePolicy:
    """Replays a fixed list of actions (then repeats the last): a policy for tests and examples."""

    privileged = False

    def __init__(self, actions: list[Any], name: str = "sequence") -> None:
        if not actions:
            raise ValueError("actions must hold at least one action")
        self.actions, self.name = list(actions), name
        self._step = 0

    def reset(self, env: Any, seed: int | None = None) -> None:
        self._step = 0

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        action = self.actions[min(self._step, len(self.actions) - 1)]
        self._step += 1
        return action
