"""Steps per second of joulegym envs, next to a no-op Gymnasium env stepped the same way.

Every env is made with ``gym.make`` (checker and order-enforcing wrappers included) and stepped on
one core with its reference policy acting (decision cost included), then with a constant action
(decision cost excluded). The no-op env is made and stepped the same way in the same run, so the
ratio ``noop steps/s / env steps/s`` can be compared across machines (DESIGN.md "Performance").

Usage::

    python benchmarks/bench_envs.py                      # every registered id of every family
    python benchmarks/bench_envs.py --family etf --steps 20000
    python benchmarks/bench_envs.py --ids joulegym/ETF-v0 --policy etf
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, as the targets are stated

import gymnasium as gym
import numpy as np

import joulegym
from joulegym import baselines
from joulegym.core import family as registry

NOOP_ID = "joulegym-bench/NoOp-v0"

# The reference policy each env kind is benchmarked with (the paper's algorithm).
REFERENCE_POLICY = {"ETF": "etf", "ETFPhi": "etf", "ETFDVFS": "max-frequency"}


class NoOpEnv(gym.Env):
    """The trivial reference: a one-float observation, a two-action space, nothing simulated."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (1,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self._obs = np.zeros(1, dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action):
        return np.zeros(1, dtype=np.float32), 0.0, False, False, {}


def steps_per_second(env: gym.Env, steps: int, policy: baselines.Policy | None, seed: int = 0) -> float:
    """Steps/s over ``steps`` steps (resets included), with ``policy`` acting or a fixed action."""
    obs, info = env.reset(seed=seed)
    if policy is not None:
        policy.reset(env, seed=seed)
    fixed = env.action_space.sample() if policy is None else None
    start = time.perf_counter()
    for _ in range(steps):
        action = policy.act(obs, info) if policy is not None else fixed
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            obs, info = env.reset()
            if policy is not None:
                policy.reset(env)
    return steps / (time.perf_counter() - start)


def reference_policy_name(env: gym.Env) -> str | None:
    base = env.unwrapped
    name = REFERENCE_POLICY.get(base.kind)
    if name is None:
        names = [n for n in baselines.available(base.family, base.kind) if n != "random"]
        name = names[0] if names else None
    return name


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", help="only ids of this family (etf, emrf, powerflow)")
    parser.add_argument("--ids", nargs="*", help="explicit env ids (default: every registered id)")
    parser.add_argument("--policy", help="policy name for every id (default: the kind's reference policy)")
    parser.add_argument("--steps", type=int, default=10_000, help="steps per measurement")
    parser.add_argument("--base-only", action="store_true", help="only the base id of each kind")
    args = parser.parse_args(argv)

    if NOOP_ID not in gym.registry:
        gym.register(NOOP_ID, entry_point=NoOpEnv)
    noop = steps_per_second(gym.make(NOOP_ID), max(args.steps * 10, 100_000), None)
    ids = args.ids or registry.registered_ids(args.family)
    if args.base_only:
        ids = [i for i in ids if i.count("-") == 1]
    print(f"joulegym {joulegym.__version__}; no-op env (gym.make, same wrappers): {noop:,.0f} steps/s")
    header = f"{'env id':<48} {'policy':<14} {'steps/s':>10} {'ratio':>7} {'no-policy':>10} {'ratio':>7}"
    print(header)
    print("-" * len(header))
    for env_id in ids:
        env = gym.make(env_id)
        name = args.policy or reference_policy_name(env)
        policy = baselines.make(name) if name else None
        with_policy = steps_per_second(env, args.steps, policy)
        without = steps_per_second(gym.make(env_id), args.steps, None)
        print(f"{env_id:<48} {name or '-':<14} {with_policy:>10,.0f} {noop / with_policy:>7.1f} "
              f"{without:>10,.0f} {noop / without:>7.1f}")
    print("ratio = no-op steps/s / env steps/s (lower is better; measured in this run)")


if __name__ == "__main__":
    main()
