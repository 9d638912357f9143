"""``joulegym/DREAM-v0``: real-time multi-model ML inference on a multi-accelerator SoC, one scheduling decision
per step (Kim et al., DREAM, ASPLOS '23; ``docs/families/dream.md`` §4).

:class:`DreamEnvBase` holds what both DREAM kinds share (the workload, the SoC, the simulator
:class:`~joulegym.envs.dream.simulator.DreamSim` and its settings); :class:`DreamEnv` is the dispatch MDP and
:class:`joulegym.envs.dream.params_env.DreamParamsEnv` the (alpha, beta) MDP, one class each.

``DREAM-v0``: one step is one decision at a decision point of the simulator (an accelerator is idle and a frame
is ready, after a release or a layer completion; several decisions may share a timestamp). Outstanding frames
sit in ``K`` slots (:class:`joulegym.core.slots.SlotTable`: a frame takes the lowest free slot at its release
and keeps it until it completes or is dropped; frames that find no slot wait, in release order, counted in
``info["overflow"]``). ``M`` model positions and ``A`` accelerators size the spaces (``max_models``,
``max_accelerators``; by default the larger of 10 / 3 and what the configured workloads and SoCs need).

=====================  ========================================================================================
action                 ``Discrete(K*A*V + K + 1)``: ``(k*A + a)*V + v`` dispatches the next unit (a layer, or the
                       rest of a chunk at ``granularity="chunk:N"``) of slot k's frame on accelerator a (§4.5)
                       with sub-net v (V = 1 unless ``supernet="agent"``: V = 4, OFA's sub-nets, v > 0 only at
                       the frame's switch point); ``K*A*V + k`` drops slot k's frame (§4.2.1); the last action
                       waits for the next event. ``action_masks()``: dispatch needs a ready frame and an idle
                       accelerator, a drop a frame of a leaf model that dropped fewer than 2 of its last 10
                       frames (smart-drop conditions 3 and 4). ``work_conserving`` (default ``True``): a drop
                       also needs a doomed frame (condition 1: minimum_to_go > slack) and wait is valid only
                       when no dispatch is (the paper's scheduler dispatches whenever it can, §4.1); ``False``:
                       wait is always valid. A masked-out action waits, or takes the first valid action where
                       wait is masked out (``info["repaired"]``, reward part ``invalid``). At a Supernet's
                       switch point the sub-net follows ``supernet`` (``"dream_rule"``: §4.5.1's rule
                       ``supernet_rule``; ``"original"``; ``"agent"``)
observation            ``Box(-10, 10, (K*(13 + M + 3A) + 6A + 5M + 11,), float32)`` (559 for K = 16, M = 10,
                       A = 3): per slot: valid, model one-hot, leaf, drop allowed, slack, ToGo and best-case
                       ToGo (per period), urgency ToGo/slack, time since the last layer (per period), fraction
                       done, next unit's latency per accelerator (per period) and energy (per its maximum),
                       resident flags, started, running; per accelerator: present, idle, busy time left (ms),
                       PEs/4096, WS, OS; per model: present, DLV rate so far, drops in its last 10 frames / 2,
                       outstanding frames / 4, energy / worst case so far; global: t / horizon, cascade p,
                       log(1 + overflow), Table 3 workload one-hot, accelerators / A, PEs / 8192, after-switch
reward parts           ``dlv`` and ``energy``: the Alg. 2 product ``UX = X * Y`` (X = sum of per-model DLV
                       rates, Y = sum of per-model normalised energies, over the frames counted so far, with
                       the 1/(2N) floor on every model that has one) split by the product rule,
                       ``dlv = -(X_t - X_{t-1}) Y_{t-1}``, ``energy = -X_t (Y_t - Y_{t-1})``: their sum telescopes
                       to ``-UXCost`` of the episode exactly; ``uxcost_terminal`` (``-UXCost`` on the last step);
                       ``violations`` and ``energy_proxy`` (``-1/N_m`` per violated frame of model m,
                       ``-dE / (N_m E_worst,m)``, N_m the frames of m per horizon); ``invalid`` (-0.01 per
                       repaired action)
reward presets         ``"uxcost"`` (default) = {dlv: 1, energy: 1}, ``"terminal"`` = {uxcost_terminal: 1},
                       ``"proxy"`` = {violations: 1, energy_proxy: 1}, ``"uxcost-penalty"`` = uxcost + invalid
terminated             never (periodic releases have no end)
truncated              at ``horizon_s`` of simulated time
info                   ``overflow``, ``t_s`` and the core keys (``metrics`` at the last step: :meth:`DreamSim.metrics`)
=====================  ========================================================================================

Config keys of both kinds (docs §4 "Config keys"): ``workload`` (a Table 3 name, a custom ``{"name", "models"}``
dict, or a list: one drawn per episode), ``hw`` (a Table 2 preset, a custom ``{"accelerators": [[dataflow, PEs],
...]}`` dict, or a list), ``p``, ``kappa``, ``horizon_s``, ``warmup_s``, ``switch_to``, ``switch_at_s``,
``child_deadline``, ``outstanding_cap``, ``release_phase`` (``"random"``: a phase per model and episode;
``"sync"``: every model at t = 0), ``togo_mode``, ``granularity``, ``max_models``, ``max_accelerators``,
``supernet_rule``, ``record_timeline``; of ``DREAM-v0``: ``max_slots``, ``supernet``, ``work_conserving``.

Inner policies (:mod:`joulegym.baselines.dream`) act through the same steps: the core's adapter asks one for a
decision on ``sim.view()`` and returns ``action_type.encode(decision)``; a decision the integer action cannot
express (several layers at once, a chosen sub-net, a frame outside the slots, a timed wait) is carried to the next
``decode`` with the action, so an env episode and :func:`joulegym.core.inner.run_inner` give identical metrics. A
scheduler that waits on purpose (static FCFS, MapScore's ``assignment="table"``) declares ``env_config =
{"work_conserving": False}``: the work-conserving rule restricts agents, never a heuristic.

Version history (ids keep ``-v0``; ``docs/families/dream.md`` §8): first release; DREAM as published (release
phases per seed, one calibration per scenario, the core's inner policies); the work-conserving action set
(``work_conserving``, default ``True``: an agent can no longer score UXCost 0 by running nothing, Alg. 2's
product with no energy spent; the simulator and every reference policy's episode unchanged).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from joulegym.core.actions import ActionType, validated_discrete_action
from joulegym.core.config import check_bool, check_choice, check_int, check_number, check_positive
from joulegym.core.env import JoulegymEnv
from joulegym.core.rewards import RewardPart, RewardSpec
from joulegym.core.slots import SlotRows, SlotTable
from joulegym.envs.dream.mapscore import SUPERNET_RULES, supernet_variant
from joulegym.envs.dream.observation import (
    OBS_BOUND,
    DispatchObservation,
    obs_size,
    observation_names,
    slot_features,
)
from joulegym.envs.dream.render import gantt_figure, render_text
from joulegym.envs.dream.simulator import CHILD_DEADLINES, RELEASE_PHASES, DreamSim
from joulegym.envs.dream.tables import TOGO_MODES, WAIT, Dispatch, Drop, parse_granularity, uxcost
from joulegym.workloads.dream_models import SUPERNETS

WORKLOADS = ("vr-gaming", "ar-call", "drone-outdoor", "drone-indoor", "ar-social")  # Table 3 order
M_DEFAULT, A_DEFAULT = 10, 3  # model positions and accelerators when nothing configured needs more
MAX_MODELS, MAX_ACCELERATORS = 64, 16
SUPERNET_CHOICES = ("dream_rule", "original", "agent")
V_MAX = max(len(net.variants) for net in SUPERNETS.values())  # Supernet sub-nets an agent may pick (OFA: 4)
MAX_HORIZON_S = 3600.0  # an hour of 60 FPS frames is ~10^8 layer dispatches: far beyond any experiment
MAX_SLOTS = 4096
INVALID_PENALTY = 0.01  # the penalty of a masked-out action for agents without masks (our choice, docs §4)


def _choices(value: Any, field: str, parse: Any) -> tuple[Any, ...]:
    """A name / custom dict, or a non-empty list of them, each parsed by ``parse``."""
    items = value if isinstance(value, list | tuple) else [value]
    if not items:
        raise ValueError(f"{field} must be a name, a dict or a non-empty list of them, got {value!r}")
    return tuple(parse(item) for item in items)


def _workload(item: Any, field: str = "workload") -> Any:
    from joulegym.workloads.dream_scenarios import get_scenario, scenario_from_config

    if isinstance(item, dict):
        try:
            return scenario_from_config(item)
        except ValueError as err:  # its messages say "workload": name the key that held the dict
            if field == "workload":
                raise
            raise ValueError(f"{field}: {err}") from None
    name = item.strip().lower().replace("_", "-") if isinstance(item, str) else item
    if name not in WORKLOADS:
        raise ValueError(f"{field}={item!r} is not one of {list(WORKLOADS)} (or a custom dict, or a list)")
    return get_scenario(name)


def _hw(item: Any) -> Any:
    from joulegym.devices.accelerator import SOC_PRESETS, get_soc, soc_from_config

    if isinstance(item, dict):
        return soc_from_config(item)
    name = item.strip().lower().replace("_", "-") if isinstance(item, str) else item
    if name not in SOC_PRESETS:
        raise ValueError(f"hw={item!r} is not one of {list(SOC_PRESETS)} (or a custom dict, or a list)")
    return get_soc(name)


class DreamEnvBase(JoulegymEnv):
    """What ``DREAM-v0`` and ``DREAMParams-v0`` share: configuration, workloads, SoCs and the simulator."""

    family = "dream"
    full_info_keys: ClassVar[tuple[str, ...]] = ("uxcost_so_far", "dlv_rate_so_far", "drops", "workload", "hw")

    @classmethod
    def default_config(cls) -> dict[str, Any]:
        return {
            **super().default_config(),
            "workload": "vr-gaming", "hw": "4k-1ws2os", "p": None, "kappa": None, "horizon_s": 2.0,
            "warmup_s": 0.0, "switch_to": None, "switch_at_s": 1.0, "child_deadline": "inherit",
            "outstanding_cap": 4, "release_phase": "random", "togo_mode": "worst", "granularity": "layer",
            "max_models": None, "max_accelerators": None, "supernet_rule": "slack", "record_timeline": False,
        }

    def _configure(self) -> None:
        c = self.config
        self.workloads = _choices(c["workload"], "workload", _workload)
        self.hws = _choices(c["hw"], "hw", _hw)
        if c["p"] is not None:
            check_number("p", c["p"], 0.0, 1.0)
        if c["kappa"] is not None:
            check_number("kappa", check_positive("kappa", c["kappa"]), 1e-6, 1e6)
        self.horizon_s = check_number("horizon_s", check_positive("horizon_s", c["horizon_s"]), 0.0, MAX_HORIZON_S)
        warmup = check_number("warmup_s", c["warmup_s"], 0.0, MAX_HORIZON_S)
        if warmup >= self.horizon_s:
            raise ValueError(f"warmup_s must be below horizon_s={self.horizon_s!r}, got {c['warmup_s']!r}")
        self.switch_to = None if c["switch_to"] is None else _workload(c["switch_to"], "switch_to")
        switch_at = check_number("switch_at_s", c["switch_at_s"], 0.0, MAX_HORIZON_S)
        if self.switch_to is not None and not 0.0 < switch_at < self.horizon_s:
            raise ValueError(f"switch_at_s must lie in (0, horizon_s={self.horizon_s!r}) when switch_to is set, got "
                             f"{c['switch_at_s']!r}")
        for key, allowed in (("child_deadline", CHILD_DEADLINES), ("release_phase", RELEASE_PHASES),
                             ("togo_mode", TOGO_MODES), ("supernet_rule", SUPERNET_RULES)):
            check_choice(key, c[key], allowed)
        if c["outstanding_cap"] is not None:
            check_int("outstanding_cap", c["outstanding_cap"], 1, 1000)
        parse_granularity(c["granularity"])
        check_bool("record_timeline", c["record_timeline"])
        self._record = bool(c["record_timeline"] or self.render_mode is not None)
        self._size()
        self._sims: dict[tuple[int, int], DreamSim] = {}
        self.sim: Any = None

    def _size(self) -> None:
        """``M`` model positions and ``A`` accelerators of the spaces: configured, or what is needed (at least the
        defaults 10 and 3, so Table 3 configurations keep one layout)."""
        c = self.config
        needed_m = max(len({*w.model_names, *(self.switch_to.model_names if self.switch_to else ())})
                       for w in self.workloads)
        needed_a = max(soc.n_acc for soc in self.hws)
        self.models_needed = needed_m  # the most models an episode counts: the UXCost bounds (ux_bound)
        for key, needed, default, most in (("max_models", needed_m, M_DEFAULT, MAX_MODELS),
                                           ("max_accelerators", needed_a, A_DEFAULT, MAX_ACCELERATORS)):
            if needed > most:
                raise ValueError(f"the configured workloads / SoCs need {key} = {needed}; at most {most} is allowed")
            if c[key] is None:
                setattr(self, "M" if key == "max_models" else "A", max(default, needed))
                continue
            value = check_int(key, c[key], 1, most)
            if value < needed:
                raise ValueError(f"{key}={value} is too small: the configured workloads / SoCs need {needed}")
            setattr(self, "M" if key == "max_models" else "A", value)

    def ux_bound(self) -> float:
        """The largest value either factor of Alg. 2's ``UXCost = X * Y`` can take in any episode of this config:
        ``X`` sums one DLV rate in [0, 1] per counted model and ``Y`` one normalised energy ``E_m / E_worst,m`` in
        [0, 1] per model (a frame's energy is at most its worst case, tables.Variant.worst_energy: every layer at
        its most expensive accelerator, its input fetched and output flushed once), over at most the
        configured workloads' model count. So ``UXCost`` lies in [0, ux_bound()**2]."""
        return float(self.models_needed)

    def proxy_bound(self) -> float:
        """The most the ``violations`` or ``energy_proxy`` part can lose in one step: ``sum_m F_m / N_m`` over the
        models of the worst configured workload, ``F_m`` the most frames of ``m`` an episode can count and ``N_m`` the
        part's per-model scale (``frames_per_horizon``). A model's per-step loss is at most its counted frames over
        ``N_m`` (each violated frame once; a frame's energy at most its worst case, which is the model's own on one
        SoC, tables.Variant.worst_energy). Periodic (root) releases in a phase of length ``d`` number at most
        ``d fps + 1``; a cascade child releases at most once per completed frame, so at most once per root frame."""
        c = self.config
        switch = None if self.switch_to is None else (float(c["switch_at_s"]), self.switch_to)
        worst = 0.0
        for workload in self.workloads:
            phases = [(0.0, self.horizon_s if switch is None else switch[0], workload)]
            if switch is not None:
                phases.append((switch[0], self.horizon_s, switch[1]))
            frames: dict[str, float] = {}
            first_fps: dict[str, float] = {}
            roots = sum((t1 - t0) * m.fps + 1.0 for t0, t1, wl in phases for m in wl.models if m.parent is None)
            for t0, t1, wl in phases:
                for m in wl.models:
                    first_fps.setdefault(m.name, float(m.fps))
                    frames[m.name] = frames.get(m.name, 0.0) + ((t1 - t0) * m.fps + 1.0 if m.parent is None else 0.0)
            children = {m.name for _, _, wl in phases for m in wl.models if m.parent is not None}
            worst = max(worst, sum((frames[n] + (roots if n in children else 0.0))
                                   / max(self.horizon_s * first_fps[n], 1.0) for n in frames))
        return worst

    def make_sim(self, workload: Any = None, hw: Any = None) -> DreamSim:
        """A fresh simulator of this env's config (``workload`` / ``hw``: one of the configured ones; default the
        first). Policies use it to run candidates offline."""
        c = self.config
        switch = None if self.switch_to is None else (float(c["switch_at_s"]), self.switch_to)
        return DreamSim.from_catalog(
            scenario=workload or self.workloads[0], hw=hw or self.hws[0], kappa=c["kappa"], p=c["p"],
            horizon_s=self.horizon_s, warmup_s=float(c["warmup_s"]), switch=switch, child_deadline=c["child_deadline"],
            cap=c["outstanding_cap"], togo_mode=c["togo_mode"], release_phase=c["release_phase"],
            granularity=c["granularity"], record_timeline=self._record)

    def _begin_episode(self, options: dict[str, Any]) -> None:
        """Draw the workload and SoC (lists), then reset the simulator from the env's generator: an episode from
        ``reset(seed=s)`` is :func:`joulegym.core.inner.run_inner`'s episode with seed ``s``."""
        rng = self.np_random
        wi = int(rng.integers(len(self.workloads))) if len(self.workloads) > 1 else 0
        hi = int(rng.integers(len(self.hws))) if len(self.hws) > 1 else 0
        self.workload, self.hw = self.workloads[wi].name, self.hws[hi].name
        sim = self._sims.get((wi, hi))
        if sim is None:
            sim = self._sims[(wi, hi)] = self.make_sim(self.workloads[wi], self.hws[hi])
        self.sim = sim
        sim.reset(rng)
        self.view = sim.view()
        self._episode_statics(self.workloads[wi])

    def _episode_statics(self, scenario: Any) -> None:
        view = self.view
        self.n_models, self.n_acc = view.n_models, view.n_acc
        self.period = [1.0 / fps for fps in view.model_fps]
        self.leaf = [view.is_leaf(m) for m in range(self.n_models)]
        self.workload_onehot = [float(scenario.name == w) for w in WORKLOADS]
        self.cascade_p = float(self.config["p"]) if self.config["p"] is not None else \
            max([m.p for m in scenario.models if m.parent is not None], default=0.0)
        self.total_pes = float(sum(view.acc_pes))

    def active_models(self) -> tuple[str, ...]:
        """The models of the workload running now (after a task-level change: the new one's), §4.4."""
        names = self.sim.model_names
        return tuple(names[m] for m in self.sim.active_models())

    def _terminated(self) -> bool:
        return False

    def _diagnostic_info(self) -> dict[str, Any]:
        """UXCost, DLV rate and drops so far: :meth:`DreamSim.metrics`'s values, computed as it does (the same sums
        in the same order) without building its per-model entries every step."""
        sim = self.sim
        ux = uxcost(sim.acc_violated, sim.acc_frames, sim.acc_energy, sim.acc_worst,
                    energy_exponent=sim.energy_exponent)["uxcost"]
        frames = sum(sim.acc_frames)
        return {"uxcost_so_far": float(ux), "dlv_rate_so_far": float(sum(sim.acc_violated) / frames if frames else 0.0),
                "drops": int(sim.drops), "workload": self.workload, "hw": self.hw}

    def metrics(self) -> dict[str, Any]:
        """:meth:`DreamSim.metrics`: UXCost, DLV rate, energy rate, per model, Supernet mix."""
        return self.sim.metrics()

    def _render_figure(self):
        return gantt_figure(self.sim, title=f"{self.workload} on {self.hw}")


