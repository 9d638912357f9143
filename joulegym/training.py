"""``train.py`` / ``joulegym-train``: train an SB3 agent on any joulegym env id (docs/architecture.md).

Writes into ``--out`` (which must be empty, unless ``--resume`` or ``--overwrite``):

- ``config.json`` — env id, env kwargs, algorithm, hyperparameters, seed, timesteps, package versions; written
  first (``"complete": false``) and rewritten last with the final figures (``"complete": true``);
- ``checkpoints/`` — the latest checkpoint (model, replay buffer for off-policy algorithms, its timestep
  count), saved every ``--checkpoint-every`` steps and when SIGINT or SIGTERM stops the run; ``--resume``
  continues from it to the same total timesteps;
- ``model.zip`` — the trained model (SB3 format; loading it unpickles code: load only files you trust);
- ``agent/`` — the same policy weights-only (``agent.json`` + ``weights.pt``), the safe format for sharing and
  for leaderboards (:mod:`joulegym.agents.weights`);
- ``monitor/`` — per-episode returns and lengths (SB3 ``Monitor`` CSVs); ``--resume`` keeps the rows up to the
  checkpoint and appends to them (:func:`restore_monitor`); ``tb/`` — TensorBoard logs.
- ``learning_curve.png`` — episode return against timesteps, from ``monitor/``: the whole run, across resumes.
- ``best/`` (``--eval-freq N``) — every N steps the policy plays the validation seeds 9000-9009; the best one so
  far as a weights-only agent (``best/agent/``), its score (``best/score.json``) and every evaluation
  (``best/evaluations.csv``) (:mod:`joulegym.agents.validation`).
- ``.joulegym-run.json`` — the marker listing the entries above as this run's
  (:func:`joulegym.core.io.prepare_run_dir`): ``--overwrite`` removes only those, and only in a directory
  holding the marker (docs/robustness.md).

Every file is written to a temporary name and renamed; ``config.json`` with ``"complete": true`` is written
last, so a run without it is unfinished and its ``model.zip`` (if any) is not the final one.

``--resume`` unpickles the checkpoint (SB3's format): it loads one only when ``checkpoints/latest.json`` carries
this user's signature of it (an HMAC with a key in the user's data folder, :func:`joulegym.core.io.sign_file`),
i.e. when this user's joulegym wrote it; any other checkpoint needs ``--unsafe-unpickle-model-zip``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

DEFAULT_ENV = "joulegym/ETF-v0"
CHECKPOINT_EVERY = 10_000  # environment steps between checkpoints (default)
CHECKPOINT = "latest"  # checkpoints/latest.zip, latest_replay_buffer.pkl, latest.json
CONFIG_KEYS = {"env_id": str, "env_kwargs": dict, "algo": str, "hyperparams": dict, "seed": int, "timesteps": int,
               "n_envs": int}  # what --resume reads from config.json
UNSAFE_FLAG = "--unsafe-unpickle-model-zip"


def _prog() -> str:
    """``joulegym-train`` when run as the console script, else ``train.py`` (usage lines and errors)."""
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return name if name == "joulegym-train" else "train.py"


def evaluate_command(run_dir: str | Path, program: str = "python evaluate.py") -> str:
    """The complete ``evaluate.py`` command for a finished run: its env id and env kwargs (from its
    ``config.json``), the weights-only agent and random, and an output folder beside the run."""
    import shlex

    run_dir = Path(run_dir)
    config = _read_config(run_dir)
    parts = [*program.split(), "--env", config["env_id"], "--env-kwargs",
             json.dumps(config.get("env_kwargs") or {}, sort_keys=True),
             "--policies", f"random,{config['algo']}:{run_dir / 'agent'}", "--out", str(run_dir / "evaluation")]
    return " ".join(shlex.quote(p) for p in parts)


def _zoo_algorithms() -> str:
    """Per family, the algorithm the zoo ships (each benchmark's ``zoo_algo``) and the protocol that trains it."""
    from joulegym.core.family import families

    lines = ["The zoo's algorithm per family (python -m joulegym.protocol train --env ID --algo ALGO trains",
             "3 seeds to the 1 CPU-hour budget with model selection; docs/leaderboard.md):"]
    lines += [f"  {d.name:<10} {d.benchmark.zoo_algo}" for d in families()
              if d.benchmark is not None and d.benchmark.zoo_algo]
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=_prog(), description="Train an SB3 agent on a joulegym env.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_zoo_algorithms() + "\n\nSecurity: a model.zip is unpickled when loaded and can run code; share and "
               "evaluate third-party\nagents through the weights-only OUT/agent/ directory instead.")
    parser.add_argument("--env", default=None,
                        help=f"env id (default {DEFAULT_ENV}); see python -m joulegym list")
    parser.add_argument("--algo", default=None, help="ppo (default), a2c, sac, td3, dqn, maskable_ppo")
    parser.add_argument("--timesteps", type=int, default=None,
                        help="total environment steps (default: n_timesteps of the hyperparameters, else 100000)")
    parser.add_argument("--seed", type=int, default=None,
                        help="training seed in [0, 10000) (seeds >= 10000 are held out for evaluation)")
    parser.add_argument("--out", default=None, help="output directory (default runs/<env>-<algo>-s<seed>)")
    parser.add_argument("--n-envs", type=int, default=None,
                        help="parallel envs: one batched env where the id has one, else a DummyVecEnv (default: "
                             "n_envs of the hyperparameters, else 1)")
    parser.add_argument("--env-kwargs", default=None, help='JSON dict of gym.make kwargs, e.g. \'{"phi": 0.5}\'')
    parser.add_argument("--hyperparams", default=None, help="YAML file overriding the packaged hyperparameters")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--checkpoint-every", type=int, default=CHECKPOINT_EVERY,
                        help=f"environment steps between checkpoints (default {CHECKPOINT_EVERY})")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--resume", action="store_true",
                       help="continue the unfinished run in --out from its latest checkpoint")
    group.add_argument("--overwrite", action="store_true",
                       help="replace the train.py run in --out (only the files its .joulegym-run.json lists; a "
                            "directory train.py did not write is refused)")
    parser.add_argument(UNSAFE_FLAG, dest="unsafe_unpickle", action="store_true",
                        help="with --resume: load a checkpoint this user's joulegym did not sign (unpickling it can "
                             "run code: only for files you trust)")
    parser.add_argument("--eval-freq", type=int, default=None, metavar="N",
                        help="every N environment steps, evaluate on the validation seeds 9000.. and keep the best "
                             "agent in OUT/best/ (training seeds must stay below 9000)")
    parser.add_argument("--eval-episodes", type=int, default=None, metavar="K",
                        help="with --eval-freq: validation episodes per evaluation, seeds 9000..9000+K-1 (default 10)")
    parser.add_argument("--no-progress-bar", action="store_true", help="hide the progress bar")
    parser.add_argument("--no-tensorboard", action="store_true", help="do not write TensorBoard logs")
    parser.add_argument("--verbose", type=int, default=0, help="SB3 verbosity (0, 1, 2)")
    parser.add_argument("--sweep", metavar="SWEEP.yaml", default=None,
                        help="run the grid/random search of SWEEP.yaml as Ray Tune trials of this training code "
                             "(pip install \"joulegym[ray]\"; docs/ray.md); --out is the sweep's directory, --resume "
                             "continues a stopped sweep there")
    parser.add_argument("--ray-address", metavar="ADDR", default=None,
                        help="with --sweep: the Ray cluster (auto, HOST:PORT); default: a local Ray on this machine")
    return parser.parse_args(argv)


