"""The EMRF fluid simulator (docs/families/emrf.md §5: Algorithm 1 at run time, events inside the window)."""

from __future__ import annotations

import numpy as np
import pytest

from joulegym.envs.emrf.simulator import EMRFSimulator, UserSpec

CAPS = (24.0, 480.0)


def wfq_rule(sim: EMRFSimulator, omega: list[float]):
    """Alg. 1's fluid limit: F_i = omega_i t*, t* saturating the first device over the active users."""

    def rule(active):
        out = [0.0] * sim.max_users
        if not active:
            return out
        load = max(sum(omega[i] * sim.xi_hat[i] for i in active) / CAPS[0],
                   sum(omega[i] * (1 - sim.xi_hat[i]) for i in active) / CAPS[1])
        for i in active:
            out[i] = omega[i] / load
        return out

    return rule


def test_single_job_completes_at_w_over_f():
    sim = EMRFSimulator(CAPS, max_users=2, window_s=1.0, horizon=50)
    sim.reset(np.random.default_rng(0), [UserSpec("HW", 0.24, 1.0, job_gflop=250.0, jobs=1)])
    rule = wfq_rule(sim, [1.0, 1.0])  # alone: F = F_solo = 100 GFLOPS
    result = sim.window(rule)
    assert result.segments[0][2][0] == pytest.approx(100.0)
    sim.window(rule)
    result = sim.window(rule)
    assert result.departures == [0] and sim.done
    assert sim.completion_times()[0] == pytest.approx(2.5)
    assert sim.work_done[0] == pytest.approx(250.0)
    assert sim.cpu_gflop == pytest.approx(0.24 * 250.0) and sim.gpu_gflop == pytest.approx(0.76 * 250.0)


def test_departure_reallocates_within_the_window():
    sim = EMRFSimulator(CAPS, max_users=3, window_s=1.0, horizon=50)
    users = [UserSpec("MY", 1.0, 1.0, job_gflop=6.0, jobs=1), UserSpec("KNN", 1.0, 1.0, job_gflop=100.0, jobs=1)]
    sim.reset(np.random.default_rng(0), users)
    result = sim.window(wfq_rule(sim, [1.0, 1.0, 0.0]))
    # both CPU-only at 12 GFLOPS; MY finishes at 0.5 s, then KNN gets the whole CPU (24)
    assert len(result.segments) == 2
    assert result.segments[0][0] == pytest.approx(0.5) and result.segments[0][2][:2] == pytest.approx([12, 12])
    assert result.segments[1][1] == (1,) and result.segments[1][2][1] == pytest.approx(24.0)
    assert sim.work_done[1] == pytest.approx(6.0 + 12.0)
    assert sim.completion_times()[0] == pytest.approx(0.5)


def test_backlogged_jobs_restart_and_never_finish():
    sim = EMRFSimulator(CAPS, max_users=1, window_s=1.0, horizon=3)
    sim.reset(np.random.default_rng(0), [UserSpec("BT", 0.0, 1.0, job_gflop=100.0)])
    rule = wfq_rule(sim, [1.0])
    for _ in range(3):
        sim.window(rule)
    assert sim.jobs_done[0] == int(3 * 480 / 100) and not sim.done and sim.truncated
    assert sim.total_gflop == pytest.approx(3 * 480.0)


def test_capacity_never_exceeded_when_xi_hat_is_wrong():
    """Planned with xi_hat, run with the true xi: rates scale so no device exceeds its capacity."""
    sim = EMRFSimulator(CAPS, max_users=2, window_s=1.0, horizon=10, xi_noise=0.0)
    sim.reset(np.random.default_rng(0), [UserSpec("A", 0.5, 1.0, job_gflop=1e6, jobs=1)])
    sim.xi_hat[0] = 0.1  # the scheduler believes 10% CPU: plans F = 1/max(0.1/24, 0.9/480) = 240
    result = sim.window(wfq_rule(sim, [1.0, 0.0]))
    rate = result.segments[0][2][0]
    assert rate == pytest.approx(48.0)  # true xi 0.5: the CPU caps the rate at 24 / 0.5
    assert sim.cpu_gflop <= CAPS[0] * sim.time * (1 + 1e-12)
    assert sim.xi_hat[0] == pytest.approx(0.5)  # re-measured from the ops it ran


