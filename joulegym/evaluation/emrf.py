"""EMRF evaluation hooks: the (efficiency, soft-fairness) front and ``evaluate.py --reproduce emrf``.

- ``summary_plot``: for every EMRF env id in the results, the front EMRF traces as eta sweeps 0..1,
  run through the env on the evaluation's seeds (:func:`front_through_env`), with every evaluated
  policy's point on it (episode means of ``mean_efficiency`` E and ``soft_fairness`` Δ): PNG + CSV.
  :func:`front_table` is the static front of one instance (pure functions).
- ``episode_plot``: GFLOPS delivered per slot over one episode, one row per policy.
- ``reproduce``: the paper's model predictions (docs/families/emrf.md §9) recomputed, as CSV + Markdown + PNG:

==========  ===================================================================================
file        content
==========  ===================================================================================
fig6.csv    M1-M5 (Table II) at eta = 0.1: Θ of WFQ, DRF, EMRF (lexmaxmin, HiGHS vertex), the
            ratios to WFQ, GPU utilisations, and Θ measured by an env episode of each policy
fig7.csv    eta sweep on M2 (primary), M1-eps and M1: Θ, Θ/Θ(eta=1), δ(eta) bound, realized Δ
            (lexmaxmin and vertex)
fig8.csv    Θ vs n = 2..5 users (first n Table III apps): WFQ, DRF, EMRF-0.8/0.5/0.1
==========  ===================================================================================

``emrf_reproduce.md`` holds the tables and "Paper vs joulegym" (:func:`paper_claims`: paper value, ours, verdict).

Θ = sum_i F_i (GFLOPS; erratum E12). The testbed percentages of §VI are context, not reproduced
(docs/families/emrf.md, assumption A15). Every episode goes through :func:`~joulegym.core.rollout.rollout`
(:func:`~joulegym.evaluation.runner.run_episode`).
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd

from joulegym import baselines
from joulegym.core.io import save_figure, write_atomic, write_csv
from joulegym.core.plotting import new_figure
from joulegym.core.progress import track
from joulegym.core.rollout import rollout
from joulegym.envs.emrf.allocation import (
    delta_bound,
    drf_allocate,
    emrf_allocate,
    fair_share,
    soft_fairness_degree,
    static_partition,
    utilisation,
    wfq_allocate,
)
from joulegym.evaluation.verdict import Claim, claim, comparison_markdown, markdown_table, qualitative
from joulegym.workloads.rodinia import RODINIA, TABLE_III_ORDER, mix_arrays

HEADLINE = ("throughput_gflops", "mean_efficiency", "soft_fairness", "floor_violation", "si_violations",
            "ef_violations")
APU = (24.0, 480.0)
FRONT_ETAS = np.linspace(0.0, 1.0, 21)  # static front (front_table)
FRONT_ENV_ETAS = np.linspace(0.0, 1.0, 11)  # env front (front_through_env): 11 etas x <= 5 seeds of episodes
FRONT_MAX_SEEDS = 5
MAX_PLOTTED_POLICIES = 8


# --- front -------------------------------------------------------------------------------------------
def front_table(capacities, xi, w, etas=FRONT_ETAS) -> pd.DataFrame:
    """Static front of one instance: EMRF's (E = sum F / C_tot, realized Δ, δ bound) per eta, plus the baselines."""
    c_tot = float(sum(capacities))
    share = fair_share(capacities, xi, w)
    rows = []
    for eta in etas:
        f = emrf_allocate(capacities, xi, w, float(eta))
        rows.append({"policy": f"emrf({eta:.2f})", "eta": float(eta), "efficiency": f.sum() / c_tot,
                     "soft_fairness": soft_fairness_degree(f, share),
                     "delta_bound": delta_bound(capacities, xi, w, float(eta))})
    for name, func in (("drf", drf_allocate), ("wfq", wfq_allocate), ("static-partition", static_partition)):
        f = func(capacities, xi, w)
        if name == "static-partition":  # the policy scales S until a device saturates (baselines.emrf)
            f = f / max(utilisation(capacities, xi, f))
        rows.append({"policy": name, "eta": np.nan, "efficiency": f.sum() / c_tot,
                     "soft_fairness": soft_fairness_degree(f, share), "delta_bound": np.nan})
    return pd.DataFrame(rows)


