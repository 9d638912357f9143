"""Agents across a family's scenarios and the scenarios outside the normalised aggregate (docs/leaderboard.md,
"Generalisation agents" and "Scenarios outside the aggregate"): the spaces recorded with a shipped agent decide
where it plays (held-in on its training scenario, a held-out instance elsewhere), shipping refuses runs that cannot
be one agent, a declared scenario is left out of the mean normalised score but still counted, and the seeds that
trained, selected and tested an agent never meet."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import joulegym  # noqa: F401  (registers the ids)
from joulegym.core.benchmark import Benchmark
from joulegym.core.family import env_id, get_family
from joulegym.evaluation import page, scoring, suite, zoo

BENCH = {"kind": "ETF", "scenarios": ("a", "b"), "generalisation": "b", "metric": "F_S",
         "metric_terms": {"system_fairness": 1.0}, "higher_is_better": True, "best_heuristic": {"a": "h1", "b": "h1"},
         "baselines": ("b0",), "heuristics": ("h1",), "zero": "b0"}
ETF = get_family("etf")
POWERFLOW = get_family("powerflow")


# --- the benchmark's not_aggregated -------------------------------------------------------------------------------
@pytest.mark.parametrize(("change", "match"), [
    ({"not_aggregated": {"z": "why"}}, r"names \['z'\], which are not among scenarios"),
    ({"not_aggregated": {"a": "  "}}, "needs its reason"),
    ({"not_aggregated": {"a": "x", "b": "y"}}, "leaves none of scenarios"),
    ({"not_aggregated": {"a": "x"}, "quick_scenarios": ("a",)}, "leaves none of quick_scenarios"),
])
def test_not_aggregated_is_checked(change, match):
    with pytest.raises(ValueError, match=match):
        Benchmark(**{**BENCH, **change})


def test_emrf_leaves_apu_random_out_with_its_reason():
    bench = get_family("emrf").benchmark
    assert set(bench.not_aggregated) == {"apu-random"} and "gap" in bench.not_aggregated["apu-random"]
    assert bench.generalisation == "apu-random" and "apu-random" in bench.scenarios  # still run and required


def test_emrf_apu_random_gap_is_what_its_reason_says():
    """The reason's numbers, measured on the held-out seeds: the anchors' gap is 0.080 of E - 50 V, and in units
    of each scenario's gap random scores -66 on apu-random against -0.8 to -1.7 on the four paper scenarios."""
    from joulegym.evaluation.runner import PolicyEntry, evaluate

    descriptor = get_family("emrf")
    bench = descriptor.benchmark
    random_scores = {}
    for scenario in bench.scenarios:
        names = [bench.zero[scenario], bench.best_heuristic[scenario], "random"]
        frame, _, _ = evaluate(env_id(bench.kind, scenario), [PolicyEntry(n, "reference", n, family="emrf")
                                                               for n in names], list(bench.eval_seeds), record=False)
        by_seed = frame.assign(metric=[bench.value(r) for r in frame.to_dict("records")]).pivot_table(
            index="seed", columns="policy", values="metric")
        gap = by_seed[names[1]] - by_seed[names[0]]
        random_scores[scenario] = float((by_seed["random"] - by_seed[names[0]]).mean() / gap.mean())
        if scenario == "apu-random":
            assert round(gap.mean(), 3) == 0.080 and round(gap.min(), 2) == 0.0 and round(gap.max(), 2) == 0.23
    assert round(random_scores.pop("apu-random")) == -66
    assert all(-1.75 < v < -0.75 for v in random_scores.values()), random_scores


# --- scoring with a scenario outside the aggregate ------------------------------------------------------------------
def _episodes(scenario: str, values: dict[str, list[float]]) -> list[dict]:
    cls = {"b0": "baseline", "h1": "heuristic"}
    return [{"family": "f", "scenario": scenario, "policy": p, "seed": 10_000 + k, "run": 0 if p == "agent" else -1,
             "metric": v, "class": cls.get(p, "agent")} for p, metric in values.items() for k, v in enumerate(metric)]


def _scored(not_aggregated: dict[str, str]) -> tuple[pd.DataFrame, pd.DataFrame, list[str], Benchmark]:
    """Scenario a: gap 1, the agent +0.5 on every seed. Scenario b: gap 0.01 (a tiny unit), the agent 0.1 behind
    the heuristic on every seed: -10 in b's units."""
    rows = _episodes("a", {"b0": [0.0, 0.0, 0.0], "h1": [1.0, 1.0, 1.0], "agent": [1.5, 1.5, 1.5]})
    rows += _episodes("b", {"b0": [0.5, 0.5, 0.5], "h1": [0.51, 0.51, 0.51], "agent": [0.41, 0.41, 0.41]})
    bench = Benchmark(**{**BENCH, "not_aggregated": not_aggregated})
    episodes, anchors, notes = scoring.normalise(pd.DataFrame(rows), bench, ("a", "b"))
    return episodes, anchors, notes, bench


