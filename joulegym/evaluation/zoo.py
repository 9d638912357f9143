"""The zoo of shipped agents: its layout, provenance records and the shipping of a training run (docs/leaderboard.md).

Layout: ``joulegym/agents/zoo/<family>/<scenario>/<algo>/seed<k>/``, one directory per training seed ``k``, each
holding a weights-only agent (``agent.json`` + ``weights.pt``, :mod:`joulegym.agents.weights`) and its
``provenance.json``. The suite aggregates an agent over its training runs x the held-out seeds (rliable's runs).

Provenance (:data:`PROVENANCE_KEYS`; ``format`` 2, written by the training protocol, :mod:`joulegym.protocol`)::

    {"format": 2, "family": "etf", "scenario": "tx2-fig6-random", "env_id": "joulegym/ETF-tx2-fig6-random-v0",
     "env_kwargs": {}, "algo": "sac", "seed": 0, "command": "python -m joulegym.protocol train ...",
     "commit": "<git commit>", "wall_time_s": 3700.2, "cpu_seconds": 3795.0, "train_cpu_seconds": 3600.4,
     "cpu_budget_s": 3600.0, "timesteps": 210000, "hyperparams": {...}, "versions": {...},
     "validation": {"seeds": [9000, ...], "metric": "F_S", "curve": [[cpu_s, timesteps, metric], ...],
                    "selected": {"cpu_s": ..., "timesteps": ..., "metric": ...}, "reference": {"tf": ..., "etf": ...}},
     "score": {"metric": "F_S", "mean": 0.61, "normalised_mean": 1.2, "eval_seeds": [10000, ...]}}

Format 1 (the first zoo: one run per algorithm directly in ``<algo>/``, wall time only) is still read; such a run is
shown as "1 training seed, below budget" (its CPU time was not recorded) until it is retrained.
"""

from __future__ import annotations

import json
import shutil
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
    with ``provenance`` (format 2, checked before anything is written). Returns the run's zoo directory."""
    from joulegym.agents.weights import AGENT_FILE, WEIGHTS_FILE, is_weights_dir
    from joulegym.core.io import write_atomic

    if not is_weights_dir(agent_dir):
        raise ValueError(f"{str(agent_dir)!r} holds no weights-only agent (agent.json + weights.pt)")
    provenance = {"format": PROVENANCE_FORMAT, **provenance}
    missing = [k for k in PROVENANCE_KEYS_V2 if k not in provenance]
    if missing:
        raise ValueError(f"provenance for {str(agent_dir)!r} lacks {missing}")
    target = (Path(zoo if zoo is not None else default_zoo()) / provenance["family"] / provenance["scenario"]
              / provenance["algo"] / f"seed{int(provenance['seed'])}")
    target.mkdir(parents=True, exist_ok=True)
    for name in (AGENT_FILE, WEIGHTS_FILE):
        shutil.copyfile(agent_dir / name, target / name)
    write_atomic(target / PROVENANCE_FILE, json.dumps(provenance, indent=2, sort_keys=True, default=str) + "\n")
    return target


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