def test_phase_switch_and_measurement():
    sim = EMRFSimulator(CAPS, max_users=1, window_s=1.0, horizon=100, phase_period=(2.5, 2.5))
    sim.reset(np.random.default_rng(0), [UserSpec("GE", 0.2, 1.0, job_gflop=1e9, jobs=1, xi_alt=0.4, co_run=True)])
    rule = wfq_rule(sim, [1.0])
    sim.window(rule)
    sim.window(rule)
    assert sim.xi_hat[0] == pytest.approx(0.2)
    result = sim.window(rule)  # the switch at 2.5 s splits the window
    assert len(result.segments) == 2 and sim.xi[0] == pytest.approx(0.4)
    f1, f2 = result.segments[0][2][0], result.segments[1][2][0]
    expected = (0.5 * f1 * 0.2 + 0.5 * f2 * 0.4) / (0.5 * f1 + 0.5 * f2)
    assert sim.xi_hat[0] == pytest.approx(expected)  # ops-weighted split of the window
    sim.window(rule)
    assert sim.xi_hat[0] == pytest.approx(0.4)


def test_phase_switches_of_users_without_work_happen_on_time():
    """The phase-switch gap: a switch happens at its time whether or not the user has work.

    With a fixed period p the switches are at arrival + k p. An open-loop GE with tiny jobs is idle almost
    all the time: its phase must still follow that timeline (before the fix it stayed put until GE had work
    again, and the timeline restarted from there), its switches while idle must not split the window (BT
    alone: one segment), and a job after idle switches runs, and is measured, at the current phase's xi.
    """
    p = 2.5
    sim = EMRFSimulator(CAPS, max_users=2, window_s=1.0, horizon=100, phase_period=(p, p))
    users = [UserSpec("BT", 0.0, 1.0, 1e9),  # backlogged, no phases
             UserSpec("GE", 0.2, 1.0, job_gflop=1.0, jobs=1, arrival_rate=0.2, xi_alt=0.5, co_run=True)]
    sim.reset(np.random.default_rng(3), users)
    rule = wfq_rule(sim, [1.0, 1.0])
    idle_switches = measured = 0
    for _ in range(60):
        start = sim.time
        result = sim.window(rule)
        switches = int(sim.time / p + 1e-9)
        assert sim.phase[1] == switches % 2, sim.time
        assert sim.xi[1] == (0.5 if switches % 2 else 0.2)
        switch_inside = int(start / p + 1e-9) != switches
        if all(active == (0,) for _, active, _ in result.segments):  # GE idle all window
            assert len(result.segments) == 1  # its switch (if any) ended no segment
            idle_switches += switch_inside
        elif sim.work_window[1] > 0 and not switch_inside:
            assert sim.xi_hat[1] == pytest.approx(sim.xi[1], abs=1e-12)
            measured += 1
    assert idle_switches >= 5 and measured >= 3  # the run exercises both cases


def test_noise_only_on_co_run_apps_and_seeded():
    def run(seed):
        sim = EMRFSimulator(CAPS, max_users=2, window_s=1.0, horizon=100, xi_noise=0.05)
        sim.reset(np.random.default_rng(seed),
                  [UserSpec("GE", 0.21, 1.0, 1e9, jobs=1, co_run=True), UserSpec("BT", 0.0, 1.0, 1e9, jobs=1)])
        sim.window(wfq_rule(sim, [1.0, 1.0]))
        return list(sim.xi_hat)

    a, b = run(1), run(1)
    assert a == b and a[0] != 0.21 and a[1] == 0.0 and 0 <= a[0] <= 1
    assert run(2)[0] != a[0]