def test_a_scenario_outside_the_aggregate_is_counted_but_not_averaged():
    episodes, anchors, notes, bench = _scored({"b": "its gap measures something else"})
    assert scoring.unit_scenarios(anchors) == ["a"] and list(anchors["aggregated"]) == [True, False]
    assert any(n.startswith("b: not in the family's normalised aggregate") and "something else" in n for n in notes)
    table, partial = suite.aggregate_table(episodes, bench, ("a", "b"), scoring.unit_scenarios(anchors))
    agent = table.set_index("policy").loc["agent"]
    assert partial == {} and agent["scenarios"] == 2 and agent["aggregated"] == 1
    assert agent["score_mean"] == pytest.approx(1.5)  # a only; b's -9 is left out
    assert agent["vs_best_diff_mean"] == pytest.approx(0.5)  # normalised, over a only
    # the counts need no unit: every paired run of both scenarios (3 wins on a, 3 losses on b)
    assert (agent["vs_best_wins"], agent["vs_best_ties"], agent["vs_best_losses"]) == (3, 0, 3)
    assert agent["vs_best_poi"] == pytest.approx(0.5)
    # without the declaration the tiny unit dominates the mean
    episodes, anchors, _, bench = _scored({})
    table, _ = suite.aggregate_table(episodes, bench, ("a", "b"), scoring.unit_scenarios(anchors))
    assert table.set_index("policy").loc["agent", "score_mean"] == pytest.approx((1.5 - 9.0) / 2)


def test_a_poorly_resolved_anchor_gap_gets_a_note():
    rows = _episodes("a", {"b0": [0.0] * 4, "h1": [1.0] * 4})
    rows += _episodes("b", {"b0": [0.0] * 4, "h1": [0.0, 0.0, 0.0, 4.0]})  # gap 1 [0, 3]: one seed carries it
    _, anchors, notes, _ = _scored({})  # a well-resolved pair first: no note
    assert not any("resolved" in n for n in notes)
    _, anchors, notes = scoring.normalise(pd.DataFrame(rows), Benchmark(**BENCH), ("a", "b"))
    assert anchors.set_index("scenario").loc["b", "gap_ci_low"] == pytest.approx(0.0)
    assert [n for n in notes if "resolved to less than a factor of two" in n] == [
        "b: the anchor gap is resolved to less than a factor of two (1 [0, 3], paired 95 % CI over the seeds): its "
        "normalised scores carry that uncertainty"]


# --- spaces and which agent plays where -----------------------------------------------------------------------------
def _provenance(family: str, scenario: str, algo: str, seed: int, **change) -> dict:
    bench = get_family(family).benchmark
    scenario_id = env_id(bench.kind, scenario)
    data = {"format": 2, "family": family, "scenario": scenario, "trained_on": scenario, "env_id": scenario_id,
            "env_kwargs": {}, "algo": algo, "seed": seed, "timesteps": 0, "wall_time_s": 0.0, "n_envs": 1,
            "command": f"test fixture: an untrained policy (seed {seed})", "commit": "none", "cpu_seconds": 2.0,
            "train_cpu_seconds": 1.0, "cpu_budget_s": 1.0, "hyperparams": {"n_steps": 64, "batch_size": 64},
            "validation": {"seeds": list(bench.validation_seeds), "metric": bench.metric, "curve": [[1.0, 64, 0.3]],
                           "reference": {}},
            "spaces": {k: v for k, v in zoo.scenario_spaces(scenario_id).items() if k != zoo.AGENT_JSON_SPACES},
            "score": {"metric": bench.metric, "mean": None, "eval_seeds": []}}
    return {**data, **change}


def _weights(family: str, scenario: str, algo: str, seed: int, directory: Path) -> Path:
    pytest.importorskip("stable_baselines3", reason="needs the train extra")
    import gymnasium as gym

    from joulegym.agents.algos import make_model
    from joulegym.agents.weights import save_weights

    bench = get_family(family).benchmark
    model = make_model(algo, gym.make(env_id(bench.kind, scenario)), seed=seed,
                       hyperparams={"n_steps": 64, "batch_size": 64})
    return save_weights(model, algo, directory)


def _ship(root: Path, family: str, scenario: str, algo: str, seed: int, **change) -> Path:
    folder = _weights(family, scenario, algo, seed, root / family / scenario / algo / f"seed{seed}")
    (folder / "provenance.json").write_text(json.dumps(_provenance(family, scenario, algo, seed, **change)))
    return folder


