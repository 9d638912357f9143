"""The measured-results page of ``evaluate.py --reproduce qin`` (``qin_results.md``; ``docs/families/qin-results.md``
is the file of a run, its header says which): every number the Qin docs show, generated from the reproduction's
tables (Guan & Ababei, IEEE T-SUSC 2024, §7; ``docs/families/qin.md`` §6 explains them)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from joulegym.evaluation import qin_experiments as ex
from joulegym.evaluation.verdict import markdown_table


def _mark(label: str) -> str:
    """The privileged column of a table row: "yes" for a privileged policy (ranked apart), else empty."""
    return "yes" if ex.privileged(label) else ""


def _rw_max_section(tables: dict[str, pd.DataFrame]) -> list[str]:
    t = tables["rw_max"]
    m, seeds = int(t.num_jobs.iloc[0]), int(t.seeds.iloc[0])
    shown = t.assign(privileged=[_mark(label) for label in t.policy])
    shown = shown.rename(columns={"makespan_s": "mean makespan (s)", "sem_s": "standard error (s)",
                                  "qin_gain_pct": "qin-perf's gain over it (%)", "im_c_ginstr": "mean Im_c (G instr)",
                                  "mean_util": "core utilisation"})[
        ["policy", "privileged", "mean makespan (s)", "standard error (s)", "qin-perf's gain over it (%)",
         "mean Im_c (G instr)", "core utilisation"]]
    return ["## Cluster level at the largest M", "",
            f"Table 4's RW JCT and Fig. 7a at M = {m}: {m} RW jobs at t = 0 on the five workers, "
            f"seeds 0-{seeds - 1}; the paired gain is the mean over seeds of "
            "`(B - Q) / B`; Im_c is eq. 30's imbalance (max minus mean server load) averaged over the placements. "
            "`drain-time` (size-blind), `least-loaded` and `drain-time-sized` are not in the paper; the last two read "
            "the jobs' size estimates (each app's mean size, deployable); their `-profiled` variants read per-job "
            "sizes within 5 % of the truth and are privileged upper references (marked).", "",
            markdown_table(shown, floatfmt=".3g"), ""]


def _table4_section(tables: dict[str, pd.DataFrame]) -> list[str]:
    t4 = tables["t4"]
    rows = []
    for r in t4.itertuples(index=False):
        rows.append({"baseline": r.baseline, "mix": r.mix.upper(),
                     **{f"{name} % (paper)": f"{getattr(r, f'{focus}_pct'):.1f} ({getattr(r, f'{focus}_pct_paper'):g})"
                        for focus, name in (("perf", "JCT"), ("energy", "energy"), ("edp", "EDP"))}})
    dep = tables["t4_deployable"]
    rows_dep = [{"rule (not in the paper)": r.baseline, "mix": r.mix.upper(), "JCT %": f"{r.perf_pct:.1f}",
                 "energy %": f"{r.energy_pct:.1f}", "EDP %": f"{r.edp_pct:.1f}"} for r in dep.itertuples(index=False)]
    sizes = ", ".join(str(int(m)) for m in sorted(set(tables["runs"].num_jobs)))
    return ["## Table 4", "",
            f"Qin's improvement (%) over each scheduler, the mean over the seeds and M = {sizes} of the "
            "paired `(B - Q) / B`, each column with its Qin variant (`qin-perf`, `qin-energy`, `qin-edp`); the "
            "paper's value in brackets.", "", pd.DataFrame(rows).to_markdown(index=False), "",
            "The same against the deployable rules:", "", pd.DataFrame(rows_dep).to_markdown(index=False), ""]


def _gain_by_m_section(tables: dict[str, pd.DataFrame]) -> list[str]:
    g = tables["gain_by_m"]
    return ["## Fig 7 Qin gain per number of jobs", "",
            "RW, qin-perf's mean paired makespan gain (%) over each scheduler, per number of jobs M; the columns "
            f"marked ({ex.OTHER_RULE}) are Qin with the other D-choice rule (the least loaded finalist).", "",
            markdown_table(g, floatfmt=".1f"), ""]


def _d_and_dac_section(tables: dict[str, pd.DataFrame]) -> list[str]:
    t10 = tables["t10"].groupby("d")[["makespan_s", "im_c_mean"]].mean().reset_index()
    t10 = t10.rename(columns={"makespan_s": "mean makespan (s)", "im_c_mean": "mean Im_c (instructions)"})
    t12 = tables["t12"].groupby("panel")[["makespan_s_gain_pct", "mean_jct_s_gain_pct", "energy_j_gain_pct"]]
    t12 = t12.agg(["mean", "min", "max"])
    t12.columns = [f"{metric.replace('_gain_pct', '')} {stat}" for metric, stat in t12.columns]
    return ["## Fig 10b number of choices", "", "100 RW jobs, qin-perf with d choices (Fig. 10b).", "",
            markdown_table(t10, floatfmt=".4g"), "",
            "## Fig 12 admission control", "",
            "Fig. 12, dynamic admission control: 100 RW jobs at once, queue 100, wait 0; "
            "DAC's improvement (%) over FIFO: 12a ranks by descending "
            "predicted H (perf focus), 12b by ascending predicted E (energy focus); mean, min and max over seeds.", "",
            markdown_table(t12.reset_index(), floatfmt=".1f"), ""]


def _table5_section(tables: dict[str, pd.DataFrame]) -> list[str]:
    g = tables["t5_gains"].rename(columns={"gain_pct": "gain in the focus' metric (%)", "makespan_gain_pct":
                                           "makespan gain (%)", "energy_gain_pct": "energy gain (%)"})
    seeds = int(tables["t5"].seed.nunique())
    return ["## Table 5 hierarchical", "",
            "Table 5, Qin + Qin against Kubernetes + Sniper: 100 RW jobs (`Qin-hier-rw`, 10 ms control periods), "
            f"{seeds} seeds; each focus with its Qin variant at "
            "the cluster level and its PL at the node level (perf 0, energy 0.5, EDP 0.1). The rows are the steps "
            "from Kubernetes + Sniper to Qin + Qin: Qin at the cluster level alone (node: Sniper), then Qin's node "
            "mapping at PL 0, then its DVFS (the full scheduler; for perf PL 0 is the full scheduler).", "",
            markdown_table(g, floatfmt=".1f"), "",
            "The energy column with eq. 12's computational power alone (`power_model=\"paper_dynamic_only\"`, the "
            "energy the paper models, §4.1) beside the RAPL-like model (static, uncore and DRAM power included): "
            "Qin + Qin (energy focus, PL 0.5) against Kubernetes + Sniper, mean energy gain (%).", "",
            markdown_table(tables["t5_power"].groupby("power_model", sort=False)["energy_gain_pct"].agg(
                ["mean", "min", "max"]).reset_index(), floatfmt=".1f"), ""]


def _node_section(tables: dict[str, pd.DataFrame]) -> list[str]:
    t14 = tables["t14"]
    wide = t14.pivot(index="app", columns="policy", values=["runtime_s_vs_sniper", "energy_j_vs_sniper",
                                                             "edp_js_vs_sniper"])
    rows = []
    for app in dict.fromkeys(t14.app):
        row: dict[str, Any] = {"app": app}
        for label in [case[0] for case in ex.NODE_CASES[:-1]]:
            row[label] = (f"{wide.loc[app, ('runtime_s_vs_sniper', label)]:.3f} / "
                          f"{wide.loc[app, ('energy_j_vs_sniper', label)]:.3f} / "
                          f"{wide.loc[app, ('edp_js_vs_sniper', label)]:.3f}")
        rows.append(row)
    mixes = tables["mixes"].groupby(["apps", "policy"])["runtime_s"].mean().unstack("policy").reset_index()
    return ["## Fig 14 node level per app", "",
            "Fig. 14 per Splash-2 app: one i5-4690, one app of 4 threads at t = 0, 1 ms control periods: "
            "runtime / energy / EDP of Qin's node "
            "policy as a ratio to Sniper's pinned default (below 1: better).", "",
            pd.DataFrame(rows).to_markdown(index=False), "",
            "## Several apps per server", "",
            f"§7.2.2's balancing: apps of {ex.NODE_MIX_THREADS} threads each on one i5-4690 "
            "(more threads than cores), PL 0: runtime (s).",
            "", markdown_table(mixes, floatfmt=".4f"), ""]


def _scale_section(tables: dict[str, pd.DataFrame]) -> list[str]:
    large = tables["large_n"]
    n = int(large.n_servers.iloc[0])
    shown = large[["decision_mode", "decision_latency_s", "seed", "policy", "makespan_s", "mean_jct_s", "mean_util",
                   "dispatch_overhead_s"]]
    seeds = ", ".join(str(int(seed)) for seed in large.seed.unique())
    return ["## Scale", "",
            f"N = {n:,} servers, M = {10 * n:,} jobs (§7.4): {n} servers drawn from the Table 2 types, "
            f"{10 * n} RW jobs at t = 0, seeds {seeds}; profiling in one slot per two servers. `decision_mode` "
            "`serial` is "
            "Alg. 1's one loop (a decision waits for the previous one), `overlapped` lets the decision latencies of "
            "different jobs overlap (each delays its own job only); `decision_latency_s` is that of the "
            "profiling-based schedulers (0.09 s: A27; 0.005 s: Kubernetes' own, run as a sensitivity; Kubernetes "
            "keeps 0.005 s throughout).", "",
            markdown_table(shown, floatfmt=".4g"), ""]


def _leaderboard_section(tables: dict[str, pd.DataFrame]) -> list[str]:
    board = tables["board"]
    seeds = board.seed.unique()
    wide = board.groupby(["policy", "scenario"], sort=False)["makespan_s"].mean().unstack("scenario")
    wide = wide.sort_values(wide.columns[0]).reset_index()
    wide.insert(1, "privileged", [_mark(label) for label in wide.policy])
    return ["## Leaderboard heuristics", "",
            f"Mean makespan (s) on the leaderboard's held-out seeds {seeds.min()}-{seeds.max()} (`evaluate.py --suite "
            "qin` ranks the shipped agents beside them); `round-robin`, `drain-time`, `least-loaded` and "
            "`drain-time-sized` are not in the paper (the last two read each app's mean size), and the `-profiled` "
            "rows are privileged (per-job sizes within 5 % of the truth; marked).", "",
            markdown_table(wide, floatfmt=".1f"), ""]


def _rules_gap_section(tables: dict[str, pd.DataFrame]) -> list[str]:
    gap = tables["gap"]
    seeds = int(gap.seeds.iloc[0])
    shown = gap.rename(columns={"makespan_s": "mean makespan (s)", "minus_drain_time_s": "minus drain-time (s)",
                                "ci95_s": "95 % half-width (s)",
                                "drain_time_faster": f"drain-time faster (of {seeds})"})[
        ["case", "smt_yield", "mean makespan (s)", "minus drain-time (s)", "95 % half-width (s)",
         f"drain-time faster (of {seeds})"]]
    return ["## What the simple rules read", "",
            f"100 RW jobs on the five workers, {seeds} seeds from 10000; each row paired per seed with the size-blind "
            "`drain-time` (assigned jobs over the measured rate) at the same `smt_yield` "
            f"(its mean: {gap.drain_time_s.iloc[0]:.1f} s at 1.3). The privileged `-profiled` rows read the jobs' "
            "profiled size estimates (`size_estimate=\"profiled\"`, within 5 % of the truth); `drain-time-sized` "
            "on the env's default `\"app-mean\"` reads only each app's mean size. "
            "[The model page](qin.md) section 6.1 explains the rows.", "",
            markdown_table(shown, floatfmt=".1f"), ""]


def results_markdown(tables: dict[str, pd.DataFrame], budget: dict[str, Any], quick: bool) -> str:
    """The page: every measured number of the reproduction, table by table."""
    seeds = budget["seeds"]
    head = ["# Qin: measured results", "",
            "Generated by `python evaluate.py --reproduce qin --out DIR` (`DIR/qin_results.md`"
            + (", `--quick`" if quick else "; this page is the file of the full run") + "): "
            f"M = {', '.join(str(m) for m in budget['sizes'])}, seeds {seeds[0]}-{seeds[-1]}; every policy sees the "
            "same workload per seed; the cluster policies read the CF predictions of an `offline_fraction=0.1` "
            "campaign (every Splash-2 app held out) and run with the Linux-like node policy unless a table says "
            "otherwise. [The model page](qin.md) explains the numbers, section 6.", ""]
    body = (_rw_max_section(tables) + _table4_section(tables) + _gain_by_m_section(tables)
            + _d_and_dac_section(tables) + _table5_section(tables) + _node_section(tables) + _scale_section(tables)
            + _leaderboard_section(tables) + _rules_gap_section(tables))
    return "\n".join(head + body)
