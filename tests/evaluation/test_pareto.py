"""The trade-off fronts (joulegym.evaluation.pareto, docs/tradeoffs.md): pymoo's indicators on hand-checked sets,
privileged points kept off the deployable front, every family's sweep data, the multi-objective agent path (a
weight-conditioned agent trained for a few hundred steps through train.py, shipped and put on the front), the CLI
flag, and the fronts page in headless Chromium (the leaderboard page test's pattern)."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

import joulegym  # noqa: F401  (registers the ids)
from joulegym import baselines
from joulegym.core.family import families, get_family
from joulegym.evaluation import pareto
from joulegym.evaluation.tradeoffs import TRADEOFFS, Objective, Sweep, TradeOff, tradeoff
from tests.evaluation.test_page import _render, needs_browser

TRADE = TradeOff(Objective("e", "energy", minimise=True), Objective("t", "time", minimise=True), "knob", ())


def _fronts(rows: list[tuple[str, str, list[tuple[float, float]]]]) -> pareto.FamilyFronts:
    """A one-scenario family of points ``(label, class, per-seed (energy, time))``."""
    records = [{"family": "toy", "scenario": "s", "point": label, "policy": label, "class": cls, "setting": "default",
                "run": -1, "seed": seed, "energy": e, "performance": t}
               for label, cls, values in rows for seed, (e, t) in enumerate(values)]
    return pareto.FamilyFronts(get_family("etf"), TRADE, ("s",), (0, 1), pd.DataFrame(records))


def test_hypervolume_and_expected_utility_on_a_hand_checked_set():
    result = _fronts([("a", "heuristic", [(0.0, 1.0)] * 2), ("b", "baseline", [(1.0, 0.0)] * 2),
                      ("c", "heuristic", [(1.0, 1.0)] * 2)])
    pareto.indicators(result, resamples=20)
    row = result.indicators.set_index(["scope", "set"]).loc[("s", "heuristics")]
    # dominated area up to (1.1, 1.1): 2 x 1.1 x 0.1 - 0.1 x 0.1
    assert row["hypervolume"] == pytest.approx(0.21) and row["hv_ci_low"] == pytest.approx(0.21)
    # mean over w = 0, 0.01, ..., 1 of max(w, 1 - w): 7600 / (100 x 101)
    assert row["expected_utility"] == pytest.approx(7600 / 10100)
    points = result.points.set_index("point")
    assert list(points["front_heuristics"]) == [True, True, False]
    anchors = result.anchors.set_index("objective")
    assert anchors.loc["e", ["ideal", "nadir"]].tolist() == [0.0, 1.0]
    assert "agents gain" not in set(result.indicators["set"])  # no agent played: no gain is reported


def test_privileged_points_never_join_the_deployable_front_and_agents_gain_is_paired():
    result = _fronts([("a", "heuristic", [(0.0, 1.0), (0.2, 1.0)]), ("b", "baseline", [(1.0, 0.0), (1.0, 0.2)]),
                      ("oracle", "privileged", [(-1.0, -1.0)] * 2), ("ppo", "agent", [(0.4, 0.4), (0.4, 0.4)])])
    pareto.indicators(result, resamples=50)
    points = result.points.set_index("point")
    assert not points.loc["oracle", "front_heuristics"] and points.loc["oracle", "front_privileged"]
    assert points.loc["a", "dominated_by_privileged"] and not points.loc["a", "dominated_by_agent"]
    table = result.indicators.set_index(["scope", "set"])
    gain = table.loc[("s", "agents gain")]
    assert gain["hypervolume"] > 0 and gain["hv_ci_low"] > 0  # the agent's point fills the front's knee
    assert table.loc[("all", "heuristics+agents"), "hypervolume"] == pytest.approx(
        table.loc[("s", "heuristics"), "hypervolume"] + gain["hypervolume"])


def test_non_dominated_and_bad_anchors():
    assert pareto.non_dominated(np.array([[0, 1], [1, 0], [1, 1], [0.5, 0.5]])).tolist() == [True, True, False, True]
    one = _fronts([("a", "heuristic", [(0.0, 1.0)] * 2), ("random", "baseline", [(1.0, 0.0)] * 2)])
    with pytest.raises(ValueError, match="anchors need >= 2"):
        pareto.indicators(one)


def test_every_benchmark_family_has_a_tradeoff_whose_sweeps_are_registered_policies():
    for descriptor in families():
        if descriptor.benchmark is None or descriptor.name not in TRADEOFFS:
            continue
        trade = tradeoff(descriptor.name)
        assert set(trade.scenarios) <= set(descriptor.benchmark.scenarios)
        for sweep in trade.sweeps:
            for label, kwargs, env_kwargs in sweep.settings():
                if not env_kwargs:
                    baselines.make(sweep.policy, family=descriptor.name, **kwargs)  # the knob is a real kwarg
                assert label.startswith(sweep.policy + "(")
    assert {d.name for d in families() if d.benchmark is not None} <= set(TRADEOFFS)
    with pytest.raises(ValueError, match="reduced_why"):
        TradeOff(TRADE.energy, TRADE.performance, "k", (), scenarios=("s",))
    assert Sweep("dream", "alpha,beta", ((0.5, 2.0),)).settings()[0][:2] == ("dream(alpha=0.5, beta=2)",
                                                                            {"alpha": 0.5, "beta": 2.0})


def test_pareto_flag_is_checked():
    from joulegym.evaluation.cli import parse_args

    assert parse_args(["--suite", "etf", "--pareto"]).pareto
    for argv in (["--pareto"], ["--suite", "--pareto", "--quick"]):
        with pytest.raises(SystemExit):
            parse_args(argv)


def test_leaderboard_page_links_the_fronts_page():
    from joulegym.evaluation import page

    assert f'href="{page.FRONTS_LINK}"' in page.html([], "python evaluate.py --suite", False)


@pytest.fixture(scope="module")
def etf_fronts(tmp_path_factory):
    """ETF's fronts with a zoo holding one weight-conditioned SAC agent trained for 300 steps through train.py."""
    pytest.importorskip("stable_baselines3", reason="needs the train extra")
    from joulegym.evaluation.mo_agents import ship_weight_agent, weight_grid
    from joulegym.training import train

    base = tmp_path_factory.mktemp("fronts")
    weights = weight_grid("etf")[1]
    train("joulegym/ETF-tx2-fig5-v0", "sac", timesteps=300, seed=0, out=base / "run",
          env_kwargs={"reward_weights": weights}, progress_bar=False, tensorboard=False)
    ship_weight_agent(base / "run", base / "zoo")
    written = pareto.run_pareto(["etf"], out=base / "fronts", zoo=base / "zoo")
    return base / "fronts", written, weights


