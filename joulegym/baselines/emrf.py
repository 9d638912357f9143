"""EMRF reference policies and the paper's pure algorithms (EMRF paper §III, §V; docs/families/emrf.md §8).

The algorithms live with the simulator (:mod:`joulegym.envs.emrf.allocation`) and are re-exported
here, where users look for them::

    from joulegym.baselines.emrf import emrf_allocate, drf_allocate, wfq_allocate, delta_bound

Policies (``joulegym.baselines.make(name, family="emrf", **kw)``; each has only ``reset(env, seed)`` and
``act(obs, info)``):

====================  ============================================================================
``emrf``              EMRF(eta) (§V; ``eta=None``: the env's eta_target; ``tie_break=None``: the
                      env's; the LP is solved by the env's ``lp_solver``, closed form by default).
                      Drives every action mode: ``weights`` ω = F*/max F*, ``residual_weights``
                      ω = F'/max F' (only at the env's eta_target), ``knob`` [eta], ``knob_discrete``
                      the level of eta (eta must be on the grid).
``drf``               DRF of Eq. (8) (first saturated device stops it), ``weights`` mode only.
``drf-progressive``   extension (erratum E3): progressive-filling DRF that keeps filling users
                      not blocked by the saturated device; ``weights`` mode only.
``wfq``               §III proportional sharing (ω = w), ``weights`` mode only.
``static-partition``  ω ∝ S_i: the non-sharing partition's proportions, scaled by the ``weights``
                      mode until a device saturates (so F_i >= S_i: SI by construction). The literal
                      F = S leaves capacity idle and no action mode expresses it (every mode
                      saturates a device); ``weights`` mode only.
``max-utilisation``   EMRF at eta = 0 (maximum total GFLOPS; not in the paper): ``weights``, ``knob``,
                      ``knob_discrete``.
``random``            uniform random action (generic).
====================  ============================================================================

Policies read ``info["scheduler_inputs"]`` (exact xi_hat, weights, capacities, eta; never
``info["metrics"]``; ``info_level="full"``), else the same inputs from the bound env's ``scheduler_inputs()``,
and given ``info=None`` decode the observation (float32 xi_hat, w/W, C_cpu/C_tot, eta_target: allocations are
scale-free, so the action is the same up to float32 round-off). They are not
privileged: every input is in the observation. Actions are float64 so that the reference allocation is
reproduced to machine precision.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from joulegym.core.policy import PolicyNotApplicable, register_policy
from joulegym.envs.emrf.allocation import (
    EMRFSolution,
    EMRFSolverError,
    algorithm1_allocate,
    as_instance,
    basics,
    check_eta,
    delta_bound,
    device_usage,
    dominant_coefficients,
    drf_allocate,
    drf_progressive_allocate,
    emrf_allocate,
    emrf_core,
    emrf_solve,
    envy_free_violations,
    envy_pairs,
    fair_share,
    is_feasible,
    jain_index,
    mu,
    pareto_efficient,
    residual_capacity,
    saturated_devices,
    sharing_incentive_eta,
    sharing_incentive_violations,
    soft_fairness_degree,
    solo_allocation,
    static_partition,
    utilisation,
    wfq_allocate,
)
from joulegym.envs.emrf.env import GLOBAL_FEATURES, SLOT_FEATURES

__all__ = [
    "DRFPolicy",
    "DRFProgressivePolicy",
    "EMRFPolicy",
    "EMRFSolution",
    "EMRFSolverError",
    "MaxUtilisationPolicy",
    "StaticPartitionPolicy",
    "WFQPolicy",
    "algorithm1_allocate",
    "allocation_to_action",
    "as_instance",
    "check_eta",
    "delta_bound",
    "device_usage",
    "dominant_coefficients",
    "drf_allocate",
    "drf_progressive_allocate",
    "emrf_allocate",
    "emrf_solve",
    "envy_free_violations",
    "envy_pairs",
    "fair_share",
    "is_feasible",
    "jain_index",
    "mu",
    "pareto_efficient",
    "residual_capacity",
    "saturated_devices",
    "sharing_incentive_eta",
    "sharing_incentive_violations",
    "soft_fairness_degree",
    "solo_allocation",
    "static_partition",
    "utilisation",
    "wfq_allocate",
]

ETA_GRID_TOL = 1e-9  # an eta counts as on the knob_discrete grid within this distance


def decode_observation(obs: np.ndarray, max_users: int) -> dict[str, Any]:
    """Scheduler inputs from an EMRF observation (float32; capacities up to scale)."""
    obs = np.asarray(obs, dtype=float)
    slots = obs[: max_users * SLOT_FEATURES].reshape(max_users, SLOT_FEATURES)
    glob = obs[max_users * SLOT_FEATURES: max_users * SLOT_FEATURES + GLOBAL_FEATURES]
    c_cpu = float(glob[4])
    return {"capacities": (c_cpu, 1.0 - c_cpu), "xi_cpu": slots[:, 1].copy(),
            "weights": np.maximum(slots[:, 2], 1e-12), "active": slots[:, 0] > 0.5, "eta": float(glob[0])}


def allocation_to_action(allocation, eta_floor_alloc=None) -> np.ndarray:
    """``weights`` action ω = F/max F (``residual_weights``: pass ``eta F^max`` to get F'/max F')."""
    f = np.asarray(allocation, dtype=float)
    if eta_floor_alloc is not None:
        f = np.maximum(f - np.asarray(eta_floor_alloc, dtype=float), 0.0)
    top = float(f.max()) if f.size else 0.0
    return f / top if top > 0 else np.zeros_like(f)


class _EMRFFamilyPolicy:
    """Shared plumbing: bind to an EMRF env, read the scheduler inputs, map an allocation to the action."""

    privileged = False
    modes: tuple[str, ...] = ("weights",)

    def __init__(self, name: str) -> None:
        self.name = name
        self._env: gym.Env | None = None
        self._mode = "weights"
        self._max_users = 0
        self._levels = 11
        self._tie_break = "lexmaxmin"
        self._lp_solver = "closed-form"

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        base = env.unwrapped
        if getattr(base, "family", None) != "emrf":
            raise PolicyNotApplicable(f"policy {self.name!r} drives EMRF envs only, not {type(base).__name__}")
        mode = base.action_mode
        if mode not in self.modes:
            raise PolicyNotApplicable(f"policy {self.name!r} cannot drive action_mode={mode!r}; it drives {self.modes}")
        self._env = env
        self._mode = mode
        self._max_users = base.max_users
        self._levels = int(base.config["knob_levels"])
        self._tie_break = base.config["tie_break"]  # used when act() gets no info (observation decoding)
        self._lp_solver = base.config["lp_solver"]
        self._check(base)

    def _check(self, base) -> None:
        """Further applicability checks (raise PolicyNotApplicable)."""

    def _inputs(self, obs, info: dict[str, Any] | None) -> dict[str, Any]:
        """The exact inputs: the info's (``info_level="full"``), else the bound env's ``scheduler_inputs()`` (the
        same measured quantities a deployed EMRF reads); ``info=None``: decoded from the observation alone."""
        if self._env is None:
            raise RuntimeError(f"{type(self).__name__}.act() called before reset(env)")
        inputs = info.get("scheduler_inputs") if info else None
        if inputs is None and info is not None:
            inputs = self._env.unwrapped.scheduler_inputs()
        return inputs if inputs is not None else decode_observation(obs, self._max_users)

    def _target(self, c, xi, w, eta: float, tie_break: str, solver: str) -> tuple[float, ...]:
        raise NotImplementedError

    def act(self, obs, info: dict[str, Any]):
        inp = self._inputs(obs, info)
        if self._mode.startswith("knob"):
            return self._knob_action(inp)
        n = self._max_users
        mask = inp["active"]
        active = [i for i in range(n) if mask[i]]
        action = np.zeros(n)
        if not active:
            return action
        c = (float(inp["capacities"][0]), float(inp["capacities"][1]))
        xi = tuple(float(inp["xi_cpu"][i]) for i in active)
        w = tuple(float(inp["weights"][i]) for i in active)
        eta_env = float(inp["eta"])
        target = self._target(c, xi, w, eta_env, inp.get("tie_break", self._tie_break),
                              inp.get("lp_solver", self._lp_solver))
        if self._mode == "residual_weights":  # omega = F' / max F'
            fmax = basics(*c, xi, w)[2]
            target = [max(f - eta_env * m, 0.0) for f, m in zip(target, fmax)]
        top = max(target)
        if top > 0:
            for k, i in enumerate(active):
                action[i] = target[k] / top
        return action

    def _knob_action(self, inp):  # pragma: no cover - only knob-capable policies override
        raise PolicyNotApplicable(f"policy {self.name!r} has no knob action")


class EMRFPolicy(_EMRFFamilyPolicy):
    """EMRF(eta) with the LP tie-break ``tie_break`` (Eq. (10), erratum E2; module docstring for the modes)."""

    modes = ("weights", "residual_weights", "knob", "knob_discrete")

    def __init__(self, eta: float | None = None, tie_break: str | None = None, name: str = "emrf") -> None:
        super().__init__(name)
        self.eta = None if eta is None else check_eta(eta)
        if tie_break is not None and tie_break not in ("lexmaxmin", "vertex"):
            raise ValueError(f"tie_break={tie_break!r} is not one of ('lexmaxmin', 'vertex')")
        self.tie_break = tie_break

    def _check(self, base) -> None:
        cfg = base.config
        env_etas = cfg["eta_choices"] or [cfg["eta"]]
        mode = self._mode
        if mode == "residual_weights" and self.eta is not None and any(abs(e - self.eta) > 0 for e in env_etas):
            raise PolicyNotApplicable(
                f"residual_weights fixes the floor at the env's eta_target {env_etas}; EMRF(eta={self.eta}) "
                "cannot be expressed (use eta=None)")
        if mode in ("knob", "knob_discrete") and self.tie_break not in (None, cfg["tie_break"]):
            raise PolicyNotApplicable(f"the knob env solves EMRF with tie_break={cfg['tie_break']!r}, "
                                      f"not {self.tie_break!r}")
        if mode == "knob_discrete":
            for eta in [self.eta] if self.eta is not None else env_etas:
                level = eta * (self._levels - 1)
                if abs(level - round(level)) > ETA_GRID_TOL:
                    raise PolicyNotApplicable(f"eta={eta} is not a level of knob_discrete ({self._levels} levels)")

    def _eta(self, inp) -> float:
        return float(inp["eta"]) if self.eta is None else self.eta

    def _target(self, c, xi, w, eta_env, tie, solver):
        return emrf_core(*c, xi, w, self._eta({"eta": eta_env}), self.tie_break or tie, solver)[0]

    def _knob_action(self, inp):
        eta = self._eta(inp)
        if self._mode == "knob":
            return np.array([eta])
        return round(eta * (self._levels - 1))


class MaxUtilisationPolicy(EMRFPolicy):
    """EMRF at eta = 0: maximum total GFLOPS (the LP of Eqs. (15)-(17) over the whole APU)."""

    modes = ("weights", "knob", "knob_discrete")

    def __init__(self, tie_break: str | None = None) -> None:
        super().__init__(eta=0.0, tie_break=tie_break, name="max-utilisation")


class DRFPolicy(_EMRFFamilyPolicy):
    """DRF of Eq. (8): F_i^max = w_i / (D m_i)."""

    def __init__(self) -> None:
        super().__init__("drf")

    def _target(self, c, xi, w, eta_env, tie, solver):
        return basics(*c, xi, w)[2]


class DRFProgressivePolicy(_EMRFFamilyPolicy):
    """Progressive-filling DRF (extension; :func:`drf_progressive_allocate`)."""

    def __init__(self) -> None:
        super().__init__("drf-progressive")

    def _target(self, c, xi, w, eta_env, tie, solver):
        return tuple(drf_progressive_allocate(c, xi, w).tolist())


class WFQPolicy(_EMRFFamilyPolicy):
    """§III proportional sharing: ω = w (the weights mode's t* saturates the first device)."""

    def __init__(self) -> None:
        super().__init__("wfq")

    def _target(self, c, xi, w, eta_env, tie, solver):
        return w


class StaticPartitionPolicy(_EMRFFamilyPolicy):
    """ω ∝ S_i (the non-sharing partition, scaled until a device saturates; module docstring)."""

    def __init__(self) -> None:
        super().__init__("static-partition")

    def _target(self, c, xi, w, eta_env, tie, solver):
        return basics(*c, xi, w)[1]


ALL_KINDS = ("EMRF", "EMRFResidual", "EMRFKnob", "EMRFKnobDiscrete")
register_policy("emrf", EMRFPolicy, family="emrf", kinds=ALL_KINDS,
                description="EMRF(eta) (paper §V): eta F^max fairness floor + efficiency LP; eta=None: env's")
register_policy("drf", DRFPolicy, family="emrf", kinds=("EMRF",),
                description="weighted DRF of Eq. (8), stops at the first saturated device")
register_policy("drf-progressive", DRFProgressivePolicy, family="emrf", kinds=("EMRF",),
                description="extension: progressive-filling DRF (fills users the saturated device does not block)")
register_policy("wfq", WFQPolicy, family="emrf", kinds=("EMRF",),
                description="weighted proportional sharing of total GFLOPS (paper §III WFQ)")
register_policy("static-partition", StaticPartitionPolicy, family="emrf", kinds=("EMRF",),
                description="weights proportional to the non-sharing fair shares S_i (SI reference)")
register_policy("max-utilisation", MaxUtilisationPolicy, family="emrf", kinds=("EMRF", "EMRFKnob", "EMRFKnobDiscrete"),
                description="EMRF at eta = 0: maximum total GFLOPS")
