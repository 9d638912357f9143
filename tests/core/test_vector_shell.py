"""The batched vector env shell (joulegym.core.vector): one argument check and one reset for every family."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import joulegym  # noqa: F401  (registers the ids)

IDS = ["joulegym/ETF-v0", "joulegym/EMRF-v0"]


def make(id_: str, n: int = 2, **kwargs):
    return gym.make_vec(id_, num_envs=n, vectorization_mode="vector_entry_point", **kwargs)


@pytest.mark.parametrize("id_", IDS)
@pytest.mark.parametrize(("kwargs", "match"), [
    ({"info_level": "full"}, "info_level='full'"),
    ({"render_mode": "rgb_array"}, "does not render"),
])
def test_what_the_batch_cannot_do_is_named(id_, kwargs, match):
    with pytest.raises(ValueError, match=match):
        make(id_, **kwargs)


@pytest.mark.parametrize("id_", IDS)
def test_reset_seeds_and_masks_as_sync_vector_env(id_):
    env = make(id_, n=3)
    with pytest.raises(gym.error.ResetNeeded):
        env.step(env.action_space.sample())
    with pytest.raises(ValueError, match="first reset"):
        env.reset(seed=0, options={"reset_mask": np.array([True, False, False])})
    with pytest.raises(ValueError, match="num_envs=3"):
        env.reset(seed=[0, 1])
    obs, _ = env.reset(seed=5)
    single = gym.make(id_)
    assert np.array_equal(obs[2], single.reset(seed=7)[0])  # instance i is seeded with seed + i
    with pytest.raises(ValueError, match="reset_mask"):
        env.reset(options={"reset_mask": np.zeros(3, dtype=bool)})
