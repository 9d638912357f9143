"""Inputs and their bounds (docs/robustness.md, "Inputs and their bounds"): every repro gives the right answer or
a one-line ValueError naming the field, file or flag and what is allowed."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

import joulegym  # noqa: F401  (registers the ids)
from joulegym.evaluation.cli import main as evaluate_main


def _one_line(err: pytest.ExceptionInfo) -> str:
    message = str(err.value)
    assert "\n" not in message, message
    return message


# --- Qin workload files ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "text", "match"), [
    ("late.csv", "app,arrival_s,runtime_s\nfft,2e7,1e9\n", r"line 2: arrival_s must be a finite number in \[0, 1e"),
    ("big.csv", "app,size_instr\nfft,1e300\n", "line 2: size_instr must be a finite number in"),
    ("tiny.csv", "app,size_instr\nfft,1e-300\n", "line 2: size_instr must be a finite number in"),
    ("threads.csv", "app,runtime_s,threads\nfft,10,1e20\n", r"line 2: threads must be a whole number in \[1, 1024\]"),
    ("deep.json", "[" * 100_000 + "]" * 100_000, "JSON nested too deeply"),
    ("twice.csv", "app,app,runtime_s\nfft,lu,10\n", r"line 1: column\(s\) \['app'\] appear more than once"),
    ("twice.json", '[{"app": "fft", "app": "lu", "runtime_s": 1}]', r"gives \['app'\] twice"),
])
def test_qin_workload_files_are_bounded(tmp_path, name, text, match):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError, match=match) as err:
        gym.make("joulegym/QinCluster-v0", workload={"kind": "file", "path": str(path)})
    assert str(path) in _one_line(err)


def test_a_valid_workload_file_runs_with_finite_rewards(tmp_path):
    path = tmp_path / "ok.csv"
    path.write_text("app,arrival_s,runtime_s,threads\nfft,0,1e6,1024\nlu_cb,1e6,1e-3,1\n")
    env = gym.make("joulegym/QinCluster-v0", workload={"kind": "file", "path": str(path)})
    env.reset(seed=0)
    done, rewards = False, []
    while not done:
        _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        rewards.append(reward)
        done = terminated or truncated
    assert np.all(np.isfinite(rewards))


def test_qin_cluster_num_jobs_and_arrivals_are_bounded():
    with pytest.raises(ValueError, match=r"workload.num_jobs must be a whole number in \[1, 100000\]") as err:
        gym.make("joulegym/QinCluster-v0", workload={"kind": "rw", "num_jobs": 10**6})
    _one_line(err)
    with pytest.raises(ValueError, match=r"workload\.rate_per_s must be >= num_jobs"):
        gym.make("joulegym/QinCluster-v0", workload={"kind": "rw", "num_jobs": 1000, "arrival": "poisson",
                                                     "rate_per_s": 1e-6})


def test_powerflow_traces_refuse_a_repeated_column(tmp_path):
    from joulegym.workloads.traces import load_trace

    path = tmp_path / "t.csv"
    path.write_text("job_id,submit_time_s,num_gpus,duration_s,num_gpus ,model,batch_size,iterations\n"
                    "1,0,1,10,2,resnet50,64,\n")
    with pytest.raises(ValueError, match=r"t.csv line 1: column\(s\) \['num_gpus'\] appear more than once"):
        load_trace(path)


# --- reward weights -------------------------------------------------------------------------------------------
def test_reward_weights_are_bounded_so_the_reward_stays_finite():
    with pytest.raises(ValueError, match=r"reward_weights\['uxcost_window'\].*in \[0, 1e\+06\]") as err:
        gym.make("joulegym/DREAMParams-v0", reward_weights={"uxcost_window": 1e308})
    _one_line(err)
    env = gym.make("joulegym/DREAMParams-v0", reward_weights={"uxcost_window": 1e6})
    env.reset(seed=0)
    assert math.isfinite(env.step(env.action_space.sample())[1])


# --- batched envs ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("id_", ["joulegym/ETF-v0", "joulegym/EMRF-v0"])
@pytest.mark.parametrize(("kwargs", "match"), [
    ({"seed": 1.5}, "seed must be None, a whole number >= 0"),
    ({"seed": -1}, r"seed must be None or a whole number in \[0, 2\*\*63\)"),
    ({"seed": [1, "a"]}, r"seed\[1\] must be None or a whole number"),
    ({"options": 5}, "reset options must be a dict"),
])
def test_batched_reset_arguments_give_valueerrors(id_, kwargs, match):
    env = gym.make_vec(id_, num_envs=2, vectorization_mode="vector_entry_point")
    with pytest.raises(ValueError, match=match):
        env.reset(**kwargs)
    single = gym.make(id_)
    if "seed" in kwargs and not isinstance(kwargs["seed"], list):
        with pytest.raises(ValueError, match="seed must be None or a whole number"):
            single.reset(**kwargs)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_reward_under_gymnasiums_vector_envs_is_refused_up_front(mode):
    with pytest.raises(ValueError, match="use vectorization_mode='vector_entry_point'"):
        gym.make_vec("joulegym/ETF-v0", num_envs=2, vectorization_mode=mode, vector_reward=True)
    env = gym.make_vec("joulegym/ETF-v0", num_envs=2, vectorization_mode="vector_entry_point", vector_reward=True)
    env.reset(seed=0)
    assert env.step(env.action_space.sample())[1].shape == (2, 4)


# --- actions, simulate, mix -----------------------------------------------------------------------------------
@pytest.mark.parametrize("id_", ["joulegym/ETF-v0", "joulegym/EMRF-v0", "joulegym/DREAMParams-v0"])
@pytest.mark.parametrize("make", [lambda s: np.full(s, "0.5"), lambda s: np.full(s, 0.5 + 1j),
                                  lambda s: np.full(s, 1 + 0j), lambda s: np.full(s, True),
                                  lambda s: ["0.5"] * int(np.prod(s))])
def test_box_actions_refuse_strings_complex_and_bools(id_, make):
    env = gym.make(id_)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action must be an element of"):
        env.step(make(env.action_space.shape))


def test_simulate_arguments_give_valueerrors():
    from joulegym.baselines.powerflow_simulate import simulate
    from joulegym.workloads.traces import JobTrace

    trace = JobTrace.from_dataframe(pd.DataFrame({"submit_time_s": [0.0], "num_gpus": [1], "duration_s": [10.0],
                                                  "model": "resnet50", "batch_size": 64}))
    with pytest.raises(ValueError, match="policy must be a PowerFlow policy name"):
        simulate(trace, 5)
    with pytest.raises(ValueError, match=r"cluster must be a ClusterSpec or \(nodes, gpus_per_node\)"):
        simulate(trace, "powerflow", cluster="x")


@pytest.mark.parametrize(("mix", "match"), [
    ({"weights": [-1]}, r"mix.weights\[0\] must be a number in \[1e-06, 1e\+06\]"),
    ({"models": []}, "mix.models must be a non-empty list"),
    ({"weights": []}, "mix.weights must be a non-empty list"),
    ({"initial_apps": []}, "mix.initial_apps must be a non-empty list"),
    ({"initial_apps": [-1]}, r"mix.initial_apps\[0\]"),
    ({"mean_lifetime": 0.5}, "mix.mean_lifetime"),
    ({"demand_load": [0.5, 0.1]}, "mix.demand_load"),
])
def test_etf_mix_errors_name_the_mix_key(mix, match):
    with pytest.raises(ValueError, match=match):
        gym.make("joulegym/ETF-random-mix-v0", mix=mix)


# --- CLI ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("args", "match"), [
    (["--suite", "etf", "--seeds", "3"], "--suite runs its fixed policies, envs and seeds: --seeds does not apply"),
    (["--suite", "--policies", "etf", "--env", "joulegym/ETF-v0"], "--env, --policies do not apply"),
    (["--suite", "--reproduce", "etf"], "--suite and --reproduce cannot be combined"),
    (["--reproduce", "etf", "--policies", "etf"], "--reproduce runs its fixed"),
    (["--zoo", "z"], "--zoo applies only with --suite or --ship"),
    (["--seeds", "0"], "--seeds must be >= 1"),
])
def test_evaluate_refuses_flags_a_mode_would_ignore(capsys, args, match):
    with pytest.raises(SystemExit) as exit_:
        evaluate_main(args)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err


def test_a_missing_zoo_is_an_error(tmp_path, capsys):
    assert evaluate_main(["--suite", "etf", "--quick", "--zoo", str(tmp_path / "no"), "--out",
                          str(tmp_path / "lb")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--zoo" in err and "is not a directory" in err


def test_a_sweep_of_an_algorithm_that_cannot_act_is_refused_before_ray(tmp_path):
    from joulegym.integrations.sweeps import load_sweep

    path = tmp_path / "sweep.yml"
    path.write_text("name: t\ntimesteps: 64\nspace:\n  env: [joulegym/ETF-v0]\n  algo: [dqn]\n")
    with pytest.raises(ValueError, match=r"space\.algo: 'dqn' cannot train on space\.env 'joulegym/ETF-v0'"):
        load_sweep(path)
