"""Headless matplotlib helpers shared by the envs' ``rgb_array`` renderers and the evaluation plots."""

from __future__ import annotations

from typing import Any

import numpy as np


def new_figure(rows: int = 1, cols: int = 1, size: tuple[float, float] = (6.4, 4.0)) -> tuple[Any, np.ndarray]:
    """A headless (Agg) matplotlib figure and its ``(rows, cols)`` axes; a clear error without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - depends on the install
        import gymnasium as gym

        raise gym.error.DependencyNotInstalled(
            "plots and render_mode='rgb_array' need matplotlib: pip install 'joulegym[plots]'"
        ) from err
    from cycler import cycler

    fig, axes = plt.subplots(rows, cols, figsize=size, squeeze=False)
    for ax in axes.ravel():  # 20 distinct colours before any repeats (matplotlib's default cycle has 10)
        ax.set_prop_cycle(cycler(color=qualitative_colours(len(PALETTE))))
    return fig, axes


#: A qualitative palette of 20 distinct colours: tab10, then tab20's light shades (an 11-policy plot
#: must not reuse a colour). Hex codes of matplotlib's ``tab10`` / ``tab20`` colormaps.
PALETTE: tuple[str, ...] = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
    "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5",
)


def qualitative_colours(n: int) -> list[str]:
    """``n`` colours of :data:`PALETTE`, distinct up to 20 (then the palette repeats)."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return [PALETTE[k % len(PALETTE)] for k in range(n)]


def legend_outside(ax: Any, fontsize: float = 7, **kwargs: Any) -> Any:
    """A legend to the right of ``ax``, outside the axes, so that it never covers the data."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    ncol = 1 if len(handles) <= 14 else 2  # taller than the axes otherwise
    return ax.legend(handles, labels, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False,
                     fontsize=fontsize, ncol=ncol, **kwargs)


def figure_to_rgb(fig: Any) -> np.ndarray:
    """Rasterise a matplotlib figure to an ``(H, W, 3)`` uint8 array and close it."""
    import matplotlib.pyplot as plt

    fig.canvas.draw()
    image = np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()
    plt.close(fig)
    return image
