"""ETF's speed benchmark: the batched vector env against single envs (docs/performance.md).

For every ETF kind (each has a batched ``vector_entry_point``) and each ``N``: the CPU time of batched steps of ``N``
instances over that of as many steps of ``N`` single envs (``gym.make``, the same random actions, reset on episode
end), in alternating chunks (the same machine load on both), median over the repeats: the harness's
``batched_vs_single_row`` (``python benchmarks/harness.py --batched-only`` runs it for every family). Below 1 the
batch is cheaper; ``1 / ratio`` is the batched env's aggregate steps/s in single-env units (the targets: N = 4 at
most 1.0, N = 256 at least 5x a single env's aggregate steps/s).

Usage::

    python benchmarks/bench_etf.py                 # N = 4 and 256, every ETF kind
    python benchmarks/bench_etf.py --n 4 16 64 256 --repeats 5
    python benchmarks/bench_etf.py --crossover --n 12 16 20 24 --repeats 5 --steps 300

``--crossover``: where the batched env's array path starts to pay (``ETFVectorEnv.ARRAY_MIN_N``): for each ``N``,
the CPU time of ``--steps`` batched steps on the array path over that on the per-instance path (two batched envs
of ``N`` instances, one forced to each path, the same pre-drawn random actions, alternating repeats, median
[min-max]); below 1 the array path is cheaper.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "benchmarks"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

KINDS = ("joulegym/ETF-v0", "joulegym/ETFPhi-v0", "joulegym/ETFDVFS-v0")
ACTION_SETS = 64  # pre-drawn random action batches, cycled


def path_crossover(env_id: str, n: int, repeats: int, steps: int) -> tuple[float, float, float]:
    """``(median, min, max)`` over ``repeats`` of the array path's CPU time over the per-instance path's for ``steps``
    batched steps of ``n`` instances (module docstring, ``--crossover``)."""
    import gymnasium as gym

    import joulegym  # noqa: F401  (registers the ids)

    envs = {}
    for per_instance in (True, False):
        venv = gym.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point")
        venv._per_instance = per_instance  # the path ETFVectorEnv picks from ARRAY_MIN_N, forced
        venv.reset(seed=0)
        venv.action_space.seed(0)
        envs[per_instance] = (venv, [venv.action_space.sample() for _ in range(ACTION_SETS)])
    cpu: dict[bool, list[float]] = {True: [], False: []}
    for repeat in range(repeats):
        for per_instance in (True, False) if repeat % 2 == 0 else (False, True):
            venv, actions = envs[per_instance]
            start = time.process_time()
            for i in range(steps):
                venv.step(actions[i % ACTION_SETS])
            cpu[per_instance].append(time.process_time() - start)
    ratios = [array / single for array, single in zip(cpu[False], cpu[True])]
    return statistics.median(ratios), min(ratios), max(ratios)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ids", nargs="*", default=list(KINDS), help="ETF ids (default: every kind)")
    parser.add_argument("--n", nargs="*", type=int, default=[4, 256], help="batch sizes (default: 4 256)")
    parser.add_argument("--repeats", type=int, default=3, help="repeats, median (default 3)")
    parser.add_argument("--steps", type=int, default=3000, help="single-env steps per repeat (default 3000)")
    parser.add_argument("--crossover", action="store_true", help="array path / per-instance path per N instead")
    args = parser.parse_args(argv)
    if args.crossover:
        print("| id | N | array / per-instance CPU (median [min-max]) |")
        print("|---|---:|---:|")
        for env_id in args.ids:
            for n in args.n:
                median, low, high = path_crossover(env_id, n, args.repeats, args.steps)
                print(f"| `{env_id}` | {n} | {median:.2f} [{low:.2f}-{high:.2f}] |", flush=True)
        return []
    from harness import Settings, batched_vs_single_row  # here: the harness imports this script for its curves

    cfg = Settings(steps=args.steps, repeats=args.repeats)
    rows = []
    print("| id | N | batched CPU / N single-env steps (median [min-max]) | aggregate steps/s in single envs |")
    print("|---|---:|---:|---:|")
    for env_id in args.ids:
        for n in args.n:
            row = batched_vs_single_row(env_id, n, cfg)
            rows.append(row)
            print(f"| `{env_id}` | {n} | {row['value']:.2f} [{row['min']:.2f}-{row['max']:.2f}] | "
                  f"{1 / row['value']:.1f}x |", flush=True)
    return rows


if __name__ == "__main__":
    main()
