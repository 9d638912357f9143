"""``evaluate.py --suite [FAMILY ...]``: every policy and shipped agent on each family's benchmark, under the same
rules, scored against deployable yardsticks (docs/leaderboard.md).

For each family whose descriptor carries a :class:`~joulegym.core.benchmark.Benchmark`, every reference policy that
can drive the benchmark's kind (``baselines.applicable``, ``random`` included) and every training run of every
shipped agent runs on every headline scenario from every held-out seed, through the one evaluation loop
(:func:`joulegym.evaluation.runner.evaluate`), under the scenario's configuration: a policy's ``env_config`` may
set only the benchmark's ``policy_settings`` (a ``ValueError`` otherwise), so a budget, what is observable and the
profiling costs bind every policy alike; where the benchmark has a budget, every episode is checked against it.

Every policy has a class (the page and the CSV show it): ``agent``, ``heuristic`` (published), ``baseline`` (simple,
deployable) or ``privileged`` (its ``privileged`` flag: an upper bound, in its own table, never an anchor, never
ranked with deployable policies). Scores are normalised per scenario against two deployable anchors, paired by seed
(:mod:`joulegym.evaluation.scoring`): the zero (the family's simple baseline) and the one (its best published
heuristic). The headline is the mean over seeds and scenarios with a stratified-bootstrap 95 % CI (rliable's
method, :mod:`joulegym.evaluation.stats`), the IQM beside it; "beats the best heuristic?" is a per-seed paired
difference with a bootstrap CI and a win/tie/loss count, also against the best deployable non-learned policy of
each scenario. Only policies that ran on every headline scenario are ranked; the others are listed per scenario.
``--quick`` runs each benchmark's ``quick_scenarios`` on its first ``quick_seeds`` seeds (CI).

Output (``--out``, default ``results/leaderboard``; written beside it and moved into place as a whole, so the
page never mixes two runs): ``leaderboard.md``, ``leaderboard.csv`` (aggregate and per-scenario rows),
``episodes.csv`` (one row per episode), ``index.html`` (:mod:`joulegym.evaluation.page`), ``plots/``
(:mod:`joulegym.evaluation.figures`: score intervals, performance profiles, probability of improvement, learning
curves, one episode plot per scenario) and ``provenance/`` (one JSON per policy and family). The same code, seeds
and agents give the same files: nothing time-dependent is written (wall times go to the progress lines only).

The zoo of shipped agents, its provenance and ``evaluate.py --ship RUN_DIR`` (:func:`ship_agent`) are in
:mod:`joulegym.evaluation.zoo`.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from joulegym.core.benchmark import Benchmark
from joulegym.core.family import FamilyDescriptor, env_id, families, get_family
from joulegym.evaluation import scoring, stats
from joulegym.evaluation.runner import PolicyEntry, evaluate
from joulegym.evaluation.zoo import (  # noqa: F401  (the suite's zoo API, re-exported)
    PROVENANCE_FILE,
    PROVENANCE_FORMAT,
    PROVENANCE_KEYS,
    ZooAgent,
    ZooRun,
    benchmark_scenario,
    default_zoo,
    find_agents,
    git_commit,
    read_provenance,
    require_agent_libraries,
    scenario_spaces,
    ship_run,
)

DEFAULT_OUT = "results/leaderboard"
NO_RUN = -1  # the ``run`` of a reference policy's episodes (agents: their training seed)
HELD_IN = "held-in"  # an agent on its training scenario: held-out seeds of the distribution it trained on
HELD_OUT = "held-out instance"  # an agent on a headline scenario it never trained on


# --- one agent's score (provenance, --ship) ----------------------------------------------------------------------
def agent_score(agent: PolicyEntry, descriptor: FamilyDescriptor, scenario: str,
                seeds: Sequence[int] | None = None) -> dict[str, Any]:
    """The agent's benchmark score on ``scenario`` over ``seeds`` (the benchmark's held-out seeds by default): its
    mean metric and mean normalised score against the scenario's anchors on the same seeds."""
    bench = descriptor.benchmark
    assert bench is not None
    seeds = tuple(seeds) if seeds is not None else bench.eval_seeds
    scenario_id = env_id(bench.kind, scenario, descriptor.kind(bench.kind).version)
    anchors = dict.fromkeys((bench.zero[scenario], bench.best_heuristic[scenario]))
    entries = [agent, *(PolicyEntry(n, "reference", n, family=descriptor.name) for n in anchors)]
    episodes, _, _ = evaluate(scenario_id, entries, seeds, record=False)
    rows = _episode_rows(episodes, descriptor.name, scenario, bench).assign(run=NO_RUN)
    scored, _, _ = scoring.normalise(rows, bench, (scenario,))
    mine = scored[scored["policy"] == agent.label]
    return {"metric": bench.metric, "mean": float(mine["metric"].mean()),
            "normalised_mean": float(mine["normalised"].mean()), "eval_seeds": list(seeds)}


