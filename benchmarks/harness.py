"""The one benchmark harness: steps per CPU second of every registered kind next to a no-op env, the vector envs,
and the cost-growth curves; Markdown + CSV tables and a plot (docs/performance.md).

Method (every figure):

- CPU time (``time.process_time``), one process, ``OMP_NUM_THREADS=1``;
- every env is made with ``gym.make`` (checker and order-enforcing wrappers included) and stepped by one loop
  (reset on episode end, the policy's decision included);
- the floor is the bare no-op (:class:`NoOpEnv` under :data:`FLOOR_ID`: made with ``gym.make`` like joulegym's
  ids, with no ``max_episode_steps`` / ``TimeLimit``, stepped with one constant action and no policy call,
  :class:`FloorStepper`), measured *interleaved*: in alternating chunks with every repeat of every measurement;
- ratio = floor steps/s / env steps/s of the same repeat (lower is better; compare ratios across machines,
  not raw numbers); reported: the median over ``--repeats``; Gymnasium's ``CartPole-v1`` with random actions is
  measured the same way first, and every row also gives its ratio in CartPoles (``x CartPole``: the env's ratio
  over CartPole's), a yardstick any RL user knows;
- a repeat is ``--steps`` steps (3000), fewer for a kind so slow that they would take more than
  :attr:`Settings.repeat_budget_s` CPU seconds (the table gives the steps per repeat).

Tables:

1. ``kinds``: the base id of every registered kind, ``PowerFlow-tiny-v0`` (the PowerFlow target), and the
   real-trace ids given their data (``trace_path`` resolved through :mod:`joulegym.datasets`: ``python -m
   joulegym data fetch NAME`` or ``$JOULEGYM_DATA``; skipped with a note otherwise), each with random actions
   (masked) and with its reference policy: the family's own algorithm where it drives the kind (PowerFlow:
   ``powerflow-strict``, as ``bench_powerflow.py``), else the first applicable reference policy;
   a policy's ``env_config`` is applied.
2. ``episodes``: CPU seconds per whole episode where docs/performance.md sets a target (Tiresias and PowerFlow on the
   Philly 24 h trace), given the data: *one* episode as :func:`joulegym.baselines.powerflow_simulate.simulate` runs
   it (action mode ``request``, a slot per job, the policy's ``paper_config`` and ``env_config``, eta 0.6, until
   every job is done), timed per episode, median over the repeats; beside it, once, ``simulate()`` as a whole, which
   also pays for the episodes it abandons with too few slots (it starts at 128 slots and re-runs x4 when a job finds
   none).
3. ``vector``: ``SyncVectorEnv`` of 4 ``ETF-v0`` envs against 4 single-env steps (a fixed action: the env's cost
   alone), and every kind with a batched ``vector_entry_point`` at ``N`` = 256: aggregate steps/s with random
   actions, beside the no-op's steps/s.
4. ``growth``: cost against problem size (:data:`GROWTH`: PowerFlow time per episode vs jobs and vs GPUs, EMRF us
   per step vs users; a new family adds its curve with :func:`register_growth`, or from the benchmark script its
   descriptor names (``FamilyDescriptor.benchmark_script``), which may define ``harness_growth()`` returning
   ``[(name, family, x_label, y_label, fn), ...]`` with ``fn(settings) -> [(x, cost), ...]``; the
   harness imports it when present and notes it when it fails).

Every registered kind is measured, new families included; a kind whose env cannot be made or stepped gives an
``error`` row (and a note) instead of stopping the harness.

Usage::

    python benchmarks/harness.py                    # everything, writes benchmarks/results/
    python benchmarks/harness.py --docs             # ... and rewrites the table in docs/performance.md
    python benchmarks/harness.py --family etf --no-growth
    python benchmarks/harness.py --quick --ids joulegym/ETF-v0 --growth none --out /tmp/bench   # smoke test
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, as the targets are stated

import gymnasium as gym
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import joulegym  # noqa: E402
from joulegym import baselines, datasets  # noqa: E402
from joulegym.core import family as registry  # noqa: E402
from joulegym.core.policy import env_config_for  # noqa: E402
from joulegym.core.rollout import rollout  # noqa: E402
from joulegym.workloads.datasets import FETCH_COMMAND  # noqa: E402

NOOP_ID = "joulegym-bench/NoOp-v0"  # the no-op with a TimeLimit, for benchmark scripts that roll whole episodes
FLOOR_ID = "joulegym-bench/Floor-v0"  # the bare no-op: the floor of every ratio
YARDSTICK_ID = "CartPole-v1"
DEFAULT_OUT = ROOT / "benchmarks" / "results"
PERFORMANCE_PAGE = ROOT / "docs" / "performance.md"
TABLE_START = "<!-- harness:performance-table:start -->"
TABLE_END = "<!-- harness:performance-table:end -->"
EXTRA_IDS = ("joulegym/PowerFlow-tiny-v0",)  # PowerFlow's speed target (the base id is a whole cluster)
REFERENCE_POLICY = {"powerflow": "powerflow-strict"}  # bench_powerflow.py's reference, so their figures agree
EPISODE_TARGETS = (("joulegym/PowerFlow-philly-24h-v0", "tiresias"), ("joulegym/PowerFlow-philly-24h-v0", "powerflow"))
EPISODE_ETA = 0.6  # simulate()'s default budget, as in docs/families/powerflow.md §12
BATCHED_N = 256
BATCHED_VS_SINGLE_N = (4, 256)  # the batched envs' targets: no slower than 4 single envs, >= 5x one at 256
ACTION_SETS = 64  # pre-drawn random action batches, cycled
SYNC_N = 4


# --- the no-op reference and the step loop ---------------------------------------------------------------------
class NoOpEnv(gym.Env):
    """The trivial reference: a one-float observation, a two-action space, nothing simulated."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (1,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action):
        return np.zeros(1, dtype=np.float32), 0.0, False, False, {}


