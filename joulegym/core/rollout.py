"""The one episode loop: evaluation, benchmarks, standalone simulation helpers and tests all use it.

::

    episode = rollout(env, policy, seed=0)
    episode.total_return, episode.length, episode.metrics   # metrics: the final info["metrics"]

The policy is reset after the env (``policy.reset(env, seed)`` sees the first observation's state).

An inner policy wrapped for the env (:class:`~joulegym.core.policy.InnerPolicyAdapter`) reads ``sim.view()``, never
the observation: :func:`rollout_inner` runs its episode on the simulator path (the env's own reset, reward and
metrics; no observation, no mask, no action encoding), where the family allows it (``inner_fast_path``), and
gives the same return, length and metrics as :func:`rollout` (each such family's test proves it).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from joulegym.core.cache import BoundedCache
from joulegym.core.rewards import weighted_sum

MAX_EPISODE_STEPS = 10_000_000  # a guard against an env that never ends
# rollout_inner's episodes of inner policies that declare decisions_key: (env, seed, decisions) -> the result
_EPISODES: BoundedCache[tuple] = BoundedCache(1024)


def forget_episodes() -> None:
    """Empty :func:`rollout_inner`'s memo of episodes (tests and benchmarks run episodes afresh)."""
    _EPISODES.clear()


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

    A policy that reads no observation, on a family whose steps do not need one (:func:`observation_free`), steps
    without building observations (the same episode, each family's test proves it).

    :param record: keep every reward and info (for plots).
    :param on_step: called as ``on_step(obs, reward, info)`` after every step (the observations are then built).
    :raises RuntimeError: if the episode has not ended after ``max_steps`` steps.
    """
    obs, info = env.reset(seed=seed, options=options)
    policy.reset(env, seed=seed)
    if on_step is None and observation_free(env, policy):
        return _rollout_unobserved(env, policy, seed, info, record, max_steps)
    tally = _Tally(record, max_steps)
    terminated = truncated = False
    while not (terminated or truncated):
        tally.check()
        obs, reward, terminated, truncated, info = env.step(policy.act(obs, info))
        tally.add(reward, info)
        if on_step is not None:
            on_step(obs, reward, info)
    return tally.episode(seed, policy, terminated, truncated, info)


class _Tally:
    """One episode's bookkeeping, shared by every loop of this module: the running return and length, each step's
    reward and info with ``record``, the ``max_steps`` guard and, on the loops that step ``env.unwrapped`` past its
    wrappers, the truncation of the ``TimeLimit`` wrappers (:func:`_time_limits`) those loops stand in for."""

    __slots__ = ("infos", "length", "limit", "max_steps", "record", "rewards", "total")

    def __init__(self, record: bool, max_steps: int, limit: int | None = None) -> None:
        self.total: Any = 0.0
        self.length = 0
        self.record, self.max_steps, self.limit = record, max_steps, limit
        self.rewards: list[Any] = []
        self.infos: list[dict[str, Any]] = []

    def check(self) -> None:
        """Before a step: the ``max_steps`` guard."""
        if self.length >= self.max_steps:
            raise RuntimeError(f"the episode did not end within {self.max_steps} steps")

    def add(self, reward: Any, info: dict[str, Any] | None) -> bool:
        """After a step: count its ``reward`` (and keep it and ``info`` with ``record``); whether a ``TimeLimit``
        truncates the episode here (``TimeLimit.step``: after its ``limit``-th step, terminated or not)."""
        if isinstance(reward, np.ndarray):
            self.total = self.total + reward
        else:
            self.total += float(reward)
        self.length += 1
        if self.record:
            self.rewards.append(reward)
            self.infos.append(info)  # type: ignore[arg-type]
        return self.limit is not None and self.length >= self.limit

    def episode(self, seed: int | None, policy: Any, terminated: bool, truncated: bool,
                info: dict[str, Any]) -> Episode:
        return Episode(seed, getattr(policy, "name", type(policy).__name__), self.total, self.length,
                       bool(terminated), bool(truncated), info, self.rewards, self.infos)


def _reward_of(base: Any) -> Callable[[tuple[float, ...]], Any]:
    """The env's ``step()`` reward from a step's reward parts: the parts as an array (``vector_reward``) or their
    weighted sum."""
    if base._vector_reward:
        return lambda parts: np.array(parts, dtype=np.float64)
    weights = base.reward_weights
    return lambda parts: float(weighted_sum(weights, parts))


# The wrappers the loops that step env.unwrapped honour besides TimeLimit: gym.make's order and passive checkers,
# which never change a step's result (docs/architecture.md); any other wrapper keeps an episode on env.step().
_TRANSPARENT_WRAPPERS = (gym.wrappers.OrderEnforcing, gym.wrappers.PassiveEnvChecker)


def _time_limits(env: Any) -> list[Any] | None:
    """The ``TimeLimit`` wrappers between ``env`` and ``env.unwrapped``, whose truncation a loop past the wrappers
    applies itself; ``None`` when the stack holds any other wrapper but :data:`_TRANSPARENT_WRAPPERS` (a reward,
    observation, action or autoreset wrapper changes the episode ``env.step()`` plays)."""
    limits: list[Any] = []
    layer = env
    while layer is not env.unwrapped:
        if type(layer) is gym.wrappers.TimeLimit:
            limits.append(layer)
        elif type(layer) not in _TRANSPARENT_WRAPPERS:
            return None
        layer = getattr(layer, "env", None)
        if layer is None:
            return None
    return limits


def _step_limit(limits: list[Any]) -> int | None:
    """The step after which the ``TimeLimit`` wrappers ``limits`` truncate an episode just reset."""
    return min((t._max_episode_steps - t._elapsed_steps for t in limits), default=None)


def _count_steps(limits: list[Any], steps: int) -> None:
    """Leave the ``TimeLimit`` wrappers as ``steps`` calls of ``env.step()`` would have."""
    for wrapper in limits:
        wrapper._elapsed_steps += steps


def observation_free(env: Any, policy: Any) -> bool:
    """Whether ``policy``'s episode on ``env`` may step without building observations: the policy reads only the
    info and the action space (``reads_observation = False``, e.g. :class:`~joulegym.core.policy.RandomPolicy`),
    the env's family declares ``observation_free_steps`` and ``env``'s wrappers are ones the loop honours
    (:func:`_time_limits`)."""
    return getattr(policy, "reads_observation", True) is False and \
        bool(getattr(env.unwrapped, "observation_free_steps", False)) and _time_limits(env) is not None


def _rollout_unobserved(env: Any, policy: Any, seed: int | None, info: dict[str, Any], record: bool,
                        max_steps: int) -> Episode:
    """:func:`rollout`'s loop after the reset for an :func:`observation_free` policy: each step is the env's
    ``step()`` without its ``_observe()`` (the same transition, reward and info; the ``TimeLimit`` wrappers'
    truncation applied here), the policy given ``None`` for the observation. The next episode starts with a reset,
    which builds the observation afresh."""
    base, limits = env.unwrapped, _time_limits(env)
    advance, make_info, reward_of = base._advance, base._info, _reward_of(base)
    tally = _Tally(record, max_steps, _step_limit(limits))
    terminated = truncated = False
    while not (terminated or truncated):
        tally.check()
        parts, terminated, truncated = advance(policy.act(None, info))
        info = make_info(final=base._episode_over)
        truncated = tally.add(reward_of(parts), info) or truncated
    _count_steps(limits, tally.length)
    return tally.episode(seed, policy, terminated, truncated, info)


def simulator_path(env: Any, policy: Any) -> bool:
    """Whether ``policy``'s episode on ``env`` may run on the simulator path (:func:`rollout_inner`): the policy is
    an inner policy behind the core's adapter (it decides from ``sim.view()``, not from the observation), the
    env's family declares ``inner_fast_path`` and ``env``'s wrappers are ones the loop honours
    (:func:`_time_limits`)."""
    from joulegym.core.policy import InnerPolicyAdapter

    return isinstance(policy, InnerPolicyAdapter) and bool(getattr(env.unwrapped, "inner_fast_path", False)) \
        and _time_limits(env) is not None


def rollout_inner(env: Any, policy: Any, seed: int | None = None, *, record: bool = False,
                  options: dict[str, Any] | None = None, max_steps: int = MAX_EPISODE_STEPS) -> Episode:
    """:func:`rollout` of an inner ``policy`` (:func:`simulator_path`) on the simulator path: the env resets as in
    :func:`rollout` (its instance draw, its simulator), then every step applies ``policy.inner.decide(sim.view())``
    through the env's transition and reward (``_advance_decision``) with the env's ``observing`` off; no
    observation, mask or action encoding is built. The return, length, final ``info["metrics"]`` and, with
    ``record``, each step's reward and info (without ``action_mask``) equal :func:`rollout`'s, a ``TimeLimit``
    wrapper's truncation included. An inner policy with a ``decisions_key(sim)`` shares its unrecorded episodes, in
    this process, with every policy of the same key on the same env config, step limit, seed and options
    (:func:`_memo_key`): the second is not run again (its result is the first's, which it would repeat decision
    for decision); an inner policy's ``alike_keys(sim)``, asked after the episode, names further keys whose
    policies, the episode shows, would have played it decision for decision.

    :raises ValueError: if ``policy`` on ``env`` cannot take this path.
    :raises RuntimeError: if the episode has not ended after ``max_steps`` steps.
    """
    if not simulator_path(env, policy):
        raise ValueError(f"{getattr(policy, 'name', policy)!r} on {type(env.unwrapped).__name__} cannot run on the "
                         "simulator path (an inner policy behind the core's adapter, on a family with "
                         "inner_fast_path, wrapped at most in TimeLimit and gym.make's checkers, is needed)")
    env.reset(seed=seed, options=options)
    policy.reset(env, seed=seed)
    base, limits = env.unwrapped, _time_limits(env)
    limit = _step_limit(limits)
    memo = _memo_key(base, policy.inner, seed, options, limit) if not record else None
    if memo is not None and memo in _EPISODES:
        base._episode_over = True  # as after the episode: the next step must be a reset
        total, length, terminated, truncated, info = copy.deepcopy(_EPISODES[memo])
        _count_steps(limits, length)
        return Episode(seed, getattr(policy, "name", type(policy).__name__), total, length, terminated, truncated,
                       info)
    tally = _Tally(record, max_steps, limit)
    terminated, truncated, info = _play_inner(base, policy.inner, tally)
    _count_steps(limits, tally.length)
    if memo is not None:
        kept = copy.deepcopy((tally.total, tally.length, terminated, truncated, info))
        for key in (memo[-1], *getattr(policy.inner, "alike_keys", lambda sim: ())(base.sim)):
            _EPISODES.put((*memo[:-1], key), kept)
    return tally.episode(seed, policy, terminated, truncated, info)


def _play_inner(base: Any, inner: Any, tally: _Tally) -> tuple[bool, bool, dict[str, Any]]:
    """:func:`rollout_inner`'s loop after the resets: ``(terminated, truncated, the last info)``."""
    decide, view, advance, reward_of = inner.decide, base.sim.view(), base._advance_decision, _reward_of(base)
    make_info, record = base._info, tally.record
    terminated = truncated = False
    base.observing = False
    try:
        while not (terminated or truncated):
            tally.check()
            parts, terminated, truncated = advance(decide(view))
            info = make_info(final=base._episode_over, mask=False) if record else None
            truncated = tally.add(reward_of(parts), info) or truncated
        ended = base._episode_over  # False when only a TimeLimit ended the episode: no final metrics, as step()
    finally:
        base.observing = True
        base._episode_over = True  # the observation was not kept up to date: the next step must be a reset
    if not record:
        info = make_info(final=ended, mask=False)
    return bool(terminated), bool(truncated), info  # type: ignore[return-value]


def _memo_key(base: Any, inner: Any, seed: int | None, options: dict[str, Any] | None,
              limit: int | None = None) -> Hashable | None:
    """The key under which :func:`rollout_inner` keeps an episode: the env (its class, resolved config and render
    mode), the ``TimeLimit`` wrappers' step ``limit``, the seed and options, and the inner policy's
    ``decisions_key(sim)`` after both resets (a key equal for policies that decide alike on this episode, e.g. two
    names of one scheduler; ``None``: not shared). Without a
    ``decisions_key`` or a seed, no key; with reset options, none either (their repr can elide large arrays, so it
    could not tell two option tables apart)."""
    decisions = getattr(inner, "decisions_key", None)
    if decisions is None or seed is None or options:
        return None
    key = decisions(base.sim)
    if key is None:
        return None
    return (type(base).__module__, type(base).__qualname__, repr(sorted(base.config.items())), base.render_mode,
            limit, int(seed), repr(options), key)


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
