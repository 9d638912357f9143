"""The leaderboard's figures (docs/leaderboard.md): normalised-score intervals, performance profiles and the
probability of improvement of the ranked (deployable, every-scenario) policies (Agarwal et al., NeurIPS 2021,
§4.2-4.3), the learning curves of the shipped agents, and one episode plot per scenario.

Learning curves: each training run's validation record (:mod:`joulegym.evaluation.zoo`: the mean ranking metric on
the validation seeds against the run's CPU seconds), as a step function (the last evaluation so far) on a common
CPU-time grid up to the shortest run's end; the line is the mean over training seeds and the band its 95 %
t-interval (with two or more runs); the anchors' scores on the same validation seeds, recorded by the training
protocol, are horizontal lines.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from joulegym.core.family import env_id
from joulegym.evaluation import stats

if TYPE_CHECKING:
    from joulegym.evaluation.suite import FamilyResult
    from joulegym.evaluation.zoo import ZooAgent

CLASS_COLOURS = {"agent": "tab:orange", "heuristic": "tab:blue", "baseline": "tab:grey", "privileged": "tab:purple"}
CURVE_POINTS = 200


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def write_plots(result: FamilyResult, traces: dict[str, dict], out: Path) -> list[Path]:
    """The family's score, profile, probability-of-improvement, learning-curve and episode plots."""
    from joulegym.core.io import save_figure
    from joulegym.evaluation.hooks import hooks_for
    from joulegym.evaluation.plots import reward_plot

    plots = out / "plots"
    plots.mkdir(exist_ok=True)
    written = []
    name = result.name
    if not result.ranking.empty:
        for caption, fig, file in (
                ("Normalised score of the deployable policies: mean over seeds and scenarios with stratified-"
                 "bootstrap 95 % CIs (zero and one anchors dashed)", score_plot(result), f"{name}-score.png"),
                ("Performance profile: fraction of runs above a normalised score", profile_plot(result),
                 f"{name}-profile.png"),
                ("Probability of improvement over the best heuristic (paired by seed)", poi_plot(result),
                 f"{name}-poi.png")):
            written.append(save_figure(fig, plots / file))
            result.plots[caption] = f"plots/{file}"
    for agent in result.shipped:  # one curve per shipped agent, whichever scenarios it played
        if any(run.curve() for run in agent.runs):
            file = f"{name}-{_slug(agent.trained_on)}-{agent.algo}-curve.png"
            written.append(save_figure(learning_curve_plot(agent, result), plots / file))
            result.curves[agent.label] = f"plots/{file}"
    hooks = hooks_for(name)
    version = result.descriptor.kind(result.benchmark.kind).version
    for scenario in result.scenarios:
        recorded = traces.get(scenario, {})
        if not recorded:
            continue
        scenario_id = env_id(result.benchmark.kind, scenario, version)
        fig = hooks.episode_plot(recorded, scenario_id) if hooks.episode_plot else reward_plot(recorded, scenario_id)
        file = f"{name}-{_slug(scenario)}-episode.png"
        written.append(save_figure(fig, plots / file))
        result.episode_plots[scenario] = f"plots/{file}"
    return written


def _axis_label(result: FamilyResult) -> str:
    return f"normalised {result.benchmark.metric} (zero anchor = 0, best heuristic = 1)"


def score_plot(result: FamilyResult) -> Any:
    from joulegym.core.plotting import new_figure

    frame = result.ranking.iloc[::-1]
    fig, axes = new_figure(1, 1, size=(6.4, 0.6 + 0.32 * len(frame)))
    ax = axes[0, 0]
    y = np.arange(len(frame))
    colours = [CLASS_COLOURS[c] for c in frame["class"]]
    ax.hlines(y, frame["score_ci_low"], frame["score_ci_high"], colors=colours, lw=6, alpha=0.5)
    ax.plot(frame["score_mean"], y, "k|", ms=12)
    ax.axvline(0.0, color="grey", lw=0.8, ls=":")
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_yticks(y, [f"{p} ({c})" for p, c in zip(frame["policy"], frame["class"], strict=True)])
    ax.set_xlabel(_axis_label(result) + ": mean, 95 % CI")
    ax.set_title(f"{result.name}: {len(result.aggregated)} of {len(result.scenarios)} scenarios (the aggregated) x "
                 f"{len(result.seeds)} seeds", fontsize=9)
    fig.tight_layout()
    return fig


