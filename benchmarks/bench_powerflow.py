"""PowerFlow benchmarks (issue #4 "Performance"), on one core.

1. A full Alibaba1901-scale episode (synthetic trace: 1901 jobs / 24 h, 16 x 8 V100) through the standalone
   simulator with the PowerFlow policy (target: < 30 s) and with Tiresias.
2. ``joulegym/PowerFlow-tiny-v0`` steps/s with the env's reference policy (``powerflow-strict``, decision
   cost included; target >= 2,000) next to a no-op env made with ``gym.make`` and stepped the same way in
   the same run, and their ratio (:mod:`bench_envs`).

Usage::

    python benchmarks/bench_powerflow.py [--steps 20000] [--skip-full]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gymnasium as gym
from bench_envs import NOOP_ID, NoOpEnv, steps_per_second

from joulegym import baselines
from joulegym.envs.powerflow import ClusterSpec, simulate
from joulegym.workloads import dl_jobs

TINY_ID = "joulegym/PowerFlow-tiny-v0"
REFERENCE = "powerflow-strict"


def full_episode(policy: str, eta: float = 0.6) -> tuple[float, dict]:
    jobs = dl_jobs.to_powerflow_jobs(dl_jobs.alibaba_like_trace(1901, seed=0), seed=0)
    start = time.perf_counter()
    result = simulate(jobs, policy, cluster=ClusterSpec(16, 8), eta=eta)
    return time.perf_counter() - start, result.metrics


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--skip-full", action="store_true", help="skip the full-episode timings")
    args = parser.parse_args(argv)
    if not args.skip_full:
        for policy in ("powerflow", "tiresias"):
            seconds, m = full_episode(policy)
            print(f"full Alibaba1901-scale episode, {policy:<10}: {seconds:6.2f} s  "
                  f"(avg JCT {m['avg_jct_h']:.3f} h, energy {m['total_energy_kwh']:.1f} kWh, "
                  f"{int(m['decisions'])} decisions)")
    if NOOP_ID not in gym.registry:
        gym.register(NOOP_ID, entry_point=NoOpEnv)
    noop = steps_per_second(gym.make(NOOP_ID), max(args.steps * 10, 100_000), None)
    env = gym.make(TINY_ID)
    ref = steps_per_second(env, args.steps, baselines.make(REFERENCE))
    print(f"{TINY_ID} with {REFERENCE}: {ref:,.0f} steps/s; no-op env: {noop:,.0f} steps/s; "
          f"ratio {noop / ref:.1f}")


if __name__ == "__main__":
    main()
