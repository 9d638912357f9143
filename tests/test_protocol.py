"""The zoo's training protocol and tuning on a tiny budget (docs/leaderboard.md, "Training protocol"): seeds to a
CPU budget, model selection on the validation seeds, the test score, shipping, and an Optuna study."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import yaml

import joulegym  # noqa: F401  (registers the ids)
from joulegym import protocol
from joulegym.core.family import get_family

ENV = "joulegym/ETF-tx2-fig6-random-v0"
BUDGET_S = 3.0


@pytest.fixture(scope="module")
def hyperparams(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hp") / "ppo.yml"
    path.write_text(yaml.safe_dump({ENV: {"n_steps": 64, "batch_size": 64, "n_epochs": 2}}))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory, hyperparams) -> Path:
    out = tmp_path_factory.mktemp("protocol") / "etf-ppo"
    assert protocol.main(["train", "--env", ENV, "--algo", "ppo", "--seeds", "0", "1", "--cpu-budget", str(BUDGET_S),
                          "--eval-every", "256", "--hyperparams", str(hyperparams), "--out", str(out)]) == 0
    return out


def test_each_seed_trains_to_the_cpu_budget_and_records_its_validation_curve(runs):
    bench = get_family("etf").benchmark
    for seed in (0, 1):
        record = json.loads((runs / f"seed{seed}" / protocol.PROTOCOL_FILE).read_text())
        assert record["seed"] == seed and record["stopped_by"] == "budget" and record["format"] == 2
        # the budget counts training CPU only; validation episodes come on top (cpu_seconds)
        assert BUDGET_S <= record["train_cpu_seconds"] < BUDGET_S + 2.0
        assert record["cpu_seconds"] >= record["train_cpu_seconds"]
        curve = record["validation"]["curve"]
        assert record["validation"]["seeds"] == list(bench.validation_seeds) and len(curve) >= 2
        assert [p[1] for p in curve] == sorted(p[1] for p in curve)  # timesteps grow
        best = max(curve, key=lambda p: p[2])  # F_S: higher is better; the first of equal scores is kept
        assert record["validation"]["selected"]["metric"] == best[2]
        assert record["validation"]["selected"]["timesteps"] == next(p[1] for p in curve if p[2] == best[2])
        assert set(record["validation"]["reference"]) == {"tf", "etf"}
        assert f"--seeds {seed} " in record["command"] and "--cpu-budget 3 " in record["command"]
        assert record["score"]["eval_seeds"] == list(bench.eval_seeds)


def test_the_selected_model_reproduces_its_validation_and_test_scores(runs):
    """The weights-only best/ agent is the model that scored the selected validation point, and the recorded test
    score is re-measured on the held-out seeds."""
    from joulegym.agents import SB3Policy
    from joulegym.evaluation.runner import PolicyEntry
    from joulegym.evaluation.suite import agent_score

    bench = get_family("etf").benchmark
    record = json.loads((runs / "seed0" / protocol.PROTOCOL_FILE).read_text())
    policy = SB3Policy.load(runs / "seed0" / "best", algo="ppo")
    import gymnasium as gym

    from joulegym.core.rollout import rollout

    env = gym.make(ENV)
    scores = [bench.value(rollout(env, policy, s).metrics) for s in bench.validation_seeds]
    assert sum(scores) / len(scores) == pytest.approx(record["validation"]["selected"]["metric"], rel=1e-6)
    entry = PolicyEntry("ppo", "agent", "ppo", path=str(runs / "seed0" / "best"))
    assert agent_score(entry, get_family("etf"), "tx2-fig6-random") == record["score"]


def test_ship_puts_every_seed_in_the_zoo(runs, tmp_path):
    from joulegym.evaluation.zoo import find_agents

    assert protocol.main(["ship", str(runs), "--zoo", str(tmp_path)]) == 0
    [agent] = find_agents(tmp_path, "etf", "tx2-fig6-random", ENV)
    assert [r.seed for r in agent.runs] == [0, 1] and all(r.curve() for r in agent.runs)
    assert agent.training_note(BUDGET_S).startswith("2 training seeds, 3 CPU-s each")
    assert agent.training_note(3600.0).endswith("below the 3600 CPU-s budget")


def test_ship_takes_one_directory_per_seed_and_refuses_what_is_not_one_agent(runs, tmp_path):
    """Seeds trained in separate processes (one ``--out`` each) ship as one agent; a seed given twice, runs of
    another configuration and a run without a test score are refused before anything is copied."""
    import shutil

    from joulegym.evaluation.zoo import find_agents

    assert protocol.main(["ship", str(runs / "seed0"), str(runs / "seed1"), "--zoo", str(tmp_path / "zoo")]) == 0
    [agent] = find_agents(tmp_path / "zoo", "etf", "tx2-fig6-random", ENV)
    assert [r.seed for r in agent.runs] == [0, 1] and agent.trained_on == "tx2-fig6-random"
    assert agent.provenance["spaces"]["observation"]["shape"] == [42] and agent.provenance["n_envs"] == 4
    with pytest.raises(ValueError, match="given twice"):
        protocol.ship([runs, runs / "seed0"], tmp_path / "zoo2")
    other = tmp_path / "other" / "seed0"
    shutil.copytree(runs / "seed0", other)
    record = json.loads((other / protocol.PROTOCOL_FILE).read_text())
    (other / protocol.PROTOCOL_FILE).write_text(json.dumps({**record, "seed": 5, "hyperparams": {"n_steps": 8}}))
    with pytest.raises(ValueError, match=r"differs from .* in \['hyperparams'\]: the runs shipped together"):
        protocol.ship([runs / "seed1", other], tmp_path / "zoo2")
    (other / protocol.PROTOCOL_FILE).write_text(json.dumps(record))
    with pytest.raises(ValueError, match=r"training seeds \[0, 0\] repeat"):
        protocol.ship([runs / "seed0", other], tmp_path / "zoo2")
    (other / protocol.PROTOCOL_FILE).write_text(json.dumps({**record, "seed": 5, "score": None}))
    with pytest.raises(ValueError, match="has no test score"):
        protocol.ship([runs / "seed1", other], tmp_path / "zoo2")
    assert not (tmp_path / "zoo2").exists()


def test_the_leaderboard_from_a_shipped_protocol_zoo(runs, tmp_path):
    """``python -m joulegym.protocol ship`` then ``python evaluate.py --suite --zoo``, end to end on a tiny budget:
    the agent (trained on ETF's generalisation scenario) plays both quick scenarios, held-in and as a held-out
    instance, and is ranked with per-seed paired CIs; PowerFlow's oracle is an upper bound apart from the ranking;
    the page names the training, validation and test seeds, which do not overlap."""
    import re

    import pandas as pd

    from joulegym.evaluation.cli import main as evaluate

    zoo = tmp_path / "zoo"
    assert protocol.main(["ship", str(runs), "--zoo", str(zoo)]) == 0
    out = tmp_path / "leaderboard"
    assert evaluate(["--suite", "etf", "powerflow", "--quick", "--zoo", str(zoo), "--out", str(out)]) == 0
    board = pd.read_csv(out / "leaderboard.csv", keep_default_na=False)
    ranked = board[board["scope"] == "all"]
    agent = ranked[ranked["policy"] == "ppo"].iloc[0]
    assert agent["class"] == "agent" and agent["trained_on"] == "tx2-fig6-random" and agent["runs"] == 2
    assert agent["split"] == "1 held-in, 1 held-out instance" and agent["scenarios"] == 2
    assert float(agent["vs_best_diff_ci_low"]) <= float(agent["vs_best_diff_mean"]) <= float(
        agent["vs_best_diff_ci_high"])
    per = board[(board["class"] == "agent") & (board["scope"] != "all")].set_index("scope")
    assert per.loc["tx2-fig5", "split"] == "held-out instance" and per.loc["tx2-fig6-random", "split"] == "held-in"
    assert (per["episodes"].astype(int) == 4).all()  # 2 training runs x 2 quick test seeds, paired per seed
    oracle = board[board["policy"] == "powerflow-oracle"]
    assert set(oracle["class"]) == {"privileged"}
    html = (out / "index.html").read_text()
    for table in re.findall(r'<table class="sortable ranking">(.*?)</table>', html, re.S):
        assert 'class="privileged"' not in table  # ranked apart
    [upper] = re.findall(r'<table class="sortable upper-bounds">(.*?)</table>', html, re.S)
    assert "powerflow-oracle" in upper
    md = (out / "leaderboard.md").read_text()
    seeds = re.search(r"Seeds: training ([^;]+) \(the shipped runs' training envs\); validation (\S+) \(the shipped "
                      r"runs' model selection\); test (\S+) \(2 held-out seeds", md)
    # env i of the packaged 4-env PPO setting trains from seed + i: seeds 0-3 and 1-4
    assert seeds.groups() == ("0-4", "9000-9009", "10000-10001")
    train = {s for r in (json.loads(p.read_text()) for p in zoo.rglob("provenance.json"))
             for s in range(r["seed"], r["seed"] + r["n_envs"])}
    validation = set(get_family("etf").benchmark.validation_seeds)
    test = set(pd.read_csv(out / "episodes.csv")["seed"])
    assert train == {0, 1, 2, 3, 4} and test == {10_000, 10_001}
    assert not (train & validation or train & test or validation & test)
    assert "python -m joulegym.protocol ship" in md and f"--out {runs}" in md  # how the runs were made


@pytest.mark.parametrize(("args", "message"), [
    (["--seeds", "9000"], "must stay in [0, 9000)"),
    (["--seeds", "8999", "--n-envs", "2"], "with 2 env(s) must stay in [0, 9000)"),
    (["--cpu-budget", "0"], "--cpu-budget must be > 0"),
    (["--env", "joulegym/ETF-toy-fig3-v0"], "is not a benchmark scenario"),
])
def test_bad_protocol_arguments_exit_2(tmp_path, capsys, args, message):
    base = {"--env": ENV, "--algo": "ppo", "--out": str(tmp_path / "out"), "--seeds": "0"}
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    assert protocol.main(["train", *[x for kv in base.items() for x in kv]]) == 2
    assert message in capsys.readouterr().err
    assert protocol.main(["ship", str(tmp_path / "nothing")]) == 2


def test_a_stopped_seed_resumes_with_its_budget_curve_and_best_model(tmp_path, hyperparams, capsys, monkeypatch):
    """SIGTERM at the first validation: the seed stops with a checkpoint that keeps the protocol's state, and
    ``--resume`` goes on from it (the same first validation point, CPU counted from where it stopped) to the budget;
    a finished seed is kept as it is, and a used seed directory is refused without --resume."""
    import os
    import signal

    out = tmp_path / "etf-ppo"
    args = ["train", "--env", ENV, "--algo", "ppo", "--seeds", "0", "--cpu-budget", str(BUDGET_S), "--eval-every",
            "256", "--hyperparams", str(hyperparams), "--out", str(out)]
    first_points = []

    def stop_at_first(point):
        first_points.append(point)
        os.kill(os.getpid(), signal.SIGTERM)

    callback = protocol.make_callback  # the first run's callback sends SIGTERM after its first validation
    monkeypatch.setattr(protocol, "make_callback", lambda *a, **k: callback(*a[:6], stop_at_first))
    assert protocol.main(args) == 128 + signal.SIGTERM
    monkeypatch.undo()
    assert "--resume" in capsys.readouterr().err and not (out / "seed0" / protocol.PROTOCOL_FILE).exists()
    assert protocol.main(args) == 2 and "already holds a run of seed 0" in capsys.readouterr().err
    assert protocol.main([*args, "--resume"]) == 0
    record = json.loads((out / "seed0" / protocol.PROTOCOL_FILE).read_text())
    assert record["resumes"] == 1 and record["stopped_by"] == "budget"
    curve = record["validation"]["curve"]
    assert curve[0] == list(first_points[0]) and len(curve) >= 2
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in itertools.pairwise(curve))
    assert BUDGET_S <= record["train_cpu_seconds"] < BUDGET_S + 3.0
    assert protocol.main([*args, "--resume"]) == 0 and "finished earlier" in capsys.readouterr().out
    assert json.loads((out / "seed0" / protocol.PROTOCOL_FILE).read_text()) == record

    # killed while scoring (training complete, no protocol.json): --resume scores again without training
    (out / "seed0" / protocol.PROTOCOL_FILE).unlink()
    assert protocol.main([*args, "--resume"]) == 0
    rescored = json.loads((out / "seed0" / protocol.PROTOCOL_FILE).read_text())
    same = ("validation", "score", "total_timesteps", "train_cpu_seconds", "resumes", "stopped_by", "timesteps")
    assert {k: rescored[k] for k in same} == {k: record[k] for k in same}
    # a complete run without the training's final state cannot be scored from it, and says so
    (out / "seed0" / protocol.PROTOCOL_FILE).unlink()
    (out / "seed0" / protocol.TRAINED_FILE).unlink()
    assert protocol.main([*args, "--resume"]) == 2
    assert f"{protocol.TRAINED_FILE} is missing" in capsys.readouterr().err


def test_optuna_study_on_a_tiny_budget(tmp_path, hyperparams):
    """Two trials of rl-zoo3's PPO search space, 2 training CPU-s each: every trial is listed, the best trial's
    hyperparameters load as a --hyperparams file, and the study resumes rather than restarts."""
    from joulegym import tuning
    from joulegym.agents.algos import load_hyperparams

    out = tmp_path / "tune"
    args = ["--env", ENV, "--algo", "ppo", "--trials", "2", "--trial-cpu-budget", "2", "--eval-every", "256",
            "--out", str(out)]
    assert tuning.main(args) == 0
    best = json.loads((out / "best.json").read_text())
    assert best["trials"] == 2 and best["metric"] == "F_S" and 0 <= best["value"] <= 1
    rows = (out / "study.csv").read_text().splitlines()
    assert len(rows) == 3 and "params_learning_rate" in rows[0]
    params = load_hyperparams("ppo", ENV, out / "best.yml")
    assert params["learning_rate"] == pytest.approx(best["params"]["learning_rate"])
    assert tuning.main(args) == 0  # resumed: the study already holds its 2 trials
    assert json.loads((out / "best.json").read_text())["trials"] == 2
    assert tuning.main([*args[:2], "--algo", "maskable_ppo", *args[4:]]) == 2  # ETF-v0's Box: no masks
    assert tuning.main([*args[:2], "--algo", "a2c", *args[4:]]) == 2  # another study's directory
    (out / "notes.txt").write_text("mine")
    assert tuning.main(args) == 2 and (out / "notes.txt").read_text() == "mine"  # a user's file: refused, kept


def test_train_help_names_the_zoo_algorithm_per_family(capsys):
    """``train.py --help`` names, per family, the algorithm the zoo ships, and the zoo ships that one."""
    import re

    from joulegym.core.family import env_id, families
    from joulegym.evaluation.zoo import default_zoo, find_agents
    from joulegym.training import parse_args

    with pytest.raises(SystemExit):
        parse_args(["--help"])
    text = capsys.readouterr().out
    for descriptor in families():
        bench = descriptor.benchmark
        if bench is None:
            continue
        assert re.search(rf"^  {descriptor.name} +{bench.zoo_algo}$", text, re.M), descriptor.name
        version = descriptor.kind(bench.kind).version
        shipped = {a.algo for s in bench.scenarios
                   for a in find_agents(default_zoo(), descriptor.name, s, env_id(bench.kind, s, version))}
        assert shipped <= {bench.zoo_algo}, descriptor.name
