"""The ``Policy`` interface and the registry of reference policies (DESIGN.md "Public API").

A policy is anything with ``name``, ``privileged``, ``reset(env, seed=None)`` and
``act(obs, info) -> action``. Reference policies (each paper's algorithm and its baselines) and
trained SB3 agents (:class:`joulegym.agents.SB3Policy`) are driven by the same evaluation loop.

Registry entries say which family and which env kinds (id stems such as ``"ETF"``, ``"ETFPhi"``)
a policy can drive, so ``evaluate.py`` can list the reference policies that apply to an id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np

GENERIC = "*"


@runtime_checkable
class Policy(Protocol):
    """What the evaluation loop needs from a reference policy or a trained agent."""

    name: str
    privileged: bool

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        """Bind to ``env`` (possibly wrapped) at the start of an episode."""

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        """The action for observation ``obs`` (and the step's ``info``)."""


class PolicyNotApplicable(ValueError):
    """Raised by ``Policy.reset`` when the policy cannot drive this env kind / action mode."""


@dataclass(frozen=True)
class PolicySpec:
    name: str
    family: str
    kinds: frozenset[str] | None  # None: every kind of the family (or of every family, if generic)
    factory: Callable[..., Policy]
    description: str


_REGISTRY: dict[str, PolicySpec] = {}


def register_policy(
    name: str,
    factory: Callable[..., Policy],
    *,
    family: str,
    description: str,
    kinds: Iterable[str] | None = None,
) -> None:
    """Register ``factory`` (called as ``factory(**kwargs)``) under a globally unique ``name``."""
    if name in _REGISTRY:
        raise ValueError(f"policy name {name!r} is already registered (family {_REGISTRY[name].family!r})")
    _REGISTRY[name] = PolicySpec(name, family, frozenset(kinds) if kinds else None, factory, description)


def make(name: str, **kwargs: Any) -> Policy:
    """Build the reference policy registered as ``name`` with ``kwargs`` (e.g. ``make("etf", phi=0.7)``)."""
    try:
        spec = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"policy={name!r} is unknown; available: {sorted(_REGISTRY)}") from None
    return spec.factory(**kwargs)


def available(family: str | None = None, kind: str | None = None) -> list[str]:
    """Names of the policies for ``family`` (generic ones included), optionally only those for ``kind``."""
    names = []
    for spec in _REGISTRY.values():
        if family is not None and spec.family not in (family, GENERIC):
            continue
        if kind is not None and spec.kinds is not None and kind not in spec.kinds:
            continue
        names.append(spec.name)
    return names


def spec(name: str) -> PolicySpec:
    if name not in _REGISTRY:
        raise ValueError(f"policy={name!r} is unknown; available: {sorted(_REGISTRY)}")
    return _REGISTRY[name]


def applicable(env: gym.Env) -> list[str]:
    """Reference policies that can drive ``env`` (by its family and kind)."""
    base = env.unwrapped
    return available(getattr(base, "family", None), getattr(base, "kind", None))


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
        self._space = env.action_space
        self._rng = np.random.default_rng(seed)

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        space = self._space
        if space is None:
            raise RuntimeError("RandomPolicy.act() called before reset(env)")
        mask = info.get("action_mask")
        if isinstance(space, gym.spaces.Discrete):
            choices = np.arange(space.n) if mask is None else np.flatnonzero(mask)
            return int(space.start + self._rng.choice(choices))
        if isinstance(space, gym.spaces.MultiDiscrete):
            return _sample_multidiscrete(space, mask, self._rng)
        if isinstance(space, gym.spaces.Box):
            low = np.where(np.isfinite(space.low), space.low, -1.0)
            high = np.where(np.isfinite(space.high), space.high, 1.0)
            return self._rng.uniform(low, high).astype(space.dtype)
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
