"""A family's leaderboard benchmark, as data on its :class:`~joulegym.core.family.FamilyDescriptor`
(docs/leaderboard.md).

A :class:`Benchmark` names what ``evaluate.py --suite`` runs and how it ranks: the headline scenarios (the paper's
main experiments plus one generalisation scenario whose instances are drawn at every reset), the env kind they run
on, the ranking metric (the paper's own, a linear combination of ``info["metrics"]`` keys) and its direction, the
held-out evaluation seeds, the training budget of an agent, and the rules and yardsticks of the verdict:

- **classes**: every deployable reference policy is a published ``heuristic`` or a simple ``baseline`` (the
  record's two lists; ``random`` is always a baseline); a policy whose ``privileged`` flag is set is an upper
  bound whatever the lists say, ranked apart and never an anchor;
- **anchors**: per scenario the ``zero`` (the family's simple deployable baseline) and the ``one`` (the best
  deployable published heuristic, ``best_heuristic``) of the normalised score, each with the reason it was chosen
  (``zero_why``, ``one_why``); Agarwal et al., NeurIPS 2021, "Deep RL at the edge of the statistical precipice",
  §4: normalise per task before aggregating;
- **rules**: the scenario's configuration binds every policy; a policy's ``env_config`` may set only the keys in
  ``policy_settings`` (parts of what its system is, e.g. Gandiva's placement rule), never a budget, what is
  observable or a profiling cost; ``budget`` names the episode metrics that show the scenario's budget was kept;
- **aggregate**: ``not_aggregated`` names, each with its reason, the scenarios whose anchor gap is no meaningful unit
  for the family's mean normalised score; they are still run and required for a policy to be ranked, and shown with
  their raw metrics, scores and paired differences (docs/leaderboard.md, "Scenarios outside the aggregate").

Seeds: ``train.py`` seeds are small integers (below :data:`TRAINING_SEED_LIMIT`); the training protocol keeps its
training seeds below :data:`VALIDATION_SEED_BASE` and selects models on the validation seeds
(:data:`DEFAULT_VALIDATION_SEEDS`, 9000-9009); evaluation seeds are at or above :data:`TRAINING_SEED_LIMIT`, so an
agent is never scored on an episode it was trained or selected on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from joulegym.core.config import Scenario

TRAINING_SEED_LIMIT = 10_000  # train.py seeds are < this; held-out evaluation seeds are >= this
MIN_EVAL_SEEDS = 10  # the leaderboard's rule: >= 10 held-out seeds per scenario (docs/leaderboard.md)
DEFAULT_EVAL_SEEDS = tuple(range(TRAINING_SEED_LIMIT, TRAINING_SEED_LIMIT + MIN_EVAL_SEEDS))
DEFAULT_TRAINING_BUDGET_S = 3600.0  # 1 CPU-hour per training run (docs/leaderboard.md)
DEFAULT_QUICK_SEEDS = 2  # --quick: the first two held-out seeds
VALIDATION_SEED_BASE = 9_000  # the training protocol's model-selection seeds: 9000-9009; its training seeds are below
DEFAULT_VALIDATION_SEEDS = tuple(range(VALIDATION_SEED_BASE, VALIDATION_SEED_BASE + MIN_EVAL_SEEDS))


@dataclass(frozen=True)
class Benchmark:
    """What the leaderboard runs for one family and how it ranks.

    :param kind: the env kind (id stem, e.g. ``"ETF"``) whose scenario ids the suite runs.
    :param scenarios: headline scenario names, in display order.
    :param generalisation: the scenario (one of ``scenarios``) whose instances are randomised at every reset.
    :param metric: the ranking metric's display name (``"F_S"``).
    :param metric_terms: ``{info["metrics"] key: weight}``; the metric is their weighted sum at the episode's end.
    :param higher_is_better: the metric's direction.
    :param best_heuristic: scenario -> the published heuristic (a reference-policy name of the family) that
        scores 1; the suite flags it when another published heuristic does better on the evaluated seeds.
    :param heuristics: the family's published deployable policies (the paper's algorithm and the systems it compares
        with), checked against ``best_heuristic``; oracles and ``random`` are not published heuristics.
    :param baselines: the family's simple deployable policies that are not published (FIFO, round-robin,
        least-loaded, random dispatch, ...: what a practitioner tries first); ``random`` is added.
    :param zero: scenario -> the simple deployable baseline that scores 0 (a name for every scenario, or one name).
    :param zero_why: why that baseline is the zero (shown on the page).
    :param one_why: why ``best_heuristic`` is the one (shown on the page).
    :param policy_settings: the env config keys a policy's ``env_config`` may set (parts of what its system is);
        every other key is the scenario's and binds every policy.
    :param privileged_settings: scenario keys a ``privileged`` policy may also set, to see what a deployed system
        cannot (Qin's ``size_estimate="profiled"``): what makes it an upper bound, ranked apart.
    :param budget: ``(used, limit, rtol)``: the ``info["metrics"]`` keys of the episode's peak draw and of the
        scenario's budget, and the relative tolerance of the env's enforcement; ``None``: no budget.
    :param zoo_algo: the algorithm the zoo ships for this family (``train.py --help`` and the docs name it).
    :param eval_seeds: held-out evaluation seeds (>= 10, all >= :data:`TRAINING_SEED_LIMIT`).
    :param validation_seeds: the training protocol's model-selection seeds (>= 10, in
        [:data:`VALIDATION_SEED_BASE`, :data:`TRAINING_SEED_LIMIT`)).
    :param training_budget_s: training CPU seconds per training run of an agent (one CPU-hour).
    :param not_aggregated: scenario -> why its anchor gap is no meaningful unit for the family's mean normalised score
        (left out of that mean and of the normalised paired differences only; every scenario stays required).
    :param quick_scenarios: the subset ``--quick`` runs (default: the first scenario).
    :param quick_seeds: how many of ``eval_seeds`` ``--quick`` uses.
    :param note: one or two sentences: why these scenarios and this metric (shown on the page).
    """

    kind: str
    scenarios: tuple[str, ...]
    generalisation: str
    metric: str
    metric_terms: Mapping[str, float]
    higher_is_better: bool
    best_heuristic: Mapping[str, str]
    heuristics: tuple[str, ...] = ()
    baselines: tuple[str, ...] = ()
    zero: Mapping[str, str] | str = "random"
    zero_why: str = ""
    one_why: str = ""
    policy_settings: tuple[str, ...] = ()
    privileged_settings: tuple[str, ...] = ()
    budget: tuple[str, str, float] | None = None
    zoo_algo: str = ""
    eval_seeds: tuple[int, ...] = DEFAULT_EVAL_SEEDS
    validation_seeds: tuple[int, ...] = DEFAULT_VALIDATION_SEEDS
    training_budget_s: float = DEFAULT_TRAINING_BUDGET_S
    not_aggregated: Mapping[str, str] = field(default_factory=dict)
    quick_scenarios: tuple[str, ...] = ()
    quick_seeds: int = DEFAULT_QUICK_SEEDS
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "scenarios", tuple(self.scenarios))
        object.__setattr__(self, "eval_seeds", tuple(int(s) for s in self.eval_seeds))
        object.__setattr__(self, "heuristics", tuple(self.heuristics))
        object.__setattr__(self, "baselines", tuple(dict.fromkeys((*self.baselines, "random"))))
        object.__setattr__(self, "policy_settings", tuple(self.policy_settings))
        object.__setattr__(self, "privileged_settings", tuple(self.privileged_settings))
        object.__setattr__(self, "validation_seeds", tuple(int(s) for s in self.validation_seeds))
        zero = {s: self.zero for s in self.scenarios} if isinstance(self.zero, str) else dict(self.zero)
        object.__setattr__(self, "zero", MappingProxyType(zero))
        object.__setattr__(self, "quick_scenarios", tuple(self.quick_scenarios) or self.scenarios[:1])
        object.__setattr__(self, "metric_terms", MappingProxyType(dict(self.metric_terms)))
        object.__setattr__(self, "best_heuristic", MappingProxyType(dict(self.best_heuristic)))
        object.__setattr__(self, "not_aggregated", MappingProxyType(dict(self.not_aggregated)))
        if not self.scenarios or len(set(self.scenarios)) != len(self.scenarios):
            raise ValueError(f"benchmark scenarios must be a non-empty list of distinct names, got {self.scenarios}")
        if self.generalisation not in self.scenarios:
            raise ValueError(f"benchmark generalisation={self.generalisation!r} must be one of {list(self.scenarios)}")
        if set(self.best_heuristic) != set(self.scenarios):
            raise ValueError(f"benchmark best_heuristic must name one policy per scenario {list(self.scenarios)}, "
                             f"got keys {sorted(self.best_heuristic)}")
        if self.heuristics and not set(self.best_heuristic.values()) <= set(self.heuristics):
            raise ValueError(f"benchmark best_heuristic {sorted(set(self.best_heuristic.values()))} must be among "
                             f"heuristics {list(self.heuristics)}")
        if not self.metric_terms or not all(isinstance(k, str) and k for k in self.metric_terms):
            raise ValueError(f"benchmark metric_terms must map info['metrics'] keys to weights, got "
                             f"{dict(self.metric_terms)}")
        if not all(isinstance(w, int | float) and math.isfinite(w) and w != 0 for w in self.metric_terms.values()):
            raise ValueError("benchmark metric_terms weights must be finite and non-zero, got "
                             f"{dict(self.metric_terms)}")
        if len(set(self.eval_seeds)) != len(self.eval_seeds) or len(self.eval_seeds) < MIN_EVAL_SEEDS:
            raise ValueError(f"benchmark eval_seeds must be >= {MIN_EVAL_SEEDS} distinct seeds, got {self.eval_seeds}")
        if min(self.eval_seeds) < TRAINING_SEED_LIMIT:
            raise ValueError(f"benchmark eval_seeds must be >= {TRAINING_SEED_LIMIT} (held out from training seeds), "
                             f"got {min(self.eval_seeds)}")
        self._check_classes()
        seeds = self.validation_seeds
        if len(set(seeds)) != len(seeds) or len(seeds) < MIN_EVAL_SEEDS or not (
                VALIDATION_SEED_BASE <= min(seeds) and max(seeds) < TRAINING_SEED_LIMIT):
            raise ValueError(f"benchmark validation_seeds must be >= {MIN_EVAL_SEEDS} distinct seeds in "
                             f"[{VALIDATION_SEED_BASE}, {TRAINING_SEED_LIMIT}), got {seeds}")
        if self.budget is not None and not (len(self.budget) == 3 and all(isinstance(k, str) and k for k in
                                                                        self.budget[:2])
                                            and isinstance(self.budget[2], int | float) and 0 <= self.budget[2] < 1):
            raise ValueError(f"benchmark budget must be (used metric key, limit metric key, rtol in [0, 1)), got "
                             f"{self.budget!r}")
        if not (math.isfinite(self.training_budget_s) and self.training_budget_s > 0):
            raise ValueError(f"benchmark training_budget_s must be > 0, got {self.training_budget_s}")
        if not set(self.quick_scenarios) <= set(self.scenarios):
            raise ValueError(f"benchmark quick_scenarios {list(self.quick_scenarios)} must be among "
                             f"{list(self.scenarios)}")
        if not 1 <= self.quick_seeds <= len(self.eval_seeds):
            raise ValueError(f"benchmark quick_seeds must be in [1, {len(self.eval_seeds)}], got {self.quick_seeds}")
        self._check_not_aggregated()

    def _check_not_aggregated(self) -> None:
        """Each left-out scenario is a headline scenario with a reason; the full run and ``--quick`` keep one."""
        unknown = sorted(set(self.not_aggregated) - set(self.scenarios))
        if unknown:
            raise ValueError(f"benchmark not_aggregated names {unknown}, which are not among scenarios "
                             f"{list(self.scenarios)}")
        unreasoned = sorted(s for s, why in self.not_aggregated.items() if not (isinstance(why, str) and why.strip()))
        if unreasoned:
            raise ValueError(f"benchmark not_aggregated {unreasoned}: each left-out scenario needs its reason (the "
                             "page shows it)")
        for label, names in (("scenarios", self.scenarios), ("quick_scenarios", self.quick_scenarios)):
            if set(names) <= set(self.not_aggregated):
                raise ValueError(f"benchmark not_aggregated leaves none of {label} {list(names)} in the family's "
                                 "normalised aggregate")

    def _check_classes(self) -> None:
        """The class lists and anchors: disjoint lists, a zero per scenario among the baselines, zero != one."""
        if set(self.zero) != set(self.scenarios):
            raise ValueError(f"benchmark zero must name one policy per scenario {list(self.scenarios)}, got keys "
                             f"{sorted(self.zero)}")
        both = sorted(set(self.heuristics) & set(self.baselines))
        if both:
            raise ValueError(f"benchmark policies {both} are listed as both heuristics and baselines (one class each)")
        if not set(self.zero.values()) <= set(self.baselines):
            raise ValueError(f"benchmark zero {sorted(set(self.zero.values()))} must be among baselines "
                             f"{list(self.baselines)} (the zero is a simple deployable baseline)")
        same = [s for s in self.scenarios if self.zero[s] == self.best_heuristic.get(s)]
        if same:
            raise ValueError(f"benchmark scenarios {same}: the zero and the one anchor are the same policy")

    def policy_class(self, name: str, privileged: bool) -> str:
        """``"privileged"``, ``"heuristic"`` or ``"baseline"`` for the reference policy ``name`` (its
        ``privileged`` flag first, then this record's lists).

        :raises ValueError: for a deployable policy in neither list (the record must classify it).
        """
        if privileged:
            return "privileged"
        if name in self.heuristics:
            return "heuristic"
        if name in self.baselines:
            return "baseline"
        raise ValueError(f"policy {name!r} is deployable (privileged=False) but neither a heuristic nor a baseline "
                         f"of the {self.kind} benchmark: add it to the family's Benchmark record "
                         f"(heuristics={list(self.heuristics)}, baselines={list(self.baselines)})")

    def check_env_config(self, name: str, env_config: Mapping[str, object] | None, privileged: bool = False) -> None:
        """``ValueError`` if policy ``name``'s ``env_config`` sets a key the scenario owns (anything but
        ``policy_settings``, and ``privileged_settings`` for a privileged policy): every deployable policy runs under
        the scenario's budget, observability and costs."""
        allowed = (*self.policy_settings, *(self.privileged_settings if privileged else ()))
        owned = sorted(set(env_config or {}) - set(allowed))
        if owned:
            raise ValueError(f"policy {name!r}: env_config sets {owned}, which the {self.kind} benchmark's scenarios "
                             f"fix for every {'' if privileged else 'deployable '}policy; it may set only "
                             f"{list(allowed)} (parts of what its system is"
                             f"{', or what makes it privileged' if privileged else ''})")

    def budget_kept(self, metrics: Mapping[str, float]) -> bool:
        """Whether an episode's final metrics keep the scenario's budget (``True`` without a budget)."""
        if self.budget is None:
            return True
        used, limit, rtol = self.budget
        return float(metrics[used]) <= float(metrics[limit]) * (1.0 + rtol)

    def check_family(self, family: str, kinds: tuple[str, ...], scenarios: Mapping[str, Scenario]) -> None:
        """``ValueError`` unless ``kind`` and every scenario belong to the family (called on registration)."""
        if self.kind not in kinds:
            raise ValueError(f"family {family!r}: benchmark kind={self.kind!r} is not one of {list(kinds)}")
        unknown = [s for s in self.scenarios if s not in scenarios]
        if unknown:
            raise ValueError(f"family {family!r}: benchmark scenarios {unknown} are unknown; "
                             f"known: {sorted(scenarios)}")
        elsewhere = [s for s in self.scenarios if not scenarios[s].applies_to(self.kind)]
        if elsewhere:
            raise ValueError(f"family {family!r}: benchmark scenarios {elsewhere} do not apply to kind {self.kind!r}")

    def value(self, metrics: Mapping[str, float]) -> float:
        """The ranking metric of one episode from its final ``info["metrics"]``.

        :raises ValueError: naming a metric key the episode did not report.
        """
        missing = [k for k in self.metric_terms if k not in metrics]
        if missing:
            raise ValueError(f"metric {self.metric!r} needs info['metrics'] keys {missing}; the episode reported "
                             f"{sorted(metrics)}")
        return float(sum(w * float(metrics[k]) for k, w in self.metric_terms.items()))

    def seeds(self, quick: bool = False) -> tuple[int, ...]:
        return self.eval_seeds[: self.quick_seeds] if quick else self.eval_seeds

    def scenario_names(self, quick: bool = False) -> tuple[str, ...]:
        return self.quick_scenarios if quick else self.scenarios

    def describe_metric(self) -> str:
        """``"F_S = system_fairness (higher is better)"``."""
        terms = " ".join(f"{'+' if w > 0 else '-'} {abs(w):g} {k}" if abs(w) != 1 else f"{'+' if w > 0 else '-'} {k}"
                         for k, w in self.metric_terms.items()).lstrip("+ ")
        return f"{self.metric} = {terms} ({'higher' if self.higher_is_better else 'lower'} is better)"
