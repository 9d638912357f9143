"""Training callbacks: the paper metrics of every finished episode, logged to TensorBoard."""

from __future__ import annotations

import numbers

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback


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
