"""DREAM benchmarks (docs/families/dream.md §7 "Speed"), on one core, in CPU time, as ratios to a bare no-op env
measured in the same run (interleaved, so both see the same machine load).

1. ``joulegym/DREAM-vr-gaming-v0`` driven by the generic ``random`` policy (masked random actions): CPU seconds per
   2 s episode (~2 x 10^4 decisions) and the per-step ratio to a bare ``gym.make`` no-op env stepped with a constant
   action (no ``TimeLimit``, no policy call). Targets: <= 1.5 CPU s per episode on a quiet machine, ratio <= 80.
2. DREAM-Full's 2 s VR_Gaming episode on the fast path (:func:`joulegym.core.inner.run_inner`, what evaluation and
   reproductions run) and through ``DREAM-v0`` (:func:`joulegym.core.rollout.rollout`), without the one-off offline
   (alpha, beta) search.
3. The offline (alpha, beta) search of DREAM-Full (§3.6) for a 12-model workload (VR_Gaming + AR_Social +
   GoogLeNet-car, calibrated like Table 3's) on 4K 1WS+2OS, cold: target <= 5 CPU s.
4. ``harness_growth()`` (loaded by ``benchmarks/harness.py``): DREAM-Full episode CPU seconds on the simulator
   against the episode length (0.25-2 s of VR_Gaming; (alpha, beta) fixed, no offline search).

``episode_noop_steps`` = episode CPU seconds x no-op steps/s (how many no-op steps the episode costs); medians
over ``--repeats``.

Usage::

    python benchmarks/bench_dream.py [--repeats 3] [--out benchmarks/results/dream.csv]
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
import numpy as np

import joulegym  # noqa: F401  (registers the ids)
from joulegym import baselines
from joulegym.core.inner import run_inner
from joulegym.core.policy import make_inner
from joulegym.core.rollout import rollout
from joulegym.envs.dream import mapscore
from joulegym.envs.dream.mapscore import DreamPolicy
from joulegym.envs.dream.simulator import DreamSim
from joulegym.workloads.dream_scenarios import DREAM_SCENARIOS, scenario_from_config

ENV_ID = "joulegym/DREAM-vr-gaming-v0"
EPISODE_TARGET_S = 1.5
RATIO_TARGET = 80.0
SETUP_TARGET_S = 5.0
BARE_NOOP_ID = "joulegym-bench/BareNoOp-v0"


class BareNoOp(gym.Env):
    """The floor: a registered env whose step does nothing (stepped with a constant action, no policy)."""

    observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 0.0, False, False, {}


def noop_rate(steps: int = 200_000) -> float:
    """Steps per CPU second of the bare no-op env made with ``gym.make`` (its wrappers included)."""
    if BARE_NOOP_ID not in gym.registry:
        gym.register(BARE_NOOP_ID, entry_point=BareNoOp)
    env = gym.make(BARE_NOOP_ID)
    env.reset(seed=0)
    step = env.step
    start = time.process_time()
    for _ in range(steps):
        step(0)
    return steps / (time.process_time() - start)


def random_episode(seed: int) -> dict[str, float]:
    """CPU seconds and steps of one DREAM-v0 VR_Gaming episode under the generic random policy."""
    env = gym.make(ENV_ID)
    env.reset(seed=seed)  # build the simulator and cost tables outside the timing
    start = time.process_time()
    episode = rollout(env, baselines.make("random"), seed=seed)
    return {"random_episode_s": time.process_time() - start, "random_steps": episode.length}


def full_episode(seed: int = 0) -> dict[str, float]:
    """CPU seconds of DREAM-Full's 2 s VR_Gaming episode on the fast path and through the env."""
    sim = DreamSim.from_catalog("vr-gaming", "4k-1ws2os", horizon_s=2.0)
    policy = make_inner("dream-full", family="dream")
    policy.offline_params(sim)  # the one-off search, cached per configuration (timed by twelve_model_setup)
    start = time.process_time()
    metrics = run_inner(sim, policy, seed)
    sim_s = time.process_time() - start
    env = gym.make(ENV_ID)
    start = time.process_time()
    episode = rollout(env, baselines.make("dream-full", family="dream"), seed=seed)
    return {"full_sim_s": sim_s, "full_env_s": time.process_time() - start, "full_dispatches": metrics["dispatches"],
            "full_env_steps": episode.length}


