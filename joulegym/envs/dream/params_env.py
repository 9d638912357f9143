"""``joulegym/DREAMParams-v0``: the agent sets MapScore's (alpha, beta) once per window while DREAM schedules inside it
(Kim et al., ASPLOS '23 §3.6, §4.4; ``docs/families/dream.md`` §4).

A different decision problem from ``DREAM-v0``'s dispatch, so a class of its own: the agent replaces DREAM's
adaptivity engine (§4.4); the scheduler it tunes, DREAM-``dream_variant``, is an inner policy
(:class:`joulegym.envs.dream.mapscore.DreamPolicy` with ``tuning="fixed"``) that runs every decision point of the
window with the action's weights.

=====================  ========================================================================================
step                   one window of ``window_s`` (``None``: horizon / 8, the 0.25 s of a 2 s episode [A])
action                 ``Box([0, 0], [2, 2])`` = (alpha, beta) (§3.5, §5.2's range)
observation            ``Box(-10, 10, (4M + A + 13,), float32)`` (56 for M = 10, A = 3): per model: present, DLV
                       rate, normalised energy and drop rate of the last window; per accelerator: its busy share
                       of the window; global: alpha/2, beta/2, Table 3 workload one-hot, t / horizon, time since the
                       last workload change / horizon, outstanding frames, the window's DLV rate, energy rate and
                       log10 UXCost / 6
reward parts           ``uxcost_window`` = -UXCost over the frames whose deadline fell in the window (Alg. 2;
                       preset ``"uxcost"``, default), ``log_uxcost_window`` = -log UXCost (floor 1e-6; ``"log"``)
truncated              after ``ceil(horizon_s / window_s)`` windows
info                   ``alpha``, ``beta``, ``window_uxcost``; ``metrics`` on the last step
=====================  ========================================================================================

Config keys: those of :class:`joulegym.envs.dream.env.DreamEnvBase`, plus ``window_s`` and ``dream_variant``
(``"full"``, ``"smartdrop"``, ``"mapscore"``). DREAM's adaptivity engine is the reference policy
(``joulegym.baselines.dream``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from joulegym.core.actions import ActionType, validated_box_list
from joulegym.core.config import check_choice, check_number, check_positive
from joulegym.core.env import row_names
from joulegym.core.rewards import RewardPart, RewardSpec
from joulegym.envs.dream.env import MAX_HORIZON_S, WORKLOADS, DreamEnvBase
from joulegym.envs.dream.mapscore import DreamPolicy
from joulegym.envs.dream.observation import OBS_BOUND
from joulegym.envs.dream.render import render_text

PARAM_HIGH = 2.0  # alpha, beta in [0, 2] (§5.2)
WINDOWS_PER_EPISODE = 8  # the default window: horizon / 8 [A] (0.25 s of the paper's 2 s T_exec)
MODEL_NAMES = ("present", "dlv_rate", "energy", "drop_rate")
MODEL_FEATURES = len(MODEL_NAMES)
LOG_UX_FLOOR = 1e-6  # log UXCost of a window without frames or energy (a floor; UXCost is >= 0)
DREAM_VARIANTS = ("full", "smartdrop", "mapscore")


class ParamsAction(ActionType):
    """``params``: ``Box([0, 0], [2, 2])`` = MapScore's (alpha, beta) for the next window (§3.5, §5.2)."""

    name = "params"

    def __init__(self, env: DreamParamsEnv) -> None:
        super().__init__(env)
        self.space = gym.spaces.Box(0.0, PARAM_HIGH, (2,), dtype=np.float32)

    def decode(self, action: Any) -> tuple[float, float]:
        self.repaired = False
        alpha, beta = validated_box_list(action, self.space)
        return alpha, beta

    def encode(self, decision: Any) -> np.ndarray:
        alpha, beta = decision
        return np.array([alpha, beta], dtype=np.float32)


