"""``train.py --eval-freq N``: evaluation on held-out validation seeds during training, keeping the best agent.

Seeds: training runs on seeds below :data:`VALIDATION_SEED_BASE` (9000), validation uses ``9000 + i``, and the
leaderboard's test seeds start at :data:`~joulegym.core.benchmark.TRAINING_SEED_LIMIT` (10000), so the best model
is chosen on episodes that are neither trained on nor scored. Every ``eval_freq`` environment steps the current
policy (deterministic, masked where the algorithm is) plays one episode from each validation seed; the mean
return is appended to ``best/evaluations.csv`` and, when it beats the best so far, the policy is saved as the
weights-only agent ``best/agent/`` with ``best/score.json`` (its step count, mean and per-seed returns). Like SB3's
``EvalCallback`` (whose seeding cannot replay fixed seeds: an evaluation's episodes after the first continue the
env's random stream), but with the same seeds at every evaluation, so scores are comparable across a run and
across ``--resume`` (which reads the best score back).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from joulegym.core.benchmark import TRAINING_SEED_LIMIT, VALIDATION_SEED_BASE

VALIDATION_EPISODES = 10  # seeds 9000-9009
BEST_DIR = "best"


def validation_seeds(n: int) -> list[int]:
    """The first ``n`` validation seeds (``ValueError`` if they would reach the test seeds)."""
    if not 1 <= n <= TRAINING_SEED_LIMIT - VALIDATION_SEED_BASE:
        raise ValueError(f"--eval-episodes must be in [1, {TRAINING_SEED_LIMIT - VALIDATION_SEED_BASE}], got {n}")
    return [VALIDATION_SEED_BASE + i for i in range(n)]


def validation_returns(model: Any, env_id: str, env_kwargs: dict[str, Any], seeds: list[int]) -> list[float]:
    """The undiscounted return of one deterministic episode of ``model`` from each seed."""
    import gymnasium as gym

    from joulegym.agents.sb3_policy import SB3Policy
    from joulegym.core.rollout import MAX_EPISODE_STEPS, rollout

    policy = SB3Policy(model, name="validation")
    env = gym.make(env_id, **env_kwargs)
    try:
        return [float(np.sum(rollout(env, policy, seed, max_steps=MAX_EPISODE_STEPS).total_return)) for seed in seeds]
    finally:
        env.close()


class ValidationCallback(BaseCallback):
    """Every ``eval_freq`` steps: the mean return over ``seeds``; keeps the best weights-only agent in
    ``out_dir/best`` (module docstring)."""

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], algo: str, out_dir: Path, eval_freq: int,
                 seeds: list[int]) -> None:
        super().__init__()
        if eval_freq < 1:
            raise ValueError(f"--eval-freq must be >= 1, got {eval_freq}")
        self.env_id, self.env_kwargs, self.algo = env_id, dict(env_kwargs), algo
        self.folder, self.eval_freq, self.seeds = Path(out_dir) / BEST_DIR, int(eval_freq), list(seeds)
        self.best = self._stored_best()
        self._last = 0

    def _stored_best(self) -> float:
        path = self.folder / "score.json"
        try:
            return float(json.loads(path.read_text())["mean_return"])
        except (OSError, ValueError, KeyError, TypeError):
            return -np.inf

    def _on_training_start(self) -> None:
        self._last = int(self.num_timesteps)

    def _on_step(self) -> bool:
        if self.num_timesteps - self._last >= self.eval_freq:
            self._last = int(self.num_timesteps)
            self.evaluate()
        return True

    def evaluate(self) -> float:
        """Evaluate now; save the agent when it is the best so far. Returns the mean return."""
        from joulegym.agents.weights import save_weights
        from joulegym.core.io import write_atomic

        returns = validation_returns(self.model, self.env_id, self.env_kwargs, self.seeds)
        mean = float(np.mean(returns))
        self.folder.mkdir(parents=True, exist_ok=True)
        log = self.folder / "evaluations.csv"
        rows = log.read_text() if log.is_file() else "timesteps,mean_return,std_return\n"
        write_atomic(log, rows + f"{int(self.num_timesteps)},{mean!r},{float(np.std(returns))!r}\n")
        self.logger.record("eval/mean_return", mean)
        if mean > self.best:
            self.best = mean
            save_weights(self.model, self.algo, self.folder / "agent")
            write_atomic(self.folder / "score.json", json.dumps(
                {"num_timesteps": int(self.num_timesteps), "mean_return": mean, "returns": returns,
                 "seeds": self.seeds, "env_id": self.env_id, "env_kwargs": self.env_kwargs}, indent=2) + "\n")
        return mean
