"""DREAM benchmarks (docs/families/dream.md §7 "Speed"), on one core, as ratios to a no-op env measured in the same
run.

1. A 2 s VR_Gaming episode (4K 1WS+2OS, ~1.8 x 10^4 layer dispatches) with DREAM-Full: CPU seconds on the
   simulator (:func:`joulegym.core.inner.run_inner`, the evaluation path) and through ``DREAM-v0``
   (:func:`joulegym.core.rollout.rollout`: observation, mask and encode/decode of every decision), each without
   the one-off offline (alpha, beta) search (timed on its own: it is cached per configuration). Target: < 2 s.
2. ``joulegym/DREAM-v0`` (VR_Gaming) with random masked actions (the generic ``random`` policy): steps per CPU
   second, interleaved with the no-op env of :mod:`harness` (:class:`harness.NoOpEnv`, made with ``gym.make`` and
   stepped by the same loop). Target: >= 5,000 steps/s.
3. ``harness_growth()`` (loaded by ``benchmarks/harness.py``): DREAM-Full episode CPU seconds on the simulator
   against the episode length (0.25-2 s of VR_Gaming; (alpha, beta) fixed, no offline search).

The no-op rate converts both into machine-independent figures: ``episode_noop_steps`` = episode CPU seconds x
no-op steps/s (how many no-op steps the episode costs) and ``ratio`` = no-op steps/s / env steps/s (lower is
better). Medians over ``--repeats``.

Usage::

    python benchmarks/bench_dream.py [--repeats 3] [--steps 20000] [--out benchmarks/results/dream.csv]
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
from harness import NOOP_ID, FixedActionPolicy, Stepper, ensure_noop, interleaved_rates

import joulegym  # noqa: F401  (registers the ids)
from joulegym import baselines
from joulegym.core.inner import run_inner
from joulegym.core.policy import make_inner
from joulegym.core.rollout import rollout
from joulegym.envs.dream.simulator import DreamSim

EPISODE_TARGET_S = 2.0
STEPS_TARGET = 5000.0
ENV_ID = "joulegym/DREAM-vr-gaming-v0"


def noop_rate(steps: int = 30_000) -> float:
    ensure_noop()
    stepper = Stepper(gym.make(NOOP_ID), FixedActionPolicy())
    stepper.run(steps)
    return stepper.rate


def full_episode(seed: int = 0) -> dict[str, float]:
    """CPU seconds of DREAM-Full's 2 s VR_Gaming episode on the simulator and through the env."""
    sim = DreamSim.from_catalog("vr-gaming", "4k-1ws2os", horizon_s=2.0)
    scheduler = make_inner("dream-full", family="dream")
    start = time.process_time()
    scheduler.offline_params(sim)  # the offline search: on the first repeat only (cached per configuration)
    tuning_s = time.process_time() - start
    start = time.process_time()
    metrics = run_inner(sim, scheduler, seed)
    sim_s = time.process_time() - start
    env = gym.make(ENV_ID)
    policy = baselines.make("dream-full", family="dream")
    start = time.process_time()
    episode = rollout(env, policy, seed=seed)
    env_s = time.process_time() - start
    return {"tuning_s": tuning_s, "sim_s": sim_s, "env_s": env_s, "layers": metrics["layers"],
            "dispatches": metrics["dispatches"], "env_steps": episode.length}


def random_steps(steps: int, seed: int) -> tuple[float, float]:
    """(no-op steps/s, DREAM-v0 random-masked steps/s), interleaved."""
    ensure_noop()
    env = gym.make(ENV_ID)
    noop = Stepper(gym.make(NOOP_ID), FixedActionPolicy())
    stepper = Stepper(env, baselines.make("random"), seed=seed)
    return interleaved_rates(noop, stepper, 10 * steps, steps)


GROWTH_HORIZONS_S = (0.25, 0.5, 1.0, 2.0)  # episode lengths of the growth curve; 2 s is the paper's T_exec
GROWTH_QUICK_HORIZONS_S = (0.25, 0.5)


def episode_growth(horizons_s: tuple[float, ...] = GROWTH_HORIZONS_S, seed: int = 0,
                   workload: str = "vr-gaming", hw: str = "4k-1ws2os") -> list[dict[str, float]]:
    """CPU seconds of one DREAM-Full episode on the simulator against the episode length (the scheduling cost
    only: (alpha, beta) fixed at the search's start (1, 1), so the one-off offline search, 2-8 s, is left out)."""
    rows = []
    for horizon_s in horizons_s:
        sim = DreamSim.from_catalog(workload, hw, horizon_s=horizon_s)
        scheduler = make_inner("dream-full", family="dream", tuning="fixed")
        start = time.process_time()
        metrics = run_inner(sim, scheduler, seed)
        rows.append({"horizon_s": horizon_s, "cpu_s": time.process_time() - start,
                     "dispatches": metrics["dispatches"]})
    return rows


def harness_growth() -> list[tuple]:
    """The growth curve for ``benchmarks/harness.py``: CPU s of a DREAM-Full VR_Gaming episode (simulator,
    4K 1WS+2OS) against its length; ``settings.quick`` measures the two shortest (well under a second in all)."""

    def horizon(settings) -> list[tuple[float, float]]:
        sizes = GROWTH_QUICK_HORIZONS_S if getattr(settings, "quick", False) else GROWTH_HORIZONS_S
        return [(row["horizon_s"], row["cpu_s"]) for row in episode_growth(sizes)]

    return [("dream-horizon", "dream", "episode length s (DREAM-Full, VR_Gaming, 4K 1WS+2OS, simulator)",
             "CPU s per episode", horizon)]


def main(argv: list[str] | None = None) -> list[dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20_000, help="DREAM-v0 random steps per repeat")
    parser.add_argument("--out", type=Path, default=None, help="also write the rows as CSV")
    args = parser.parse_args(argv)
    rows = []
    for repeat in range(args.repeats):
        noop_before = noop_rate()
        episode = full_episode(seed=repeat)
        noop, rate = random_steps(args.steps, seed=repeat)
        noop_mean = (noop_before + noop) / 2
        rows.append({"repeat": repeat, "noop_steps_per_s": noop_mean, **episode,
                     "sim_episode_noop_steps": episode["sim_s"] * noop_mean,
                     "env_episode_noop_steps": episode["env_s"] * noop_mean,
                     "random_steps_per_s": rate, "random_ratio": noop / rate})
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0] if k != "repeat"}
    print(f"no-op env: {med['noop_steps_per_s']:,.0f} steps/s (median of {args.repeats})")
    print(f"DREAM-Full, 2 s VR_Gaming ({med['layers']:,.0f} layers, {med['dispatches']:,.0f} dispatches): "
          f"simulator {med['sim_s']:.2f} s, env {med['env_s']:.2f} s ({med['env_steps']:,.0f} steps) "
          f"[target < {EPISODE_TARGET_S:.0f} s]; offline search once {max(r['tuning_s'] for r in rows):.1f} s; "
          f"= {med['sim_episode_noop_steps']:,.0f} / {med['env_episode_noop_steps']:,.0f} no-op steps")
    print(f"DREAM-v0 random masked: {med['random_steps_per_s']:,.0f} steps/s [target >= {STEPS_TARGET:,.0f}], "
          f"ratio to no-op {med['random_ratio']:.1f}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return rows


if __name__ == "__main__":
    main()
