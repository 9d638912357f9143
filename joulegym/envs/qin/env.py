"""The Qin envs (Guan & Ababei, IEEE T-SUSC 2024; ``docs/families/qin.md`` "Environments"): ``QinCluster-v0``
(one job placement per step), ``QinNode-v0`` (thread-to-core + per-core V/F per control period) and ``Qin-v0``
(hierarchical: ``QinCluster`` with Qin's node policy in every server, paper §7.3).

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
                       SCs per job), the same information Qin uses
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
``node_policy``       ``linux`` (default), ``sniper_pinned``, ``qin_node`` (``Qin-v0``'s default)
``node_focus``        focus of ``qin_node``: ``perf`` (PL 0), ``energy`` (PL 0.5), ``edp`` (PL 0.1); None: the
                      objective's (makespan / flowtime: perf)
``control_period_ms`` node-policy period (10; 1 is the paper's fidelity mode)
``admission``         ``fifo``, ``dac_H_desc``, ``dac_E_asc``, ``dac_I_asc`` (§7.4) with ``dac_queue_len`` (100),
                      ``dac_wait_s`` (0), ``sigma_dac_s`` (None: rank all)
``scheduler_latency_s`` per-job scheduling latency (0.27 s: profiling 0.18 + decision 0.09, A27)
``core_types``        ``big`` or ``biglittle``; ``power_model``: ``full`` or ``paper_dynamic_only``
``interference_mode`` ``literal_abs`` (eq. 16 as printed) or ``hinge`` (A4), for the observation's I
``max_servers``       N_max (8); ``max_steps``: None = M; reset option ``jobs``: a ``QinJobs`` table to replay
``record_traces``     keep Im_c and the servers' utilisation at every placement (``env.unwrapped.traces()``)
====================  =============================================================================================

``QinNode-v0`` (docs §7.2)
==========================

=====================  ========================================================================================
action                 ``MultiDiscrete([C_max + 1] * K_max + [L] * C_max)``: per thread slot a target core (``C_max``
                       or an absent core: keep the current one), then per core a V/F level (0 = lowest)
observation            ``Box(0, 10)``: per core (C_max x 8: V/F level / L, f / f_H, Kalman CPI / 4, Kalman
                       instructions per period / (f_H dt), queued instructions / thread size, power / core TDP,
                       busy, accumulated pl), per thread slot (K_max x 6: alive, remaining fraction, CPI / 4, core /
                       C_max, phase change, owning app's pl), global (PL, elapsed / horizon, objective one-hot 3)
reward parts           ``energy = -E_dt / E_ref - kappa max(0, pl - PL) dt / T0`` (kappa = 10, pl the largest
                       per-app loss), ``perf = -dt alive / (K T0)``, ``edp`` (shaped ``-d(E T) / (E_ref T0)``);
                       presets ``energy`` (default), ``perf``, ``edp``; T0 = stand-alone runtime at f_H,
                       ``E_ref = T0 TDP``
terminated             every thread has finished; truncated at 10 x T0
info                   ``alive_threads``, ``pl``; ``info_level="full"`` adds ``core_level`` and ``core_pl``
=====================  ========================================================================================

Config keys (``QinNodeEnv.default_config``): ``server`` (a Table 2 type, ``i5-4690``), ``apps`` (catalog names,
``["fft"]``; all arrive at t = 0 on the least-loaded cores), ``threads_per_app`` (None: the app's), ``thread_instr``
(5e8 instructions per thread), ``control_period_ms`` (1; up to 100 for RL), ``objective``, ``pl_threshold``
(None: 0.5 / 0 / 0.1 for energy / perf / edp), ``kappa`` (10), ``max_threads`` (K_max, 16), ``max_cores``
(C_max, 8), ``core_types``, ``power_model``. Reference node policies decide on the simulator through
:meth:`QinNodeEnv.node_decision_from`, which restores its state: a decision reaches it only through the action.

Version history: v0 (first release).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from joulegym.core.actions import ActionType, validated_discrete_action, validated_multidiscrete_action
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
NODE_POLICIES = ("linux", "sniper_pinned", "qin_node")
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
MAX_SERVERS = 10_000  # far above the large-N scenario (1,000); bounds the observation size
MAX_JOBS = 100_000  # keeps make + reset within a few seconds (docs/robustness.md)
ARRIVAL_SPAN_S = 1e6  # Poisson arrivals must fit well inside the simulator's 1e7 s horizon (num_jobs / rate_per_s)
I_NORM = 3000.0  # docs §7.1: eq. 16 over 15 SoIs in [0, 100] scores is at most 2 * 15 * 100 = 3000
KUBERNETES_LATENCY_S = 0.005  # A27 (docs §8): Kubernetes responds in milliseconds
PROFILING_LATENCY_S = 0.18 + 0.09  # A27: profiling + CF 0.18 s, decision 0.09 s per job


def _clip(x: np.ndarray) -> np.ndarray:
    return np.clip(x, 0.0, OBS_HIGH, out=x)


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


class NodeAction(ActionType):
    """``MultiDiscrete([C + 1] * K + [L] * C)``: per thread slot a target core (``C``: keep), per core a V/F level."""

    name = "node"

    def __init__(self, env: QinNodeEnv) -> None:
        super().__init__(env)
        self.K, self.C, self.L = env.K, env.C, env.L
        self.space = gym.spaces.MultiDiscrete([self.C + 1] * self.K + [self.L] * self.C)

    @property
    def has_mask(self) -> bool:
        return True

    def mask(self) -> np.ndarray:
        return self.env.action_mask_now.copy()

    def decode(self, action: Any) -> tuple[np.ndarray, np.ndarray]:
        a = validated_multidiscrete_action(action, self.space)
        mask = self.env.action_mask_now
        K, C, L = self.K, self.C, self.L
        cores = a[:K].copy()
        levels = a[K:].copy()
        # a masked target (a dead or absent thread, an absent core) means "keep"; an absent core's level is 0
        bad_core = ~mask[: K * (C + 1)].reshape(K, C + 1)[np.arange(K), cores]
        bad_level = ~mask[K * (C + 1):].reshape(C, L)[np.arange(C), levels]
        cores[bad_core] = C
        levels[bad_level] = 0
        self.repaired = bool(bad_core.any() or bad_level.any())
        return cores, levels

    def encode(self, decision: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        cores, levels = decision
        return np.concatenate([np.asarray(cores, dtype=np.int64), np.asarray(levels, dtype=np.int64)])


# --- QinCluster-v0 -------------------------------------------------------------------------------------------------
class QinClusterEnv(JoulegymEnv):
    """One job placement per step on heterogeneous servers (module docstring; docs §7.1)."""

    family = "qin"
    action_types: ClassVar[dict[str, type[ActionType]]] = {"server": ServerAction, "server_vf": ServerVFAction}
    reward_parts = (
        RewardPart("makespan", -math.inf, math.inf, "-d max(now, projected server finish) / T_ref: -makespan / T_ref"),
        RewardPart("flowtime", -math.inf, 0.0, "-(jobs in system) dt / (M t_job): -mean JCT / t_job"),
        RewardPart("energy", -math.inf, 0.0, "-dE / E_ref: cluster energy (CPU + DRAM)"),
        RewardPart("edp", -math.inf, math.inf, "-d((E + projected E) Phi) / (E_ref T_ref): -E x makespan"),
    )
    reward_presets: ClassVar[dict[str, dict[str, float]]] = {name: {name: 1.0} for name in OBJECTIVES}
    option_keys = ("jobs",)
    lean_info_keys: ClassVar[tuple[str, ...]] = ("job", "queue")
    full_info_keys: ClassVar[tuple[str, ...]] = ("server_load", "server_util")
    default_node_policy = "linux"
    kind_name = "QinCluster"

    @classmethod
    def _kind_of(cls, action_mode: str) -> str:
        # every action mode of the class is the same kind for scenarios (server_vf is a kwarg, not an id)
        return cls.kind_name

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
            "scheduler_latency_s": PROFILING_LATENCY_S,
            "core_types": "big",
            "power_model": "full",
            "interference_mode": "literal_abs",
            "max_servers": 8,
            "max_steps": None,
            "record_traces": False,
        }

    # --- configuration ---------------------------------------------------------------------------------------
    def _configure(self) -> None:
        from joulegym.devices import cpu
        from joulegym.envs.qin.simulator import QinSim, QinSimConfig

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
        latency = check_number("scheduler_latency_s", c["scheduler_latency_s"], 0.0, 3600.0)
        check_bool("record_traces", c["record_traces"])
        check_choice("core_types", c["core_types"], CORE_TYPES)
        check_choice("power_model", c["power_model"], POWER_MODELS)
        check_choice("interference_mode", c["interference_mode"], INTERFERENCE_MODES)
        self.server_types = self._check_servers(c["servers"])
        self.N = len(self.server_types)
        self.n_max = check_int("max_servers", c["max_servers"], 1, MAX_SERVERS)
        if self.N > self.n_max:
            raise ValueError(f"max_servers must be >= the number of servers ({self.N}), got {self.n_max}")
        self._check_workload(c["workload"])
        if c["max_steps"] is not None:
            check_int("max_steps", c["max_steps"], 1)
        self.cluster = cpu.build_core_table(self.server_types, biglittle=c["core_types"] == "biglittle")
        self.L = int(self.cluster.freq_mhz.shape[1])
        # A27 splits a profiling-based scheduler's 0.27 s as profiling + CF 0.18 s and decision 0.09 s (2 : 1)
        node_policy: Any = c["node_policy"]
        if node_policy == "qin_node":  # Qin's node level with the focus of the run (PL 0 / 0.5 / 0.1, §7.2.1)
            from joulegym.envs.qin.node_policies import make_node_policy

            node_policy = make_node_policy("qin_node", focus=focus)
        self.sim_config = QinSimConfig(
            node_policy=node_policy, control_period_s=period_ms / 1000.0, admission=c["admission"],
            dac_queue_len=int(c["dac_queue_len"]), dac_wait_s=float(c["dac_wait_s"]),
            sigma_dac_s=None if c["sigma_dac_s"] is None else float(c["sigma_dac_s"]),
            profile_latency_s=latency * 2.0 / 3.0, decision_latency_s=latency / 3.0,
            power_terms="dynamic_only" if c["power_model"] == "paper_dynamic_only" else "full",
            record_traces=c["record_traces"])
        self.sim = QinSim(self.cluster, self.sim_config)
        self._predictor = None  # built on first reset (the prediction module caches the offline CF fit)
        valid = np.zeros(self.n_max, dtype=bool)
        valid[: self.N] = True
        self.server_mask = valid
        self._mask_server = valid.astype(np.float32)
        self.action_mask_now = np.repeat(valid, self.L) if c["action_mode"] == "server_vf" else valid.copy()
        self.server_cores = self._cores = cores = self.cluster.cores.astype(float)
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

            self._predictor = QinPredictor(self.server_types,
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

    def _begin_episode(self, options: dict[str, Any]) -> None:
        from joulegym.workloads.qin_jobs import QinJobs

        jobs = options.get("jobs")
        rng = self.np_random
        if jobs is None:
            jobs = self._make_jobs(int(rng.integers(0, 2**31 - 1)))
        elif not isinstance(jobs, QinJobs):
            raise ValueError(f"reset options jobs must be a QinJobs table "
                             f"(joulegym.workloads.qin_jobs.generate_jobs / load_jobs), got {type(jobs).__name__}")
        if jobs.n_jobs and float(jobs.arrival_s.max()) >= self.sim_config.horizon_s:
            raise ValueError(f"reset options jobs: arrival_s must be < the simulator's horizon "
                             f"({self.sim_config.horizon_s:g} s), got {float(jobs.arrival_s.max()):g}")
        self.jobs = jobs
        self.M = int(jobs.n_jobs)
        predictor = self._predictor_for_episode()
        predictions = predictor.predict(jobs, np.random.default_rng(int(rng.integers(0, 2**31 - 1))))
        sim = self.sim
        sim.reset(jobs, seed=int(rng.integers(0, 2**31 - 1)), predictions=predictions,
                  sc_columns=predictor.columns_by_server)
        self._started_sim = True
        size = np.asarray(jobs.size_instr, dtype=float)
        ref_runtime = np.asarray(jobs.reference_runtime_s, dtype=float)
        # one reference core's instruction rate (i5-4690 at 3.5 GHz) x each server's relative core speed x cores
        ref_ips = float(size.sum() / ref_runtime.sum())
        self._capacity_ips = self._cores * ref_ips * self._reference_speed()
        self.mean_size = float(size.mean())
        self.t_job = float(ref_runtime.mean())
        self._arrivals = np.asarray(jobs.arrival_s, dtype=float)
        self._t0 = float(self._arrivals.min())
        self.T_ref = max(float(size.sum() / self._capacity_ips.sum()), float(self._arrivals.max() - self._t0), 1e-9)
        self.E_ref = self.T_ref * float(self.cluster.tdp_w.sum())
        self._threads = np.asarray(jobs.threads, dtype=float)
        self._is_lc = np.asarray(jobs.job_class) == "lc"
        self.placed = 0
        self.steps = 0
        self._phi = 0.0  # makespan potential (0 at the start, the makespan at the end)
        self._psi = 0.0  # EDP potential (0 at the start, energy x makespan at the end)
        self._energy = 0.0
        self._flow = 0.0
        self._pending_cache: tuple[int, int, Any] | None = None
        self._job_feat_cache: tuple[int, np.ndarray] | None = None
        self._load_cache: tuple[tuple[int, float], np.ndarray, np.ndarray] | None = None
        self._rows = np.zeros((self.n_max, SERVER_ROW))
        self._rows[: self.N, 0:3] = self._static
        self._rows[:, SERVER_FEATURES] = self._mask_server
        self._inv_cores = 1.0 / self._cores
        self._inv_size_cores = 1.0 / (self.mean_size * self._cores)
        self._inv_tdp = 1.0 / self.cluster.tdp_w
        self._segments = np.asarray(self.cluster.first_core[:-1], dtype=np.intp)
        self._more = sim.advance()

    def _reference_speed(self) -> np.ndarray:
        """Per server: one core's speed at f_max relative to the reference i5-4690 core at 3.5 GHz (frequency x
        relative IPC; memory-boundedness and a job's affinity are the simulator's business)."""
        from joulegym.devices import cpu

        ref = cpu.get_server_type("i5-4690")
        return np.array([s.f_max_mhz * s.ipc_rel / (ref.f_max_mhz * ref.ipc_rel) for s in self.server_types])

    # --- the step --------------------------------------------------------------------------------------------
    def _transition(self, decision: tuple[int, int | None]) -> tuple[float, float, float, float]:
        server, level = decision
        sim = self.sim
        sim.apply(int(server), None if level is None else int(level))
        self.placed += 1
        self.steps += 1
        self._more = sim.advance()  # after the last placement this runs every job to completion
        return self._reward_parts()

    def _drain_s(self) -> np.ndarray:
        """Estimated time for each server to finish its assigned work: its load over the rate at which its
        threads run now (0 for an idle server)."""
        return self._load_and_drain()[1]

    def _load_and_drain(self) -> tuple[np.ndarray, np.ndarray]:
        """``(L_i, drain_i)`` now, computed once per decision point (the reward and the observation share it)."""
        sim = self.sim
        key = (self.placed, sim.now)
        cached = self._load_cache
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        load = sim.load_instr
        rate = sim.server_rate_sum
        drain = np.divide(load, rate, out=np.zeros(self.N), where=rate > 0)
        self._load_cache = (key, load, drain)
        return load, drain

    def _reward_parts(self) -> tuple[float, float, float, float]:
        sim = self.sim
        if sim.done:
            m = sim.metrics()
            phi = float(m["makespan_s"])
            energy = float(m["energy_j"])
            psi = energy * phi
        else:
            drain = self._drain_s()
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
        job = self.pending_job
        cached = self._pending_cache
        if cached is not None and cached[0] == job and cached[1] == self.placed:
            return cached[2]
        pred = self.sim.prediction(job) if job >= 0 else None
        self._pending_cache = (job, self.placed, pred)
        return pred

    def repair_server(self) -> int:
        """The valid server with the shortest estimated drain time (ties: the lowest index)."""
        return int(np.argmin(self._drain_s()))

    # --- observation, info, metrics --------------------------------------------------------------------------
    def _observe(self) -> np.ndarray:
        sim = self.sim
        N = self.N
        rows = self._rows  # (N_max, 15) float64; static columns and the server mask are filled once per episode
        feat = rows[:N]
        load, drain = self._load_and_drain()
        feat[:, 3] = sim.runnable_threads * self._inv_cores
        feat[:, 4] = load * self._inv_size_cores
        feat[:, 5] = drain * (1.0 / self.T_ref)
        feat[:, 6] = sim.c_server.sum(axis=1) * (1.0 / (100.0 * NUM_SOI))
        feat[:, 7] = sim.t_server.sum(axis=1) * (1.0 / (100.0 * NUM_SOI))
        feat[:, 8] = sim.power_w * self._inv_tdp
        # utilisation = busy cores / cores (QinSim.util), summed per server segment without a bincount
        feat[:, 9] = np.add.reduceat(sim.core_threads > 0, self._segments) * self._inv_cores
        job = self.pending_job
        obs = np.zeros(self.obs_size)
        head = self.n_max * SERVER_ROW
        if job >= 0:
            p = self.pending_prediction()
            feat[:, 10:14] = self._job_server_features(job, p)
            waited = max(0.0, float(sim.now - self._arrivals[job]))
            obs[head: head + JOB_FEATURES] = (
                self._threads[job] / 8.0, float(p.size_instr) / self.mean_size, float(p.tolerated.mean()) / 100.0,
                float(p.caused.mean()) / 100.0, float(self._is_lc[job]), waited / self.T_ref)
        else:
            feat[:, 10:14] = 0.0
        obs[:head] = rows.ravel()
        g = head + JOB_FEATURES
        obs[g] = sim.now / self.T_ref / 4.0
        obs[g + 1] = (self.M - self.placed) / self.M
        obs[g + 2] = sim.queue_length / self.M
        obs[g + 3 + OBJECTIVES.index(self.objective)] = 1.0
        np.clip(obs, 0.0, OBS_HIGH, out=obs)
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

    def _job_server_features(self, job: int, p: Any) -> np.ndarray:
        """The pending job's per-server features (cached per decision): predicted interference (eq. 16) / 3000,
        H at f_max / max, the least PL-eligible E / max, T at f_max / max."""
        cached = self._job_feat_cache
        if cached is not None and cached[0] == self.placed:
            return cached[1]
        from joulegym.envs.qin.scheduling import interference_score

        sim = self.sim
        out = np.empty((self.N, 4))
        out[:, 0] = interference_score(p.tolerated, p.caused, sim.t_server, sim.c_server,
                                       mode=self.config["interference_mode"]) * (1.0 / I_NORM)
        h = p.mips[:, -1]
        out[:, 1] = h / max(float(h.max()), 1e-12)
        e = self._eligible_energy(p)
        out[:, 2] = e / max(float(e.max()), 1e-12)
        t = p.runtime_s[:, -1]
        out[:, 3] = t / max(float(t.max()), 1e-12)
        self._job_feat_cache = (self.placed, out)
        return out

    @staticmethod
    def _eligible_energy(p, pl: float = 0.5) -> np.ndarray:
        """Per server: the least predicted energy over the V/F levels whose predicted time is within the PL = 0.5
        performance-loss bound of the top level (docs §3.5, the energy focus)."""
        runtime, energy = p.runtime_s, p.energy_j
        eligible = runtime <= runtime[:, -1:] / (1.0 - pl)
        return np.where(eligible, energy, np.inf).min(axis=1)

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
    """``Qin-v0``: QinCluster with the node policy fixed by the scenario (Qin's ``qin_node`` by default; paper
    §7.3, Table 5). Metrics follow §7.3: makespan over the servers, energy summed."""

    default_node_policy = "qin_node"

    kind_name = "Qin"


# --- QinNode-v0 ----------------------------------------------------------------------------------------------------
CORE_NAMES = ("level", "frequency", "cpi", "instructions", "queued", "power", "busy", "pl")
THREAD_NAMES = ("alive", "remaining", "cpi", "core", "phase_change", "app_pl")
CORE_FEATURES = len(CORE_NAMES)
THREAD_FEATURES = len(THREAD_NAMES)
NODE_OBJECTIVES = ("energy", "perf", "edp")
NODE_GLOBAL = 2 + len(NODE_OBJECTIVES)
NODE_PL = {"energy": 0.5, "perf": 0.0, "edp": 0.1}  # paper §7.2.1 (A15: perf = 0, i.e. f_H)
CPI_NORM = 4.0  # CPI features / 4 (the catalog's cpi0 <= 1.2, slowed down at most 3x by interference: < 4)
PHASE_CHANGE = 0.1  # a thread's CPI moving by more than 10 % between two periods counts as a phase change
TRUNCATE_FACTOR = 10.0  # truncation at 10 x the stand-alone runtime (docs §7.2)


class QinNodeEnv(JoulegymEnv):
    """Thread-to-core mapping and per-core V/F on one server, one control period per step (module docstring;
    docs §7.2)."""

    family = "qin"
    action_types: ClassVar[dict[str, type[ActionType]]] = {"node": NodeAction}
    reward_parts = (
        RewardPart("energy", -math.inf, 0.0, "-E_dt / E_ref - kappa max(0, pl - PL) dt / T0"),
        RewardPart("perf", -math.inf, 0.0, "-(alive threads) dt / (K T0): -mean thread completion time / T0"),
        RewardPart("edp", -math.inf, math.inf, "-d((E + projected E) (now + drain)) / (E_ref T0): -E x T"),
    )
    reward_presets: ClassVar[dict[str, dict[str, float]]] = {name: {name: 1.0} for name in NODE_OBJECTIVES}
    option_keys = ()
    lean_info_keys: ClassVar[tuple[str, ...]] = ("alive_threads", "pl")
    full_info_keys: ClassVar[tuple[str, ...]] = ("core_level", "core_pl")

    @classmethod
    def _kind_of(cls, action_mode: str) -> str:
        return "QinNode"

    @classmethod
    def default_config(cls) -> dict[str, Any]:
        return {
            **super().default_config(),
            "server": "i5-4690",
            "apps": ["fft"],
            "threads_per_app": None,
            "thread_instr": 5e8,
            "control_period_ms": 1.0,
            "objective": "energy",
            "pl_threshold": None,
            "kappa": 10.0,
            "max_threads": 16,
            "max_cores": 8,
            "core_types": "big",
            "power_model": "full",
        }

    def _configure(self) -> None:
        from joulegym.devices import cpu
        from joulegym.envs.qin.simulator import QinSimConfig
        from joulegym.workloads.qin_jobs import get_catalog

        c = self.config
        self.objective = check_choice("objective", c["objective"], NODE_OBJECTIVES)
        try:
            self.server_type = cpu.get_server_type(c["server"])
        except (ValueError, TypeError) as err:
            raise ValueError(f"server: {err}") from None
        catalog = get_catalog()
        apps = c["apps"]
        if not isinstance(apps, list | tuple) or not apps:
            raise ValueError(f"apps must be a non-empty list of catalog app names, got {apps!r}")
        self.app_index = []
        for name in apps:
            try:
                self.app_index.append(catalog.index(name))
            except (ValueError, TypeError) as err:
                raise ValueError(f"apps: {err}") from None
        self.K = check_int("max_threads", c["max_threads"], 1, 1024)
        self.C = check_int("max_cores", c["max_cores"], 1, 1024)
        if c["threads_per_app"] is None:
            self.app_threads = [int(catalog.threads[i]) for i in self.app_index]
        else:
            self.app_threads = [check_int("threads_per_app", c["threads_per_app"], 1, self.K)] * len(apps)
        if sum(self.app_threads) > self.K:
            raise ValueError(f"max_threads must be >= the apps' threads ({sum(self.app_threads)}), got {self.K}")
        self.thread_instr = check_number("thread_instr", check_positive("thread_instr", c["thread_instr"]), 0, 1e15)
        period_ms = check_number("control_period_ms", c["control_period_ms"], 0.1, 100.0)
        self.dt = period_ms / 1000.0
        pl = NODE_PL[self.objective] if c["pl_threshold"] is None else c["pl_threshold"]
        self.pl_threshold = check_number("pl_threshold", pl, 0.0, 0.99)
        self.kappa = check_positive("kappa", c["kappa"], allow_zero=True)
        check_choice("core_types", c["core_types"], CORE_TYPES)
        check_choice("power_model", c["power_model"], POWER_MODELS)
        self.num_cores = int(self.server_type.cores)
        if self.num_cores > self.C:
            raise ValueError(f"max_cores must be >= the server's cores ({self.num_cores}), got {self.C}")
        self.L = self.L_server = int(self.server_type.n_levels)
        self.sim_config = QinSimConfig(node_policy="external", control_period_s=self.dt, profile_latency_s=0.0,
                                       decision_latency_s=0.0,
                                       power_terms="dynamic_only" if c["power_model"] == "paper_dynamic_only"
                                       else "full")
        self.catalog = catalog
        self.obs_size = self.C * CORE_FEATURES + self.K * THREAD_FEATURES + NODE_GLOBAL
        self.observation_space = gym.spaces.Box(0.0, OBS_HIGH, (self.obs_size,), dtype=np.float32)
        self.T = sum(self.app_threads)
        # the flat action mask (thread targets, then core levels); thread rows change with the alive threads
        self._mask_template = np.zeros(self.K * (self.C + 1) + self.C * self.L, dtype=bool)
        rows = self._mask_template[: self.K * (self.C + 1)].reshape(self.K, self.C + 1)
        rows[:, self.C] = True  # "keep" is always allowed
        levels = self._mask_template[self.K * (self.C + 1):].reshape(self.C, self.L)
        levels[: self.num_cores, :] = True
        levels[self.num_cores:, 0] = True  # an absent core: level 0 only (ignored)
        self.action_mask_now = self._mask_template.copy()
        self.sim = None

    # --- episode ---------------------------------------------------------------------------------------------
    def _begin_episode(self, options: dict[str, Any]) -> None:
        from joulegym.core.predictors import ScalarKalmanFilter
        from joulegym.devices import cpu
        from joulegym.envs.qin.simulator import QinSim
        from joulegym.workloads.qin_jobs import QinJobs

        if self.sim is None:
            self.cores_table = cpu.build_core_table([self.server_type],
                                                    biglittle=self.config["core_types"] == "biglittle")
            self.sim = QinSim(self.cores_table, self.sim_config)
        apps = np.array(self.app_index, dtype=np.int64)
        threads = np.array(self.app_threads, dtype=np.int64)
        jobs = QinJobs(self.catalog, apps, np.zeros(apps.size), threads * self.thread_instr, threads)
        sim = self.sim
        sim.reset(jobs, seed=int(self.np_random.integers(0, 2**31 - 1)))
        # every app arrives at t = 0 on the one server: place them (no scheduler latency at node level)
        while sim.advance() and sim.decision_kind == "place":
            sim.apply(0)
        self.jobs = jobs
        st = self.server_type
        tau = cpu.seconds_per_instruction(sim.cpi0, sim.beta, sim.ipc_job_server[:, 0], st.f_max_mhz, st.memlat)
        thread_time = self.thread_instr * tau  # stand-alone time of one thread at f_H, per app
        self.T0 = float(max(thread_time.max(), float((thread_time * threads).sum()) / self.num_cores))
        self.E_ref = self.T0 * st.tdp_w
        self.f_high = sim.f_high_hz[: self.num_cores]
        self.kalman_cpi = ScalarKalmanFilter(self.num_cores)
        self.kalman_instr = ScalarKalmanFilter(self.num_cores)
        self._prev_phase = sim.thread_phase.copy()
        self._phase_change = np.zeros(self.T, dtype=bool)
        self._prev = (sim.now, sim.energy_j, 0.0)
        self._alive_prev = int(sim.thread_alive.sum())
        self._measure()

    def _measure(self) -> None:
        """After a control period: the Kalman filters' per-core CPI and instruction-count estimates (eq. 7-11),
        the phase-change flags and the action mask."""
        sim = self.sim
        C = self.num_cores
        if sim.decision_kind == "node":
            f = sim.freq_hz[np.arange(C), sim.core_level[:C]]
            instr, busy = sim.period_instr[:C], sim.period_busy_s[:C]
            measured = (instr > 0) & (busy > 0)
            cpi = np.divide(f * busy, instr, out=np.ones(C), where=measured)
            self.kalman_cpi.update(cpi, mask=measured)
            self.kalman_instr.update(instr / (self.f_high * self.dt), mask=measured)
            phase = sim.thread_phase
            self._phase_change = np.abs(phase / self._prev_phase - 1.0) > PHASE_CHANGE
            self._prev_phase = phase.copy()
        mask = self.action_mask_now
        mask[:] = self._mask_template
        rows = mask[: self.K * (self.C + 1)].reshape(self.K, self.C + 1)
        alive = np.flatnonzero(sim.thread_alive[: self.T])
        rows[alive, : self.num_cores] = True

    def _transition(self, decision: tuple[np.ndarray, np.ndarray]) -> tuple[float, float, float]:
        cores, levels = decision
        sim = self.sim
        if sim.decision_kind == "node":
            alive = sim.alive_threads()
            target = cores[alive]
            thread_core = np.where(target >= self.C, -1, target + sim.first_core[0])
            level = np.full(sim.n_cores, -1, dtype=np.intp)
            level[: self.num_cores] = levels[: self.num_cores]
            sim.apply_node(thread_core, level)
            sim.advance()
        self._measure()
        return self._reward_parts()

    def _drain(self) -> float:
        sim = self.sim
        rate = float(sim.server_rate_sum[0])
        return float(sim.load_instr[0]) / rate if rate > 0 else 0.0

    def _reward_parts(self) -> tuple[float, float, float]:
        sim = self.sim
        now, energy = sim.now, sim.energy_j
        prev_now, prev_energy, prev_psi = self._prev
        dt = now - prev_now
        e_dt = energy - prev_energy
        pl = float(sim.job_pl().max())
        drain = 0.0 if sim.done else self._drain()
        psi = (energy + float(sim.power_w[0]) * drain) * (now + drain)
        energy_part = -e_dt / self.E_ref - self.kappa * max(0.0, pl - self.pl_threshold) * dt / self.T0
        perf_part = -dt * self._alive_prev / (self.T * self.T0)
        edp_part = -(psi - prev_psi) / (self.E_ref * self.T0)
        self._prev = (now, energy, psi)
        self._alive_prev = int(sim.thread_alive.sum())
        return energy_part, perf_part, edp_part

    def _terminated(self) -> bool:
        return bool(self.sim.done)

    def _truncated(self) -> bool:
        return bool(self.sim.truncated) or self.sim.now >= TRUNCATE_FACTOR * self.T0

    def node_decision_from(self, policy: Any) -> tuple[np.ndarray, np.ndarray]:
        """The decision a node policy of :mod:`joulegym.envs.qin.node_policies` would take now, as
        ``(core per thread slot (C: keep), level per core)``: the policy decides on the simulator (its
        ``on_change`` for event-driven policies, ``control`` for periodic ones) and the mapping is read back and
        restored, so that the decision reaches the simulator only through the action."""
        sim = self.sim
        keep = np.full(self.K, self.C, dtype=np.int64)
        levels = np.zeros(self.C, dtype=np.int64)
        levels[: self.num_cores] = sim.core_level[: self.num_cores]
        if sim.decision_kind != "node":
            return keep, levels
        # what the node policies change on the simulator (through set_node_decision), rolled back after the trial
        saved = sim.node_snapshot()
        try:
            if policy.periodic:
                policy.control(sim, np.array([0]))
            else:
                policy.on_change(sim, 0)
            new_core, new_level = sim.thread_core.copy(), sim.core_level.copy()
        finally:
            sim.restore_node(saved)
        alive = sim.alive_threads()
        moved = alive[new_core[alive] != saved[0][alive]]
        keep[moved] = new_core[moved] - sim.first_core[0]
        levels[: self.num_cores] = new_level[: self.num_cores]
        return keep, levels

    # --- observation, info, metrics --------------------------------------------------------------------------
    def _observe(self) -> np.ndarray:
        sim = self.sim
        C, K, Cm = self.num_cores, self.T, self.C
        obs = np.zeros(self.obs_size, dtype=np.float32)
        core = obs[: Cm * CORE_FEATURES].reshape(Cm, CORE_FEATURES)
        lv = sim.core_level[:C]
        f = sim.freq_hz[np.arange(C), lv]
        busy = sim.core_threads[:C] > 0
        th = sim.alive_threads()
        queued = np.bincount(sim.thread_core[th], sim.thread_rem[th], minlength=sim.n_cores)[:C]
        table = self.cores_table
        rows = np.arange(C)
        beta = float(np.mean(sim.beta))
        power = np.where(busy, table.dyn_w[rows, lv] * (1.0 - 0.5 * beta) + table.leak_w[rows, lv], table.idle_w[:C])
        core[:C, 0] = lv / max(self.L - 1, 1)
        core[:C, 1] = f / self.f_high
        core[:C, 2] = np.where(self.kalman_cpi.initialised, self.kalman_cpi.predict(), 0.0) / CPI_NORM
        core[:C, 3] = np.where(self.kalman_instr.initialised, self.kalman_instr.predict(), 0.0)
        core[:C, 4] = queued / self.thread_instr
        core[:C, 5] = power / (self.server_type.tdp_w / C)
        core[:C, 6] = busy
        core[:C, 7] = sim.core_pl()[:C]
        head = Cm * CORE_FEATURES
        thread = obs[head: head + self.K * THREAD_FEATURES].reshape(self.K, THREAD_FEATURES)
        alive = sim.thread_alive[:K]
        job = sim.thread_job[:K]
        thread[:K, 0] = alive
        thread[:K, 1] = sim.thread_rem[:K] / sim.thread_size[:K]
        thread[:K, 2] = np.where(alive, sim.cpi0[job] / np.maximum(sim.thread_phase[:K], 1e-9), 0.0) / CPI_NORM
        thread[:K, 3] = np.where(alive, np.maximum(sim.thread_core[:K], 0) - sim.first_core[0], 0) / Cm
        thread[:K, 4] = self._phase_change[:K] & alive
        thread[:K, 5] = sim.job_pl()[job]
        g = head + self.K * THREAD_FEATURES
        obs[g] = self.pl_threshold
        obs[g + 1] = sim.now / (TRUNCATE_FACTOR * self.T0)
        obs[g + 2 + NODE_OBJECTIVES.index(self.objective)] = 1.0
        return _clip(obs)

    def _observation_names(self) -> list[str]:
        """The module docstring's observation: per core (C_max x 8), per thread slot (K_max x 6), globals."""
        return (row_names("core", self.C, CORE_NAMES) + row_names("thread", self.K, THREAD_NAMES)
                + ["pl_bound", "time"] + [f"objective_{name}" for name in NODE_OBJECTIVES])

    def _extra_info(self) -> dict[str, Any]:
        sim = self.sim
        return {"alive_threads": int(sim.thread_alive.sum()), "pl": float(sim.job_pl().max())}

    def _diagnostic_info(self) -> dict[str, Any]:
        return {"core_level": self.sim.core_level[: self.num_cores].copy(),
                "core_pl": self.sim.core_pl()[: self.num_cores].copy()}

    def metrics(self) -> dict[str, Any]:
        """Runtime (s), energy (J), EDP and performance loss of the apps on the server (paper §7.2, Fig. 14)."""
        if self.sim is None or self.sim.jobs is None:
            return {}
        m = self.sim.metrics()
        return {"runtime_s": m["makespan_s"] if self.sim.done else float(self.sim.now), "energy_j": m["energy_j"],
                "edp_js": m["energy_j"] * (m["makespan_s"] if self.sim.done else float(self.sim.now)),
                "pl_max": float(self.sim.job_pl().max()), "pl_mean": float(self.sim.job_pl().mean()),
                "migrations": m["migrations"], "threads_done": float(self.T - int(self.sim.thread_alive.sum()))}

    # --- render ----------------------------------------------------------------------------------------------
    def _render_ansi(self) -> str:
        sim = self.sim
        lines = [f"t={sim.now * 1e3:.1f} ms  {self.server_type.name}  alive threads {int(sim.thread_alive.sum())}/"
                 f"{self.T}  energy {sim.energy_j:.3f} J  pl {float(sim.job_pl().max()):.3f} (PL "
                 f"{self.pl_threshold:g})", "core  f(MHz)  threads  pl"]
        for c in range(self.num_cores):
            lines.append(f"{c:4d}  {sim.freq_hz[c, sim.core_level[c]] / 1e6:6.0f}  {int(sim.core_threads[c]):7d}  "
                         f"{sim.core_pl()[c]:.3f}")
        return "\n".join(lines)

    def _render_figure(self):
        sim = self.sim
        fig, axes = new_figure(2, 1, size=(6.4, 4.8))
        x = np.arange(self.num_cores)
        axes[0, 0].bar(x, sim.freq_hz[x, sim.core_level[: self.num_cores]] / 1e9)
        axes[0, 0].set_ylabel("f (GHz)")
        axes[1, 0].bar(x, sim.core_threads[: self.num_cores])
        axes[1, 0].set_ylabel("threads")
        axes[1, 0].set_xlabel("core")
        axes[0, 0].set_title(f"t = {sim.now * 1e3:.1f} ms")
        fig.tight_layout()
        return fig