class TrainingInterrupted(Exception):
    """SIGINT/SIGTERM stopped training; a checkpoint was saved (``--resume`` continues)."""

    def __init__(self, signum: int, checkpoint: Path) -> None:
        super().__init__(f"stopped by signal {signum}; checkpoint {checkpoint}")
        self.signum, self.checkpoint = signum, checkpoint


def _prepare_out(out_dir: Path, resume: bool, overwrite: bool) -> None:
    from joulegym.core.io import prepare_run_dir

    prepare_run_dir(out_dir, resume=resume, overwrite=overwrite)


def _checkpoint_paths(out_dir: Path) -> tuple[Path, Path, Path]:
    folder = out_dir / "checkpoints"
    return folder / f"{CHECKPOINT}.zip", folder / f"{CHECKPOINT}_replay_buffer.pkl", folder / f"{CHECKPOINT}.json"


def save_checkpoint(model: Any, out_dir: Path, callback_state: dict[str, Any] | None = None) -> Path:
    """Save the model (and an off-policy replay buffer) atomically as the latest checkpoint, with the state of the
    callbacks that keep one (``callback_state``: plain JSON data, see :func:`train`'s ``callbacks``)."""
    from joulegym.core.io import write_atomic

    zip_path, buffer_path, meta_path = _checkpoint_paths(out_dir)
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    record_monitor_rows(out_dir, int(model.num_timesteps))  # first: a kill while saving leaves it for the old zip too
    tmp = zip_path.with_name(".latest.tmp.zip")
    model.save(str(tmp))
    tmp.replace(zip_path)
    has_buffer = getattr(model, "replay_buffer", None) is not None
    if has_buffer:
        tmp_buffer = buffer_path.with_name(".latest_replay_buffer.tmp.pkl")
        model.save_replay_buffer(str(tmp_buffer))
        tmp_buffer.replace(buffer_path)
    from joulegym.core.io import sign_file

    signatures = {p.name: sign_file(p) for p in ((zip_path, buffer_path) if has_buffer else (zip_path,))}
    meta = {"num_timesteps": int(model.num_timesteps), "replay_buffer": has_buffer, "signatures": signatures}
    if callback_state:
        meta["callback_state"] = callback_state
    write_atomic(meta_path, json.dumps(meta) + "\n")
    return zip_path