def ship_agent(run_dir: str | Path, zoo: str | Path | None = None, commit: str | None = None) -> Path:
    """``evaluate.py --ship RUN_DIR``: copy a finished ``train.py`` run's weights-only agent into the zoo as run
    ``seed<k>`` with a format-2 provenance and its measured held-out score. The run must be complete, trained on a
    benchmark scenario's id with no env kwargs and a training seed below the validation seeds. A run without a
    validation record (plain ``train.py``) is shipped with ``"validation": null``; the training protocol
    (:mod:`joulegym.protocol`) ships with model selection and learning curves."""
    from joulegym.agents.weights import is_weights_dir
    from joulegym.core.benchmark import VALIDATION_SEED_BASE

    run_dir = Path(run_dir)
    config_path = run_dir / "config.json"
    if not config_path.is_file() or not is_weights_dir(run_dir / "agent"):
        raise ValueError(f"{str(run_dir)!r} is not a train.py run (config.json and agent/ expected)")
    config = json.loads(config_path.read_text())
    if not config.get("complete"):
        raise ValueError(f"{config_path}: the run is not complete (\"complete\": false); finish it with --resume")
    if config.get("env_kwargs"):
        raise ValueError(f"{config_path}: env_kwargs={config['env_kwargs']!r}; the benchmark runs scenarios as named")
    if not (0 <= int(config["seed"]) and int(config["seed"]) + int(config.get("n_envs", 1)) <= VALIDATION_SEED_BASE):
        raise ValueError(f"{config_path}: seed={config['seed']!r} with n_envs={config.get('n_envs', 1)!r} must stay in "
                         f"[0, {VALIDATION_SEED_BASE}) (env i trains from seed + i; the validation and held-out seeds "
                         "are above)")
    descriptor, scenario = benchmark_scenario(config["env_id"])
    algo = config["algo"]
    score = agent_score(PolicyEntry(algo, "agent", algo, path=str(run_dir / "agent")), descriptor, scenario)
    command = (f"python train.py --env {config['env_id']} --algo {algo} --seed {config['seed']} "
               f"--timesteps {config['timesteps']} --n-envs {config.get('n_envs', 1)}")
    cpu = config.get("cpu_seconds")
    provenance = {"family": descriptor.name, "scenario": scenario, "env_id": config["env_id"], "env_kwargs": {},
                  "algo": algo, "seed": int(config["seed"]), "command": command,
                  "commit": commit if commit is not None else git_commit(),
                  "timesteps": int(config.get("num_timesteps", config["timesteps"])),
                  "wall_time_s": float(config.get("train_seconds", float("nan"))), "cpu_seconds": cpu,
                  "train_cpu_seconds": cpu, "cpu_budget_s": None, "hyperparams": config.get("hyperparams"),
                  "versions": config.get("versions"), "n_envs": int(config.get("n_envs", 1)), "validation": None,
                  "score": score}
    return ship_run(run_dir / "agent", provenance, zoo)


