"""What the Qin cluster policies read (docs/families/qin.md §5.1): a policy that is not ``privileged`` decides on
what a deployed scheduler knows. The published schedulers never read a job's size estimate alpha_hat (the paper's
Alg. 1 + 3 never read alpha_m), so their placements may not change when the estimates change. The rules on L_i read
the estimates: under the env's default ``size_estimate="app-mean"`` those are each app's mean size (deployable);
their ``-profiled`` variants run with per-job sizes within 5 % of the truth (docs §2.1), a job's duration, which a
deployed scheduler does not know: privileged."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.seeding import np_random

import joulegym  # noqa: F401
from joulegym import baselines
from joulegym.core.inner import run_inner
from joulegym.core.policy import make_inner

ENV = "joulegym/QinCluster-tiny-v0"
SMALL = {"workload": {"num_jobs": 20}}
SIZE_BLIND = ("qin", "qin-perf", "qin-energy", "qin-edp", "qin-d1", "qin-dac", "kubernetes", "paragon", "mage",
              "round-robin", "drain-time")
SIZED = ("least-loaded", "drain-time-sized")
PROFILED = {"least-loaded": "least-loaded-profiled", "drain-time-sized": "drain-time-profiled"}


def _placements(name: str, size_factor: np.ndarray | None, seed: int = 3, **env_kw) -> list[int]:
    """The servers ``name`` places the jobs on, with every job's size estimate (and the energy and runtime
    predictions made from it) multiplied by ``size_factor``."""
    policy = make_inner(name, family="qin")
    env = gym.make(ENV, **{**SMALL, **getattr(policy, "env_config", {}), **env_kw})
    try:
        base = env.unwrapped
        sim_rng, instance = base.episode_inputs(np_random(seed)[0])
        if size_factor is not None:
            p = instance.predictions
            per_job = size_factor[:, None]
            predictions = dataclasses.replace(p, size_instr=p.size_instr * size_factor,
                                              energy_j=p.energy_j * per_job, runtime_s=p.runtime_s * per_job)
            instance = dataclasses.replace(instance, predictions=predictions)
        placed: list[int] = []
        base.sim.add_observer(lambda sim, decision: placed.append(int(decision[0])))
        run_inner(base.sim, policy, seed, instance, rng=sim_rng)
        return placed
    finally:
        env.close()


def _factor(m: int = 20) -> np.ndarray:
    return np.random.default_rng(7).lognormal(0.0, 0.5, m)


@pytest.mark.parametrize("name", SIZE_BLIND)
def test_deployable_placements_ignore_the_size_estimates(name):
    assert not make_inner(name, family="qin").privileged
    assert _placements(name, None) == _placements(name, _factor())


def test_qin_least_loaded_of_d_reads_no_size():
    """The ``least-loaded-of-d`` pick compares the size-blind load (assigned jobs over the measured rate)."""
    kw = {"dchoice_rule": "least-loaded-of-d"}
    assert _placements("qin", None, **kw) == _placements("qin", _factor(), **kw)


@pytest.mark.parametrize("name", SIZED)
def test_rules_on_the_load_read_the_estimates_and_only_per_job_sizes_are_privileged(name):
    """The rules on L_i (the jobs' size estimates less the retired instructions) move with the estimates; they are
    deployable on the app means and privileged on per-job profiled sizes, which their ``-profiled`` variant runs."""
    deployable, profiled = make_inner(name, family="qin"), make_inner(PROFILED[name], family="qin")
    assert not deployable.privileged and deployable.env_config == {}
    assert profiled.privileged and profiled.env_config == {"size_estimate": "profiled"}
    assert profiled.name == PROFILED[name] and type(profiled) is type(deployable)
    assert _placements(name, None) != _placements(name, _factor())


def test_profiled_sizes_are_only_in_privileged_policies():
    """Every registered Qin cluster policy that runs with per-job sizes says it is privileged."""
    from joulegym.core.policy import available

    profiled = [name for name in available("qin", "QinCluster", inner=True)
                if getattr(make_inner(name, family="qin"), "env_config", {}).get("size_estimate") == "profiled"]
    assert sorted(profiled) == sorted(PROFILED.values())
    assert all(make_inner(name, family="qin").privileged for name in profiled)


def test_drain_time_counts_jobs_over_the_measured_rate():
    """``drain-time`` takes the server whose assigned jobs drain first at its measured rate, an idle one first."""
    policy = baselines.make("drain-time", family="qin")
    env = gym.make(ENV, **SMALL).unwrapped
    obs, info = env.reset(seed=0)
    policy.reset(env, seed=0)
    done, chosen = False, []
    while not done:
        sim = env.sim
        rate = sim.server_rate_sum.copy()
        drain = np.divide(sim.jobs_on, rate, out=np.zeros(rate.shape), where=rate > 0)
        action = int(policy.act(obs, info))
        assert drain[action] == drain.min()
        chosen.append(action)
        obs, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    assert chosen[:5] == [0, 1, 2, 3, 4]


def test_size_estimate_app_mean_knows_no_job_size():
    """``size_estimate="app-mean"`` (the default): every job of an app gets the app's mean size (energy and runtime
    predictions rescaled with it); ``"profiled"`` keeps the per-job estimate."""
    from joulegym.workloads.qin_jobs import MEAN_RUNTIME_S

    def inputs(**kw):
        env = gym.make(ENV, **SMALL, **kw).unwrapped
        return env.episode_inputs(np_random(5)[0])[1]

    profiled, app_mean = inputs(size_estimate="profiled"), inputs()
    assert gym.make(ENV).unwrapped.config["size_estimate"] == "app-mean"
    jobs = app_mean.jobs
    assert np.array_equal(profiled.jobs.size_instr, jobs.size_instr)
    expected = MEAN_RUNTIME_S / jobs.catalog.reference_seconds_per_instruction[np.asarray(jobs.app)]
    assert np.allclose(app_mean.predictions.size_instr, expected, rtol=1e-12)
    assert not np.allclose(profiled.predictions.size_instr, expected, rtol=1e-3)
    ratio = (app_mean.predictions.size_instr / profiled.predictions.size_instr)[:, None]
    assert np.allclose(app_mean.predictions.energy_j, profiled.predictions.energy_j * ratio, rtol=1e-12)
    assert np.allclose(app_mean.predictions.runtime_s, profiled.predictions.runtime_s * ratio, rtol=1e-12)
    assert np.array_equal(app_mean.predictions.mips, profiled.predictions.mips)
    with pytest.raises(ValueError, match="size_estimate"):
        gym.make(ENV, size_estimate="oracle")


def _observations(size_factor: np.ndarray | None, steps: int = 12, **env_kw) -> np.ndarray:
    """The observations of one episode (placements in turn over the servers) with every job's profiled size
    estimate, and the energy and runtime predictions made from it, multiplied by ``size_factor``."""
    from joulegym.envs.qin.prediction import with_size_estimates

    env = gym.make(ENV, **SMALL, **env_kw)
    try:
        base = env.unwrapped
        predictor = base._predictor_for_episode()
        if size_factor is not None:
            predict = predictor.predict
            predictor.predict = lambda jobs, rng: (lambda p: with_size_estimates(p, p.size_instr * size_factor))(
                predict(jobs, rng))
        obs, _ = env.reset(seed=4)
        seen = [obs]
        for step in range(steps):
            obs, _, terminated, truncated, _ = env.step(step % base.N)
            seen.append(obs)
            if terminated or truncated:
                break
        return np.array(seen)
    finally:
        env.close()


def test_default_observation_ignores_per_job_size_estimates():
    """Under the default ``size_estimate`` the agent's observation (load, drain time, the job's size feature, the
    per-server predictions) is the same whatever each job's profiled size estimate is: it reads the apps' mean
    sizes only, as the deployable rules do. With ``"profiled"`` it moves with the estimates."""
    base = _observations(None)
    names = gym.make(ENV, **SMALL).unwrapped.observation_names
    np.testing.assert_allclose(_observations(_factor()), base, rtol=1e-6, atol=1e-7)
    profiled = _observations(None, size_estimate="profiled")
    moved = np.abs(_observations(_factor(), size_estimate="profiled") - profiled).max(axis=0) > 1e-3
    assert {"job.size", "server0.load", "server0.drain_time"} <= {n for n, m in zip(names, moved) if m}
