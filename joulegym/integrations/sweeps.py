"""``train.py --sweep SWEEP.yaml [--ray-address ADDR]``: a grid or random search as Ray Tune trials (docs/ray.md).

Each trial is one ``train.py`` run: the trial calls the training function ``train.py`` itself calls
(``joulegym.training.train``, passed in by the CLI) with its own run directory ``OUT/trials/<trial id>/run/`` (the
``train.py --out`` layout: ``config.json``, ``checkpoints/``, ``agent/``, ...; the trial's hyperparameters lie beside
it in ``hyperparams.yml``, a ``train.py --hyperparams`` file), then scores the trained agent on
held-out evaluation seeds (the function passed as ``score_fn``) and reports that score to Tune.

Checkpoints and resume: a trial saves ``train.py``'s checkpoint every ``checkpoint_every`` steps. If its worker dies
(a killed process, a lost node), Tune restarts the trial (up to ``max_failures`` times) and the restarted trial
continues the unfinished run in its directory from the latest checkpoint (``train.py --resume``), to the same total
timesteps. Each attempt (its process id and the checkpoint it resumed from) is recorded in
``OUT/trials/<trial id>/attempts.json``. A whole sweep that was stopped
continues with ``train.py --sweep SWEEP.yaml --out OUT --resume`` (Tune's ``Tuner.restore``; finished trials are
kept, unfinished and errored ones resume).

Output: ``OUT/results.csv`` (one row per trial: its parameters, score, timesteps, status, run directory),
``OUT/best.json`` (the best trial's parameters, score and the ``train.py`` command that reproduces it) and Tune's
own experiment state in ``OUT/tune/``.

SWEEP.yaml (``joulegym/agents/sweeps/etf-ppo-grid.yml`` is an example)::

    name: etf-ppo-grid          # Tune's experiment name
    search: grid                # grid: every combination of the lists; random: num_samples draws
    num_samples: 1              # grid: repeats of the whole grid; random: the number of trials
    timesteps: 2048             # per trial (train.py --timesteps)
    checkpoint_every: 512       # steps between checkpoints (train.py --checkpoint-every)
    eval_episodes: 5            # held-out episodes that score a trained agent
    max_failures: 2             # restarts of a trial whose worker died
    cpus_per_trial: 1
    space:                      # a list: grid axis (grid) or choice (random); {uniform|loguniform: [lo, hi]},
      env: [joulegym/ETF-v0]    #   {randint: [lo, hi]} or {choice: [...]}: sampled; a scalar: fixed
      algo: [ppo]
      seed: [0, 1]
      env_kwargs: {}
      hyperparams:              # train.py --hyperparams entries (rl-zoo3 names) for the trial's env id
        learning_rate: [3.0e-4, 1.0e-3]
"""

from __future__ import annotations

import json
import os
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from joulegym.core.io import read_yaml

SEARCHES = ("grid", "random")
TOP_KEYS = ("name", "search", "num_samples", "timesteps", "checkpoint_every", "eval_episodes", "max_failures",
            "cpus_per_trial", "space")
SPACE_KEYS = ("env", "algo", "seed", "env_kwargs", "hyperparams")
DISTRIBUTIONS = ("uniform", "loguniform", "randint", "choice")
METRIC = "eval_return_mean"  # the score Tune ranks trials by (higher is better)
DEFAULTS: dict[str, Any] = {"search": "grid", "num_samples": 1, "checkpoint_every": 10_000, "eval_episodes": 5,
                            "max_failures": 2, "cpus_per_trial": 1}
TRIALS = "trials"


# --- SWEEP.yaml -------------------------------------------------------------------------------------------------
def load_sweep(path: str | Path) -> dict[str, Any]:
    """Read and check SWEEP.yaml; the settings with defaults filled in.

    :raises ValueError: naming the field and what is allowed.
    """
    path = Path(path)
    return check_sweep(read_yaml(path, f"--sweep {str(path)!r}"), origin=str(path))


