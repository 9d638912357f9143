"""What the trade-off fronts sweep, per family, as data (docs/tradeoffs.md).

Each family's paper argues a trade-off between what the scheduler spends and what it delivers, with a knob for it:
ETF's phi (Algorithm 1: phi = 1 time fairness, phi = 0 energy fairness; paper §4), PowerFlow's eta (the cluster
power budget as a fraction of peak, paper §6), EMRF's eta (the soft-fairness degree, paper §V), DREAM's (alpha,
beta) (MapScore's urgency and energy weights, paper §3.5, Eq. 5) and Qin's focus (performance / energy / EDP, paper
§4). A :class:`TradeOff` names a family's two objectives (each an episode metric of ``info["metrics"]`` with its
direction) and the :class:`Sweep` of every policy that has a knob: the front is made of every deployable reference
policy at its defaults plus every swept setting, on the family's headline scenarios and held-out test seeds.

``scenarios`` may name a subset of the benchmark's headline scenarios when the whole set would take the
``evaluate.py --suite --pareto`` run past its budget of 15 CPU-minutes; ``reduced_why`` then says which were left
out and what they cost (the page prints it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class Objective:
    """One axis of a front: an ``info["metrics"]`` key at the episode's end and its direction."""

    key: str
    label: str
    minimise: bool


@dataclass(frozen=True)
class Sweep:
    """A policy run at several settings of one knob.

    :param policy: reference-policy name (the family's registry).
    :param knob: the setting's name (a policy keyword argument, or an env config key when ``env`` is set).
    :param values: the settings; a tuple value sets several keyword arguments (``knob`` names them joined by ``,``).
    :param env: the knob is a scenario config key (``gym.make`` kwarg) rather than a policy keyword argument.
    """

    policy: str
    knob: str
    values: tuple[Any, ...]
    env: bool = False

    def settings(self) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        """``(label, policy kwargs, env kwargs)`` per value."""
        names = self.knob.split(",")
        out = []
        for value in self.values:
            values = value if isinstance(value, tuple) else (value,)
            kwargs = dict(zip(names, values, strict=True))
            shown = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in kwargs.items())
            label = f"{self.policy}({shown})"
            out.append((label, {} if self.env else kwargs, kwargs if self.env else {}))
        return out


@dataclass(frozen=True)
class TradeOff:
    """A family's trade-off: its two objectives, the sweeps, and the scenarios the front runs on.

    :param energy: the spending axis (energy, or what the paper trades against performance).
    :param performance: the delivering axis.
    :param knob: one sentence: what the paper's knob does (the page prints it).
    :param sweeps: the policies with a knob and their settings.
    :param skip: reference policies left out of the front, each with why (e.g. an offline grid search per episode).
    :param scenarios: the headline scenarios to run (``()``: all the benchmark's).
    :param reduced_why: why ``scenarios`` is a subset (required when it is).
    :param reward_parts: the (energy, performance) reward parts of the benchmark's kind a weight-conditioned agent
        weighs (:mod:`joulegym.evaluation.mo_agents`).
    """

    energy: Objective
    performance: Objective
    knob: str
    sweeps: tuple[Sweep, ...]
    skip: Mapping[str, str] = field(default_factory=dict)
    scenarios: tuple[str, ...] = ()
    reduced_why: str = ""
    reward_parts: tuple[str, str] | tuple[()] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "skip", MappingProxyType(dict(self.skip)))
        if self.scenarios and not self.reduced_why.strip():
            raise ValueError("a TradeOff that runs a subset of the headline scenarios needs reduced_why")

    @property
    def objectives(self) -> tuple[Objective, Objective]:
        return self.energy, self.performance


REFERENCE_POINT = (1.1, 1.1)  # hypervolume reference in the normalised frame: 10 % beyond the worst deployable anchor
WEIGHT_PARTITIONS = 100  # expected utility over 101 weight vectors (w, 1 - w), w = 0, 0.01, ..., 1
BOOTSTRAP_RESAMPLES = 500  # percentile bootstrap over the test seeds

UNIT = tuple(round(0.1 * i, 1) for i in range(11))  # 0, 0.1, ..., 1

