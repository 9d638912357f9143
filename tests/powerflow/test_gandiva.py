"""Gandiva as published (Xiao et al., OSDI '18, §4): round-robin suspend/resume time-slicing when
the cluster is oversubscribed, and migration of spread jobs; ``fifo-backfill`` keeps the former behaviour."""

from __future__ import annotations

import numpy as np
import pytest

from joulegym.baselines.powerflow_simulate import simulate
from joulegym.core.policy import make
from joulegym.envs.powerflow.cluster import affinity_migrate_place, affinity_place
from joulegym.workloads.dl_jobs import DLJobs


def _jobs(n_req, iterations, submit=None, model="resnet18", bs=64) -> DLJobs:
    k = len(n_req)
    return DLJobs(job_id=np.array([f"j{i}" for i in range(k)]),
                  submit_s=np.zeros(k) if submit is None else np.asarray(submit, dtype=float),
                  model=np.array([model] * k), batch_size=np.full(k, bs), n_req=np.asarray(n_req),
                  iterations=np.asarray(iterations, dtype=float))


class _Starts:
    """Counts, per job, how often a decision gives it GPUs after it had none (its slices)."""

    def __init__(self, policy) -> None:
        self.policy, self.name, self.privileged = policy, policy.name, policy.privileged
        self.slices: dict[int, int] = {}

    @property
    def env_config(self):
        return self.policy.env_config

    @property
    def paper_config(self):
        return self.policy.paper_config

    def reset(self, env, seed=None) -> None:
        self.policy.reset(env, seed)
        self.sim = env.unwrapped.sim

    def act(self, obs, info):
        before = {int(j): int(self.sim.n[j]) for j in self.sim.ready_jobs()}
        action = self.policy.act(obs, info)
        decision = self.policy._last[-1]
        for j, (k, _) in decision.items():
            if k > 0 and before.get(j, 0) == 0:
                self.slices[j] = self.slices.get(j, 0) + 1
        return action


def test_gandiva_time_slices_under_oversubscription():
    """Three 1-GPU jobs of ~20 min on a 2-GPU node: FIFO + backfill runs the third only after one finishes;
    Gandiva rotates them every quantum, so every job runs in several slices and the late one starts within a
    quantum instead of after a whole job."""
    t1, t2 = (simulate(_jobs([1], [k]), "fifo", cluster=(1, 2), eta=1.0).jct_s[0] for k in (1.0, 1001.0))
    t_iter = (t2 - t1) / 1000.0  # one iteration at f_max (the restart overhead cancels)
    jobs = _jobs([1, 1, 1], [round(20 * 60 / t_iter)] * 3, submit=[0.0, 0.0, 1.0])
    ts = _Starts(make("gandiva", family="powerflow"))
    sliced = simulate(jobs, ts, cluster=(1, 2), eta=1.0)
    assert min(ts.slices.values()) >= 3  # every job suspended and resumed
    assert sliced.metrics["jobs_done"] == 3
    fb = _Starts(make("fifo-backfill", family="powerflow"))
    plain = simulate(jobs, fb, cluster=(1, 2), eta=1.0)
    assert max(fb.slices.values()) == 1  # no suspension without time-slicing
    # round-robin: the three jobs finish close together, the late one long before two whole jobs have run
    assert sliced.finish_s[2] < plain.finish_s[2]
    assert sliced.finish_s.max() - sliced.finish_s.min() < 0.2 * (plain.finish_s.max() - plain.finish_s.min())


def test_gandiva_does_not_slice_without_oversubscription():
    """With room for every job nobody is suspended: Gandiva then decides as FIFO + backfill does (with migration)."""
    jobs = _jobs([1, 1], [2000.0, 3000.0])
    ts = _Starts(make("gandiva", family="powerflow"))
    result = simulate(jobs, ts, cluster=(1, 2), eta=1.0)
    assert max(ts.slices.values()) == 1 and result.metrics["jobs_done"] == 2


def test_gandiva_migration_consolidates_a_spread_job():
    """Affinity placement spreads a 4-GPU job over two nodes when neither has 4 free GPUs; once a node has room,
    Gandiva's migration moves it there (affinity alone leaves it spread)."""
    previous = {0: (0, 1, 2, 3, 4, 5), 1: (8, 9, 10, 11, 12, 13), 2: (6, 7, 14, 15)}
    sizes = {1: 6, 2: 4}  # job 0 finished: node 0 is free
    kept = affinity_place(sizes, previous, 16, 8)
    moved = affinity_migrate_place(sizes, previous, 16, 8)
    assert kept[2] == (6, 7, 14, 15)
    assert len({g // 8 for g in moved[2]}) == 1 and moved[1] == previous[1]
    # a pinned (restarting) job is never moved
    assert affinity_migrate_place(sizes, previous, 16, 8, frozenset({2}))[2] == (6, 7, 14, 15)


def test_gandiva_rejects_bad_settings():
    with pytest.raises(ValueError, match="quantum_s"):
        make("gandiva", family="powerflow", quantum_s=0)
    with pytest.raises(ValueError, match="switch_s"):
        make("gandiva", family="powerflow", switch_s=-1.0)
