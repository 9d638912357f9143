"""The verdict's yardsticks and paired comparisons (docs/leaderboard.md).

Per scenario a benchmark names two deployable anchors (:class:`~joulegym.core.benchmark.Benchmark`): the **zero**,
the family's simple deployable baseline, and the **one**, its best deployable published heuristic. An episode's
normalised score is measured from the zero anchor's score *on the same seed* (the same instance and the same
random draws: paired), in units of the scenario's anchor gap (the one's mean minus the zero's mean over the
evaluated seeds), signed so that higher is better::

    score(policy, seed) = s * (metric(policy, seed) - metric(zero, seed)) / |mean(one) - mean(zero)|

with ``s = +1`` for a higher-is-better metric and ``-1`` otherwise. The zero scores exactly 0 on every seed and the
one exactly 1 on average (or -1, flagged, where the simple baseline beats the heuristic), so the headline (the mean
over seeds and scenarios, each scenario weighted equally) puts the anchors at 0 and 1 by construction. A per-seed
ratio ``(x - zero_s) / (one_s - zero_s)`` is not used: the anchors tie or swap on single seeds (ETF's
``tx2-fig6-random``: every policy scores F_S 1 on seed 10002, and ``tf`` beats ``etf`` by 0.018 on seed 10009,
where the ratio would give the per-epoch optimiser -4.4).

Scenarios outside the normalised aggregate: a benchmark may declare, with its reason, a scenario whose anchor gap is no
meaningful unit for the family's mean (:attr:`~joulegym.core.benchmark.Benchmark.not_aggregated`: EMRF's
``apu-random``, where the gap measures efficiency while the spread between policies measures floor violations of
the eta draws, so the scenario would outweigh the other four together). Such a scenario is still run, still needed
for a policy to be ranked, and shown with its raw metric, normalised score and paired differences; it is left out of
the family's mean normalised score and of the normalised paired differences only. Every anchor gap is shown with
its paired-bootstrap 95 % CI, and an aggregated scenario whose gap is resolved to less than a factor of two (the
CI's lower end below half the gap) gets a note: its scores carry that uncertainty.

"Does it beat the best heuristic?" is answered per seed, paired: the difference of the ranking metric against the
reference on the same seed (per training run and seed for an agent), its mean with a percentile bootstrap 95 % CI
(:func:`scipy.stats.bootstrap`), and a win/tie/loss count. Across scenarios the differences are taken in
normalised units and the CI is the stratified bootstrap of :mod:`joulegym.evaluation.stats` (rliable's method).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from joulegym.core.benchmark import Benchmark
from joulegym.evaluation import stats

TIE_RTOL = 1e-9  # a paired difference within this fraction of the reference's magnitude (at least 1) is a tie
UNIT_RESOLUTION = 0.5  # a note when the anchor gap's 95 % CI reaches below this fraction of the gap (see above)
DEPLOYABLE = ("agent", "heuristic", "baseline")
NON_LEARNED = ("heuristic", "baseline")


def normalise(episodes: pd.DataFrame, bench: Benchmark,
              scenarios: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Add ``normalised`` (module docstring). Returns the episodes, one row of anchors per scenario (zero, one,
    their means, the gap with its paired 95 % CI, whether the one beats the zero, whether the scenario is in the
    family's normalised aggregate and why not) and notes for the page.

    :raises ValueError: if an anchor did not run on every seed, or the anchors' means are (nearly) equal.
    """
    episodes = episodes.copy()
    episodes["normalised"] = np.nan
    sign = 1.0 if bench.higher_is_better else -1.0
    anchors, notes = [], []
    for scenario in scenarios:
        here = episodes["scenario"] == scenario
        seeds = sorted(set(episodes.loc[here, "seed"]))
        zero, one = bench.zero[scenario], bench.best_heuristic[scenario]
        by_seed = {name: _by_seed(episodes[here], name, seeds, scenario) for name in (zero, one)}
        gap = float(by_seed[one].mean() - by_seed[zero].mean())
        scale = max(1.0, abs(float(by_seed[one].mean())), abs(float(by_seed[zero].mean())))
        if not np.isfinite(gap) or abs(gap) <= 1e-9 * scale:
            raise ValueError(f"scenario {scenario!r}: the zero anchor {zero!r} and the one anchor {one!r} score the "
                             f"same mean {bench.metric} ({by_seed[zero].mean():.6g}); the score cannot be normalised")
        offsets = episodes.loc[here, "seed"].map(by_seed[zero]).to_numpy(dtype=float)
        values = episodes.loc[here, "metric"].to_numpy(dtype=float)
        episodes.loc[here, "normalised"] = sign * (values - offsets) / abs(gap)
        beats = sign * gap > 0
        low, high = mean_ci((by_seed[one] - by_seed[zero]).loc[seeds].to_numpy(dtype=float))
        why_not = bench.not_aggregated.get(scenario, "")
        anchors.append({"scenario": scenario, "zero": zero, "one": one, "zero_mean": float(by_seed[zero].mean()),
                        "one_mean": float(by_seed[one].mean()), "gap": gap, "gap_ci_low": low, "gap_ci_high": high,
                        "one_beats_zero": bool(beats), "aggregated": not why_not, "not_aggregated_why": why_not})
        if not beats:
            notes.append(f"{scenario}: the simple baseline {zero!r} ({by_seed[zero].mean():.4g}) beats the best "
                         f"published heuristic {one!r} ({by_seed[one].mean():.4g}) on {bench.metric}: the unit is "
                         f"their gap, and {one!r} scores -1")
        notes += _unit_notes(scenario, gap, low, high, why_not)
    return episodes, pd.DataFrame(anchors), notes


