"""ETF reference policies and the paper's pure algorithms (ETF paper §4, §6; ``docs/families/etf.md``).

The algorithms live with the simulator (:mod:`joulegym.envs.etf.allocation`, which the envs use)
and are re-exported here, the place users look for them::

    from joulegym.baselines.etf import etf_allocate, etf_waterfill, phi_fair

Policies (``joulegym.baselines.make(name, **kw)``):

==================  ============================================================================
``etf``             Algorithm 1 at the scenario's phi (or ``phi=``). The paper's scheduler.
``tf``              time fairness, Algorithm 1 at phi = 1 (paper baseline 1).
``ef``              energy fairness, Algorithm 1 at phi = 0 (paper baseline 2, Georgiou et al.).
``etf-fixed-phi``   Algorithm 1 at a fixed ``phi`` (default 0.7), ignoring the scenario's phi.
``epoch-max-fs``    the allocation maximising each epoch's F_S (:func:`oracle_max_fs`) from Algorithm
                    1's own inputs: exact over whole units by enumeration, under the env's action
                    floor and demand caps; on ``ETFPhi`` the phi level with the best F_S. Deployable
                    (it reads what ETF reads) and greedy per epoch, so not an upper bound of the
                    episode's F_S. Formerly ``fs-oracle``, a name now refused.
``max-frequency``   ``ETFDVFS``: the tenant always runs at the top level (the paper's default).
``best-response``   ``ETFDVFS``: the tenant's throughput-maximising level by enumeration (privileged).
``random``          uniform random action (generic).
==================  ============================================================================

Every policy is ``reset(env, seed)`` and ``act(obs, info)`` (:class:`joulegym.core.policy.Policy`). On
``ETF-v0`` and ``ETFPhi-v0`` they read ``info["scheduler_inputs"]`` where the env gives it (``info_level="full"``:
Algorithm 1's exact inputs; the ETF policy's action then reproduces Algorithm 1 bit for bit) and otherwise decode
the observation (the lean default info), which carries the same inputs: the active set, demands and Algorithm
1's guarantee exactly, weights and powers as float32 ratios. From the observation alone ETF is still Algorithm 1
exactly (ties included) unless two weighted energies differ by less than :data:`DECODE_RTOL` (relative) without
being equal. Decisions are cached by the content of those inputs (:class:`joulegym.core.cache.BoundedCache`, or of
the observation features they come from): the same app set recurs across epochs, phi levels and resets.
"""

from __future__ import annotations

from itertools import product
from typing import Any

import gymnasium as gym
import numpy as np
from scipy.optimize import linprog

from joulegym.core.cache import BoundedCache
from joulegym.core.policy import PolicyNotApplicable, register_policy, register_rename
from joulegym.envs.etf.allocation import (
    algorithm1_fill,
    energy_fair_allocation,
    etf_allocate,
    etf_waterfill,
    guaranteed_units,
    largest_remainder,
    phi_fair,
    time_fair_allocation,
    units_to_action,
)
from joulegym.envs.etf.env import SLOT_FEATURES
from joulegym.envs.etf.metrics import (
    energy_fairness,
    jain_index,
    power_disparity,
    system_fairness,
    time_fairness,
)

__all__ = [
    "DECODE_RTOL",
    "BestResponsePolicy",
    "ETFPolicy",
    "EpochMaxFSPolicy",
    "MaxFrequencyPolicy",
    "algorithm1_decoded",
    "energy_fair_allocation",
    "energy_fairness",
    "etf_allocate",
    "etf_waterfill",
    "guarantee_decoded",
    "guaranteed_units",
    "inputs_from_observation",
    "jain_index",
    "largest_remainder",
    "oracle_max_fs",
    "oracle_max_fs_units",
    "phi_fair",
    "power_disparity",
    "system_fairness",
    "time_fair_allocation",
    "time_fairness",
    "units_to_action",
]

ENUMERATION_LIMIT = 200_000  # compositions checked exhaustively by the F_S oracle


