"""The core's inner-policy protocol, its adapter, ``run_inner`` and the simulator base's observer hook."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from joulegym.core.inner import DecidingPolicy, InnerPolicy, policy_rng, run_inner
from joulegym.core.policy import InnerPolicyAdapter, PolicyNotApplicable, register_policy
from joulegym.core.simulator import Simulator


class CountdownSim(Simulator):
    """``n`` decision points drawn from ``rng``; each decision adds to a running total."""

    def reset(self, rng: np.random.Generator, instance: Any = None) -> None:
        self.left = int(rng.integers(3, 6)) if instance is None else int(instance)
        self.total = 0

    def _apply(self, decision: int) -> None:
        self.total += int(decision)

    def advance(self) -> bool:
        self.left -= 1
        return self.left >= 0

    def view(self) -> dict[str, int]:
        return {"left": self.left}

    def metrics(self) -> dict[str, Any]:
        return {"total": self.total}

    @property
    def done(self) -> bool:
        return self.left < 0

    @property
    def truncated(self) -> bool:
        return False


class Coin:
    name = "coin"
    privileged = False

    def reset(self, sim: Any, rng: np.random.Generator) -> None:
        self.rng = rng

    def decide(self, view: Any) -> int:
        return int(self.rng.integers(0, 2))


def test_simulator_base_is_abstract_and_checks_its_hooks():
    class Partial(Simulator):
        def reset(self, rng, instance=None):
            return None

    with pytest.raises(TypeError):
        Partial()
    sim = CountdownSim()
    assert isinstance(sim, Simulator)
    with pytest.raises(ValueError, match="observer must be callable"):
        sim.add_observer(3)


def test_observers_see_every_applied_decision_and_can_be_removed():
    sim, seen = CountdownSim(), []

    def watch(s, decision):
        seen.append((s.total, decision))

    sim.add_observer(watch)
    run_inner(sim, Coin(), seed=4, instance=5)
    assert len(seen) == 5 and sum(d for _, d in seen) == sim.total
    assert all(total >= decision for total, decision in seen)  # told after the decision was applied
    sim.remove_observer(watch)
    run_inner(sim, Coin(), seed=4, instance=5)
    assert len(seen) == 5
    with pytest.raises(ValueError, match="not registered"):
        sim.remove_observer(watch)


def test_run_inner_is_deterministic_per_seed_and_draws_per_name():
    first = run_inner(CountdownSim(), Coin(), seed=7, instance=50)
    again = run_inner(CountdownSim(), Coin(), seed=7, instance=50)
    other = run_inner(CountdownSim(), Coin(), seed=8, instance=50)
    assert first == again and first != other
    assert policy_rng(1, "a").random() != policy_rng(1, "b").random()
    assert policy_rng(1, "a").random() == policy_rng(1, "a").random()
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ValueError, match="seed must be"):
            policy_rng(bad, "a")


def test_protocols_recognise_inner_and_deciding_policies():
    assert isinstance(Coin(), InnerPolicy) and isinstance(Coin(), DecidingPolicy)

    class HookOnly:
        name, privileged = "hook", False

        def reset(self, sim, rng):
            return None

    assert isinstance(HookOnly(), InnerPolicy) and not isinstance(HookOnly(), DecidingPolicy)
    with pytest.raises(ValueError, match="no decide"):
        InnerPolicyAdapter(HookOnly(), family="toy")
    with pytest.raises(ValueError, match="needs a policy with decide"):
        run_inner(CountdownSim(), HookOnly(), seed=0)


def test_adapter_refuses_other_families_and_reads_through_settings():
    class Base:
        family, kind = "other", "X"

    class Env:
        unwrapped = Base()

    coin = Coin()
    coin.alpha = 0.5
    adapter = InnerPolicyAdapter(coin, family="toy")
    assert adapter.name == "coin" and adapter.alpha == 0.5 and adapter.privileged is False
    with pytest.raises(PolicyNotApplicable, match="drives every toy kind"):
        adapter.reset(Env(), seed=0)
    with pytest.raises(RuntimeError, match="before reset"):
        adapter.act(None, {})


@pytest.mark.parametrize("bad", ["a/b", "", " x", "snake_case"])
def test_policy_names_have_one_spelling(bad):
    with pytest.raises(ValueError, match=r"one spelling|without"):
        register_policy(bad, Coin, family="toy-names", description="x")
