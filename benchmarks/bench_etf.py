"""ETF's speed benchmark: the batched vector env against single envs (docs/performance.md).

For every ETF kind (each has a batched ``vector_entry_point``) and each ``N``: the CPU time of one batched step of
``N`` instances over the CPU time of ``N`` single-env steps (``gym.make``, the same random actions, reset on episode
end), measured in alternating chunks (the same machine load on both), median over the repeats. Below 1 the batch is
cheaper; ``1 / ratio`` is the batched env's aggregate steps/s in single-env units (the target: N = 4 at most 1.0,
N = 256 at least 5x a single env's aggregate steps/s).

Usage::

    python benchmarks/bench_etf.py                 # N = 4 and 256, every ETF kind
    python benchmarks/bench_etf.py --n 4 16 64 256 --repeats 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import joulegym  # noqa: E402, F401  (registers the ids)

KINDS = ("joulegym/ETF-v0", "joulegym/ETFPhi-v0", "joulegym/ETFDVFS-v0")
ACTIONS = 64  # distinct random action batches, cycled


def batched_over_singles(env_id: str, n: int, steps: int, repeats: int, chunks: int = 5) -> list[float]:
    """CPU time of ``steps`` batched steps of ``n`` instances over that of ``n`` single envs stepping as often."""
    singles = [gym.make(env_id) for _ in range(n)]
    for k, env in enumerate(singles):
        env.reset(seed=k)
        env.action_space.seed(k)
    batched = gym.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point")
    batched.reset(seed=0)
    batched.action_space.seed(0)
    single_actions = [[env.action_space.sample() for env in singles] for _ in range(ACTIONS)]
    batch_actions = [batched.action_space.sample() for _ in range(ACTIONS)]

    def run_singles(count: int, offset: int) -> float:
        start = time.process_time()
        for i in range(offset, offset + count):
            for env, action in zip(singles, single_actions[i % ACTIONS]):
                _, _, terminated, truncated, _ = env.step(action)
                if terminated or truncated:
                    env.reset()
        return time.process_time() - start

    def run_batched(count: int, offset: int) -> float:
        start = time.process_time()
        for i in range(offset, offset + count):
            batched.step(batch_actions[i % ACTIONS])
        return time.process_time() - start

    run_singles(min(steps, 20), 0)
    run_batched(min(steps, 20), 0)
    ratios = []
    per_chunk = max(1, steps // chunks)
    for repeat in range(repeats):
        single_s = batched_s = 0.0
        for chunk in range(chunks):
            offset = (repeat * chunks + chunk) * per_chunk
            single_s += run_singles(per_chunk, offset)
            batched_s += run_batched(per_chunk, offset)
        ratios.append(batched_s / single_s)
    batched.close()
    return ratios


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ids", nargs="*", default=list(KINDS), help="ETF ids (default: every kind)")
    parser.add_argument("--n", nargs="*", type=int, default=[4, 256], help="batch sizes (default: 4 256)")
    parser.add_argument("--repeats", type=int, default=3, help="repeats, median (default 3)")
    parser.add_argument("--steps", type=int, default=3000, help="single-env steps per repeat and batch (default 3000)")
    args = parser.parse_args(argv)
    rows = []
    print("| id | N | batched CPU / N single-env steps (median [min-max]) | aggregate steps/s in single envs |")
    print("|---|---:|---:|---:|")
    for env_id in args.ids:
        for n in args.n:
            ratios = batched_over_singles(env_id, n, max(10, args.steps // n), args.repeats)
            median = statistics.median(ratios)
            rows.append({"id": env_id, "num_envs": n, "ratio": median, "min": min(ratios), "max": max(ratios)})
            print(f"| `{env_id}` | {n} | {median:.2f} [{min(ratios):.2f}-{max(ratios):.2f}] | {1 / median:.1f}x |",
                  flush=True)
    return rows


if __name__ == "__main__":
    main()
