"""Samples per CPU second of training, per family, next to a do-nothing env (docs/performance.md, "Training").

For each ``(env id, algorithm, n_envs)`` this builds what ``train.py`` builds (the VecEnv of
:func:`joulegym.agents.batched_vec_env.make_training_vec_env`: the batched env where the id has one, else
``DummyVecEnv``; the model with the project's hyperparameters, ``joulegym/agents/hyperparams``) and measures the CPU
seconds of ``model.learn(timesteps)`` after a warm-up ``learn``: samples per CPU second of the whole run and of the
collection alone (less the gradient updates); beside it the same for a do-nothing env with the same spaces
(:class:`SpacesOnlyEnv`: returns zeros), so the table shows whether the learner or the env bounds training.
With ``--compare-dummy`` a batched id is also measured through ``DummyVecEnv``.

``--curve SEED ...``: the learning curve per sample of PPO on ``ETF-v0`` (or ``--ids``' first id) with 8
``DummyVecEnv`` envs (the project's hyperparameters: 512 steps per env per rollout) against 64 instances of the
batched env with 64 steps per env per rollout (the same 4,096-sample rollouts, batch and epochs): the mean
training-episode return in four equal bins of ``--timesteps`` samples, per seed.

Usage::

    python benchmarks/bench_training.py --ids joulegym/ETF-v0 --algos ppo --n-envs 8 64 --compare-dummy
    python benchmarks/bench_training.py            # the base id of each family with PPO and SAC where it applies
    python benchmarks/bench_training.py --curve 0 1 2 --timesteps 40960   # 8 DummyVecEnv vs 64 batched, per sample
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import joulegym  # noqa: E402, F401  (registers the ids)
from joulegym.core.family import families  # noqa: E402

DO_NOTHING_ID = "joulegym-bench/SpacesOnly-v0"


class SpacesOnlyEnv(gym.Env):
    """The spaces of another id and nothing else: zeros, reward 0, episodes as long as ``horizon``."""

    def __init__(self, like: str, horizon: int = 60) -> None:
        probe = gym.make(like)
        self.observation_space, self.action_space = probe.observation_space, probe.action_space
        probe.close()
        self._obs = np.zeros(self.observation_space.shape, dtype=self.observation_space.dtype)
        self.horizon, self.t = horizon, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs.copy(), {}

    def step(self, action):
        self.t += 1
        return self._obs.copy(), 0.0, False, self.t >= self.horizon, {}


def _model(algo: str, env_id: str, venv, seed: int = 0):
    """The model train.py builds: the algorithm with the project's hyperparameters for ``env_id``."""
    from joulegym.agents import load_hyperparams, make_model

    return make_model(algo, venv, seed=seed, hyperparams=load_hyperparams(algo, env_id))


