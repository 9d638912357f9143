"""The Qin algorithms as pure numpy functions (Guan & Ababei, IEEE T-SUSC 2024; ``docs/families/qin.md``).

Section numbers (``qin.md §x``) and assumption ids (A1-A27) are those of ``docs/families/qin.md``.

Everything here is a function of arrays: no simulator, no env, no Gymnasium. The simulator
(:mod:`~joulegym.envs.qin.simulator`), the node policies (:mod:`~joulegym.envs.qin.node_policies`) and the
reference policies (``joulegym.baselines.qin``) call them.

============================  ==================================================================================
:func:`d_default`             d = max(2, ceil(ln N)) (paper §5.3; qin.md §2.7 / A10: only the natural log gives
                              the paper's d = 2 for N = 6)
:func:`interference_score`    eq. 14-16: ``I = sum_k |t_new - c_server| + |t_server - c_new|`` (``literal_abs``,
                              the paper's form) or the ``hinge`` ablation of qin.md A4
:func:`interference_slowdown` the ground-truth slowdown of qin.md §1.9 (also Mage's predicted slowdown, §5.1)
:func:`dchoice_flist`         Alg. 1 + 3 / 4, the executable clarification of qin.md §3.5: top-d by interference,
                              then top-d by the goal score within the top-P % interference subset (a multiset)
:func:`dchoice_select`        one uniform pick over the Flist entries
:func:`qin_cluster_choose`    Qin_C (qin.md §3.5): per-server scores, focus ``perf`` / ``energy`` / ``edp``
:func:`node_dchoice`          Qin_N, Alg. 2 + 4 on one server (sequential over threads, loads updated in place)
:func:`dvfs_levels`           the DVFS controller of qin.md §3.6 (eq. 18-19 under a PL threshold), vectorised
:func:`dvfs_levels_per_app`   the same with per-app loss accounting (what ``qin-node`` uses)
:func:`period_delay_s`        eq. 19
:func:`kubernetes_choose`     v1.14 LeastRequested + BalancedAllocation (qin.md §5.1)
:func:`paragon_choose`        Paragon (qin.md §5.1): interference-feasible servers, then best predicted H
:func:`mage_choose`           Mage (qin.md §5.1): argmax of predicted performance under co-location
:func:`dac_order`             DAC ranking keys (paper §6, qin.md §3.7)
:func:`dac_double_and_rank`   the double-and-rank loop with the sigma_DAC overhead threshold (qin.md §3.7)
============================  ==================================================================================
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from joulegym.devices.cpu import MAX_SLOWDOWN, SLOWDOWN_PER_UNIT, SOI_WEIGHTS

INTERFERENCE_MODES = ("literal_abs", "hinge")
FOCUSES = ("perf", "energy", "edp")
#: How the D-choice rule picks from its Flist: Alg. 3 l. 12 / Alg. 4 l. 13 "RandomlySelectOne(Flist)" (the paper's
#: reading, the default) or the balls-into-bins multiple-choice rule that §5.2 credits for the gain ([52]: of the d
#: choices, the least loaded).
DCHOICE_RULES = ("random-of-top-d", "least-loaded-of-d")
#: qin.md §3.6 / paper §7.2.1 / A15: the performance-loss threshold of each focus.
DEFAULT_PL = {"perf": 0.0, "energy": 0.5, "edp": 0.1}
DAC_KEYS = ("H_desc", "E_asc", "I_asc")
#: qin.md A16: the cost of ranking k jobs is c_rank * k * log2(k + 1), c_rank = 1 us (an assumption).
DAC_RANK_COST_S = 1e-6


def d_default(n: int) -> int:
    """Number of choices d = max(2, ceil(ln n)) (paper §5.3, qin.md §2.7)."""
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise ValueError(f"n (number of candidates) must be an integer >= 1, got {n!r}")
    return max(2, math.ceil(math.log(int(n))))


def _check_mode(mode: str) -> None:
    if mode not in INTERFERENCE_MODES:
        raise ValueError(f"interference mode={mode!r} is not one of {INTERFERENCE_MODES}")


def interference_score(t_new: np.ndarray, c_new: np.ndarray, t_server: np.ndarray, c_server: np.ndarray,
                       mode: str = "literal_abs") -> np.ndarray:
    """Eq. 14-16, the predicted interference of placing a job on each server (lower is better).

    ``Interf_1 = t_new - c_server`` (eq. 14), ``Interf_2 = t_server - c_new`` (eq. 15),
    ``I = sum_k |Interf_1| + |Interf_2|`` (eq. 16, ``literal_abs``). The ``hinge`` ablation (qin.md A4) counts only
    violations: ``sum_k max(0, c_server - t_new) + max(0, c_new - t_server)``.

    :param t_new, c_new: the job's tolerated / caused scores, shape ``(15,)``.
    :param t_server, c_server: per server, shape ``(N, 15)``: min of t and sum of c over the server's assigned
        unfinished jobs (qin.md A5); an empty server has t = 100 and c = 0 (qin.md A4).
    :returns: ``I``, shape ``(N,)``.
    """
    _check_mode(mode)
    d1 = np.asarray(t_new, dtype=float)[None, :] - np.asarray(c_server, dtype=float)
    d2 = np.asarray(t_server, dtype=float) - np.asarray(c_new, dtype=float)[None, :]
    if mode == "literal_abs":
        return np.abs(d1).sum(axis=1) + np.abs(d2).sum(axis=1)
    return np.maximum(-d1, 0.0).sum(axis=1) + np.maximum(-d2, 0.0).sum(axis=1)


def interference_slowdown(pressure: np.ndarray, t: np.ndarray, max_slowdown: float = MAX_SLOWDOWN) -> np.ndarray:
    """qin.md §1.9: ``S = min(3, 1 + sum_k 0.05 w_k (P_k / t_k)^2)`` (pressure equal to the tolerated score costs
    the iBench 5 %), with the weights of :mod:`joulegym.devices.cpu` (the simulator's ground truth uses
    :func:`joulegym.devices.cpu.interference_slowdown`, the same formula with the cap 3). Works on ``(..., 15)``
    arrays; returns ``(...)``."""
    ratio = np.asarray(pressure, dtype=float) / np.maximum(np.asarray(t, dtype=float), 1e-9)
    # numpy's reduction, not a BLAS product: BLAS sums in an order that depends on the CPU's kernel
    return np.minimum(max_slowdown, 1.0 + SLOWDOWN_PER_UNIT * np.sum(np.square(ratio) * SOI_WEIGHTS, axis=-1))


def dchoice_flist(interference: np.ndarray, goal: np.ndarray, d: int, p_frac: float = 0.5,
                  tiebreak: np.ndarray | None = None) -> np.ndarray:
    """The Flist of Alg. 3 / 4 (qin.md §3.5): candidate positions, a multiset of up to ``2 d`` entries.

    ``order_I`` sorts by (interference, tiebreak, index); the first ``d`` enter the Flist (D1 = d, Alg. 3
    l. 4-7); the top ``k = max(d, ceil(p_frac n))`` of ``order_I`` form the subset (l. 8), sorted by (-goal,
    tiebreak, index), whose first ``d`` enter too (D2 = d, l. 9-11). A candidate in both halves appears twice.

    :param interference: lower is better, shape ``(n,)``.
    :param goal: higher is better (H for performance, -E for energy, -E*T for EDP), shape ``(n,)``.
    :param d: number of choices (>= 1).
    :param p_frac: the top-P fraction of the interference order (0, 1].
    :param tiebreak: lower first (the current load L_c); default all zero.
    """
    interference = np.asarray(interference, dtype=float)
    goal = np.asarray(goal, dtype=float)
    n = interference.shape[0]
    if n < 1 or goal.shape != interference.shape:
        raise ValueError(f"interference and goal must be non-empty and of one shape, got {interference.shape} "
                         f"and {goal.shape}")
    if isinstance(d, bool) or int(d) != d or d < 1:
        raise ValueError(f"d must be an integer >= 1, got {d!r}")
    if not 0.0 < p_frac <= 1.0:
        raise ValueError(f"p_frac must be in (0, 1], got {p_frac!r}")
    tb = np.zeros(n) if tiebreak is None else np.asarray(tiebreak, dtype=float)
    idx = np.arange(n)
    order_i = np.lexsort((idx, tb, interference))
    d = min(int(d), n)
    k = min(n, max(d, math.ceil(p_frac * n)))
    subset = order_i[:k]
    order_g = subset[np.lexsort((subset, tb[subset], -goal[subset]))]
    return np.concatenate((order_i[:d], order_g[:d]))


def check_rule(rule: str) -> str:
    if rule not in DCHOICE_RULES:
        raise ValueError(f"dchoice_rule={rule!r} is not one of {DCHOICE_RULES}")
    return rule


def dchoice_select(interference: np.ndarray, goal: np.ndarray, d: int, rng: np.random.Generator,
                   p_frac: float = 0.5, tiebreak: np.ndarray | None = None, rule: str = "random-of-top-d") -> int:
    """Alg. 3 l. 12 / Alg. 4 l. 13 (qin.md §3.5); returns the position. ``random-of-top-d``: a uniform pick over
    the Flist entries (the paper's "RandomlySelectOne(Flist)"); ``least-loaded-of-d``: the Flist entry with the
    least ``tiebreak`` (the load L; ties: Flist order), the balls-into-bins rule of §5.2 [52]."""
    flist = dchoice_flist(interference, goal, d, p_frac, tiebreak)
    if check_rule(rule) == "random-of-top-d":
        return int(flist[rng.integers(flist.shape[0])])
    load = np.zeros(np.shape(interference)[0]) if tiebreak is None else np.asarray(tiebreak, dtype=float)
    return int(flist[np.argmin(load[flist])])


def eligible_min(values: np.ndarray, runtime_s: np.ndarray, pl: float) -> tuple[np.ndarray, np.ndarray]:
    """Per server, the minimum of ``values[i, j]`` over the PL-eligible V/F levels ``j`` (qin.md §3.5, A8):
    ``T(i, j) <= T(i, top) / (1 - PL)``; the top level is always eligible. Returns ``(min, argmin level)``."""
    if not 0.0 <= pl < 1.0:
        raise ValueError(f"pl (performance-loss threshold) must be in [0, 1), got {pl!r}")
    runtime_s = np.asarray(runtime_s, dtype=float)
    limit = runtime_s[:, -1:] / (1.0 - pl) * (1.0 + 1e-12)
    masked = np.where(runtime_s <= limit, np.asarray(values, dtype=float), np.inf)
    level = np.argmin(masked, axis=1)
    return masked[np.arange(masked.shape[0]), level], level


def qin_goal(focus: str, mips: np.ndarray, energy_j: np.ndarray, runtime_s: np.ndarray,
             pl: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Qin_C's goal score per server (higher is better) and the chosen initial V/F level (qin.md §3.5, A8-A9).

    ``perf``: G = predicted MIPS at the top level; ``energy``: G = -min eligible E (PL 0.5); ``edp``:
    G = -min eligible E*T (PL 0.1). Arrays are ``(N, L)`` with levels ascending.
    """
    if focus not in FOCUSES:
        raise ValueError(f"focus={focus!r} is not one of {FOCUSES}")
    mips = np.asarray(mips, dtype=float)
    top = mips.shape[1] - 1
    if focus == "perf":
        return mips[:, top], np.full(mips.shape[0], top)
    pl = DEFAULT_PL[focus] if pl is None else pl
    values = np.asarray(energy_j, dtype=float)
    if focus == "edp":
        values = values * np.asarray(runtime_s, dtype=float)
    best, level = eligible_min(values, runtime_s, pl)
    return -best, level


def qin_cluster_choose(t_new: np.ndarray, c_new: np.ndarray, mips: np.ndarray, energy_j: np.ndarray,
                       runtime_s: np.ndarray, t_server: np.ndarray, c_server: np.ndarray, load: np.ndarray,
                       rng: np.random.Generator, focus: str = "perf", d: int | None = None, p_frac: float = 0.5,
                       mode: str = "literal_abs", pl: float | None = None,
                       valid: np.ndarray | None = None, rule: str = "random-of-top-d") -> tuple[int, int]:
    """Qin's cluster-level decision (Alg. 1 + 3, qin.md §3.5): ``(server, initial V/F level)``.

    :param mips, energy_j, runtime_s: the job's predicted scores per (server, level), shape ``(N, L)``.
    :param load: the servers' load (the tiebreak and the ``least-loaded-of-d`` key), shape ``(N,)``; the reference
        policy passes the size-blind one a deployed scheduler has (``QinView.jobs_drain_s``).
    :param d: ``None`` = :func:`d_default` over the valid servers.
    :param valid: servers that may be chosen (default all).
    :param rule: how the Flist pick is made (:data:`DCHOICE_RULES`).
    """
    n = np.asarray(load).shape[0]
    cand = np.arange(n) if valid is None else np.flatnonzero(valid)
    if cand.size == 0:
        raise ValueError("valid: no server may be chosen (empty cluster)")
    inter = interference_score(t_new, c_new, t_server[cand], c_server[cand], mode)
    goal, level = qin_goal(focus, mips[cand], energy_j[cand], runtime_s[cand], pl)
    d = d_default(cand.size) if d is None else d
    pos = dchoice_select(inter, goal, d, rng, p_frac, np.asarray(load, dtype=float)[cand], rule)
    return int(cand[pos]), int(level[pos])


def kubernetes_choose(pods: np.ndarray, cores: np.ndarray, mem_gb: np.ndarray, rng: np.random.Generator,
                      cpu_req: float = 0.1, mem_req_gb: float = 0.2, valid: np.ndarray | None = None) -> int:
    """Kubernetes v1.14's default scoring (qin.md §5.1): LeastRequested + BalancedAllocation, argmax, random ties.

    Pods are BestEffort, so every pod counts Kubernetes' default non-zero request (0.1 CPU, 200 MB):
    ``LeastRequested = 10 mean_{cpu,mem}((cap - req_sum - req) / cap)``,
    ``BalancedAllocation = 10 - 10 |cpuFrac - memFrac|``, with the fractions including the new pod.

    :param pods: pods (assigned unfinished jobs) per server.
    """
    pods = np.asarray(pods, dtype=float)
    cores = np.asarray(cores, dtype=float)
    mem_gb = np.asarray(mem_gb, dtype=float)
    cpu_frac = (pods + 1.0) * cpu_req / cores
    mem_frac = (pods + 1.0) * mem_req_gb / mem_gb
    least = 10.0 * 0.5 * ((1.0 - cpu_frac) + (1.0 - mem_frac))
    balanced = 10.0 - 10.0 * np.abs(cpu_frac - mem_frac)
    score = least + balanced
    if valid is not None:
        score = np.where(valid, score, -np.inf)
    best = np.flatnonzero(score >= score.max() - 1e-12)
    return int(best[rng.integers(best.size)]) if best.size > 1 else int(best[0])


def paragon_choose(t_new: np.ndarray, c_new: np.ndarray, mips: np.ndarray, t_server: np.ndarray,
                   c_server: np.ndarray, valid: np.ndarray | None = None) -> int:
    """Paragon (qin.md §5.1, A21): greedy d = 1 with the same predictors, at f_max.

    Candidates: servers with ``t_server - c_new >= 0`` and ``t_new - c_server >= 0`` on every SoI; if none, the
    servers of minimum total violation. Among them the highest predicted MIPS at the top level, ties broken
    by the minimum L1 norm (eq. 16, best fit), then the lowest index.
    """
    d1 = np.asarray(t_server, dtype=float) - np.asarray(c_new, dtype=float)[None, :]
    d2 = np.asarray(t_new, dtype=float)[None, :] - np.asarray(c_server, dtype=float)
    violation = np.maximum(-d1, 0.0).sum(axis=1) + np.maximum(-d2, 0.0).sum(axis=1)
    if valid is not None:
        violation = np.where(valid, violation, np.inf)
    cand = np.flatnonzero(violation <= violation.min() + 1e-12)
    h = np.asarray(mips, dtype=float)[cand, -1]
    l1 = np.abs(d1[cand]).sum(axis=1) + np.abs(d2[cand]).sum(axis=1)
    return int(cand[np.lexsort((cand, l1, -h))[0]])


def mage_choose(t_new: np.ndarray, mips: np.ndarray, c_server: np.ndarray, cores: np.ndarray,
                threads: np.ndarray, n_threads_new: int, max_slowdown: float = MAX_SLOWDOWN,
                valid: np.ndarray | None = None) -> int:
    """Mage (qin.md §5.1, A21): greedy d = 1 maximising predicted performance under co-location.

    ``argmax_i H_i / S_i * min(1, cores_i / (threads_i + n_m))``, with ``S_i`` the §1.9 slowdown of the
    CF-predicted scores (the server's summed caused pressure against the job's tolerance), H at f_max.
    """
    slowdown = interference_slowdown(np.asarray(c_server, dtype=float), np.asarray(t_new, dtype=float)[None, :],
                                     max_slowdown)
    share = np.minimum(1.0, np.asarray(cores, dtype=float) / (np.asarray(threads, dtype=float) + n_threads_new))
    score = np.asarray(mips, dtype=float)[:, -1] / slowdown * share
    if valid is not None:
        score = np.where(valid, score, -np.inf)
    return int(np.argmax(score))


def dac_keys(key: str, mips: np.ndarray, energy_j: np.ndarray, c_hat: np.ndarray) -> np.ndarray:
    """Per-job DAC sort keys, ascending = dispatched first (paper §6, qin.md §3.7, A16).

    ``H_desc``: minus the average predicted MIPS over the SC columns; ``E_asc``: the average predicted energy;
    ``I_asc``: the job's total predicted caused pressure ``sum_k c_k``. ``mips`` / ``energy_j``: ``(k, N, L)``
    or ``(k, SCs)``; ``c_hat``: ``(k, 15)``.
    """
    if key not in DAC_KEYS:
        raise ValueError(f"DAC key={key!r} is not one of {DAC_KEYS}")
    if key == "H_desc":
        m = np.asarray(mips, dtype=float)
        return -m.reshape(m.shape[0], -1).mean(axis=1)
    if key == "E_asc":
        e = np.asarray(energy_j, dtype=float)
        return e.reshape(e.shape[0], -1).mean(axis=1)
    return np.asarray(c_hat, dtype=float).sum(axis=1)


def dac_order(keys: np.ndarray) -> np.ndarray:
    """One stable ascending ranking of the queue by ``keys`` (positions)."""
    return np.argsort(np.asarray(keys, dtype=float), kind="stable")


def dac_double_and_rank(keys: np.ndarray, sigma_s: float | None = None,
                        c_rank_s: float = DAC_RANK_COST_S) -> tuple[np.ndarray, float]:
    """DAC's double-and-rank loop (paper §6, qin.md §3.7): rank ``Q[0:high]``, double ``high`` until the charged
    ranking time reaches ``sigma_s`` or the whole queue is ranked.

    :param keys: the queue's keys in queue order (ascending = first).
    :param sigma_s: the overhead threshold sigma_DAC (s); ``None`` ranks the whole queue (one full sort).
    :returns: ``(order, cost_s)``: the positions to dispatch now (the ranked prefix, in rank order) and the
        ranking time charged (``c_rank k log2(k + 1)`` per round).
    """
    keys = np.asarray(keys, dtype=float)
    n = keys.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.int64), 0.0
    if sigma_s is not None and not sigma_s >= 0:
        raise ValueError(f"sigma_dac_s must be None or >= 0, got {sigma_s!r}")
    high, cost = 1, 0.0
    while True:
        order = np.argsort(keys[:high], kind="stable")
        cost += c_rank_s * high * math.log2(high + 1)
        if high >= n or (sigma_s is not None and cost >= sigma_s):
            return order, cost
        high = min(2 * high, n)


