"""``evaluate.py --suite [FAMILY ...]``: reference policies and shipped agents on each family's benchmark (issue 17).

For each family whose descriptor carries a :class:`~joulegym.core.benchmark.Benchmark`, every reference policy
that can drive the benchmark's kind (``baselines.applicable``, ``random`` included) and every shipped agent runs
on every headline scenario from every held-out seed, through the one evaluation loop
(:func:`joulegym.evaluation.runner.evaluate`). Each episode's ranking metric is normalised per scenario
(random's mean = 0, the best published heuristic's mean = 1) and aggregated across seeds and scenarios as the
IQM with a stratified-bootstrap 95 % CI (:mod:`joulegym.evaluation.stats`, rliable's method). ``--quick`` runs
each benchmark's ``quick_scenarios`` on its first ``quick_seeds`` seeds (CI).

Output (``--out``, default ``results/leaderboard``; written beside it and moved into place as a whole, so the
page never mixes two runs): ``leaderboard.md``, ``leaderboard.csv`` (aggregate and per-scenario rows),
``episodes.csv`` (one row per episode), ``index.html`` (:mod:`joulegym.evaluation.page`), ``plots/`` (IQM
intervals, performance profiles, probability of improvement, one episode plot per scenario) and ``provenance/``
(one JSON per policy and family). The same code, seeds and agents give the same files: nothing time-dependent is
written (wall times go to the progress lines only).

Shipped agents (the zoo): ``joulegym/agents/zoo/<family>/<scenario>/<algo>/`` holding a weights-only agent
(``agent.json`` + ``weights.pt``, what ``train.py`` writes into ``OUT/agent/``; or a ``model.zip``, unpickled on
load) and ``provenance.json`` (:data:`PROVENANCE_KEYS`)::

    {"format": 1, "family": "etf", "scenario": "tx2-fig5", "env_id": "joulegym/ETF-tx2-fig5-v0",
     "env_kwargs": {}, "algo": "ppo", "seed": 0, "timesteps": 200000, "wall_time_s": 3412.5,
     "command": "python train.py --env joulegym/ETF-tx2-fig5-v0 --algo ppo --seed 0 ...",
     "commit": "<git commit>", "score": {"metric": "F_S", "mean": 0.43, "eval_seeds": [10000, ...]}}

``--zoo DIR`` reads another directory of the same layout. ``evaluate.py --ship RUN_DIR`` (:func:`ship_agent`)
puts a finished ``train.py`` run there, measuring and recording its held-out score.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from joulegym.core.benchmark import Benchmark
from joulegym.core.family import FamilyDescriptor, env_id, families, get_family
from joulegym.evaluation import stats
from joulegym.evaluation.runner import PolicyEntry, evaluate

DEFAULT_OUT = "results/leaderboard"
PROVENANCE_FILE = "provenance.json"
PROVENANCE_FORMAT = 1
PROVENANCE_KEYS = ("format", "family", "scenario", "env_id", "algo", "seed", "command", "commit", "wall_time_s",
                   "score")
BEST = "best heuristic"  # the label of the per-scenario best published heuristic in comparisons


# --- shipped agents ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ZooAgent:
    """One shipped agent: its directory and provenance."""

    family: str
    scenario: str
    algo: str
    path: Path
    provenance: dict[str, Any]

    def entry(self) -> PolicyEntry:
        return PolicyEntry(self.algo, "agent", self.algo, path=str(self.path))


def default_zoo() -> Path:
    """The packaged zoo, ``joulegym/agents/zoo``."""
    return Path(str(resources.files("joulegym.agents").joinpath("zoo")))


def find_agents(zoo: Path, family: str, scenario: str, expected_env_id: str) -> list[ZooAgent]:
    """The agents shipped for ``family``/``scenario`` under ``zoo`` (sorted by algorithm).

    :raises ValueError: naming the file and the field, for an agent directory without a valid provenance, an
        unknown algorithm or a provenance that describes another env.
    """
    from joulegym.agents.algos import ALGOS
    from joulegym.agents.weights import is_weights_dir

    base = Path(zoo) / family / scenario
    if not base.is_dir():
        return []
    agents = []
    for directory in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if directory.name not in ALGOS:
            raise ValueError(f"zoo agent {str(directory)!r}: the directory name must be an algorithm, one of "
                             f"{sorted(ALGOS)}")
        if not (is_weights_dir(directory) or (directory / "model.zip").is_file()):
            raise ValueError(f"zoo agent {str(directory)!r} holds neither agent.json + weights.pt nor model.zip")
        provenance = read_provenance(directory / PROVENANCE_FILE)
        for key, want in (("family", family), ("scenario", scenario), ("algo", directory.name),
                          ("env_id", expected_env_id)):
            if provenance[key] != want:
                raise ValueError(f"{directory / PROVENANCE_FILE}: {key}={provenance[key]!r}, expected {want!r} "
                                 "(the directory it lies in)")
        agents.append(ZooAgent(family, scenario, directory.name, directory, provenance))
    return agents


def read_provenance(path: Path) -> dict[str, Any]:
    """A zoo agent's ``provenance.json``, checked for :data:`PROVENANCE_KEYS`."""
    if not path.is_file():
        raise ValueError(f"zoo agent {str(path.parent)!r} has no {PROVENANCE_FILE}")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err.msg})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: must hold a JSON object with keys {list(PROVENANCE_KEYS)}")
    missing = [k for k in PROVENANCE_KEYS if k not in data]
    if missing:
        raise ValueError(f"{path}: missing keys {missing}; required: {list(PROVENANCE_KEYS)}")
    if data["format"] != PROVENANCE_FORMAT:
        raise ValueError(f"{path}: format={data['format']!r}, expected {PROVENANCE_FORMAT}")
    return data


