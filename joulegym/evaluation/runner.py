"""The evaluation loop shared by reference policies and trained agents (docs/architecture.md).

One loop drives every :class:`~joulegym.baselines.Policy`: ``reset(env, seed)``, then ``act(obs, info)``
until the episode ends. Each episode gives one row: the undiscounted return, the length and every
scalar of the final ``info["metrics"]``. Summaries give mean ± std, the interquartile mean (IQM) and a
bootstrap 95% confidence interval of the mean return, and a normalised score (random = 0, the best
reference policy = 1).

Held-out seeds: evaluation uses seeds ``EVAL_SEED_BASE + i``, the same seeds the leaderboard benchmark holds out
(:data:`~joulegym.core.benchmark.DEFAULT_EVAL_SEEDS`, 10000-10009 for ``--seeds 10``); ``train.py`` refuses seeds
at or above :data:`~joulegym.core.benchmark.TRAINING_SEED_LIMIT`, so an agent is never scored on the episodes it
was trained on.
"""

from __future__ import annotations

import contextlib
import numbers
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import yaml

from joulegym import baselines
from joulegym.core.benchmark import TRAINING_SEED_LIMIT
from joulegym.core.policy import PolicyNotApplicable, env_config_for
from joulegym.core.rollout import MAX_EPISODE_STEPS, Episode, rollout, rollout_inner, simulator_path

EVAL_SEED_BASE = TRAINING_SEED_LIMIT  # one convention with the benchmark: plain evaluate.py and --suite share seeds
BOOTSTRAP_RESAMPLES = 2_000
BASE_COLUMNS = ("env_id", "policy", "kind", "seed", "episode", "return", "length")


@dataclass(frozen=True)
class PolicyEntry:
    """One policy to evaluate: a reference policy (name + kwargs) or a saved agent (algo + path)."""

    label: str
    kind: str  # "reference" or "agent"
    name: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    path: str | None = None
    family: str | None = None  # scopes the reference-policy name (``None``: an unambiguous short name)
    allow_pickle: bool = False  # an agent given as a model.zip is unpickled only then (--unsafe-unpickle-model-zip)

    def build(self) -> baselines.Policy:
        if self.kind == "agent":
            from joulegym.agents import SB3Policy

            return SB3Policy.load(self.path, algo=self.name, name=self.label, allow_pickle=self.allow_pickle)
        return baselines.make(self.name, family=self.family, **self.kwargs)


def eval_seeds(n: int) -> list[int]:
    """The ``n`` held-out evaluation seeds."""
    if n < 1:
        raise ValueError(f"seeds must be >= 1, got {n}")
    return [EVAL_SEED_BASE + i for i in range(n)]


def parse_policies(text: str, env: gym.Env | None = None, *, allow_pickle: bool = False) -> list[PolicyEntry]:
    """Parse ``--policies``: comma-separated ``NAME``, ``NAME:key=value:key=value`` or ``ALGO:PATH``.

    ``all`` expands to every reference policy that applies to ``env``. ``ALGO`` is an SB3 algorithm
    name (``ppo``, ``maskable_ppo``, ...) and ``PATH`` a weights-only agent directory or a ``train.py`` run
    directory; a ``model.zip`` only with ``allow_pickle`` (it is unpickled).
    """
    from joulegym.agents.algos import ALGOS

    entries: list[PolicyEntry] = []
    family = getattr(env.unwrapped, "family", None) if env is not None else None
    for token in [t.strip() for t in text.split(",") if t.strip()]:
        head, _, rest = token.partition(":")
        if head == "all":
            if env is None:
                raise ValueError("policies=all needs an env to list the applicable reference policies")
            entries += [PolicyEntry(n, "reference", n, family=family) for n in baselines.applicable(env)]
        elif head.lower().replace("-", "_") in ALGOS and rest:
            label = head if not any(e.label == head for e in entries) else f"{head}:{Path(rest).parent.name}"
            entries.append(PolicyEntry(label, "agent", head.lower().replace("-", "_"), path=rest,
                                       allow_pickle=allow_pickle))
        else:
            scope = family
            if "/" in head:
                scope, _, head = head.partition("/")
            baselines.spec(head, scope)  # ValueError listing the known names
            kwargs = _parse_kwargs(rest, token) if rest else {}
            label = head if not kwargs else f"{head}({','.join(f'{k}={v}' for k, v in kwargs.items())})"
            entries.append(PolicyEntry(label, "reference", head, kwargs, family=scope))
    if not entries:
        raise ValueError("policies must name at least one policy")
    labels = [e.label for e in entries]
    duplicates = sorted({x for x in labels if labels.count(x) > 1})
    if duplicates:
        raise ValueError(f"policies lists {duplicates} twice")
    return entries


