"""``joulegym/EMRF-v0`` and its action-mode kinds: sharing a coupled CPU-GPU APU (Tang et al.; docs/families/emrf.md).

Up to ``max_users`` users (apps with CPU fraction xi, weight w, job queues) share an APU of
``(C_cpu, C_gpu)`` GFLOPS (:mod:`~joulegym.envs.emrf.simulator`, over the array core
:mod:`~joulegym.envs.emrf.batch`). Each decision step is one scheduling
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

                    Decoding an action gives the window's allocation rule
                    (:class:`~joulegym.envs.emrf.rules.AllocationRule`: active slots -> F per slot). On an event inside the window (completion, departure,
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
Info                (one structure per key for the whole episode, reset included) ``allocation`` (F
                    per slot at the window start), ``delivered`` (mean GFLOPS per slot over the
                    window), ``utilisation`` / ``U_cpu`` / ``U_gpu``, ``soft_fairness`` (Δ),
                    ``delta_bound`` (δ(η_target), Theorem 1 corrected), ``si_violations`` (users with
                    F_i < S_i), ``ef_violations`` (envious pairs), ``reference_allocations`` (what each
                    reference policy would allocate now: ``emrf`` (η_target), ``drf``,
                    ``drf-progressive``, ``wfq``, ``static-partition`` (S scaled until a device
                    saturates), ``max-utilisation`` (EMRF at η = 0); and ``fair-share`` S; tuples per
                    slot; always a :class:`ReferenceAllocations`), ``scheduler_inputs`` (exact inputs
                    for reference policies; tuples per slot), ``eta`` (η used), ``eta_target``,
                    ``arrivals_joined`` / ``arrivals_waited`` (users that got work inside the window
                    and joined at once / waited; ``arrivals_readmitted``: waiting users that joined
                    later in the window). The core adds ``reward_parts``, ``repaired`` (always False:
                    every action in the space is valid) and ``metrics`` (episode end).
==================  ==========================================================================

Invalid actions (wrong shape, NaN, out of bounds, junk types) raise ``ValueError`` naming the action
space (docs page, assumption A19).

Version history (the dynamics, rewards and observations of every id are those of v0 throughout):

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
from joulegym.core.env import JoulegymEnv
from joulegym.core.plotting import new_figure
from joulegym.core.rewards import RewardPart, RewardSpec
from joulegym.envs.emrf.allocation import basics, drf_progressive_core, emrf_core
from joulegym.envs.emrf.config import EMRFSetup
from joulegym.envs.emrf.episodes import GLOBAL_FEATURES, SLOT_FEATURES
from joulegym.envs.emrf.rules import AllocationRule, KnobRule, ResidualRule, SlicedRule, WeightsRule
from joulegym.envs.emrf.simulator import EMRFSimulator
from joulegym.workloads.rodinia import DEFAULT_SOLO_SECONDS, MIXES, RANDOM_MIX

__all__ = ["GLOBAL_FEATURES", "SLOT_FEATURES", "AllocationRule", "EMRFEnv", "ReferenceAllocations"]

REFERENCE_KEYS = ("emrf", "drf", "drf-progressive", "wfq", "static-partition", "max-utilisation", "fair-share")
FLOOR_LAMBDA = 50.0  # λ of the floor preset (docs/families/emrf.md, assumption A10)
SCALARIZED_BETA = 0.5  # β of the scalarized preset
ROW = slice(0, 1)  # the single env is row 0 of a batch of one


def _spread(active: tuple[int, ...], values, n: int) -> tuple[float, ...]:
    """Per-active-user ``values`` as a per-slot tuple of length ``n`` (0 for the other slots)."""
    out = [0.0] * n
    for k, i in enumerate(active):
        out[i] = values[k]
    return tuple(out)


class ReferenceAllocations(Mapping):
    """``info["reference_allocations"]``: what each reference policy would allocate now, per slot.

    Every entry is computed on first access (most training loops never read them) and then kept; the object holds
    plain data, so it pickles (vector envs). It is the type of this info key at every step, also when no user has
    work (all zeros).
    """

    __slots__ = ("_active", "_eta", "_inst", "_n", "_solver", "_tie_break", "_values")

    def __init__(self, inst: tuple | None, active: tuple[int, ...], n: int, eta: float, tie_break: str,
                 solver: str) -> None:
        self._inst, self._active, self._n, self._eta = inst, active, n, eta
        self._tie_break, self._solver = tie_break, solver
        self._values: dict[str, tuple[float, ...]] = {}

    def __getitem__(self, key: str) -> tuple[float, ...]:
        value = self._values.get(key)
        if value is None:
            if key not in REFERENCE_KEYS:
                raise KeyError(key)
            value = self._values[key] = self._compute(key)
        return value

    def _compute(self, key: str) -> tuple[float, ...]:
        n, active, inst = self._n, self._active, self._inst
        if inst is None:
            return (0.0,) * n
        _, share, fmax, _, _ = basics(*inst)
        xi, w = inst[2], inst[3]

        def saturating(omega) -> list[float]:  # omega scaled until the first device saturates (weights mode)
            t = 1.0 / max(sum(o * x for o, x in zip(omega, xi)) / inst[0],
                          sum(o * (1.0 - x) for o, x in zip(omega, xi)) / inst[1])
            return [o * t for o in omega]

        if key == "emrf":
            alloc = emrf_core(*inst, self._eta, self._tie_break, self._solver)[0]
        elif key == "max-utilisation":
            alloc = emrf_core(*inst, 0.0, self._tie_break, self._solver)[0]
        elif key == "drf-progressive":
            alloc = drf_progressive_core(*inst)
        else:
            alloc = {"drf": fmax, "wfq": saturating(w), "static-partition": saturating(share),
                     "fair-share": share}[key]
        return _spread(active, alloc, n)

    def __iter__(self):
        return iter(REFERENCE_KEYS)

    def __len__(self) -> int:
        return len(REFERENCE_KEYS)


def _default_apps() -> list[dict]:
    mix = MIXES["M1"]
    return [{"app": a, "weight": w} for a, w in zip(mix.apps, mix.weights)]


# --- action types -------------------------------------------------------------------------------------
class _EMRFAction(ActionType):
    """Decode = validate the action, build the window's rule (:mod:`~joulegym.envs.emrf.rules`) over the env's one
    row, and route it through Alg. 1's discrete scheduler when ``task_gflop`` is set."""

    env: EMRFEnv

    def decode(self, action: Any) -> AllocationRule:
        rule = self._fluid(action)
        task = self.env.config["task_gflop"]
        return rule if task is None else SlicedRule(rule, task, self.env.config["strict_stop"])

    def _fluid(self, action: Any) -> AllocationRule:  # pragma: no cover - every mode overrides
        raise NotImplementedError


