"""``joulegym/PowerFlow-v0``: GPUs and frequency per DL training job under a cluster power budget (Gu et al.,
arXiv 2304.06381; ``docs/families/powerflow.md`` §10).

One ``step`` is one scheduling event (a job becomes schedulable after its pre-run, a job completes, an online
profiling window ends, or a tick: a policy wake-up or an idle tick): the agent sets ``(n, f)`` for the jobs in
``K`` fixed **slots** (:class:`joulegym.core.slots.SlotTable`: a schedulable job takes the lowest free slot until
it completes; jobs that find no free slot wait, invisible, with no GPU, counted in ``info["overflow"]``).

=====================  ========================================================================================
action                 ``action_mode`` (:mod:`joulegym.envs.powerflow.actions`): ``"alloc"`` (default,
                       ``MultiDiscrete([L_n]*K + [F]*K)``: n-levels 0, 1, 2, 4, ... up to ``min(G, 64)`` and
                       f-levels, with ``action_masks()``), ``"request"`` (levels up to ``G`` or the job's
                       requested GPU count: every reference policy's decision exactly), ``"micro"``
                       (``Discrete(2K+1)``: Algorithm 1 one step at a time) and ``"priority"``
                       (``Box(0, 1, (K+1,))``: scores + a power fraction for the env's greedy)
observation            ``Box(-1, 10, (K*26 + 14,), float32)``: 26 features per slot (validity, model one-hot,
                       batch size, requested GPUs, remaining work, age, pinned/running flags, n, f, the most
                       energy-efficient f, predicted scaling and power) and 14 global ones (free/allocated
                       GPUs, cluster power / PL, eta, occupancy, overflow, time, time of day, energy rate,
                       powered nodes, last event one-hot); docs §10 lists them
reward parts           ``jct = -N_active dt / (3600 N_total)`` (the return is minus the average JCT in hours),
                       ``power_violation = -overshoot dt / (3600 PL)`` (job power above the budget),
                       ``energy = -dE / (3600 G P_max)``
reward presets         ``"jct"`` = {jct: 1} (default with ``power_constraint="repair"``/``"none"``),
                       ``"penalty"`` = {jct: 1, power_violation: 1} (default with ``"penalty"``)
terminated             every job has finished
truncated              the simulated time reached ``horizon_s`` or ``max_steps`` steps were taken
info                   ``overflow``, ``overflow_steps``, ``event`` (``"arrival"``, ``"completion"``,
                       ``"profiling"``) and the core keys (``reward_parts``, ``repaired``, ``action_mask``,
                       ``metrics`` at the last step: :meth:`PowerFlowSim.metrics`)
=====================  ========================================================================================

Decode and repair (docs §10): clip every slot to its mask, halve the largest allocation while more GPUs than the
cluster's are asked for, then the simulator's ``power_constraint`` (``"repair"``, the default: lower every job's f
one level while the true job power exceeds PL (1 + 1e-3), at f_min halve the latest arrival; ``"penalty"``: no
repair, the ``power_violation`` part; ``"none"``) and placement (``"packed"``: buddy blocks with migration; a
non-elastic baseline's own ``"first-fit"`` / ``"affinity"`` / ``"affinity-migrate"``); any change sets
``info["repaired"]``.

Config keys: every :class:`~joulegym.envs.powerflow.simulator.SimConfig` setting (``eta``, ``predictor``,
``profiling``, ``prerun_s``, ``profile_s``, ``overhead``, ``flat_overhead_s``, ``truth_noise``, ``placement``,
``power_constraint``, ``node_shutdown``, ``horizon_s``, ``idle_tick_s``, ``p_max_w``, ``record_timeline``,
``profile_scope``, ``pin_overhead``) plus the cluster (``device``, ``nodes``, ``gpus_per_node``), the workload
(``trace``, a dict merged key by key; ``trace_path``, ``trace_format``), ``max_slots`` (K) and ``max_steps``.
Wake-ups: :meth:`PowerFlowEnv.request_wakeup` asks for a decision point at a simulated time with the next
committed decision (Tiresias's queue demotions). Reference policies read ``env.unwrapped.sim.view()`` (restricted
to ``occupied_jobs`` while jobs overflow the slots: the action reaches slotted jobs only) and act
through ``env.unwrapped.action_type.encode``; :func:`joulegym.baselines.powerflow_simulate.simulate` runs a trace
through this env with :func:`joulegym.core.rollout.rollout`, so a standalone run and an env episode are one code
path.

Version history (ids keep ``-v0``: the dynamics, observation, actions and default reward are unchanged):

- v0 (core migration): one env class on :class:`joulegym.core.env.JoulegymEnv`; every simulator setting is a
  config key; reward parts and presets replace ``lambda_p`` / ``lambda_e`` (use ``reward="penalty"`` or
  ``reward_weights={"energy": w}``); ``info["reward_vector"]`` replaced by ``info["reward_parts"]``;
  ``info["metrics"]`` only on the last step (``info_metrics="every_step"`` for every step); a masked-out
  ``micro`` action sets ``info["repaired"]``; new ``action_mode="request"``; the Fig. 10 sweep ids (``load-*``,
  ``cluster-*``, ``jobsize-*``) are gone (kwargs: ``nodes=``, ``trace={"mean_interarrival_s": ...}``,
  ``trace={"size_multiplier": m}``).
- v0 (first release): ``PowerFlow-v0`` and its scenario ids.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from joulegym.core.config import (
    check_bool,
    check_choice,
    check_int,
    check_keys,
    check_number,
    check_positive,
)
from joulegym.core.env import JoulegymEnv, row_names
from joulegym.core.plotting import legend_outside, new_figure
from joulegym.core.rewards import RewardPart, RewardSpec
from joulegym.core.slots import SlotRows, SlotTable
from joulegym.envs.powerflow.actions import ACTION_TYPES
from joulegym.envs.powerflow.cluster import ClusterSpec
from joulegym.envs.powerflow.interface import OVERHEAD_MODES, PLACEMENTS, PREDICTORS, Decision, SimConfig
from joulegym.envs.powerflow.simulator import DONE, PowerFlowSim
from joulegym.workloads import dl_jobs, dl_models
from joulegym.workloads.traces import FORMATS, JobTrace

SCALING_NS = (2, 4, 8, 16, 32, 64)
EVENTS = ("arrival", "completion", "profiling")
SLOT_FEATURE_NAMES = (  # docs/families/powerflow.md §10 "Observation", in order
    "valid", *(f"model_{name}" for name in dl_models.MODEL_NAMES), "log2_batch_size", "log2_requested_gpus",
    "remaining_fraction", "log1p_remaining_hours", "log1p_age_hours", "in_prerun", "pinned", "running", "gpus",
    "frequency", "f_ee", *(f"scaling_{n}" for n in SCALING_NS), "power_at_f_ee", "power_at_f_max",
    "energy_ratio_f_ee")
GLOBAL_FEATURE_NAMES = ("free_gpus", "allocated_gpus", "cluster_power", "eta", "occupied_slots", "log1p_overflow",
                        "time", "day_sin", "day_cos", "energy_rate", "powered_nodes",
                        *(f"last_event_{event}" for event in EVENTS))
SLOT_FEATURES = len(SLOT_FEATURE_NAMES)
GLOBAL_FEATURES = len(GLOBAL_FEATURE_NAMES)
POWER_MODES = ("repair", "penalty", "none")
TRACE_KINDS = ("gavel", "alibaba", "motivating", "file")
MAX_JOBS = 200_000  # jobs of a generated trace and slots K (a 10x margin over the largest public traces used here)
TRACE_KEYS = ("kind", "num_jobs", "duration_scale", "mean_interarrival_s", "size_multiplier", "rho", "span_s", "hint",
              "dataset")
N_CAP = 64  # largest per-job allocation the alloc action can express (docs §10)
# Size bounds (docs/robustness.md, the fuzz test): far above every scenario (the largest is 16 x 8), small enough
# that the per-GPU tables and the observation stay in memory. Our choice, not the paper's.
MAX_GPUS = 65_536  # nodes x gpus_per_node
MAX_GPUS_PER_NODE = 1024
MAX_DURATION_SCALE = 1e6  # trace.duration_scale: x1e6 of a 60,000 s Gavel job is already ~1,900 years
P_MAX_RANGE_W = (1.0, 10_000.0)  # p_max_w: per-GPU training power of any real accelerator lies well inside
SIM_SETTINGS = tuple(SimConfig.__dataclass_fields__)  # every simulator setting is a config key (eta included)
_DYNAMIC = slice(8, 16)  # the per-slot features that change while a job sits in its slot
SCALAR_SLOTS = 8  # up to this many occupied slots, the dynamic features are computed in scalar arithmetic


class PowerFlowEnv(SlotRows, JoulegymEnv):
    """GPUs and frequency per DL training job under a cluster power budget (module docstring)."""

    family = "powerflow"
    lean_info_keys: ClassVar[tuple[str, ...]] = ("event", "overflow", "overflow_steps")
    slot_features = SLOT_FEATURES
    action_types = ACTION_TYPES
    reward_parts = (
        RewardPart("jct", -math.inf, 0.0, "-N_active dt / (3600 N_total): sums to minus the average JCT in hours"),
        RewardPart("power_violation", -math.inf, 0.0, "-(job power above PL) dt / (3600 PL); unbounded: the peak job "
                   "draw is a maximum over every profile's lognormal truth factor, not computed"),
        RewardPart("energy", -math.inf, 0.0, "-dE / (3600 G P_max): the energy in hours at full power; unbounded "
                   "(the peak draw is not computed, as power_violation; pre-runs land on one step)"),
    )
    reward_presets: ClassVar[dict[str, dict[str, float]]] = {"jct": {"jct": 1.0},
                                                             "penalty": {"jct": 1.0, "power_violation": 1.0}}
    option_keys = ("trace",)

    @classmethod
    def default_config(cls) -> dict[str, Any]:
        sim = SimConfig()
        settings = {name: getattr(sim, name) for name in SIM_SETTINGS}
        settings["power_constraint"] = "repair"  # the env's cap is hard by default (docs §10)
        return {
            **super().default_config(),
            "device": "v100",
            "nodes": 1,
            "gpus_per_node": 8,
            "trace": {"kind": "gavel", "num_jobs": 12, "duration_scale": 0.05, "mean_interarrival_s": 120.0,
                      "size_multiplier": 1},
            "trace_path": None,
            "trace_format": "auto",
            "max_slots": 16,
            "max_steps": 200_000,
            **settings,
        }

    # --- configuration ------------------------------------------------------------------------------------
    def _configure(self) -> None:
        c = self.config
        check_choice("device", c["device"], ("v100", "a100"))
        nodes = check_int("nodes", c["nodes"], 1, MAX_GPUS)
        gpn = check_int("gpus_per_node", c["gpus_per_node"], 1, MAX_GPUS_PER_NODE)
        if gpn & (gpn - 1):
            raise ValueError(f"gpus_per_node must be a power of two >= 1, got {c['gpus_per_node']!r}")
        if nodes * gpn > MAX_GPUS:
            raise ValueError(f"nodes x gpus_per_node must be at most {MAX_GPUS} GPUs, got {nodes} x {gpn}")
        eta = check_number("eta", check_positive("eta", c["eta"]), 0.0, 1.0)
        check_choice("power_constraint", c["power_constraint"], POWER_MODES)
        check_choice("placement", c["placement"], PLACEMENTS)
        check_choice("predictor", c["predictor"], PREDICTORS)
        check_choice("overhead", c["overhead"], OVERHEAD_MODES)
        check_choice("profile_scope", c["profile_scope"], ("model", "job"))
        for key in ("profiling", "node_shutdown", "record_timeline", "pin_overhead"):
            check_bool(key, c[key])
        for key in ("prerun_s", "profile_s", "flat_overhead_s", "truth_noise"):
            check_positive(key, c[key], allow_zero=True)
        check_positive("idle_tick_s", c["idle_tick_s"])
        if c["horizon_s"] != math.inf or isinstance(c["horizon_s"], bool):  # inf: until every job is done
            check_positive("horizon_s", c["horizon_s"])
        if c["p_max_w"] is not None:
            check_number("p_max_w", c["p_max_w"], *P_MAX_RANGE_W)
        if c["switch_overhead_s"] is not None:
            check_positive("switch_overhead_s", c["switch_overhead_s"], allow_zero=True)
        self.K = check_int("max_slots", c["max_slots"], 1, MAX_JOBS)
        check_int("max_steps", c["max_steps"], 1)
        self._check_trace(c)
        self.cluster = ClusterSpec(nodes, gpn, c["device"])
        settings = {name: c[name] for name in SIM_SETTINGS}
        settings["eta"] = eta
        settings["power_constraint"] = "repair" if c["power_constraint"] == "repair" else "none"
        self._sim_settings = SimConfig(**settings)
        self._sim_settings.validate()
        G = self.cluster.num_gpus
        self.n_cap = min(G, N_CAP)
        self.n_levels = int(self.n_cap).bit_length() + 1  # 0, 1, 2, 4, ..., n_cap
        self.hw = dl_models.hardware(c["device"])
        self.F = len(self.hw.freqs_mhz)
        fmin, fmax = self.hw.freqs_mhz[0], self.hw.freqs_mhz[-1]
        self._f_norm = (np.asarray(self.hw.freqs_mhz, dtype=float) - fmin) / (fmax - fmin)
        self._n_feature = np.log2(np.arange(G + 1) + 1.0) / 7.0  # log2(n + 1) / 7 per GPU count
        self.observation_space = gym.spaces.Box(-1.0, 10.0, (self.K * SLOT_FEATURES + GLOBAL_FEATURES,),
                                                dtype=np.float32)
        self.slots = SlotTable(self.K)
        self.sim = PowerFlowSim(None, self.cluster, self._sim_settings)  # its first reset brings the trace
        self._file_jobs: dl_jobs.DLJobs | None = None

    @staticmethod
    def _check_trace(c: dict[str, Any]) -> None:
        trace = check_keys("trace", c["trace"], TRACE_KEYS)
        kind = check_choice("trace.kind", trace.get("kind"), TRACE_KINDS)
        if "num_jobs" in trace:
            check_int("trace.num_jobs", trace["num_jobs"], 1, MAX_JOBS)
        if "size_multiplier" in trace:
            check_int("trace.size_multiplier", trace["size_multiplier"], 1, 64)
        for key in ("duration_scale", "mean_interarrival_s", "rho", "span_s"):
            if key in trace:
                check_positive(f"trace.{key}", trace[key])
        if "duration_scale" in trace:
            check_number("trace.duration_scale", trace["duration_scale"], 0.0, MAX_DURATION_SCALE)
        check_choice("trace_format", c["trace_format"], ("auto", *FORMATS))
        if kind == "file":
            path = c["trace_path"]
            hint = trace.get("hint", "a Philly-style CSV")
            if path is None and trace.get("dataset"):  # the fetched public file (joulegym.datasets; never downloads)
                from joulegym.workloads.datasets import DataError, resolve

                try:
                    path = c["trace_path"] = str(resolve(trace["dataset"]))
                except DataError as err:  # names the exact fetch command
                    raise ValueError(f"scenario {c['scenario']!r} replays a real trace: {err}; or pass "
                                     f"trace_path=<file> to gym.make (the file is {hint})") from None
            if path is None:
                raise ValueError(f"scenario {c['scenario']!r} replays a real trace: pass trace_path=<file> to "
                                 f"gym.make; the file is {hint}")
            if not Path(path).is_file():
                raise ValueError(f"trace_path={path!r} does not exist (expected {hint})")
        elif c["trace_path"] is not None or c["trace_format"] != "auto":
            raise ValueError(f"trace_path/trace_format are read only with trace kind 'file' (a real trace); this "
                             f"config's trace kind is {kind!r}")

    def _reward_spec(self) -> RewardSpec:
        # the jct part is bounded: at most every job is active for the whole horizon
        horizon = self.config["horizon_s"]
        low = -math.inf if math.isinf(horizon) else -float(math.ceil(horizon / 3600.0))
        parts = (RewardPart("jct", low, 0.0, self.reward_parts[0].description), *self.reward_parts[1:])
        return RewardSpec(parts, self.reward_presets)

    def _default_reward(self) -> str:
        return "penalty" if self.config["power_constraint"] == "penalty" else "jct"

    # --- episode ------------------------------------------------------------------------------------------
    def _make_jobs(self, seed: int) -> dl_jobs.DLJobs:
        t = dict(self.config["trace"])
        kind = t.pop("kind")
        dev, gpn, G = self.config["device"], self.cluster.gpus_per_node, self.cluster.num_gpus
        if kind == "motivating":
            return dl_jobs.motivating_jobs()
        if kind == "file":
            if self._file_jobs is None:
                from joulegym.workloads.traces import load_trace

                trace = load_trace(self.config["trace_path"], format=self.config["trace_format"])
                self._file_jobs = dl_jobs.to_powerflow_jobs(trace, device=dev, seed=0, gpn=gpn)
            return self._file_jobs
        if kind == "alibaba":
            trace = dl_jobs.alibaba_like_trace(int(t.get("num_jobs", 1901)), seed=seed, num_gpus=G,
                                               rho=float(t.get("rho", 0.8)),
                                               span_s=float(t.get("span_s", dl_jobs.ALIBABA_SPAN_S)))
        else:
            trace = dl_jobs.gavel_trace(int(t.get("num_jobs", 100)), seed=seed,
                                        mean_interarrival_s=float(t.get("mean_interarrival_s", 600.0)),
                                        duration_scale=float(t.get("duration_scale", 1.0)),
                                        size_multiplier=int(t.get("size_multiplier", 1)), max_gpus=G)
        return dl_jobs.to_powerflow_jobs(trace, device=dev, seed=seed, gpn=gpn)

    def _begin_episode(self, options: dict[str, Any]) -> None:
        jobs = options.get("trace")
        if jobs is None:
            jobs = self._make_jobs(int(self.np_random.integers(0, 2**31 - 1)))
        elif isinstance(jobs, JobTrace):
            jobs = dl_jobs.to_powerflow_jobs(jobs, device=self.config["device"], gpn=self.cluster.gpus_per_node)
        elif not isinstance(jobs, dl_jobs.DLJobs):
            raise ValueError(f"reset options trace must be a JobTrace or DLJobs, got {type(jobs).__name__}")
        sim = self.sim
        sim.reset(self.np_random, jobs)
        J = len(jobs)
        K = self.K
        self.slots.reset()
        self.steps = 0
        self.decision_index = 0
        self.slot_index = np.full(J, -1, dtype=np.int64)  # job -> its slot (-1: none)
        self.empty_slot_mask = np.ones(K, dtype=bool)
        self._obs_buf = np.zeros(K * SLOT_FEATURES + GLOBAL_FEATURES, dtype=np.float32)
        self._bind_slot_rows()  # the slot rows: a view into the buffer
        self._dyn = np.zeros((K, 8))
        self._static: dict[int, np.ndarray] = {}
        self._static_by_key: dict[tuple[str, int, int], tuple[np.ndarray, float, int]] = {}
        self._fee = np.zeros(J, dtype=np.int64)
        iterations = np.asarray(jobs.iterations, dtype=float)  # per job: the constants of its dynamic features
        self._job_consts = np.stack([iterations, 1.0 / iterations, np.zeros(J),  # (column 2: at seating)
                                     np.asarray(jobs.submit_s, dtype=float) / 3600.0], axis=1)
        self._obs_at = -1
        self._obs: np.ndarray | None = None
        self._prev = (0.0, 0.0, 0.0)
        self._more = sim.advance()
        self._sync()

    def _sync(self) -> None:
        """Re-seat the slots after the simulator reached a decision point; refresh the per-slot state."""
        sim = self.sim
        slots = self.slots
        slots.sync(sim.ready_jobs())  # job index order is submit order
        index = self.slot_index
        for k, j in slots.freed:
            self._slot_obs[k] = 0.0
            self.empty_slot_mask[k] = True
            index[j] = -1
        for k, j in slots.seated:
            self._slot_obs[k] = self._static_features(j)
            self.empty_slot_mask[k] = False
            index[j] = k
        if slots.freed or slots.seated or self.decision_index == 0:  # the slotted jobs in job (submit) order
            seated = slots.slot_of
            js = np.fromiter(seated, dtype=np.int64, count=len(seated))
            order = np.argsort(js)
            self.occupied_jobs = js[order]
            self.occupied_slots = np.fromiter(seated.values(), dtype=np.int64, count=len(seated))[order]
        self.occupied_pinned = sim.pinned_mask(self.occupied_jobs)
        self._pinned_set: set[int] | None = None
        slots.count_step()  # overflow_steps: decision points at which a schedulable job had no slot
        self.decision_index += 1

    @property
    def pinned_jobs(self) -> set[int]:
        """The slotted jobs that are pinned now (online profiling or restarting: their n and GPUs are fixed)."""
        if self._pinned_set is None:
            self._pinned_set = set(self.occupied_jobs[self.occupied_pinned].tolist())
        return self._pinned_set

    @property
    def slot_items(self) -> list[int]:
        """The job in each slot (-1: empty)."""
        return self.slots.items

    def request_wakeup(self, t_s: float | None) -> None:
        """Ask for a decision point at simulated time ``t_s`` (s; ``None``: no request) with the next committed
        decision (in ``micro`` mode: the commit); a later event may come first. Reference policies forward their
        wake-ups (e.g. Tiresias's next queue demotion) here.

        :raises ValueError: if ``t_s`` is not a finite number (or None).
        """
        self.slots.request_wakeup(t_s)

    def _transition(self, decision: dict[int, tuple[int, int]]) -> tuple[float, float, float]:
        sim = self.sim
        sim.repaired = False
        sim.apply(Decision(decision, self.slots.take_wakeup()))
        if sim.repaired:  # the power repair or the placement changed the decision
            self.action_type.repaired = True
        self._more = sim.advance()
        self.steps += 1
        self._sync()
        jct, viol, energy = sim.jct_integral, sim.violation_ws, sum(sim.energy.values())
        d_jct, d_viol, d_e = jct - self._prev[0], viol - self._prev[1], energy - self._prev[2]
        self._prev = (jct, viol, energy)
        return (-d_jct / (3600.0 * len(sim.jobs)), -d_viol / (3600.0 * sim.power_limit),
                -d_e / (3600.0 * self.cluster.num_gpus * sim.p_max))

    def _terminated(self) -> bool:
        return self.sim.done

    def _truncated(self) -> bool:
        return not self._more or self.steps >= self.config["max_steps"]

    # --- per-job data -------------------------------------------------------------------------------------
    def job_tables(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Predicted ``(T, E)`` of job ``j`` over ``sim.n_values`` x the frequency grid."""
        sim = self.sim
        return sim.prof.predicted_tables(sim.jobs.model[j], int(sim.jobs.batch_size[j]), sim.n_values)

    def f_ee(self, j: int) -> int:
        """Job ``j``'s most energy-efficient frequency level (EDP minimiser on one GPU, predicted; docs §8)."""
        if j not in self._static:
            self._static_features(j)
        return int(self._fee[j])

    def _static_features(self, j: int) -> np.ndarray:
        """The slot row of job ``j`` with the features that never change (computed once per (model, BS, requested
        GPUs) and episode: they depend on nothing else)."""
        row = self._static.get(j)
        if row is None:
            sim = self.sim
            key = (str(sim.jobs.model[j]), int(sim.jobs.batch_size[j]), int(sim.jobs.n_req[j]))
            hit = self._static_by_key.get(key)
            if hit is None:
                hit = self._static_by_key[key] = self._static_row(j)
            row, self._job_consts[j, 2], self._fee[j] = hit
            self._static[j] = row
        return row

    def _static_row(self, j: int) -> tuple[np.ndarray, float, int]:
        sim = self.sim
        T, E = self.job_tables(j)
        fee = int(np.argmin(T[0] * E[0]))
        p_max = sim.p_max
        hw = self.hw
        fmin, fmax = hw.freqs_mhz[0], hw.freqs_mhz[-1]
        head = [1.0] + [1.0 if name == sim.jobs.model[j] else 0.0 for name in dl_models.MODEL_NAMES]
        head += [math.log2(max(1, int(sim.jobs.batch_size[j]))) / 10.0,
                 math.log2(max(1, int(sim.jobs.n_req[j]))) / 6.0]
        scaling = []
        for nn in SCALING_NS:
            lv = nn.bit_length() - 1
            scaling.append(float(T[0, fee] / (nn * T[lv, fee])) if lv < T.shape[0] else 0.0)
        tail = [(hw.freqs_mhz[fee] - fmin) / (fmax - fmin), *scaling, float(E[0, fee] / T[0, fee] / p_max),
                float(E[0, -1] / T[0, -1] / p_max), float(E[0, fee] / E[0, -1])]
        row = np.clip(np.array([*head, *[0.0] * 8, *tail]), -1.0, 10.0)
        return row, float(T[0, -1]) / 3600.0, fee

    # --- observation, info, metrics -----------------------------------------------------------------------
    def _observe(self) -> np.ndarray:
        if self._obs_at == self.decision_index:  # a micro step does not move the simulator
            return self._obs.copy()
        obs = self._compute_obs()
        self._obs_at = self.decision_index
        self._obs = obs.copy() if self.action_mode == "micro" else obs  # kept apart from what the caller gets
        return obs

    def _max_episode_steps(self) -> int:
        return int(self.config["max_steps"])  # the step guard of _truncated; most episodes end long before it

    def _observation_names(self) -> list[str]:
        """docs §10 "Observation": 26 per slot, then 14 globals."""
        return row_names("slot", self.K, SLOT_FEATURE_NAMES) + list(GLOBAL_FEATURE_NAMES)

    def _compute_obs(self) -> np.ndarray:
        sim = self.sim
        K = self.K
        ks, js = self.occupied_slots, self.occupied_jobs
        if 0 < ks.size <= SCALAR_SLOTS:
            self._dynamic_rows_scalar(ks, js)
        elif ks.size:  # the dynamic per-slot features, O(occupied slots)
            consts = self._job_consts[js]  # iterations, 1 / iterations, hours per iteration at f_max, submit (h)
            rem = consts[:, 0] - sim.done_it[js]
            n = sim.n[js]
            dyn = self._dyn[: ks.size]  # column 3, "in pre-run", stays 0: a slotted job is past its pre-run
            np.multiply(rem, consts[:, 1], out=dyn[:, 0])
            np.log1p(rem * consts[:, 2], out=dyn[:, 1])
            np.log1p(np.maximum(sim.now / 3600.0 - consts[:, 3], 0.0), out=dyn[:, 2])
            dyn[:, 4] = self.occupied_pinned
            dyn[:, 5] = n > 0
            dyn[:, 6] = self._n_feature[n]
            dyn[:, 7] = self._f_norm[sim.fl[js]]
            np.minimum(dyn[:, 1:3], 10.0, out=dyn[:, 1:3])  # the others lie in [0, 1] by construction
            self._slot_obs[ks, _DYNAMIC] = dyn
        self._obs_buf[K * SLOT_FEATURES:] = self._global_features()
        return self._obs_buf.copy()

    def _dynamic_rows_scalar(self, ks: np.ndarray, js: np.ndarray) -> None:
        """The dynamic per-slot features of :meth:`_compute_obs` in scalar arithmetic (a few occupied slots: a
        numpy call per feature would cost more than the values themselves); the same values as the numpy path."""
        sim = self.sim
        consts, done_it, n_of, fl_of = self._job_consts, sim.done_it, sim.n, sim.fl
        n_feature, f_norm, rows = self._n_feature, self._f_norm, self._slot_obs
        now_h = sim.now / 3600.0
        log1p = math.log1p
        for k, j, pinned in zip(ks.tolist(), js.tolist(), self.occupied_pinned.tolist()):
            iterations, inverse, hours_per_it, submit_h = consts[j].tolist()
            rem = iterations - done_it.item(j)
            n = n_of.item(j)
            rows[k, _DYNAMIC] = (rem * inverse, min(log1p(rem * hours_per_it), 10.0),
                                 min(log1p(max(now_h - submit_h, 0.0)), 10.0), 0.0, float(pinned),
                                 1.0 if n > 0 else 0.0, n_feature.item(n), f_norm.item(fl_of.item(j)))

    def _global_features(self) -> list[float]:
        """The 14 global features (docs §10 "Observation"), clipped to the observation's bounds."""
        sim = self.sim
        K = self.K
        G = self.cluster.num_gpus
        alloc = float(sim._allocated)  # GPUs held by the running jobs, kept by the simulator
        energy = sum(sim.energy.values())
        day = 2 * math.pi * (sim.now % 86400.0) / 86400.0
        ev = [0.0, 0.0, 0.0]
        ev[sim.last_event] = 1.0
        glob = [(G - alloc) / G, alloc / G, min(sim._cluster_power / sim.power_limit, 10.0), float(self.config["eta"]),
                self.occupied_slots.size / K, math.log1p(self.slots.overflow), min(sim.now / sim.cfg.horizon_s, 1.0),
                math.sin(day), math.cos(day),
                min(energy / (sim.power_limit * max(sim.now, 1e-9)), 10.0) if sim.now > 0 else 0.0,
                sim._powered_nodes / self.cluster.nodes, *ev]
        return [min(max(x, -1.0), 10.0) for x in glob]

    def _extra_info(self) -> dict[str, Any]:
        return {"overflow": int(self.slots.overflow), "overflow_steps": int(self.slots.overflow_steps),
                "event": EVENTS[self.sim.last_event]}

    def metrics(self) -> dict[str, Any]:
        """:meth:`PowerFlowSim.metrics`: average JCT, energy and its breakdown, makespan, power, decisions."""
        return self.sim.metrics()

    # --- render -------------------------------------------------------------------------------------------
    def _render_ansi(self) -> str:
        sim = self.sim
        m = sim.metrics()
        lines = [f"t={sim.now / 3600:.2f} h  done {int(m['jobs_done'])}/{int(m['jobs_total'])}  "
                 f"power {m['cluster_power_w']:.0f}/{sim.power_limit:.0f} W  GPUs {int(m['allocated_gpus'])}/"
                 f"{self.cluster.num_gpus}  overflow {self.slots.overflow}",
                 "slot  job  model        BS   n  f(MHz)  progress  state"]
        for k, j in self.slots.occupied():
            state = "profiling" if j in self.pinned_jobs else ("running" if sim.n[j] > 0 else "waiting")
            lines.append(f"{k:4d} {j:4d}  {sim.jobs.model[j]:<11s} {int(sim.jobs.batch_size[j]):4d} {int(sim.n[j]):3d}"
                         f"  {self.hw.freqs_mhz[int(sim.fl[j])]:6.0f}  {sim.done_it[j] / sim.jobs.iterations[j]:7.1%}"
                         f"  {state}")
        return "\n".join(lines)

    def _render_figure(self):
        fig, axes = new_figure(2, 1, size=(6.4, 4.8))
        t = np.array(self.sim._t_log) / 3600.0
        axes[0, 0].step(t, self.sim._alloc_log, where="post")
        axes[0, 0].set_ylabel("GPUs allocated")
        axes[0, 0].set_ylim(0, self.cluster.num_gpus * 1.05)
        power_kw = np.array(self.sim._power_log) / 1000.0
        budget_kw = self.sim.power_limit / 1000.0
        axes[1, 0].step(t, power_kw, where="post", label="cluster power")
        axes[1, 0].axhline(budget_kw, color="r", ls="--", label="budget")
        axes[1, 0].set_ylim(0, 1.1 * max(budget_kw, float(power_kw.max()) if power_kw.size else 0.0, 1e-9))
        axes[1, 0].set_ylabel("cluster power (kW)")
        axes[1, 0].set_xlabel("time (h)")
        legend_outside(axes[1, 0])  # the budget line and the steps stay visible
        sim = self.sim
        done = int(np.count_nonzero(sim.status == DONE))
        fig.suptitle(f"PowerFlow ({self.action_mode}): t = {sim.now / 3600.0:.2f} h, {done} of {len(sim.jobs)} jobs "
                     f"done, eta = {self.config['eta']:g}", fontsize=9)
        fig.tight_layout()
        return fig