@pytest.mark.parametrize("admit_at_window", [False, True])
def test_poisson_arrival_counts(admit_at_window):
    sim = EMRFSimulator(CAPS, max_users=1, window_s=1.0, horizon=200, admit_at_window=admit_at_window)
    sim.reset(np.random.default_rng(3), [UserSpec("KM", 0.07, 1.0, job_gflop=10.0, jobs=0, arrival_rate=0.5)])
    assert not sim.active[0]
    rule = wfq_rule(sim, [1.0])
    arrivals = 0
    for _ in range(200):
        before = sim.jobs_total[0]
        sim.window(rule)
        arrivals += sim.jobs_total[0] - before
    assert 60 <= arrivals <= 140  # ~ 0.5 / s over 200 s
    assert sim.jobs_done[0] >= arrivals - 1  # each 10-GFLOP job takes < 0.03 s alone


def test_late_user_waits_for_the_boundary_with_admit_at_window():
    sim = EMRFSimulator(CAPS, max_users=2, window_s=1.0, horizon=10, admit_at_window=True)
    sim.reset(np.random.default_rng(0),
              [UserSpec("BT", 0.0, 1.0, 1e9, jobs=1), UserSpec("MY", 1.0, 1.0, 1e9, jobs=1, arrival=1.5)])
    rule = wfq_rule(sim, [1.0, 1.0])
    sim.window(rule)
    assert sim.active == [True, False]
    result = sim.window(rule)
    assert len(result.segments) == 1 and result.arrivals == [] and sim.work_done[1] == 0.0
    assert sim.active == [True, True] and sim.arrived_at[1] == 1.5


# --- arrivals inside the window (docs page, assumption A8) ---------------------------------------------------

def weights_rule(sim: EMRFSimulator, omega: list[float]):
    """The env's ``weights`` rule: ``wfq_rule`` with equal ω when every active user has ω = 0."""

    def rule(active):
        if active and not any(omega[i] > 0 for i in active):
            return wfq_rule(sim, [1.0] * sim.max_users)(active)
        return wfq_rule(sim, omega)(active)

    return rule


def late_pair(admit_at_window: bool = False, omega1: float = 1.0, arrival: float = 0.5):
    """HW (xi 0.24, backlogged) from t = 0; a second HW-like user (xi 0.24) arriving at ``arrival``."""
    sim = EMRFSimulator(CAPS, max_users=2, window_s=1.0, horizon=10, admit_at_window=admit_at_window)
    sim.reset(np.random.default_rng(0),
              [UserSpec("HW", 0.24, 1.0, 1e9), UserSpec("HW2", 0.24, 1.0, 1e9, jobs=1, arrival=arrival)])
    return sim, weights_rule(sim, [1.0, omega1])


def test_arrival_inside_the_window_joins_at_once():
    # alone: F = 1 / max(0.24 / 24, 0.76 / 480) = 100; the pair at omega 1:1: t* = 1 / max(0.48 / 24,
    # 1.52 / 480) = 50 each. Over [0, 1): HW 0.5 x 100 + 0.5 x 50 = 75 GFLOP, the arrival 0.5 x 50 = 25.
    sim, rule = late_pair()
    result = sim.window(rule)
    assert result.arrivals == [(0.5, 1, True)]
    assert [(dt, active) for dt, active, _ in result.segments] == [(0.5, (0,)), (0.5, (0, 1))]
    assert result.segments[1][2] == pytest.approx([50.0, 50.0])
    assert sim.work_done == pytest.approx([75.0, 25.0])
    assert sim.last_rates == pytest.approx([75.0, 25.0]) and sim.arrived_at[1] == 0.5
    assert sim.cpu_gflop == pytest.approx(24.0)  # the CPU is saturated throughout (0.24 x 100 = 0.24 x 2 x 50 = 24)