# --- progress ---------------------------------------------------------------------------------------------------
class Progress:
    """``[k/n] what (CPU-s, wall s; totals so far)`` lines; on a terminal one line rewritten in place. CPU time is
    this process's (``time.process_time``), wall time the elapsed time (``time.perf_counter``): on a shared machine
    the two differ by the process's CPU share, so each line states both."""

    def __init__(self, total: int, stream: IO[str] | None = None) -> None:
        self.total, self.done = total, 0
        self.stream = stream if stream is not None else sys.stdout
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = self.last = (time.process_time(), time.perf_counter())

    def step(self, what: str) -> None:
        """One finished unit of work: its CPU and wall seconds since the previous step (or the start)."""
        self.done += 1
        now = (time.process_time(), time.perf_counter())
        cpu, wall = now[0] - self.last[0], now[1] - self.last[1]
        self.last = now
        line = (f"[{self.done}/{self.total}] {what} ({cpu:.1f} CPU-s, {wall:.1f} s wall; so far "
                f"{now[0] - self.start[0]:.0f} CPU-s, {now[1] - self.start[1]:.0f} s wall)")
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
    episodes: pd.DataFrame  # one row per episode (and training run)
    aggregate: pd.DataFrame  # one row per policy that ran on every scenario, deployable ranked first
    per_scenario: pd.DataFrame  # one row per (scenario, policy)
    anchors: pd.DataFrame  # one row per scenario: zero, one, their means and gap
    partial: dict[str, list[str]] = field(default_factory=dict)  # policy -> the scenarios it ran on (not ranked)
    plots: dict[str, str] = field(default_factory=dict)  # caption -> path relative to the page
    curves: dict[str, str] = field(default_factory=dict)  # "scenario: algo" -> learning-curve figure path
    episode_plots: dict[str, str] = field(default_factory=dict)  # scenario -> path
    provenance: dict[str, str] = field(default_factory=dict)  # policy label -> path
    notes: list[str] = field(default_factory=list)
    agents: dict[str, list[ZooAgent]] = field(default_factory=dict)  # scenario -> shipped agents run on it
    descriptions: dict[str, str] = field(default_factory=dict)  # reference policy -> its registry description
    shipped: list[ZooAgent] = field(default_factory=list)  # every agent shipped for the family (its zoo entries)
    zoo: str | None = None  # the --zoo the page was made from (None: the packaged zoo)

    @property
    def name(self) -> str:
        return self.descriptor.name

    @property
    def seed_sets(self) -> dict[str, list[int]]:
        """The training, validation and test seeds behind the family's numbers (:func:`seed_split`)."""
        return seed_split(self.shipped, self.seeds)

    @property
    def aggregated(self) -> list[str]:
        """The scenarios in the family's normalised aggregate (every one the benchmark does not leave out)."""
        return scoring.unit_scenarios(self.anchors)

    @property
    def ranking(self) -> pd.DataFrame:
        """The deployable policies that ran on every scenario, ranked by the headline score."""
        return self.aggregate[self.aggregate["class"].isin(scoring.DEPLOYABLE)].reset_index(drop=True)

    @property
    def upper_bounds(self) -> pd.DataFrame:
        """The privileged policies (upper bounds, not deployable)."""
        return self.aggregate[self.aggregate["class"] == "privileged"].reset_index(drop=True)

    def training_notes(self) -> dict[str, str]:
        """Shipped agent (``"sac (trained on S)"``) -> how its runs were trained and where it was evaluated."""
        notes = {}
        for agent in self.shipped:
            played = [s for s in self.scenarios if any(a is agent for a in self.agents.get(s, []))]
            notes[agent.label] = (f"{agent.training_note(self.benchmark.training_budget_s)}; evaluated on "
                                  f"{', '.join(played) if played else 'no scenario of this run'}")
        return notes


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


def reference_entries(descriptor: FamilyDescriptor, scenario_id: str) -> list[tuple[PolicyEntry, str]]:
    """Every reference policy that can drive ``scenario_id``, with its class; each policy's ``env_config`` is
    checked against the benchmark's rules (:meth:`~joulegym.core.benchmark.Benchmark.check_env_config`) and the
    anchors must be deployable.

    :raises ValueError: a policy whose ``env_config`` sets a scenario key, an unclassified deployable policy, or a
        privileged anchor.
    """
    import gymnasium as gym

    from joulegym import baselines

    bench = descriptor.benchmark
    assert bench is not None
    env = gym.make(scenario_id)
    try:
        names = baselines.applicable(env)
    finally:
        env.close()
    out = []
    for name in names:
        policy = baselines.make(name, family=descriptor.name)
        privileged = bool(getattr(policy, "privileged", False))
        bench.check_env_config(name, getattr(policy, "env_config", None), privileged)
        out.append((PolicyEntry(name, "reference", name, family=descriptor.name), bench.policy_class(name, privileged)))
    classes = {e.label: c for e, c in out}
    for scenario in bench.scenarios:
        if env_id(bench.kind, scenario, descriptor.kind(bench.kind).version) != scenario_id:
            continue
        for role, name in (("zero", bench.zero[scenario]), ("one", bench.best_heuristic[scenario])):
            if name not in classes:
                raise ValueError(f"{descriptor.name} benchmark, scenario {scenario!r}: the {role} anchor {name!r} is "
                                 f"not a registered policy that drives {scenario_id}; registered: {sorted(classes)}")
            if classes[name] == "privileged":
                raise ValueError(f"{descriptor.name} benchmark, scenario {scenario!r}: the {role} anchor {name!r} is "
                                 "privileged; an anchor must be deployable")
    return out


def family_agents(zoo: Path | None, descriptor: FamilyDescriptor) -> list[ZooAgent]:
    """Every agent shipped for ``descriptor``'s benchmark under ``zoo`` (one per training scenario and algorithm)."""
    bench = descriptor.benchmark
    assert bench is not None
    if zoo is None:
        return []
    version = descriptor.kind(bench.kind).version
    return [agent for scenario in bench.scenarios
            for agent in find_agents(zoo, descriptor.name, scenario, env_id(bench.kind, scenario, version))]