TRADEOFFS: dict[str, TradeOff] = {
    "etf": TradeOff(
        energy=Objective("energy_fairness", "energy fairness F_E", minimise=False),
        performance=Objective("time_fairness", "time fairness F_T", minimise=False),
        reward_parts=("energy_fairness", "time_fairness"),
        knob="phi weighs time fairness against energy fairness in Algorithm 1 (phi = 1: equal time shares, TF; "
             "phi = 0: equal energy shares, EF; the paper's default 0.7).",
        sweeps=(Sweep("etf", "phi", UNIT),)),
    "powerflow": TradeOff(
        energy=Objective("total_energy_kwh", "energy (kWh)", minimise=True),
        performance=Objective("avg_jct_h", "average JCT (h)", minimise=True),
        reward_parts=("energy", "jct"),
        knob="eta is the cluster's power budget as a fraction of its peak draw (paper §6: PL = eta G P_max); a "
             "tighter budget (eta below the scenario's 0.6) keeps the scenario's rule and lowers frequencies. The "
             "energy-unaware baselines run every GPU at one fixed frequency (f_mhz, the Fig. 7 sweep) and the Zeus "
             "variants choose per-job frequencies with eta_z weighing energy against time (Zeus, NSDI 2023, Eq. 2).",
        sweeps=(Sweep("powerflow", "eta", (0.4, 0.5), env=True),
                Sweep("fifo", "f_mhz", (945.0, 1245.0)),
                Sweep("gandiva-zeus", "zeus_eta", (0.25, 0.75)))),
    "emrf": TradeOff(
        energy=Objective("soft_fairness", "soft-fairness degree Delta (lower: fairer)", minimise=True),
        performance=Objective("mean_efficiency", "mean efficiency E", minimise=False),
        reward_parts=("soft_fairness", "efficiency"),
        knob="eta is the soft-fairness degree of the allocation (paper §V: eta = 0 maximises throughput, eta = 1 "
             "is strict dominant-resource fairness); the front is the paper's throughput-fairness curve (Fig. 7). "
             "EMRF has no energy model: its spending axis is fairness.",
        sweeps=(Sweep("emrf", "eta", UNIT),)),
    "dream": TradeOff(
        energy=Objective("overall_norm_energy", "normalised energy", minimise=True),
        performance=Objective("overall_rate_dlv", "deadline-violation rate", minimise=True),
        reward_parts=("energy", "dlv"),
        knob="MapScore's alpha weighs a frame's urgency and beta its energy preference (paper §3.5, Eq. 5); "
             "UXCost is their product's outcome (violation rate x normalised energy, Alg. 2).",
        sweeps=(Sweep("mapscore-fixed", "alpha,beta",
                      ((0.5, 0.5), (0.5, 1.0), (0.5, 2.0), (1.0, 0.5), (1.0, 2.0), (2.0, 0.5), (2.0, 1.0),
                       (2.0, 2.0))),),
        skip={"grid-optimal": "an offline grid search of 81 whole episodes per episode (privileged); 81 times the "
                              "cost of every other point"},
        scenarios=("ar-call", "drone-outdoor"),
        reduced_why="DREAM's front runs on ar-call and drone-outdoor, its two cheapest headline workloads (0.8 and "
                    "1.5 CPU-s per episode of its best heuristic); vr-gaming, ar-social, drone-indoor and random-mix "
                    "cost 9.7, 5.3, 2.7 and 8.8 CPU-s per episode, so the same sweep on all six workloads would take "
                    "about 70 CPU-minutes (12 times the 5.7 CPU-minutes of the two), past the run's 15-minute "
                    "budget."),
    "qin": TradeOff(
        energy=Objective("energy_j", "energy (J)", minimise=True),
        performance=Objective("makespan_s", "makespan (s)", minimise=True),
        reward_parts=("energy", "makespan"),
        knob="focus picks the node level's objective (paper §4: performance, energy or EDP); the registered "
             "qin-perf, qin-energy and qin-edp policies are the three settings, so no extra sweep is needed.",
        sweeps=()),
}


def tradeoff(family: str) -> TradeOff:
    """The family's trade-off record.

    :raises ValueError: for a family without one.
    """
    if family not in TRADEOFFS:
        raise ValueError(f"family {family!r} has no trade-off record (joulegym.evaluation.tradeoffs.TRADEOFFS "
                         f"covers {sorted(TRADEOFFS)})")
    return TRADEOFFS[family]