def front_through_env(env_id: str, seeds, env_kwargs: dict | None = None, etas=None) -> pd.DataFrame:
    """The front EMRF(eta) traces through the env itself as eta sweeps 0..1, on ``seeds``.

    Each eta's point is the mean over the seeds of the episode metrics ``mean_efficiency`` (E) and
    ``soft_fairness`` (Δ): the same numbers, from the same episodes' seeds, as the evaluated policies'
    points, so they are comparable on every id (dynamic ones included). ``residual_weights`` fixes the
    floor at eta_target, so its front is run in ``weights`` mode (the same allocations); ``knob_discrete``
    uses its own eta levels.
    """
    from joulegym.evaluation.runner import run_episode

    kwargs = dict(env_kwargs or {})
    probe = gym.make(env_id, **kwargs)
    base = probe.unwrapped
    mode, levels = base.action_mode, int(base.config["knob_levels"])
    probe.close()
    if mode == "residual_weights":
        kwargs["action_mode"] = "weights"
    if etas is None:
        etas = np.linspace(0.0, 1.0, levels) if mode == "knob_discrete" else FRONT_ENV_ETAS
    rows = []
    for eta in etas:
        env = gym.make(env_id, **kwargs)
        policy = baselines.make("emrf", family="emrf", eta=float(eta))
        results = [run_episode(env, policy, int(seed), env_id=env_id)[0] for seed in seeds]
        env.close()
        rows.append({"policy": f"emrf(eta={float(eta):.2f})", "eta": float(eta),
                     "mean_efficiency": float(np.mean([r["mean_efficiency"] for r in results])),
                     "soft_fairness": float(np.mean([r["soft_fairness"] for r in results])),
                     "throughput_gflops": float(np.mean([r["throughput_gflops"] for r in results])),
                     "seeds": len(results)})
    return pd.DataFrame(rows)


