"""Episode helpers of the ETF tests: every episode runs through :func:`joulegym.core.rollout.rollout`."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from joulegym import baselines
from joulegym.core.rollout import Episode, rollout
from tests.probe import Probe

__all__ = ["Probe", "episode", "final_metrics", "infos", "make_env", "policy"]


def make_env(env_id: str, **kwargs: Any) -> gym.Env:
    """``gym.make`` with the full info (``info_level="full"``, the per-slot diagnostics these tests read) unless
    ``info_level`` is given; the lean default has its own tests."""
    kwargs.setdefault("info_level", "full")
    return gym.make(env_id, **kwargs)


def policy(name_or_policy: Any, **kwargs: Any) -> Any:
    return baselines.make(name_or_policy, family="etf", **kwargs) if isinstance(name_or_policy, str) else name_or_policy


def episode(env: str | gym.Env, name_or_policy: Any = "etf", seed: int = 0, **env_kwargs: Any) -> Episode:
    """One recorded episode of a policy (a name or an object) on an env (an id or an env)."""
    env = make_env(env, **env_kwargs) if isinstance(env, str) else env
    return rollout(env, policy(name_or_policy), seed=seed, record=True)


def infos(env: str | gym.Env, name_or_policy: Any = "etf", seed: int = 0, **env_kwargs: Any) -> list[dict]:
    """The step infos of one episode."""
    return episode(env, name_or_policy, seed, **env_kwargs).infos


def final_metrics(env: str | gym.Env, name_or_policy: Any = "etf", seed: int = 0, **env_kwargs: Any) -> dict:
    """The episode's metrics (the last info["metrics"])."""
    return episode(env, name_or_policy, seed, **env_kwargs).metrics