def samples_per_cpu_s(make_venv, algo: str, env_id: str, timesteps: int, repeats: int) -> tuple[float, float]:
    """Medians over ``repeats`` of samples per CPU second of ``model.learn(timesteps)`` after a warm-up learn: of the
    whole run, and of the collection alone (the run less the CPU time of ``model.train``, the gradient updates)."""
    import torch

    torch.set_num_threads(1)
    whole, collect = [], []
    for repeat in range(repeats):
        venv = make_venv()
        model = _model(algo, env_id, venv, seed=repeat)
        model.learn(min(timesteps // 4, 1024))
        spent = [0.0]
        train = model.train

        def timed_train(*args, train=train, spent=spent, **kwargs):
            begin = time.process_time()
            try:
                return train(*args, **kwargs)
            finally:
                spent[0] += time.process_time() - begin

        model.train = timed_train
        start = time.process_time()
        before = model.num_timesteps
        model.learn(timesteps, reset_num_timesteps=False)
        cpu = max(time.process_time() - start, 1e-9)
        samples = model.num_timesteps - before
        whole.append(samples / cpu)
        collect.append(samples / max(cpu - spent[0], 1e-9))
        venv.close()
    return statistics.median(whole), statistics.median(collect)


def learning_curve(env_id: str, batched: bool, timesteps: int, seed: int, bins: int = 4) -> list[float]:
    """Mean training-episode return in ``bins`` equal bins of samples: PPO with the project's hyperparameters on 8
    ``DummyVecEnv`` envs, or on 64 batched instances with ``n_steps`` scaled to the same rollout (module docstring)."""
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecMonitor

    from joulegym.agents import load_hyperparams, make_model
    from joulegym.agents.batched_vec_env import make_training_vec_env

    torch.set_num_threads(1)
    hyperparams = dict(load_hyperparams("ppo", env_id))
    if batched:
        venv = make_training_vec_env(env_id, 64, seed, {}, None)
        hyperparams["n_steps"] = int(hyperparams["n_steps"]) * 8 // 64  # the same samples per rollout as 8 envs
    else:
        venv = VecMonitor(make_vec_env(env_id, n_envs=8, seed=seed))
    returns: list[tuple[int, float]] = []

    class Record(BaseCallback):
        def _on_step(self) -> bool:
            returns.extend((self.num_timesteps, info["episode"]["r"]) for info in self.locals["infos"]
                           if "episode" in info)
            return True

    make_model("ppo", venv, seed=seed, hyperparams=hyperparams).learn(timesteps, callback=Record())
    venv.close()
    edges = np.linspace(0, timesteps, bins + 1)
    return [float(np.mean([r for t, r in returns if low < t <= high] or [np.nan]))
            for low, high in itertools.pairwise(edges)]


def default_ids() -> list[str]:
    return [f"joulegym/{f.kinds[0].name}-v{f.kinds[0].version}" for f in families()]


def main(argv: list[str] | None = None) -> list[dict]:
    from stable_baselines3.common.env_util import make_vec_env

    from joulegym.agents.algos import check_algo_supports
    from joulegym.agents.batched_vec_env import has_batched_entry_point, make_training_vec_env

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ids", nargs="*", default=None, help="env ids (default: each family's first kind)")
    parser.add_argument("--algos", nargs="*", default=["ppo", "sac"], help="algorithms (default: ppo sac)")
    parser.add_argument("--n-envs", nargs="*", type=int, default=[8], help="VecEnv sizes (default: 8)")
    parser.add_argument("--timesteps", type=int, default=16_384, help="timesteps per measurement")
    parser.add_argument("--repeats", type=int, default=3, help="repeats, median (default 3)")
    parser.add_argument("--compare-dummy", action="store_true", help="batched ids through DummyVecEnv too")
    parser.add_argument("--curve", nargs="*", type=int, help="learning curve per sample for these seeds instead")
    args = parser.parse_args(argv)
    if args.curve:
        env_id = (args.ids or ["joulegym/ETF-v0"])[0]
        print("| seed | VecEnv | mean episode return per quarter of the samples |")
        print("|---:|---|---|")
        for seed in args.curve:
            for batched in (False, True):
                curve = learning_curve(env_id, batched, args.timesteps, seed)
                way = "64 batched (n_steps / 8)" if batched else "8 DummyVecEnv"
                print(f"| {seed} | {way} | {' / '.join(f'{r:.2f}' for r in curve)} |", flush=True)
        return []
    if DO_NOTHING_ID not in gym.registry:
        gym.register(DO_NOTHING_ID, entry_point=SpacesOnlyEnv)
    rows = []
    print("| id | algo | n_envs | VecEnv | samples per CPU s (collection only) | do-nothing env (collection only) |")
    print("|---|---|---:|---|---:|---:|")
    for env_id in args.ids or default_ids():
        space = gym.make(env_id).action_space
        for algo in args.algos:
            try:
                check_algo_supports(algo, space)
            except ValueError:
                continue
            for n in args.n_envs:
                ways = [("batched" if has_batched_entry_point(env_id) and n > 1 else "dummy",
                         lambda n=n, i=env_id: make_training_vec_env(i, n, 0, {}, None))]
                if args.compare_dummy and ways[0][0] == "batched":
                    ways.append(("dummy", lambda n=n, i=env_id: make_vec_env(i, n_envs=n, seed=0)))
                nothing = samples_per_cpu_s(lambda n=n, i=env_id: make_vec_env(DO_NOTHING_ID, n_envs=n, seed=0,
                                                                               env_kwargs={"like": i}),
                                            algo, env_id, args.timesteps, args.repeats)
                for way, make in ways:
                    rate, collect = samples_per_cpu_s(make, algo, env_id, args.timesteps, args.repeats)
                    rows.append({"id": env_id, "algo": algo, "n_envs": n, "vec_env": way, "samples_per_cpu_s": rate,
                                 "collect_per_cpu_s": collect, "do_nothing": nothing[0],
                                 "do_nothing_collect": nothing[1]})
                    print(f"| `{env_id}` | {algo} | {n} | {way} | {rate:,.0f} ({collect:,.0f}) | "
                          f"{nothing[0]:,.0f} ({nothing[1]:,.0f}) |", flush=True)
    return rows


if __name__ == "__main__":
    main()
