"""``evaluate.py`` / ``joulegym-evaluate``: the leaderboard of reference policies and trained agents.

::

    python evaluate.py                                   # ETF reference policies on tx2-fig5
    python evaluate.py --env joulegym/ETF-v0 --policies etf,tf,ef,random,ppo:runs/x --seeds 10
    python evaluate.py --env joulegym/DREAM-tiny-v0 --policies dream-full,random --record   # + an animation each
    python evaluate.py --reproduce etf --out results/etf-paper
    python evaluate.py --suite                           # the leaderboard page (joulegym.evaluation.suite)
    python evaluate.py --suite etf --quick --out results/lb
    python evaluate.py --suite --ray                     # the same, episodes as Ray tasks (--ray ADDR: a cluster)
    python evaluate.py --suite --pareto                  # the energy-performance fronts (joulegym.evaluation.pareto)
    python evaluate.py --ship runs/etf-ppo                # a train.py run into joulegym/agents/zoo

Writes into ``--out``, which must be new, empty or the output of an earlier joulegym run (its
``.joulegym-run.json`` lists the files it wrote; anything else there is refused, never deleted). The run's files
are written beside it and swapped into place together, replacing the previous run's as a whole
(:class:`joulegym.core.io.ResultDir`, docs/robustness.md): ``episodes.csv`` (one row per episode: return, length and the
scalar paper metrics), ``summary.csv``, ``leaderboard.md`` (mean ± std, IQM, bootstrap CI and the
normalised score: random = 0, best reference policy = 1), ``episode.png`` (one episode per policy)
and the family's summary figures; with ``--record``, ``episode-<policy>.gif`` (or ``.mp4``): each policy's first
episode as an animation of the env's frames (:mod:`joulegym.evaluation.record`). ``random`` is added when it is
missing, since the score needs it.

Agents: ``ALGO:PATH`` with ``PATH`` a weights-only agent directory (``agent.json`` + ``weights.pt``, or a
``train.py`` run directory holding ``agent/``), which is safe to load. A ``model.zip`` is unpickled when loaded and
can run code: it is loaded only with ``--unsafe-unpickle-model-zip`` (with a warning), never from the zoo.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any

DEFAULT_ENV = "joulegym/ETF-tx2-fig5-v0"


def prog_name(default: str, console_script: str) -> str:
    """The name usage lines and errors show: the console script's when run as one, else ``default``."""
    name = os.path.basename(sys.argv[0] if sys.argv and sys.argv[0] else "")
    return name if name in (default, console_script) else default


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=prog_name("evaluate.py", "joulegym-evaluate"), description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Security: agents load weights-only (agent.json + weights.pt); a "
                                            "model.zip is unpickled when loaded and can run code, so it is loaded "
                                            "only with --unsafe-unpickle-model-zip.")
    parser.add_argument("--env", default=None, help=f"env id (default: the one the agents were trained on, else "
                                                    f"{DEFAULT_ENV})")
    parser.add_argument("--policies", default=None,
                        help="comma-separated: reference names (NAME or NAME:key=value), agents ALGO:PATH, or all")
    parser.add_argument("--seeds", type=int, default=None, help="held-out seeds (episodes) per policy (default 5)")
    parser.add_argument("--out", default=None, help="output directory (default results/<env>): new, empty or an "
                                                    "earlier joulegym run's (nothing else in it is deleted)")
    parser.add_argument("--env-kwargs", default=None, help="JSON dict of gym.make kwargs (default: those the agents "
                                                           "were trained with, from their config.json, else {})")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    parser.add_argument("--record", nargs="?", const="gif", default=None, metavar="FORMAT",
                        help="also write each policy's first episode as an animation, episode-<policy>.gif (FORMAT "
                             "gif, the default, or mp4, which needs ffmpeg)")
    parser.add_argument("--record-frames", type=int, default=None, metavar="N",
                        help="with --record: at most N frames per animation (default 120)")
    parser.add_argument("--reproduce", metavar="FAMILY", help="recompute the paper's figures of FAMILY instead")
    parser.add_argument("--quick", action="store_true", help="with --reproduce or --suite: a reduced, faster version")
    parser.add_argument("--suite", nargs="*", metavar="FAMILY",
                        help="the leaderboard: every reference policy and shipped agent on the benchmark of each "
                             "FAMILY (default: every family with one); writes leaderboard.md/.csv and index.html")
    parser.add_argument("--pareto", action="store_true",
                        help="with --suite: the energy-performance fronts instead of the leaderboard: every paper's "
                             "knob swept, hypervolume and expected utility with bootstrap CIs, a front plot per "
                             "scenario (default --out results/fronts; docs/tradeoffs.md)")
    parser.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDR",
                        help="with --suite: run the episodes as Ray tasks (pip install \"joulegym[ray]\"); without "
                             "ADDR on a local Ray using this machine's cores, with ADDR (auto, HOST:PORT) on that "
                             "cluster; the files are identical to the serial run's (docs/ray.md)")
    parser.add_argument("--ship", metavar="RUN_DIR", help="copy a finished train.py run's agent into the zoo "
                                                          "(--zoo) with its provenance and held-out score")
    parser.add_argument("--zoo", default=None, help="with --suite: a directory of shipped agents "
                                                    "(<family>/<scenario>/<algo>/; default joulegym/agents/zoo)")
    parser.add_argument("--unsafe-unpickle-model-zip", dest="unsafe_unpickle", action="store_true",
                        help="load agents given as a model.zip (SB3's format, unpickled: it can run code); only for "
                             "files you trust")
    args = parser.parse_args(argv)
    _check_modes(parser, args)
    args.policies = "all" if args.policies is None else args.policies
    args.seeds = 5 if args.seeds is None else args.seeds
    return args


