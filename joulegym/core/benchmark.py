"""A family's leaderboard benchmark, as data on its :class:`~joulegym.core.family.FamilyDescriptor`
(docs/architecture.md, "Policies and families").

A :class:`Benchmark` names what ``evaluate.py --suite`` runs and how it ranks: the headline scenarios (the paper's
main experiments plus one generalisation scenario whose instances are drawn at every reset), the env kind they run
on, the ranking metric (the paper's own, a linear combination of ``info["metrics"]`` keys) and its direction, the
held-out evaluation seeds, the training budget of an agent, and per scenario the best published heuristic, which
anchors the normalised score (random = 0, that heuristic = 1; Agarwal et al., NeurIPS 2021, "Deep RL at the edge
of the statistical precipice", §4, normalise per task before aggregating).

Seeds: ``train.py`` seeds are small integers (below :data:`TRAINING_SEED_LIMIT`); evaluation seeds are at or above
it, so an agent is never scored on an episode it was trained on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from joulegym.core.config import Scenario

TRAINING_SEED_LIMIT = 10_000  # train.py seeds are < this; held-out evaluation seeds are >= this
MIN_EVAL_SEEDS = 10  # held-out seeds per scenario: at least 10 (the leaderboard's rule)
DEFAULT_EVAL_SEEDS = tuple(range(TRAINING_SEED_LIMIT, TRAINING_SEED_LIMIT + MIN_EVAL_SEEDS))
DEFAULT_TRAINING_BUDGET_S = 3600.0  # one CPU-hour per agent (the leaderboard's rule)
DEFAULT_QUICK_SEEDS = 2  # --quick: the first two held-out seeds


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
    :param heuristics: the family's published policies (the paper's algorithm and its baselines), checked
        against ``best_heuristic``; oracles and ``random`` are not published heuristics.
    :param eval_seeds: held-out evaluation seeds (>= 10, all >= :data:`TRAINING_SEED_LIMIT`).
    :param training_budget_s: CPU seconds an agent may train for (one CPU-hour by default).
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
    eval_seeds: tuple[int, ...] = DEFAULT_EVAL_SEEDS
    training_budget_s: float = DEFAULT_TRAINING_BUDGET_S
    quick_scenarios: tuple[str, ...] = ()
    quick_seeds: int = DEFAULT_QUICK_SEEDS
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "scenarios", tuple(self.scenarios))
        object.__setattr__(self, "eval_seeds", tuple(int(s) for s in self.eval_seeds))
        object.__setattr__(self, "heuristics", tuple(self.heuristics))
        object.__setattr__(self, "quick_scenarios", tuple(self.quick_scenarios) or self.scenarios[:1])
        object.__setattr__(self, "metric_terms", MappingProxyType(dict(self.metric_terms)))
        object.__setattr__(self, "best_heuristic", MappingProxyType(dict(self.best_heuristic)))
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
        if not (math.isfinite(self.training_budget_s) and self.training_budget_s > 0):
            raise ValueError(f"benchmark training_budget_s must be > 0, got {self.training_budget_s}")
        if not set(self.quick_scenarios) <= set(self.scenarios):
            raise ValueError(f"benchmark quick_scenarios {list(self.quick_scenarios)} must be among "
                             f"{list(self.scenarios)}")
        if not 1 <= self.quick_seeds <= len(self.eval_seeds):
            raise ValueError(f"benchmark quick_seeds must be in [1, {len(self.eval_seeds)}], got {self.quick_seeds}")

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
