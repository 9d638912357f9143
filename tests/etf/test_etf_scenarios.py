"""ETF named scenarios (``docs/families/etf.md``, "Scenarios"): the catalogue, its configs, the sweeps as
kwargs, and the random timelines."""

from __future__ import annotations

import numpy as np
import pytest

import joulegym  # noqa: F401  (registers the ids)
from joulegym.scenarios import CATALOG, registered_ids
from joulegym.scenarios.etf import KINDS, SCENARIOS
from tests.etf.helpers import make_env

EXPECTED = ["toy-fig3", "toy-fig3-lemma2", "tx2-fig5", "tx2-fig5-text4x", "tx2-fig6", "tx2-fig6-random",
            "tx2-phi-random", "a10g-fig8", "tx2-fig9-dynamic", "tx2-fig10-incentive", "tx2-fig10-same",
            "tx2-fig11-weights", "random-mix", "open-loop", "tx2-mix-dynamic"]


def test_catalogue():
    """The paper's scenarios are ids; the parameter sweeps (phi, A2's frequency) are kwargs, not ids."""
    assert sorted(SCENARIOS) == sorted(EXPECTED)
    assert not any("-phi0" in name or "-phi1" in name or "-fig6-f" in name for name in SCENARIOS)
    ids = registered_ids("etf")
    # One base id per kind plus one id per (scenario, applicable kind).
    expected = len(KINDS) + sum(len(s.kinds) if s.kinds else len(KINDS) for s in SCENARIOS.values())
    assert len(ids) == expected
    for env_id in ids:
        assert CATALOG[env_id][0] == "etf" and CATALOG[env_id][1]


def test_paper_scenarios_use_the_whole_split_and_training_ones_the_guarantee():
    for name, scenario in SCENARIOS.items():
        mode = scenario.config.get("guarantee_mode", "project")
        assert mode == ("project" if name in ("random-mix", "open-loop") else "none"), name


@pytest.mark.parametrize(("name", "kwargs", "phi"), [("tx2-fig5", {}, 0.7), ("tx2-fig5", {"phi": 0.3}, 0.3),
                                                     ("tx2-fig11-weights", {"phi": 1.0}, 1.0),
                                                     ("a10g-fig8", {"phi": 0.6}, 0.6)])
def test_phi_of_scenarios(name, kwargs, phi):
    env = make_env("joulegym/ETF-v0", scenario=name, **kwargs)
    obs, info = env.reset(seed=0)
    assert info["phi"] == pytest.approx(phi) and obs[4 * 9] == pytest.approx(phi)


