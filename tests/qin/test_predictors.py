"""joulegym.envs.qin.predictors: collaborative filtering and the scalar Kalman filter (Qin §3.1-3.2)."""

from __future__ import annotations

import numpy as np
import pytest

from joulegym.envs.qin.predictors import CollaborativeFilter, MinMaxScaler, ScalarKalmanFilter


def _planted(seed: int, n_offline: int = 30, n_new: int = 200, n_columns: int = 24):
    """A rank-3 matrix ``Z W^T`` with non-negative factors; the new rows reveal 2 random entries each."""
    rng = np.random.default_rng(seed)
    full = rng.uniform(0, 1, (n_offline + n_new, 3)) @ rng.uniform(0, 1, (n_columns, 3)).T
    offline, truth = full[:n_offline], full[n_offline:]
    observed = np.full_like(truth, np.nan)
    rows = np.arange(n_new)[:, None]
    known = np.array([rng.choice(n_columns, 2, replace=False) for _ in range(n_new)])
    observed[rows, known] = truth[rows, known]
    return offline, truth, observed


@pytest.mark.parametrize("seed", range(5))
def test_cf_recovers_planted_rank_3_matrix_from_2_entries_per_row(seed):
    offline, truth, observed = _planted(seed)
    model = CollaborativeFilter(seed=seed).fit(offline)
    predicted = model.fold_in(observed)
    unknown = np.isnan(observed)
    span = offline.max() - offline.min()
    rmse = np.sqrt(np.mean(((predicted - truth)[unknown] / span) ** 2))
    column_mean = np.sqrt(np.mean(((offline.mean(axis=0) - truth)[unknown] / span) ** 2))
    assert rmse < 0.1  # spec §7.7
    assert rmse < 0.6 * column_mean  # the two entries carry real information
    np.testing.assert_array_equal(predicted[~unknown], observed[~unknown])


def test_cf_rank_rule_svd_init_and_sgd():
    rng = np.random.default_rng(0)
    u, _ = np.linalg.qr(rng.normal(size=(40, 40)))
    v, _ = np.linalg.qr(rng.normal(size=(20, 20)))
    singular = np.array([10.0, 8.0, 6.0, 4.0] + [0.0] * 16)
    matrix = (u[:, :20] * singular) @ v.T
    # cumulative energy 0.46, 0.76, 0.93: the smallest rank keeping 90 % is 3
    assert CollaborativeFilter(max_epochs=0, normalise=False).fit(matrix).rank == 3
    assert CollaborativeFilter(rank=4, max_epochs=0, normalise=False).fit(matrix).rank == 4
    low_rank = rng.uniform(0, 1, (40, 2)) @ rng.uniform(0, 1, (20, 2)).T
    full = CollaborativeFilter().fit(low_rank)
    assert full.rank == 2  # clipped to the lower bound of [2, 5]
    # not exact: the min-max shift adds a rank and lambda = 0.05 shrinks the factors (spec §2.1 settings)
    assert np.sqrt(np.mean((full.predict() - low_rank) ** 2)) < 0.05 * np.ptp(low_rank)
    # with missing entries SGD improves on the column-mean-filled SVD over the known entries
    holes = low_rank.copy()
    holes[rng.random(holes.shape) < 0.4] = np.nan
    sparse = CollaborativeFilter(seed=1).fit(holes)
    assert 1 <= sparse.epochs_run <= 500
    assert sparse.rmse_history[-1] < 0.8 * sparse.rmse_history[0]
    missing = np.isnan(holes)
    svd_only = CollaborativeFilter(seed=1, max_epochs=0).fit(holes)
    sgd_error = np.sqrt(np.mean((sparse.predict() - low_rank)[missing] ** 2))
    assert sgd_error < 0.8 * np.sqrt(np.mean((svd_only.predict() - low_rank)[missing] ** 2))
    assert sgd_error < 0.1 * np.ptp(low_rank)


def test_cf_fold_in_and_its_determinism():
    offline, _, observed = _planted(0, n_new=20)
    model = CollaborativeFilter(seed=3).fit(offline)
    first = model.fold_in(observed)
    np.testing.assert_array_equal(first, CollaborativeFilter(seed=3).fit(offline).fold_in(observed))
    # a row with nothing known gets the mean row factor: "a typical app"
    blank = model.fold_in(np.full((1, offline.shape[1]), np.nan))
    np.testing.assert_allclose(blank[0], model.scaler.inverse(model.row_factors.mean(axis=0) @ model.col_factors.T))
    # folding rows in one by one equals folding them in together (rows are independent)
    one_by_one = np.vstack([model.fold_in(observed[i:i + 1]) for i in range(3)])
    np.testing.assert_allclose(one_by_one, first[:3], rtol=1e-9, atol=1e-12)


