"""RLlib: every joulegym id is an RLlib env; PPO trains a few iterations on ETF-v0; on a masked discrete mode the
action-masking RL module gives masked-out actions zero probability."""

from __future__ import annotations

import numpy as np
import pytest

from tests.ray.conftest import RAY_MISSING

pytest.importorskip("ray", reason=RAY_MISSING)
pytest.importorskip("ray.rllib", reason='RLlib is missing: pip install "joulegym[ray]"')

BATCH = 120  # environment steps per PPO iteration: two ETF-v0 episodes of 60 epochs


def test_every_joulegym_id_is_registered_with_ray_tune(local_ray):
    from ray.tune.registry import ENV_CREATOR, _global_registry

    from joulegym.integrations.rllib import MaskedObservation, joulegym_ids, register_envs

    ids = register_envs()
    assert ids == joulegym_ids() and len(ids) > 100 and "joulegym/ETF-v0" in ids
    assert all(_global_registry.contains(ENV_CREATOR, env_id) for env_id in ids)
    masked = _global_registry.get(ENV_CREATOR, "joulegym/Qin-v0")({})
    plain = _global_registry.get(ENV_CREATOR, "joulegym/ETF-v0")({})
    assert isinstance(masked, MaskedObservation) and not isinstance(plain, MaskedObservation)
    obs, _ = masked.reset(seed=0)
    assert masked.observation_space.contains(obs) and not obs["action_mask"].all()  # Qin masks busy choices


def _train(env_id: str, iterations: int):
    from joulegym.integrations.rllib import ppo_config

    config = ppo_config(env_id, seed=0, train_batch_size_per_learner=BATCH, minibatch_size=60, num_epochs=2)
    algo = config.env_runners(num_env_runners=0).build_algo()
    results = [algo.train() for _ in range(iterations)]
    return algo, results


def test_rllib_ppo_runs_a_few_iterations_on_etf(local_ray):
    algo, results = _train("joulegym/ETF-v0", iterations=3)
    try:
        assert [r["num_env_steps_sampled_lifetime"] for r in results] == [BATCH, 2 * BATCH, 3 * BATCH]
        assert np.isfinite(results[-1]["env_runners"]["episode_return_mean"])
        assert np.isfinite(results[-1]["learners"]["default_policy"]["total_loss"])
    finally:
        algo.stop()


def test_the_masking_module_never_gives_probability_to_masked_actions(local_ray):
    import torch
    from ray.rllib.core.columns import Columns

    from joulegym.integrations.rllib import make_env

    algo, _ = _train("joulegym/Qin-v0", iterations=1)
    try:
        module = algo.get_module()
        env = make_env("joulegym/Qin-v0")
        obs, _ = env.reset(seed=1)
        masks, observations = [], []
        for _ in range(30):
            masks.append(obs["action_mask"])
            observations.append(obs["observations"])
            valid = np.flatnonzero(obs["action_mask"])
            obs, _, terminated, truncated, _ = env.step(int(valid[0]))
            if terminated or truncated:
                obs, _ = env.reset()
        batch = {Columns.OBS: {"observations": torch.as_tensor(np.array(observations)),
                               "action_mask": torch.as_tensor(np.array(masks))}}
        with torch.no_grad():
            logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
        probs = torch.softmax(logits, dim=-1).numpy()
        mask = np.array(masks) > 0
        assert (~mask).any()  # the check means something: some actions were masked out
        assert probs[~mask].max() < 1e-6 and np.allclose(probs[mask].reshape(-1).sum(), len(masks))
    finally:
        algo.stop()