def period_delay_s(instr_done: Any, cpi: Any, f_hz: Any, f_high_hz: Any) -> Any:
    """Eq. 19: ``T_delay = I_done * CPI * (f_H / f - 1) / f_H``, the extra time of running below f_H.

    For a core busy for the whole period this is ``Delta (1 - f / f_H)`` (qin.md §2.3).
    """
    return np.asarray(instr_done) * np.asarray(cpi) * (np.asarray(f_high_hz) / np.asarray(f_hz) - 1.0) / f_high_hz


def dvfs_levels(delay_s: np.ndarray, elapsed_s: np.ndarray, period_s: float, freqs_hz: np.ndarray,
                cpi_hat: np.ndarray, instr_hat_high: np.ndarray, remaining_instr: np.ndarray,
                pl: np.ndarray | float) -> np.ndarray:
    """The DVFS controller of qin.md §3.6 (after [9]), vectorised over cores: the lowest level whose predicted
    accumulated performance loss stays within PL, else the top level.

    For each level ``f`` (ascending): ``I_f = min(Ihat_H f / f_H, remaining)``, ``dly = I_f CPI_hat (f_H / f - 1)
    / f_H`` (eq. 19), feasible if ``(D_c + dly) / (T_c + Delta) <= PL`` (eq. 18).

    :param delay_s, elapsed_s: per core accumulated delay D_c and elapsed time T_c.
    :param freqs_hz: per core levels, ``(C, L)`` ascending (the top level is f_H).
    :param cpi_hat, instr_hat_high: the Kalman predictions for the next period (CPI; instructions at f_H).
    :param remaining_instr: instructions queued on the core.
    :param pl: per-core or scalar threshold.
    :returns: level index per core.
    """
    freqs = np.asarray(freqs_hz, dtype=float)
    f_high = freqs[:, -1:]
    work = np.minimum(np.asarray(instr_hat_high, dtype=float)[:, None] * freqs / f_high,
                      np.asarray(remaining_instr, dtype=float)[:, None])
    dly = work * np.asarray(cpi_hat, dtype=float)[:, None] * (f_high / freqs - 1.0) / f_high
    ok = (np.asarray(delay_s, dtype=float)[:, None] + dly) <= (
        np.asarray(pl, dtype=float).reshape(-1, 1) * (np.asarray(elapsed_s, dtype=float)[:, None] + period_s)
        + 1e-15)
    ok[:, -1] = True  # f_H adds no delay; when even it exceeds PL the controller runs at f_H
    return np.argmax(ok, axis=1)


