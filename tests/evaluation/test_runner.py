"""joulegym.evaluation.runner: parsing, the shared loop, summaries and the normalised score."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import joulegym  # noqa: F401
from joulegym import baselines
from joulegym.evaluation.runner import (
    EVAL_SEED_BASE,
    bootstrap_ci,
    eval_seeds,
    evaluate,
    iqm,
    markdown_table,
    normalised_scores,
    parse_policies,
    run_episode,
    summarise,
)

ENV = "joulegym/ETF-tx2-fig5-v0"


def test_parse_policies_forms():
    env = gym.make(ENV)
    entries = parse_policies("etf,etf-fixed-phi:phi=0.5,ppo:runs/x/model.zip", env)
    assert [e.kind for e in entries] == ["reference", "reference", "agent"]
    assert entries[1].kwargs == {"phi": 0.5} and entries[1].label == "etf-fixed-phi(phi=0.5)"
    assert entries[2].name == "ppo" and entries[2].path == "runs/x/model.zip"
    assert {e.name for e in parse_policies("all", env)} == set(baselines.applicable(env))
    scoped = parse_policies("etf/tf,random", env)  # FAMILY/NAME, the family of the env by default
    assert [(e.name, e.family) for e in scoped] == [("tf", "etf"), ("random", "etf")]
    assert scoped[0].build().name == "tf"


@pytest.mark.parametrize(("text", "match"), [("nope", "unknown"), ("etf,etf", "twice"), ("", "at least one"),
                                             ("etf-fixed-phi:phi", "key=value"), ("emrf/tf", "unknown for family")])
def test_parse_policies_errors(text, match):
    with pytest.raises(ValueError, match=match):
        parse_policies(text, gym.make(ENV))


def test_eval_seeds_are_held_out():
    assert eval_seeds(3) == [EVAL_SEED_BASE, EVAL_SEED_BASE + 1, EVAL_SEED_BASE + 2]
    with pytest.raises(ValueError):
        eval_seeds(0)


def test_run_episode_row_is_the_recorded_episode():
    env = gym.make(ENV)
    row, trace = run_episode(env, baselines.make("etf"), seed=7, record=True, env_id=ENV)
    assert row["return"] == pytest.approx(sum(trace.rewards)) and row["length"] == len(trace.rewards) == 60
    assert row["system_fairness"] == trace.infos[-1]["metrics"]["system_fairness"] == trace.metrics["system_fairness"]
    again, none = run_episode(env, baselines.make("etf"), seed=7, env_id=ENV)
    assert none is None and again == row  # same seed, same episode


def test_summary_score_and_table():
    episodes, traces, skipped = evaluate(ENV, parse_policies("etf,tf,random", gym.make(ENV)), eval_seeds(2))
    assert not skipped and set(traces) == {"etf", "tf", "random"}
    summary = summarise(episodes, ("system_fairness",))
    scores = dict(zip(summary["policy"], summary["score"], strict=True))
    assert scores["random"] == pytest.approx(0.0)
    assert max(scores["etf"], scores["tf"]) == pytest.approx(1.0)
    table = markdown_table(summary, ["system_fairness"])
    assert table.splitlines()[2].startswith("| etf")  # ETF has the best return on its own figure


def test_normalised_score_needs_random_and_a_reference():
    frame = pd.DataFrame({"policy": ["ppo", "etf"], "kind": ["agent", "reference"], "return_mean": [1.0, 2.0]})
    assert np.isnan(normalised_scores(frame)).all()


def test_a_privileged_policy_is_never_the_normaliser():
    """PowerFlow's oracle reads the true profiles: its rows say so and the best deployable reference is the 1."""
    from joulegym.evaluation.runner import PolicyEntry, evaluate

    entries = [PolicyEntry(n, "reference", n, family="powerflow") for n in ("powerflow-oracle", "fifo")]
    frame, _, _ = evaluate("joulegym/PowerFlow-tiny-v0", entries, [10_000], record=False)
    assert dict(zip(frame["policy"], frame["kind"], strict=True)) == {"powerflow-oracle": "privileged",
                                                                      "fifo": "reference"}
    summary = pd.DataFrame({"policy": ["random", "fifo", "powerflow-oracle"],
                            "kind": ["reference", "reference", "privileged"], "return_mean": [0.0, 1.0, 3.0]})
    assert normalised_scores(summary).tolist() == [0.0, 1.0, 3.0]


def test_iqm_and_bootstrap():
    values = np.array([0.0, 1.0, 2.0, 3.0, 100.0, 4.0, 5.0, 6.0])
    assert iqm(values) == pytest.approx(np.mean([2.0, 3.0, 4.0, 5.0]))
    low, high = bootstrap_ci(values)
    assert low < values.mean() < high
    assert bootstrap_ci(values) == (low, high)  # deterministic
    assert bootstrap_ci(np.array([2.0, 2.0])) == (2.0, 2.0)


def test_an_agent_acts_on_one_torch_thread_and_the_count_is_restored(monkeypatch):
    """``evaluate`` runs an agent's episodes with torch on one intra-op thread (a forward pass of one observation
    gains nothing from more, whose idle workers spin) and restores the caller's count after."""
    torch = pytest.importorskip("torch")
    from joulegym.agents import SB3Policy
    from joulegym.core.family import get_family
    from joulegym.evaluation.suite import default_zoo, family_agents

    entry = next(e for agent in family_agents(default_zoo(), get_family("powerflow")) for _seed, e in agent.entries())
    seen: list[int] = []
    act = SB3Policy.act
    monkeypatch.setattr(SB3Policy, "act", lambda self, obs, info: seen.append(torch.get_num_threads())
                        or act(self, obs, info))
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        episodes, _, _ = evaluate("joulegym/PowerFlow-tiny-v0", [entry], [10000], record=False)
        assert len(episodes) == 1 and seen and set(seen) == {1} and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
