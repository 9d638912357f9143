"""Bad config values raise a ValueError naming the field at ``gym.make`` (never a TypeError, ZeroDivisionError,
KeyError or a minutes-long hang later), in every family: the cases the adversarial pass found."""

from __future__ import annotations

import gymnasium as gym
import pytest

import joulegym  # noqa: F401

CASES = [
    ("joulegym/ETF-v0", {"apps": [{"model": "resnet50", "frequency_mhz": "1300.5"}]}, "frequency_mhz"),
    ("joulegym/ETF-v0", {"apps": [{"model": "resnet50", "frequency_mhz": None}]}, "frequency_mhz"),
    ("joulegym/ETF-v0", {"apps": [{"model": "resnet50", "frequency_mhz": 1300.5, "weight": "2"}]}, "weight"),
    ("joulegym/ETF-v0", {"mix": {"arrival_rate": 0}}, "mix.arrival_rate"),
    ("joulegym/ETF-v0", {"apps": [{"model": "resnet50", "frequency_mhz": 1300.5, "weight": 1e-300}]}, "weight"),
    ("joulegym/ETF-v0", {"apps": [{"model": "resnet50", "frequency_mhz": 1300.5, "weight": 1e300}]}, "weight"),
    ("joulegym/ETF-v0", {"apps": [{"model": "resnet50", "frequency_mhz": 1300.5, "arrival": 500}]}, "arrival"),
    ("joulegym/ETF-v0", {"T_units": float("inf")}, "T_units"),
    ("joulegym/ETF-v0", {"T_units": True}, "T_units"),
    ("joulegym/ETF-v0", {"phi": "0.5"}, "phi"),
    ("joulegym/ETF-v0", {"max_apps": 10_000_000}, "max_apps"),
    ("joulegym/EMRF-v0", {"random": None, "apps": [{"app": "BT", "job_sigma": 1000}]}, "job_sigma"),
    ("joulegym/EMRF-v0", {"device": "jetson-tx2"}, "device"),
    ("joulegym/EMRF-v0", {"window_s": 1e-15}, "window_s"),
    ("joulegym/EMRF-v0", {"window_s": 1e12}, "window_s"),
    ("joulegym/EMRF-v0", {"max_users": 1_000_000}, "max_users"),
    ("joulegym/EMRF-v0", {"random": {"initial_jobs": -3}}, "initial_jobs"),
    ("joulegym/PowerFlow-v0", {"trace_path": "/nonexistent.csv"}, "trace_path"),
    ("joulegym/PowerFlow-v0", {"trace_format": "bogus"}, "trace_format"),
    ("joulegym/PowerFlow-v0", {"trace": {"num_jobz": 5}}, "num_jobz"),
    ("joulegym/PowerFlow-v0", {"trace": {"num_jobs": 10**9}}, "trace.num_jobs"),
    ("joulegym/PowerFlow-v0", {"trace": {"duration_scale": -1}}, "duration_scale"),
    ("joulegym/PowerFlow-v0", {"max_slots": 10**6}, "max_slots"),
    ("joulegym/PowerFlow-v0", {"eta": True}, "eta"),
    ("joulegym/PowerFlow-v0", {"profiling": "no"}, "profiling"),
    ("joulegym/PowerFlow-v0", {"reward_weights": {"power_violation": float("nan")}}, "reward_weights"),
    # unhashable values (a list or dict from a JSON --env-kwargs) used to raise TypeError (found by tests/test_fuzz.py)
    ("joulegym/ETF-v0", {"reward": []}, "reward"),
    ("joulegym/EMRF-v0", {"reward": {"a": 1}}, "reward"),
    ("joulegym/ETF-v0", {"device": []}, "device"),
    ("joulegym/PowerFlow-v0", {"device": ["v100"]}, "device"),
]


@pytest.mark.parametrize(("env_id", "kwargs", "field"), CASES, ids=[f"{c[0].split('/')[1]}-{c[2]}" for c in CASES])
def test_bad_value_names_the_field_at_make(env_id, kwargs, field):
    with pytest.raises(ValueError, match=field.replace(".", r"\.")):
        gym.make(env_id, **kwargs)
