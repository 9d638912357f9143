"""DREAM evaluation hooks and ``evaluate.py --reproduce dream`` (Kim et al., ASPLOS '23, §5.2 Figs. 2, 7-14;
``docs/families/dream.md`` §7).

- ``episode_plot``: UXCost so far against simulated time, one line per policy (``DREAM-v0``), or the window
  UXCost per window (``DREAMParams-v0``).
- ``summary_plot``: mean UXCost, DLV rate and energy rate per policy of every DREAM id in the results.
- ``reproduce(out_dir, quick)``: the experiments E1-E8 of docs §7, each a CSV of per-episode rows, a CSV of the
  paper's comparison and a PNG, plus ``dream_reproduction.md`` (measured against the paper's numbers):

=====  ============  =========================================================================================
E1     Fig. 2        static vs dynamic FCFS on AR_Call over the four 4K configurations (DLV rate)
E2     Fig. 7        5 workloads x 4 heterogeneous SoCs x FCFS, Veltair, Planaria, DREAM variants (UXCost, DLV,
                     energy); geomean reductions of DREAM-Full against Planaria and Veltair
E3     Fig. 8        the same on the 4 homogeneous SoCs; the hetero/homo gap ratio; 8K-2WS spread
E4     Fig. 9        ablation on VR_Gaming + AR_Social, 4K and 8K: fixed (1, 1) -> +parameter optimisation ->
                     +smart drop -> +Supernet switching (geomean UXCost)
E5     Figs. 10, 11  the (alpha, beta) search on 4K 1OS+2WS for IDLE -> VR_Gaming / AR_Social / AR_Call and
                     VR_Gaming -> AR_Social, against the grid optimum
E6     Fig. 12       cascade probability sweep, VR_Gaming and AR_Social, both 4K heterogeneous SoCs
E7     Fig. 13       (alpha, beta) optimised for DLV only or energy only instead of UXCost
E8     Fig. 14       share of each OFA sub-net among DREAM-Full's Supernet frames, light (p = 0.5) and heavy load
=====  ============  =========================================================================================

Every episode runs a registered inner policy on the simulator (:func:`joulegym.core.inner.run_inner`, the
core's fast path): the same metrics as the policy's ``DREAM-v0`` episode with the same seed
(``tests/dream/test_policies_env.py``), without the observation cost. All schedulers of a cell see the same
seeds (common random numbers: seed s is the same episode for every policy). Aggregates are the paper's: a
reduction is ``1 - ours / baseline`` of the cell means, aggregated over cells by the geometric mean (abstract,
§5.2), with the arithmetic mean of the per-cell reductions beside it; the per-cell tables carry the per-seed
spread. ``quick`` runs one seed on fewer configurations; the default is the docs' budget (5 seeds of 2 s; the grid
optimum on a 0.1 grid).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from joulegym.core.inner import run_inner
from joulegym.core.io import save_figure, write_atomic, write_csv
from joulegym.core.plotting import new_figure
from joulegym.core.policy import make_inner
from joulegym.core.progress import track
from joulegym.envs.dream.mapscore import TUNE_KEY
from joulegym.envs.dream.search import optimize
from joulegym.envs.dream.simulator import DreamSim
from joulegym.evaluation.verdict import Claim, claim, comparison_markdown, qualitative
from joulegym.scenarios.dream import (
    DEFAULT_HW,
    HETEROGENEOUS,
    HOMOGENEOUS,
    HW_4K,
    HW_PRESETS,
    SWITCH_HW,
    WORKLOADS,
)

HEADLINE = ("uxcost", "dlv_rate", "energy_rate", "drops", "overall_rate_dlv", "overall_norm_energy")
BASELINES = ("fcfs", "veltair", "planaria")
DREAM = ("dream-mapscore", "dream-smartdrop", "dream-full")
FIG7_POLICIES = (*BASELINES, *DREAM)
ABLATION = ("mapscore-fixed", "dream-mapscore", "dream-smartdrop", "dream-full")  # Fig. 9 left to right
P_VALUES = (0.5, 0.6, 0.7, 0.8, 0.9, 0.99)  # Fig. 12 (docs §3 #15)
COLUMNS = ("uxcost", "overall_rate_dlv", "overall_norm_energy", "dlv_rate", "energy_rate", "drops", "frames",
           "violated", "cap_discards", "context_switches")
# The paper's numbers (§2.3, §5.2, abstract) the tables are compared with (docs §7).
PAPER = {
    "fig2_dlv_reduction": 0.529, "vs_planaria_geomean": 0.322, "vs_veltair_geomean": 0.500,
    "vs_planaria_max": 0.808, "vs_veltair_max": 0.976, "gap_ratio_veltair": 2.20, "gap_ratio_planaria": 1.26,
    "4k1ws2os_vs_planaria": 0.475, "4k1ws2os_vs_veltair": 0.899, "4k1ws2os_vs_planaria_arith": 0.475,
    "4k1ws2os_vs_veltair_arith": 0.899, "fig9_param_opt_4k": 0.492,
    "fig9_param_opt_8k": 0.210, "fig9_smartdrop_4k": 0.165, "fig9_smartdrop_8k": 0.138,
    "fig11_two_steps": 0.25, "fig11_gap_5_steps": 0.02,
    # Fig. 12 (R11): AR_Social at p = 0.99, DREAM-Full's reduction vs Veltair / Planaria per 4K heterogeneous SoC
    "fig12_p99_4k-1os2ws_vs_veltair": 0.771, "fig12_p99_4k-1os2ws_vs_planaria": 0.766,
    "fig12_p99_4k-1ws2os_vs_veltair": 0.898, "fig12_p99_4k-1ws2os_vs_planaria": 0.905,
    "r5_energy_vs_planaria": 0.629,  # §5.2, AR_Call on 4K 1OS+2WS
}


@dataclass(frozen=True)
class Budget:
    """What a reproduction runs: seeds, episode length and the configurations of each experiment."""

    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    horizon_s: float = 2.0
    workloads: tuple[str, ...] = WORKLOADS
    hetero: tuple[str, ...] = HETEROGENEOUS
    homo: tuple[str, ...] = HOMOGENEOUS
    hw_4k: tuple[str, ...] = HW_4K
    p_values: tuple[float, ...] = P_VALUES
    grid_step: float = 0.1
    experiments: tuple[str, ...] = ("E1", "E2", "E3", "E4", "E5", "E6", "E7", "E8")
    notes: list[str] = field(default_factory=list)


FULL = Budget()
QUICK = Budget(seeds=(0,), hetero=("4k-1ws2os", "4k-1os2ws", "8k-1ws2os"), homo=("4k-2ws", "8k-2ws"),
               p_values=(0.5, 0.99), grid_step=0.25)


# --------------------------------------------------------------------------------------------- episodes
_SIMS: dict[tuple, DreamSim] = {}


def simulator(workload: str, hw: str, *, p: float | None = None, horizon_s: float = 2.0) -> DreamSim:
    """A (cached) simulator of one cell; :func:`joulegym.core.inner.run_inner` resets it."""
    key = (workload, hw, p, horizon_s)
    sim = _SIMS.get(key)
    if sim is None:
        if len(_SIMS) > 256:
            _SIMS.clear()
        sim = _SIMS[key] = DreamSim.from_catalog(workload, hw, p=p, horizon_s=horizon_s)
    return sim


def run_cell(workload: str, hw: str, policy: str, seed: int, *, p: float | None = None, horizon_s: float = 2.0,
             instance: int | None = None, **policy_kw: Any) -> dict[str, float]:
    """The metrics of one episode of ``policy`` (a registered DREAM-v0 inner policy) on ``(workload, hw)`` from
    ``seed`` (the episode of ``DREAM-v0``'s ``reset(seed=seed)``; ``instance``: a given episode key instead)."""
    inner = make_inner(policy, family="dream", **policy_kw)
    return run_inner(simulator(workload, hw, p=p, horizon_s=horizon_s), inner, seed, instance)


def leaderboard_uxcost(scenario: str, policy: str, seeds: Iterable[int]) -> float:
    """Mean UXCost of ``policy`` on a leaderboard scenario (a Table 3 workload on Fig. 7(a)'s SoC, or
    ``random-mix``, whose workload and SoC are drawn from the seed as ``DREAM-v0``'s reset draws them) over
    ``seeds``: the same episodes as the env's (docs/families/dream.md §5)."""
    values = []
    for seed in seeds:
        if scenario == "random-mix":
            rng = np.random.default_rng(seed)
            workload = WORKLOADS[int(rng.integers(len(WORKLOADS)))]
            hw = HW_PRESETS[int(rng.integers(len(HW_PRESETS)))]
            sim = simulator(workload, hw)
            values.append(run_inner(sim, make_inner(policy, family="dream"), seed, rng=rng)["uxcost"])
        else:
            values.append(run_cell(scenario, DEFAULT_HW, policy, seed)["uxcost"])
    return float(np.mean(values))


def episodes(cells: Iterable[tuple[str, str]], policies: Sequence[str], budget: Budget, *,
             p: float | None = None, extra: dict[str, Any] | None = None) -> pd.DataFrame:
    """One row per (workload, hw, policy, seed): :data:`COLUMNS` and the Supernet counts."""
    rows = []
    for workload, hw in cells:
        for policy in policies:
            for seed in budget.seeds:
                m = run_cell(workload, hw, policy, seed, p=p, horizon_s=budget.horizon_s)
                row = {"workload": workload, "hw": hw, "p": 0.5 if p is None else p, "policy": policy, "seed": seed,
                       **(extra or {})}
                row.update({k: m[k] for k in COLUMNS})
                row.update({k: v for k, v in m.items() if k.startswith("subnet/")})
                rows.append(row)
    return pd.DataFrame(rows)


def geomean(values: Iterable[float]) -> float:
    arr = np.asarray(list(values), dtype=float)
    return float(np.exp(np.mean(np.log(arr)))) if arr.size and np.all(arr > 0) else float("nan")


def reductions(table: pd.DataFrame, ours: str, baseline: str, by: Sequence[str] = ("workload", "hw"),
               metric: str = "uxcost") -> pd.DataFrame:
    """Per cell: mean ``metric`` of ``ours`` and ``baseline`` over seeds, the reduction ``1 - ours / baseline`` of the
    means (the paper's "reduces UXCost by X%", docs §2) and the spread of the per-seed ratios (the same seed is the
    same episode for both policies): ``ratio_min``, ``ratio_max`` and ``seeds``."""
    means = table.groupby([*by, "policy"], sort=False)[metric].mean().unstack("policy")
    out = means[[ours, baseline]].rename(columns={ours: "ours", baseline: "baseline"}).reset_index()
    out["ratio"] = out["ours"] / out["baseline"]
    out["reduction"] = 1.0 - out["ratio"]
    if "seed" in table.columns:
        paired = table[table.policy.isin((ours, baseline))].pivot_table(index=[*by, "seed"], columns="policy",
                                                                         values=metric, aggfunc="first")
        per_seed = (paired[ours] / paired[baseline]).groupby(level=list(by), sort=False)
        spread = pd.DataFrame({"ratio_min": per_seed.min(), "ratio_max": per_seed.max(),
                               "seeds": per_seed.size()}).reset_index()
        out = out.merge(spread, on=list(by), how="left")
    out.insert(len(by), "versus", baseline)
    return out


def geomean_reduction(cells: pd.DataFrame) -> float:
    """``1 - geomean(ours / baseline)`` over cells (the paper's geomean reduction)."""
    return 1.0 - geomean(cells["ratio"])


def arithmetic_reduction(cells: pd.DataFrame) -> float:
    """The arithmetic mean of the per-cell reductions (beside the geomean where a figure's "average" may be it)."""
    return float(cells["reduction"].mean())


# --------------------------------------------------------------------------------------------- E1-E8
def e1_fig2(budget: Budget) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig. 2: static vs dynamic FCFS on AR_Call (KWS-positive 50 %, SkipNet skip 50 %) on the four 4K SoCs."""
    table = episodes([("ar-call", hw) for hw in budget.hw_4k], ("fcfs-static", "fcfs"), budget)
    summary = reductions(table, "fcfs", "fcfs-static", by=("hw",), metric="dlv_rate")
    return table, summary


def e2_e3(budget: Budget, hws: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Figs. 7 / 8: every workload on ``hws`` for the paper's schedulers; reductions of DREAM-Full per cell."""
    table = episodes([(w, hw) for hw in hws for w in budget.workloads], FIG7_POLICIES, budget)
    summary = pd.concat([reductions(table, "dream-full", b) for b in ("planaria", "veltair", "fcfs")],
                        ignore_index=True)
    return table, summary


R5_CELL = ("ar-call", "4k-1os2ws")  # §5.2: "62.9 % ... for AR_Call on 4K 1OS+2WS"
R5_DLV_RATIO = 1.88  # §5.2: DREAM's DLV rate there, 1.88x Planaria's


def energy_bound(budget: Budget, workload: str = R5_CELL[0], hw: str = R5_CELL[1]) -> pd.DataFrame:
    """R5's energy cut against Planaria, bounded: per seed, Planaria's episode, the energy floor of its counted frames
    (:meth:`DreamSim.energy_floor`: every layer of the sampled path on its least-energy accelerator, no context
    switch, the cheapest open sub-net) without the ``k`` most expensive frames, k = 1.88 x Planaria's violated frames
    (the frames a scheduler with the paper's DLV ratio need not run at all). ``bound = 1 - that / Planaria's
    energy``: no scheduler with 1.88x Planaria's DLV can cut more (docs/families/dream-cost-model.md "Energy")."""
    rows = []
    sim = simulator(workload, hw, horizon_s=budget.horizon_s)
    for seed in budget.seeds:
        m = run_inner(sim, make_inner("planaria", family="dream"), seed)
        floors = sorted((sim.energy_floor(i) for i in range(len(sim.f_state)) if sim.f_counted[i]), reverse=True)
        k = round(R5_DLV_RATIO * m["violated"])
        spent = float(sum(sim.acc_energy))
        rows.append({"workload": workload, "hw": hw, "seed": seed, "planaria_energy": spent,
                     "planaria_violated": m["violated"], "floor": float(sum(floors)), "frames_not_run": k,
                     "floor_without_them": float(sum(floors[k:])), "bound": 1.0 - float(sum(floors[k:])) / spent})
    return pd.DataFrame(rows)


def headline(summary: pd.DataFrame, prefix: str = "") -> dict[str, float]:
    """Per baseline: the geomean reduction of DREAM-Full over the cells (R1), the arithmetic mean beside it, the
    largest (R2), and the 4K-1WS2OS panel's geomean and arithmetic means (R4, Fig. 7(a))."""
    out = {}
    for baseline, group in summary.groupby("versus"):
        out[f"{prefix}vs_{baseline}_geomean"] = geomean_reduction(group)
        out[f"{prefix}vs_{baseline}_arith"] = arithmetic_reduction(group)
        out[f"{prefix}vs_{baseline}_max"] = float(group["reduction"].max())
        panel = group[group.hw == "4k-1ws2os"]
        if len(panel) and not prefix:
            out[f"4k1ws2os_vs_{baseline}"] = geomean_reduction(panel)
            out[f"4k1ws2os_vs_{baseline}_arith"] = arithmetic_reduction(panel)
    return out


def e4_fig9(budget: Budget, fig7: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig. 9: the ablation on VR_Gaming + AR_Social, geomean over the heterogeneous SoCs of each size."""
    cells = [(w, hw) for hw in budget.hetero for w in ("vr-gaming", "ar-social")]
    have = fig7[fig7.policy.isin(ABLATION) & fig7.workload.isin(("vr-gaming", "ar-social"))] \
        if fig7 is not None else pd.DataFrame()
    missing = [p for p in ABLATION if have.empty or p not in set(have.policy)]
    table = pd.concat([have, episodes(cells, missing, budget)], ignore_index=True) if missing else have
    rows = []
    for size in ("4k", "8k"):
        part = table[table.hw.str.startswith(size)]
        if part.empty:
            continue
        cell_means = part.groupby(["workload", "hw", "policy"])["uxcost"].mean().unstack("policy")
        geo = {p: geomean(cell_means[p]) for p in ABLATION}
        for prev, cur in itertools.pairwise(ABLATION):
            rows.append({"size": size, "step": f"{prev} -> {cur}", "geomean_before": geo[prev],
                         "geomean_after": geo[cur], "reduction": 1.0 - geo[cur] / geo[prev]})
    return table, pd.DataFrame(rows)


def _search(workload: str, hw: str, c0: tuple[float, float], budget: Budget, objective: str = "uxcost",
            variant: str = "dream-mapscore", seed: int = 0, instance: int | None = None):
    def evaluate(pair: tuple[float, float]) -> float:
        m = run_cell(workload, hw, variant, seed, horizon_s=budget.horizon_s, instance=instance, tuning="fixed",
                     alpha=pair[0], beta=pair[1])
        return float(m[objective])

    return optimize(c0, evaluate)


def grid(workload: str, hw: str, budget: Budget, variant: str = "dream-mapscore", seed: int = 0) -> pd.DataFrame:
    """UXCost over the (alpha, beta) grid of ``budget.grid_step`` on [0, 2]^2 (the global optimum of Figs. 10/11)."""
    points = np.round(np.arange(0.0, 2.0 + 1e-9, budget.grid_step), 6)
    rows = []
    for alpha in points:
        for beta in points:
            m = run_cell(workload, hw, variant, seed, horizon_s=budget.horizon_s, tuning="fixed", alpha=float(alpha),
                         beta=float(beta))
            rows.append({"workload": workload, "alpha": float(alpha), "beta": float(beta), "uxcost": m["uxcost"]})
    return pd.DataFrame(rows)


def _cut(value: float, reference: float) -> float:
    """``1 - value / reference`` (0 when both are 0: an episode too short to count a frame)."""
    return 1.0 - value / reference if reference > 0 else (0.0 if value == 0 else -math.inf)


E5_CASES = (("a", None, "vr-gaming"), ("b", None, "ar-social"), ("c", None, "ar-call"), ("d", "a", "ar-social"))


def e5_fig10_11(budget: Budget) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Figs. 10/11: the search on 4K 1OS+2WS from a random start (IDLE -> app; docs §3 #21) and, for (d), from
    (a)'s locked pair on AR_Social; each step's best UXCost against the grid optimum of the workload."""
    rng = np.random.default_rng(10)  # the random starts of (a)-(c) [A]: fixed so the report is reproducible
    locked: dict[str, tuple[float, float]] = {}
    grids: dict[str, float] = {}
    rows, summary = [], []
    for case, start_from, workload in E5_CASES:
        c0 = locked[start_from] if start_from else (float(rng.uniform(0, 2)), float(rng.uniform(0, 2)))
        search = _search(workload, SWITCH_HW, c0, budget)
        locked[case] = search.center
        if workload not in grids:
            grids[workload] = float(grid(workload, SWITCH_HW, budget)["uxcost"].min())
        optimum = grids[workload]
        start_ux = search.trajectory[0]["evaluated"][0][1]  # the first candidate of a step is its centre
        best = start_ux
        for step in search.trajectory:
            best = min(best, step["best_uxcost"])
            rows.append({"case": case, "workload": workload, "step": step["step"], "alpha": step["center"][0],
                         "beta": step["center"][1], "radius": step["radius"], "best_uxcost": best,
                         "start_uxcost": start_ux, "grid_optimum": optimum, "improvement": _cut(best, start_ux),
                         "gap_to_optimum": -_cut(best, optimum)})
        two = [r for r in rows if r["case"] == case and r["step"] == 2]
        five = [r for r in rows if r["case"] == case and r["step"] == len(search.trajectory)]
        summary.append({"case": case, "workload": workload, "start": c0, "locked": search.center,
                        "improvement_2_steps": two[0]["improvement"] if two else float("nan"),
                        "gap_after_search": five[0]["gap_to_optimum"] if five else float("nan"),
                        "steps": len(search.trajectory)})
    return pd.DataFrame(rows), pd.DataFrame(summary)


def e6_fig12(budget: Budget) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig. 12: cascade probability sweep, VR_Gaming and AR_Social on both 4K heterogeneous SoCs."""
    hws = [hw for hw in budget.hetero if hw.startswith("4k")]
    parts = [episodes([(w, hw) for hw in hws for w in ("vr-gaming", "ar-social")], ("veltair", "planaria", *DREAM),
                      budget, p=p) for p in budget.p_values]
    table = pd.concat(parts, ignore_index=True)
    rows = []
    for (workload, hw, p), part in table.groupby(["workload", "hw", "p"]):
        means = part.groupby("policy")["uxcost"].mean()
        rows.append({"workload": workload, "hw": hw, "p": p,
                     "full_vs_veltair": 1 - means["dream-full"] / means["veltair"],
                     "full_vs_planaria": 1 - means["dream-full"] / means["planaria"],
                     "smartdrop_vs_mapscore": 1 - means["dream-smartdrop"] / means["dream-mapscore"],
                     "full_vs_smartdrop": 1 - means["dream-full"] / means["dream-smartdrop"]})
    return table, pd.DataFrame(rows)


def e7_fig13(budget: Budget) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Fig. 13: DREAM-Full with (alpha, beta) searched for UXCost, for DLV only (sum of per-model DLV rates) or for
    energy only (sum of normalised energies), at p = 0.5 on 4K 1WS+2OS; evaluated on the evaluation seeds."""
    objectives = {"uxcost": "uxcost", "dlv-only": "overall_rate_dlv", "energy-only": "overall_norm_energy"}
    rows = []
    for workload in ("vr-gaming", "ar-social"):
        for label, metric in objectives.items():
            search = _search(workload, "4k-1ws2os", (1.0, 1.0), budget, objective=metric, variant="dream-full",
                             instance=TUNE_KEY)  # DREAM's offline tuning episode (never an evaluation episode)
            alpha, beta = search.center
            for seed in budget.seeds:
                m = run_cell(workload, "4k-1ws2os", "dream-full", seed, horizon_s=budget.horizon_s, tuning="fixed",
                             alpha=alpha, beta=beta)
                rows.append({"workload": workload, "objective": label, "alpha": alpha, "beta": beta, "seed": seed,
                             **{k: m[k] for k in COLUMNS}})
    table = pd.DataFrame(rows)
    means = table.groupby(["workload", "objective"])[["uxcost", "overall_rate_dlv", "overall_norm_energy"]].mean()
    out = []
    for workload in ("vr-gaming", "ar-social"):
        ref = means.loc[(workload, "uxcost")]
        for label in ("dlv-only", "energy-only"):
            row = means.loc[(workload, label)]
            out.append({"workload": workload, "objective": label,
                        "energy_change": row["overall_norm_energy"] / ref["overall_norm_energy"] - 1,
                        "dlv_change": row["overall_rate_dlv"] / ref["overall_rate_dlv"] - 1,
                        "uxcost_change": row["uxcost"] / ref["uxcost"] - 1})
    return table, pd.DataFrame(out)


def e8_fig14(fig12: pd.DataFrame) -> pd.DataFrame:
    """Fig. 14: the share of each OFA sub-net among DREAM-Full's completed Supernet frames, at the lightest and the
    heaviest cascade probability of the sweep (more cascaded work = heavier load)."""
    full = fig12[fig12.policy == "dream-full"]
    cols = [c for c in full.columns if c.startswith("subnet/")]
    rows = []
    for p in (full.p.min(), full.p.max()):
        for (workload, hw), part in full[full.p == p].groupby(["workload", "hw"]):
            counts = part[cols].fillna(0).sum()
            total = counts.sum()
            rows.append({"workload": workload, "hw": hw, "p": p, "frames": total,
                         **{c.split("/", 1)[1]: counts[c] / total if total else float("nan") for c in cols}})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------- figures
def _bars(ax, table: pd.DataFrame, policies: Sequence[str], metric: str, title: str) -> None:
    means = table.groupby(["workload", "policy"])[metric].mean().unstack("policy")
    workloads = [w for w in WORKLOADS if w in means.index]
    width = 0.8 / len(policies)
    for i, policy in enumerate(policies):
        if policy in means:
            ax.bar(np.arange(len(workloads)) + i * width, means.loc[workloads, policy], width, label=policy)
    ax.set_xticks(np.arange(len(workloads)) + 0.4 - width / 2)
    ax.set_xticklabels(workloads, fontsize=7)
    ax.set_title(title, fontsize=9)


def fig_panels(table: pd.DataFrame, policies: Sequence[str], metric: str, title: str):
    hws = list(dict.fromkeys(table.hw))
    fig, axes = new_figure(len(hws), 1, size=(7.5, 2.2 * len(hws) + 0.4))
    for ax, hw in zip(axes[:, 0], hws):
        _bars(ax, table[table.hw == hw], policies, metric, f"{hw}")
        ax.set_ylabel(metric, fontsize=8)
    axes[0, 0].legend(fontsize=7, ncol=3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def fig_search(trajectory: pd.DataFrame):
    fig, axes = new_figure(1, 1, size=(6.0, 3.6))
    ax = axes[0, 0]
    for case, part in trajectory.groupby("case"):
        ax.plot(part["step"], part["gap_to_optimum"] * 100, marker="o", label=f"({case}) {part.workload.iloc[0]}")
    ax.axhline(2.0, color="grey", ls="--", label="2 % of the optimum")
    ax.set_xlabel("search step")
    ax.set_ylabel("UXCost above the grid optimum (%)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def fig_sweep(table: pd.DataFrame):
    keys = list(dict.fromkeys(zip(table.workload, table.hw)))
    fig, axes = new_figure(len(keys), 1, size=(6.4, 2.2 * len(keys) + 0.4))
    for ax, (workload, hw) in zip(axes[:, 0], keys):
        part = table[(table.workload == workload) & (table.hw == hw)]
        means = part.groupby(["p", "policy"])["uxcost"].mean().unstack("policy")
        for policy in means.columns:
            ax.plot(means.index, means[policy], marker="o", label=policy)
        ax.set_title(f"{workload} on {hw}", fontsize=9)
        ax.set_ylabel("UXCost", fontsize=8)
    axes[-1, 0].set_xlabel("cascade probability p")
    axes[0, 0].legend(fontsize=7, ncol=3)
    fig.tight_layout()
    return fig


def fig_ablation(summary: pd.DataFrame):
    """Fig. 9: geomean UXCost of each ablation step, 4K and 8K."""
    fig, axes = new_figure(1, 1, size=(6.0, 3.4))
    ax = axes[0, 0]
    sizes = list(dict.fromkeys(summary["size"]))
    width = 0.8 / len(ABLATION)
    for i, policy in enumerate(ABLATION):
        values = []
        for size in sizes:
            part = summary[summary["size"] == size]
            row = part[part.step.str.endswith(f"-> {policy}")]
            values.append(float(row.geomean_after.iloc[0]) if len(row) else float(part.geomean_before.iloc[0]))
        ax.bar(np.arange(len(sizes)) + i * width, values, width, label=policy)
    ax.set_xticks(np.arange(len(sizes)) + 0.4 - width / 2)
    ax.set_xticklabels([f"{s.upper()} heterogeneous" for s in sizes])
    ax.set_ylabel("geomean UXCost (VR_Gaming, AR_Social)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def fig_objectives(summary: pd.DataFrame):
    """Fig. 13: change of energy, DLV and UXCost when (alpha, beta) is searched for DLV or energy only."""
    fig, axes = new_figure(1, 1, size=(6.4, 3.4))
    ax = axes[0, 0]
    labels = [f"{r.workload}\n{r.objective}" for r in summary.itertuples()]
    x = np.arange(len(labels))
    for i, column in enumerate(("energy_change", "dlv_change", "uxcost_change")):
        ax.bar(x + i * 0.27, summary[column] * 100, 0.27, label=column.split("_")[0])
    ax.axhline(0.0, color="black", lw=0.8)
    ax.set_xticks(x + 0.27)
    ax.set_xticklabels(labels, fontsize=7)
    ax.set_ylabel("change vs UXCost-optimised (%)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def fig_subnets(mix: pd.DataFrame):
    """Fig. 14: share of each OFA sub-net among DREAM-Full's Supernet frames, per (workload, SoC, p)."""
    variants = [c for c in mix.columns if c.startswith("ofa-")]
    fig, axes = new_figure(1, 1, size=(7.0, 3.4))
    ax = axes[0, 0]
    labels = [f"{r.workload}\n{r.hw}\np={r.p}" for r in mix.itertuples()]
    bottom = np.zeros(len(mix))
    for variant in variants:
        share = mix[variant].fillna(0.0).to_numpy()
        ax.bar(np.arange(len(mix)), share, bottom=bottom, label=variant)
        bottom += share
    ax.set_xticks(np.arange(len(mix)))
    ax.set_xticklabels(labels, fontsize=6)
    ax.set_ylabel("share of Supernet frames")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------------------------- hooks
def episode_plot(traces, env_id: str):
    """UXCost so far against simulated time (``DREAM-v0``; ``info_level="full"``), or window UXCost per window
    (``DREAMParams-v0``), one line per policy."""
    fig, axes = new_figure(1, 1, size=(7.0, 3.6))
    ax = axes[0, 0]
    for label, episode in traces.items():
        infos = episode.infos
        if infos and "window_uxcost" in infos[0]:
            ax.plot(np.arange(1, len(infos) + 1), [i["window_uxcost"] for i in infos], marker="o", label=label)
            ax.set_xlabel("window")
            ax.set_ylabel("window UXCost")
        elif infos and "uxcost_so_far" in infos[0]:
            ax.plot([i["t_s"] for i in infos], [i["uxcost_so_far"] for i in infos], label=label)
            ax.set_xlabel("simulated time (s)")
            ax.set_ylabel("UXCost so far")
        elif infos:
            ax.plot(np.cumsum(episode.rewards), label=label)
            ax.set_xlabel("step")
            ax.set_ylabel("return so far")
    ax.set_title(env_id, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def summary_plot(results: pd.DataFrame, out_dir) -> list[Path]:
    """Mean UXCost, DLV rate and energy rate per policy, one PNG per DREAM id in ``results``."""
    out_dir = Path(out_dir)
    written = []
    env_col = "env_id" if "env_id" in results.columns else ("env" if "env" in results.columns else None)
    groups = results.groupby(env_col) if env_col else [("dream", results)]
    for env_id, part in groups:
        metrics = [m for m in ("uxcost", "dlv_rate", "energy_rate") if m in part.columns]
        if not metrics or "policy" not in part.columns:
            continue
        fig, axes = new_figure(1, len(metrics), size=(3.2 * len(metrics), 3.2))
        for ax, metric in zip(axes[0], metrics):
            means = part.groupby("policy")[metric].mean().sort_values()
            ax.barh(means.index, means.values)
            ax.set_title(metric, fontsize=9)
            ax.tick_params(labelsize=7)
        fig.suptitle(str(env_id), fontsize=9)
        fig.tight_layout()
        name = str(env_id).split("/")[-1]
        written.append(save_figure(fig, out_dir / f"dream_summary_{name}.png"))
    return written


@dataclass
class _Run:
    """What one reproduction writes into: its directory, budget, files, report and the tables stages share."""

    out: Path
    budget: Budget
    written: list[Path] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=lambda: {"fig7": None, "fig12": None, "hetero": None})


def _save(run: _Run, **tables: Any) -> None:
    """Write each ``name=table`` as ``name.csv`` (a DataFrame), or a figure as ``name.png`` (its keyword ends in
    ``_png``), into the run's directory."""
    for name, item in tables.items():
        if isinstance(item, pd.DataFrame):
            run.written.append(write_csv(item, run.out / f"{name}.csv"))
        else:
            run.written.append(save_figure(item, run.out / f"{name.removesuffix('_png')}.png"))


def _stage_e1(run: _Run) -> None:
    table, summary = e1_fig2(run.budget)
    _save(run, e1_fig2_episodes=table, e1_fig2=summary)
    run.report["fig2_dlv_reduction"] = float(summary["reduction"].mean())


def _stage_e2(run: _Run) -> None:
    fig7, summary = e2_e3(run.budget, run.budget.hetero)
    run.state["fig7"], run.state["hetero"] = fig7, summary
    _save(run, e2_fig7_episodes=fig7, e2_fig7=summary,
          e2_fig7_png=fig_panels(fig7, FIG7_POLICIES, "uxcost", "Fig. 7: UXCost, heterogeneous"))
    run.report.update(headline(summary))  # R1 over the Fig. 7 cells until E3 adds Fig. 8's
    run.report.update(headline(summary, "hetero_"))
    cell = fig7[(fig7.workload == R5_CELL[0]) & (fig7.hw == R5_CELL[1])]
    if len(cell):  # R5: the energy cut of DREAM-Full against Planaria there, and the bound on it
        means = cell.groupby("policy")["energy_rate"].mean()
        run.report["r5_energy_vs_planaria"] = 1.0 - means["dream-full"] / means["planaria"]
        bound = energy_bound(run.budget)
        _save(run, e2_r5_energy_bound=bound)
        run.report["r5_energy_bound_vs_planaria"] = float(bound["bound"].mean())


def _stage_e3(run: _Run) -> None:
    fig8, summary = e2_e3(run.budget, run.budget.homo)
    _save(run, e3_fig8_episodes=fig8, e3_fig8=summary,
          e3_fig8_png=fig_panels(fig8, FIG7_POLICIES, "uxcost", "Fig. 8: UXCost, homogeneous"))
    report = run.report
    report.update(headline(summary, "homo_"))
    if run.state["hetero"] is not None:  # R1: "across all workload scenarios and hardware settings" (§5.2)
        report.update(headline(pd.concat([run.state["hetero"], summary], ignore_index=True)))
        for b in ("veltair", "planaria"):
            report[f"gap_ratio_{b}"] = report[f"hetero_vs_{b}_geomean"] / report[f"homo_vs_{b}_geomean"]
    spread = fig8[fig8.hw == "8k-2ws"].groupby(["workload", "policy"])["uxcost"].mean().unstack("policy")
    if not spread.empty:
        dream = spread[list(DREAM)]
        report["8k2ws_dream_spread"] = float(((dream.max(axis=1) - dream.min(axis=1)) / dream.min(axis=1)).max())


def _stage_e4(run: _Run) -> None:
    _, summary = e4_fig9(run.budget, run.state["fig7"])
    _save(run, e4_fig9=summary, e4_fig9_png=fig_ablation(summary))
    steps = {"mapscore-fixed -> dream-mapscore": "param_opt", "dream-mapscore -> dream-smartdrop": "smartdrop",
             "dream-smartdrop -> dream-full": "supernet"}
    for _, row in summary.iterrows():
        run.report[f"fig9_{steps[row['step']]}_{row['size']}"] = float(row["reduction"])


def _stage_e5(run: _Run) -> None:
    trajectory, summary = e5_fig10_11(run.budget)
    _save(run, e5_fig10_11_trajectory=trajectory, e5_fig10_11=summary, e5_fig10_11_png=fig_search(trajectory))
    run.report["fig11_two_steps"] = float(summary["improvement_2_steps"].mean())
    run.report["fig11_gap_5_steps"] = float(summary["gap_after_search"].mean())


def _stage_e6(run: _Run) -> None:
    fig12, summary = e6_fig12(run.budget)
    run.state["fig12"] = fig12
    for row in summary[(summary.workload == "ar-social") & (np.isclose(summary.p, 0.99))].itertuples():
        run.report[f"fig12_p99_{row.hw}_vs_veltair"] = float(row.full_vs_veltair)
        run.report[f"fig12_p99_{row.hw}_vs_planaria"] = float(row.full_vs_planaria)
    _save(run, e6_fig12_episodes=fig12, e6_fig12=summary, e6_fig12_png=fig_sweep(fig12))


def _stage_e7(run: _Run) -> None:
    table, summary = e7_fig13(run.budget)
    _save(run, e7_fig13_episodes=table, e7_fig13=summary, e7_fig13_png=fig_objectives(summary))


def _stage_e8(run: _Run) -> None:
    if run.state["fig12"] is None:  # Fig. 14 reads the Fig. 12 episodes
        _stage_e6(run)
    mix = e8_fig14(run.state["fig12"])
    _save(run, e8_fig14=mix, e8_fig14_png=fig_subnets(mix))


STAGES = {"E1": _stage_e1, "E2": _stage_e2, "E3": _stage_e3, "E4": _stage_e4, "E5": _stage_e5, "E6": _stage_e6,
          "E7": _stage_e7, "E8": _stage_e8}


def reproduce(out_dir, quick: bool = True, *, budget: Budget | None = None) -> list[Path]:
    """E1-E8 (module docstring) into ``out_dir``; ``budget`` overrides the quick / full budget (tests).

    Progress: one line (or a bar on a terminal) per finished experiment (:func:`joulegym.core.progress.track`).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    run = _Run(out, budget or (QUICK if quick else FULL))
    for name in track([n for n in STAGES if n in set(run.budget.experiments)], "reproduce dream", label=str):
        STAGES[name](run)
    run.written.append(write_report(run.report, run.budget, out / "dream_reproduction.md"))
    return run.written


# Tolerances of the "Paper vs joulegym" table [A]: ours, not the paper's. A reduction (a fraction) is "within
# tolerance" inside 10 percentage points, a ratio inside 0.3; "reproduced" at the paper's printed precision
# (0.1 % for reductions, 0.01 for ratios). docs/families/dream.md §7 gives the reasons of each deviation.
REDUCTION_TOL, REDUCTION_EXACT = 0.10, 0.0005
RATIO_TOL, RATIO_EXACT = 0.3, 0.005
WHY_LOAD = ("the load of our calibration (offered load 0.7 on 4K-1WS2OS, docs/families/dream-cost-model.md §4.4): "
            "the gaps depend on it (Fig. 2: 71 % at 0.61, 21 % at 1.0)")
WHY_BASELINES = ("Planaria's published rule (§3 #22: the smallest accelerator that still meets the deadline, late "
                 "frames last) keeps small models off the accelerator a heavy one needs almost alone (TrailNet on "
                 "4K-1OS2WS, SkipNet on 4K-1WS2OS), which MapScore's latency preference does not in some release-phase "
                 "alignments, whatever (alpha, beta) (docs §7)")
WHY_VELTAIR = ("Veltair as we read it (§3 #22: 1 ms layer blocks, earliest deadline first, the lowest-id idle "
               "accelerator) ignores which accelerator suits a block: DREAM-Full's gain is larger than the paper's on "
               "heterogeneous SoCs and small on homogeneous ones at our calibration (docs §7)")
WHY_INFEASIBLE = ("FocalLengthDepth's worst case cannot meet its deadline alone on 4K-1OS2WS (1.10x its period) and "
                  "GNMT's there (1.32x): every scheduler misses those frames whatever p, so UXCost barely differs")
WHY_ENERGY = ("the cost model's energy spread: no scheduler can cut more than the bound of docs/families/"
              "dream-cost-model.md \"Energy\" (the report's r5_energy_bound_vs_planaria)")
WHY_SEARCH = ("UXCost over (alpha, beta) is nearly flat at the calibrated load (the grid optimum within 3 % of a "
              "random start in Figs. 10/11), so tuning has little to gain; search constants are ours (§3 #11, docs §7)")
WHY_FEATURES = ("at the calibrated load DREAM's smart drop rarely fires (never on 4K-1WS2OS) and no OFA frame is "
                "behind at its switch point (Fig. 6 rule); the misses left come from models that cannot meet their "
                "worst case alone (docs §7)")
# report key -> (what the paper says, why it may deviate, ratio rather than reduction)
CLAIMS = {
    "fig2_dlv_reduction": ("Fig. 2: dynamic vs static FCFS, DLV reduction on AR_Call (mean over 4K SoCs)", WHY_LOAD,
                           False),
    "vs_planaria_geomean": ("Figs. 7-8: DREAM-Full vs Planaria, geomean UXCost reduction (all cells)", WHY_BASELINES,
                            False),
    "vs_planaria_max": ("Figs. 7-8: DREAM-Full vs Planaria, largest reduction", WHY_BASELINES, False),
    "vs_veltair_geomean": ("Figs. 7-8: DREAM-Full vs Veltair, geomean UXCost reduction (all cells)", WHY_VELTAIR,
                           False),
    "vs_veltair_max": ("Figs. 7-8: DREAM-Full vs Veltair, largest reduction", WHY_VELTAIR, False),
    "4k1ws2os_vs_planaria": ("Fig. 7(a): 4K-1WS2OS reduction vs Planaria (geomean)", WHY_BASELINES, False),
    "4k1ws2os_vs_planaria_arith": ("Fig. 7(a): 4K-1WS2OS reduction vs Planaria (arithmetic mean)", WHY_BASELINES,
                                   False),
    "4k1ws2os_vs_veltair": ("Fig. 7(a): 4K-1WS2OS reduction vs Veltair (geomean)", WHY_VELTAIR, False),
    "4k1ws2os_vs_veltair_arith": ("Fig. 7(a): 4K-1WS2OS reduction vs Veltair (arithmetic mean)", WHY_VELTAIR, False),
    "r5_energy_vs_planaria": ("§5.2 (R5): energy cut of DREAM-Full vs Planaria, AR_Call on 4K-1OS2WS", WHY_ENERGY,
                              False),
    "gap_ratio_veltair": ("Fig. 8: hetero / homo gain ratio vs Veltair", WHY_VELTAIR, True),
    "gap_ratio_planaria": ("Fig. 8: hetero / homo gain ratio vs Planaria", WHY_BASELINES, True),
    "fig9_param_opt_4k": ("Fig. 9 (4K): +parameter optimisation", WHY_SEARCH, False),
    "fig9_param_opt_8k": ("Fig. 9 (8K): +parameter optimisation", WHY_SEARCH, False),
    "fig9_smartdrop_4k": ("Fig. 9 (4K): +smart drop", WHY_FEATURES, False),
    "fig9_smartdrop_8k": ("Fig. 9 (8K): +smart drop", WHY_FEATURES, False),
    "fig11_two_steps": ("Fig. 11: improvement after 2 search steps (paper: more than)", WHY_SEARCH, False),
    "fig11_gap_5_steps": ("Figs. 10/11: gap to the grid optimum after 5 steps (paper: at most)", WHY_SEARCH, False),
    **{f"fig12_p99_{hw}_vs_{b}": (f"Fig. 12: AR_Social p = 0.99 on {hw.upper()}, DREAM-Full vs {b.title()}",
                                  WHY_INFEASIBLE if hw == "4k-1os2ws" else (WHY_BASELINES if b == "planaria"
                                                                             else WHY_VELTAIR), False)
       for hw in ("4k-1os2ws", "4k-1ws2os") for b in ("veltair", "planaria")},
}
# The paper's bounds ("> 25 %", "within 2 %"): met = reproduced; missed = judged by the tolerance (+1: ours must
# be at least the paper's, -1: at most).
BOUNDS = {"fig11_two_steps": +1, "fig11_gap_5_steps": -1}


def paper_claims(report: dict[str, Any]) -> list[Claim]:
    """The paper's numbers (:data:`PAPER`, docs §7) beside ours with a verdict, plus the orderings
    (DREAM-Full beats both baselines, every Fig. 9 ablation step helps); a quantity the run did not measure
    (an experiment left out of the budget) has no row."""
    claims = []
    for key, (quantity, why, ratio) in CLAIMS.items():
        if key not in report:
            continue
        tol, exact = (RATIO_TOL, RATIO_EXACT) if ratio else (REDUCTION_TOL, REDUCTION_EXACT)
        side = BOUNDS.get(key, 0)
        if side and side * (report[key] - PAPER[key]) >= 0:
            sign = ">=" if side > 0 else "<="
            claims.append(qualitative(quantity, f"{sign} {PAPER[key]:.3g}", f"{report[key]:.3g}", True))
            continue
        claims.append(claim(quantity, PAPER[key], report[key], tol=tol, exact_tol=exact, why=why))
    if "hetero_vs_planaria_geomean" in report and "hetero_vs_veltair_geomean" in report:
        p, v = report["hetero_vs_planaria_geomean"], report["hetero_vs_veltair_geomean"]
        claims.append(qualitative("Fig. 7: DREAM-Full has lower geomean UXCost than Planaria and Veltair on the "
                                  "heterogeneous cells", "both reductions > 0", f"{p:.3f}, {v:.3f}", p > 0 and v > 0,
                                  WHY_BASELINES if p <= 0 else WHY_VELTAIR))
    if "r5_energy_vs_planaria" in report and "r5_energy_bound_vs_planaria" in report:
        cut, bound = report["r5_energy_vs_planaria"], report["r5_energy_bound_vs_planaria"]
        claims.append(qualitative("§5.2 (R5): the paper's 62.9 % energy cut is within what the cost model allows",
                                  "62.9 % <= the bound", f"bound {bound:.3f}, DREAM-Full {cut:.3f}",
                                  PAPER["r5_energy_vs_planaria"] <= bound, WHY_ENERGY))
    steps = {k: v for k, v in report.items() if k.startswith("fig9_")}
    if steps:
        claims.append(qualitative("Fig. 9: every ablation step lowers the geomean UXCost", "every reduction > 0",
                                  f"min {min(steps.values()):.3f} over {len(steps)} steps",
                                  min(steps.values()) > 0, WHY_FEATURES))
    return claims


def write_report(report: dict[str, Any], budget: Budget, path: Path) -> Path:
    lines = ["# DREAM reproduction (evaluate.py --reproduce dream)", "",
             f"Seeds {list(budget.seeds)}, episodes of {budget.horizon_s} s, grid step {budget.grid_step}; "
             "docs/families/dream.md §7 discusses every row.", "", "| quantity | measured | paper |", "|---|---|---|"]
    for key, value in report.items():
        paper = PAPER.get(key)
        lines.append(f"| {key} | {value:.3f} | {'' if paper is None else f'{paper:.3f}'} |"
                     if isinstance(value, float) and math.isfinite(value) else f"| {key} | {value} | |")
    lines += ["", comparison_markdown(paper_claims(report))]
    return write_atomic(path, "\n".join(lines) + "\n")


__all__ = ["FULL", "HEADLINE", "QUICK", "Budget", "episode_plot", "paper_claims", "reproduce", "run_cell",
           "summary_plot"]
