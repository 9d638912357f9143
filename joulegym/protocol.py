"""The zoo's training protocol (docs/leaderboard.md, "Training protocol"): train an algorithm on a benchmark
scenario for several training seeds, each to a CPU-time budget, select each seed's model on the validation seeds,
score it on the held-out test seeds and ship every seed into the zoo with its provenance; and tune hyperparameters
with Optuna on the validation seeds within a stated budget (rl-zoo3's mechanism: a TPE sampler and a median pruner
on the intermediate validation scores).

Seeds: training seeds are below :data:`~joulegym.core.benchmark.VALIDATION_SEED_BASE` (9000); model selection uses
the benchmark's validation seeds (9000-9009); the score is on its held-out seeds (>= 10000). ::

    python -m joulegym.protocol train --env joulegym/ETF-tx2-fig6-random-v0 --algo sac --seeds 0 1 2 \\
        --out runs/protocol/etf-sac                   # 3 runs x 3600 training CPU-s, validation every 10000 steps
    python -m joulegym.protocol ship runs/protocol/etf-sac   # into joulegym/agents/zoo/etf/tx2-fig6-random/sac/
    python -m joulegym.protocol ship runs/protocol/etf-sac-seed0 runs/protocol/etf-sac-seed1 \\
        runs/protocol/etf-sac-seed2                   # one process per seed, shipped as one agent
    python -m joulegym.tuning --env joulegym/PowerFlow-tiny-v0 --algo maskable_ppo --trials 20 \\
        --trial-cpu-budget 600 --out runs/tune/pf-mppo     # writes best.yml, usable as --hyperparams

CPU time is the process's (every thread) plus its ended children's (:func:`joulegym.training.cpu_seconds`). The
budget counts training only: the validation episodes' CPU time is measured apart and recorded beside it
(``cpu_seconds`` = training + validation), so the evaluation frequency does not change how much an agent learns.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

DEFAULT_EVAL_EVERY = 10_000  # environment steps between validations
TIMESTEP_CAP = 10**9  # the budget, not a step count, ends a protocol run
PROTOCOL_FILE = "protocol.json"
TRAINED_FILE = "protocol-training.json"  # the callback's final state: a run killed while scoring resumes from it


def benchmark_for(env_id: str) -> tuple[Any, str, Any]:
    """``(descriptor, scenario, benchmark)`` of a benchmark scenario's env id (``ValueError`` otherwise)."""
    from joulegym.evaluation.zoo import benchmark_scenario

    descriptor, scenario = benchmark_scenario(env_id)
    return descriptor, scenario, descriptor.benchmark


def validation_score(model: Any, env_id: str, bench: Any, seeds: tuple[int, ...]) -> float:
    """The mean ranking metric of ``model``'s deterministic policy over ``seeds`` (one episode each)."""
    import gymnasium as gym

    from joulegym.agents import SB3Policy
    from joulegym.core.rollout import rollout

    policy = SB3Policy(model, name="validation")
    env = gym.make(env_id)
    try:
        return float(sum(bench.value(rollout(env, policy, s).metrics) for s in seeds) / len(seeds))
    finally:
        env.close()


def reference_scores(descriptor: Any, scenario: str, env_id: str, seeds: tuple[int, ...]) -> dict[str, float]:
    """The scenario's anchors' mean ranking metric on ``seeds`` (the learning curves' horizontal lines)."""
    from joulegym.evaluation.runner import PolicyEntry, evaluate

    bench = descriptor.benchmark
    names = dict.fromkeys((bench.zero[scenario], bench.best_heuristic[scenario]))
    entries = [PolicyEntry(n, "reference", n, family=descriptor.name) for n in names]
    frame, _, _ = evaluate(env_id, entries, seeds, record=False)
    values = [bench.value(row) for row in frame.to_dict("records")]
    frame = frame.assign(metric=values)
    return {name: float(frame.loc[frame["policy"] == name, "metric"].mean()) for name in names}


