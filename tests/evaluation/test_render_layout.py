"""Rendered frames and leaderboard plots keep their data visible: legends beside the axes (never over a bar or a
curve), every bar and reference line inside the axes, a title on every frame, legend entries for every marker."""

from __future__ import annotations

import gymnasium as gym
import matplotlib
import pytest

matplotlib.use("Agg")


def _frame_figure(env_id: str, steps: int = 8, **kwargs):
    """The frame after ``steps`` steps of the family's reference policy (as the docs' env pages draw it)."""
    from joulegym import baselines
    from joulegym.core.family import get_family

    env = gym.make(env_id, render_mode="rgb_array", **kwargs)  # a render mode: DREAM records its timeline
    obs, info = env.reset(seed=0)
    family = env.unwrapped.family
    policy = baselines.make(get_family(family).reference_policy, family=family)
    policy.reset(env, seed=0)
    for _ in range(steps):
        obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
        if terminated or truncated:
            break
    fig = env.unwrapped._render_figure()
    fig.canvas.draw()
    return fig


def _legend_outside_axes(ax) -> bool:
    legend = ax.get_legend()
    renderer = ax.figure.canvas.get_renderer()
    return legend is not None and not legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))


@pytest.mark.parametrize("env_id", ["joulegym/EMRF-v0", "joulegym/PowerFlow-v0"])
def test_legends_sit_beside_the_axes(env_id):
    fig = _frame_figure(env_id)
    legends = [ax for ax in fig.axes if ax.get_legend() is not None]
    assert legends and all(_legend_outside_axes(ax) for ax in legends)


def test_emrf_bars_and_powerflow_budget_stay_inside_the_axes():
    emrf = _frame_figure("joulegym/EMRF-v0").axes[0]
    tops = [patch.get_y() + patch.get_height() for patch in emrf.patches]
    assert tops and max(tops) < emrf.get_ylim()[1]
    power = _frame_figure("joulegym/PowerFlow-v0").axes[1]
    budget = next(line for line in power.get_lines() if line.get_label() == "budget")
    assert max(budget.get_ydata()) < power.get_ylim()[1]


def test_every_frame_has_a_title():
    for env_id in ("joulegym/PowerFlow-v0", "joulegym/EMRF-v0", "joulegym/DREAM-tiny-v0"):
        fig = _frame_figure(env_id)
        titles = [fig.get_suptitle()] + [ax.get_title() for ax in fig.axes]
        assert any(titles), env_id


def test_dream_legend_explains_the_drop_and_miss_markers():
    fig = _frame_figure("joulegym/DREAM-tiny-v0", steps=40)
    labels = [text.get_text() for text in fig.axes[0].get_legend().get_texts()]
    assert any("drop" in label for label in labels) and "deadline miss" in labels
    assert len(fig.axes[0].collections) > 0  # something was dispatched: bars drawn


def test_performance_profile_legend_beside_the_axes():
    """Seven policies whose profiles span the whole plot: the legend goes beside it, not over the curves."""
    from types import SimpleNamespace

    import numpy as np
    import pandas as pd

    from joulegym.evaluation import figures

    rng = np.random.default_rng(0)
    policies = [f"policy-{k}" for k in range(7)]
    episodes = pd.DataFrame([{"policy": p, "scenario": s, "run": 0, "seed": seed, "normalised": rng.uniform(-0.5, 1.7)}
                             for p in policies for s in ("a", "b") for seed in range(4)])
    result = SimpleNamespace(episodes=episodes, ranking=pd.DataFrame({"policy": policies}), scenarios=("a", "b"),
                             aggregated=["a", "b"], benchmark=SimpleNamespace(metric="F_S"), name="toy")
    fig = figures.profile_plot(result)
    fig.canvas.draw()
    assert _legend_outside_axes(fig.axes[0])
