"""Per-family hooks of the evaluation layer (DESIGN.md layer 7).

The evaluation loop (:mod:`joulegym.evaluation.runner`) is the same for every family and every
policy: it reads the episode return and the scalar entries of ``info["metrics"]`` at the end of an
episode. What differs per family is registered here:

- ``episode_plot(traces, env_id) -> matplotlib Figure``: the per-episode plot ``evaluate.py`` writes;
  ``traces`` maps a policy label to the :class:`joulegym.evaluation.runner.EpisodeTrace` of its first
  evaluation episode (per-step rewards and infos). Without it a generic reward-over-time plot is drawn.
- ``summary_plot(results, out_dir) -> list[Path]``: extra figures over all policies (e.g. EMRF's
  efficiency/fairness front, PowerFlow's JCT-vs-energy curves); ``results`` is the per-episode
  :class:`pandas.DataFrame` that ``evaluate.py`` writes as CSV.
- ``reproduce(out_dir, quick) -> list[Path]``: ``evaluate.py --reproduce FAMILY``; recompute the
  paper's headline figures/tables into ``out_dir`` and return the files written.
- ``headline_metrics``: the ``info["metrics"]`` keys shown first in the Markdown table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

FAMILY_HOOK_MODULES = {
    "etf": "joulegym.evaluation.etf",
    "emrf": "joulegym.evaluation.emrf",
    "powerflow": "joulegym.evaluation.powerflow",
}


@dataclass
class FamilyHooks:
    family: str
    episode_plot: Callable[..., Any] | None = None
    summary_plot: Callable[..., list] | None = None
    reproduce: Callable[..., list] | None = None
    headline_metrics: Sequence[str] = field(default_factory=tuple)


_HOOKS: dict[str, FamilyHooks] = {}


def register_family(family: str, **hooks: Any) -> None:
    """Register (or update) the evaluation hooks of ``family``."""
    current = _HOOKS.setdefault(family, FamilyHooks(family))
    for key, value in hooks.items():
        if not hasattr(current, key):
            raise ValueError(f"unknown hook {key!r}; allowed: episode_plot, summary_plot, reproduce, "
                             "headline_metrics")
        setattr(current, key, value)


def hooks_for(family: str) -> FamilyHooks:
    """The hooks of ``family`` (importing its hook module on first use); empty hooks if none."""
    if family not in _HOOKS and family in FAMILY_HOOK_MODULES:
        import importlib

        importlib.import_module(FAMILY_HOOK_MODULES[family])
    return _HOOKS.get(family, FamilyHooks(family))
