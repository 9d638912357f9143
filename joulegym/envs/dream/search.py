"""MapScore's (alpha, beta) optimisation (Kim et al., ASPLOS'23 §3.6, Fig. 3) and the online adaptivity
engine (§4.4); ``docs/families/dream.md`` §2.

- :class:`ParamSearch` / :func:`optimize`: the iterative search of §3.6 as ask/tell: around the centre,
  neighbouring and distant pairs, a move to the UXCost-weighted interpolation of the best two, a shrinking
  radius.
- :class:`AdaptivityEngine`: the online engine, one candidate per evaluation window, restarted on a change of
  the model list (task-level dynamicity) or of the load (DLV or drop rate drift).
- :func:`grid_optimum`: the exhaustive grid that Figs. 10/11's "global optimum" is measured against.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

PARAM_LO, PARAM_HI = 0.0, 2.0  # alpha, beta search range [P §5.2]


def _clip(p: tuple[float, float], lo: float, hi: float) -> tuple[float, float]:
    return (min(max(p[0], lo), hi), min(max(p[1], lo), hi))


class ParamSearch:
    """The alpha/beta search of §3.6 as ask/tell (docs §2).

    Each step samples the centre, its 4 neighbours at radius ``r`` and 4 distant pairs at ``2r`` on the
    diagonals (clipped to ``[lo, hi]^2``, duplicates removed), takes the two lowest UXCosts ``(p1, u1)``,
    ``(p2, u2)`` and moves to ``p1 + (p2 - p1) u1 / (u1 + u2)`` [P §3.6: "calculates the difference of the
    minimum two UXCost pairs, and moves to the interpolated point"]; then ``r *= shrink`` until
    ``r < r_min``: with the defaults (0.5, 0.5, 0.03) exactly 5 steps (docs §3 #11).
    """

    def __init__(self, c0: tuple[float, float], *, r0: float = 0.5, shrink: float = 0.5, r_min: float = 0.03,
                 lo: float = PARAM_LO, hi: float = PARAM_HI) -> None:
        if not (0 < shrink < 1 and r0 > 0 and r_min > 0 and lo < hi):
            raise ValueError(f"need r0 > 0, r_min > 0, 0 < shrink < 1 and lo < hi, got r0={r0}, r_min={r_min}, "
                             f"shrink={shrink}, lo={lo}, hi={hi}")
        self.lo, self.hi, self.shrink, self.r_min = lo, hi, shrink, r_min
        self.center = _clip((float(c0[0]), float(c0[1])), lo, hi)
        self.radius = float(r0)
        self.trajectory: list[dict[str, Any]] = []  # one entry per completed step
        self.evaluations: list[tuple[tuple[float, float], float]] = []
        self.best: tuple[tuple[float, float], float] | None = None
        self._pending: list[tuple[float, float]] = []
        self._results: list[tuple[tuple[float, float], float]] = []
        self._start_step()

    @property
    def done(self) -> bool:
        return self.radius < self.r_min

    def _start_step(self) -> None:
        if self.done:
            self._pending = []
            return
        c, r = self.center, self.radius
        cand = [c, (c[0] + r, c[1]), (c[0] - r, c[1]), (c[0], c[1] + r), (c[0], c[1] - r),
                (c[0] + 2 * r, c[1] + 2 * r), (c[0] + 2 * r, c[1] - 2 * r), (c[0] - 2 * r, c[1] + 2 * r),
                (c[0] - 2 * r, c[1] - 2 * r)]
        seen: list[tuple[float, float]] = []
        for p in cand:
            q = _clip(p, self.lo, self.hi)
            q = (round(q[0], 12), round(q[1], 12))
            if q not in seen:
                seen.append(q)
        self._pending = seen
        self._results = []

    @property
    def pending(self) -> list[tuple[float, float]]:
        """The current step's pairs not evaluated yet (empty when the search is over)."""
        return [] if self.done else self._pending[len(self._results):]

    def ask(self) -> tuple[float, float] | None:
        """The next pair to evaluate (None when the search is over)."""
        return self._pending[len(self._results)] if not self.done else None

    def tell(self, value: float) -> None:
        """The UXCost of the pair last returned by :meth:`ask`."""
        if self.done:
            raise ValueError("tell() after the search finished")
        p = self._pending[len(self._results)]
        value = float(value)
        self._results.append((p, value))
        self.evaluations.append((p, value))
        if self.best is None or value < self.best[1]:
            self.best = (p, value)
        if len(self._results) == len(self._pending):
            self._finish_step()

    def _finish_step(self) -> None:
        ranked = sorted(self._results, key=lambda pu: pu[1])  # stable: the earlier candidate wins ties
        (p1, u1), (p2, u2) = ranked[0], ranked[1] if len(ranked) > 1 else ranked[0]
        w = u1 / (u1 + u2) if (u1 + u2) > 0 else 0.0
        new = _clip((p1[0] + (p2[0] - p1[0]) * w, p1[1] + (p2[1] - p1[1]) * w), self.lo, self.hi)
        self.trajectory.append({"step": len(self.trajectory) + 1, "center": self.center, "radius": self.radius,
                                "evaluated": list(self._results), "best": p1, "best_uxcost": u1, "next": new})
        self.center = new
        self.radius *= self.shrink
        self._start_step()


def optimize(c0: tuple[float, float], evaluate: Callable[[tuple[float, float]], float], **kwargs: Any) -> ParamSearch:
    """Run :class:`ParamSearch` to the end with ``evaluate(pair) -> UXCost`` (offline mode);
    the locked parameters are ``result.center``; ``result.trajectory`` holds every step. An ``evaluate`` with a
    ``many(pairs)`` attribute (a memoising evaluator) is first given each step's pairs at once."""
    search = ParamSearch(c0, **kwargs)
    many = getattr(evaluate, "many", None)
    while (p := search.ask()) is not None:
        if many is not None and p == search.pending[0]:  # a step's pairs evaluated together (memoised)
            many(search.pending)
        search.tell(evaluate(p))
    return search


def grid_optimum(evaluate: Callable[[tuple[float, float]], float], step: float = 0.1, lo: float = PARAM_LO,
                 hi: float = PARAM_HI) -> tuple[tuple[float, float], float, np.ndarray]:
    """Exhaustive grid over ``[lo, hi]^2`` (step 0.1: 441 pairs, our global optimum for Figs. 10/11):
    ``(best pair, best value, values[i_alpha, i_beta])``."""
    n = round((hi - lo) / step) + 1
    axis = np.linspace(lo, hi, n)
    values = np.array([[evaluate((float(a), float(b))) for b in axis] for a in axis])
    ia, ib = np.unravel_index(int(np.argmin(values)), values.shape)
    return (float(axis[ia]), float(axis[ib])), float(values[ia, ib]), values


class AdaptivityEngine:
    """DREAM's online adaptivity engine (§4.4, docs §2), one evaluation window at a time.

    :meth:`step` is called at the end of each window with what was measured under the pair in force and
    returns the pair for the next window: while a search runs, the next candidate of :class:`ParamSearch`
    (one candidate per window; schedules keep being produced); once it finishes, the locked centre. A change
    of the active model list restarts the search (from a random pair at boot, from the locked pair later);
    a drift of the window DLV or drop rate by more than ``delta`` from its value at lock time restarts it
    with radius ``r0_load`` (docs §3 #11; delta = 0.1 absolute, W_eval = 200 ms).

    :param rng: the random start at boot (the policy's stream, :func:`joulegym.core.inner.policy_rng`).
    """

    def __init__(self, *, window_s: float = 0.2, r0: float = 0.5, r0_load: float = 0.25, shrink: float = 0.5,
                 r_min: float = 0.03, delta: float = 0.1, init: tuple[float, float] | None = None,
                 rng: np.random.Generator | None = None) -> None:
        if not window_s > 0:
            raise ValueError(f"window_s={window_s!r} must be > 0")
        self.window_s = float(window_s)
        self.r0, self.r0_load, self.shrink, self.r_min, self.delta = r0, r0_load, shrink, r_min, delta
        self.init = init
        self.reset(rng)

    def reset(self, rng: np.random.Generator | None = None) -> None:
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.models: tuple[int, ...] | None = None
        self.search: ParamSearch | None = None
        self.locked: tuple[float, float] | None = None
        self.params: tuple[float, float] = (1.0, 1.0)
        self.lock_rates: tuple[float, float] | None = None
        self.history: list[dict[str, Any]] = []

    def _start(self, c0: tuple[float, float], r0: float) -> None:
        self.search = ParamSearch(c0, r0=r0, shrink=self.shrink, r_min=self.r_min)
        self.locked = None
        self.params = self.search.ask() or c0

    def step(self, models: Sequence[int], window_uxcost: float | None, dlv_rate: float = 0.0,
             drop_rate: float = 0.0) -> tuple[float, float]:
        """Report the last window (``None`` before the first) and get the (alpha, beta) for the next one."""
        models = tuple(models)
        if window_uxcost is not None:
            self.history.append({"params": self.params, "uxcost": window_uxcost, "dlv_rate": dlv_rate,
                                 "drop_rate": drop_rate, "searching": self.search is not None})
        if models != self.models:  # task-level change (tracking the inference model list, §4.4)
            booting = self.models is None or (self.locked is None and self.search is None)
            self.models = models
            if booting and self.init is None:
                c0 = (float(self.rng.uniform(PARAM_LO, PARAM_HI)), float(self.rng.uniform(PARAM_LO, PARAM_HI)))
            elif booting:
                c0 = self.init
            else:
                c0 = self.locked or self.params
            self._start(c0, self.r0)
            return self.params
        if self.search is not None:
            return self._search_step(window_uxcost)
        if window_uxcost is not None:
            if self.lock_rates is None:
                self.lock_rates = (dlv_rate, drop_rate)
            elif abs(dlv_rate - self.lock_rates[0]) > self.delta or abs(drop_rate - self.lock_rates[1]) > self.delta:
                self._start(self.params, self.r0_load)  # system-load change (§4.4)
        return self.params

    def _search_step(self, window_uxcost: float | None) -> tuple[float, float]:
        assert self.search is not None
        if window_uxcost is not None:
            self.search.tell(window_uxcost)
        nxt = self.search.ask()
        if nxt is None:
            self.locked = self.params = self.search.center
            self.search = None
            self.lock_rates = None  # set by the first window run under the locked pair
        else:
            self.params = nxt
        return self.params