def _parse_kwargs(text: str, token: str) -> dict[str, Any]:
    kwargs = {}
    for part in text.split(":"):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise ValueError(f"policy {token!r}: expected NAME:key=value[:key=value], got {part!r}")
        kwargs[key] = yaml.safe_load(value)
    return kwargs


def run_episode(env: gym.Env, policy: baselines.Policy, seed: int, *, record: bool = False,
                env_id: str = "", label: str | None = None, kind: str = "reference",
                episode: int = 0) -> tuple[dict[str, Any], Episode | None]:
    """One episode of ``policy`` on ``env`` from ``seed``: its result row (and the recorded episode if ``record``).
    An inner policy runs on the simulator path where its family allows it
    (:func:`~joulegym.core.rollout.rollout_inner`: the same row, a recorded episode without the action masks),
    every other policy through the env (:func:`~joulegym.core.rollout.rollout`)."""
    loop = rollout_inner if simulator_path(env, policy) else rollout
    result = loop(env, policy, seed, record=record, max_steps=MAX_EPISODE_STEPS)
    row: dict[str, Any] = {"env_id": env_id, "policy": label or policy.name, "kind": kind, "seed": seed,
                           "episode": episode, "return": float(np.sum(result.total_return)), "length": result.length}
    for key, value in result.metrics.items():
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            row[key] = float(value)
    if record:
        result.policy = label or policy.name
    return row, (result if record else None)


def evaluate(env_id: str, entries: Sequence[PolicyEntry], seeds: Sequence[int],
             env_kwargs: dict[str, Any] | None = None, *, record: bool = True,
             ) -> tuple[pd.DataFrame, dict[str, Episode], list[str]]:
    """Run every policy on every seed of ``env_id``.

    Returns the per-episode table, the trace of each policy's first episode (if ``record``) and the
    labels of the policies skipped because they cannot drive this env (with a warning).
    """
    rows, traces, skipped = [], {}, []
    for entry in entries:
        policy = entry.build()
        # The policy's own settings, then the user's; a recorded trace (the episode plot) needs the full info.
        env = gym.make(env_id, **{**({"info_level": "full"} if record else {}), **env_config_for(policy, env_kwargs)})
        try:
            # a privileged reference policy is an upper bound: never the normaliser (normalised_scores)
            kind = "privileged" if entry.kind == "reference" and getattr(policy, "privileged", False) else entry.kind
            threads = getattr(policy, "one_thread", None)  # an agent's forward passes on one torch thread
            with threads() if threads is not None else contextlib.nullcontext():
                for index, seed in enumerate(seeds):
                    row, trace = run_episode(env, policy, seed, record=record and index == 0, env_id=env_id,
                                             label=entry.label, kind=kind, episode=index)
                    rows.append(row)
                    if trace is not None:
                        traces[entry.label] = trace
        except PolicyNotApplicable as err:
            warnings.warn(f"skipping {entry.label!r} on {env_id}: {err}", stacklevel=2)
            skipped.append(entry.label)
        finally:
            env.close()
    if not rows:
        raise ValueError(f"none of the policies {[e.label for e in entries]} can drive {env_id}")
    return pd.DataFrame(rows), traces, skipped


