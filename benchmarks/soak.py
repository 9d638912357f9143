"""Soak benchmark: long random-action runs of every registered family, checking invariants at every step.

The soak of docs/robustness.md: :data:`STEPS` random-action steps per family (10^6 for ETF, EMRF and PowerFlow,
2 x 10^5 for DREAM and Qin, whose steps are an event each), checking that the observation lies inside
``observation_space``, that nothing in obs, reward or info is NaN or infinite, that simulated time and energy never
decrease within an episode, that allocations stay within capacity and that the power budget holds. The generic
checks apply to every family registered in :mod:`joulegym.core.family` (a new family is soaked without editing this
file); the family invariants come from one small function per family in :data:`INVARIANTS` (a family without one
gets the generic checks only, and the report says so).

Each family's steps are split evenly over its kinds (base ids, ``gym.make`` with its wrappers) and the stress
configurations in :data:`VARIANTS`; every action is
``action_space.sample()`` from a seeded space, episodes are reset with consecutive seeds, so a run is reproducible.
An exception in a step is counted (``exceptions``) with its first example, and the episode is reset.

Usage::

    python benchmarks/soak.py                       # STEPS per family (the full soak)
    python benchmarks/soak.py --scale 0.1 --out soak.json   # a tenth of each family's steps
    python benchmarks/soak.py --steps 100000        # 10^5 steps for every family
    python benchmarks/soak.py --quick               # a smoke test (a few hundred steps per family)
    python benchmarks/soak.py --family emrf --steps 20000
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym
import numpy as np

import joulegym  # noqa: F401  (registers the ids)
from joulegym.core.family import env_id, families

QUICK_STEPS = 300  # per family with --quick
STEPS = {"etf": 10**6, "emrf": 10**6, "powerflow": 10**6, "dream": 2 * 10**5, "qin": 2 * 10**5}
DEFAULT_STEPS = 10**6  # a family registered later, until it has an entry in STEPS
# Relative slack of the capacity and power checks: the simulators compare in float64 with 1e-9 (allocations) and
# the PowerFlow repair with 1e-3 of the limit (its own assertion, joulegym/envs/powerflow/simulator.py).
CAPACITY_RTOL = 1e-9
POWER_RTOL = 1e-3


# --------------------------------------------------------------------------------------------- family invariants
# A hook takes the unwrapped env, the info of the step and the family's state of the previous step in this
# episode (a dict it may write; empty after a reset); it returns the names of the invariants broken by the step.


def _monotone(state: dict[str, float], name: str, value: float, broken: list[str]) -> None:
    if value < state.get(name, -math.inf):
        broken.append(f"{name}_decreased")
    state[name] = value


def etf_invariants(env: Any, info: Mapping[str, Any], state: dict[str, float]) -> list[str]:
    """ETF (docs/families/etf.md): epochs advance, per-app time and energy accumulate, units per round <= T."""
    sim, broken = env.sim, []
    _monotone(state, "time", float(sim.epoch), broken)
    _monotone(state, "energy", float(sum(sim.app_energy_j)), broken)
    busy = float(sum(sim.app_time_s))
    if busy - state.get("busy", 0.0) > sim.epoch_s * (1 + CAPACITY_RTOL):
        broken.append("device_time_over_epoch")  # the apps share one device: at most epoch_s of busy time
    _monotone(state, "busy", busy, broken)
    if sim.history:
        units = sim.history[-1][0]
        if sum(units) > sim.T_units or min(units) < 0:
            broken.append("units_over_T")
    return broken


def emrf_invariants(env: Any, info: Mapping[str, Any], state: dict[str, float]) -> list[str]:
    """EMRF (docs/families/emrf.md): time and work accumulate, allocations >= 0 and within both devices."""
    sim, broken = env.sim, []
    _monotone(state, "time", float(sim.time), broken)
    _monotone(state, "work", float(sim.total_gflop), broken)
    if max(float(info.get("U_cpu", 0.0)), float(info.get("U_gpu", 0.0))) > 1 + CAPACITY_RTOL:
        broken.append("utilisation_over_capacity")
    allocation = np.asarray(info.get("allocation", ()), dtype=float)
    if allocation.size and allocation.min() < 0:
        broken.append("negative_allocation")
    return broken


def powerflow_invariants(env: Any, info: Mapping[str, Any], state: dict[str, float]) -> list[str]:
    """PowerFlow (docs/families/powerflow.md): time and energy accumulate, GPUs <= G, the power budget holds."""
    sim, broken = env.sim, []
    _monotone(state, "time", float(sim.now), broken)
    _monotone(state, "energy", float(sum(sim.energy.values())), broken)
    running = sim.running
    if running.size and int(np.asarray(sim.n)[running].sum()) > sim.G:
        broken.append("gpus_over_capacity")
    if sim.cfg.power_constraint == "repair" and sim.max_job_power > sim.power_limit * (1 + POWER_RTOL) + 1e-6:
        broken.append("power_budget_broken")
    return broken


def dream_invariants(env: Any, info: Mapping[str, Any], state: dict[str, float]) -> list[str]:
    """DREAM (docs/families/dream.md): time, energy and the dispatch and layer counters accumulate; at most one
    frame runs on each accelerator and every count of violated frames stays within the frames released."""
    sim, broken = env.sim, []
    _monotone(state, "time", float(sim.now), broken)
    _monotone(state, "energy", float(sim.energy_total), broken)
    _monotone(state, "dispatches", float(sim.dispatches), broken)
    _monotone(state, "layers", float(sim.layers), broken)
    _monotone(state, "switch_energy", float(sim.switch_energy_total), broken)
    if float(np.min(sim.acc_energy)) < 0 or float(np.min(sim.acc_frames)) < 0:
        broken.append("negative_accelerator_counter")
    if np.any(np.asarray(sim.acc_violated) > np.asarray(sim.acc_frames)):
        broken.append("violations_over_frames")
    return broken


def qin_invariants(env: Any, info: Mapping[str, Any], state: dict[str, float]) -> list[str]:
    """Qin (docs/families/qin.md): time and energy accumulate, utilisation in [0, 1], loads and thread counts >= 0."""
    sim, broken = env.sim, []
    _monotone(state, "time", float(sim.now), broken)
    _monotone(state, "energy", float(np.sum(sim.energy_j)), broken)
    util = np.asarray(sim.util, dtype=float)
    if util.size and (util.min() < -CAPACITY_RTOL or util.max() > 1 + CAPACITY_RTOL):
        broken.append("utilisation_outside_0_1")
    if np.any(np.asarray(sim.load_instr) < 0) or np.any(np.asarray(sim.core_threads) < 0):
        broken.append("negative_load")
    return broken


def qin_workload_file() -> str:
    """A Qin workload file (Poisson arrivals of every mix, sizes across the file bounds) in a temporary folder:
    the soak runs the file loader's output too."""
    import tempfile

    from joulegym.workloads.qin_jobs import QinJobs, generate_jobs, save_jobs

    path = Path(tempfile.mkdtemp(prefix="joulegym-soak-")) / "workload.csv"
    jobs = generate_jobs(["rw", "lc", "tb"], 60, seed=0, arrival="poisson", rate_per_s=0.05, lc_dist="exp")
    sizes = np.array(jobs.size_instr) * np.geomspace(1e-3, 1e2, jobs.n_jobs)  # short and very long jobs
    save_jobs(QinJobs(jobs.catalog, jobs.app, jobs.arrival_s, sizes, jobs.threads), path)
    return str(path)


