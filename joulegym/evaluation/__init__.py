"""Evaluation (docs/architecture.md): one loop for reference policies and agents, leaderboards, plots.

``evaluate.py`` is :func:`joulegym.evaluation.cli.main`; :mod:`joulegym.evaluation.runner` runs policies over
held-out seeds through :func:`joulegym.core.rollout.rollout` and summarises them; per-family plots and paper
reproductions are the module each family descriptor names (:mod:`joulegym.evaluation.hooks`).
"""

from joulegym.evaluation.runner import (
    EVAL_SEED_BASE,
    PolicyEntry,
    eval_seeds,
    evaluate,
    parse_policies,
    run_episode,
    summarise,
)

__all__ = [
    "EVAL_SEED_BASE",
    "PolicyEntry",
    "eval_seeds",
    "evaluate",
    "parse_policies",
    "run_episode",
    "summarise",
]