def assign_agents(descriptor: FamilyDescriptor, agents: Sequence[ZooAgent],
                  scenarios: Sequence[str]) -> tuple[dict[str, list[ZooAgent]], list[str]]:
    """Which shipped agents play each scenario, and notes for the page.

    An agent plays every scenario whose spaces equal those recorded with it (:meth:`ZooAgent.spaces_mismatch`); a
    mismatch is a note, never an error. Of several agents of one algorithm that fit a scenario (their rows share
    the algorithm's label), the one trained on that scenario plays it, else the one trained on the benchmark's
    generalisation scenario, else the first in the benchmark's scenario order; the others are noted."""
    bench = descriptor.benchmark
    assert bench is not None
    plays: dict[str, list[ZooAgent]] = {s: [] for s in scenarios}
    notes: list[str] = []
    if not agents:
        return plays, notes
    version = descriptor.kind(bench.kind).version
    order = {s: i for i, s in enumerate(bench.scenarios)}
    for scenario in scenarios:
        spaces = scenario_spaces(env_id(bench.kind, scenario, version))
        fits: dict[str, list[ZooAgent]] = {}
        for agent in agents:
            why = agent.spaces_mismatch(spaces)
            if why is None:
                fits.setdefault(agent.algo, []).append(agent)
            else:
                notes.append(f"{scenario}: {agent.label} is not evaluated here: {why}")
        for algo in sorted(fits):
            ranked = sorted(fits[algo], key=lambda a: (a.trained_on != scenario, a.trained_on != bench.generalisation,
                                                       order[a.trained_on]))
            plays[scenario].append(ranked[0])
            notes += [f"{scenario}: {other.label} also fits; {ranked[0].label} plays it (an agent trained on the "
                      f"scenario first, then one trained on {bench.generalisation})" for other in ranked[1:]]
    return plays, notes


def split_of(trained_on: str, scenario: str) -> str:
    """``held-in`` on the agent's training scenario, else ``held-out instance``."""
    return HELD_IN if trained_on == scenario else HELD_OUT


SEED_SETS = ("training", "validation", "test")


def seed_split(agents: Sequence[ZooAgent], test_seeds: Sequence[int]) -> dict[str, list[int]]:
    """The seeds behind a family's numbers: ``training`` (the seeds every shipped run's training envs were reset
    with), ``validation`` (the seeds their models were selected on) and ``test`` (the held-out seeds every number on
    the page is measured on), each sorted.

    :raises ValueError: naming the run, if its training or validation seeds meet the test seeds or each other (its
        test score would be measured on a seed it was trained or selected on).
    """
    test = set(int(s) for s in test_seeds)
    for agent in agents:
        for run in agent.runs:
            sets = {"training": set(run.training_seeds()), "validation": set(run.validation_seeds()), "test": test}
            for i, first in enumerate(SEED_SETS):
                for second in SEED_SETS[i + 1:]:
                    shared = sorted(sets[first] & sets[second])
                    if shared:
                        raise ValueError(f"{run.path / 'provenance.json'}: its {first} seeds and the {second} seeds "
                                         f"share {shared[:5]}; the three sets must be disjoint (retrain with seeds "
                                         "below 9000)")
    runs = [run for agent in agents for run in agent.runs]
    return {"training": sorted({s for r in runs for s in r.training_seeds()}),
            "validation": sorted({s for r in runs for s in r.validation_seeds()}), "test": sorted(test)}