# --- pure functions ----------------------------------------------------------------------------------
def oracle_max_fs(weights, power, T: float, lower=None, upper=None, tol: float = 1e-9) -> tuple[np.ndarray, float]:
    """Continuous allocation maximising F_S = min(F_T, F_E), by bisection on x in [0, 1].

    Each step is an LP feasibility check: ``t >= 0`` (or ``>= lower``), ``t <= upper``, ``sum t = T``,
    ``t_i/w_i >= x t_j/w_j`` and ``P_i t_i/w_i >= x P_j t_j/w_j`` for all i != j.
    Returns ``(t, F_S)``.
    """
    w = np.asarray(weights, dtype=float)
    p = np.asarray(power, dtype=float)
    n = w.size
    lo_b = np.zeros(n) if lower is None else np.asarray(lower, dtype=float)
    hi_b = np.full(n, float(T)) if upper is None else np.minimum(np.asarray(upper, dtype=float), T)
    total = min(float(T), float(hi_b.sum()))
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]

    def feasible(x: float) -> np.ndarray | None:
        rows = []
        for i, j in pairs:
            for scale in (1.0 / w, p / w):  # time rows, then energy rows: x*s_j t_j - s_i t_i <= 0
                row = np.zeros(n)
                row[i] -= scale[i]
                row[j] += x * scale[j]
                rows.append(row)
        result = linprog(np.zeros(n), A_ub=np.array(rows) if rows else None, b_ub=np.zeros(len(rows)) if rows else None,
                         A_eq=np.ones((1, n)), b_eq=[total], bounds=list(zip(lo_b, hi_b, strict=True)),
                         method="highs")
        return result.x if result.status == 0 else None

    best = feasible(0.0)
    if best is None:
        raise ValueError("oracle_max_fs: the bounds admit no allocation summing to T")
    low, high = 0.0, 1.0
    top = feasible(1.0)
    if top is not None:
        return top, 1.0
    while high - low > tol:
        mid = 0.5 * (low + high)
        x = feasible(mid)
        if x is None:
            high = mid
        else:
            low, best = mid, x
    return best, float(system_fairness(best, p * best, w))


def oracle_max_fs_units(weights, demands, power, T: int, lower=None) -> np.ndarray:
    """Whole units maximising F_S under ``lower <= t <= min(d, T)`` and ``sum t = min(T, sum caps)``.

    Exhaustive over the compositions when there are at most :data:`ENUMERATION_LIMIT`; otherwise the
    continuous optimum of :func:`oracle_max_fs` rounded by largest remainder. Ties go to the first
    composition in lexicographic order.
    """
    w = np.asarray(weights, dtype=float)
    p = np.asarray(power, dtype=float)
    upper = np.minimum(np.asarray(demands, dtype=float), T).astype(np.int64)
    low = np.zeros(w.size, dtype=np.int64) if lower is None else np.asarray(lower, dtype=np.int64)
    total = int(min(T, upper.sum()))
    candidates = _compositions(low, upper, total)
    if candidates is None:
        t, _ = oracle_max_fs(w, p, T, lower=low, upper=upper)
        return low + largest_remainder(t - low, total - int(low.sum()), caps=upper - low)
    tn = candidates / w
    en = candidates * (p / w)
    f_t = _rowwise_ratio(tn)
    f_e = _rowwise_ratio(en)
    return candidates[int(np.argmax(np.minimum(f_t, f_e)))]


def _rowwise_ratio(values: np.ndarray) -> np.ndarray:
    high = values.max(axis=1)
    return np.where(high > 0, values.min(axis=1) / np.where(high > 0, high, 1.0), 1.0)


