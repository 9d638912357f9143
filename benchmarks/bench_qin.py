"""Qin benchmarks on one core (``docs/families/qin.md`` §7.6 "Performance"), in CPU time, as ratios to a bare no-op.

The floor is a bare ``gym.make`` no-op env (registered like joulegym's ids, no ``TimeLimit``) stepped with a constant
action, no policy call. Measured, each interleaved with the floor in the same process, median of ``--repeats``:

1. ``joulegym/QinCluster-v0`` (100 RW jobs, 5 workers, Linux-like node policy) per step with random masked actions
   (target: <= 400 x the floor);
2. CPU seconds of one 100-job ``Qin-v0`` episode (``paper-rw``, ``qin``: Qin's node level at the perf focus, PL 0;
   target: <= 0.3 CPU s), its cost in floor steps beside; and the hierarchical episodes with DVFS every 10 ms
   control period (``Qin-hier-rw``: ``qin-energy`` at PL 0.5, ``qin-edp`` at PL 0.1);
3. time against the number of servers N on the large-N scenario (N servers sampled from the Table 2 types,
   M = 10 N RW jobs; Qin, the Linux-like node policy): CPU seconds per episode and per placement.

Usage::

    python benchmarks/bench_qin.py [--steps 1000] [--repeats 5] [--sizes 20 100 1000] [--skip-dvfs]
                                   [--out DIR] [--markdown docs/families/qin-speed.md]
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym
import numpy as np

import joulegym  # noqa: F401
from joulegym import baselines
from joulegym.core.policy import env_config_for
from joulegym.core.rollout import rollout

CLUSTER_ID = "joulegym/QinCluster-v0"
BARE_ID = "bench/QinBareNoOp-v0"
TARGET_RATIO = 400.0
TARGET_EPISODE_S = 0.3
FLOOR_STEPS = 50_000  # floor steps timed around each measured chunk
# the 100-job episodes: (env id, policy, kwargs, label)
EPISODES = (("joulegym/Qin-paper-rw-v0", "qin", {}, "Qin-v0 paper-rw, qin (perf focus, PL 0)"),
            ("joulegym/Qin-hier-rw-v0", "qin-energy", {"objective": "energy"}, "hierarchical, energy focus (PL 0.5)"),
            ("joulegym/Qin-hier-rw-v0", "qin-edp", {"objective": "edp"}, "hierarchical, EDP focus (PL 0.1)"))


class BareNoOp(gym.Env):
    """The floor: a one-float observation, two actions, nothing simulated."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), dtype=np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action):
        return np.zeros(1, dtype=np.float32), 0.0, False, False, {}


def floor_step_s(env: gym.Env, steps: int = FLOOR_STEPS) -> float:
    """CPU seconds per step of the bare no-op with a constant action."""
    env.reset(seed=0)
    step = env.step
    start = time.process_time()
    for _ in range(steps):
        step(0)
    return (time.process_time() - start) / steps


def cluster_step_s(env: gym.Env, steps: int, rng: np.random.Generator, state: dict) -> float:
    """CPU seconds per ``QinCluster-v0`` step with random masked actions (episodes continue across calls). The
    uniforms are drawn before the clock starts (the draw is the harness's cost, not the env's)."""
    info = state.get("info")
    if info is None:
        _, info = env.reset(seed=state.setdefault("episode", 0))
    uniforms = rng.random(steps).tolist()
    start = time.process_time()
    for u in uniforms:
        valid = np.flatnonzero(info["action_mask"])
        _, _, terminated, truncated, info = env.step(int(valid[int(u * valid.size)]))
        if terminated or truncated:
            state["episode"] += 1
            _, info = env.reset(seed=state["episode"])
    state["info"] = info
    return (time.process_time() - start) / steps


def cluster_ratio(steps: int, repeats: int) -> dict[str, float]:
    """Median over ``repeats`` of (cluster step) / (floor step), each chunk between two floor bursts."""
    floor, env = gym.make(BARE_ID), gym.make(CLUSTER_ID)
    rng, state = np.random.default_rng(0), {}
    ratios, env_us = [], []
    for _ in range(repeats):
        before = floor_step_s(floor)
        step_s = cluster_step_s(env, steps, rng, state)
        after = floor_step_s(floor)
        ratios.append(step_s / ((before + after) / 2))
        env_us.append(step_s * 1e6)
    return {"what": "QinCluster-v0 step, random masked actions", "ratio": statistics.median(ratios),
            "ratio_min": min(ratios), "ratio_max": max(ratios), "us_per_step": statistics.median(env_us)}


def episode_cpu_s(env_id: str, policy_name: str, seed: int = 0, **kwargs) -> tuple[float, dict]:
    policy = baselines.make(policy_name, family="qin")
    env = gym.make(env_id, **env_config_for(policy, kwargs))
    env.reset(seed=seed)  # the one-time offline CF fit of a new cluster (cached per server set) is not the episode's
    start = time.process_time()
    episode = rollout(env, policy, seed=seed)
    return time.process_time() - start, episode.metrics


