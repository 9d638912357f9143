"""Extreme but finite inputs: the EMRF, DRF and WFQ allocators and the env give a correct answer
(finite, >= 0, within the device capacities) or a ValueError naming the argument.

The allocators solve in normalised units (capacities and weights divided by powers of two near their maxima,
HiGHS's LPs too), so the absolute magnitude does not matter (1e-300 .. 1e300 GFLOPS, denormal weights); the
max/min spread of the capacities and of the weights is bounded (``allocation.MAX_SPREAD``; wider raises).
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import joulegym  # noqa: F401
from joulegym.baselines.emrf import drf_allocate, emrf_allocate, wfq_allocate
from joulegym.envs.emrf.allocation import CAPACITY_RANGE, MAX_SPREAD

XI = st.one_of(st.sampled_from([0.0, 5e-324, 1e-300, 0.001, 0.5, 0.999, 1.0 - 1e-16, 1.0]), st.floats(0.0, 1.0))
EXPONENT = st.floats(math.log10(CAPACITY_RANGE[0]), math.log10(CAPACITY_RANGE[1]))
SPREAD_EXP = st.floats(0.0, math.log10(MAX_SPREAD) * 0.999)  # log10 of a ratio inside the allowed spread


@st.composite
def extreme_instances(draw):
    """Capacities anywhere in CAPACITY_RANGE (within MAX_SPREAD of each other), weights of any magnitude down to
    denormals (within MAX_SPREAD), xi with the extremes."""
    n = draw(st.integers(1, 6))
    base = draw(EXPONENT)
    lo = max(base - draw(SPREAD_EXP), math.log10(CAPACITY_RANGE[0]))
    caps = (10.0 ** base, 10.0 ** lo) if draw(st.booleans()) else (10.0 ** lo, 10.0 ** base)
    scale = draw(st.one_of(st.floats(-320.0, 300.0).map(lambda e: 10.0 ** e), st.just(5e-324)))
    w = [scale * 10.0 ** draw(SPREAD_EXP) if scale > 5e-324 else 5e-324 for _ in range(n)]
    if max(w) / MAX_SPREAD > min(w):  # denormal rounding can widen the spread: bring it back inside
        w = [max(x, max(w) / MAX_SPREAD * 1.01) for x in w]
    xi = draw(st.lists(XI, min_size=n, max_size=n))
    return caps, xi, w


def _assert_correct(caps, xi, alloc) -> None:
    f = np.asarray(alloc, dtype=float)
    assert np.all(np.isfinite(f)) and np.all(f >= 0), f
    x = np.asarray(xi, dtype=float)
    x = np.where(x < 1e-300, 0.0, np.where(x > 1 - 1e-300, 1.0, x))
    usage = np.array([f @ x, f @ (1.0 - x)])
    assert np.all(usage <= np.asarray(caps) * (1 + 1e-6)), (usage / np.asarray(caps))  # HiGHS's tolerance: 1e-7


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(extreme_instances(), st.sampled_from([0.0, 0.1, 0.5, 1.0]),
       st.sampled_from([("lexmaxmin", "highs"), ("vertex", "highs"), ("lexmaxmin", "closed-form")]))
def test_allocators_are_correct_at_any_magnitude(instance, eta, method):
    caps, xi, w = instance
    _assert_correct(caps, xi, drf_allocate(caps, xi, w))
    _assert_correct(caps, xi, wfq_allocate(caps, xi, w))
    _assert_correct(caps, xi, emrf_allocate(caps, xi, w, eta, *method))


def test_tiny_capacities_were_unsolvable_by_highs():
    """Before the normalisation HiGHS reported 'unbounded' on C = (1e-30, 1e-30) (its tolerances are absolute)."""
    for method in (("lexmaxmin", "highs"), ("vertex", "highs")):
        f = emrf_allocate((1e-30, 1e-30), [0.2, 0.7], [1, 1], 0.3, *method)
        np.testing.assert_allclose(f, [8e-31, 1.2e-30], rtol=1e-6)
        f = emrf_allocate((1e300, 1e300), [0.2, 0.7], [1, 1], 0.3, *method)
        np.testing.assert_allclose(f, [8e299, 1.2e300], rtol=1e-6)


@pytest.mark.parametrize(("args", "field"), [
    (((400, 1e-320), [1e-320], [1e-320]), "capacities"),  # the reported case (it returned [nan])
    (((1e-301, 1e-301), [0.5], [1]), "capacities"),
    (((1e301, 1e301), [0.5], [1]), "capacities"),
    (((1.0, 2 * MAX_SPREAD), [0.5], [1]), "capacities"),
    (((100, 800), [0.5, 0.5], [1e-300, 1.0]), "weights"),
    (((100, 800), [0.5, 0.5], [0.0, 1.0]), "weights"),
    (((100, 800), [0.5, 0.5], ["a", 1.0]), "weights"),
    (((100, 800), [0.5, np.nan], [1.0, 1.0]), "xi_cpu"),
])
def test_out_of_domain_inputs_raise_naming_the_argument(args, field):
    for fn in (drf_allocate, wfq_allocate, lambda *a: emrf_allocate(*a, 0.5)):
        with pytest.raises(ValueError, match=field):
            fn(*args)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(base=EXPONENT, spread=SPREAD_EXP, weight_exp=st.floats(-300.0, 300.0), weight_spread=SPREAD_EXP,
       mode=st.sampled_from(["weights", "residual_weights", "knob", "knob_discrete"]),
       tiny=st.sampled_from([0.0, 5e-324, 1e-308, 1e-200, 1.0]), seed=st.integers(0, 2**16))
def test_env_steps_stay_correct_at_any_magnitude(base, spread, weight_exp, weight_spread, mode, tiny, seed):
    """The env (and its simulator) with capacities and weights at any magnitude, Box actions at denormal values:
    finite observations inside the space, finite rewards, delivered GFLOPS within the capacities."""
    caps = [10.0 ** base, 10.0 ** max(base - spread, math.log10(CAPACITY_RANGE[0]))]
    apps = [{"xi_cpu": 0.3, "weight": 10.0 ** weight_exp}, {"xi_cpu": 0.0, "weight": 10.0 ** weight_exp},
            {"xi_cpu": 1.0, "weight": 10.0 ** (weight_exp + weight_spread)}]
    env = gym.make("joulegym/EMRF-v0", action_mode=mode, capacities=caps, apps=apps, random=None, eta_choices=None,
                   horizon=4, max_users=4)
    obs, _ = env.reset(seed=seed)
    env.action_space.seed(seed)
    for step in range(4):
        action = env.action_space.sample()
        if mode in ("weights", "residual_weights") and step % 2 == 0:
            action = np.full(4, tiny, dtype=np.float32)
        obs, reward, terminated, truncated, info = env.step(action)
        assert env.observation_space.contains(obs) and math.isfinite(reward)
        delivered = info["delivered"]
        x = np.array([0.3, 0.0, 1.0, 0.0])
        assert np.all(np.isfinite(delivered)) and np.all(delivered >= 0)
        assert delivered @ x <= caps[0] * (1 + 1e-9) and delivered @ (1 - x) <= caps[1] * (1 + 1e-9)
        if terminated or truncated:
            break


@pytest.mark.parametrize(("overrides", "field"), [
    ({"capacities": [1e-301, 1.0]}, "capacities"),
    ({"capacities": [1.0, 2 * MAX_SPREAD]}, "capacities"),
    ({"apps": [{"app": "GE", "weight": 1.0}, {"app": "BT", "weight": 2 * MAX_SPREAD}], "random": None}, "weight"),
    ({"random": {"weights": [1.0, 2 * MAX_SPREAD]}}, "weights"),
])
def test_env_rejects_spreads_the_allocators_cannot_solve(overrides, field):
    with pytest.raises(ValueError, match=field):
        gym.make("joulegym/EMRF-v0", **overrides)