def test_fronts_run_writes_tables_with_the_weight_agent(etf_fronts):
    out, written, weights = etf_fronts
    names = {p.name for p in written}
    assert {"index.html", "points.csv", "indicators.csv", "indicators.json", "anchors.csv", "episodes.csv"} <= names
    points = pd.read_csv(out / "points.csv")
    assert "sac[energy_fairness=0.25, etf_objective=0, system_fairness=0, time_fairness=0.75]" in set(points["point"])
    swept = points[(points["scenario"] == "tx2-fig5") & (points["policy"] == "etf")]
    assert len(swept) == 12 and swept["energy"].nunique() > 5  # defaults + phi = 0, 0.1, ..., 1
    episodes = pd.read_csv(out / "episodes.csv")
    assert episodes["seed"].min() >= 10000 and episodes["seed"].nunique() == 10  # the test seeds
    data = json.loads((out / "indicators.json").read_text())
    assert data["reference_point"] == [1.1, 1.1] and data["families"]["etf"]["indicators"]
    front = points[points["front_heuristics"]]
    assert set(front["class"]) <= {"heuristic", "baseline"}
    assert weights["energy_fairness"] == 0.25
    verdicts = (out / "verdicts.md").read_text()
    assert verdicts.startswith("Printed by `python evaluate.py --suite etf --pareto")
    assert len([line for line in verdicts.splitlines() if line.startswith("| etf |")]) == 6  # 5 scenarios + all


@needs_browser
def test_fronts_page_renders_every_front_plot(etf_fronts, tmp_path):
    out, _, _ = etf_fronts
    page = out / "index.html"
    html = page.read_text()
    dom, console = _render(page, tmp_path)
    images = len(re.findall(r"<img ", html))
    assert images == len(tradeoff("etf").scenarios or get_family("etf").benchmark.scenarios) == 5
    assert f'data-images-loaded="{images}/{images}"' in dom and console == []
    assert len(re.findall(r'<table class="sortable indicators">', dom)) == 1
    assert 'class="verdict"' in dom and "evaluate.py --suite etf --pareto" in dom


def test_front_labels_do_not_overlap_and_coincident_points_share_one():
    """The plot's labels (pareto_page.place_labels): a crowded front gets one label per spot, no two text boxes
    overlap, every one inside the axes; points drawn on the same spot share a label."""
    from matplotlib.text import Text

    from joulegym.core.plotting import new_figure
    from joulegym.evaluation.pareto_page import place_labels

    fig, axes = new_figure(size=(7.2, 4.4))
    ax = axes.flat[0]
    xs = np.linspace(0.0, 1.0, 12)
    ax.plot(xs, 1.0 - np.sqrt(xs), "o")
    labels = [(f"etf(phi={x:.2f})", float(x), float(1.0 - np.sqrt(x))) for x in xs]
    labels += [("ef", 1.0, 0.0), ("tf", 0.0, 1.0)]  # on the same spots as phi = 1 and phi = 0
    notes = place_labels(ax, labels)
    renderer = fig.canvas.get_renderer()
    boxes = []
    for note in notes:
        note.update_positions(renderer)
        boxes.append(Text.get_window_extent(note, renderer))
    frame = ax.get_window_extent(renderer)
    assert len(notes) == 12 and sum("ef" in n.get_text().split(", ") for n in notes) == 1
    assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)]
    assert all(frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1 for b in boxes)


