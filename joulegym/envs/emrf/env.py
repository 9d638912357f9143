"""``joulegym/EMRF-v0`` and its action-mode kinds: sharing a coupled CPU-GPU APU (Tang et al.; docs/families/emrf.md).

Up to ``max_users`` users (apps with CPU fraction xi, weight w, job queues) share an APU of
``(C_cpu, C_gpu)`` GFLOPS (:mod:`~joulegym.envs.emrf.simulator`). Each decision step is one scheduling
window ΔT (Alg. 1; default 1 s) in which the agent sets the per-user allocation F_i (GFLOPS). One class,
:class:`EMRFEnv`; the ``action_mode`` picks the action type and with it the kind (id stem).

==================  ==========================================================================
Action modes        ``action_mode`` (an :class:`~joulegym.core.actions.ActionType` each); the kinds:

                    - ``weights`` (``EMRF``): ``Box(0, 1, (max_users,))`` weights ω;
                      F_i = ω_i t*, t* = 1 / max_d(sum ω_i xi_i^d / C_d) over the active users (WFQ
                      semantics: a device saturates). Inactive slots are ignored; all-zero ω on the
                      active users means equal ω (docs page, assumption A18). ω = F*/max F* reproduces
                      any saturating F* (EMRF's included).
                    - ``residual_weights`` (``EMRFResidual``): same Box; F_i = η F_i^max + ω_i t',
                      t' saturating the first device of C' (the fairness floor holds by construction).
                      Reference: ω = F'/max F'.
                    - ``knob`` (``EMRFKnob``): ``Box(0, 1, (1,))`` = η of this window; F = EMRF(η).
                    - ``knob_discrete`` (``EMRFKnobDiscrete``): ``Discrete(knob_levels)`` (default 11:
                      η in {0, 0.1, ..., 1}); every level is valid.

                    Decoding an action gives the window's allocation rule (:class:`AllocationRule`:
                    active slots -> F per slot). On an event inside the window (completion, departure,
                    arrival, xi phase switch) the same ω is re-scaled over the users with work (knob
                    modes re-solve EMRF at the same η); an arriving user joins at once if that gives it
                    F > 0, else it waits (simulator docstring, "Admission"). ``admit_at_window=True``:
                    arrivals wait for the next window. With ``task_gflop`` set, every allocation goes
                    through Alg. 1's discrete scheduler (kernel slices by lowest F_i/F*_i).
Observation         ``Box(0, 1, (10 max_users + 7,), float32)``; GFLOPS over C_tot = C_cpu + C_gpu.
                    Per slot: active, xi_hat, w/W, S/C_tot, F^max/C_tot, F^solo/C_tot, remaining
                    fraction of the current job, jobs left (fraction), last F/C_tot, last
                    (F/S)/(W/min w). Globals: η_target, δ(η_target)/(W/min w), last U_cpu, last U_gpu,
                    C_cpu/C_tot, n_active/max_users, t/H. W, S, F^max over the active users.
Reward parts        time averages over the window's segments, each "more is better":
                    ``efficiency`` E = sum F_i / C_tot in [0, 1] (the LP objective, Eq. (15));
                    ``soft_fairness`` -Δ/(W/min w), Δ = max F/S - min F/S (Eq. (9)'s left side), in
                    [-1, 0] while the active set and xi stay as decided (the declared bound also
                    covers arrivals and measurement noise); ``floor_violation`` -V,
                    V = sum_i max(0, η_target F_i^max - F_i) / C_tot in [0, 1].
Reward presets      ``floor`` (default): E - 50 V (λ = 50, docs page assumption A10); EMRF(η_target)
                    maximises it. ``scalarized``: 0.5 E - 0.5 Δ/(W/min w) (β = 0.5). Other λ / β:
                    ``reward_weights={"floor_violation": λ}`` / ``reward="scalarized",
                    reward_weights={"efficiency": 1 - β, "soft_fairness": β}``; ``vector_reward=True``
                    returns the parts (MO-Gymnasium).
Starting state      the scenario's users (``apu-random``: drawn from the seed; η_target drawn from
                    ``eta_choices`` when set).
Termination         every job of every user is done (finite-job scenarios, e.g. ``apu-m1``).
Truncation          after ``horizon`` windows (default 200).
Info                (one structure per key for the whole episode, reset included) lean (the default):
                    ``allocation`` (F per slot at the window start), ``delivered`` (mean GFLOPS per
                    slot over the window), ``utilisation`` / ``U_cpu`` / ``U_gpu``, ``soft_fairness``
                    (Δ), ``delta_bound`` (δ(η_target), Theorem 1 corrected), ``si_violations`` (users
                    with F_i < S_i), ``ef_violations`` (envious pairs), ``eta`` (η used),
                    ``eta_target``, ``arrivals_joined`` / ``arrivals_waited`` (users that got work
                    inside the window and joined at once / waited; ``arrivals_readmitted``: waiting
                    users that joined later in the window). ``info_level="full"`` adds
                    ``scheduler_inputs`` (exact inputs for reference policies; tuples per slot; the
                    policies read ``env.unwrapped.scheduler_inputs()`` without it) and
                    ``reference_allocations`` (what each reference policy would allocate now: ``emrf``
                    (η_target), ``drf``, ``drf-progressive``, ``wfq``, ``static-partition`` (S scaled
                    until a device saturates), ``max-utilisation`` (EMRF at η = 0); and ``fair-share``
                    S; tuples per slot; always a :class:`ReferenceAllocations`). The core adds
                    ``reward_parts``, ``repaired`` (always False: every action in the space is valid)
                    and ``metrics`` (episode end).
==================  ==========================================================================

Invalid actions (wrong shape, NaN, out of bounds, junk types) raise ``ValueError`` naming the action
space (docs page, assumption A19).

Version history (the dynamics, rewards and observations of every id are those of v0 throughout):

- v0, info: ``info_level`` is honoured: ``scheduler_inputs`` and ``reference_allocations`` need
  ``info_level="full"`` (the lean default had every key); the reference policies read the same exact inputs from
  ``env.unwrapped.scheduler_inputs()`` without them, so their actions are unchanged.
- v0 (core migration): one class with four action types instead of a subclass per mode; config keys ``lam``,
  ``beta`` and ``reward="vector"`` replaced by the core's ``reward_weights`` and ``vector_reward``
  (the default ``floor`` reward is bit for bit the same); ``info["reward_vector"]`` replaced by
  ``info["reward_parts"]``; ``info["metrics"]`` at the episode's end only (``info_metrics="every_step"``
  restores it per step); ``info["action_mask"]`` dropped from ``knob_discrete`` (all levels are valid;
  ``action_masks()`` stays); ``info["reference_allocations"]`` is one type at every step (it was a
  plain dict when no user had work, which crashed Gymnasium's vector envs); Box actions with tiny
  positive weights (denormals) no longer divide by zero.
- v0 (first release).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from joulegym.core.actions import ActionType, validated_box_list, validated_discrete_action
from joulegym.core.cache import BoundedCache
from joulegym.core.env import JoulegymEnv, row_names
from joulegym.core.plotting import legend_outside, new_figure
from joulegym.core.rewards import RewardPart, RewardSpec
from joulegym.core.summation import sequential_sum
from joulegym.envs.emrf.allocation import (
    algorithm1_fill_core,
    basics,
    device_loads,
    emrf_core,
    residual_core,
)
from joulegym.envs.emrf.config import EMRFSetup
from joulegym.envs.emrf.decisions import (
    DERIVED_CACHE_SIZE,
    ENVY_NUMPY_FROM,
    GLOBAL_FEATURE_NAMES,
    GLOBAL_FEATURES,
    SLOT_FEATURE_NAMES,
    SLOT_FEATURES,
    Derived,
    ReferenceAllocations,
    envy_count,
    global_features,
    normalised,
    residual_level,
    saturating_level,
    scalar_where,
    spread,
)
from joulegym.envs.emrf.metrics import episode_metrics, segment_measures
from joulegym.envs.emrf.simulator import EMRFSimulator
from joulegym.workloads.rodinia import DEFAULT_SOLO_SECONDS, MIXES, RANDOM_MIX

__all__ = ["GLOBAL_FEATURES", "SLOT_FEATURES", "AllocationRule", "EMRFEnv", "ReferenceAllocations"]

FLOOR_LAMBDA = 50.0  # λ of the floor preset (docs/families/emrf.md, assumption A10)
SCALARIZED_BETA = 0.5  # β of the scalarized preset


def _default_apps() -> list[dict]:
    mix = MIXES["M1"]
    return [{"app": a, "weight": w} for a, w in zip(mix.apps, mix.weights)]


class AllocationRule:
    """The decision of one window: active slots -> planned GFLOPS per slot (a list of ``max_users``).

    :param fn: the rule (re-applied at every event inside the window, e.g. to the remaining users).
    :param eta: the η it applies (η_target for the weight modes; ``info["eta"]``).
    """

    __slots__ = ("eta", "fn")

    def __init__(self, fn, eta: float) -> None:
        self.fn, self.eta = fn, float(eta)

    def __call__(self, active: tuple[int, ...]) -> list[float]:
        return self.fn(active)


# --- action types -------------------------------------------------------------------------------------
class _EMRFAction(ActionType):
    """Decode = validate the action, build the fluid rule, and route it through Alg. 1's discrete
    scheduler when ``task_gflop`` is set (:meth:`EMRFEnv._with_task_slices`)."""

    env: EMRFEnv

    def decode(self, action: Any) -> AllocationRule:
        fn, eta = self._fluid(self._checked(action))
        return AllocationRule(self.env._with_task_slices(fn), eta)

    def decode_checked(self, values: Any) -> AllocationRule:
        """The rule of an action already checked (and clipped) by the batched env's validator: a list of floats for
        the Box modes, an int level for ``knob_discrete``; the same rule :meth:`decode` gives that action."""
        fn, eta = self._fluid(values)
        return AllocationRule(self.env._with_task_slices(fn), eta)

    def _checked(self, action: Any) -> Any:  # pragma: no cover - every mode overrides
        raise NotImplementedError

    def _fluid(self, values: Any):  # pragma: no cover - every mode overrides
        raise NotImplementedError


class WeightsAction(_EMRFAction):
    """``weights``: ω in ``Box(0, 1, (max_users,))``; F = ω t*, the first device saturating."""

    name = "weights"

    def __init__(self, env: EMRFEnv) -> None:
        super().__init__(env)
        self.space = gym.spaces.Box(0.0, 1.0, (env.max_users,), dtype=np.float32)

    def _checked(self, action: Any) -> list[float]:
        return validated_box_list(action, self.space)

    def _fluid(self, values: list[float]):
        env = self.env
        return env._weights_rule(values), env.eta_target

    def encode(self, allocation: Any) -> np.ndarray:
        """ω = F / max F for an allocation per slot (0 on inactive slots): reproduces any saturating F."""
        f = np.asarray(allocation, dtype=float)
        top = float(f.max()) if f.size else 0.0
        return f / top if top > 0 else np.zeros_like(f)


class ResidualWeightsAction(WeightsAction):
    """``residual_weights``: F = η_target F^max + ω t', t' saturating the first device of C'."""

    name = "residual_weights"

    def _fluid(self, values: list[float]):
        env = self.env
        return env._residual_rule(values, env.eta_target), env.eta_target

    def encode(self, allocation: Any) -> np.ndarray:
        """ω = F'/max F' with F' = F - η_target F^max over the current active users."""
        env = self.env
        f = np.asarray(allocation, dtype=float)
        active = env._active_slots()
        floor = np.zeros_like(f)
        if active:
            floor[list(active)] = np.array(env._derived(active).fmax) * env.eta_target
        return super().encode(np.maximum(f - floor, 0.0))