def test_describe_space_tells_spaces_apart():
    from gymnasium import spaces

    box = spaces.Box(0.0, 1.0, (3,), np.float32)
    assert zoo.describe_space(box) == zoo.describe_space(spaces.Box(0.0, 1.0, (3,), np.float32))
    assert zoo.describe_space(box) != zoo.describe_space(spaces.Box(0.0, 2.0, (3,), np.float32))  # bounds
    assert zoo.describe_space(box) != zoo.describe_space(spaces.Box(0.0, 1.0, (4,), np.float32))  # shape
    assert zoo.describe_space(spaces.MultiDiscrete([5, 17])) != zoo.describe_space(spaces.MultiDiscrete([7, 17]))
    assert zoo.describe_space(spaces.Discrete(8)) == {"type": "Discrete", "n": 8, "start": 0}


def test_an_agent_plays_every_scenario_with_its_spaces_and_a_mismatch_is_a_note(tmp_path):
    """ETF's five scenarios share one pair of spaces: the agent trained on the generalisation scenario plays all of
    them; PowerFlow's tiny and small100 differ: an agent trained on one is noted, not run, on the other."""
    _ship(tmp_path, "etf", "tx2-fig6-random", "ppo", 0)
    _ship(tmp_path, "powerflow", "tiny", "maskable_ppo", 0)
    shipped = suite.family_agents(tmp_path, ETF)
    plays, notes = suite.assign_agents(ETF, shipped, ETF.benchmark.scenarios)
    assert notes == [] and all([a.trained_on for a in plays[s]] == ["tx2-fig6-random"] for s in plays)
    [agent] = suite.family_agents(tmp_path, POWERFLOW)
    plays, notes = suite.assign_agents(POWERFLOW, [agent], ("small100", "tiny"))
    assert plays == {"small100": [], "tiny": [agent]}
    [note] = notes
    assert note.startswith("small100: maskable_ppo (trained on tiny) is not evaluated here: its spaces differ: "
                           "observation Box (430,) float32 vs the scenario's Box (846,) float32")
    assert len(note) < 600  # the MultiDiscrete is summarised, not printed in full


def test_of_two_agents_of_one_algorithm_the_scenarios_own_then_the_generalisation_one_plays(tmp_path):
    _ship(tmp_path, "etf", "tx2-fig5", "ppo", 0)
    _ship(tmp_path, "etf", "tx2-fig6-random", "ppo", 0)
    plays, notes = suite.assign_agents(ETF, suite.family_agents(tmp_path, ETF), ETF.benchmark.scenarios)
    assert {s: [a.trained_on for a in found] for s, found in plays.items()} == {
        "tx2-fig5": ["tx2-fig5"], "tx2-fig6": ["tx2-fig6-random"], "a10g-fig8": ["tx2-fig6-random"],
        "tx2-fig9-dynamic": ["tx2-fig6-random"], "tx2-fig6-random": ["tx2-fig6-random"]}
    assert len(notes) == 5 and "tx2-fig5: ppo (trained on tx2-fig6-random) also fits; ppo (trained on tx2-fig5)" \
        in notes[0]
    assert suite.split_of("tx2-fig5", "tx2-fig5") == "held-in"
    assert suite.split_of("tx2-fig5", "tx2-fig6") == "held-out instance"


def test_an_agent_whose_recorded_spaces_are_not_the_scenarios_plays_nowhere(tmp_path):
    spaces = _provenance("etf", "tx2-fig6-random", "ppo", 0)["spaces"]
    changed = {**spaces, "observation_names_sha256": "0" * 64}  # same shape, other features in it
    _ship(tmp_path, "etf", "tx2-fig6-random", "ppo", 0, spaces=changed)
    plays, notes = suite.assign_agents(ETF, suite.family_agents(tmp_path, ETF), ("tx2-fig5",))
    assert plays == {"tx2-fig5": []} and "observation_names_sha256" in notes[0]


@pytest.mark.parametrize(("change", "match"), [
    ({"trained_on": "tx2-fig5"}, "expected 'tx2-fig6-random' .an agent lies in the directory of the scenario"),
    ({"spaces": {"observation": {}}}, "spaces must be a JSON object with 'observation' and 'action'"),
])
def test_bad_generalisation_provenance_is_rejected(tmp_path, change, match):
    _ship(tmp_path, "etf", "tx2-fig6-random", "ppo", 0, **change)
    with pytest.raises(ValueError, match=match):
        suite.family_agents(tmp_path, ETF)


