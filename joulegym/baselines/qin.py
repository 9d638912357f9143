"""Qin reference policies (Guan & Ababei, IEEE T-SUSC 2024, §5-§7; ``docs/families/qin.md`` §5.1, §7.6): Qin and
the schedulers it is compared with, as core policies over the pure functions of
:mod:`joulegym.envs.qin.scheduling` and the node policies of :mod:`joulegym.envs.qin.node_policies`.

Cluster level (``QinCluster-v0``, ``Qin-v0``; privileged: they read the env's predicted scores of the job to place,
``env.unwrapped.pending_prediction()``, the same CF predictions the observation holds, and the simulator's
per-server state, and act through ``env.unwrapped.action_type.encode((server, level))``):

- ``qin`` (Alg. 1 + 3, §5.2): D-choices greedy over predicted interference (eq. 16) and heterogeneity (perf
  focus), energy (energy focus, PL 0.5) or E x T (EDP focus, PL 0.1); ``d = max(2, ceil(ln N))``, P = 50 %.
  ``focus=None`` follows the env's objective (makespan / flowtime: perf). ``qin-energy`` and ``qin-edp`` fix the
  focus and use ``action_mode="server_vf"`` so that the chosen initial V/F level is applied (§3.5, A8).
- ``qin-d1``: the same with d = 1 (pure greedy; the Fig. 10b ablation); ``d=`` sets any d.
- ``qin-dac``: Qin with dynamic admission control (``admission="dac_H_desc"``, Fig. 12a; ``key="E_asc"`` for 12b).
- ``kubernetes``: v1.14 LeastRequested + BalancedAllocation over BestEffort pods, 5 ms scheduling latency (A27).
- ``paragon``: interference-feasible servers, then the best predicted heterogeneity score (greedy, d = 1).
- ``mage``: argmax of predicted performance under co-location (greedy, d = 1).
- ``round-robin``, ``least-loaded`` (min L_i): sanity baselines; ``random`` is the generic one.

Node level (``QinNode-v0``): ``qin-node`` (Alg. 2 + 4 with the Kalman + DVFS controller of §3.6; ``focus``
energy by default, PL 0.5; EDP PL 0.1; perf PL 0), ``sniper-pinned`` (Sniper's default: round-robin first-free
core, no DVFS) and ``linux`` (least-loaded core at f_max). The same node policies run inside the servers of the
cluster envs through the ``node_policy`` config key.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from joulegym.core.policy import PolicyNotApplicable, register_policy
from joulegym.envs.qin import scheduling
from joulegym.envs.qin.env import KUBERNETES_LATENCY_S

CLUSTER_KINDS = ("QinCluster", "Qin")
NODE_KINDS = ("QinNode",)
FOCUS_OF_OBJECTIVE = {"makespan": "perf", "flowtime": "perf", "energy": "energy", "edp": "edp"}


class _ClusterPolicy:
    """Shared plumbing: bind to a Qin cluster env, decide ``(server, level)`` per placement, encode it."""

    privileged = True
    name = "qin-cluster-base"
    env_config: ClassVar[dict[str, Any]] = {}

    def __init__(self) -> None:
        self._env = None
        self._rng = np.random.default_rng(0)

    def reset(self, env, seed: int | None = None) -> None:
        base = env.unwrapped
        if getattr(base, "family", None) != "qin" or not hasattr(base, "pending_prediction"):
            raise PolicyNotApplicable(f"{self.name} drives the Qin cluster envs (QinCluster, Qin) only, "
                                      f"not {type(base).__name__}")
        self._env = base
        # a stream of its own (not the env's), so that a policy's draws never change the workload
        self._rng = np.random.default_rng(None if seed is None else [seed, 0x51])
        self._count = 0

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        base = self._env
        if base is None:
            raise RuntimeError(f"{self.name}.act() called before reset(env)")
        if base.pending_job < 0:  # nothing to place (cannot happen inside an episode); any valid action
            return base.action_type.encode((0, None))
        server, level = self._decide(base, base.sim, base.pending_prediction())
        self._count += 1
        return base.action_type.encode((int(server), None if level is None else int(level)))

    def _decide(self, env, sim, pred) -> tuple[int, int | None]:  # pragma: no cover - abstract
        raise NotImplementedError


class QinPolicy(_ClusterPolicy):
    """Qin's cluster level (Alg. 1 + 3; §3.5): D-choices greedy with the focus's goal score."""

    def __init__(self, focus: str | None = None, d: int | None = None, p_frac: float = 0.5,
                 interference_mode: str = "literal_abs", name: str = "qin", action_mode: str | None = None,
                 admission: str | None = None) -> None:
        super().__init__()
        if focus is not None and focus not in scheduling.FOCUSES:
            raise ValueError(f"focus={focus!r} is not one of {scheduling.FOCUSES} (or None: the env's objective)")
        if d is not None and (isinstance(d, bool) or int(d) != d or d < 1):
            raise ValueError(f"d must be None (max(2, ceil(ln N))) or an integer >= 1, got {d!r}")
        if not 0.0 < p_frac <= 1.0:
            raise ValueError(f"p_frac must be in (0, 1], got {p_frac!r}")
        if interference_mode not in scheduling.INTERFERENCE_MODES:
            raise ValueError(f"interference_mode={interference_mode!r} is not one of {scheduling.INTERFERENCE_MODES}")
        self.focus, self.d, self.p_frac, self.mode, self.name = focus, d, p_frac, interference_mode, name
        config: dict[str, Any] = {}
        if action_mode is not None:
            config["action_mode"] = action_mode
        if admission is not None:
            config["admission"] = admission
        self.env_config = config

    def _decide(self, env, sim, pred) -> tuple[int, int | None]:
        focus = self.focus or FOCUS_OF_OBJECTIVE[env.objective]
        return scheduling.qin_cluster_choose(pred.tolerated, pred.caused, pred.mips, pred.energy_j, pred.runtime_s,
                                             sim.t_server, sim.c_server, sim.load_instr, self._rng, focus=focus,
                                             d=self.d, p_frac=self.p_frac, mode=self.mode)


class KubernetesPolicy(_ClusterPolicy):
    """Kubernetes v1.14 default scheduler (§5.1): LeastRequested + BalancedAllocation, random ties, f_max."""

    name = "kubernetes"
    # A27: Kubernetes responds in milliseconds (no profiling)
    env_config: ClassVar[dict[str, Any]] = {"scheduler_latency_s": KUBERNETES_LATENCY_S}

    def _decide(self, env, sim, pred) -> tuple[int, int | None]:
        return scheduling.kubernetes_choose(sim.jobs_on, env.server_cores, env.server_mem_gb, self._rng), None


class ParagonPolicy(_ClusterPolicy):
    """Paragon (§5.1, A21): interference-feasible servers, then the best predicted H (greedy d = 1, f_max)."""

    name = "paragon"

    def _decide(self, env, sim, pred) -> tuple[int, int | None]:
        return scheduling.paragon_choose(pred.tolerated, pred.caused, pred.mips, sim.t_server, sim.c_server), None


class MagePolicy(_ClusterPolicy):
    """Mage (§5.1, A21): argmax of predicted performance under co-location (greedy d = 1, f_max)."""

    name = "mage"

    def _decide(self, env, sim, pred) -> tuple[int, int | None]:
        job = env.pending_job
        return scheduling.mage_choose(pred.tolerated, pred.mips, sim.c_server, env.server_cores, sim.runnable_threads,
                                      int(env.jobs.threads[job])), None


class RoundRobinPolicy(_ClusterPolicy):
    """Servers in turn, 0, 1, ..., N-1, 0, ... (a sanity baseline)."""

    name = "round-robin"

    def _decide(self, env, sim, pred) -> tuple[int, int | None]:
        return self._count % env.N, None


class LeastLoadedPolicy(_ClusterPolicy):
    """The server with the least assigned unfinished work L_i (ties: the lowest index; a sanity baseline)."""

    name = "least-loaded"

    def _decide(self, env, sim, pred) -> tuple[int, int | None]:
        return int(np.argmin(sim.load_instr)), None


# --- node level ----------------------------------------------------------------------------------------------------
class NodePolicyAdapter:
    """A node policy of :mod:`joulegym.envs.qin.node_policies` as a ``QinNode-v0`` policy: each control period it
    decides the thread-to-core map and the per-core V/F levels on the env's simulator and returns them as the
    env's action."""

    privileged = True

    def __init__(self, node_policy: str, name: str, **kwargs: Any) -> None:
        self.node_policy, self.name, self.kwargs = node_policy, name, kwargs
        self._env = None
        self._policy = None

    def reset(self, env, seed: int | None = None) -> None:
        from joulegym.envs.qin.node_policies import make_node_policy

        base = env.unwrapped
        if getattr(base, "family", None) != "qin" or not hasattr(base, "node_decision_from"):
            raise PolicyNotApplicable(f"{self.name} drives QinNode envs only, not {type(base).__name__}")
        self._env = base
        self._policy = make_node_policy(self.node_policy, **self.kwargs)
        self._policy.reset(base.sim, np.random.default_rng(None if seed is None else [seed, 0x52]))

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        base = self._env
        if base is None:
            raise RuntimeError(f"{self.name}.act() called before reset(env)")
        return base.action_type.encode(base.node_decision_from(self._policy))


