"""Paper value beside ours, with a verdict: the table every ``--reproduce`` report ends with.

A verdict is ``reproduced`` when ours equals the paper's value to the paper's printed precision
(``exact_tol``), ``within tolerance`` inside the tolerance the family's docs page gives for that claim
(``docs/families/<family>.md``, "What reproduces"), else ``deviates``; a deviation carries the reason the docs
give. Qualitative claims (an ordering, a trend) are checked by the caller and passed as ``holds``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

VERDICTS = ("reproduced", "within tolerance", "deviates")


@dataclass(frozen=True)
class Claim:
    """One paper claim: its value, ours, and how far apart they may be."""

    quantity: str
    paper: float | str
    ours: float | str
    verdict: str
    note: str = ""


def verdict(ours: float, paper: float, *, tol: float, exact_tol: float = 0.0, relative: bool = False) -> str:
    """``reproduced`` if ``|ours - paper| <= exact_tol``, ``within tolerance`` if ``<= tol``, else ``deviates``.

    With ``relative`` both tolerances are fractions of ``|paper|``.
    """
    if tol < 0 or exact_tol < 0:
        raise ValueError(f"tol and exact_tol must be >= 0, got {tol}, {exact_tol}")
    if not (math.isfinite(ours) and math.isfinite(paper)):
        return "deviates"
    scale = abs(paper) if relative else 1.0
    gap = abs(ours - paper)
    if gap <= exact_tol * scale + 1e-12:
        return "reproduced"
    return "within tolerance" if gap <= tol * scale + 1e-12 else "deviates"


def claim(quantity: str, paper: float, ours: float, *, tol: float, exact_tol: float = 0.0,
          relative: bool = False, why: str = "", fmt: str = ".3g") -> Claim:
    """A numeric :class:`Claim`; ``why`` (the docs' reason) is shown only when it deviates."""
    result = verdict(float(ours), float(paper), tol=tol, exact_tol=exact_tol, relative=relative)
    bound = f"±{tol:.0%}" if relative else f"±{tol:g}"
    note = f"tolerance {bound}" + (f"; {why}" if why and result == "deviates" else "")
    return Claim(quantity, format(float(paper), fmt), format(float(ours), fmt), result, note)


def qualitative(quantity: str, paper: str, ours: str, holds: bool, why: str = "") -> Claim:
    """A qualitative claim (ordering, trend): ``reproduced`` if it holds, else ``deviates`` with ``why``."""
    return Claim(quantity, paper, ours, "reproduced" if holds else "deviates", "" if holds else why)


def comparison_markdown(claims: Sequence[Claim], title: str = "## Paper vs joulegym") -> str:
    """A Markdown table: quantity | paper | joulegym | verdict | note."""
    lines = [title, "", "| quantity | paper | joulegym | verdict | note |", "|---|---|---|---|---|"]
    for c in claims:
        if c.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {list(VERDICTS)}, got {c.verdict!r}")
        lines.append(f"| {c.quantity} | {c.paper} | {c.ours} | {c.verdict} | {c.note} |")
    return "\n".join(lines)


def markdown_table(table: Any, floatfmt: str = ".4f") -> str:
    """A pandas DataFrame as a Markdown table (no index), floats as ``floatfmt``: the per-experiment tables of the
    ``--reproduce`` reports (``tabulate`` is a dependency: pandas' ``to_markdown`` needs it)."""
    return table.to_markdown(index=False, floatfmt=floatfmt)
