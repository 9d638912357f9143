"""Evaluation (docs/architecture.md): one loop for reference policies and agents, leaderboards, plots.

``evaluate.py`` is :func:`joulegym.evaluation.cli.main`; the loop is :mod:`joulegym.evaluation.runner`;
per-family plots and paper reproductions register through :mod:`joulegym.evaluation.hooks`.
"""

from joulegym.evaluation.runner import (
    EVAL_SEED_BASE,
    EpisodeTrace,
    PolicyEntry,
    eval_seeds,
    evaluate,
    parse_policies,
    run_episode,
    summarise,
)

__all__ = [
    "EVAL_SEED_BASE",
    "EpisodeTrace",
    "PolicyEntry",
    "eval_seeds",
    "evaluate",
    "parse_policies",
    "run_episode",
    "summarise",
]