def check_sweep(data: Any, origin: str = "sweep") -> dict[str, Any]:
    """Check a sweep mapping (see the module docstring); returns it with defaults filled in."""
    if not isinstance(data, dict):
        raise ValueError(f"{origin}: must hold a mapping with keys {list(TOP_KEYS)}")
    unknown = sorted(set(data) - set(TOP_KEYS))
    if unknown:
        raise ValueError(f"{origin}: unknown keys {unknown}; allowed: {list(TOP_KEYS)}")
    sweep = {**DEFAULTS, **data}
    for key in ("name", "timesteps", "space"):
        if key not in sweep:
            raise ValueError(f"{origin}: {key!r} is required")
    if not isinstance(sweep["name"], str) or not sweep["name"] or "/" in sweep["name"]:
        raise ValueError(f"{origin}: name must be a non-empty string without '/', got {sweep['name']!r}")
    if sweep["search"] not in SEARCHES:
        raise ValueError(f"{origin}: search must be one of {list(SEARCHES)}, got {sweep['search']!r}")
    for key, low in (("num_samples", 1), ("timesteps", 1), ("checkpoint_every", 1), ("eval_episodes", 1),
                     ("max_failures", 0)):
        value = sweep[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{origin}: {key} must be an integer >= {low}, got {value!r}")
    cpus = sweep["cpus_per_trial"]
    if isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or cpus <= 0:
        raise ValueError(f"{origin}: cpus_per_trial must be a number > 0, got {cpus!r}")
    space = sweep["space"]
    if not isinstance(space, dict):
        raise ValueError(f"{origin}: space must be a mapping with keys among {list(SPACE_KEYS)}")
    unknown = sorted(set(space) - set(SPACE_KEYS))
    if unknown:
        raise ValueError(f"{origin}: unknown space keys {unknown}; allowed: {list(SPACE_KEYS)}")
    if "env" not in space:
        raise ValueError(f"{origin}: space.env is required (an env id or a list of them)")
    for key in ("env", "algo", "seed", "env_kwargs"):
        if key in space:
            _check_axis(space[key], f"{origin}: space.{key}", allow_dict_value=key == "env_kwargs")
    hyperparams = space.get("hyperparams", {}) or {}
    if not isinstance(hyperparams, dict):
        raise ValueError(f"{origin}: space.hyperparams must map hyperparameter names to values or axes")
    for name, axis in hyperparams.items():
        _check_axis(axis, f"{origin}: space.hyperparams.{name}", allow_dict_value=False)
    _check_values(space, origin)
    return sweep


def _check_axis(axis: Any, field: str, allow_dict_value: bool) -> None:
    if isinstance(axis, list):
        if not axis:
            raise ValueError(f"{field}: an empty list; give at least one value")
        return
    if isinstance(axis, dict) and len(axis) == 1 and next(iter(axis)) in DISTRIBUTIONS:
        kind, args = next(iter(axis.items()))
        if kind == "choice":
            if not isinstance(args, list) or not args:
                raise ValueError(f"{field}: choice needs a non-empty list, got {args!r}")
            return
        if (not isinstance(args, list) or len(args) != 2
                or not all(isinstance(a, (int, float)) and not isinstance(a, bool) for a in args)
                or not args[0] < args[1]):
            raise ValueError(f"{field}: {kind} needs [low, high] with low < high, got {args!r}")
        if kind == "loguniform" and args[0] <= 0:
            raise ValueError(f"{field}: loguniform needs low > 0, got {args!r}")
        if kind == "randint" and not all(isinstance(a, int) for a in args):
            raise ValueError(f"{field}: randint needs integer bounds, got {args!r}")
        return
    if isinstance(axis, dict) and not allow_dict_value:
        raise ValueError(f"{field}: a mapping must be one of {{{'|'.join(DISTRIBUTIONS)}: ...}}, got {axis!r}")


def _check_values(space: dict[str, Any], origin: str) -> None:
    """The listed envs are registered ids, algorithms known and seeds valid train.py seeds."""
    import gymnasium as gym

    import joulegym  # noqa: F401  (registers the ids)
    from joulegym.agents.algos import ALGOS
    from joulegym.core.benchmark import TRAINING_SEED_LIMIT

    for env_id in _listed(space["env"]):
        if not isinstance(env_id, str) or env_id not in gym.registry:
            raise ValueError(f"{origin}: space.env: {env_id!r} is not a registered id; see `python -m joulegym list`")
    for algo in _listed(space.get("algo", "ppo")):
        if not isinstance(algo, str) or algo.lower().replace("-", "_") not in ALGOS:
            raise ValueError(f"{origin}: space.algo: {algo!r} is not one of {sorted(ALGOS)}")
    from joulegym.agents.algos import check_algo_supports

    for env_id in _listed(space["env"]):  # every listed algorithm must act in every listed env (before Ray starts)
        action_space = gym.make(env_id).action_space
        for algo in _listed(space.get("algo", "ppo")):
            try:
                check_algo_supports(algo.lower().replace("-", "_"), action_space)
            except ValueError as err:
                raise ValueError(f"{origin}: space.algo: {algo!r} cannot train on space.env {env_id!r}: "
                                 f"{err}") from None
    for seed in _listed(space.get("seed", 0)):
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < TRAINING_SEED_LIMIT:
            raise ValueError(f"{origin}: space.seed: {seed!r} must be an integer in [0, {TRAINING_SEED_LIMIT}) "
                             "(larger seeds are held out for evaluation)")


def _listed(axis: Any) -> list[Any]:
    """The concrete values an axis names (sampled numeric ranges are checked by Tune)."""
    if isinstance(axis, list):
        return axis
    if isinstance(axis, dict) and "choice" in axis and len(axis) == 1:
        return list(axis["choice"])
    if isinstance(axis, dict) and len(axis) == 1 and next(iter(axis)) in DISTRIBUTIONS:
        return []
    return [axis]


def param_space(sweep: dict[str, Any]) -> dict[str, Any]:
    """The Tune ``param_space``: flat keys ``env``, ``algo``, ``seed``, ``env_kwargs``, ``hp.<name>``."""
    from ray import tune

    def axis(value: Any) -> Any:
        if isinstance(value, list):
            return tune.grid_search(value) if sweep["search"] == "grid" else tune.choice(value)
        if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in DISTRIBUTIONS:
            kind, args = next(iter(value.items()))
            return {"uniform": lambda: tune.uniform(*args), "loguniform": lambda: tune.loguniform(*args),
                    "randint": lambda: tune.randint(args[0], args[1] + 1),  # inclusive high, as written
                    "choice": lambda: tune.choice(args)}[kind]()
        return value

    space = sweep["space"]
    flat = {"env": axis(space["env"]), "algo": axis(space.get("algo", "ppo")), "seed": axis(space.get("seed", 0)),
            "env_kwargs": axis(space.get("env_kwargs", {}))}
    for name, value in (space.get("hyperparams") or {}).items():
        flat[f"hp.{name}"] = axis(value)
    return flat


# --- one trial --------------------------------------------------------------------------------------------------
def trial_hyperparams(config: dict[str, Any]) -> dict[str, Any]:
    """The trial's hyperparameter overrides (``hp.<name>`` keys of its config)."""
    return {key[3:]: value for key, value in config.items() if key.startswith("hp.")}


def _record_attempt(trial_dir: Path, resumed_from: int) -> None:
    from joulegym.core.io import write_atomic

    path = trial_dir / "attempts.json"
    attempts = json.loads(path.read_text()) if path.is_file() else []
    attempts.append({"pid": os.getpid(), "node": os.uname().nodename, "resumed_from_timesteps": resumed_from,
                     "started": time.time()})
    write_atomic(path, json.dumps(attempts, indent=2) + "\n")


def _unfinished(run_dir: Path) -> tuple[bool, int]:
    """(does ``run_dir`` hold an unfinished train.py run, the timesteps of its latest checkpoint)."""
    config_path = run_dir / "config.json"
    if not config_path.is_file():
        return False, 0
    config = json.loads(config_path.read_text())
    if config.get("complete"):
        return False, int(config.get("num_timesteps", config["timesteps"]))
    meta = run_dir / "checkpoints" / "latest.json"
    return True, int(json.loads(meta.read_text())["num_timesteps"]) if meta.is_file() else 0


def run_trial(config: dict[str, Any], *, train_fn: Callable, score_fn: Callable, root: str, timesteps: int,
              checkpoint_every: int, eval_episodes: int) -> None:
    """The Tune function trainable: train (or resume) the trial's run, score it, report."""
    from ray import tune

    trial_dir = Path(root) / TRIALS / tune.get_context().get_trial_id()
    run_dir = trial_dir / "run"
    trial_dir.mkdir(parents=True, exist_ok=True)
    resume, done_steps = _unfinished(run_dir)
    complete = (run_dir / "config.json").is_file() and not resume
    _record_attempt(trial_dir, done_steps if resume else 0)
    hyperparams_file = trial_dir / "hyperparams.yml"  # train.py --hyperparams for this trial
    hyperparams_file.write_text(yaml.safe_dump({config["env"]: trial_hyperparams(config)}))
    if not complete:
        # a run dir with files but no config.json (killed at the very start) is started afresh
        train_fn(config["env"], config["algo"], timesteps, int(config["seed"]), run_dir,
                 env_kwargs=dict(config.get("env_kwargs") or {}), hyperparams_file=None if resume else hyperparams_file,
                 progress_bar=False, tensorboard=False, resume=resume, overwrite=not resume,
                 checkpoint_every=checkpoint_every)
    final = json.loads((run_dir / "config.json").read_text())
    score = score_fn(run_dir, eval_episodes)
    tune.report({METRIC: float(score), "timesteps": int(final["num_timesteps"]),
                 "train_seconds": float(final.get("train_seconds", 0.0)), "run_dir": str(run_dir),
                 "resumed_from_timesteps": done_steps if resume else 0})


# --- the sweep --------------------------------------------------------------------------------------------------
def run_sweep(sweep_path: str | Path, *, train_fn: Callable, score_fn: Callable, out: str | Path | None = None,
              address: str | None = None, resume: bool = False, num_cpus: int | None = None,
              object_store_memory: int | None = None) -> dict[str, Any]:
    """Run the sweep of ``sweep_path`` on Ray Tune; write ``results.csv`` and ``best.json`` into ``out``
    (default ``runs/sweeps/<name>``) and return the best trial's record.

    :param train_fn: ``joulegym.training.train`` (each trial is a train.py run).
    :param score_fn: ``(run_dir, episodes) -> float``, the trained agent's held-out score (higher is better).
    :param address: a Ray cluster (``auto``, ``HOST:PORT``); ``None`` starts a local Ray on this machine's cores.
    :param resume: continue the stopped sweep in ``out`` (``Tuner.restore``).
    :raises ValueError: a bad SWEEP.yaml (naming the field), a non-empty ``out`` without ``resume``.
    """
    from joulegym.integrations.parallel import ray_session

    sweep = load_sweep(sweep_path)
    out_dir = Path(out if out is not None else Path("runs") / "sweeps" / sweep["name"]).resolve()
    experiment = out_dir / "tune" / sweep["name"]
    if resume and not experiment.is_dir():
        raise ValueError(f"--resume: {str(out_dir)!r} holds no sweep named {sweep['name']!r} ({experiment} missing)")
    if not resume and out_dir.is_dir() and any(out_dir.iterdir()):
        raise ValueError(f"--out {str(out_dir)!r} is not empty: pass --resume to continue the sweep there")
    out_dir.mkdir(parents=True, exist_ok=True)
    with ray_session(address, num_cpus=num_cpus, object_store_memory=object_store_memory) as ray:
        from ray import tune

        offered = float(ray.cluster_resources().get("CPU", 0.0))
        if sweep["cpus_per_trial"] > offered:  # Tune would wait for them forever
            raise ValueError(f"{sweep_path}: cpus_per_trial={sweep['cpus_per_trial']} is more than the Ray cluster "
                             f"offers ({offered:g} CPUs); use at most {offered:g}")

        trainable = tune.with_resources(
            tune.with_parameters(run_trial, train_fn=train_fn, score_fn=score_fn, root=str(out_dir),
                                 timesteps=sweep["timesteps"], checkpoint_every=sweep["checkpoint_every"],
                                 eval_episodes=sweep["eval_episodes"]),
            {"cpu": sweep["cpus_per_trial"]})
        if resume:
            tuner = tune.Tuner.restore(str(experiment), trainable, resume_unfinished=True, resume_errored=True)
        else:
            tuner = tune.Tuner(
                trainable, param_space=param_space(sweep),
                tune_config=tune.TuneConfig(metric=METRIC, mode="max", num_samples=sweep["num_samples"]),
                run_config=tune.RunConfig(name=sweep["name"], storage_path=str(out_dir / "tune"), verbose=0,
                                          failure_config=tune.FailureConfig(max_failures=sweep["max_failures"])))
        grid = tuner.fit()
    return write_results(grid, sweep, out_dir)


def write_results(grid: Any, sweep: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    """``results.csv`` (one row per trial) and ``best.json``; the best record."""
    import pandas as pd

    from joulegym.core.io import write_atomic, write_csv

    rows = []
    for result in grid:
        metrics = result.metrics or {}
        row = {key: (json.dumps(value, sort_keys=True) if isinstance(value, dict) else value)
               for key, value in result.config.items()}
        row.update({"trial_id": metrics.get("trial_id"), METRIC: metrics.get(METRIC),
                    "timesteps": metrics.get("timesteps"), "train_seconds": metrics.get("train_seconds"),
                    "resumed_from_timesteps": metrics.get("resumed_from_timesteps"),
                    "status": "error" if result.error is not None else "ok", "run_dir": metrics.get("run_dir"),
                    "error": None if result.error is None else str(result.error).splitlines()[0]})
        rows.append(row)
    frame = pd.DataFrame(rows).sort_values(METRIC, ascending=False, na_position="last", kind="mergesort")
    write_csv(frame.reset_index(drop=True), out_dir / "results.csv")
    finished = [r for r in rows if r["status"] == "ok" and r[METRIC] is not None]
    if not finished:
        raise RuntimeError(f"sweep {sweep['name']!r}: no trial finished; see {out_dir / 'results.csv'}")
    best = max(finished, key=lambda r: r[METRIC])
    config = next(r.config for r in grid if (r.metrics or {}).get("trial_id") == best["trial_id"])
    hyperparams = trial_hyperparams(config)
    command = ["python", "train.py", "--env", config["env"], "--algo", config["algo"], "--seed", str(config["seed"]),
               "--timesteps", str(sweep["timesteps"])]
    if config.get("env_kwargs"):
        command += ["--env-kwargs", json.dumps(config["env_kwargs"], sort_keys=True)]
    if hyperparams:
        command += ["--hyperparams", str(Path(best["run_dir"]).parent / "hyperparams.yml")]
    record = {"sweep": sweep["name"], "metric": METRIC, "score": best[METRIC], "trial_id": best["trial_id"],
              "env": config["env"], "algo": config["algo"], "seed": config["seed"],
              "env_kwargs": config.get("env_kwargs") or {}, "hyperparams": hyperparams,
              "timesteps": best["timesteps"], "run_dir": best["run_dir"], "trials": len(rows),
              "errored": sum(r["status"] == "error" for r in rows), "command": shlex.join(command)}
    write_atomic(out_dir / "best.json", json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")
    return record