def episodes(specs, repeats: int) -> list[dict]:
    """Each spec's episode ``repeats`` times, round robin over the specs, each run between floor bursts: median CPU s
    and median cost in floor steps per spec."""
    floor = gym.make(BARE_ID)
    runs: dict[int, list[tuple[float, float]]] = {i: [] for i in range(len(specs))}
    metrics: dict[int, dict] = {}
    for _ in range(repeats):
        for i, (env_id, policy, kwargs, _label) in enumerate(specs):
            before = floor_step_s(floor)
            cpu_s, metrics[i] = episode_cpu_s(env_id, policy, **kwargs)
            runs[i].append((cpu_s, cpu_s / ((before + floor_step_s(floor)) / 2)))
    rows = []
    for i, (env_id, policy, _kwargs, label) in enumerate(specs):
        cpu = [r[0] for r in runs[i]]
        rows.append({"what": label, "env_id": env_id, "policy": policy, "cpu_s": statistics.median(cpu),
                     "cpu_s_min": min(cpu), "cpu_s_max": max(cpu), "repeats": len(cpu),
                     "floor_steps": statistics.median(r[1] for r in runs[i]),
                     "makespan_s": metrics[i]["makespan_s"], "energy_j": metrics[i]["energy_j"]})
    return rows


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


def speed_markdown(ratio: dict, rows: list[dict], grow: list[dict]) -> str:
    """The speed page (``--markdown``): the run's tables, the machine's load and the command."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = ["# Qin: measured speed", "",
             f"Generated by `python benchmarks/bench_qin.py --markdown PATH` on {datetime.date.today().isoformat()} "
             f"(load average {load} at the end; CPU time, one core). The floor is a bare `gym.make` no-op env stepped "
             "with a constant action, interleaved in the same process.", "",
             "| what | measured | target |", "|---|---|---|",
             f"| {ratio['what']} | {ratio['ratio']:.0f} x the floor [{ratio['ratio_min']:.0f}-{ratio['ratio_max']:.0f}]"
             f", {ratio['us_per_step']:.0f} us | <= {TARGET_RATIO:.0f} x |"]
    for row in rows:
        target = f"<= {TARGET_EPISODE_S} CPU s" if row["env_id"] == EPISODES[0][0] else ""
        lines.append(f"| 100-job episode: {row['what']} | {row['cpu_s']:.3f} CPU s [{row['cpu_s_min']:.3f}-"
                     f"{row['cpu_s_max']:.3f}], {row['floor_steps'] / 1e6:.2f} M floor steps | {target} |")
    lines += ["", "| servers N | jobs M | CPU s per episode | ms per placement |", "|---|---|---|---|"]
    lines += [f"| {r['servers']} | {r['jobs']} | {r['cpu_s']:.2f} | {r['ms_per_placement']:.2f} |" for r in grow]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000, help="QinCluster steps per repeat")
    parser.add_argument("--sizes", type=int, nargs="*", default=[20, 100, 1000])
    parser.add_argument("--repeats", type=int, default=5, help="repeats of each measurement (median reported)")
    parser.add_argument("--skip-dvfs", action="store_true", help="skip the slow energy- and EDP-focus episodes")
    parser.add_argument("--out", type=Path, default=None, help="also write qin_bench.csv and qin_growth.csv here")
    parser.add_argument("--markdown", type=Path, default=None, help="write the speed page here")
    args = parser.parse_args(argv)
    if BARE_ID not in gym.registry:
        gym.register(BARE_ID, entry_point=BareNoOp)
    ratio = cluster_ratio(args.steps, args.repeats)
    print(f"{ratio['what']}: {ratio['ratio']:.0f} x the floor [{ratio['ratio_min']:.0f}-{ratio['ratio_max']:.0f}] "
          f"({ratio['us_per_step']:.0f} us per step; target <= {TARGET_RATIO:.0f})", flush=True)
    rows = episodes(EPISODES[:1] if args.skip_dvfs else EPISODES, args.repeats)
    for row in rows:
        print(f"  {row['what']}: {row['cpu_s']:.3f} CPU s [{row['cpu_s_min']:.3f}-{row['cpu_s_max']:.3f}] = "
              f"{row['floor_steps'] / 1e6:.2f} M floor steps; makespan {row['makespan_s']:.0f} s", flush=True)
    print("time vs N (large-N, Qin, M = 10 N):")
    grow = growth(args.sizes)
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        for name, table in (("qin_bench.csv", [ratio, *rows]), ("qin_growth.csv", grow)):
            keys = sorted({k for r in table for k in r})
            with open(args.out / name, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=keys)
                writer.writeheader()
                writer.writerows(table)
    if args.markdown is not None:
        args.markdown.write_text(speed_markdown(ratio, rows, grow))
    return 0


if __name__ == "__main__":
    sys.exit(main())
