"""The read-only view a Qin cluster scheduler decides on (Guan & Ababei, IEEE T-SUSC 2024, §4-§5;
``docs/families/qin.md`` §5.1): what a scheduler on the paper's Kubernetes cluster knows at a placement, and
nothing else.

========================  ====================================================================================
``pending_job``           the job to place now (``-1``: none)
``prediction()``          its CF-predicted scores per (server, V/F level) (paper §4; a
                          :class:`~joulegym.envs.qin.model.Prediction`)
``pending_threads``       its thread count (the pod's spec)
``t_server``, ``c_server``  per server, the min tolerated and summed caused *predicted* scores of its assigned
                          unfinished jobs (eq. 14-15, A5)
``load_instr``            L_i (paper §5.2): each server's assigned unfinished work, the jobs' size estimates less
                          the instructions they retired (hardware counters). The estimates follow the env's
                          ``size_estimate`` (docs §2.1): each app's mean size by default (``"app-mean"``, what a
                          deployed scheduler knows from the app's history); under ``"profiled"`` they are per-job
                          sizes within 5 % of the truth (the paper's algorithms never read alpha_m), and a policy
                          whose decision depends on them is ``privileged``
``server_rate``           instructions per second each server's threads run at now (hardware counters)
``drain_s``               per server, ``load_instr / server_rate`` (0 for an idle server; privileged under
                          ``"profiled"`` as ``load_instr`` is)
``jobs_drain_s``          per server, assigned unfinished jobs over ``server_rate`` (0 for an idle server): the drain
                          time if every job were of one size, what a scheduler that does not know sizes can compute
``jobs_on``, ``runnable_threads``  pods and threads per server
``cores``, ``mem_gb``     per server, as Table 2 lists them (what Kubernetes sees)
``now``, ``queue_length``, ``jobs_placed``
``focus``, ``interference_mode``, ``dchoice_rule``  the operator's settings (the objective's focus; eq. 16's
                          reading, A4; the D-choice rule's Flist pick)
========================  ====================================================================================

Arrays are read-only numpy views (``writeable=False``) of the simulator's own arrays, so a scheduler cannot change
the state it reads; they reflect the state at the time of reading. The view itself is a frozen dataclass (no
attribute can be set on it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


@dataclass(frozen=True, slots=True, eq=False)
class QinView:
    """What a cluster scheduler reads (module docstring). Built once per simulator; frozen, so a policy cannot
    point it at another state either."""

    _sim: Any

    # --- the decision point ------------------------------------------------------------------------------------
    @property
    def pending_job(self) -> int:
        return int(self._sim.pending_job)

    def prediction(self) -> Any:
        """The pending job's predicted scores (``None`` when no job is pending)."""
        return self._sim.pending_prediction()

    @property
    def pending_threads(self) -> int:
        job = self._sim.pending_job
        return int(self._sim.n_threads[job]) if job >= 0 else 0

    # --- the cluster -------------------------------------------------------------------------------------------
    @property
    def n_servers(self) -> int:
        return int(self._sim.n_servers)

    @property
    def n_levels(self) -> int:
        return int(self._sim.n_levels)

    @property
    def cores(self) -> np.ndarray:
        return _read_only(self._sim.logical_cores)

    @property
    def mem_gb(self) -> np.ndarray:
        return _read_only(self._sim.mem_gb)

    @property
    def t_server(self) -> np.ndarray:
        return _read_only(self._sim.t_server)

    @property
    def c_server(self) -> np.ndarray:
        return _read_only(self._sim.c_server)

    @property
    def load_instr(self) -> np.ndarray:
        load = self._sim.predicted_load_instr
        load.flags.writeable = False
        return load

    def _per_rate(self, amount: np.ndarray) -> np.ndarray:
        """``amount`` over each server's measured rate (0 on a server without one), read-only."""
        rate = self._sim.server_rate_sum
        drain = np.divide(amount, rate, out=np.zeros(rate.shape), where=rate > 0)
        drain.flags.writeable = False
        return drain

    @property
    def drain_s(self) -> np.ndarray:
        return self._per_rate(self._sim.predicted_load_instr)

    @property
    def jobs_drain_s(self) -> np.ndarray:
        return self._per_rate(self._sim.jobs_on)

    @property
    def server_rate(self) -> np.ndarray:
        return _read_only(self._sim.server_rate_sum)

    @property
    def jobs_on(self) -> np.ndarray:
        return _read_only(self._sim.jobs_on)

    @property
    def runnable_threads(self) -> np.ndarray:
        return _read_only(self._sim.runnable_threads)

    @property
    def now(self) -> float:
        return float(self._sim.now)

    @property
    def queue_length(self) -> int:
        return int(self._sim.queue_length)

    @property
    def jobs_placed(self) -> int:
        return int(self._sim.jobs_placed)

    # --- the operator's settings ---------------------------------------------------------------------------------
    @property
    def focus(self) -> str:
        return self._sim.cfg.focus

    @property
    def interference_mode(self) -> str:
        return self._sim.cfg.interference_mode

    @property
    def dchoice_rule(self) -> str:
        return self._sim.cfg.dchoice_rule
