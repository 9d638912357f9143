"""The zoo of shipped agents: its layout, provenance records and the shipping of a training run (docs/leaderboard.md).

Layout: ``joulegym/agents/zoo/<family>/<scenario>/<algo>/seed<k>/``, one directory per training seed ``k``, each
holding a weights-only agent (``agent.json`` + ``weights.pt``, :mod:`joulegym.agents.weights`) and its
``provenance.json``; ``<scenario>`` is the benchmark scenario the agent was trained on (``trained_on``). The suite
evaluates an agent on every headline scenario of its family whose observation and action spaces equal the ones
recorded with it (``spaces``, :func:`spaces_record`; the paper's instances it never trained on are *held-out
instances*, its training scenario's held-out seeds are *held-in*), and aggregates it over its training runs x the
held-out seeds (rliable's runs).

Provenance (:data:`PROVENANCE_KEYS`; ``format`` 2, written by the training protocol, :mod:`joulegym.protocol`)::

    {"format": 2, "family": "etf", "scenario": "tx2-fig6-random", "env_id": "joulegym/ETF-tx2-fig6-random-v0",
     "env_kwargs": {}, "algo": "sac", "seed": 0, "command": "python -m joulegym.protocol train ...",
     "commit": "<git commit>", "wall_time_s": 3700.2, "cpu_seconds": 3795.0, "train_cpu_seconds": 3600.4,
     "cpu_budget_s": 3600.0, "timesteps": 210000, "hyperparams": {...}, "versions": {...},
     "validation": {"seeds": [9000, ...], "metric": "F_S", "curve": [[cpu_s, timesteps, metric], ...],
                    "selected": {"cpu_s": ..., "timesteps": ..., "metric": ...}, "reference": {"tf": ..., "etf": ...}},
     "score": {"metric": "F_S", "mean": 0.61, "normalised_mean": 1.2, "eval_seeds": [10000, ...]},
     "trained_on": "tx2-fig6-random", "spaces": {"observation": {"type": "Box", "shape": [42], ...},
                                                 "action": {...}, "observation_names_sha256": "..."}}

``trained_on`` and ``spaces`` are written by every shipping path (:func:`ship_run` fills them from the training
env when a run's record predates them). Format 1 (the first zoo: one run per algorithm directly in ``<algo>/``, wall
time only) is still read: it was trained on its directory's scenario, and its spaces are the observation shape and
action space of its ``agent.json``; such a run is shown as "1 training seed, below budget" (its CPU time was not
recorded) until it is retrained.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from joulegym.core.benchmark import TRAINING_SEED_LIMIT
from joulegym.core.family import FamilyDescriptor, env_id, families
from joulegym.evaluation.runner import PolicyEntry

PROVENANCE_FILE = "provenance.json"
PROVENANCE_FORMAT = 2
LEGACY_FORMAT = 1
PROVENANCE_KEYS = ("format", "family", "scenario", "env_id", "algo", "seed", "command", "commit", "wall_time_s",
                   "score")
PROVENANCE_KEYS_V2 = (*PROVENANCE_KEYS, "cpu_seconds", "train_cpu_seconds", "cpu_budget_s", "validation")
BUDGET_FRACTION = 0.99  # a run is "at the budget" when its training CPU time reached 99 % of the benchmark's
SPACES_KEYS = ("observation", "action", "observation_names_sha256")  # compared between an agent and a scenario
AGENT_JSON_SPACES = "agent.json"  # the spaces view of a run recorded before spaces were (its agent.json)


@dataclass(frozen=True)
class ZooRun:
    """One training run of a shipped agent: its directory and provenance."""

    path: Path
    provenance: dict[str, Any]

    @property
    def seed(self) -> int:
        return int(self.provenance["seed"])

    @property
    def legacy(self) -> bool:
        return int(self.provenance["format"]) == LEGACY_FORMAT

    def train_cpu_seconds(self) -> float | None:
        value = self.provenance.get("train_cpu_seconds")
        return None if value is None else float(value)

    def at_budget(self, budget_s: float) -> bool:
        cpu = self.train_cpu_seconds()
        return cpu is not None and cpu >= BUDGET_FRACTION * budget_s

    def curve(self) -> list[tuple[float, float, float]]:
        """The validation curve (CPU seconds, timesteps, mean metric on the validation seeds), if recorded."""
        validation = self.provenance.get("validation") or {}
        return [tuple(float(v) for v in point) for point in validation.get("curve") or []]

    @property
    def trained_on(self) -> str:
        """The benchmark scenario the run was trained on (a format-1 run: its directory's)."""
        return str(self.provenance.get("trained_on") or self.provenance["scenario"])

    def training_seeds(self) -> list[int]:
        """The seeds its training envs were reset with: env ``i`` of ``n_envs`` from ``seed + i`` (``n_envs`` from
        the provenance, else its hyperparameters, else 1: a run recorded before ``n_envs`` was)."""
        n_envs = self.provenance.get("n_envs") or (self.provenance.get("hyperparams") or {}).get("n_envs") or 1
        return list(range(self.seed, self.seed + int(n_envs)))

    def validation_seeds(self) -> list[int]:
        """The seeds its model was selected on (empty: no model selection recorded)."""
        validation = self.provenance.get("validation") or {}
        return [int(s) for s in validation.get("seeds") or []]

    def spaces(self) -> dict[str, Any]:
        """The spaces the run was trained on: the provenance's ``spaces`` record, or (a run whose record predates
        it) ``{"agent.json": {"observation_shape": ..., "action_space": ...}}`` from its ``agent.json``."""
        from joulegym.agents.weights import read_agent_json

        if self.provenance.get("spaces"):
            return dict(self.provenance["spaces"])
        meta = read_agent_json(self.path)
        return {AGENT_JSON_SPACES: {"observation_shape": list(meta["observation_shape"]),
                                    "action_space": str(meta["action_space"])}}


@dataclass(frozen=True)
class ZooAgent:
    """One shipped agent (an algorithm on a scenario) and its training runs, sorted by seed."""

    family: str
    scenario: str
    algo: str
    runs: tuple[ZooRun, ...]

    @property
    def path(self) -> Path:
        return self.runs[0].path

    @property
    def provenance(self) -> dict[str, Any]:
        """The first run's provenance (a one-run agent's only one)."""
        return self.runs[0].provenance

    @property
    def trained_on(self) -> str:
        """The benchmark scenario every run of the agent was trained on."""
        return self.runs[0].trained_on

    @property
    def label(self) -> str:
        """``"sac (trained on tx2-fig6-random)"``: how notes name the agent."""
        return f"{self.algo} (trained on {self.trained_on})"

    def spaces_mismatch(self, scenario: Mapping[str, Any]) -> str | None:
        """Why the agent cannot play a scenario whose spaces record is ``scenario`` (:func:`spaces_record`), or
        ``None`` when its recorded spaces equal the scenario's."""
        mine = self.runs[0].spaces()
        if AGENT_JSON_SPACES in mine:  # recorded before spaces were: the shape and the action space's repr
            theirs = scenario[AGENT_JSON_SPACES]
            mine = mine[AGENT_JSON_SPACES]
            diffs = [f"{key} {mine[key]} vs the scenario's {theirs[key]}" for key in ("observation_shape",
                                                                                      "action_space")
                     if mine[key] != theirs[key]]
        else:
            diffs = [f"{key} {_brief(mine.get(key))} vs the scenario's {_brief(scenario.get(key))}"
                     for key in SPACES_KEYS if mine.get(key) != scenario.get(key)]
        return "its spaces differ: " + "; ".join(diffs) if diffs else None

    def entries(self) -> list[tuple[int, PolicyEntry]]:
        """``(training seed, policy entry)`` per run: every run is evaluated under the algorithm's label."""
        return [(run.seed, PolicyEntry(self.algo, "agent", self.algo, path=str(run.path))) for run in self.runs]

    def entry(self) -> PolicyEntry:
        return self.entries()[0][1]

    def training_note(self, budget_s: float) -> str:
        """How the agent was trained, for the page: runs, CPU time, and whether every run had the full budget."""
        seeds = len(self.runs)
        cpu = [r.train_cpu_seconds() for r in self.runs]
        label = f"{seeds} training seed{'s' if seeds != 1 else ''}"
        if any(c is None for c in cpu):
            return f"{label}, below budget (CPU time not recorded: format-{LEGACY_FORMAT} provenance)"
        low, high = f"{min(cpu):.0f}", f"{max(cpu):.0f}"
        spent = f"{low} CPU-s" if low == high else f"{low}-{high} CPU-s"
        full = all(r.at_budget(budget_s) for r in self.runs)
        return f"{label}, {spent} each{'' if full else f', below the {budget_s:.0f} CPU-s budget'}"


def default_zoo() -> Path:
    """The packaged zoo, ``joulegym/agents/zoo``."""
    return Path(str(resources.files("joulegym.agents").joinpath("zoo")))


MO_DIR = "mo"  # <zoo>/<family>/<scenario>/mo/: the weight-conditioned agents of the trade-off fronts


def require_agent_libraries(agents: list[ZooAgent], zoo: Path) -> None:
    """Before any episode: the libraries the agents that will play load with (torch and the algorithm's package,
    the ``train`` extra), so a run without them stops with one line instead of a traceback midway.

    :raises ValueError: naming the zoo, the agents and the install that provides them.
    """
    from joulegym.agents.algos import algo_spec

    if not agents:
        return
    try:
        import torch  # noqa: F401
        for algo in sorted({agent.algo for agent in agents}):
            algo_spec(algo).load_class()
    except ImportError as err:
        labels = ", ".join(sorted({agent.label for agent in agents}))
        raise ValueError(f"--zoo {str(zoo)!r}: its agents ({labels}) need the train extra ({err}); install it with "
                         "pip install 'joulegym[train]', or pass --zoo with an empty directory to rank the reference "
                         "policies alone") from err


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
    for directory in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith(".")
                            and p.name != MO_DIR):  # weight-conditioned agents: joulegym.evaluation.mo_agents
        if directory.name not in ALGOS:
            raise ValueError(f"zoo agent {str(directory)!r}: the directory name must be an algorithm, one of "
                             f"{sorted(ALGOS)}")
        if is_weights_dir(directory) or (directory / "model.zip").is_file():
            run_dirs = [directory]  # format 1: one run in the algorithm's directory
        else:
            run_dirs = sorted((p for p in directory.iterdir() if p.is_dir() and p.name.startswith("seed")),
                              key=lambda p: (len(p.name), p.name))
            if not run_dirs:
                raise ValueError(f"zoo agent {str(directory)!r} holds no seed<k>/ run (agent.json + weights.pt + "
                                 f"{PROVENANCE_FILE})")
        runs = tuple(_read_run(d, family, scenario, directory.name, expected_env_id) for d in run_dirs)
        seeds = [r.seed for r in runs]
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"zoo agent {str(directory)!r}: training seeds {seeds} repeat")
        differ = [r.path.name for r in runs[1:] if r.provenance.get("spaces") != runs[0].provenance.get("spaces")]
        if differ:
            raise ValueError(f"zoo agent {str(directory)!r}: runs {differ} record other spaces than "
                             f"{runs[0].path.name} (one agent: one pair of spaces)")
        agents.append(ZooAgent(family, scenario, directory.name, tuple(sorted(runs, key=lambda r: r.seed))))
    return agents


