"""Node-level inner policies of the Qin simulator: thread-to-core mapping and per-core V/F (Guan & Ababei, IEEE
T-SUSC 2024, §5.1, Alg. 2 + 4, §7.2; ``docs/families/qin.md`` §3.5-3.6, §5.1).

A node policy is an inner policy (:mod:`joulegym.core.inner`: ``name``, ``privileged``, ``reset(sim, rng)``) that
runs inside every server of :class:`~joulegym.envs.qin.simulator.QinSim`, with Qin's node hooks on top:

==============  ================================================================================================
``periodic``    it acts every control period (the simulator then ticks at ``k * control_period_s``)
``external``    its control periods are decision points answered from outside (an agent, ``QinNode-v0``)
``place``       ``place(sim, server, threads) -> cores``: the global core of each new thread of a placed job
``on_change``   ``on_change(sim, server) -> NodeDecision | None`` after a placement or a completion on ``server``
``control``     ``control(sim, servers) -> NodeDecision | None`` at the end of a control period (periodic
                policies); ``sim.period_instr`` / ``sim.period_busy_s`` hold the period's per-core measurements
``decide``      ``decide(view) -> NodeDecision``: the decision of a ``QinNode-v0`` control period (the policy as
                an agent-facing policy through :class:`joulegym.core.policy.InnerPolicyAdapter`)
==============  ================================================================================================

The hooks read the simulator and return a :class:`~joulegym.envs.qin.dynamics.NodeDecision`; the simulator applies
it (they never change its state themselves).

Policies (qin.md §5.1; registered in :mod:`joulegym.baselines.qin`, one spelling each; the cluster envs'
``node_policy`` key takes the same names):

- ``linux``: the Linux-CFS stand-in of the real cluster: each new thread on the core with the fewest threads
  (ties: lowest index); after each completion, idle balancing moves threads from the most to the least loaded
  core until the thread counts differ by at most one (zero migration cost); cores run at the job's V/F hint
  (Qin's chosen level j*, qin.md §3.5; the top level for the baselines), the highest hint on a shared core.
- ``sniper-pinned``: Sniper's default ``pinned`` scheduler (qin.md §4.1, [EXT] Sniper base.cfg): the next free
  core after the last assigned one, else the round-robin core; never migrates; no DVFS (f_H).
- ``qin-node``: Qin's node level (Alg. 2 + 4): threads placed and re-mapped by the D-choice rule
  (:func:`~joulegym.envs.qin.scheduling.node_dchoice`, d = 2: a thread moves only where its CPU queueing delay is
  lower, idle cores first, so that the node level balances load as §7.2.2 says) and the DVFS controller of
  :mod:`~joulegym.envs.qin.dvfs` under the focus's PL threshold (perf 0, energy 0.5, EDP 0.1).
  ``remap="period"`` re-decides every thread every control period (the paper; affordable on one server,
  QinNode-v0); ``remap="events"`` (default) re-decides a server's threads
  at its placements and completions only: in between, the inputs of the D-choice rule change only through the
  drained loads. The performance focus with ``remap="events"`` never ticks (PL = 0 pins f_H).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from joulegym.envs.qin import scheduling as sch
from joulegym.envs.qin.dvfs import DvfsController
from joulegym.envs.qin.dynamics import NodeDecision

REMAP_MODES = ("events", "period")


def hint_levels(sim: Any, server: int, thread_cores: np.ndarray, threads: np.ndarray) -> np.ndarray:
    """Per core of ``server`` (local): the highest V/F hint of the jobs whose ``threads`` sit on it at
    ``thread_cores`` (idle cores: ``-1``, keep)."""
    lo, hi = sim.first_core[server], sim.first_core[server + 1]
    top = np.full(hi - lo, -1, dtype=np.intp)
    np.maximum.at(top, thread_cores - lo, sim.job_level_hint[sim.thread_job[threads]])
    return top


class NodePolicyBase:
    """The hooks' defaults: no decision, and ``decide`` answering a ``QinNode-v0`` control period with the
    policy's own rule on the bound simulator."""

    name = "node"
    privileged = False
    periodic = False
    external = False

    def reset(self, sim: Any, rng: np.random.Generator) -> None:
        self._sim = sim
        self.rng = rng

    def on_change(self, sim: Any, server: int) -> NodeDecision | None:
        return None

    def control(self, sim: Any, servers: np.ndarray) -> NodeDecision | None:
        return None

    def decide(self, view: Any) -> NodeDecision:
        """The decision of the pending ``QinNode-v0`` control period (one server): the policy's ``control``
        (periodic policies) or ``on_change`` (the others), as the simulator itself would call them."""
        sim = getattr(self, "_sim", None)
        if sim is None:
            raise RuntimeError(f"{self.name}.decide() called before reset(sim, rng)")
        if sim.decision_kind != "node":
            return NodeDecision()
        decision = self.control(sim, np.array([0])) if self.periodic else self.on_change(sim, 0)
        return NodeDecision() if decision is None else decision


