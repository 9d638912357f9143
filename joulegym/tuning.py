"""Hyperparameter tuning for the zoo (``python -m joulegym.tuning``; docs/leaderboard.md, "Tuning"):
rl-zoo3's mechanism with Optuna directly. Each trial samples hyperparameters (rl-zoo3's ranges,
``rl_zoo3/hyperparams_opt.py``: ``sample_ppo_params``, ``sample_a2c_params``, ``sample_sac_params``,
``sample_td3_params``, ``sample_dqn_params``; the activation function and gSDE are not searched), trains one protocol
run (:func:`joulegym.protocol.train_seed`) to ``trial_budget_s`` training CPU seconds, reports each validation
score to a median pruner (a trial worse than the median of earlier trials at the same validation is stopped) and
returns its best validation score; a TPE sampler proposes the next trial. The held-out test seeds are never seen.

The budget: at most ``trials`` x ``trial_budget_s`` training CPU seconds plus the validation episodes. The study
lives in ``OUT/study.db`` (SQLite: a stopped study resumes with the same command); ``OUT/study.csv`` lists every
trial and ``OUT/best.yml`` holds the best trial's hyperparameters in the packaged files' format, for
``--hyperparams``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

NET_ARCH = {"tiny": [64], "small": [64, 64], "medium": [256, 256]}


def _one_minus(trial: Any, name: str, low: float, high: float) -> float:
    return 1.0 - trial.suggest_float(f"one_minus_{name}", low, high, log=True)


def sample_on_policy(trial: Any, ppo: bool) -> dict[str, Any]:
    """rl-zoo3's PPO (``ppo=True``) / A2C ranges."""
    params: dict[str, Any] = {
        "n_steps": trial.suggest_categorical("n_steps", [32, 64, 128, 256, 512, 1024, 2048]),
        "gamma": _one_minus(trial, "gamma", 1e-4, 0.03), "gae_lambda": _one_minus(trial, "gae_lambda", 1e-4, 0.1),
        "learning_rate": trial.suggest_float("learning_rate", 1e-5, 2e-3, log=True),
        "ent_coef": trial.suggest_float("ent_coef", 1e-8, 0.1, log=True),
        "max_grad_norm": trial.suggest_float("max_grad_norm", 0.3, 2.0)}
    arch = NET_ARCH[trial.suggest_categorical("net_arch", ["tiny", "small", "medium"] if ppo else ["small", "medium"])]
    params["policy_kwargs"] = {"net_arch": {"pi": arch, "vf": arch}}
    if ppo:
        params["batch_size"] = trial.suggest_categorical("batch_size", [32, 64, 128, 256, 512])
        params["clip_range"] = trial.suggest_categorical("clip_range", [0.1, 0.2, 0.3, 0.4])
        params["n_epochs"] = trial.suggest_categorical("n_epochs", [1, 5, 10, 20])
    return params


