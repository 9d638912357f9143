"""The segment arithmetic written once (joulegym.envs.emrf.segment, allocation.device_loads, metrics.segment_measures;
docs/architecture.md, "Batched envs"; docs/families/emrf.md §11): the single simulator and the batched one end a
segment at the same instant, also at near-ties where two ways of writing the rule round differently, and every row of
the lanes gets the bits of one instance."""

from __future__ import annotations

import math

import numpy as np

from joulegym.envs.emrf.allocation import device_loads
from joulegym.envs.emrf.batch import EMRFBatch
from joulegym.envs.emrf.decisions import scalar_where
from joulegym.envs.emrf.metrics import segment_measures
from joulegym.envs.emrf.segment import device_scale, progress, segment_length
from joulegym.envs.emrf.simulator import EMRFSimulator, UserSpec

CAPS = (20.0, 20.0)
USER = UserSpec("near-tie", 0.5, 1.0, job_gflop=100.0)  # backlogged: a new job starts when one completes
SPAN = 0.7  # the window (s): end - t0 is not always SPAN in floats, so its products round in varied ways


def near_ties(cases: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Window starts ``t0``, rates and remaining work within a few ulps of ``rate * (end - t0)``, ``end = t0 +``
    :data:`SPAN`: a job that completes at the window's end, up to round-off."""
    rng = np.random.default_rng(seed)
    t0 = rng.uniform(0.0, 50.0, cases)
    rate = rng.uniform(1.0, 15.0, cases)
    left = rate * ((t0 + SPAN) - t0)
    nudge = rng.integers(-1, 2, cases)  # one ulp down, none, one ulp up
    left = np.where(nudge == 0, left, np.nextafter(left, np.where(nudge < 0, 0.0, math.inf)))
    return t0, rate, left


def old_batched_length(until_end: np.ndarray, rate: np.ndarray, left: np.ndarray) -> np.ndarray:
    """How the batched env used to end a segment: the minimum of the quotients remaining / rate."""
    return np.maximum(np.minimum(until_end, np.where(rate > 0, left / rate, math.inf)), 0.0)


def test_near_ties_exist_where_the_old_batched_rule_disagrees():
    t0, rate, left = near_ties(20_000)
    until_end = (t0 + SPAN) - t0
    single = np.array([segment_length(u, math.inf, t, (0,), [r], [x], None, scalar_where)
                       for u, t, r, x in zip(until_end.tolist(), t0.tolist(), rate.tolist(), left.tolist())])
    batched = segment_length(until_end, math.inf, t0, (0,), [rate], [left], None, np.where)
    assert np.array_equal(single, batched)  # one function: the same bits on numbers and on arrays
    assert np.count_nonzero(single != old_batched_length(until_end, rate, left)) > 0


class FixedRule:
    """Planned GFLOPS per slot: slot 0 gets the row's ``rates`` (the simulator's rule and the batch's)."""

    def __init__(self, rates: np.ndarray) -> None:
        self.rates = rates

    def for_row(self, r: int):
        return lambda active: [float(self.rates[r]) if 0 in active else 0.0, 0.0]

    def plan(self, batch: EMRFBatch, sel, act: np.ndarray) -> np.ndarray:
        out = np.zeros(act.shape)
        out[:, 0] = self.rates[np.arange(batch.rows)[sel]]
        return np.where(act, out, 0.0)


class SegmentLengths:
    """The batch's window measures hook: records every row's segment lengths."""

    def __init__(self, rows: int) -> None:
        self.lengths: list[list[float]] = [[] for _ in range(rows)]

    def segment(self, positions, dt: np.ndarray, active: np.ndarray, rates: np.ndarray) -> None:
        for p, length in zip(np.arange(len(self.lengths))[positions].tolist(), dt.tolist()):
            self.lengths[p].append(length)


def test_the_batched_window_ends_near_tie_segments_as_the_single_simulator():
    t0, rate, left = near_ties(20_000)
    until_end = (t0 + SPAN) - t0
    single = np.array([segment_length(u, math.inf, t, (0,), [r], [x], None, scalar_where)
                       for u, t, r, x in zip(until_end.tolist(), t0.tolist(), rate.tolist(), left.tolist())])
    pick = np.flatnonzero(single != old_batched_length(until_end, rate, left))[:16]
    assert pick.size > 0
    t0, rate, left = t0[pick], rate[pick], left[pick]
    rule, lengths = FixedRule(rate), SegmentLengths(pick.size)
    batch = EMRFBatch(pick.size, CAPS, max_users=2, horizon=10, window_s=SPAN)
    sims = []
    for r in range(pick.size):
        batch.reset_row(r, [USER], np.random.default_rng(r))
        batch.time[r], batch.remaining[r, 0] = t0[r], left[r]
        sim = EMRFSimulator(CAPS, max_users=2, horizon=10, window_s=SPAN)
        sim.reset(np.random.default_rng(r), [USER])
        sim.time, sim.remaining[0] = float(t0[r]), float(left[r])
        sims.append((sim, sim.window(rule.for_row(r))))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        batch.window(slice(None), rule, measures=lengths)
    for r, (sim, result) in enumerate(sims):
        assert lengths.lengths[r] == [dt for dt, _, _ in result.segments]
        assert batch.remaining[r].tolist() == sim.remaining
        assert batch.work_done[r].tolist() == sim.work_done


def test_device_scale_is_the_same_on_numbers_and_arrays():
    rng = np.random.default_rng(1)
    use_cpu, use_gpu = rng.uniform(0.0, 40.0, 5000), rng.uniform(0.0, 40.0, 5000)
    use_cpu[:50], use_gpu[50:100] = 0.0, CAPS[1] * (1 + 1e-12)  # no CPU use; the GPU exactly at the limit
    batched = device_scale(use_cpu, use_gpu, *CAPS, np.where)
    single = [device_scale(c, g, *CAPS, scalar_where) for c, g in zip(use_cpu.tolist(), use_gpu.tolist())]
    assert batched.tolist() == single
    assert (batched < 1.0).any() and (batched == 1.0).any()


def test_progress_gives_every_row_the_bits_of_one_instance():
    """The fluid work of a segment, on Python numbers slot by slot (the single simulator) and on column lanes of rows
    (the batch), a slot that a row does not run included (rate 0: exact no-ops)."""
    rng = np.random.default_rng(3)
    rows, n = 64, 5
    rates = np.where(rng.random((rows, n)) < 0.3, 0.0, rng.uniform(0.0, 30.0, (rows, n)))
    xi = rng.uniform(0.0, 1.0, (rows, n))
    dt = rng.uniform(0.0, 1.0, rows)
    state = [rng.uniform(0.0, 100.0, (rows, n)) for _ in range(4)]
    gpu = rng.uniform(0.0, 10.0, rows)
    expected_state, expected_gpu = [], []
    for r in range(rows):
        lanes = [lane[r].tolist() for lane in state]
        active = [i for i in range(n) if rates[r, i] > 0.0]
        expected_gpu.append(progress(active, dt[r].item(), rates[r].tolist(), xi[r].tolist(), *lanes, gpu[r].item()))
        expected_state.append(lanes)
    got = progress(range(n), dt, list(rates.T), list(xi.T), *(list(lane.T) for lane in state), gpu.copy())
    assert got.tolist() == expected_gpu
    for k, lane in enumerate(state):
        assert lane.tolist() == [row[k] for row in expected_state]


def random_rows(seed: int, rows: int = 64, n: int = 5) -> tuple[np.ndarray, ...]:
    """Active sets (some rows without users), rates 0.0 off them, xi in [0, 1] and positive derived quantities."""
    rng = np.random.default_rng(seed)
    act = rng.random((rows, n)) < 0.6
    act[:4] = False
    rates = np.where(act, rng.uniform(0.0, 30.0, (rows, n)), 0.0)
    return act, rates, rng.uniform(0.0, 1.0, (rows, n)), rng.uniform(0.1, 10.0, (rows, n)), rng.uniform(0.0, 1.0, rows)


def test_device_loads_gives_every_row_the_bits_of_one_instance():
    act, rates, xi, _, _ = random_rows(4)
    expected = [device_loads([i for i in range(act.shape[1]) if on[i]], row, x)
                for on, row, x in zip(act.tolist(), rates.tolist(), xi.tolist())]
    slots = np.flatnonzero(act.any(axis=0)).tolist()
    cpu, gpu = device_loads(slots, list(rates.T), list(xi.T), np.zeros(act.shape[0]))
    assert list(zip(cpu.tolist(), gpu.tolist())) == expected
    assert expected[0] == (0.0, 0.0)


def test_segment_measures_give_every_row_the_bits_of_one_instance():
    """The single env's call (its active users, derived quantities by position) against the batched episodes' (the
    slots some row runs; S NaN and F^max 0.0 where a row does not run the slot)."""
    act, rates, _, derived, eta = random_rows(5)
    share, fmax, m = derived, derived[::-1] * 3.0, 1.0 / derived
    dt = np.random.default_rng(6).uniform(0.0, 1.0, act.shape[0])
    expected = []
    for r, on in enumerate(act.tolist()):
        active = [i for i in range(act.shape[1]) if on[i]]
        got = segment_measures(enumerate(active), dt[r].item(), eta[r].item(), rates[r].tolist(),
                               [share[r, i].item() for i in active], [fmax[r, i].item() for i in active],
                               [m[r, i].item() for i in active], max, min)
        expected.append(got[:4])
    lanes = [(i, i) for i in np.flatnonzero(act.any(axis=0)).tolist()]
    e, v, speedup, spread, _ = segment_measures(
        lanes, dt, eta, list(rates.T), list(np.where(act, share, math.nan).T), list(np.where(act, fmax, 0.0).T),
        list(m.T), np.fmax, np.fmin, np.zeros(act.shape[0]))
    assert list(zip(e.tolist(), v.tolist(), speedup.tolist(), spread.tolist())) == expected
    assert expected[0][3] == -math.inf  # no user: no spread
