"""DREAM leaderboard check: mean UXCost of each published scheduler on each headline scenario over the held-out
seeds, on the simulator fast path (``joulegym.core.inner.run_inner``; the same episodes and metrics as the
``DREAM-v0`` env episodes, ``docs/families/dream.md`` §5-6; :func:`joulegym.evaluation.dream.leaderboard_uxcost`).

Usage::

    python benchmarks/dream_board.py                                  # every headline scenario, every scheduler
    python benchmarks/dream_board.py ar-call --policies planaria,dream-full
"""

from __future__ import annotations

import argparse

from joulegym.core.policy import available
from joulegym.evaluation.dream import leaderboard_uxcost
from joulegym.scenarios.dream import FAMILY


def main(argv: list[str] | None = None) -> None:
    bench = FAMILY.benchmark
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", help=f"headline scenarios (default: every one of {bench.scenarios})")
    inner = set(available("dream", inner=True))
    default = [p for p in (*bench.heuristics, *bench.baselines) if p in inner]  # the generic `random` is env-only
    parser.add_argument("--policies", default=",".join(default),
                        help="comma-separated inner policies (default: the benchmark's heuristics and baselines)")
    args = parser.parse_args(argv)
    unknown = [s for s in args.scenarios if s not in bench.scenarios]
    if unknown:
        parser.error(f"scenarios {unknown} are not headline scenarios {bench.scenarios}")
    policies = [p for p in args.policies.split(",") if p]
    for scenario in args.scenarios or bench.scenarios:
        res = {p: leaderboard_uxcost(scenario, p, bench.eval_seeds) for p in policies}
        published = {p: v for p, v in res.items() if p in bench.heuristics}
        line = ", ".join(f"{p} {v:.4g}" for p, v in sorted(res.items(), key=lambda kv: kv[1]))
        if published:
            best, worst = min(published, key=published.get), max(published, key=published.get)
            line += f" | best {best}, best vs worst {published[best] / published[worst] - 1:+.1%}"
        print(f"{scenario}: {line}", flush=True)


if __name__ == "__main__":
    main()
