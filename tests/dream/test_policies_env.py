"""Every DREAM reference policy's fast path equals its ``DREAM-v0`` episode (docs/families/dream.md §6).

Fast path: :func:`joulegym.core.inner.run_inner` of the registered inner policy on a
:class:`~joulegym.envs.dream.simulator.DreamSim` with the same seed. Env: :func:`joulegym.core.rollout.rollout` of
the same name through the core's ``InnerPolicyAdapter`` on ``DREAM-v0`` (or the agent-facing policies on
``DREAMParams-v0``). The metrics must be equal key for key and bit for bit.
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType

import gymnasium as gym
import numpy as np
import pytest

import joulegym  # noqa: F401  (registers the ids)
from joulegym import baselines
from joulegym.baselines.dream import INNER, grid_search
from joulegym.core.inner import policy_rng, run_inner
from joulegym.core.policy import InnerPolicyAdapter, PolicyNotApplicable, available, env_config_for, make_inner
from joulegym.core.rollout import rollout
from joulegym.envs.dream.mapscore import DreamPolicy
from joulegym.envs.dream.simulator import DreamSim
from joulegym.envs.dream.view import _SHARED, DreamView
from tests.dream.toy import run_until

HORIZON = 0.3


def _direct(name: str, workload: str, seed: int, **sim_kw) -> dict:
    sim = DreamSim.from_catalog(workload, "4k-1ws2os", horizon_s=HORIZON, **sim_kw)
    return run_inner(sim, make_inner(name, family="dream"), seed)


def _through_env(name: str, workload: str, seed: int, policy_kw: dict | None = None, **env_kw):
    """The policy's ``DREAM-v0`` episode under its own ``env_config`` (docs §4: ``work_conserving=False`` for a
    scheduler that waits on purpose); every step's action is one the mask allows (none repaired)."""
    policy = baselines.make(name, family="dream", **(policy_kw or {}))
    env = gym.make("joulegym/DREAM-v0", workload=workload, horizon_s=HORIZON, **env_config_for(policy, env_kw))
    repaired = []
    episode = rollout(env, policy, seed=seed, on_step=lambda _obs, _reward, info: repaired.append(info["repaired"]))
    assert not any(repaired), f"{name}: {sum(repaired)} actions repaired"
    return episode, env.unwrapped


def test_every_inner_policy_is_registered_once_for_the_dispatch_kind():
    assert set(INNER) == set(available("dream", kind="DREAM", inner=True))
    assert "random" not in INNER and "random-dispatch" in INNER  # one spelling each, no family-local remap
    assert isinstance(baselines.make("dream-full", family="dream"), InnerPolicyAdapter)
    assert {"adaptivity", "fixed-params", "grid-optimal"} <= set(available("dream", kind="DREAMParams"))
    assert "adaptivity" not in available("dream", kind="DREAM")


@pytest.mark.parametrize("workload", ["vr-gaming", "ar-call"])
@pytest.mark.parametrize("name", sorted(INNER))
def test_fast_path_metrics_equal_the_env_episode(name, workload):
    episode, base = _through_env(name, workload, seed=11)
    direct = _direct(name, workload, 11)
    assert episode.metrics == direct
    assert base.slots.overflow_steps == 0
    assert episode.total_return == pytest.approx(-direct["uxcost"], rel=1e-9)


class _SnapshotView(DreamView):
    """The view with the simulator's lists copied to tuples and its dicts to read-only mappings: a scheduler that
    writes into the state through the view raises."""

    def __post_init__(self) -> None:
        super().__post_init__()
        for key in _SHARED:
            value = getattr(self, key)
            if isinstance(value, list):
                object.__setattr__(self, key, tuple(value))
            elif isinstance(value, dict):
                object.__setattr__(self, key, MappingProxyType(dict(value)))