def run_family(descriptor: FamilyDescriptor, quick: bool, zoo: Path | None, progress: Progress | None = None,
               evaluate_fn: Callable = evaluate, record: bool = True) -> tuple[FamilyResult, dict[str, dict]]:
    """Run ``descriptor``'s benchmark. Returns the results and the recorded first episode per scenario and policy
    (for the episode plots; none without ``record``). ``evaluate_fn`` runs the episodes:
    :func:`~joulegym.evaluation.runner.evaluate`, or with ``--ray`` the same function fanned out as Ray tasks
    (:class:`joulegym.integrations.parallel.RayEvaluate`)."""
    from joulegym import baselines

    bench = descriptor.benchmark
    assert bench is not None
    version = descriptor.kind(bench.kind).version
    seeds = bench.seeds(quick)
    scenarios = bench.scenario_names(quick)
    shipped = family_agents(zoo, descriptor)
    seed_split(shipped, seeds)  # before any episode: a test seed an agent trained or was selected on is refused
    agents, notes = assign_agents(descriptor, shipped, scenarios)
    rows: list[pd.DataFrame] = []
    traces: dict[str, dict] = {}
    descriptions: dict[str, str] = {}
    for scenario in scenarios:
        scenario_id = env_id(bench.kind, scenario, version)
        runs = [(entry, cls, NO_RUN, "") for entry, cls in reference_entries(descriptor, scenario_id)]
        runs += [(entry, "agent", seed, agent.trained_on) for agent in agents[scenario]
                 for seed, entry in agent.entries()]
        descriptions.update({e.label: baselines.spec(e.name, descriptor.name).description
                             for e, cls, _, _ in runs if cls != "agent"})
        traces[scenario] = {}
        for entry, cls, run, trained_on in runs:
            episodes, recorded, skipped = _run_entry(evaluate_fn, scenario_id, entry, seeds,
                                                     record=record and run in (NO_RUN,
                                                                               _first_run(agents[scenario], entry)))
            traces[scenario].update(recorded)
            if skipped is not None:
                notes.append(f"{scenario}: {skipped}")
            else:
                rows.append(_episode_rows(episodes, descriptor.name, scenario, bench).assign(**{
                    "class": cls, "run": run, "trained_on": trained_on,
                    "split": split_of(trained_on, scenario) if trained_on else ""}))
            if progress is not None:
                label = entry.label + (f" (training seed {run}, trained on {trained_on})" if run != NO_RUN else "")
                progress.step(f"{descriptor.name}/{scenario} {label}"
                              f"{' skipped' if skipped else f' x {len(seeds)} seeds'}")
    episodes = pd.concat(rows, ignore_index=True)
    episodes, anchors, anchor_notes = scoring.normalise(episodes, bench, scenarios)
    notes += anchor_notes + truncation_notes(episodes) + budget_notes(episodes, bench)
    per_scenario = per_scenario_table(episodes, bench, scenarios)
    aggregate, partial = aggregate_table(episodes, bench, scenarios, scoring.unit_scenarios(anchors))
    return FamilyResult(descriptor, bench, scenarios, seeds, episodes, aggregate, per_scenario, anchors, partial,
                        notes=notes, agents=agents, descriptions=descriptions, shipped=shipped), traces


def _first_run(agents: list[ZooAgent], entry: PolicyEntry) -> int:
    """The training seed of the run whose first episode is recorded for the episode plot (one per agent)."""
    return next((a.runs[0].seed for a in agents if a.algo == entry.label), NO_RUN)


def _run_entry(evaluate_fn: Callable, scenario_id: str, entry: PolicyEntry,
               seeds: Sequence[int], record: bool) -> tuple[pd.DataFrame | None, dict, str | None]:
    """One policy's episodes (and, if ``record``, its first episode recorded for the plot), or why it was skipped."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        recorded: dict = {}
        try:
            if record:  # the episode plot: the first seed recorded with the full info (the same episode and row)
                episodes, recorded, skipped = evaluate_fn(scenario_id, [entry], seeds[:1], record=True)
                if not skipped and len(seeds) > 1:
                    rest, _, _ = evaluate_fn(scenario_id, [entry], seeds[1:], record=False)
                    episodes = pd.concat([episodes, rest.assign(episode=rest["episode"] + 1)], ignore_index=True)
            else:
                episodes, _, skipped = evaluate_fn(scenario_id, [entry], seeds, record=False)
        except ValueError as err:
            if "can drive" not in str(err):
                raise
            episodes, skipped = None, [entry.label]
    if skipped:
        return None, {}, next((str(w.message) for w in caught if "skipping" in str(w.message)), "not applicable")
    return episodes, recorded, None


def _episode_rows(episodes: pd.DataFrame, family: str, scenario: str, bench: Benchmark) -> pd.DataFrame:
    metrics = [dict(row) for _, row in episodes.iterrows()]
    out = pd.DataFrame({
        "family": family, "scenario": scenario, "env_id": episodes["env_id"], "policy": episodes["policy"],
        "seed": episodes["seed"].astype(int), "return": episodes["return"],
        "length": episodes["length"].astype(int), "metric": [bench.value(m) for m in metrics]})
    for key in bench.metric_terms:
        out[key] = episodes[key].to_numpy(dtype=float)
    if bench.budget is not None:
        for key in bench.budget[:2]:
            out[key] = episodes[key].to_numpy(dtype=float)
        out["budget_kept"] = [float(bench.budget_kept(m)) for m in metrics]
    # an episode cut by the env's horizon (PowerFlow: jobs still running) reports metrics over what finished
    out["truncated"] = episodes["truncated"].to_numpy(dtype=float) if "truncated" in episodes else 0.0
    return out


def truncation_notes(episodes: pd.DataFrame) -> list[str]:
    """One note per scenario and policy with episodes whose metrics report ``truncated`` (cut by the horizon)."""
    cut = episodes[episodes["truncated"] > 0].groupby(["scenario", "policy"], sort=False).size()
    return [f"{scenario}: {count} episode(s) of {policy} hit the env's horizon (truncated); their metric counts only "
            "what finished" for (scenario, policy), count in cut.items()]


def budget_notes(episodes: pd.DataFrame, bench: Benchmark) -> list[str]:
    """One note per scenario and policy with episodes that broke the scenario's budget (deployable policies run
    under it, so a note here is a bug in the env's enforcement or a policy setting it)."""
    if bench.budget is None:
        return []
    used, limit, rtol = bench.budget
    broke = episodes[episodes["budget_kept"] < 1].groupby(["scenario", "policy"], sort=False)
    return [f"{scenario}: {len(rows)} episode(s) of {policy} broke the budget ({used} up to "
            f"{rows[used].max():.6g} > {limit} {rows[limit].iloc[0]:.6g} x (1 + {rtol:g}))"
            for (scenario, policy), rows in broke]