class DreamParamsEnv(DreamEnvBase):
    """``DREAMParams-v0`` (module docstring)."""

    action_types: ClassVar[dict[str, type[ActionType]]] = {"params": ParamsAction}
    lean_info_keys: ClassVar[tuple[str, ...]] = ("alpha", "beta", "window_uxcost")
    reward_parts = (  # the finite bounds are per config (_reward_spec, ux_bound: b = the workloads' model count)
        RewardPart("uxcost_window", -math.inf, 0.0,
                   "-UXCost over the frames due in the window (Alg. 2); in [-b^2, 0] (b: the workloads' model count)"),
        RewardPart("log_uxcost_window", -math.inf, math.inf,
                   "-log UXCost of the window (floor 1e-6); in [-log b^2, -log 1e-6]"),
    )
    reward_presets: ClassVar[dict[str, dict[str, float]]] = {"uxcost": {"uxcost_window": 1.0},
                                                              "log": {"log_uxcost_window": 1.0}}

    def _reward_spec(self) -> RewardSpec:
        # a window's UXCost lies in [0, b**2] (ux_bound); its log is floored at LOG_UX_FLOOR
        top = self.ux_bound() ** 2
        bounds = {"uxcost_window": (-top, 0.0),
                  "log_uxcost_window": (-math.log(max(top, LOG_UX_FLOOR)), -math.log(LOG_UX_FLOOR))}
        return RewardSpec(tuple(RewardPart(p.name, *bounds[p.name], p.description) for p in self.reward_parts),
                          self.reward_presets)

    @classmethod
    def default_config(cls) -> dict[str, Any]:
        return {**super().default_config(), "window_s": None, "dream_variant": "full"}

    def _configure(self) -> None:
        super()._configure()
        c = self.config
        if c["window_s"] is None:
            self.window_s = self.horizon_s / WINDOWS_PER_EPISODE
        else:
            self.window_s = check_number("window_s", check_positive("window_s", c["window_s"]), 0.0, MAX_HORIZON_S)
        check_choice("dream_variant", c["dream_variant"], DREAM_VARIANTS)
        self.n_windows = max(1, math.ceil(self.horizon_s / self.window_s - 1e-9))
        size = self.M * MODEL_FEATURES + self.A + 2 + len(WORKLOADS) + 6
        self.observation_space = gym.spaces.Box(-OBS_BOUND, OBS_BOUND, (size,), dtype=np.float32)

    def _begin_episode(self, options: dict[str, Any]) -> None:
        super()._begin_episode(options)
        self.scheduler = DreamPolicy(self.config["dream_variant"], "fixed", supernet_rule=self.config["supernet_rule"])
        self.scheduler.reset(self.sim, self.np_random)
        self.params = (1.0, 1.0)  # the ablation baseline's fixed point until the first action (§5.2, Fig. 9)
        self.window_index = 0
        self.last_window: dict[str, Any] = {"uxcost": 0.0, "stats": None, "busy": np.zeros(self.n_acc)}
        self.param_log: list[tuple[float, float, float]] = []  # (alpha, beta, window UXCost)
        self._last_change_s = 0.0

    def _transition(self, decision: tuple[float, float]) -> tuple[float, float]:
        alpha, beta = decision
        self.params = (alpha, beta)
        scheduler = self.scheduler
        scheduler.set_params(alpha, beta)
        sim = self.sim
        t0 = self.window_index * self.window_s
        t1 = min((self.window_index + 1) * self.window_s, self.horizon_s)
        view = sim.view()
        busy0 = list(sim.acc_busy_total)
        while sim.advance(t1):  # DREAM schedules every decision point of the window
            sim.apply(scheduler.decide(view))
        self.window_index += 1
        stats = sim.window_stats(t0, t1)
        ux = float(sim.window_uxcost(t0, t1))
        busy = np.subtract(sim.acc_busy_total, busy0)
        self.last_window = {"uxcost": ux, "stats": stats, "busy": busy / max(t1 - t0, 1e-9)}
        self.param_log.append((alpha, beta, ux))
        if self.switch_to is not None and t0 <= float(self.config["switch_at_s"]) < t1:
            self._last_change_s = float(self.config["switch_at_s"])
        return -ux, -math.log(max(ux, LOG_UX_FLOOR))

    def _observe(self) -> np.ndarray:
        M, A = self.M, self.A
        obs = np.zeros(self.observation_space.shape[0], dtype=np.float32)
        last = self.last_window
        stats = last.get("stats")
        dlv = energy_rate = 0.0
        if stats is not None:
            frames, viol, spent, worst, drops = (np.asarray(stats[k], dtype=float)
                                                 for k in ("frames", "violated", "energy", "worst", "drops"))
            n = len(frames)
            per_model = np.zeros((M, MODEL_FEATURES))
            per_model[:n, 0] = 1.0
            per_model[:n, 1] = np.divide(viol, frames, out=np.zeros(n), where=frames > 0)
            per_model[:n, 2] = np.divide(spent, worst, out=np.zeros(n), where=worst > 0)
            per_model[:n, 3] = np.divide(drops, frames, out=np.zeros(n), where=frames > 0)
            obs[: M * MODEL_FEATURES] = per_model.ravel()
            busy = np.minimum(last["busy"], 1.0)
            obs[M * MODEL_FEATURES: M * MODEL_FEATURES + len(busy)] = busy
            dlv = float(viol.sum() / frames.sum()) if frames.sum() else 0.0
            energy_rate = float(spent.sum() / worst.sum()) if worst.sum() else 0.0
        now = self.sim.now
        ux = last["uxcost"]
        obs[M * MODEL_FEATURES + A:] = (
            self.params[0] / PARAM_HIGH, self.params[1] / PARAM_HIGH, *self.workload_onehot,
            min(now / self.horizon_s, 1.0), min((now - self._last_change_s) / self.horizon_s, 1.0),
            len(self.view.outstanding) / (4.0 * max(self.n_models, 1)), dlv, energy_rate,
            math.log10(max(ux, LOG_UX_FLOOR)) / 6.0 if ux > 0 else -1.0)
        return np.clip(obs, -OBS_BOUND, OBS_BOUND)

    def window_rates(self) -> tuple[float, float, float, int]:
        """``(UXCost, DLV rate, drop rate, frames)`` of the last window, as the adaptivity engine reads a window
        (§4.4: it tracks the DLV and frame-drop rates)."""
        stats = self.last_window.get("stats")
        if stats is None:
            return 0.0, 0.0, 0.0, 0
        frames = sum(stats["frames"])
        if not frames:
            return float(self.last_window["uxcost"]), 0.0, 0.0, 0
        return (float(self.last_window["uxcost"]), sum(stats["violated"]) / frames, sum(stats["drops"]) / frames,
                int(frames))

    def _truncated(self) -> bool:
        return self.window_index >= self.n_windows

    def _max_episode_steps(self) -> int:
        """One window per step."""
        return int(self.n_windows)

    def _observation_names(self) -> list[str]:
        """Per model position, each accelerator's busy share, then global (module docstring)."""
        glob = ("alpha", "beta", *(f"workload_{w}" for w in WORKLOADS), "time", "since_change", "outstanding",
                "dlv_rate", "energy_rate", "log10_uxcost")
        return row_names("model", self.M, MODEL_NAMES) + [f"acc{a}.busy" for a in range(self.A)] + list(glob)

    def _extra_info(self) -> dict[str, Any]:
        return {"alpha": float(self.params[0]), "beta": float(self.params[1]),
                "window_uxcost": float(self.last_window["uxcost"])}

    def metrics(self) -> dict[str, Any]:
        """:meth:`DreamSim.metrics` plus the windows run."""
        return {**self.sim.metrics(), "windows": int(self.window_index)}

    def _render_ansi(self) -> str:
        alpha, beta = self.params
        window = f"window {self.window_index}/{self.n_windows}  alpha={alpha:.3f} beta={beta:.3f}"
        return render_text(self, extra=f"{window}  last window UXCost {self.last_window['uxcost']:.4g}")
