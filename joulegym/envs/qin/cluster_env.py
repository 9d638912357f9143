"""The Qin cluster envs (Guan & Ababei, IEEE T-SUSC 2024; ``docs/families/qin.md`` "Environments"): ``QinCluster-v0``
(one job placement per step) and ``Qin-v0`` (hierarchical: ``QinCluster`` with Qin's node policy in every server,
paper §7.3). The node-level env ``QinNode-v0`` is :mod:`joulegym.envs.qin.node_env`.

``QinCluster-v0`` / ``Qin-v0`` (docs §7.1, §7.3)
================================================

=====================  ========================================================================================
action                 ``action_mode="server"`` (default): ``Discrete(N_max)``, the server of the job to place
                       now; ``"server_vf"``: ``Discrete(N_max * L)``, server ``a // L`` and its initial V/F level
                       ``a % L`` (0 = lowest). Padded and absent servers are masked (``action_masks()``,
                       ``info["action_mask"]``); a masked choice is repaired to the valid server with the shortest
                       estimated drain time (ties: lowest index) and flagged ``info["repaired"]``
observation            ``Box(0, 10, (N_max * 15 + 6 + 7,), float32)``: per server (14 features + the server mask):
                       cores / 8, f_max / 4 GHz, memory / 16 GB, runnable threads / cores, load / (mean job size
                       x cores), estimated drain time / T_ref, mean caused c / 100, mean tolerated t / 100, power /
                       TDP, utilisation, the job's predicted interference I (eq. 16) / 3000, H at f_max / max,
                       min PL-eligible E / max, T at f_max / max; the job (6): threads / 8, predicted size / mean,
                       mean t / 100, mean c / 100, LC flag, waited time / T_ref; global (7): time / T_ref / 4,
                       jobs left / M, queue length / M, objective one-hot (makespan, flowtime, energy, edp).
                       Predictions come from the env's CF predictors fed only by the profiling oracle (2 noisy
                       SCs per job), the same information Qin uses. The observation's ``T_ref`` and mean job size
                       are computed from the size estimates (``size_estimate``), not the true sizes: the
                       observation carries no size knowledge a deployed scheduler lacks
reward parts           ``makespan = -dPhi / T_ref`` with ``Phi = now - t_0 + max_i drain_i`` (potential
                       shaped, ``drain_i`` = load / the rate its threads run at now; Phi at the end is the
                       makespan, so the return is ``-makespan / T_ref``),
                       ``flowtime = -(jobs in system) dt / (M t_job)``, ``energy = -dE / E_ref``,
                       ``edp = -dPsi / (E_ref T_ref)`` with ``Psi = (E + sum_i P_i drain_i) Phi`` (at the end
                       ``E * makespan``). ``T_ref`` = total work / total capacity at f_max (the ideal makespan),
                       ``t_job`` the mean stand-alone job time, ``E_ref = T_ref * sum_i TDP_i``: returns are O(1)
reward presets         one per part, each weighing its own part 1; the default is ``objective``'s
terminated             every job has completed (after the last placement the env fast-forwards to completion)
truncated              ``max_steps`` placements (default M, a safeguard)
info                   ``job`` (the job to place next, -1 at the end), ``queue`` (jobs waiting), core keys;
                       ``metrics`` at the end (makespan, mean JCT, energy, EDP, Im_c, ...); ``info_level="full"``
                       adds ``server_load`` and ``server_util``
=====================  ========================================================================================

Config keys (``QinClusterEnv.default_config``):

====================  =============================================================================================
``servers``           ``{"kind": "paper", "include_master": False}`` (Table 2's 5 workers, + the master),
                      ``{"kind": "list", "types": [...]}`` (Table 2 type names) or ``{"kind": "sampled", "count":
                      N}`` (N servers drawn from the Table 2 types with a fixed seed)
``workload``          ``{"kind": "rw"|"lc"|"tb", "num_jobs": M, "arrival": "batch"|"poisson", "rate_per_s",
                      "size_scale", "dist"}`` (docs §4.2, §7.5), or ``{"kind": "file", "path": ...}`` (a CSV or
                      JSON workload file, :func:`joulegym.workloads.qin_jobs.load_jobs`)
``objective``         ``makespan`` (default; the paper's JCT), ``flowtime``, ``energy``, ``edp``
``node_policy``       ``linux`` (default), ``sniper-pinned``, ``qin-node`` (``Qin-v0``'s default): the node-level
                      inner policies of :mod:`joulegym.baselines.qin`, by their registered names
``node_focus``        focus of ``qin-node``: ``perf`` (PL 0), ``energy`` (PL 0.5), ``edp`` (PL 0.1); None: the
                      objective's (makespan / flowtime: perf)
``control_period_ms`` node-policy period (10; 1 is the paper's fidelity mode)
``admission``         ``fifo``, ``dac_H_desc``, ``dac_E_asc``, ``dac_I_asc`` (§7.4) with ``dac_queue_len`` (100),
                      ``dac_wait_s`` (0), ``sigma_dac_s`` (None: rank all)
``profile_latency_s`` per-job profiling + CF prediction (0.18 s, A27; Kubernetes: 0), in ``profiling_slots`` parallel
                      slots (None: one per two servers, §4.1's 2 SCs per profile)
``decision_latency_s`` per-job decision latency (0.09 s, A27; Kubernetes: 0.005 s)
``decision_mode``     ``serial`` (default: Alg. 1's one loop, a decision waits for the previous one) or ``overlapped``
                      (each job's decision latency delays that job only; docs §5.4)
``core_types``        ``big`` or ``biglittle``; ``power_model``: ``full`` or ``paper_dynamic_only``
``offline_fraction``  share of the catalog's apps in the CF's offline training rows (0.1, the paper's "around 10%",
                      §4.1; the others are held out and known only from their online profile; 1.0 = every app)
``smt_yield``         a Hyper-Threading core's throughput with two threads, in one thread's (1.3, Intel's measurement,
                      :data:`joulegym.devices.cpu.SMT_YIELD`; 1 = physical cores only, A22)
``interference_mode`` ``literal_abs`` (eq. 16 as printed) or ``hinge`` (A4): the observation's I and the one Qin's
                      policies use (one key for env and policy)
``size_estimate``     each job's size estimate alpha_hat (docs §2.1), what the load, drain time and the job's size
                      feature are built on: ``app-mean`` (default: its app's mean size under the workload's size
                      law, what a deployed scheduler knows from the app's history; a file workload: the mean of
                      that app's jobs in the file) or ``profiled`` (the job's instruction count x N(1, 0.05):
                      per-job size knowledge a deployed scheduler does not have, for the privileged rules)
``dchoice_rule``      ``random-of-top-d`` (Alg. 3 l. 12 "RandomlySelectOne(Flist)", the default) or
                      ``least-loaded-of-d`` (the least loaded finalist, §5.2's balls-into-bins rule): Qin's pick at
                      both levels
``max_servers``       N_max (8); ``max_steps``: None = M; reset option ``jobs``: a ``QinJobs`` table to replay
``record_traces``     keep Im_c and the servers' utilisation at every placement (``env.unwrapped.traces()``)
====================  =============================================================================================

Version history: v0 (first release).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from joulegym.core.actions import ActionType, validated_discrete_action
from joulegym.core.config import (
    check_bool,
    check_choice,
    check_int,
    check_keys,
    check_number,
    check_positive,
)
from joulegym.core.env import JoulegymEnv, row_names
from joulegym.core.plotting import new_figure
from joulegym.core.rewards import RewardPart
from joulegym.devices.cpu import SMT_YIELD
from joulegym.envs.qin.model import DECISION_MODES

NUM_SOI = 15  # sources of interference (docs §1.6)
SERVER_NAMES = ("cores", "f_max", "memory", "runnable_threads", "load", "drain_time", "caused", "tolerated", "power",
                "utilisation", "job_interference", "job_h_at_f_max", "job_eligible_energy", "job_t_at_f_max",
                "present")  # the module docstring's 14 features + the server mask
JOB_NAMES = ("threads", "size", "tolerated", "caused", "latency_critical", "waited")
SERVER_FEATURES = len(SERVER_NAMES) - 1
SERVER_ROW = SERVER_FEATURES + 1  # + the server mask
JOB_FEATURES = len(JOB_NAMES)
OBJECTIVES = ("makespan", "flowtime", "energy", "edp")
GLOBAL_FEATURES = 3 + len(OBJECTIVES)
OBS_HIGH = 10.0  # every feature is clipped to [0, OBS_HIGH]
SCALAR_SERVERS = 8  # below this many servers, the per-decision loads run in scalars (numpy sums < 8 terms in order)
NODE_POLICIES = ("linux", "sniper-pinned", "qin-node")
NODE_FOCUSES = ("perf", "energy", "edp")
FOCUS_OF_OBJECTIVE = {"makespan": "perf", "flowtime": "perf", "energy": "energy", "edp": "edp"}
ADMISSIONS = ("fifo", "dac_H_desc", "dac_E_asc", "dac_I_asc")
WORKLOAD_KINDS = ("rw", "lc", "tb", "file")
WORKLOAD_KEYS = ("kind", "num_jobs", "arrival", "rate_per_s", "size_scale", "dist", "path")
ARRIVALS = ("batch", "poisson")
LC_DISTS = ("uniform", "normal", "exp")
SERVER_KINDS = ("paper", "list", "sampled")
SERVER_KEYS = ("kind", "include_master", "types", "count", "seed")
CORE_TYPES = ("big", "biglittle")
POWER_MODELS = ("full", "paper_dynamic_only")
INTERFERENCE_MODES = ("literal_abs", "hinge")
DCHOICE_RULES = ("random-of-top-d", "least-loaded-of-d")
SIZE_ESTIMATES = ("app-mean", "profiled")
MAX_SERVERS = 10_000  # far above the large-N scenario (1,000); bounds the observation size
MAX_JOBS = 100_000  # keeps make + reset within a few seconds (docs/robustness.md)
ARRIVAL_SPAN_S = 1e6  # Poisson arrivals must fit well inside the simulator's 1e7 s horizon (num_jobs / rate_per_s)
PER_JOB_TABLE_LIMIT = 2**20  # (job, server, level) entries up to which the job features are tabulated per episode
I_NORM = 3000.0  # docs §7.1: eq. 16 over 15 SoIs in [0, 100] scores is at most 2 * 15 * 100 = 3000
KUBERNETES_LATENCY_S = 0.005  # A27 (docs §8): Kubernetes responds in milliseconds
PROFILE_LATENCY_S = 0.18  # A27: profiling + CF per job of the profiling-based schedulers
DECISION_LATENCY_S = 0.09  # A27: D-choice decision per job



def _normalised(x: np.ndarray) -> np.ndarray:
    """``x`` over its maximum along the last axis (at least 1e-12): the observation's per-server job features."""
    return x / np.maximum(x.max(axis=-1, keepdims=True), 1e-12)