def ensure_noop() -> None:
    if NOOP_ID not in gym.registry:
        gym.register(NOOP_ID, entry_point=NoOpEnv, max_episode_steps=1000)
    if FLOOR_ID not in gym.registry:
        gym.register(FLOOR_ID, entry_point=NoOpEnv)  # like joulegym's ids: checker and order wrappers, no TimeLimit


class FloorStepper:
    """Steps the bare no-op (:data:`FLOOR_ID`) with one constant action and no policy call; the same ``run`` /
    ``rate`` as :class:`Stepper`, so it interleaves with one."""

    def __init__(self, env: gym.Env | None = None) -> None:
        ensure_noop()
        self.env = env if env is not None else gym.make(FLOOR_ID)
        self.env.reset(seed=0)
        self.action = 0
        self.steps, self.cpu_s = 0, 0.0

    def run(self, steps: int) -> None:
        step, action = self.env.step, self.action
        start = time.process_time()
        for _ in range(steps):
            step(action)
        self.cpu_s += time.process_time() - start
        self.steps += steps

    @property
    def rate(self) -> float:
        return self.steps / max(self.cpu_s, 1e-9)


class FixedActionPolicy:
    """Repeats one valid action (the first unmasked one for discrete spaces): the env's cost alone."""

    name = "fixed-action"
    privileged = False

    def reset(self, env: gym.Env, seed: int | None = None) -> None:
        space = env.action_space
        self._env = env
        if isinstance(space, gym.spaces.Box):
            self._action = ((space.low + space.high) / 2).astype(space.dtype)
        else:
            self._action = None

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        if self._action is not None:
            return self._action
        mask = info.get("action_mask")
        space = self._env.action_space
        if isinstance(space, gym.spaces.Discrete):
            return int(np.flatnonzero(mask)[0]) if mask is not None else 0
        return np.zeros(space.shape, dtype=np.int64)


def steps_per_second(env: gym.Env, steps: int, policy: Any, seed: int = 0) -> float:
    """Steps per CPU second over whole episodes (at least ``steps`` steps) of ``policy`` (bench_*.py use it)."""
    done, episode = 0, 0
    start = time.process_time()
    while done < steps:
        done += rollout(env, policy, seed + episode).length
        episode += 1
    return done / max(time.process_time() - start, 1e-9)


class Stepper:
    """Steps ``env`` with ``policy`` in chunks, keeping its episode across chunks (reset on every episode end), and
    adds up the CPU time: chunks of two steppers can alternate, so both see the same machine load."""

    def __init__(self, env: gym.Env, policy: Any, seed: int = 0) -> None:
        self.env, self.policy, self.seed, self.episode = env, policy, seed, 0
        self.obs, self.info = env.reset(seed=seed)
        policy.reset(env, seed=seed)
        self.steps, self.cpu_s = 0, 0.0

    def run(self, steps: int) -> None:
        env, policy, obs, info = self.env, self.policy, self.obs, self.info
        start = time.process_time()
        for _ in range(steps):
            obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
            if terminated or truncated:
                self.episode += 1
                obs, info = env.reset(seed=self.seed + self.episode)
                policy.reset(env, seed=self.seed + self.episode)
        self.cpu_s += time.process_time() - start
        self.steps += steps
        self.obs, self.info = obs, info

    @property
    def rate(self) -> float:
        return self.steps / max(self.cpu_s, 1e-9)


def cpu_steps_per_second(env: gym.Env, policy: Any, steps: int, seed: int = 0) -> float:
    """Steps per CPU second over ``steps`` steps of ``policy`` (reset on every episode end; a long episode may be
    cut, so real-trace ids are measured in minutes, not hours)."""
    stepper = Stepper(env, policy, seed)
    stepper.run(steps)
    return stepper.rate