class LinuxNodePolicy(NodePolicyBase):
    """``linux``: least-loaded placement, idle balancing at events, the jobs' V/F hints (module docstring)."""

    name = "linux"

    def place(self, sim: Any, server: int, threads: np.ndarray) -> np.ndarray:
        lo, hi = sim.first_core[server], sim.first_core[server + 1]
        count = sim.core_threads[lo:hi].tolist()
        out = []
        for _ in range(threads.size):
            c = count.index(min(count))  # the first least loaded (numpy's argmin)
            out.append(lo + c)
            count[c] += 1
        return np.array(out, dtype=np.intp)

    def on_change(self, sim: Any, server: int) -> NodeDecision | None:
        th = sim._server_threads[server]
        if not th.size:
            return None
        lo, hi = sim.first_core[server], sim.first_core[server + 1]
        count = sim.core_threads[lo:hi]
        per_core = count.tolist()  # a server's handful of cores: scalars are cheaper than numpy calls
        balanced = max(per_core) - min(per_core) <= 1
        if balanced and not sim._low_hints[server]:
            # every job at the top level's hint (the baselines, the perf focus): busy cores at the top, no move
            top = sim.n_levels - 1
            if all(n == 0 or level == top for n, level in zip(per_core, sim.core_level[lo:hi].tolist())):
                return None
            return NodeDecision(level_cores=slice(lo, hi), levels=np.where(count > 0, top, -1))
        target = sim.thread_core[th]
        if not balanced:
            count = count.copy()
            target = target.copy()
            while count.max() - count.min() > 1:  # idle balancing: most -> least loaded, the last thread moves
                src, dst = int(np.argmax(count)), int(np.argmin(count))
                mover = np.flatnonzero(target == lo + src)[-1]
                target[mover] = lo + dst
                count[src] -= 1
                count[dst] += 1
        # cores at their jobs' highest V/F hint, on the balanced mapping
        return NodeDecision(th, target, slice(lo, hi), hint_levels(sim, server, target, th))


class SniperPinnedPolicy(NodePolicyBase):
    """``sniper-pinned``: Sniper's default scheduler: next free core after the last one, else round robin;
    never migrates; no DVFS (module docstring)."""

    name = "sniper-pinned"

    def reset(self, sim: Any, rng: np.random.Generator) -> None:
        super().reset(sim, rng)
        self.last = np.full(sim.n_servers, -1, dtype=np.intp)  # last assigned core (local) per server

    def place(self, sim: Any, server: int, threads: np.ndarray) -> np.ndarray:
        lo, hi = sim.first_core[server], sim.first_core[server + 1]
        n = hi - lo
        count = sim.core_threads[lo:hi].copy()
        out = np.empty(threads.size, dtype=np.intp)
        for i in range(threads.size):
            start = (int(self.last[server]) + 1) % n
            order = (start + np.arange(n)) % n
            free = order[count[order] == 0]
            c = int(free[0]) if free.size else start
            out[i] = lo + c
            count[c] += 1
            self.last[server] = c
        return out

    def on_change(self, sim: Any, server: int) -> NodeDecision | None:
        lo, hi = sim.first_core[server], sim.first_core[server + 1]
        return NodeDecision(level_cores=slice(lo, hi), levels=np.full(hi - lo, sim.n_levels - 1, dtype=np.intp))


