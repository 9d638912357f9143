"""Generic evaluation plots (families add their own through :mod:`joulegym.evaluation.hooks`)."""

from __future__ import annotations

import numpy as np

from joulegym.core.plotting import legend_outside, new_figure


def reward_plot(traces, env_id: str):
    """Reward per step and cumulative return of one episode per policy."""
    fig, axes = new_figure(2, 1, size=(8.6, 5.0))
    for label, trace in traces.items():
        rewards = np.asarray(trace.rewards, dtype=float)
        axes[0, 0].plot(rewards, label=label, lw=1)
        axes[1, 0].plot(np.cumsum(rewards), label=label, lw=1)
    axes[0, 0].set_ylabel("reward")
    axes[1, 0].set_ylabel("cumulative return")
    axes[1, 0].set_xlabel("step")
    axes[0, 0].set_title(f"{env_id}: one episode per policy (seed {_first_seed(traces)})")
    legend_outside(axes[0, 0])  # 11 PowerFlow policies: a legend inside would cover the curves
    fig.tight_layout()
    return fig


def _first_seed(traces) -> str:
    seeds = {t.seed for t in traces.values()}
    return str(seeds.pop()) if len(seeds) == 1 else "varies"
