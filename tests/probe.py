"""A policy wrapper for tests that run episodes through :func:`joulegym.core.rollout.rollout`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Probe:
    """Wraps a policy: records the ``(obs, info)`` it acts on in :attr:`seen` and runs
    ``check(env, obs, info, action)`` at every decision, before the action is stepped (the env is at the
    decision point, so a check can read its state or copy it)."""

    def __init__(self, inner: Any, check: Callable[..., None] | None = None) -> None:
        self.inner, self.check = inner, check
        self.name = getattr(inner, "name", "probe")
        self.privileged = getattr(inner, "privileged", False)
        self.env: Any = None
        self.seen: list[tuple[Any, dict]] = []

    def reset(self, env: Any, seed: int | None = None) -> None:
        self.env, self.seen = env, []
        self.inner.reset(env, seed=seed)

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        action = self.inner.act(obs, info)
        self.seen.append((obs, info))
        if self.check is not None:
            self.check(self.env, obs, info, action)
        return action


class WatchApply:
    """Wraps a policy; every ``sim.apply(*args)`` of the episode runs as ``watch(sim, apply, *args)``, so a test
    can look at the simulator before and after each decision is applied (``apply(*args)`` applies it)."""

    def __init__(self, policy: Any, watch: Callable[..., None]) -> None:
        self.policy, self.watch = policy, watch
        self.name, self.privileged = policy.name, policy.privileged
        self.sim: Any = None

    def reset(self, env: Any, seed: int | None = None) -> None:
        self.policy.reset(env, seed)
        sim = self.sim = env.unwrapped.sim
        apply = sim.apply
        sim.apply = lambda *args: self.watch(sim, apply, *args)

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        return self.policy.act(obs, info)
