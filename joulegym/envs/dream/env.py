"""``joulegym/DREAM-v0`` and ``joulegym/DREAMParams-v0``: real-time multi-model ML inference on a multi-accelerator
SoC (Kim et al., DREAM, ASPLOS '23; ``docs/families/dream.md`` §4).

One env class (:class:`DreamEnv`) on :class:`joulegym.core.env.JoulegymEnv` over the event-driven simulator
:class:`joulegym.envs.dream.simulator.DreamSim`; the ``action_mode`` picks the kind.

``DREAM-v0`` (``action_mode="dispatch"``): one step is one scheduling decision at a decision point of the
simulator (an accelerator is idle and a frame is ready, after a release or a layer completion; several decisions
may share a timestamp). Outstanding frames sit in ``K`` slots (:class:`joulegym.core.slots.SlotTable`: a frame
takes the lowest free slot at its release and keeps it until it completes or is dropped; frames that find no slot
wait, in release order, counted in ``info["overflow"]``).

=====================  ========================================================================================
action                 ``Discrete(K*A + K + 1)`` (A = 3 accelerators at most): ``k*A + a`` dispatches the next
                       layer of slot k on accelerator a (paper §4.5), ``K*A + k`` drops slot k's frame
                       (§4.2.1), ``K*A + K`` waits for the next event; ``action_masks()``: dispatch needs a
                       ready frame and an idle accelerator, a drop a frame of a leaf model that dropped fewer than
                       2 of its last 10 frames; wait is always valid. A masked-out action waits instead
                       (``info["repaired"]``, reward part ``invalid``). At a Supernet's switch point the
                       variant follows ``supernet`` (``"dream_rule"``: §4.5.1's rule; ``"original"``); with
                       ``supernet="agent"`` the agent picks it: ``Discrete(K*A*V + K + 1)`` (V = 4, OFA's
                       sub-nets), ``(k*A + a)*V + v`` dispatches with variant v (0 = the original), valid for
                       v > 0 only at the frame's switch point (the mask); drop and wait follow at ``K*A*V``
observation            ``Box(-10, 10, (30 K + 3*6 + 10*5 + 11,), float32)`` (559 for K = 16): per slot: valid, model
                       one-hot (M = 10 model positions of the workload), leaf, drop allowed, slack, ToGo and
                       best-case ToGo (per period), urgency ToGo/slack, time since the last layer (per period),
                       fraction done, next layer's latency per accelerator (per period) and energy (per its
                       maximum), resident flags, started, running; per accelerator: present, idle, busy time
                       left (ms), PEs/4096, WS, OS; per model: present, DLV rate so far, drops in its last 10
                       frames / 2, outstanding frames / 4, energy / worst case so far; global: t / horizon,
                       cascade p, log(1 + overflow), workload one-hot, accelerators / 3, PEs / 8192, after-switch
reward parts           ``dlv`` and ``energy``: the Alg. 2 product ``UX = X * Y`` (X = sum of per-model DLV
                       rates, Y = sum of per-model normalised energies, over the frames counted so far, with
                       the 1/(2N) floor on every model that has one)
                       split by the product rule, ``dlv = -(X_t - X_{t-1}) Y_{t-1}``,
                       ``energy = -X_t (Y_t - Y_{t-1})``: their sum telescopes to ``-UXCost`` of the episode
                       exactly; ``uxcost_terminal`` (``-UXCost`` on the last step); ``violations`` and
                       ``energy_proxy`` (per-frame proxies: ``-1/N_m`` per violated frame of model m,
                       ``-dE / (N_m E_worst,m)`` with N_m the frames of m per horizon); ``invalid`` (-0.01 per
                       repaired action)
reward presets         ``"uxcost"`` (default) = {dlv: 1, energy: 1}, ``"terminal"`` = {uxcost_terminal: 1},
                       ``"proxy"`` = {violations: 1, energy_proxy: 1}, ``"uxcost-penalty"`` = uxcost + invalid
terminated             never (periodic releases have no end)
truncated              at ``horizon_s`` of simulated time
info                   ``overflow``, ``t_s`` and the core keys (``metrics`` at the last step:
                       :meth:`DreamSim.metrics`: ``uxcost``, ``dlv_rate``, ``energy_rate``, per model ...)
=====================  ========================================================================================

``DREAMParams-v0`` (``action_mode="params"``): one step is one window of ``window_s`` (0.25 s) in which the DREAM
scheduler ``dream_variant`` (``"full"``, ``"smartdrop"``, ``"mapscore"``) runs with the MapScore weights the
action sets: ``Box([0, 0], [2, 2])`` = (alpha, beta) (§3.5, §5.2's range). Observation ``Box(-10, 10, (56,))``
(10 x 4 + 3 + 13): per model: present, DLV rate, normalised energy and drops of the last window; per
accelerator: its busy share of the window; global: alpha/2, beta/2, workload one-hot, t / horizon, time since
the last workload change / horizon, outstanding frames, the window's DLV rate, energy rate and log UXCost.
Reward part ``uxcost_window`` = ``-UXCost`` over the frames whose deadline fell in the window (Alg. 2; preset
``"uxcost"``) and ``log_uxcost_window`` = ``-log UXCost`` (preset ``"log"``). Truncated after
``horizon_s / window_s`` windows. DREAM's adaptivity engine (§4.4) is the reference policy
(``joulegym.baselines.dream``).

Config keys (both kinds unless noted):

========================  ======================================================================================
``workload``              Table 3 workload: ``"vr-gaming"``, ``"ar-call"``, ``"drone-outdoor"``,
                          ``"drone-indoor"``, ``"ar-social"``; a list: one drawn per episode (``random-mix``)
``hw``                    Table 2 SoC preset (``"4k-1ws2os"`` ...); a list: one drawn per episode
``p``                     cascade probability of every cascade (``None``: Table 3's 0.5; Fig. 12 sweeps it)
``kappa``                 one latency scale for every model (``None``: the per-model calibration, cost-model §4.4)
``horizon_s``             episode length in simulated seconds (T_exec = 2 s, §3.6)
``warmup_s``              frames with a deadline before it are not counted
``switch_to``,            task-level change (Fig. 10(d)): at ``switch_at_s`` the workload becomes ``switch_to``
``switch_at_s``           (frames of models not in it are cancelled)
``child_deadline``        ``"inherit"`` (a cascaded frame keeps its parent's deadline) or ``"own_period"``
``outstanding_cap``       outstanding frames per model before the oldest is discarded as violated (``None``: off)
``release_phase``         ``"sync"`` (every model releases at t = 0) or ``"random"``
``togo_mode``             ToGo of dynamic models: ``"worst"`` (remaining nominal path) or ``"expected"``
``max_slots``             K (dispatch)
``supernet``              the Supernet variant at the switch point of an agent's dispatch: ``"dream_rule"``,
                          ``"original"`` or ``"agent"`` (the action picks it, above; dispatch)
``window_s``              the window of one step (params)
``dream_variant``         the DREAM scheduler run inside the windows (params)
``record_timeline``       keep the per-layer Gantt log (on by itself with a ``render_mode``)
========================  ======================================================================================

Reference policies act through the same steps: a privileged policy reads ``env.unwrapped.sim.view()``, decides
with its scheduler and returns ``env.unwrapped.action_type.encode(decision)``; a decision the integer action
cannot express (several layers at once for FCFS/Veltair, a chosen Supernet variant, a frame outside the slots,
a timed wait) is carried to the next ``decode`` with the action, so an env episode and a direct simulator run
of the same scheduler give identical metrics (``tests/dream/test_policies_env.py``).

Version history: v0 (first release).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from joulegym.core.actions import ActionType, validated_box_list, validated_discrete_action
from joulegym.core.config import check_bool, check_choice, check_int, check_number, check_positive
from joulegym.core.env import JoulegymEnv, row_names
from joulegym.core.plotting import new_figure
from joulegym.core.rewards import RewardPart, RewardSpec
from joulegym.core.slots import SlotRows, SlotTable
from joulegym.workloads.dream_models import SUPERNETS

A_MAX = 3  # sub-accelerators per SoC at most (Table 2)
M_MAX = 10  # model positions: one workload has <= 6 models, the union of two (a switch) <= 9
WORKLOADS = ("vr-gaming", "ar-call", "drone-outdoor", "drone-indoor", "ar-social")  # Table 3 order
HW_PRESETS = ("4k-2ws", "4k-2os", "4k-1ws2os", "4k-1os2ws", "8k-2ws", "8k-2os", "8k-1ws2os", "8k-1os2ws")
SUPERNET_RULES = ("dream_rule", "original", "agent")
V_MAX = max(len(net.variants) for net in SUPERNETS.values())  # Supernet variants an agent may pick (OFA: 4)
DREAM_VARIANTS = ("full", "smartdrop", "mapscore")
CHILD_DEADLINES = ("inherit", "own_period")
RELEASE_PHASES = ("sync", "random")
TOGO_MODES = ("worst", "expected")
MAX_HORIZON_S = 3600.0  # an hour of 60 FPS frames is ~10^8 layer dispatches: far beyond any experiment
MAX_SLOTS = 4096
PARAM_HIGH = 2.0  # alpha, beta in [0, 2] (§5.2)
INVALID_PENALTY = 0.01  # the penalty of a masked-out action for agents without masks (our choice, docs §4)
OBS_BOUND = 10.0
LOG_UX_FLOOR = 1e-6  # log UXCost of a window without frames or energy (a floor; UXCost is >= 0)

SLOT_BASE = ("valid",)
SLOT_TAIL = ("leaf", "drop_allowed", "slack", "to_go", "min_to_go", "urgency", "queued", "done_fraction",
             *(f"next_lat_{a}" for a in range(A_MAX)), *(f"next_energy_{a}" for a in range(A_MAX)),
             *(f"resident_{a}" for a in range(A_MAX)), "started", "running")
SLOT_NAMES = (*SLOT_BASE, *(f"model_{m}" for m in range(M_MAX)), *SLOT_TAIL)
ACC_NAMES = ("present", "idle", "busy_ms", "pes", "ws", "os")
MODEL_NAMES = ("present", "dlv_rate", "drops", "outstanding", "energy")
GLOBAL_NAMES = ("time", "cascade_p", "log1p_overflow", *(f"workload_{w}" for w in WORKLOADS), "accelerators",
                "total_pes", "switched")
PARAM_MODEL_NAMES = ("present", "dlv_rate", "energy", "drop_rate")
PARAM_GLOBAL_NAMES = ("alpha", "beta", *(f"workload_{w}" for w in WORKLOADS), "time", "since_change",
                      "outstanding", "dlv_rate", "energy_rate", "log10_uxcost")
SLOT_FEATURES = len(SLOT_NAMES)
ACC_FEATURES = len(ACC_NAMES)
MODEL_FEATURES = len(MODEL_NAMES)
GLOBAL_FEATURES = len(GLOBAL_NAMES)
PARAM_MODEL_FEATURES = len(PARAM_MODEL_NAMES)
PARAM_GLOBAL_FEATURES = len(PARAM_GLOBAL_NAMES)
_T = {name: i for i, name in enumerate(SLOT_TAIL, start=len(SLOT_BASE) + M_MAX)}  # tail feature -> column
_DYNAMIC = np.array([_T[n] for n in ("drop_allowed", "slack", "to_go", "min_to_go", "urgency", "queued")])


def _names(value: Any, field: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """A name or a non-empty list of names from ``allowed`` (lower case, ``_`` read as ``-``)."""
    items = value if isinstance(value, list | tuple) else [value]
    if not items:
        raise ValueError(f"{field} must be one of {list(allowed)} or a non-empty list of them, got {value!r}")
    out = []
    for item in items:
        if not isinstance(item, str) or item.strip().lower().replace("_", "-") not in allowed:
            raise ValueError(f"{field}={item!r} is not one of {list(allowed)} (or a non-empty list of them)")
        out.append(item.strip().lower().replace("_", "-"))
    return tuple(out)


# ------------------------------------------------------------------------------------------------ action types
class DispatchAction(ActionType):
    """``dispatch``: ``Discrete(K*A*V + K + 1)`` (module docstring; V = 1 unless ``supernet="agent"``); decisions
    are the simulator's ``Dispatch``, ``Drop`` and ``WAIT``."""

    name = "dispatch"

    def __init__(self, env: DreamEnv) -> None:
        super().__init__(env)
        self.K = env.K
        self.V = env.n_variants
        self.n_dispatch = self.K * A_MAX * self.V
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
        from joulegym.envs.dream.simulator import WAIT

        env = self.env
        a = validated_discrete_action(action, self.space)
        carried, self._carried = self._carried, None
        if carried is not None and carried[0] == a:
            self.repaired = False
            return carried[1]
        valid = env.current_mask()[a]
        self.repaired = not valid
        if not valid or a == self.wait_action:
            return WAIT
        if a < self.n_dispatch:
            pair, variant = divmod(a, self.V)
            k, acc = divmod(pair, A_MAX)
            return env.dispatch_decision(env.slots.items[k], acc, variant)
        from joulegym.envs.dream.simulator import Drop

        return Drop(env.slots.items[a - self.n_dispatch])

    def encode(self, decision: Any) -> int:
        """The action of ``decision``; one the integer cannot express (several layers, a chosen variant, a frame
        outside the slots, a timed wait) is carried to the next :meth:`decode` of that action."""
        from joulegym.envs.dream.simulator import Dispatch, Drop

        env = self.env
        self._carried = None
        if isinstance(decision, Dispatch):
            k = env.slots.slot_of.get(decision.task, -1)
            variant = decision.variant if 0 <= decision.variant < self.V else 0
            action = (k * A_MAX + decision.acc) * self.V + variant if k >= 0 else self.wait_action
            if k < 0 or decision.n_layers != 1 or (decision.variant != -1 and self.V == 1) or \
                    decision != env.dispatch_decision(decision.task, decision.acc, variant):
                self._carried = (action, decision)
            return action
        if isinstance(decision, Drop):
            k = env.slots.slot_of.get(decision.task, -1)
            action = self.n_dispatch + k if k >= 0 else self.wait_action
            if k < 0:
                self._carried = (action, decision)
            return action
        if getattr(decision, "wakeup_s", None) is not None:  # a timed wait (static FCFS's reserved slots)
            self._carried = (self.wait_action, decision)
        return self.wait_action


