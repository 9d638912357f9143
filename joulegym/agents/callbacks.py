"""Training callbacks: the paper metrics of every finished episode (TensorBoard), progress lines, the learning curve."""

from __future__ import annotations

import numbers
from pathlib import Path

import numpy as np
import pandas as pd
from stable_baselines3.common.callbacks import BaseCallback

from joulegym.core.progress import ProgressLog


class EpisodeMetricsCallback(BaseCallback):
    """Logs the scalar entries of ``info["metrics"]`` at each episode end as ``metrics/<key>``.

    The values are averaged over the episodes that ended since the last log (SB3's logger mean).
    """

    def _on_step(self) -> bool:
        dones = self.locals.get("dones")
        infos = self.locals.get("infos") or []
        if dones is None:
            return True
        for done, info in zip(np.asarray(dones).ravel(), infos):
            if not done:
                continue
            for key, value in (info.get("metrics") or {}).items():
                if isinstance(value, numbers.Real) and not isinstance(value, bool):
                    self.logger.record_mean(f"metrics/{key}", float(value))
        return True


class TrainingProgressCallback(BaseCallback):
    """Training progress (docs/tutorials/train-and-evaluate.md): a tqdm bar on a terminal, plain lines in a file.

    Plain lines (:class:`joulegym.core.progress.ProgressLog`) give the timesteps done and the mean return of the
    episodes finished since the previous line, at most every ``interval_s`` seconds (plus the first and last).
    """

    def __init__(self, total_timesteps: int, desc: str = "train", interval_s: float | None = None) -> None:
        super().__init__()
        if total_timesteps < 1:
            raise ValueError(f"total_timesteps must be >= 1, got {total_timesteps}")
        self.total_timesteps, self.desc, self.interval_s = int(total_timesteps), desc, interval_s
        self._progress: ProgressLog | None = None
        self._returns: list[float] = []
        self._start = 0

    def _on_training_start(self) -> None:
        kwargs = {} if self.interval_s is None else {"interval_s": self.interval_s}
        self._start = int(self.num_timesteps)
        self._progress = ProgressLog(self.total_timesteps, self.desc, unit="step", **kwargs)

    def _on_step(self) -> bool:
        for info in self.locals.get("infos") or []:
            episode = info.get("episode")  # set by SB3's Monitor at an episode end
            if episode is not None:
                self._returns.append(float(episode["r"]))
        if self._progress is not None:
            done = min(int(self.num_timesteps) - self._start, self.total_timesteps)
            what = f"mean return {np.mean(self._returns):.4g} ({len(self._returns)} ep)" if self._returns else ""
            before = self._progress.lines
            self._progress.update(done - self._progress.done, what)
            if self._progress.lines != before:  # a line was written: the next one averages anew
                self._returns = []
        return True

    def _on_training_end(self) -> None:
        if self._progress is not None:
            self._progress.close()
            self._progress = None


def read_monitor(monitor_dir: str | Path) -> pd.DataFrame:
    """Every episode of SB3 ``Monitor`` CSVs in ``monitor_dir``: ``r`` (return), ``l`` (length), ``t`` (wall time
    since the start), in finishing order, with ``timesteps`` (cumulative steps over all the envs)."""
    files = sorted(Path(monitor_dir).glob("*monitor.csv"))
    if not files:
        raise ValueError(f"monitor_dir={str(monitor_dir)!r} holds no *monitor.csv (SB3 Monitor logs)")
    frames = [pd.read_csv(f, comment="#") for f in files]
    episodes = pd.concat([f for f in frames if len(f)], ignore_index=True) if any(len(f) for f in frames) \
        else pd.DataFrame(columns=["r", "l", "t"])
    episodes = episodes.sort_values("t", kind="stable").reset_index(drop=True)
    episodes["timesteps"] = episodes["l"].cumsum()
    return episodes


def plot_learning_curve(monitor_dir: str | Path, out_png: str | Path, title: str = "",
                        window: int | None = None) -> Path:
    """The learning curve of one run: episode return against timesteps from its ``Monitor`` logs, with the
    moving mean over ``window`` episodes (default: a tenth of them, 1-50) and a ±1 std band of that window."""
    from joulegym.core.io import save_figure
    from joulegym.core.plotting import legend_outside, new_figure

    episodes = read_monitor(monitor_dir)
    fig, axes = new_figure(1, 1, size=(8.0, 4.0))
    ax = axes[0, 0]
    if len(episodes):
        window = window or int(np.clip(len(episodes) // 10, 1, 50))
        rolling = episodes["r"].rolling(window, min_periods=1)
        mean, std = rolling.mean().to_numpy(), rolling.std(ddof=0).fillna(0.0).to_numpy()
        x = episodes["timesteps"].to_numpy()
        ax.plot(x, episodes["r"], ".", ms=2, alpha=0.35, label="episode return")
        ax.plot(x, mean, "-", lw=1.8, label=f"moving mean ({window} episodes)")
        ax.fill_between(x, mean - std, mean + std, alpha=0.2, label="±1 std (same window)")
    else:
        ax.text(0.5, 0.5, "no finished episode yet", transform=ax.transAxes, ha="center")
    ax.set_xlabel("timesteps")
    ax.set_ylabel("episode return")
    ax.set_title(title or f"learning curve ({len(episodes)} episodes)", fontsize=9)
    ax.grid(alpha=0.3)
    legend_outside(ax)
    fig.tight_layout()
    return save_figure(fig, Path(out_png))
