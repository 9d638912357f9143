"""``evaluate.py --suite``: the benchmarks on the descriptors, the zoo, and the quick run end to end (the verdict's
rules, classes, anchors and paired comparisons: tests/evaluation/test_verdict.py)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import joulegym  # noqa: F401  (registers the ids)
from joulegym import baselines
from joulegym.core.benchmark import DEFAULT_EVAL_SEEDS, TRAINING_SEED_LIMIT, Benchmark
from joulegym.core.family import env_id, families, get_family
from joulegym.evaluation import agent_verdict, suite
from joulegym.evaluation.cli import main
from joulegym.evaluation.page import FRONTS_LINK

ETF_QUICK = get_family("etf").benchmark.quick_scenarios
BENCH = {"kind": "ETF", "scenarios": ("a", "b"), "generalisation": "b", "metric": "F_S",
         "metric_terms": {"system_fairness": 1.0}, "higher_is_better": True, "best_heuristic": {"a": "etf", "b": "ef"},
         "baselines": ("tf",), "zero": "tf"}


# --- the benchmark definitions ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("change", "match"), [
    ({"scenarios": ()}, "scenarios"),
    ({"generalisation": "c"}, "generalisation"),
    ({"best_heuristic": {"a": "etf"}}, "best_heuristic"),
    ({"heuristics": ("tf",)}, "among heuristics"),
    ({"metric_terms": {}}, "metric_terms"),
    ({"metric_terms": {"x": float("nan")}}, "finite"),
    ({"eval_seeds": tuple(range(10_000, 10_009))}, ">= 10 distinct"),
    ({"eval_seeds": tuple(range(5, 15))}, "held out"),
    ({"training_budget_s": 0.0}, "training_budget_s"),
    ({"quick_scenarios": ("z",)}, "quick_scenarios"),
    ({"quick_seeds": 0}, "quick_seeds"),
    ({"zero": {"a": "tf"}}, "zero must name one policy per scenario"),
    ({"zero": "etf"}, "must be among baselines"),
    ({"heuristics": ("etf", "ef", "tf")}, "both heuristics and baselines"),
    ({"baselines": ("etf",), "zero": "etf"}, "the zero and the one anchor are the same"),
    ({"validation_seeds": tuple(range(10_000, 10_010))}, "validation_seeds"),
    ({"validation_seeds": tuple(range(9_000, 9_005))}, "validation_seeds"),
    ({"budget": ("used", "", 0.0)}, "budget"),
    ({"budget": ("used", "limit", 1.5)}, "budget"),
])
def test_benchmark_rejects_bad_fields(change, match):
    with pytest.raises(ValueError, match=match):
        Benchmark(**{**BENCH, **change})


def test_benchmark_defaults_and_metric():
    bench = Benchmark(**BENCH)
    assert bench.eval_seeds == DEFAULT_EVAL_SEEDS and len(bench.eval_seeds) >= 10
    assert min(bench.eval_seeds) >= TRAINING_SEED_LIMIT and bench.training_budget_s == 3600.0
    assert bench.quick_scenarios == ("a",) and bench.seeds(quick=True) == DEFAULT_EVAL_SEEDS[:2]
    assert bench.validation_seeds == tuple(range(9000, 9010)) and bench.baselines == ("tf", "random")
    assert dict(bench.zero) == {"a": "tf", "b": "tf"} and bench.budget is None and bench.budget_kept({})
    floor = Benchmark(**{**BENCH, "metric_terms": {"mean_efficiency": 1.0, "floor_violation": -50.0}})
    assert floor.value({"mean_efficiency": 0.6, "floor_violation": 0.002, "other": 9.0}) == pytest.approx(0.5)
    assert floor.describe_metric() == "F_S = mean_efficiency - 50 floor_violation (higher is better)"
    with pytest.raises(ValueError, match="floor_violation"):
        floor.value({"mean_efficiency": 0.6})


def test_register_family_checks_the_benchmark_against_the_family():
    etf = get_family("etf")
    with pytest.raises(ValueError, match="kind='Nope'"):
        Benchmark(**{**BENCH, "kind": "Nope"}).check_family("etf", tuple(k.name for k in etf.kinds), etf.scenarios)
    with pytest.raises(ValueError, match=r"\['a', 'b'\] are unknown"):
        Benchmark(**BENCH).check_family("etf", tuple(k.name for k in etf.kinds), etf.scenarios)
    fig8 = {**BENCH, "kind": "ETFDVFS", "scenarios": ("a10g-fig8",), "generalisation": "a10g-fig8",
            "best_heuristic": {"a10g-fig8": "etf"}, "zero": "tf"}
    with pytest.raises(ValueError, match="do not apply to kind 'ETFDVFS'"):  # a10g-fig8 has no DVFS kind
        Benchmark(**fig8).check_family("etf", tuple(k.name for k in etf.kinds), etf.scenarios)


@pytest.mark.parametrize("family", ["etf", "emrf", "powerflow", "dream", "qin"])
def test_builtin_benchmarks_name_registered_ids_and_policies(family):
    descriptor = get_family(family)
    bench = descriptor.benchmark
    assert bench is not None and bench.generalisation in bench.scenarios
    version = descriptor.kind(bench.kind).version
    import gymnasium as gym

    for scenario in bench.scenarios:
        assert env_id(bench.kind, scenario, version) in gym.registry
    known = set(baselines.available(family))
    assert set(bench.best_heuristic.values()) <= set(bench.heuristics) <= known
    assert "random" not in bench.heuristics and "random" in bench.baselines
    assert "random" not in bench.zero.values()  # random is a row, never the zero
    missing = sorted(set(bench.baselines) - known)
    if missing:  # a baseline another change is adding (Qin's drain-time)
        pytest.skip(f"{family} baselines {missing} are not registered yet; the suite names them as anchors")
    assert bench.zero_why and bench.one_why and bench.zoo_algo


def test_emrf_floor_lambda_is_the_envs():
    from joulegym.envs.emrf.env import FLOOR_LAMBDA

    assert get_family("emrf").benchmark.metric_terms["floor_violation"] == -FLOOR_LAMBDA


def test_suite_families_selection():
    assert [d.name for d in suite.suite_families(["ETF"])] == ["etf"]
    assert {d.name for d in suite.suite_families([])} == {d.name for d in families() if d.benchmark is not None}
    without = [d.name for d in families() if d.benchmark is None]
    if without:
        with pytest.raises(ValueError, match="no benchmark yet"):
            suite.suite_families([without[0]])
    with pytest.raises(ValueError, match="is unknown"):
        suite.suite_families(["nofamily"])


def test_truncated_episodes_are_noted():
    """A PowerFlow episode cut by the horizon averages JCT over the finished jobs only: the page must say so."""
    episodes = pd.DataFrame({"scenario": ["s", "s", "s"], "policy": ["a", "a", "b"], "truncated": [1.0, 1.0, 0.0]})
    assert suite.truncation_notes(episodes) == [
        "s: 2 episode(s) of a hit the env's horizon (truncated); their metric counts only what finished"]
    assert suite.truncation_notes(episodes.assign(truncated=0.0)) == []


# --- the zoo ----------------------------------------------------------------------------------------------------
def _provenance(seed: int = 0, **change) -> dict:
    """A format-2 provenance of a test fixture (untrained agents: the suite's pickup is under test)."""
    data = {"format": 2, "family": "etf", "scenario": ETF_QUICK[0], "env_id": env_id("ETF", ETF_QUICK[0]),
            "env_kwargs": {}, "algo": "ppo", "seed": seed, "timesteps": 0, "wall_time_s": 0.0,
            "command": f"test fixture: an untrained PPO policy (initialised with seed {seed})", "commit": "none",
            "cpu_seconds": 12.0, "train_cpu_seconds": 10.0, "cpu_budget_s": 10.0,
            "validation": {"seeds": list(range(9000, 9010)), "metric": "F_S", "reference": {"tf": 0.2, "etf": 0.4},
                           "curve": [[1.0, 64, 0.21 + 0.01 * seed], [5.0, 128, 0.25], [10.0, 192, 0.3 - 0.01 * seed]]},
            "score": {"metric": "F_S", "mean": None, "eval_seeds": []}}
    return {**data, **change}


def _agent(directory: Path, seed: int) -> Path:
    pytest.importorskip("stable_baselines3", reason="needs the train extra")
    import gymnasium as gym

    from joulegym.agents.algos import make_model
    from joulegym.agents.weights import save_weights

    model = make_model("ppo", gym.make(env_id("ETF", ETF_QUICK[0])), seed=seed,
                       hyperparams={"n_steps": 64, "batch_size": 64})
    return save_weights(model, "ppo", directory)


@pytest.fixture(scope="module")
def zoo(tmp_path_factory) -> Path:
    """A zoo with one weights-only PPO agent of two training runs (seed0/, seed1/) on the first quick scenario."""
    root = tmp_path_factory.mktemp("zoo")
    for seed in (0, 1):
        agent = _agent(root / "etf" / ETF_QUICK[0] / "ppo" / f"seed{seed}", seed)
        (agent / "provenance.json").write_text(json.dumps(_provenance(seed)))
    return root


@pytest.mark.parametrize(("change", "match"), [
    ({"env_id": "joulegym/ETF-tx2-fig6-v0"}, "env_id="),
    ({"format": 3}, "format=3"),
    ({"drop": "commit"}, "missing keys"),
    ({"drop": "cpu_seconds"}, "missing keys"),
    ({"seed": 1}, "the directory is 'seed0'"),
    ({"seed": 10_000}, "training seed"),
])
def test_bad_zoo_provenance_is_rejected(tmp_path, change, match):
    agent = tmp_path / "etf" / ETF_QUICK[0] / "ppo" / "seed0"
    agent.mkdir(parents=True)
    (agent / "agent.json").write_text(json.dumps({"format": 1, "algo": "ppo", "observation_shape": [3],
                                                  "action_space": "Box", "policy": "MlpPolicy"}))
    (agent / "weights.pt").write_bytes(b"not read before the provenance is checked")
    data = _provenance(**{k: v for k, v in change.items() if k != "drop"})
    data.pop(change.get("drop", "-"), None)
    (agent / "provenance.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=match):
        suite.find_agents(tmp_path, "etf", ETF_QUICK[0], env_id("ETF", ETF_QUICK[0]))


def test_zoo_directory_must_name_an_algorithm_and_hold_runs(tmp_path):
    (tmp_path / "etf" / "tx2-fig5" / "mystery").mkdir(parents=True)
    with pytest.raises(ValueError, match="must be an algorithm"):
        suite.find_agents(tmp_path, "etf", "tx2-fig5", env_id("ETF", "tx2-fig5"))
    assert suite.find_agents(tmp_path, "etf", "tx2-fig6", env_id("ETF", "tx2-fig6")) == []
    (tmp_path / "etf" / "tx2-fig6" / "ppo").mkdir(parents=True)
    with pytest.raises(ValueError, match="holds no seed<k>/ run"):
        suite.find_agents(tmp_path, "etf", "tx2-fig6", env_id("ETF", "tx2-fig6"))


def test_zoo_reads_runs_per_seed_and_the_first_zoo_format(zoo, tmp_path):
    """Format 2: one run per training seed; format 1 (the first zoo: the run in the algorithm's directory, wall
    time only) is still read and shown as one training seed below the budget."""
    [agent] = suite.find_agents(zoo, "etf", ETF_QUICK[0], env_id("ETF", ETF_QUICK[0]))
    assert [r.seed for r in agent.runs] == [0, 1] and [s for s, _ in agent.entries()] == [0, 1]
    assert agent.training_note(10.0) == "2 training seeds, 10 CPU-s each"
    assert agent.training_note(3600.0) == "2 training seeds, 10 CPU-s each, below the 3600 CPU-s budget"
    legacy = {k: v for k, v in _provenance(format=1).items() if k not in ("cpu_seconds", "train_cpu_seconds",
                                                                             "cpu_budget_s", "validation")}
    folder = _agent(tmp_path / "etf" / ETF_QUICK[0] / "ppo", 0)
    (folder / "provenance.json").write_text(json.dumps(legacy))
    [old] = suite.find_agents(tmp_path, "etf", ETF_QUICK[0], env_id("ETF", ETF_QUICK[0]))
    assert old.runs[0].legacy and old.runs[0].curve() == []
    assert old.training_note(3600.0) == ("1 training seed, below budget (CPU time not recorded: format-1 "
                                         "provenance)")


def test_packaged_zoo_is_where_the_docs_say():
    assert suite.default_zoo().parts[-3:] == ("joulegym", "agents", "zoo")


def test_ship_agent_records_a_score_that_reproduces(zoo, tmp_path):
    """A finished train.py run goes into the zoo as run seed<k> with a format-2 provenance; re-evaluating the
    shipped agent on the recorded seeds gives the recorded score."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(zoo / "etf" / ETF_QUICK[0] / "ppo" / "seed0", run / "agent")
    config = {"env_id": env_id("ETF", ETF_QUICK[0]), "env_kwargs": {}, "algo": "ppo", "seed": 3, "timesteps": 64,
              "n_envs": 1, "complete": False, "num_timesteps": 64, "train_seconds": 1.5, "cpu_seconds": 1.25,
              "hyperparams": {}}
    (run / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="not complete"):
        suite.ship_agent(run, tmp_path / "zoo2", commit="abc")
    (run / "config.json").write_text(json.dumps({**config, "complete": True, "seed": 9000}))
    with pytest.raises(ValueError, match=r"must stay in \[0, 9000\)"):
        suite.ship_agent(run, tmp_path / "zoo2", commit="abc")
    (run / "config.json").write_text(json.dumps({**config, "complete": True, "seed": 8998, "n_envs": 4}))
    with pytest.raises(ValueError, match=r"seed=8998 with n_envs=4 must stay in \[0, 9000\)"):
        suite.ship_agent(run, tmp_path / "zoo2", commit="abc")
    (run / "config.json").write_text(json.dumps({**config, "complete": True}))
    target = suite.ship_agent(run, tmp_path / "zoo2", commit="abc")
    assert target == tmp_path / "zoo2" / "etf" / ETF_QUICK[0] / "ppo" / "seed3"
    [found] = suite.find_agents(tmp_path / "zoo2", "etf", ETF_QUICK[0], env_id("ETF", ETF_QUICK[0]))
    recorded = found.provenance["score"]
    assert found.provenance["format"] == 2 and found.provenance["seed"] == 3 and found.provenance["commit"] == "abc"
    assert found.provenance["train_cpu_seconds"] == 1.25 and found.provenance["validation"] is None
    assert "--seed 3" in found.provenance["command"] and found.provenance["wall_time_s"] == 1.5
    assert recorded["eval_seeds"] == list(get_family("etf").benchmark.eval_seeds)
    assert suite.agent_score(found.entry(), get_family("etf"), ETF_QUICK[0]) == recorded
    (run / "config.json").write_text(json.dumps({**config, "complete": True, "env_id": "joulegym/ETF-toy-fig3-v0"}))
    with pytest.raises(ValueError, match="is not a benchmark scenario"):
        suite.ship_agent(run, tmp_path / "zoo3")


# Families whose shipped agent takes tens of seconds to re-evaluate (marked slow; `-m "not slow"` skips them):
# DREAM's ar-call agent plays 10 episodes of ~4000 decisions, one policy forward each (29 s measured, 2-core box).
SLOW_ZOO_FAMILIES = frozenset({"dream"})
ZOO_AGENT_MAX_BYTES = 512 * 1024  # zoo README: ship small MLPs; the largest today is PowerFlow's (222 KB, 430 inputs)


def _packaged_runs() -> list:
    found = []
    for descriptor in families():
        bench = descriptor.benchmark
        for scenario in bench.scenarios if bench is not None else ():
            scenario_id = env_id(bench.kind, scenario, descriptor.kind(bench.kind).version)
            marks = [pytest.mark.slow] if descriptor.name in SLOW_ZOO_FAMILIES else []
            found += [pytest.param(descriptor, agent, run, id=f"{descriptor.name}-{scenario}-{agent.algo}-s{run.seed}",
                                   marks=marks)
                      for agent in suite.find_agents(suite.default_zoo(), descriptor.name, scenario, scenario_id)
                      for run in agent.runs]
    return found or [pytest.param(None, None, None, marks=pytest.mark.skip(reason="no agent is shipped in "
                                                                                   "joulegym/agents/zoo yet"))]


@pytest.mark.parametrize(("descriptor", "agent", "run"), _packaged_runs())
def test_shipped_agents_are_weights_only_and_small(descriptor, agent, run):
    """Shipped agents load without unpickling (agent.json + weights.pt) and stay small enough for the wheel."""
    files = {p.name: p.stat().st_size for p in run.path.iterdir() if p.is_file()}
    assert {"agent.json", "weights.pt", "provenance.json"} <= set(files) and "model.zip" not in files
    assert sum(files.values()) <= ZOO_AGENT_MAX_BYTES, files
    assert run.seed < TRAINING_SEED_LIMIT <= min(run.provenance["score"]["eval_seeds"])


@pytest.mark.parametrize(("descriptor", "agent", "run"), _packaged_runs())
def test_shipped_agents_reproduce_their_recorded_score(descriptor, agent, run):
    """Each run's recorded held-out metric is re-measured (and its normalised score, for format-2 runs: the first
    zoo's normalised IQM used random as the zero, a definition the suite no longer has)."""
    pytest.importorskip("torch", reason="needs the train extra")
    from joulegym.evaluation.runner import PolicyEntry, evaluate

    recorded = run.provenance["score"]
    entry = PolicyEntry(agent.algo, "agent", agent.algo, path=str(run.path))
    if run.legacy:  # the raw metric alone: no anchor needs to run
        bench = descriptor.benchmark
        frame, _, _ = evaluate(run.provenance["env_id"], [entry], recorded["eval_seeds"], record=False)
        mean = float(np.mean([bench.value(row) for row in frame.to_dict("records")]))
        assert mean == pytest.approx(recorded["mean"], rel=1e-6, abs=1e-9)
        return
    measured = suite.agent_score(entry, descriptor, agent.scenario, recorded["eval_seeds"])
    assert measured["mean"] == pytest.approx(recorded["mean"], rel=1e-6, abs=1e-9)
    assert measured["normalised_mean"] == pytest.approx(recorded["normalised_mean"], rel=1e-6, abs=1e-9)


# --- the quick suite end to end ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def quick_run(tmp_path_factory, zoo) -> Path:
    out = tmp_path_factory.mktemp("lb") / "leaderboard"
    assert main(["--suite", "etf", "--quick", "--zoo", str(zoo), "--out", str(out)]) == 0
    return out


def test_quick_suite_writes_the_three_files_and_the_figures(quick_run, zoo):
    names = {p.name for p in quick_run.iterdir()}
    assert {"leaderboard.md", "leaderboard.csv", "index.html", "episodes.csv", "plots", "provenance"} <= names
    page = (quick_run / "index.html").read_text()
    md = (quick_run / "leaderboard.md").read_text()
    for text in (page, md):  # the one command that regenerates the page
        assert f"--suite etf --quick --zoo {zoo} --out {quick_run}" in text
    # every figure and provenance link resolves; the fronts page is another run's (evaluate.py --suite --pareto)
    for link in set(re.findall(r'(?:src|href)="([^"#]+)"', page)) - {FRONTS_LINK}:
        assert (quick_run / link).is_file(), link
    assert f'href="{FRONTS_LINK}"' in page
    images = re.findall(r'<img src="([^"]+)"', page)
    assert len(images) == 4  # score intervals, performance profiles, probability of improvement, a learning curve
    assert len(re.findall(r'class="learning-curve"><img', page)) == 1
    episode_plots = sorted(set(re.findall(r'href="(plots/[^"]+-episode\.png)"', page)))
    assert len(episode_plots) == len(ETF_QUICK)  # the per-scenario rows link to their episode plot
    assert all((quick_run / i).stat().st_size > 5000 for i in images + episode_plots)
    assert not list(quick_run.parent.glob(".leaderboard.*"))  # no temporary directory left


def test_quick_suite_anchors_score_0_and_1_and_the_csv_has_classes(quick_run):
    episodes = pd.read_csv(quick_run / "episodes.csv")
    bench = get_family("etf").benchmark
    assert set(episodes["scenario"]) == set(ETF_QUICK) and set(episodes["seed"]) == set(bench.eval_seeds[:2])
    for scenario in ETF_QUICK:
        here = episodes[episodes["scenario"] == scenario]
        zero = here[here["policy"] == bench.zero[scenario]]["normalised"]
        one = here[here["policy"] == bench.best_heuristic[scenario]]["normalised"]
        assert np.allclose(zero, 0.0, atol=1e-12) and one.mean() == pytest.approx(1.0)  # paired: 0 on every seed
    board = pd.read_csv(quick_run / "leaderboard.csv")
    overall = board[board["scope"] == "all"].set_index("policy")
    # trained on the first quick scenario, the agent also plays the second (the same spaces): ranked on both
    assert overall.loc["ppo", "class"] == "agent" and overall.loc["ppo", "trained_on"] == ETF_QUICK[0]
    assert overall.loc["ppo", "split"] == "1 held-in, 1 held-out instance"
    assert set(overall["class"]) <= {"agent", "heuristic", "baseline", "privileged"}
    assert overall.loc["tf", "class"] == "baseline" and overall.loc["etf", "class"] == "heuristic"
    assert overall.loc["tf", "score_mean"] == pytest.approx(0.0, abs=1e-12)
    assert overall.loc["etf", "score_mean"] == pytest.approx(1.0, abs=1e-12)
    assert (overall["score_ci_low"] <= overall["score_mean"] + 1e-12).all()
    assert (overall["score_mean"] <= overall["score_ci_high"] + 1e-12).all()
    assert list(overall["score_mean"]) == sorted(overall["score_mean"], reverse=True)  # ranked
    assert np.allclose(episodes["metric"], episodes["system_fairness"])  # the raw metric is the final F_S
    per = board[board["scope"] == ETF_QUICK[0]].set_index("policy")
    assert per.loc["ppo", "class"] == "agent" and per.loc["ppo", "runs"] == 2 and per.loc["ppo", "episodes"] == 4


def test_quick_suite_picks_up_the_shipped_agent(quick_run):
    provenance = json.loads((quick_run / "provenance" / "etf" / "ppo.json").read_text())
    assert provenance["class"] == "agent"
    assert provenance["scenarios"][ETF_QUICK[0]]["seed1"]["command"].startswith("test fixture")
    page = (quick_run / "index.html").read_text()
    assert (f"ppo (trained on {ETF_QUICK[0]}): 2 training seeds, 10 CPU-s each, below the 3600 CPU-s budget; "
            f"evaluated on {', '.join(ETF_QUICK)}.") in page
    assert provenance["played"] == {ETF_QUICK[0]: {"trained_on": ETF_QUICK[0], "split": "held-in"},
                                    ETF_QUICK[1]: {"trained_on": ETF_QUICK[0], "split": "held-out instance"}}


def test_quick_suite_is_deterministic(quick_run, zoo, tmp_path):
    again = tmp_path / "leaderboard"
    assert main(["--suite", "etf", "--quick", "--zoo", str(zoo), "--out", str(again)]) == 0
    for name in ("leaderboard.csv", "episodes.csv"):
        assert (again / name).read_bytes() == (quick_run / name).read_bytes(), name
    for name in ("leaderboard.md", "index.html"):  # identical up to the --out path in the printed command
        first = (quick_run / name).read_text().replace(str(quick_run), "OUT")
        assert (again / name).read_text().replace(str(again), "OUT") == first, name


def test_progress_lines_are_plain_without_a_terminal(tmp_path):
    stream = io.StringIO()
    (tmp_path / "empty-zoo").mkdir()
    suite.run_suite(["etf"], quick=True, out=tmp_path / "lb", zoo=tmp_path / "empty-zoo", plots=False, stream=stream)
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue() and lines[0].startswith("suite: etf (quick)")
    steps = [line for line in lines if line.startswith("[")]
    total = int(steps[0].split("/")[1].split("]")[0])
    assert len(steps) == total and steps[-1].startswith(f"[{total}/{total}]")
    assert not (tmp_path / "lb" / "plots").exists()


@pytest.mark.parametrize("plots", [True, False])
def test_suite_runs_each_seed_once(tmp_path, plots):
    """Every policy plays each seed once: the plotted first episode is recorded in place (not played again), and
    nothing is recorded without plots."""
    from joulegym.evaluation.runner import evaluate

    calls = []

    def counting(env_id, entries, seeds, *args, record=True, **kwargs):
        calls.append(((env_id, entries[0].label), tuple(seeds), record))
        return evaluate(env_id, entries, seeds, *args, record=record, **kwargs)

    (tmp_path / "empty-zoo").mkdir()
    suite.run_suite(["etf"], quick=True, out=tmp_path / "lb", zoo=tmp_path / "empty-zoo", plots=plots,
                    stream=io.StringIO(), evaluate_fn=counting)
    played: dict[tuple[str, str], list[int]] = {}
    for key, seeds, _ in calls:
        played.setdefault(key, []).extend(seeds)
    assert played and all(len(seeds) == len(set(seeds)) for seeds in played.values()), played
    assert any(record for *_, record in calls) == plots
    episodes = pd.read_csv(tmp_path / "lb" / "episodes.csv")
    assert episodes.groupby(["scenario", "policy"])["seed"].apply(lambda s: s.is_unique).all()


@pytest.mark.parametrize(("args", "message"), [
    (["--suite", "nofamily"], "is unknown"),
    (["--suite", "etf", "--zoo", "ZOO"], "must be an algorithm"),
    (["--ship", "ZOO"], "is not a train.py run"),
])
def test_suite_errors_exit_2(tmp_path, capsys, args, message):
    (tmp_path / "zoo" / "etf" / ETF_QUICK[0] / "nope").mkdir(parents=True)
    args = [a.replace("ZOO", str(tmp_path / "zoo")) for a in args]
    quick = ["--quick"] if "--suite" in args else []  # --quick belongs to --suite/--reproduce only
    assert main([*args, *quick, "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_verdict_row_is_read_from_the_ranking(quick_run):
    """The page's first table (and the README's) says, per family, whether the agent beats every deployable
    non-learned policy; its numbers are the CSV's, and the verdict follows the stated rule."""
    board = pd.read_csv(quick_run / "leaderboard.csv")
    overall = board[board["scope"] == "all"].set_index("policy")
    agent = overall.loc["ppo"]
    non_learned = overall[overall["class"].isin(["heuristic", "baseline"])]
    best_other = non_learned["score_mean"].idxmax()
    md = (quick_run / "leaderboard.md").read_text()
    section = md.split("## The verdict", 1)[1].split("\n## ", 1)[0]
    row = next(line for line in section.splitlines() if line.startswith("| etf |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "ppo" and cells[4] == best_other
    assert cells[3].startswith(f"{agent['score_mean']:.3f} [{agent['score_ci_low']:.3f}")
    expected = agent_verdict.classify(agent["vs_bnl_diff_ci_low"], agent["vs_bnl_diff_ci_high"],
                                      agent["score_ci_low"], non_learned.loc[best_other, "score_ci_high"],
                                      int(agent["vs_bnl_wins"]), int(agent["vs_bnl_losses"]))
    assert cells[-1] == expected
    assert '<table class="sortable verdict">' in (quick_run / "index.html").read_text()


@pytest.mark.parametrize("diff, agent_low, other_high, record, verdict", [
    ((0.1, 0.3), 1.2, 1.1, (20, 10), "wins"),
    ((0.1, 0.3), 1.0, 1.1, (20, 10), "inconclusive"),  # paired CI above zero, but the headline CIs overlap
    ((0.1, 0.3), 1.2, 1.1, (14, 16), "inconclusive"),  # a few large wins carry the mean: more losses than wins
    ((-0.1, 0.3), 1.2, 1.1, (20, 10), "inconclusive"),
    ((-0.3, -0.1), 0.5, 1.1, (5, 25), "loses"),
])
def test_verdict_rule(diff, agent_low, other_high, record, verdict):
    assert agent_verdict.classify(*diff, agent_low, other_high, *record) == verdict