def _register() -> None:
    register_policy("qin", QinPolicy, family="qin", kinds=CLUSTER_KINDS,
                    description="Qin (Alg. 1 + 3): D-choices greedy, d = max(2, ceil(ln N)), focus from the objective")
    register_policy("qin-perf", lambda **kw: QinPolicy(focus="perf", name="qin-perf", **kw), family="qin",
                    kinds=CLUSTER_KINDS, description="Qin, performance focus (Table 4 Perf)")
    register_policy("qin-energy", lambda **kw: QinPolicy(**{"focus": "energy", "name": "qin-energy",
                                                            "action_mode": "server_vf", **kw}),
                    family="qin", kinds=CLUSTER_KINDS,
                    description="Qin, energy focus (PL 0.5), initial V/F applied (Table 4 Energy)")
    register_policy("qin-edp", lambda **kw: QinPolicy(**{"focus": "edp", "name": "qin-edp",
                                                         "action_mode": "server_vf", **kw}),
                    family="qin", kinds=CLUSTER_KINDS,
                    description="Qin, EDP focus (PL 0.1), initial V/F applied (Table 4 EDP)")
    register_policy("qin-d1", lambda **kw: QinPolicy(**{"d": 1, "name": "qin-d1", **kw}), family="qin",
                    kinds=CLUSTER_KINDS, description="Qin with d = 1 (pure greedy; Fig. 10b ablation)")
    register_policy("qin-dac", lambda key="H_desc", **kw: QinPolicy(**{"name": "qin-dac",
                                                                       "admission": f"dac_{key}", **kw}),
                    family="qin", kinds=CLUSTER_KINDS,
                    description="Qin + dynamic admission control (descending H, Fig. 12a; key='E_asc': 12b)")
    register_policy("kubernetes", KubernetesPolicy, family="qin", kinds=CLUSTER_KINDS,
                    description="Kubernetes v1.14 LeastRequested + BalancedAllocation")
    register_policy("paragon", ParagonPolicy, family="qin", kinds=CLUSTER_KINDS,
                    description="Paragon: interference-feasible, best heterogeneity (greedy)")
    register_policy("mage", MagePolicy, family="qin", kinds=CLUSTER_KINDS,
                    description="Mage: best predicted performance under co-location (greedy)")
    register_policy("round-robin", RoundRobinPolicy, family="qin", kinds=CLUSTER_KINDS,
                    description="servers in turn")
    register_policy("least-loaded", LeastLoadedPolicy, family="qin", kinds=CLUSTER_KINDS,
                    description="least assigned unfinished work")
    register_policy("qin-node", lambda focus="energy", remap="period", **kw: NodePolicyAdapter(
                        "qin_node", "qin-node", focus=focus, remap=remap, **kw),
                    family="qin", kinds=NODE_KINDS,
                    description="Qin's node level (Alg. 2 + 4, Kalman + DVFS), energy focus PL 0.5")
    register_policy("sniper-pinned", lambda **kw: NodePolicyAdapter("sniper_pinned", "sniper-pinned", **kw),
                    family="qin", kinds=NODE_KINDS, description="Sniper's default pinned scheduler at f_max")
    register_policy("linux", lambda **kw: NodePolicyAdapter("linux", "linux", **kw), family="qin", kinds=NODE_KINDS,
                    description="Linux-like: least-loaded core, f_max")


_register()