# --- the tables -------------------------------------------------------------------------------------------------
def per_scenario_table(episodes: pd.DataFrame, bench: Benchmark, scenarios: Sequence[str]) -> pd.DataFrame:
    """One row per (scenario, policy): class, raw metric, normalised score, and the paired comparisons against the
    scenario's best heuristic and its best deployable non-learned policy (raw metric units; positive: better)."""
    records = []
    for scenario in scenarios:
        group = episodes[episodes["scenario"] == scenario]
        one = bench.best_heuristic[scenario]
        bnl = scoring.best_non_learned(episodes, scenario, bench.higher_is_better)
        for policy, rows in group.groupby("policy", sort=False):
            scores = rows["normalised"].to_numpy(dtype=float)
            low, high = stats.stratified_ci([scores], stats.mean_of_task_means)
            record = {"family": rows["family"].iloc[0], "scope": scenario, "policy": policy,
                      "class": rows["class"].iloc[0], "trained_on": _first(rows, "trained_on"),
                      "split": _first(rows, "split"), "runs": int(rows["run"].nunique()), "episodes": len(rows),
                      "scenarios": 1, "metric_mean": float(rows["metric"].mean()), "metric_std": _std(rows["metric"]),
                      "score_mean": float(scores.mean()), "score_ci_low": low, "score_ci_high": high,
                      "score_iqm": stats.iqm(scores), "zero": bench.zero[scenario], "best": one,
                      "best_non_learned": bnl}
            for prefix, reference in (("vs_best", one), ("vs_bnl", bnl)):
                found = scoring.paired(episodes, scenario, policy, reference, "metric", bench.higher_is_better)
                record.update({f"{prefix}_{k}": v for k, v in found.items() if k != "pairs"})
            for key in bench.metric_terms:
                record[f"{key}_mean"] = float(rows[key].mean())
            if "budget_kept" in rows:
                record["budget_kept"] = float(rows["budget_kept"].mean())
            records.append(record)
    frame = pd.DataFrame(records)
    order = frame["scope"].map({s: i for i, s in enumerate(scenarios)})
    return frame.assign(_o=order).sort_values(["_o", "score_mean", "policy"], ascending=[True, False, True],
                                              kind="mergesort").drop(columns="_o").reset_index(drop=True)


def _first(rows: pd.DataFrame, column: str) -> str:
    """The (shared) value of ``column`` in ``rows`` as text (``""`` when absent)."""
    return str(rows[column].iloc[0]) if column in rows and isinstance(rows[column].iloc[0], str) else ""


def _std(values: pd.Series) -> float:
    std = float(np.std(values.to_numpy(dtype=float)))
    return 0.0 if std <= 1e-12 * max(1.0, float(np.max(np.abs(values)))) else std