def _read_run(directory: Path, family: str, scenario: str, algo: str, expected_env_id: str) -> ZooRun:
    from joulegym.agents.weights import is_weights_dir, read_agent_json

    if not is_weights_dir(directory):
        raise ValueError(f"zoo agent {str(directory)!r} holds no agent.json + weights.pt (the zoo is weights-only: "
                         "a model.zip is never loaded from it)")
    meta = read_agent_json(directory)  # ValueError naming the file
    if meta["algo"] != algo:
        raise ValueError(f"{directory / 'agent.json'}: algo={meta['algo']!r}, expected {algo!r} (the directory it "
                         "lies in)")
    provenance = read_provenance(directory / PROVENANCE_FILE)
    for key, want in (("family", family), ("scenario", scenario), ("algo", algo), ("env_id", expected_env_id)):
        if provenance[key] != want:
            raise ValueError(f"{directory / PROVENANCE_FILE}: {key}={provenance[key]!r}, expected {want!r} (the "
                             "directory it lies in)")
    if provenance.get("trained_on", scenario) != scenario:
        raise ValueError(f"{directory / PROVENANCE_FILE}: trained_on={provenance['trained_on']!r}, expected "
                         f"{scenario!r} (an agent lies in the directory of the scenario it was trained on)")
    spaces = provenance.get("spaces")
    if spaces is not None and not (isinstance(spaces, dict) and {"observation", "action"} <= set(spaces)):
        raise ValueError(f"{directory / PROVENANCE_FILE}: spaces must be a JSON object with 'observation' and "
                         f"'action' (spaces_record), got {spaces!r}")
    if directory.name.startswith("seed") and directory.name != f"seed{provenance['seed']}":
        raise ValueError(f"{directory / PROVENANCE_FILE}: seed={provenance['seed']!r}, but the directory is "
                         f"{directory.name!r}")
    return ZooRun(directory, provenance)