def _compositions(low: np.ndarray, high: np.ndarray, total: int) -> np.ndarray | None:
    """All integer vectors ``low <= t <= high`` with ``sum t = total`` (None if too many)."""
    n = low.size
    if n == 1:
        return np.array([[total]], dtype=np.int64) if low[0] <= total <= high[0] else np.zeros((0, 1), np.int64)
    spans = [range(int(low[k]), int(high[k]) + 1) for k in range(n - 1)]
    count = int(np.prod([len(s) for s in spans])) if spans else 1
    if count > ENUMERATION_LIMIT:
        return None
    head = np.array(list(product(*spans)), dtype=np.int64).reshape(-1, n - 1)
    last = total - head.sum(axis=1)
    ok = (last >= low[-1]) & (last <= high[-1])
    return np.column_stack([head[ok], last[ok]])


# Relative distance under which two weighted energies decoded from a float32 observation are a tie.
# Each decoded w_i/W and P_i/P_max carries a relative error <= 2**-24, so a ratio t*P/w is off by
# <= ~1.2e-7 and the gap between two equal ones is <= ~2.4e-7; 5e-7 leaves a 2x margin, and gaps of
# more than ~7.4e-7 are still resolved (e.g. whole-mW powers: >= 1/(T x max mW x max weight)).
DECODE_RTOL = 5e-7


def inputs_from_observation(obs: np.ndarray, max_apps: int, T: int, project: bool) -> dict[str, Any]:
    """Algorithm 1's inputs decoded from an ETF observation (layout: :mod:`joulegym.envs.etf.env`).

    Exact: the active set, the demands (whole units < T, or backlogged) and Algorithm 1's guarantee at
    the env's phi (feature 4, in units). Relative to float32: the weights ``w_i/W`` and powers
    ``P_i/P_max`` (Algorithm 1 is scale-invariant, so it depends on nothing else). ``project`` says whether the
    env's action floor is the guarantee (``guarantee_mode="project"``) or zero.
    """
    slots = np.asarray(obs, dtype=float)[: max_apps * SLOT_FEATURES].reshape(max_apps, SLOT_FEATURES)
    active = slots[:, 0] > 0.5
    guarantee = np.where(active, np.round(slots[:, 4] * T), 0).astype(np.int64)
    return {
        "active": active,
        "weights": np.where(active & (slots[:, 1] > 0), slots[:, 1], 1.0),
        "power_w": np.where(active & (slots[:, 2] > 0), slots[:, 2], 1.0),
        "demand_units": np.where(slots[:, 3] >= 1.0, np.inf, np.round(slots[:, 3] * T)),
        "guarantee_units": guarantee,
        "action_floor_units": guarantee if project else np.zeros(max_apps, dtype=np.int64),
        "T_units": T,
        "phi": float(obs[max_apps * SLOT_FEATURES]),
    }


def algorithm1_decoded(weights: np.ndarray, demands: np.ndarray, power: np.ndarray, T: int,
                       guarantee: np.ndarray, rtol: float = DECODE_RTOL) -> np.ndarray:
    """Algorithm 1 on inputs decoded from a float32 observation, given its line-1 guarantee.

    :func:`~joulegym.envs.etf.allocation.algorithm1_fill` with the wider tie tolerance ``rtol``: float32
    round-off must not break Algorithm 1's exact ties (with P = 1 and 3 W, ``3 x 1`` and ``1 x 3`` decode
    as 1.0 and 1.00000003). Equal to :func:`etf_allocate` on the exact inputs unless two weighted
    energies differ by less than ``rtol`` (relative) without being equal, which float32 cannot resolve.
    """
    return algorithm1_fill(weights, demands, power, T, guarantee, tie_rtol=rtol)


def guarantee_decoded(weights: np.ndarray, demands: np.ndarray, T: int, phi: float,
                      rtol: float = DECODE_RTOL) -> np.ndarray:
    """Algorithm 1 line 1, ``min(floor(phi*w_i*T/W), d_i)``, from float32-decoded weights.

    A share within ``rtol`` (relative) below a whole number is taken as that number: float32 weights
    would otherwise floor 1/3 x 30 = 10 to 9.
    """
    share = phi * weights / weights.sum() * T
    return np.minimum(np.floor(share + rtol * np.maximum(share, 1.0)), np.floor(demands)).astype(np.int64)