def make_callback(env_id: str, bench: Any, algo: str, budget_s: float, eval_every: int, best_dir: Path,
                  on_eval: Any = None) -> Any:
    """The SB3 callback of a protocol run: validation every ``eval_every`` steps (and at the end), the best model
    saved weights-only into ``best_dir``, training stopped when its CPU seconds (validation excluded) reach
    ``budget_s``. ``on_eval(point)`` is called after each validation (Optuna's pruning)."""
    from stable_baselines3.common.callbacks import BaseCallback

    from joulegym.agents.weights import save_weights
    from joulegym.training import cpu_seconds

    better = (lambda a, b: a > b) if bench.higher_is_better else (lambda a, b: a < b)

    class Protocol(BaseCallback):
        checkpoint_key = "protocol"  # train() keeps this callback's state with every checkpoint

        def __init__(self) -> None:
            super().__init__()
            self.curve: list[tuple[float, int, float]] = []
            self.best: tuple[float, int, float] | None = None
            self.validation_cpu = 0.0
            self.stopped_by: str | None = None
            self.resumes = 0
            self._last = 0
            self._spent = self._wall_spent = 0.0

        def checkpoint_state(self) -> dict[str, Any]:
            return {"curve": [list(p) for p in self.curve], "best": list(self.best) if self.best else None,
                    "train_cpu_s": self.train_cpu(), "validation_cpu_s": self.validation_cpu,
                    "wall_s": self.wall_seconds(), "last_validation": self._last, "resumes": self.resumes}

        def restore_checkpoint_state(self, state: dict[str, Any] | None) -> None:
            if not isinstance(state, dict):
                raise ValueError(f"{best_dir.parent}: the checkpoint holds no protocol state (it was not written by "
                                 "a protocol run): start the seed again in a new --out")
            self.curve = [tuple(p) for p in state["curve"]]
            self.best = tuple(state["best"]) if state["best"] else None
            self._spent, self.validation_cpu = float(state["train_cpu_s"]), float(state["validation_cpu_s"])
            self._wall_spent, self._last = float(state["wall_s"]), int(state["last_validation"])
            self.resumes = int(state["resumes"]) + 1

        def _on_training_start(self) -> None:
            # a resumed run goes on from the CPU and wall time its checkpoint recorded
            self._start = cpu_seconds() - self._spent - self.validation_cpu
            self._wall_start = time.perf_counter() - self._wall_spent

        def train_cpu(self) -> float:
            return cpu_seconds() - self._start - self.validation_cpu

        def wall_seconds(self) -> float:
            return time.perf_counter() - self._wall_start

        def validate(self) -> None:
            spent, before = self.train_cpu(), cpu_seconds()
            score = validation_score(self.model, env_id, bench, bench.validation_seeds)
            self.validation_cpu += cpu_seconds() - before
            point = (round(spent, 3), int(self.num_timesteps), score)
            self.curve.append(point)
            if self.best is None or better(score, self.best[2]):
                self.best = point
                save_weights(self.model, algo, best_dir)
            if on_eval is not None and on_eval(point) is False:
                self.stopped_by = "pruned"

        def _on_step(self) -> bool:
            if self.num_timesteps - self._last >= eval_every:
                self._last = self.num_timesteps
                self.validate()
            if self.stopped_by is None and self.train_cpu() >= budget_s:
                self.stopped_by = "budget"
            return self.stopped_by is None

        def _on_training_end(self) -> None:
            from joulegym.core.io import write_atomic

            if not self.curve or self.curve[-1][1] != self.num_timesteps:
                self.validate()
            final = {**self.checkpoint_state(), "stopped_by": self.stopped_by}
            write_atomic(best_dir.parent / TRAINED_FILE, json.dumps(final, indent=2) + "\n")

        def restore_finished(self, state: dict[str, Any]) -> None:
            """The state of a run whose training ended (its :data:`TRAINED_FILE`): only the scoring is left."""
            self.restore_checkpoint_state(state)
            self.resumes -= 1  # nothing was trained again
            self.stopped_by = state.get("stopped_by")
            self._start = cpu_seconds() - self._spent - self.validation_cpu
            self._wall_start = time.perf_counter() - self._wall_spent

    return Protocol()