def _check_modes(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """One mode at a time, and no flag the chosen mode would ignore."""
    modes = [flag for flag, on in (("--suite", args.suite is not None), ("--reproduce", args.reproduce is not None),
                                   ("--ship", args.ship is not None)) if on]
    if len(modes) > 1:
        parser.error(f"{' and '.join(modes)} cannot be combined: choose one")
    if modes:
        given = [flag for flag, value in (("--env", args.env), ("--env-kwargs", args.env_kwargs),
                                          ("--policies", args.policies), ("--seeds", args.seeds)) if value is not None]
        given += ["--unsafe-unpickle-model-zip"] if args.unsafe_unpickle else []
        if given:
            parser.error(f"{modes[0]} runs its fixed policies, envs and seeds: {', '.join(given)} "
                         f"{'does' if len(given) == 1 else 'do'} not apply "
                         "(--quick gives a smaller run; evaluate your own policies without --suite/--reproduce)")
    if args.zoo is not None and args.suite is None and args.ship is None:
        parser.error("--zoo applies only with --suite or --ship")
    if args.seeds is not None and args.seeds < 1:
        parser.error(f"--seeds must be >= 1, got {args.seeds}")
    if args.quick and args.reproduce is None and args.suite is None:
        parser.error("--quick applies only with --reproduce FAMILY or --suite [FAMILY ...]")
    _check_record(parser, args)
    if args.ray is not None and args.suite is None:
        parser.error("--ray applies only with --suite [FAMILY ...]")
    if args.pareto and (args.suite is None or args.quick or args.ray is not None):
        parser.error("--pareto applies only with --suite [FAMILY ...], without --quick and --ray (the fronts run "
                     "every test seed; the run's budget is 15 CPU-minutes, docs/tradeoffs.md)")


def _check_record(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """``--record`` and ``--record-frames``: only when evaluating policies on one env, with a writable format."""
    from joulegym.evaluation.record import RECORD_FRAMES, check_format

    if args.record_frames is not None and args.record is None:
        parser.error("--record-frames applies only with --record")
    if args.record is None:
        return
    if args.suite is not None or args.reproduce is not None or args.ship is not None:
        parser.error("--record applies only when evaluating policies on one env (not with --suite, --reproduce or "
                     "--ship)")
    try:
        check_format(args.record)
    except ValueError as err:
        parser.error(str(err))
    args.record_frames = RECORD_FRAMES if args.record_frames is None else args.record_frames
    if args.record_frames < 1:
        parser.error(f"--record-frames must be >= 1, got {args.record_frames}")


def _agent_tokens(text: str) -> str:
    """``--policies`` with every bare agent path (``runs/x/model.zip``, a run or agent directory) given its
    algorithm as ``ALGO:PATH``, read from the run's ``agent.json`` / ``config.json``
    (docs/tutorials/train-and-evaluate.md)."""
    from joulegym.agents import SB3Policy

    tokens = []
    for token in [t.strip() for t in text.split(",") if t.strip()]:
        if ":" not in token and (token.endswith(".zip") or os.sep in token) and Path(token).exists():
            token = f"{SB3Policy.infer_algo(token).lower()}:{token}"
        tokens.append(token)
    return ",".join(tokens)


def _trained_on(text: str) -> list[tuple[str, dict[str, Any]]]:
    """``(path, config.json)`` of each ``ALGO:PATH`` agent of ``--policies`` that has a train.py config."""
    from joulegym.agents import SB3Policy
    from joulegym.agents.algos import ALGOS

    found = []
    for token in [t.strip() for t in text.split(",") if t.strip()]:
        head, _, rest = token.partition(":")
        if head.lower().replace("-", "_") in ALGOS and rest and Path(rest).exists():
            config = SB3Policy.run_config(rest)
            if config is not None and "env_id" in config:
                found.append((rest, config))
    return found


def _env_and_kwargs(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The env id and kwargs to evaluate on: the user's, else those the agents were trained with; a warning when
    the user's differ from an agent's training env."""
    from joulegym.core.config import parse_env_kwargs

    trained = _trained_on(args.policies)
    env_id = args.env or (trained[0][1]["env_id"] if trained else DEFAULT_ENV)
    kwargs = parse_env_kwargs(args.env_kwargs) if args.env_kwargs is not None else (
        dict(trained[0][1].get("env_kwargs") or {}) if trained else {})
    for path, config in trained:
        theirs = (config["env_id"], dict(config.get("env_kwargs") or {}))
        if theirs != (env_id, kwargs):
            print(f"warning: the agent {path} was trained on {theirs[0]} with env kwargs {json.dumps(theirs[1])}; "
                  f"evaluating it on {env_id} with {json.dumps(kwargs)}", file=sys.stderr)
    return env_id, kwargs


def run(args: argparse.Namespace) -> list[Path]:
    """Run the mode ``args`` asks for (ship, suite, fronts, reproduction or a plain evaluation); the files written."""
    import joulegym  # noqa: F401  (registers the ids)
    from joulegym.core.io import ResultDir
    from joulegym.evaluation.hooks import hooks_for

    if args.ship:
        from joulegym.evaluation.suite import ship_agent

        target = ship_agent(args.ship, args.zoo)
        print(f"shipped {args.ship} to {target}: {json.loads((target / 'provenance.json').read_text())['score']}")
        return [target]
    if args.suite is not None and args.pareto:
        from joulegym.evaluation.pareto import run_pareto

        return run_pareto(args.suite, out=args.out, zoo=args.zoo, plots=not args.no_plots)
    if args.suite is not None:
        from joulegym.evaluation.suite import run_suite

        if args.ray is not None:  # the same suite, its episodes as Ray tasks (joulegym.integrations.parallel)
            from joulegym.evaluation.runner import evaluate as serial_evaluate
            from joulegym.integrations.parallel import RayEvaluate, ray_session

            with ray_session(args.ray):
                return run_suite(args.suite, quick=args.quick, out=args.out, zoo=args.zoo, plots=not args.no_plots,
                                 evaluate_fn=RayEvaluate(serial_evaluate))
        return run_suite(args.suite, quick=args.quick, out=args.out, zoo=args.zoo, plots=not args.no_plots)
    if args.reproduce:
        from joulegym.core.progress import heartbeat

        family = args.reproduce.lower()
        hooks = hooks_for(family)
        if hooks.reproduce is None:
            raise ValueError(f"--reproduce {family!r}: no reproduction for this family")
        result = ResultDir(args.out or f"results/{family}-paper")
        with result as tmp, heartbeat(f"reproduce {family}"):  # never silent, whatever the family's own lines
            written = hooks.reproduce(tmp, args.quick)
        return [result.final(p) for p in written]
    return _evaluate_env(args)


def _evaluate_env(args: argparse.Namespace) -> list[Path]:
    """``--env ID --policies ...``: every policy on the held-out seeds, the tables, plots and recordings."""
    import gymnasium as gym

    from joulegym.core.io import ResultDir, write_atomic, write_csv
    from joulegym.evaluation.hooks import hooks_for
    from joulegym.evaluation.runner import eval_seeds, evaluate, markdown_table, parse_policies, summarise

    args.policies = _agent_tokens(args.policies)
    args.env, env_kwargs = _env_and_kwargs(args)
    if args.env not in gym.registry:
        raise ValueError(f"env={args.env!r} is not registered; see `python -m joulegym list`")
    result = ResultDir(args.out or f"results/{args.env.split('/')[-1]}")  # checked before the work
    probe = gym.make(args.env, **env_kwargs)
    family = probe.unwrapped.family
    entries = parse_policies(args.policies, probe, allow_pickle=args.unsafe_unpickle)
    for entry in entries:  # an agent that cannot be loaded fails now, before any episode
        if entry.kind == "agent":
            entry.build()
    probe.close()
    if not any(e.name == "random" for e in entries):
        from joulegym.evaluation.runner import PolicyEntry

        entries.append(PolicyEntry("random", "reference", "random", family=family))
    hooks = hooks_for(family)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        episodes, traces, skipped = evaluate(args.env, entries, eval_seeds(args.seeds), env_kwargs)
    episodes.attrs["env_kwargs"] = dict(env_kwargs)  # for summary plots that re-run the env (EMRF front)
    for w in caught:
        if "skipping" in str(w.message):
            print(f"note: {w.message}", file=sys.stderr)
    summary = summarise(episodes, hooks.headline_metrics)
    table = markdown_table(summary, list(hooks.headline_metrics) or _first_metrics(episodes))
    header = (f"# {args.env}\n\n{args.seeds} held-out seeds per policy; env kwargs {json.dumps(env_kwargs)}."
              f"{' Skipped: ' + ', '.join(skipped) + '.' if skipped else ''}\n\n")
    with result as out:  # every file of the run lands together (the previous run's files are replaced as a whole)
        written = [write_csv(episodes, out / "episodes.csv"), write_csv(summary, out / "summary.csv"),
                   write_atomic(out / "leaderboard.md", header + table + "\n")]
        if not args.no_plots:
            written += _plots(args.env, family, traces, episodes, out, hooks)
        if args.record:  # each policy's first evaluation episode (seed and env settings as evaluated)
            from joulegym.evaluation.record import record_policies

            written += record_policies(args.env, env_kwargs, entries, eval_seeds(1)[0], out, args.record,
                                       args.record_frames, skip=skipped)
    written = [result.final(p) for p in written]
    print(header + table)
    print("\nwrote " + ", ".join(str(p) for p in written))
    return written


def _first_metrics(episodes) -> list[str]:
    from joulegym.evaluation.runner import BASE_COLUMNS

    return [c for c in episodes.columns if c not in BASE_COLUMNS][:4]


def _plots(env_id, family, traces, episodes, out: Path, hooks) -> list[Path]:
    from joulegym.core.io import save_figure
    from joulegym.evaluation.plots import reward_plot

    fig = hooks.episode_plot(traces, env_id) if hooks.episode_plot else reward_plot(traces, env_id)
    written = [save_figure(fig, out / "episode.png")]
    if hooks.summary_plot is not None:
        written += list(hooks.summary_plot(episodes, out))
    return written


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        run(args)
    except ValueError as err:
        print(f"{prog_name('evaluate.py', 'joulegym-evaluate')}: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
