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


class WatchDecisions:
    """Wraps a policy and watches every decision the simulator applies, through the simulator's observer hook
    (:meth:`joulegym.core.simulator.Simulator.add_observer`): ``before(sim)`` runs at the decision point, when the
    policy acts (the simulator as the decision finds it), and ``after(sim, decision, state)`` right after the
    decision is applied, with what ``before`` returned (``None`` without ``before``)."""

    def __init__(self, policy: Any, after: Callable[..., None], before: Callable[[Any], Any] | None = None) -> None:
        self.policy, self.after, self.before = policy, after, before
        self.name, self.privileged = policy.name, policy.privileged
        self.sim: Any = None
        self._state: Any = None

    def reset(self, env: Any, seed: int | None = None) -> None:
        self.policy.reset(env, seed)
        sim = env.unwrapped.sim
        if sim is not self.sim:  # one observer per simulator (a simulator lives across the env's episodes)
            sim.add_observer(self._observe)
            self.sim = sim
        self._state = None

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        if self.before is not None:
            self._state = self.before(self.sim)
        return self.policy.act(obs, info)

    def _observe(self, sim: Any, decision: Any) -> None:
        self.after(sim, decision, self._state)