def train_seed(env_id: str, algo: str, seed: int, out: Path, *, budget_s: float, eval_every: int = DEFAULT_EVAL_EVERY,
               hyperparams_file: str | None = None, n_envs: int | None = None, command: str = "",
               reference: dict[str, float] | None = None, on_eval: Any = None, test: bool = True,
               resume: bool = False) -> dict[str, Any]:
    """One protocol run (training seed ``seed``) into ``out``: train to the CPU budget with validation, then score
    the selected model on the held-out seeds. Writes ``out/protocol.json`` (the run's zoo provenance) and returns
    it. With ``resume`` the unfinished run in ``out`` goes on from its latest checkpoint, with the CPU time, the
    validation curve and the best model it had then (a stop loses at most the steps since that checkpoint)."""
    from joulegym.core.benchmark import VALIDATION_SEED_BASE
    from joulegym.core.io import write_atomic
    from joulegym.evaluation.runner import PolicyEntry
    from joulegym.evaluation.zoo import AGENT_JSON_SPACES, git_commit, scenario_spaces
    from joulegym.training import train

    descriptor, scenario, bench = benchmark_for(env_id)
    from joulegym.agents.algos import load_hyperparams, split_run_keys

    envs = n_envs or int(split_run_keys(load_hyperparams(algo, env_id, hyperparams_file))[1].get("n_envs", 1))
    if not (0 <= seed and seed + envs <= VALIDATION_SEED_BASE):  # env i of a vector env trains from seed + i
        raise ValueError(f"--seeds: training seed {seed} with {envs} env(s) must stay in [0, {VALIDATION_SEED_BASE}) "
                         f"(the validation seeds {VALIDATION_SEED_BASE}+ and the held-out seeds are above)")
    if not (budget_s > 0 and eval_every >= 1):
        raise ValueError(f"--cpu-budget must be > 0 and --eval-every >= 1, got {budget_s} and {eval_every}")
    callback = make_callback(env_id, bench, algo, budget_s, eval_every, out / "best", on_eval)
    if resume:
        _check_resumable(out, env_id, algo, seed)
        if _training_finished(out):  # stopped while scoring: score again, do not train
            callback.restore_finished(json.loads((out / TRAINED_FILE).read_text()))
        else:
            train(out=out, resume=True, progress_bar=False, tensorboard=False, callbacks=(callback,))
    else:
        if out.exists() and any(out.iterdir()):
            raise ValueError(f"--out: {str(out)!r} already holds a run of seed {seed}: --resume continues an "
                             "unfinished one; choose another --out for a new run")
        train(env_id, algo, TIMESTEP_CAP, seed, out, n_envs, {}, hyperparams_file, progress_bar=False,
              tensorboard=False, callbacks=(callback,))
    config = json.loads((out / "config.json").read_text())
    provenance: dict[str, Any] = {
        "format": 2, "family": descriptor.name, "scenario": scenario, "trained_on": scenario, "env_id": env_id,
        "env_kwargs": {},
        "algo": config["algo"], "seed": seed, "command": command, "commit": git_commit(),
        "wall_time_s": round(callback.wall_seconds(), 3),
        "cpu_seconds": round(callback.curve[-1][0] + callback.validation_cpu, 3),
        "train_cpu_seconds": round(callback.curve[-1][0], 3), "cpu_budget_s": budget_s, "resumes": callback.resumes,
        "stopped_by": callback.stopped_by or "timesteps", "timesteps": callback.best[1],
        "total_timesteps": config["num_timesteps"], "hyperparams": config["hyperparams"],
        "versions": config["versions"], "n_envs": int(config["n_envs"]),
        "validation": {"seeds": list(bench.validation_seeds), "metric": bench.metric, "eval_every": eval_every,
                       "curve": [list(p) for p in callback.curve],
                       "selected": dict(zip(("cpu_s", "timesteps", "metric"), callback.best, strict=True)),
                       "reference": reference or {}},
        "spaces": {k: v for k, v in scenario_spaces(env_id).items() if k != AGENT_JSON_SPACES}, "score": None}
    if test:
        from joulegym.evaluation.suite import agent_score

        provenance["score"] = agent_score(PolicyEntry(config["algo"], "agent", config["algo"], path=str(out / "best")),
                                          descriptor, scenario)
    write_atomic(out / PROTOCOL_FILE, json.dumps(provenance, indent=2, sort_keys=True, default=str) + "\n")
    return provenance


def _check_resumable(out: Path, env_id: str, algo: str, seed: int) -> None:
    """``out`` holds an unfinished protocol run of this env, algorithm and seed (``ValueError`` otherwise)."""
    from joulegym.agents.algos import algo_spec

    try:
        config = json.loads((out / "config.json").read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"--resume: {str(out)!r} holds no readable config.json ({err})") from None
    given = {"env_id": env_id, "algo": algo_spec(algo).name, "seed": seed, "timesteps": TIMESTEP_CAP}
    for key, value in given.items():
        if config.get(key) != value:
            raise ValueError(f"--resume: the run in {str(out)!r} has {key}={config.get(key)!r}, not {value!r}")