def read_provenance(path: Path) -> dict[str, Any]:
    """A zoo run's ``provenance.json``, checked for the keys of its format (1 or 2)."""
    if not path.is_file():
        raise ValueError(f"zoo agent {str(path.parent)!r} has no {PROVENANCE_FILE}")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err.msg})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: must hold a JSON object with keys {list(PROVENANCE_KEYS_V2)}")
    if data.get("format") not in (LEGACY_FORMAT, PROVENANCE_FORMAT):
        raise ValueError(f"{path}: format={data.get('format')!r}, expected {PROVENANCE_FORMAT} (or {LEGACY_FORMAT}, "
                         "the first zoo's)")
    keys = PROVENANCE_KEYS if data["format"] == LEGACY_FORMAT else PROVENANCE_KEYS_V2
    missing = [k for k in keys if k not in data]
    if missing:
        raise ValueError(f"{path}: missing keys {missing}; required for format {data['format']}: {list(keys)}")
    if not 0 <= int(data["seed"]) < TRAINING_SEED_LIMIT:
        raise ValueError(f"{path}: seed={data['seed']!r} must be a training seed in [0, {TRAINING_SEED_LIMIT})")
    return data


def describe_space(space: Any) -> dict[str, Any]:
    """A JSON description of a Gymnasium space that is equal for two spaces exactly when an agent of one plays
    the other: type, shape and dtype, and the bounds (as a SHA-256 of their bytes, with their range) or sizes."""
    import numpy as np
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        low, high = np.asarray(space.low), np.asarray(space.high)
        return {"type": "Box", "shape": list(space.shape), "dtype": str(space.dtype),
                "range": [float(low.min()), float(high.max())] if low.size else [],
                "bounds_sha256": hashlib.sha256(low.tobytes() + high.tobytes()).hexdigest()}
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, spaces.MultiDiscrete):
        return {"type": "MultiDiscrete", "nvec": np.asarray(space.nvec).tolist(),
                "start": np.asarray(space.start).tolist()}
    if isinstance(space, spaces.MultiBinary):
        return {"type": "MultiBinary", "n": np.asarray(space.n).tolist()}
    return {"type": type(space).__name__, "repr": repr(space)}


