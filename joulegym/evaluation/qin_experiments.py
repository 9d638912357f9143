"""The experiments of ``evaluate.py --reproduce qin`` (Guan & Ababei, IEEE T-SUSC 2024, §7; ``docs/families/qin.md``
§6): each returns a pandas table of episode metrics; :mod:`joulegym.evaluation.qin` writes them, the figures, the
generated results page and the "Paper vs joulegym" verdicts.

Every cluster-level episode runs the reference policy on the simulator alone with the env's instance (the jobs and
their CF predictions, ``offline_fraction=0.1``) and generator (:func:`run`), which gives the env path's metrics
exactly; node-level episodes (``QinNode-v0``) go through the env. Every policy sees the same workload per seed.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
from gymnasium.utils.seeding import np_random

from joulegym.core.inner import run_inner
from joulegym.core.policy import env_config_for, make, make_inner
from joulegym.core.rollout import rollout
from joulegym.scenarios.qin import SPLASH2

PAPER_BASELINES = ("kubernetes", "paragon", "mage")
DEPLOYABLE = ("drain-time",)  # the simple size-blind rule a practitioner tries first (not in the paper)
# rules on L_i, built on the jobs' size estimates (each app's mean size under the env's default; not in the paper)
SIZE_INFORMED = ("least-loaded", "drain-time-sized")
# the same rules on per-job sizes within 5 % of the truth (``size_estimate="profiled"``): privileged upper references
PROFILED = ("least-loaded-profiled", "drain-time-profiled")
VARIANTS = {"perf": ("qin-perf", "makespan", "makespan_s"), "energy": ("qin-energy", "energy", "energy_j"),
            "edp": ("qin-edp", "edp", "edp_js")}
OTHER_RULE = "least-loaded-of-d"
QIN_OTHER_RULE = "qin-perf (least-loaded-of-d)"  # the D-choice rule reported beside the paper's
MIXES = ("rw", "lc", "tb")
D_VALUES = (1, 2, 3, 4, 6)  # Fig. 10b
NODE_MIXES = (("fft", "barnes", "lu_cb"), ("fft", "water_nsquared"), ("ocean_cp", "radix", "fmm"))
NODE_MIX_THREADS = 3  # threads per app of the node-level mixes: more threads than the i5-4690's 4 cores
LARGE_N_POLICIES = ("qin", *PAPER_BASELINES, "round-robin", *DEPLOYABLE, *SIZE_INFORMED)
LEADERBOARD_SCENARIOS = ("paper-rw", "paper-lc", "paper-tb")  # the family's benchmark (scenarios/qin.py)


def run(env_id: str, policy: str, seed: int, env_kwargs: dict | None = None, *, through_env: bool = False,
        **policy_kw: Any) -> dict[str, float]:
    """One episode of ``policy`` on ``env_id`` (the policy's ``env_config`` under ``env_kwargs``): its metrics.

    A cluster-level reference policy runs on the simulator alone (:func:`joulegym.core.inner.run_inner` with the
    env's instance and generator, :meth:`QinClusterEnv.episode_inputs`), which gives the metrics of
    :func:`~joulegym.core.rollout.rollout` through the env exactly (``tests/qin/test_policies.py``) without the
    observations; ``through_env=True``, node policies (``QinNode-v0``) and agents go through the env."""
    agent = make(policy, family="qin", **policy_kw)
    env = gym.make(env_id, **env_config_for(agent, env_kwargs))
    try:
        base = env.unwrapped
        inner = getattr(agent, "inner", None)
        if not through_env and inner is not None and hasattr(base, "episode_inputs"):
            sim_rng, instance = base.episode_inputs(np_random(seed)[0])
            return run_inner(base.sim, inner, seed, instance, rng=sim_rng)
        return rollout(env, agent, seed=seed).metrics
    finally:
        env.close()


def privileged(label: str) -> bool:
    """Whether the policy of a table row (``label``'s first word, a registered Qin policy) is privileged: it reads
    what a deployed scheduler could not (the per-job sizes of the ``-profiled`` rules)."""
    return bool(make_inner(label.split(" ")[0], family="qin").privileged)


def improvement(baseline: float | np.ndarray, qin: float | np.ndarray) -> float | np.ndarray:
    """``(B - Q) / B`` in % (A18)."""
    return 100.0 * (baseline - qin) / baseline


def _cluster_cases() -> list[tuple[str, str, dict, str]]:
    """(label, policy, env kwargs, objective) of every Table 4 / Fig. 7 episode."""
    cases = [(policy, policy, {}, objective) for policy, objective, _ in VARIANTS.values()]
    cases.append((QIN_OTHER_RULE, "qin-perf", {"dchoice_rule": OTHER_RULE}, "makespan"))
    cases += [(policy, policy, {}, "makespan")
              for policy in (*PAPER_BASELINES, *DEPLOYABLE, *SIZE_INFORMED, *PROFILED)]
    return cases


def cluster_runs(mixes=MIXES, sizes=(50, 100), seeds=(0, 1)) -> pd.DataFrame:
    """Every Table 4 / Fig. 7 episode: per mix, number of jobs M and seed, the three Qin variants (each with its
    objective, §5.1), Qin-perf with the other D-choice rule, the paper's baselines, the deployable rules and the
    privileged ``-profiled`` ones, on
    ``QinCluster-paper-<mix>`` (Linux-like node policy, baselines at f_max)."""
    rows = []
    for mix in mixes:
        for m in sizes:
            for seed in seeds:
                for label, policy, kwargs, objective in _cluster_cases():
                    env_kwargs = {"workload": {"num_jobs": m}, "objective": objective, **kwargs}
                    metrics = run(f"joulegym/QinCluster-paper-{mix}-v0", policy, seed, env_kwargs)
                    rows.append({"mix": mix, "num_jobs": m, "seed": seed, "policy": label, **metrics})
    return pd.DataFrame(rows)


def _paired(runs: pd.DataFrame, policy: str, metric: str) -> pd.Series:
    return runs[runs.policy == policy].set_index(["num_jobs", "seed"])[metric]


def table4(runs: pd.DataFrame, baselines=PAPER_BASELINES, paper: dict | None = None) -> pd.DataFrame:
    """Per baseline and mix: Qin's improvement (%) in JCT, energy and EDP (each with its own variant), the mean over
    M and seeds of the paired ``(B - Q) / B``, its minimum, and the paper's value (``paper[baseline][mix]``)."""
    rows = []
    for baseline in baselines:
        for mix in sorted(set(runs["mix"])):
            sel = runs[runs["mix"] == mix]
            row: dict[str, Any] = {"baseline": baseline, "mix": mix}
            for k, (focus, (policy, _, metric)) in enumerate(VARIANTS.items()):
                gains = improvement(_paired(sel, baseline, metric), _paired(sel, policy, metric))
                row[f"{focus}_pct"] = float(gains.mean())
                row[f"{focus}_pct_min"] = float(gains.min())
                if paper is not None:
                    row[f"{focus}_pct_paper"] = paper[baseline][mix][k]
            rows.append(row)
    return pd.DataFrame(rows)


def rw_at_largest_m(runs: pd.DataFrame) -> pd.DataFrame:
    """RW at the largest M (the paper's 100 jobs): every policy's mean makespan, its standard error over the seeds,
    Qin-perf's paired gain over it (%), and the load imbalance Im_c (eq. 30, mean over the placements) and core
    utilisation it ran with."""
    rw = runs[runs["mix"] == "rw"]
    rw = rw[rw.num_jobs == rw.num_jobs.max()]
    qin = rw[rw.policy == "qin-perf"].set_index("seed")["makespan_s"]
    rows = []
    for policy, part in rw.groupby("policy", sort=False):
        span = part.set_index("seed")["makespan_s"]
        rows.append({"policy": policy, "num_jobs": int(rw.num_jobs.max()), "seeds": int(span.size),
                     "makespan_s": float(span.mean()), "sem_s": float(span.std(ddof=1) / np.sqrt(span.size))
                     if span.size > 1 else 0.0, "qin_gain_pct": float(improvement(span, qin).mean()),
                     "im_c_ginstr": float(part.im_c_mean.mean()) / 1e9, "mean_util": float(part.mean_util.mean())})
    return pd.DataFrame(rows).sort_values("makespan_s").reset_index(drop=True)


def gain_by_m(runs: pd.DataFrame, baselines=(*PAPER_BASELINES, *DEPLOYABLE, *SIZE_INFORMED)) -> pd.DataFrame:
    """Fig. 7: RW, per M, Qin-perf's mean paired makespan gain (%) over each baseline (and the other rule's)."""
    rw = runs[runs["mix"] == "rw"]
    rows = []
    for m, part in rw.groupby("num_jobs"):
        row: dict[str, Any] = {"num_jobs": int(m)}
        for qin in ("qin-perf", QIN_OTHER_RULE):
            q = part[part.policy == qin].set_index("seed")["makespan_s"]
            for baseline in baselines:
                b = part[part.policy == baseline].set_index("seed")["makespan_s"]
                suffix = "" if qin == "qin-perf" else f" ({OTHER_RULE})"
                row[f"vs {baseline}{suffix}"] = float(improvement(b, q).mean())
        rows.append(row)
    return pd.DataFrame(rows)


def fig10b(seeds=(0, 1), d_values=D_VALUES, num_jobs: int = 100) -> pd.DataFrame:
    """Fig. 10b: Qin (perf focus) with d in ``d_values`` on ``paper-rw``: makespan and mean Im_c per seed."""
    rows = []
    for d in d_values:
        for seed in seeds:
            metrics = run("joulegym/QinCluster-paper-rw-v0", "qin-perf", seed, {"workload": {"num_jobs": num_jobs}},
                          d=d)
            rows.append({"d": d, "seed": seed, **metrics})
    return pd.DataFrame(rows)


def fig12(seeds=(0, 1), num_jobs: int = 100) -> pd.DataFrame:
    """Fig. 12: Qin without and with DAC on 100 RW jobs at once (perf focus + descending H, energy focus +
    ascending E; queue 100, wait 0): makespan, mean JCT and energy, and DAC's improvement (%)."""
    rows = []
    for panel, policy, objective, key in (("12a", "qin-perf", "makespan", "dac_H_desc"),
                                          ("12b", "qin-energy", "energy", "dac_E_asc")):
        for seed in seeds:
            kw = {"objective": objective, "workload": {"num_jobs": num_jobs}}
            base = run("joulegym/QinCluster-dac-rw-v0", policy, seed, {**kw, "admission": "fifo"})
            dac = run("joulegym/QinCluster-dac-rw-v0", policy, seed, {**kw, "admission": key})
            row = {"panel": panel, "seed": seed, "admission": key}
            for metric in ("makespan_s", "mean_jct_s", "energy_j"):
                row[f"{metric}_fifo"] = base[metric]
                row[f"{metric}_dac"] = dac[metric]
                row[f"{metric}_gain_pct"] = improvement(base[metric], dac[metric])
            rows.append(row)
    return pd.DataFrame(rows)


# Table 5 and its decomposition: (label, cluster policy or None for the variant's, node policy, node focus or None
# for the variant's focus)
TABLE5_CASES = (("kubernetes + sniper-pinned", "kubernetes", "sniper-pinned", None),
                ("qin + sniper-pinned", None, "sniper-pinned", None),
                ("qin + qin-node PL 0", None, "qin-node", "perf"),
                ("qin + qin-node", None, "qin-node", None))


def table5(seeds=(0, 1), num_jobs: int = 100, control_period_ms: float = 10.0) -> pd.DataFrame:
    """Table 5: hierarchical Qin + Qin (cluster ``qin-<focus>``, node ``qin-node`` with the same focus) against
    Kubernetes + Sniper pinned on ``Qin-hier-rw``, and the steps between them (Qin at the cluster level alone, then
    Qin's node mapping at PL 0, then its DVFS): each case's makespan, energy and EDP per focus and seed."""
    rows = []
    for focus, (variant, objective, metric) in VARIANTS.items():
        for seed in seeds:
            for label, cluster, node, node_focus in TABLE5_CASES:
                if focus == "perf" and label == "qin + qin-node":
                    continue  # PL 0 is the perf focus: the same episode as the line above
                kw = {"objective": objective, "workload": {"num_jobs": num_jobs}, "node_policy": node,
                      "control_period_ms": control_period_ms, "node_focus": node_focus or focus}
                m = run("joulegym/Qin-hier-rw-v0", cluster or variant, seed, kw)
                rows.append({"focus": focus, "seed": seed, "case": label, "metric": metric, "value": m[metric],
                             "makespan_s": m["makespan_s"], "energy_j": m["energy_j"], "edp_js": m["edp_js"],
                             "pl_max": m["pl_max"]})
    return pd.DataFrame(rows)


def table5_power_terms(seeds=(0, 1), num_jobs: int = 100, control_period_ms: float = 10.0) -> pd.DataFrame:
    """Table 5's energy column with eq. 12's computational power alone (``power_model="paper_dynamic_only"``, the
    energy the paper models, §4.1) beside the RAPL-like full model: Kubernetes + Sniper and Qin + Qin (energy focus,
    PL 0.5), energy per seed."""
    rows = []
    for power in ("full", "paper_dynamic_only"):
        for seed in seeds:
            kw = {"objective": "energy", "workload": {"num_jobs": num_jobs}, "control_period_ms": control_period_ms,
                  "power_model": power}
            base = run("joulegym/Qin-hier-rw-v0", "kubernetes", seed, {**kw, "node_policy": "sniper-pinned"})
            qin = run("joulegym/Qin-hier-rw-v0", "qin-energy", seed, {**kw, "node_policy": "qin-node"})
            rows.append({"power_model": power, "seed": seed, "k8s_energy_j": base["energy_j"],
                         "qin_energy_j": qin["energy_j"], "energy_gain_pct": improvement(base["energy_j"],
                                                                                       qin["energy_j"])})
    return pd.DataFrame(rows)


def table5_gains(t5: pd.DataFrame) -> pd.DataFrame:
    """Per focus and case: the mean paired improvement (%) over Kubernetes + Sniper in the focus's metric, and in
    makespan and energy."""
    rows = []
    for focus, part in t5.groupby("focus", sort=False):
        base = part[part.case == TABLE5_CASES[0][0]].set_index("seed")
        for case, sub in part.groupby("case", sort=False):
            if case == TABLE5_CASES[0][0]:
                continue
            sub = sub.set_index("seed")
            rows.append({"focus": focus, "case": case,
                         "gain_pct": float(improvement(base["value"], sub["value"]).mean()),
                         "makespan_gain_pct": float(improvement(base["makespan_s"], sub["makespan_s"]).mean()),
                         "energy_gain_pct": float(improvement(base["energy_j"], sub["energy_j"]).mean())})
    return pd.DataFrame(rows)


# Fig. 14: (label, node policy, kwargs, QinNode objective)
NODE_CASES = (("qin-node PL 0", "qin-node", {"focus": "perf"}, "perf"),
              ("qin-node PL 0.5", "qin-node", {"focus": "energy"}, "energy"),
              ("qin-node PL 0.1", "qin-node", {"focus": "edp"}, "edp"),
              ("sniper-pinned", "sniper-pinned", {}, "energy"))


def fig14(apps=SPLASH2, seeds=(0,)) -> pd.DataFrame:
    """Fig. 14: per Splash-2 app on one i5-4690, Qin's node policy at PL 0, 0.5 (energy) and 0.1 (EDP) against
    Sniper's pinned default: runtime, energy and EDP (means over ``seeds``), their ratio to Sniper's, and the
    min-max normalisation over the four per app, as the paper plots them."""
    rows = []
    for app in apps:
        env_id = f"joulegym/QinNode-node-splash2-{app.replace('_', '-')}-v0"
        for label, policy, kw, objective in NODE_CASES:
            for seed in seeds:
                m = run(env_id, policy, seed, {"objective": objective}, **kw)
                rows.append({"app": app, "policy": label, "seed": seed, "runtime_s": m["runtime_s"],
                             "energy_j": m["energy_j"], "edp_js": m["edp_js"], "pl_max": m["pl_max"]})
    table = pd.DataFrame(rows).groupby(["app", "policy"], sort=False).mean(numeric_only=True).reset_index()
    for metric in ("runtime_s", "energy_j", "edp_js"):
        sniper = table[table.policy == "sniper-pinned"].set_index("app")[metric]
        table[f"{metric}_vs_sniper"] = table[metric] / table.app.map(sniper)
        grp = table.groupby("app")[metric]
        lo, hi = grp.transform("min"), grp.transform("max")
        table[f"{metric}_norm"] = ((table[metric] - lo) / (hi - lo).where(hi > lo, 1.0)).fillna(0.0)
    return table


def node_mixes(mixes=NODE_MIXES, seeds=(0,)) -> pd.DataFrame:
    """§7.2.2's mechanism (load balancing cuts the threads' CPU queueing): several apps of 3 threads on one
    i5-4690 (more threads than cores), Qin's node policy at PL 0 against Sniper's pinned default and Linux."""
    rows = []
    for apps in mixes:
        for seed in seeds:
            for label, policy, kw in (("qin-node PL 0", "qin-node", {"focus": "perf"}),
                                      ("sniper-pinned", "sniper-pinned", {}), ("linux", "linux", {})):
                m = run("joulegym/QinNode-v0", policy, seed,
                        {"apps": list(apps), "threads_per_app": NODE_MIX_THREADS, "objective": "perf"}, **kw)
                rows.append({"apps": " + ".join(apps), "policy": label, "seed": seed, "runtime_s": m["runtime_s"]})
    return pd.DataFrame(rows)


# the decision stages of the scale experiment (docs/families/qin.md §6.6): (decision_mode, decision latency of the
# profiling-based schedulers; None = A27's 0.09 s). Alg. 1's serial loop, the overlapped latencies, and the serial
# loop at Kubernetes' 5 ms (a sensitivity)
LARGE_N_STAGES = (("serial", None), ("overlapped", None), ("serial", 0.005))


def large_n(n_servers: int = 1000, seeds=(0,), policies=LARGE_N_POLICIES, stages=LARGE_N_STAGES) -> pd.DataFrame:
    """Scalability (§7.4; future work in the paper): ``n_servers`` servers drawn from the Table 2 types, M = 10 N RW
    jobs at t = 0, every policy, per decision stage of ``stages`` (``decision_mode``, the decision latency of the
    profiling-based schedulers: None = A27's 0.09 s; Kubernetes keeps its own 5 ms)."""
    rows = []
    for mode, latency in stages:
        for seed in seeds:
            for policy in policies:
                if latency is not None and policy == "kubernetes":
                    continue  # Kubernetes' latency is its own: the same episode as the stage's A27 row
                kw: dict[str, Any] = {"servers": {"kind": "sampled", "count": n_servers}, "max_servers": n_servers,
                                      "workload": {"num_jobs": 10 * n_servers}, "decision_mode": mode}
                if latency is not None:
                    kw["decision_latency_s"] = latency
                m = run("joulegym/QinCluster-large-n-v0", policy, seed, kw)
                rows.append({"n_servers": n_servers, "decision_mode": mode,
                             "decision_latency_s": latency if latency is not None else 0.09,
                             "seed": seed, "policy": policy, **m})
    return pd.DataFrame(rows)


#: What each rule reads and where Qin's placement loses to the size-blind drain-time rule (docs §6.1): (label,
#: policy, env kwargs); every row is paired per seed with ``drain-time`` at the same ``smt_yield``.
RULE_GAP_CASES = (
    ("qin", "qin", {}),
    ("qin, eq. 16 hinge", "qin", {"interference_mode": "hinge"}),
    ("qin, least-loaded-of-d", "qin", {"dchoice_rule": "least-loaded-of-d"}),
    ("round-robin", "round-robin", {}),
    ("drain-time-profiled (privileged)", "drain-time-profiled", {}),
    ("drain-time-sized, app-mean sizes", "drain-time-sized", {"size_estimate": "app-mean"}),
    ("least-loaded-profiled (privileged)", "least-loaded-profiled", {}),
    ("qin, smt_yield 1", "qin", {"smt_yield": 1.0}),
    ("round-robin, smt_yield 1", "round-robin", {"smt_yield": 1.0}),
)


def rules_gap(seeds=tuple(range(10_000, 10_040)), num_jobs: int = 100, cases=RULE_GAP_CASES) -> pd.DataFrame:
    """RW on the five workers: each case's mean makespan and its paired difference from ``drain-time`` (assigned
    jobs over the measured rate, size-blind) at the same ``smt_yield``: mean, 95 % half-width (1.96 standard
    errors) and the seeds on which drain-time is faster."""
    def spans(policy: str, kw: dict) -> np.ndarray:
        kwargs = {**kw, "workload": {"num_jobs": num_jobs}}
        return np.array([run("joulegym/QinCluster-paper-rw-v0", policy, seed, kwargs)["makespan_s"] for seed in seeds])

    refs: dict[float, np.ndarray] = {}
    rows = []
    for label, policy, kw in cases:
        smt = float(kw.get("smt_yield", 1.3))
        if smt not in refs:
            refs[smt] = spans("drain-time", {"smt_yield": smt} if "smt_yield" in kw else {})
        gap = spans(policy, kw) - refs[smt]
        n = gap.size
        rows.append({"case": label, "smt_yield": smt, "seeds": n, "makespan_s": float((refs[smt] + gap).mean()),
                     "drain_time_s": float(refs[smt].mean()), "minus_drain_time_s": float(gap.mean()),
                     "ci95_s": float(1.96 * gap.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan"),
                     "drain_time_faster": int((gap > 0).sum())})
    return pd.DataFrame(rows)


def leaderboard(scenarios=LEADERBOARD_SCENARIOS, seeds=tuple(range(10_000, 10_010)),
                policies=("qin", *PAPER_BASELINES, "round-robin", *DEPLOYABLE, *SIZE_INFORMED, *PROFILED)
                ) -> pd.DataFrame:
    """The leaderboard's heuristics (``evaluate.py --suite qin``: makespan on the held-out seeds of the benchmark's
    scenarios): every reference policy's makespan per scenario and seed (the shipped agents are ranked by the
    suite)."""
    rows = []
    for scenario in scenarios:
        for policy in policies:
            for seed in seeds:
                m = run(f"joulegym/QinCluster-{scenario}-v0", policy, seed)
                rows.append({"scenario": scenario, "policy": policy, "seed": seed, "makespan_s": m["makespan_s"]})
    return pd.DataFrame(rows)