class WeightsAction(_EMRFAction):
    """``weights``: ω in ``Box(0, 1, (max_users,))``; F = ω t*, the first device saturating."""

    name = "weights"

    def __init__(self, env: EMRFEnv) -> None:
        super().__init__(env)
        self.space = gym.spaces.Box(0.0, 1.0, (env.max_users,), dtype=np.float32)

    def _fluid(self, action: Any) -> AllocationRule:
        env = self.env
        return WeightsRule(np.array([validated_box_list(action, self.space)]), env.eta_target, env.sim.batch)

    def encode(self, allocation: Any) -> np.ndarray:
        """ω = F / max F for an allocation per slot (0 on inactive slots): reproduces any saturating F."""
        f = np.asarray(allocation, dtype=float)
        top = float(f.max()) if f.size else 0.0
        return f / top if top > 0 else np.zeros_like(f)


class ResidualWeightsAction(WeightsAction):
    """``residual_weights``: F = η_target F^max + ω t', t' saturating the first device of C'."""

    name = "residual_weights"

    def _fluid(self, action: Any) -> AllocationRule:
        env = self.env
        return ResidualRule(np.array([validated_box_list(action, self.space)]), env.eta_target, env.sim.batch)

    def encode(self, allocation: Any) -> np.ndarray:
        """ω = F'/max F' with F' = F - η_target F^max over the current active users."""
        env = self.env
        f = np.asarray(allocation, dtype=float)
        episodes = env.sim.episodes
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            episodes.derive(ROW)
        floor = np.where(episodes.d_act[0], episodes.d_fmax[0] * env.eta_target, 0.0)
        return super().encode(np.maximum(f - floor, 0.0))


class KnobAction(_EMRFAction):
    """``knob``: η of this window in ``Box(0, 1, (1,))``; F = EMRF(η)."""

    name = "knob"

    def __init__(self, env: EMRFEnv) -> None:
        super().__init__(env)
        self.space = gym.spaces.Box(0.0, 1.0, (1,), dtype=np.float32)

    def _fluid(self, action: Any) -> AllocationRule:
        env = self.env
        eta = validated_box_list(action, self.space)[0]
        return KnobRule(eta, env.config["tie_break"], env.config["lp_solver"], env.sim.batch)

    def encode(self, eta: float) -> np.ndarray:
        """The action for knob value ``eta``."""
        return np.array([float(eta)])