def summary_plot(results: pd.DataFrame, out_dir) -> list[Path]:
    """One front per EMRF env id in ``results``: EMRF's eta sweep (through the env) and every evaluated policy.

    ``results.attrs["env_kwargs"]`` (set by ``evaluate.py``) are the env kwargs of the evaluation.
    """
    out_dir = Path(out_dir)
    written = []
    env_kwargs = results.attrs.get("env_kwargs") or {}
    for env_id in sorted(set(results["env_id"])):
        if "/EMRF" not in env_id:
            continue
        sub = results[results["env_id"] == env_id]
        if not {"mean_efficiency", "soft_fairness", "seed"} <= set(sub.columns):
            continue
        seeds = sorted(set(sub["seed"]))[:FRONT_MAX_SEEDS]
        table = front_through_env(env_id, seeds, env_kwargs)
        fig, axes = new_figure(1, 1, size=(7.2, 4.8))
        ax = axes[0, 0]
        ax.plot(table["soft_fairness"], table["mean_efficiency"], "-", color="0.55", lw=1.5, zorder=1,
                label="EMRF, eta = 0 ... 1")
        ax.scatter(table["soft_fairness"], table["mean_efficiency"], s=14, color="0.55", zorder=2)
        for _, row in table.iterrows():
            if any(abs(row["eta"] - e) < 1e-9 for e in (0.0, 0.5, 1.0)):
                ax.annotate(f"eta={row['eta']:.1f}", (row["soft_fairness"], row["mean_efficiency"]),
                            textcoords="offset points", xytext=(5, 4), fontsize=8, color="0.35")
        means = sub.groupby("policy")[["mean_efficiency", "soft_fairness"]].mean()
        markers = "osD^vP*Xh<>"
        for k, (policy, row) in enumerate(list(means.iterrows())[:MAX_PLOTTED_POLICIES * 2]):
            ax.scatter(row["soft_fairness"], row["mean_efficiency"], marker=markers[k % len(markers)], s=60,
                       label=str(policy), zorder=3, edgecolors="k", linewidths=0.5)
        ax.set_xlabel("soft-fairness degree Δ = max F/S - min F/S, episode mean (smaller is fairer)")
        ax.set_ylabel("efficiency E = sum F / (C_cpu + C_gpu), episode mean")
        ax.set_title(f"{env_id}: (efficiency, soft-fairness) front, {len(seeds)} seed(s)", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
        fig.tight_layout()
        name = env_id.split("/")[-1].replace("-v0", "")
        written.append(save_figure(fig, out_dir / f"emrf_front_{name}.png"))
        written.append(write_csv(table, out_dir / f"emrf_front_{name}.csv"))
    return written


def episode_plot(traces, env_id: str):
    """Delivered GFLOPS per slot over one episode, one row per policy."""
    labels = list(traces)[:MAX_PLOTTED_POLICIES]
    fig, axes = new_figure(len(labels), 1, size=(7.6, 1.9 * len(labels) + 0.6))
    for row, label in enumerate(labels):
        infos = [i for i in traces[label].infos if "delivered" in i]
        ax = axes[row, 0]
        if infos:
            data = np.array([i["delivered"] for i in infos], dtype=float)
            ax.stackplot(np.arange(len(infos)), data.T, labels=[f"slot {k}" for k in range(data.shape[1])],
                         step="post")
        ax.set_ylabel(f"{label}\nGFLOPS", fontsize=8)
    axes[0, 0].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    axes[-1, 0].set_xlabel("window")
    fig.suptitle(f"{env_id}: GFLOPS delivered per user slot (stacked)", fontsize=10)
    fig.tight_layout()
    return fig


# --- reproduction ----------------------------------------------------------------------------------------
def _env_throughput(env_id: str, policy: str, **kwargs) -> float:
    """Θ of one episode (seed 0) of reference policy ``policy`` on ``env_id``."""
    env = gym.make(env_id)
    try:
        episode = rollout(env, baselines.make(policy, family="emrf", **kwargs), seed=0)
    finally:
        env.close()
    return float(episode.metrics["throughput_gflops"])


def fig6_table(with_env: bool = True) -> pd.DataFrame:
    rows = []
    for mix in ("M1", "M2", "M3", "M4", "M5"):
        xi, w = mix_arrays(mix)
        f = {"wfq": wfq_allocate(APU, xi, w), "drf": drf_allocate(APU, xi, w),
             "emrf": emrf_allocate(APU, xi, w, 0.1), "emrf_vertex": emrf_allocate(APU, xi, w, 0.1, tie_break="vertex")}
        row = {"mix": mix}
        for name, alloc in f.items():
            row[f"theta_{name}"] = alloc.sum()
            row[f"gpu_util_{name}"] = utilisation(APU, xi, alloc)[1]
        row["drf_over_wfq"] = row["theta_drf"] / row["theta_wfq"]
        row["emrf_over_wfq"] = row["theta_emrf"] / row["theta_wfq"]
        if with_env and mix != "M1":  # M1's scenario has finite jobs: its Θ is per-episode, not static
            for name in ("wfq", "drf", "emrf"):
                row[f"env_theta_{name}"] = _env_throughput(f"joulegym/EMRF-apu-{mix.lower()}-v0", name)
        rows.append(row)
    return pd.DataFrame(rows)


def fig7_table(etas) -> pd.DataFrame:
    rows = []
    m1_eps = mix_arrays("M1")
    m1_eps[0][3], m1_eps[0][4] = 0.99, 0.01
    for label, (xi, w) in (("M2", mix_arrays("M2")), ("M1-eps", m1_eps), ("M1", mix_arrays("M1"))):
        share = fair_share(APU, xi, w)
        theta_one = emrf_allocate(APU, xi, w, 1.0).sum()
        for eta in etas:
            lex = emrf_allocate(APU, xi, w, float(eta))
            vertex = emrf_allocate(APU, xi, w, float(eta), tie_break="vertex")
            rows.append({"scenario": label, "eta": float(eta), "theta": lex.sum(),
                         "theta_over_eta1": lex.sum() / theta_one, "delta_bound": delta_bound(APU, xi, w, float(eta)),
                         "delta_realized_lex": soft_fairness_degree(lex, share),
                         "delta_realized_vertex": soft_fairness_degree(vertex, share)})
    return pd.DataFrame(rows)


def fig8_table() -> pd.DataFrame:
    rows = []
    for n in range(2, 6):
        xi = [RODINIA[a].xi_cpu for a in TABLE_III_ORDER[:n]]
        w = [1.0] * n
        row = {"n": n, "WFQ": wfq_allocate(APU, xi, w).sum(), "DRF": drf_allocate(APU, xi, w).sum()}
        for eta in (0.8, 0.5, 0.1):
            row[f"EMRF-{eta}"] = emrf_allocate(APU, xi, w, eta).sum()
        rows.append(row)
    return pd.DataFrame(rows)


def paper_claims(tables: dict[str, pd.DataFrame]) -> list[Claim]:
    """The paper's values (its model, to its printed precision: docs/families/emrf.md §9) beside ours."""
    t6 = tables["fig6"].set_index("mix")
    claims = [claim("Fig. 4 Θ(DRF) / Θ(WFQ) on M1", 2.856, t6.loc["M1", "drf_over_wfq"], tol=0.005, exact_tol=0.0005,
                    fmt=".4g"),
              claim("Fig. 4 Θ(EMRF 0.1, HiGHS vertex) / Θ(WFQ) on M1", 9.946,
                    t6.loc["M1", "theta_emrf_vertex"] / t6.loc["M1", "theta_wfq"], tol=0.005, exact_tol=0.0005,
                    why="the lexmaxmin tie-break gives a lower Θ; the paper's number is HiGHS's vertex (§9)",
                    fmt=".4g")]
    best = all(t6.theta_emrf >= t6[["theta_wfq", "theta_drf"]].max(axis=1) - 1e-6)
    claims.append(qualitative("Fig. 6: EMRF has the highest Θ on every mix", "M1-M5", "holds" if best else "fails",
                              best, "see docs/families/emrf.md §9"))
    m2 = tables["fig7"][tables["fig7"].scenario == "M2"].set_index("eta")
    claims += [claim("Fig. 7 M2 Θ(0)/Θ(1) (= 1.5 - 0.5 eta)", 1.5, m2.loc[0.0, "theta_over_eta1"], tol=0.01,
                     exact_tol=0.0005),
               claim("Fig. 7 M2 δ bound at eta 0 (= 2 (1 - eta))", 2.0, m2.loc[0.0, "delta_bound"], tol=0.01,
                     exact_tol=0.0005)]
    n5 = tables["fig8"].set_index("n").loc[5]
    for column, paper in (("WFQ", 47.6), ("DRF", 121.0), ("EMRF-0.8", 165.4), ("EMRF-0.5", 231.9),
                          ("EMRF-0.1", 320.7)):
        claims.append(claim(f"Fig. 8 Θ at n = 5, {column} (GFLOPS)", paper, n5[column], tol=0.5, exact_tol=0.05,
                            fmt=".4g"))
    return claims


def reproduce(out_dir, quick: bool = False) -> list[Path]:
    """Write the Fig. 6/7/8 tables (CSV + Markdown) and one PNG with the three panels."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    etas = np.linspace(0.0, 1.0, 6 if quick else 11)
    stages = {"fig6": lambda: fig6_table(with_env=not quick), "fig7": lambda: fig7_table(etas), "fig8": fig8_table}
    tables = {name: stages[name]() for name in track(list(stages), "reproduce emrf", label=str)}
    written = [write_csv(t, out_dir / f"emrf_{name}.csv") for name, t in tables.items()]
    title = "# EMRF paper figures (the paper's model, docs/families/emrf.md §9), recomputed by joulegym"
    text = title + "\n\n" + "\n\n".join(f"## {name}\n\n{markdown_table(t)}" for name, t in tables.items())
    text += "\n\n" + comparison_markdown(paper_claims(tables))
    written.append(write_atomic(out_dir / "emrf_reproduce.md", text + "\n"))
    fig, axes = new_figure(1, 3, size=(13.0, 3.6))
    t6 = tables["fig6"]
    x = np.arange(len(t6))
    for k, name in enumerate(("wfq", "drf", "emrf")):
        axes[0, 0].bar(x + (k - 1) * 0.27, t6[f"theta_{name}"] / t6["theta_wfq"], 0.27, label=name.upper())
    axes[0, 0].set_xticks(x, t6["mix"])
    axes[0, 0].set_yscale("log")
    axes[0, 0].set_title("Figs. 4a/6: Θ / Θ_WFQ (eta = 0.1)", fontsize=9)
    axes[0, 0].legend(fontsize=7)
    t7 = tables["fig7"]
    for label in ("M2", "M1-eps", "M1"):
        sub = t7[t7["scenario"] == label]
        axes[0, 1].plot(sub["eta"], sub["theta_over_eta1"], "-o", ms=3, label=f"{label} Θ/Θ(1)")
        axes[0, 1].plot(sub["eta"], sub["delta_bound"] / sub["delta_bound"].max(), "--", label=f"{label} δ/δ(0)")
    axes[0, 1].set_xlabel("eta")
    axes[0, 1].set_title("Fig. 7: knob sweep", fontsize=9)
    axes[0, 1].legend(fontsize=6)
    t8 = tables["fig8"]
    for col in t8.columns[1:]:
        axes[0, 2].plot(t8["n"], t8[col], "-o", ms=3, label=col)
    axes[0, 2].set_xlabel("users n")
    axes[0, 2].set_ylabel("Θ (GFLOPS)")
    axes[0, 2].set_title("Fig. 8: Θ vs number of users", fontsize=9)
    axes[0, 2].legend(fontsize=7)
    fig.tight_layout()
    written.append(save_figure(fig, out_dir / "emrf_figures.png"))
    return written



