"""``evaluate.py --suite --pareto``: the energy-performance fronts of every family, their hypervolume and expected
utility with bootstrap CIs over the test seeds, as CSV, JSON, plots and a page (docs/tradeoffs.md).

Points. Per family (:mod:`joulegym.evaluation.tradeoffs`), every reference policy that drives the benchmark's kind
(its class from the benchmark record and its ``privileged`` flag, as on the leaderboard) runs at its defaults, and
every policy with a knob at each swept setting; every shipped agent of the zoo that fits a scenario's spaces runs on
it (a weight-conditioned agent, trained on ``reward_weights``, is labelled with its weights). Each runs every test
seed of the benchmark (>= 10000) through the one evaluation loop (:func:`joulegym.evaluation.runner.evaluate`); a
point is the mean over seeds (and training runs) of the family's two objectives.

Fronts. Per scenario the *heuristic front* is the non-dominated set of the deployable reference points (heuristics
and baselines; pymoo's non-dominated sorting); agents form their own set; privileged points (upper bounds) are drawn
apart and never join a deployable front.

Indicators (pymoo). Objectives are put in minimisation form and normalised per scenario with stated anchors: the
best (0) and worst (1) mean of each objective over the deployable reference points other than ``random`` (policies
whose numbers do not move when an agent is added). The hypervolume is against the reference point
``tradeoffs.REFERENCE_POINT`` (1.1, 1.1) in that frame; the expected utility (Zintgraf et al., "Quality assessment of
MORL policies", BNAIC 2015) is the mean over weights ``w`` of the best ``w . (1 - f)`` of the set, with ``w``
uniform on the simplex (pymoo's Das-Dennis lattice, ``WEIGHT_PARTITIONS`` + 1 weights). CIs: percentile
bootstrap over the test seeds (``BOOTSTRAP_RESAMPLES`` resamples, one resample shared by every point of a
scenario, so differences are paired), anchors fixed at the full-sample values.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from joulegym.core.family import FamilyDescriptor, env_id
from joulegym.core.policy import PolicyNotApplicable
from joulegym.evaluation.mo_agents import weight_agents
from joulegym.evaluation.runner import PolicyEntry, evaluate
from joulegym.evaluation.tradeoffs import (
    BOOTSTRAP_RESAMPLES,
    REFERENCE_POINT,
    WEIGHT_PARTITIONS,
    TradeOff,
    tradeoff,
)
from joulegym.evaluation.zoo import ZooAgent, require_agent_libraries

DEFAULT_OUT = "results/fronts"
SETS = ("heuristics", "agents", "heuristics+agents", "privileged")  # the point sets the indicators are computed on
DEPLOYABLE_REFERENCE = ("heuristic", "baseline")


@dataclass
class FamilyFronts:
    """One family's points, fronts and indicators."""

    descriptor: FamilyDescriptor
    tradeoff: TradeOff
    scenarios: tuple[str, ...]
    seeds: tuple[int, ...]
    episodes: pd.DataFrame  # one row per (scenario, point, run, seed): the two raw objectives
    points: pd.DataFrame = field(default_factory=pd.DataFrame)  # one row per (scenario, point)
    anchors: pd.DataFrame = field(default_factory=pd.DataFrame)  # one row per (scenario, objective)
    indicators: pd.DataFrame = field(default_factory=pd.DataFrame)  # one row per (scope, set)
    notes: list[str] = field(default_factory=list)
    plots: dict[str, str] = field(default_factory=dict)  # scenario -> path relative to the page

    @property
    def name(self) -> str:
        return self.descriptor.name