class KnobAction(_EMRFAction):
    """``knob``: η of this window in ``Box(0, 1, (1,))``; F = EMRF(η)."""

    name = "knob"

    def __init__(self, env: EMRFEnv) -> None:
        super().__init__(env)
        self.space = gym.spaces.Box(0.0, 1.0, (1,), dtype=np.float32)

    def _checked(self, action: Any) -> list[float]:
        return validated_box_list(action, self.space)

    def _fluid(self, values: list[float]):
        eta = values[0]
        return self.env._knob_rule(eta), eta

    def encode(self, eta: float) -> np.ndarray:
        """The action for knob value ``eta``."""
        return np.array([float(eta)])


class KnobDiscreteAction(_EMRFAction):
    """``knob_discrete``: η = level / (knob_levels - 1), ``Discrete(knob_levels)``; every level is valid."""

    name = "knob_discrete"

    def __init__(self, env: EMRFEnv) -> None:
        super().__init__(env)
        self.space = gym.spaces.Discrete(env.config["knob_levels"])

    def _checked(self, action: Any) -> int:
        return validated_discrete_action(action, self.space)

    def _fluid(self, level: int):
        eta = level / (self.space.n - 1)
        return self.env._knob_rule(eta), eta

    def encode(self, eta: float) -> int:
        """The level nearest to ``eta``."""
        return round(float(eta) * (self.space.n - 1))