def _stateful(callbacks: tuple) -> list[Any]:
    """The callbacks whose state a checkpoint keeps: those with ``checkpoint_key``, ``checkpoint_state()`` and
    ``restore_checkpoint_state(state)``."""
    return [cb for cb in callbacks if hasattr(cb, "checkpoint_key") and hasattr(cb, "checkpoint_state")]


def _restore_callback_state(out_dir: Path, callbacks: tuple) -> None:
    """Give each stateful callback of a resumed run the state its checkpoint saved (``None`` when it saved none)."""
    _, _, meta_path = _checkpoint_paths(out_dir)
    saved = json.loads(meta_path.read_text()).get("callback_state") or {}
    if not isinstance(saved, dict):
        raise ValueError(f"{meta_path}: callback_state must be an object, got {type(saved).__name__}")
    for callback in _stateful(callbacks):
        callback.restore_checkpoint_state(saved.get(callback.checkpoint_key))


def cpu_seconds() -> float:
    """CPU seconds of this process (every thread) and of its children that have ended (subprocess vector envs once
    closed): what the training budget counts."""
    import os

    times = os.times()
    return time.process_time() + times.children_user + times.children_system


def _callbacks(out_dir: Path, every: int, progress_steps: int = 0, extra: tuple = ()):
    from stable_baselines3.common.callbacks import BaseCallback, CallbackList

    from joulegym.agents.callbacks import EpisodeMetricsCallback, TrainingProgressCallback

    stateful = _stateful(extra)

    class Checkpoints(BaseCallback):
        """Saves the latest checkpoint every ``every`` steps; stops training at SIGINT/SIGTERM."""

        def __init__(self) -> None:
            super().__init__()
            self.signal: int | None = None
            self._last = 0

        def state(self) -> dict[str, Any]:
            return {cb.checkpoint_key: cb.checkpoint_state() for cb in stateful}

        def _on_step(self) -> bool:
            if self.signal is not None:
                return False
            if self.num_timesteps - self._last >= every:
                self._last = self.num_timesteps
                save_checkpoint(self.model, out_dir, self.state())
            return True

    checkpoints = Checkpoints()
    # A tqdm bar on a terminal, plain lines when piped (SB3's own bar shows nothing in a log file).
    progress = [TrainingProgressCallback(progress_steps, desc=f"train {out_dir.name}")] if progress_steps > 0 else []
    return CallbackList([EpisodeMetricsCallback(), checkpoints, *progress, *extra]), checkpoints