def _unit_notes(scenario: str, gap: float, low: float, high: float, why_not: str) -> list[str]:
    """The page's note on a scenario's unit: left out of the aggregate (and why), or resolved to less than a
    factor of two."""
    interval = f"{abs(gap):.4g} [{min(abs(low), abs(high)):.4g}, {max(abs(low), abs(high)):.4g}]"
    if why_not:
        return [f"{scenario}: not in the family's normalised aggregate (anchor gap {interval}): {why_not}; its raw "
                "metric, normalised score and paired differences are in the per-scenario table, and a policy must "
                "still run on it to be ranked"]
    if np.isfinite(low) and (min(abs(low), abs(high)) < UNIT_RESOLUTION * abs(gap) or np.sign(low) != np.sign(high)):
        return [f"{scenario}: the anchor gap is resolved to less than a factor of two ({interval}, paired 95 % CI over "
                "the seeds): its normalised scores carry that uncertainty"]
    return []


def unit_scenarios(anchors: pd.DataFrame) -> list[str]:
    """The scenarios in the family's normalised aggregate (the anchors table's ``aggregated`` rows), in order."""
    return [str(s) for s in anchors.loc[anchors["aggregated"].astype(bool), "scenario"]]


def _by_seed(rows: pd.DataFrame, policy: str, seeds: list[int], scenario: str) -> pd.Series:
    """``policy``'s metric per seed (a reference policy: one episode per seed)."""
    mine = rows[rows["policy"] == policy]
    if mine.empty:
        raise ValueError(f"scenario {scenario!r}: anchor policy {policy!r} did not run, so the score cannot be "
                         "normalised")
    series = mine.groupby("seed")["metric"].mean()
    missing = [s for s in seeds if s not in series.index]
    if missing:
        raise ValueError(f"scenario {scenario!r}: anchor policy {policy!r} has no episode on seeds {missing}")
    return series