# --- policies ------------------------------------------------------------------------------------
def _content_key(*parts: Any) -> tuple | None:
    """A hashable cache key from ``parts`` (``None`` if a part is unhashable, e.g. a user's list)."""
    try:
        hash(parts)
    except TypeError:
        return None
    return parts


class _ETFPolicyBase:
    """Shared plumbing: bind to an ETF env of the right action modes; read Algorithm 1's inputs."""

    privileged = False
    modes: tuple[str, ...] = ("split", "phi")

    def __init__(self, name: str) -> None:
        self.name = name
        self._base: Any = None
        self._cache: BoundedCache[Any] = BoundedCache()

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        base = env.unwrapped
        mode = getattr(base, "action_mode", None)
        if getattr(base, "family", None) != "etf" or mode not in self.modes:
            raise PolicyNotApplicable(f"policy {self.name!r} drives the ETF action modes {self.modes}, not "
                                      f"{getattr(base, 'kind', type(base).__name__)}")
        if base is not self._base:  # the keys hold every input, so one env's decisions stay valid across resets
            self._cache.clear()
        self._base, self._mode = base, mode

    def _inputs(self, obs: np.ndarray, info: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Algorithm 1's inputs and whether they are exact (from info) or decoded from the observation."""
        inputs = info.get("scheduler_inputs") if info else None
        if inputs is not None:
            return inputs, True
        base = self._base
        return inputs_from_observation(obs, base.max_apps, base.T, project=base.uses_guarantee), False

    @staticmethod
    def _arrays(inputs: dict[str, Any]) -> dict[str, Any]:
        """The per-slot inputs as numpy arrays (the env passes tuples)."""
        out = dict(inputs)
        out["active"] = np.asarray(inputs["active"], dtype=bool)
        for key in ("weights", "power_w", "demand_units"):
            out[key] = np.asarray(inputs[key], dtype=float)
        for key in ("guarantee_units", "action_floor_units"):
            out[key] = np.asarray(inputs[key], dtype=np.int64)
        return out

    def _cached(self, key: tuple | None, compute):
        return compute() if key is None else self._cache.get_or_compute(key, compute)


class ETFPolicy(_ETFPolicyBase):
    """Algorithm 1 at ``phi`` (``None``: the env's phi). ``tf``/``ef`` are phi = 1 / 0.

    ``split``: the action whose units are Algorithm 1's (bit for bit); ``phi``: the level nearest to ``phi``
    (``None``: the env's nominal phi).
    """

    def __init__(self, phi: float | None = None, name: str = "etf") -> None:
        super().__init__(name)
        try:
            value = None if phi is None else float(phi)
        except (TypeError, ValueError):
            value = float("nan")
        if value is not None and not 0.0 <= value <= 1.0:
            raise ValueError(f"phi must be in [0, 1] or None, got {phi!r}")
        self.phi = value

    def act(self, obs: np.ndarray, info: dict[str, Any]):
        if not (info and "scheduler_inputs" in info):
            return self._act_on_observation(obs)
        inputs, _ = self._inputs(obs, info)
        if self._mode == "phi":
            phi = self.phi if self.phi is not None else inputs.get("nominal_phi", inputs["phi"])
            return self._base.action_type.level_of(phi)
        phi = self.phi if self.phi is not None else inputs["phi"]
        key = _content_key(inputs["active"], inputs["weights"], inputs["power_w"], inputs["demand_units"],
                           inputs["action_floor_units"], inputs["T_units"], phi)
        return self._cached(key, lambda: self._exact_action(inputs, phi))

    def _exact_action(self, inputs: dict[str, Any], phi: float) -> np.ndarray:
        inputs = self._arrays(inputs)
        act = inputs["active"]
        units = np.zeros(act.size, dtype=np.int64)
        if act.any():
            units[act] = etf_allocate(inputs["weights"][act], inputs["demand_units"][act], inputs["power_w"][act],
                                      inputs["T_units"], phi)
        return units_to_action(units, inputs["action_floor_units"], act)

    def _act_on_observation(self, obs: np.ndarray):
        """The action from the observation alone (the lean info), cached by the features it reads: slot features
        0-4 and phi (the same app set recurs across epochs and resets)."""
        base = self._base
        obs = np.asarray(obs)
        head = base.max_apps * SLOT_FEATURES
        obs_phi = float(obs[head])
        phi = self.phi if self.phi is not None else obs_phi
        if self._mode == "phi":
            return base.action_type.level_of(phi)
        key = ("obs", obs[:head].reshape(base.max_apps, SLOT_FEATURES)[:, :5].tobytes(), obs.dtype.str, obs_phi, phi)
        return self._cached(key, lambda: self._decoded_action(
            inputs_from_observation(obs, base.max_apps, base.T, project=base.uses_guarantee), phi))

    def _decoded_action(self, inputs: dict[str, Any], phi: float) -> np.ndarray:
        act = inputs["active"]
        units = np.zeros(act.size, dtype=np.int64)
        if act.any():
            w, d, p, T = inputs["weights"][act], inputs["demand_units"][act], inputs["power_w"][act], inputs["T_units"]
            same_phi = abs(phi - inputs["phi"]) <= DECODE_RTOL
            guarantee = inputs["guarantee_units"][act] if same_phi else guarantee_decoded(w, d, T, phi)
            units[act] = algorithm1_decoded(w, d, p, T, guarantee)
        return units_to_action(units, inputs["action_floor_units"], act)


class EpochMaxFSPolicy(_ETFPolicyBase):
    """Maximises each epoch's F_S from Algorithm 1's inputs: exact over whole units (``split``) or over the phi
    grid (``phi``). Deployable, and greedy per epoch (not an upper bound of the episode's F_S)."""

    def __init__(self, name: str = "epoch-max-fs") -> None:
        super().__init__(name)

    def act(self, obs: np.ndarray, info: dict[str, Any]):
        inputs, exact = self._inputs(obs, info)
        levels = int(self._base.action_space.n) if self._mode == "phi" else 0
        if not exact:
            return self._decide(self._arrays(inputs), levels)
        # phi: the decision does not depend on the action floor (the guarantee at the last phi chosen)
        floor = inputs["action_floor_units"] if self._mode == "split" else None
        key = _content_key(self._mode, levels, inputs["active"], inputs["weights"], inputs["power_w"],
                           inputs["demand_units"], floor, inputs["T_units"])
        return self._cached(key, lambda: self._decide(self._arrays(inputs), levels))

    def _decide(self, inputs: dict[str, Any], levels: int):
        act = inputs["active"]
        w, d, p = inputs["weights"][act], inputs["demand_units"][act], inputs["power_w"][act]
        T = inputs["T_units"]
        if self._mode == "phi":
            if not act.any():
                return 0
            scores = []
            for level in range(levels):
                units = etf_allocate(w, d, p, T, level / (levels - 1))
                scores.append(system_fairness(units, units * p, w))
            return int(np.argmax(scores))
        units = np.zeros(act.size, dtype=np.int64)
        if act.any():
            units[act] = oracle_max_fs_units(w, d, p, T, lower=inputs["action_floor_units"][act])
        return units_to_action(units, inputs["action_floor_units"], act)


class MaxFrequencyPolicy:
    """``ETFDVFS``: always the top frequency level (the paper's default operating point)."""

    privileged = False

    def __init__(self, name: str = "max-frequency") -> None:
        self.name = name
        self._top = 0

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        if getattr(env.unwrapped, "action_mode", None) != "dvfs":
            raise PolicyNotApplicable(f"policy {self.name!r} drives ETFDVFS (action_mode='dvfs') only")
        self._top = int(env.action_space.n) - 1

    def act(self, obs: np.ndarray, info: dict[str, Any]) -> int:
        return self._top


class BestResponsePolicy:
    """``ETFDVFS``: the tenant's level maximising its reward this epoch (``reward_weights`` of ``throughput``
    and ``power``), by enumeration over the levels under the env's fixed scheduler.

    Privileged: it reads the tenant's profile table and the fixed scheduler from the env's simulator.
    """

    privileged = True

    def __init__(self, name: str = "best-response") -> None:
        self.name = name
        self._base: Any = None
        self._cache: BoundedCache[int] = BoundedCache()

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        base = env.unwrapped
        if getattr(base, "action_mode", None) != "dvfs":
            raise PolicyNotApplicable(f"policy {self.name!r} drives ETFDVFS (action_mode='dvfs') only")
        if base is not self._base:
            self._cache.clear()
        self._base = base
        self._weights = tuple(base.reward_weights)  # (throughput, power)

    def act(self, obs: np.ndarray, info: dict[str, Any]) -> int:
        base = self._base
        sim = base.sim
        slot = base.tenant_slot
        key = (tuple(sim.active), tuple(sim.weight), tuple(sim.demand_units), slot, sim.apps[sim.slot_app[slot]],
               tuple(p for k, p in enumerate(sim.power_w) if k != slot), base.scheduler_phi, base.T, self._weights)
        return self._cache.get_or_compute(key, self._best_level)

    def _best_level(self) -> int:
        base, sim = self._base, self._base.sim
        slot = base.tenant_slot
        act = np.array(sim.active, dtype=bool)
        app = sim.apps[sim.slot_app[slot]]
        w_throughput, w_power = self._weights
        weight = np.array(sim.weight)
        best, best_value = 0, -np.inf
        for level, freq in enumerate(base.levels_mhz):
            service_s, power_w = sim.tenant_profile(app, freq)
            power = np.array(sim.power_w)
            power[slot] = power_w
            demand = np.array(sim.demand_units)
            demand[slot] = sim.demand_for(app, service_s)
            units = np.zeros(sim.max_apps, dtype=np.int64)
            units[act] = etf_allocate(weight[act], demand[act], power[act], base.T, base.scheduler_phi)
            share = units[slot] / base.T
            value = w_throughput * (share / service_s) - w_power * share * power[slot]
            if value > best_value + 1e-12:
                best, best_value = level, value
        return best


def _register() -> None:
    kinds = ("ETF", "ETFPhi")
    register_policy("etf", ETFPolicy, family="etf", kinds=kinds,
                    description="ETF Algorithm 1 at the scenario's phi (or phi=)")
    register_policy("tf", lambda **kw: ETFPolicy(phi=1.0, name="tf", **kw), family="etf", kinds=kinds,
                    description="time fairness (Algorithm 1, phi = 1)")
    register_policy("ef", lambda **kw: ETFPolicy(phi=0.0, name="ef", **kw), family="etf", kinds=kinds,
                    description="energy fairness (Algorithm 1, phi = 0)")
    register_policy("etf-fixed-phi", lambda phi=0.7, **kw: ETFPolicy(phi=phi, name="etf-fixed-phi", **kw),
                    family="etf", kinds=kinds, description="Algorithm 1 at a fixed phi (default 0.7)")
    register_policy("epoch-max-fs", EpochMaxFSPolicy, family="etf", kinds=kinds,
                    description="maximises each epoch's F_S from Algorithm 1's inputs (exact over units / over the "
                                "phi grid); greedy per epoch, not an upper bound")
    register_rename("fs-oracle", "epoch-max-fs", family="etf")
    register_policy("max-frequency", MaxFrequencyPolicy, family="etf", kinds=("ETFDVFS",),
                    description="tenant always at its top GPU level")
    register_policy("best-response", BestResponsePolicy, family="etf", kinds=("ETFDVFS",),
                    description="tenant's reward-maximising level by enumeration (privileged)")


_register()
