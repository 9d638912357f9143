"""joulegym.evaluation.stats: IQM, the stratified bootstrap, profiles, probability of improvement, normalisation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import trim_mean

from joulegym.evaluation import stats


def test_iqm_on_hand_made_data():
    values = np.array([0.0, 1.0, 2.0, 3.0, 100.0, 4.0, 5.0, 6.0])  # the middle 50 %: 2, 3, 4, 5
    assert stats.iqm(values) == pytest.approx(3.5)
    assert stats.iqm(np.array([[0.0, 100.0], [1.0, 2.0]])) == pytest.approx(1.5)  # over every entry: 1, 2
    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 7, 10, 33):  # scipy's definition, including sizes that are not multiples of 4
        sample = rng.normal(size=n)
        assert stats.iqm(sample) == pytest.approx(trim_mean(sample, 0.25))
    batch = rng.normal(size=(4, 9))
    assert np.allclose(stats.iqm(batch, axis=1), [trim_mean(row, 0.25) for row in batch])


def test_stratified_resampling_keeps_each_task_in_its_column():
    """Task 0 scores 0, task 1 scores 1: a stratified replicate always holds one of each per run, so the mean of
    every replicate is exactly 0.5; an unstratified bootstrap over the pooled runs would vary."""
    scores = np.column_stack([np.zeros(6), np.ones(6)])
    replicates = stats.stratified_resample(scores, reps=500, seed=1)
    assert replicates.shape == (500, 6, 2)
    assert (replicates[:, :, 0] == 0).all() and (replicates[:, :, 1] == 1).all()
    assert stats.bootstrap_ci(scores, stats.mean_statistic, reps=500) == (0.5, 0.5)
    # runs are drawn with replacement within a task: distinct values of one task show up repeated
    column = stats.stratified_resample(np.arange(8.0)[:, None], reps=200, seed=2)[:, :, 0]
    assert any(len(set(row)) < 8 for row in column) and set(column.ravel()) <= set(range(8))


def test_bootstrap_is_deterministic_and_brackets_the_estimate():
    scores = np.random.default_rng(0).normal(1.0, 0.3, size=(10, 4))
    first = stats.aggregate(scores)
    assert first == stats.aggregate(scores)  # fixed resampling seed
    assert first["iqm_ci_low"] < first["iqm"] < first["iqm_ci_high"]
    assert first["mean"] == pytest.approx(scores.mean())


@pytest.mark.parametrize("statistic", ["mean", "iqm"])
def test_ci_covers_the_truth_on_synthetic_draws(statistic):
    """Nominal 95 %: over 200 synthetic experiments (fixed seed) of 10 runs x 3 tasks from a symmetric
    distribution, whose mean and IQM are both its centre, the interval covers the centre in 88-99 % of them."""
    rng = np.random.default_rng(12345)
    fn = stats.mean_statistic if statistic == "mean" else stats._flat_iqm
    truth, covered, trials = 0.7, 0, 200
    for trial in range(trials):
        scores = truth + rng.normal(0.0, 0.5, size=(10, 3))
        low, high = stats.bootstrap_ci(scores, fn, reps=1000, seed=trial)
        covered += low <= truth <= high
    assert 0.88 <= covered / trials <= 0.99


def test_performance_profile():
    scores = np.array([[0.0, 1.0], [0.5, 2.0]])
    fraction, low, high = stats.performance_profile(scores, np.array([-1.0, 0.25, 1.0, 5.0]))
    assert np.allclose(fraction, [1.0, 0.75, 0.25, 0.0])
    assert (low <= fraction + 1e-12).all() and (fraction <= high + 1e-12).all()
    assert low[0] == high[0] == 1.0 and low[-1] == high[-1] == 0.0


def test_probability_of_improvement():
    x = np.array([[2.0, 1.0], [3.0, 1.0]])
    y = np.array([[1.0, 1.0], [0.0, 1.0]])
    p, low, high = stats.probability_of_improvement(x, y)
    assert p == pytest.approx((1.0 + 0.5) / 2)  # task 0: always better; task 1: all ties count 1/2
    assert low <= p <= high
    assert stats.probability_of_improvement(y, x)[0] == pytest.approx(1 - p)  # P(X > Y) + P(Y > X) = 1 with ties
    with pytest.raises(ValueError, match="same tasks"):
        stats.probability_of_improvement(x, y[:, :1])


def test_paired_probability_of_improvement_matches_seeds():
    """Seeds are instances: X beats Y by 1 on every seed, but the instances spread more than that. Paired, X wins
    on every seed; unpaired (rliable), 6 of the 9 cross pairs plus half of the 2 ties."""
    y = np.array([[0.0], [1.0], [2.0]])
    x = y + 1.0
    assert stats.probability_of_improvement(x, y, paired=True) == (1.0, 1.0, 1.0)
    assert stats.probability_of_improvement(x, y)[0] == pytest.approx(7 / 9)
    assert stats.probability_of_improvement(y, y, paired=True) == (0.5, 0.5, 0.5)
    with pytest.raises(ValueError, match="same \\(runs, tasks\\)"):
        stats.probability_of_improvement(x[:2], y, paired=True)


def test_normalise_both_directions():
    assert np.allclose(stats.normalise([0.2, 0.6, 1.0], random_score=0.2, best_score=0.6), [0.0, 1.0, 2.0])
    # lower is better (JCT): random 3 h, best 1 h; 2 h is half way, 0.5 h beats the heuristic
    assert np.allclose(stats.normalise([3.0, 2.0, 1.0, 0.5], random_score=3.0, best_score=1.0), [0, 0.5, 1, 1.25])
    with pytest.raises(ValueError, match="score the same"):
        stats.normalise([1.0], random_score=0.5, best_score=0.5)


@pytest.mark.parametrize("bad", [np.array([[np.nan, 1.0]]), np.zeros((0, 2))])
def test_bad_score_matrices_are_rejected(bad):
    with pytest.raises(ValueError, match="scores"):
        stats.aggregate(bad)