def dvfs_levels_per_app(app_delay_s: np.ndarray, app_cpu_s: np.ndarray, thread_core: np.ndarray,
                        thread_share: np.ndarray, app_threads: np.ndarray, period_s: float,
                        freqs_hz: np.ndarray, cpi_hat: np.ndarray, instr_hat_high: np.ndarray,
                        remaining_instr: np.ndarray, pl: float) -> np.ndarray:
    """The §3.6 controller with per-app accounting (qin.md §3.6: "migration breaks per-core accounting"):
    a core's level is the lowest at which every thread on it keeps its app's accumulated loss within PL,
    ``(D_app + n share dly_c) <= PL (T_app + n share Delta)`` with ``D_app`` / ``T_app`` the app's eq. 19 delay and
    CPU time so far, ``dly_c`` the core's predicted delay at that level (as in :func:`dvfs_levels`) and ``n``
    the app's running threads (each core assumes the app's other threads fare like this one, since the cores
    decide at once).

    :param app_delay_s, app_cpu_s: per thread, its app's totals.
    :param thread_core: per thread, the core position (0..C-1); ``thread_share``: its CPU share there;
        ``app_threads``: its app's running thread count.
    :returns: level index per core (cores without threads get the lowest feasible level, 0).
    """
    freqs = np.asarray(freqs_hz, dtype=float)
    n_cores = freqs.shape[0]
    f_high = freqs[:, -1:]
    work = np.minimum(np.asarray(instr_hat_high, dtype=float)[:, None] * freqs / f_high,
                      np.asarray(remaining_instr, dtype=float)[:, None])
    dly = work * np.asarray(cpi_hat, dtype=float)[:, None] * (f_high / freqs - 1.0) / f_high  # (C, L)
    share = (np.asarray(thread_share, dtype=float) * np.asarray(app_threads, dtype=float))[:, None]
    lhs = np.asarray(app_delay_s, dtype=float)[:, None] + share * dly[thread_core]
    rhs = pl * (np.asarray(app_cpu_s, dtype=float)[:, None] + share * period_s) + 1e-15
    # feasibility is monotone in the level (less delay at a higher f), so each thread needs its first feasible
    # level and a core takes the highest of its threads' needs (the top level is always allowed)
    ok = lhs <= rhs
    ok[:, -1] = True
    n_levels = freqs.shape[1]
    need = np.argmax(ok, axis=1)
    # the highest need per core without ufunc.at: count (core, level) pairs, take the last level present
    present = np.bincount(np.asarray(thread_core) * n_levels + need, minlength=n_cores * n_levels)
    present = present.reshape(n_cores, n_levels) > 0
    return np.where(present.any(axis=1), n_levels - 1 - np.argmax(present[:, ::-1], axis=1), 0)