class KnobDiscreteAction(_EMRFAction):
    """``knob_discrete``: η = level / (knob_levels - 1), ``Discrete(knob_levels)``; every level is valid."""

    name = "knob_discrete"

    def __init__(self, env: EMRFEnv) -> None:
        super().__init__(env)
        self.space = gym.spaces.Discrete(env.config["knob_levels"])

    def _fluid(self, action: Any) -> AllocationRule:
        env = self.env
        eta = validated_discrete_action(action, self.space) / (self.space.n - 1)
        return KnobRule(eta, env.config["tie_break"], env.config["lp_solver"], env.sim.batch)

    def encode(self, eta: float) -> int:
        """The level nearest to ``eta``."""
        return round(float(eta) * (self.space.n - 1))


ACTION_TYPES: dict[str, type[ActionType]] = {"weights": WeightsAction, "residual_weights": ResidualWeightsAction,
                                             "knob": KnobAction, "knob_discrete": KnobDiscreteAction}


class EMRFEnv(JoulegymEnv):
    """EMRF APU-sharing env; see the module docstring for spaces, reward and termination."""

    family: ClassVar[str] = "emrf"
    action_types: ClassVar[Mapping[str, type[ActionType]]] = ACTION_TYPES
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
        self.setup = setup = EMRFSetup(self.config)
        cfg = self.config
        self.capacities, self.c_tot = setup.capacities, setup.c_tot
        self.max_users, self.horizon = setup.max_users, setup.horizon
        self.sim = EMRFSimulator(self.capacities, self.max_users, cfg["window_s"], self.horizon,
                                 xi_noise=cfg["xi_noise"], admit_at_window=cfg["admit_at_window"],
                                 weight_unit=setup.weight_unit, keep_history=True)
        n = self.max_users
        self.observation_space = gym.spaces.Box(0.0, 1.0, (n * SLOT_FEATURES + GLOBAL_FEATURES,), dtype=np.float32)
        self.eta_target = cfg["eta"]
        self._obs = np.zeros((1, n * SLOT_FEATURES + GLOBAL_FEATURES), dtype=np.float32)

    def _reward_spec(self) -> RewardSpec:
        """The three parts with their per-step bounds (module docstring, "Reward parts").

        ``soft_fairness`` lies in [-1, 0] while the active set and xi stay as decided; an arrival of a
        lighter user inside the window or measurement noise can push Δ/(W/min w) above 1, never above
        ``max_users (w_max / w_min) C_tot / min_d C_d`` (F_i <= C_tot, m_i <= 1 / min_d C_d, W/w_i <=
        max_users w_max / w_min, W/min w >= 1), the declared lower bound.
        """
        weights = self.setup.config_weights()
        spread = max(weights) / min(weights)
        low = -self.max_users * spread * self.c_tot / min(self.capacities)
        efficiency, soft, floor = self.reward_parts
        parts = (efficiency, RewardPart(soft.name, low, soft.high, soft.description), floor)
        return RewardSpec(parts, self.reward_presets)

    def _active_slots(self) -> tuple[int, ...]:
        """Active slots at the current decision point."""
        return tuple(np.flatnonzero(self.sim.episodes.decision_active(0)).tolist())

    def allocation_for(self, action: Any) -> np.ndarray:
        """The allocation (GFLOPS per slot) ``action`` gives the current active set (no state change)."""
        return np.array(self.action_type.decode(action)(self._active_slots()))

    # --- episode --------------------------------------------------------------------------------------
    def _begin_episode(self, options: dict[str, Any]) -> None:
        self.eta_target = self.setup.draw_eta(self.np_random)
        self.sim.eta_target = self.eta_target
        self.sim.reset(self.np_random, self.setup.draw_users(self.np_random))

    def _transition(self, rule: AllocationRule) -> tuple[float, float, float]:
        sim = self.sim
        sim.apply(rule)
        sim.advance()
        return tuple(sim.last_parts.tolist())

    def _terminated(self) -> bool:
        return self.sim.done

    def _truncated(self) -> bool:
        return self.sim.truncated

    # --- observation and info ---------------------------------------------------------------------------
    def _observe(self) -> np.ndarray:
        self.sim.episodes.observe(ROW, self._obs)
        return self._obs[0].copy()

    def scheduler_inputs(self) -> dict[str, Any]:
        """Exact inputs of the reference algorithms for the current window (tuples per slot)."""
        batch = self.sim.batch
        return {"capacities": self.capacities, "xi_cpu": tuple(batch.xi_hat[0].tolist()),
                "weights": tuple((batch.weight[0] / batch.weight_unit).tolist()),  # as the allocations use them
                "active": tuple(self.sim.episodes.decision_active(0).tolist()), "eta": self.eta_target,
                "tie_break": self.config["tie_break"], "lp_solver": self.config["lp_solver"],
                "action_mode": self.action_mode, "knob_levels": self.config["knob_levels"]}

    def reference_allocations(self) -> ReferenceAllocations:
        """What each reference policy (and the fair share S) allocates to the current active set."""
        active = self._active_slots()
        batch = self.sim.batch
        inst = None
        if active:
            xi, w = batch.xi_hat[0].tolist(), batch.w[0].tolist()
            inst = (*self.capacities, tuple(xi[i] for i in active), tuple(w[i] for i in active))
        return ReferenceAllocations(inst, active, self.max_users, self.eta_target, self.config["tie_break"],
                                    self.config["lp_solver"])

    def _extra_info(self) -> dict[str, Any]:
        """The per-step info keys (module docstring, "Info"); the same keys and types at reset and every step."""
        episodes, batch = self.sim.episodes, self.sim.batch
        joined, waited, readmitted = batch.arrival_counts[0].tolist()
        util_cpu, util_gpu = batch.util_cpu[0].item(), batch.util_gpu[0].item()
        return {
            "allocation": episodes.last_alloc[0].copy(),
            "delivered": batch.last_rates[0].copy(),  # zeros after reset
            "utilisation": np.array((util_cpu, util_gpu)),
            "U_cpu": util_cpu, "U_gpu": util_gpu,
            "soft_fairness": episodes.last_delta[0].item(), "delta_bound": episodes.last_bound[0].item(),
            "si_violations": episodes.last_si[0].item(), "ef_violations": episodes.last_ef[0].item(),
            "eta": episodes.last_eta[0].item(), "eta_target": float(self.eta_target),
            "arrivals_joined": joined, "arrivals_waited": waited, "arrivals_readmitted": readmitted,
            "scheduler_inputs": self.scheduler_inputs(),
            "reference_allocations": self.reference_allocations(),
        }

    def metrics(self) -> dict[str, Any]:
        """The paper's metrics over the episode so far (docs/families/emrf.md §2 "Metrics")."""
        return self.sim.episodes.metrics(0)

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
            f = self.sim.episodes.last_alloc[0, i].item()
            x = sim.xi_hat[i]
            active = sim.present[i] and sim.queue[i] > 0
            lines.append(f"{i:>4} {user.name:>6} {'*' if active else ' ':>3} {x:>7.3f} {sim.weight[i]:>5g} "
                         f"{f:>9.2f} {f * x:>8.2f} {f * (1 - x):>8.2f} {sim.remaining_fraction(i):>5.2f}")
        lines.append(f"U_cpu={sim.last_utilisation[0]:.3f} U_gpu={sim.last_utilisation[1]:.3f}")
        return "\n".join(lines)

    def _render_figure(self):
        sim = self.sim
        fig, axes = new_figure(1, 2, size=(9.0, 3.4))
        ax = axes[0, 0]
        slots = [i for i in range(self.max_users) if sim.users[i] is not None]
        labels = [f"{i}:{sim.users[i].name}" for i in slots]
        last_alloc = self.sim.episodes.last_alloc[0]
        cpu = [last_alloc[i] * sim.xi_hat[i] for i in slots]
        gpu = [last_alloc[i] * (1 - sim.xi_hat[i]) for i in slots]
        ax.bar(labels, cpu, label="CPU GFLOPS")
        ax.bar(labels, gpu, bottom=cpu, label="GPU GFLOPS")
        ax.set_ylabel("allocation (GFLOPS)")
        ax.legend(fontsize=7)
        ax.tick_params(axis="x", labelsize=7, rotation=45)
        ax2 = axes[0, 1]
        history = sim.episodes.history[0]
        if history:
            hist = np.array(history)
            ax2.plot(hist[:, 0], hist[:, 1], label="U_cpu")
            ax2.plot(hist[:, 0], hist[:, 2], label="U_gpu")
            ax2.legend(fontsize=7)
        ax2.set_ylim(0, 1.05)
        ax2.set_xlabel("time (s)")
        ax2.set_ylabel("utilisation")
        fig.suptitle(f"EMRF ({self.action_mode}), t = {sim.time:.1f} s", fontsize=9)
        fig.tight_layout()
        return fig
