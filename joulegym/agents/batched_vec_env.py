"""An SB3 ``VecEnv`` backed by a family's batched vector env (docs/performance.md, "Training").

Stable-Baselines3 steps ``n_envs`` copies of an env through a ``VecEnv``; its ``DummyVecEnv`` holds one Python env
per copy and calls each one per step. Where an id has a batched ``vector_entry_point`` (ETF and EMRF kinds),
:class:`BatchedVecEnv` steps all ``n_envs`` instances with one call to it, so the learner's one policy forward per
batch meets one env call per batch.

SB3's convention differs from Gymnasium's batched envs in one way: an instance whose episode ends is reset *in the
same step* (its returned observation is the new episode's first; the last one is ``info["terminal_observation"]``,
and ``info["TimeLimit.truncated"]`` says a time limit ended it). :class:`BatchedVecEnv` resets the ended instances
right after the step (``reset(options={"reset_mask": ended})``), so instance ``i`` seeded with ``seed + i`` gives
the observations, rewards and dones of ``DummyVecEnv`` over ``gym.make`` envs under the same actions (a test pins
this). Per-step ``infos`` are fresh empty dicts except at an episode end, which carries the paper's ``metrics``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvObs, VecEnvStepReturn


def has_batched_entry_point(env_id: str) -> bool:
    """Whether ``env_id`` registers a batched ``vector_entry_point``."""
    return env_id in gym.registry and gym.spec(env_id).vector_entry_point is not None


class BatchedVecEnv(VecEnv):
    """``n_envs`` instances of ``env_id`` behind SB3's ``VecEnv`` API, stepped by the id's batched vector env.

    :param env_id: a joulegym id with a ``vector_entry_point``.
    :param n_envs: number of instances.
    :param env_kwargs: ``gym.make`` keyword arguments of every instance.
    """

    def __init__(self, env_id: str, n_envs: int, env_kwargs: dict[str, Any] | None = None) -> None:
        if not has_batched_entry_point(env_id):
            raise ValueError(f"env={env_id!r} has no batched vector_entry_point; use SB3's DummyVecEnv")
        self.venv = gym.make_vec(env_id, num_envs=n_envs, vectorization_mode="vector_entry_point",
                                 **(env_kwargs or {}))
        self.env_id = env_id
        self.render_mode = None
        super().__init__(n_envs, self.venv.single_observation_space, self.venv.single_action_space)
        self._actions: np.ndarray | None = None
        self._masks: np.ndarray | None = None

    # --- SB3 VecEnv API -------------------------------------------------------------------------------------------
    def reset(self) -> VecEnvObs:
        seeds = self._seeds
        seed = None if all(s is None for s in seeds) else list(seeds)
        obs, info = self.venv.reset(seed=seed)
        self._seeds = [None] * self.num_envs
        self._remember_masks(info)
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, terminated, truncated, info = self.venv.step(self._actions)
        dones = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if dones.any():
            ended = np.flatnonzero(dones)
            for n in ended:
                infos[n] = {"terminal_observation": obs[n].copy(),
                            "TimeLimit.truncated": bool(truncated[n] and not terminated[n]),
                            "metrics": self.venv.metrics(int(n))}
            fresh, reset_info = self.venv.reset(options={"reset_mask": dones.copy()})
            obs = obs.copy()
            obs[ended] = fresh[ended]
            self._remember_masks(info)
            if self._masks is not None and "action_mask" in reset_info:
                self._masks[ended] = np.asarray(reset_info["action_mask"], dtype=bool)[ended]
            return obs, np.asarray(rewards, dtype=np.float32), dones, infos
        self._remember_masks(info)
        return obs, np.asarray(rewards, dtype=np.float32), dones, infos

    def close(self) -> None:
        self.venv.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        value = self.action_masks if attr_name == "action_masks" else getattr(self.venv, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise AttributeError(f"{type(self).__name__}: the instances share one batched env; set {attr_name!r} "
                             "through gym.make keyword arguments instead")

    def env_method(self, method_name: str, *method_args: Any, indices: VecEnvIndices = None,
                   **method_kwargs: Any) -> list[Any]:
        if method_name == "action_masks":  # sb3-contrib's MaskablePPO
            return [self.action_masks()[n] for n in self._get_indices(indices)]
        raise AttributeError(f"{type(self).__name__} has no per-instance method {method_name!r}")

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]

    # --- action masks ---------------------------------------------------------------------------------------------
    def action_masks(self) -> np.ndarray:
        """The ``(n_envs, ...)`` valid actions now (all valid where the kind has no mask)."""
        if self._masks is not None:
            return self._masks
        space = self.action_space
        size = int(space.n) if isinstance(space, gym.spaces.Discrete) else int(np.sum(getattr(space, "nvec", 1)))
        return np.ones((self.num_envs, size), dtype=bool)

    def _remember_masks(self, info: dict[str, Any]) -> None:
        masks = info.get("action_mask")
        self._masks = None if masks is None else np.array(masks, dtype=bool)


BATCHED_MONITOR = "batched"  # monitor/batched.monitor.csv: the one Monitor CSV of a batched run


def monitor_files(env_id: str, n_envs: int) -> list[str]:
    """The Monitor CSVs a ``train.py`` run of ``n_envs`` envs of ``env_id`` writes into ``monitor/``."""
    if n_envs >= 2 and has_batched_entry_point(env_id):
        return [BATCHED_MONITOR + ".monitor.csv"]
    return [f"{rank}.monitor.csv" for rank in range(n_envs)]


def make_training_vec_env(env_id: str, n_envs: int, seed: int | None, env_kwargs: dict[str, Any] | None,
                          monitor_dir: str | None, *, resume: bool = False) -> VecEnv:
    """The VecEnv ``train.py`` learns on: :class:`BatchedVecEnv` where ``env_id`` has a batched entry point and
    ``n_envs > 1`` (under SB3's ``VecMonitor``, one ``batched.monitor.csv``), else SB3's ``make_vec_env``
    (``DummyVecEnv`` of ``Monitor``-wrapped envs). Instance ``i`` is seeded with ``seed + i`` either way.

    :param resume: append to the Monitor CSVs already in ``monitor_dir`` (``train.py --resume`` keeps the record).
    """
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.monitor import ResultsWriter
    from stable_baselines3.common.vec_env import VecMonitor

    if n_envs < 2 or not has_batched_entry_point(env_id):
        return make_vec_env(env_id, n_envs=n_envs, seed=seed, env_kwargs=env_kwargs, monitor_dir=monitor_dir,
                            monitor_kwargs={"override_existing": not resume})
    venv = BatchedVecEnv(env_id, n_envs, env_kwargs)
    if seed is not None:
        venv.seed(seed)
        venv.action_space.seed(seed)
    if monitor_dir is None:
        return VecMonitor(venv, info_keywords=())
    from pathlib import Path

    Path(monitor_dir).mkdir(parents=True, exist_ok=True)
    filename = str(Path(monitor_dir) / BATCHED_MONITOR)
    if not resume:
        return VecMonitor(venv, filename=filename, info_keywords=())
    monitored = VecMonitor(venv, filename=None, info_keywords=())  # VecMonitor's own writer would truncate the CSV
    monitored.results_writer = ResultsWriter(filename, header={"t_start": monitored.t_start, "env_id": env_id},
                                             extra_keys=(), override_existing=False)
    return monitored


def set_monitor_clock(vec_env: VecEnv, elapsed_s: float) -> None:
    """Let the Monitor(s) of ``vec_env`` count time from ``elapsed_s`` seconds ago (a resumed run's clock)."""
    import time

    from stable_baselines3.common.vec_env import VecMonitor

    if isinstance(vec_env, VecMonitor):
        vec_env.t_start = time.time() - elapsed_s
    else:
        vec_env.set_attr("t_start", time.time() - elapsed_s)