# ------------------------------------------------------------------------------------------------ dispatch
class DispatchAction(ActionType):
    """``dispatch``: ``Discrete(K*A*V + K + 1)`` (module docstring); decisions are the simulator's ``Dispatch``,
    ``Drop`` and ``WAIT``."""

    name = "dispatch"

    def __init__(self, env: DreamEnv) -> None:
        super().__init__(env)
        self.K, self.A, self.V = env.K, env.A, env.n_variants
        self.n_dispatch = self.K * self.A * self.V
        self.n = self.n_dispatch + self.K + 1
        self.wait_action = self.n - 1
        self.space = gym.spaces.Discrete(self.n)
        self._carried: tuple[int, Any] | None = None  # (action, decision) from encode(), used by the next decode

    @property
    def has_mask(self) -> bool:
        return True

    def reset(self) -> None:
        super().reset()
        self._carried = None

    def mask(self) -> np.ndarray:
        return self.env.current_mask().copy()

    def decode(self, action: Any) -> Any:
        env = self.env
        a = action if type(action) is int and 0 <= action < self.n else validated_discrete_action(action, self.space)
        carried, self._carried = self._carried, None
        if carried is not None and carried[0] == a:
            self.repaired = False
            return carried[1]
        mask = env.current_mask()
        self.repaired = not mask[a]
        if self.repaired:  # a wait, or, where the work-conserving rule masks wait out, the first valid dispatch
            a = self.wait_action if mask[self.wait_action] else int(np.argmax(mask))
        if a == self.wait_action:
            return WAIT
        if a < self.n_dispatch:
            pair, variant = divmod(a, self.V)
            k, acc = divmod(pair, self.A)
            return env.dispatch_decision(env.slots.items[k], acc, variant)
        return Drop(env.slots.items[a - self.n_dispatch])

    def encode(self, decision: Any) -> int:
        """The action of ``decision``; one the integer cannot express (several layers, a chosen variant, a frame
        outside the slots, a timed wait) is carried to the next :meth:`decode` of that action."""
        env = self.env
        self._carried = None
        if type(decision) is Dispatch:
            k = env.slots.slot_of.get(decision.task, -1)
            variant = decision.variant if 0 <= decision.variant < self.V else 0
            action = (k * self.A + decision.acc) * self.V + variant if k >= 0 else self.wait_action
            if k < 0 or decision.n_layers != 1 or (decision.variant != -1 and self.V == 1) or \
                    decision != env.dispatch_decision(decision.task, decision.acc, variant):
                self._carried = (action, decision)
            return action
        if type(decision) is Drop:
            k = env.slots.slot_of.get(decision.task, -1)
            action = self.n_dispatch + k if k >= 0 else self.wait_action
            if k < 0:
                self._carried = (action, decision)
            return action
        if getattr(decision, "wakeup_s", None) is not None:  # a timed wait (static FCFS's reserved slots)
            self._carried = (self.wait_action, decision)
        return self.wait_action


