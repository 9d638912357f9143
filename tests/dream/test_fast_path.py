"""The simulator path (:func:`joulegym.core.rollout.rollout_inner`) of every DREAM inner policy gives the env
path's episode (:func:`joulegym.core.rollout.rollout`): return, length, metrics and, recorded, every reward and
info (the action mask aside) equal bit for bit (docs/families/dream.md §6; the suite's rows come from either).
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import joulegym  # noqa: F401  (registers the ids)
from joulegym import baselines
from joulegym.baselines.dream import INNER
from joulegym.core.policy import env_config_for
from joulegym.core.rollout import forget_episodes, observation_free, rollout, rollout_inner, simulator_path
from joulegym.evaluation.runner import run_episode

HORIZON = 0.15


def _env(policy, scenario: str, **kwargs) -> gym.Env:
    return gym.make(f"joulegym/DREAM-{scenario}-v0", horizon_s=HORIZON, **env_config_for(policy, kwargs))


def _same(env_path, fast) -> None:
    assert fast.length == env_path.length
    assert fast.total_return == env_path.total_return
    assert (fast.terminated, fast.truncated) == (env_path.terminated, env_path.truncated)
    assert fast.metrics == env_path.metrics


@pytest.mark.parametrize("scenario", ["vr-gaming", "random-mix"])
@pytest.mark.parametrize("name", sorted(INNER))
def test_simulator_path_equals_the_env_path(name, scenario):
    policy = baselines.make(name, family="dream")
    env = _env(policy, scenario)
    assert simulator_path(env, policy)
    for seed in (10000, 10003):
        _same(rollout(env, policy, seed), rollout_inner(env, policy, seed))


@pytest.mark.parametrize("name", ["dream-full", "planaria", "fcfs-static"])
def test_a_recorded_episode_is_the_same_on_both_paths(name):
    """With the full info (the suite's episode plot): each step's reward and info, the mask left out."""
    policy = baselines.make(name, family="dream")
    env = _env(policy, "ar-call", info_level="full")
    env_path, fast = rollout(env, policy, 10001, record=True), rollout_inner(env, policy, 10001, record=True)
    _same(env_path, fast)
    assert fast.rewards == env_path.rewards
    assert [{k: v for k, v in i.items() if k != "action_mask"} for i in env_path.infos] == fast.infos
    assert "action_mask" not in fast.infos[0] and "uxcost_so_far" in fast.infos[0]


def test_the_full_info_agrees_with_the_metrics():
    """``uxcost_so_far`` / ``dlv_rate_so_far`` / ``drops`` of the last step are the episode's metrics."""
    policy = baselines.make("edf", family="dream")
    episode = rollout(_env(policy, "vr-gaming", info_level="full"), policy, 3)
    last, metrics = episode.final_info, episode.metrics
    assert last["uxcost_so_far"] == metrics["uxcost"] and last["dlv_rate_so_far"] == metrics["dlv_rate"]
    assert last["drops"] == int(metrics["drops"])


def test_the_runner_takes_the_simulator_path_for_inner_policies_only():
    """``run_episode`` rows equal the env path's; ``random`` (it samples the agent's masked actions) and the
    ``DREAMParams-v0`` policies stay on the env path, and the env is reset before its next step."""
    inner = baselines.make("dream-smartdrop", family="dream")
    env = _env(inner, "vr-gaming")
    row, _ = run_episode(env, inner, 10002)
    episode = rollout(env, inner, 10002)
    assert row["return"] == float(episode.total_return) and row["length"] == episode.length
    assert row["uxcost"] == episode.metrics["uxcost"]
    rollout_inner(env, inner, 10002)
    with pytest.raises(gym.error.ResetNeeded):
        env.step(0)
    random = baselines.make("random")
    assert not simulator_path(env, random)
    with pytest.raises(ValueError, match="simulator path"):
        rollout_inner(env, random, 0)
    params = gym.make("joulegym/DREAMParams-v0", horizon_s=HORIZON)
    assert not simulator_path(params, baselines.make("fixed-params", family="dream"))
    after = rollout(env, random, 5)  # the observation is rebuilt at reset: the env path runs on
    assert after.length > 0


@pytest.mark.parametrize("scenario", ["vr-gaming", "random-mix"])
def test_random_steps_without_observations_and_plays_the_observed_episode(scenario, monkeypatch):
    """``random`` reads only the mask: :func:`rollout` steps it without ``_observe`` (after the reset's) and plays
    the episode of the observed loop (``on_step`` given: ``env.step``), every reward and info, masks included."""
    policy = baselines.make("random")
    env = gym.make(f"joulegym/DREAM-{scenario}-v0", horizon_s=HORIZON, info_level="full")
    base = env.unwrapped
    assert observation_free(env, policy) and not observation_free(env, baselines.make("edf", family="dream"))
    for seed in (10000, 10003):
        observed = rollout(env, policy, seed, record=True, on_step=lambda *step: None)
        calls: list[int] = []
        monkeypatch.setattr(base, "_observe", lambda calls=calls, observe=base._observe: calls.append(1) or observe())
        lean = rollout(env, policy, seed, record=True)
        monkeypatch.undo()
        assert calls == [1] and lean.length > 10  # the reset's observation only
        _same(observed, lean)
        assert lean.rewards == observed.rewards and len(lean.infos) == len(observed.infos)
        for a, b in zip(observed.infos, lean.infos, strict=True):
            assert np.array_equal(a.pop("action_mask"), b.pop("action_mask")) and a == b


def _without_masks(infos: list[dict]) -> list[dict]:
    return [{k: v for k, v in i.items() if k != "action_mask"} for i in infos]


def test_a_time_limit_ends_the_lean_loops_where_it_ends_the_env_path():
    """A ``TimeLimit`` wrapper (``gym.make(..., max_episode_steps=)``) truncates the episode at its step on every
    loop: the observation-free loop of ``random`` and the simulator path of an inner policy (recorded or not) play
    the env path's truncated episode, final info included, and leave the wrapper's step count as it would."""
    steps = 7
    random, inner = baselines.make("random"), baselines.make("mapscore-fixed", family="dream")
    env = gym.make("joulegym/DREAM-vr-gaming-v0", horizon_s=HORIZON, info_level="full", max_episode_steps=steps)
    assert observation_free(env, random) and simulator_path(env, inner)
    observed = rollout(env, random, 10000, record=True, on_step=lambda *step: None)
    lean = rollout(env, random, 10000, record=True)
    assert lean.length == observed.length == steps and lean.truncated and observed.truncated
    _same(observed, lean)
    assert lean.rewards == observed.rewards
    assert _without_masks(lean.infos) == _without_masks(observed.infos)
    assert "metrics" not in lean.final_info  # the env itself had not ended: no final metrics on either loop
    assert env.get_wrapper_attr("_elapsed_steps") == steps
    forget_episodes()
    env_path = rollout(env, inner, 10000, record=True)
    assert env_path.length == steps and env_path.truncated
    for record in (True, False, False):  # the second unrecorded episode comes from the memo
        fast = rollout_inner(env, inner, 10000, record=record)
        _same(env_path, fast)
        assert fast.final_info == _without_masks([env_path.final_info])[0]
        assert env.get_wrapper_attr("_elapsed_steps") == steps
    assert fast.rewards == [] and rollout_inner(env, inner, 10000, record=True).rewards == env_path.rewards
    unlimited = gym.make("joulegym/DREAM-vr-gaming-v0", horizon_s=HORIZON, info_level="full")
    assert rollout_inner(unlimited, inner, 10000).length > steps  # another step limit, another memo key
    forget_episodes()


def test_a_wrapper_the_lean_loops_cannot_honour_keeps_the_episode_on_env_step():
    """A reward wrapper changes what ``env.step()`` gives: ``random`` then steps through it (the doubled return),
    and the simulator path refuses it."""
    random, inner = baselines.make("random"), baselines.make("mapscore-fixed", family="dream")
    plain = gym.make("joulegym/DREAM-vr-gaming-v0", horizon_s=HORIZON)
    doubled = gym.wrappers.TransformReward(gym.make("joulegym/DREAM-vr-gaming-v0", horizon_s=HORIZON),
                                           lambda reward: 2.0 * reward)
    assert not observation_free(doubled, random) and not simulator_path(doubled, inner)
    once, twice = rollout(plain, random, 10002), rollout(doubled, random, 10002)
    assert twice.length == once.length and twice.total_return == 2.0 * once.total_return != 0.0
    with pytest.raises(ValueError, match="TimeLimit"):
        rollout_inner(doubled, inner, 10002)
    row, _ = run_episode(doubled, inner, 10002)
    assert row["return"] == 2.0 * rollout_inner(plain, inner, 10002).total_return


def test_policies_that_decide_alike_play_one_episode(monkeypatch):
    """DREAM-Full on a workload without a Supernet is DREAM-SmartDrop (Table 4): the simulator path plays the episode
    once for both names (equal ``decisions_key``), and a fresh run gives the same episode; with a Supernet, or
    another seed, nothing is shared."""
    forget_episodes()
    full, smart = (baselines.make(n, family="dream") for n in ("dream-full", "dream-smartdrop"))
    env = _env(full, "ar-call")
    base = env.unwrapped
    first = rollout_inner(env, full, 10001)
    steps: list[int] = []
    advance = base._advance_decision
    monkeypatch.setattr(base, "_advance_decision", lambda decision: steps.append(1) or advance(decision))
    shared = rollout_inner(env, smart, 10001)
    assert not steps and shared.policy == "dream-smartdrop" and first.policy == "dream-full"
    _same(first, shared)
    assert shared.final_info == first.final_info
    with pytest.raises(gym.error.ResetNeeded):
        env.step(0)
    other_seed = rollout_inner(env, smart, 10002)
    assert len(steps) == other_seed.length
    forget_episodes()
    fresh = rollout_inner(env, smart, 10001)
    assert len(steps) == other_seed.length + fresh.length
    _same(fresh, shared)
    assert fresh.final_info == shared.final_info
    vr = _env(full, "vr-gaming").unwrapped
    vr.reset(seed=0)
    assert full.inner.decisions_key(vr.sim) != smart.inner.decisions_key(vr.sim)
    assert full.inner.decisions_key(base.sim) == smart.inner.decisions_key(base.sim)
    forget_episodes()


@pytest.mark.parametrize(("kappa", "seed", "dropped"), [(None, 10001, False), (4.0, 1, True)])
def test_a_smartdrop_episode_without_drops_is_played_once_for_mapscore(monkeypatch, kappa, seed, dropped):
    """Smart drop only adds drops to MapScore (§4.2.1): DREAM-SmartDrop's episode that dropped nothing is kept for
    MapScore at the same pair too (``alike_keys``), which then is not played, and is the episode MapScore plays
    afresh; one with drops is not (an overloaded SoC, where the two episodes differ)."""
    forget_episodes()
    smart = baselines.make("dream-smartdrop", family="dream", tuning="fixed")
    plain = baselines.make("mapscore-fixed", family="dream")
    env = gym.make("joulegym/DREAM-v0", workload="ar-social", horizon_s=0.3, **({"kappa": kappa} if kappa else {}))
    base = env.unwrapped
    first = rollout_inner(env, smart, seed)
    assert (first.metrics["drops"] > 0) == dropped
    steps: list[int] = []
    advance = base._advance_decision
    monkeypatch.setattr(base, "_advance_decision", lambda decision: steps.append(1) or advance(decision))
    kept = rollout_inner(env, plain, seed)
    assert bool(steps) == dropped and kept.policy == "mapscore-fixed"
    monkeypatch.undo()
    forget_episodes()
    alone = rollout_inner(env, plain, seed)
    _same(alone, kept)
    assert alone.final_info == kept.final_info
    assert (alone.total_return != first.total_return) == dropped
    forget_episodes()


def test_episodes_with_reset_options_are_never_shared():
    """Reset options may hold large tables whose repr elides values: such episodes are not memoised."""
    from joulegym.core.rollout import _memo_key

    full = baselines.make("dream-full", family="dream")
    base = _env(full, "ar-call").unwrapped
    base.reset(seed=10001)
    assert _memo_key(base, full.inner, 10001, None) is not None
    assert _memo_key(base, full.inner, 10001, {"table": np.arange(5000)}) is None


@pytest.mark.parametrize("name", ["dream-full", "random-dispatch"])
def test_a_task_level_change_is_the_same_on_both_paths(name):
    """A workload switch mid-episode (§4.4): the slot table follows the new workload on both paths (the recorded
    ``overflow`` and ``overflow_steps`` agree)."""
    policy = baselines.make(name, family="dream")
    env = gym.make("joulegym/DREAM-v0", workload="vr-gaming", switch_to="ar-call", switch_at_s=0.07, horizon_s=HORIZON,
                   max_slots=1, info_level="full", **env_config_for(policy))
    env_path, fast = rollout(env, policy, 10004, record=True), rollout_inner(env, policy, 10004, record=True)
    _same(env_path, fast)
    assert [{k: v for k, v in i.items() if k != "action_mask"} for i in env_path.infos] == fast.infos
    assert any(i["overflow"] for i in fast.infos)


@pytest.mark.reproduce
@pytest.mark.parametrize("scenario", ["vr-gaming", "ar-call", "drone-outdoor", "drone-indoor", "ar-social",
                                      "random-mix"])
def test_simulator_path_equals_the_env_path_on_the_benchmark(scenario):
    """Every benchmark scenario at its full horizon, every inner policy, two held-out seeds (long)."""
    for name in sorted(INNER):
        policy = baselines.make(name, family="dream")
        env = gym.make(f"joulegym/DREAM-{scenario}-v0", **env_config_for(policy))
        for seed in (10000, 10009):
            _same(rollout(env, policy, seed), rollout_inner(env, policy, seed))


def test_a_smaller_soc_after_a_larger_one_masks_the_missing_accelerator():
    """``DREAM-random-mix`` draws the SoC per episode: after a 3-accelerator episode, a 2-accelerator one offers
    no dispatch to accelerator 2 (a stale idle flag offered it, and the dispatch raised)."""
    env = gym.make("joulegym/DREAM-v0", workload="ar-call", hw=["8k-1ws2os", "8k-2ws"], horizon_s=0.05)
    base, policy, seen = env.unwrapped, baselines.make("random"), set()
    for seed in range(8):
        rollout(env, policy, seed)
        seen.add(base.n_acc)
        if base.n_acc == 2:
            env.reset(seed=seed)
            assert not base.action_masks()[: base.K * base.A].reshape(base.K, base.A)[:, 2].any()
    assert seen == {2, 3}