def interleaved_rates(first: Stepper, second: Stepper, first_steps: int, second_steps: int,
                      chunks: int = 10) -> tuple[float, float]:
    """Steps/s of two steppers run in alternating chunks (the no-op and an env: the same load on both)."""
    for _ in range(chunks):
        first.run(max(1, first_steps // chunks))
        second.run(max(1, second_steps // chunks))
    return first.rate, second.rate


def reference_policy_name(env: gym.Env) -> str | None:
    """The family's own algorithm if it drives this kind (PowerFlow: ``powerflow-strict``), else the first
    applicable reference policy."""
    base = env.unwrapped
    names = [n for n in baselines.applicable(env) if n != "random"]
    preferred = REFERENCE_POLICY.get(base.family) or registry.get_family(base.family).reference_policy
    return preferred if preferred in names else (names[0] if names else None)


# --- which ids ----------------------------------------------------------------------------------------------
def trace_kwargs(env_id: str) -> tuple[dict[str, Any] | None, str]:
    """``gym.make`` kwargs that give a real-trace id its data (``trace_path``), or ``None`` and why not."""
    spec = gym.spec(env_id)
    scenario = spec.kwargs.get("scenario")
    if scenario is None:
        return {}, ""
    family = registry.CATALOG[env_id][0]
    config = registry.get_family(family).scenarios[scenario].config
    trace = config.get("trace")
    if not (isinstance(trace, dict) and trace.get("kind") == "file"):
        return {}, ""
    name = trace.get("dataset")
    if name is None:  # a file scenario without a registered dataset: the caller must pass trace_path
        return None, f"{env_id}: skipped, its trace has no joulegym.datasets entry ({trace.get('hint', 'no hint')})"
    if not datasets.is_present(name):
        return None, (f"{env_id}: skipped, dataset {name!r} is not in {datasets.data_dir()} "
                      f"(`{FETCH_COMMAND} {name}`)")
    return {"trace_path": str(datasets.resolve(name))}, ""


def real_trace_ids(family: str | None = None) -> list[str]:
    out = []
    for env_id in registry.registered_ids(family):
        try:
            kwargs, note = trace_kwargs(env_id)
        except Exception:  # a scenario the harness cannot read: its base kind is measured (and errors) anyway
            continue
        if kwargs or note:
            out.append(env_id)
    return out


def default_ids(family: str | None = None) -> list[str]:
    """The base id of every kind, the extra targets and the real-trace ids (of ``family``)."""
    ids = [registry.env_id(k.name, version=k.version) for f in registry.families() for k in f.kinds
           if family is None or f.name == family]
    ids += [i for i in EXTRA_IDS if i in gym.registry and (family is None or registry.CATALOG[i][0] == family)]
    return ids + [i for i in real_trace_ids(family) if i not in ids]


# --- measurements --------------------------------------------------------------------------------------------
@dataclass
class Settings:
    steps: int = 3000
    repeats: int = 3
    noop_steps: int = 30_000
    vector_steps: int = 300
    repeat_budget_s: float = 10.0  # a slow kind measures fewer steps per repeat (the row says how many)
    batched_n: int = BATCHED_N
    quick: bool = False
    notes: list[str] = field(default_factory=list)  # ids skipped (their data is absent), named in the table
    growth_notes: list[str] = field(default_factory=list)


def measure(env_id: str, policy_name: str, kwargs: dict[str, Any], noop: gym.Env, cfg: Settings) -> dict[str, Any]:
    """Median steps/s and median ratio to the interleaved floor of ``policy_name`` on ``env_id``."""
    family = registry.CATALOG[env_id][0]
    policy = baselines.make(policy_name, family=family)
    env = gym.make(env_id, **env_config_for(policy, kwargs))
    return measure_env(env, policy, noop, cfg, env_id=env_id, family=family, policy_name=policy_name)


def measure_env(env: gym.Env, policy: Any, noop: gym.Env, cfg: Settings, *, env_id: str, family: str,
                policy_name: str) -> dict[str, Any]:
    """:func:`measure` of a made env and policy (the CartPole yardstick too)."""
    rates, ratios, noops = [], [], []
    warm = Stepper(env, policy)  # warm caches and imports; its rate sizes the repeats of a slow kind
    warm.run(20)
    warm.run(max(0, min(cfg.steps, 200, int(warm.rate * cfg.repeat_budget_s / 4)) - 20))
    steps = max(20, min(cfg.steps, int(warm.rate * cfg.repeat_budget_s)))  # at most ~repeat_budget_s per repeat
    noop_steps = max(2000, cfg.noop_steps * steps // cfg.steps)
    for repeat in range(cfg.repeats):
        noop_rate, rate = interleaved_rates(FloorStepper(noop), Stepper(env, policy, seed=repeat), noop_steps, steps)
        rates.append(rate)
        noops.append(noop_rate)
        ratios.append(noop_rate / rate)
    env.close()
    return {"id": env_id, "family": family, "policy": policy_name, "steps_per_s": statistics.median(rates),
            "noop_steps_per_s": statistics.median(noops), "ratio": statistics.median(ratios),
            "ratio_min": min(ratios), "ratio_max": max(ratios), "repeats": cfg.repeats, "steps": steps}


def error_row(env_id: str, policy: str | None, error: BaseException, cfg: Settings) -> dict[str, Any]:
    """A row (and a note) for a kind that could not be made or stepped: the harness goes on with the others (a
    family mid-change, a new kind)."""
    message = f"{type(error).__name__}: {error}".splitlines()[0][:200]
    cfg.notes.append(f"{env_id} [{policy or '-'}]: error ({message})")
    print(f"{env_id:<40} {policy or '-':<18} ERROR {message}", flush=True)
    family = registry.CATALOG[env_id][0] if env_id in registry.CATALOG else ""
    return {"id": env_id, "family": family, "policy": policy or "-", "steps_per_s": float("nan"),
            "noop_steps_per_s": float("nan"), "ratio": float("nan"), "ratio_min": float("nan"),
            "ratio_max": float("nan"), "repeats": 0, "steps": 0, "error": message}


def yardstick_row(noop: gym.Env, cfg: Settings) -> dict[str, Any]:
    """Gymnasium's ``CartPole-v1`` with random actions on the same floor: the ``x CartPole`` unit of every row."""
    from joulegym.core.policy import RandomPolicy

    row = measure_env(gym.make(YARDSTICK_ID), RandomPolicy(), noop, cfg, env_id=YARDSTICK_ID, family="gymnasium",
                      policy_name="random")
    print(f"{YARDSTICK_ID:<40} {'random':<18} {row['steps_per_s']:>10,.0f} steps/s  ratio {row['ratio']:6.1f} "
          "(the yardstick)", flush=True)
    return row


def kinds_table(ids: Sequence[str], cfg: Settings, policies: Sequence[str] | None = None) -> list[dict[str, Any]]:
    ensure_noop()
    noop = gym.make(FLOOR_ID)
    rows = [yardstick_row(noop, cfg)]
    for env_id in ids:
        try:
            kwargs, note = trace_kwargs(env_id)
            if kwargs is None:
                cfg.notes.append(note)
                print(note, flush=True)
                continue
            probe = gym.make(env_id, **kwargs)
            names = list(policies) if policies else ["random", reference_policy_name(probe)]
            probe.close()
        except Exception as error:  # the env cannot be made: one error row, the other kinds go on
            rows.append(error_row(env_id, None, error, cfg))
            continue
        for name in dict.fromkeys(n for n in names if n):
            try:
                row = measure(env_id, name, kwargs, noop, cfg)
            except Exception as error:
                rows.append(error_row(env_id, name, error, cfg))
                continue
            row["x_cartpole"] = row["ratio"] / rows[0]["ratio"]
            rows.append(row)
            print(f"{env_id:<40} {name:<18} {row['steps_per_s']:>10,.0f} steps/s  ratio {row['ratio']:6.1f} "
                  f"[{row['ratio_min']:.1f}-{row['ratio_max']:.1f}]  {row['x_cartpole']:.1f} x CartPole", flush=True)
    rows[0]["x_cartpole"] = 1.0
    return rows


def _episode_env(env_id: str, policy: Any, kwargs: dict[str, Any]) -> gym.Env:
    """``env_id`` set up as :func:`joulegym.baselines.powerflow_simulate.simulate` runs a trace: the policy's
    ``paper_config`` and ``env_config``, ``request`` actions, no power repair unless the policy says, until every job
    is done, and a slot per job (so the decisions do not depend on the slots), reset once so that loading the trace
    is not timed."""
    paper = dict(getattr(policy, "paper_config", None) or {})
    config = {"power_constraint": "none", "horizon_s": math.inf, **paper, **env_config_for(policy, kwargs)}
    config.update(eta=EPISODE_ETA, action_mode="request", max_steps=10_000_000)
    probe = gym.make(env_id, **config)
    probe.reset(seed=0)
    jobs = len(probe.unwrapped.sim.jobs)
    probe.close()
    env = gym.make(env_id, max_slots=jobs, **config)
    env.reset(seed=0)
    return env


def episodes_table(cfg: Settings, family: str | None = None) -> list[dict[str, Any]]:
    """CPU seconds per whole episode for :data:`EPISODE_TARGETS` (given their data): one episode per repeat, the
    median; and ``simulate()`` once, with the episodes it abandons (module docstring)."""
    from joulegym.baselines.powerflow_simulate import simulate

    rows = []
    for env_id, policy_name in EPISODE_TARGETS:
        if env_id not in gym.registry or (family is not None and registry.CATALOG[env_id][0] != family):
            continue
        kwargs, note = trace_kwargs(env_id)
        if kwargs is None:
            cfg.notes.append(note)
            continue
        try:
            policy = baselines.make(policy_name, family=registry.CATALOG[env_id][0])
            env = _episode_env(env_id, policy, kwargs)
            seconds = []
            for _ in range(cfg.repeats):
                start = time.process_time()
                episode = rollout(env, policy, seed=0)
                seconds.append(time.process_time() - start)
            jobs = env.unwrapped.sim.jobs
            cluster = env.unwrapped.cluster
            start = time.process_time()
            result = simulate(jobs, policy, cluster=cluster, eta=EPISODE_ETA,
                              **{k: v for k, v in kwargs.items() if k != "trace_path"})
            simulate_s = time.process_time() - start
        except Exception as error:  # data or family mid-change: a note, the other tables go on
            cfg.notes.append(f"episode {env_id} [{policy_name}]: error ({type(error).__name__}: {error})")
            continue
        same = result.metrics["avg_jct_s"] == episode.metrics["avg_jct_s"]
        rows.append({"id": env_id, "policy": policy_name, "cpu_s_per_episode": statistics.median(seconds),
                     "min": min(seconds), "max": max(seconds), "steps": episode.length, "repeats": len(seconds),
                     "simulate_cpu_s": simulate_s, "avg_jct_h": episode.metrics["avg_jct_s"] / 3600.0,
                     "simulate_same_result": same})
        print(f"{env_id} {policy_name}: {rows[-1]['cpu_s_per_episode']:.2f} CPU s per episode "
              f"[{min(seconds):.2f}-{max(seconds):.2f}], {episode.length} decisions; simulate() {simulate_s:.2f} s"
              f"{'' if same else ' (a DIFFERENT result from the episode: check)'}", flush=True)
    return rows


def sync_vector_row(env_id: str, cfg: Settings, sampled: bool = False) -> dict[str, Any]:
    """``SyncVectorEnv`` of 4 envs against 4 single-env steps (median over interleaved repeats): with a fixed action
    (the envs' cost alone), or with ``sampled`` actions (each single env samples its own, the vector env one batch:
    what a random agent costs)."""
    singles = [gym.make(env_id) for _ in range(SYNC_N)]
    vec = gym.vector.SyncVectorEnv([lambda: gym.make(env_id) for _ in range(SYNC_N)])
    policy = FixedActionPolicy()
    policy.reset(singles[0])
    action = policy.act(None, {"action_mask": np.ones(getattr(singles[0].action_space, "n", 1), dtype=bool)})
    batch = np.stack([np.asarray(action)] * SYNC_N)
    steps = cfg.vector_steps * 4
    for k, env in enumerate(singles):
        env.action_space.seed(k)
    vec.action_space.seed(0)

    def run_singles(steps: int) -> float:
        start = time.process_time()
        for _ in range(steps):
            for env in singles:
                _, _, terminated, truncated, _ = env.step(env.action_space.sample() if sampled else action)
                if terminated or truncated:
                    env.reset()
        return time.process_time() - start

    def run_vector(steps: int) -> float:
        start = time.process_time()
        for _ in range(steps):
            vec.step(vec.action_space.sample() if sampled else batch)
        return time.process_time() - start

    for k, env in enumerate(singles):
        env.reset(seed=k)
    vec.reset(seed=0)
    run_singles(steps // 4), run_vector(steps // 4)  # warm
    ratios = []
    chunks = 10
    for _ in range(max(cfg.repeats, 5)):
        single_s = vector_s = 0.0
        for _ in range(chunks):  # alternating chunks: the same machine load on both
            single_s += run_singles(max(1, steps // chunks))
            vector_s += run_vector(max(1, steps // chunks))
        ratios.append(vector_s / single_s)
    vec.close()
    return {"kind": "sync (sampled actions)" if sampled else "sync (fixed action)", "id": env_id, "num_envs": SYNC_N,
            "value": statistics.median(ratios), "unit": f"x the CPU time of {SYNC_N} single-env steps",
            "min": min(ratios), "max": max(ratios)}


def _rows_or_notes(jobs: Sequence[tuple[str, Callable[[], dict[str, Any] | None]]],
                   cfg: Settings) -> list[dict[str, Any]]:
    """Each ``(label, measure)``'s row (none for ``None``), or a note naming it and its error (the others go on)."""
    rows = []
    for label, job in jobs:
        try:
            row = job()
        except Exception as error:
            note = f"{label}: error ({type(error).__name__}: {error})".splitlines()[0]
            cfg.notes.append(note)
            print(note, flush=True)
            continue
        if row is not None:
            rows.append(row)
    return rows


def batched_vs_single_rows(ids: Sequence[str], cfg: Settings) -> list[dict[str, Any]]:
    """:func:`batched_vs_single_row` of every id with a batched entry point at each of :data:`BATCHED_VS_SINGLE_N`."""
    sizes = (4, 16) if cfg.quick else BATCHED_VS_SINGLE_N
    return _rows_or_notes([(f"{env_id} batched vs single N={n}", partial(batched_vs_single_row, env_id, n, cfg))
                           for env_id in ids for n in sizes], cfg)


def batched_only(ids: Sequence[str], cfg: Settings, out: Path) -> dict[str, Path]:
    """``--batched-only``: the batched-vs-single rows, written as ``batched.csv`` and ``batched.md``."""
    rows = batched_vs_single_rows(ids, cfg)
    out.mkdir(parents=True, exist_ok=True)
    markdown = out / "batched.md"
    markdown.write_text(f"{machine_line(cfg)}.\n\n{vector_markdown(rows)}\n")
    return {"batched_csv": write_csv(rows, out / "batched.csv"), "batched_md": markdown}


def batched_rows(ids: Sequence[str], noop: gym.Env, cfg: Settings) -> list[dict[str, Any]]:
    """Aggregate steps/s of every id with a ``vector_entry_point`` at ``N`` instances, random actions."""
    return _rows_or_notes([(f"{env_id} batched", partial(_batched_row, env_id, noop, cfg)) for env_id in ids], cfg)


def _batched_row(env_id: str, noop: gym.Env, cfg: Settings) -> dict[str, Any] | None:
    """Aggregate steps/s of ``env_id``'s batched vector env (``None``: it has none)."""
    if gym.spec(env_id).vector_entry_point is None:
        return None
    n = cfg.batched_n
    vec = gym.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point")
    vec.reset(seed=0)
    space = vec.action_space
    space.seed(0)
    actions = [space.sample() for _ in range(64)]
    for k in range(20):
        vec.step(actions[k % 64])
    rates, noops = [], []
    for _ in range(cfg.repeats):
        noop_stepper = FloorStepper(noop)
        vector_s, chunks = 0.0, 10
        for chunk in range(chunks):
            noop_stepper.run(max(1, cfg.noop_steps // chunks))
            start = time.process_time()
            for k in range(max(1, cfg.vector_steps // chunks)):
                vec.step(actions[(chunk + k) % 64])
            vector_s += time.process_time() - start
        noops.append(noop_stepper.rate)
        rates.append(n * chunks * max(1, cfg.vector_steps // chunks) / max(vector_s, 1e-9))
    vec.close()
    row = {"kind": "batched", "id": env_id, "num_envs": n, "value": statistics.median(rates),
           "unit": "aggregate steps/s (random actions)", "min": min(rates), "max": max(rates),
           "noop_steps_per_s": statistics.median(noops)}
    print(f"{env_id} batched N={n}: {row['value']:,.0f} steps/s (no-op {row['noop_steps_per_s']:,.0f})", flush=True)
    return row


def batched_vs_single_row(env_id: str, n: int, cfg: Settings, chunks: int = 5) -> dict[str, Any] | None:
    """The CPU time of batched steps of ``n`` instances over that of as many steps of ``n`` single envs
    (``gym.make``, reset on episode end), the same pre-drawn random actions, in alternating chunks (the same machine
    load on both), median of the repeats (``None``: the id has no batched entry point). Below 1 the batch is
    cheaper; its inverse is the batched env's aggregate steps/s in units of a single env's."""
    if gym.spec(env_id).vector_entry_point is None:
        return None
    singles = [gym.make(env_id) for _ in range(n)]
    for k, env in enumerate(singles):
        env.reset(seed=k)
    vec = gym.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point")
    vec.reset(seed=0)
    vec.action_space.seed(0)
    batches = [vec.action_space.sample() for _ in range(ACTION_SETS)]
    rows = [list(batch) for batch in batches]  # the same actions, one per single env
    steps = max(1, max(cfg.steps, 20 * n) // n // chunks)  # batched steps per chunk

    def run_singles(offset: int) -> float:
        start = time.process_time()
        for i in range(offset, offset + steps):
            for env, action in zip(singles, rows[i % ACTION_SETS]):
                _, _, terminated, truncated, _ = env.step(action)
                if terminated or truncated:
                    env.reset()
        return time.process_time() - start

    def run_batched(offset: int) -> float:
        start = time.process_time()
        for i in range(offset, offset + steps):
            vec.step(batches[i % ACTION_SETS])
        return time.process_time() - start

    run_singles(0), run_batched(0)  # warm
    ratios: list[float] = []
    for r in range(cfg.repeats):
        single_s = batched_s = 0.0
        for chunk in range(chunks):
            single_s += run_singles(r + chunk * steps)
            batched_s += run_batched(r + chunk * steps)
        ratios.append(batched_s / max(single_s, 1e-9))
    vec.close()
    row = {"kind": "batched vs single", "id": env_id, "num_envs": n, "value": statistics.median(ratios),
           "unit": f"x the CPU time of {n} single-env steps", "min": min(ratios), "max": max(ratios)}
    print(f"{env_id} batched N={n}: {row['value']:.2f} [{row['min']:.2f}-{row['max']:.2f}] x {n} single-env steps "
          f"({1 / row['value']:.1f}x a single env's aggregate steps/s)", flush=True)
    return row


# --- cost growth ------------------------------------------------------------------------------------------------
GrowthFn = Callable[[Settings], list[tuple[float, float]]]
#: name -> (family, x label, y label, function). DREAM / Qin add theirs with :func:`register_growth`.
GROWTH: dict[str, tuple[str, str, str, GrowthFn]] = {}


def register_growth(name: str, family: str, x_label: str, y_label: str, fn: GrowthFn) -> None:
    """Add a cost-growth curve (``fn(settings) -> [(x, cost), ...]``) to the harness."""
    GROWTH[name] = (family, x_label, y_label, fn)


def _episode_cpu_s(env_id: str, policy_name: str, **kwargs: Any) -> float:
    policy = baselines.make(policy_name, family=registry.CATALOG[env_id][0])
    env = gym.make(env_id, **env_config_for(policy, kwargs))
    start = time.process_time()
    rollout(env, policy, seed=0)
    return time.process_time() - start


def _powerflow_vs_jobs(cfg: Settings) -> list[tuple[float, float]]:
    sizes = (6, 12) if cfg.quick else (12, 24, 48, 96, 192)
    return [(n, _episode_cpu_s("joulegym/PowerFlow-tiny-v0", REFERENCE_POLICY["powerflow"],
                               trace={"num_jobs": n})) for n in sizes]


def _powerflow_vs_gpus(cfg: Settings) -> list[tuple[float, float]]:
    nodes = (1, 2) if cfg.quick else (1, 2, 4, 8, 16)
    jobs = 12 if cfg.quick else 48
    return [(8 * k, _episode_cpu_s("joulegym/PowerFlow-tiny-v0", REFERENCE_POLICY["powerflow"], nodes=k,
                                   trace={"num_jobs": jobs})) for k in nodes]


def _emrf_vs_users(cfg: Settings) -> list[tuple[float, float]]:
    """us per step against users, the median of ``cfg.repeats`` runs. Before each run the process's heap is
    collected and frozen (``gc.freeze``): a full collection over what the harness holds by then (every kind's envs
    and caches) would otherwise land in whichever point happens to cross the collector's threshold (the cause of a
    32-user point above the 64-user one, docs/families/emrf.md §11)."""
    import gc

    users = (2, 4) if cfg.quick else (2, 4, 8, 16, 32, 64)
    out = []
    for n in users:
        costs = []
        for repeat in range(cfg.repeats):
            policy = baselines.make("random")
            # the random mix with exactly n users (EMRF-v0's own app list fixes 5)
            env = gym.make("joulegym/EMRF-apu-random-v0", max_users=n, random={"n_users": [n, n]})
            gc.collect()
            gc.freeze()
            try:
                costs.append(1e6 / cpu_steps_per_second(env, policy, max(200, cfg.steps // 3), seed=repeat))
            finally:
                gc.unfreeze()
            env.close()
        out.append((n, statistics.median(costs)))
    return out


register_growth("powerflow-jobs", "powerflow", "jobs (PowerFlow-tiny trace, 8 GPUs)", "CPU s per episode",
                _powerflow_vs_jobs)
register_growth("powerflow-gpus", "powerflow", "GPUs (8 per node)", "CPU s per episode", _powerflow_vs_gpus)
register_growth("emrf-users", "emrf", "users (EMRF-apu-random, random actions)", "us per step", _emrf_vs_users)


def benchmark_scripts(family: str | None = None) -> list[Path]:
    """The speed benchmark scripts the family descriptors name (``FamilyDescriptor.benchmark_script``)."""
    return [ROOT / f.benchmark_script for f in registry.families()
            if f.benchmark_script and (family is None or f.name == family)]


def load_growth_modules(notes: list[str], paths: Sequence[Path] | None = None,
                        names: Sequence[str] | None = None) -> list[str]:
    """Register the curves of the family benchmark scripts (named by the descriptors; or ``paths``; or ``names`` of
    scripts in ``benchmarks/``) that define ``harness_growth()``: each returns ``[(name, family, x_label, y_label,
    fn), ...]``. A script that is absent is skipped; one that fails to import or to answer gives a note, not a
    crash. Returns the curves added."""
    if names is not None:
        paths = [ROOT / "benchmarks" / f"{name}.py" for name in names]
    added = []
    for path in benchmark_scripts() if paths is None else paths:
        if not path.is_file():
            continue
        try:
            spec = importlib.util.spec_from_file_location(f"_harness_{path.stem}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            hook = getattr(module, "harness_growth", None)
            for name, family, x_label, y_label, fn in (hook() if hook is not None else ()):
                if name not in GROWTH:
                    register_growth(name, family, x_label, y_label, fn)
                    added.append(name)
        except Exception as error:
            notes.append(f"growth curves of {path.relative_to(ROOT)}: error ({type(error).__name__}: {error})")
    return added


def growth_rows(names: Sequence[str], cfg: Settings) -> list[dict[str, Any]]:
    rows = []
    for name in names:
        family, x_label, y_label, fn = GROWTH[name]
        try:
            points = fn(cfg)
        except Exception as error:  # a family mid-change must not cost the other tables
            note = f"growth {name}: failed ({type(error).__name__}: {error})"
            cfg.growth_notes.append(note)
            print(note, flush=True)
            continue
        for x, y in points:
            rows.append({"curve": name, "family": family, "x": x, "cost": y, "x_label": x_label, "y_label": y_label})
        print(f"growth {name}: " + ", ".join(f"{x:g}: {y:.3g}" for x, y in points), flush=True)
    return rows


# --- output ---------------------------------------------------------------------------------------------------
def write_csv(rows: list[dict[str, Any]], path: Path) -> Path:
    columns = list(dict.fromkeys(k for row in rows for k in row)) or ["empty"]
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return path


def kinds_markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| id | policy | steps/s | x no-op (median [min-max]) | x CartPole | steps per repeat |",
             "|---|---|---:|---:|---:|---:|"]
    for r in rows:
        if r.get("error"):
            lines.append(f"| `{r['id']}` | {r['policy']} | error | {r['error']} | | |")
            continue
        lines.append(f"| `{r['id']}` | {r['policy']} | {r['steps_per_s']:,.0f} | "
                     f"{r['ratio']:.1f} [{r['ratio_min']:.1f}-{r['ratio_max']:.1f}] | "
                     f"{r.get('x_cartpole', math.nan):.2f} | {r['steps']:,} |")
    return "\n".join(lines)


def vector_markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| id | vector env | N | result |", "|---|---|---:|---|"]
    for r in rows:
        if r["kind"].startswith("sync") or r["kind"] == "batched vs single":
            result = f"{r['value']:.2f} {r['unit']} [{r['min']:.2f}-{r['max']:.2f}]"
        else:
            result = (f"{r['value']:,.0f} {r['unit']} (no-op env: {r['noop_steps_per_s']:,.0f} steps/s; "
                      f"ratio {r['noop_steps_per_s'] / r['value']:.3f})")
        lines.append(f"| `{r['id']}` | {r['kind']} | {r['num_envs']} | {result} |")
    return "\n".join(lines)


def episodes_markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| trace (id) | policy | CPU s per episode (median [min-max]) | decisions | avg JCT (h) | "
             "`simulate()` CPU s (with its abandoned runs) |", "|---|---|---:|---:|---:|---:|"]
    lines += [f"| `{r['id']}` | {r['policy']} | {r['cpu_s_per_episode']:.2f} [{r['min']:.2f}-{r['max']:.2f}] | "
              f"{r['steps']} | {r['avg_jct_h']:.2f} | {r['simulate_cpu_s']:.2f} |" for r in rows]
    return "\n".join(lines)


def growth_markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| curve | x | cost |", "|---|---:|---:|"]
    lines += [f"| {r['curve']} ({r['x_label']}; {r['y_label']}) | {r['x']:g} | {r['cost']:.4g} |" for r in rows]
    return "\n".join(lines)


def machine_line(cfg: Settings) -> str:
    return (f"joulegym {joulegym.__version__}, Python {platform.python_version()}, gymnasium {gym.__version__}, "
            f"{platform.machine()} with {os.cpu_count()} CPUs; {time.strftime('%Y-%m-%d')}; CPU time, no-op "
            f"interleaved, median of {cfg.repeats}{' (--quick)' if cfg.quick else ''}")


def plot(kinds: list[dict[str, Any]], growth: list[dict[str, Any]], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = list(dict.fromkeys(r["curve"] for r in growth))
    kinds = [r for r in kinds if not r.get("error")]
    fig, axes = plt.subplots(1, 1 + max(len(curves), 1), figsize=(5.5 + 4.0 * max(len(curves), 1), 0.9 + 0.3 *
                                                                   max(len(kinds), 4)), squeeze=False)
    ax = axes[0, 0]
    labels = [f"{r['id'].split('/')[-1]} [{r['policy']}]" for r in kinds]
    ax.barh(range(len(kinds)), [r["ratio"] for r in kinds], color="tab:blue")
    ax.set_yticks(range(len(kinds)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("no-op steps/s / env steps/s (lower is better)")
    ax.set_title("cost per step relative to a no-op env", fontsize=9)
    for k, name in enumerate(curves or ["(no growth curves)"]):
        ax = axes[0, k + 1]
        points = [r for r in growth if r["curve"] == name]
        if points:
            ax.plot([r["x"] for r in points], [r["cost"] for r in points], "o-")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(points[0]["x_label"], fontsize=8)
            ax.set_ylabel(points[0]["y_label"], fontsize=8)
        ax.set_title(name, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def rewrite_table(table: str, page: Path = PERFORMANCE_PAGE) -> None:
    """Replace the performance table of ``page`` (between the harness markers) with ``table``."""
    text = page.read_text()
    if TABLE_START not in text or TABLE_END not in text:
        raise ValueError(f"{page} has no {TABLE_START} ... {TABLE_END} section to rewrite")
    head, rest = text.split(TABLE_START, 1)
    _, tail = rest.split(TABLE_END, 1)
    page.write_text(f"{head}{TABLE_START}\n{table}\n{TABLE_END}{tail}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", help="only this family's ids (etf, emrf, powerflow, ...)")
    parser.add_argument("--ids", nargs="*", help="explicit env ids (default: every kind, the targets, real traces)")
    parser.add_argument("--policies", nargs="*", help="policy names (default: random and the reference policy)")
    parser.add_argument("--steps", type=int, help="steps per measurement (default 3000; --quick 200)")
    parser.add_argument("--repeats", type=int, help="repeats per figure, median (default 3; --quick 1)")
    parser.add_argument("--growth", nargs="*", help=f"growth curves ({', '.join(GROWTH)}; 'none': skip)")
    parser.add_argument("--no-growth", action="store_true", help="skip the growth curves")
    parser.add_argument("--no-vector", action="store_true", help="skip the vector-env table")
    parser.add_argument("--no-episodes", action="store_true", help="skip the whole-episode table")
    parser.add_argument("--quick", action="store_true", help="a smoke test: few steps, one repeat, small curves")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})")
    parser.add_argument("--batched-only", action="store_true",
                        help="only the batched-vs-single rows (every id with a batched entry point, N = 4 and 256)")
    parser.add_argument("--docs", action="store_true", help="rewrite the performance table of docs/performance.md")
    return parser


def main(argv: list[str] | None = None) -> dict[str, Path]:
    args = _parser().parse_args(argv)
    cfg = Settings(quick=args.quick)
    if args.quick:
        cfg.steps, cfg.repeats, cfg.noop_steps, cfg.vector_steps, cfg.batched_n = 200, 1, 2000, 20, 16
    cfg.steps = args.steps or cfg.steps
    cfg.repeats = args.repeats or cfg.repeats
    ids = args.ids or default_ids(args.family)
    unknown = [i for i in ids if i not in registry.CATALOG]
    if unknown:
        raise ValueError(f"--ids {unknown} are not joulegym ids; see `python -m joulegym list`")
    cfg_notes: list[str] = []
    if not (args.no_growth or args.growth == ["none"]):
        load_growth_modules(cfg_notes)
    if args.no_growth or args.growth == ["none"]:
        curves: list[str] = []
    else:
        curves = args.growth or [n for n, (fam, *_) in GROWTH.items() if args.family in (None, fam)]
        bad = [c for c in curves if c not in GROWTH]
        if bad:
            raise ValueError(f"--growth {bad}: known curves are {list(GROWTH)} (or 'none')")
    args.out.mkdir(parents=True, exist_ok=True)
    cfg.growth_notes += cfg_notes

    print(machine_line(cfg), flush=True)
    if args.batched_only:
        return batched_only(ids, cfg, args.out)
    kinds = kinds_table(ids, cfg, args.policies)
    episodes = [] if (args.no_episodes or args.quick or args.ids) else episodes_table(cfg, args.family)
    vector: list[dict[str, Any]] = []
    if not args.no_vector:
        ensure_noop()
        sync_ids = [i for i in ids if i == "joulegym/ETF-v0"] if args.ids else ["joulegym/ETF-v0"]
        vector += [sync_vector_row(i, cfg, sampled) for i in sync_ids if i in gym.registry for sampled in (False, True)]
        vector += batched_rows(ids, gym.make(FLOOR_ID), cfg)
        vector += batched_vs_single_rows(ids, cfg)
    growth = growth_rows(curves, cfg)

    written = {
        "kinds_csv": write_csv(kinds, args.out / "kinds.csv"),
        "vector_csv": write_csv(vector, args.out / "vector.csv"),
        "episodes_csv": write_csv(episodes, args.out / "episodes.csv"),
        "growth_csv": write_csv(growth, args.out / "growth.csv"),
        "plot": plot(kinds, growth, args.out / "harness.png"),
    }
    sections = [f"# joulegym benchmark\n\n{machine_line(cfg)}.", "## Kinds\n\n" + kinds_markdown(kinds)]
    if vector:
        sections.append("## Vector envs\n\n" + vector_markdown(vector))
    if episodes:
        sections.append("## Whole episodes\n\n" + episodes_markdown(episodes))
    if growth:
        sections.append("## Cost growth\n\n" + growth_markdown(growth))
    if cfg.notes or cfg.growth_notes:
        sections.append("## Notes\n\n" + "\n".join(f"- {n}" for n in cfg.notes + cfg.growth_notes))
    report = args.out / "report.md"
    report.write_text("\n\n".join(sections) + "\n")
    written["report"] = report
    if args.docs:
        table = "\n\n".join([f"{machine_line(cfg)}.", kinds_markdown(kinds)]
                            + ([vector_markdown(vector)] if vector else [])
                            + ([episodes_markdown(episodes)] if episodes else [])
                            + ([growth_markdown(growth)] if growth else [])
                            + ([f"Notes: {'; '.join(cfg.notes + cfg.growth_notes)}."]
                               if cfg.notes or cfg.growth_notes else []))
        rewrite_table(table)
    print("wrote " + ", ".join(str(p) for p in written.values()), flush=True)
    return written


if __name__ == "__main__":
    main()