def test_the_view_cannot_be_rebound():
    sim = DreamSim.from_catalog("ar-call", "4k-1ws2os", horizon_s=0.05)
    sim.reset(np.random.default_rng(0))
    view = sim.view()
    with pytest.raises(dataclasses.FrozenInstanceError):
        view.f_pos = []
    with pytest.raises(dataclasses.FrozenInstanceError):
        del view.ready


@pytest.mark.parametrize("name", sorted(INNER))
def test_no_inner_policy_writes_through_the_view(name):
    """Every inner policy decides on a fresh snapshot view per decision (tuples, read-only mappings) without
    raising, and with the metrics of :func:`run_inner`'s live view: none writes into the simulator's lists."""
    expected = run_inner(DreamSim.from_catalog("vr-gaming", "4k-1ws2os", horizon_s=0.1),
                         make_inner(name, family="dream"), 3)
    sim, policy = DreamSim.from_catalog("vr-gaming", "4k-1ws2os", horizon_s=0.1), make_inner(name, family="dream")
    sim.reset(np.random.default_rng(3))
    policy.reset(sim, policy_rng(3, policy.name))
    while sim.advance():
        sim.apply(policy.decide(_SnapshotView(sim)))
    assert sim.metrics() == expected


@pytest.mark.parametrize("name", ["dream-full", "fcfs", "mapscore-fixed"])
def test_equal_with_frames_outside_the_slots(name):
    """With one slot most decisions name frames outside it: they travel with the action and still match."""
    episode, base = _through_env(name, "vr-gaming", seed=5, max_slots=1)
    assert base.slots.overflow_steps > 0
    assert episode.metrics == _direct(name, "vr-gaming", 5)


@pytest.mark.parametrize("granularity", ["chunk:1", "chunk:4"])
@pytest.mark.parametrize("name", ["dream-full", "planaria", "veltair", "random-dispatch"])
def test_equal_at_chunk_granularity(name, granularity):
    episode, _ = _through_env(name, "vr-gaming", seed=6, granularity=granularity)
    assert episode.metrics == _direct(name, "vr-gaming", 6, granularity=granularity)


WAITING_ON_PURPOSE = {"fcfs-static"}  # registered schedulers whose published rule waits while a dispatch is possible


def test_only_schedulers_that_wait_on_purpose_leave_the_work_conserving_rule():
    """``fcfs-static`` (and MapScore's ``assignment="table"``) run with ``work_conserving=False``; every other
    inner policy, and every agent, under the default rule; the DREAM benchmark lets a policy set only that key."""
    from joulegym.scenarios.dream import FAMILY

    for name in INNER:
        config = env_config_for(baselines.make(name, family="dream"))
        assert config == ({"work_conserving": False} if name in WAITING_ON_PURPOSE else {}), name
        FAMILY.benchmark.check_env_config(name, config)
    table = baselines.make("mapscore-fixed", family="dream", assignment="table")
    assert env_config_for(table) == {"work_conserving": False}
    assert env_config_for(baselines.make("random")) == {}
    assert gym.make("joulegym/DREAM-ar-call-v0").unwrapped.work_conserving
    with pytest.raises(ValueError, match="max_slots"):
        FAMILY.benchmark.check_env_config("x", {"max_slots": 4})


@pytest.mark.parametrize("name, policy_kw", [("fcfs-static", {}), ("mapscore-fixed", {"assignment": "table"})])
def test_waiting_schedulers_need_their_env_config(name, policy_kw):
    """Under the work-conserving mask their deliberate waits would be repaired into dispatches (another episode);
    under their ``env_config`` the env episode equals the fast path."""
    seed = 3
    episode, _ = _through_env(name, "ar-call", seed, policy_kw)
    sim = DreamSim.from_catalog("ar-call", "4k-1ws2os", horizon_s=HORIZON)
    assert episode.metrics == run_inner(sim, make_inner(name, family="dream", **policy_kw), seed)
    env = gym.make("joulegym/DREAM-v0", workload="ar-call", horizon_s=HORIZON)
    repaired = []
    rollout(env, baselines.make(name, family="dream", **policy_kw), seed=seed,
            on_step=lambda _obs, _reward, info: repaired.append(info["repaired"]))
    assert any(repaired)


