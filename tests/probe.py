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


class Observe:
    """Wraps a policy and watches the simulator through its observer hook
    (:meth:`joulegym.core.simulator.Simulator.add_observer`): ``before(sim)`` runs at every decision point (the
    env is about to apply the policy's action; what it returns is kept as :attr:`state`), ``after(sim, decision)``
    after every decision the simulator applies. :attr:`applied` counts the decisions applied."""

    def __init__(self, policy: Any, after: Callable[[Any, Any], None] | None = None,
                 before: Callable[[Any], Any] | None = None) -> None:
        self.policy, self.before, self.after = policy, before, after
        self.name, self.privileged = policy.name, policy.privileged
        self.sim: Any = None
        self.state: Any = None
        self.applied = 0

    def reset(self, env: Any, seed: int | None = None) -> None:
        self.policy.reset(env, seed)
        sim = env.unwrapped.sim
        if sim is not self.sim:  # one observer per simulator (a simulator lives across the env's episodes)
            sim.add_observer(self._observe)
            self.sim = sim
        self.state = None

    def _observe(self, sim: Any, decision: Any) -> None:
        self.applied += 1
        if self.after is not None:
            self.after(sim, decision)

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        if self.before is not None:
            self.state = self.before(self.sim)
        return self.policy.act(obs, info)
