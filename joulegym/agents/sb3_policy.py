"""A trained SB3 model as a joulegym :class:`~joulegym.baselines.Policy` (docs/architecture.md).

The evaluation loop drives reference policies and trained agents the same way; this adapter is
what makes that possible. Actions are deterministic by default (the leaderboard convention) and,
for maskable algorithms, respect ``info["action_mask"]`` / the env's ``action_masks()``.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import gymnasium as gym

from joulegym.agents.algos import ALGOS, algo_spec, load_model, saved_algo
from joulegym.agents.weights import AGENT_FILE, WEIGHTS_FILE, is_weights_dir, load_weights, read_agent_json
from joulegym.core.actions import flat_mask

UNSAFE_FLAG = "--unsafe-unpickle-model-zip"  # evaluate.py's (and train.py --resume's) opt-in to unpickling


def _no_weights_only(path: Path, zip_path: Path) -> str:
    """Why ``path`` is not a weights-only agent, and what is allowed."""
    for folder in (path, path / "agent"):
        present = [f for f in (AGENT_FILE, WEIGHTS_FILE) if (folder / f).is_file()]
        if folder.is_dir() and present:
            missing = next(f for f in (AGENT_FILE, WEIGHTS_FILE) if f not in present)
            return f"{str(folder)!r} is a weights-only agent without {missing} (it needs {AGENT_FILE} + {WEIGHTS_FILE})"
    if zip_path.is_file():
        return (f"{str(zip_path)!r} is a model.zip, which is unpickled when loaded and can run code: evaluate the "
                f"run's weights-only agent/ directory, or pass {UNSAFE_FLAG} (allow_pickle=True) for a file you trust")
    if not path.exists():
        return f"agent {str(path)!r} does not exist"
    return f"{str(path)!r} holds no weights-only agent ({AGENT_FILE} + {WEIGHTS_FILE}, or a run directory's agent/)"


class SB3Policy:
    """Wraps a Stable-Baselines3 model.

    :param model: a trained SB3 / sb3-contrib model (``None`` with ``weights_dir``: rebuilt at ``reset``).
    :param name: the name shown in leaderboards (e.g. ``"ppo"``).
    :param deterministic: greedy actions (default) instead of sampling.
    :param weights_dir: a weights-only agent (:mod:`joulegym.agents.weights`), loaded on the first ``reset(env)``.
    """

    privileged = False

    def __init__(self, model: Any, name: str = "agent", deterministic: bool = True,
                 weights_dir: str | Path | None = None) -> None:
        if model is None and weights_dir is None:
            raise ValueError("SB3Policy needs a model or a weights_dir")
        self.model = model
        self.name = name
        self.deterministic = deterministic
        self._weights_dir = None if weights_dir is None else Path(weights_dir)
        self._env: gym.Env | None = None
        self._masked = model is not None and type(model).__name__.startswith("Maskable")

    @classmethod
    def load(cls, path: str | Path, algo: str | None = None, name: str | None = None,
             deterministic: bool = True, *, allow_pickle: bool = False) -> SB3Policy:
        """Load an agent: a weights-only directory (``agent.json`` + ``weights.pt``, or a ``train.py`` run
        directory holding ``agent/``: safe, nothing is unpickled). A ``model.zip`` (SB3's format: loading it
        unpickles code) is loaded only with ``allow_pickle=True`` (``evaluate.py --unsafe-unpickle-model-zip``),
        with a warning. The algorithm is read from ``agent.json`` / ``config.json`` when not given.

        :raises ValueError: no weights-only agent at ``path`` (naming the file that is missing or malformed), or
            a ``model.zip`` without ``allow_pickle``.
        """
        path = Path(path)
        for candidate in (path, path / "agent"):
            if is_weights_dir(candidate):
                meta = read_agent_json(candidate)
                if algo is not None and algo_spec(algo).name != meta.get("algo"):
                    raise ValueError(f"{str(candidate)!r} holds a {meta.get('algo')!r} agent, not {algo!r}")
                return cls(None, name=name or meta.get("algo", "agent"), deterministic=deterministic,
                           weights_dir=candidate)
        zip_path = path / "model.zip" if path.is_dir() else path
        if not allow_pickle:
            raise ValueError(_no_weights_only(path, zip_path))
        if algo is None:
            algo = cls.infer_algo(zip_path)  # config.json beside it, else the zip's own data; ValueError otherwise
        algo_spec(algo)
        warnings.warn(f"{UNSAFE_FLAG}: unpickling {zip_path}, which can run code: load model.zip files only from "
                      "sources you trust", UserWarning, stacklevel=2)
        return cls(load_model(algo, zip_path), name=name or algo, deterministic=deterministic)

    @staticmethod
    def run_config(path: str | Path) -> dict[str, Any] | None:
        """The ``train.py`` ``config.json`` of the agent at ``path`` (a run directory, its ``agent/`` or its
        ``model.zip``), or None when there is none."""
        path = Path(path)
        for folder in (path, path.parent) if path.name in ("agent", "model.zip") or path.is_file() else (path,):
            config = folder / "config.json"
            if config.is_file():
                try:
                    data = json.loads(config.read_text())
                except (json.JSONDecodeError, UnicodeDecodeError) as err:
                    raise ValueError(f"{config}: not valid JSON ({getattr(err, 'msg', None) or err.reason})") from None
                if not isinstance(data, dict) or not isinstance(data.get("env_id", ""), str) or not isinstance(
                        data.get("env_kwargs") or {}, dict):
                    raise ValueError(f"{config}: must hold a JSON object with a string env_id and an env_kwargs "
                                     "object (what train.py writes); the file is damaged")
                return data
        return None

    @classmethod
    def infer_algo(cls, path: str | Path) -> str:
        """The algorithm of the agent at ``path``: from ``agent.json``, the run's ``config.json`` or the
        ``model.zip`` itself; ``ValueError`` naming the ``ALGO:PATH`` form when it cannot be told."""
        path = Path(path)
        for candidate in (path, path / "agent"):
            if is_weights_dir(candidate):
                return str(read_agent_json(candidate)["algo"])
        config = cls.run_config(path)
        if config is not None and config.get("algo"):
            return str(config["algo"])
        algo = saved_algo(path / "model.zip" if path.is_dir() else path)
        if algo is None:
            raise ValueError(f"cannot tell the algorithm of {str(path)!r} (no agent.json or config.json); pass it "
                             f"as ALGO:PATH with ALGO one of {sorted(ALGOS)}")
        return algo

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        if self.model is None:
            self.model = load_weights(self._weights_dir, env)
            self._masked = type(self.model).__name__.startswith("Maskable")
        if env.observation_space.shape != self.model.observation_space.shape:
            raise ValueError(
                f"model observation shape {self.model.observation_space.shape} does not match the env's "
                f"{env.observation_space.shape}: the model was trained on another env/config"
            )
        self._env = env

    @staticmethod
    @contextmanager
    def one_thread() -> Iterator[None]:
        """Torch on one intra-op thread while the agent's episodes run, the previous count restored after: a forward
        pass of one observation through a small network gains nothing from more threads, whose idle workers spin
        and add their CPU time (the actions do not depend on the count: the evaluation's files are the same)."""
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        kwargs: dict[str, Any] = {"deterministic": self.deterministic}
        if self._masked:
            mask = info.get("action_mask") if info else None
            if mask is None and self._env is not None and hasattr(self._env.unwrapped, "action_masks"):
                mask = self._env.unwrapped.action_masks()
            if mask is not None:
                kwargs["action_masks"] = flat_mask(mask)
        action, _ = self.model.predict(obs, **kwargs)
        return action
