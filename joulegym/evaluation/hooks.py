"""Per-family hooks of the evaluation layer, read from the module its family descriptor names.

The evaluation loop is the same for every family and policy (:func:`joulegym.core.rollout.rollout`):
it reads the episode return and the scalar entries of the final ``info["metrics"]``. What differs per
family are module-level names of ``FamilyDescriptor.evaluation`` (each optional):

- ``episode_plot(traces, env_id) -> Figure``: the per-episode plot ``evaluate.py`` writes; ``traces``
  maps a policy label to its first evaluation :class:`~joulegym.core.rollout.Episode` (recorded).
  Without it a generic reward-over-time plot is drawn.
- ``summary_plot(results, out_dir) -> list[Path]``: extra figures over all policies (``results``: the
  per-episode :class:`pandas.DataFrame` that ``evaluate.py`` writes as CSV).
- ``reproduce(out_dir, quick) -> list[Path]``: ``evaluate.py --reproduce FAMILY``.
- ``HEADLINE``: the ``info["metrics"]`` keys shown first in the leaderboard.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from joulegym.core.family import get_family


@dataclass(frozen=True)
class FamilyHooks:
    family: str
    episode_plot: Callable[..., Any] | None = None
    summary_plot: Callable[..., list] | None = None
    reproduce: Callable[..., list] | None = None
    headline_metrics: Sequence[str] = field(default_factory=tuple)


def hooks_for(family: str) -> FamilyHooks:
    """The hooks of ``family`` (importing its evaluation module); empty hooks if it has none."""
    name = get_family(family).evaluation
    if name is None:
        return FamilyHooks(family)
    module = importlib.import_module(name)
    return FamilyHooks(family, getattr(module, "episode_plot", None), getattr(module, "summary_plot", None),
                       getattr(module, "reproduce", None), tuple(getattr(module, "HEADLINE", ())))