def train(env_id: str | None = None, algo: str | None = None, timesteps: int | None = None, seed: int | None = None,
          out: str | Path | None = None, n_envs: int | None = None, env_kwargs: dict[str, Any] | None = None,
          hyperparams_file: str | Path | None = None, threads: int = 1, progress_bar: bool = True,
          tensorboard: bool = True, verbose: int = 0, *, resume: bool = False, overwrite: bool = False,
          checkpoint_every: int = CHECKPOINT_EVERY, callbacks: tuple = (), unsafe_unpickle: bool = False,
          eval_freq: int | None = None, eval_episodes: int | None = None) -> Path:
    """Train ``algo`` on ``env_id`` and save it under ``out``; returns the path of ``model.zip``.

    ``callbacks``: further SB3 callbacks (the training protocol's CPU budget and validation, :mod:`joulegym.protocol`);
    one that stops training ends the run normally (complete, with the timesteps done). A callback with
    ``checkpoint_key``, ``checkpoint_state()`` (plain JSON data) and ``restore_checkpoint_state(state)`` has its state
    saved with every checkpoint and given back when the run resumes, so a resumed run goes on where it stopped.
    ``config.json`` records the run's CPU seconds (:func:`cpu_seconds`) beside its wall time.

    With ``resume=True`` the run in ``out`` continues from its latest checkpoint with the settings of its
    ``config.json`` (the other arguments must be None or agree with them) until its total timesteps; its checkpoint is
    unpickled only when this user's joulegym signed it, or with ``unsafe_unpickle=True`` (a warning).

    :raises ValueError: bad arguments, a non-empty ``out`` without ``resume``/``overwrite``, an unwritable ``out``.
    :raises TrainingInterrupted: SIGINT/SIGTERM stopped the run after saving a checkpoint.
    """
    import gymnasium as gym

    import joulegym
    from joulegym.agents import check_algo_supports, load_hyperparams
    from joulegym.agents.algos import algo_spec, split_run_keys
    from joulegym.core.benchmark import TRAINING_SEED_LIMIT

    if resume and out is None:
        raise ValueError("--resume needs --out, the run directory to continue")
    if not resume:
        env_id, algo, seed = env_id or DEFAULT_ENV, algo or "ppo", 0 if seed is None else seed
    out_dir = Path(out) if out is not None else Path("runs") / f"{env_id.split('/')[-1]}-{algo}-s{seed}"
    if resume:
        previous = _read_config(out_dir)
        _check_resume_agrees(out_dir, previous, {"--env": env_id, "--algo": algo and algo_spec(algo).name,
                                                 "--seed": seed, "--timesteps": timesteps, "--n-envs": n_envs,
                                                 "--env-kwargs": env_kwargs, "--hyperparams": hyperparams_file})
        env_id, algo, seed = previous["env_id"], previous["algo"], int(previous["seed"])
        env_kwargs, hyperparams = previous["env_kwargs"], previous["hyperparams"]
        timesteps, n_envs = int(previous["timesteps"]), int(previous["n_envs"])
        if previous.get("complete"):
            raise ValueError(f"--resume: the run in {str(out_dir)!r} is complete ({timesteps} timesteps)")
    if not 0 <= seed < TRAINING_SEED_LIMIT:  # seeds >= the limit are the benchmark's held-out evaluation seeds
        raise ValueError(f"--seed must be in [0, {TRAINING_SEED_LIMIT}) (seeds from {TRAINING_SEED_LIMIT} on are "
                         f"held out for evaluation), got {seed}")
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= (os.cpu_count() or 1):
        raise ValueError(f"--threads must be a whole number in [1, {os.cpu_count() or 1}] (this machine's cores), "
                         f"got {threads!r}")
    if checkpoint_every < 1:
        raise ValueError(f"--checkpoint-every must be >= 1, got {checkpoint_every}")
    if env_id not in gym.registry:
        raise ValueError(f"env={env_id!r} is not registered; see `python -m joulegym list`")
    algo = algo_spec(algo).name
    if not resume:
        hyperparams = load_hyperparams(algo, env_id, hyperparams_file)
    _, run_settings = split_run_keys(hyperparams)
    timesteps = int(timesteps if timesteps is not None else run_settings.get("n_timesteps", 100_000))
    n_envs = int(n_envs if n_envs is not None else run_settings.get("n_envs", 1))
    if timesteps < 1:
        raise ValueError(f"timesteps must be >= 1, got {timesteps}")
    if n_envs < 1:
        raise ValueError(f"n_envs must be >= 1, got {n_envs}")
    env_kwargs = dict(env_kwargs or {})
    probe = gym.make(env_id, **env_kwargs)  # fails early with the env's own message on bad kwargs
    check_algo_supports(algo, probe.action_space)
    probe.close()
    validation = _validation_settings(eval_freq, eval_episodes, seed, n_envs)
    _prepare_out(out_dir, resume, overwrite)
    config = {"env_id": env_id, "env_kwargs": env_kwargs, "algo": algo, "hyperparams": hyperparams, "seed": seed,
              "timesteps": timesteps, "n_envs": n_envs, "complete": False,
              "versions": _versions(joulegym.__version__)}
    if not resume:
        _write_config(out_dir, config)
    if resume:
        _check_checkpoint(out_dir, unsafe_unpickle)
    model, vec_env = _build(config, out_dir, resume, tensorboard, verbose, threads)
    if resume:
        _restore_callback_state(out_dir, tuple(callbacks))
    remaining = timesteps - int(model.num_timesteps)
    callback_list, checkpoints = _callbacks(out_dir, checkpoint_every, remaining if progress_bar else 0,
                                            tuple(callbacks))
    if validation is not None:
        from joulegym.agents.validation import ValidationCallback

        callback_list.callbacks.append(ValidationCallback(env_id, env_kwargs, algo, out_dir, *validation))
    start, cpu_start = time.perf_counter(), cpu_seconds()
    previous_handlers = {}

    def stop(signum, frame):  # finish the current step, save, exit
        checkpoints.signal = signum

    # only the main thread may set handlers; a Ray Tune trial runs train() in a worker thread (its worker's
    # death is handled by restarting the trial, which resumes from the latest checkpoint)
    for signum in (signal.SIGINT, signal.SIGTERM) if threading.current_thread() is threading.main_thread() else ():
        previous_handlers[signum] = signal.signal(signum, stop)
    try:
        if remaining > 0:
            model.learn(total_timesteps=remaining, callback=callback_list, progress_bar=False, tb_log_name=algo,
                        reset_num_timesteps=not resume)
    finally:
        for signum, handler in previous_handlers.items():
            signal.signal(signum, handler)
    if checkpoints.signal is not None:
        checkpoint = save_checkpoint(model, out_dir, checkpoints.state())
        vec_env.close()
        raise TrainingInterrupted(checkpoints.signal, checkpoint)
    seconds = time.perf_counter() - start
    return _finish(model, vec_env, config, out_dir, seconds, cpu_start)


