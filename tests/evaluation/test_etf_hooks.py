"""ETF evaluation hooks: the per-episode allocation plot that ``evaluate.py`` writes."""

from __future__ import annotations

import gymnasium as gym
import matplotlib.pyplot as plt

import joulegym  # noqa: F401  (registers the ids)
from joulegym.evaluation.etf import episode_plot
from joulegym.evaluation.runner import eval_seeds, evaluate, parse_policies

FIG9 = "joulegym/ETF-tx2-fig9-dynamic-v0"


def test_episode_plot_legend_names_the_apps():
    """The legend says which app each band is (model and GPU frequency, as in the paper's figures),
    shown once when every policy's episode has the same apps."""
    _, traces, _ = evaluate(FIG9, parse_policies("etf,tf", gym.make(FIG9)), eval_seeds(1))
    fig = episode_plot(traces, FIG9)
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert len(legends) == 1
    assert [t.get_text() for t in legends[0].get_texts()] == [
        "A1 resnet50@1300.5MHz", "A2 resnet50@1032.75MHz", "A3 resnet50@726.75MHz"]
    plt.close(fig)


def test_episode_plot_lists_reused_slots():
    """Random mix: a slot held by several apps over the episode lists them."""
    env_id = "joulegym/ETF-random-mix-v0"
    _, traces, _ = evaluate(env_id, parse_policies("etf", gym.make(env_id)), eval_seeds(1))
    fig = episode_plot(traces, env_id)
    texts = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert texts and all(t.startswith(("A", "slot ")) for t in texts)
    assert any(" resnet" in t or " mobilenetv2" in t for t in texts)
    plt.close(fig)
