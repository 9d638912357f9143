"""Aggregate statistics of normalised scores across seeds and scenarios, the rliable way (docs/leaderboard.md).

Agarwal et al., "Deep Reinforcement Learning at the Edge of the Statistical Precipice" (NeurIPS 2021): a score
matrix holds one normalised score per run (here: an evaluation seed) and task (a headline scenario). The
aggregate is the interquartile mean (IQM, §4.3) over every entry; its 95 % confidence interval is a percentile
stratified bootstrap (§A.1): each replicate resamples the runs of each task with replacement, independently per
task, so every replicate keeps every task. Performance profiles (§4.2) give the fraction of runs above a
threshold, and the probability of improvement (§4.3) ``P(X > Y)`` is the Mann-Whitney U statistic per task,
averaged over tasks, with ties counting one half (or, ``paired=True``, the share of seeds on which X beats Y: the
suite's choice, since every policy runs on the same seeds).

Written with numpy rather than the ``rliable`` package: rliable 1.2 requires ``arch`` (with ``statsmodels``),
``seaborn`` and ``absl-py``, four dependencies for what is a few vectorised lines here. Every function is
deterministic: the resampling generator takes a fixed ``seed``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

BOOTSTRAP_REPS = 2_000  # rliable's default for interval estimates is 2000 (its tutorial uses 50000 for figures)
CONFIDENCE = 0.95


def _matrix(scores: np.ndarray, name: str = "scores") -> np.ndarray:
    scores = np.asarray(scores, dtype=float)
    if scores.ndim == 1:
        scores = scores[:, None]
    if scores.ndim != 2 or scores.shape[0] < 1 or scores.shape[1] < 1:
        raise ValueError(f"{name} must be a (runs, tasks) matrix with at least one entry, got shape {scores.shape}")
    if not np.isfinite(scores).all():
        raise ValueError(f"{name} must be finite (a skipped run has no score), got {scores}")
    return scores


def iqm(values: np.ndarray, axis: int | None = None) -> np.ndarray | float:
    """Interquartile mean: the mean of the middle 50 % (scipy's ``trim_mean(values, 0.25)``: ``int(0.25 n)``
    values cut at each end), over ``axis`` (``None``: all entries)."""
    values = np.asarray(values, dtype=float)
    if axis is None:
        values, axis = values.reshape(-1), 0
    n = values.shape[axis]
    cut = int(0.25 * n)
    ordered = np.sort(values, axis=axis)
    middle = np.take(ordered, np.arange(cut, n - cut), axis=axis)
    result = middle.mean(axis=axis)
    return float(result) if np.ndim(result) == 0 else result


def _flat_iqm(samples: np.ndarray) -> np.ndarray:
    """IQM of each replicate of ``samples`` (reps, runs, tasks)."""
    return iqm(samples.reshape(samples.shape[0], -1), axis=1)


def stratified_resample(scores: np.ndarray, reps: int = BOOTSTRAP_REPS, seed: int = 0) -> np.ndarray:
    """``reps`` stratified bootstrap replicates of ``scores`` (runs, tasks): shape (reps, runs, tasks); column ``j``
    of a replicate holds runs of task ``j`` only, drawn with replacement."""
    scores = _matrix(scores)
    runs, tasks = scores.shape
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, runs, size=(reps, runs, tasks))
    return scores[rows, np.arange(tasks)]


def bootstrap_ci(scores: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray] = _flat_iqm,
                 reps: int = BOOTSTRAP_REPS, confidence: float = CONFIDENCE, seed: int = 0) -> tuple[float, float]:
    """Percentile stratified-bootstrap CI of ``statistic`` (replicates (reps, runs, tasks) -> (reps,)) of
    ``scores`` (runs, tasks); the IQM by default."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    values = statistic(stratified_resample(scores, reps, seed))
    alpha = (1.0 - confidence) / 2.0
    return float(np.quantile(values, alpha)), float(np.quantile(values, 1.0 - alpha))


def mean_statistic(samples: np.ndarray) -> np.ndarray:
    """The mean of each replicate (reps, runs, tasks) -> (reps,)."""
    return samples.reshape(samples.shape[0], -1).mean(axis=1)


def aggregate(scores: np.ndarray, reps: int = BOOTSTRAP_REPS, seed: int = 0) -> dict[str, float]:
    """IQM, mean and median of ``scores`` (runs, tasks) with the IQM's stratified-bootstrap 95 % CI."""
    scores = _matrix(scores)
    low, high = bootstrap_ci(scores, reps=reps, seed=seed)
    return {"iqm": iqm(scores), "iqm_ci_low": low, "iqm_ci_high": high, "mean": float(scores.mean()),
            "median": float(np.median(scores))}