def sample_off_policy(trial: Any, algo: str) -> dict[str, Any]:
    """rl-zoo3's SAC / TD3 / DQN ranges (gradient steps = train_freq, as rl-zoo3)."""
    params: dict[str, Any] = {
        "gamma": trial.suggest_categorical("gamma", [0.9, 0.95, 0.98, 0.99, 0.995, 0.999, 0.9999]),
        "learning_rate": trial.suggest_float("learning_rate", 1e-5, 1.0, log=True),
        "batch_size": trial.suggest_categorical("batch_size", [16, 32, 64, 128, 256, 512]),
        "buffer_size": trial.suggest_categorical("buffer_size", [10_000, 100_000, 1_000_000])}
    if algo == "dqn":
        params["train_freq"] = trial.suggest_categorical("train_freq", [1, 4, 8, 16, 128, 256, 1000])
        params["exploration_fraction"] = trial.suggest_float("exploration_fraction", 0.0, 0.5)
        params["exploration_final_eps"] = trial.suggest_float("exploration_final_eps", 0.0, 0.2)
        params["target_update_interval"] = trial.suggest_categorical("target_update_interval",
                                                                     [1, 1000, 5000, 10000, 15000, 20000])
        params["learning_starts"] = trial.suggest_categorical("learning_starts", [0, 1000, 5000, 10000, 20000])
        params["gradient_steps"] = max(params["train_freq"] // 4, 1)  # rl-zoo3's DQN sampler
        params["policy_kwargs"] = {"net_arch": NET_ARCH[trial.suggest_categorical("net_arch", ["tiny", "small",
                                                                                               "medium"])]}
        return params
    params["train_freq"] = trial.suggest_categorical("train_freq", [1, 4, 8, 16, 32, 64, 128, 256, 512])
    params["gradient_steps"] = params["train_freq"]
    params["tau"] = trial.suggest_categorical("tau", [0.001, 0.005, 0.01, 0.02, 0.05, 0.08])
    if algo == "sac":
        params["learning_starts"] = trial.suggest_categorical("learning_starts", [0, 1000, 10000, 20000])
    arch = {"small": [64, 64], "medium": [256, 256], "big": [400, 300]}
    params["policy_kwargs"] = {"net_arch": arch[trial.suggest_categorical("net_arch", list(arch))]}
    return params


def sample(trial: Any, algo: str) -> dict[str, Any]:
    """The hyperparameters of one trial for ``algo``."""
    if algo in ("ppo", "maskable_ppo", "a2c"):
        return sample_on_policy(trial, ppo=algo != "a2c")
    if algo in ("sac", "td3", "dqn"):
        return sample_off_policy(trial, algo)
    raise ValueError(f"--algo {algo!r}: no search space; tunable: ppo, maskable_ppo, a2c, sac, td3, dqn")


STUDY_ENTRIES = ("study.db", "study.csv", "trials", "best.yml", "best.json")  # what a study directory holds


def tune(env_id: str, algo: str, out: Path, *, trials: int, trial_budget_s: float, seed: int = 0,
         eval_every: int = 10_000, hyperparams_file: str | None = None, n_envs: int | None = None) -> dict[str, Any]:
    """Run (or resume) the study in ``out``; returns the best trial's summary (also in ``out/best.json``)."""
    import optuna
    import yaml

    from joulegym.agents.algos import algo_spec, load_hyperparams
    from joulegym.core.io import TUNING, check_result_dir, read_marker, write_atomic, write_marker
    from joulegym.protocol import benchmark_for, train_seed

    _, _, bench = benchmark_for(env_id)
    algo = algo_spec(algo).name
    if trials < 1 or not trial_budget_s > 0:
        raise ValueError(f"--trials must be >= 1 and --trial-cpu-budget > 0, got {trials} and {trial_budget_s}")
    check_result_dir(out, create=True, kind=TUNING)
    earlier = read_marker(out)
    if earlier is not None and (earlier.get("env"), earlier.get("algo")) != (env_id, algo):
        raise ValueError(f"--out {str(out)!r} holds the study of {earlier.get('env')} with {earlier.get('algo')}: "
                         f"resume it with those, or choose a new directory for {env_id} with {algo}")
    base = load_hyperparams(algo, env_id, hyperparams_file)
    if algo not in ("ppo", "maskable_ppo", "a2c", "sac", "td3", "dqn"):
        sample(None, algo)  # the ValueError naming the tunable algorithms
    # marked before the first file: a resumed study's directory holds only what a study writes
    write_marker(out, TUNING, "python -m joulegym.tuning", list(STUDY_ENTRIES), env=env_id, algo=algo)

    def objective(trial: optuna.Trial) -> float:
        params = {**base, **sample(trial, algo)}
        if "batch_size" in params and "n_steps" in params:  # rl-zoo3 leaves this to SB3's warning; keep it valid
            params["batch_size"] = min(params["batch_size"], params["n_steps"] * (n_envs or 1))
        folder = out / "trials" / f"trial{trial.number}"
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / "hyperparams.yml", yaml.safe_dump({env_id: params}, sort_keys=True))

        def report(point: tuple[float, int, float]) -> bool:
            trial.report(point[2], step=point[1])
            return not trial.should_prune()

        found = train_seed(env_id, algo, seed, folder / "run", budget_s=trial_budget_s, eval_every=eval_every,
                           hyperparams_file=str(folder / "hyperparams.yml"), n_envs=n_envs, on_eval=report,
                           test=False, command=f"tune trial {trial.number}")
        if found["stopped_by"] == "pruned":
            raise optuna.TrialPruned()
        return float(found["validation"]["selected"]["metric"])

    study = optuna.create_study(
        study_name=f"{env_id}-{algo}", storage=f"sqlite:///{(out / 'study.db').resolve()}", load_if_exists=True,
        direction="maximize" if bench.higher_is_better else "minimize",
        sampler=optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(5, trials)),
        pruner=optuna.pruners.MedianPruner(n_startup_trials=min(5, trials), n_warmup_steps=0))
    done = len([t for t in study.trials if t.state.is_finished()])
    if trials > done:
        study.optimize(objective, n_trials=trials - done, catch=(ValueError,))
    study.trials_dataframe().to_csv(out / "study.csv", index=False)
    completed = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if not completed:
        raise ValueError(f"no trial of the study in {str(out)!r} completed (see {out / 'study.csv'})")
    best = study.best_trial
    params = yaml.safe_load((out / "trials" / f"trial{best.number}" / "hyperparams.yml").read_text())[env_id]
    write_atomic(out / "best.yml", yaml.safe_dump({env_id: params}, sort_keys=True))
    summary = {"env": env_id, "algo": algo, "metric": bench.metric, "value": best.value, "trial": best.number,
               "trials": len(study.trials), "params": best.params, "file": str(out / "best.yml"),
               "trial_cpu_budget_s": trial_budget_s, "seed": seed}
    write_atomic(out / "best.json", json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n")
    return summary


def main(argv: list[str] | None = None) -> int:
    from joulegym.protocol import add_run_arguments

    parser = argparse.ArgumentParser(prog="python -m joulegym.tuning", description=__doc__.split("\n\n")[0])
    add_run_arguments(parser)
    parser.add_argument("--trials", type=int, default=20, help="Optuna trials (default 20)")
    parser.add_argument("--trial-cpu-budget", type=float, default=600.0,
                        help="training CPU seconds per trial (default 600)")
    parser.add_argument("--seed", type=int, default=0, help="training seed of every trial and the sampler's seed")
    args = parser.parse_args(argv)
    try:
        best = tune(args.env, args.algo, Path(args.out), trials=args.trials, trial_budget_s=args.trial_cpu_budget,
                    seed=args.seed, eval_every=args.eval_every, hyperparams_file=args.hyperparams, n_envs=args.n_envs)
    except ValueError as err:
        print(f"python -m joulegym.tuning: error: {err}", file=sys.stderr)
        return 2
    print(f"best of {best['trials']} trials: validation {best['metric']} {best['value']:.4g} with "
          f"{json.dumps(best['params'], sort_keys=True)}; hyperparameters in {best['file']}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
