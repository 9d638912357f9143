"""``DREAM-v0``'s observation and action mask, kept up to date incrementally (``docs/families/dream.md`` §4).

The observation is one preallocated float32 buffer: ``K`` slot rows, ``A`` accelerator rows, ``M`` model rows
and the global features. A slot row's features that change only when its frame moves (a release, a dispatch,
a layer completion) are rewritten for that slot only; the features that change with time (slack, ToGo of a
running frame, urgency, time queued, drop allowed) are computed for every slot at once from per-slot numpy
arrays; accelerator and model rows are a few scalars each. The mask is built from the same per-slot state
(the drop budget of smart-drop conditions 3 and 4 per slot; the env narrows it to doomed frames and masks wait
out under ``work_conserving``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from joulegym.core.env import row_names

_clip = np._core.umath.clip  # the ufunc behind np.clip, called directly: np.clip adds a Python-level wrapper

OBS_BOUND = 10.0
# what a move writes for a frame at one position (DispatchObservation._unit): the unit row (fraction done, next
# unit's latency and energy), the started and running flags, the slopes of the time-dependent features, the waiting
# frame's ToGo and minimum_to_go per period, 1 / period
Unit = tuple[np.ndarray, np.ndarray, np.ndarray, float, float, float]
SLOT_HEAD = 1  # valid
SLOT_TAIL = ("leaf", "drop_allowed", "slack", "to_go", "min_to_go", "urgency", "queued", "done_fraction")
ACC_FEATURES = 6  # present, idle, busy time left (ms), PEs / 4096, WS, OS
MODEL_FEATURES = 5  # present, DLV rate, drops in the last 10 frames / 2, outstanding / 4, energy / worst
N_WORKLOADS = 5  # Table 3 workloads (the global one-hot)
GLOBAL_FEATURES = 3 + N_WORKLOADS + 3
TINY_SLACK = 1e-30  # slack floor of the urgency ratio (a passed deadline: urgency clipped to OBS_BOUND)
# how far (in periods) below the deadline the affine best-case completion may sit and still be checked exactly:
# far above the rounding of the affine form (~1e-10 periods for an hour of 60 FPS frames)
DOOMED_SCREEN = 1e-6


def slot_features(n_models: int, n_acc: int) -> int:
    """Width of one slot row: valid, model one-hot, the tail, next-unit latency / energy and resident flags per
    accelerator, started, running."""
    return SLOT_HEAD + n_models + len(SLOT_TAIL) + 3 * n_acc + 2


def obs_size(K: int, n_models: int, n_acc: int) -> int:
    return K * slot_features(n_models, n_acc) + n_acc * ACC_FEATURES + n_models * MODEL_FEATURES + GLOBAL_FEATURES


ACC_NAMES = ("present", "idle", "busy_ms", "pes", "ws", "os")
MODEL_NAMES = ("present", "dlv_rate", "drops", "outstanding", "energy")


def observation_names(K: int, n_models: int, n_acc: int, workloads: tuple[str, ...]) -> list[str]:
    """A name per value of the buffer, in order (the layout of :func:`obs_size`): ``slot{k}.{feature}``,
    ``acc{a}.{feature}``, ``model{m}.{feature}``, then the global features."""
    slot = ("valid", *(f"model_{m}" for m in range(n_models)), *SLOT_TAIL,
            *(f"next_lat_{a}" for a in range(n_acc)), *(f"next_energy_{a}" for a in range(n_acc)),
            *(f"resident_{a}" for a in range(n_acc)), "started", "running")
    glob = ("time", "cascade_p", "log1p_overflow", *(f"workload_{w}" for w in workloads), "accelerators",
            "total_pes", "switched")
    return (row_names("slot", K, slot) + row_names("acc", n_acc, ACC_NAMES) + row_names("model", n_models, MODEL_NAMES)
            + list(glob))


class DispatchObservation:
    """The observation buffer and mask of one ``DREAM-v0`` env (sizes ``K`` slots, ``M`` models, ``A``
    accelerators, ``V`` sub-net choices per dispatch)."""

    _VIEWS = ("slots", "accs", "models", "glob", "mask_dispatch", "mask_drop", "_dispatch_2d", "_ready_col",
              "_dyn_view", "_slack", "_togo", "_urgency", "_late", "_features")

    def __init__(self, K: int, M: int, A: int, V: int) -> None:
        self.K, self.M, self.A, self.V = K, M, A, V
        self.F = slot_features(M, A)
        tail = SLOT_HEAD + M
        self.c_leaf = tail
        self.c_dyn = slice(tail + 1, tail + 7)  # drop_allowed, slack, to_go, min_to_go, urgency, queued
        self.c_done = tail + 7
        self.c_lat = tail + 8
        self.c_en = self.c_lat + A
        self.c_res = self.c_en + A
        self.c_started = self.c_res + A
        self.c_running = self.c_started + 1
        self.buf = np.zeros(obs_size(K, M, A), dtype=np.float32)
        self.mask = np.zeros(K * A * V + K + 1, dtype=bool)
        self.mask[-1] = True
        self._idle = np.zeros(A, dtype=bool)
        self._zeros: tuple[float, ...] = (0.0,)
        self._pad: tuple[float, ...] = ()
        # per-slot state: the time-dependent features are affine in the time, base + slope * now
        self.valid = np.zeros(K, dtype=bool)
        self.ready = np.zeros(K, dtype=bool)
        self._ready_flags = [False] * K  # the same, as a list (build_mask's any-ready test, without numpy)
        self.drop_ok = np.zeros(K, dtype=bool)  # smart-drop conditions 3 and 4 of the slot's frame
        self.model = np.zeros(K, dtype=np.int64)
        # per slot: the 6 features, then minimum_to_go - slack (maybe_doomed's screen), at time 0 ...
        self.base = np.zeros((K, 7))
        self.slope = np.zeros((K, 7))  # ... and their rates (two contiguous arrays: dynamic() reads them whole)
        self._slack_floor = np.zeros(K)
        self.var_ok = np.zeros((K, V), dtype=bool)  # sub-nets a dispatch may pick (V > 1)
        self._dyn = np.zeros((K, 7))
        self._screen_at = np.full(K, np.inf)  # maybe_doomed's threshold: -DOOMED_SCREEN where drop_ok, else inf
        self._screen = np.zeros(K, dtype=bool)
        self.can_dispatch = False  # whether the last build_mask offered a dispatch
        self._dyn_now: float | None = None  # the time the time-dependent features were computed at (None: stale)
        self._bind()

    def _bind(self) -> None:
        """The views into the buffers (rebuilt after a copy or an unpickle, which would make them arrays of their
        own)."""
        K, M, A, F = self.K, self.M, self.A, self.F
        self.slots = self.buf[: K * F].reshape(K, F)
        off = K * F
        self.accs = self.buf[off: off + A * ACC_FEATURES].reshape(A, ACC_FEATURES)
        off += A * ACC_FEATURES
        self.models = self.buf[off: off + M * MODEL_FEATURES].reshape(M, MODEL_FEATURES)
        self.glob = self.buf[off + M * MODEL_FEATURES:]
        n_dispatch = K * A * self.V
        self.mask_dispatch = self.mask[:n_dispatch].reshape(K, A, self.V)
        self.mask_drop = self.mask[n_dispatch: n_dispatch + K]
        self._dispatch_2d = self.mask_dispatch[:, :, 0]
        self._ready_col = self.ready[:, None]
        self._dyn_view = self.slots[:, self.c_dyn]
        dyn = self._dyn  # its columns, viewed once (dynamic() runs at every decision)
        self._slack, self._togo, self._urgency, self._late = dyn[:, 1], dyn[:, 2], dyn[:, 4], dyn[:, 6]
        self._features = dyn[:, :6]

    def __getstate__(self) -> dict[str, Any]:  # the unit rows are keyed by object ids: a copy starts afresh
        return {k: v for k, v in self.__dict__.items() if k not in self._VIEWS and k != "_unit_rows"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._unit_rows = {}
        self._bind()

    def clear(self, n_acc: int) -> None:
        """Start an episode on a SoC of ``n_acc`` accelerators."""
        self._zeros, self._pad = (0.0,) * n_acc, (0.0,) * (self.A - n_acc)
        self.mask_dispatch[:] = self.mask_drop[:] = False
        self._idle[:] = False  # a smaller SoC than the last episode's: its missing accelerators are never idle
        self._accs_running = [0] * self.A  # the running frames the accelerator rows were written for (0: none yet)
        self._mask_running: list[int] = []  # the running frames the idle flags were derived from
        self._idle_now: list[bool] = []
        self._mask_idle: list[bool] = []  # the idle flags and ready slots the dispatches were built from
        self._mask_ready: list[bool] = []
        self._dyn_now = None
        self.buf[:] = 0.0
        self.valid[:] = self.ready[:] = self.var_ok[:] = self.drop_ok[:] = False
        self._ready_flags = [False] * self.K
        # the flags and slopes last written per slot, shared by every unit with the same values (_shared): a move
        # that leaves them as they were (a frame dispatched and done by the next decision point) skips the write
        self._flags_at: list[np.ndarray | None] = [None] * self.K
        self._slope_at: list[np.ndarray | None] = [None] * self.K
        self._shared: dict[tuple, np.ndarray] = {}
        self.base[:] = self.slope[:] = 0.0
        self._screen_at[:] = np.inf
        self._onehot = [tuple(float(j == m) for j in range(self.M)) for m in range(self.M)]
        # (variant, position or -1 - position while running, model, locked) -> what a move writes (_unit)
        self._unit_rows: dict[tuple[int, int, int, bool], Unit] = {}

    def free(self, k: int) -> None:
        self._dyn_now = None
        self.slots[k] = 0.0
        self.valid[k] = self.ready[k] = self.var_ok[k] = self.drop_ok[k] = self._ready_flags[k] = False
        self._flags_at[k] = self._slope_at[k] = None
        self.base[k] = self.slope[k] = 0.0
        self._screen_at[k] = np.inf

    def seat(self, k: int, view: Any, task: int, leaf: list[bool], period: list[float], allowed: np.ndarray) -> None:
        """Write slot ``k``'s row for a frame just released into it."""
        m = view.f_model[task]
        resident = view.acc_resident
        self.slots[k, : self.c_done] = (1.0, *self._onehot[m], leaf[m], 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        self.slots[k, self.c_res: self.c_started] = (*(float(resident[a] == task) for a in range(view.n_acc)),
                                                      *self._pad)
        self.valid[k] = True
        self.model[k] = m
        self.drop_ok[k] = drop = allowed[m]
        self._screen_at[k] = -DOOMED_SCREEN if drop else np.inf
        self.move(k, view, task, period)

    def move(self, k: int, view: Any, task: int, period: list[float]) -> None:
        """Rewrite what changes when slot ``k``'s frame moves (dispatched, or its span ended): fraction done, next
        unit's latency and energy, started, running, the time-dependent features and the sub-nets it may pick."""
        self._dyn_now = None
        m = view.f_model[task]
        pos, running = view.f_pos[task], view.f_running[task]
        tables = view.tables_of(task)
        # the variant lives as long as the simulator; a locked frame has one sub-net left (DreamView.min_to_go)
        key = (id(tables), pos if running < 0 else -1 - pos, m, view.f_locked[task])
        unit = self._unit_rows.get(key)
        if unit is None:
            unit = self._unit_rows[key] = self._unit(view, task, tables, 1.0 / period[m])
        row, flags, slope, togo, min_togo, inv = unit
        slots = self.slots
        slots[k, self.c_done: self.c_res] = row
        if flags is not self._flags_at[k]:
            self._flags_at[k] = flags
            slots[k, self.c_started:] = flags
        ready = running < 0
        if ready != self._ready_flags[k]:
            self.ready[k] = self._ready_flags[k] = ready
        if slope is not self._slope_at[k]:
            self._slope_at[k] = slope
            self.slope[k] = slope
        deadline, tcmpl = view.f_deadline[task] * inv, -view.f_tcmpl[task] * inv
        if running >= 0:  # a running span ends at run_end: its rest shrinks with time until then
            togo, min_togo = view.remaining_after_span(task)
            run_end = view.acc_busy_until[running]
            togo, min_togo = (togo + run_end) * inv, (min_togo + run_end) * inv
        self.base[k] = (self.drop_ok[k], deadline, togo, min_togo, 0.0, tcmpl, min_togo - deadline)
        if self.V > 1:
            self.var_ok[k] = False
            self.var_ok[k, 0] = True
            if view.at_switch_point(task):
                self.var_ok[k, : min(self.V, view.supernet_options(task))] = True

    def _unit(self, view: Any, task: int, tables: Any, inv: float) -> Unit:
        """What :meth:`move` writes for task ``task``'s frame at its position: :func:`_unit_row`, the started and
        running flags, the slopes of the time-dependent features (per second) and, while it waits, its ToGo and
        minimum_to_go per period (a running frame's depend on its span: :meth:`move` reads them)."""
        pos, running = view.f_pos[task], view.f_running[task]
        flags = self._shared_row((pos > 0, running >= 0), np.float32)
        if running >= 0:
            return (self._unit_row(tables, pos, running, inv), flags,
                    self._shared_row((0.0, -inv, -inv, -inv, 0.0, inv, 0.0), np.float64), 0.0, 0.0, inv)
        togo, min_togo = view.remaining_after_span(task)
        return (self._unit_row(tables, pos, running, inv), flags,
                self._shared_row((0.0, -inv, 0.0, 0.0, 0.0, inv, inv), np.float64), togo * inv, min_togo * inv, inv)

    def _shared_row(self, values: tuple, dtype: Any) -> np.ndarray:
        """One array per distinct ``values`` (and dtype) this episode, so that :meth:`move` can tell by identity that
        a slot already holds it."""
        key = (*values, dtype)
        row = self._shared.get(key)
        if row is None:
            row = self._shared[key] = np.array(values, dtype=dtype)
        return row

    def _unit_row(self, tables: Any, pos: int, running: int, inv: float) -> np.ndarray:
        """Fraction done, then the next unit's latency (per period) and energy (per its maximum) per accelerator
        (zeros while the frame runs or when it is done), as the buffer's float32 (copied into a row per move)."""
        pad = self._pad
        if running < 0 and pos < tables.n:
            energy = tables.en[pos]
            top = max(energy)
            lat = tuple(min(x * inv, OBS_BOUND) for x in tables.lat[pos]) + pad  # a unit longer than 10 periods
            en = (tuple(e / top for e in energy) if top > 0 else self._zeros) + pad
        else:
            lat = en = self._zeros + pad
        return np.array((min(pos / tables.n, 1.0), *lat, *en), dtype=np.float32)

    def resident(self, view: Any, slot_of: dict[int, int], old: list[int]) -> None:
        """Move the resident flags of the accelerators whose resident frame changed since ``old``."""
        col = self.c_res
        for a, (was, now) in enumerate(zip(old, view.acc_resident)):
            if was == now:
                continue
            k = slot_of.get(was, -1) if was >= 0 else -1
            if k >= 0:
                self.slots[k, col + a] = 0.0
            k = slot_of.get(now, -1) if now >= 0 else -1
            if k >= 0:
                self.slots[k, col + a] = 1.0

    def drops_allowed(self, allowed: np.ndarray) -> None:
        """Every occupied slot's "drop allowed" after ``allowed[m]`` changed."""
        np.logical_and(allowed[self.model], self.valid, out=self.drop_ok)
        self.base[:, 0] = self.drop_ok
        self._screen_at[:] = np.where(self.drop_ok, -DOOMED_SCREEN, np.inf)
        self._dyn_now = None

    def dynamic(self, now: float) -> None:
        """The time-dependent slot features of every slot at ``now``: slack, ToGo, best-case ToGo (per period),
        urgency ToGo / slack (OBS_BOUND once the deadline passed), time queued (per period), drop allowed."""
        if now == self._dyn_now:  # no slot changed since the last decision at this very time
            return
        self._dyn_now = now
        dyn = self._dyn  # output arrays passed positionally where numpy allows: cheaper than out= for arrays this small
        np.multiply(self.slope, now, dyn)
        np.add(dyn, self.base, dyn)
        floor = np.maximum(self._slack, TINY_SLACK, out=self._slack_floor)  # a passed deadline: a huge ratio, clipped
        np.divide(self._togo, floor, self._urgency)  # the period cancels; an empty slot's is 0 / TINY_SLACK
        _clip(self._features, -OBS_BOUND, OBS_BOUND, self._dyn_view)  # into the slot rows of the buffer

    def accelerators(self, running: list[int], busy: list[float], now: float) -> None:
        """Idle flags and busy time left (ms) of the accelerators."""
        accs, written = self.accs, self._accs_running
        for a, task in enumerate(running):  # scalar writes: cheaper than a nested list converted by numpy
            if task < 0:
                if written[a] >= 0:  # (an idle accelerator's row is written once)
                    accs[a, 1], accs[a, 2] = 1.0, 0.0
            else:  # a busy one's time left moves with the time
                if written[a] < 0:
                    accs[a, 1] = 0.0
                accs[a, 2] = min((busy[a] - now) * 1e3, OBS_BOUND)
        self._accs_running = [*running]

    def maybe_doomed(self, now: float) -> np.ndarray:
        """Slots that are drop candidates now (smart-drop conditions 3 and 4: :attr:`drop_ok`) and whose affine
        best-case completion (minimum_to_go minus slack, per period) is not clearly short of the deadline: a cheap
        screen the env confirms with the exact test of smart drop's condition 1 (``DreamView.doomed``)."""
        self.dynamic(now)
        return np.greater(self._late, self._screen_at, self._screen).nonzero()[0]

    def build_mask(self, running: list[int], drops: bool = True) -> np.ndarray:
        """The valid actions: dispatch a ready slot's frame on an idle accelerator (with an open sub-net), drop a
        frame of a model whose drop is allowed (kept up to date as slots change; ``drops`` False: none, the env
        sets them), wait. :attr:`can_dispatch` says whether any dispatch is valid. The env narrows the drops and
        the wait further under ``work_conserving`` (``DreamEnv.current_mask``)."""
        if running != self._mask_running:  # (a frame dispatched and done by now leaves them as they were)
            self._mask_running = [*running]
            self._idle_now = [task < 0 for task in running]
        idle_now = self._idle_now
        if drops:
            self.mask_drop[:] = self.drop_ok
        else:
            self.mask_drop.fill(False)
        self.mask[-1] = True
        # the dispatches change with the ready slots and the idle accelerators (and the open sub-nets, V > 1); a frame
        # dispatched and done by the next decision point (most steps) leaves both as they were
        if self.V > 1 or idle_now != self._mask_idle or self._ready_flags != self._mask_ready:
            self._mask_idle, self._mask_ready = idle_now, [*self._ready_flags]
            self._idle[: len(running)] = idle_now
            if self.V == 1:
                np.logical_and(self._ready_col, self._idle, self._dispatch_2d)
            else:
                np.logical_and((self._ready_col & self._idle)[:, :, None], self.var_ok[:, None, :],
                               out=self.mask_dispatch)
        # a ready slot's sub-net 0 is always open (move), so a ready slot and an idle accelerator make a dispatch
        self.can_dispatch = True in idle_now and True in self._ready_flags
        return self.mask
