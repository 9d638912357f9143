"""The DREAM reference policies through the env equal the schedulers run on the simulator directly (issue 15:
"the same policy gives identical metrics through the simulator and through the env"; docs/families/dream.md §6).

Direct: :func:`joulegym.envs.dream.scheduling.run_episode` on a :class:`DreamSim` with the env's simulator seed.
Env: :func:`joulegym.core.rollout.rollout` of the registered policy on ``DREAM-v0`` (or ``DREAMParams-v0``).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import joulegym  # noqa: F401  (registers the ids)
from joulegym import baselines
from joulegym.baselines.dream import SCHEDULERS, SIM_NAME, grid_search
from joulegym.core.policy import PolicyNotApplicable, available
from joulegym.core.rollout import rollout
from joulegym.envs.dream.scheduling import make_scheduler, run_episode, run_window
from joulegym.envs.dream.simulator import DreamSim

HORIZON = 0.3


def _direct(name: str, workload: str, seed: int, **sim_kw) -> dict:
    sim = DreamSim.from_catalog(workload, "4k-1ws2os", horizon_s=HORIZON, **sim_kw)
    return run_episode(sim, make_scheduler(SIM_NAME.get(name, name)), seed)


def _through_env(name: str, workload: str, seed: int, **env_kw):
    env = gym.make("joulegym/DREAM-v0", workload=workload, horizon_s=HORIZON, **env_kw)
    episode = rollout(env, baselines.make(name, family="dream"), seed=seed)
    return episode, env.unwrapped


def test_every_scheduler_is_registered_for_the_dispatch_kind():
    names = available("dream", kind="DREAM")
    assert set(SCHEDULERS) <= set(names)
    assert {SIM_NAME.get(n, n) for n in SCHEDULERS} == set(__import__(
        "joulegym.envs.dream.scheduling", fromlist=["SCHEDULER_NAMES"]).SCHEDULER_NAMES)
    assert {"adaptivity", "fixed-params", "grid-optimal"} <= set(available("dream", kind="DREAMParams"))
    assert "adaptivity" not in available("dream", kind="DREAM")


@pytest.mark.parametrize("workload", ["vr-gaming", "ar-call"])
@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_env_metrics_equal_the_direct_run(name, workload):
    episode, base = _through_env(name, workload, seed=11)
    direct = _direct(name, workload, base.sim_seed)
    metrics = episode.metrics
    assert metrics.pop("overflow_steps") == 0
    assert metrics == direct
    assert episode.total_return == pytest.approx(-direct["uxcost"], rel=1e-9)


@pytest.mark.parametrize("name", ["dream-full", "fcfs", "mapscore-fixed"])
def test_equal_with_frames_outside_the_slots(name):
    """With one slot most decisions name frames outside it: they travel with the action and still match."""
    episode, base = _through_env(name, "vr-gaming", seed=5, max_slots=1)
    direct = _direct(name, "vr-gaming", base.sim_seed)
    metrics = episode.metrics
    assert metrics.pop("overflow_steps") > 0
    assert metrics == direct


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
    env = gym.make("joulegym/DREAMParams-v0", workload="vr-gaming", horizon_s=0.5)
    episode = rollout(env, baselines.make("fixed-params", family="dream"), seed=2, record=True)
    base = env.unwrapped
    sim = DreamSim.from_catalog("vr-gaming", "4k-1ws2os", horizon_s=0.5)
    sim.reset(base.sim_seed)
    scheduler = make_scheduler("dream-full", tuning="fixed", alpha=1.0, beta=1.0)
    scheduler.reset(sim, base.sim_seed)
    uxs = []
    for w in range(2):
        run_window(sim, scheduler, (w + 1) * 0.25)
        uxs.append(sim.window_uxcost(w * 0.25, (w + 1) * 0.25))
    metrics = episode.metrics
    assert metrics.pop("windows") == 2
    assert metrics == sim.metrics()
    assert [-r for r in episode.rewards] == uxs


def test_adaptivity_and_grid_optimal_drive_the_params_kind():
    env = gym.make("joulegym/DREAMParams-v0", workload="ar-call", horizon_s=0.5, window_s=0.1)
    adaptive = rollout(env, baselines.make("adaptivity", family="dream"), seed=1, record=True)
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
    episode, base = _through_env(name, "ar-social", seed=4, supernet="agent")
    direct = _direct(name, "ar-social", base.sim_seed)
    metrics = episode.metrics
    metrics.pop("overflow_steps")
    assert metrics == direct


def test_dream_full_switch_point_choices_are_plain_actions_with_agent_supernet():
    env = gym.make("joulegym/DREAM-v0", workload="ar-social", horizon_s=HORIZON, supernet="agent")
    policy = baselines.make("dream-full", family="dream")
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
        for k, task in base._occupied:
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