def test_arrival_with_admit_at_window_gets_nothing_until_the_next_window():
    sim, rule = late_pair(admit_at_window=True)
    result = sim.window(rule)
    assert result.arrivals == [] and len(result.segments) == 1
    assert sim.work_done == pytest.approx([100.0, 0.0])
    assert sim.active == [True, True]  # admitted at the boundary: the next decision sees it
    sim.window(rule)
    assert sim.work_done == pytest.approx([150.0, 50.0])


def test_arrival_given_zero_weight_waits_for_the_next_decision():
    sim, rule = late_pair(omega1=0.0)
    result = sim.window(rule)
    assert result.arrivals == [(0.5, 1, False)] and result.readmitted == []
    assert all(active == (0,) for _, active, _ in result.segments)  # not in the window's active set
    assert sim.work_done == pytest.approx([100.0, 0.0]) and sim.remaining[1] == 1e9
    assert sim.active == [True, True] and not any(sim.waiting)  # the next decision sees it
    sim.window(weights_rule(sim, [1.0, 1.0]))
    assert sim.work_done == pytest.approx([150.0, 50.0])


def test_waiting_arrival_takes_over_at_a_departure():
    # HW: one 75-GFLOP job alone at 100 GFLOPS, done at 0.75; MY (CPU only, omega 0) arrives at 0.5 and
    # waits; when HW departs the APU is MY's alone (equal weights over all-zero omega): 24 GFLOPS x 0.25 s
    sim = EMRFSimulator(CAPS, max_users=2, window_s=1.0, horizon=10)
    sim.reset(np.random.default_rng(0),
              [UserSpec("HW", 0.24, 1.0, 75.0, jobs=1), UserSpec("MY", 1.0, 1.0, 1e9, jobs=1, arrival=0.5)])
    result = sim.window(weights_rule(sim, [1.0, 0.0]))
    assert result.arrivals == [(0.5, 1, False)]
    assert result.departures == [0] and result.readmitted == [(pytest.approx(0.75), 1)]
    assert [active for _, active, _ in result.segments] == [(0,), (0,), (1,)]
    assert sim.work_done == pytest.approx([75.0, 6.0])


def test_simultaneous_arrivals_are_decided_together():
    """Two users arriving at the same instant at an idle APU: the one with omega > 0 joins, the other waits,
    whatever their slot order (decided over the set with both, not one after the other)."""
    for omega in ([0.0, 1.0], [1.0, 0.0]):
        sim = EMRFSimulator(CAPS, max_users=2, window_s=1.0, horizon=10)
        sim.reset(np.random.default_rng(0), [UserSpec("MY", 1.0, 1.0, 1e9, jobs=1, arrival=0.25),
                   UserSpec("MY2", 1.0, 1.0, 1e9, jobs=1, arrival=0.25)])
        result = sim.window(weights_rule(sim, omega))
        joiner = omega.index(1.0)
        assert sorted(result.arrivals) == [(0.25, 0, joiner == 0), (0.25, 1, joiner == 1)]
        assert sim.work_done[joiner] == pytest.approx(24.0 * 0.75) and sim.work_done[1 - joiner] == 0.0


def test_arrival_exactly_at_a_window_boundary():
    sim, rule = late_pair(arrival=1.0)
    result = sim.window(rule)
    assert result.arrivals == [] and len(result.segments) == 1 and sim.active == [True, True]
    result = sim.window(rule)
    assert result.arrivals == [] and [active for _, active, _ in result.segments] == [(0, 1)]
    assert sim.work_done == pytest.approx([150.0, 50.0])


def test_user_arriving_and_departing_within_one_window():
    sim = EMRFSimulator(CAPS, max_users=2, window_s=1.0, horizon=10)
    sim.reset(np.random.default_rng(0),
              [UserSpec("BT", 0.0, 1.0, 1e9), UserSpec("MY", 1.0, 1.0, 6.0, jobs=1, arrival=0.2)])
    result = sim.window(wfq_rule(sim, [1.0, 1.0]))  # the pair at 1:1: t* = 24 (the CPU saturates)
    assert result.arrivals == [(0.2, 1, True)] and result.departures == [1]
    assert [active for _, active, _ in result.segments] == [(0,), (0, 1), (0,)]
    assert [dt for dt, _, _ in result.segments] == pytest.approx([0.2, 0.25, 0.55])
    assert sim.completion_times()[1] == pytest.approx(0.25)
    assert sim.work_done == pytest.approx([480 * 0.75 + 24 * 0.25, 6.0])
    assert sim.xi_hat[1] == 1.0 and not sim.active[1]


