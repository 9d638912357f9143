"""The verdict's rules and yardsticks (docs/leaderboard.md): one set of rules for every policy, the policy classes,
the deployable anchors, the per-seed-paired normalisation and the paired comparisons."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import bootstrap

import joulegym  # noqa: F401  (registers the ids)
from joulegym import baselines
from joulegym.core.benchmark import Benchmark
from joulegym.core.family import env_id, families, get_family, load_policies
from joulegym.core.policy import _REGISTRY, register_policy
from joulegym.evaluation import scoring, stats, suite
from joulegym.evaluation.runner import evaluate

BENCHMARKED = [d.name for d in families() if d.benchmark is not None]
def _quick_id(family: str) -> str:
    descriptor = get_family(family)
    bench = descriptor.benchmark
    return env_id(bench.kind, bench.quick_scenarios[0], descriptor.kind(bench.kind).version)


def _entries(family: str) -> list:
    return suite.reference_entries(get_family(family), _quick_id(family))


# --- same rules for every policy --------------------------------------------------------------------------------
@pytest.mark.parametrize("family", BENCHMARKED)
def test_every_policy_runs_under_the_scenario_rules_and_has_a_class(family):
    """No deployable reference policy's env_config sets a scenario key (budget, predictor, profiling, ...), a
    privileged one only the record's ``privileged_settings``; every deployable policy is a heuristic or a baseline of
    the record; both anchors are deployable."""
    bench = get_family(family).benchmark
    entries = _entries(family)
    for entry, cls in entries:
        policy = baselines.make(entry.name, family=family)
        settings = set(getattr(policy, "env_config", None) or {})
        assert settings <= set(bench.policy_settings) or (policy.privileged and settings <= set(
            (*bench.policy_settings, *bench.privileged_settings))), entry.name
        assert cls == bench.policy_class(entry.name, bool(policy.privileged))
    classes = dict((e.label, c) for e, c in entries)
    scenario = bench.quick_scenarios[0]
    assert classes[bench.zero[scenario]] == "baseline" and classes[bench.best_heuristic[scenario]] == "heuristic"


class _Lifter:
    """A test double: a policy whose env_config lifts a scenario constraint."""

    name, privileged = "rule-lifter", False

    def __init__(self, env_config: dict) -> None:
        self.env_config = env_config

    def reset(self, env, seed=None) -> None:
        pass

    def act(self, obs, info):
        raise AssertionError("never run: the suite refuses it first")


LIFTS = {"etf": {"phi": 1.0}, "emrf": {"eta": 0.0}, "powerflow": {"power_constraint": "none", "predictor": "oracle"},
         "dream": {"horizon_s": 1.0}, "qin": {"node_policy": "linux"}}


@pytest.mark.parametrize("family", BENCHMARKED)
def test_env_config_cannot_lift_a_scenario_constraint(family):
    bench = get_family(family).benchmark
    load_policies(family)
    register_policy("rule-lifter", lambda: _Lifter(LIFTS[family]), family=family, kinds=(bench.kind,),
                    description="test double")
    try:
        with pytest.raises(ValueError, match=r"rule-lifter.*fix for every deployable policy"):
            suite.reference_entries(get_family(family), _quick_id(family))
    finally:
        _REGISTRY.pop((family, "rule-lifter"), None)


def test_only_a_privileged_policy_may_set_the_privileged_settings():
    """Qin's size_estimate="profiled" (per-job sizes) is what makes its -profiled rules upper bounds: allowed to a
    privileged policy, refused to a deployable one, and no other scenario key is allowed to either."""
    bench = get_family("qin").benchmark
    assert bench.privileged_settings == ("size_estimate",)
    bench.check_env_config("an-upper-bound", {"size_estimate": "profiled"}, privileged=True)
    with pytest.raises(ValueError, match=r"'deployable'.*size_estimate"):
        bench.check_env_config("deployable", {"size_estimate": "profiled"})
    with pytest.raises(ValueError, match=r"node_policy.*what makes it privileged"):
        bench.check_env_config("an-upper-bound", {"size_estimate": "profiled", "node_policy": "linux"}, privileged=True)


def _budget_families() -> list[str]:
    return [f for f in BENCHMARKED if get_family(f).benchmark.budget is not None]


def test_the_families_with_a_budget_declare_it():
    assert _budget_families() == ["powerflow"]  # the cluster power cap eta G P_max; no other family has a budget


@pytest.mark.parametrize("family", _budget_families())
def test_no_deployable_policy_breaks_the_budget(family):
    """Every deployable reference policy, run as the suite runs it, keeps the budget on every episode; the same
    check flags a policy run with the constraint lifted (the check can fail)."""
    bench = get_family(family).benchmark
    scenario_id = _quick_id(family)
    entries = [e for e, cls in _entries(family) if cls != "privileged"]
    frame, _, skipped = evaluate(scenario_id, entries, bench.eval_seeds[:2], record=False)
    assert not skipped and len(frame) == 2 * len(entries)
    kept = [bench.budget_kept(row) for row in frame.to_dict("records")]
    assert all(kept), frame.loc[[not k for k in kept], ["policy", "seed", *bench.budget[:2]]]
    lifted, _, _ = evaluate(scenario_id, [e for e in entries if e.label == "fifo"], bench.eval_seeds[:1],
                            {"power_constraint": "none"}, record=False)
    assert not bench.budget_kept(lifted.to_dict("records")[0])


def test_privileged_flags_follow_the_convention():
    """A privileged policy sees what a deployed system could not: PowerFlow's oracle (true profiles) and ETF's
    best-response (the fixed scheduler and the tenant's profile table from the simulator). epoch-max-fs reads only
    Algorithm 1's own inputs and is deployable; EMRF's policies read the observation."""
    flags = {f: {n: bool(baselines.make(n, family=f).privileged) for n in baselines.available(f)}
             for f in ("etf", "emrf", "powerflow")}
    assert {n for n, p in flags["powerflow"].items() if p} == {"powerflow-oracle"}
    assert {n for n, p in flags["etf"].items() if p} == {"best-response"}
    assert not any(flags["emrf"].values())


def test_paper_conditions_stay_with_the_reproductions():
    """The paper's evaluation conditions (baselines unconstrained on true profiles, no pre-run; §6.1) are the
    policies' paper_config, applied by simulate(), not by the leaderboard."""
    from joulegym.baselines.powerflow import paper_env_config

    afs = baselines.make("afs", family="powerflow")
    assert afs.env_config == {"placement": "packed"}
    assert paper_env_config(afs) == {"profiling": False, "predictor": "oracle", "power_constraint": "none",
                                     "placement": "packed"}
    assert paper_env_config(baselines.make("powerflow", family="powerflow"))["profiling"] is True


# --- classes ----------------------------------------------------------------------------------------------------
BENCH = {"kind": "ETF", "scenarios": ("s",), "generalisation": "s", "metric": "m", "metric_terms": {"m": 1.0},
         "higher_is_better": True, "heuristics": ("h1", "h2"), "baselines": ("b0",), "zero": "b0",
         "best_heuristic": {"s": "h1"}}


def test_policy_class_reads_the_flag_first_then_the_record():
    bench = Benchmark(**BENCH)
    assert bench.policy_class("h1", privileged=False) == "heuristic"
    assert bench.policy_class("b0", privileged=False) == "baseline"
    assert bench.policy_class("random", privileged=False) == "baseline"
    assert bench.policy_class("h1", privileged=True) == "privileged"
    assert bench.policy_class("oracle", privileged=True) == "privileged"
    with pytest.raises(ValueError, match="neither a heuristic nor a baseline"):
        bench.policy_class("unlisted", privileged=False)
    with pytest.raises(ValueError, match=r"sets \['predictor'\]"):
        Benchmark(**{**BENCH, "policy_settings": ("placement",)}).check_env_config(
            "x", {"placement": "packed", "predictor": "oracle"})
    Benchmark(**{**BENCH, "policy_settings": ("placement",)}).check_env_config("x", {"placement": "packed"})


# --- the anchors and the normalised score -------------------------------------------------------------------------
def _episodes(values: dict[str, list[float]], scenario: str = "s", cls: dict[str, str] | None = None,
              runs: int = 1) -> pd.DataFrame:
    rows = []
    for policy, metric in values.items():
        for run in range(runs if policy.startswith("agent") else 1):
            for seed, value in enumerate(metric):
                rows.append({"family": "f", "scenario": scenario, "policy": policy, "seed": 10_000 + seed,
                             "run": run if policy.startswith("agent") else -1, "metric": value + 0.01 * run,
                             "class": (cls or {}).get(policy, "agent" if policy.startswith("agent") else "baseline")})
    return pd.DataFrame(rows)


def test_normalised_scores_are_paired_by_seed_and_the_anchors_score_0_and_1():
    """Seeds differ a lot (the instance), the anchors' gap is 1.0 on average: a policy that is the zero plus half
    the gap on every seed scores exactly 0.5 on every seed, the zero 0 on every seed and the one 1 on average."""
    zero = [1.0, 5.0, 9.0, 2.0]
    episodes = _episodes({"b0": zero, "h1": [z + g for z, g in zip(zero, [0.5, 1.5, 1.0, 1.0])],
                          "x": [z + 0.5 for z in zero]}, cls={"h1": "heuristic"})
    scored, anchors, notes = scoring.normalise(episodes, Benchmark(**BENCH), ("s",))
    by = scored.groupby("policy")["normalised"]
    assert np.allclose(by.get_group("b0"), 0.0) and np.allclose(by.get_group("x"), 0.5)
    assert by.get_group("h1").mean() == pytest.approx(1.0) and notes == []
    assert anchors.iloc[0][["zero", "one", "gap"]].tolist() == ["b0", "h1", pytest.approx(1.0)]


def test_lower_is_better_and_an_inverted_pair_of_anchors():
    """Lower is better: a better policy still scores higher. Where the simple baseline beats the heuristic, the
    heuristic scores -1 and the page says so."""
    bench = Benchmark(**{**BENCH, "higher_is_better": False})
    scored, _, notes = scoring.normalise(_episodes({"b0": [4.0, 4.0], "h1": [2.0, 2.0], "x": [1.0, 1.0]}), bench,
                                         ("s",))
    assert scored.groupby("policy")["normalised"].mean().to_dict() == {"b0": 0.0, "h1": 1.0, "x": 1.5}
    scored, anchors, notes = scoring.normalise(_episodes({"b0": [2.0, 2.0], "h1": [4.0, 4.0], "x": [1.0, 1.0]}),
                                               bench, ("s",))
    assert scored.groupby("policy")["normalised"].mean().to_dict() == {"b0": 0.0, "h1": -1.0, "x": 0.5}
    assert not anchors.iloc[0]["one_beats_zero"] and "beats the best published heuristic 'h1'" in notes[0]


@pytest.mark.parametrize(("values", "match"), [
    ({"b0": [1.0, 2.0], "h1": [1.0, 2.0]}, "score the same mean"),
    ({"b0": [1.0, 2.0], "x": [3.0, 3.0]}, "anchor policy 'h1' did not run"),
    ({"b0": [1.0], "h1": [2.0, 3.0]}, r"has no episode on seeds \[10001\]"),
])
def test_the_normalisation_refuses_what_it_cannot_score(values, match):
    with pytest.raises(ValueError, match=match):
        scoring.normalise(_episodes(values), Benchmark(**BENCH), ("s",))


# --- paired comparisons -------------------------------------------------------------------------------------------
def test_paired_difference_counts_and_ci_are_scipys():
    episodes = _episodes({"h1": [1.0, 2.0, 3.0, 4.0, 5.0], "agent": [1.5, 2.0, 2.0, 4.5, 6.0]})
    found = scoring.paired(episodes, "s", "agent", "h1", "metric", higher_is_better=True)
    diffs = np.array([0.5, 0.0, -1.0, 0.5, 1.0])
    assert (found["wins"], found["ties"], found["losses"], found["pairs"]) == (3, 1, 1, 5)
    assert found["diff_mean"] == pytest.approx(diffs.mean())
    expected = bootstrap((diffs,), np.mean, n_resamples=stats.BOOTSTRAP_REPS, method="percentile",
                         rng=np.random.default_rng(0), vectorized=True).confidence_interval
    assert (found["diff_ci_low"], found["diff_ci_high"]) == pytest.approx((expected.low, expected.high))
    lower = scoring.paired(episodes, "s", "agent", "h1", "metric", higher_is_better=False)
    assert (lower["wins"], lower["losses"], lower["diff_mean"]) == (1, 3, pytest.approx(-diffs.mean()))
    assert scoring.mean_ci(np.array([0.2, 0.2, 0.2])) == (0.2, 0.2)
    assert all(np.isnan(scoring.mean_ci(np.array([0.2]))))


def test_an_agent_counts_every_training_run_against_the_reference_on_the_same_seed():
    episodes = _episodes({"h1": [1.0, 2.0, 3.0], "agent": [1.0, 2.5, 3.0]}, runs=3)  # run r adds 0.01 r
    found = scoring.paired(episodes, "s", "agent", "h1", "metric", higher_is_better=True)
    assert found["pairs"] == 9 and (found["wins"], found["ties"], found["losses"]) == (7, 2, 0)


def _two_scenarios() -> pd.DataFrame:
    a = _episodes({"b0": [0.0, 0.0, 0.0], "h1": [1.0, 1.0, 1.0], "agent": [1.2, 0.8, 1.5], "part": [0.5] * 3},
                  "a", {"h1": "heuristic"})
    b = _episodes({"b0": [1.0, 2.0, 3.0], "h1": [3.0, 4.0, 5.0], "agent": [3.0, 5.0, 4.0]}, "b", {"h1": "heuristic"})
    bench = Benchmark(**{**BENCH, "scenarios": ("a", "b"), "generalisation": "a", "best_heuristic": {"a": "h1",
                                                                                                    "b": "h1"}})
    scored, _, _ = scoring.normalise(pd.concat([a, b], ignore_index=True), bench, ("a", "b"))
    return scored, bench


def test_the_aggregate_ranks_only_policies_on_every_scenario_and_puts_the_anchors_at_0_and_1():
    scored, bench = _two_scenarios()
    table, partial = suite.aggregate_table(scored, bench, ("a", "b"))
    assert partial == {"part": ["a"]} and "part" not in set(table["policy"])
    row = table.set_index("policy")
    assert row.loc["b0", "score_mean"] == pytest.approx(0.0, abs=1e-12)
    assert row.loc["h1", "score_mean"] == pytest.approx(1.0, abs=1e-12)
    # agent: a: (0.2, -0.2, 0.5) / gap 1; b: (0, 1, -1) / gap 2: per-scenario means 0.1667 and 0
    assert row.loc["agent", "vs_best_diff_mean"] == pytest.approx((0.5 / 3 + 0.0) / 2)
    assert (row.loc["agent", "vs_best_wins"], row.loc["agent", "vs_best_ties"],
            row.loc["agent", "vs_best_losses"]) == (3, 1, 2)
    assert row.loc["agent", "vs_best_poi"] == pytest.approx((2 / 3 + 0.5) / 2)
    low, high = row.loc["agent", ["vs_best_diff_ci_low", "vs_best_diff_ci_high"]]
    assert low <= row.loc["agent", "vs_best_diff_mean"] <= high


def test_the_best_non_learned_policy_is_a_heuristic_or_baseline():
    scored, _ = _two_scenarios()
    assert scoring.best_non_learned(scored, "a", higher_is_better=True) == "h1"  # the agent is better but learned
    assert scoring.best_non_learned(scored, "a", higher_is_better=False) == "b0"