def test_fig6_sweep_is_a_kwarg():
    """``tx2-fig6`` has A2 at 114.75 MHz (1-to-7.9); ``app_frequencies_mhz`` moves it to any TX2 level (a
    ``None`` entry keeps that app's own frequency), on every kind."""
    env = make_env("joulegym/ETF-tx2-fig6-v0").unwrapped
    env.reset(seed=0)
    assert env.sim.frequency_mhz[:2] == [1300.5, 114.75]
    for kind in ("ETF", "ETFPhi", "ETFDVFS"):
        swept = make_env(f"joulegym/{kind}-tx2-fig6-v0", app_frequencies_mhz=[None, 726.75]).unwrapped
        swept.reset(seed=0)
        assert swept.sim.frequency_mhz[:2] == [1300.5, 726.75]
        assert swept.config["app_frequencies_mhz"] == [None, 726.75]
    # A frequency within the grid's 0.5 MHz tolerance is the level itself.
    near = make_env("joulegym/ETF-tx2-fig6-v0", app_frequencies_mhz=[1300.5, 1032.5]).unwrapped
    near.reset(seed=0)
    assert near.sim.frequency_mhz[1] == 1032.75


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"app_frequencies_mhz": [1300.5]}, "one GPU level .* per app"),
    ({"app_frequencies_mhz": 726.75}, "one GPU level .* per app"),
    ({"app_frequencies_mhz": [1300.5, 1000.0]}, r"app_frequencies_mhz\[1\]=1000.0 is not a GPU level"),
    ({"app_frequencies_mhz": [1300.5, -1.0]}, r"app_frequencies_mhz\[1\] must be a finite number > 0"),
    ({"app_frequencies_mhz": [1300.5, "fast"]}, r"app_frequencies_mhz\[1\]"),
    ({"app_frequencies_mhz": [None, 726.75], "random_frequency_apps": [1]}, "random_frequency_apps"),
])
def test_app_frequencies_are_validated(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_env("joulegym/ETF-tx2-fig6-v0", **kwargs)


def test_app_keys_have_no_effect_with_a_mix():
    with pytest.raises(ValueError, match="app_frequencies_mhz refers to apps"):
        make_env("joulegym/ETF-random-mix-v0", app_frequencies_mhz=[1300.5, 726.75])
    with pytest.raises(ValueError, match="random_frequency_apps refers to apps"):
        make_env("joulegym/ETF-random-mix-v0", random_frequency_apps=[0])
    with pytest.raises(ValueError, match="mix has unknown keys"):
        make_env("joulegym/ETF-random-mix-v0", mix={"colour": 1})


def test_scenario_configs_match_the_paper():
    env = make_env("joulegym/ETF-tx2-fig5-v0").unwrapped
    env.reset(seed=0)
    assert env.sim.power_w[:2] == [4.261, 0.9] and env.sim.frequency_mhz[:2] == [1300.5, 726.75]
    assert (env.T, env.horizon, env.config["epoch_s"]) == (40, 60, 1.0)
    text4x = make_env("joulegym/ETF-tx2-fig5-text4x-v0").unwrapped
    text4x.reset(seed=0)
    assert text4x.sim.power_w[0] / text4x.sim.power_w[1] == pytest.approx(4.0, abs=0.01)
    weights = make_env("joulegym/ETF-tx2-fig11-weights-v0").unwrapped
    weights.reset(seed=0)
    assert weights.sim.weight[:2] == [2.0, 1.0]
    toy = make_env("joulegym/ETF-toy-fig3-v0").unwrapped
    toy.reset(seed=0)
    assert toy.sim.power_w[:3] == [2.0, 3.0, 8.0] and toy.T == 30
    lemma = make_env("joulegym/ETF-toy-fig3-lemma2-v0").unwrapped
    lemma.reset(seed=0)
    assert lemma.sim.power_w[:3] == [2.0, 3.0, 10.0]


def test_fig6_random_draws_a_tx2_level():
    env = make_env("joulegym/ETF-tx2-fig6-random-v0").unwrapped
    seen = set()
    for seed in range(30):
        env.reset(seed=seed)
        assert env.sim.frequency_mhz[0] == 1300.5
        seen.add(env.sim.frequency_mhz[1])
    assert seen <= set(env.device.frequencies.levels_mhz) and len(seen) > 5


def test_phi_random_draws_from_the_grid():
    env = make_env("joulegym/ETF-tx2-phi-random-v0")
    phis = {env.reset(seed=s)[1]["phi"] for s in range(40)}
    assert phis <= {k / 10 for k in range(11)} and len(phis) > 5


@pytest.mark.parametrize("name", ["random-mix", "open-loop"])
def test_random_mix_timelines(name):
    """At most max_apps apps overlap at any epoch; arrivals are in order; open-loop apps have finite demand."""
    env = make_env("joulegym/ETF-v0", scenario=name).unwrapped
    sizes = set()
    for seed in range(40):
        env.reset(seed=seed)
        apps = env.sim.apps
        sizes.add(len(apps))
        assert [a.arrival for a in apps] == sorted(a.arrival for a in apps)
        for t in range(env.horizon):
            present = sum(a.arrival <= t and (a.departure is None or t < a.departure) for a in apps)
            assert present <= env.max_apps
        for a in apps:
            assert a.model in ("resnet18", "resnet50", "mobilenetv2") and a.weight in (1.0, 2.0)
            assert (a.demand_rps is not None) == (name == "open-loop")
    assert len(sizes) > 2


def test_dynamic_timeline_terminates_when_everyone_left():
    env = make_env("joulegym/ETF-v0", scenario="tx2-fig9-dynamic",
                   apps=[{"model": "resnet50", "frequency_mhz": 1300.5, "departure": 3}], horizon=10)
    env.reset(seed=0)
    flags = [env.step(np.ones(4, dtype=np.float32))[2] for _ in range(3)]
    assert flags == [False, False, True]


def test_unknown_scenario_lists_the_allowed_ones():
    with pytest.raises(ValueError, match=r"scenario='tx2-fig99' is unknown for ETF; allowed: \[.*'tx2-fig5'"):
        make_env("joulegym/ETF-v0", scenario="tx2-fig99")
