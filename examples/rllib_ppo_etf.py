"""Train RLlib PPO on a joulegym family through Ray (docs/ray.md).

    pip install -e ".[ray]"
    python examples/rllib_ppo_etf.py                          # ETFPhi-v0: a discrete, masked action mode
    python examples/rllib_ppo_etf.py --env joulegym/ETF-v0 --iterations 20
    python examples/rllib_ppo_etf.py --ray-address HOST:PORT  # on a cluster (RAY_AUTH_MODE=token, docs/ray.md)

``joulegym.integrations.rllib`` registers every joulegym id with ``ray.tune.register_env``; a discrete action mode
with a mask (``ETFPhi``: Algorithm 2's trade-off ``phi`` on a grid) runs with RLlib's action-masking RL module, so
PPO never samples a masked-out action. Prints the mean episode return per iteration.
"""

from __future__ import annotations

import argparse

from joulegym.integrations.parallel import ray_session
from joulegym.integrations.rllib import ppo_config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="joulegym/ETFPhi-v0", help="a joulegym id (default joulegym/ETFPhi-v0)")
    parser.add_argument("--iterations", type=int, default=5, help="PPO training iterations (default 5)")
    parser.add_argument("--batch", type=int, default=600, help="environment steps per iteration (default 600)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ray-address", default=None, help="a Ray cluster; default: a local Ray")
    args = parser.parse_args(argv)
    with ray_session(args.ray_address):
        config = ppo_config(args.env, seed=args.seed, train_batch_size_per_learner=args.batch,
                            minibatch_size=min(128, args.batch), num_epochs=4, lr=3e-4)
        algo = config.env_runners(num_env_runners=0).build_algo()
        try:
            for iteration in range(1, args.iterations + 1):
                result = algo.train()
                returns = result["env_runners"].get("episode_return_mean", float("nan"))
                print(f"iteration {iteration}: episode_return_mean={returns:.4g} "
                      f"(env steps {result['num_env_steps_sampled_lifetime']})")
        finally:
            algo.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
