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
    fig, axes = plt.subplots(rows, cols, figsize=size, squeeze=False)
    return fig, axes


def figure_to_rgb(fig: Any) -> np.ndarray:
    """Rasterise a matplotlib figure to an ``(H, W, 3)`` uint8 array and close it."""
    import matplotlib.pyplot as plt

    fig.canvas.draw()
    image = np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()
    plt.close(fig)
    return image
