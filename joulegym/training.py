"""``train.py`` / ``joulegym-train``: train an SB3 agent on any joulegym env id (docs/architecture.md).

Writes into ``--out``:

- ``model.zip`` — the trained model (SB3 format), loadable by ``evaluate.py --policies ALGO:OUT/model.zip``;
- ``config.json`` — env id, env kwargs, algorithm, hyperparameters, seed, timesteps, package versions;
- ``monitor/`` — per-episode returns and lengths (SB3 ``Monitor`` CSVs);
- ``tb/`` — TensorBoard logs (losses, episode returns and the env's ``info["metrics"]``).

Files are written to a temporary name and renamed, so an interrupted run never leaves a
half-written ``model.zip`` or ``config.json``. Training uses the CPU with one torch thread by default.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

DEFAULT_ENV = "joulegym/ETF-v0"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="train.py", description="Train an SB3 agent on a joulegym env.")
    parser.add_argument("--env", default=DEFAULT_ENV,
                        help=f"env id (default {DEFAULT_ENV}); see python -m joulegym list")
    parser.add_argument("--algo", default="ppo", help="ppo (default), a2c, sac, td3, dqn, maskable_ppo")
    parser.add_argument("--timesteps", type=int, default=None,
                        help="total environment steps (default: n_timesteps of the hyperparameters, else 100000)")
    parser.add_argument("--seed", type=int, default=0, help="training seed (evaluation uses held-out seeds)")
    parser.add_argument("--out", default=None, help="output directory (default runs/<env>-<algo>-s<seed>)")
    parser.add_argument("--n-envs", type=int, default=None,
                        help="parallel envs in a DummyVecEnv (default: n_envs of the hyperparameters, else 1)")
    parser.add_argument("--env-kwargs", default="{}", help='JSON dict of gym.make kwargs, e.g. \'{"phi": 0.5}\'')
    parser.add_argument("--hyperparams", default=None, help="YAML file overriding the packaged hyperparameters")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--no-progress-bar", action="store_true", help="hide the progress bar")
    parser.add_argument("--no-tensorboard", action="store_true", help="do not write TensorBoard logs")
    parser.add_argument("--verbose", type=int, default=0, help="SB3 verbosity (0, 1, 2)")
    return parser.parse_args(argv)


def train(env_id: str = DEFAULT_ENV, algo: str = "ppo", timesteps: int | None = None, seed: int = 0,
          out: str | Path | None = None, n_envs: int | None = None, env_kwargs: dict[str, Any] | None = None,
          hyperparams_file: str | Path | None = None, threads: int = 1, progress_bar: bool = True,
          tensorboard: bool = True, verbose: int = 0) -> Path:
    """Train ``algo`` on ``env_id`` and save it under ``out``; returns the path of ``model.zip``."""
    import gymnasium as gym
    import torch
    from stable_baselines3.common.env_util import make_vec_env

    import joulegym
    from joulegym.agents import check_algo_supports, load_hyperparams, make_model
    from joulegym.agents.algos import split_run_keys
    from joulegym.agents.callbacks import EpisodeMetricsCallback
    from joulegym.core.io import write_atomic

    if env_id not in gym.registry:
        raise ValueError(f"env={env_id!r} is not registered; see `python -m joulegym list`")
    hyperparams = load_hyperparams(algo, env_id, hyperparams_file)
    _, run_settings = split_run_keys(hyperparams)
    timesteps = int(timesteps if timesteps is not None else run_settings.get("n_timesteps", 100_000))
    n_envs = int(n_envs if n_envs is not None else run_settings.get("n_envs", 1))
    if timesteps < 1:
        raise ValueError(f"timesteps must be >= 1, got {timesteps}")
    if n_envs < 1:
        raise ValueError(f"n_envs must be >= 1, got {n_envs}")
    env_kwargs = dict(env_kwargs or {})
    torch.set_num_threads(max(1, threads))
    out_dir = Path(out) if out is not None else Path("runs") / f"{env_id.split('/')[-1]}-{algo}-s{seed}"
    out_dir.mkdir(parents=True, exist_ok=True)

    probe = gym.make(env_id, **env_kwargs)  # fails early with the env's own message on bad kwargs
    check_algo_supports(algo, probe.action_space)
    probe.close()
    vec_env = make_vec_env(env_id, n_envs=n_envs, seed=seed, env_kwargs=env_kwargs,
                           monitor_dir=str(out_dir / "monitor"))
    model = make_model(algo, vec_env, seed=seed, hyperparams=hyperparams,
                       tensorboard_log=str(out_dir / "tb") if tensorboard else None, verbose=verbose)
    start = time.perf_counter()
    model.learn(total_timesteps=timesteps, callback=EpisodeMetricsCallback(), progress_bar=progress_bar,
                tb_log_name=algo)
    seconds = time.perf_counter() - start

    model_path = out_dir / "model.zip"
    tmp = out_dir / f".model.tmp{os.getpid()}.zip"
    model.save(str(tmp))
    os.replace(tmp, model_path)
    config = {
        "env_id": env_id,
        "env_kwargs": env_kwargs,
        "algo": algo,
        "hyperparams": hyperparams,
        "seed": seed,
        "timesteps": timesteps,
        "n_envs": n_envs,
        "train_seconds": round(seconds, 3),
        "versions": _versions(joulegym.__version__),
    }
    write_atomic(out_dir / "config.json", json.dumps(config, indent=2, default=str) + "\n")
    vec_env.close()
    return model_path


def _versions(joulegym_version: str) -> dict[str, str]:
    import gymnasium
    import numpy
    import stable_baselines3
    import torch

    return {"joulegym": joulegym_version, "gymnasium": gymnasium.__version__, "numpy": numpy.__version__,
            "stable_baselines3": stable_baselines3.__version__, "torch": torch.__version__,
            "python": sys.version.split()[0]}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        from joulegym.core.config import parse_env_kwargs

        path = train(args.env, args.algo, args.timesteps, args.seed, args.out, args.n_envs,
                     parse_env_kwargs(args.env_kwargs), args.hyperparams, args.threads,
                     progress_bar=not args.no_progress_bar, tensorboard=not args.no_tensorboard,
                     verbose=args.verbose)
    except ValueError as err:
        print(f"train.py: error: {err}", file=sys.stderr)
        return 2
    print(f"saved {path} (config: {path.with_name('config.json')})")
    print(f"evaluate: python evaluate.py --env {args.env} --policies random,{args.algo}:{path}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
