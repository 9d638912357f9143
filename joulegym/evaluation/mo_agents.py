"""Weight-conditioned agents for the trade-off fronts (docs/tradeoffs.md, "Multi-objective agents").

The multi-objective path trains one Stable-Baselines3 agent per weight vector of a grid through the same
``train.py`` as the single-objective zoo (the outer-loop linear-scalarisation method of Roijers et al., "A Survey of
Multi-Objective Sequential Decision-Making", JAIR 2013, §4): the weight is the env's own ``reward_weights`` kwarg
over the family's two trade-off reward parts (:attr:`joulegym.evaluation.tradeoffs.TradeOff.reward_parts`; every
other part weighs 0), recorded in the run's ``config.json`` (``env_kwargs``) and carried into the zoo provenance.

Zoo layout: ``<zoo>/<family>/<scenario>/mo/<algo>-w<energy weight>/seed<k>/`` (``agent.json`` + ``weights.pt`` +
``provenance.json`` whose ``env_kwargs`` hold the ``reward_weights``). The single-objective zoo reader skips the
``mo`` directory (:data:`joulegym.evaluation.zoo.MO_DIR`); :func:`weight_agents` reads it and the fronts
(:mod:`joulegym.evaluation.pareto`) evaluate every such agent on its training scenario, labelled with its weights.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from joulegym.evaluation.tradeoffs import tradeoff
from joulegym.evaluation.zoo import MO_DIR, PROVENANCE_FILE, ZooAgent, _read_run, benchmark_scenario, default_zoo

DEFAULT_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)  # the energy part's weight; the performance part weighs 1 - w
DEFAULT_SEEDS = (0, 1, 2)  # the protocol's three training seeds per agent (docs/leaderboard.md)
# Per family, the scenario a weight-conditioned agent trains on and its steps: the scenario of the family's
# single-objective zoo agent (its tuned hyperparameters apply) and the steps that fill 80 % of the benchmark's training
# budget of one CPU-hour at the CPU time per step of the smoke runs in docs/tradeoffs.md ("Multi-objective agents"),
# rounded down to 100k.
PLAN: dict[str, tuple[str, int]] = {
    "etf": ("tx2-fig6-random", 800_000), "emrf": ("apu-random", 700_000), "powerflow": ("tiny", 400_000),
    "dream": ("ar-call", 2_600_000), "qin": ("paper-rw", 2_100_000),
}


def weight_grid(family: str, grid: tuple[float, ...] = DEFAULT_GRID) -> list[dict[str, float]]:
    """The ``reward_weights`` of every grid point for ``family``: ``{energy part: w, performance part: 1 - w}`` and
    every other reward part of the benchmark's kind at 0.

    :raises ValueError: for a weight outside [0, 1] or a family without trade-off reward parts.
    """
    import gymnasium as gym

    from joulegym.core.family import env_id, get_family

    trade = tradeoff(family)
    if not trade.reward_parts:
        raise ValueError(f"family {family!r}: its trade-off names no reward parts for weight-conditioned agents")
    bench = get_family(family).benchmark
    assert bench is not None
    env = gym.make(env_id(bench.kind))
    names = env.unwrapped.reward_spec.names
    env.close()
    out = []
    for w in grid:
        if not 0.0 <= float(w) <= 1.0:
            raise ValueError(f"weight grid values must lie in [0, 1], got {w!r}")
        weights = dict.fromkeys(names, 0.0)
        weights.update({trade.reward_parts[0]: float(w), trade.reward_parts[1]: 1.0 - float(w)})
        out.append(weights)
    return out


def train_command(env_id: str, algo: str, weights: dict[str, float], seed: int, timesteps: int, out: str) -> str:
    """The ``train.py`` command of one grid point (the weight is an env kwarg, so it lands in ``config.json``)."""
    kwargs = json.dumps({"reward_weights": weights}, sort_keys=True)
    return (f"python train.py --env {env_id} --algo {algo} --seed {seed} --timesteps {timesteps} "
            f"--env-kwargs '{kwargs}' --out {out}")


def tag(weights: dict[str, float], family: str) -> str:
    """``w0.25``: the energy part's weight, the directory suffix of the agent."""
    return f"w{weights[tradeoff(family).reward_parts[0]]:g}"