def iqm(values: np.ndarray) -> float:
    """Interquartile mean: the mean of the middle 50% (the 25%-75% trimmed mean)."""
    from scipy.stats import trim_mean

    return float(trim_mean(np.asarray(values, dtype=float), 0.25))


def bootstrap_ci(values: np.ndarray, confidence: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean (deterministic: fixed resampling seed)."""
    values = np.asarray(values, dtype=float)
    if values.size < 2 or np.all(values == values[0]):
        return float(values.mean()), float(values.mean())
    rng = np.random.default_rng(seed)
    means = rng.choice(values, size=(BOOTSTRAP_RESAMPLES, values.size), replace=True).mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    return float(np.quantile(means, alpha)), float(np.quantile(means, 1.0 - alpha))


def summarise(episodes: pd.DataFrame, headline: Sequence[str] = ()) -> pd.DataFrame:
    """Per policy: return mean/std/IQM/CI, the normalised score, and mean/std of the metrics."""
    metric_cols = [c for c in episodes.columns if c not in BASE_COLUMNS]
    ordered = [c for c in headline if c in metric_cols] + [c for c in metric_cols if c not in headline]
    records = []
    for label, group in episodes.groupby("policy", sort=False):
        returns = group["return"].to_numpy(dtype=float)
        low, high = bootstrap_ci(returns)
        record = {"policy": label, "kind": group["kind"].iloc[0], "episodes": len(group),
                  "return_mean": returns.mean(), "return_std": _std(returns), "return_iqm": iqm(returns),
                  "return_ci_low": low, "return_ci_high": high}
        for col in ordered:
            values = group[col].to_numpy(dtype=float)
            record[f"{col}_mean"] = float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")
            record[f"{col}_std"] = _std(values) if np.isfinite(values).any() else float("nan")
        records.append(record)
    summary = pd.DataFrame(records)
    summary.insert(4, "score", normalised_scores(summary))
    return summary


def _std(values: np.ndarray) -> float:
    """Population std, with float round-off (identical episodes summed in another order) shown as 0."""
    std = float(np.nanstd(values))
    return 0.0 if std <= 1e-12 * max(1.0, float(np.nanmax(np.abs(values)))) else std


def normalised_scores(summary: pd.DataFrame) -> np.ndarray:
    """``(return - random) / (best reference - random)``; NaN without ``random`` or a reference policy.

    The best reference policy is the deployable reference policy (not ``random``, not an agent, not a privileged
    policy, whose rows have ``kind="privileged"``) with the highest mean return among those evaluated.
    """
    means = summary.set_index("policy")["return_mean"]
    refs = summary[(summary["kind"] == "reference") & (summary["policy"] != "random")]
    if "random" not in means.index or refs.empty:
        return np.full(len(summary), np.nan)
    zero, one = float(means["random"]), float(refs["return_mean"].max())
    if np.isclose(one, zero):
        return np.full(len(summary), np.nan)
    return ((summary["return_mean"] - zero) / (one - zero)).to_numpy(dtype=float)


def markdown_table(summary: pd.DataFrame, headline: Sequence[str], max_metrics: int = 4) -> str:
    """A Markdown leaderboard, best mean return first."""
    metrics = [m for m in headline if f"{m}_mean" in summary.columns][:max_metrics]
    header = ["policy", "return (mean ± std)", "IQM", "95% CI", "score", *metrics]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for _, row in summary.sort_values("return_mean", ascending=False).iterrows():
        cells = [str(row["policy"]) + (f" ({row['kind']})" if row["kind"] in ("agent", "privileged") else ""),
                 f"{row['return_mean']:.4g} ± {row['return_std']:.2g}", f"{row['return_iqm']:.4g}",
                 f"[{row['return_ci_low']:.4g}, {row['return_ci_high']:.4g}]",
                 "n/a" if not np.isfinite(row["score"]) else f"{row['score']:.3f}"]
        cells += [f"{row[f'{m}_mean']:.4g} ± {row[f'{m}_std']:.2g}" for m in metrics]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
