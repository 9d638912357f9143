"""The fronts page of ``evaluate.py --suite --pareto``: one front plot per family and scenario and the indicator
tables (docs/tradeoffs.md). Same style and scripts as the leaderboard page (:mod:`joulegym.evaluation.page`); nothing
on it depends on the time it was made."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from joulegym.evaluation.page import _SCRIPT, _STYLE, _e, _figure, _num, _table

if TYPE_CHECKING:
    from joulegym.evaluation.pareto import FamilyFronts

LEADERBOARD_LINK = "../leaderboard/index.html"  # the default --out of the leaderboard, beside results/fronts
MARKERS = {"heuristic": ("o", "#1f77b4"), "baseline": ("s", "#7f7f7f"), "agent": ("*", "#ff7f0e"),
           "privileged": ("D", "#9467bd")}
INDICATOR_HEADERS = ("scope", "set", "points", "hypervolume [95% CI]", "expected utility [95% CI]")


def method() -> str:
    from joulegym.evaluation import tradeoffs as pareto

    return (f"Each point is one policy at one setting: the mean over the benchmark's held-out test seeds (and an "
            f"agent's training runs) of the family's two objectives. The heuristic front is the non-dominated set of "
            f"the deployable reference policies (published heuristics and simple baselines, every knob setting); "
            f"agents are a set of their own; privileged policies (upper bounds) are drawn apart and never on a "
            f"deployable front. Per scenario the objectives are normalised with stated anchors: 0 is the best and 1 "
            f"the worst mean over the deployable reference points other than random (anchors.csv). Hypervolume "
            f"(pymoo) against the reference point {pareto.REFERENCE_POINT} in that frame; expected utility is the "
            f"mean over {pareto.WEIGHT_PARTITIONS + 1} weight vectors uniform on the simplex of the best "
            f"w . (1 - normalised cost) of the set. 95 % CIs: percentile bootstrap over test seeds "
            f"({pareto.BOOTSTRAP_RESAMPLES} resamples, shared by every point of a scenario); 'agents gain' is the "
            f"paired difference of heuristics+agents over heuristics; 'all' is the mean over the family's scenarios.")


def front_plot(result: FamilyFronts, scenario: str) -> Any:
    """Raw objectives of every point of ``scenario``, each class with its marker; the heuristic front as a line."""
    from joulegym.core.plotting import legend_outside, new_figure

    fig, axes = new_figure(size=(7.2, 4.4))
    ax = axes.flat[0]
    points = result.points[result.points["scenario"] == scenario]
    for cls, (marker, colour) in MARKERS.items():
        chosen = points[points["class"] == cls]
        if len(chosen):
            ax.scatter(chosen["energy"], chosen["performance"], marker=marker, color=colour, s=60 if cls == "agent"
                       else 28, label=cls + (" (upper bound)" if cls == "privileged" else ""), zorder=3)
    front = points[points["front_heuristics"]].sort_values("energy")
    ax.plot(front["energy"], front["performance"], "-", color="#1f77b4", alpha=0.6, label="heuristic front", zorder=2)
    place_labels(ax, [(str(r["point"]), float(r["energy"]), float(r["performance"])) for _, r in front.iterrows()])
    energy, performance = result.tradeoff.objectives
    ax.set_xlabel(f"{energy.label} ({'lower' if energy.minimise else 'higher'} is better)")
    ax.set_ylabel(f"{performance.label} ({'lower' if performance.minimise else 'higher'} is better)")
    ax.set_title(f"{result.name} / {scenario}: {len(result.seeds)} test seeds", fontsize=9)
    legend_outside(ax)
    return fig


SAME_SPOT_PX = 3.0  # points drawn this close (pixels) share one label
# label offsets (points) tried in turn; the farther ones draw a leader line back to the point
LABEL_OFFSETS = ((4, 4), (4, -10), (-4, 4), (-4, -10), (10, 16), (10, -22), (-10, 16), (-10, -22), (16, 30),
                 (16, -36), (-16, 30), (-16, -36), (-24, 48), (24, 48), (-24, -54), (24, -54), (-36, 68), (36, 68))


def place_labels(ax: Any, labels: Sequence[tuple[str, float, float]]) -> list[Any]:
    """Annotate each ``(text, x, y)``: points drawn within :data:`SAME_SPOT_PX` of each other share one label (their
    texts joined, three per line); each label takes the first offset of :data:`LABEL_OFFSETS` whose text box
    overlaps no label placed before it and stays inside the axes (measured with the figure's renderer), else the
    offset with the fewest overlaps. Returns the annotations."""
    from matplotlib.text import Text

    ax.get_xlim(), ax.get_ylim()  # settle the autoscaled limits before measuring
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    groups: list[tuple[list[str], float, float, Any]] = []
    for text, x, y in labels:
        spot = ax.transData.transform((x, y))
        near = next((g for g in groups if np.hypot(*(g[3] - spot)) <= SAME_SPOT_PX), None)
        if near is None:
            groups.append(([text], x, y, spot))
        else:
            near[0].append(text)
    placed: list[Any] = []
    out = []
    for texts, x, y, _ in groups:
        text = "\n".join(", ".join(texts[k:k + 3]) for k in range(0, len(texts), 3))
        best = None
        for k, (dx, dy) in enumerate(LABEL_OFFSETS):
            note = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=6,
                               ha="left" if dx > 0 else "right", va="bottom" if dy > 0 else "top",
                               arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "#555555"} if k >= 4 else None)
            note.update_positions(renderer)
            box = Text.get_window_extent(note, renderer)  # the text alone, not its leader line
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            clashes = sum(box.overlaps(other) for other in placed) + (0 if inside else len(placed) + 1)
            if best is None or clashes < best[0]:
                if best is not None:
                    best[1].remove()
                best = (clashes, note, box)
            else:
                note.remove()
            if clashes == 0:
                break
        placed.append(best[2])
        out.append(best[1])
    return out


def write_plots(results: Sequence[FamilyFronts], out: Path) -> list[Path]:
    """``plots/<family>-<scenario>-front.png`` per family and scenario."""
    from joulegym.core.io import save_figure

    folder = out / "plots"
    folder.mkdir(exist_ok=True)
    written = []
    for result in results:
        for scenario in result.scenarios:
            file = f"{result.name}-{scenario}-front.png"
            written.append(save_figure(front_plot(result, scenario), folder / file))
            result.plots[scenario] = f"plots/{file}"
    return written


def _indicator_rows(result: FamilyFronts) -> list[tuple[str, list[tuple[str, Any]]]]:
    rows = []
    for _, row in result.indicators.iterrows():
        css = {"agents": "agent", "privileged": "privileged", "agents gain": "agent"}.get(row["set"], "heuristic")
        rows.append((css, [(row["scope"], None), (row["set"], None), (str(int(row["points"])), int(row["points"])),
                           (f"{_num(row['hypervolume'])} [{_num(row['hv_ci_low'])}, {_num(row['hv_ci_high'])}]",
                            row["hypervolume"]),
                           (f"{_num(row['expected_utility'])} [{_num(row['eu_ci_low'])}, {_num(row['eu_ci_high'])}]",
                            row["expected_utility"])]))
    return rows


def verdict(result: FamilyFronts) -> str:
    """One sentence: whether anything dominates part of the heuristic front, with the numbers."""
    points = result.points
    front = points[points["front_heuristics"]]
    by_agent = front[front["dominated_by_agent"]]
    by_privileged = front[front["dominated_by_privileged"]]
    gain = result.indicators[(result.indicators["scope"] == "all") & (result.indicators["set"] == "agents gain")]
    text = (f"Over its {len(result.scenarios)} scenarios, {len(by_agent)} of the {len(front)} heuristic-front points "
            f"are dominated by an agent and {len(by_privileged)} by a privileged policy")
    if len(gain):
        g = gain.iloc[0]
        text += (f"; adding the agents changes the mean hypervolume by {_num(g['hypervolume'])} "
                 f"[{_num(g['hv_ci_low'])}, {_num(g['hv_ci_high'])}]")
    else:
        text += "; no shipped agent played these scenarios"
    return text + "."


def _family_html(result: FamilyFronts) -> list[str]:
    trade = result.tradeoff
    body = [f'<section id="{_e(result.name)}">', f"<h2>{_e(result.name)}: {_e(result.descriptor.title)}</h2>",
            f"<p><strong>Knob</strong>: {_e(trade.knob)}</p>",
            f"<p><strong>Objectives</strong>: {_e(trade.energy.label)} and {_e(trade.performance.label)} (info"
            f"[\"metrics\"] keys <code>{_e(trade.energy.key)}</code>, <code>{_e(trade.performance.key)}</code>); "
            f"scenarios {_e(', '.join(result.scenarios))}; test seeds {result.seeds[0]}-{result.seeds[-1]}.</p>",
            f'<p class="verdict">{_e(verdict(result))}</p>', "<h3>Indicators</h3>"]
    body += _table("indicators", INDICATOR_HEADERS, _indicator_rows(result))
    for scenario, path in result.plots.items():
        body.append(_figure(path, f"{result.name} / {scenario}: energy-performance points and the heuristic front",
                            "front"))
    if result.notes:
        body.append("<h3>Notes</h3><ul>" + "".join(f"<li>{_e(n)}</li>" for n in result.notes) + "</ul>")
    return [*body, "</section>"]


def html(results: Sequence[FamilyFronts], command: str) -> str:
    """``index.html`` of the fronts run."""
    body = ["<h1>joulegym trade-off fronts</h1>",
            f"<p>Regenerate every number on this page: <code>{_e(command)}</code></p>", f"<p>{_e(method())}</p>",
            f'<p>The single-objective leaderboard: <a href="{LEADERBOARD_LINK}">{LEADERBOARD_LINK}</a> (python '
            "evaluate.py --suite).</p>",
            "<p>Families: " + ", ".join(f'<a href="#{_e(r.name)}">{_e(r.name)}</a>' for r in results) + "</p>"]
    for result in results:
        body += _family_html(result)
    body.append('<p id="status" class="note"></p>')
    return ("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<title>joulegym trade-off fronts</title>\n<style>\n" + _STYLE + "\n</style>\n</head>\n<body>\n" +
            "\n".join(body) + "\n<script>\n" + _SCRIPT + "\n</script>\n</body>\n</html>\n")