def _training_finished(out: Path) -> bool:
    """``out``'s training ended (its config says complete); ``ValueError`` if the final state to score it from is
    missing (a run from before that state was written)."""
    config = json.loads((out / "config.json").read_text())
    if not config.get("complete"):
        return False
    if not (out / TRAINED_FILE).is_file():
        raise ValueError(f"--resume: the training in {str(out)!r} is complete but {TRAINED_FILE} is missing, so its "
                         "validation curve is lost: score it with `evaluate.py --ship` or train the seed again in a "
                         "new --out")
    return True


def seed_command(env_id: str, algo: str, seed: int, out: str | Path, budget_s: float, eval_every: int,
                 hyperparams_file: str | None, n_envs: int | None) -> str:
    """The command that reruns one protocol seed (its provenance's ``command``)."""
    parts = ["python", "-m", "joulegym.protocol", "train", "--env", env_id, "--algo", algo, "--seeds", str(seed),
             "--cpu-budget", f"{budget_s:g}", "--eval-every", str(eval_every)]
    parts += ["--hyperparams", str(hyperparams_file)] if hyperparams_file else []
    parts += ["--n-envs", str(n_envs)] if n_envs else []
    return " ".join(shlex.quote(p) for p in [*parts, "--out", str(out)])


def train_seeds(env_id: str, algo: str, seeds: list[int], out: str | Path, *, budget_s: float,
                eval_every: int = DEFAULT_EVAL_EVERY, hyperparams_file: str | None = None,
                n_envs: int | None = None, resume: bool = False) -> list[dict[str, Any]]:
    """:func:`train_seed` for every seed into ``out/seed<k>/``, one after the other (run one process per seed to
    use several cores: each writes its own ``seed<k>/``). With ``resume`` a finished seed is kept as it is, an
    unfinished one goes on from its checkpoint and a missing one starts."""
    import gymnasium as gym

    import joulegym  # noqa: F401  (registers the ids)

    descriptor, scenario, bench = benchmark_for(env_id)
    if len(set(seeds)) != len(seeds) or not seeds:
        raise ValueError(f"--seeds must be distinct training seeds, got {seeds}")
    if env_id not in gym.registry:
        raise ValueError(f"--env {env_id!r} is not registered")
    reference = reference_scores(descriptor, scenario, env_id, bench.validation_seeds)
    done = []
    for seed in seeds:
        command = seed_command(env_id, algo, seed, out, budget_s, eval_every, hyperparams_file, n_envs)
        run = Path(out) / f"seed{seed}"
        if resume and (run / PROTOCOL_FILE).is_file():
            done.append(json.loads((run / PROTOCOL_FILE).read_text()))
            print(f"seed {seed}: finished earlier ({run / PROTOCOL_FILE})", flush=True)
            continue
        done.append(train_seed(env_id, algo, seed, run, budget_s=budget_s, eval_every=eval_every,
                               hyperparams_file=hyperparams_file, n_envs=n_envs, command=command,
                               reference=reference, resume=resume and (run / "config.json").is_file()))
        point = done[-1]["validation"]["selected"]
        print(f"seed {seed}: {done[-1]['train_cpu_seconds']:.0f} training CPU-s, {done[-1]['total_timesteps']} steps; "
              f"selected at {point['timesteps']} steps (validation {bench.metric} {point['metric']:.4g}); test "
              f"{bench.metric} {done[-1]['score']['mean']:.4g}, normalised {done[-1]['score']['normalised_mean']:.3f}",
              flush=True)
    return done


def protocol_runs(outs: list[str | Path]) -> list[Path]:
    """The finished protocol runs in ``outs``: each a ``train --out`` directory (its ``seed<k>/`` runs) or one run
    directory itself (holding ``protocol.json``).

    :raises ValueError: for a directory without a finished run, or a run given twice.
    """
    runs: list[Path] = []
    for out in outs:
        out = Path(out)
        found = [out] if (out / PROTOCOL_FILE).is_file() else sorted(
            (p for p in out.glob("seed*") if (p / PROTOCOL_FILE).is_file()), key=lambda p: (len(p.name), p.name))
        if not found:
            raise ValueError(f"{str(out)!r} holds no finished protocol run (seed<k>/{PROTOCOL_FILE})")
        runs += found
    resolved = [r.resolve() for r in runs]
    twice = sorted({str(r) for r in resolved if resolved.count(r) > 1})
    if twice:
        raise ValueError(f"protocol runs given twice: {twice}")
    return runs