def test_progress_lines_state_cpu_and_wall_time():
    import io

    from joulegym.evaluation.suite import Progress

    stream = io.StringIO()
    progress = Progress(2, stream)
    progress.step("etf/tx2-fig5 etf x 10 seeds")
    progress.step("etf/tx2-fig5 tf x 10 seeds")
    lines = stream.getvalue().splitlines()
    pattern = r"\[\d/2\] etf/tx2-fig5 \w+ x 10 seeds \(\d+\.\d CPU-s, \d+\.\d s wall; so far \d+ CPU-s, \d+ s wall\)"
    assert len(lines) == 2 and all(re.fullmatch(pattern, line) for line in lines)


@pytest.mark.parametrize(("agent", "expected", "dominated"), [
    ((0.3, 0.75), "extends it", "0 of 3"),  # fills a gap of the front: a gain, no front point beaten
    ((0.4, 0.4), "dominates part", "1 of 3"),  # beats c
    ((0.0, 0.0), "dominates part", "3 of 3"),  # beats every front point
    ((1.0, 1.0), "inside", "0 of 3"),  # behind the front
    (None, "no agent", "0 of 3"),
])
def test_verdict_table_says_whether_an_agent_dominates_part_of_the_front(agent, expected, dominated):
    from joulegym.evaluation import pareto_verdict

    rows = [("a", "heuristic", [(0.0, 1.0), (0.1, 1.0)]), ("b", "baseline", [(1.0, 0.0), (1.0, 0.1)]),
            ("c", "heuristic", [(0.6, 0.6), (0.7, 0.6)])]
    if agent is not None:
        rows.append(("ppo", "agent", [agent, agent]))
    result = _fronts(rows)
    pareto.indicators(result, resamples=50)
    result.points["family"] = result.name  # the toy's episodes borrow ETF's descriptor
    table = pareto_verdict.verdict_rows(result.points, result.indicators)
    row = table[table["scenario"] == "s"].iloc[0]
    assert row["verdict"].split(" (")[0] == expected and row["front points dominated by an agent"] == dominated
    assert table.iloc[-1]["scenario"] == "all" and table.iloc[-1]["verdict"] == row["verdict"]
    assert ("% HV)" in row["verdict"]) == (expected in ("extends it", "dominates part"))
    text = pareto_verdict.markdown(table)
    assert text.count("\n") == 2 + len(table) and f"| {row['verdict']} |" in text


def test_verdict_table_refuses_a_directory_without_the_tables(tmp_path):
    from joulegym.evaluation import pareto_verdict

    with pytest.raises(ValueError, match=r"points\.csv, indicators\.csv"):
        pareto_verdict.from_directory(tmp_path)


def test_weight_agent_plan_prints_one_train_command_per_family_weight_and_seed(capsys):
    """docs/tradeoffs.md's commands: per planned family, the zoo's algorithm on a benchmark scenario, the weight grid
    as the env's reward_weights, the protocol's seeds, a step count that is set; the command line is train.py's."""
    import shlex

    from joulegym.evaluation import mo_agents
    from joulegym.training import parse_args

    commands = mo_agents.plan_commands()
    assert len(commands) == len(mo_agents.PLAN) * len(mo_agents.DEFAULT_GRID) * len(mo_agents.DEFAULT_SEEDS)
    for family, (scenario, steps) in mo_agents.PLAN.items():
        bench = get_family(family).benchmark
        assert scenario in bench.scenarios and steps > 0
        mine = [c for c in commands if f"--out runs/mo/{family}-w" in c]
        grid = {json.dumps(w, sort_keys=True) for w in mo_agents.weight_grid(family)}
        parsed = [parse_args(shlex.split(c)[2:]) for c in mine]
        assert {json.dumps(json.loads(a.env_kwargs)["reward_weights"], sort_keys=True) for a in parsed} == grid
        assert {a.algo for a in parsed} == {bench.zoo_algo} and {a.timesteps for a in parsed} == {steps}
        assert {a.seed for a in parsed} == set(mo_agents.DEFAULT_SEEDS) and len({a.out for a in parsed}) == 15
    assert mo_agents.main(["commands", "etf", "--seeds", "4", "--timesteps", "300"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 5 and all("--seed 4 --timesteps 300" in c for c in printed)
    with pytest.raises(SystemExit):
        mo_agents.main(["commands", "nosuchfamily"])
    assert "no weight-conditioned agent plan" in capsys.readouterr().err
