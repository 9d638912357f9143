"""A complete toy family on the core, as ``docs/adding-a-family.md`` walks through it.

One DVFS device runs a queue of work; each step the agent picks a frequency level; the step's
progress is ``f / f_max`` units of work and its energy ``P(f) = p_static + p_dyn (f / f_max)^3`` (a
cubic CMOS power curve). Reward parts: ``progress`` (work done) and ``energy`` (minus the energy);
the ``balanced`` preset weighs them 1 : 1. A real family splits this file into ``envs/toy/``,
``baselines/toy.py`` and ``scenarios/toy.py``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from joulegym.core.actions import ActionType, validated_discrete_action
from joulegym.core.config import Scenario, check_int, check_positive
from joulegym.core.env import JoulegymEnv
from joulegym.core.family import EnvKind, FamilyDescriptor
from joulegym.core.plotting import new_figure
from joulegym.core.policy import PolicyNotApplicable, register_policy
from joulegym.core.rewards import RewardPart

LEVELS = (0.25, 0.5, 0.75, 1.0)  # f / f_max


# --- the simulator (envs/toy/simulator.py): no Gymnasium ---------------------------------------------------
class ToySimulator:
    """Work arrives at reset; ``apply(level)`` picks the frequency, ``advance()`` runs one step."""

    def __init__(self, p_static: float, p_dyn: float, horizon: int) -> None:
        self.p_static, self.p_dyn, self.horizon = p_static, p_dyn, horizon

    def reset(self, work: float) -> None:
        self.work_left, self.steps, self.energy_j, self.level = float(work), 0, 0.0, 0
        self.last_progress = self.last_energy = 0.0

    def apply(self, level: int) -> None:
        self.level = int(level)

    def advance(self) -> bool:
        f = LEVELS[self.level]
        self.last_progress = min(f, self.work_left)
        self.last_energy = (self.p_static + self.p_dyn * f ** 3) * self.last_progress / f
        self.work_left -= self.last_progress
        self.energy_j += self.last_energy
        self.steps += 1
        return not (self.done or self.truncated)

    def view(self) -> dict[str, float]:
        return {"work_left": self.work_left, "p_static": self.p_static, "p_dyn": self.p_dyn}

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
        self.observation_space = gym.spaces.Box(0.0, np.inf, (2,), dtype=np.float32)

    def _begin_episode(self, options: dict[str, Any]) -> None:
        cfg = self.config
        self.sim.reset(cfg["work"] + cfg["work_jitter"] * float(self.np_random.random()))

    def _transition(self, decision: int) -> tuple[float, float]:
        self.sim.apply(decision)
        self.sim.advance()
        return self.sim.last_progress, -self.sim.last_energy

    def _observe(self) -> np.ndarray:
        return np.array([self.sim.work_left, self.sim.steps / self.sim.horizon], dtype=np.float32)

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
    """The level maximising the balanced return, work done minus energy per unit of work (privileged: reads the
    power model)."""

    name = "best-level"
    privileged = True

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        base = env.unwrapped
        if getattr(base, "family", None) != "toy":
            raise PolicyNotApplicable(f"{self.name} drives the toy family only")
        view = base.sim.view()
        value = [1.0 - (view["p_static"] + view["p_dyn"] * f ** 3) / f for f in LEVELS]  # per unit of work
        self._level = int(np.argmax(value))
        self._encode = base.action_type.encode

    def act(self, obs: Any, info: dict[str, Any]) -> int:
        return self._encode(self._level)


def register_policies() -> None:
    register_policy("best-level", BestLevelPolicy, family="toy", description="best fixed level (privileged)")


# --- the descriptor (scenarios/toy.py) ----------------------------------------------------------------------
SCENARIOS = {"long": Scenario("long", "twice the work", {"work": 8.0, "horizon": 60})}

FAMILY = FamilyDescriptor(
    name="toy",
    title="Toy: a DVFS device finishing a queue of work",
    kinds=(EnvKind("ToyDVFS", f"{__name__}:ToyEnv", "level", "Toy DVFS: the frequency level each step"),),
    scenarios=SCENARIOS,
    policies=__name__ + "_policies",
    reference_policy="best-level",
    docs="docs/adding-a-family.md",
    trajectory_pins=("joulegym/ToyDVFS-v0",),
)
