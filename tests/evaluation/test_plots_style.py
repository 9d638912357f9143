"""The house plot style (joulegym/evaluation/plots.py): enough distinct colours, legends outside the axes, CIs over
seeds, a learning curve."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex

from joulegym.core.plotting import PALETTE, new_figure, qualitative_colours


def _legend_outside(fig, ax) -> bool:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend = ax.get_legend().get_window_extent(renderer)
    return legend.x0 >= ax.get_window_extent(renderer).x1  # starts right of the plotting area: covers nothing


def test_palette_has_enough_distinct_colours():
    assert len(set(qualitative_colours(20))) == 20 == len(PALETTE)
    _fig, axes = new_figure()
    lines = [axes[0, 0].plot([0, 1], [k, k])[0] for k in range(11)]
    assert len({to_hex(line.get_color()) for line in lines}) == 11  # matplotlib's default cycle repeats at 10
    with pytest.raises(ValueError, match="n must be >= 0"):
        qualitative_colours(-1)


def test_eleven_policy_episode_plot_distinct_colours_legend_outside():
    from joulegym.evaluation.plots import reward_plot

    traces = {f"policy-{k}": SimpleNamespace(rewards=np.sin(np.arange(30) + k), seed=0) for k in range(11)}
    fig = reward_plot(traces, "joulegym/PowerFlow-tiny-v0")
    ax = fig.axes[0]
    assert len({to_hex(line.get_color()) for line in ax.get_lines()}) == 11
    assert _legend_outside(fig, ax)


def _sensitivity_table(seeds) -> pd.DataFrame:
    rows = []
    for seed in seeds:
        for value in (16, 32):
            for policy, gain in (("afs", 1.1), ("gandiva", 1.8), ("powerflow", 1.0)):
                rows.append({"panel": "cluster", "value": value, "seed": seed, "policy": policy,
                             "improvement": gain + 0.05 * seed + 0.01 * value / 16})
    return pd.DataFrame(rows)


def test_fig10_error_bars_only_with_several_seeds():
    from joulegym.evaluation.powerflow import plot_sensitivity

    one = plot_sensitivity(_sensitivity_table([0]))
    assert not one.axes[0].containers  # one seed: no interval to show
    three = plot_sensitivity(_sensitivity_table([0, 1, 2]))
    ax = three.axes[0]
    assert len(ax.containers) == 2  # one errorbar per baseline (afs, gandiva)
    assert _legend_outside(three, ax)


def test_learning_curve_from_monitor_logs(tmp_path):
    pytest.importorskip("stable_baselines3", reason="needs the train extra")
    from joulegym.agents.callbacks import plot_learning_curve, read_monitor

    monitor = tmp_path / "monitor"
    monitor.mkdir()
    for env in range(2):
        lines = ['#{"t_start": 0.0, "env_id": "x"}', "r,l,t"]
        lines += [f"{float(k + env)},10,{0.1 * k + 0.01 * env:.3f}" for k in range(25)]
        (monitor / f"{env}.monitor.csv").write_text("\n".join(lines) + "\n")
    episodes = read_monitor(monitor)
    assert len(episodes) == 50 and episodes["timesteps"].iloc[-1] == 500
    assert np.all(np.diff(episodes["t"]) >= 0)
    png = plot_learning_curve(monitor, tmp_path / "curve.png")
    assert png.is_file() and png.stat().st_size > 5_000
    with pytest.raises(ValueError, match="holds no"):
        read_monitor(tmp_path)
