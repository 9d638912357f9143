"""``joulegym/PowerFlow-v0``: the Gymnasium shell of the PowerFlow simulator (Gu et al.; spec §9).

One ``step`` is one scheduling event (job submission after pre-run, completion, end of online
profiling, or an idle tick): the agent sets ``(n, f)`` for the jobs in K fixed **slots** (an arriving
schedulable job takes the lowest free slot until it completes; overflow jobs wait FIFO, invisible,
with n = 0, counted in ``info["overflow"]``).

Action modes (``action_mode``):

- ``"alloc"`` (default): ``MultiDiscrete([L_n]*K + [L_f]*K)``; n-level 0 = no GPU, level l = 2^(l-1) GPUs up to
  ``min(G, 64)``; f-level indexes the device grid. ``action_masks()`` (flattened, sb3-contrib MaskablePPO)
  and ``info["action_mask"]``: n <= min(G, BS); empty slots only level 0; pinned (profiling or restarting)
  jobs only their current n and f. Deterministic repair (spec §9): clip to the mask; while sum n > G halve
  the largest allocation (ties: latest arrival); then ``power_constraint``: ``"repair"`` (default: lower
  every job's f one level while the true job power exceeds PL (1 + 1e-3); at f_min halve the latest
  arrival, dropping it at one GPU), ``"penalty"`` (no repair; reward penalty, lambda_P = 1) or ``"none"``;
  then buddy placement with migration (a job with no aligned block left around pinned jobs is halved; other
  ``placement`` values replay a non-elastic baseline's own placement, e.g. ``"first-fit"`` for Tiresias,
  ``"affinity"`` for Gandiva). Any change sets ``info["repaired"]``.
- ``"micro"``: ``Discrete(2K+1)``: give slot k its next power-of-two block, raise slot k's f one level, or
  commit (time advances only on commit; each event starts from n = 0, f = f_ee, as Algorithm 1).
- ``"priority"``: ``Box(0, 1, (K+1,))``: per-slot scores and a power-usage fraction u; the env's greedy gives
  one GPU per job in score order, then doubles allocations round-robin in score order, while GPUs
  remain and job power stays under u*PL, then raises frequencies in score order.

Wake-ups: :meth:`PowerFlowEnv.request_wakeup` asks for a decision point at a given simulated time with the next
action (the reference policies forward their ``wakeup_s``, e.g. Tiresias's queue-demotion times), exactly as
:func:`~joulegym.envs.powerflow.simulator.simulate` honours ``policy.wakeup_s``: with the policy's own simulator
settings (``profiling``, ``predictor``, ``placement``, ``power_constraint``; see ``policy.sim_config``) and enough
slots, an env episode reproduces ``simulate`` exactly.

Reward (``reward="jct"``): ``-N_active dt / (3600 N_total) - lambda_P * overshoot / (3600 PL) - lambda_E dE / (3600 G
P_max)``, so the undiscounted return is minus the average JCT in hours (plus penalties).
``info["reward_vector"] = [-jct term, -energy (kWh)]``. Observation: ``Box(float32, K*26 + 14)`` (spec §9 lists
26 per-slot and 14 global features; it says 25 and 13).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from joulegym.envs.base import (
    LegacyEnv as JoulegymEnv,
    check_choice,
    check_positive,
    new_figure,
    validated_box_action,
    validated_discrete_action,
)
from joulegym.envs.powerflow.cluster import ClusterSpec
from joulegym.envs.powerflow.simulator import EV_ARRIVAL, PLACEMENTS, PowerFlowSim, SimConfig
from joulegym.scenarios.powerflow import SCENARIOS
from joulegym.workloads import dl_jobs, dl_models

SLOT_FEATURES = 26  # the spec §9 list has 26 entries (it says 25: a miscount)
GLOBAL_FEATURES = 14  # the spec §9 list has 14 entries (it says 13)
ACTION_MODES = ("alloc", "micro", "priority")
POWER_MODES = ("repair", "penalty", "none")
TRACE_KINDS = ("gavel", "alibaba", "motivating", "file")
N_CAP = 64  # largest per-job allocation the action can express (spec §9)
SCALING_NS = (2, 4, 8, 16, 32, 64)


class PowerFlowEnv(JoulegymEnv):
    """GPUs and frequency per DL training job under a cluster power budget (module docstring)."""

    family = "powerflow"
    kind = "PowerFlow"
    scenarios = SCENARIOS

    @classmethod
    def default_config(cls) -> dict[str, Any]:
        return {
            "scenario": None,
            "device": "v100",
            "nodes": 1,
            "gpus_per_node": 8,
            "eta": 0.6,  # spec §9 default [A]
            "trace": {"kind": "gavel", "num_jobs": 12, "duration_scale": 0.05, "mean_interarrival_s": 120.0,
                      "size_multiplier": 1},
            "trace_path": None,
            "trace_format": "auto",
            "max_slots": 16,
            "action_mode": "alloc",
            "power_constraint": "repair",
            "placement": "packed",  # PowerFlow's buddy packing with migration (spec §5.3)
            "reward": "jct",
            "lambda_p": None,  # default: 0 in repair/none mode, 1 in penalty mode (spec §9)
            "lambda_e": 0.0,
            "predictor": "fitted",
            "profiling": True,
            "overhead": "elasticflow",
            "truth_noise": 0.03,
            "horizon_s": 14 * 86400.0,
            "idle_tick_s": 600.0,
            "max_steps": 200_000,
        }

    def __init__(self, scenario: str | None = None, render_mode: str | None = None, **overrides: Any) -> None:
        super().__init__(scenario=scenario, render_mode=render_mode, **overrides)
        c = self.config
        eta = c["eta"]
        if not (isinstance(eta, (int, float)) and math.isfinite(eta) and 0 < eta <= 1):
            raise ValueError(f"eta must be in (0, 1] (power_limit = eta * G * P_max), got {eta!r}")
        check_choice("action_mode", c["action_mode"], ACTION_MODES)
        check_choice("power_constraint", c["power_constraint"], POWER_MODES)
        check_choice("placement", c["placement"], PLACEMENTS)
        check_choice("reward", c["reward"], ("jct",))
        check_choice("device", c["device"], ("v100", "a100"))
        check_choice("predictor", c["predictor"], ("fitted", "oracle"))
        check_choice("overhead", c["overhead"], ("elasticflow", "flat", "none"))
        check_choice("trace.kind", c["trace"].get("kind"), TRACE_KINDS)
        check_positive("horizon_s", c["horizon_s"])
        check_positive("idle_tick_s", c["idle_tick_s"])
        check_positive("lambda_e", c["lambda_e"], allow_zero=True)
        for key in ("nodes", "gpus_per_node", "max_slots", "max_steps"):
            if not isinstance(c[key], (int, np.integer)) or c[key] < 1:
                raise ValueError(f"{key} must be an integer >= 1, got {c[key]!r}")
        self.cluster = ClusterSpec(int(c["nodes"]), int(c["gpus_per_node"]), c["device"])
        if c["trace"]["kind"] == "file":
            path = c["trace_path"]
            if path is None:
                raise ValueError(f"scenario {c['scenario']!r} replays a real trace: pass trace_path=<file> to "
                                 f"gym.make; the file is {c['trace'].get('hint', 'a Philly-style CSV')}")
            if not Path(path).is_file():
                raise ValueError(f"trace_path={path!r} does not exist (expected {c['trace'].get('hint', 'a CSV')})")
        self.lambda_p = c["lambda_p"] if c["lambda_p"] is not None else (1.0 if c["power_constraint"] == "penalty"
                                                                           else 0.0)
        self.K = int(c["max_slots"])
        G = self.cluster.num_gpus
        self.n_cap = min(G, N_CAP)
        self.n_levels = int(self.n_cap).bit_length() + 1  # 0, 1, 2, 4, ..., n_cap
        self.hw = dl_models.hardware(c["device"])
        self.F = len(self.hw.freqs_mhz)
        K = self.K
        self.observation_space = gym.spaces.Box(-1.0, 10.0, (K * SLOT_FEATURES + GLOBAL_FEATURES,), dtype=np.float32)
        if c["action_mode"] == "alloc":
            self.action_space = gym.spaces.MultiDiscrete([self.n_levels] * K + [self.F] * K)
        elif c["action_mode"] == "micro":
            self.action_space = gym.spaces.Discrete(2 * K + 1)
        else:
            self.action_space = gym.spaces.Box(0.0, 1.0, (K + 1,), dtype=np.float32)
        self.sim: PowerFlowSim | None = None
        self._file_jobs = None
        self._masks = None

    # ------------------------------------------------------------------------------------------ episode
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

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        c = self.config
        options = options or {}
        jobs = options.get("trace")
        if jobs is None:
            jobs = self._make_jobs(int(self.np_random.integers(0, 2**31 - 1)))
        elif not isinstance(jobs, dl_jobs.DLJobs):
            jobs = dl_jobs.to_powerflow_jobs(jobs, device=c["device"], gpn=self.cluster.gpus_per_node)
        cfg = SimConfig(eta=float(c["eta"]), predictor=c["predictor"], profiling=bool(c["profiling"]),
                        overhead=c["overhead"], truth_noise=float(c["truth_noise"]), placement=c["placement"],
                        power_constraint="repair" if c["power_constraint"] == "repair" else "none",
                        horizon_s=float(c["horizon_s"]), idle_tick_s=float(c["idle_tick_s"]))
        self.sim = PowerFlowSim(jobs, self.cluster, cfg)
        self.slots = [-1] * self.K
        self.slot_of: dict[int, int] = {}
        self._static: dict[int, tuple] = {}
        self._pin: set[int] = set()
        self.steps = 0
        self.overflow_steps = 0
        self._prev = (0.0, 0.0, 0.0)
        self._micro: tuple[list[int], list[int]] | None = None
        self._repaired = False
        self._repairs = 0
        self._wakeup_s: float | None = None
        self.sim.advance()
        self._sync_slots()
        return self._obs(), self._info(0.0, 0.0)

    def _sync_slots(self) -> None:
        sim = self.sim
        ready = sim.ready_jobs()
        ready_set = set(int(j) for j in ready)
        for k, j in enumerate(self.slots):
            if j >= 0 and j not in ready_set:
                self.slots[k] = -1
                del self.slot_of[j]
        free = [k for k, j in enumerate(self.slots) if j < 0]
        for j in ready:  # submit order (job index order is submit order)
            j = int(j)
            if j in self.slot_of:
                continue
            if not free:
                break
            k = free.pop(0)
            self.slots[k] = j
            self.slot_of[j] = k
        self.overflow = len(ready_set) - len(self.slot_of)
        self._micro = None
        self._masks: tuple[np.ndarray, np.ndarray] | None = None  # slot masks of this decision point
        slotted = np.array([j for j in self.slots if j >= 0], dtype=np.int64)
        self._pin = set(slotted[sim.pinned_mask(slotted)].tolist()) if slotted.size else set()

    # ------------------------------------------------------------------------------------------ views
    def view(self):
        """The simulator's decision view (what the privileged reference policies read)."""
        return self.sim.view()

    def _job_info(self, j: int):
        sim = self.sim
        m, bs = sim.jobs.model[j], int(sim.jobs.batch_size[j])
        T, E = sim.prof.predicted_tables(m, bs, sim.n_values)
        return T, E

    def _max_n_level(self, j: int) -> int:
        cap = min(self.n_cap, int(self.sim.jobs.batch_size[j]))
        return int(cap).bit_length()  # level index: 1 -> 1, 2 -> 2, 4 -> 3, ...

    def _pinned(self, j: int) -> bool:
        return j in self._pin

    def _static_features(self, j: int) -> list[float]:
        """Per-job features that never change (cached per job for the episode)."""
        feats = self._static.get(j)
        if feats is None:
            sim = self.sim
            T, E = self._job_info(j)
            fee = int(np.argmin(T[0] * E[0]))
            fmin, fmax = self.hw.freqs_mhz[0], self.hw.freqs_mhz[-1]
            p_max = sim.p_max
            feats = [1.0 if name == sim.jobs.model[j] else 0.0 for name in dl_models.MODEL_NAMES]
            feats.append(math.log2(max(1, int(sim.jobs.batch_size[j]))) / 10.0)
            feats.append(math.log2(max(1, int(sim.jobs.n_req[j]))) / 6.0)
            scaling = []
            for nn in SCALING_NS:
                lv = nn.bit_length() - 1
                scaling.append(float(T[0, fee] / (nn * T[lv, fee])) if lv < T.shape[0] else 0.0)
            tail = [(self.hw.freqs_mhz[fee] - fmin) / (fmax - fmin), *scaling, float(E[0, fee] / T[0, fee] / p_max),
                    float(E[0, -1] / T[0, -1] / p_max), float(E[0, fee] / E[0, -1])]
            feats = self._static[j] = (feats, tail, float(T[0, -1]), fee)
        return feats

    @staticmethod
    def _level_of_n(n: int) -> int:
        return 0 if n <= 0 else int(n).bit_length()

    def _mask_parts(self) -> tuple[np.ndarray, np.ndarray]:
        if self._masks is None:
            self._masks = self._compute_mask_parts()
        return self._masks

    def _compute_mask_parts(self) -> tuple[np.ndarray, np.ndarray]:
        K, L, F = self.K, self.n_levels, self.F
        mn = np.zeros((K, L), dtype=bool)
        mf = np.zeros((K, F), dtype=bool)
        for k, j in enumerate(self.slots):
            if j < 0:
                mn[k, 0] = True
                mf[k, :] = True
                continue
            if self._pinned(j):
                mn[k, self._level_of_n(int(self.sim.n[j]))] = True
                mf[k, int(self.sim.fl[j])] = True
            else:
                mn[k, : self._max_n_level(j) + 1] = True
                mf[k, :] = True
        return mn, mf

    def action_masks(self) -> np.ndarray:
        """Flattened mask (MaskablePPO convention) of the current action space."""
        mode = self.config["action_mode"]
        if mode == "alloc":
            mn, mf = self._mask_parts()
            return np.concatenate([mn.ravel(), mf.ravel()])  # a fresh array: callers may keep or modify it
        if mode == "micro":
            return self._micro_mask()
        return np.ones(self.K + 1, dtype=bool)

    # ------------------------------------------------------------------------------------------ actions
    def request_wakeup(self, t_s: float | None) -> None:
        """Ask for a decision point at simulated time ``t_s`` (s; None: no request) after the next committed action,
        as ``simulate`` does with a policy's ``wakeup_s``. A request is used by the next :meth:`step` that applies an
        allocation (in ``micro`` mode: the commit) and then dropped; a later event may come first.

        :raises ValueError: if ``t_s`` is not a finite number (or None).
        """
        if t_s is not None and not (isinstance(t_s, (int, float, np.floating, np.integer)) and math.isfinite(t_s)):
            raise ValueError(f"wake-up time t_s must be a finite number of seconds or None, got {t_s!r}")
        self._wakeup_s = None if t_s is None else float(t_s)

    def encode_action(self, alloc: dict[int, tuple[int, int]]):
        """A reference policy's ``{job: (n, f_level)}`` as this env's action (jobs outside the slots dropped)."""
        mode = self.config["action_mode"]
        K = self.K
        if mode == "alloc":
            a = np.zeros(2 * K, dtype=np.int64)
            for k, j in enumerate(self.slots):
                if j >= 0:
                    n, f = alloc.get(j, (0, int(self.sim.fl[j])))
                    a[k] = self._level_of_n(min(n, self.n_cap))
                    a[K + k] = f
            return a
        if mode == "micro":
            n_cur, f_cur = self._micro_state()
            for k, j in enumerate(self.slots):
                if j >= 0 and not self._pinned(j) and alloc.get(j, (0, 0))[0] > n_cur[k]:
                    return k
            for k, j in enumerate(self.slots):
                if j >= 0 and not self._pinned(j) and alloc.get(j, (0, 0))[0] > 0 and alloc[j][1] > f_cur[k]:
                    return K + k
            return 2 * K
        a = np.zeros(K + 1, dtype=np.float32)
        for k, j in enumerate(self.slots):
            if j >= 0 and alloc.get(j, (0, 0))[0] > 0:
                a[k] = 0.5 + 0.5 * min(1.0, math.log2(alloc[j][0] + 1) / 7.0)
        a[K] = 1.0
        return a

    def _decode_alloc(self, action) -> dict[int, tuple[int, int]]:
        K = self.K
        arr = np.asarray(action)
        if arr.shape != (2 * K,) or not np.issubdtype(arr.dtype, np.number) or not np.all(np.isfinite(arr)):
            raise ValueError(f"action must be an integer array of shape ({2 * K},) (n-levels then f-levels), "
                             f"got {arr.shape} {arr.dtype}")
        if np.any(arr != np.round(arr)) or np.any(arr < 0) or np.any(arr[:K] >= self.n_levels) or \
                np.any(arr[K:] >= self.F):
            raise ValueError(f"action out of bounds: n-levels must be in [0, {self.n_levels}), f-levels in "
                             f"[0, {self.F}); got {arr.tolist()}")
        arr = arr.astype(np.int64)
        mn, mf = self._mask_parts()
        repaired = False
        want: dict[int, list[int]] = {}
        for k, j in enumerate(self.slots):
            ln, lf = int(arr[k]), int(arr[K + k])
            if not mn[k, ln]:
                repaired = True
                ln = int(np.flatnonzero(mn[k])[-1]) if ln > 0 else int(np.flatnonzero(mn[k])[0])
                ln = min(ln, int(np.flatnonzero(mn[k])[-1]))
            if not mf[k, lf]:
                repaired = True
                lf = int(np.flatnonzero(mf[k])[0])
            if j >= 0 and ln > 0:
                want[j] = [1 << (ln - 1), lf]
        G = self.cluster.num_gpus
        pinned = {j for j in want if self._pinned(j)}
        while sum(v[0] for v in want.values()) > G:
            repaired = True
            cand = [j for j in want if j not in pinned]
            j = max(cand, key=lambda j: (want[j][0], self.sim._arrive[j], j))
            if want[j][0] == 1:
                del want[j]
            else:
                want[j][0] //= 2
        self._repaired = repaired
        return {j: (v[0], v[1]) for j, v in want.items()}

    def _micro_state(self) -> tuple[list[int], list[int]]:
        if self._micro is None:
            n, f = [0] * self.K, [0] * self.K
            for k, j in enumerate(self.slots):
                if j < 0:
                    continue
                if self._pinned(j):
                    n[k], f[k] = int(self.sim.n[j]), int(self.sim.fl[j])
                else:
                    T, E = self._job_info(j)
                    f[k] = int(np.argmin(T[0] * E[0]))
            self._micro = (n, f)
        return self._micro

    def _micro_mask(self) -> np.ndarray:
        n, f = self._micro_state()
        K = self.K
        m = np.zeros(2 * K + 1, dtype=bool)
        used = sum(n)
        G = self.cluster.num_gpus
        for k, j in enumerate(self.slots):
            if j < 0 or self._pinned(j):
                continue
            nxt = 1 if n[k] == 0 else 2 * n[k]
            cap = min(self.n_cap, int(self.sim.jobs.batch_size[j]))
            m[k] = nxt <= cap and used + nxt - n[k] <= G
            m[K + k] = n[k] > 0 and f[k] < self.F - 1
        m[2 * K] = True
        return m

    def _priority_alloc(self, action) -> dict[int, tuple[int, int]]:
        a = validated_box_action(action, self.action_space)
        K = self.K
        u = float(a[K])
        limit = u * self.sim.power_limit
        sim = self.sim
        G = self.cluster.num_gpus - sum(int(sim.n[j]) for j in self.slots if j >= 0 and self._pinned(j))
        power = float(sim.planned_power([j for j in self.slots if j >= 0 and self._pinned(j)]).sum())
        order = sorted((k for k, j in enumerate(self.slots) if j >= 0 and not self._pinned(j)),
                       key=lambda k: (-a[k], k))
        n: dict[int, int] = {}
        f: dict[int, int] = {}
        pw: dict[int, float] = {}

        def p_of(j: int, nn: int, ff: int) -> float:
            T, E = self._job_info(j)
            lv = nn.bit_length() - 1
            return float(E[lv, ff] / T[lv, ff])

        for k in order:
            j = self.slots[k]
            T, E = self._job_info(j)
            ff = int(np.argmin(T[0] * E[0]))
            p = p_of(j, 1, ff)
            if G >= 1 and power + p <= limit:
                n[j], f[j], pw[j] = 1, ff, p
                G -= 1
                power += p
        grew = True
        while grew:
            grew = False
            for k in order:
                j = self.slots[k]
                if j not in n or 2 * n[j] > min(self.n_cap, int(sim.jobs.batch_size[j])) or n[j] > G:
                    continue
                p = p_of(j, 2 * n[j], f[j])
                if power + p - pw[j] <= limit:
                    G -= n[j]
                    power += p - pw[j]
                    n[j] *= 2
                    pw[j] = p
                    grew = True
        for k in order:
            j = self.slots[k]
            while j in n and f[j] < self.F - 1:
                p = p_of(j, n[j], f[j] + 1)
                if power + p - pw[j] > limit:
                    break
                power += p - pw[j]
                f[j] += 1
                pw[j] = p
        self._repaired = False
        return {j: (n[j], f[j]) for j in n}

    # ------------------------------------------------------------------------------------------ step
    def step(self, action):
        if self.sim is None:
            raise RuntimeError("call reset() before step()")
        mode = self.config["action_mode"]
        if mode == "micro":
            a = validated_discrete_action(action, self.action_space)
            mask = self._micro_mask()
            n, f = self._micro_state()
            K = self.K
            if a < 2 * K:
                if not mask[a]:
                    self._repaired = True  # masked-out micro action: a no-op, flagged
                elif a < K:
                    n[a] = 1 if n[a] == 0 else 2 * n[a]
                else:
                    f[a - K] += 1
                self.steps += 1
                truncated = self.steps >= self.config["max_steps"]
                return self._obs(), 0.0, False, truncated, self._info(0.0, 0.0)
            alloc = {self.slots[k]: (n[k], f[k]) for k in range(K) if self.slots[k] >= 0 and n[k] > 0}
            self._repaired = False
        elif mode == "alloc":
            alloc = self._decode_alloc(action)
        else:
            alloc = self._priority_alloc(action)
        sim = self.sim
        sim.repaired = False
        sim.apply(alloc, self._wakeup_s)
        self._wakeup_s = None
        repaired = self._repaired or bool(getattr(sim, "repaired", False))
        self._repairs += int(repaired)
        more = sim.advance()
        self._sync_slots()
        self.steps += 1
        if self.overflow > 0:
            self.overflow_steps += 1
        jct, viol, energy = sim.jct_integral, sim.violation_ws, sum(sim.energy.values())
        d_jct, d_viol, d_e = jct - self._prev[0], viol - self._prev[1], energy - self._prev[2]
        self._prev = (jct, viol, energy)
        N = len(sim.jobs)
        G = self.cluster.num_gpus
        r_jct = -d_jct / (3600.0 * N)
        reward = r_jct - self.lambda_p * d_viol / (3600.0 * sim.power_limit) \
            - self.config["lambda_e"] * d_e / (3600.0 * G * sim.p_max)
        terminated = sim.finished
        truncated = (not more and not terminated) or (self.steps >= self.config["max_steps"] and not terminated)
        info = self._info(r_jct, d_e)
        info["repaired"] = repaired
        return self._obs(), float(reward), bool(terminated), bool(truncated), info

    # ------------------------------------------------------------------------------------------ obs/info
    def _obs(self) -> np.ndarray:
        sim = self.sim
        K = self.K
        obs = np.zeros(K * SLOT_FEATURES + GLOBAL_FEATURES, dtype=np.float32)
        fmin, fmax = self.hw.freqs_mhz[0], self.hw.freqs_mhz[-1]
        iters = sim.jobs.iterations
        for k, j in enumerate(self.slots):
            if j < 0:
                continue
            o = k * SLOT_FEATURES
            head, tail, t_fmax, _ = self._static_features(j)
            rem = float(iters[j] - sim.done_it[j])
            n = int(sim.n[j])
            row = [1.0, *head, rem / float(iters[j]), math.log1p(rem * t_fmax / 3600.0),
                   math.log1p(max(0.0, sim.now - sim._arrive[j]) / 3600.0),
                   0.0, 1.0 if j in self._pin else 0.0, 1.0 if n > 0 else 0.0, math.log2(n + 1) / 7.0,
                   (self.hw.freqs_mhz[int(sim.fl[j])] - fmin) / (fmax - fmin), *tail]
            obs[o:o + SLOT_FEATURES] = row
        G = self.cluster.num_gpus
        alloc = float(sim.n[sim.running].sum()) if sim.running.size else 0.0
        elapsed = max(sim.now, 1e-9)
        energy = sum(sim.energy.values())
        day = 2 * math.pi * (sim.now % 86400.0) / 86400.0
        ev = [0.0, 0.0, 0.0]
        ev[sim.last_event] = 1.0
        g = [(G - alloc) / G, alloc / G, min(sim._cluster_power / sim.power_limit, 10.0), float(self.config["eta"]),
             sum(1 for j in self.slots if j >= 0) / K, math.log1p(self.overflow), min(sim.now / sim.cfg.horizon_s, 1.0),
             math.sin(day), math.cos(day), min(energy / (sim.power_limit * elapsed), 10.0) if sim.now > 0 else 0.0,
             sim._powered_nodes / self.cluster.nodes, *ev]
        obs[K * SLOT_FEATURES:] = g
        return np.clip(obs, -1.0, 10.0)

    def _info(self, r_jct: float, d_e: float) -> dict[str, Any]:
        info: dict[str, Any] = {
            "metrics": self.sim.metrics(),
            "reward_vector": np.array([r_jct, -d_e / 3.6e6], dtype=np.float64),
            "repaired": False,
            "overflow": int(self.overflow),
            "overflow_steps": int(self.overflow_steps),
            "event": ("arrival", "completion", "profiling")[self.sim.last_event],
        }
        if self.config["action_mode"] != "priority":
            info["action_mask"] = self.action_masks()
        return info

    # ------------------------------------------------------------------------------------------ render
    def _render_ansi(self) -> str:
        sim = self.sim
        m = sim.metrics()
        lines = [f"t={sim.now / 3600:.2f} h  done {int(m['jobs_done'])}/{int(m['jobs_total'])}  "
                 f"power {m['cluster_power_w']:.0f}/{sim.power_limit:.0f} W  GPUs {int(m['allocated_gpus'])}/"
                 f"{self.cluster.num_gpus}  overflow {self.overflow}",
                 "slot  job  model        BS   n  f(MHz)  progress  state"]
        for k, j in enumerate(self.slots):
            if j < 0:
                continue
            state = "profiling" if self._pinned(j) else ("running" if sim.n[j] > 0 else "waiting")
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
        axes[1, 0].step(t, np.array(self.sim._power_log) / 1000.0, where="post")
        axes[1, 0].axhline(self.sim.power_limit / 1000.0, color="r", ls="--", label="budget")
        axes[1, 0].set_ylabel("cluster power (kW)")
        axes[1, 0].set_xlabel("time (h)")
        axes[1, 0].legend(loc="upper right")
        fig.tight_layout()
        return fig


_ = EV_ARRIVAL  # re-exported event code (observation one-hot order)