_RESUME_KEYS = {"--env": "env_id", "--algo": "algo", "--seed": "seed", "--timesteps": "timesteps",
                "--n-envs": "n_envs", "--env-kwargs": "env_kwargs", "--hyperparams": None}


def _check_resume_agrees(out_dir: Path, config: dict[str, Any], given: dict[str, Any]) -> None:
    """``--resume`` continues a run with its own settings: a given flag must agree with its ``config.json``."""
    for flag, value in given.items():
        key = _RESUME_KEYS[flag]
        if value is None or (key is not None and value == config[key]):
            continue
        what = "is not read" if key is None else f"{value!r} contradicts the run's {key}={config[key]!r}"
        raise ValueError(f"--resume continues the run in {str(out_dir)!r} with the settings of its config.json: "
                         f"{flag} {what}; drop {flag}, or start a new run with another --out")


def _check_checkpoint(out_dir: Path, unsafe_unpickle: bool) -> None:
    """Refuse to unpickle a checkpoint this user's joulegym did not sign, unless ``unsafe_unpickle`` (then warn)."""
    import warnings

    from joulegym.core.io import signed_by_this_user

    zip_path, buffer_path, meta_path = _checkpoint_paths(out_dir)
    if not zip_path.is_file():
        return
    try:
        signatures = json.loads(meta_path.read_text()).get("signatures") or {}
    except (OSError, ValueError, AttributeError):
        signatures = {}
    unsigned = [p.name for p in (zip_path, buffer_path) if p.is_file()
                and not signed_by_this_user(p, signatures.get(p.name) if isinstance(signatures, dict) else None)]
    if not unsigned:
        return
    if not unsafe_unpickle:
        raise ValueError(f"--resume: {', '.join(unsigned)} in {str(zip_path.parent)!r} was not written by this user's "
                         f"joulegym (no valid signature in {meta_path.name}); loading it unpickles code: pass "
                         f"{UNSAFE_FLAG} only if you trust the file")
    warnings.warn(f"{UNSAFE_FLAG}: unpickling {', '.join(unsigned)} of {zip_path.parent}, which can run code",
                  UserWarning, stacklevel=3)


