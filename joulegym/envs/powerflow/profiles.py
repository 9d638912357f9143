"""The per-configuration profiles of the PowerFlow simulator (Gu et al. §5.2, §6.2; ``docs/families/powerflow.md``
§4-§5): the true iteration time and energy per frequency level of a (model, batch size, GPUs, placement shape), the
predicted ones (the pooled fit of a noisy profile, or the truth for the oracle) and ``P_max``.

Profiles are pure functions of their key, so the caches live at class level, shared by every simulator with the
same (device, GPUs per node, truth noise, predictor).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, ClassVar

import numpy as np

from joulegym.workloads import dl_models as dm


@lru_cache(maxsize=8)
def catalog_p_max(device: str = "v100") -> float:
    """P_max (paper §5.2, docs §5): mean per-GPU power at (n = 1, f_max) over the Table 1 (model, BS) pool
    (``dm.MODEL_NAMES``: the trace-only models ResNet-50 and BERT are not in the paper's pool)."""
    hw = dm.hardware(device)
    vals = [float(dm.power_w(dm.perf_params(m, device), hw, bs, 1, hw.fmax_ghz))
            for m in dm.MODEL_NAMES for bs in dm.CATALOG[m].bs_pool]
    return float(np.mean(vals))


class Profiles:
    """True and predicted per-configuration (T, E) rows over the frequency grid, cached per (model, BS, n, r, multi)."""

    _TRUE: ClassVar[dict[tuple, dict]] = {}
    _PRED: ClassVar[dict[tuple, dict]] = {}
    _TABLES: ClassVar[dict[tuple, dict]] = {}
    _MEANS: ClassVar[dict[tuple, dict]] = {}

    def __init__(self, device: str, gpn: int, truth_noise: float, predictor: str) -> None:
        self.device, self.gpn, self.noise, self.predictor = device, gpn, truth_noise, predictor
        self.hw = dm.hardware(device)
        self.f = self.hw.freqs_ghz
        # shared across simulator instances (every reset of an env builds a new simulator): profiles are pure
        # functions of their key, so the caches live at class level, keyed by everything they depend on
        key = (device, gpn, truth_noise, predictor)
        self._true = Profiles._TRUE.setdefault(key, {})
        self._pred = Profiles._PRED.setdefault(key, {})
        self._tables = Profiles._TABLES.setdefault(key, {})
        self._means = Profiles._MEANS.setdefault(key, {})

    def __getstate__(self) -> dict[str, Any]:  # a copy re-attaches the shared class-level caches
        return {"args": (self.device, self.gpn, self.noise, self.predictor)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(*state["args"])

    def profiling_means(self, model: str, bs: int, n: int, r: int, multi: bool) -> tuple[float, float]:
        """Frequency-averaged (rate, power) of an online-profiling window (equal time per level)."""
        key = (model, bs, n, r, multi)
        out = self._means.get(key)
        if out is None:
            t, e = self.true(model, bs, n, r, multi)
            out = self._means[key] = (float(np.mean(1.0 / t)), float(np.mean(e / t)))
        return out

    def predicted_tables(self, model: str, bs: int, n_values: tuple[int, ...]):
        """Stacked predicted ``(T, E)`` of shape ``(len(n_values), F)`` (cached per model, BS)."""
        key = (model, bs, n_values)
        tab = self._tables.get(key)
        if tab is None:
            rows = [self.predicted(model, bs, k) for k in n_values]
            tab = self._tables[key] = (np.array([r[0] for r in rows]), np.array([r[1] for r in rows]))
        return tab

    def true_tables(self, model: str, bs: int, n_values: tuple[int, ...]):
        """Stacked true ``(T, E)`` (packed placement), as :meth:`predicted_tables` (cached per model, BS)."""
        key = ("true", model, bs, n_values)
        tab = self._tables.get(key)
        if tab is None:
            rows = [self.true(model, bs, k) for k in n_values]
            tab = self._tables[key] = (np.array([r[0] for r in rows]), np.array([r[1] for r in rows]))
        return tab

    def _rows(self, params: dm.PerfParams, model: str, bs: int, n: int, r: int, multi: bool, noisy: bool):
        t, tg, ts = dm.components(params, bs / n, n, r, multi, self.f, self.gpn)
        e = dm.energy_from_components(params, bs / n, n, self.f, t, tg, ts)
        if noisy and self.noise > 0:  # monotone in f (docs §4, "noisy ground truth")
            t, e = dm.apply_truth_noise(t, e, dm.noise_factors(model, bs, [n], len(self.f), self.noise)[0])
        return np.asarray(t, dtype=float), np.asarray(e, dtype=float)

    def true(self, model: str, bs: int, n: int, r: int | None = None, multi: bool | None = None):
        r = min(n, self.gpn) if r is None else r
        multi = n > self.gpn if multi is None else multi
        key = (model, bs, n, r, multi)
        row = self._true.get(key)
        if row is None:
            row = self._true[key] = self._rows(dm.perf_params(model, self.device), model, bs, n, r, multi, True)
        return row

    def predicted_profiling_power(self, model: str, bs: int, n: int) -> float:
        """Predicted mean power of an online-profiling window on ``n`` GPUs (equal time per level; cached)."""
        key = ("predicted-profiling", model, bs, n)
        out = self._means.get(key)
        if out is None:
            t, e = self.predicted(model, bs, n)
            out = self._means[key] = float(np.mean(e / t))
        return out

    def true_power(self, model: str, bs: int, n: int, r: int, multi: bool) -> list[float]:
        """True power ``E / T`` per frequency level (a list: the power repair reads single levels; cached)."""
        key = ("power", model, bs, n, r, multi)
        out = self._means.get(key)
        if out is None:
            t, e = self.true(model, bs, n, r, multi)
            out = self._means[key] = (e / t).tolist()  # elementwise: the same division as e[f] / t[f]
        return out

    def predicted(self, model: str, bs: int, n: int):
        if self.predictor == "oracle":
            return self.true(model, bs, n)
        key = (model, bs, n)
        row = self._pred.get(key)
        if row is None:
            params = dm.fitted_params(model, self.device, sigma=self.noise if self.noise > 0 else 1e-3)
            row = self._pred[key] = self._rows(params, model, bs, n, min(n, self.gpn), n > self.gpn, False)
        return row