class ParamsAction(ActionType):
    """``params``: ``Box([0, 0], [2, 2])`` = MapScore's (alpha, beta) for the next window (§3.5, §5.2)."""

    name = "params"

    def __init__(self, env: DreamEnv) -> None:
        super().__init__(env)
        self.space = gym.spaces.Box(0.0, PARAM_HIGH, (2,), dtype=np.float32)

    def decode(self, action: Any) -> tuple[float, float]:
        self.repaired = False
        alpha, beta = validated_box_list(action, self.space)
        return alpha, beta

    def encode(self, decision: Any) -> np.ndarray:
        alpha, beta = decision
        return np.array([alpha, beta], dtype=np.float32)


ACTION_TYPES: dict[str, type[ActionType]] = {"dispatch": DispatchAction, "params": ParamsAction}


# --------------------------------------------------------------------------------------------------------- env
class DreamEnv(SlotRows, JoulegymEnv):
    """DREAM's scheduling problem (module docstring): ``DREAM-v0`` (dispatch) and ``DREAMParams-v0`` (params)."""

    family = "dream"
    lean_info_keys: ClassVar[tuple[str, ...]] = ("t_s", "overflow", "alpha", "beta", "window_uxcost")
    full_info_keys: ClassVar[tuple[str, ...]] = ("uxcost_so_far", "dlv_rate_so_far", "drops", "workload", "hw")
    slot_features = SLOT_FEATURES
    action_types = ACTION_TYPES
    dispatch_parts = (
        RewardPart("dlv", -math.inf, math.inf, "-(X_t - X_{t-1}) Y_{t-1}: the DLV share of -dUXCost"),
        RewardPart("energy", -math.inf, math.inf, "-X_t (Y_t - Y_{t-1}): the energy share of -dUXCost"),
        RewardPart("uxcost_terminal", -math.inf, 0.0, "-UXCost of the episode, on the last step"),
        RewardPart("violations", -math.inf, 0.0, "-1/N_m per frame of model m violated or dropped"),
        RewardPart("energy_proxy", -math.inf, 0.0, "-dE_m / (N_m E_worst,m): energy per worst-case frame"),
        RewardPart("invalid", -INVALID_PENALTY, 0.0, "-0.01 per masked-out (repaired) action"),
    )
    dispatch_presets: ClassVar[dict[str, dict[str, float]]] = {
        "uxcost": {"dlv": 1.0, "energy": 1.0},
        "terminal": {"uxcost_terminal": 1.0},
        "proxy": {"violations": 1.0, "energy_proxy": 1.0},
        "uxcost-penalty": {"dlv": 1.0, "energy": 1.0, "invalid": 1.0},
    }
    params_parts = (
        RewardPart("uxcost_window", -math.inf, 0.0, "-UXCost over the frames due in the window (Alg. 2)"),
        RewardPart("log_uxcost_window", -math.inf, math.inf, "-log UXCost of the window (floor 1e-6)"),
    )
    params_presets: ClassVar[dict[str, dict[str, float]]] = {"uxcost": {"uxcost_window": 1.0},
                                                              "log": {"log_uxcost_window": 1.0}}
    reward_parts = dispatch_parts
    reward_presets = dispatch_presets

    @classmethod
    def default_config(cls) -> dict[str, Any]:
        return {
            **super().default_config(),
            "workload": "vr-gaming",
            "hw": "4k-1ws2os",
            "p": None,
            "kappa": None,
            "horizon_s": 2.0,
            "warmup_s": 0.0,
            "switch_to": None,
            "switch_at_s": 1.0,
            "child_deadline": "inherit",
            "outstanding_cap": 4,
            "release_phase": "sync",
            "togo_mode": "worst",
            "max_slots": 16,
            "supernet": "dream_rule",
            "window_s": 0.25,
            "dream_variant": "full",
            "record_timeline": False,
        }

    # --- configuration ------------------------------------------------------------------------------------
    def _configure(self) -> None:
        c = self.config
        self.workloads = _names(c["workload"], "workload", WORKLOADS)
        self.hws = _names(c["hw"], "hw", HW_PRESETS)
        if c["p"] is not None:
            check_number("p", c["p"], 0.0, 1.0)
        if c["kappa"] is not None:
            check_number("kappa", check_positive("kappa", c["kappa"]), 1e-6, 1e6)
        horizon = check_number("horizon_s", check_positive("horizon_s", c["horizon_s"]), 0.0, MAX_HORIZON_S)
        warmup = check_number("warmup_s", c["warmup_s"], 0.0, MAX_HORIZON_S)
        if warmup >= horizon:
            raise ValueError(f"warmup_s must be below horizon_s={horizon!r}, got {c['warmup_s']!r}")
        self.switch_to = None if c["switch_to"] is None else _names(c["switch_to"], "switch_to", WORKLOADS)[0]
        switch_at = check_number("switch_at_s", c["switch_at_s"], 0.0, MAX_HORIZON_S)
        if self.switch_to is not None and not 0.0 < switch_at < horizon:
            raise ValueError(f"switch_at_s must lie in (0, horizon_s={horizon!r}) when switch_to is set, got "
                             f"{c['switch_at_s']!r}")
        check_choice("child_deadline", c["child_deadline"], CHILD_DEADLINES)
        if c["outstanding_cap"] is not None:
            check_int("outstanding_cap", c["outstanding_cap"], 1, 1000)
        check_choice("release_phase", c["release_phase"], RELEASE_PHASES)
        check_choice("togo_mode", c["togo_mode"], TOGO_MODES)
        self.K = check_int("max_slots", c["max_slots"], 1, MAX_SLOTS)
        check_choice("supernet", c["supernet"], SUPERNET_RULES)
        self.n_variants = V_MAX if c["supernet"] == "agent" else 1  # dispatch actions per (slot, accelerator)
        window = check_number("window_s", check_positive("window_s", c["window_s"]), 0.0, MAX_HORIZON_S)
        check_choice("dream_variant", c["dream_variant"], DREAM_VARIANTS)
        check_bool("record_timeline", c["record_timeline"])
        self.horizon_s = horizon
        self.window_s = window
        self.n_windows = max(1, math.ceil(horizon / window - 1e-9))
        self._record = bool(c["record_timeline"] or self.render_mode is not None)
        self._sims: dict[tuple[str, str], Any] = {}
        for workload in self.workloads:  # bad combinations (too many models) fail at make, not mid-training
            self._model_count(workload)
        if self.action_mode == "dispatch":
            size = self.K * SLOT_FEATURES + A_MAX * ACC_FEATURES + M_MAX * MODEL_FEATURES + GLOBAL_FEATURES
        else:
            size = M_MAX * PARAM_MODEL_FEATURES + A_MAX + PARAM_GLOBAL_FEATURES
        self.observation_space = gym.spaces.Box(-OBS_BOUND, OBS_BOUND, (size,), dtype=np.float32)
        self.slots = SlotTable(self.K)
        self.sim: Any = None

    def _model_count(self, workload: str) -> int:
        from joulegym.workloads.dream_scenarios import get_scenario

        names = {m.model for m in get_scenario(workload).models}
        if self.switch_to is not None:
            names |= {m.model for m in get_scenario(self.switch_to).models}
        if len(names) > M_MAX:  # pragma: no cover - Table 3 pairs have at most 9
            raise ValueError(f"workload={workload!r} with switch_to={self.switch_to!r} has {len(names)} models; "
                             f"the observation holds {M_MAX}")
        return len(names)

    def _reward_spec(self) -> RewardSpec:
        if self.action_mode == "params":
            return RewardSpec(self.params_parts, self.params_presets)
        return RewardSpec(self.dispatch_parts, self.dispatch_presets)

    # --- episode ------------------------------------------------------------------------------------------
    def make_sim(self, workload: str | None = None, hw: str | None = None) -> Any:
        """A fresh simulator of this env's config (``workload`` / ``hw``: one of the configured ones; default the
        first). Privileged policies use it to evaluate candidates offline with the episode's seed."""
        from joulegym.envs.dream.simulator import DreamSim

        c = self.config
        workload = workload or self.workloads[0]
        hw = hw or self.hws[0]
        switch = None if self.switch_to is None else (float(c["switch_at_s"]), self.switch_to)
        return DreamSim.from_catalog(
            scenario=workload, hw=hw, kappa=c["kappa"], p=c["p"], horizon_s=self.horizon_s,
            warmup_s=float(c["warmup_s"]), switch=switch, child_deadline=c["child_deadline"],
            cap=c["outstanding_cap"], togo_mode=c["togo_mode"], release_phase=c["release_phase"],
            record_timeline=self._record)

    def _begin_episode(self, options: dict[str, Any]) -> None:
        rng = self.np_random
        workload = self.workloads[int(rng.integers(len(self.workloads)))] if len(self.workloads) > 1 \
            else self.workloads[0]
        hw = self.hws[int(rng.integers(len(self.hws)))] if len(self.hws) > 1 else self.hws[0]
        self.workload, self.hw = workload, hw
        self.sim_seed = int(rng.integers(0, 2**31 - 1))  # the simulator's common random numbers
        key = (workload, hw)
        sim = self._sims.get(key)
        if sim is None:
            sim = self._sims[key] = self.make_sim(workload, hw)
        self.sim = sim
        sim.reset(self.sim_seed)
        self._episode_statics()
        if self.action_mode == "dispatch":
            self._begin_dispatch()
        else:
            self._begin_params()

    def _episode_statics(self) -> None:
        """Per-episode constants of the observation: model positions, periods, accelerators."""
        from joulegym.workloads.dream_scenarios import get_scenario

        sim = self.sim
        view = sim.view()
        self.view = view
        names = list(view.model_names)
        self.n_models = len(names)
        self.period = 1.0 / np.asarray(sim.model_fps, dtype=float)
        self.leaf = np.array([bool(view.is_leaf(m)) for m in range(self.n_models)])
        self.n_acc = int(view.n_acc)
        self.workload_onehot = np.zeros(len(WORKLOADS))
        self.workload_onehot[WORKLOADS.index(self.workload)] = 1.0
        acc = np.zeros((A_MAX, ACC_FEATURES))
        pes = list(view.acc_pes)
        flows = sim.soc.dataflows
        for a in range(self.n_acc):
            acc[a, 0] = 1.0
            acc[a, 3] = pes[a] / 4096.0
            acc[a, 4] = flows[a] == "WS"
            acc[a, 5] = flows[a] == "OS"
        self._acc_static = acc
        self.total_pes = float(sum(pes))
        scn = get_scenario(self.workload)
        self.cascade_p = float(self.config["p"]) if self.config["p"] is not None else \
            max([m.p for m in scn.models if m.parent is not None], default=0.0)

    # --- dispatch mode ------------------------------------------------------------------------------------
    def _begin_dispatch(self) -> None:
        K = self.K
        self.slots.reset()
        self.decision_index = 0
        self._obs_buf = np.zeros(self.observation_space.shape[0], dtype=np.float32)
        self._bind_slot_rows()  # the slot rows: a view into the buffer
        self._slot_key: list[Any] = [None] * K  # per slot: (task, pos, running) its cached features were built at
        self._mask = np.zeros(K * A_MAX * self.n_variants + K + 1, dtype=bool)
        self._mask_at = -1
        self._togo = [0.0] * K  # per slot: its frame's ToGo and best-case ToGo (s), refreshed as it moves
        self._min_togo = [0.0] * K
        self._occupied: list[tuple[int, int]] = []
        self._occupied_k = np.zeros(0, dtype=np.int64)
        self._drops: list[int] = []
        self._switch_at = float(self.config["switch_at_s"])
        self._phase = self.sim.phase
        self._period_list = self.period.tolist()
        self._leaf_list = self.leaf.tolist()
        self._ux = (0.0, 0.0)  # (X, Y) of the last step
        self._proxy = (np.zeros(self.n_models), np.zeros(self.n_models))  # violated, energy of the last step
        sim = self.sim
        self.frames_per_horizon = np.maximum(self.horizon_s / self.period, 1.0)
        self.worst_per_frame = np.maximum(np.asarray(sim.model_worst_energy, dtype=float), 1e-12)
        self._more = sim.advance()
        self._sync()

    def dispatch_decision(self, task: int, acc: int, variant: int = 0) -> Any:
        """The simulator decision of an agent's "dispatch the next layer of ``task`` on ``acc``": one layer, and at a
        Supernet's switch point the variant of ``supernet`` (``"dream_rule"``: §4.5.1's rule; ``"agent"``:
        ``variant``, 0 = the original)."""
        from joulegym.envs.dream.simulator import Dispatch

        if self.n_variants > 1:
            return Dispatch(task, acc, 1, variant) if self.view.at_switch_point(task) else Dispatch(task, acc)
        if self.config["supernet"] == "dream_rule" and self.view.at_switch_point(task):
            from joulegym.envs.dream.scheduling import supernet_variant

            return Dispatch(task, acc, 1, int(supernet_variant(self.view, task)))
        return Dispatch(task, acc)

    def _sync(self) -> None:
        """Seat the outstanding frames after the simulator reached a decision point (release order) and take the
        per-decision-point state the mask and the observation share."""
        slots = self.slots
        slots.sync(self.view.outstanding)
        for k, _ in slots.freed:
            self._slot_obs[k] = 0.0
            self._slot_key[k] = None
        if slots.freed or slots.seated or self.decision_index == 0:
            self._occupied = slots.occupied()
            self._occupied_k = np.fromiter((k for k, _ in self._occupied), dtype=np.int64, count=len(self._occupied))
        view = self.view
        if self.sim.phase != self._phase:  # a task-level change: the dependency graph is the new workload's
            self._phase = self.sim.phase
            self.leaf = np.array([bool(view.is_leaf(m)) for m in range(self.n_models)])
            self._leaf_list = self.leaf.tolist()
            self._slot_key = [None] * self.K
        self._drops = [view.drops_in_window(m) for m in range(self.n_models)]  # smart-drop Cond 4 per model
        slots.count_step()
        self.decision_index += 1

    def current_mask(self) -> np.ndarray:
        """The valid actions now (module docstring), built once per decision point."""
        if self._mask_at == self.decision_index:
            return self._mask
        view, K, V = self.view, self.K, self.n_variants
        mask = self._mask
        mask[:] = False
        mask[-1] = True
        running = view.acc_running
        idle = [a for a in range(self.n_acc) if running[a] < 0]
        ready = view.ready
        model = view.f_model
        leaf, drops = self.leaf, self._drops
        drop0 = K * A_MAX * V
        for k, task in self._occupied:
            if idle and task in ready:
                base = k * A_MAX
                if V == 1:
                    for a in idle:
                        mask[base + a] = True
                else:  # variant 0 always; the others only where the frame's sub-net is still open
                    n_var = min(V, view.supernet_options(task)) if view.at_switch_point(task) else 1
                    for a in idle:
                        mask[(base + a) * V: (base + a) * V + n_var] = True
            m = model[task]
            if leaf[m] and drops[m] < 2:
                mask[drop0 + k] = True
        self._mask_at = self.decision_index
        return mask

    def _transition_dispatch(self, decision: Any) -> tuple[float, ...]:
        sim = self.sim
        sim.apply(decision)
        self._more = sim.advance()
        self._sync()
        x, y = self._ux_now()
        x0, y0 = self._ux
        self._ux = (x, y)
        dlv, energy = -(x - x0) * y0, -x * (y - y0)
        terminal = -x * y if not self._more else 0.0
        viol = np.asarray(sim.acc_violated, dtype=float)
        spent = np.asarray(sim.acc_energy, dtype=float)
        v0, e0 = self._proxy
        self._proxy = (viol, spent)
        violations = -float(np.sum((viol - v0) / self.frames_per_horizon))
        energy_proxy = -float(np.sum((spent - e0) / (self.frames_per_horizon * self.worst_per_frame)))
        invalid = -INVALID_PENALTY if self.action_type.repaired else 0.0
        return dlv, energy, terminal, min(violations, 0.0), min(energy_proxy, 0.0), invalid

    def _ux_now(self) -> tuple[float, float]:
        """Alg. 2's two sums over the frames whose fate is known (the 1/(2N) floor on every counted model); at the
        episode end the simulator's final values, so that the parts sum to ``-metrics()["uxcost"]``."""
        sim = self.sim
        if not self._more:
            m = sim.metrics()
            return float(m["overall_rate_dlv"]), float(m["overall_norm_energy"])
        x = y = 0.0
        for frames, viol, spent, worst in zip(sim.acc_frames, sim.acc_violated, sim.acc_energy, sim.acc_worst):
            if frames > 0:
                x += (viol if viol > 0 else 0.5) / frames
            if worst > 0:
                y += spent / worst
        return x, y

    def _observe_dispatch(self) -> np.ndarray:
        view, sim = self.view, self.sim
        now = view.now
        K = self.K
        obs = self._slot_obs
        keys = self._slot_key
        f_model, f_pos, f_running = view.f_model, view.f_pos, view.f_running
        occupied = self._occupied
        if occupied:
            for k, task in occupied:  # the features that change when a frame moves, recomputed only then
                key = (task, f_pos[task], f_running[task])
                if keys[k] != key:
                    self._slot_static(k, task)
                    keys[k] = key
            ks = self._occupied_k
            togo, min_togo = self._togo, self._min_togo
            period, leaf, drops = self._period_list, self._leaf_list, self._drops
            deadline, tcmpl = view.f_deadline, view.f_tcmpl
            rows = []
            for k, t in occupied:  # the time-dependent features, one tuple per slot (one numpy write below)
                if f_running[t] >= 0:  # a running frame's ToGo shrinks with time; a waiting frame's is cached
                    togo[k] = view.to_go(t)
                    min_togo[k] = view.min_to_go(t)
                m = f_model[t]
                per = period[m]
                slack = deadline[t] - now
                rows.append((leaf[m] and drops[m] < 2, slack / per, togo[k] / per, min_togo[k] / per,
                             togo[k] / slack if slack > 0 else OBS_BOUND, (now - tcmpl[t]) / per))
            obs[ks[:, None], _DYNAMIC] = rows
            res0 = _T["resident_0"]
            obs[ks, res0: res0 + A_MAX] = 0.0
            slot_of = self.slots.slot_of
            for a, r in enumerate(view.acc_resident):
                k = slot_of.get(r, -1) if r >= 0 else -1
                if k >= 0:
                    obs[k, res0 + a] = 1.0
        buf = self._obs_buf
        off = K * SLOT_FEATURES
        acc = self._acc_static.copy()
        running, busy = view.acc_running, view.acc_busy_until
        for a in range(self.n_acc):
            idle = running[a] < 0
            acc[a, 1] = idle
            acc[a, 2] = 0.0 if idle else (busy[a] - now) * 1e3
        buf[off: off + A_MAX * ACC_FEATURES] = acc.ravel()
        off += A_MAX * ACC_FEATURES
        models_obs = np.zeros((M_MAX, MODEL_FEATURES))
        outstanding = [0] * self.n_models
        for t in view.outstanding:
            outstanding[f_model[t]] += 1
        drops = self._drops
        for m, (frames, viol, spent, worst) in enumerate(zip(sim.acc_frames, sim.acc_violated, sim.acc_energy,
                                                             sim.acc_worst)):
            models_obs[m] = (1.0, viol / frames if frames else 0.0, drops[m] / 2.0, outstanding[m] / 4.0,
                             spent / worst if worst else 0.0)
        buf[off: off + M_MAX * MODEL_FEATURES] = models_obs.ravel()
        off += M_MAX * MODEL_FEATURES
        switched = float(self.switch_to is not None and now >= self._switch_at)
        buf[off:] = (now / self.horizon_s, self.cascade_p, math.log1p(self.slots.overflow), *self.workload_onehot,
                     self.n_acc / 3.0, self.total_pes / 8192.0, switched)
        return np.clip(buf, -OBS_BOUND, OBS_BOUND)

    def _slot_static(self, k: int, task: int) -> None:
        """The features of slot ``k`` that change only when its frame moves (a layer dispatched or done); the
        time-dependent ones and the resident flags are :meth:`_observe_dispatch`'s."""
        view = self.view
        row = self._slot_obs[k]
        m = view.f_model[task]
        per = self.period[m]
        row[:] = 0.0
        row[0] = 1.0
        row[1 + m] = 1.0
        row[_T["leaf"]] = float(self.leaf[m])
        pos = view.f_pos[task]
        tables = view.tables_of(task)
        n_layers = tables.n
        row[_T["done_fraction"]] = min(pos / max(n_layers, 1), 1.0)
        running = view.f_running[task] >= 0
        if not running and pos < n_layers:
            lat, energy = tables.lat[pos], tables.en[pos]
            top = max(energy)
            for a in range(self.n_acc):
                row[_T[f"next_lat_{a}"]] = lat[a] / per
                row[_T[f"next_energy_{a}"]] = energy[a] / top if top > 0 else 0.0
        self._togo[k] = view.to_go(task)
        self._min_togo[k] = view.min_to_go(task)
        row[_T["started"]] = float(pos > 0)
        row[_T["running"]] = float(running)

    # --- params mode --------------------------------------------------------------------------------------
    def _begin_params(self) -> None:
        from joulegym.envs.dream.scheduling import make_scheduler

        self.scheduler = make_scheduler(f"dream-{self.config['dream_variant']}", tuning="fixed")
        self.scheduler.reset(self.sim, seed=self.sim_seed)
        self.params = (1.0, 1.0)  # the ablation baseline's fixed point until the first action (§5.2, Fig. 9)
        self.window_index = 0
        self.last_window: dict[str, Any] = {"uxcost": 0.0, "stats": None, "busy": np.zeros(self.n_acc)}
        self.param_log: list[tuple[float, float, float]] = []  # (alpha, beta, window UXCost)
        self._last_change_s = 0.0

    def _transition_params(self, decision: tuple[float, float]) -> tuple[float, float]:
        from joulegym.envs.dream.simulator import Dispatch

        alpha, beta = decision
        self.params = (alpha, beta)
        scheduler = self.scheduler
        scheduler.set_params(alpha, beta)
        sim = self.sim
        t0 = self.window_index * self.window_s
        t1 = min((self.window_index + 1) * self.window_s, self.horizon_s)
        view = sim.view()
        busy = [0.0] * self.n_acc
        while sim.advance(t1):  # scheduling.run_window, counting each accelerator's dispatched time
            choice = scheduler.decide(view)
            sim.apply(choice)
            if type(choice) is Dispatch:
                busy[choice.acc] += sim.acc_busy_until[choice.acc] - sim.now
        self.window_index += 1
        stats = sim.window_stats(t0, t1)
        ux = float(sim.window_uxcost(t0, t1))
        self.last_window = {"uxcost": ux, "stats": stats, "busy": np.asarray(busy) / max(t1 - t0, 1e-9)}
        self.param_log.append((alpha, beta, ux))
        if self.switch_to is not None and t0 <= float(self.config["switch_at_s"]) < t1:
            self._last_change_s = float(self.config["switch_at_s"])
        return -ux, -math.log(max(ux, LOG_UX_FLOOR))

    def _max_episode_steps(self) -> int | None:
        """``params``: one window per step; ``dispatch``: one decision point per step, as many as events (None)."""
        return int(self.n_windows) if self.action_mode == "params" else None

    def _observation_names(self) -> list[str]:
        """The module docstring's observation: ``dispatch`` per slot, accelerator, model position and global;
        ``params`` per model position, each accelerator's busy share and global."""
        if self.action_mode == "params":
            return (row_names("model", M_MAX, PARAM_MODEL_NAMES) + [f"acc{a}.busy" for a in range(A_MAX)]
                    + list(PARAM_GLOBAL_NAMES))
        return (row_names("slot", self.K, SLOT_NAMES) + row_names("acc", A_MAX, ACC_NAMES)
                + row_names("model", M_MAX, MODEL_NAMES) + list(GLOBAL_NAMES))

    def _observe_params(self) -> np.ndarray:
        obs = np.zeros(self.observation_space.shape[0], dtype=np.float32)
        last = self.last_window
        stats = last.get("stats")
        if stats is not None:
            frames = np.asarray(stats["frames"], dtype=float)
            viol = np.asarray(stats["violated"], dtype=float)
            spent = np.asarray(stats["energy"], dtype=float)
            worst = np.asarray(stats["worst"], dtype=float)
            drops = np.asarray(stats.get("drops", np.zeros(self.n_models)), dtype=float)
            per_model = np.zeros((M_MAX, PARAM_MODEL_FEATURES))
            n = len(frames)
            per_model[:n, 0] = 1.0
            per_model[:n, 1] = np.divide(viol, frames, out=np.zeros(n), where=frames > 0)
            per_model[:n, 2] = np.divide(spent, worst, out=np.zeros(n), where=worst > 0)
            per_model[:n, 3] = np.divide(drops, frames, out=np.zeros(n), where=frames > 0)
            obs[: M_MAX * PARAM_MODEL_FEATURES] = per_model.ravel()
            busy = np.minimum(last["busy"], 1.0)
            obs[M_MAX * PARAM_MODEL_FEATURES: M_MAX * PARAM_MODEL_FEATURES + len(busy)] = busy
            dlv = float(viol.sum() / frames.sum()) if frames.sum() else 0.0
            energy_rate = float(spent.sum() / worst.sum()) if worst.sum() else 0.0
        else:
            dlv = energy_rate = 0.0
        now = self.sim.view().now
        off = M_MAX * PARAM_MODEL_FEATURES + A_MAX
        ux = last["uxcost"]
        obs[off:] = (self.params[0] / PARAM_HIGH, self.params[1] / PARAM_HIGH, *self.workload_onehot,
                     min(now / self.horizon_s, 1.0), min((now - self._last_change_s) / self.horizon_s, 1.0),
                     len(self.sim.view().outstanding) / (4.0 * max(self.n_models, 1)), dlv, energy_rate,
                     math.log10(max(ux, LOG_UX_FLOOR)) / 6.0 if ux > 0 else -1.0)
        return np.clip(obs, -OBS_BOUND, OBS_BOUND)

    def window_rates(self) -> tuple[float, float, float, int]:
        """``(UXCost, DLV rate, drop rate, frames)`` of the last window (params), as the adaptivity engine reads
        a window (§4.4: it tracks the DLV and frame-drop rates)."""
        stats = self.last_window.get("stats")
        if stats is None:
            return 0.0, 0.0, 0.0, 0
        frames = sum(stats["frames"])
        if not frames:
            return float(self.last_window["uxcost"]), 0.0, 0.0, 0
        return (float(self.last_window["uxcost"]), sum(stats["violated"]) / frames, sum(stats["drops"]) / frames,
                int(frames))

    def active_models(self) -> tuple[str, ...]:
        """The models of the workload running now (after a task-level change: the new one's), §4.4."""
        names = self.sim.model_names
        return tuple(names[m] for m in self.sim.active_models())

    # --- the template's hooks -----------------------------------------------------------------------------
    def _transition(self, decision: Any) -> tuple[float, ...]:
        if self.action_mode == "params":
            return self._transition_params(decision)
        return self._transition_dispatch(decision)

    def _observe(self) -> np.ndarray:
        if self.action_mode == "params":
            return self._observe_params()
        return self._observe_dispatch()

    def _terminated(self) -> bool:
        return False

    def _truncated(self) -> bool:
        if self.action_mode == "params":
            return self.window_index >= self.n_windows
        return not self._more

    def _extra_info(self) -> dict[str, Any]:
        if self.action_mode == "params":
            return {"alpha": float(self.params[0]), "beta": float(self.params[1]),
                    "window_uxcost": float(self.last_window["uxcost"])}
        return {"overflow": int(self.slots.overflow), "t_s": float(self.view.now)}

    def _diagnostic_info(self) -> dict[str, Any]:
        m = self.sim.metrics()
        return {"uxcost_so_far": float(m["uxcost"]), "dlv_rate_so_far": float(m["dlv_rate"]),
                "drops": int(m["drops"]), "workload": self.workload, "hw": self.hw}

    def metrics(self) -> dict[str, Any]:
        """:meth:`DreamSim.metrics` (UXCost, DLV rate, energy rate, per model, Supernet mix) plus the workload,
        the hardware and (dispatch) the steps with frames outside the slots."""
        m = dict(self.sim.metrics())
        if self.action_mode == "dispatch":
            m["overflow_steps"] = int(self.slots.overflow_steps)
        else:
            m["windows"] = int(self.window_index)
        return m

    # --- render -------------------------------------------------------------------------------------------
    def _render_ansi(self) -> str:
        view, sim = self.sim.view(), self.sim
        m = sim.metrics()
        names = list(view.model_names)
        lines = [f"{self.workload} on {self.hw}  t={view.now * 1e3:8.2f} ms  UXCost so far {m['uxcost']:.4g}  "
                 f"DLV {m['dlv_rate']:.1%}  drops {int(m['drops'])}"]
        for a in range(self.n_acc):
            task = view.acc_running[a]
            what = "idle" if task < 0 else (f"{names[view.f_model[task]]}#{view.f_frame[task]} until "
                                            f"{view.acc_busy_until[a] * 1e3:.2f} ms")
            lines.append(f"  acc {a} ({int(view.acc_pes[a])} PEs): {what}")
        if self.action_mode == "dispatch":
            lines.append("slot  model               frame  slack(ms)  layer  state")
            for k, task in self.slots.occupied():
                state = "running" if view.f_running[task] >= 0 else "ready"
                lines.append(f"{k:4d}  {names[view.f_model[task]]:<18s} {view.f_frame[task]:6d}  "
                             f"{(view.f_deadline[task] - view.now) * 1e3:9.2f}  {view.f_pos[task]:5d}  {state}")
            if self.slots.overflow:
                lines.append(f"  + {self.slots.overflow} frames outside the slots")
        else:
            lines.append(f"window {self.window_index}/{self.n_windows}  alpha={self.params[0]:.3f} "
                         f"beta={self.params[1]:.3f}  last window UXCost {self.last_window['uxcost']:.4g}")
        return "\n".join(lines)

    def _render_figure(self):
        return gantt_figure(self.sim, title=f"{self.workload} on {self.hw}")


