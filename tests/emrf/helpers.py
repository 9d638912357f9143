"""Shared helpers of the EMRF tests: family-scoped policies and policy wrappers for the core rollout loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from joulegym import baselines


def policy(name: str, **kwargs: Any):
    """The EMRF reference policy ``name`` (family-scoped, so other families' modules are not loaded)."""
    return baselines.make(name, family="emrf", **kwargs)


class Probe:
    """Wraps a policy: ``check(env, obs, info, action)`` runs at every decision of the rollout loop, before
    the action is stepped (the env is at the decision point, so tests can copy it or read its state)."""

    privileged = False

    def __init__(self, inner: Any, check: Callable[..., None]) -> None:
        self.inner, self.check = inner, check
        self.name = getattr(inner, "name", "probe")
        self.env = None

    def reset(self, env: Any, seed: int | None = None) -> None:
        self.env = env
        self.inner.reset(env, seed=seed)

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        action = self.inner.act(obs, info)
        self.check(self.env, obs, info, action)
        return action
