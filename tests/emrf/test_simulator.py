"""The EMRF fluid simulator (spec §1 "Simulator", §3.2 clarified Algorithm 1, §7 "Simulation core")."""

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
    sim.reset([UserSpec("HW", 0.24, 1.0, job_gflop=250.0, jobs=1)], np.random.default_rng(0))
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
    sim.reset(users, np.random.default_rng(0))
    result = sim.window(wfq_rule(sim, [1.0, 1.0, 0.0]))
    # both CPU-only at 12 GFLOPS; MY finishes at 0.5 s, then KNN gets the whole CPU (24)
    assert len(result.segments) == 2
    assert result.segments[0][0] == pytest.approx(0.5) and result.segments[0][2][:2] == pytest.approx([12, 12])
    assert result.segments[1][1] == (1,) and result.segments[1][2][1] == pytest.approx(24.0)
    assert sim.work_done[1] == pytest.approx(6.0 + 12.0)
    assert sim.completion_times()[0] == pytest.approx(0.5)


def test_backlogged_jobs_restart_and_never_finish():
    sim = EMRFSimulator(CAPS, max_users=1, window_s=1.0, horizon=3)
    sim.reset([UserSpec("BT", 0.0, 1.0, job_gflop=100.0)], np.random.default_rng(0))
    rule = wfq_rule(sim, [1.0])
    for _ in range(3):
        sim.window(rule)
    assert sim.jobs_done[0] == int(3 * 480 / 100) and not sim.done and sim.truncated
    assert sim.total_gflop == pytest.approx(3 * 480.0)


def test_capacity_never_exceeded_when_xi_hat_is_wrong():
    """Planned with xi_hat, run with the true xi: rates scale so no device exceeds its capacity."""
    sim = EMRFSimulator(CAPS, max_users=2, window_s=1.0, horizon=10, xi_noise=0.0)
    sim.reset([UserSpec("A", 0.5, 1.0, job_gflop=1e6, jobs=1)], np.random.default_rng(0))
    sim.xi_hat[0] = 0.1  # the scheduler believes 10% CPU: plans F = 1/max(0.1/24, 0.9/480) = 240
    result = sim.window(wfq_rule(sim, [1.0, 0.0]))
    rate = result.segments[0][2][0]
    assert rate == pytest.approx(48.0)  # true xi 0.5: the CPU caps the rate at 24 / 0.5
    assert sim.cpu_gflop <= CAPS[0] * sim.time * (1 + 1e-12)
    assert sim.xi_hat[0] == pytest.approx(0.5)  # re-measured from the ops it ran


def test_phase_switch_and_measurement():
    sim = EMRFSimulator(CAPS, max_users=1, window_s=1.0, horizon=100, phase_period=(2.5, 2.5))
    sim.reset([UserSpec("GE", 0.2, 1.0, job_gflop=1e9, jobs=1, xi_alt=0.4, co_run=True)], np.random.default_rng(0))
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


def test_noise_only_on_co_run_apps_and_seeded():
    def run(seed):
        sim = EMRFSimulator(CAPS, max_users=2, window_s=1.0, horizon=100, xi_noise=0.05)
        sim.reset([UserSpec("GE", 0.21, 1.0, 1e9, jobs=1, co_run=True), UserSpec("BT", 0.0, 1.0, 1e9, jobs=1)],
                  np.random.default_rng(seed))
        sim.window(wfq_rule(sim, [1.0, 1.0]))
        return list(sim.xi_hat)

    a, b = run(1), run(1)
    assert a == b and a[0] != 0.21 and a[1] == 0.0 and 0 <= a[0] <= 1
    assert run(2)[0] != a[0]


def test_poisson_arrivals_admitted_at_window_boundaries():
    sim = EMRFSimulator(CAPS, max_users=1, window_s=1.0, horizon=200)
    sim.reset([UserSpec("KM", 0.07, 1.0, job_gflop=10.0, jobs=0, arrival_rate=0.5)], np.random.default_rng(3))
    assert not sim.active[0]
    rule = wfq_rule(sim, [1.0])
    arrivals = 0
    for _ in range(200):
        before = sim.jobs_total[0]
        sim.window(rule)
        arrivals += sim.jobs_total[0] - before
    assert 60 <= arrivals <= 140  # ~ 0.5 / s over 200 s
    assert sim.jobs_done[0] >= arrivals - 1  # each 10-GFLOP job takes < 0.03 s alone


def test_late_user_arrives_at_boundary():
    sim = EMRFSimulator(CAPS, max_users=2, window_s=1.0, horizon=10)
    sim.reset([UserSpec("BT", 0.0, 1.0, 1e9, jobs=1), UserSpec("MY", 1.0, 1.0, 1e9, jobs=1, arrival=1.5)],
              np.random.default_rng(0))
    rule = wfq_rule(sim, [1.0, 1.0])
    sim.window(rule)
    assert sim.active == [True, False]
    sim.window(rule)
    assert sim.active == [True, True] and sim.arrived_at[1] == 1.5


def test_too_many_users_rejected():
    sim = EMRFSimulator(CAPS, max_users=1)
    with pytest.raises(ValueError, match="max_users"):
        sim.reset([UserSpec("A", 0.1, 1.0, 1.0), UserSpec("B", 0.1, 1.0, 1.0)], np.random.default_rng(0))