def profile_plot(result: FamilyResult) -> Any:
    from joulegym.core.plotting import legend_outside, new_figure
    from joulegym.evaluation.scoring import score_tasks

    policies = list(result.ranking["policy"])
    every = [score_tasks(result.episodes, p, result.aggregated)[0] for p in policies]
    scores = np.concatenate([np.concatenate(t) for t in every])
    low, high = min(0.0, float(np.min(scores))), max(1.0, float(np.max(scores)))
    margin = 0.05 * (high - low)
    taus = np.linspace(low - margin, high + margin, 101)
    fig, axes = new_figure(1, 1, size=(7.6, 4.0))
    ax = axes[0, 0]
    for policy, tasks in zip(policies, every, strict=True):
        fraction, band_low, band_high = stats.performance_profile_tasks(tasks, taus)
        line, = ax.plot(taus, fraction, lw=1.2, label=policy)
        ax.fill_between(taus, band_low, band_high, color=line.get_color(), alpha=0.15)
    ax.set_xlabel(f"{_axis_label(result)}: tau")
    ax.set_ylabel("fraction of runs with score > tau")
    ax.set_title(f"{result.name}: performance profiles (95 % bands)")
    legend_outside(ax)
    fig.tight_layout()
    return fig


def poi_plot(result: FamilyResult) -> Any:
    from joulegym.core.plotting import new_figure

    frame = result.ranking.iloc[::-1]
    fig, axes = new_figure(1, 1, size=(6.4, 0.6 + 0.32 * len(frame)))
    ax = axes[0, 0]
    y = np.arange(len(frame))
    ax.hlines(y, frame["vs_best_poi_ci_low"], frame["vs_best_poi_ci_high"], colors="tab:green", lw=6, alpha=0.5)
    ax.plot(frame["vs_best_poi"], y, "k|", ms=12)
    ax.axvline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_xlim(-0.02, 1.02)
    ax.set_yticks(y, list(frame["policy"]))
    ax.set_xlabel("P(policy > best heuristic) on a paired seed, averaged over scenarios (95 % CI)")
    ax.set_title(f"{result.name}: probability of improvement")
    fig.tight_layout()
    return fig


def curve_band(curves: list[list[tuple[float, float, float]]],
               points: int = CURVE_POINTS) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(cpu_s, mean, low, high)`` over the runs' step-function curves on a common grid up to the shortest run's
    last evaluation; the band is the 95 % t-interval of the mean over runs (the mean itself for one run)."""
    from scipy.stats import t as student_t

    curves = [sorted(c) for c in curves if c]
    if not curves:
        raise ValueError("no learning curve to plot")
    end = min(c[-1][0] for c in curves)
    start = max(c[0][0] for c in curves)
    grid = np.linspace(start, end, points) if end > start else np.array([end])
    values = np.array([[c[int(np.searchsorted([p[0] for p in c], x, side="right")) - 1][2] for x in grid]
                       for c in curves])
    mean = values.mean(axis=0)
    if len(curves) < 2:
        return grid, mean, mean, mean
    half = student_t.ppf(0.5 + stats.CONFIDENCE / 2, len(curves) - 1) * values.std(axis=0, ddof=1) / np.sqrt(
        len(curves))
    return grid, mean, mean - half, mean + half


def learning_curve_plot(agent: ZooAgent, result: FamilyResult) -> Any:
    from joulegym.core.plotting import legend_outside, new_figure

    bench = result.benchmark
    curves = [run.curve() for run in agent.runs if run.curve()]
    grid, mean, low, high = curve_band(curves)
    fig, axes = new_figure(1, 1, size=(7.6, 4.0))
    ax = axes[0, 0]
    for curve in curves:
        ax.step([p[0] for p in curve], [p[2] for p in curve], where="post", color="tab:orange", lw=0.6, alpha=0.35)
    ax.plot(grid, mean, color="tab:orange", lw=1.8, label=f"{agent.algo}: mean of {len(curves)} training seed(s)")
    if len(curves) > 1:
        ax.fill_between(grid, low, high, color="tab:orange", alpha=0.2, label="95 % CI over training seeds")
    reference = (agent.runs[0].provenance.get("validation") or {}).get("reference") or {}
    roles = {bench.zero[agent.scenario]: "zero", bench.best_heuristic[agent.scenario]: "one"}
    for (policy, value), style in zip(sorted(reference.items()), ("--", ":", "-.", (0, (5, 1))), strict=False):
        ax.axhline(float(value), color="tab:blue", lw=1.0, ls=style,
                   label=f"{roles.get(policy, 'reference')}: {policy} (same seeds)")
    budget = agent.runs[0].provenance.get("cpu_budget_s") or bench.training_budget_s
    ax.axvline(float(budget), color="grey", lw=0.8, ls=":", label=f"CPU budget ({float(budget):g} s)")
    seeds = (agent.runs[0].provenance.get("validation") or {}).get("seeds") or []
    ax.set_xlabel("training CPU seconds")
    ax.set_ylabel(f"{bench.metric} on validation seeds ({'higher' if bench.higher_is_better else 'lower'} is better)")
    ax.set_title(f"{result.name} {agent.scenario}: {agent.algo} learning curve "
                 f"(validation seeds {seeds[0] if seeds else '?'}-{seeds[-1] if seeds else '?'})", fontsize=9)
    legend_outside(ax)
    fig.tight_layout()
    return fig