def _validation_settings(eval_freq: int | None, eval_episodes: int | None, seed: int,
                         n_envs: int) -> tuple[int, list[int]] | None:
    """``(eval_freq, validation seeds)`` of ``--eval-freq``/``--eval-episodes``, or None without them."""
    from joulegym.agents.validation import VALIDATION_EPISODES, VALIDATION_SEED_BASE, validation_seeds

    if eval_freq is None:
        if eval_episodes is not None:
            raise ValueError("--eval-episodes applies only with --eval-freq")
        return None
    if eval_freq < 1:
        raise ValueError(f"--eval-freq must be >= 1, got {eval_freq}")
    if seed + n_envs > VALIDATION_SEED_BASE:  # env i trains from seed + i
        raise ValueError(f"--eval-freq validates on seeds {VALIDATION_SEED_BASE}..: the training envs' seeds "
                         f"{seed}..{seed + n_envs - 1} must stay below {VALIDATION_SEED_BASE}")
    return eval_freq, validation_seeds(VALIDATION_EPISODES if eval_episodes is None else eval_episodes)


def _build(config: dict[str, Any], out_dir: Path, resume: bool, tensorboard: bool, verbose: int, threads: int):
    import torch

    from joulegym.agents import make_model
    from joulegym.agents.algos import algo_spec
    from joulegym.agents.batched_vec_env import make_training_vec_env, set_monitor_clock

    torch.set_num_threads(max(1, threads))
    monitor_clock_s = restore_monitor(out_dir, config["n_envs"], config["env_id"]) if resume else None
    # an id with a batched entry point steps all n_envs instances in one call (docs/performance.md, "Training")
    vec_env = make_training_vec_env(config["env_id"], config["n_envs"], config["seed"], config["env_kwargs"],
                                    str(out_dir / "monitor"), resume=resume)
    if monitor_clock_s is not None:  # the resumed Monitors' "t" goes on from the kept rows' clock
        set_monitor_clock(vec_env, monitor_clock_s)
    tb = str(out_dir / "tb") if tensorboard else None
    zip_path, buffer_path, _ = _checkpoint_paths(out_dir)
    if resume and zip_path.is_file():
        model = algo_spec(config["algo"]).load_class().load(str(zip_path), env=vec_env, device="cpu",
                                                           tensorboard_log=tb, verbose=verbose)
        if buffer_path.is_file() and hasattr(model, "load_replay_buffer"):
            model.load_replay_buffer(str(buffer_path))
        return model, vec_env
    model = make_model(config["algo"], vec_env, seed=config["seed"], hyperparams=config["hyperparams"],
                       tensorboard_log=tb, verbose=verbose)
    return model, vec_env


# --- the run's record across --resume: Monitor CSVs cut back to the checkpoint, then appended to -----------------
MONITOR_ROWS = "latest_monitor.json"  # checkpoints/: {num_timesteps: {Monitor CSV: episode rows}} of recent checkpoints
MONITOR_HEADER_LINES = 2  # SB3 Monitor: '#{"t_start": ..., "env_id": ...}' and the column names
MONITOR_HISTORY = 3  # checkpoints whose row counts are kept (the zip on disk is one of them whenever a save is cut)


def record_monitor_rows(out_dir: Path, num_timesteps: int) -> None:
    """Note in ``checkpoints/latest_monitor.json`` how many episode rows each Monitor CSV holds at the checkpoint of
    ``num_timesteps`` steps (SB3's Monitor flushes every row), so that ``--resume`` keeps exactly the episodes that
    checkpoint has seen. Written before the checkpoint itself, keyed by its step count: whichever zip a kill
    leaves on disk finds its own counts."""
    from joulegym.core.io import write_atomic

    path = out_dir / "checkpoints" / MONITOR_ROWS
    history = _read_monitor_history(path)
    rows = {}
    for csv in sorted((out_dir / "monitor").glob("*.monitor.csv")):
        with csv.open() as handle:
            rows[csv.name] = max(0, sum(1 for _ in handle) - MONITOR_HEADER_LINES)
    history[str(num_timesteps)] = rows
    recent = sorted(history, key=int)[-MONITOR_HISTORY:]
    write_atomic(path, json.dumps({k: history[k] for k in recent}, sort_keys=True) + "\n")