def test_smart_drops_are_valid_actions_under_load():
    """DREAM's smart drops name only doomed frames (condition 1): under load they happen and none is repaired."""
    episode, _ = _through_env("dream-smartdrop", "ar-social", 1, kappa=4.0)
    assert episode.metrics["drops"] > 0
    assert episode.metrics == _direct("dream-smartdrop", "ar-social", 1, kappa=4.0)


def test_single_layer_decisions_are_plain_actions():
    """MapScore's one-layer dispatches of slotted frames are ordinary integer actions: no decision is carried."""
    env = gym.make("joulegym/DREAM-v0", workload="ar-call", horizon_s=HORIZON)
    policy = baselines.make("mapscore-fixed", family="dream")
    obs, info = env.reset(seed=3)
    policy.reset(env, seed=3)
    action_type = env.unwrapped.action_type
    plain = 0
    for _ in range(200):
        action = policy.act(obs, info)
        plain += action_type._carried is None
        assert info["action_mask"][action]
        obs, _, _, truncated, info = env.step(action)
        if truncated:
            break
    assert plain == 200


def test_dispatch_policies_refuse_the_params_kind():
    env = gym.make("joulegym/DREAMParams-v0", horizon_s=0.25)
    env.reset(seed=0)
    with pytest.raises(PolicyNotApplicable):
        baselines.make("dream-full", family="dream").reset(env, seed=0)


def test_fixed_params_equal_a_direct_windowed_run():
    """DREAMParams-v0 with (1, 1) every window = DREAM-Full at fixed (1, 1) run window by window on the simulator."""
    env = gym.make("joulegym/DREAMParams-v0", workload="vr-gaming", horizon_s=0.5, window_s=0.25)
    episode = rollout(env, baselines.make("fixed-params", family="dream"), seed=2, record=True)
    sim = DreamSim.from_catalog("vr-gaming", "4k-1ws2os", horizon_s=0.5)
    sim.reset(np.random.default_rng(2))  # the env's episode for seed 2
    scheduler = DreamPolicy("full", "fixed", alpha=1.0, beta=1.0)
    scheduler.reset(sim, np.random.default_rng(0))
    uxs = []
    for w in range(2):
        run_until(sim, scheduler, (w + 1) * 0.25)
        uxs.append(sim.window_uxcost(w * 0.25, (w + 1) * 0.25))
    metrics = episode.metrics
    assert metrics.pop("windows") == 2
    assert metrics == sim.metrics()
    assert [-r for r in episode.rewards] == uxs


def test_adaptivity_and_grid_optimal_drive_the_params_kind():
    env = gym.make("joulegym/DREAMParams-v0", workload="ar-call", horizon_s=0.5, window_s=0.1)
    adaptive = rollout(env, baselines.make("adaptivity", family="dream"), seed=1, record=True)
    assert baselines.make("adaptivity", family="dream").privileged is False
    pairs = [tuple(log[:2]) for log in env.unwrapped.param_log]
    assert adaptive.length == 5 and len(set(pairs)) > 1  # the engine searches: it moves (alpha, beta)
    assert all(0.0 <= a <= 2.0 and 0.0 <= b <= 2.0 for a, b in pairs)
    grid = baselines.make("grid-optimal", family="dream", step=1.0)
    episode = rollout(gym.make("joulegym/DREAMParams-v0", workload="ar-call", horizon_s=0.5, window_s=0.1), grid,
                      seed=1)
    table = grid.table
    assert len(table) == 9 and min(u for *_, u in table) == pytest.approx(episode.metrics["uxcost"])
    best = min(table, key=lambda row: row[2])
    assert grid.best == best[:2]
    env2 = gym.make("joulegym/DREAMParams-v0", workload="ar-call", horizon_s=0.5, window_s=0.1)
    env2.reset(seed=1)
    assert grid_search(env2.unwrapped, 1.0) == table  # the same episode seed: the same table
    assert np.isfinite(adaptive.total_return)


