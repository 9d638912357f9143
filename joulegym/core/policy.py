"""The policy interface and the family-scoped registry of reference policies.

A policy is anything with ``name``, ``privileged``, ``reset(env, seed=None)`` and
``act(obs, info) -> action``: reference policies (each paper's algorithm and its baselines) and trained
agents go through the same loop (:func:`joulegym.core.rollout.rollout`). A privileged policy reads the
simulator's structured state (``env.unwrapped.sim.view()``) instead of the observation. A policy may
declare ``env_config``: settings of the env that are part of what the policy *is* (a baseline's own
placement rule, say); :func:`env_config_for` applies them under the user's keyword arguments.

Policies that decide inside a simulator (DREAM's dispatchers, Qin's node level) are *inner* policies
(:mod:`joulegym.core.inner`), registered here with ``inner=True``: :func:`make_inner` builds one, :func:`make`
wraps one that has ``decide(view)`` in :class:`InnerPolicyAdapter` so it drives the env.

Names are scoped by family: ``make("fifo", family="powerflow")`` or ``make("powerflow/fifo")``; the
short form ``make("fifo")`` works while only one family has a policy of that name. Generic policies
belong to every family: :class:`RandomPolicy` (``random``, a row on the leaderboard, never its zero) is the core's
own. A family's policy module is imported on first use, by the loader the package root installs
(:func:`joulegym.core.family.set_policy_loader`), so ``import joulegym`` loads none of them. A name has one
spelling: a renamed policy's old name is refused with a one-line message naming the new one (:func:`register_rename`),
never kept as an alias.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np

from joulegym.core.actions import flat_mask
from joulegym.core.inner import policy_rng

GENERIC = "*"


@runtime_checkable
class Policy(Protocol):
    """What the episode loop needs from a reference policy or a trained agent."""

    name: str
    privileged: bool

    def reset(self, env: Any, seed: int | None = None) -> None:
        """Bind to ``env`` (possibly wrapped) at the start of an episode, after ``env.reset``."""

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        """The action for observation ``obs`` (and the step's ``info``)."""


class PolicyNotApplicable(ValueError):
    """Raised by ``Policy.reset`` when the policy cannot drive this env kind / action mode."""


class InnerPolicyAdapter:
    """An inner policy as an agent-facing :class:`~joulegym.core.policy.Policy`.

    ``reset(env, seed)`` resets the inner policy on ``env.unwrapped.sim`` with :func:`policy_rng`; ``act`` asks it
    for the decision on ``sim.view()`` and returns ``env.unwrapped.action_type.encode(decision)``. The env's
    action type must encode every decision the inner policy makes (a family whose integer action cannot hold
    a decision carries it alongside, e.g. DREAM's sub-net choice).

    :param inner: the inner policy (with ``decide``).
    :param kinds: the env kinds it can drive (``None``: every kind of its family whose action type encodes).
    :param family: the family it belongs to (checked at ``reset``).
    """

    def __init__(self, inner: Any, *, family: str, kinds: frozenset[str] | None = None) -> None:
        if not callable(getattr(inner, "decide", None)):
            raise ValueError(f"inner policy {getattr(inner, 'name', inner)!r} has no decide(view): it runs inside "
                             "the simulator only (a simulator setting), not as an agent-facing policy")
        self.inner, self.family, self.kinds = inner, family, kinds
        self.name = inner.name
        self.privileged = bool(getattr(inner, "privileged", False))
        self._base: Any = None

    def reset(self, env: Any, seed: int | None = None) -> None:
        base = env.unwrapped
        if getattr(base, "family", None) != self.family or (self.kinds is not None and base.kind not in self.kinds):
            allowed = sorted(self.kinds) if self.kinds is not None else f"every {self.family} kind"
            found = getattr(base, "kind", type(base).__name__)
            raise PolicyNotApplicable(f"{self.name} drives {allowed}, not {found!r}")
        encode = getattr(base.action_type, "encode", None)
        if encode is None:
            raise PolicyNotApplicable(f"{self.name}: action mode {base.action_mode!r} cannot encode its decisions")
        self._base, self._encode, self._sim = base, encode, base.sim
        self.inner.reset(base.sim, policy_rng(seed, self.name))

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        if self._base is None:
            raise RuntimeError(f"{self.name}.act() called before reset(env)")
        return self._encode(self.inner.decide(self._sim.view()))

    def __getattr__(self, item: str) -> Any:  # the inner policy's settings (alpha, beta, ...) read through
        if item == "inner":
            raise AttributeError(item)
        return getattr(self.inner, item)


@dataclass(frozen=True)
class PolicySpec:
    name: str
    family: str
    kinds: frozenset[str] | None  # None: every kind of the family (or of every family, if generic)
    factory: Callable[..., Any]
    description: str
    inner: bool = False  # the factory builds an inner policy (joulegym.core.inner)

    @property
    def qualified_name(self) -> str:
        return self.name if self.family == GENERIC else f"{self.family}/{self.name}"


_REGISTRY: dict[tuple[str, str], PolicySpec] = {}
_RENAMED: dict[tuple[str, str], str] = {}  # (family, old name) -> the new name


def register_policy(name: str, factory: Callable[..., Any], *, family: str, description: str,
                    kinds: Iterable[str] | None = None, inner: bool = False) -> None:
    """Register ``factory`` (called as ``factory(**kwargs)``) as ``family/name``.

    :param kinds: the env kinds the policy drives (``None``: every kind).
    :param inner: ``factory`` builds an inner policy (:mod:`joulegym.core.inner`); :func:`make` wraps it.
    """
    if "/" in name or not name or name != name.strip() or "_" in name:
        raise ValueError(f"policy name {name!r} must be non-empty, without '/', '_' or surrounding spaces "
                         "(one spelling: words joined by '-')")
    key = (family, name)
    if key in _REGISTRY:
        raise ValueError(f"policy {family}/{name} is already registered")
    _REGISTRY[key] = PolicySpec(name, family, frozenset(kinds) if kinds else None, factory, description,
                                bool(inner))


def register_rename(old: str, new: str, *, family: str) -> None:
    """Refuse the old name ``family/old`` of the policy now registered as ``new``: :func:`spec` (and so
    :func:`make`) raises a one-line ``ValueError`` saying it was renamed (one spelling per policy, no alias)."""
    if (family, old) in _REGISTRY:
        raise ValueError(f"policy {family}/{old} is registered; a renamed name must not be")
    _RENAMED[(family, old)] = new


def _renamed(name: str, family: str | None) -> None:
    """``ValueError`` if ``name`` is a renamed policy's old name (in ``family``, or in any family)."""
    found = [(fam, new) for (fam, old), new in _RENAMED.items() if old == name and family in (None, fam)]
    if found:
        fam, new = found[0]
        raise ValueError(f"policy={name!r} was renamed to {new!r} ({fam}/{new})")


def _load(family: str | None) -> None:
    from joulegym.core.family import families, load_policies

    for name in [family] if family is not None else [f.name for f in families()]:
        load_policies(name)


def spec(name: str, family: str | None = None) -> PolicySpec:
    """The registry entry of ``name`` (``"family/name"``, or ``name`` with ``family=``, or an unambiguous name)."""
    if "/" in name:
        family, _, name = name.partition("/")
    _load(family)
    if family is not None:
        found = _REGISTRY.get((family, name)) or _REGISTRY.get((GENERIC, name))
        if found is None:
            _renamed(name, family)
            raise ValueError(f"policy={name!r} is unknown for family {family!r}; available: {available(family)}")
        return found
    matches = [s for (fam, n), s in _REGISTRY.items() if n == name]
    if not matches:
        _renamed(name, None)
        known = sorted(s.qualified_name for s in _REGISTRY.values())
        raise ValueError(f"policy={name!r} is unknown; available: {known}")
    if len(matches) > 1:
        generic = [s for s in matches if s.family == GENERIC]
        if generic:
            return generic[0]
        raise ValueError(f"policy={name!r} is ambiguous: {sorted(s.qualified_name for s in matches)}; "
                         "qualify it as FAMILY/NAME or pass family=")
    return matches[0]


def make(name: str, family: str | None = None, **kwargs: Any) -> Any:
    """Build the reference policy ``name`` with ``kwargs`` (e.g. ``make("etf", phi=0.7)``); an inner policy comes
    wrapped in :class:`InnerPolicyAdapter` (it then drives its family's env kinds)."""
    return build(spec(name, family), **kwargs)


def build(found: PolicySpec, **kwargs: Any) -> Any:
    """The agent-facing policy of registry entry ``found`` (an inner one wrapped in :class:`InnerPolicyAdapter`)."""
    built = found.factory(**kwargs)
    return InnerPolicyAdapter(built, family=found.family, kinds=found.kinds) if found.inner else built


def make_inner(name: str, family: str | None = None, **kwargs: Any) -> Any:
    """Build the inner policy ``name`` itself (to pass to a simulator, or to
    :func:`~joulegym.core.inner.run_inner`)."""
    found = spec(name, family)
    if not found.inner:
        raise ValueError(f"policy {found.qualified_name!r} is not an inner policy; inner policies of "
                         f"{found.family!r}: {available(found.family, inner=True)}")
    return found.factory(**kwargs)


def available(family: str | None = None, kind: str | None = None, inner: bool | None = None) -> list[str]:
    """Names of the policies for ``family`` (generic ones included), optionally only those for ``kind``, or only
    the inner (``inner=True``) or the other (``inner=False``) ones."""
    _load(family)
    names = []
    for spec_ in _REGISTRY.values():
        if family is not None and spec_.family not in (family, GENERIC):
            continue
        if inner is not None and spec_.inner != inner:
            continue
        if kind is not None and spec_.kinds is not None and kind not in spec_.kinds:
            continue
        names.append(spec_.name if family is not None else spec_.qualified_name)
    return names


def applicable(env: Any) -> list[str]:
    """Reference policies that can drive ``env`` (by its family and kind)."""
    base = env.unwrapped
    return available(getattr(base, "family", None), getattr(base, "kind", None))


def env_config_for(policy: Any, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The env kwargs for ``policy``: its ``env_config`` (if any) under the user's ``overrides``."""
    config = dict(getattr(policy, "env_config", None) or {})
    config.update(overrides or {})
    return config


def forget_family(family: str) -> None:
    """Drop ``family``'s registered policies (tests that register and remove a toy family)."""
    for key in [k for k in _REGISTRY if k[0] == family]:
        del _REGISTRY[key]
    for key in [k for k in _RENAMED if k[0] == family]:
        del _RENAMED[key]


# --- the generic policy -------------------------------------------------------------------------------------
class RandomPolicy:
    """Uniform random actions from the env's action space (masked where the env offers a mask).

    A row on the leaderboard (a baseline), never its zero: the zero is the family's simple deployable baseline.
    It reads the info's ``action_mask`` and the action space, never the observation (``reads_observation``).
    """

    privileged = False
    reads_observation = False

    def __init__(self, name: str = "random") -> None:
        self.name = name
        self._space: gym.Space | None = None
        self._env: gym.Env | None = None
        self._rng = np.random.default_rng(0)

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        self._env = env
        self._space = space = env.action_space
        self._rng = np.random.default_rng(seed)
        if isinstance(space, gym.spaces.MultiDiscrete):  # the mask layout once per episode, not per step
            self._layout = _multidiscrete_layout(space)
        if isinstance(space, gym.spaces.Box):  # the bounds once per episode, not per step (an RL inner loop)
            low = np.where(np.isfinite(space.low), space.low, -1.0).astype(np.float64)
            high = np.where(np.isfinite(space.high), space.high, 1.0).astype(np.float64)
            self._box = (low, high - low, space.shape, space.dtype)

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        space = self._space
        if space is None:
            raise RuntimeError("RandomPolicy.act() called before reset(env)")
        mask = info.get("action_mask")
        if isinstance(space, gym.spaces.Discrete):
            choices = np.arange(space.n) if mask is None else np.flatnonzero(np.asarray(mask))
            # rng.integers(len) is the draw Generator.choice makes (the same stream), without its overhead
            return int(space.start + choices[self._rng.integers(len(choices))])
        if isinstance(space, gym.spaces.MultiDiscrete):
            return _sample_multidiscrete(space, mask, self._rng, self._layout)
        if isinstance(space, gym.spaces.Box):
            # low + (high - low) * U[0, 1): the draws and bits of rng.uniform(low, high), without its argument checks
            low, span, shape, dtype = self._box
            return (low + span * self._rng.random(shape)).astype(dtype)
        raise PolicyNotApplicable(f"RandomPolicy cannot sample from {space}")


def _multidiscrete_layout(space: gym.spaces.MultiDiscrete) -> tuple[np.ndarray, np.ndarray, int]:
    """``(nvec, start of each sub-space in the flat mask, flat size)`` of ``space`` (once per episode)."""
    nvec = np.asarray(space.nvec, dtype=np.int64).ravel()
    ends = np.cumsum(nvec)
    return nvec, ends - nvec, int(ends[-1]) if ends.size else 0


def _sample_multidiscrete(space: gym.spaces.MultiDiscrete, mask, rng: np.random.Generator,
                          layout: tuple[np.ndarray, np.ndarray, int] | None = None) -> np.ndarray:
    """Per sub-space a uniform draw among its allowed values (0 where none is allowed), in one vectorised call:
    ``rng.integers(0, counts)`` draws the same stream as one ``rng.choice(allowed)`` per sub-space would (the
    same actions and generator state). ``layout``: :func:`_multidiscrete_layout` of ``space``, if known."""
    nvec, starts, total = layout if layout is not None else _multidiscrete_layout(space)
    flat = np.ones(total, dtype=bool) if mask is None else flat_mask(mask)
    if flat.size != total:
        raise ValueError(f"action mask has {flat.size} entries, the MultiDiscrete space {nvec.tolist()} needs "
                         f"{total}")
    if not total:
        return np.zeros(space.shape, dtype=np.int64)
    counts = np.add.reduceat(flat, starts)
    seen = np.cumsum(flat)  # the draw-th allowed value of a sub-space: where the running count reaches it
    if counts.all():  # the common case: no sub-space is fully masked
        draws = rng.integers(0, counts)
        return (np.searchsorted(seen, seen[starts] - flat[starts] + draws + 1) - starts).reshape(space.shape)
    action = np.zeros(nvec.size, dtype=np.int64)
    some = counts > 0
    if some.any():
        draws = rng.integers(0, counts[some])
        first = starts[some]
        action[some] = np.searchsorted(seen, seen[first] - flat[first] + draws + 1) - first
    return action.reshape(space.shape)


register_policy("random", RandomPolicy, family=GENERIC,
                description="uniform random action (masked); the score's zero")
