"""Per family and scenario: does an agent's front dominate part of the heuristics' front? (docs/tradeoffs.md,
"Results"). Built from the fronts run's ``points.csv`` and ``indicators.csv`` tables alone, so the same table comes
from a finished run's files (``python -m joulegym.evaluation.pareto_verdict results/fronts``) and from the run itself
(``evaluate.py --suite --pareto`` prints it and writes ``verdicts.md``).

Verdict per scope, from the paired "agents gain" (hypervolume of heuristics+agents minus heuristics, bootstrap CI
over the test seeds) and the heuristic-front points an agent dominates: ``dominates part`` when an agent dominates at
least one heuristic-front point and the gain's CI lies above 0 (with the gain as a share of the heuristic front's
hypervolume); ``extends it`` when the gain's CI lies above 0 but no
front point is dominated (an agent adds a point beyond the front's ends or in a gap); ``inside`` when the gain is 0
or its CI reaches 0; ``no agent`` when none played the scope.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

GAIN_TOLERANCE = 1e-9  # a gain's CI "above 0": beyond the hypervolume's floating-point noise
COLUMNS = ("family", "scenario", "heuristic-front HV [95% CI]", "agents' front HV [95% CI]", "agents",
           "front points dominated by an agent", "HV gain [95% CI]", "verdict")


def _interval(row: pd.Series | None) -> str:
    if row is None or pd.isna(row["hypervolume"]):
        return "-"
    return f"{row['hypervolume']:.3f} [{row['hv_ci_low']:.3f}, {row['hv_ci_high']:.3f}]"


def _signed(value: float) -> str:
    """A gain with its sign, small ones in scientific notation (a 1e-5 gain must not print as +0.0000)."""
    if value == 0:
        return "0"
    return f"{value:+.1e}" if abs(value) < 1e-3 else f"{value:+.4f}"


def _gain(row: pd.Series | None) -> str:
    if row is None:
        return "-"
    return f"{_signed(row['hypervolume'])} [{_signed(row['hv_ci_low'])}, {_signed(row['hv_ci_high'])}]"


def _pick(indicators: pd.DataFrame, family: str, scope: str, name: str) -> pd.Series | None:
    rows = indicators[(indicators["family"] == family) & (indicators["scope"] == scope) & (indicators["set"] == name)]
    return rows.iloc[0] if len(rows) else None


def verdict(gain: pd.Series | None, dominated: int, agents: int, front_hv: float = float("nan")) -> str:
    """The verdict of one scope (module docstring), with the gain relative to the heuristic front's hypervolume
    ``front_hv`` when the gain's CI lies above 0."""
    if agents == 0 or gain is None:
        return "no agent"
    if not gain["hv_ci_low"] > GAIN_TOLERANCE:
        return "inside"
    word = "dominates part" if dominated else "extends it"
    if front_hv > 0:
        word += f" (+{100 * gain['hypervolume'] / front_hv:.2g} % HV)"
    return word


def verdict_rows(points: pd.DataFrame, indicators: pd.DataFrame) -> pd.DataFrame:
    """One row per (family, scenario) and per family (``scenario = "all"``) with :data:`COLUMNS`."""
    rows = []
    for family in dict.fromkeys(points["family"]):
        mine = points[points["family"] == family]
        for scenario in [*dict.fromkeys(mine["scenario"]), "all"]:
            chosen = mine if scenario == "all" else mine[mine["scenario"] == scenario]
            front = chosen[chosen["front_heuristics"].astype(bool)]
            dominated = int(front["dominated_by_agent"].astype(bool).sum())
            agents = chosen[chosen["class"] == "agent"]
            gain = _pick(indicators, family, scenario, "agents gain") if len(agents) else None
            heuristics = _pick(indicators, family, scenario, "heuristics")
            front_hv = float("nan") if heuristics is None else float(heuristics["hypervolume"])
            labels = ", ".join(dict.fromkeys(agents["point"])) if scenario != "all" else f"{len(agents)} points"
            rows.append(dict(zip(COLUMNS, (
                family, scenario, _interval(heuristics),
                _interval(_pick(indicators, family, scenario, "agents")), labels or "none",
                f"{dominated} of {len(front)}", _gain(gain),
                verdict(gain, dominated, len(agents), front_hv)), strict=True)))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def markdown(rows: pd.DataFrame) -> str:
    """The rows as a Markdown table."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def from_directory(out: str | Path) -> str:
    """The Markdown verdict table of a finished fronts run's directory.

    :raises ValueError: if the directory lacks ``points.csv`` or ``indicators.csv``.
    """
    out = Path(out)
    missing = [n for n in ("points.csv", "indicators.csv") if not (out / n).is_file()]
    if missing:
        raise ValueError(f"{str(out)!r} is not a fronts run's directory (missing {', '.join(missing)}; "
                         "python evaluate.py --suite --pareto writes them)")
    return markdown(verdict_rows(pd.read_csv(out / "points.csv"), pd.read_csv(out / "indicators.csv")))


if __name__ == "__main__":  # pragma: no cover - a thin CLI over from_directory
    try:
        sys.stdout.write(from_directory(sys.argv[1] if len(sys.argv) > 1 else "results/fronts"))
    except ValueError as err:
        sys.exit(f"error: {err}")