# --- what runs ----------------------------------------------------------------------------------------------------
def point_entries(descriptor: FamilyDescriptor, trade: TradeOff,
                  scenario_id: str) -> list[tuple[PolicyEntry, str, dict[str, Any], str]]:
    """``(entry, class, env kwargs, knob setting)`` of every reference point on ``scenario_id``: each reference
    policy at its defaults (those in ``trade.skip`` left out) and each swept setting."""
    from joulegym import baselines
    from joulegym.evaluation.suite import reference_entries

    bench = descriptor.benchmark
    assert bench is not None
    out = [(entry, cls, {}, "default") for entry, cls in reference_entries(descriptor, scenario_id)
           if entry.name not in trade.skip]
    classes = {entry.name: cls for entry, cls, _, _ in out}
    for sweep in trade.sweeps:
        if sweep.policy not in classes:
            policy = baselines.make(sweep.policy, family=descriptor.name)
            classes[sweep.policy] = bench.policy_class(sweep.policy, bool(getattr(policy, "privileged", False)))
        for label, kwargs, env_kwargs in sweep.settings():
            setting = label[len(sweep.policy) + 1:-1]
            out.append((PolicyEntry(label, "reference", sweep.policy, kwargs, family=descriptor.name),
                        classes[sweep.policy], env_kwargs, setting))
    return out


def agent_label(agent: Any) -> str:
    """An agent's point label: its algorithm, with the reward weights it was trained on if they are not the
    env's default (a weight-conditioned agent of the multi-objective path)."""
    weights = (agent.provenance.get("env_kwargs") or {}).get("reward_weights")
    if not weights:
        return agent.algo
    return f"{agent.algo}[{', '.join(f'{k}={float(v):g}' for k, v in sorted(weights.items()))}]"


def run_family_fronts(descriptor: FamilyDescriptor, zoo: Path | None, progress: Any = None) -> FamilyFronts:
    """Run every point of ``descriptor``'s trade-off on its scenarios and test seeds (no indicators yet)."""
    from joulegym.evaluation.suite import assign_agents, family_agents

    bench = descriptor.benchmark
    assert bench is not None
    trade = tradeoff(descriptor.name)
    scenarios = trade.scenarios or bench.scenarios
    seeds = tuple(bench.eval_seeds)
    version = descriptor.kind(bench.kind).version
    plays, notes = assign_agents(descriptor, family_agents(zoo, descriptor), scenarios)
    frames = []
    for scenario in scenarios:
        scenario_id = env_id(bench.kind, scenario, version)
        runs = [(entry, cls, env_kwargs, setting, -1)
                for entry, cls, env_kwargs, setting in point_entries(descriptor, trade, scenario_id)]
        for agent in [*plays.get(scenario, []), *weight_agents(zoo, descriptor.name, scenario, scenario_id)]:
            label = agent_label(agent)
            runs += [(PolicyEntry(label, "agent", e.name, path=e.path), "agent", {}, "trained", seed)
                     for seed, e in agent.entries()]
        for entry, cls, env_kwargs, setting, run in runs:
            rows = _episodes(scenario_id, entry, seeds, env_kwargs, trade)
            if rows is None:
                notes.append(f"{scenario}: {entry.label} cannot drive {scenario_id}; no point")
            else:
                frames.append(rows.assign(family=descriptor.name, scenario=scenario, point=entry.label,
                                          policy=entry.name, **{"class": cls}, setting=setting, run=run))
            if progress is not None:
                progress.step(f"{descriptor.name}/{scenario} {entry.label} x {len(seeds)} seeds")
    episodes = pd.concat(frames, ignore_index=True)
    notes += [f"{name} is not on the front: {why}" for name, why in trade.skip.items()]
    if trade.reduced_why:
        notes.append(trade.reduced_why)
    return FamilyFronts(descriptor, trade, tuple(scenarios), seeds, episodes, notes=notes)


