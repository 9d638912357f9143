"""Qin benchmarks on one core (``docs/families/qin.md`` §7.6 "Performance"), next to the no-op env.

1. ``joulegym/QinCluster-v0`` (100 RW jobs, 5 workers) steps per CPU second with random masked actions, measured
   interleaved with the no-op env of :mod:`harness` (made with ``gym.make`` and stepped by the same loop); the
   ratio no-op / env (target: >= 2,000 steps/s).
2. CPU seconds of one 100-job ``paper-rw`` episode with Qin (target: < 10 s at the default control period): the
   cluster env (``qin``, Linux-like node policy), and the hierarchical ``Qin-hier-rw`` (seed 0) with Qin at both
   levels per focus: perf (``qin``, PL 0: the node level never ticks), energy (``qin-energy``, PL 0.5: DVFS every
   10 ms control period) and EDP (``qin-edp``, PL 0.1). Each episode is repeated ``--repeats`` times, the episodes
   interleaved (round robin, so every one sees the same machine load), each run after a no-op burst; reported:
   the median CPU s and the median ratio episode CPU s / no-op step CPU s (the episode's cost in no-op steps,
   which a busy machine inflates less than the seconds).
3. Time against the number of servers N on the large-N scenario (N servers sampled from the Table 2 types,
   M = 10 N RW jobs; Qin, the Linux-like node policy): CPU seconds per episode and per placement.

Usage::

    python benchmarks/bench_qin.py [--steps 3000] [--repeats 3] [--sizes 20 100 1000] [--skip-energy] [--out DIR]
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gymnasium as gym
from harness import NOOP_ID, Stepper, ensure_noop, interleaved_rates

import joulegym  # noqa: F401
from joulegym import baselines
from joulegym.core.policy import env_config_for
from joulegym.core.rollout import rollout

CLUSTER_ID = "joulegym/QinCluster-v0"
TARGET_STEPS_PER_S = 2000.0
TARGET_EPISODE_S = 10.0


def cluster_rate(steps: int) -> dict[str, float]:
    """Random masked actions on QinCluster-v0, interleaved with the no-op env."""
    ensure_noop()
    noop = Stepper(gym.make(NOOP_ID), baselines.make("random"))
    env = Stepper(gym.make(CLUSTER_ID), baselines.make("random"))
    noop_rate, env_rate = interleaved_rates(noop, env, steps * 20, steps)
    return {"steps_per_s": env_rate, "noop_steps_per_s": noop_rate, "ratio": noop_rate / env_rate}


NOOP_BURST_STEPS = 20_000  # no-op steps timed before each episode run (~20 ms: the per-step cost to ratio with)
# the 100-job episodes: (env id, policy, kwargs, label)
EPISODES = (("joulegym/QinCluster-paper-rw-v0", "qin", {}, "cluster, qin (Linux-like node)"),
            ("joulegym/Qin-hier-rw-v0", "qin", {"objective": "makespan"}, "hierarchical, perf focus (PL 0)"),
            ("joulegym/Qin-hier-rw-v0", "qin-energy", {"objective": "energy"}, "hierarchical, energy focus (PL 0.5)"),
            ("joulegym/Qin-hier-rw-v0", "qin-edp", {"objective": "edp"}, "hierarchical, EDP focus (PL 0.1)"))


def noop_step_cpu_s(stepper: Stepper, steps: int = NOOP_BURST_STEPS) -> float:
    """CPU seconds per no-op step over a burst of ``steps`` (measured next to each episode run)."""
    before_s, before_n = stepper.cpu_s, stepper.steps
    stepper.run(steps)
    return (stepper.cpu_s - before_s) / (stepper.steps - before_n)


def episodes(specs, repeats: int) -> list[dict]:
    """Each spec's episode ``repeats`` times, round robin over the specs, each run after a no-op burst: median CPU s
    and median episode / no-op-step ratio per spec."""
    ensure_noop()
    noop = Stepper(gym.make(NOOP_ID), baselines.make("random"))
    runs: dict[int, list[tuple[float, float]]] = {i: [] for i in range(len(specs))}
    metrics: dict[int, dict] = {}
    for _ in range(repeats):
        for i, (env_id, policy, kwargs, _label) in enumerate(specs):
            step_s = noop_step_cpu_s(noop)
            cpu_s, metrics[i] = episode_cpu_s(env_id, policy, **kwargs)
            runs[i].append((cpu_s, cpu_s / step_s))
    rows = []
    for i, (env_id, policy, kwargs, label) in enumerate(specs):
        cpu = [r[0] for r in runs[i]]
        rows.append({"what": label, "env_id": env_id, "policy": policy, "objective": kwargs.get("objective", ""),
                     "cpu_s": statistics.median(cpu), "cpu_s_min": min(cpu), "cpu_s_max": max(cpu),
                     "noop_steps": statistics.median(r[1] for r in runs[i]), "repeats": len(cpu),
                     "makespan_s": metrics[i]["makespan_s"], "energy_j": metrics[i]["energy_j"]})
    return rows


def episode_cpu_s(env_id: str, policy_name: str, seed: int = 0, **kwargs) -> tuple[float, dict]:
    policy = baselines.make(policy_name, family="qin")
    env = gym.make(env_id, **env_config_for(policy, kwargs))
    env.reset(seed=seed)  # the one-time offline CF fit of a new cluster (cached per server set) is not the episode's
    start = time.process_time()
    episode = rollout(env, policy, seed=seed)
    return time.process_time() - start, episode.metrics


def growth(sizes: list[int]) -> list[dict[str, float]]:
    rows = []
    for n in sizes:
        kwargs = {"servers": {"kind": "sampled", "count": n}, "max_servers": n,
                  "workload": {"kind": "rw", "num_jobs": 10 * n, "arrival": "batch"}}
        cpu_s, metrics = episode_cpu_s("joulegym/QinCluster-v0", "qin", **kwargs)
        rows.append({"servers": n, "jobs": 10 * n, "cpu_s": cpu_s, "ms_per_placement": 1e3 * cpu_s / (10 * n),
                     "makespan_s": metrics["makespan_s"]})
        print(f"  N = {n:5d}, M = {10 * n:6d}: {cpu_s:8.2f} CPU s ({1e3 * cpu_s / (10 * n):.2f} ms per placement), "
              f"makespan {metrics['makespan_s']:.0f} s", flush=True)
    return rows


def harness_growth() -> list[tuple]:
    """The large-N curve for ``benchmarks/harness.py`` (its growth table): CPU s per Qin episode against the number
    of servers N (M = 10 N RW jobs)."""

    def servers(cfg) -> list[tuple[float, float]]:
        sizes = (20, 100) if getattr(cfg, "quick", False) else (20, 100, 1000)
        return [(row["servers"], row["cpu_s"]) for row in growth(list(sizes))]

    return [("qin-servers", "qin", "servers N (large-N, M = 10 N RW jobs, Qin)", "CPU s per episode", servers)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--sizes", type=int, nargs="*", default=[20, 100, 1000])
    parser.add_argument("--repeats", type=int, default=3, help="runs of each 100-job episode (median reported)")
    parser.add_argument("--skip-energy", action="store_true",
                        help="skip the slow energy- and EDP-focus hierarchical episodes")
    parser.add_argument("--out", type=Path, default=None, help="also write qin_bench.csv and qin_growth.csv here")
    args = parser.parse_args(argv)

    rate = cluster_rate(args.steps)
    ok = "meets" if rate["steps_per_s"] >= TARGET_STEPS_PER_S else "misses"
    print(f"{CLUSTER_ID}, random masked actions: {rate['steps_per_s']:,.0f} steps/s "
          f"(no-op {rate['noop_steps_per_s']:,.0f}"
          f"; ratio {rate['ratio']:.1f}); {ok} the {TARGET_STEPS_PER_S:,.0f} steps/s target")
    specs = EPISODES[:2] if args.skip_energy else EPISODES
    rows = [{"what": "cluster random steps/s", **rate}]
    print(f"100-job paper-rw episodes, seed 0 (median of {args.repeats}, interleaved):")
    for row in episodes(specs, args.repeats):
        ok = "meets" if row["cpu_s"] < TARGET_EPISODE_S else "misses"
        print(f"  {row['what']}: {row['cpu_s']:.2f} CPU s [{row['cpu_s_min']:.2f}-{row['cpu_s_max']:.2f}] "
              f"= {row['noop_steps'] / 1e6:.2f} M no-op steps ({ok} the < {TARGET_EPISODE_S:g} s target); "
              f"makespan {row['makespan_s']:.0f} s, energy {row['energy_j'] / 1e3:.1f} kJ", flush=True)
        rows.append(row)
    print("time vs N (large-N, Qin, M = 10 N):")
    grow = growth(args.sizes)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, table in (("qin_bench.csv", rows), ("qin_growth.csv", grow)):
            keys = sorted({k for r in table for k in r})
            with open(args.out / name, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=keys)
                writer.writeheader()
                writer.writerows(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
