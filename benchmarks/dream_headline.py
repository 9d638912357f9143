"""DREAM's headline comparison (Kim et al., ASPLOS'23 abstract and §5.2, Figs. 7-8; ``docs/families/dream.md`` §7):
DREAM-Full against Planaria and Veltair per cell (workload x SoC) over 5 seeds that are different episodes (release
phases drawn per seed), with the spread of the per-seed ratios, then the geomean reductions over the heterogeneous
cells (Fig. 7), the homogeneous cells (Fig. 8) and all 40 (R1). Runs on the simulator fast path
(:func:`joulegym.evaluation.dream.episodes`), the same episodes as ``DREAM-v0``'s with those seeds.

Usage::

    python benchmarks/dream_headline.py                       # Figs. 7 and 8, 5 seeds, 2 s episodes
    python benchmarks/dream_headline.py --hw 4k-1os2ws --workloads drone-outdoor --seeds 2
"""

from __future__ import annotations

import argparse

from joulegym.evaluation.dream import (
    FULL,
    HETEROGENEOUS,
    HOMOGENEOUS,
    WORKLOADS,
    Budget,
    episodes,
    geomean_reduction,
    reductions,
)

POLICIES = ("dream-full", "planaria", "veltair")


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hw", default=",".join((*HETEROGENEOUS, *HOMOGENEOUS)), help="comma-separated SoCs")
    parser.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated Table 3 workloads")
    parser.add_argument("--seeds", type=int, default=len(FULL.seeds), help="seeds 0..N-1 (default 5)")
    args = parser.parse_args(argv)
    hws, workloads = [h for h in args.hw.split(",") if h], [w for w in args.workloads.split(",") if w]
    for key, values, allowed in (("--hw", hws, (*HETEROGENEOUS, *HOMOGENEOUS)), ("--workloads", workloads, WORKLOADS)):
        bad = [v for v in values if v not in allowed]
        if bad or not values:
            parser.error(f"{key} {bad or values} must be a non-empty list from {allowed}")
    if args.seeds < 1:
        parser.error(f"--seeds {args.seeds} must be >= 1")
    budget = Budget(seeds=tuple(range(args.seeds)))
    table = episodes([(w, hw) for hw in hws for w in workloads], POLICIES, budget)
    out: dict[str, float] = {}
    for baseline in ("planaria", "veltair"):
        cells = reductions(table, "dream-full", baseline)
        for row in cells.itertuples():
            print(f"{row.hw:10s} {row.workload:14s} vs {baseline:8s} DREAM-Full {row.ours:.4g} / {row.baseline:.4g} "
                  f"= {row.ratio - 1:+.1%} (per seed {row.ratio_min:.2f}x-{row.ratio_max:.2f}x)", flush=True)
        for label, subset in (("Fig. 7 heterogeneous", HETEROGENEOUS), ("Fig. 8 homogeneous", HOMOGENEOUS),
                              ("all cells (R1)", (*HETEROGENEOUS, *HOMOGENEOUS))):
            part = cells[cells.hw.isin(subset)]
            if len(part):
                out[f"{label} vs {baseline}"] = value = -geomean_reduction(part)
                print(f"DREAM-Full vs {baseline}, {label} ({len(part)} cells): geomean {value:+.1%}")
    return out


if __name__ == "__main__":
    main()