def test_poisson_job_at_an_empty_queue_starts_inside_the_window():
    """A job arriving at the idle user starts at its arrival time (with ``admit_at_window``: at the next
    boundary) and, when no other job arrives before it is done, finishes W / F_solo later."""
    f_solo = 1.0 / max(0.07 / 24, 0.93 / 480)
    run_s = 10.0 / f_solo
    checked = {False: 0, True: 0}
    for admit_at_window in (False, True):
        sim = EMRFSimulator(CAPS, max_users=1, window_s=1.0, horizon=100, admit_at_window=admit_at_window)
        sim.reset(np.random.default_rng(5), [UserSpec("KM", 0.07, 1.0, job_gflop=10.0, jobs=0, arrival_rate=0.3)])
        rule = wfq_rule(sim, [1.0])
        while sim.windows < 95:
            start, t_a, idle = sim.time, sim.next_arrival[0], sim.queue[0] == 0
            done_before, total_before = sim.jobs_done[0], sim.jobs_total[0]
            result = sim.window(rule)
            if not idle or sim.jobs_total[0] != total_before + 1 or not start <= t_a < start + 1:
                continue  # busy at the window's start, or not exactly one job arrived in it
            assert result.arrivals == ([] if admit_at_window else [(t_a, 0, True)])
            begin = start + 1 if admit_at_window else t_a  # admitted at the next boundary / at once
            if sim.next_arrival[0] < begin + run_s:
                continue  # the next job arrives before this one is done: it queues behind it
            while sim.jobs_done[0] == done_before:
                sim.window(rule)
            assert sim.finished_at[0] == pytest.approx(begin + run_s)
            checked[admit_at_window] += 1
    assert checked[False] >= 5 and checked[True] >= 5, checked


@pytest.mark.parametrize("admit_at_window", [False, True])
def test_poisson_job_at_a_busy_queue_is_queued(admit_at_window):
    """HW alone (100 GFLOPS), jobs of 230 GFLOP (2.3 s) and Poisson jobs: the job arriving at t1 in (0, 2.3) is
    queued behind the first (no arrival event, no departure at 2.3); the user departs at 4.6; the job
    arriving at t2 > 5 finds an empty queue: an arrival event; from then on the user stays busy."""
    sim = EMRFSimulator(CAPS, max_users=1, window_s=1.0, horizon=20, admit_at_window=admit_at_window)
    sim.reset(np.random.default_rng(4), [UserSpec("HW", 0.24, 1.0, job_gflop=230.0, jobs=1, arrival_rate=0.2)])
    rule = wfq_rule(sim, [1.0])
    t1 = sim.next_arrival[0]
    assert 0 < t1 < 2.3  # precondition of this seed
    results = [sim.window(rule) for _ in range(5)]
    assert all(r.arrivals == [] for r in results)
    assert [r.departures for r in results] == [[], [], [], [], [0]] and sim.finished_at[0] == pytest.approx(4.6)
    assert sim.jobs_done[0] == 2 and sim.work_done[0] == pytest.approx(460.0)
    t2 = sim.next_arrival[0]
    assert 6 < t2 < 7  # precondition of this seed
    sim.window(rule)
    result = sim.window(rule)
    assert result.arrivals == ([] if admit_at_window else [(pytest.approx(t2), 0, True)])
    for _ in range(3):
        assert sim.window(rule).departures == []  # precondition of this seed: jobs keep arriving
    start = 7.0 if admit_at_window else t2  # the job runs from its arrival, or from the next boundary
    assert sim.time == 10.0 and sim.jobs_done[0] == 3
    assert sim.work_done[0] == pytest.approx(460.0 + 100.0 * (10.0 - start))