def gantt_figure(sim: Any, title: str = "", t_range: tuple[float, float] | None = None):
    """Per-accelerator Gantt timeline of ``sim``'s recorded episode (``record_timeline``): one bar per dispatched
    layer chunk coloured by model, drops (x) and deadline misses (v) on a row of their own."""
    fig, axes = new_figure(1, 1, size=(9.0, 3.6))
    ax = axes[0, 0]
    view = sim.view()
    names = list(view.model_names)
    colors = {m: f"C{m % 10}" for m in range(len(names))}
    n_acc = int(view.n_acc)
    timeline = list(getattr(sim, "timeline", ()) or ())
    lo, hi = t_range if t_range is not None else (0.0, max(view.now, 1e-3))
    bars: dict[int, list[tuple[float, float]]] = {}
    bar_colors: dict[int, list[str]] = {}
    for acc, start, end, model, _frame, _task in timeline:
        if end < lo or start > hi:
            continue
        bars.setdefault(acc, []).append((start * 1e3, max(end - start, 0.0) * 1e3))
        bar_colors.setdefault(acc, []).append(colors[model])
    for acc in range(n_acc):
        if acc in bars:
            ax.broken_barh(bars[acc], (acc - 0.4, 0.8), facecolors=bar_colors[acc])
    events_row = n_acc
    drops = [(t, model) for t, model, *_ in (getattr(sim, "drop_log", ()) or ()) if lo <= t <= hi]
    misses = [(t, model) for t, model, *_ in (getattr(sim, "miss_log", ()) or ()) if lo <= t <= hi]
    if drops:
        ax.scatter([t * 1e3 for t, _ in drops], [events_row + 0.2] * len(drops), marker="x",
                   c=[colors[m] for _, m in drops], label="drop")
    if misses:
        ax.scatter([t * 1e3 for t, _ in misses], [events_row - 0.2] * len(misses), marker="v",
                   c=[colors[m] for _, m in misses], edgecolors="red", label="deadline miss")
    ax.set_yticks(list(range(n_acc + 1)))
    ax.set_yticklabels([f"acc {a} ({int(view.acc_pes[a])})" for a in range(n_acc)] + ["drops / misses"])
    ax.set_xlim(lo * 1e3, hi * 1e3)
    ax.set_ylim(-0.6, n_acc + 0.6)
    ax.set_xlabel("time (ms)")
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Patch(color=colors[m], label=names[m]) for m in range(len(names))]
    handles += [Line2D([], [], marker="x", ls="", color="black", label="drop (model's colour)"),
                Line2D([], [], marker="v", ls="", color="white", markeredgecolor="red", label="deadline miss")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig
