"""Reusable predictors: collaborative filtering and a scalar Kalman filter (Qin, Guan & Ababei 2024, §3.1-3.2).

:class:`CollaborativeFilter` is the paper's utility-matrix completion (§3.1, eqs. 1-4): an SVD of the
matrix (eq. 1) gives the PQ initialisation, stochastic gradient descent over the known entries refines
it (eqs. 2-4), and a new row is *folded in* against frozen column factors. The paper leaves every
setting open; the defaults are docs/families/qin.md's (§2.1, A2, A3):

- entries are min-max normalised per matrix to [0, 1] (A3) and predictions de-normalised;
- missing entries are filled with column means before the SVD;
- rank ``r``: the smallest rank keeping >= 90 % of ``sum sigma^2``, clipped to [2, 5];
- factors ``a_u = row u of U S^(1/2)``, ``b_i = row i of V S^(1/2)`` (an equivalent split of
  ``Q = U``, ``P^T = S V^T``; the paper's p/q labels are swapped, A2); ``r_hat = a_u . b_i``;
- SGD ``a_u += eta (2 e b_i - lambda a_u)``, ``b_i += eta (2 e a_u - lambda b_i)`` with ``eta = 0.01``,
  ``lambda = 0.05``, entries in random order, until ``|delta RMSE| < 1e-4`` over an epoch or 500 epochs;
- fold-in: up to 200 passes of the same update over the new row's known entries with the column factors
  frozen. The new row starts from, and is regularised towards, the mean of the fitted row factors
  (a pull on ``a - a_bar`` instead of ``lambda a``), i.e. towards "a typical app" rather than towards
  zero: with 2 known entries and rank 2-5 the regulariser decides the unobserved directions. Its
  strength is empirical-Bayes by default (residual variance over the row factors' variance per
  dimension, so the fold-in converges to the Gaussian MAP row); ``fold_in_prior="ridge"`` uses eq. 3's
  ``lambda`` per visit instead [ASSUME; measured on the Qin matrices the empirical prior predicts the
  unprofiled SoIs better than the column mean, the ridge one does not: docs/families/qin.md].
  By default the fold-in's fixed point is solved directly (an ``r x r`` system per row, batched);
  ``fold_in_method="sgd"`` runs the passes, which at ``eta = 0.01`` stop short of that point within 200
  passes. Either way it is vectorised over the new rows (each row is independent once the columns are
  frozen).

:class:`ScalarKalmanFilter` is eqs. 5-11 with scalar state: a bank of independent filters (one per
core and signal), defaults of A14 (``A = 1, B = 0, H = 1, Q = 0.01, R = 0.1, P_0 = 1``; the first
measurement initialises the estimate).
"""

from __future__ import annotations

import math

import numpy as np

RANK_ENERGY = 0.9  # docs/families/qin.md §2.1: keep >= 90 % of sum sigma^2
RANK_BOUNDS = (2, 5)
LEARNING_RATE = 0.01
REGULARISATION = 0.05
MAX_EPOCHS = 500
TOLERANCE = 1e-4
FOLD_IN_PASSES = 200
FOLD_IN_PRIORS = ("empirical", "ridge")
FOLD_IN_METHODS = ("exact", "sgd")


class MinMaxScaler:
    """Per-matrix min-max normalisation to [0, 1] (A3); a constant matrix maps to 0."""

    def __init__(self, low: float, high: float) -> None:
        if not (math.isfinite(low) and math.isfinite(high) and high >= low):
            raise ValueError(f"need finite low <= high, got low={low}, high={high}")
        self.low = float(low)
        self.high = float(high)

    @classmethod
    def fit(cls, values: np.ndarray) -> MinMaxScaler:
        """The scaler of the finite entries of ``values`` (NaN = missing)."""
        known = np.asarray(values, dtype=float)
        known = known[np.isfinite(known)]
        if known.size == 0:
            raise ValueError("cannot normalise a matrix without known entries")
        return cls(float(known.min()), float(known.max()))

    @property
    def span(self) -> float:
        return self.high - self.low if self.high > self.low else 1.0

    def transform(self, values: np.ndarray) -> np.ndarray:
        return (np.asarray(values, dtype=float) - self.low) / self.span

    def inverse(self, values: np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=float) * self.span + self.low


def _check_matrix(name: str, matrix: np.ndarray, n_columns: int | None = None) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] == 0 or matrix.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array (NaN = missing), got shape {matrix.shape}")
    if n_columns is not None and matrix.shape[1] != n_columns:
        raise ValueError(f"{name} must have {n_columns} columns (the fitted matrix's), got {matrix.shape[1]}")
    if np.any(np.isinf(matrix)):
        raise ValueError(f"{name} must hold finite values or NaN for missing entries")
    return matrix


class CollaborativeFilter:
    """SVD + PQ reconstruction + SGD matrix completion, with fold-in of new rows (§3.1; docs/families/qin.md §2.1).

    :param rank: fixed rank, or ``None`` for the energy rule (``energy``, clipped to ``rank_bounds``).
    :param learning_rate: ``eta`` of eqs. 3-4.
    :param regularisation: ``lambda`` of eqs. 3-4.
    :param max_epochs: SGD epochs at most.
    :param tol: stop when the RMSE over the known entries changes by less than this over an epoch.
    :param fold_in_passes: SGD passes over a new row's known entries at most.
    :param fold_in_prior: strength of the fold-in pull towards the mean row factor: ``"empirical"``
        (residual variance / row-factor variance per dimension) or ``"ridge"`` (``lambda``).
    :param fold_in_method: ``"exact"`` solves for the fold-in's fixed point (``numpy.linalg.solve``, batched
        over the rows); ``"sgd"`` runs the ``fold_in_passes`` SGD passes of docs/families/qin.md §2.1.
    :param normalise: min-max normalise the matrix (A3).
    :param seed: seed of the entry order.
    """

    def __init__(self, *, rank: int | None = None, energy: float = RANK_ENERGY,
                 rank_bounds: tuple[int, int] = RANK_BOUNDS, learning_rate: float = LEARNING_RATE,
                 regularisation: float = REGULARISATION, max_epochs: int = MAX_EPOCHS, tol: float = TOLERANCE,
                 fold_in_passes: int = FOLD_IN_PASSES, fold_in_prior: str = "empirical",
                 fold_in_method: str = "exact", normalise: bool = True, seed: int = 0) -> None:
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 1):
            raise ValueError(f"rank must be None or a whole number >= 1, got {rank!r}")
        if not 0.0 < energy <= 1.0:
            raise ValueError(f"energy must be in (0, 1], got {energy!r}")
        if not (1 <= rank_bounds[0] <= rank_bounds[1]):
            raise ValueError(f"rank_bounds must be (low, high) with 1 <= low <= high, got {rank_bounds!r}")
        for name, value in (("learning_rate", learning_rate), ("tol", tol)):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        if not (math.isfinite(regularisation) and regularisation >= 0):
            raise ValueError(f"regularisation must be a finite number >= 0, got {regularisation!r}")
        for name, value in (("max_epochs", max_epochs), ("fold_in_passes", fold_in_passes)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
        self.fixed_rank = rank
        self.energy = float(energy)
        self.rank_bounds = (int(rank_bounds[0]), int(rank_bounds[1]))
        self.learning_rate = float(learning_rate)
        self.regularisation = float(regularisation)
        self.max_epochs = max_epochs
        self.tol = float(tol)
        self.fold_in_passes = fold_in_passes
        if fold_in_prior not in FOLD_IN_PRIORS:
            raise ValueError(f"fold_in_prior={fold_in_prior!r} is not one of {FOLD_IN_PRIORS}")
        self.fold_in_prior = fold_in_prior
        if fold_in_method not in FOLD_IN_METHODS:
            raise ValueError(f"fold_in_method={fold_in_method!r} is not one of {FOLD_IN_METHODS}")
        self.fold_in_method = fold_in_method
        self.normalise = bool(normalise)
        self.seed = seed
        self.rank = 0
        self.row_factors = np.zeros((0, 0))
        self.col_factors = np.zeros((0, 0))
        self.scaler = MinMaxScaler(0.0, 1.0)
        self.epochs_run = 0
        self.rmse_history: list[float] = []
        self.training_matrix = np.zeros((0, 0))

    @property
    def fitted(self) -> bool:
        return self.rank > 0

    def _choose_rank(self, singular: np.ndarray, limit: int) -> int:
        if self.fixed_rank is not None:
            return min(self.fixed_rank, limit)
        share = np.cumsum(singular**2) / max(float(np.sum(singular**2)), 1e-300)
        rank = int(np.searchsorted(share, self.energy - 1e-12) + 1)
        return int(min(max(rank, self.rank_bounds[0]), self.rank_bounds[1], limit))

    def fit(self, matrix: np.ndarray) -> CollaborativeFilter:
        """Fit to ``matrix`` (rows x columns, NaN = missing): SVD init (eq. 1), then SGD (eqs. 2-4).

        Attributes after the fit: ``rank``, ``row_factors`` (rows, r), ``col_factors`` (columns, r),
        ``scaler``, ``epochs_run``, ``rmse_history`` (normalised RMSE over the known entries per epoch,
        the first is the SVD initialisation's) and ``training_matrix`` (a copy of ``matrix``).
        """
        matrix = _check_matrix("matrix", matrix)
        known = np.isfinite(matrix)
        if not known.any():
            raise ValueError("matrix has no known entries")
        self.training_matrix = matrix.copy()  # kept for a full retrain with more rows (docs/families/qin.md §2.1)
        self.scaler = MinMaxScaler.fit(matrix) if self.normalise else MinMaxScaler(0.0, 1.0)
        scaled = self.scaler.transform(matrix)
        global_mean = float(scaled[known].mean())
        counts = known.sum(axis=0)
        column_mean = np.where(counts > 0, np.where(known, scaled, 0.0).sum(axis=0) / np.maximum(counts, 1),
                               global_mean)
        filled = np.where(known, scaled, column_mean)
        u, singular, vt = np.linalg.svd(filled, full_matrices=False)
        rank = self._choose_rank(singular, min(matrix.shape))
        root = np.sqrt(singular[:rank])
        self.rank = rank
        self.row_factors = u[:, :rank] * root
        self.col_factors = vt[:rank].T * root
        rows, cols = np.nonzero(known)
        self._sgd(rows, cols, scaled[rows, cols])
        return self

    def _sgd(self, rows: np.ndarray, cols: np.ndarray, values: np.ndarray) -> None:
        """Eqs. 2-4 over the known entries in random order until the RMSE settles."""
        rng = np.random.default_rng(self.seed)
        a, b = self.row_factors, self.col_factors
        eta, lam = self.learning_rate, self.regularisation
        rmse = float(np.sqrt(np.mean((values - np.einsum("kr,kr->k", a[rows], b[cols])) ** 2)))
        self.rmse_history = [rmse]
        self.epochs_run = 0
        for _ in range(self.max_epochs):
            for k in rng.permutation(values.size):
                u, i = rows[k], cols[k]
                a_u, b_i = a[u], b[i]
                error = values[k] - a_u @ b_i
                a[u] = a_u + eta * (2.0 * error * b_i - lam * a_u)
                b[i] = b_i + eta * (2.0 * error * a_u - lam * b_i)
            self.epochs_run += 1
            new_rmse = float(np.sqrt(np.mean((values - np.einsum("kr,kr->k", a[rows], b[cols])) ** 2)))
            self.rmse_history.append(new_rmse)
            if abs(rmse - new_rmse) < self.tol:
                break
            rmse = new_rmse

    def _require_fit(self) -> None:
        if not self.fitted:
            raise ValueError("the collaborative filter is not fitted; call fit(matrix) first")

    def predict(self) -> np.ndarray:
        """The de-normalised reconstruction ``A S B^T`` of the fitted rows (rows x columns)."""
        self._require_fit()
        return self.scaler.inverse(self.row_factors @ self.col_factors.T)

    def fold_in_penalty(self) -> np.ndarray:
        """Per-dimension strength of the fold-in regulariser towards the mean row factor, ``(r,)``.

        ``"empirical"``: ``sigma^2 / tau_d^2`` with ``sigma^2`` the fitted residual variance (the last
        ``rmse_history`` entry squared) and ``tau_d^2`` the variance of the fitted row factors in dimension
        ``d``: the fold-in then converges to the Gaussian MAP row (empirical Bayes); the pull is shared
        among the row's known entries. ``"ridge"``: eq. 3's ``lambda`` applied at every visit (reported
        as ``lambda / 2``, the penalty whose gradient it is).
        """
        self._require_fit()
        if self.fold_in_prior == "ridge":
            return np.full(self.rank, self.regularisation / 2.0)  # eq. 3's lambda a, per visit
        spread = np.maximum(self.row_factors.var(axis=0), 1e-12) if self.row_factors.shape[0] > 1 else \
            np.full(self.rank, 1e-12)
        return self.rmse_history[-1] ** 2 / spread

    def fold_in_factors(self, rows: np.ndarray) -> np.ndarray:
        """Row factors ``(k, r)`` of new rows (NaN = unknown) against the frozen column factors.

        Each pass visits the row's known entries in random order with the update of eq. 3 and a pull
        towards the mean row factor ``a_bar``; over a pass the updates descend
        ``sum_i e_i^2 + sum_d penalty_d (a_d - a_bar_d)^2`` (:meth:`fold_in_penalty`), whose minimiser
        is the closed form ``(B^T B + diag(penalty)) (a - a_bar) = B^T (r - B a_bar)``.
        """
        self._require_fit()
        rows = _check_matrix("rows", rows, self.col_factors.shape[0])
        known = np.isfinite(rows)
        scaled = np.where(known, self.scaler.transform(np.where(known, rows, 0.0)), 0.0)
        prior = self.row_factors.mean(axis=0)
        factors = np.tile(prior, (rows.shape[0], 1))
        if not known.any():
            return factors
        # Known entries of each row, padded to the longest row; padded slots do not update.
        counts = known.sum(axis=1)
        width = int(counts.max())
        order = np.argsort(~known, axis=1, kind="stable")[:, :width]
        valid = np.take_along_axis(known, order, axis=1)
        target = np.take_along_axis(scaled, order, axis=1)
        full = valid.all(axis=0)  # slots every row has: no masking needed
        columns = self.col_factors[order]  # (k, width, r): the frozen column factors of each known entry
        eta = self.learning_rate
        # per visit, a row with n known entries takes 1/n of the pull; capped so a step never overshoots a_bar
        share = np.ones_like(counts) if self.fold_in_prior == "ridge" else np.maximum(counts, 1)
        if self.fold_in_method == "exact":  # the minimiser the passes below descend to, solved directly
            masked = columns * valid[:, :, None]
            gram = np.einsum("kwr,kws->krs", masked, masked)
            gram[:, np.arange(self.rank), np.arange(self.rank)] += self.fold_in_penalty()[None, :] * (
                counts[:, None] / share[:, None])
            residual = np.where(valid, target - masked @ prior, 0.0)
            rhs = np.einsum("kwr,kw->kr", masked, residual)
            return prior + np.linalg.solve(gram, rhs[:, :, None])[:, :, 0]
        pull = np.minimum(eta * 2.0 * self.fold_in_penalty()[None, :] / share[:, None], 1.0)
        rng = np.random.default_rng(self.seed)
        for _ in range(self.fold_in_passes):
            previous = factors.copy()
            for slot in rng.permutation(width):
                column = columns[:, slot]
                error = target[:, slot] - np.einsum("kr,kr->k", factors, column)
                step = eta * 2.0 * error[:, None] * column - pull * (factors - prior)
                factors += step if full[slot] else np.where(valid[:, slot, None], step, 0.0)
            if np.max(np.abs(factors - previous)) < self.tol * eta:
                break
        return factors

    def fold_in(self, rows: np.ndarray) -> np.ndarray:
        """Predict new rows ``(k, columns)`` (NaN = unknown); known entries are returned as given."""
        rows = np.asarray(rows, dtype=float)
        factors = self.fold_in_factors(rows)
        predicted = self.scaler.inverse(factors @ self.col_factors.T)
        return np.where(np.isfinite(rows), rows, predicted)


class ScalarKalmanFilter:
    """A bank of ``size`` independent scalar Kalman filters (§3.2, eqs. 5-11; A14 defaults).

    State ``x_n = a x_{n-1} + w`` (``B = 0``: no control input), measurement ``z_n = h x_n + v`` with
    process variance ``q`` and measurement variance ``r``. The first measurement of a filter sets its
    estimate (``x_0 = z_0 / h``) and variance ``p0``.
    """

    def __init__(self, size: int = 1, *, a: float = 1.0, h: float = 1.0, q: float = 0.01, r: float = 0.1,
                 p0: float = 1.0) -> None:
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 1:
            raise ValueError(f"size must be a whole number >= 1, got {size!r}")
        for name, value in (("a", a), ("h", h)):
            if not math.isfinite(value) or value == 0:
                raise ValueError(f"{name} must be a finite non-zero number, got {value!r}")
        for name, value in (("q", q), ("r", r), ("p0", p0)):
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
        if r == 0 and p0 == 0 and q == 0:
            raise ValueError("q, r and p0 cannot all be 0 (the gain is undefined)")
        self.size = int(size)
        self.a, self.h, self.q, self.r, self.p0 = float(a), float(h), float(q), float(r), float(p0)
        self.estimate = np.zeros(self.size)
        self.variance = np.full(self.size, self.p0)
        self.initialised = np.zeros(self.size, dtype=bool)

    def reset(self, mask: np.ndarray | None = None) -> None:
        """Forget the filters in ``mask`` (all when ``None``)."""
        where = slice(None) if mask is None else np.asarray(mask, dtype=bool)
        self.estimate[where] = 0.0
        self.variance[where] = self.p0
        self.initialised[where] = False

    def update(self, z: np.ndarray | float, mask: np.ndarray | None = None) -> np.ndarray:
        """One predict (eqs. 7-8) + correct (eqs. 9-11) step with measurements ``z`` for the filters in
        ``mask`` (all when ``None``); returns the estimates (a view, do not modify).

        Whole-array arithmetic (no boolean gathers): this runs every control period for every core.
        """
        z = np.asarray(z, dtype=float)
        prior = self.a * self.estimate  # eq. 7 (B u = 0)
        prior_var = self.a * self.a * self.variance + self.q  # eq. 8
        gain = prior_var * self.h / (self.h * self.h * prior_var + self.r)  # eq. 9
        estimate = prior + gain * (z - self.h * prior)  # eq. 10
        variance = (1.0 - gain * self.h) * prior_var  # eq. 11
        first = ~self.initialised if mask is None else np.asarray(mask, dtype=bool) & ~self.initialised
        if first.any():  # a filter's first measurement sets x0 = z / h with variance p0
            estimate = np.where(first, z / self.h, estimate)
            variance = np.where(first, self.p0, variance)
        if mask is None:
            self.estimate[:] = estimate
            self.variance[:] = variance
            self.initialised[:] = True
        else:
            active = np.asarray(mask, dtype=bool)
            np.copyto(self.estimate, estimate, where=active)
            np.copyto(self.variance, variance, where=active)
            self.initialised |= active
        return self.estimate

    def steady_variance(self, max_updates: int = 10_000) -> float | None:
        """The variance a filter that is measured every period settles at, in floating point: the exact fixed
        point of eqs. 8-9 and 11 (``p = (1 - g h) (a^2 p + q)``) reached from ``p0`` by the same operations as
        :meth:`update`, or ``None`` if none is reached within ``max_updates`` (the iteration may end in a cycle
        of neighbouring floats). A filter at this variance keeps it and has a constant gain; callers use that to
        skip the variance arithmetic without changing a bit."""
        a, h, q, r = self.a, self.h, self.q, self.r
        p = self.p0
        for _ in range(max_updates):
            prior_var = a * a * p + q
            gain = prior_var * h / (h * h * prior_var + r)
            nxt = (1.0 - gain * h) * prior_var
            if nxt == p:
                return p
            p = nxt
        return None

    def predict(self) -> np.ndarray:
        """Next-period predictions ``a x_hat`` (no state change)."""
        return self.a * self.estimate