def aggregate_table(episodes: pd.DataFrame, bench: Benchmark, scenarios: Sequence[str],
                    aggregated: Sequence[str] | None = None) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """One row per policy that ran on every scenario (deployable ranked by the headline mean, then the privileged
    ones), and the policies left out with the scenarios they ran on. The normalised score and the normalised paired
    differences are over the ``aggregated`` scenarios (default: all; :func:`joulegym.evaluation.scoring.normalise`
    says which), the win/tie/loss counts and P(> reference) over every scenario."""
    aggregated = list(scenarios if aggregated is None else aggregated)
    references = {"vs_best": dict(bench.best_heuristic),
                  "vs_bnl": {s: scoring.best_non_learned(episodes, s, bench.higher_is_better) for s in scenarios}}
    records, partial = [], {}
    for policy, rows in episodes.groupby("policy", sort=False):
        _, covered = scoring.score_tasks(episodes, policy, scenarios)
        if len(covered) < len(scenarios):
            partial[str(policy)] = covered
            continue
        tasks, _ = scoring.score_tasks(episodes, policy, aggregated)
        record = {"family": rows["family"].iloc[0], "scope": "all", "policy": policy, "class": rows["class"].iloc[0],
                  **_trained_on(rows, scenarios), "runs": int(rows["run"].nunique()), "episodes": len(rows),
                  "scenarios": len(covered), "aggregated": len(aggregated), **_headline(tasks),
                  "metric_mean": np.nan, "metric_std": np.nan, "zero": "per scenario", "best": "per scenario",
                  "best_non_learned": "per scenario"}
        for prefix, refs in references.items():
            found = scoring.paired_over_scenarios(episodes, scenarios, policy, refs, bench.higher_is_better,
                                                  aggregated)
            record.update({f"{prefix}_{k}": v for k, v in found.items()})
        records.append(record)
    frame = pd.DataFrame(records)
    if frame.empty:
        return frame, partial
    frame["_deployable"] = ~frame["class"].eq("privileged")
    frame = frame.sort_values(["_deployable", "score_mean", "policy"], ascending=[False, False, True],
                              kind="mergesort").drop(columns="_deployable").reset_index(drop=True)
    return frame, partial


def _headline(tasks: list[np.ndarray]) -> dict[str, float]:
    """The mean over scenarios of the mean normalised score with its stratified-bootstrap CI, and the IQM with its
    CI (NaN without an aggregated scenario)."""
    if not tasks:
        return dict.fromkeys(("score_mean", "score_ci_low", "score_ci_high", "score_iqm", "score_iqm_ci_low",
                              "score_iqm_ci_high"), float("nan"))
    low, high = stats.stratified_ci(tasks, stats.mean_of_task_means)
    iqm_low, iqm_high = stats.stratified_ci(tasks, stats.iqm_of_runs)
    return {"score_mean": stats.mean_of_task_means([t[None, :] for t in tasks])[0], "score_ci_low": low,
            "score_ci_high": high, "score_iqm": stats.iqm(np.concatenate(tasks)), "score_iqm_ci_low": iqm_low,
            "score_iqm_ci_high": iqm_high}


def _trained_on(rows: pd.DataFrame, scenarios: Sequence[str]) -> dict[str, str]:
    """An agent's training scenario(s) and how many scenarios it played held-in / as held-out instances (empty for
    a reference policy)."""
    if "trained_on" not in rows or not rows["trained_on"].astype(bool).any():
        return {"trained_on": "", "split": ""}
    by_scenario = rows.drop_duplicates("scenario").set_index("scenario")
    trained = list(dict.fromkeys(by_scenario.loc[[s for s in scenarios if s in by_scenario.index], "trained_on"]))
    held_in = int((by_scenario["split"] == HELD_IN).sum())
    held_out = len(by_scenario) - held_in
    return {"trained_on": ", ".join(map(str, trained)),
            "split": f"{held_in} {HELD_IN}, {held_out} {HELD_OUT}{'s' if held_out != 1 else ''}"}


# --- provenance -------------------------------------------------------------------------------------------------
def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