def node_dchoice(threads_rem: np.ndarray, thread_core: np.ndarray, rate: np.ndarray, energy_per_s: np.ndarray | None,
                 instr_hat: np.ndarray | None, rng: np.random.Generator, focus: str = "perf", d: int = 2,
                 p_frac: float = 0.5, rule: str = "random-of-top-d") -> np.ndarray:
    """Qin_N on one server (Alg. 2 + 4, qin.md §3.5 node level): each thread, in id order, is placed or re-mapped by
    the D-choice rule; core loads are updated as it goes (later threads see earlier placements).

    Per thread ``t`` and core ``c``: ``rate[t, c]`` (instr/s, "H = instruction count"), the interference as extra
    delay ``I = (L_c - own) / rate`` (the queued work ahead of it, A12), the next-period time ``T = Ihat_t / rate``
    and energy ``E = P_c T``; goal ``rate`` (perf), ``-E`` (energy) or ``-E T`` (EDP).

    The node level balances load to cut the threads' CPU queueing (paper §5.2, §7.2.2: "reduces the threads CPU
    queuing time"): a thread already on a core moves only to a core where its delay ``I`` is strictly lower, and a
    new thread starts on an idle core when there is one; among those candidates (idle cores first) the D-choice
    rule picks. A thread alone on its core (``I = 0``) therefore never moves: with one thread per core this is
    Sniper's pinned mapping, and the rule can only shorten the queues.

    :param threads_rem: remaining instructions per thread (its contribution to L_c), ``(T,)``.
    :param thread_core: current core position per thread (``-1`` = new), ``(T,)``.
    :param rate: ``(T, C)``; ``energy_per_s``: the core's busy power, ``(C,)``; ``instr_hat``: ``(T,)`` (both may be
        ``None`` with the perf focus).
    :param rule: the Flist pick (:data:`DCHOICE_RULES`).
    :returns: the new core position per thread.
    """
    if focus not in FOCUSES:
        raise ValueError(f"focus={focus!r} is not one of {FOCUSES}")
    check_rule(rule)
    n_threads, n_cores = rate.shape
    # a handful of cores and threads per server: scalar Python beats numpy's per-call cost here
    rem = np.asarray(threads_rem, dtype=float).tolist()
    cores = np.asarray(thread_core, dtype=np.int64).tolist()
    rates = np.maximum(rate, 1e-30).tolist()
    # (the perf focus ranks by rate: its energy terms may be None)
    power = None if energy_per_s is None else np.asarray(energy_per_s, dtype=float).tolist()
    ihat = [0.0] * n_threads if instr_hat is None else np.asarray(instr_hat, dtype=float).tolist()
    load, count = [0.0] * n_cores, [0] * n_cores
    for t, c in enumerate(cores):
        if c >= 0:
            load[c] += rem[t]
            count[c] += 1
    every = list(range(n_cores))
    # every thread's rate the same on every core (one core type at one level): then no core is lower than where a
    # thread waits unless some core's load is below the work queued ahead of it (a cheap test before the exact one)
    uniform = bool((rate == rate[:, :1]).all())
    for t in range(n_threads):
        cur = cores[t]
        if cur >= 0 and (count[cur] == 1 or (uniform and min(load) >= load[cur] - rem[t])):
            continue  # alone on its core (its own work is not queueing), or no core with less queued ahead
        r = rates[t]
        cand = _node_candidates(cur, rem[t], r, load, count, every)
        if not cand:
            continue
        if len(cand) == 1:
            c = cand[0]
        else:
            inter = {c: load[c] / r[c] for c in cand}
            goal = _node_goal(focus, cand, r, power, ihat[t])
            c = _dchoice_scalar(cand, inter, goal, load, d, p_frac, rng, rule)
        if cur >= 0:
            load[cur] -= rem[t]
            count[cur] -= 1
        load[c] += rem[t]
        count[c] += 1
        cores[t] = c
    return np.array(cores, dtype=np.int64)