class RecordingSimulator(EMRFSimulator):
    """Records the size of every completed job (work conservation)."""

    def reset(self, users, rng):
        self.completed_sizes = [[] for _ in range(self.max_users)]
        super().reset(users, rng)

    def _complete(self, i, result):
        self.completed_sizes[i].append(self.current_size[i])
        super()._complete(i, result)


def random_mix(seed: int) -> list[UserSpec]:
    """Late closed-loop users, Poisson users (lognormal sizes), a backlogged user, xi phases."""
    rng = np.random.default_rng(seed)
    users = [UserSpec("BT", 0.0, 2.0, 300.0)]
    for k in range(7):
        xi = float(rng.choice([0.07, 0.21, 0.24, 0.5, 1.0]))
        if k % 2:
            users.append(UserSpec(f"p{k}", xi, float(rng.integers(1, 5)), float(rng.uniform(5, 80)), jobs=0,
                                  arrival=float(rng.uniform(0, 5)), arrival_rate=float(rng.uniform(0.2, 2.0)),
                                  job_sigma=0.5, xi_alt=min(xi + 0.15, 1.0) if 0 < xi < 1 else None,
                                  co_run=0 < xi < 1))
        else:
            users.append(UserSpec(f"c{k}", xi, float(rng.integers(1, 5)), float(rng.uniform(5, 80)),
                                  jobs=int(rng.integers(1, 6)), arrival=float(rng.uniform(0, 20)), job_sigma=0.3))
    return users


def run_mix(seed: int, admit_at_window: bool = False, windows: int = 40):
    sim = RecordingSimulator(CAPS, max_users=8, window_s=1.0, horizon=windows, xi_noise=0.02,
                             phase_period=(2.0, 4.0), admit_at_window=admit_at_window)
    sim.reset(np.random.default_rng(seed), random_mix(seed))
    omega = [1.0, 0.0, 0.5, 1.0, 0.0, 0.7, 0.3, 1.0]  # zeros: some arrivals wait
    trace = []
    for _ in range(windows):
        result = sim.window(weights_rule(sim, omega))
        trace.append((result.segments, result.arrivals, result.readmitted, result.departures,
                      list(sim.work_done), list(sim.xi_hat), list(sim.jobs_total), sim.last_utilisation))
    return sim, trace


def test_same_seed_same_trajectory():
    _, a = run_mix(7)
    _, b = run_mix(7)
    _, c = run_mix(8)
    assert a == b and a != c
    assert any(arrivals for _, arrivals, *_ in a)  # the run has in-window arrivals


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_work_conservation_with_arrivals(seed):
    sim, trace = run_mix(seed)
    joined = sum(j for window in trace for _, _, j in window[1])
    waited = sum(not j for window in trace for _, _, j in window[1])
    assert joined > 0 and waited > 0  # both admission outcomes are exercised
    for i in range(sim.max_users):
        in_progress = sim.current_size[i] - sim.remaining[i] if sim.present[i] and sim.queue[i] > 0 else 0.0
        assert sim.work_done[i] == pytest.approx(sum(sim.completed_sizes[i]) + in_progress, rel=1e-9, abs=1e-6)
        assert len(sim.completed_sizes[i]) == sim.jobs_done[i]
        if not sim.backlogged[i]:
            assert sim.jobs_total[i] == sim.jobs_done[i] + sim.queue[i]
    assert sim.total_gflop == pytest.approx(sum(sim.work_done))
    assert sim.total_gflop == pytest.approx(sim.cpu_gflop + sim.gpu_gflop)
    assert sim.cpu_gflop <= CAPS[0] * sim.time * (1 + 1e-9) and sim.gpu_gflop <= CAPS[1] * sim.time * (1 + 1e-9)
    for window in trace:  # capacity holds in every window (true xi)
        assert all(dt >= 0.0 for dt, _, _ in window[0])
        assert max(window[7]) <= 1 + 1e-9


