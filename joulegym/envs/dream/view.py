"""What a DREAM scheduler decides on: the read-only view of :class:`~joulegym.envs.dream.simulator.DreamSim`
and the estimates of Algorithm 1 (Kim et al., ASPLOS'23 §3-§4; ``docs/families/dream.md`` §2).

The view is a frozen dataclass (no attribute can be rebound or deleted) holding live references to the
simulator's per-frame and per-accelerator lists: copying them at every decision would cost more than the decision.
A scheduler changes the state only through the decisions it returns; the DREAM tests run every inner policy on
tuple snapshots of these lists to prove none writes into them. The view computes what the
paper's engines read: ToGo (Alg. 1 line 2), the best-case remaining time of smart frame drop (§4.2.1
condition 1), the next unit's latency and energy per accelerator (lines 8, 11) and the context-switch bytes
(line 10). It is not the simulator: it cannot apply, advance or reset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from joulegym.envs.dream.simulator import DreamSim
    from joulegym.envs.dream.tables import Variant

OUTSTANDING, DROPPED = 0, 2  # frame states (joulegym.envs.dream.simulator)

_SHARED = ("n_acc", "acc_pes", "acc_running", "acc_busy_until", "acc_resident", "ready", "outstanding", "f_model",
           "f_frame", "f_release", "f_deadline", "f_pos", "f_tcmpl", "f_prev_acc", "f_variant", "f_running",
           "f_state", "f_violated", "f_locked", "f_last", "model_names", "n_models", "horizon_s", "warmup_s",
           "model_fps", "model_worst_energy", "switch_energy_per_byte", "episode_key", "acc_frames",
           "acc_violated", "acc_energy", "acc_worst", "acc_drops", "granularity", "recent_drops", "out_counts")


@dataclass(frozen=True, eq=False, repr=False)
class DreamView:
    """Per task id: ``f_model`` (model slot), ``f_frame`` (frame index k), ``f_release``, ``f_deadline``,
    ``f_pos`` (next nominal layer), ``f_tcmpl`` (last span's completion; the release before the first),
    ``f_prev_acc`` (-1 before the first layer), ``f_variant``, ``f_running`` (acc or -1), ``f_state``,
    ``f_violated``. Per accelerator: ``acc_running`` (task or -1), ``acc_busy_until``, ``acc_resident``
    (task whose activation is on it, or -1), ``acc_pes``. ``ready`` and ``outstanding``: dicts of task ids
    (release order). Per model: the running UXCost sums ``acc_frames``, ``acc_violated``, ``acc_energy``,
    ``acc_worst``, ``acc_drops``."""

    _sim: DreamSim

    def __post_init__(self) -> None:
        sim, bind = self._sim, object.__setattr__  # frozen: the one place the references are bound
        for key in _SHARED:
            bind(self, key, getattr(sim, key))
        for key in ("_f_vars", "_released", "_children", "_lat_per_byte", "_sp"):
            bind(self, key, getattr(sim, key))

    @property
    def now(self) -> float:
        return self._sim.now

    @property
    def soc(self) -> Any:
        """The SoC preset (``None`` for a simulator built from tables)."""
        return self._sim.soc

    @property
    def phase(self) -> int:
        """The workload phase (1 after a task-level switch)."""
        return self._sim.phase

    def idle_accs(self) -> list[int]:
        running = self.acc_running
        return [a for a in range(self.n_acc) if running[a] < 0]

    def active_models(self) -> tuple[int, ...]:
        """Model slots of the current workload (the adaptivity engine tracks this list, §4.4)."""
        return self._sim.active_models()

    def window_stats(self, t0: float, t1: float) -> dict[str, list[float]]:
        """Per-model sums over the frames with deadline in ``[t0, t1)`` (:meth:`DreamSim.window_stats`)."""
        return self._sim.window_stats(t0, t1)

    # ------------------------------------------------------------------------------------ tables
    def tables_of(self, i: int) -> Variant:
        """The cost lists of task ``i``'s current variant (``lat[p][a]``, ``en[p][a]``, ``togo_from`` ...)."""
        return self._f_vars[i][self.f_variant[i]]

    def variant_of(self, i: int, v: int) -> Variant:
        """The cost lists of variant ``v`` of task ``i``'s model (a Supernet's sub-net)."""
        return self._f_vars[i][v]

    def supernet_options(self, i: int) -> int:
        """Number of variants of task ``i``'s model (1 unless a Supernet)."""
        return len(self._f_vars[i])

    def at_switch_point(self, i: int) -> bool:
        """Task ``i`` is a Supernet frame whose next layer is the switch point (variant still open)."""
        return not self.f_locked[i] and self.f_pos[i] == self._sp[self.f_model[i]]

    def next_stats(self, i: int) -> tuple[tuple[float, ...], tuple[float, ...], float, float]:
        """``(lat over accs, energy over accs, Σ_a lat, Σ_a energy)`` of ready task ``i``'s next unit."""
        V = self._f_vars[i][self.f_variant[i]]
        p = self.f_pos[i]
        return V.lat[p], V.en[p], V.sum_lat[p], V.sum_en[p]

    def next_lat(self, i: int) -> tuple[float, ...]:
        return self._f_vars[i][self.f_variant[i]].lat[self.f_pos[i]]

    # ------------------------------------------------------------------------------------ estimates
    def to_go(self, i: int) -> float:
        """ToGo (Alg 1 line 2): remaining time averaged over accelerators, worst-case path (or expected,
        ``togo_mode``); a running task adds what is left of its span (the gates after it still unresolved)."""
        V = self._f_vars[i][self.f_variant[i]]
        a = self.f_running[i]
        if a >= 0:
            return max(0.0, self.acc_busy_until[a] - self._sim.now) + V.togo_after[self.f_last[i]]
        return V.togo_from[self.f_pos[i]]

    def likely_late(self, started_only: bool = False) -> list[tuple[int, float, float]]:
        """``(task, minimum_to_go, slack)`` of every outstanding frame with minimum_to_go > slack (§4.2.1 condition 1;
        ``started_only``: frames that ran a layer or run one, docs §3 #9), in release order."""
        now = self._sim.now
        out = []
        f_vars, f_variant, f_locked, f_running = self._f_vars, self.f_variant, self.f_locked, self.f_running
        f_pos, f_last, deadline, busy, prev = self.f_pos, self.f_last, self.f_deadline, self.acc_busy_until, \
            self.f_prev_acc
        for i in self.outstanding:
            a = f_running[i]
            if started_only and a < 0 and prev[i] < 0:
                continue
            if f_locked[i]:
                V = f_vars[i][f_variant[i]]
                if a >= 0:
                    rest = busy[a] - now
                    mtg = (rest if rest > 0.0 else 0.0) + V.best_after[f_last[i]]
                else:
                    mtg = V.best_from[f_pos[i]]
            else:
                mtg = self.min_to_go(i)
            slack = deadline[i] - now
            if mtg > slack:
                out.append((i, mtg, slack))
        return out

    def doomed(self, i: int) -> bool:
        """Outstanding task ``i`` can no longer meet its deadline: minimum_to_go > Slack, the test of smart frame
        drop's condition 1 (§4.2.1) that :meth:`likely_late` applies to every outstanding frame."""
        return self.min_to_go(i) > self.f_deadline[i] - self._sim.now

    def remaining_after_span(self, i: int) -> tuple[float, float]:
        """``(ToGo, minimum_to_go)`` of task ``i`` without what is left of its running span (all of it if waiting)."""
        variants = self._f_vars[i]
        if self.f_running[i] < 0:
            return self.to_go(i), self.min_to_go(i)
        last = self.f_last[i]
        open_variants = variants if not self.f_locked[i] else (variants[self.f_variant[i]],)
        return variants[self.f_variant[i]].togo_after[last], min(V.best_after[last] for V in open_variants)

    def remaining_mean(self, i: int, variant: int) -> float:
        """Σ mean_a latency over the remaining layers of ready task ``i`` under ``variant`` (§4.5.1)."""
        return self._f_vars[i][variant].togo_from[self.f_pos[i]]

    def min_to_go(self, i: int) -> float:
        """minimum_to_go (§4.2.1 Cond 1): best-latency accelerator per layer, no context switch, best case of
        the unresolved dynamics (gated blocks skipped, earliest exit, lightest open variant)."""
        a = self.f_running[i]
        if self.f_locked[i]:  # one sub-net left (every model but a Supernet before its switch point)
            V = self._f_vars[i][self.f_variant[i]]
            if a >= 0:
                rest = self.acc_busy_until[a] - self._sim.now
                return (rest if rest > 0.0 else 0.0) + V.best_after[self.f_last[i]]
            return V.best_from[self.f_pos[i]]
        variants = self._f_vars[i]
        if a >= 0:
            last = self.f_last[i]
            return max(0.0, self.acc_busy_until[a] - self._sim.now) + min(V.best_after[last] for V in variants)
        p = self.f_pos[i]
        return min(V.best_from[p] for V in variants)

    def switch_bytes(self, i: int, a: int) -> int:
        """Bytes a context switch moves if ready task ``i``'s next unit runs on ``a`` (Alg 1 line 10, docs §3 #7)."""
        _, flush, fetch = self._sim._switch(i, a, self._f_vars[i][self.f_variant[i]], self.f_pos[i])
        return flush + fetch

    def switch_energy(self, i: int, a: int) -> float:
        """CswitchEnergy(tsk, acc.prevTask, acc) of Algorithm 1 line 10 (docs §3 #7)."""
        return self.switch_bytes(i, a) * self.switch_energy_per_byte

    def flush_bytes(self) -> list[tuple[int, int]]:
        """Per accelerator ``(resident frame, bytes a dispatch of another frame there flushes)`` (Alg 1 line 10,
        docs §3 #7): the resident frame's last output if it is still outstanding, else nothing."""
        out = []
        for r in self.acc_resident:
            if r >= 0 and self.f_state[r] == OUTSTANDING and self.f_last[r] >= 0:
                out.append((r, self._f_vars[r][self.f_variant[r]].out_b[self.f_last[r]]))
            else:
                out.append((r, 0))
        return out

    # ------------------------------------------------------------------------------------ workload
    def is_leaf(self, m: int) -> bool:
        """No model of the current workload depends on model slot ``m`` (§4.2.1 Cond 3)."""
        return not self._children[self._sim.phase][m]

    def drops_in_window(self, m: int, window: int = 10) -> int:
        """Drops among model ``m``'s last ``window`` released frames (§4.2.1 Cond 4)."""
        if window == 10:  # the simulator's running count (DROP_WINDOW)
            return self.recent_drops[m]
        st = self.f_state
        return sum(1 for i in self._released[m][-window:] if st[i] == DROPPED)