def test_cf_sgd_fold_in_descends_to_the_exact_fold_in():
    offline, _, observed = _planted(1, n_new=40)
    exact = CollaborativeFilter(seed=0).fit(offline)
    factors = exact.fold_in_factors(observed)
    # the closed form solves (B^T B + diag(penalty)) (a - a_bar) = B^T (r - B a_bar)
    row = observed[0]
    known = np.isfinite(row)
    b = exact.col_factors[known]
    a_bar = exact.row_factors.mean(axis=0)
    direct = a_bar + np.linalg.solve(b.T @ b + np.diag(exact.fold_in_penalty()),
                                     b.T @ (exact.scaler.transform(row[known]) - b @ a_bar))
    np.testing.assert_allclose(factors[0], direct, rtol=1e-9, atol=1e-12)
    sgd = CollaborativeFilter(seed=0, fold_in_method="sgd").fit(offline)
    spec_passes = np.abs(sgd.fold_in_factors(observed) - factors).max()
    sgd.fold_in_passes = 6000
    many_passes = np.abs(sgd.fold_in_factors(observed) - factors).max()
    assert many_passes < 0.01 and many_passes < spec_passes
    # the ridge prior (eq. 3's lambda at every visit) has the same fixed-point form
    ridge = CollaborativeFilter(seed=0, fold_in_prior="ridge").fit(offline)
    direct = a_bar + np.linalg.solve(b.T @ b + np.diag(np.full(ridge.rank, 2 * ridge.regularisation / 2)),
                                     b.T @ (ridge.scaler.transform(row[known]) - b @ a_bar))
    np.testing.assert_allclose(ridge.fold_in_factors(observed[:1])[0], direct, rtol=1e-9, atol=1e-12)


def test_cf_errors():
    with pytest.raises(ValueError, match="not fitted"):
        CollaborativeFilter().fold_in(np.ones((1, 3)))
    with pytest.raises(ValueError, match="no known entries"):
        CollaborativeFilter().fit(np.full((3, 3), np.nan))
    with pytest.raises(ValueError, match="2-D"):
        CollaborativeFilter().fit(np.ones(3))
    model = CollaborativeFilter(max_epochs=2).fit(np.arange(12.0).reshape(4, 3))
    with pytest.raises(ValueError, match="3 columns"):
        model.fold_in(np.ones((1, 4)))
    for kwargs, field in (({"rank": 0}, "rank"), ({"learning_rate": 0.0}, "learning_rate"),
                          ({"regularisation": -1.0}, "regularisation"), ({"max_epochs": -1}, "max_epochs"),
                          ({"energy": 1.5}, "energy"), ({"fold_in_prior": "flat"}, "fold_in_prior"),
                          ({"fold_in_method": "newton"}, "fold_in_method")):
        with pytest.raises(ValueError, match=field):
            CollaborativeFilter(**kwargs)


def test_minmax_scaler():
    scaler = MinMaxScaler.fit(np.array([[2.0, np.nan], [6.0, 4.0]]))
    np.testing.assert_allclose(scaler.transform([2.0, 4.0, 6.0]), [0.0, 0.5, 1.0])
    np.testing.assert_allclose(scaler.inverse(scaler.transform([3.0])), [3.0])
    constant = MinMaxScaler.fit(np.full(3, 5.0))
    assert constant.transform(5.0) == 0.0 and constant.inverse(0.0) == 5.0


def test_kalman_converges_to_a_constant_signal():
    rng = np.random.default_rng(0)
    truth = np.array([1.5, 0.4, 3.0])
    noise = np.sqrt(0.1)  # measurement noise matching A14's R
    kalman = ScalarKalmanFilter(3)
    errors = []
    for step in range(2000):
        kalman.update(truth + rng.normal(0, noise, 3))
        if step >= 100:
            errors.append(kalman.predict() - truth)
    errors = np.array(errors)
    # the variance reaches the Riccati fixed point P = (P + q) r / (P + q + r) of A14's q, r ...
    q, r = 0.01, 0.1
    steady = (-q + np.sqrt(q * q + 4 * q * r)) / 2
    np.testing.assert_allclose(kalman.variance, steady, rtol=1e-6)
    # ... so the filter is exponential smoothing with gain K; for a truly constant signal its error is
    # unbiased with variance K r / (2 - K), well below the measurement noise
    gain = (steady + q) / (steady + q + r)
    assert np.all(np.abs(errors.mean(axis=0)) < 0.05)
    assert np.sqrt(np.mean(errors**2)) == pytest.approx(np.sqrt(gain * r / (2 - gain)), rel=0.1)
    assert np.sqrt(np.mean(errors**2)) < 0.6 * noise
    # without process noise the filter averages everything: it converges onto the constant
    static = ScalarKalmanFilter(3, q=0.0)
    for _ in range(2000):
        static.update(truth + rng.normal(0, noise, 3))
    assert np.all(np.abs(static.predict() - truth) < 0.05) and np.all(static.variance < 1e-4)
    exact = ScalarKalmanFilter(1)
    for _ in range(5):
        exact.update(2.0)
    assert exact.predict()[0] == 2.0  # noise-free: the first measurement sets x0 and it never moves


def test_kalman_step_follows_eqs_7_to_11_and_masks():
    kalman = ScalarKalmanFilter(2, q=0.01, r=0.1, p0=1.0)
    kalman.update(np.array([1.0, 5.0]))
    assert list(kalman.estimate) == [1.0, 5.0] and kalman.initialised.all()
    kalman.update(np.array([2.0, 0.0]), mask=np.array([True, False]))
    prior_var = 1.0 + 0.01
    gain = prior_var / (prior_var + 0.1)
    assert kalman.estimate[0] == pytest.approx(1.0 + gain * (2.0 - 1.0))
    assert kalman.variance[0] == pytest.approx((1 - gain) * prior_var)
    assert kalman.estimate[1] == 5.0 and kalman.variance[1] == 1.0  # masked out: untouched
    kalman.reset(np.array([True, False]))
    assert list(kalman.initialised) == [False, True]
    scaled = ScalarKalmanFilter(1, a=0.5)
    scaled.update(4.0)
    assert scaled.predict()[0] == 2.0
    for kwargs, field in (({"size": 0}, "size"), ({"q": -1.0}, "q"), ({"h": 0.0}, "h")):
        with pytest.raises(ValueError, match=field):
            ScalarKalmanFilter(**kwargs)
