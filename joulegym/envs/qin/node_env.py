"""The Qin node-level env ``QinNode-v0`` (Guan & Ababei, IEEE T-SUSC 2024, Alg. 2 + 4, §7.2; ``docs/families/qin.md``
§7.2): thread-to-core mapping and per-core V/F levels on one server, one control period per step.

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
(C_max, 8), ``core_types``, ``power_model``. The reference node policies (``qin-node``, ``sniper-pinned``,
``linux``) drive it as agents: their decision reaches the simulator only through the action.

Version history: v0 (first release).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from joulegym.core.actions import ActionType, validated_multidiscrete_action
from joulegym.core.config import check_choice, check_int, check_number, check_positive
from joulegym.core.env import JoulegymEnv, row_names
from joulegym.core.plotting import new_figure
from joulegym.core.rewards import RewardPart
from joulegym.envs.qin.cluster_env import CORE_TYPES, OBS_HIGH, POWER_MODELS
from joulegym.envs.qin.dynamics import NodeDecision

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

    def decode(self, action: Any) -> NodeDecision:
        """The action as the simulator's :class:`NodeDecision`: a masked target (a dead or absent thread, an
        absent core) means "keep"; an absent core's level is 0 (ignored)."""
        a = validated_multidiscrete_action(action, self.space)
        mask = self.env.action_mask_now
        K, C, L = self.K, self.C, self.L
        cores = a[:K].copy()
        levels = a[K:].copy()
        bad_core = ~mask[: K * (C + 1)].reshape(K, C + 1)[np.arange(K), cores]
        bad_level = ~mask[K * (C + 1):].reshape(C, L)[np.arange(C), levels]
        cores[bad_core] = C
        levels[bad_level] = 0
        self.repaired = bool(bad_core.any() or bad_level.any())
        sim = self.env.sim
        alive = sim.alive_threads()
        target = cores[alive]
        thread_core = np.where(target >= C, -1, target + sim.first_core[0])
        n = self.env.num_cores
        return NodeDecision(alive, thread_core, slice(0, n), levels[:n].astype(np.intp))

    def encode(self, decision: NodeDecision) -> np.ndarray:
        """A :class:`NodeDecision` of the env's server as the action: moved threads get their target core, the
        others "keep" (``C``); cores get the decision's level, or keep their current one."""
        sim = self.env.sim
        cores = np.full(self.K, self.C, dtype=np.int64)
        n = self.env.num_cores
        levels = np.zeros(self.C, dtype=np.int64)
        levels[:n] = sim.core_level[:n]
        if decision.threads is not None and decision.cores is not None:
            target = np.asarray(decision.cores, dtype=np.intp)
            moved = (target >= 0) & (target != sim.thread_core[decision.threads])
            cores[decision.threads[moved]] = target[moved] - sim.first_core[0]
        if decision.levels is not None:
            index = np.arange(sim.n_cores)[decision.level_cores]
            new = np.asarray(decision.levels, dtype=np.int64)
            levels[index] = np.where(new >= 0, new, levels[index])
        return np.concatenate([cores, levels])




# why the parts stay unbounded per step (docs/tradeoffs.md, "Reward spaces")
UNBOUNDED = "; unbounded: scaled by the episode's own T0 and E_ref, no config bound derived"


class QinNodeEnv(JoulegymEnv):
    """Thread-to-core mapping and per-core V/F on one server, one control period per step (module docstring;
    docs §7.2)."""

    family = "qin"
    action_types: ClassVar[dict[str, type[ActionType]]] = {"node": NodeAction}
    reward_parts = (
        RewardPart("energy", -math.inf, 0.0,
                   "-E_dt / E_ref - kappa max(0, pl - PL) dt / T0" + UNBOUNDED),
        RewardPart("perf", -math.inf, 0.0,
                   "-(alive threads) dt / (K T0): -mean thread completion time / T0" + UNBOUNDED),
        RewardPart("edp", -math.inf, math.inf,
                   "-d((E + projected E) (now + drain)) / (E_ref T0): -E x T" + UNBOUNDED),
    )
    reward_presets: ClassVar[dict[str, dict[str, float]]] = {name: {name: 1.0} for name in NODE_OBJECTIVES}
    option_keys = ()
    lean_info_keys: ClassVar[tuple[str, ...]] = ("alive_threads", "pl")
    full_info_keys: ClassVar[tuple[str, ...]] = ("core_level", "core_pl")

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
        from joulegym.envs.qin.model import QinSimConfig
        from joulegym.envs.qin.node_policies import AgentNodeLevel
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
        self.num_cores = int(self.server_type.physical_cores)  # the simulator's cores are physical (A22)
        if self.num_cores > self.C:
            raise ValueError(f"max_cores must be >= the server's cores ({self.num_cores}), got {self.C}")
        self.L = int(self.server_type.n_levels)
        self.sim_config = QinSimConfig(node_policy=AgentNodeLevel(), control_period_s=self.dt, profile_latency_s=0.0,
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
        from joulegym.devices import cpu
        from joulegym.envs.qin.predictors import ScalarKalmanFilter
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
        sim.reset(np.random.default_rng(int(self.np_random.integers(0, 2**31 - 1))), jobs)
        # every app arrives at t = 0 on the one server: place them (no scheduler latency at node level)
        while sim.advance() and sim.decision_kind == "place":
            sim.apply((0, None))
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

    def _transition(self, decision: NodeDecision) -> tuple[float, float, float]:
        sim = self.sim
        if sim.decision_kind == "node":
            sim.apply(decision)
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
        return np.clip(obs, 0.0, OBS_HIGH, out=obs)

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