def ship_weight_agent(run_dir: str | Path, zoo: str | Path | None = None) -> Path:
    """Copy a finished ``train.py`` run trained with ``reward_weights`` into the zoo's ``mo`` directory with a
    format-2 provenance (the weights in its ``env_kwargs``). Returns the run's zoo directory.

    :raises ValueError: for a run that is not complete, has no ``reward_weights`` or is not on a benchmark scenario.
    """
    from joulegym.agents.weights import AGENT_FILE, WEIGHTS_FILE, is_weights_dir
    from joulegym.core.io import write_atomic
    from joulegym.evaluation.zoo import scenario_spaces

    run_dir = Path(run_dir)
    config_path = run_dir / "config.json"
    if not config_path.is_file() or not is_weights_dir(run_dir / "agent"):
        raise ValueError(f"{str(run_dir)!r} is not a train.py run (config.json and agent/ expected)")
    config = json.loads(config_path.read_text())
    weights = (config.get("env_kwargs") or {}).get("reward_weights")
    if not config.get("complete") or not weights or set(config["env_kwargs"]) != {"reward_weights"}:
        raise ValueError(f"{config_path}: a weight-conditioned run is complete and its env_kwargs hold only "
                         f"reward_weights, got complete={config.get('complete')!r}, "
                         f"env_kwargs={config.get('env_kwargs')!r}")
    descriptor, scenario = benchmark_scenario(config["env_id"])
    spaces = scenario_spaces(config["env_id"])
    spaces.pop("agent.json", None)
    provenance = {"format": 2, "family": descriptor.name, "scenario": scenario, "trained_on": scenario,
                  "env_id": config["env_id"], "env_kwargs": {"reward_weights": weights}, "algo": config["algo"],
                  "seed": int(config["seed"]), "command": train_command(
                      config["env_id"], config["algo"], weights, int(config["seed"]), int(config["timesteps"]),
                      str(run_dir)),
                  "commit": "", "timesteps": int(config.get("num_timesteps", config["timesteps"])),
                  "wall_time_s": float(config.get("train_seconds", float("nan"))),
                  "cpu_seconds": config.get("cpu_seconds"), "train_cpu_seconds": config.get("cpu_seconds"),
                  "cpu_budget_s": None, "hyperparams": config.get("hyperparams"), "versions": config.get("versions"),
                  "n_envs": int(config.get("n_envs", 1)), "validation": None, "score": {"mean": None},
                  "spaces": spaces}
    target = (Path(zoo if zoo is not None else default_zoo()) / descriptor.name / scenario / MO_DIR
              / f"{config['algo']}-{tag(weights, descriptor.name)}" / f"seed{int(config['seed'])}")
    target.mkdir(parents=True, exist_ok=True)
    for name in (AGENT_FILE, WEIGHTS_FILE):
        shutil.copyfile(run_dir / "agent" / name, target / name)
    write_atomic(target / PROVENANCE_FILE, json.dumps(provenance, indent=2, sort_keys=True, default=str) + "\n")
    return target