def test_arrival_times_do_not_depend_on_the_admission_mode():
    """Common random numbers: both modes see the same jobs at the same times (jobs counted at boundaries)."""
    _, a = run_mix(4)
    _, b = run_mix(4, admit_at_window=True)
    assert [window[6] for window in a] == [window[6] for window in b]
    assert [window[4] for window in a] != [window[4] for window in b]  # ... but serve them at different times
    assert all(window[1] == [] and window[2] == [] for window in b)  # no in-window admission with admit_at_window


@pytest.mark.parametrize("period", [(0.0, 1.0), (3.0, 2.0), (-1.0, 1.0)])
def test_bad_phase_period_rejected(period):
    with pytest.raises(ValueError, match="phase_period"):
        EMRFSimulator(CAPS, max_users=1, phase_period=period)


def test_too_many_users_rejected():
    sim = EMRFSimulator(CAPS, max_users=1)
    with pytest.raises(ValueError, match="max_users"):
        sim.reset(np.random.default_rng(0), [UserSpec("A", 0.1, 1.0, 1.0), UserSpec("B", 0.1, 1.0, 1.0)])


def test_apply_advance_is_one_window():
    """The core Simulator protocol: ``apply(rule)`` then ``advance()`` runs exactly :meth:`window` (its result
    in ``last_window``); the rule is used once; ``view()`` and ``metrics()`` report the state and totals."""
    from joulegym.core.simulator import Simulator

    runs = []
    for protocol in (True, False):
        sim = EMRFSimulator(CAPS, max_users=2, window_s=1.0, horizon=3)
        sim.reset(np.random.default_rng(0),
                  [UserSpec("HW", 0.24, 1.0, 75.0, jobs=1), UserSpec("MY", 1.0, 1.0, 1e9, jobs=1, arrival=0.5)])
        assert isinstance(sim, Simulator)
        results = []
        for _ in range(3):
            rule = weights_rule(sim, [1.0, 1.0])
            if protocol:
                sim.apply(rule)
                going_on = sim.advance()
                assert going_on == (sim.windows < 3)
                results.append(sim.last_window)
                with pytest.raises(RuntimeError, match="apply"):
                    sim.advance()
            else:
                results.append(sim.window(rule))
        runs.append((results, list(sim.work_done), sim.metrics()))
    assert runs[0] == runs[1]
    view = sim.view()
    assert view.windows == 3 and view.time == 3.0 and view.active == (False, True) and view.capacities == CAPS
    assert sim.metrics()["jobs_completed"] == 1.0 and sim.truncated


def test_slot_streams_are_created_on_first_use_with_the_same_draws():
    """Each slot's random streams are created when first drawn from (resets of sparse mixes skip the
    empty slots' and unused streams), seeded exactly as the eager creation seeded them."""
    seed_rng = np.random.default_rng(7)
    sim = EMRFSimulator(CAPS, max_users=4, window_s=1.0, horizon=10)
    users = [UserSpec("GE", 0.21, 1.0, job_gflop=100.0, jobs=2, job_sigma=0.5, co_run=True),
             UserSpec("BT", 0.0, 1.0, job_gflop=100.0, jobs=1)]
    sim.reset(np.random.default_rng(7), users)
    seeds = seed_rng.integers(0, 2**63 - 1, size=3 * 4 + 1).tolist()  # what reset drew from the same generator
    assert set(sim.streams.size) == {0}  # only the lognormal job sizes drew (slot 0); no arrivals, phases or noise
    assert not sim.streams.arrival and not sim.streams.phase and not sim.streams.noise
    eager = np.random.default_rng(seeds[0])
    expected = 100.0 * np.exp(0.5 * eager.standard_normal() - 0.125)
    assert sim.current_size[0] == pytest.approx(expected, rel=1e-15)
    assert sim.streams.size[0].standard_normal() == eager.standard_normal()  # the stream continues as the eager one
    assert sim.streams.phase[3].random() == np.random.default_rng(seeds[2 * 4 + 3]).random()
