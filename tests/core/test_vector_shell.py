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


def test_batch_validator_rows_are_the_checked_batch_as_lists():
    """``BatchValidator.rows`` (a batched env stepping its instances one by one) gives the rows ``__call__`` gives,
    as lists, and refuses the same batches with the same message naming the row."""
    from joulegym.core.vector import BatchValidator

    box = BatchValidator(gym.spaces.Box(0.0, 1.0, (3,), dtype=np.float32), 2)
    batch = np.array([[0.0, 0.5, 1.0], [0.25, 0.75, 0.125]], dtype=np.float32)
    assert box.rows(batch) == box(batch).tolist() == batch.astype(np.float64).tolist()
    within_tolerance = np.array([[1.0 + 1e-9, 0.5, -1e-9], [0.1, 0.2, 0.3]])
    assert box.rows(within_tolerance) == [[1.0, 0.5, 0.0], [0.1, 0.2, 0.3]]  # clipped, as __call__ does
    for bad in (np.array([[0.5, 0.5, 0.5], [0.5, 2.0, 0.5]]), np.array([[0.5, 0.5, 0.5], [np.nan, 0.5, 0.5]])):
        with pytest.raises(ValueError, match=r"actions\[1\]"):
            box.rows(bad)
    assert box.rows(np.array([[0.5, 0.5, 0.5], [9.0, 0.5, 0.5]]), ignore=np.array([False, True]))[0] == [0.5] * 3
    with pytest.raises(ValueError, match="shape"):
        box.rows(np.zeros(3))
    levels = BatchValidator(gym.spaces.Discrete(4), 3)
    assert levels.rows(np.array([0, 3, 2])) == [0, 3, 2]
    assert levels.rows(np.array([0.0, 3.0, 2.0])) == [0, 3, 2]
    with pytest.raises(ValueError, match=r"actions\[2\]"):
        levels.rows(np.array([0, 3, 4]))