def weight_agents(zoo: Path | None, family: str, scenario: str, expected_env_id: str) -> list[ZooAgent]:
    """The weight-conditioned agents shipped for ``family``/``scenario`` (``<zoo>/.../mo/<algo>-w<x>/``), each with
    its runs; the provenance must hold ``env_kwargs.reward_weights``.

    :raises ValueError: naming the directory, for an entry that is not ``<algo>-w<x>`` or lacks the weights.
    """
    from joulegym.agents.algos import ALGOS

    base = Path(zoo) / family / scenario / MO_DIR if zoo is not None else None
    if base is None or not base.is_dir():
        return []
    agents = []
    for directory in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")):
        algo, _, weight = directory.name.rpartition("-")
        if algo not in ALGOS or not weight.startswith("w"):
            raise ValueError(f"weight-conditioned agent {str(directory)!r}: the directory name must be "
                             f"<algo>-w<energy weight> with algo one of {sorted(ALGOS)}")
        run_dirs = sorted(p for p in directory.iterdir() if p.is_dir() and p.name.startswith("seed"))
        runs = tuple(_read_run(d, family, scenario, algo, expected_env_id) for d in run_dirs)
        if not runs or any(not (r.provenance.get("env_kwargs") or {}).get("reward_weights") for r in runs):
            raise ValueError(f"weight-conditioned agent {str(directory)!r}: every seed<k>/ run's {PROVENANCE_FILE} "
                             "needs env_kwargs.reward_weights")
        agents.append(ZooAgent(family, scenario, algo, tuple(sorted(runs, key=lambda r: r.seed))))
    return agents


def plan_commands(families: tuple[str, ...] = (), seeds: tuple[int, ...] = DEFAULT_SEEDS,
                  grid: tuple[float, ...] = DEFAULT_GRID, out: str = "runs/mo",
                  timesteps: int | None = None) -> list[str]:
    """Every ``train.py`` command of the weight grid for ``families`` (default: every family of :data:`PLAN`), one per
    (family, weight, seed), into ``<out>/<family>-w<energy weight>-s<seed>``; ``timesteps`` overrides the plan's
    (a smoke run).

    :raises ValueError: for a family without a plan.
    """
    from joulegym.core.family import env_id, get_family

    commands = []
    for family in families or tuple(PLAN):
        if family not in PLAN:
            raise ValueError(f"family {family!r} has no weight-conditioned agent plan; planned: {sorted(PLAN)}")
        scenario, steps = PLAN[family]
        bench = get_family(family).benchmark
        assert bench is not None
        scenario_id = env_id(bench.kind, scenario, get_family(family).kind(bench.kind).version)
        for weights in weight_grid(family, grid):
            for seed in seeds:
                run = f"{out}/{family}-{tag(weights, family)}-s{seed}"
                commands.append(train_command(scenario_id, bench.zoo_algo, weights, seed,
                                              timesteps if timesteps is not None else steps, run))
    return commands


def main(argv: list[str] | None = None) -> int:
    """``python -m joulegym.evaluation.mo_agents commands [FAMILY ...]`` prints the grid's ``train.py`` commands;
    ``python -m joulegym.evaluation.mo_agents ship RUN_DIR ...`` ships finished runs into the zoo's ``mo`` directory."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m joulegym.evaluation.mo_agents",
                                     description="Weight-conditioned agents for the trade-off fronts "
                                                 "(docs/tradeoffs.md).")
    sub = parser.add_subparsers(dest="what", required=True)
    cmd = sub.add_parser("commands", help="print the train.py command of every (family, weight, seed)")
    cmd.add_argument("families", nargs="*", help=f"families (default: {' '.join(PLAN)})")
    cmd.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULT_SEEDS))
    cmd.add_argument("--out", default="runs/mo", help="parent directory of the runs (default runs/mo)")
    cmd.add_argument("--timesteps", type=int, default=None, help="override the plan's steps (a smoke run)")
    ship = sub.add_parser("ship", help="copy finished weight-conditioned train.py runs into the zoo")
    ship.add_argument("runs", nargs="+")
    ship.add_argument("--zoo", default=None, help="zoo directory (default: the package's)")
    args = parser.parse_args(argv)
    try:
        if args.what == "commands":
            print("\n".join(plan_commands(tuple(args.families), tuple(args.seeds), out=args.out,
                                          timesteps=args.timesteps)))
        else:
            for run in args.runs:
                print(ship_weight_agent(run, args.zoo))
    except ValueError as err:
        parser.exit(2, f"error: {err}\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