def benchmark_scenario(scenario_id: str) -> tuple[FamilyDescriptor, str]:
    """The family and benchmark scenario whose suite env id is ``scenario_id``.

    :raises ValueError: if no family's benchmark runs that id (listing the ids that are).
    """
    known = []
    for descriptor in families():
        bench = descriptor.benchmark
        if bench is None:
            continue
        version = descriptor.kind(bench.kind).version
        for scenario in bench.scenarios:
            known.append(env_id(bench.kind, scenario, version))
            if known[-1] == scenario_id:
                return descriptor, scenario
    raise ValueError(f"env {scenario_id!r} is not a benchmark scenario; the suite runs {known}")


def agent_score(agent: PolicyEntry, descriptor: FamilyDescriptor, scenario: str,
                seeds: Sequence[int] | None = None) -> dict[str, Any]:
    """The agent's benchmark score on ``scenario``: the mean metric and the normalised IQM over ``seeds`` (the
    benchmark's held-out seeds by default), normalised against random and the best heuristic on the same seeds."""
    bench = descriptor.benchmark
    assert bench is not None
    seeds = tuple(seeds) if seeds is not None else bench.eval_seeds
    scenario_id = env_id(bench.kind, scenario, descriptor.kind(bench.kind).version)
    entries = [agent, *(PolicyEntry(n, "reference", n, family=descriptor.name)
                        for n in dict.fromkeys(("random", bench.best_heuristic[scenario])))]
    episodes, _, _ = evaluate(scenario_id, entries, seeds, record=False)
    scored, _ = _normalise(_episode_rows(episodes, descriptor.name, scenario, bench), bench, (scenario,))
    mine = scored[scored["policy"] == agent.label]
    return {"metric": bench.metric, "mean": float(mine["metric"].mean()),
            "normalised_iqm": float(stats.iqm(mine["normalised"].to_numpy())), "eval_seeds": list(seeds)}


