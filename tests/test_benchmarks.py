"""The benchmark harness runs and writes well-formed tables and a plot (a smoke test: no timings
asserted), and rewrites only the marked performance section of docs/performance.md."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests import scripts

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def harness():
    return scripts.load("harness")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_quick_run_writes_tables_and_plot(harness, tmp_path):
    written = harness.main(["--quick", "--ids", "joulegym/ETF-v0", "--growth", "none", "--out", str(tmp_path)])
    with open(written["kinds_csv"]) as handle:
        rows = list(csv.DictReader(handle))
    yardstick, rows = rows[0], rows[1:]
    assert yardstick["id"] == "CartPole-v1" and float(yardstick["x_cartpole"]) == 1.0
    assert {r["policy"] for r in rows} == {"random", "etf"}
    for row in rows:
        assert row["id"] == "joulegym/ETF-v0" and float(row["steps_per_s"]) > 0 and float(row["ratio"]) > 0
        assert float(row["x_cartpole"]) == pytest.approx(float(row["ratio"]) / float(yardstick["ratio"]))
    with open(written["vector_csv"]) as handle:
        vector = list(csv.DictReader(handle))
    assert {r["kind"] for r in vector} == {"sync (fixed action)", "sync (sampled actions)", "batched",
                                           "batched vs single"}
    assert {int(r["num_envs"]) for r in vector if r["kind"] == "batched vs single"} == {4, 16}
    assert all(float(r["value"]) > 0 for r in vector)
    report = written["report"].read_text()
    assert "| `joulegym/ETF-v0` | random |" in report and "## Vector envs" in report
    assert written["plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_batched_only_compares_batched_envs_with_single_envs(harness, tmp_path):
    """``--batched-only``: a row per id with a batched entry point and batch size (the targets' measurement); an id
    without one gives no row."""
    written = harness.main(["--quick", "--batched-only", "--ids", "joulegym/ETFPhi-v0", "joulegym/PowerFlow-v0",
                            "--out", str(tmp_path)])
    with open(written["batched_csv"]) as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["id"], int(r["num_envs"])) for r in rows] == [("joulegym/ETFPhi-v0", 4), ("joulegym/ETFPhi-v0", 16)]
    assert all(float(r["value"]) > 0 and float(r["min"]) <= float(r["value"]) <= float(r["max"]) for r in rows)
    assert "batched vs single" in written["batched_md"].read_text()


def test_real_trace_ids_are_skipped_with_a_note_without_their_data(harness, monkeypatch, tmp_path):
    monkeypatch.setenv("JOULEGYM_DATA", str(tmp_path))  # an empty data folder: nothing fetched
    ids = harness.real_trace_ids("powerflow")
    assert ids, "PowerFlow has real-trace scenarios"
    for env_id in ids:
        kwargs, note = harness.trace_kwargs(env_id)
        assert kwargs is None and "skipped" in note
    assert harness.trace_kwargs("joulegym/ETF-v0") == ({}, "")


def test_table_rewrite_touches_only_the_marked_section(harness, tmp_path):
    page = tmp_path / "performance.md"
    page.write_text(f"# title\n\nbefore\n{harness.TABLE_START}\nold table\n{harness.TABLE_END}\nafter\n")
    harness.rewrite_table("| new | table |", page)
    assert page.read_text() == (f"# title\n\nbefore\n{harness.TABLE_START}\n| new | table |\n"
                                f"{harness.TABLE_END}\nafter\n")
    text = harness.PERFORMANCE_PAGE.read_text()
    assert text.count(harness.TABLE_START) == 1 and text.count(harness.TABLE_END) == 1
    with pytest.raises(ValueError, match="harness"):
        harness.rewrite_table("x", _without_markers(tmp_path))


def _without_markers(tmp_path: Path) -> Path:
    path = tmp_path / "plain.md"
    path.write_text("# no markers\n")
    return path


class _Broken:
    """An env whose construction fails (a family mid-change)."""

    def __init__(self, **kwargs):
        raise RuntimeError("half-built family")


def test_a_kind_that_cannot_be_made_is_an_error_row(harness, monkeypatch):
    import gymnasium as gym

    from joulegym.core import family as registry

    env_id = "joulegym/BrokenKind-v0"
    gym.register(env_id, entry_point=_Broken)
    monkeypatch.setitem(registry.CATALOG, env_id, ("etf", None))
    try:
        cfg = harness.Settings(steps=20, repeats=1, noop_steps=100)
        rows = harness.kinds_table([env_id], cfg)
    finally:
        del gym.registry[env_id]
    assert len(rows) == 2 and rows[1]["id"] == env_id and "half-built family" in rows[1]["error"]
    assert any(env_id in note and "error" in note for note in cfg.notes)
    assert f"| `{env_id}` | - | error | RuntimeError: half-built family | | |" in harness.kinds_markdown(rows)


def test_the_floor_is_a_bare_gym_make_no_op(harness):
    """The ratios' floor: made with gym.make like joulegym's ids, but no TimeLimit (it never ends), stepped with a
    constant action and no policy call."""
    import gymnasium as gym

    harness.ensure_noop()
    env = gym.make(harness.FLOOR_ID)
    wrappers = []
    while isinstance(env, gym.Wrapper):
        wrappers.append(type(env).__name__)
        env = env.env
    assert "TimeLimit" not in wrappers and gym.spec(harness.FLOOR_ID).max_episode_steps is None
    stepper = harness.FloorStepper()
    stepper.run(5000)
    assert stepper.steps == 5000 and stepper.rate > 0


def test_family_benchmark_scripts_add_growth_curves(harness, monkeypatch, tmp_path):
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "bench_dream.py").write_text(
        "def harness_growth():\n"
        "    return [('dream-test', 'dream', 'tasks', 'us per step', lambda cfg: [(1, 2.0), (2, 4.0)])]\n")
    (tmp_path / "benchmarks" / "bench_qin.py").write_text("raise ImportError('qin mid-change')\n")
    monkeypatch.setattr(harness, "ROOT", tmp_path)
    monkeypatch.setattr(harness, "GROWTH", dict(harness.GROWTH))
    notes: list[str] = []
    assert harness.load_growth_modules(notes) == ["dream-test"]
    assert harness.GROWTH["dream-test"][0] == "dream"
    assert len(notes) == 1 and "bench_qin.py" in notes[0] and "qin mid-change" in notes[0]
    rows = harness.growth_rows(["dream-test"], harness.Settings())
    assert [(r["x"], r["cost"]) for r in rows] == [(1, 2.0), (2, 4.0)]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_timed_episode_is_the_one_simulate_runs(harness):
    """The whole-episode table times one episode of the trace as simulate() runs it (a slot per job, request
    actions, the policy's settings): the same schedule, so the same metrics."""
    from joulegym import baselines
    from joulegym.baselines.powerflow_simulate import simulate
    from joulegym.core.rollout import rollout

    policy = baselines.make("tiresias", family="powerflow")
    env = harness._episode_env("joulegym/PowerFlow-tiny-v0", policy, {})
    episode = rollout(env, policy, seed=0)
    base = env.unwrapped
    assert base.K == len(base.sim.jobs) and base.action_mode == "request"
    result = simulate(base.sim.jobs, policy, cluster=base.cluster, eta=harness.EPISODE_ETA)
    assert episode.metrics["avg_jct_s"] == result.avg_jct_s
    assert episode.metrics["total_energy_j"] == result.total_energy_j