def _read_monitor_history(path: Path) -> dict[str, dict[str, int]]:
    try:
        history = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return history if isinstance(history, dict) else {}


def _checkpoint_timesteps(zip_path: Path) -> int | None:
    """The step count an SB3 checkpoint holds (its ``data`` JSON member; nothing is unpickled), or ``None``."""
    import zipfile

    try:
        with zipfile.ZipFile(zip_path) as archive:
            return int(json.loads(archive.read("data"))["num_timesteps"])
    except (OSError, KeyError, ValueError, TypeError, zipfile.BadZipFile):
        return None


def restore_monitor(out_dir: Path, n_envs: int, env_id: str) -> float:
    """Before ``--resume``: cut each Monitor CSV back to its rows at the latest checkpoint (episodes after it are
    played again; no checkpoint at all: no rows), keeping the header and the rows before; returns the training
    wall time those rows cover (their largest ``t``), from which the resumed Monitors' clock goes on.

    A checkpoint whose row counts are unknown (written before they were recorded) keeps every row; a missing CSV
    gets Monitor's header (the resumed Monitor appends to it).
    """
    from joulegym.agents.batched_vec_env import monitor_files
    from joulegym.core.io import write_atomic

    zip_path, _, _ = _checkpoint_paths(out_dir)
    if zip_path.is_file():
        counts = _read_monitor_history(out_dir / "checkpoints" / MONITOR_ROWS).get(
            str(_checkpoint_timesteps(zip_path)))
    else:
        counts = {}  # training starts again from step 0
    clock_s = 0.0
    for name in monitor_files(env_id, n_envs):
        path = out_dir / "monitor" / name
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, "#" + json.dumps({"t_start": time.time(), "env_id": env_id}) + "\nr,l,t\n")
            continue
        lines = path.read_text().splitlines(keepends=True)
        keep = len(lines) if counts is None else MONITOR_HEADER_LINES + int(counts.get(path.name, 0))
        if keep < len(lines):
            write_atomic(path, "".join(lines[:keep]))
        for line in lines[MONITOR_HEADER_LINES:keep]:
            clock_s = max(clock_s, float(line.rstrip("\n").split(",")[2]))
    return clock_s


def _finish(model: Any, vec_env: Any, config: dict[str, Any], out_dir: Path, seconds: float,
            cpu_start: float) -> Path:
    from joulegym.agents.callbacks import plot_learning_curve
    from joulegym.agents.weights import save_weights

    model_path = out_dir / "model.zip"
    tmp = out_dir / ".model.tmp.zip"
    model.save(str(tmp))
    tmp.replace(model_path)
    save_weights(model, config["algo"], out_dir / "agent")
    previous = _read_config(out_dir)
    vec_env.close()  # flushes the Monitor CSVs the learning curve reads (and ends subprocess envs: their CPU counts)
    config = {**config, "complete": True, "num_timesteps": int(model.num_timesteps),
              "train_seconds": round(float(previous.get("train_seconds", 0.0)) + seconds, 3),
              "cpu_seconds": round(float(previous.get("cpu_seconds", 0.0)) + cpu_seconds() - cpu_start, 3)}
    plot_learning_curve(out_dir / "monitor", out_dir / "learning_curve.png",
                        title=f"{config['env_id']}: {config['algo']}, seed {config['seed']}")
    _write_config(out_dir, config)  # last: the run is complete
    return model_path