def write_provenance(result: FamilyResult, out: Path) -> list[Path]:
    """One JSON per policy: how a reference policy is built (and its class), or every shipped run's provenance."""
    import joulegym
    from joulegym import baselines
    from joulegym.core.io import write_atomic

    folder = out / "provenance" / result.name
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    bench = result.benchmark
    for policy, rows in result.episodes.groupby("policy", sort=False):
        cls = rows["class"].iloc[0]
        if cls == "agent":
            data: dict[str, Any] = {"class": "agent", "family": result.name, "algo": policy, "scenarios": {
                s: {f"seed{r.seed}": r.provenance for r in a.runs}
                for s, found in result.agents.items() for a in found if a.algo == policy},
                "played": {s: {"trained_on": a.trained_on, "split": split_of(a.trained_on, s)}
                           for s, found in result.agents.items() for a in found if a.algo == policy}}
        else:
            spec = baselines.spec(policy, result.name)
            data = {"class": cls, "family": result.name, "policy": policy,
                    "factory": f"{spec.factory.__module__}.{getattr(spec.factory, '__qualname__', spec.factory)}",
                    "description": spec.description, "joulegym_version": joulegym.__version__,
                    "zero_on": [s for s in result.scenarios if bench.zero[s] == policy],
                    "one_on": [s for s in result.scenarios if bench.best_heuristic[s] == policy]}
        path = folder / f"{_slug(str(policy))}.json"
        written.append(write_atomic(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"))
        result.provenance[str(policy)] = f"provenance/{result.name}/{path.name}"
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


CSV_FIRST = ("family", "scope", "policy", "class", "trained_on", "split", "runs", "episodes", "scenarios",
             "aggregated", "score_mean", "score_ci_low", "score_ci_high", "score_iqm", "metric_mean", "metric_std",
             "zero", "best", "vs_best_diff_mean",
             "vs_best_diff_ci_low", "vs_best_diff_ci_high", "vs_best_wins", "vs_best_ties", "vs_best_losses",
             "best_non_learned", "vs_bnl_diff_mean", "vs_bnl_diff_ci_low", "vs_bnl_diff_ci_high", "vs_bnl_wins",
             "vs_bnl_ties", "vs_bnl_losses")


def leaderboard_csv(results: Sequence[FamilyResult]) -> pd.DataFrame:
    """Aggregate rows (``scope`` = ``all``, every-scenario policies only) and per-scenario rows of every family.
    ``trained_on`` / ``split``: an agent's training scenario and whether a row's scenario is held-in (its training
    scenario) or a held-out instance. ``vs_best_*`` / ``vs_bnl_*``: the paired difference against the best heuristic
    / the best deployable non-learned policy (raw metric per scenario; normalised units over the ``aggregated``
    scenarios in the aggregate rows, whose win/tie/loss counts are over every scenario)."""
    frames = []
    for result in results:
        frames += [result.aggregate, result.per_scenario]
    frame = pd.concat([f for f in frames if not f.empty], ignore_index=True)
    return frame[[c for c in CSV_FIRST if c in frame] + [c for c in frame.columns if c not in CSV_FIRST]]


def run_suite(names: Sequence[str] = (), *, quick: bool = False, out: str | Path | None = None,
              zoo: str | Path | None = None, plots: bool = True, stream: IO[str] | None = None,
              evaluate_fn: Callable = evaluate) -> list[Path]:
    """``evaluate.py --suite``: run, then write every file into ``out`` as a whole. Returns the written paths.
    ``evaluate_fn``: see :func:`run_family` (the files are the same whichever runs the episodes)."""
    import joulegym  # noqa: F401  (registers the ids)
    from joulegym.core.io import ResultDir, write_atomic, write_csv
    from joulegym.evaluation import figures, page

    descriptors = suite_families(names)
    out_text = str(out) if out is not None else (DEFAULT_OUT + ("-quick" if quick else ""))
    zoo_path = Path(zoo) if zoo is not None else default_zoo()
    if not zoo_path.is_dir():
        raise ValueError(f"--zoo {str(zoo_path)!r} is not a directory; it must hold shipped agents as "
                         "<family>/<scenario>/<algo>/ (agent.json + weights.pt + provenance.json)")
    result_dir = ResultDir(out_text)  # checked before the work
    command = command_line([d.name for d in descriptors], quick, out_text, None if zoo is None else str(zoo))
    total, playing = 0, []
    for d in descriptors:
        assert d.benchmark is not None
        for scenario in d.benchmark.scenario_names(quick):
            scenario_id = env_id(d.benchmark.kind, scenario, d.kind(d.benchmark.kind).version)
            total += len(reference_entries(d, scenario_id))
        plays, _ = assign_agents(d, family_agents(zoo_path, d), d.benchmark.scenario_names(quick))
        playing += [a for found in plays.values() for a in found]
        total += sum(len(a.runs) for found in plays.values() for a in found)
    require_agent_libraries(playing, zoo_path)
    progress = Progress(total, stream)
    progress.note(f"suite: {', '.join(d.name for d in descriptors)}{' (quick)' if quick else ''}: {total} policy runs")
    runs = [run_family(d, quick, zoo_path, progress, evaluate_fn, record=plots) for d in descriptors]
    results = [r for r, _ in runs]
    for result in results:
        result.zoo = None if zoo is None else str(zoo)
    family_commands = {d.name: command if len(descriptors) == 1 else command_line(
        [d.name], quick, f"{out_text}-{d.name}", None if zoo is None else str(zoo)) for d in descriptors}
    with result_dir as tmp:
        written = []
        for result, traces in runs:
            if plots:
                written += figures.write_plots(result, traces, tmp)
            written += write_provenance(result, tmp)
        episodes = pd.concat([r.episodes for r in results], ignore_index=True)
        written.append(write_csv(episodes, tmp / "episodes.csv"))
        written.append(write_csv(leaderboard_csv(results), tmp / "leaderboard.csv"))
        written.append(write_atomic(tmp / "leaderboard.md", page.markdown(results, command, quick, family_commands)))
        written.append(write_atomic(tmp / "index.html", page.html(results, command, quick, family_commands)))
    written = [result_dir.final(p) for p in written]
    progress.note(f"wrote {len(written)} files into {result_dir.out} (open {result_dir.out / 'index.html'})")
    return written
