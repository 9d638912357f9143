"""Qin reference policies (Guan & Ababei, IEEE T-SUSC 2024, §5-§7; ``docs/families/qin.md`` §5.1): Qin and the
schedulers it is compared with, as inner policies (:mod:`joulegym.core.inner`) over the pure functions of
:mod:`joulegym.envs.qin.scheduling`, registered in the one registry (``register_policy(..., inner=True)``).

Cluster level (``QinCluster-v0``, ``Qin-v0``): deciding inner policies, ``decide(view) -> (server, V/F level or
None)`` on the simulator's read-only :class:`~joulegym.envs.qin.view.QinView` (the job's CF-predicted scores, the
servers' predicted interference state, load and pods). ``make(name)`` drives an env with one (the core's
:class:`~joulegym.core.policy.InnerPolicyAdapter`); :func:`joulegym.core.inner.run_inner` runs one on the simulator
alone with the same metrics (``tests/qin/test_policies.py``).

- ``qin`` (Alg. 1 + 3, §5.2): D-choices greedy over predicted interference (eq. 16) and heterogeneity (perf
  focus), energy (energy focus, PL 0.5) or E x T (EDP focus, PL 0.1); ``d = max(2, ceil(ln N))``, P = 50 %.
  ``focus=None`` follows the env's objective (makespan / flowtime: perf). ``qin-energy`` and ``qin-edp`` fix the
  focus and use ``action_mode="server_vf"`` so that the chosen initial V/F level is applied (§3.5, A8).
- ``qin-d1``: the same with d = 1 (pure greedy; the Fig. 10b ablation); ``d=`` sets any d.
- ``qin-dac``: Qin with dynamic admission control (``admission="dac_H_desc"``, Fig. 12a; ``key="E_asc"`` for 12b).
- ``kubernetes``: v1.14 LeastRequested + BalancedAllocation over BestEffort pods, 5 ms scheduling latency (A27).
- ``paragon``: interference-feasible servers, then the best predicted heterogeneity score (greedy, d = 1).
- ``mage``: argmax of predicted performance under co-location (greedy, d = 1).
- ``round-robin`` and ``drain-time`` (the server whose assigned jobs drain first at the rate its threads run now,
  every job counted as one of the same size): the simple deployable rules a practitioner tries first, not in the
  paper; ``random`` is the generic one.
- ``least-loaded`` (min L_i, qin.md §5.1) and ``drain-time-sized`` (min L_i / rate_i, the env's repair rule): L_i
  is built on each job's size estimate alpha_hat, which under the env's default ``size_estimate="app-mean"`` is its
  app's mean size (what a deployed scheduler knows from the app's history): deployable baselines.
  ``least-loaded-profiled`` and ``drain-time-profiled`` are the same rules run with ``size_estimate="profiled"``,
  each job's estimate within 5 % of its true instruction count (docs §2.1), i.e. its duration, which a deployed
  scheduler does not know (Qin's Alg. 1 + 3 never read alpha_m): **privileged** upper references.

The others are not privileged: they read the job's CF-predicted scores, the servers' predicted interference
state, pods, threads and measured rates. Qin's load tie-break and its ``least-loaded-of-d`` pick read the same
size-blind load as ``drain-time`` (assigned jobs over the measured rate, :attr:`QinView.jobs_drain_s`).

Node level (``QinNode-v0``; also the cluster envs' ``node_policy`` key): the node-level inner policies of
:mod:`joulegym.envs.qin.node_policies`, ``qin-node`` (Alg. 2 + 4 with the Kalman + DVFS controller of §3.6;
``focus`` energy by default, PL 0.5; EDP PL 0.1; perf PL 0), ``sniper-pinned`` (Sniper's default: round-robin
first-free core, no DVFS) and ``linux`` (least-loaded core at f_max).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from joulegym.core.policy import register_policy
from joulegym.envs.qin import scheduling
from joulegym.envs.qin.cluster_env import KUBERNETES_LATENCY_S
from joulegym.envs.qin.node_policies import LinuxNodePolicy, QinNodePolicy, SniperPinnedPolicy

CLUSTER_KINDS = ("QinCluster", "Qin")
NODE_KINDS = ("QinNode",)


class ClusterPolicy:
    """Shared plumbing of the cluster-level inner policies: the random stream and the decision count."""

    name = "qin-cluster"
    privileged = False
    env_config: ClassVar[dict[str, Any]] = {}

    def reset(self, sim: Any, rng: np.random.Generator) -> None:
        self._rng = rng
        self._count = 0

    def decide(self, view: Any) -> tuple[int, int | None]:
        decision = self._decide(view)
        self._count += 1
        return decision

    def _decide(self, view: Any) -> tuple[int, int | None]:  # pragma: no cover - abstract
        raise NotImplementedError


class QinPolicy(ClusterPolicy):
    """Qin's cluster level (Alg. 1 + 3; §3.5): D-choices greedy with the focus's goal score."""

    def __init__(self, focus: str | None = None, d: int | None = None, p_frac: float = 0.5, name: str = "qin",
                 action_mode: str | None = None, admission: str | None = None) -> None:
        if focus is not None and focus not in scheduling.FOCUSES:
            raise ValueError(f"focus={focus!r} is not one of {scheduling.FOCUSES} (or None: the env's objective)")
        if d is not None and (isinstance(d, bool) or int(d) != d or d < 1):
            raise ValueError(f"d must be None (max(2, ceil(ln N))) or an integer >= 1, got {d!r}")
        if not 0.0 < p_frac <= 1.0:
            raise ValueError(f"p_frac must be in (0, 1], got {p_frac!r}")
        self.focus, self.d, self.p_frac, self.name = focus, d, p_frac, name
        config: dict[str, Any] = {}
        if action_mode is not None:
            config["action_mode"] = action_mode
        if admission is not None:
            config["admission"] = admission
        self.env_config = config

    def _decide(self, view: Any) -> tuple[int, int | None]:
        p = view.prediction()
        # the load (tie-break and the least-loaded-of-d pick) is the size-blind one a deployed scheduler has
        return scheduling.qin_cluster_choose(p.tolerated, p.caused, p.mips, p.energy_j, p.runtime_s, view.t_server,
                                             view.c_server, view.jobs_drain_s, self._rng,
                                             focus=self.focus or view.focus,
                                             d=self.d, p_frac=self.p_frac, mode=view.interference_mode,
                                             rule=view.dchoice_rule)


class KubernetesPolicy(ClusterPolicy):
    """Kubernetes v1.14 default scheduler (§5.1): LeastRequested + BalancedAllocation, random ties, f_max."""

    name = "kubernetes"
    # A27: Kubernetes responds in milliseconds (no profiling)
    env_config: ClassVar[dict[str, Any]] = {"profile_latency_s": 0.0, "decision_latency_s": KUBERNETES_LATENCY_S}

    def _decide(self, view: Any) -> tuple[int, int | None]:
        return scheduling.kubernetes_choose(view.jobs_on, view.cores, view.mem_gb, self._rng), None


class ParagonPolicy(ClusterPolicy):
    """Paragon (§5.1, A21): interference-feasible servers, then the best predicted H (greedy d = 1, f_max)."""

    name = "paragon"

    def _decide(self, view: Any) -> tuple[int, int | None]:
        p = view.prediction()
        return scheduling.paragon_choose(p.tolerated, p.caused, p.mips, view.t_server, view.c_server), None


class MagePolicy(ClusterPolicy):
    """Mage (§5.1, A21): argmax of predicted performance under co-location (greedy d = 1, f_max)."""

    name = "mage"

    def _decide(self, view: Any) -> tuple[int, int | None]:
        p = view.prediction()
        return scheduling.mage_choose(p.tolerated, p.mips, view.c_server, view.cores, view.runnable_threads,
                                      view.pending_threads), None


class RoundRobinPolicy(ClusterPolicy):
    """Servers in turn, 0, 1, ..., N-1, 0, ... (a sanity baseline)."""

    name = "round-robin"

    def _decide(self, view: Any) -> tuple[int, int | None]:
        return self._count % view.n_servers, None


class SizedPolicy(ClusterPolicy):
    """A rule on L_i, the jobs' size estimates less their retired instructions. Deployable under the env's default
    ``size_estimate="app-mean"`` (each app's mean size); ``profiled=True`` runs it with ``size_estimate="profiled"``
    (per-job sizes within 5 % of the truth, a job's duration): privileged, named ``profiled_name``."""

    profiled_name: str  # the privileged variant's registered name (each subclass sets its own)

    def __init__(self, profiled: bool = False) -> None:
        self.privileged = bool(profiled)
        if profiled:
            self.name = self.profiled_name
            self.env_config = {"size_estimate": "profiled"}


class LeastLoadedPolicy(SizedPolicy):
    """The server with the least assigned unfinished work L_i (qin.md §5.1; ties: the lowest index). Not in the
    paper."""

    name = "least-loaded"
    profiled_name = "least-loaded-profiled"

    def _decide(self, view: Any) -> tuple[int, int | None]:
        return int(np.argmin(view.load_instr)), None


class DrainTimePolicy(ClusterPolicy):
    """The server whose assigned unfinished jobs drain soonest at the rate its threads run now, every job counted
    as one of the same size: ``jobs_i / rate_i`` (an idle server drains at once; ties: the lowest index). Not in the
    paper: the deployable one-line greedy a learned agent must beat. It reads pods and measured rates only."""

    name = "drain-time"

    def _decide(self, view: Any) -> tuple[int, int | None]:
        return int(np.argmin(view.jobs_drain_s)), None


class SizedDrainTimePolicy(SizedPolicy):
    """``L_i / rate_i``: the drain time of each server's known work (the env's repair rule,
    ``QinClusterEnv.repair_server``). Not in the paper."""

    name = "drain-time-sized"
    profiled_name = "drain-time-profiled"

    def _decide(self, view: Any) -> tuple[int, int | None]:
        return int(np.argmin(view.drain_s)), None


def _cluster(name: str, factory: Any, description: str) -> None:
    register_policy(name, factory, family="qin", kinds=CLUSTER_KINDS, description=description, inner=True)


def _node(name: str, factory: Any, description: str) -> None:
    register_policy(name, factory, family="qin", kinds=NODE_KINDS, description=description, inner=True)


def _register() -> None:
    _cluster("qin", QinPolicy, "Qin (Alg. 1 + 3): D-choices greedy, d = max(2, ceil(ln N)), focus from the objective")
    _cluster("qin-perf", lambda **kw: QinPolicy(focus="perf", name="qin-perf", **kw),
             "Qin, performance focus (Table 4 Perf)")
    _cluster("qin-energy", lambda **kw: QinPolicy(**{"focus": "energy", "name": "qin-energy",
                                                     "action_mode": "server_vf", **kw}),
             "Qin, energy focus (PL 0.5), initial V/F applied (Table 4 Energy)")
    _cluster("qin-edp", lambda **kw: QinPolicy(**{"focus": "edp", "name": "qin-edp", "action_mode": "server_vf",
                                                  **kw}),
             "Qin, EDP focus (PL 0.1), initial V/F applied (Table 4 EDP)")
    _cluster("qin-d1", lambda **kw: QinPolicy(**{"d": 1, "name": "qin-d1", **kw}),
             "Qin with d = 1 (pure greedy; Fig. 10b ablation)")
    _cluster("qin-dac", lambda key="H_desc", **kw: QinPolicy(**{"name": "qin-dac", "admission": f"dac_{key}", **kw}),
             "Qin + dynamic admission control (descending H, Fig. 12a; key='E_asc': 12b)")
    _cluster("kubernetes", KubernetesPolicy, "Kubernetes v1.14 LeastRequested + BalancedAllocation")
    _cluster("paragon", ParagonPolicy, "Paragon: interference-feasible, best heterogeneity (greedy)")
    _cluster("mage", MagePolicy, "Mage: best predicted performance under co-location (greedy)")
    _cluster("round-robin", RoundRobinPolicy, "servers in turn")
    _cluster("least-loaded", LeastLoadedPolicy,
             "least assigned unfinished work from the jobs' size estimates, app means by default (not in the paper)")
    _cluster("drain-time", DrainTimePolicy,
             "shortest drain time of the assigned jobs at the measured rate, sizes unknown (not in the paper)")
    _cluster("drain-time-sized", SizedDrainTimePolicy,
             "shortest drain time of the estimated work, load / current rate, the env's repair rule (not in the paper)")
    _cluster("least-loaded-profiled", lambda **kw: LeastLoadedPolicy(profiled=True, **kw),
             "least-loaded on per-job sizes within 5 % of the truth (privileged)")
    _cluster("drain-time-profiled", lambda **kw: SizedDrainTimePolicy(profiled=True, **kw),
             "drain-time-sized on per-job sizes within 5 % of the truth (privileged)")
    _node("qin-node", lambda focus="energy", remap="period", **kw: QinNodePolicy(focus=focus, remap=remap, **kw),
          "Qin's node level (Alg. 2 + 4, Kalman + DVFS), energy focus PL 0.5")
    _node("sniper-pinned", SniperPinnedPolicy, "Sniper's default pinned scheduler at f_max")
    _node("linux", LinuxNodePolicy, "Linux-like: least-loaded core, f_max")


_register()