def ship(outs: str | Path | list[str | Path], zoo: str | Path | None = None) -> list[Path]:
    """Ship every finished run of ``outs`` (one ``train --out`` per seed, or one holding several ``seed<k>/``) into
    the zoo as the training seeds of one (family, scenario, algo) entry: each run's ``best/`` agent and its
    ``protocol.json`` (``trained_on`` and ``spaces`` filled from the training env where the record predates
    them).

    Every run is checked before anything is copied: all must have a test score, be of one (env, algo), have
    distinct training seeds and share the entry's configuration (:data:`~joulegym.evaluation.zoo.SHARED_KEYS`).
    """
    from joulegym.evaluation.zoo import SHARED_KEYS, ship_run

    runs = protocol_runs([outs] if isinstance(outs, str | Path) else list(outs))
    records = []
    for run in runs:
        try:
            provenance = json.loads((run / PROTOCOL_FILE).read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"{run / PROTOCOL_FILE}: not valid JSON ({err.msg})") from None
        if not isinstance(provenance, dict) or provenance.get("score") is None:
            raise ValueError(f"{run / PROTOCOL_FILE}: the run has no test score (train it with the protocol's train)")
        if not (run / "best").is_dir():
            raise ValueError(f"{run}: no best/ agent (the model the validation selected)")
        records.append(provenance)
    first = records[0]
    for run, record in zip(runs[1:], records[1:], strict=True):
        differ = [k for k in ("family", "scenario", "algo", *SHARED_KEYS) if k in first and record.get(k) != first[k]]
        if differ:
            raise ValueError(f"{run / PROTOCOL_FILE} differs from {runs[0] / PROTOCOL_FILE} in {differ}: the runs "
                             "shipped together are the training seeds of one agent (one env, algorithm and "
                             "configuration)")
    seeds = [int(r["seed"]) for r in records]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"training seeds {seeds} repeat across {[str(r) for r in runs]}: one run per seed")
    return [ship_run(run / "best", record, zoo) for run, record in zip(runs, records, strict=True)]


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    """The options a protocol run and a tuning study share."""
    parser.add_argument("--env", required=True, help="a benchmark scenario's env id")
    parser.add_argument("--algo", required=True, help="ppo, a2c, sac, td3, dqn, maskable_ppo")
    parser.add_argument("--eval-every", type=int, default=DEFAULT_EVAL_EVERY,
                        help=f"env steps between validations (default {DEFAULT_EVAL_EVERY})")
    parser.add_argument("--hyperparams", default=None, help="YAML file overriding the packaged hyperparameters")
    parser.add_argument("--n-envs", type=int, default=None, help="parallel envs (default: the hyperparameters')")
    parser.add_argument("--out", required=True, help="output directory")


def main(argv: list[str] | None = None) -> int:
    from joulegym.core.benchmark import DEFAULT_TRAINING_BUDGET_S
    from joulegym.training import TrainingInterrupted

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m joulegym.protocol", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    train_p = sub.add_parser("train", help="train --seeds to the CPU budget, select on validation, score on test")
    add_run_arguments(train_p)
    train_p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="training seeds (< 9000)")
    train_p.add_argument("--cpu-budget", type=float, default=DEFAULT_TRAINING_BUDGET_S,
                         help=f"training CPU seconds per seed (default {DEFAULT_TRAINING_BUDGET_S:.0f})")
    train_p.add_argument("--resume", action="store_true",
                         help="continue the unfinished seeds in --out from their checkpoints (finished ones are kept)")
    ship_p = sub.add_parser("ship", help="copy finished protocol runs into the zoo as the training seeds of one agent")
    ship_p.add_argument("out", nargs="+", help="train --out directories (one per seed, or one with several seed<k>/)")
    ship_p.add_argument("--zoo", default=None, help="the zoo directory (default: joulegym/agents/zoo)")
    args = parser.parse_args(argv)
    try:
        if args.command == "ship":
            for path in ship(args.out, args.zoo):
                print(f"shipped {path}")
            return 0
        train_seeds(args.env, args.algo, args.seeds, args.out, budget_s=args.cpu_budget, eval_every=args.eval_every,
                    hyperparams_file=args.hyperparams, n_envs=args.n_envs, resume=args.resume)
    except ValueError as err:
        print(f"python -m joulegym.protocol: error: {err}", file=sys.stderr)
        return 2
    except TrainingInterrupted as stop:
        again = [a for a in argv if a != "--resume"] + ["--resume"]
        print(f"python -m joulegym.protocol: {stop}; continue with: python -m joulegym.protocol "
              f"{' '.join(shlex.quote(a) for a in again)}", file=sys.stderr)
        return 128 + stop.signum
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