def performance_profile(scores: np.ndarray, taus: np.ndarray, reps: int = BOOTSTRAP_REPS,
                        seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run-score distribution: the fraction of runs with a score above each ``tau``, with its stratified-bootstrap
    95 % band. Returns ``(fraction, low, high)``, each of ``taus``'s length."""
    scores = _matrix(scores)
    taus = np.asarray(taus, dtype=float)
    fraction = (scores.reshape(-1)[:, None] > taus[None, :]).mean(axis=0)
    samples = stratified_resample(scores, reps, seed).reshape(reps, -1)
    boot = (samples[:, :, None] > taus[None, None, :]).mean(axis=1)
    alpha = (1.0 - CONFIDENCE) / 2.0
    return fraction, np.quantile(boot, alpha, axis=0), np.quantile(boot, 1.0 - alpha, axis=0)


def performance_profile_tasks(tasks: list[np.ndarray], taus: np.ndarray, reps: int = BOOTSTRAP_REPS,
                              seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`performance_profile` for tasks of unequal numbers of runs (one 1-d array per task)."""
    tasks = [np.asarray(t, dtype=float).reshape(-1) for t in tasks]
    taus = np.asarray(taus, dtype=float)
    every = np.concatenate(tasks)
    fraction = (every[:, None] > taus[None, :]).mean(axis=0)
    rng = np.random.default_rng(seed)
    samples = np.concatenate([t[rng.integers(0, t.size, size=(reps, t.size))] for t in tasks], axis=1)
    boot = (samples[:, :, None] > taus[None, None, :]).mean(axis=1)
    alpha = (1.0 - CONFIDENCE) / 2.0
    return fraction, np.quantile(boot, alpha, axis=0), np.quantile(boot, 1.0 - alpha, axis=0)


def _poi(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) per replicate: x (reps, n, tasks), y (reps, m, tasks) -> (reps,)."""
    greater = (x[:, :, None, :] > y[:, None, :, :]).mean(axis=(1, 2))
    ties = (x[:, :, None, :] == y[:, None, :, :]).mean(axis=(1, 2))
    return (greater + 0.5 * ties).mean(axis=1)


def _paired_poi(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """P(X > Y) per replicate over matched runs: x, y (reps, runs, tasks) -> (reps,)."""
    return ((x > y) + 0.5 * (x == y)).mean(axis=(1, 2))


def probability_of_improvement(x: np.ndarray, y: np.ndarray, reps: int = BOOTSTRAP_REPS, seed: int = 0,
                               paired: bool = False) -> tuple[float, float, float]:
    """``P(X > Y)`` of scores ``x`` (runs, tasks) over ``y`` (runs', tasks) with its 95 % CI. Returns
    ``(p, low, high)``.

    ``paired=False`` is rliable's: every run of X against every run of Y of the same task, the runs of each
    resampled independently, stratified by task. ``paired=True`` compares run ``i`` of X with run ``i`` of Y (the
    same evaluation seed: the same instance and the same random draws for both) and resamples the seeds jointly,
    stratified by task; on scenarios whose instances differ per seed this removes the instance-to-instance spread
    that the unpaired version counts as noise.
    """
    x, y = _matrix(x, "x"), _matrix(y, "y")
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"x and y must cover the same tasks, got {x.shape[1]} and {y.shape[1]}")
    alpha = (1.0 - CONFIDENCE) / 2.0
    if paired:
        if x.shape != y.shape:
            raise ValueError(f"paired x and y must have the same (runs, tasks), got {x.shape} and {y.shape}")
        p = float(_paired_poi(x[None], y[None])[0])
        rows = np.random.default_rng(seed).integers(0, x.shape[0], size=(reps, *x.shape))
        columns = np.arange(x.shape[1])
        boot = _paired_poi(x[rows, columns], y[rows, columns])
        return p, float(np.quantile(boot, alpha)), float(np.quantile(boot, 1.0 - alpha))
    p = float(_poi(x[None], y[None])[0])
    boot = _poi(stratified_resample(x, reps, seed), stratified_resample(y, reps, seed + 1))
    return p, float(np.quantile(boot, alpha)), float(np.quantile(boot, 1.0 - alpha))


def mean_of_task_means(samples: list[np.ndarray]) -> np.ndarray:
    """The mean over tasks of each task's mean, per replicate: ``samples`` is one (reps, runs_t) array per task (the
    tasks may have different numbers of runs); returns (reps,). Each task weighs the same."""
    return np.mean([s.mean(axis=1) for s in samples], axis=0)


def iqm_of_runs(samples: list[np.ndarray]) -> np.ndarray:
    """The IQM over every run of every task, per replicate (rliable's IQM): (reps,)."""
    return iqm(np.concatenate(samples, axis=1), axis=1)


def stratified_ci(tasks: list[np.ndarray], statistic: Callable[[list[np.ndarray]], np.ndarray],
                  reps: int = BOOTSTRAP_REPS, confidence: float = CONFIDENCE, seed: int = 0) -> tuple[float, float]:
    """Percentile stratified-bootstrap CI of ``statistic`` over ``tasks`` (one 1-d array of run scores per task,
    of any lengths): each replicate resamples every task's runs with replacement, independently per task
    (:func:`stratified_resample` for tasks of unequal size). NaNs when every task has fewer than two runs."""
    tasks = [np.asarray(t, dtype=float).reshape(-1) for t in tasks]
    if not tasks or any(t.size == 0 for t in tasks) or not all(np.isfinite(t).all() for t in tasks):
        raise ValueError(f"tasks must be non-empty arrays of finite scores, got sizes {[t.size for t in tasks]}")
    if all(t.size < 2 for t in tasks):
        return float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    samples = [t[rng.integers(0, t.size, size=(reps, t.size))] for t in tasks]
    values = statistic(samples)
    alpha = (1.0 - confidence) / 2.0
    return float(np.quantile(values, alpha)), float(np.quantile(values, 1.0 - alpha))


def normalise(values: np.ndarray, random_score: float, best_score: float) -> np.ndarray:
    """``(values - random) / (best - random)``: random = 0, the best heuristic = 1, for either direction of the
    metric (a lower-is-better metric has ``best < random``, and the ratio is still positive when better).

    :raises ValueError: if ``best`` and ``random`` are (nearly) equal, which makes the score meaningless.
    """
    values = np.asarray(values, dtype=float)
    span = float(best_score) - float(random_score)
    if not np.isfinite(span) or abs(span) <= 1e-9 * max(1.0, abs(float(best_score)), abs(float(random_score))):
        raise ValueError(f"cannot normalise: the best heuristic ({best_score!r}) and random ({random_score!r}) "
                         "score the same")
    return (values - float(random_score)) / span