def twelve_models() -> dict:
    """VR_Gaming's 6 models, AR_Social's 5 and GoogLeNet-car at 30 FPS: a 12-model custom workload."""
    models = []
    for name in ("vr-gaming", "ar-social"):
        for m in DREAM_SCENARIOS[name].models:
            entry = {"model": m.model, "fps": m.fps, "name": f"{name}/{m.name}"}
            if m.parent is not None:
                entry.update(parent=f"{name}/{m.parent}", p=m.p)
            models.append(entry)
    models.append({"model": "googlenet-car", "fps": 30, "name": "car"})
    return {"name": "twelve", "models": models}


def twelve_model_setup() -> dict[str, float]:
    """CPU seconds of DREAM-Full's offline (alpha, beta) search, cold, for the 12-model workload."""
    sim = DreamSim.from_catalog(scenario_from_config(twelve_models()), "4k-1ws2os")
    mapscore.forget_tuning()  # cold: no search result cached from an earlier repeat
    policy = DreamPolicy("full")
    start = time.process_time()
    policy.offline_params(sim)
    evaluations = sum(len(step["evaluated"]) for step in policy.tuning_record.trajectory)
    return {"setup12_s": time.process_time() - start, "setup12_evaluations": evaluations}


GROWTH_HORIZONS_S = (0.25, 0.5, 1.0, 2.0)  # episode lengths of the growth curve; 2 s is the paper's T_exec
GROWTH_QUICK_HORIZONS_S = (0.25, 0.5)


def episode_growth(horizons_s: tuple[float, ...] = GROWTH_HORIZONS_S, seed: int = 0,
                   workload: str = "vr-gaming", hw: str = "4k-1ws2os") -> list[dict[str, float]]:
    """CPU seconds of one DREAM-Full episode on the simulator against the episode length (the scheduling cost
    only: (alpha, beta) fixed at the search's start (1, 1), so the one-off offline search is left out)."""
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


def measure(repeat: int) -> dict[str, float]:
    """One interleaved repeat: no-op, random episode, no-op, DREAM-Full, the 12-model set-up."""
    before = noop_rate()
    row: dict[str, float] = {"repeat": repeat, **random_episode(seed=repeat)}
    noop = (before + noop_rate()) / 2
    row.update(noop_steps_per_s=noop, random_ratio=row["random_episode_s"] / row["random_steps"] * noop,
               random_episode_noop_steps=row["random_episode_s"] * noop, **full_episode(seed=repeat),
               **twelve_model_setup())
    return row


def main(argv: list[str] | None = None) -> list[dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="also write the rows as CSV")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows = [measure(repeat) for repeat in range(args.repeats)]
    med = {k: statistics.median(r[k] for r in rows) for k in rows[0] if k != "repeat"}
    print(f"load average {load:.1f}; bare no-op env: {med['noop_steps_per_s']:,.0f} steps/CPU s "
          f"(median of {args.repeats})")
    print(f"DREAM-v0 VR_Gaming, random policy: {med['random_episode_s']:.2f} CPU s per episode "
          f"({med['random_steps']:,.0f} steps; target <= {EPISODE_TARGET_S} s quiet) = "
          f"{med['random_episode_noop_steps']:,.0f} no-op steps; per step {med['random_ratio']:.0f} x the no-op "
          f"[target <= {RATIO_TARGET:.0f}]")
    print(f"DREAM-Full, 2 s VR_Gaming: fast path {med['full_sim_s']:.2f} s ({med['full_dispatches']:,.0f} "
          f"dispatches), env {med['full_env_s']:.2f} s ({med['full_env_steps']:,.0f} steps)")
    print(f"DREAM-Full offline (alpha, beta) search, 12 models: {med['setup12_s']:.2f} CPU s "
          f"({med['setup12_evaluations']:.0f} tuning episodes; target <= {SETUP_TARGET_S} s)")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return rows


if __name__ == "__main__":
    main()