class QinNodePolicy(NodePolicyBase):
    """``qin-node``: Alg. 2 + 4 with the Kalman filter and the §3.6 DVFS controller (module docstring).

    :param focus: ``perf`` / ``energy`` / ``edp`` (the goal of the D-choice rule and the default PL).
    :param pl: the performance-loss threshold (default by focus: 0 / 0.5 / 0.1, paper §7.2.1, A15).
    :param d: number of choices (the paper uses 2 at node level, §7.2.1).
    :param p_frac: the top-P fraction (A7).
    :param remap: ``"events"`` or ``"period"``.
    :param rule: the D-choice rule's Flist pick (``random-of-top-d``, the paper's; ``least-loaded-of-d``).
    """

    name = "qin-node"
    privileged = True  # it reads every thread's remaining instructions (the node load L_j of §5.2)

    def __init__(self, focus: str = "energy", pl: float | None = None, d: int = 2, p_frac: float = 0.5,
                 remap: str = "events", rule: str = "random-of-top-d") -> None:
        if focus not in sch.FOCUSES:
            raise ValueError(f"focus={focus!r} is not one of {sch.FOCUSES}")
        if remap not in REMAP_MODES:
            raise ValueError(f"remap={remap!r} is not one of {REMAP_MODES}")
        self.focus = focus
        self.pl = sch.DEFAULT_PL[focus] if pl is None else float(pl)
        if not 0.0 <= self.pl < 1.0:
            raise ValueError(f"pl must be in [0, 1), got {pl!r}")
        if isinstance(d, bool) or int(d) != d or d < 1:
            raise ValueError(f"d must be an integer >= 1, got {d!r}")
        self.d, self.p_frac, self.remap, self.rule = int(d), float(p_frac), remap, sch.check_rule(rule)
        self.periodic = self.pl > 0 or remap == "period"
        self.dvfs = DvfsController(self.pl)

    def reset(self, sim: Any, rng: np.random.Generator) -> None:
        super().reset(sim, rng)
        self.dvfs.reset(sim)

    @property
    def kalman(self) -> Any:
        return self.dvfs.kalman

    @property
    def cpi_estimate(self) -> np.ndarray:
        return self.dvfs.cpi_estimate

    @property
    def instr_estimate(self) -> np.ndarray:
        return self.dvfs.instr_estimate

    @property
    def initialised(self) -> np.ndarray:
        return self.dvfs.initialised

    # the D-choice rule of one server (Alg. 2 l. 6-13 with Alg. 4)
    def _remap(self, sim: Any, server: int, threads: np.ndarray, current: np.ndarray) -> np.ndarray:
        lo, hi = sim.first_core[server], sim.first_core[server + 1]
        lv = sim.core_level[lo:hi]
        # predicted instruction rate of each thread on each core: the job's predicted MIPS at the core's level x
        # the core type's IPC scale ("H = instruction count", A12)
        cols = sim._pred_cols[server, lv]
        jobs = sim.thread_job[threads]
        rate = sim.pred_mips[jobs[:, None], cols[None, :]] * 1e6 * sim.cores.ipc_scale[lo:hi][None, :]
        if self.focus == "perf":  # the goal is the rate: no energy terms
            busy_power = instr_hat = None
        else:
            cores = np.arange(lo, hi)
            busy_power = sim.cores.dyn_w[cores, lv] + sim.cores.leak_w[cores, lv]
            instr_hat = rate.mean(axis=1) * sim.cfg.control_period_s
        local = np.where(current >= 0, current - lo, -1)
        new = sch.node_dchoice(sim.thread_rem[threads], local, rate, busy_power, instr_hat, self.rng, self.focus,
                               self.d, self.p_frac, self.rule)
        return new + lo

    def place(self, sim: Any, server: int, threads: np.ndarray) -> np.ndarray:
        existing = sim._server_threads[server]
        allt = np.concatenate([existing, threads])
        current = np.concatenate([sim.thread_core[existing], np.full(threads.size, -1, dtype=np.intp)])
        # existing threads keep their cores here (on_change re-maps them next); new ones choose by D-choice
        order = np.concatenate([np.arange(existing.size, allt.size), np.arange(existing.size)])
        chosen = self._remap(sim, server, allt[order], current[order])
        return chosen[: threads.size]

    def on_change(self, sim: Any, server: int) -> NodeDecision | None:
        th = sim._server_threads[server]
        cores = self._remap(sim, server, th, sim.thread_core[th]) if th.size else None
        if self.pl != 0.0:
            return NodeDecision(th, cores)
        lo, hi = sim.first_core[server], sim.first_core[server + 1]
        return NodeDecision(th, cores, slice(lo, hi), np.full(hi - lo, sim.n_levels - 1, dtype=np.intp))

    def control(self, sim: Any, servers: np.ndarray) -> NodeDecision | None:
        """The period's DVFS (on the mapping the period was measured on) and, with ``remap="period"``, every
        thread's D-choice re-mapping."""
        levels = self.dvfs.step(sim, servers) if self.pl > 0.0 else None
        if self.remap != "period":
            return levels
        parts = [sim._server_threads[s] for s in servers.tolist()]
        threads = np.concatenate(parts) if parts else np.zeros(0, dtype=np.intp)
        cores = np.concatenate([self._remap(sim, s, th, sim.thread_core[th]) for s, th in zip(servers.tolist(), parts)]
                               ) if parts else threads
        if levels is None:
            return NodeDecision(threads, cores)
        return NodeDecision(threads, cores, levels.level_cores, levels.levels)


class AgentNodeLevel(NodePolicyBase):
    """The node level of ``QinNode-v0``: every control period is a decision point answered from outside
    (:meth:`QinSim.apply` with a :class:`NodeDecision`); new threads start on the least-loaded core."""

    name = "agent"
    periodic = True
    external = True

    def __init__(self) -> None:
        self._linux = LinuxNodePolicy()

    def place(self, sim: Any, server: int, threads: np.ndarray) -> np.ndarray:
        return self._linux.place(sim, server, threads)