def _read_config(out_dir: Path) -> dict[str, Any]:
    path = out_dir / "config.json"
    if not path.is_file():
        raise ValueError(f"{str(out_dir)!r} holds no run (no config.json)")
    try:
        config = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not valid JSON ({getattr(err, 'msg', None) or err.reason})") from None
    if not isinstance(config, dict):
        raise ValueError(f"{path}: must hold a JSON object with keys {list(CONFIG_KEYS)}, got a "
                         f"{type(config).__name__}")
    for key, kind in CONFIG_KEYS.items():
        value = config.get(key)
        if isinstance(value, bool) or not isinstance(value, kind):
            raise ValueError(f"{path}: {key} must be a JSON {'object' if kind is dict else kind.__name__} (what "
                             f"train.py writes), got {value!r}; the file is damaged")
    return config


def _write_config(out_dir: Path, config: dict[str, Any]) -> None:
    from joulegym.core.io import write_atomic

    write_atomic(out_dir / "config.json", json.dumps(config, indent=2, default=str) + "\n")


def _versions(joulegym_version: str) -> dict[str, str]:
    import gymnasium
    import numpy
    import stable_baselines3
    import torch

    return {"joulegym": joulegym_version, "gymnasium": gymnasium.__version__, "numpy": numpy.__version__,
            "stable_baselines3": stable_baselines3.__version__, "torch": torch.__version__,
            "python": sys.version.split()[0]}


def sweep_score(run_dir: str | Path, episodes: int) -> float:
    """A finished run's score in a sweep: the weights-only agent's mean return over ``episodes`` held-out
    evaluation seeds of its env (``evaluate.py``'s loop and seeds)."""
    from joulegym.evaluation.runner import PolicyEntry, eval_seeds, evaluate

    config = _read_config(Path(run_dir))
    entry = PolicyEntry(config["algo"], "agent", config["algo"], path=str(Path(run_dir) / "agent"))
    frame, _, _ = evaluate(config["env_id"], [entry], eval_seeds(episodes), config.get("env_kwargs") or {},
                           record=False)
    return float(frame["return"].mean())


def _sweep(args: argparse.Namespace) -> int:
    """``--sweep``: the trials call :func:`train` (joulegym.integrations.sweeps)."""
    from joulegym.integrations.sweeps import run_sweep

    best = run_sweep(args.sweep, train_fn=train, score_fn=sweep_score, out=args.out, address=args.ray_address,
                     resume=args.resume)
    print(f"best of {best['trials']} trials: {best['metric']}={best['score']:.6g} ({best['env']}, {best['algo']}, "
          f"seed {best['seed']}, hyperparams {json.dumps(best['hyperparams'], sort_keys=True)}); run {best['run_dir']}")
    sweep_dir = Path(best["run_dir"]).parents[2]  # OUT/trials/<trial id>/run
    print(f"wrote {sweep_dir / 'results.csv'} and {sweep_dir / 'best.json'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.sweep is not None:
        try:
            return _sweep(args)
        except ValueError as err:
            print(f"{_prog()}: error: {err}", file=sys.stderr)
            return 2
    if args.ray_address is not None:
        print(f"{_prog()}: error: --ray-address applies only with --sweep", file=sys.stderr)
        return 2
    try:
        from joulegym.core.config import parse_env_kwargs

        path = train(args.env, args.algo, args.timesteps, args.seed, args.out, args.n_envs,
                     None if args.env_kwargs is None else parse_env_kwargs(args.env_kwargs), args.hyperparams,
                     args.threads,
                     progress_bar=not args.no_progress_bar, tensorboard=not args.no_tensorboard,
                     verbose=args.verbose, resume=args.resume, overwrite=args.overwrite,
                     checkpoint_every=args.checkpoint_every, unsafe_unpickle=args.unsafe_unpickle,
                     eval_freq=args.eval_freq, eval_episodes=args.eval_episodes)
    except TrainingInterrupted as stopped:
        print(f"train.py: stopped by signal {stopped.signum}; checkpoint saved at {stopped.checkpoint}; continue with "
              f"python train.py --out {stopped.checkpoint.parent.parent} --resume", file=sys.stderr)
        return 128 + stopped.signum
    except ValueError as err:
        print(f"{_prog()}: error: {err}", file=sys.stderr)
        return 2
    print(f"saved {path} (config: {path.with_name('config.json')}; weights-only agent: {path.with_name('agent')})")
    program = "joulegym-evaluate" if _prog() == "joulegym-train" else "python evaluate.py"
    print(f"evaluate: {evaluate_command(path.parent, program)}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