def spaces_record(env: Any) -> dict[str, Any]:
    """The spaces of ``env`` as the zoo records them (``provenance["spaces"]``): the observation and action spaces
    (:func:`describe_space`) and, where the env names its observation values, a SHA-256 of those names (the same
    shape with other features in it is another space), plus the ``agent.json`` view (observation shape, action
    space) that runs recorded before this record are compared with."""
    record: dict[str, Any] = {"observation": describe_space(env.observation_space),
                              "action": describe_space(env.action_space)}
    try:
        names = list(env.unwrapped.observation_names)
    except (AttributeError, NotImplementedError):
        names = []
    if names:
        record["observation_names_sha256"] = hashlib.sha256("\n".join(names).encode()).hexdigest()
    return record


def scenario_spaces(scenario_id: str) -> dict[str, Any]:
    """:func:`spaces_record` of the env ``scenario_id`` with its ``agent.json`` view beside it."""
    import gymnasium as gym

    env = gym.make(scenario_id)
    try:
        record = spaces_record(env)
        record[AGENT_JSON_SPACES] = {"observation_shape": list(env.observation_space.shape),
                                     "action_space": repr(env.action_space)}
    finally:
        env.close()
    return record


def _brief(description: Any) -> str:
    """A space description in a few words for a note (``Box (42,) float32``)."""
    if not isinstance(description, dict):
        return "none recorded" if description is None else str(description)[:16]
    if "shape" in description:
        return f"{description['type']} {tuple(description['shape'])} {description.get('dtype', '')}".strip()
    size = description.get("nvec", description.get("n"))
    if isinstance(size, list) and len(size) > 4:  # a long MultiDiscrete: its length and distinct sizes
        size = f"{len(size)} dims of {sorted(set(size))}"
    return f"{description['type']}({size})" if size is not None else str(description.get("type"))


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