class DreamEnv(SlotRows, DreamEnvBase):
    """``DREAM-v0``: the dispatch MDP (module docstring)."""

    action_types: ClassVar[dict[str, type[ActionType]]] = {"dispatch": DispatchAction}
    inner_fast_path = True  # the trajectory and reward never read the observation (tests/dream/test_fast_path.py)
    observation_free_steps = True  # the mask and info never read what _observe writes (tests/dream/test_fast_path.py)
    lean_info_keys: ClassVar[tuple[str, ...]] = ("t_s", "overflow")
    full_info_keys: ClassVar[tuple[str, ...]] = (*DreamEnvBase.full_info_keys, "overflow_steps")
    reward_parts = (  # the finite bounds are per config (_reward_spec, ux_bound: b = the workloads' model count)
        RewardPart("dlv", -math.inf, math.inf,
                   "-(X_t - X_{t-1}) Y_{t-1}: the DLV share of -dUXCost; within +-b^2 (b: the workloads' model count)"),
        RewardPart("energy", -math.inf, math.inf, "-X_t (Y_t - Y_{t-1}): the energy share of -dUXCost; within +-b^2"),
        RewardPart("uxcost_terminal", -math.inf, 0.0, "-UXCost of the episode, on the last step; in [-b^2, 0]"),
        RewardPart("violations", -math.inf, 0.0, "-1/N_m per frame of model m violated or dropped; at least "
                   "-sum_m F_m / N_m (F_m: the most frames of m an episode counts; proxy_bound)"),
        RewardPart("energy_proxy", -math.inf, 0.0, "-dE_m / (N_m E_worst,m): energy per worst-case frame; at "
                   "least -sum_m F_m / N_m (proxy_bound)"),
        RewardPart("invalid", -INVALID_PENALTY, 0.0, "-0.01 per masked-out (repaired) action"),
    )
    reward_presets: ClassVar[dict[str, dict[str, float]]] = {
        "uxcost": {"dlv": 1.0, "energy": 1.0},
        "terminal": {"uxcost_terminal": 1.0},
        "proxy": {"violations": 1.0, "energy_proxy": 1.0},
        "uxcost-penalty": {"dlv": 1.0, "energy": 1.0, "invalid": 1.0},
    }

    def _reward_spec(self) -> RewardSpec:
        # X and Y lie in [0, b] (ux_bound), so each product-rule share and the episode's UXCost lie within b**2
        b = self.ux_bound()
        proxy = (-self.proxy_bound(), 0.0)
        bounds = {"dlv": (-b * b, b * b), "energy": (-b * b, b * b), "uxcost_terminal": (-b * b, 0.0),
                  "violations": proxy, "energy_proxy": proxy}
        return RewardSpec(tuple(RewardPart(p.name, *bounds.get(p.name, (p.low, p.high)), p.description)
                                for p in self.reward_parts), self.reward_presets)

    @classmethod
    def default_config(cls) -> dict[str, Any]:
        return {**super().default_config(), "max_slots": 16, "supernet": "dream_rule", "work_conserving": True}

    def _configure(self) -> None:
        super()._configure()
        c = self.config
        self.K = check_int("max_slots", c["max_slots"], 1, MAX_SLOTS)
        check_choice("supernet", c["supernet"], SUPERNET_CHOICES)
        self.work_conserving = check_bool("work_conserving", c["work_conserving"])
        self.n_variants = V_MAX if c["supernet"] == "agent" else 1
        self.slot_features = slot_features(self.M, self.A)
        self.observation_space = gym.spaces.Box(-OBS_BOUND, OBS_BOUND, (obs_size(self.K, self.M, self.A),),
                                                dtype=np.float32)
        self.slots = SlotTable(self.K)

    def _bind_slot_rows(self) -> None:  # SlotRows: the slot rows live in the observation builder
        self._slot_obs = self._obs.slots

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if "_obs" in state:
            self._bind_slot_rows()

    # --- episode ------------------------------------------------------------------------------------------
    def _begin_episode(self, options: dict[str, Any]) -> None:
        super()._begin_episode(options)
        self.slots.reset()
        if getattr(self, "_obs", None) is None:
            self._obs = DispatchObservation(self.K, self.M, self.A, self.n_variants)
        self._obs.clear(self.n_acc)
        self._obs_buf = self._obs.buf
        self._bind_slot_rows()
        self._static_rows()
        self.decision_index = 0
        self._mask_at = -1
        self._membership = (-1, -1)
        self._models_at: tuple = ()
        self._overflow_at = -1  # the overflow count the global feature was written from
        self._forget_model_rows()
        self._dlv_at: tuple = ()  # the counters the reward's X and Y were last summed at (_dlv_sums, _energy_sums)
        self._energy_at: tuple = ()
        self._resident = [-1] * self.n_acc
        self._phase = self.sim.phase
        self._allowed = np.zeros(self.M, dtype=bool)
        self._allowed_list: list[bool] = []
        self._ux = (0.0, 0.0)  # (X, Y) of the last step
        M = self.n_models
        self._last_viol, self._last_energy = [0] * M, [0.0] * M
        self.frames_per_horizon = [max(self.horizon_s / per, 1.0) for per in self.period]
        self.worst_per_frame = [max(w, 1e-12) for w in self.sim.model_worst_energy]
        self._more = self.sim.advance()
        self._sync()

    def _static_rows(self) -> None:
        """Accelerator and model rows that hold for the episode."""
        obs, view = self._obs, self.view
        flows = view.soc.dataflows if view.soc is not None else ("",) * self.n_acc
        for a in range(self.n_acc):
            obs.accs[a, 0], obs.accs[a, 3] = 1.0, view.acc_pes[a] / 4096.0
            obs.accs[a, 4], obs.accs[a, 5] = flows[a] == "WS", flows[a] == "OS"
        obs.models[: self.n_models, 0] = 1.0
        obs.glob[3: 3 + len(WORKLOADS)] = self.workload_onehot
        obs.glob[1] = self.cascade_p
        obs.glob[-3:] = (self.n_acc / self.A, self.total_pes / 8192.0, 0.0)

    def rebuild_observation(self) -> None:
        """Rebuild the observation's per-slot state from the simulator (what the incremental updates maintain;
        tests compare the two)."""
        obs, view = self._obs, self.view
        obs.clear(self.n_acc)
        self._static_rows()
        if self.sim.phase:
            obs.glob[-1] = 1.0
        for k, task in enumerate(self.slots.items):
            if task >= 0:
                obs.seat(k, view, task, self.leaf, self.period, self._allowed)
        self._resident = list(view.acc_resident)
        self._mask_at = -1
        self._models_at = ()
        self._overflow_at = -1
        self._forget_model_rows()

    def dispatch_decision(self, task: int, acc: int, variant: int = 0) -> Any:
        """The simulator decision of an agent's "dispatch the next unit of ``task`` on ``acc``": at a Supernet's
        switch point the sub-net of ``supernet`` (``"dream_rule"``: §4.5.1's rule; ``"agent"``: ``variant``)."""
        view = self.view
        if view.f_locked[task]:  # no sub-net left to pick (past the switch point, or not a Supernet)
            return Dispatch(task, acc)
        if self.n_variants > 1:
            return Dispatch(task, acc, 1, variant) if view.at_switch_point(task) else Dispatch(task, acc)
        if self.config["supernet"] == "dream_rule" and view.at_switch_point(task):
            return Dispatch(task, acc, 1, supernet_variant(view, task, self.config["supernet_rule"]))
        return Dispatch(task, acc)

    def _sync(self, moved: Sequence[int] = ()) -> None:
        """After the simulator reached a decision point: seat new frames (release order), free finished ones, and
        rewrite the rows of the frames that ``moved`` (dispatched, or their span ended). Off the observation
        (``observing`` False: the simulator path), only the slot table and the counters."""
        if not self.observing:
            self._sync_slots()
            return
        sim, view, obs, slots = self.sim, self.view, self._obs, self.slots
        membership = (len(sim.f_state), sim.completed + sim.drops + sim.cap_discards + sim.cancelled)
        allowed, leaf, recent = self._allowed, self.leaf, sim.recent_drops
        if sim.phase != self._phase:  # a task-level change: the dependency graph is the new workload's
            self._phase = sim.phase
            self.leaf = leaf = [view.is_leaf(m) for m in range(self.n_models)]
            for k, task in enumerate(slots.items):
                if task >= 0:
                    obs.slots[k, obs.c_leaf] = leaf[view.f_model[task]]
            obs.glob[-1] = 1.0
            self._membership = (-1, -1)  # the drop budgets follow the new leaves below
        if membership != self._membership:  # a release or an end: the frames in the slots and the drop budgets
            self._membership = membership
            now_allowed = [leaf[m] and recent[m] < 2 for m in range(self.n_models)]
            if now_allowed != self._allowed_list:  # smart-drop conditions 3 and 4 per model
                self._allowed_list = now_allowed
                allowed[: self.n_models] = now_allowed
                obs.drops_allowed(allowed)
            slots.sync(view.outstanding)
            for k, _ in slots.freed:
                obs.free(k)
            for k, task in slots.seated:
                obs.seat(k, view, task, leaf, self.period, allowed)
        slot_of = slots.slot_of
        for task in moved:
            k = slot_of.get(task, -1)
            if k >= 0:
                obs.move(k, view, task, self.period)
        if view.acc_resident != self._resident:
            obs.resident(view, slot_of, self._resident)
            self._resident = list(view.acc_resident)
        slots.count_step()
        self.decision_index += 1

    def _sync_slots(self) -> None:
        """:meth:`_sync` without the observation: the frames in the slots (``overflow``), the membership the reward
        parts are versioned by, the step counters. The observation is rebuilt at the next reset."""
        sim, slots = self.sim, self.slots
        if sim.phase != self._phase:
            self._phase = sim.phase
            self.leaf = [self.view.is_leaf(m) for m in range(self.n_models)]
        membership = (len(sim.f_state), sim.completed + sim.drops + sim.cap_discards + sim.cancelled)
        if membership != self._membership:
            self._membership = membership
            slots.sync(self.view.outstanding)
        slots.count_step()
        self.decision_index += 1

    def current_mask(self) -> np.ndarray:
        """The valid actions now (module docstring), built once per decision point. ``work_conserving``: a drop
        only of a doomed frame (smart drop's condition 1, §4.2.1: :meth:`DreamView.doomed`), and wait only when
        no dispatch is valid (the paper's schedulers dispatch whenever an accelerator is idle and a frame ready)."""
        if self._mask_at != self.decision_index:
            obs = self._obs
            mask = obs.build_mask(self.view.acc_running, drops=not self.work_conserving)
            if self.work_conserving:
                drops, items, doomed = obs.mask_drop, self.slots.items, self.view.doomed
                for k in obs.maybe_doomed(self.sim.now):
                    drops[k] = doomed(items[k])
                mask[-1] = not obs.can_dispatch
            self._mask_at = self.decision_index
        return self._obs.mask

    def _transition(self, decision: Any) -> tuple[float, ...]:
        sim = self.sim
        sim.apply(decision)
        if self.observing:
            running = [*sim.acc_running]  # the dispatched frame included
            self._more = sim.advance()
            moved = [task for task, now in zip(running, sim.acc_running) if task >= 0 and task != now]
            if type(decision) is Dispatch and decision.task not in moved:  # its span may have ended already
                moved.append(decision.task)
            self._sync(moved)
        else:
            self._more = sim.advance()
            self._sync_slots()
        x0, y0 = self._ux
        x, violations = self._dlv_sums(sim, x0)
        y, energy_proxy = self._energy_sums(sim, y0)
        self._ux = (x, y)
        terminal = -x * y if not self._more else 0.0
        invalid = -INVALID_PENALTY if self.action_type.repaired else 0.0
        # min(v, 0.0) without the call: v unless 0.0 < v (so -0.0 and 0.0 stay as they are)
        return (-(x - x0) * y0, -x * (y - y0), terminal, 0.0 if 0.0 < violations else violations,
                0.0 if 0.0 < energy_proxy else energy_proxy, invalid)

    def _dlv_sums(self, sim: Any, x0: float) -> tuple[float, float]:
        """Alg. 2's X over the frames counted so far (the uxcost() sum, model order) and the ``violations`` part.
        Both move only with a release, an end or a miss (the per-model miss counts never decrease): else ``(x0,
        0.0)``."""
        violated = sim.acc_violated
        version = (self._membership, sum(violated))
        if version == self._dlv_at:
            return x0, 0.0
        self._dlv_at = version
        x = violations = 0.0
        last_viol, per_horizon = self._last_viol, self.frames_per_horizon
        for m, (frames, viol) in enumerate(zip(sim.acc_frames, violated)):
            if frames > 0:
                x += viol / frames if viol > 0 else 1.0 / (2.0 * frames)
            if viol != last_viol[m]:
                violations -= (viol - last_viol[m]) / per_horizon[m]
                last_viol[m] = viol
        return x, violations

    def _energy_sums(self, sim: Any, y0: float) -> tuple[float, float]:
        """Alg. 2's Y over the frames counted so far (the uxcost() sum, model order) and the ``energy_proxy`` part.
        Both move only with a dispatch, a release or an end: else ``(y0, 0.0)``."""
        version = (sim.dispatches, self._membership)
        if version == self._energy_at:
            return y0, 0.0
        self._energy_at = version
        y = energy_proxy = 0.0
        last_energy, per_horizon, worst_frame = self._last_energy, self.frames_per_horizon, self.worst_per_frame
        for m, (frames, spent, worst) in enumerate(zip(sim.acc_frames, sim.acc_energy, sim.acc_worst)):
            if frames > 0:
                y += spent / worst if worst > 0 else 0.0
            if spent != last_energy[m]:
                energy_proxy -= (spent - last_energy[m]) / (per_horizon[m] * worst_frame[m])
                last_energy[m] = spent
                self._energy_moved.add(m)
        return y, energy_proxy

    def _observe(self) -> np.ndarray:
        sim, obs = self.sim, self._obs
        now = sim.now
        obs.dynamic(now)
        obs.accelerators(sim.acc_running, sim.acc_busy_until, now)
        version = (self._membership, sum(sim.acc_violated))
        if version != self._models_at:  # a release, an end or a miss: any counter of any model may have moved
            self._models_at = version
            self._model_rows()
            self._energy_moved.clear()
        elif self._energy_moved:  # else only dispatches happened: the energy of the models they charged moved
            self._energy_rows()
        glob = obs.glob
        glob[0] = now / self.horizon_s
        overflow = self.slots.overflow
        if overflow != self._overflow_at:
            self._overflow_at = overflow
            glob[2] = min(math.log1p(overflow), OBS_BOUND)
        return obs.buf.copy()

    def _forget_model_rows(self) -> None:
        """Have the next :meth:`_model_rows` rewrite every model row."""
        self._model_counts: list[tuple] = [()] * self.M  # per model: the counters its row was written from
        self._energy_moved: set[int] = set()  # models whose energy moved since their row was written

    def _energy_rows(self) -> None:
        """Rewrite the energy feature of the models in :attr:`_energy_moved` (as :meth:`_model_rows` writes it)."""
        models, spent, worst = self._obs.models, self.sim.acc_energy, self.sim.acc_worst
        for m in self._energy_moved:
            top = worst[m]
            models[m, 4] = spent[m] / top if top else 0.0  # NormEnergy <= 1 (docs §3 #3)
        self._energy_moved.clear()

    def _model_rows(self) -> None:
        """Rewrite the model rows whose counters changed since they were written (a dispatch moves one model's)."""
        sim, models, seen = self.sim, self._obs.models, self._model_counts
        for m, counts in enumerate(zip(sim.acc_frames, sim.acc_violated, sim.acc_energy, sim.acc_worst,
                                       sim.recent_drops, sim.out_counts)):
            if counts == seen[m]:
                continue
            seen[m] = counts
            frames, viol, spent, worst, drops, out = counts
            models[m, 1:] = (viol / frames if frames else 0.0, drops / 2.0, min(out / 4.0, OBS_BOUND),
                             spent / worst if worst else 0.0)  # NormEnergy <= 1 (docs §3 #3)

    def _truncated(self) -> bool:
        return not self._more

    def _observation_names(self) -> list[str]:
        """The module docstring's observation: per slot, accelerator and model position, then global."""
        return observation_names(self.K, self.M, self.A, WORKLOADS)

    def _extra_info(self) -> dict[str, Any]:
        return {"overflow": int(self.slots.overflow), "t_s": float(self.sim.now)}

    def _info(self, final: bool, mask: bool = True) -> dict[str, Any]:
        """The template's info (:meth:`JoulegymEnv._info`): on a lean, mid-episode step with a mask (every step of an
        agent's episode) built directly, the same keys in the same order (``tests/dream/test_env.py`` compares the
        two); otherwise the template's."""
        if final or not mask or self._full_info or self._every_step_metrics:
            return super()._info(final, mask)
        return {"overflow": int(self.slots.overflow), "t_s": float(self.sim.now),
                "reward_parts": dict(zip(self.reward_spec.names, self.last_reward_parts)),
                "repaired": bool(self.action_type.repaired), "action_mask": self.current_mask().view(np.int8).copy()}

    def _diagnostic_info(self) -> dict[str, Any]:
        return {**super()._diagnostic_info(), "overflow_steps": self.slots.overflow_steps}

    def _render_ansi(self) -> str:
        return render_text(self, slots=self.slots)