def _node_candidates(cur: int, own: float, r: list, load: list, count: list, every: list[int]) -> list[int]:
    """The cores a thread may go to: for a placed thread (not alone) those where its queueing delay is strictly
    lower than where it is, for a new one every core; idle cores first."""
    if cur >= 0:
        bound = (load[cur] - own) / r[cur] * (1.0 - 1e-12)  # strictly lower, beyond the loads' round-off
        cand = [c for c in every if load[c] < bound * r[c] and c != cur]
        if not cand:
            return cand
    else:
        cand = every
    idle = [c for c in cand if count[c] == 0]
    return idle or cand


def _node_goal(focus: str, cand: list[int], r: list, power: list, instr: float) -> dict[int, float]:
    if focus == "perf":
        return {c: r[c] for c in cand}
    if focus == "energy":
        return {c: -power[c] * instr / r[c] for c in cand}
    return {c: -power[c] * (instr / r[c]) ** 2 for c in cand}


def _dchoice_scalar(cand: list[int], inter: dict[int, float], goal: dict[int, float], load: list[float], d: int,
                    p_frac: float, rng: np.random.Generator, rule: str) -> int:
    """:func:`dchoice_flist` + :func:`dchoice_select` over the candidate cores ``cand``, in scalar Python (the same
    orders: by (I, load, index), then the top-P subset by (-goal, load, index))."""
    order_i = sorted(cand, key=lambda c: (inter[c], load[c], c))
    dd = min(d, len(cand))
    k = min(len(cand), max(dd, math.ceil(p_frac * len(cand))))
    order_g = sorted(order_i[:k], key=lambda c: (-goal[c], load[c], c))
    flist = order_i[:dd] + order_g[:dd]
    if rule == "random-of-top-d":
        return flist[int(rng.integers(len(flist)))]
    return min(flist, key=lambda c: load[c])  # the first of the least loaded (Flist order)
