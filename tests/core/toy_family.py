"""A complete toy family on the core, as ``docs/adding-a-family.md`` walks through it.

One DVFS device (the ``toy-dvfs`` preset: levels 250-1000 MHz) runs a queue of work; each step the agent picks
a frequency level; the step's progress is ``f / f_max`` units of work and its energy
``P(f) = p_static + p_dyn (f / f_max)^3`` (a cubic CMOS power curve). Reward parts: ``progress`` (work done) and
``energy`` (minus the energy); the ``balanced`` preset weighs them 1 : 1. It uses every hook a family has: a
device preset, a simulator on the core's base, an env kind, an inner reference policy, scenarios, a leaderboard
benchmark and a benchmark script's growth curve (:func:`harness_growth`). A real family splits this file into
``devices/presets/``, ``envs/toy/``, ``baselines/toy.py``, ``scenarios/toy.py`` and ``benchmarks/bench_toy.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from joulegym.core.actions import ActionType, validated_discrete_action
from joulegym.core.benchmark import Benchmark
from joulegym.core.config import Scenario, check_int, check_positive
from joulegym.core.env import JoulegymEnv
from joulegym.core.family import EnvKind, FamilyDescriptor
from joulegym.core.plotting import new_figure
from joulegym.core.policy import register_policy
from joulegym.core.rewards import RewardPart
from joulegym.core.simulator import Simulator
from joulegym.devices import Device, FrequencyGrid, available_devices, get_device, register_device


# --- the device preset (devices/presets/toy_dvfs.py, registered in joulegym/devices/__init__.py) -------------------
def build_device() -> Device:
    return Device(name="toy-dvfs", kind="toy", description="toy DVFS device: four levels, 250-1000 MHz",
                  frequencies=FrequencyGrid((250.0, 500.0, 750.0, 1000.0)), source="docs/adding-a-family.md")


if "toy-dvfs" not in available_devices():  # this module may be imported twice (the harness loads it by path)
    register_device("toy-dvfs", build_device)
_GRID = get_device("toy-dvfs").frequencies.levels_mhz
LEVELS = tuple(f / _GRID[-1] for f in _GRID)  # f / f_max: 0.25, 0.5, 0.75, 1.0


# --- the simulator (envs/toy/simulator.py): no Gymnasium ---------------------------------------------------
class ToySimulator(Simulator):
    """The episode's work is the instance; ``apply(level)`` runs one step at that frequency level; ``advance()``
    has nothing left to run (every step is one decision) and says whether the episode goes on."""

    def __init__(self, p_static: float, p_dyn: float, horizon: int) -> None:
        self.p_static, self.p_dyn, self.horizon = p_static, p_dyn, horizon

    def reset(self, rng: np.random.Generator | None, instance: float | None = None) -> None:
        """``instance``: the work (``None``: 4 units plus up to 0.5 drawn from ``rng``, the env's defaults)."""
        work = 4.0 + 0.5 * float(rng.random()) if instance is None else instance
        self.work_left, self.steps, self.energy_j, self.level = float(work), 0, 0.0, 0
        self.last_progress = self.last_energy = 0.0

    def _apply(self, level: int) -> None:
        self.level = int(level)
        f = LEVELS[self.level]
        self.last_progress = min(f, self.work_left)
        self.last_energy = (self.p_static + self.p_dyn * f ** 3) * self.last_progress / f
        self.work_left -= self.last_progress
        self.energy_j += self.last_energy
        self.steps += 1

    def advance(self) -> bool:
        return not (self.done or self.truncated)

    def view(self) -> Mapping[str, float]:
        return MappingProxyType({"work_left": self.work_left, "p_static": self.p_static, "p_dyn": self.p_dyn})

    def metrics(self) -> dict[str, float]:
        return {"energy_j": self.energy_j, "steps": float(self.steps), "work_left": self.work_left}

    @property
    def done(self) -> bool:
        return self.work_left <= 1e-12

    @property
    def truncated(self) -> bool:
        return self.steps >= self.horizon


# --- the action type and the env (envs/toy/env.py) ----------------------------------------------------------
class LevelAction(ActionType):
    """``Discrete(len(LEVELS))``: the frequency level of the step."""

    name = "level"

    def __init__(self, env: JoulegymEnv) -> None:
        super().__init__(env)
        self.space = gym.spaces.Discrete(len(LEVELS))

    @property
    def has_mask(self) -> bool:
        return True

    def decode(self, action: Any) -> int:
        self.repaired = False
        return validated_discrete_action(action, self.space)

    def encode(self, decision: int) -> int:
        return int(decision)


class ToyEnv(JoulegymEnv):
    """Toy DVFS env: spaces, reward and termination in the module docstring."""

    family = "toy"
    action_types: ClassVar = {"level": LevelAction}
    inner_fast_path = True  # the transition never reads the observation: inner policies may skip it
    lean_info_keys: ClassVar = ("level",)
    reward_parts = (RewardPart("progress", 0.0, 1.0, "work done this step"),
                    RewardPart("energy", -np.inf, 0.0, "minus the energy of the step (J)"))
    reward_presets: ClassVar = {"balanced": {"progress": 1.0, "energy": 1.0}, "progress": {"progress": 1.0}}

    @classmethod
    def default_config(cls) -> dict[str, Any]:
        return {**super().default_config(), "work": 4.0, "work_jitter": 0.5, "p_static": 0.3, "p_dyn": 1.0,
                "horizon": 40}

    def _configure(self) -> None:
        cfg = self.config
        check_positive("work", cfg["work"])
        check_positive("work_jitter", cfg["work_jitter"], allow_zero=True)
        self.sim = ToySimulator(check_positive("p_static", cfg["p_static"]), check_positive("p_dyn", cfg["p_dyn"]),
                                check_int("horizon", cfg["horizon"], 1))
        high = np.array([cfg["work"] + cfg["work_jitter"], 1.0], dtype=np.float32)  # work left, time
        self.observation_space = gym.spaces.Box(0.0, high, (2,), dtype=np.float32)

    def _begin_episode(self, options: dict[str, Any]) -> None:
        cfg = self.config
        self.sim.reset(self.np_random, cfg["work"] + cfg["work_jitter"] * float(self.np_random.random()))

    def _transition(self, decision: int) -> tuple[float, float]:
        self.sim.apply(decision)
        self.sim.advance()
        return self.sim.last_progress, -self.sim.last_energy

    def _observe(self) -> np.ndarray:
        return np.array([self.sim.work_left, self.sim.steps / self.sim.horizon], dtype=np.float32)

    def _max_episode_steps(self) -> int:
        return self.sim.horizon

    def _observation_names(self) -> list[str]:
        return ["work_left", "time"]

    def _terminated(self) -> bool:
        return self.sim.done

    def _truncated(self) -> bool:
        return self.sim.truncated

    def _extra_info(self) -> dict[str, Any]:
        return {"level": self.sim.level}

    def metrics(self) -> dict[str, Any]:
        return self.sim.metrics()

    def _render_ansi(self) -> str:
        return f"step {self.sim.steps}: level {self.sim.level}, work left {self.sim.work_left:.2f}"

    def _render_figure(self):
        fig, axes = new_figure()
        axes[0, 0].bar(["work left", "energy"], [self.sim.work_left, self.sim.energy_j])
        return fig


# --- reference policy (baselines/toy.py) --------------------------------------------------------------------
class BestLevelPolicy:
    """An inner policy (:mod:`joulegym.core.inner`): the level maximising the balanced return, work done minus
    energy per unit of work (privileged: reads the power model). ``make("best-level")`` wraps it so it drives the
    env; :func:`~joulegym.core.inner.run_inner` runs it on the simulator alone."""

    name = "best-level"
    privileged = True

    def reset(self, sim: ToySimulator, rng: np.random.Generator) -> None:
        view = sim.view()
        value = [1.0 - (view["p_static"] + view["p_dyn"] * f ** 3) / f for f in LEVELS]  # per unit of work
        self._level = int(np.argmax(value))

    def decide(self, view: Mapping[str, float]) -> int:
        return self._level


def register_policies() -> None:
    register_policy("best-level", BestLevelPolicy, family="toy", description="best fixed level (privileged)",
                    inner=True)


# --- the descriptor (scenarios/toy.py) ----------------------------------------------------------------------
SCENARIOS = {"long": Scenario("long", "twice the work", {"work": 8.0, "horizon": 60}),
             "steady": Scenario("steady", "the same work every episode", {"work_jitter": 0.0})}

FAMILY = FamilyDescriptor(
    name="toy",
    title="Toy: a DVFS device finishing a queue of work",
    kinds=(EnvKind("ToyDVFS", f"{__name__}:ToyEnv", "level", "Toy DVFS: the frequency level each step"),),
    scenarios=SCENARIOS,
    policies=__name__ + "_policies",
    reference_policy="best-level",
    docs="docs/adding-a-family.md",
    benchmark=Benchmark(kind="ToyDVFS", scenarios=("steady", "long"), generalisation="long", metric="energy",
                        metric_terms={"energy_j": 1.0}, higher_is_better=False, heuristics=("best-level",),
                        best_heuristic={"steady": "best-level", "long": "best-level"}),
    benchmark_script="tests/core/toy_family.py",
    trajectory_pins=("joulegym/ToyDVFS-v0",),
)


# --- the benchmark script's growth curve (benchmarks/bench_toy.py) -------------------------------------------------
def harness_growth():
    """``benchmarks/harness.py`` adds this curve: CPU s per episode of the reference policy against the work."""

    def cpu_s_per_episode(settings) -> list[tuple[float, float]]:
        import time

        from joulegym.core.inner import run_inner

        points = []
        for work in (4.0, 16.0) if settings.quick else (4.0, 16.0, 64.0, 256.0):
            sim = ToySimulator(0.3, 1.0, horizon=10**6)
            start = time.process_time()
            run_inner(sim, BestLevelPolicy(), 0, work)
            points.append((work, time.process_time() - start))
        return points

    return [("toy-work", "toy", "units of work", "CPU s per episode", cpu_s_per_episode)]