def ship_agent(run_dir: str | Path, zoo: str | Path | None = None, commit: str | None = None) -> Path:
    """Copy a finished ``train.py`` run's weights-only agent into the zoo with its ``provenance.json``.

    The run must be complete, trained on a benchmark scenario's id with no env kwargs and a training seed below
    :data:`~joulegym.core.benchmark.TRAINING_SEED_LIMIT`; its score on the held-out seeds is measured and recorded.
    Returns the agent's zoo directory.
    """
    import shutil

    from joulegym.agents.weights import AGENT_FILE, WEIGHTS_FILE, is_weights_dir
    from joulegym.core.benchmark import TRAINING_SEED_LIMIT
    from joulegym.core.io import write_atomic

    run_dir = Path(run_dir)
    config_path = run_dir / "config.json"
    if not config_path.is_file() or not is_weights_dir(run_dir / "agent"):
        raise ValueError(f"{str(run_dir)!r} is not a train.py run (config.json and agent/ expected)")
    config = json.loads(config_path.read_text())
    if not config.get("complete"):
        raise ValueError(f"{config_path}: the run is not complete (\"complete\": false); finish it with --resume")
    if config.get("env_kwargs"):
        raise ValueError(f"{config_path}: env_kwargs={config['env_kwargs']!r}; the benchmark runs scenarios as named")
    if not 0 <= int(config["seed"]) < TRAINING_SEED_LIMIT:
        raise ValueError(f"{config_path}: seed={config['seed']!r} must be in [0, {TRAINING_SEED_LIMIT})")
    descriptor, scenario = benchmark_scenario(config["env_id"])
    algo = config["algo"]
    score = agent_score(PolicyEntry(algo, "agent", algo, path=str(run_dir / "agent")), descriptor, scenario)
    target = Path(zoo if zoo is not None else default_zoo()) / descriptor.name / scenario / algo
    target.mkdir(parents=True, exist_ok=True)
    for name in (AGENT_FILE, WEIGHTS_FILE):
        shutil.copyfile(run_dir / "agent" / name, target / name)
    command = (f"python train.py --env {config['env_id']} --algo {algo} --seed {config['seed']} "
               f"--timesteps {config['timesteps']} --n-envs {config.get('n_envs', 1)}")
    provenance = {"format": PROVENANCE_FORMAT, "family": descriptor.name, "scenario": scenario,
                  "env_id": config["env_id"], "env_kwargs": {}, "algo": algo, "seed": int(config["seed"]),
                  "timesteps": int(config.get("num_timesteps", config["timesteps"])),
                  "wall_time_s": float(config.get("train_seconds", float("nan"))), "command": command,
                  "commit": commit if commit is not None else _git_commit(), "hyperparams": config.get("hyperparams"),
                  "versions": config.get("versions"), "score": score}
    write_atomic(target / PROVENANCE_FILE, json.dumps(provenance, indent=2, sort_keys=True) + "\n")
    return target


def _git_commit() -> str:
    import subprocess

    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=False,
                              cwd=Path(__file__).resolve().parent)
    except OSError:
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "unknown"


