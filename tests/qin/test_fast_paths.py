"""The simulator's per-control-period fast paths compute exactly what the general
paths compute: cached gathers (``TickContext``), the fused DVFS step of ``qin-node`` and the one-server level
update of ``linux`` must leave bit-identical state (same seed -> same metrics)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from joulegym.envs.qin.dynamics import NodeDecision
from joulegym.envs.qin.node_policies import QinNodePolicy, hint_levels
from tests.qin.test_simulator import NO_LATENCY, make_jobs, make_sim

SERVERS = ("i5-4690", "i7-4790", "i5-6600")
STATE = ("thread_rem", "thread_rate", "job_cpu_s", "job_delay_s", "core_period_instr",
         "core_busy_s", "core_period_busy_s", "core_delay_s", "core_elapsed_s", "server_energy_j",
         "server_load_instr", "server_t", "power_w", "server_rate_sum", "server_gen", "core_level", "_core_f",
         "_core_loss")


def mid_run_sim(node_policy):
    """Three servers mid-episode: five jobs placed at t = 0, the simulator stopped at the sixth arrival (0.5 s),
    after ~50 control periods of 10 ms."""
    sim = make_sim(SERVERS, node_policy=node_policy, **NO_LATENCY)
    apps = ["fft", "lu_cb", "radix", "ocean_cp", "barnes", "fmm"]
    sim.reset(np.random.default_rng(3), make_jobs(apps, [3e10, 2e10, 4e10, 3e10, 5e10, 1e10], [4, 2, 4, 3, 4, 2],
                        arrivals=[0, 0, 0, 0, 0, 0.5]))
    for k in range(5):
        assert sim.advance()
        sim.apply((k % 3, None if k % 2 else 1))
    assert sim.advance() and sim.pending_job == 5
    assert sim.now == 0.5 and sim._busy_servers().size == 3
    return sim


def assert_same(a, b):
    for name in STATE:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert sorted(a._heap) == sorted(b._heap)


def assert_dvfs_matches_reference(fast, ref):
    """One control period of the fast DVFS rule on ``fast`` and of the reference rule on its copy ``ref`` leave the
    same simulator state and the same Kalman bank."""
    servers = fast._busy_servers()
    fast._apply_node_decision(fast.node_policy.dvfs.step(fast, servers))
    ref._apply_node_decision(ref.node_policy.dvfs.reference(ref, servers))
    assert_same(fast, ref)
    np.testing.assert_array_equal(fast.node_policy.kalman.estimate, ref.node_policy.kalman.estimate)
    np.testing.assert_array_equal(fast.node_policy.kalman.variance, ref.node_policy.kalman.variance)


def test_tick_fast_paths_equal_the_general_paths():
    fast = mid_run_sim(QinNodePolicy(focus="energy"))
    ref = copy.deepcopy(fast)
    t = fast.now + 0.004
    fast._integrate_busy(t)
    ref._integrate(ref._busy_servers(), t)
    assert_same(fast, ref)
    assert_dvfs_matches_reference(fast, ref)
    assert not np.array_equal(fast.core_level[fast.core_threads > 0], np.full(np.count_nonzero(
        fast.core_threads), fast.n_levels - 1)), "PL 0.5 should lower some level (the check must see a change)"
    fast._refresh_busy()
    ref._refresh(ref._busy_servers(), mapping=False)
    assert_same(fast, ref)


def test_tick_fast_paths_with_an_idle_server_equal_the_general_paths():
    """With one server idle, the per-period integration updates the busy-time and loss accumulators over every core
    (adding 0 on the idle server's) and leaves the idle server alone: the state of the general path."""
    fast = make_sim(SERVERS, node_policy=QinNodePolicy(focus="energy"), **NO_LATENCY)
    fast.reset(np.random.default_rng(3),
               make_jobs(["fft", "lu_cb", "radix"], [3e10, 2e10, 4e10], [4, 2, 4], arrivals=[0, 0, 0.5]))
    for server in (0, 1):
        assert fast.advance()
        fast.apply((server, None))
    assert fast.advance() and fast.now == 0.5
    assert fast._busy_servers().tolist() == [0, 1]
    ref = copy.deepcopy(fast)
    for t in (fast.now + 0.004, fast.now + 0.009):  # the second from a synchronised time
        fast._integrate_busy(t)
        ref._integrate(ref._busy_servers(), t)
        assert_same(fast, ref)
    assert fast.server_t[2] < fast.server_t[0], "the idle server is integrated lazily"


def test_server_level_update_equals_a_global_level_update():
    """A node decision's levels on one server's core slice leave the state of the same levels given for every
    core of the cluster (-1 elsewhere)."""
    fast = mid_run_sim("linux")
    ref = copy.deepcopy(fast)
    for s in range(3):
        th = fast._server_threads[s]
        top = hint_levels(fast, s, fast.thread_core[th], th)
        top = np.where(top >= 0, 0, -1)  # a change: every busy core to level 0
        lo, hi = fast.first_core[s], fast.first_core[s + 1]
        fast._apply_node_decision(NodeDecision(level_cores=slice(lo, hi), levels=top))
        every = np.full(ref.n_cores, -1)
        every[lo:hi] = top
        ref._apply_node_decision(NodeDecision(level_cores=slice(None), levels=every))
        assert_same(fast, ref)


def test_control_periods_reuse_the_cached_gathers(monkeypatch):
    """The per-period cost rests on re-using the gathers between mapping changes: far fewer context builds than
    control periods (a build per period would bring back the old ~200 us tick)."""
    import joulegym.envs.qin.ticks as ticks

    builds = []

    class Counting(ticks.TickContext):
        __slots__ = ()

        def __init__(self, sim):
            builds.append(sim.now)
            super().__init__(sim)

    monkeypatch.setattr(ticks, "TickContext", Counting)
    sim = mid_run_sim(QinNodePolicy(focus="energy"))
    ticks_before = sim._tick_index
    sim.apply((0, None))
    while sim.advance():
        pass
    ticks = sim._tick_index - ticks_before
    assert sim.done and ticks > 100
    assert 0 < len(builds) <= ticks // 5, (len(builds), ticks)


# Metrics of short hierarchical RW episodes (6 jobs at 0.2x size, seed 1, 10 ms control periods), recorded with the
# general paths' numbers (the fast paths must keep every trajectory bit for bit, so these stay equal to 1e-12) and
# the policies' streams of joulegym.core.inner.policy_rng.
PINNED_EPISODES = {
    "qin": {"makespan_s": 27.812624394978215, "mean_jct_s": 20.846684636265866, "energy_j": 3774.027387417976,
            "pl_mean": 0.0, "migrations": 24.0, "im_c_mean": 79945271460.23549},
    "qin-energy": {"makespan_s": 36.825672570840474, "mean_jct_s": 25.42865403883339, "energy_j": 3624.757821630975,
                   "pl_mean": 0.4999722360706931, "migrations": 22.0, "im_c_mean": 80457433284.09108},
    "qin-edp": {"makespan_s": 26.86758580424109, "mean_jct_s": 21.59638797202408, "energy_j": 3620.000998357693,
                "pl_mean": 0.09996125822282176, "migrations": 32.0, "im_c_mean": 79986446804.08214},
}


def test_hierarchical_episode_metrics_are_pinned():
    import gymnasium as gym
    import pytest

    import joulegym  # noqa: F401
    from joulegym import baselines
    from joulegym.core.policy import env_config_for
    from joulegym.core.rollout import rollout

    objective = {"qin": "makespan", "qin-energy": "energy", "qin-edp": "edp"}
    for name, pinned in PINNED_EPISODES.items():
        policy = baselines.make(name, family="qin")
        kwargs = {"objective": objective[name],
                  "workload": {"kind": "rw", "num_jobs": 6, "arrival": "batch", "size_scale": 0.2}}
        env = gym.make("joulegym/Qin-hier-rw-v0", **env_config_for(policy, kwargs))
        env.reset(seed=1)
        metrics = rollout(env, policy, seed=1).metrics
        for key, value in pinned.items():
            assert metrics[key] == pytest.approx(value, rel=1e-9, abs=1e-12), (name, key)


def test_a_tick_that_keeps_every_level_skips_the_rates_with_the_same_state():
    """``_refresh_busy`` skips rates and power when no level or mapping changed since its last computation; the
    skipped tick leaves the state a full recomputation leaves (and a level change recomputes)."""
    sim = mid_run_sim(QinNodePolicy(focus="energy"))
    sim._integrate_busy(sim.now)
    sim._refresh_busy()  # rates of this context computed: the next refresh may skip them
    assert sim._rates_ctx is sim._ctx
    ref = copy.deepcopy(sim)
    ref._rates_ctx = None  # forces the full recomputation
    sim._refresh_busy()
    ref._refresh_busy()
    assert_same(sim, ref)
    sim.core_level[sim._ctx.occupied[0]] = 0  # a level change goes through _sync_levels, which drops the record
    sim._sync_levels()
    assert sim._rates_ctx is None


def run_to_end(sim):
    sim.apply((5 % 3, None))
    while sim.advance():
        raise AssertionError("no decision is left after the sixth placement")
    assert sim.done
    return sim.metrics()


def test_kalman_steady_variance_is_the_fixed_point_of_the_update():
    from joulegym.envs.qin.predictors import ScalarKalmanFilter

    kf = ScalarKalmanFilter(3)
    p_star = kf.steady_variance()
    assert p_star is not None and 0 < p_star < kf.p0
    kf.update(np.array([1.0, 2.0, 3.0]))
    for _ in range(200):  # reached from p0 by the update itself, then kept
        kf.update(np.array([1.1, 2.1, 2.9]))
    np.testing.assert_array_equal(kf.variance, np.full(3, p_star))


def test_steady_state_dvfs_equals_the_reference():
    """Once every measured Kalman filter sits at its variance fixed point, the DVFS step uses one constant gain (and the
    flat by-core layouts throughout): a control period then leaves exactly the state of the public-function
    reference, also with filters of never-used cores still uninitialised."""
    class Snapshot(QinNodePolicy):
        snap = None

        def control(self, sim, servers):
            init = self.kalman.initialised
            settled = init.any() and not np.count_nonzero(init & self.dvfs._off_star)  # every used filter at p*
            if settled and Snapshot.snap is None and servers.size > 1:
                Snapshot.snap = copy.deepcopy(sim)
            return super().control(sim, servers)

    # two 4-core servers, two jobs of 2 and 1 threads on each: some cores stay idle (uninitialised filters)
    sim = make_sim(("i5-4690", "i5-6600"), node_policy=Snapshot(focus="energy"), **NO_LATENCY)
    sim.reset(np.random.default_rng(5),
              make_jobs(["fft", "lu_cb", "radix", "barnes"], [3e10, 2e10, 4e10, 3e10], [2, 1, 2, 1]))
    for k in range(4):
        assert sim.advance()
        sim.apply((k % 2, None))
    assert not sim.advance() and sim.done
    fast = Snapshot.snap
    assert fast is not None, "the Kalman bank never reached its steady state"
    assert not fast.node_policy.kalman.initialised.all(), "the case with never-measured filters is the one checked"
    measured = (fast.period_instr > 0) & (fast.period_busy_s > 0)
    assert not np.count_nonzero(np.concatenate((measured, measured)) & fast.node_policy.dvfs._off_star), \
        "the period must take the constant-gain branch"
    assert_dvfs_matches_reference(fast, copy.deepcopy(fast))


def test_whole_array_phase_process_equals_the_alive_thread_path(monkeypatch):
    """The CPI phase process run over every thread id (placement restarts a thread's process) gives the alive
    threads the numbers of the gather/scatter path over the alive threads only: same episode, bit for bit."""
    import joulegym.envs.qin.ticks as ticks

    whole = run_to_end(mid_run_sim(QinNodePolicy(focus="energy")))
    monkeypatch.setattr(ticks, "PHASE_WHOLE_ARRAY_SLACK", -10**9)  # forces the alive-thread path
    gathered = run_to_end(mid_run_sim(QinNodePolicy(focus="energy")))
    assert whole == gathered


def test_completion_bound_skips_exact_passes_with_the_same_events(monkeypatch):
    """_refresh_busy skips the per-thread completion pass while no thread can finish before the next tick: the
    episode pushes the same events (same count, same metrics) as with the exact pass every period, and the
    bound does skip most passes."""
    import joulegym.envs.qin.simulator as simulator

    original = simulator.QinSim._refresh_busy
    calls, exact = [0], [0]

    def counting(self):
        before = self._tick_context().rem_floor_t
        original(self)
        calls[0] += 1
        exact[0] += self._ctx.rem_floor_t != before

    monkeypatch.setattr(simulator.QinSim, "_refresh_busy", counting)
    sim = mid_run_sim(QinNodePolicy(focus="energy"))
    bounded = run_to_end(sim)
    pushes = sim._seq
    assert calls[0] > 100 and exact[0] < calls[0] / 3, (exact[0], calls[0])

    def always_exact(self):
        self._tick_context().rem_floor_t = -1.0  # no bound known: the exact pass
        original(self)

    monkeypatch.setattr(simulator.QinSim, "_refresh_busy", always_exact)
    sim = mid_run_sim(QinNodePolicy(focus="energy"))
    assert run_to_end(sim) == bounded
    assert sim._seq == pushes


# The 100-job hierarchical paper-rw episode of the speed target (seed 0, 10 ms control periods), per focus: metrics
# of the general paths' arithmetic (the fast paths reproduce them bit for bit; the policies' streams of
# joulegym.core.inner.policy_rng). ~50 CPU s in all, so behind --reproduce.
PINNED_100 = {
    "qin": {"makespan_s": 969.799199849204, "energy_j": 293007.58479956683, "mean_jct_s": 689.5685464411752,
            "im_c_mean": 1567837613279.2542, "migrations": 582.0, "mean_slowdown": 1.1124822739565887},
    "qin-energy": {"makespan_s": 2082.2230903540067, "energy_j": 274148.63575512165, "mean_jct_s": 1185.7626844424099,
                   "pl_mean": 0.49999045327766395, "pl_max": 0.5000020811708324, "migrations": 2059.0,
                   "mean_util": 0.7174988628154135},
    "qin-edp": {"makespan_s": 1117.0584775012194, "energy_j": 287733.0842001909, "mean_jct_s": 750.2965087912048,
                "pl_mean": 0.09990878103236378, "pl_max": 0.09999978795770242, "migrations": 3078.0,
                "mean_util": 0.8463722121499966},
}


@pytest.mark.reproduce
@pytest.mark.parametrize("name", sorted(PINNED_100))
def test_100_job_hierarchical_episode_metrics_are_pinned(name):
    import gymnasium as gym

    import joulegym  # noqa: F401
    from joulegym import baselines
    from joulegym.core.policy import env_config_for
    from joulegym.core.rollout import rollout

    objective = {"qin": "makespan", "qin-energy": "energy", "qin-edp": "edp"}[name]
    policy = baselines.make(name, family="qin")
    env = gym.make("joulegym/Qin-hier-rw-v0", **env_config_for(policy, {"objective": objective}))
    env.reset(seed=0)
    metrics = rollout(env, policy, seed=0).metrics
    for key, value in PINNED_100[name].items():
        # the trajectory pins' precision (benchmarks/trajectory_pins.py PRECISION): last bits differ across CPUs
        assert metrics[key] == pytest.approx(value, rel=1e-9, abs=1e-12), (name, key, metrics[key], value)


@pytest.mark.parametrize("node_policy", ["linux", "qin-node"])
def test_event_path_shortcuts_equal_the_general_path(node_policy):
    """The per-event shortcuts (a thread's cycles and memory time computed once at its placement when every server's
    cores share one IPC scale; eq. 19's delays not accumulated while every core runs at f_H) leave the state and
    metrics of the general path bit for bit, through placements, completions and level changes."""
    runs = []
    for shortcuts in (True, False):
        policy = QinNodePolicy(focus="edp") if node_policy == "qin-node" else node_policy
        sim = make_sim(SERVERS, node_policy=policy, **NO_LATENCY)
        sim.reset(np.random.default_rng(5), make_jobs(["fft", "lu_cb", "radix", "ocean_cp", "barnes", "fmm"],
                                                      [3e10, 2e10, 4e10, 3e10, 5e10, 1e10], [4, 2, 4, 3, 4, 2],
                                                      arrivals=[0, 0, 0, 0.5, 0.5, 1.0]))
        assert sim._per_server_cycles
        if not shortcuts:  # the general path: constants at every mapping change, eq. 19's +0.0 terms accumulated
            sim._per_server_cycles = False
            sim._lossless = False
            sync = sim._sync_levels

            def sync_general(sim=sim, sync=sync):
                sync()
                sim._lossless = False

            sim._sync_levels = sync_general
        k = 0
        while sim.advance():
            sim.apply((k % 3, None if k % 2 else 1))  # level hints below f_H on every other job
            k += 1
        runs.append(sim)
    assert_same(*runs)
    assert runs[0].metrics() == runs[1].metrics()
    np.testing.assert_array_equal(runs[0]._thr_cycles, runs[1]._thr_cycles)
    np.testing.assert_array_equal(runs[0]._thr_mem_s, runs[1]._thr_mem_s)


def test_scalar_loads_energy_and_reward_equal_the_numpy_path():
    """``QinClusterEnv`` below ``SCALAR_SERVERS`` servers computes the per-decision loads, drain times, total energy
    and the reward's potentials in scalars; every value must be the numpy path's, bit for bit, all episode long."""
    import gymnasium as gym

    from joulegym.envs.qin import cluster_env

    env = gym.make("joulegym/QinCluster-v0")
    _, info = env.reset(seed=5)
    u = env.unwrapped
    assert u.N < cluster_env.SCALAR_SERVERS
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(200):
        sim = u.sim
        known, drain, true_drain = u._loads_scalar()
        true = sim.load_instr
        want_known = np.maximum(true + sim._load_error, 0.0)
        rate = sim.server_rate_sum
        running = rate > 0
        np.testing.assert_array_equal(known, want_known)
        np.testing.assert_array_equal(drain, np.divide(want_known, rate, out=np.zeros(u.N), where=running))
        np.testing.assert_array_equal(true_drain, np.divide(true, rate, out=np.zeros(u.N), where=running))
        np.testing.assert_array_equal(np.array(sim.load_instr_list()), true)
        assert sim.energy_j == float(sim.server_energy_j.sum() + (sim.power_w * (sim.now - sim.server_t)).sum())
        mask = info["action_mask"]
        _, _, terminated, truncated, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        checked += 1
        if terminated or truncated:
            break
    assert checked > 50


def test_scalar_server_path_steps_the_same_episode_as_the_numpy_path(monkeypatch):
    """The same actions through the scalar path and the numpy path (``SCALAR_SERVERS`` = 0) give the same
    observations, rewards and metrics, bit for bit."""
    import gymnasium as gym

    from joulegym.envs.qin import cluster_env

    envs = [gym.make("joulegym/QinCluster-v0") for _ in range(2)]
    outs = [env.reset(seed=7) for env in envs]
    rng = np.random.default_rng(1)
    for _ in range(120):
        action = int(rng.choice(np.flatnonzero(outs[0][-1]["action_mask"])))
        outs = []
        for env, scalar in zip(envs, (cluster_env.SCALAR_SERVERS, 0)):
            with monkeypatch.context() as patch:
                patch.setattr(cluster_env, "SCALAR_SERVERS", scalar)
                outs.append(env.step(action))
        (obs_a, r_a, term_a, trunc_a, info_a), (obs_b, r_b, term_b, trunc_b, info_b) = outs
        assert obs_a.tobytes() == obs_b.tobytes() and r_a == r_b and (term_a, trunc_a) == (term_b, trunc_b)
        assert info_a["reward_parts"] == info_b["reward_parts"]
        if term_a or trunc_a:
            assert info_a["metrics"] == info_b["metrics"]
            break
