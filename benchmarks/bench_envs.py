"""Steps per second of joulegym envs, next to a no-op Gymnasium env stepped the same way.

Every env is made with ``gym.make`` (checker and order-enforcing wrappers included) and run in whole
episodes by :func:`joulegym.core.rollout.rollout`, with the family's reference policy acting (decision
cost included) and with a fixed valid action (decision cost excluded). The no-op env is measured the same
way, interleaved with every env, in CPU time; each figure is the median of ``--repeats`` runs, so the ratio
``noop steps/s / env steps/s`` can be compared across machines (docs/architecture.md).

Usage::

    python benchmarks/bench_envs.py --base-only            # the base id of every kind
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
from joulegym.core.family import get_family
from joulegym.core.rollout import rollout

NOOP_ID = "joulegym-bench/NoOp-v0"


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


class FixedActionPolicy:
    """Repeats one valid action (the first unmasked one for discrete spaces): the env's cost alone."""

    name = "fixed-action"
    privileged = False

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        space = env.action_space
        if isinstance(space, gym.spaces.Box):
            self._action = ((space.low + space.high) / 2).astype(space.dtype)
        else:
            self._action = None
            self._env = env

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        if self._action is not None:
            return self._action
        mask = info.get("action_mask")
        space = self._env.action_space
        if isinstance(space, gym.spaces.Discrete):
            return int(np.flatnonzero(mask)[0]) if mask is not None else 0
        return np.zeros(space.shape, dtype=np.int64)


def steps_per_second(env: gym.Env, steps: int, policy: Any, seed: int = 0) -> float:
    """Steps per CPU second over whole episodes (at least ``steps`` steps) of ``policy``."""
    done, episode = 0, 0
    start = time.process_time()
    while done < steps:
        done += rollout(env, policy, seed + episode).length
        episode += 1
    return done / max(time.process_time() - start, 1e-9)


def reference_policy_name(env: gym.Env) -> str | None:
    """The family's own algorithm if it drives this kind, else the first applicable reference policy."""
    base = env.unwrapped
    names = [n for n in baselines.applicable(env) if n != "random"]
    preferred = get_family(base.family).reference_policy
    return preferred if preferred in names else (names[0] if names else None)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", help="only ids of this family (etf, emrf, powerflow)")
    parser.add_argument("--ids", nargs="*", help="explicit env ids (default: every registered id)")
    parser.add_argument("--policy", help="policy name for every id (default: the kind's reference policy)")
    parser.add_argument("--steps", type=int, default=10_000, help="steps per measurement")
    parser.add_argument("--base-only", action="store_true", help="only the base id of each kind")
    parser.add_argument("--repeats", type=int, default=3, help="measurements per figure (median)")
    args = parser.parse_args(argv)

    if NOOP_ID not in gym.registry:
        gym.register(NOOP_ID, entry_point=NoOpEnv, max_episode_steps=1000)
    ids = args.ids or registry.registered_ids(args.family)
    if args.base_only:
        ids = [i for i in ids if i.count("-") == 1]
    print(f"joulegym {joulegym.__version__}; ratios to a no-op env (gym.make, same wrappers) measured interleaved, "
          f"CPU time, median of {args.repeats}")
    header = f"{'env id':<48} {'policy':<14} {'steps/s':>10} {'ratio':>7} {'fixed':>10} {'ratio':>7}"
    print(header)
    print("-" * len(header))
    noop_env = gym.make(NOOP_ID)
    for env_id in ids:
        env = gym.make(env_id)
        name = args.policy or reference_policy_name(env)
        policy = baselines.make(name, family=env.unwrapped.family) if name else FixedActionPolicy()
        with_policy, fixed, noop = [], [], []
        for _ in range(args.repeats):
            noop.append(steps_per_second(noop_env, args.steps, FixedActionPolicy()))
            with_policy.append(steps_per_second(env, args.steps, policy))
            fixed.append(steps_per_second(env, args.steps, FixedActionPolicy()))
        ref = np.median(noop)
        print(f"{env_id:<48} {name or '-':<14} {np.median(with_policy):>10,.0f} {ref / np.median(with_policy):>7.1f} "
              f"{np.median(fixed):>10,.0f} {ref / np.median(fixed):>7.1f}")
    print("ratio = no-op steps/s / env steps/s (lower is better; measured in this run)")


if __name__ == "__main__":
    main()
