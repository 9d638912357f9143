"""``evaluate.py --record``: an episode of each evaluated policy or agent as an animation (rl-zoo3's ``enjoy.py``
records the same way: the env's ``rgb_array`` frames, one per step).

The recorded episode is each policy's first evaluation episode (the first held-out seed, with the policy's own
env settings, as :func:`joulegym.evaluation.runner.evaluate` plays it), so the animation shows an episode the
leaderboard scored. Frames are the env's ``render()`` in ``rgb_array`` mode: the reset's and one per step, at most
``max_frames`` (a long episode is cut there). Formats: ``gif`` (Pillow, which matplotlib already needs) and
``mp4`` (matplotlib's ``FFMpegWriter``; needs the ``ffmpeg`` program on the ``PATH``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

RECORD_FORMATS = ("gif", "mp4")
RECORD_FRAMES = 120  # default cap: two minutes of ETF epochs, a few seconds of animation at the env's fps


def check_format(fmt: str) -> str:
    """``fmt`` if it can be written here; ``ValueError`` naming the flag and what is allowed otherwise."""
    if fmt not in RECORD_FORMATS:
        raise ValueError(f"--record must be one of {list(RECORD_FORMATS)}, got {fmt!r}")
    if fmt == "mp4":
        from matplotlib import animation

        if not animation.writers.is_available("ffmpeg"):
            raise ValueError("--record mp4 needs the ffmpeg program on the PATH (not found); use --record gif")
    return fmt


def episode_frames(env_id: str, env_kwargs: dict[str, Any], policy: Any, seed: int,
                   max_frames: int = RECORD_FRAMES) -> tuple[list[np.ndarray], float]:
    """The ``rgb_array`` frames of ``policy``'s episode from ``seed`` (at most ``max_frames``) and the env's fps."""
    from joulegym.core.policy import env_config_for

    if max_frames < 1:
        raise ValueError(f"--record-frames must be >= 1, got {max_frames}")
    env = gym.make(env_id, render_mode="rgb_array", **env_config_for(policy, env_kwargs))
    try:
        obs, info = env.reset(seed=seed)
        policy.reset(env, seed=seed)
        frames = [np.asarray(env.render())]
        done = False
        while not done and len(frames) < max_frames:
            obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
            frames.append(np.asarray(env.render()))
            done = terminated or truncated
        fps = float(env.metadata.get("render_fps") or 4)
    finally:
        env.close()
    return frames, fps


def write_animation(frames: Sequence[np.ndarray], path: Path, fps: float, fmt: str = "gif") -> Path:
    """Write ``frames`` (``(H, W, 3)`` uint8) to ``path`` as a GIF (Pillow) or an MP4 (ffmpeg)."""
    if not frames:
        raise ValueError("no frame to write")
    path = Path(path)
    if fmt == "gif":
        from PIL import Image

        images = [Image.fromarray(np.asarray(f, dtype=np.uint8)) for f in frames]
        images[0].save(path, save_all=True, append_images=images[1:], duration=max(1, round(1000 / fps)), loop=0)
        return path
    from matplotlib import animation
    from matplotlib.figure import Figure

    height, width = np.asarray(frames[0]).shape[:2]
    fig = Figure(figsize=(width / 100, height / 100), dpi=100)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    image = ax.imshow(frames[0])
    writer = animation.FFMpegWriter(fps=fps)
    with writer.saving(fig, str(path), dpi=100):
        for frame in frames:
            image.set_data(frame)
            writer.grab_frame()
    return path


def file_label(label: str) -> str:
    """A policy label as a file-name part (``ppo:runs/x`` -> ``ppo-runs-x``)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-") or "policy"


def record_policies(env_id: str, env_kwargs: dict[str, Any], entries: Sequence[Any], seed: int, out: Path,
                    fmt: str = "gif", max_frames: int = RECORD_FRAMES, skip: Sequence[str] = ()) -> list[Path]:
    """``episode-<policy>.<fmt>`` in ``out`` for every entry (a :class:`~joulegym.evaluation.runner.PolicyEntry`)
    not in ``skip`` (the labels the evaluation skipped)."""
    written = []
    for entry in entries:
        if entry.label in skip:
            continue
        frames, fps = episode_frames(env_id, env_kwargs, entry.build(), seed, max_frames)
        written.append(write_animation(frames, Path(out) / f"episode-{file_label(entry.label)}.{fmt}", fps, fmt))
    return written