class EMRFEnv(JoulegymEnv):
    """EMRF APU-sharing env; see the module docstring for spaces, reward and termination."""

    family: ClassVar[str] = "emrf"
    lean_info_keys: ClassVar[tuple[str, ...]] = (
        "allocation", "delivered", "utilisation", "U_cpu", "U_gpu", "soft_fairness", "delta_bound", "si_violations",
        "ef_violations", "eta", "eta_target", "arrivals_joined", "arrivals_waited", "arrivals_readmitted")
    full_info_keys: ClassVar[tuple[str, ...]] = ("scheduler_inputs", "reference_allocations")
    action_types: ClassVar[Mapping[str, type[ActionType]]] = {
        "weights": WeightsAction, "residual_weights": ResidualWeightsAction, "knob": KnobAction,
        "knob_discrete": KnobDiscreteAction,
    }
    reward_parts: ClassVar[tuple[RewardPart, ...]] = (  # soft_fairness's finite bound is per instance (_reward_spec)
        RewardPart("efficiency", 0.0, 1.0, "E = sum F_i / (C_cpu + C_gpu), the LP objective (Eq. (15))"),
        RewardPart("soft_fairness", -math.inf, 0.0, "-Δ / (W / min w), Δ = max F/S - min F/S (Eq. (9))"),
        RewardPart("floor_violation", -1.0, 0.0,
                   "-V, V = sum_i max(0, η_target F_i^max - F_i) / (C_cpu + C_gpu) (the fairness floor)"),
    )
    reward_presets: ClassVar[Mapping[str, Mapping[str, float]]] = {
        "floor": {"efficiency": 1.0, "floor_violation": FLOOR_LAMBDA},
        "scalarized": {"efficiency": 1.0 - SCALARIZED_BETA, "soft_fairness": SCALARIZED_BETA},
    }

    @classmethod
    def default_config(cls) -> dict[str, Any]:
        """Defaults: the ``apu-random`` training mix (2-8 random Rodinia users, η_target in {0.1, 0.5, 0.8}),
        8 slots, H = 200 windows of 1 s. ``apps`` (M1's, Table II) is used when ``random`` is ``None``.
        The core keys (``scenario``, ``action_mode``, ``reward``, ``reward_weights``, ``vector_reward``,
        ``info_metrics``) come from :meth:`JoulegymEnv.default_config`.

        ===============  =====================================================================
        key              meaning
        ===============  =====================================================================
        device           APU preset (``amd-a8-3870k``, ``emrf-toy``)
        capacities       ``None`` or ``[C_cpu, C_gpu]`` GFLOPS overriding the device's
        apps             list of users: ``{"app": Rodinia name | "xi_cpu": x, "weight", "jobs"
                         (None = backlogged), "job_gflop" (None = 10 s x F_solo), "arrival",
                         "arrival_rate" (Poisson jobs/s), "job_sigma", "name"}``
        random           ``None`` or the ``apu-random`` generator (keys: n_users, apps, weights,
                         xi_jitter, job_sigma, arrival_rate, initial_jobs)
        eta              η_target in [0, 1] (fairness floor and the reference EMRF's knob)
        eta_choices      ``None`` or a list: η_target drawn per episode
        tie_break        EMRF's LP tie-break (``lexmaxmin`` | ``vertex``) for knob modes/info
        lp_solver        ``closed-form`` (default: the exact closed-form solution of the LP, a few
                         microseconds) | ``highs`` (scipy HiGHS, ~2 ms per new instance); both give
                         the same allocation (``allocation`` module docstring). ``vertex`` is HiGHS.
        window_s         ΔT, seconds per decision (Alg. 1; assumption A2: 1 s)
        horizon          windows per episode H
        max_users        user slots
        xi_noise         std of the measurement noise on co-run apps' xi_hat
        phase_delta      ``None`` or δξ: co-run apps' xi alternates with xi + δξ every 20-40 s
        knob_levels      η levels of ``knob_discrete`` (11: steps of 0.1)
        task_gflop       ``None`` (Alg. 1's fluid limit, the default) or the GFLOPS of one kernel
                         slice of Alg. 1's discrete scheduler (lines 4-9), fed with the fluid F as F*
        strict_stop      with ``task_gflop``: stop at the first slice that does not fit (line 9 as
                         printed) instead of skipping that user and continuing (erratum E6)
        solo_seconds     default job size = solo_seconds x F_solo GFLOP (assumption A4)
        admit_at_window  False (an arrival inside the window is an event and is allocated at once
                         when the window's rule gives it F > 0; assumption A8) | True (arrivals are
                         admitted at the next window boundary)
        ===============  =====================================================================

        Reward presets: ``reward="floor"`` (default) or ``"scalarized"``; weights of the parts
        ``efficiency``, ``soft_fairness``, ``floor_violation`` with ``reward_weights={...}``.
        """
        return {
            **super().default_config(),
            "device": "amd-a8-3870k",
            "capacities": None,
            "apps": _default_apps(),
            "random": dict(RANDOM_MIX),
            "eta": 0.1,
            "eta_choices": [0.1, 0.5, 0.8],
            "tie_break": "lexmaxmin",
            "lp_solver": "closed-form",
            "window_s": 1.0,
            "horizon": 200,
            "max_users": 8,
            "xi_noise": 0.0,
            "phase_delta": None,
            "knob_levels": 11,
            "task_gflop": None,
            "strict_stop": False,
            "solo_seconds": DEFAULT_SOLO_SECONDS,
            "admit_at_window": False,
        }

    # --- configuration ------------------------------------------------------------------------------
    def _configure(self) -> None:
        self.setup = setup = EMRFSetup(self.config)  # validates every key
        cfg = self.config
        self.capacities, self.c_tot = setup.capacities, setup.c_tot
        self.max_users, self.horizon = setup.max_users, setup.horizon
        self._weight_unit = setup.weight_unit
        self.sim = EMRFSimulator(self.capacities, self.max_users, cfg["window_s"], self.horizon,
                                 xi_noise=cfg["xi_noise"], admit_at_window=cfg["admit_at_window"])
        n = self.max_users
        self.observation_space = gym.spaces.Box(0.0, 1.0, (n * SLOT_FEATURES + GLOBAL_FEATURES,), dtype=np.float32)
        self.eta_target = cfg["eta"]
        self._derived_cache: BoundedCache[Derived] = BoundedCache(DERIVED_CACHE_SIZE)
        self._empty_refs = ReferenceAllocations.empty(n, cfg["tie_break"], cfg["lp_solver"])
        self._new_view()
        self._reset_accumulators()

    def _reward_spec(self) -> RewardSpec:
        """The three parts with their per-step bounds (module docstring, "Reward parts").

        ``soft_fairness`` lies in [-1, 0] while the active set and xi stay as decided; an arrival of a
        lighter user inside the window or measurement noise can push Δ/(W/min w) above 1, never above
        ``max_users (w_max / w_min) C_tot / min_d C_d`` (F_i <= C_tot, m_i <= 1 / min_d C_d, W/w_i <=
        max_users w_max / w_min, W/min w >= 1), the declared lower bound.
        """
        weights = self.setup.config_weights()
        weight_spread = max(weights) / min(weights)
        low = -self.max_users * weight_spread * self.c_tot / min(self.capacities)
        efficiency, soft, floor = self.reward_parts
        parts = (efficiency, RewardPart(soft.name, low, soft.high, soft.description), floor)
        return RewardSpec(parts, self.reward_presets)

    def _instance(self, active: tuple[int, ...]) -> tuple[float, float, tuple[float, ...], tuple[float, ...]]:
        """``(C_cpu, C_gpu, xi_hat, w)`` of ``active`` as the current decision sees them (cached per window)."""
        inst = self._inst_cache.get(active)
        if inst is None:
            sim = self.sim
            xi = self._xi_view
            unit = self._weight_unit
            inst = self._inst_cache[active] = (self.capacities[0], self.capacities[1], tuple(xi[i] for i in active),
                                               tuple(sim.weight[i] / unit for i in active))
        return inst

    def _new_view(self) -> None:
        """The decision inputs changed (window end / reset): snapshot xi_hat, drop the per-window caches."""
        self._xi_view = list(self.sim.xi_hat)
        self._inst_cache: dict[tuple[int, ...], tuple] = {}
        self._derived_window: dict[tuple[int, ...], Derived] = {}
        self._active_cache: tuple[int, ...] | None = None

    def _derived(self, active: tuple[int, ...]) -> Derived:
        # per window the instance of an active set is fixed (_instance's cache), and so is eta_target: a plain
        # dict lookup first, the bounded content-keyed cache across windows second
        derived = self._derived_window.get(active)
        if derived is None:
            inst = self._instance(active)
            key = (active, inst[2], inst[3], self.eta_target)
            derived = self._derived_window[active] = self._derived_cache.get_or_compute(
                key, lambda: Derived(self, active, inst))
        return derived

    def _active_slots(self) -> tuple[int, ...]:
        """Active slots at the current decision point (cached until the next window)."""
        if self._active_cache is None:
            sim = self.sim
            self._active_cache = tuple(i for i in range(self.max_users) if sim.present[i] and sim.queue[i] > 0)
        return self._active_cache

    # --- decisions (what the action types build) -------------------------------------------------------
    def _weights_rule(self, omega: list[float]):
        c_cpu, c_gpu = self.capacities

        def rule(active: tuple[int, ...]) -> list[float]:
            out = [0.0] * self.max_users
            if not active:
                return out
            xi = self.sim.xi_hat
            w = normalised([omega[i] for i in active])
            need_cpu, need_gpu = device_loads(range(len(w)), w, [xi[i] for i in active])
            t = saturating_level(need_cpu, need_gpu, c_cpu, c_gpu, max)
            for wk, i in zip(w, active):
                out[i] = wk * t
            return out

        return rule

    def _residual_rule(self, omega: list[float], eta: float):
        def rule(active: tuple[int, ...]) -> list[float]:
            out = [0.0] * self.max_users
            if not active:
                return out
            inst = self._instance(active)
            fmax = basics(*inst)[2]
            a, b = residual_core(inst[0], inst[1], inst[2], fmax, eta)
            xi = inst[2]
            w = normalised([omega[i] for i in active])
            t = residual_level(*device_loads(range(len(w)), w, xi), a, b, scalar_where)
            for k, i in enumerate(active):
                out[i] = eta * fmax[k] + w[k] * t
            return out

        return rule

    def _knob_rule(self, eta: float):
        n = self.max_users
        tie_break, solver = self.config["tie_break"], self.config["lp_solver"]

        def rule(active: tuple[int, ...]) -> list[float]:
            if not active:
                return [0.0] * n
            alloc = emrf_core(*self._instance(active), eta, tie_break, solver)[0]
            return list(spread(active, alloc, n))

        return rule

    def _with_task_slices(self, rule):
        """``rule`` as Alg. 1 runs it: its fluid limit F = ω t* (the default) or, with ``task_gflop`` set,
        the discrete scheduler fed with that fluid allocation as the weights F* (lines 3-9)."""
        task = self.config["task_gflop"]
        if task is None:
            return rule
        strict = self.config["strict_stop"]
        n = self.max_users

        def discrete(active: tuple[int, ...]) -> list[float]:
            planned = rule(active)
            if not active:
                return planned
            c_cpu, c_gpu, xi, _ = self._instance(active)
            fill = algorithm1_fill_core(c_cpu, c_gpu, xi, tuple(planned[i] for i in active), task, strict)
            return list(spread(active, fill, n))

        return discrete

    def allocation_for(self, action: Any) -> np.ndarray:
        """The allocation (GFLOPS per slot) ``action`` gives the current active set (no state change)."""
        return np.array(self.action_type.decode(action)(self._active_slots()))

    # --- episode --------------------------------------------------------------------------------------
    def _reset_accumulators(self) -> None:
        n = self.max_users
        self._sum_e = 0.0
        self._sum_v = 0.0
        self._sum_delta = 0.0
        self._sum_delta_bound = 0.0
        self._sum_speedup = 0.0
        self._si_total = 0
        self._ef_total = 0
        self._steps = 0
        self._ratio_time = [0.0] * n
        self._active_time = [0.0] * n
        self._last_alloc = [0.0] * n
        self._last_ratio = [0.0] * n
        self._last_util = (0.0, 0.0)
        self._history: list[tuple[float, float, float, float]] = []
        # the last window's per-step info (zeros before the first window)
        self._last_eta = self.eta_target
        self._last_delta = 0.0
        self._last_bound = 0.0
        self._last_diag = (0, 0)
        self._last_arrivals = (0, 0, 0)

    def _begin_episode(self, options: dict[str, Any]) -> None:
        self.eta_target = self.setup.draw_eta(self.np_random)
        users = self.setup.draw_users(self.np_random)
        self.sim.reset(self.np_random, users)
        self._new_view()
        self._reset_accumulators()

    def _transition(self, rule: AllocationRule) -> tuple[float, float, float]:
        start_active = self._active_slots()
        planned = rule(start_active)
        memo = {start_active: planned}
        sim, view = self.sim, self._xi_view

        def cached_rule(active: tuple[int, ...]) -> list[float]:
            alloc = memo.get(active)
            if alloc is None:
                # a user arriving inside the window was not in the decision's xi_hat snapshot: it is
                # planned (and measured) with its app's xi, as it would be at the next decision
                for i in active:
                    if view[i] != sim.xi_hat[i]:
                        view[i] = sim.xi_hat[i]
                alloc = memo[active] = rule(active)
            return alloc

        si, ef = self._diagnostics(planned, start_active)
        bound = self._derived(start_active).bound if start_active else 0.0
        norm = self._derived(start_active).norm if start_active else 1.0  # W / min w: δ(0), so Δ/norm <= 1
        sim.apply(cached_rule)
        sim.advance()
        result = sim.last_window
        e, v, delta = self._window_measures(result)
        self._record_window(e, v, delta, si, ef, bound, planned, sequential_sum(sim.last_rates), rule.eta)
        joined = sum(1 for _, _, ok in result.arrivals if ok)
        self._last_arrivals = (joined, len(result.arrivals) - joined, len(result.readmitted))
        return float(e), float(0.0 - delta / norm), float(0.0 - v)  # 0.0 - x: no -0.0 in the parts

    def _record_window(self, e: float, v: float, delta: float, si: int, ef: int, bound: float,
                       planned: Any, delivered: float, eta: float) -> None:
        """A window's bookkeeping once it ran and was measured (``_window_measures``): the episode sums, the
        history row and the last-window diagnostics."""
        self._new_view()
        self._steps += 1
        self._sum_e += e
        self._sum_v += v
        self._sum_delta += delta
        self._si_total += si
        self._ef_total += ef
        self._sum_delta_bound += bound
        self._last_alloc = planned
        self._history.append((self.sim.time, self._last_util[0], self._last_util[1], delivered))
        self._last_eta, self._last_delta, self._last_bound, self._last_diag = eta, delta, bound, (si, ef)

    def _window_measures(self, result) -> tuple[float, float, float]:
        """Time averages over the window's segments of E, V and Δ; per-user F/S accumulators."""
        eta = self.eta_target
        total_e = total_v = total_delta = 0.0
        span = self.sim.window_s
        for dt, active, rates in result.segments:
            if not active or dt <= 0:
                continue
            d = self._derived(active)
            e, v, speedup, ratio_spread, ratios = segment_measures(enumerate(active), dt, eta, rates, d.share,
                                                                   d.fmax, d.m, max, min)
            total_e += e
            total_v += v
            total_delta += dt * ratio_spread
            self._sum_speedup += speedup
            for k, i in enumerate(active):
                self._ratio_time[i] += dt * ratios[k]
                self._active_time[i] += dt
        self._last_ratio = [0.0] * self.max_users
        if result.segments:
            dt, active, rates = result.segments[-1]
            if active:
                d = self._derived(active)
                share, norm = d.share, d.norm
                for k, i in enumerate(active):
                    self._last_ratio[i] = rates[i] / share[k] / norm
        self._last_util = self.sim.last_utilisation
        return total_e / (span * self.c_tot), total_v / (span * self.c_tot), total_delta / span

    def _terminated(self) -> bool:
        return self.sim.done

    def _truncated(self) -> bool:
        return self.sim.truncated

    # --- observation and info ---------------------------------------------------------------------------
    def _observe(self) -> np.ndarray:
        obs = np.array(self._features(), dtype=np.float32)
        np.maximum(obs, 0.0, out=obs)  # the ufuncs directly: np.clip's dispatch costs more than the clipping
        np.minimum(obs, 1.0, out=obs)
        return obs

    def _features(self) -> list[float]:
        """The observation's values before the float32 conversion and the clipping to [0, 1] (module docstring,
        "Observation"); the batched env converts and clips several instances' at once."""
        sim = self.sim
        active = self._active_slots()
        ctot = self.c_tot
        n = self.max_users
        feats = [0.0] * (n * SLOT_FEATURES + GLOBAL_FEATURES)
        bound, norm = 0.0, 1.0  # without users
        if active:
            d = self._derived(active)
            remaining, size = sim.remaining, sim.current_size
            last_alloc, last_ratio = self._last_alloc, self._last_ratio
            for k, i in enumerate(active):
                base = i * SLOT_FEATURES
                feats[base:base + 6] = d.slot_static[k]  # identity_features, cached with the derived quantities
                # features 6-9 (a shared function called per slot and step cost 7-15 % of the observation)
                feats[base + 6] = remaining[i] / size[i]
                feats[base + 7] = sim.jobs_left_fraction(i)
                feats[base + 8] = last_alloc[i] / ctot
                feats[base + 9] = last_ratio[i]
            bound, norm = d.bound, d.norm
        for i in range(n):  # present users without work keep their identity features
            if sim.users[i] is not None and sim.present[i] and i not in active:
                feats[i * SLOT_FEATURES + 1] = sim.xi_hat[i]
        feats[n * SLOT_FEATURES:] = global_features(self.eta_target, bound, norm, self._last_util[0],
                                                    self._last_util[1], self.capacities[0], ctot, len(active), n,
                                                    min(sim.windows / self.horizon, 1.0))
        return feats

    def _max_episode_steps(self) -> int:
        return int(self.config["horizon"])  # one window per step; finite jobs may end it sooner

    def _observation_names(self) -> list[str]:
        """The module docstring's "Observation": 10 per user slot, then 7 globals."""
        return row_names("user", self.max_users, SLOT_FEATURE_NAMES) + list(GLOBAL_FEATURE_NAMES)

    def scheduler_inputs(self) -> dict[str, Any]:
        """Exact inputs of the reference algorithms for the current window (tuples per slot)."""
        sim = self.sim
        mask = [False] * self.max_users
        for i in self._active_slots():
            mask[i] = True
        mask = tuple(mask)
        unit = self._weight_unit  # the weights as the env's allocations use them (ratios unchanged)
        return {"capacities": self.capacities, "xi_cpu": tuple(self._xi_view),
                "weights": tuple(w / unit for w in sim.weight),
                "active": mask, "eta": self.eta_target, "tie_break": self.config["tie_break"],
                "lp_solver": self.config["lp_solver"],
                "action_mode": self.action_mode, "knob_levels": self.config["knob_levels"]}

    def reference_allocations(self) -> ReferenceAllocations:
        """What each reference policy (and the fair share S) allocates to the current active set."""
        active = self._active_slots()
        if not active:
            return self._empty_refs
        return self._derived(active).refs  # read-only mapping of tuples: safe to share between steps

    def _diagnostics(self, planned: list[float], active: tuple[int, ...]) -> tuple[int, int]:
        """(SI violations, envious pairs) of ``planned`` over ``active`` (Eqs. (1), (2), (19))."""
        if not active:
            return 0, 0
        d = self._derived(active)
        f = tuple(planned[i] for i in active)
        cached = d.diag.get(f)
        if cached is not None:
            return cached
        share, xi = d.share, d.inst[2]
        si = sum(1 for fk, s in zip(f, share) if fk < s * (1 - 1e-9))
        ef = envy_count(xi, f) if len(f) < ENVY_NUMPY_FROM else d.envy_arrays().count(f)
        return d.diag.put(f, (si, ef))

    def _extra_info(self) -> dict[str, Any]:
        """The lean per-step info keys (module docstring, "Info"); the same keys and types at reset and every
        step."""
        si, ef = self._last_diag
        joined, waited, readmitted = self._last_arrivals
        return {
            "allocation": np.array(self._last_alloc, dtype=np.float64),
            "delivered": np.array(self.sim.last_rates, dtype=np.float64),  # zeros after reset
            "utilisation": np.array(self._last_util, dtype=np.float64),
            "U_cpu": float(self._last_util[0]), "U_gpu": float(self._last_util[1]),
            "soft_fairness": float(self._last_delta), "delta_bound": float(self._last_bound),
            "si_violations": int(si), "ef_violations": int(ef),
            "eta": float(self._last_eta), "eta_target": float(self.eta_target),
            "arrivals_joined": int(joined), "arrivals_waited": int(waited), "arrivals_readmitted": int(readmitted),
        }

    def _diagnostic_info(self) -> dict[str, Any]:
        """``info_level="full"``: the reference policies' exact inputs and what each would allocate now."""
        return {"scheduler_inputs": self.scheduler_inputs(), "reference_allocations": self.reference_allocations()}

    def metrics(self) -> dict[str, Any]:
        """The paper's metrics over the episode so far (docs/families/emrf.md §2 "Metrics")."""
        sim = self.sim
        makespan = max((f for f in sim.finished_at if f is not None), default=0.0) if sim.done else None
        return episode_metrics(
            elapsed=sim.time, capacities=self.capacities, steps=self._steps,
            sums=(self._sum_e, self._sum_delta, self._sum_delta_bound, self._sum_v, self._sum_speedup),
            counts=(self._si_total, self._ef_total), ratio_time=self._ratio_time, active_time=self._active_time,
            gflop=(sim.total_gflop, sim.cpu_gflop, sim.gpu_gflop), work_done=sim.work_done, jobs_done=sim.jobs_done,
            completion_times=sim.completion_times(), eta_target=self.eta_target, makespan=makespan)

    # --- rendering --------------------------------------------------------------------------------------
    def _render_ansi(self) -> str:
        sim = self.sim
        lines = [f"t={sim.time:.1f}s window {sim.windows}/{self.horizon} eta_target={self.eta_target:.2f} "
                 f"C=({self.capacities[0]:g}, {self.capacities[1]:g}) GFLOPS mode={self.action_mode}",
                 f"{'slot':>4} {'app':>6} {'act':>3} {'xi_hat':>7} {'w':>5} {'F':>9} {'F_cpu':>8} {'F_gpu':>8} "
                 f"{'left':>5}"]
        for i in range(self.max_users):
            user = sim.users[i]
            if user is None:
                continue
            f = self._last_alloc[i]
            x = sim.xi_hat[i]
            active = sim.present[i] and sim.queue[i] > 0
            lines.append(f"{i:>4} {user.name:>6} {'*' if active else ' ':>3} {x:>7.3f} {sim.weight[i]:>5g} "
                         f"{f:>9.2f} {f * x:>8.2f} {f * (1 - x):>8.2f} {sim.remaining_fraction(i):>5.2f}")
        lines.append(f"U_cpu={self._last_util[0]:.3f} U_gpu={self._last_util[1]:.3f}")
        return "\n".join(lines)

    def _render_figure(self):
        sim = self.sim
        fig, axes = new_figure(1, 2, size=(9.0, 3.4))
        ax = axes[0, 0]
        slots = [i for i in range(self.max_users) if sim.users[i] is not None]
        labels = [f"{i}:{sim.users[i].name}" for i in slots]
        cpu = [self._last_alloc[i] * sim.xi_hat[i] for i in slots]
        gpu = [self._last_alloc[i] * (1 - sim.xi_hat[i]) for i in slots]
        ax.bar(labels, cpu, label="CPU GFLOPS")
        ax.bar(labels, gpu, bottom=cpu, label="GPU GFLOPS")
        ax.set_ylabel("allocation (GFLOPS)")
        ax.set_ylim(0, 1.1 * max([c + g for c, g in zip(cpu, gpu)] + [1e-9]))  # every bar whole, with headroom
        legend_outside(ax)  # beside the axes: never over a bar
        ax.tick_params(axis="x", labelsize=7, rotation=45)
        ax2 = axes[0, 1]
        if self._history:
            hist = np.array(self._history)
            ax2.plot(hist[:, 0], hist[:, 1], label="U_cpu")
            ax2.plot(hist[:, 0], hist[:, 2], label="U_gpu")
            legend_outside(ax2)
        ax2.set_ylim(0, 1.1)  # a line at full utilisation stays inside the axes
        ax2.set_xlabel("time (s)")
        ax2.set_ylabel("utilisation")
        fig.suptitle(f"EMRF ({self.action_mode}), t = {sim.time:.1f} s", fontsize=9)
        fig.tight_layout()
        return fig