# Besides every kind's base id, configurations that stress a family's invariants: scenarios where jobs or apps come
# and go, and the PowerFlow setting where the repair once broke the budget (small100, eta 0.3, affinity placement).
VARIANTS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "etf": [("joulegym/ETF-random-mix-v0", {})],
    "emrf": [("joulegym/EMRF-apu-random-v0", {})],
    "powerflow": [("joulegym/PowerFlow-small100-v0", {"eta": 0.3, "placement": "affinity"})],
    "dream": [("joulegym/DREAM-random-mix-v0", {}), ("joulegym/DREAMParams-vr-gaming-to-ar-social-v0", {})],
    "qin": [("joulegym/QinCluster-poisson-v0", {}), ("joulegym/QinCluster-biglittle-v0", {}),
            ("joulegym/QinCluster-v0", {"workload": {"kind": "file", "path": qin_workload_file}})],
}

INVARIANTS: dict[str, Callable[[Any, Mapping[str, Any], dict[str, float]], list[str]]] = {
    "etf": etf_invariants,
    "emrf": emrf_invariants,
    "powerflow": powerflow_invariants,
    "dream": dream_invariants,
    "qin": qin_invariants,
}


# --------------------------------------------------------------------------------------------- generic checks


def first_non_finite(value: Any, where: str = "value") -> str | None:
    """Where the first NaN or infinite number in ``value`` (nested dicts, lists, tuples, arrays) is, or None."""
    if isinstance(value, Mapping):
        items: Any = ((f"{where}[{k!r}]", v) for k, v in value.items())
    elif isinstance(value, list | tuple):
        items = ((f"{where}[{i}]", v) for i, v in enumerate(value))
    elif isinstance(value, np.ndarray):
        if value.dtype.kind in "fc":
            return None if np.all(np.isfinite(value)) else f"{where} = {value}"
        if value.dtype != object:
            return None
        items = ((f"{where}[{i}]", v) for i, v in enumerate(value.ravel()))
    elif isinstance(value, float | np.floating | complex | np.complexfloating):
        return None if math.isfinite(abs(value)) else f"{where} = {value!r}"
    else:
        return None
    return next((bad for path, item in items if (bad := first_non_finite(item, path)) is not None), None)


def non_finite(value: Any) -> bool:
    """True if any number in ``value`` is NaN or infinite."""
    return first_non_finite(value) is not None


@dataclass
class SoakResult:
    """Counts of one env id's soak."""

    id: str
    steps: int = 0
    episodes: int = 0
    seconds: float = 0.0
    violations: dict[str, int] = field(default_factory=dict)
    first: dict[str, str] = field(default_factory=dict)  # violation -> "seed S step T: detail"
    family_checks: bool = True

    def flag(self, name: str, where: str) -> None:
        self.violations[name] = self.violations.get(name, 0) + 1
        self.first.setdefault(name, where)


def soak(id_: str, steps: int, seed: int, hook: Callable[..., list[str]] | None,
         kwargs: Mapping[str, Any] | None = None) -> SoakResult:
    """``steps`` random-action steps of ``gym.make(id_, **kwargs)`` (episodes reset with seeds ``seed``, ``seed + 1``,
    ...)."""
    label = id_ + (f" {json.dumps(dict(kwargs))}" if kwargs else "")
    result = SoakResult(label, family_checks=hook is not None)
    env = gym.make(id_, **(kwargs or {}))
    unwrapped = env.unwrapped
    episode_seed = seed
    env.action_space.seed(seed)
    start = time.perf_counter()
    need_reset, state, t = True, {}, 0
    while result.steps < steps:
        if need_reset:
            obs, info = env.reset(seed=episode_seed)
            where = f"seed {episode_seed} reset"
            episode_seed += 1
            result.episodes += 1
            need_reset, state, t = False, {}, 0
            if not env.observation_space.contains(obs):
                result.flag("obs_outside_space", where)
            if non_finite(obs) or non_finite(info):
                result.flag("non_finite", where)
        where = f"seed {episode_seed - 1} step {t}"
        try:
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        except Exception as err:  # counted and reported; the soak goes on with a new episode
            result.flag(f"exception:{type(err).__name__}", f"{where}: {str(err)[:200]}")
            result.steps += 1
            need_reset = True
            continue
        result.steps += 1
        t += 1
        if not env.observation_space.contains(obs):
            result.flag("obs_outside_space", where)
        if non_finite(obs) or non_finite(reward) or non_finite(info):
            result.flag("non_finite", where)
        if hook is not None:
            for name in hook(unwrapped, info, state):
                result.flag(name, where)
        need_reset = terminated or truncated
    result.seconds = time.perf_counter() - start
    env.close()
    return result


def family_runs(name: str) -> list[tuple[str, dict[str, Any]]]:
    """Every kind's base id, then the family's :data:`VARIANTS` (those registered)."""
    descriptor = next(f for f in families() if f.name == name)
    runs = [(env_id(k.name, version=k.version), {}) for k in descriptor.kinds]
    return runs + [(i, _made(kw)) for i, kw in VARIANTS.get(name, []) if i in gym.registry]


def _made(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with every callable value (at any depth) replaced by its result (a file written on demand)."""
    return {k: _made(v) if isinstance(v, dict) else (v() if callable(v) else v) for k, v in kwargs.items()}


def family_steps(name: str, steps: int | None, scale: float) -> int:
    """The steps of family ``name``: ``steps`` if given, else :data:`STEPS` times ``scale``."""
    return steps if steps is not None else max(1, round(STEPS.get(name, DEFAULT_STEPS) * scale))


def run(steps: int | dict[str, int], seed: int, names: list[str]) -> dict[str, list[SoakResult]]:
    results: dict[str, list[SoakResult]] = {}
    for name in names:
        runs = family_runs(name)
        steps_of = steps[name] if isinstance(steps, dict) else steps
        per_run = [steps_of // len(runs) + (i < steps_of % len(runs)) for i in range(len(runs))]
        results[name] = [soak(id_, n, seed, INVARIANTS.get(name), kw) for (id_, kw), n in zip(runs, per_run)]
    return results


def report(results: dict[str, list[SoakResult]]) -> str:
    lines = ["| family | id | steps | episodes | steps/s | violations |", "|---|---|---|---|---|---|"]
    for name, rows in results.items():
        for r in rows:
            broken = ", ".join(f"{k}: {v}" for k, v in sorted(r.violations.items())) or "0"
            if not r.family_checks:
                broken += " (generic checks only: no family invariants)"
            rate = r.steps / r.seconds if r.seconds else float("nan")
            lines.append(f"| {name} | {r.id} | {r.steps} | {r.episodes} | {rate:,.0f} | {broken} |")
    firsts = [f"- {r.id} {k}: first at {w}" for rows in results.values() for r in rows for k, w in r.first.items()]
    return "\n".join(lines + (["", *firsts] if firsts else []))


def main(argv: list[str] | None = None) -> int:
    known = [f.name for f in families()]
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=None,
                        help="random-action steps for every family (default: STEPS, per family)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply each family's STEPS (a reduced soak)")
    parser.add_argument("--quick", action="store_true", help=f"a smoke test: {QUICK_STEPS} steps per family")
    parser.add_argument("--family", action="append", choices=known, help="only this family (repeatable)")
    parser.add_argument("--seed", type=int, default=0, help="first episode seed (and the action sampler's)")
    parser.add_argument("--out", type=Path, help="also write the counts as JSON here")
    args = parser.parse_args(argv)
    if (args.steps is not None and args.steps < 1) or args.seed < 0 or not 0 < args.scale <= 100:
        parser.error("--steps must be >= 1, --seed >= 0 and --scale in (0, 100]")
    names = args.family or known
    steps = {n: QUICK_STEPS if args.quick else family_steps(n, args.steps, args.scale) for n in names}
    results = run(steps, args.seed, names)
    print(report(results))
    if args.out is not None:
        payload = {"steps_per_family": steps, "seed": args.seed,
                   "results": {k: [vars(r) for r in v] for k, v in results.items()}}  # fmt: skip
        tmp = args.out.with_name(f".{args.out.name}.tmp")
        tmp.write_text(json.dumps(payload, indent=2) + "\n")
        os.replace(tmp, args.out)
    return 1 if any(r.violations for rows in results.values() for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