def test_runs_of_one_agent_must_record_one_pair_of_spaces(tmp_path):
    _ship(tmp_path, "etf", "tx2-fig6-random", "ppo", 0)
    spaces = _provenance("etf", "tx2-fig6-random", "ppo", 1)["spaces"]
    _ship(tmp_path, "etf", "tx2-fig6-random", "ppo", 1, spaces={**spaces, "observation_names_sha256": "x"})
    with pytest.raises(ValueError, match=r"runs \['seed1'\] record other spaces than seed0"):
        suite.family_agents(tmp_path, ETF)


# --- shipping -------------------------------------------------------------------------------------------------------
def test_ship_run_records_spaces_and_refuses_what_cannot_join(tmp_path):
    run = _weights("etf", "tx2-fig6-random", "ppo", 0, tmp_path / "run")
    record = _provenance("etf", "tx2-fig6-random", "ppo", 0)
    record.pop("spaces"), record.pop("trained_on"), record.pop("format")
    target = zoo.ship_run(run, dict(record), tmp_path / "zoo")  # a record predating spaces: filled from the env
    shipped = json.loads((target / "provenance.json").read_text())
    assert shipped["trained_on"] == "tx2-fig6-random" and shipped["spaces"] == _provenance(
        "etf", "tx2-fig6-random", "ppo", 0)["spaces"]
    with pytest.raises(ValueError, match="trained_on='tx2-fig5' but scenario='tx2-fig6-random'"):
        zoo.ship_run(run, {**record, "trained_on": "tx2-fig5"}, tmp_path / "zoo")
    with pytest.raises(ValueError, match=r"seed0 differs from the run shipped as seed1 in \['hyperparams'\]"):
        zoo.ship_run(run, {**record, "seed": 1, "hyperparams": {"n_steps": 128}}, tmp_path / "zoo")
    zoo.ship_run(run, {**record, "seed": 1}, tmp_path / "zoo")  # the same configuration joins
    other = _weights("powerflow", "tiny", "maskable_ppo", 0, tmp_path / "pf")
    with pytest.raises(ValueError, match=r"the agent's spaces .* are not those of its training env"):
        zoo.ship_run(other, dict(record), tmp_path / "zoo2")
    assert not (tmp_path / "zoo2").exists()  # checked before anything is written
    legacy = tmp_path / "zoo3" / "etf" / "tx2-fig6-random" / "ppo"
    _weights("etf", "tx2-fig6-random", "ppo", 0, legacy)
    with pytest.raises(ValueError, match="holds a format-1 agent in place"):
        zoo.ship_run(run, dict(record), tmp_path / "zoo3")


# --- the seeds behind the numbers -----------------------------------------------------------------------------------
def test_training_validation_and_test_seeds_are_disjoint(tmp_path):
    _ship(tmp_path, "etf", "tx2-fig6-random", "ppo", 0, n_envs=4)
    _ship(tmp_path, "etf", "tx2-fig6-random", "ppo", 7)
    shipped = suite.family_agents(tmp_path, ETF)
    sets = suite.seed_split(shipped, ETF.benchmark.eval_seeds)
    assert sets == {"training": [0, 1, 2, 3, 7], "validation": list(range(9000, 9010)),
                    "test": list(range(10_000, 10_010))}
    assert not (set(sets["training"]) & set(sets["validation"]) or set(sets["training"]) & set(sets["test"])
                or set(sets["validation"]) & set(sets["test"]))
    with pytest.raises(ValueError, match=r"seed0/provenance.json: its validation seeds and the test seeds share "
                                         r"\[9005\]"):
        suite.seed_split(shipped, [9005, 10_000])
    late = zoo.ZooRun(tmp_path, {**_provenance("etf", "tx2-fig6-random", "ppo", 8998), "n_envs": 4})
    with pytest.raises(ValueError, match=r"its training seeds and the validation seeds share \[9000, 9001\]"):
        suite.seed_split([zoo.ZooAgent("etf", "tx2-fig6-random", "ppo", (late,))], ETF.benchmark.eval_seeds)


def test_the_page_states_the_seed_sets():
    from types import SimpleNamespace

    result = SimpleNamespace(benchmark=ETF.benchmark, seed_sets={
        "training": [0, 1, 2], "validation": list(range(9000, 9010)), "test": [10_000, 10_001]})
    assert page._seed_line(result) == (
        "Seeds: training 0-2 (the shipped runs' training envs); validation 9000-9009 (the shipped runs' model "
        "selection); test 10000-10001 (2 held-out seeds, every number on this page); no seed is in two of these sets "
        "(checked when the page is made).")
    result.seed_sets = {"training": [], "validation": [], "test": [10_000, 10_001]}
    assert "training none (no agent shipped); validation none recorded (the protocol's are 9000-9009)" in \
        page._seed_line(result)