def _eligible_energy(runtime: np.ndarray, energy: np.ndarray, pl: float = 0.5) -> np.ndarray:
    """Per server (last axis: the V/F levels): the least predicted energy over the levels whose predicted time is
    within the PL = 0.5 performance-loss bound of the top level (docs §3.5, the energy focus)."""
    eligible = runtime <= runtime[..., -1:] / (1.0 - pl)
    return np.where(eligible, energy, np.inf).min(axis=-1)


# --- action types ------------------------------------------------------------------------------------------------
class ServerAction(ActionType):
    """``Discrete(N_max)``: the server of the job to place now (its threads start at f_max)."""

    name = "server"
    levels_per_server = False

    def __init__(self, env: QinClusterEnv) -> None:
        super().__init__(env)
        self.L = env.L if self.levels_per_server else 1
        self.space = gym.spaces.Discrete(env.n_max * self.L)

    @property
    def has_mask(self) -> bool:
        return True

    def mask(self) -> np.ndarray:
        return self.env.action_mask_now.copy()

    def decode(self, action: Any) -> tuple[int, int | None]:
        self.repaired = False
        a = validated_discrete_action(action, self.space)
        env = self.env
        if not env.action_mask_now[a]:
            self.repaired = True
            server = env.repair_server()
            return server, (a % self.L if self.levels_per_server else None)
        if self.levels_per_server:
            return a // self.L, a % self.L
        return a, None

    def encode(self, decision: tuple[int, int | None]) -> int:
        server, level = decision
        if not self.levels_per_server:
            return int(server)
        return int(server) * self.L + (self.L - 1 if level is None else int(level))