def ship_run(agent_dir: Path, provenance: dict[str, Any], zoo: str | Path | None = None) -> Path:
    """Copy the weights-only agent in ``agent_dir`` into the zoo as run ``seed<k>`` of its (family, scenario, algo)
    with ``provenance`` (format 2, checked before anything is written: ``trained_on`` is its scenario, ``spaces``
    are recorded from the training env and must be the ``agent.json``'s). Returns the run's zoo directory.

    :raises ValueError: for a provenance that lacks a key or names another scenario, an agent whose spaces are not
        its env's, or a zoo entry the run cannot join (:func:`check_joins`).
    """
    from joulegym.agents.weights import AGENT_FILE, WEIGHTS_FILE, is_weights_dir
    from joulegym.core.io import write_atomic

    if not is_weights_dir(agent_dir):
        raise ValueError(f"{str(agent_dir)!r} holds no weights-only agent (agent.json + weights.pt)")
    provenance = {"format": PROVENANCE_FORMAT, **provenance}
    provenance["trained_on"] = provenance.get("trained_on") or provenance.get("scenario")
    missing = [k for k in PROVENANCE_KEYS_V2 if k not in provenance]
    if missing:
        raise ValueError(f"provenance for {str(agent_dir)!r} lacks {missing}")
    if provenance["trained_on"] != provenance["scenario"]:
        raise ValueError(f"provenance for {str(agent_dir)!r}: trained_on={provenance['trained_on']!r} but "
                         f"scenario={provenance['scenario']!r} (an agent ships under the scenario it was trained on)")
    provenance["spaces"] = _training_spaces(agent_dir, provenance)
    entry = (Path(zoo if zoo is not None else default_zoo()) / provenance["family"] / provenance["scenario"]
             / provenance["algo"])
    check_joins(entry, provenance)
    target = entry / f"seed{int(provenance['seed'])}"
    target.mkdir(parents=True, exist_ok=True)
    for name in (AGENT_FILE, WEIGHTS_FILE):
        shutil.copyfile(agent_dir / name, target / name)
    write_atomic(target / PROVENANCE_FILE, json.dumps(provenance, indent=2, sort_keys=True, default=str) + "\n")
    return target


def _training_spaces(agent_dir: Path, provenance: Mapping[str, Any]) -> dict[str, Any]:
    """The run's recorded ``spaces``, or those of its training env; either way the ``agent.json``'s must agree."""
    from joulegym.agents.weights import read_agent_json

    env_spaces = scenario_spaces(provenance["env_id"])
    view = env_spaces.pop(AGENT_JSON_SPACES)
    meta = read_agent_json(agent_dir)
    mine = {"observation_shape": list(meta["observation_shape"]), "action_space": str(meta["action_space"])}
    if mine != view:
        raise ValueError(f"{Path(agent_dir) / 'agent.json'}: the agent's spaces {mine} are not those of its training "
                         f"env {provenance['env_id']} {view}")
    recorded = provenance.get("spaces")
    if recorded is not None and recorded != env_spaces:
        raise ValueError(f"provenance for {str(agent_dir)!r}: spaces recorded at training differ from "
                         f"{provenance['env_id']}'s today ({_brief(recorded.get('observation'))} vs "
                         f"{_brief(env_spaces['observation'])}); the env changed since: retrain the agent")
    return env_spaces


# the provenance keys every run of one shipped agent shares (one agent: one configuration, several training seeds)
SHARED_KEYS = ("env_id", "env_kwargs", "hyperparams", "n_envs", "cpu_budget_s", "trained_on", "spaces")


def check_joins(entry: Path, provenance: Mapping[str, Any]) -> None:
    """``ValueError`` unless a run with ``provenance`` can join the zoo entry ``entry``
    (``<family>/<scenario>/<algo>/``): the entry holds no format-1 agent in place (the first zoo's layout; remove
    it first) and every run already in it of another seed shares the run's :data:`SHARED_KEYS`."""
    from joulegym.agents.weights import AGENT_FILE

    if (entry / AGENT_FILE).is_file() or (entry / PROVENANCE_FILE).is_file():
        raise ValueError(f"zoo entry {str(entry)!r} holds a format-{LEGACY_FORMAT} agent in place (agent.json, "
                         f"weights.pt, {PROVENANCE_FILE} beside the seed<k>/ runs); remove those files (git rm) "
                         "before shipping seed<k>/ runs into it")
    for other in sorted(entry.glob(f"seed*/{PROVENANCE_FILE}")):
        if other.parent.name == f"seed{int(provenance['seed'])}":
            continue  # the same seed again: replaced
        theirs = read_provenance(other)
        differ = [k for k in SHARED_KEYS if k in theirs and theirs.get(k) != provenance.get(k)]
        if differ:
            raise ValueError(f"zoo entry {str(entry)!r}: {other.parent.name} differs from the run shipped as "
                             f"seed{provenance['seed']} in {differ}; the runs of one agent share "
                             f"{list(SHARED_KEYS)} (ship the runs of another configuration under another "
                             "algorithm or scenario, or remove the old runs first)")


def git_commit() -> str:
    """The checkout's commit, with ``-dirty`` when tracked files differ from it (``"unknown"`` outside a git
    checkout)."""
    import subprocess

    here = Path(__file__).resolve().parent
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=False,
                              cwd=here)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, timeout=30, check=False, cwd=here)
    except OSError:
        return "unknown"
    if done.returncode != 0 or not done.stdout.strip():
        return "unknown"
    return done.stdout.strip() + ("-dirty" if dirty.returncode == 0 and dirty.stdout.strip() else "")