def improvement(values: np.ndarray, reference: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """``values - reference`` signed so that a positive difference means ``values`` is better."""
    diff = np.asarray(values, dtype=float) - np.asarray(reference, dtype=float)
    return diff if higher_is_better else -diff


def win_tie_loss(diffs: np.ndarray, reference: np.ndarray) -> tuple[int, int, int]:
    """Counts of positive, tied (within :data:`TIE_RTOL` of the reference) and negative paired differences."""
    diffs = np.asarray(diffs, dtype=float)
    tol = TIE_RTOL * np.maximum(1.0, np.abs(np.asarray(reference, dtype=float)))
    tie = np.abs(diffs) <= tol
    return int(((diffs > 0) & ~tie).sum()), int(tie.sum()), int(((diffs < 0) & ~tie).sum())


def mean_ci(diffs: np.ndarray, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap 95 % CI of the mean of paired differences (:func:`scipy.stats.bootstrap`, 2000
    resamples, fixed generator); ``(d, d)`` when every difference is ``d``; NaNs for fewer than two."""
    from scipy.stats import bootstrap

    diffs = np.asarray(diffs, dtype=float)
    if diffs.size < 2:
        return float("nan"), float("nan")
    if np.all(diffs == diffs[0]):
        return float(diffs[0]), float(diffs[0])
    result = bootstrap((diffs,), np.mean, n_resamples=stats.BOOTSTRAP_REPS, confidence_level=stats.CONFIDENCE,
                       method="percentile", rng=np.random.default_rng(seed), vectorized=True)
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def paired(episodes: pd.DataFrame, scenario: str, policy: str, reference: str, column: str,
           higher_is_better: bool) -> dict[str, Any]:
    """``policy`` against ``reference`` on ``scenario``, paired by seed (every run of ``policy`` against the
    reference's episode on the same seed): mean difference of ``column`` (positive: ``policy`` is better), its
    bootstrap 95 % CI and the win/tie/loss count."""
    here = episodes[episodes["scenario"] == scenario]
    mine = here[here["policy"] == policy]
    ref = here[here["policy"] == reference].groupby("seed")[column].mean()
    mine = mine[mine["seed"].isin(ref.index)]
    against = mine["seed"].map(ref).to_numpy(dtype=float)
    diffs = improvement(mine[column].to_numpy(dtype=float), against, higher_is_better)
    low, high = mean_ci(diffs)
    wins, ties, losses = win_tie_loss(diffs, against)
    return {"diff_mean": float(diffs.mean()) if diffs.size else float("nan"), "diff_ci_low": low,
            "diff_ci_high": high, "wins": wins, "ties": ties, "losses": losses, "pairs": int(diffs.size)}


def paired_over_scenarios(episodes: pd.DataFrame, scenarios: Sequence[str], policy: str,
                          references: dict[str, str], higher_is_better: bool,
                          aggregated: Sequence[str] | None = None) -> dict[str, Any]:
    """``policy`` against a reference per scenario, over the scenarios: the mean of the per-scenario mean
    differences in normalised units over the ``aggregated`` scenarios (default: all) with a stratified-bootstrap
    95 % CI (scenarios are the strata); and, over every scenario (a count needs no unit), the summed win/tie/loss
    count of the raw metric (as :func:`paired` counts) and the probability of improvement (the share of paired runs
    the policy wins, ties counting one half, averaged over scenarios; rliable's P(X > Y) on matched runs) with its
    stratified-bootstrap CI."""
    aggregated = list(scenarios if aggregated is None else aggregated)
    diffs, outcomes = [], []
    for scenario in scenarios:
        here = episodes[episodes["scenario"] == scenario]
        reference = here[here["policy"] == references[scenario]].groupby("seed")
        mine = here[(here["policy"] == policy) & here["seed"].isin(reference.groups)]
        raw = mine["seed"].map(reference["metric"].mean()).to_numpy(dtype=float)
        diff = improvement(mine["metric"].to_numpy(dtype=float), raw, higher_is_better)
        tie = np.abs(diff) <= TIE_RTOL * np.maximum(1.0, np.abs(raw))
        outcomes.append(np.where(tie, 0.5, (diff > 0).astype(float)))
        if scenario in aggregated:
            norm = mine["seed"].map(reference["normalised"].mean()).to_numpy(dtype=float)
            diffs.append(mine["normalised"].to_numpy(dtype=float) - norm)
    low, high = stats.stratified_ci(diffs, stats.mean_of_task_means) if diffs else (float("nan"),) * 2
    p_low, p_high = stats.stratified_ci(outcomes, stats.mean_of_task_means)
    every = np.concatenate(outcomes)
    return {"diff_mean": float(np.mean([d.mean() for d in diffs])) if diffs else float("nan"), "diff_ci_low": low,
            "diff_ci_high": high, "wins": int((every == 1.0).sum()), "ties": int((every == 0.5).sum()),
            "losses": int((every == 0.0).sum()), "poi": float(np.mean([o.mean() for o in outcomes])),
            "poi_ci_low": p_low, "poi_ci_high": p_high}


def best_non_learned(episodes: pd.DataFrame, scenario: str, higher_is_better: bool) -> str:
    """The deployable non-learned policy (heuristic or baseline) with the best mean metric on ``scenario``."""
    here = episodes[(episodes["scenario"] == scenario) & episodes["class"].isin(NON_LEARNED)]
    means = here.groupby("policy", sort=True)["metric"].mean()
    return str(means.idxmax() if higher_is_better else means.idxmin())


def score_tasks(episodes: pd.DataFrame, policy: str, scenarios: Sequence[str]) -> tuple[list[np.ndarray], list[str]]:
    """``policy``'s normalised scores per scenario it ran on (runs x seeds each), and those scenarios."""
    rows = episodes[episodes["policy"] == policy]
    covered = [s for s in scenarios if (rows["scenario"] == s).any()]
    tasks = [rows.loc[rows["scenario"] == s].sort_values(["run", "seed"])["normalised"].to_numpy(dtype=float)
             for s in covered]
    return tasks, covered