def _episodes(scenario_id: str, entry: PolicyEntry, seeds: Sequence[int], env_kwargs: dict[str, Any],
              trade: TradeOff) -> pd.DataFrame | None:
    """The two objectives of every episode of ``entry`` (``None`` if it cannot drive the scenario)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        try:
            frame, _, skipped = evaluate(scenario_id, [entry], seeds, env_kwargs or None, record=False)
        except PolicyNotApplicable:
            return None
        except ValueError as err:
            if "can drive" not in str(err):
                raise
            return None
    if skipped:
        return None
    energy, performance = trade.objectives
    return pd.DataFrame({"seed": frame["seed"].astype(int).to_numpy(),
                         "energy": frame[energy.key].to_numpy(dtype=float),
                         "performance": frame[performance.key].to_numpy(dtype=float)})


# --- fronts and indicators ----------------------------------------------------------------------------------------
def non_dominated(costs: np.ndarray) -> np.ndarray:
    """Boolean mask of the non-dominated rows of ``costs`` (minimisation; pymoo's non-dominated sorting)."""
    from pymoo.util.nds.non_dominated_sorting import NonDominatedSorting

    mask = np.zeros(len(costs), dtype=bool)
    if len(costs):
        mask[NonDominatedSorting().do(np.asarray(costs, dtype=float), only_non_dominated_front=True)] = True
    return mask


def _costs(values: np.ndarray, trade: TradeOff) -> np.ndarray:
    """``(..., 2)`` objective values in minimisation form (a maximised objective negated)."""
    signs = np.array([1.0 if o.minimise else -1.0 for o in trade.objectives])
    return values * signs


def scenario_anchors(points: pd.DataFrame, trade: TradeOff) -> tuple[np.ndarray, np.ndarray]:
    """The ideal and nadir (minimisation form) of one scenario's deployable reference points other than
    ``random``.

    :raises ValueError: if fewer than two such points exist or an objective does not vary among them.
    """
    chosen = points[points["class"].isin(DEPLOYABLE_REFERENCE) & (points["policy"] != "random")]
    costs = _costs(chosen[["energy", "performance"]].to_numpy(dtype=float), trade)
    if len(costs) < 2:
        raise ValueError(f"scenario {points['scenario'].iloc[0]!r}: the anchors need >= 2 deployable reference "
                         "points other than random")
    ideal, nadir = costs.min(axis=0), costs.max(axis=0)
    flat = nadir - ideal <= 1e-12 * np.maximum(1.0, np.abs(ideal))
    nadir = np.where(flat, ideal + np.maximum(1e-9, 1e-6 * np.abs(ideal)), nadir)  # a flat axis: a unit gap
    return ideal, nadir


def _set_masks(classes: np.ndarray) -> dict[str, np.ndarray]:
    heuristics = np.isin(classes, DEPLOYABLE_REFERENCE)
    agents = classes == "agent"
    return {"heuristics": heuristics, "agents": agents, "heuristics+agents": heuristics | agents,
            "privileged": classes == "privileged"}


def _hv_eu(normalised: np.ndarray, mask: np.ndarray, hv: Any, weights: np.ndarray) -> tuple[float, float]:
    """Hypervolume and expected utility of the points ``mask`` selects (NaN for an empty set)."""
    if not mask.any():
        return float("nan"), float("nan")
    chosen = normalised[mask]
    utility = (1.0 - chosen) @ weights.T  # (points, weights)
    return float(hv(chosen)), float(utility.max(axis=0).mean())


def point_means(episodes: pd.DataFrame, scenario: str) -> tuple[pd.DataFrame, np.ndarray, list[int]]:
    """One scenario's points (means over runs and seeds), and the per-seed values ``(points, seeds, 2)`` (mean over
    training runs) the bootstrap resamples."""
    rows = episodes[episodes["scenario"] == scenario]
    seeds = sorted(rows["seed"].unique())
    per_seed = rows.groupby(["point", "seed"], sort=False)[["energy", "performance"]].mean()
    order = list(dict.fromkeys(rows["point"]))
    cube = np.stack([per_seed.loc[p].reindex(seeds).to_numpy(dtype=float) for p in order])
    first = rows.drop_duplicates("point").set_index("point").loc[order]
    points = pd.DataFrame({"family": first["family"].to_numpy(), "scenario": scenario, "point": order,
                           "policy": first["policy"].to_numpy(), "class": first["class"].to_numpy(),
                           "setting": first["setting"].to_numpy(), "runs": rows.groupby("point")["run"].nunique()
                           .reindex(order).to_numpy(), "energy": np.nanmean(cube[:, :, 0], axis=1),
                           "performance": np.nanmean(cube[:, :, 1], axis=1)})
    return points, cube, seeds


def indicators(result: FamilyFronts, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> None:
    """Fill ``result.points`` (normalised objectives, front flags), ``result.anchors`` and ``result.indicators``
    (per scenario and the family mean over scenarios, per point set, with bootstrap CIs over seeds)."""
    from pymoo.indicators.hv import HV
    from pymoo.util.ref_dirs import get_reference_directions

    trade = result.tradeoff
    hv = HV(ref_point=np.array(REFERENCE_POINT))
    weights = get_reference_directions("uniform", 2, n_partitions=WEIGHT_PARTITIONS)
    rng = np.random.default_rng(seed)
    all_points, anchor_rows, rows, boot = [], [], [], {}
    for scenario in result.scenarios:
        points, cube, seeds = point_means(result.episodes, scenario)
        ideal, nadir = scenario_anchors(points, trade)
        normalised = (_costs(points[["energy", "performance"]].to_numpy(dtype=float), trade) - ideal) / (nadir - ideal)
        masks = _set_masks(points["class"].to_numpy())
        points["norm_energy"], points["norm_performance"] = normalised[:, 0], normalised[:, 1]
        for name in ("heuristics", "agents", "privileged"):
            on = np.zeros(len(points), dtype=bool)
            on[np.flatnonzero(masks[name])[non_dominated(normalised[masks[name]])]] = True
            points[f"front_{name}"] = on
        points["dominated_by_agent"] = _dominated_by(normalised, masks["heuristics"], masks["agents"])
        points["dominated_by_privileged"] = _dominated_by(normalised, masks["heuristics"], masks["privileged"])
        all_points.append(points)
        for axis, objective in enumerate(trade.objectives):
            anchor_rows.append({"family": result.name, "scenario": scenario, "objective": objective.key,
                                "minimise": objective.minimise, "ideal": _raw(ideal[axis], objective),
                                "nadir": _raw(nadir[axis], objective)})
        draws = rng.integers(0, len(seeds), size=(resamples, len(seeds)))
        boot[scenario] = _bootstrap(cube, draws, trade, ideal, nadir, masks, hv, weights)
        for name in SETS:
            value = _hv_eu(normalised, masks[name], hv, weights)
            rows.append(_row(result.name, scenario, name, value, boot[scenario][name], int(masks[name].sum())))
    result.points = pd.concat(all_points, ignore_index=True)
    result.anchors = pd.DataFrame(anchor_rows)
    rows += _family_rows(result.name, rows, boot)
    result.indicators = pd.DataFrame(rows)


def _raw(cost: float, objective: Any) -> float:
    return float(cost if objective.minimise else -cost)


def _dominated_by(normalised: np.ndarray, targets: np.ndarray, others: np.ndarray) -> np.ndarray:
    """For each point of ``targets``: whether a point of ``others`` dominates it (False elsewhere)."""
    out = np.zeros(len(normalised), dtype=bool)
    if not others.any():
        return out
    rivals = normalised[others]
    for i in np.flatnonzero(targets):
        out[i] = bool(np.any(np.all(rivals <= normalised[i], axis=1) & np.any(rivals < normalised[i], axis=1)))
    return out


def _bootstrap(cube: np.ndarray, draws: np.ndarray, trade: TradeOff, ideal: np.ndarray, nadir: np.ndarray,
               masks: dict[str, np.ndarray], hv: Any, weights: np.ndarray) -> dict[str, np.ndarray]:
    """``set -> (resamples, 2)`` hypervolume and expected utility of every resample of the seeds."""
    out = {name: np.full((len(draws), 2), np.nan) for name in SETS}
    for b, index in enumerate(draws):
        normalised = (_costs(np.nanmean(cube[:, index, :], axis=1), trade) - ideal) / (nadir - ideal)
        for name in SETS:
            out[name][b] = _hv_eu(normalised, masks[name], hv, weights)
    return out


def _ci(samples: np.ndarray) -> tuple[float, float]:
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return float("nan"), float("nan")
    return float(np.quantile(finite, 0.025)), float(np.quantile(finite, 0.975))


def _row(family: str, scope: str, name: str, value: tuple[float, float], samples: np.ndarray,
         points: int) -> dict[str, Any]:
    hv_low, hv_high = _ci(samples[:, 0])
    eu_low, eu_high = _ci(samples[:, 1])
    return {"family": family, "scope": scope, "set": name, "points": points, "hypervolume": value[0],
            "hv_ci_low": hv_low, "hv_ci_high": hv_high, "expected_utility": value[1], "eu_ci_low": eu_low,
            "eu_ci_high": eu_high}


def _family_rows(family: str, rows: list[dict[str, Any]], boot: dict[str, dict[str, np.ndarray]]) -> list[dict]:
    """The family's mean over scenarios per set (scenarios resampled independently: a stratified bootstrap), and
    the paired gain of adding the agents to the heuristics (per scenario and for the family)."""
    out = []
    scenarios = list(boot)
    for name in SETS:
        values = [r for r in rows if r["set"] == name and r["scope"] in scenarios]
        if any(not np.isfinite(r["hypervolume"]) for r in values):
            continue
        mean = (float(np.mean([r["hypervolume"] for r in values])), float(np.mean([r["expected_utility"]
                                                                                 for r in values])))
        samples = np.mean([boot[s][name] for s in scenarios], axis=0)
        out.append(_row(family, "all", name, mean, samples, sum(r["points"] for r in values)))
    for scope in [*scenarios, "all"]:
        chosen = scenarios if scope == "all" else [scope]
        gain = np.mean([boot[s]["heuristics+agents"] - boot[s]["heuristics"] for s in chosen], axis=0)
        both = [r for r in rows + out if r["scope"] == scope and r["set"] in ("heuristics", "heuristics+agents")]
        if len(both) < 2 or both[1]["points"] == both[0]["points"] or not np.all(np.isfinite(gain)):
            continue  # no agent played the scope: no gain to report
        point = (both[1]["hypervolume"] - both[0]["hypervolume"], both[1]["expected_utility"] -
                 both[0]["expected_utility"])
        out.append(_row(family, scope, "agents gain", point, gain, both[1]["points"] - both[0]["points"]))
    return out


# --- the run ------------------------------------------------------------------------------------------------------
def command_line(names: Sequence[str], out: str, zoo: str | None) -> str:
    """The one command that regenerates the fronts."""
    parts = ["python evaluate.py --suite", *names, "--pareto"]
    if zoo is not None:
        parts += ["--zoo", zoo]
    return " ".join([*parts, "--out", out])


def run_pareto(names: Sequence[str] = (), *, out: str | Path | None = None, zoo: str | Path | None = None,
               plots: bool = True, stream: IO[str] | None = None) -> list[Path]:
    """``evaluate.py --suite [FAMILY ...] --pareto``: run, then write every file into ``out`` as a whole (the
    project's result-directory rules, :class:`joulegym.core.io.ResultDir`). Returns the written paths."""
    import joulegym  # noqa: F401  (registers the ids)
    from joulegym.core.io import ResultDir
    from joulegym.evaluation import pareto_page, pareto_verdict
    from joulegym.evaluation.suite import Progress, default_zoo, suite_families

    descriptors = suite_families(names)
    for descriptor in descriptors:
        tradeoff(descriptor.name)  # a family without a trade-off record fails before any episode
    out_text = str(out) if out is not None else DEFAULT_OUT
    zoo_path = Path(zoo) if zoo is not None else default_zoo()
    if not zoo_path.is_dir():
        raise ValueError(f"--zoo {str(zoo_path)!r} is not a directory")
    result_dir = ResultDir(out_text)
    command = command_line([d.name for d in descriptors], out_text, None if zoo is None else str(zoo))
    total = sum(_count(d, zoo_path) for d in descriptors)
    require_agent_libraries([a for d in descriptors for found in _agents(d, zoo_path).values() for a in found],
                            zoo_path)
    progress = Progress(total, stream)
    progress.note(f"fronts: {', '.join(d.name for d in descriptors)}: {total} point runs")
    start, wall = time.process_time(), time.perf_counter()
    results = []
    for descriptor in descriptors:
        result = run_family_fronts(descriptor, zoo_path, progress)
        indicators(result)
        results.append(result)
    with result_dir as tmp:
        written = write_tables(results, tmp)
        if plots:
            written += pareto_page.write_plots(results, tmp)
        from joulegym.core.io import write_atomic

        written.append(write_atomic(tmp / "index.html", pareto_page.html(results, command)))
        verdicts = pareto_verdict.markdown(pareto_verdict.verdict_rows(
            pd.concat([r.points for r in results], ignore_index=True),
            pd.concat([r.indicators for r in results], ignore_index=True)))
        written.append(write_atomic(tmp / "verdicts.md", f"Printed by `{command}`:\n\n{verdicts}"))
    written = [result_dir.final(p) for p in written]
    progress.note(f"does an agent's front dominate part of the heuristics' front?\n{verdicts}")
    progress.note(f"fronts: {time.process_time() - start:.0f} CPU-s in this process, "
                  f"{time.perf_counter() - wall:.0f} s wall; wrote {len(written)} files into "
                  f"{result_dir.out} (open {result_dir.out / 'index.html'})")
    return written


def _agents(descriptor: FamilyDescriptor, zoo: Path) -> dict[str, list[ZooAgent]]:
    """Per front scenario (id): the shipped agents that play it and the weight-conditioned agents trained on it."""
    from joulegym.evaluation.suite import assign_agents, family_agents

    bench = descriptor.benchmark
    assert bench is not None
    trade = tradeoff(descriptor.name)
    scenarios = trade.scenarios or bench.scenarios
    version = descriptor.kind(bench.kind).version
    plays, _ = assign_agents(descriptor, family_agents(zoo, descriptor), scenarios)
    ids = {s: env_id(bench.kind, s, version) for s in scenarios}
    return {ids[s]: [*plays.get(s, []), *weight_agents(zoo, descriptor.name, s, ids[s])] for s in scenarios}


def _count(descriptor: FamilyDescriptor, zoo: Path) -> int:
    trade = tradeoff(descriptor.name)
    return sum(len(point_entries(descriptor, trade, scenario_id)) + sum(len(a.runs) for a in agents)
               for scenario_id, agents in _agents(descriptor, zoo).items())


def write_tables(results: Sequence[FamilyFronts], out: Path) -> list[Path]:
    """``episodes.csv``, ``points.csv``, ``anchors.csv``, ``indicators.csv`` and ``indicators.json``."""
    from joulegym.core.io import write_atomic, write_csv

    written = []
    for name, frames in (("episodes", [r.episodes for r in results]), ("points", [r.points for r in results]),
                         ("anchors", [r.anchors for r in results]), ("indicators", [r.indicators for r in results])):
        written.append(write_csv(pd.concat(frames, ignore_index=True), out / f"{name}.csv"))
    data = {"reference_point": list(REFERENCE_POINT), "weights": f"uniform on the simplex, {WEIGHT_PARTITIONS + 1} "
            "weight vectors (pymoo Das-Dennis)", "bootstrap_resamples": BOOTSTRAP_RESAMPLES,
            "anchors": "per scenario: best (0) and worst (1) mean over the deployable reference points except random",
            "families": {r.name: {"objectives": [vars(o) for o in r.tradeoff.objectives],
                                  "scenarios": list(r.scenarios), "seeds": list(r.seeds),
                                  "indicators": _records(r.indicators), "notes": r.notes}
                         for r in results}}
    written.append(write_atomic(out / "indicators.json", json.dumps(data, indent=2, sort_keys=True,
                                                                   default=_json_default) + "\n"))
    return written


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as dicts with NaN as ``null`` (strict JSON)."""
    return [{k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in row.items()}
            for row in frame.to_dict(orient="records")]


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    return str(value)
