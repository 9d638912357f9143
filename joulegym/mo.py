"""Every joulegym env kind through MO-Gymnasium: the vector reward of named parts (docs/tradeoffs.md).

MO-Gymnasium's convention (Alegre et al., "MO-Gym", NeurIPS 2022 Datasets and Benchmarks, §3): ``step`` returns the
reward as a ``np.ndarray`` and the env declares its ``reward_space`` (a ``Box``, one entry per objective);
``mo_gymnasium.make(id)`` is ``gym.make(id)`` without Gymnasium's scalar-reward checker. Every joulegym env already
computes its named reward parts (:mod:`joulegym.core.rewards`) and returns them as the reward with
``vector_reward=True``; this module registers, for every id the family descriptors register
(``joulegym/<Kind>[-<scenario>]-v<N>``), its multi-objective twin ``joulegym-mo/<Kind>[-<scenario>]-v<N>`` with
``vector_reward=True`` fixed, from the descriptors (:func:`joulegym.core.family.families`), so a family added later
gets its twins on the next :func:`register`:

.. code-block:: python

    import mo_gymnasium, joulegym   # import joulegym registers the twins
    env = mo_gymnasium.make("joulegym-mo/ETF-tx2-fig5-v0")
    env = mo_gymnasium.wrappers.LinearReward(env, weight=np.array([0.5, 0.5, 0, 0]))

The twins live in their own namespace, so what enumerates ``joulegym/`` ids (``python -m joulegym list``, the
scalar-reward checks, the leaderboard) never meets a vector reward.
"""

from __future__ import annotations

from typing import Any

from joulegym.core.family import NAMESPACE, env_id, families

MO_NAMESPACE = f"{NAMESPACE}-mo"


def mo_id(scalar_id: str) -> str:
    """``joulegym/ETF-tx2-fig5-v0`` -> ``joulegym-mo/ETF-tx2-fig5-v0`` (an ``joulegym-mo/`` id is returned as is).

    :raises ValueError: for an id outside both namespaces.
    """
    if scalar_id.startswith(f"{MO_NAMESPACE}/"):
        return scalar_id
    if not scalar_id.startswith(f"{NAMESPACE}/"):
        raise ValueError(f"env id {scalar_id!r} is not a joulegym id (expected '{NAMESPACE}/<Kind>-v<N>' or "
                         f"'{MO_NAMESPACE}/<Kind>-v<N>')")
    return f"{MO_NAMESPACE}/{scalar_id.split('/', 1)[1]}"


def register() -> list[str]:
    """Register the multi-objective twin of every kind and scenario id of every registered family (idempotent);
    returns the twin ids."""
    import gymnasium as gym

    ids = []
    for descriptor in families():
        for kind in descriptor.kinds:
            mode = {} if kind.action_mode is None else {"action_mode": kind.action_mode}
            entries = [(env_id(kind.name, version=kind.version), {})]
            entries += [(env_id(kind.name, s.name, kind.version), {"scenario": s.name})
                        for s in descriptor.scenarios.values() if s.applies_to(kind.name)]
            for scalar, kwargs in entries:
                twin = mo_id(scalar)
                if twin not in gym.registry:
                    gym.register(id=twin, entry_point=kind.entry_point,
                                 kwargs={**mode, **kwargs, "vector_reward": True})
                ids.append(twin)
    return ids


def make(env_id_: str, **kwargs: Any):
    """``mo_gymnasium.make`` of the twin of ``env_id_`` (a ``joulegym/`` or ``joulegym-mo/`` id).

    :raises ValueError: for an unknown id, or ``vector_reward=False`` (the twin's reward is the vector).
    """
    import gymnasium as gym
    import mo_gymnasium

    if kwargs.get("vector_reward", True) is not True:
        raise ValueError("vector_reward: a joulegym-mo env returns the reward parts vector; use the joulegym/ id "
                         "for a scalar reward")
    register()
    twin = mo_id(env_id_)
    if twin not in gym.registry:
        raise ValueError(f"env id {env_id_!r} is unknown; python -m joulegym list prints the ids")
    return mo_gymnasium.make(twin, **{k: v for k, v in kwargs.items() if k != "vector_reward"})
