"""Family registration passes a kind's optional ``vector_entry_point`` to Gymnasium."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np

from joulegym.core.family import EnvKind, register_family, unregister_family
from joulegym.core.policy import forget_family
from tests.core import toy_family


class ToyVectorEnv(gym.vector.SyncVectorEnv):
    """A stand-in batched env: what ``vector_entry_point`` names is called as ``Class(num_envs=N, **kwargs)``."""

    def __init__(self, num_envs: int, **kwargs) -> None:
        self.made_with = dict(kwargs)
        super().__init__([lambda: toy_family.ToyEnv(**kwargs) for _ in range(num_envs)])


def test_vector_entry_point_reaches_gym_make_vec():
    kind = dataclasses.replace(toy_family.FAMILY.kinds[0], name="ToyBatched",
                               vector_entry_point=f"{__name__}:ToyVectorEnv")
    family = dataclasses.replace(toy_family.FAMILY, name="toy-batched", kinds=(kind,), scenarios={},
                                 benchmark=None, trajectory_pins=())
    ids = register_family(family)
    try:
        assert ids == ["joulegym/ToyBatched-v0"]
        assert gym.spec(ids[0]).vector_entry_point == f"{__name__}:ToyVectorEnv"
        vec = gym.make_vec(ids[0], num_envs=3, vectorization_mode="vector_entry_point")
        assert isinstance(vec, ToyVectorEnv) and vec.num_envs == 3
        assert vec.made_with == {"action_mode": kind.action_mode}  # the id's registered kwargs
        obs, _ = vec.reset(seed=0)
        assert np.asarray(obs).shape[0] == 3
    finally:
        unregister_family("toy-batched")
        forget_family("toy-batched")


def test_kinds_without_one_register_none():
    assert EnvKind("X", "m:C", None, "x").vector_entry_point is None
    assert gym.spec("joulegym/ETF-v0").vector_entry_point == "joulegym.envs.etf.vector:ETFVectorEnv"