# --- supernet="agent": the agent picks the OFA sub-net at the switch point --------------------------------------

@pytest.mark.parametrize("name", ["dream-full", "dream-smartdrop", "fcfs", "planaria"])
def test_env_with_agent_supernet_equals_the_direct_run(name):
    """DREAM-Full's variant choices are plain actions of the bigger space; every scheduler still matches exactly."""
    episode, _ = _through_env(name, "ar-social", seed=4, supernet="agent")
    assert episode.metrics == _direct(name, "ar-social", 4)


def test_dream_full_switch_point_choices_are_plain_actions_with_agent_supernet():
    env = gym.make("joulegym/DREAM-v0", workload="ar-social", horizon_s=HORIZON, supernet="agent", kappa=4.0)
    policy = baselines.make("dream-full", family="dream", supernet_rule="load-aware")  # loaded: it switches
    obs, info = env.reset(seed=2)
    policy.reset(env, seed=2)
    base, action_type = env.unwrapped, env.unwrapped.action_type
    assert action_type.space.n == base.K * 3 * 4 + base.K + 1
    variants_chosen = 0
    for _ in range(400):
        action = policy.act(obs, info)
        if action_type._carried is None and action < action_type.n_dispatch:
            variants_chosen += action % action_type.V > 0
        assert info["action_mask"][action]
        obs, _, _, truncated, info = env.step(action)
        if truncated:
            break
    assert variants_chosen > 0  # DREAM-Full switched some OFA frames to a lighter sub-net through plain actions


class _AlwaysVariant:
    """Dispatches the first valid (slot, accelerator) with sub-net ``variant`` where the mask allows it, else 0."""

    def __init__(self, variant: int) -> None:
        self.variant = variant

    def reset(self, env, seed=None) -> None:
        self.V = env.unwrapped.action_type.V

    def act(self, obs, info) -> int:
        mask = info["action_mask"]
        valid = np.flatnonzero(mask[:-1])
        if valid.size == 0:
            return len(mask) - 1
        first = valid[0] - valid[0] % self.V
        return int(first + self.variant) if mask[first + self.variant] else int(first)


@pytest.mark.parametrize("variant", [0, 3])
def test_an_agent_picks_the_subnet_of_every_ofa_frame(variant):
    env = gym.make("joulegym/DREAM-v0", workload="ar-social", horizon_s=HORIZON, supernet="agent")
    episode = rollout(env, _AlwaysVariant(variant), seed=0)
    sim = env.unwrapped.sim
    ofa = sim.model_names.index("ofa")
    counts = sim.subnet_counts[ofa]
    assert sum(counts) > 0 and counts[variant] == sum(counts), counts
    assert episode.total_return == pytest.approx(-episode.metrics["uxcost"], rel=1e-9)


def test_lighter_subnets_are_masked_away_from_the_switch_point():
    env = gym.make("joulegym/DREAM-v0", workload="ar-social", horizon_s=HORIZON, supernet="agent")
    env.reset(seed=0)
    base = env.unwrapped
    V, seen_open, seen_closed = base.action_type.V, 0, 0
    for _ in range(300):
        mask = base.action_masks().astype(bool)  # int8 0/1: boolean indexing below
        for k, task in base.slots.occupied():
            row = mask[k * 3 * V: (k + 1) * 3 * V].reshape(3, V)
            if not row[:, 0].any():
                continue
            if base.view.at_switch_point(task):
                seen_open += 1
                assert row[row[:, 0]].all()  # every sub-net on every idle accelerator
            else:
                seen_closed += 1
                assert not row[:, 1:].any()
        valid = np.flatnonzero(mask[:-1])
        _, _, _, truncated, _ = env.step(int(valid[0]) if valid.size else len(mask) - 1)
        if truncated:
            break
    assert seen_open > 0 and seen_closed > 0
