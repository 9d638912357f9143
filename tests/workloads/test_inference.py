"""Inference tenants (workloads/inference.py): InferenceApp and the random training mix."""

from __future__ import annotations

import math

import numpy as np
import pytest

from joulegym.devices import get_device
from joulegym.workloads import InferenceApp, random_mix

TX2 = get_device("jetson-tx2")


def test_app_profile_and_override():
    app = InferenceApp("resnet50", 1032.75)
    assert app.service_time_and_power(TX2) == (0.066176, 2.815)
    glutton = InferenceApp("toy-c", 1000.0, power_w=10.0)
    assert glutton.service_time_and_power(get_device("toy-etf")) == (1.0, 10.0)
    assert InferenceApp.from_config(app.as_config()) == app


@pytest.mark.parametrize(("kwargs", "field", "allowed"), [
    ({"weight": 0.0}, "weight", "in [1e-6, 1e6]"), ({"weight": -1.0}, "weight", "in [1e-6, 1e6]"),
    ({"weight": math.nan}, "weight", "in [1e-6, 1e6]"),
    ({"power_w": -1.0}, "power_w", "> 0"), ({"power_w": math.inf}, "power_w", "> 0"),
    ({"arrival": -1}, "arrival", "0 <= arrival < departure"),
    ({"arrival": 5, "departure": 5}, "departure", "0 <= arrival < departure"),
    ({"demand_rps": -0.5}, "demand_rps", ">= 0 or None"),
])
def test_app_validation(kwargs, field, allowed):
    with pytest.raises(ValueError, match=field) as err:
        InferenceApp("resnet50", 1300.5, **kwargs)
    assert allowed in str(err.value)


def test_from_config_errors():
    with pytest.raises(ValueError, match=r"unknown app field\(s\) \['speed'\]; allowed"):
        InferenceApp.from_config({"model": "resnet50", "frequency_mhz": 1300.5, "speed": 1})
    with pytest.raises(ValueError, match="needs 'model' and 'frequency_mhz'"):
        InferenceApp.from_config({"model": "resnet50"})


def test_frequency_must_be_a_dvfs_level():
    with pytest.raises(ValueError, match=r"frequency_mhz=1000\.0 is not a level"):
        InferenceApp("resnet50", 1000.0).service_time_and_power(TX2)
    with pytest.raises(ValueError, match="outside the measured range"):
        InferenceApp("resnet50", 2000.0).service_time_and_power(TX2)


@pytest.mark.parametrize("seed", range(30))
def test_random_mix_respects_max_apps(seed):
    rng = np.random.default_rng(seed)
    apps = random_mix(rng, TX2, horizon=60, max_apps=3, initial_apps=(2, 3), arrival_rate=0.3,
                      mean_lifetime=15.0)
    assert apps and [a.arrival for a in apps] == sorted(a.arrival for a in apps)
    for t in range(60):
        assert sum(a.arrival <= t and (a.departure is None or t < a.departure) for a in apps) <= 3
    for a in apps:
        assert 0 <= a.arrival < 60 and (a.departure is None or a.arrival < a.departure < 60)
        assert a.frequency_mhz in TX2.frequencies.levels_mhz and a.demand_rps is None


def test_random_mix_is_reproducible_and_open_loop_rates():
    draw = lambda: random_mix(np.random.default_rng(4), TX2, horizon=40, demand_load=(0.1, 0.6))  # noqa: E731
    first, second = draw(), draw()
    assert first == second
    for app in first:
        service, _ = TX2.profile(app.model).at(app.frequency_mhz)
        assert 0.1 - 1e-12 <= app.demand_rps * service <= 0.6 + 1e-12