class ServerVFAction(ServerAction):
    """``Discrete(N_max * L)``: server ``a // L`` and its initial V/F level ``a % L`` (docs §7.1 variant)."""

    name = "server_vf"
    levels_per_server = True


# --- QinCluster-v0 -------------------------------------------------------------------------------------------------
# why the parts stay unbounded per step (docs/tradeoffs.md, "Reward spaces")
UNBOUNDED = "; unbounded: scaled by the episode's own jobs (T_ref, E_ref), no config bound derived"


class QinClusterEnv(JoulegymEnv):
    """One job placement per step on heterogeneous servers (module docstring; docs §7.1)."""

    family = "qin"
    action_types: ClassVar[dict[str, type[ActionType]]] = {"server": ServerAction, "server_vf": ServerVFAction}
    inner_fast_path = True  # the transition and reward never read the observation (tests/qin/test_fast_path.py)
    reward_parts = (
        RewardPart("makespan", -math.inf, math.inf,
                   "-d max(now, projected server finish) / T_ref: -makespan / T_ref" + UNBOUNDED),
        RewardPart("flowtime", -math.inf, 0.0,
                   "-(jobs in system) dt / (M t_job): -mean JCT / t_job" + UNBOUNDED),
        RewardPart("energy", -math.inf, 0.0,
                   "-dE / E_ref: cluster energy (CPU + DRAM)" + UNBOUNDED),
        RewardPart("edp", -math.inf, math.inf,
                   "-d((E + projected E) Phi) / (E_ref T_ref): -E x makespan" + UNBOUNDED),
    )
    reward_presets: ClassVar[dict[str, dict[str, float]]] = {name: {name: 1.0} for name in OBJECTIVES}
    option_keys = ("jobs",)
    lean_info_keys: ClassVar[tuple[str, ...]] = ("job", "queue")
    full_info_keys: ClassVar[tuple[str, ...]] = ("server_load", "server_util")
    default_node_policy = "linux"

    @classmethod
    def default_config(cls) -> dict[str, Any]:
        return {
            **super().default_config(),
            "servers": {"kind": "paper", "include_master": False},
            "workload": {"kind": "rw", "num_jobs": 100, "arrival": "batch", "rate_per_s": 0.1, "size_scale": 1.0,
                         "dist": "uniform"},
            "objective": "makespan",
            "node_policy": cls.default_node_policy,
            "node_focus": None,
            "control_period_ms": 10.0,
            "admission": "fifo",
            "dac_queue_len": 100,
            "dac_wait_s": 0.0,
            "sigma_dac_s": None,
            "profile_latency_s": PROFILE_LATENCY_S,
            "decision_latency_s": DECISION_LATENCY_S,
            "profiling_slots": None,
            "decision_mode": "serial",
            "core_types": "big",
            "power_model": "full",
            "interference_mode": "literal_abs",
            "smt_yield": SMT_YIELD,
            "offline_fraction": 0.1,
            "size_estimate": "app-mean",
            "dchoice_rule": "random-of-top-d",
            "max_servers": 8,
            "max_steps": None,
            "record_traces": False,
        }

    # --- configuration ---------------------------------------------------------------------------------------
    def _configure(self) -> None:
        from joulegym.core.policy import make_inner
        from joulegym.devices import cpu
        from joulegym.envs.qin.model import QinSimConfig
        from joulegym.envs.qin.simulator import QinSim

        c = self.config
        self.objective = check_choice("objective", c["objective"], OBJECTIVES)
        check_choice("node_policy", c["node_policy"], NODE_POLICIES)
        focus = c["node_focus"] if c["node_focus"] is not None else FOCUS_OF_OBJECTIVE[self.objective]
        check_choice("node_focus", focus, NODE_FOCUSES)
        period_ms = check_number("control_period_ms", c["control_period_ms"], 0.1, 1000.0)
        check_choice("admission", c["admission"], ADMISSIONS)
        check_int("dac_queue_len", c["dac_queue_len"], 1, MAX_JOBS)
        check_number("dac_wait_s", c["dac_wait_s"], 0.0, 1e7)
        if c["sigma_dac_s"] is not None:
            check_number("sigma_dac_s", c["sigma_dac_s"], 0.0, 1e7)
        check_number("profile_latency_s", c["profile_latency_s"], 0.0, 3600.0)
        check_number("decision_latency_s", c["decision_latency_s"], 0.0, 3600.0)
        if c["profiling_slots"] is not None:
            check_int("profiling_slots", c["profiling_slots"], 1, MAX_JOBS)
        check_choice("decision_mode", c["decision_mode"], DECISION_MODES)
        check_bool("record_traces", c["record_traces"])
        check_choice("core_types", c["core_types"], CORE_TYPES)
        check_choice("power_model", c["power_model"], POWER_MODELS)
        check_choice("interference_mode", c["interference_mode"], INTERFERENCE_MODES)
        check_choice("dchoice_rule", c["dchoice_rule"], DCHOICE_RULES)
        check_choice("size_estimate", c["size_estimate"], SIZE_ESTIMATES)
        check_number("offline_fraction", check_positive("offline_fraction", c["offline_fraction"]), 0.0, 1.0)
        self.server_types = self._check_servers(c["servers"])
        self.N = len(self.server_types)
        self.n_max = check_int("max_servers", c["max_servers"], 1, MAX_SERVERS)
        if self.N > self.n_max:
            raise ValueError(f"max_servers must be >= the number of servers ({self.N}), got {self.n_max}")
        self._check_workload(c["workload"])
        if c["max_steps"] is not None:
            check_int("max_steps", c["max_steps"], 1)
        self.cluster = cpu.build_core_table(self.server_types, biglittle=c["core_types"] == "biglittle",
                                            smt_yield=check_number("smt_yield", c["smt_yield"], 1.0, 2.0))
        self.L = int(self.cluster.freq_mhz.shape[1])
        # Qin's node level runs with the focus of the run (PL 0 / 0.5 / 0.1, §7.2.1)
        # (re-mapping at placements and completions only, A11: a per-period re-decision of a 100-job cluster
        # episode at 10 ms costs minutes of CPU and mostly re-draws the Flist's uniform pick)
        node_kwargs = ({"focus": focus, "remap": "events", "rule": c["dchoice_rule"]} if c["node_policy"] == "qin-node"
                       else {})
        node_policy = make_inner(c["node_policy"], family="qin", **node_kwargs)
        self.sim_config = QinSimConfig(
            node_policy=node_policy, control_period_s=period_ms / 1000.0, admission=c["admission"],
            dac_queue_len=int(c["dac_queue_len"]), dac_wait_s=float(c["dac_wait_s"]),
            sigma_dac_s=None if c["sigma_dac_s"] is None else float(c["sigma_dac_s"]),
            profile_latency_s=float(c["profile_latency_s"]), decision_latency_s=float(c["decision_latency_s"]),
            profiling_slots=c["profiling_slots"], decision_mode=c["decision_mode"],
            power_terms="dynamic_only" if c["power_model"] == "paper_dynamic_only" else "full",
            record_traces=c["record_traces"], level_hints=c["action_mode"] == "server_vf",
            focus=FOCUS_OF_OBJECTIVE[self.objective], interference_mode=c["interference_mode"],
            dchoice_rule=c["dchoice_rule"])
        self.sim = QinSim(self.cluster, self.sim_config)
        self._predictor = None  # built on first reset (the prediction module caches the offline CF fit)
        valid = np.zeros(self.n_max, dtype=bool)
        valid[: self.N] = True
        self._mask_server = valid.astype(np.float32)
        self.action_mask_now = np.repeat(valid, self.L) if c["action_mode"] == "server_vf" else valid.copy()
        # Table 2's cores (logical processors, what the OS and Kubernetes report): the observation's and the
        # schedulers' count; the simulator schedules on the physical cores (A22)
        self.server_cores = self._cores = cores = self.cluster.logical_cores.astype(float)
        self.server_mem_gb = self._mem_gb = np.array([s.mem_gb for s in self.server_types], dtype=float)
        fmax_ghz = np.array([s.f_max_mhz for s in self.server_types], dtype=float) / 1000.0
        # static per-server features: cores / 8, f_max / 4 GHz, memory / 16 GB (docs §7.1)
        self._static = np.stack([cores / 8.0, fmax_ghz / 4.0, self._mem_gb / 16.0], axis=1)
        self.obs_size = self.n_max * SERVER_ROW + JOB_FEATURES + GLOBAL_FEATURES
        self.observation_space = gym.spaces.Box(0.0, OBS_HIGH, (self.obs_size,), dtype=np.float32)
        self._started_sim = False

    def _check_servers(self, spec: Any) -> list:
        from joulegym.devices import cpu

        servers = check_keys("servers", spec, SERVER_KEYS)
        kind = check_choice("servers.kind", servers.get("kind"), SERVER_KINDS)
        if kind == "paper":
            master = check_bool("servers.include_master", servers.get("include_master", False))
            names = list(cpu.WORKER_TYPES) + ([cpu.MASTER_TYPE] if master else [])
        elif kind == "list":
            names = servers.get("types")
            if not isinstance(names, list | tuple) or not names:
                raise ValueError(f"servers.types must be a non-empty list of server type names from "
                                 f"{sorted(cpu.SERVER_TYPES)}, got {names!r} (an empty cluster has no server)")
            if len(names) > MAX_SERVERS:
                raise ValueError(f"servers.types must list at most {MAX_SERVERS} servers, got {len(names)}")
        else:
            count = check_int("servers.count", servers.get("count"), 1, MAX_SERVERS)
            seed = check_int("servers.seed", servers.get("seed", 0), 0, 2**32 - 1)
            types = sorted(cpu.SERVER_TYPES)
            rng = np.random.default_rng(seed)  # a fixed cluster per (count, seed): the same servers every episode
            names = [types[i] for i in rng.integers(0, len(types), count)]
        out = []
        for name in names:
            if not isinstance(name, str):
                raise ValueError(f"servers.types must hold server type names from {sorted(cpu.SERVER_TYPES)}, "
                                 f"got {name!r}")
            try:
                out.append(cpu.get_server_type(name))
            except ValueError as err:
                raise ValueError(f"servers: {err}") from None
        return out

    def _check_workload(self, spec: Any) -> None:
        w = check_keys("workload", spec, WORKLOAD_KEYS)
        kind = check_choice("workload.kind", w.get("kind"), WORKLOAD_KINDS)
        self._file_jobs = None
        if kind == "file":  # read once here: a malformed file fails at make time, naming the file, line and field
            from joulegym.workloads.qin_jobs import load_jobs

            path = w.get("path")
            if not isinstance(path, str) or not path:
                raise ValueError(f"workload.path must name a CSV or JSON workload file with kind 'file', got {path!r}")
            self._file_jobs = load_jobs(path)
        elif w.get("path") is not None:
            raise ValueError(f"workload.path is read only with workload.kind 'file', got kind {kind!r}")
        num_jobs = check_int("workload.num_jobs", w.get("num_jobs", 100), 1, MAX_JOBS)
        arrival = check_choice("workload.arrival", w.get("arrival", "batch"), ARRIVALS)
        rate = check_number("workload.rate_per_s", check_positive("workload.rate_per_s", w.get("rate_per_s", 0.1)),
                            0, 1e6)
        if arrival == "poisson" and num_jobs / rate > ARRIVAL_SPAN_S:
            raise ValueError(f"workload.rate_per_s must be >= num_jobs / {ARRIVAL_SPAN_S:g} s = "
                             f"{num_jobs / ARRIVAL_SPAN_S:g} jobs/s (every job arrives within the horizon), got {rate}")
        check_number("workload.size_scale", check_positive("workload.size_scale", w.get("size_scale", 1.0)), 1e-3,
                     1e6)
        check_choice("workload.dist", w.get("dist", "uniform"), LC_DISTS)

    def _default_reward(self) -> str:
        return self.config["objective"]

    # --- episode ---------------------------------------------------------------------------------------------
    def _predictor_for_episode(self):
        if self._predictor is None:
            from joulegym.envs.qin.prediction import QinPredictor

            self._predictor = QinPredictor(self.server_types, offline_fraction=self.config["offline_fraction"],
                                           paper_dynamic_only=self.config["power_model"] == "paper_dynamic_only")
        return self._predictor

    def _make_jobs(self, seed: int):
        from joulegym.workloads.qin_jobs import generate_jobs

        if self._file_jobs is not None:
            return self._file_jobs
        w = {"num_jobs": 100, "arrival": "batch", "rate_per_s": 0.1, "size_scale": 1.0, "dist": "uniform",
             **self.config["workload"]}
        poisson = w["arrival"] == "poisson"
        return generate_jobs(w["kind"], int(w["num_jobs"]), seed=seed, arrival=w["arrival"],
                             rate_per_s=float(w["rate_per_s"]) if poisson else None, lc_dist=w["dist"],
                             size_scale=float(w["size_scale"]))

    def episode_inputs(self, rng: np.random.Generator, jobs: Any = None) -> tuple[np.random.Generator, Any]:
        """What :meth:`reset` draws from ``rng`` (the env's ``np_random``): the simulator's generator and the
        episode's :class:`~joulegym.envs.qin.model.QinInstance` (the jobs, drawn unless given, and their CF
        predictions). ``run_inner(env.unwrapped.sim, policy, seed, instance, rng=...)`` with these reproduces the
        env's episode on the simulator alone (:mod:`joulegym.core.inner`)."""
        from joulegym.envs.qin.model import QinInstance
        from joulegym.workloads.qin_jobs import QinJobs

        if jobs is None:
            jobs = self._make_jobs(int(rng.integers(0, 2**31 - 1)))
        elif not isinstance(jobs, QinJobs):
            raise ValueError(f"reset options jobs must be a QinJobs table "
                             f"(joulegym.workloads.qin_jobs.generate_jobs / load_jobs), got {type(jobs).__name__}")
        if jobs.n_jobs and float(jobs.arrival_s.max()) >= self.sim_config.horizon_s:
            raise ValueError(f"reset options jobs: arrival_s must be < the simulator's horizon "
                             f"({self.sim_config.horizon_s:g} s), got {float(jobs.arrival_s.max()):g}")
        predictor = self._predictor_for_episode()
        predictions = predictor.predict(jobs, np.random.default_rng(int(rng.integers(0, 2**31 - 1))))
        if self.config["size_estimate"] == "app-mean":
            from joulegym.envs.qin.prediction import with_size_estimates

            predictions = with_size_estimates(predictions, self._app_mean_sizes(jobs))
        return np.random.default_rng(int(rng.integers(0, 2**31 - 1))), QinInstance(jobs, predictions)

    def _app_mean_sizes(self, jobs: Any) -> np.ndarray:
        """Per job, its app's mean size (``size_estimate="app-mean"``): the workload's mean reference runtime
        (docs §4.2, times ``size_scale``) at the app's reference instruction rate; a file workload: the mean size of
        that app's jobs in the file."""
        from joulegym.workloads.qin_jobs import MEAN_RUNTIME_S

        app = np.asarray(jobs.app)
        if self._file_jobs is None:
            scale = float(self.config["workload"].get("size_scale", 1.0))
            return MEAN_RUNTIME_S * scale / jobs.catalog.reference_seconds_per_instruction[app]
        size = np.asarray(jobs.size_instr, dtype=float)
        sums = np.bincount(app, weights=size, minlength=int(app.max()) + 1)
        return (sums / np.maximum(np.bincount(app, minlength=sums.size), 1))[app]

    def _begin_episode(self, options: dict[str, Any]) -> None:
        sim_rng, instance = self.episode_inputs(self.np_random, options.get("jobs"))
        jobs = self.jobs = instance.jobs
        self.M = int(jobs.n_jobs)
        sim = self.sim
        sim.reset(sim_rng, instance)
        self._started_sim = True
        size = np.asarray(jobs.size_instr, dtype=float)
        ref_runtime = np.asarray(jobs.reference_runtime_s, dtype=float)
        self.t_job = float(ref_runtime.mean())
        self._arrivals = np.asarray(jobs.arrival_s, dtype=float)
        self._t0 = float(self._arrivals.min())
        self.T_ref = self._ideal_makespan(size, ref_runtime)
        self.E_ref = self.T_ref * float(self.cluster.tdp_w.sum())
        # the observation's scales: the same arithmetic on the size estimates, what a deployed scheduler knows
        estimate = np.asarray(sim.pred_size, dtype=float)
        self.mean_size = float(estimate.mean())
        self._obs_T_ref = self._ideal_makespan(estimate, estimate * (ref_runtime / size))
        self._threads = np.asarray(jobs.threads, dtype=float)
        self._is_lc = np.asarray(jobs.job_class) == "lc"
        self.placed = 0
        self.steps = 0
        self._phi = 0.0  # makespan potential (0 at the start, the makespan at the end)
        self._psi = 0.0  # EDP potential (0 at the start, energy x makespan at the end)
        self._energy = 0.0
        self._flow = 0.0
        self._job_feat_cache: tuple[int, np.ndarray] | None = None
        self._pressure_cache: tuple[tuple[int, int], np.ndarray | None] = ((-1, -1), None)
        self._load_cache: tuple[tuple[int, float], tuple] | None = None
        self._rows = np.zeros((self.n_max, SERVER_ROW))
        self._rows[: self.N, 0:3] = self._static
        self._rows[:, SERVER_FEATURES] = self._mask_server
        self._inv_cores = 1.0 / self._cores
        self._inv_physical = 1.0 / self.cluster.cores
        self._inv_size_cores = 1.0 / (self.mean_size * self._cores)
        self._inv_tdp = 1.0 / self.cluster.tdp_w
        self._segments = np.asarray(self.cluster.first_core[:-1], dtype=np.intp)
        self._job_table = self._job_features_table()
        self._more = sim.advance()

    def _ideal_makespan(self, size: np.ndarray, ref_runtime: np.ndarray) -> float:
        """``T_ref``: total work over the cluster's capacity at f_max, at least the arrival span. The capacity is one
        reference core's instruction rate (i5-4690 at 3.5 GHz, from the sizes and their reference runtimes) x each
        server's relative core speed x its cores."""
        ref_ips = float(size.sum() / ref_runtime.sum())
        capacity_ips = self.cluster.full_load_cores * ref_ips * self._reference_speed()
        return max(float(size.sum() / capacity_ips.sum()), float(self._arrivals.max() - self._t0), 1e-9)

    def _reference_speed(self) -> np.ndarray:
        """Per server: one core's speed at f_max relative to the reference i5-4690 core at 3.5 GHz (frequency x
        relative IPC; memory-boundedness and a job's affinity are the simulator's business)."""
        from joulegym.devices import cpu

        ref = cpu.get_server_type("i5-4690")
        return np.array([s.f_max_mhz * s.ipc_rel / (ref.f_max_mhz * ref.ipc_rel) for s in self.server_types])

    # --- the step --------------------------------------------------------------------------------------------
    def _transition(self, decision: tuple[int, int | None]) -> tuple[float, float, float, float]:
        sim = self.sim
        sim.apply(decision)
        self.placed += 1
        self.steps += 1
        self._more = sim.advance()  # after the last placement this runs every job to completion
        return self._reward_parts()

    def _loads(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(L_i, drain_i, true drain_i)`` now, computed once per decision point: the load and drain time as the
        schedulers know them (predicted sizes less retired instructions, over the measured rate; the observation and
        the repair rule, :class:`~joulegym.envs.qin.view.QinView`) and the true drain time (the reward's potential):
        each server's remaining work over the rate its threads run at now (0 when idle)."""
        sim = self.sim
        key = (self.placed, sim.now)
        cached = self._load_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        if self.N < SCALAR_SERVERS:
            loads = self._loads_scalar()
        else:
            true = sim.load_instr
            known = np.maximum(true + sim._load_error, 0.0)  # QinSim.predicted_load_instr
            rate = sim.server_rate_sum
            running = rate > 0
            loads = (known, np.divide(known, rate, out=np.zeros(self.N), where=running),
                     np.divide(true, rate, out=np.zeros(self.N), where=running))
        self._load_cache = (key, loads)
        return loads

    def _loads_scalar(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`_loads` for a few servers, in scalars: the same element-wise IEEE operations as the numpy path
        (``QinSim.load_instr``, ``predicted_load_instr`` and the guarded divisions), without a numpy call each."""
        sim = self.sim
        known, drain, true_drain = [], [], []
        for left, rate, error in zip(sim.load_instr_list(), sim.server_rate_sum.tolist(), sim._load_error.tolist()):
            seen = max(left + error, 0.0)
            known.append(seen)
            drain.append(seen / rate if rate > 0 else 0.0)
            true_drain.append(left / rate if rate > 0 else 0.0)
        self._true_drain_list = true_drain
        return np.array(known), np.array(drain), np.array(true_drain)

    def _load_and_drain(self) -> tuple[np.ndarray, np.ndarray]:
        """``(L_i, drain_i)`` as the schedulers know them (:meth:`_loads`)."""
        return self._loads()[:2]

    def _reward_parts(self) -> tuple[float, float, float, float]:
        sim = self.sim
        if sim.done:
            m = sim.metrics()
            phi = float(m["makespan_s"])
            energy = float(m["energy_j"])
            psi = energy * phi
        elif self.N < SCALAR_SERVERS:  # a few servers: the same sums in scalars (numpy adds < 8 terms in order)
            drain = self._loads()[2]
            true_drain = self._true_drain_list
            phi = float(sim.now - self._t0 + max(true_drain))
            energy = sim.energy_j
            psi = (energy + sum([p * d for p, d in zip(sim.power_w.tolist(), true_drain)])) * phi
        else:
            drain = self._loads()[2]
            phi = float(sim.now - self._t0 + drain.max())
            energy = float(sim.energy_j)
            psi = (energy + float(np.sum(sim.power_w * drain))) * phi  # not np.dot: same bits on every CPU
        flow = float(sim.flowtime_s)
        parts = (-(phi - self._phi) / self.T_ref, -(flow - self._flow) / (self.M * self.t_job),
                 -(energy - self._energy) / self.E_ref, -(psi - self._psi) / (self.E_ref * self.T_ref))
        self._phi, self._psi, self._energy, self._flow = phi, psi, energy, flow
        return parts

    def _terminated(self) -> bool:
        return bool(self.sim.done)

    def _truncated(self) -> bool:
        limit = self.config["max_steps"]
        return bool(self.sim.truncated) or self.steps >= (self.M if limit is None else int(limit))

    # --- what policies read ------------------------------------------------------------------------------------
    @property
    def pending_job(self) -> int:
        """The job to place now (-1 when none)."""
        return int(self.sim.pending_job) if self._started_sim and not self.sim.done else -1

    def pending_prediction(self):
        """The simulator's predicted scores of the pending job (cached per decision)."""
        return self.sim.pending_prediction() if self.pending_job >= 0 else None

    def repair_server(self) -> int:
        """The valid server with the shortest known drain time (ties: the lowest index): the ``drain-time``
        baseline's rule."""
        return int(np.argmin(self._load_and_drain()[1]))

    # --- observation, info, metrics --------------------------------------------------------------------------
    def _observe(self) -> np.ndarray:
        sim = self.sim
        rows = self._rows  # (N_max, 15) float64; static columns and the server mask are filled once per episode
        feat = rows[: self.N]
        load, drain = self._load_and_drain()
        feat[:, 3] = sim.runnable_threads * self._inv_cores
        feat[:, 4] = load * self._inv_size_cores
        feat[:, 5] = drain * (1.0 / self._obs_T_ref)
        feat[:, 6:8] = self._pressure_features()
        feat[:, 8] = sim.power_w * self._inv_tdp
        # utilisation = busy cores / cores (QinSim.util), summed per server segment without a bincount
        feat[:, 9] = np.add.reduceat(sim.core_threads > 0, self._segments) * self._inv_physical
        job = self.pending_job
        obs = np.zeros(self.obs_size)
        head = self.n_max * SERVER_ROW
        if job >= 0:
            feat[:, 10:14] = self._job_server_features(job)
            obs[head: head + JOB_FEATURES - 1] = self._job_table["job"][job]
            obs[head + JOB_FEATURES - 1] = max(0.0, float(sim.now - self._arrivals[job])) / self._obs_T_ref  # waited
        else:
            feat[:, 10:14] = 0.0
        obs[:head] = rows.ravel()
        g = head + JOB_FEATURES
        obs[g] = sim.now / self._obs_T_ref / 4.0
        obs[g + 1] = (self.M - self.placed) / self.M
        obs[g + 2] = sim.queue_length / self.M
        obs[g + 3 + OBJECTIVES.index(self.objective)] = 1.0
        np.minimum(np.maximum(obs, 0.0, out=obs), OBS_HIGH, out=obs)  # np.clip's values, without its wrapper
        return obs.astype(np.float32)

    def _max_episode_steps(self) -> int | None:
        """``max_steps`` when set; otherwise one placement per job, and ``reset(options={"jobs": ...})`` may
        bring another number of jobs (None)."""
        limit = self.config["max_steps"]
        return None if limit is None else int(limit)

    def _observation_names(self) -> list[str]:
        """The module docstring's observation: per server (14 + the mask), the pending job, globals."""
        return (row_names("server", self.n_max, SERVER_NAMES) + [f"job.{name}" for name in JOB_NAMES]
                + ["time", "jobs_left", "queue"] + [f"objective_{name}" for name in OBJECTIVES])

    def _pressure_features(self) -> np.ndarray:
        """Per server: mean caused and mean tolerated predicted scores / 100; they change only at a placement or a
        completion, so they are kept between."""
        sim = self.sim
        key = (sim.jobs_placed, sim.jobs_done)
        if self._pressure_cache[0] != key:
            scale = 1.0 / (100.0 * NUM_SOI)
            both = np.empty((self.N, 2))
            np.multiply(sim.c_server.sum(axis=1), scale, out=both[:, 0])
            np.multiply(sim.t_server.sum(axis=1), scale, out=both[:, 1])
            self._pressure_cache = (key, both)
        return self._pressure_cache[1]

    def _job_features_table(self) -> dict[str, np.ndarray]:
        """Per job, what its observation rows hold that depends on the job alone: threads / 8, predicted size / mean,
        mean t / 100, mean c / 100, LC flag; and per (job, server) H at f_max, the least PL-eligible E and T at f_max,
        each over its maximum (the arithmetic of the per-step features, element by element). For clusters where
        the (job, server) tables would be large, those are computed per decision instead."""
        sim = self.sim
        job = np.stack((self._threads / 8.0, sim.pred_size / self.mean_size, sim.pred_t.mean(axis=1) / 100.0,
                        sim.pred_c.mean(axis=1) / 100.0, self._is_lc.astype(float)), axis=1)
        table = {"job": job}
        if self.M * self.N * self.L <= PER_JOB_TABLE_LIMIT:
            cols = sim._pred_cols
            mips, energy, runtime = sim.pred_mips[:, cols], sim.pred_energy[:, cols], sim.pred_runtime[:, cols]
            table["servers"] = np.stack([_normalised(x) for x in (
                mips[..., -1], _eligible_energy(runtime, energy), runtime[..., -1])], axis=-1)
        return table

    def _job_server_features(self, job: int) -> np.ndarray:
        """The pending job's per-server features: predicted interference (eq. 16) / 3000, H at f_max / max, the least
        PL-eligible E / max, T at f_max / max (cached per decision)."""
        cached = self._job_feat_cache
        if cached is not None and cached[0] == self.placed:
            return cached[1]
        sim = self.sim
        p = sim.pending_prediction()
        out = np.empty((self.N, 4))
        # eq. 14-16 (scheduling.interference_score, inlined: the same operations)
        d1 = p.tolerated[None, :] - sim.c_server
        d2 = sim.t_server - p.caused[None, :]
        if self.config["interference_mode"] == "literal_abs":
            inter = np.abs(d1).sum(axis=1) + np.abs(d2).sum(axis=1)
        else:
            inter = np.maximum(-d1, 0.0).sum(axis=1) + np.maximum(-d2, 0.0).sum(axis=1)
        out[:, 0] = inter * (1.0 / I_NORM)
        servers = self._job_table.get("servers")
        if servers is not None:
            out[:, 1:] = servers[job]
        else:
            out[:, 1] = _normalised(p.mips[:, -1])
            out[:, 2] = _normalised(_eligible_energy(p.runtime_s, p.energy_j))
            out[:, 3] = _normalised(p.runtime_s[:, -1])
        self._job_feat_cache = (self.placed, out)
        return out

    def _extra_info(self) -> dict[str, Any]:
        return {"job": self.pending_job, "queue": int(self.sim.queue_length)}

    def _diagnostic_info(self) -> dict[str, Any]:
        sim = self.sim
        return {"server_load": np.asarray(sim.load_instr, dtype=float).copy(),
                "server_util": np.asarray(sim.util, dtype=float).copy()}

    def metrics(self) -> dict[str, Any]:
        """The simulator's metrics (makespan, mean JCT, energy, EDP, Im_c, performance loss, ...)."""
        return dict(self.sim.metrics()) if self._started_sim else {}

    def traces(self) -> dict[str, np.ndarray]:
        """Per-job records (arrival, dispatch, start and finish times, server, initial V/F level) and, with
        ``record_traces=True``, the Im_c (eq. 30) and per-server utilisation at every placement (Fig. 8)."""
        sim = self.sim
        out = {"arrival_s": sim.arrival_s.copy(), "dispatch_s": sim.dispatch_s.copy(), "start_s": sim.start_s.copy(),
               "finish_s": sim.finish_s.copy(), "server": sim.job_server.copy(), "level": sim.job_level_hint.copy()}
        if self.config["record_traces"]:
            out["im_c_t_s"] = np.array([t for t, _ in sim.im_c_trace])
            out["im_c"] = np.array([v for _, v in sim.im_c_trace])
            out["util"] = np.array([u for _, u in sim.util_trace]).reshape(-1, self.N)
        return out

    # --- render ----------------------------------------------------------------------------------------------
    def _render_ansi(self) -> str:
        sim = self.sim
        lines = [f"t={sim.now:.1f} s  placed {self.placed}/{self.M}  job {self.pending_job}  "
                 f"energy {sim.energy_j / 1e3:.1f} kJ  node policy {self.config['node_policy']}",
                 "srv  type       cores  threads  load(Ginstr)  util  power(W)"]
        for i in range(self.N):
            lines.append(f"{i:3d}  {self.server_types[i].name:<9s} {int(self._cores[i]):5d}  "
                         f"{int(sim.runnable_threads[i]):7d}  {sim.load_instr[i] / 1e9:12.1f}  {sim.util[i]:4.2f}  "
                         f"{sim.power_w[i]:8.1f}")
        return "\n".join(lines)

    def _render_figure(self):
        sim = self.sim
        fig, axes = new_figure(2, 1, size=(6.4, 4.8))
        x = np.arange(self.N)
        names = [s.name for s in self.server_types]
        axes[0, 0].bar(x, sim.load_instr / 1e9)
        axes[0, 0].set_ylabel("load (G instr)")
        axes[1, 0].bar(x, sim.power_w)
        axes[1, 0].set_ylabel("power (W)")
        for ax in axes[:, 0]:
            ax.set_xticks(x, names if self.N <= 12 else [""] * self.N, fontsize=7)
        axes[0, 0].set_title(f"t = {sim.now:.0f} s, {self.placed}/{self.M} placed")
        fig.tight_layout()
        return fig


class QinHierarchicalEnv(QinClusterEnv):
    """``Qin-v0``: QinCluster with the node policy fixed by the scenario (Qin's ``qin-node`` by default; paper
    §7.3, Table 5). Metrics follow §7.3: makespan over the servers, energy summed."""

    default_node_policy = "qin-node"
