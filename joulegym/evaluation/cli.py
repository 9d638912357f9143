"""``evaluate.py`` / ``joulegym-evaluate``: the leaderboard of reference policies and trained agents.

::

    python evaluate.py                                   # ETF reference policies on tx2-fig5
    python evaluate.py --env joulegym/ETF-v0 --policies etf,tf,ef,random,ppo:runs/x/model.zip --seeds 10
    python evaluate.py --reproduce etf --out results/etf-paper

Writes into ``--out`` (the run's files are written beside it and moved into place together, replacing a
previous run's as a whole): ``episodes.csv`` (one row per episode: return, length and the
scalar paper metrics), ``summary.csv``, ``leaderboard.md`` (mean ± std, IQM, bootstrap CI and the
normalised score: random = 0, best reference policy = 1), ``episode.png`` (one episode per policy)
and the family's summary figures. ``random`` is added when it is missing, since the score needs it.

Agents: ``ALGO:PATH`` with ``PATH`` a weights-only agent directory (``agent.json`` + ``weights.pt``, or a
``train.py`` run directory holding ``agent/``), which is safe to load, or a ``model.zip``, which is unpickled
and can run code: evaluate ``model.zip`` files only from sources you trust.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

DEFAULT_ENV = "joulegym/ETF-tx2-fig5-v0"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="evaluate.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Security: a model.zip is unpickled when loaded and can run code; "
                                            "evaluate third-party agents from weights-only directories.")
    parser.add_argument("--env", default=DEFAULT_ENV, help=f"env id (default {DEFAULT_ENV})")
    parser.add_argument("--policies", default="all",
                        help="comma-separated: reference names (NAME or NAME:key=value), agents ALGO:PATH, or all")
    parser.add_argument("--seeds", type=int, default=5, help="held-out seeds (episodes) per policy")
    parser.add_argument("--out", default=None, help="output directory (default results/<env>)")
    parser.add_argument("--env-kwargs", default="{}", help="JSON dict of gym.make kwargs")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    parser.add_argument("--reproduce", metavar="FAMILY", help="recompute the paper's figures of FAMILY instead")
    parser.add_argument("--quick", action="store_true", help="with --reproduce: a reduced, faster version")
    return parser.parse_args(argv)


def run(args: argparse.Namespace) -> list[Path]:
    import gymnasium as gym

    import joulegym  # noqa: F401  (registers the ids)
    from joulegym.core.config import parse_env_kwargs
    from joulegym.core.io import ResultDir, write_atomic, write_csv
    from joulegym.evaluation.hooks import hooks_for
    from joulegym.evaluation.runner import eval_seeds, evaluate, markdown_table, parse_policies, summarise

    if args.reproduce:
        family = args.reproduce.lower()
        hooks = hooks_for(family)
        if hooks.reproduce is None:
            raise ValueError(f"--reproduce {family!r}: no reproduction for this family")
        result = ResultDir(args.out or f"results/{family}-paper")
        with result as tmp:
            written = hooks.reproduce(tmp, args.quick)
        return [result.final(p) for p in written]

    if args.env not in gym.registry:
        raise ValueError(f"env={args.env!r} is not registered; see `python -m joulegym list`")
    result = ResultDir(args.out or f"results/{args.env.split('/')[-1]}")  # checked before the work
    env_kwargs = parse_env_kwargs(args.env_kwargs)
    probe = gym.make(args.env, **env_kwargs)
    family = probe.unwrapped.family
    entries = parse_policies(args.policies, probe)
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
        print(f"evaluate.py: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
