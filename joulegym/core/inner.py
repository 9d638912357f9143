"""Inner policies: policies that decide *inside* a simulator, and the one adapter that lets one drive an env.

Some reference policies are not agents acting on observations but parts of a system that run inside the
simulator: DREAM's dispatchers (MapScore, FCFS, Planaria, ...) decide at each of the SoC's decision points,
Qin's node level (thread mapping and DVFS) runs in every server under a cluster-level scheduler. They share
one protocol:

=========================  ========================================================================
``name``                   the registry name (one spelling, ``family/name`` qualified)
``privileged``             it reads what a deployed system could not (ranked apart)
``reset(sim, rng)``        bind to the simulator at the start of an episode; ``rng`` is the policy's
                           own stream (:func:`policy_rng`)
``decide(view)``           the decision at a decision point, from ``sim.view()`` (policies that drive
                           the decision loop; a family may add hooks of its own, e.g. Qin's node
                           level is called by its simulator at placements and control periods)
=========================  ========================================================================

They are registered in the same family-scoped registry as every policy (:func:`joulegym.core.policy.
register_policy` with ``inner=True``): :func:`joulegym.core.policy.make_inner` builds the inner policy
itself, :func:`joulegym.core.policy.make` wraps it in :class:`~joulegym.core.policy.InnerPolicyAdapter` so it
drives an env kind through the same loop as an agent (:func:`joulegym.core.rollout.rollout`).
:func:`run_inner` runs an episode on the simulator alone, without the env's observation and mask (the fast
path of evaluation and reproductions); each family's test proves both paths give the same metrics.

Seeding: every policy draws its random numbers from :func:`policy_rng`, one stream per (seed, name), so two
policies reset with the same seed do not share draws and the same seed gives the same decisions.
"""

from __future__ import annotations

import zlib
from typing import Any, Protocol, runtime_checkable

import numpy as np


def policy_rng(seed: int | None, name: str = "") -> np.random.Generator:
    """The random stream of policy ``name`` in an episode seeded with ``seed`` (``None``: fresh entropy).

    The stream is keyed by the name (``crc32``), so policies reset with one seed draw independent numbers.
    """
    if seed is None:
        return np.random.default_rng()
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer or None, got {seed!r}")
    return np.random.default_rng([int(seed), zlib.crc32(name.encode())])


@runtime_checkable
class InnerPolicy(Protocol):
    """What a simulator needs from a policy that decides inside it (module docstring)."""

    name: str
    privileged: bool

    def reset(self, sim: Any, rng: np.random.Generator) -> None:
        """Bind to ``sim`` at the start of an episode (after ``sim.reset``)."""


@runtime_checkable
class DecidingPolicy(InnerPolicy, Protocol):
    """An inner policy that answers the simulator's decision points (``decide(view)``)."""

    def decide(self, view: Any) -> Any:
        """The typed decision for the state ``view`` (``sim.view()``)."""


def run_inner(sim: Any, policy: Any, seed: int | None, instance: Any = None, *,
              rng: np.random.Generator | None = None) -> dict[str, Any]:
    """Run one episode of the deciding inner ``policy`` on ``sim`` alone and return ``sim.metrics()``.

    ``sim.reset(rng, instance)`` then ``policy.reset(sim, policy_rng(seed, policy.name))``; then ``advance`` /
    ``apply(decide(view))`` until the episode ends. An env does the same with its own ``rng`` (drawn from its
    ``np_random``) and instance: pass them to reproduce an env episode exactly (each family's parity test does).

    :param rng: the simulator's generator (default ``np.random.default_rng(seed)``).
    """
    if not callable(getattr(policy, "decide", None)):
        raise ValueError(f"run_inner needs a policy with decide(view); {getattr(policy, 'name', policy)!r} has none")
    stream = policy_rng(seed, policy.name)  # checks the seed before the simulator uses it
    sim.reset(np.random.default_rng(seed) if rng is None else rng, instance)
    policy.reset(sim, stream)
    view = sim.view()
    decide, apply, advance = policy.decide, sim.apply, sim.advance
    while advance():
        apply(decide(view))
    return sim.metrics()