# --- progress ---------------------------------------------------------------------------------------------------
class Progress:
    """``[k/n] what (seconds)`` lines; on a terminal one line rewritten in place."""

    def __init__(self, total: int, stream: IO[str] | None = None) -> None:
        self.total, self.done = total, 0
        self.stream = stream if stream is not None else sys.stdout
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.perf_counter()

    def step(self, what: str, seconds: float) -> None:
        self.done += 1
        line = f"[{self.done}/{self.total}] {what} ({seconds:.1f} s; {time.perf_counter() - self.start:.0f} s total)"
        if self.tty:
            self.stream.write("\r\033[K" + line + ("\n" if self.done == self.total else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def note(self, text: str) -> None:
        self.stream.write(("\r\033[K" if self.tty else "") + text + "\n")
        self.stream.flush()


# --- results ----------------------------------------------------------------------------------------------------
@dataclass
class FamilyResult:
    """One family's benchmark results, as the page shows them."""

    descriptor: FamilyDescriptor
    benchmark: Benchmark
    scenarios: tuple[str, ...]
    seeds: tuple[int, ...]
    episodes: pd.DataFrame  # one row per episode
    aggregate: pd.DataFrame  # one row per policy, ranked
    per_scenario: pd.DataFrame  # one row per (scenario, policy)
    plots: dict[str, str] = field(default_factory=dict)  # caption -> path relative to the page
    episode_plots: dict[str, str] = field(default_factory=dict)  # scenario -> path
    provenance: dict[str, str] = field(default_factory=dict)  # policy label -> path
    notes: list[str] = field(default_factory=list)
    agents: dict[str, list[ZooAgent]] = field(default_factory=dict)  # scenario -> shipped agents run on it

    @property
    def name(self) -> str:
        return self.descriptor.name


def suite_families(names: Sequence[str]) -> list[FamilyDescriptor]:
    """The descriptors to run: ``names`` (every family with a benchmark when empty)."""
    if not names:
        chosen = [d for d in families() if d.benchmark is not None]
        if not chosen:
            raise ValueError("no family has a benchmark")
        return chosen
    chosen = []
    for name in names:
        descriptor = get_family(name.lower())
        if descriptor.benchmark is None:
            with_one = [d.name for d in families() if d.benchmark is not None]
            raise ValueError(f"--suite {name!r}: family has no benchmark yet; families with one: {with_one}")
        if descriptor not in chosen:
            chosen.append(descriptor)
    return chosen


def _entries(descriptor: FamilyDescriptor, scenario_id: str) -> list[PolicyEntry]:
    import gymnasium as gym

    from joulegym import baselines

    env = gym.make(scenario_id)
    try:
        names = baselines.applicable(env)
    finally:
        env.close()
    return [PolicyEntry(n, "reference", n, family=descriptor.name) for n in names]


def run_family(descriptor: FamilyDescriptor, quick: bool, zoo: Path | None, progress: Progress | None = None,
               evaluate_fn: Callable = evaluate) -> tuple[FamilyResult, dict[str, dict]]:
    """Run ``descriptor``'s benchmark. Returns the results and the recorded first episode per scenario and policy
    (for the episode plots). ``evaluate_fn`` runs the episodes: :func:`~joulegym.evaluation.runner.evaluate`, or
    with ``--ray`` the same function fanned out as Ray tasks (:class:`joulegym.integrations.parallel.RayEvaluate`)."""
    bench = descriptor.benchmark
    assert bench is not None
    version = descriptor.kind(bench.kind).version
    seeds = bench.seeds(quick)
    scenarios = bench.scenario_names(quick)
    rows: list[pd.DataFrame] = []
    traces: dict[str, dict] = {}
    notes: list[str] = []
    agents: dict[str, list[ZooAgent]] = {}
    for scenario in scenarios:
        scenario_id = env_id(bench.kind, scenario, version)
        agents[scenario] = find_agents(zoo, descriptor.name, scenario, scenario_id) if zoo is not None else []
        entries = _entries(descriptor, scenario_id) + [a.entry() for a in agents[scenario]]
        traces[scenario] = {}
        for entry in entries:
            start = time.perf_counter()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", UserWarning)
                try:
                    episodes, _, skipped = evaluate_fn(scenario_id, [entry], seeds, record=False)
                except ValueError as err:
                    if "can drive" not in str(err):
                        raise
                    episodes, skipped = None, [entry.label]
                if not skipped:
                    # the episode plot: the first seed again, recorded with the full info (same seed, same episode)
                    _, recorded, _ = evaluate_fn(scenario_id, [entry], seeds[:1], record=True)
                    traces[scenario].update(recorded)
            if skipped:
                reason = next((str(w.message) for w in caught if "skipping" in str(w.message)), "not applicable")
                notes.append(f"{scenario}: {reason}")
            else:
                rows.append(_episode_rows(episodes, descriptor.name, scenario, bench))
            if progress is not None:
                progress.step(f"{descriptor.name}/{scenario} {entry.label}"
                              f"{' skipped' if skipped else f' x {len(seeds)} seeds'}", time.perf_counter() - start)
    episodes = pd.concat(rows, ignore_index=True)
    episodes, normaliser_notes = _normalise(episodes, bench, scenarios)
    notes += normaliser_notes
    notes += truncation_notes(episodes)
    per_scenario = _per_scenario(episodes, bench, scenarios)
    aggregate = _aggregate(episodes, bench, scenarios)
    return FamilyResult(descriptor, bench, scenarios, seeds, episodes, aggregate, per_scenario, notes=notes,
                        agents=agents), traces


def _episode_rows(episodes: pd.DataFrame, family: str, scenario: str, bench: Benchmark) -> pd.DataFrame:
    metrics = [dict(row) for _, row in episodes.iterrows()]
    out = pd.DataFrame({
        "family": family, "scenario": scenario, "env_id": episodes["env_id"], "policy": episodes["policy"],
        "kind": episodes["kind"], "seed": episodes["seed"].astype(int), "return": episodes["return"],
        "length": episodes["length"].astype(int), "metric": [bench.value(m) for m in metrics]})
    for key in bench.metric_terms:
        out[key] = episodes[key].to_numpy(dtype=float)
    # an episode cut by the env's horizon (PowerFlow: jobs still running) reports metrics over what finished
    out["truncated"] = episodes["truncated"].to_numpy(dtype=float) if "truncated" in episodes else 0.0
    return out


def _normalise(episodes: pd.DataFrame, bench: Benchmark, scenarios: Sequence[str]) -> tuple[pd.DataFrame, list[str]]:
    """Add ``normalised``: per scenario, random's mean metric -> 0 and the best heuristic's -> 1."""
    notes = []
    episodes = episodes.copy()
    episodes["normalised"] = np.nan
    sign = 1.0 if bench.higher_is_better else -1.0
    for scenario in scenarios:
        here = episodes["scenario"] == scenario
        means = episodes[here].groupby("policy", sort=True)["metric"].mean()
        best = bench.best_heuristic[scenario]
        for needed in ("random", best):
            if needed not in means.index:
                raise ValueError(f"scenario {scenario!r}: policy {needed!r} did not run, so the score cannot be "
                                 "normalised")
        try:
            episodes.loc[here, "normalised"] = stats.normalise(episodes.loc[here, "metric"].to_numpy(),
                                                               means["random"], means[best])
        except ValueError as err:
            raise ValueError(f"scenario {scenario!r}: {err}") from None
        published = [h for h in bench.heuristics if h in means.index and h != best]
        better = [h for h in published if sign * (means[h] - means[best]) > 1e-12 * max(1.0, abs(means[best]))]
        if better:
            notes.append(f"{scenario}: the published heuristic{'s' if len(better) > 1 else ''} "
                         f"{', '.join(better)} beat{'' if len(better) > 1 else 's'} the normaliser {best} on these "
                         f"seeds ({', '.join(f'{h} {means[h]:.4g}' for h in better)} vs {means[best]:.4g})")
    return episodes, notes


def truncation_notes(episodes: pd.DataFrame) -> list[str]:
    """One note per scenario and policy with episodes whose metrics report ``truncated`` (cut by the horizon)."""
    cut = episodes[episodes["truncated"] > 0].groupby(["scenario", "policy"], sort=False).size()
    return [f"{scenario}: {count} episode(s) of {policy} hit the env's horizon (truncated); their metric counts only "
            "what finished" for (scenario, policy), count in cut.items()]


def _per_scenario(episodes: pd.DataFrame, bench: Benchmark, scenarios: Sequence[str]) -> pd.DataFrame:
    records = []
    for scenario in scenarios:
        group = episodes[episodes["scenario"] == scenario]
        best = bench.best_heuristic[scenario]
        for policy, rows in group.groupby("policy", sort=False):
            scores = rows["normalised"].to_numpy(dtype=float)
            agg = stats.aggregate(scores[:, None])
            record = {"family": rows["family"].iloc[0], "scope": scenario, "policy": policy,
                      "kind": rows["kind"].iloc[0], "runs": len(rows), "scenarios": 1,
                      "metric_mean": float(rows["metric"].mean()), "metric_std": _std(rows["metric"]),
                      "score_mean": agg["mean"], "score_iqm": agg["iqm"], "score_ci_low": agg["iqm_ci_low"],
                      "score_ci_high": agg["iqm_ci_high"], "normaliser": best}
            for key in bench.metric_terms:
                record[f"{key}_mean"] = float(rows[key].mean())
            records.append(record)
    frame = pd.DataFrame(records)
    order = frame["scope"].map({s: i for i, s in enumerate(scenarios)})
    return frame.assign(_o=order).sort_values(["_o", "score_mean", "policy"], ascending=[True, False, True],
                                              kind="mergesort").drop(columns="_o").reset_index(drop=True)


def _std(values: pd.Series) -> float:
    std = float(np.std(values.to_numpy(dtype=float)))
    return 0.0 if std <= 1e-12 * max(1.0, float(np.max(np.abs(values)))) else std


def score_matrix(episodes: pd.DataFrame, policy: str, scenarios: Sequence[str]) -> tuple[np.ndarray, list[str]]:
    """``policy``'s normalised scores as (seeds, scenarios) over the scenarios it ran on (and their names)."""
    rows = episodes[episodes["policy"] == policy]
    covered = [s for s in scenarios if (rows["scenario"] == s).any()]
    table = rows.pivot_table(index="seed", columns="scenario", values="normalised", aggfunc="first")
    return table[covered].to_numpy(dtype=float), covered


def best_matrix(episodes: pd.DataFrame, bench: Benchmark, scenarios: Sequence[str]) -> np.ndarray:
    """The per-scenario best published heuristic's normalised scores, (seeds, scenarios)."""
    columns = []
    for scenario in scenarios:
        rows = episodes[(episodes["scenario"] == scenario) & (episodes["policy"] == bench.best_heuristic[scenario])]
        columns.append(rows.sort_values("seed")["normalised"].to_numpy(dtype=float))
    return np.column_stack(columns)


def _aggregate(episodes: pd.DataFrame, bench: Benchmark, scenarios: Sequence[str]) -> pd.DataFrame:
    records = []
    best = best_matrix(episodes, bench, scenarios)
    for policy, rows in episodes.groupby("policy", sort=False):
        matrix, covered = score_matrix(episodes, policy, scenarios)
        agg = stats.aggregate(matrix)
        columns = [list(scenarios).index(s) for s in covered]
        # paired by seed: every policy runs on the same seeds (the same instance and draws), see stats
        p, low, high = stats.probability_of_improvement(matrix, best[:, columns], paired=True)
        records.append({"family": rows["family"].iloc[0], "scope": "all", "policy": policy,
                        "kind": rows["kind"].iloc[0], "runs": int(matrix.size), "scenarios": len(covered),
                        "metric_mean": np.nan, "metric_std": np.nan, "score_mean": agg["mean"],
                        "score_iqm": agg["iqm"], "score_ci_low": agg["iqm_ci_low"], "score_ci_high": agg["iqm_ci_high"],
                        "normaliser": "per scenario", "poi_vs_best": p, "poi_ci_low": low, "poi_ci_high": high})
    frame = pd.DataFrame(records)
    return frame.sort_values(["score_iqm", "score_mean", "policy"], ascending=[False, False, True],
                             kind="mergesort").reset_index(drop=True)


# --- plots ------------------------------------------------------------------------------------------------------
def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def write_plots(result: FamilyResult, traces: dict[str, dict], out: Path) -> list[Path]:
    """The family's IQM-interval, performance-profile, probability-of-improvement and episode plots."""
    from joulegym.core.io import save_figure
    from joulegym.evaluation.hooks import hooks_for
    from joulegym.evaluation.plots import reward_plot

    plots = out / "plots"
    plots.mkdir(exist_ok=True)
    written = []
    name = result.name
    for caption, fig, file in (
            ("IQM of the normalised score with stratified-bootstrap 95 % CIs", _iqm_plot(result), f"{name}-iqm.png"),
            ("Performance profile: fraction of runs above a normalised score", _profile_plot(result),
             f"{name}-profile.png"),
            ("Probability of improvement over the best published heuristic", _poi_plot(result), f"{name}-poi.png")):
        written.append(save_figure(fig, plots / file))
        result.plots[caption] = f"plots/{file}"
    hooks = hooks_for(name)
    version = result.descriptor.kind(result.benchmark.kind).version
    for scenario in result.scenarios:
        scenario_id = env_id(result.benchmark.kind, scenario, version)
        recorded = traces.get(scenario, {})
        if not recorded:
            continue
        fig = hooks.episode_plot(recorded, scenario_id) if hooks.episode_plot else reward_plot(recorded, scenario_id)
        file = f"{name}-{_slug(scenario)}-episode.png"
        written.append(save_figure(fig, plots / file))
        result.episode_plots[scenario] = f"plots/{file}"
    return written


def _iqm_plot(result: FamilyResult):
    from joulegym.core.plotting import new_figure

    frame = result.aggregate.iloc[::-1]
    fig, axes = new_figure(1, 1, size=(6.4, 0.6 + 0.32 * len(frame)))
    ax = axes[0, 0]
    y = np.arange(len(frame))
    colours = ["tab:orange" if k == "agent" else "tab:blue" for k in frame["kind"]]
    ax.hlines(y, frame["score_ci_low"], frame["score_ci_high"], colors=colours, lw=6, alpha=0.5)
    ax.plot(frame["score_iqm"], y, "k|", ms=12)
    ax.axvline(0.0, color="grey", lw=0.8, ls=":")
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_yticks(y, [f"{p} ({s}/{len(result.scenarios)})" if s < len(result.scenarios) else p
                      for p, s in zip(frame["policy"], frame["scenarios"], strict=True)])
    ax.set_xlabel(f"normalised {result.benchmark.metric} (random = 0, best heuristic = 1): IQM, 95 % CI")
    ax.set_title(f"{result.name}: {len(result.scenarios)} scenarios x {len(result.seeds)} seeds")
    fig.tight_layout()
    return fig


def _profile_plot(result: FamilyResult):
    from joulegym.core.plotting import legend_outside, new_figure

    scores = result.episodes["normalised"].to_numpy(dtype=float)
    low, high = min(0.0, float(np.min(scores))), max(1.0, float(np.max(scores)))
    margin = 0.05 * (high - low)
    taus = np.linspace(low - margin, high + margin, 101)
    fig, axes = new_figure(1, 1, size=(7.6, 4.0))  # wider: the legend sits to the right
    ax = axes[0, 0]
    for policy in result.aggregate["policy"]:
        matrix, _ = score_matrix(result.episodes, policy, result.scenarios)
        fraction, band_low, band_high = stats.performance_profile(matrix, taus)
        line, = ax.plot(taus, fraction, lw=1.2, label=policy)
        ax.fill_between(taus, band_low, band_high, color=line.get_color(), alpha=0.15)
    ax.set_xlabel(f"normalised {result.benchmark.metric} tau")
    ax.set_ylabel("fraction of runs with score > tau")
    ax.set_title(f"{result.name}: performance profiles (95 % bands)")
    legend_outside(ax)  # beside the axes: the curves fill the plot from corner to corner
    fig.tight_layout()
    return fig


def _poi_plot(result: FamilyResult):
    from joulegym.core.plotting import new_figure

    frame = result.aggregate.iloc[::-1]
    fig, axes = new_figure(1, 1, size=(6.4, 0.6 + 0.32 * len(frame)))
    ax = axes[0, 0]
    y = np.arange(len(frame))
    ax.hlines(y, frame["poi_ci_low"], frame["poi_ci_high"], colors="tab:green", lw=6, alpha=0.5)
    ax.plot(frame["poi_vs_best"], y, "k|", ms=12)
    ax.axvline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_xlim(-0.02, 1.02)
    ax.set_yticks(y, list(frame["policy"]))
    ax.set_xlabel(f"P(policy > {BEST}) per run, averaged over scenarios (95 % CI)")
    ax.set_title(f"{result.name}: probability of improvement")
    fig.tight_layout()
    return fig


# --- provenance -------------------------------------------------------------------------------------------------
def write_provenance(result: FamilyResult, out: Path) -> list[Path]:
    """One JSON per policy: how a reference policy is built, or every shipped agent's provenance."""
    import joulegym
    from joulegym import baselines
    from joulegym.core.io import write_atomic

    folder = out / "provenance" / result.name
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for _, row in result.aggregate.iterrows():
        policy = row["policy"]
        if row["kind"] == "agent":
            data: dict[str, Any] = {"kind": "agent", "family": result.name, "algo": policy, "scenarios": {
                s: a.provenance for s, found in result.agents.items() for a in found if a.algo == policy}}
        else:
            spec = baselines.spec(policy, result.name)
            data = {"kind": "reference", "family": result.name, "policy": policy,
                    "factory": f"{spec.factory.__module__}.{getattr(spec.factory, '__qualname__', spec.factory)}",
                    "description": spec.description,
                    "joulegym_version": joulegym.__version__,
                    "best_heuristic_on": [s for s in result.scenarios if result.benchmark.best_heuristic[s] == policy],
                    "published": policy in result.benchmark.heuristics}
        path = folder / f"{_slug(policy)}.json"
        written.append(write_atomic(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"))
        result.provenance[policy] = f"provenance/{result.name}/{path.name}"
    return written


# --- the suite --------------------------------------------------------------------------------------------------
def command_line(names: Sequence[str], quick: bool, out: str, zoo: str | None) -> str:
    """The one command that regenerates the page."""
    parts = ["python evaluate.py --suite", *names]
    if quick:
        parts.append("--quick")
    if zoo is not None:
        parts += ["--zoo", zoo]
    parts += ["--out", out]
    return " ".join(parts)


def leaderboard_csv(results: Sequence[FamilyResult]) -> pd.DataFrame:
    frames = []
    for result in results:
        frames += [result.aggregate, result.per_scenario]
    frame = pd.concat(frames, ignore_index=True)
    first = ["family", "scope", "policy", "kind", "runs", "scenarios", "score_iqm", "score_ci_low", "score_ci_high",
             "score_mean", "poi_vs_best", "poi_ci_low", "poi_ci_high", "metric_mean", "metric_std", "normaliser"]
    return frame[[c for c in first if c in frame] + [c for c in frame.columns if c not in first]]


def run_suite(names: Sequence[str] = (), *, quick: bool = False, out: str | Path | None = None,
              zoo: str | Path | None = None, plots: bool = True, stream: IO[str] | None = None,
              evaluate_fn: Callable = evaluate) -> list[Path]:
    """``evaluate.py --suite``: run, then write every file into ``out`` as a whole. Returns the written paths.
    ``evaluate_fn``: see :func:`run_family` (the files are the same whichever runs the episodes)."""
    import joulegym  # noqa: F401  (registers the ids)
    from joulegym.core.io import ResultDir, write_atomic, write_csv
    from joulegym.evaluation import page

    descriptors = suite_families(names)
    out_text = str(out) if out is not None else (DEFAULT_OUT + ("-quick" if quick else ""))
    result_dir = ResultDir(out_text)  # checked before the work
    zoo_path = Path(zoo) if zoo is not None else default_zoo()
    command = command_line([d.name for d in descriptors], quick, out_text, None if zoo is None else str(zoo))
    total = 0
    for d in descriptors:
        assert d.benchmark is not None
        for scenario in d.benchmark.scenario_names(quick):
            total += len(_entries(d, env_id(d.benchmark.kind, scenario, d.kind(d.benchmark.kind).version)))
            total += len(find_agents(zoo_path, d.name, scenario,
                                     env_id(d.benchmark.kind, scenario, d.kind(d.benchmark.kind).version)))
    progress = Progress(total, stream)
    progress.note(f"suite: {', '.join(d.name for d in descriptors)}{' (quick)' if quick else ''}: {total} policy runs")
    runs = [run_family(d, quick, zoo_path, progress, evaluate_fn) for d in descriptors]
    results = [r for r, _ in runs]
    with result_dir as tmp:
        written = []
        for result, traces in runs:
            if plots:
                written += write_plots(result, traces, tmp)
            written += write_provenance(result, tmp)
        episodes = pd.concat([r.episodes for r in results], ignore_index=True)
        written.append(write_csv(episodes, tmp / "episodes.csv"))
        written.append(write_csv(leaderboard_csv(results), tmp / "leaderboard.csv"))
        written.append(write_atomic(tmp / "leaderboard.md", page.markdown(results, command, quick)))
        written.append(write_atomic(tmp / "index.html", page.html(results, command, quick)))
    written = [result_dir.final(p) for p in written]
    progress.note(f"wrote {len(written)} files into {result_dir.out} (open {result_dir.out / 'index.html'})")
    return written
