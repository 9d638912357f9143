"""The contract every family keeps, parametrised over every registered family and the toy family.

For each family (through its descriptor): Gymnasium's and SB3's env checkers on every kind, seeded replay
in a single env and in a vector env, both render modes, bad input raising ``ValueError`` that names the
field, reward parts that sum to the reward under the configured weights and lie inside ``reward_space``,
MO-Gymnasium's ``LinearReward`` on the vector reward, stepping after the end raising, and the family's
reference policy beating ``random`` on its own return.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import joulegym  # noqa: F401  (registers the ids)
from joulegym import baselines
from joulegym.core.family import families, register_family, unregister_family
from joulegym.core.policy import forget_family
from joulegym.core.rewards import weighted_sum
from joulegym.core.rollout import rollout
from tests.core import toy_family

STEPS = 25  # steps per short check (the checks are about structure, not episodes)


@pytest.fixture(scope="module", autouse=True)
def toy():
    register_family(toy_family.FAMILY)
    yield
    unregister_family("toy")
    forget_family("toy")


def _families() -> list[str]:
    return [f.name for f in families()] + ["toy"]


def _descriptor(name: str):
    if name == "toy":
        return toy_family.FAMILY
    return next(f for f in families() if f.name == name)


def _kind_ids(name: str) -> list[str]:
    return [f"joulegym/{kind.name}-v{kind.version}" for kind in _descriptor(name).kinds]


def _contract_id(name: str) -> str:
    descriptor = _descriptor(name)
    return descriptor.contract_id or _kind_ids(name)[0]



def _run(env: gym.Env, seed: int, steps: int = STEPS):
    """Obs, rewards and infos of ``steps`` masked-random steps from ``seed`` (the action stream is seeded)."""
    policy = baselines.make("random")
    obs, info = env.reset(seed=seed)
    policy.reset(env, seed=seed)
    trail = [(obs, 0.0, info)]
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(policy.act(obs, info))
        trail.append((obs, reward, info))
        if terminated or truncated:
            break
    return trail


@pytest.mark.parametrize("family", _families())
def test_checkers_on_every_kind(family):
    from gymnasium.utils.env_checker import check_env
    sb3_check_env = pytest.importorskip("stable_baselines3.common.env_checker").check_env  # the train extra

    for env_id in _kind_ids(family):
        env = gym.make(env_id)
        check_env(env.unwrapped, skip_render_check=True)
        sb3_check_env(env.unwrapped, warn=False)
        env.close()


@pytest.mark.parametrize("family", _families())
def test_seeded_replay_single_and_vector(family):
    env_id = _contract_id(family)
    first, second = (_run(gym.make(env_id), seed=3) for _ in range(2))
    assert len(first) == len(second)
    for (o1, r1, _), (o2, r2, _) in zip(first, second, strict=True):
        np.testing.assert_array_equal(o1, o2)
        assert np.array_equal(r1, r2)
    vec = gym.vector.SyncVectorEnv([lambda: gym.make(env_id)] * 2)
    single = gym.make(env_id)
    vec_obs, _ = vec.reset(seed=[5, 5])
    obs, info = single.reset(seed=5)
    np.testing.assert_array_equal(vec_obs[0], obs)
    np.testing.assert_array_equal(vec_obs[1], obs)
    policy = baselines.make("random")  # masked random actions from a seeded stream, fed to both
    policy.reset(single, seed=5)
    for _ in range(5):
        action = policy.act(obs, info)
        obs, reward, terminated, truncated, info = single.step(action)
        vec_obs, vec_reward, _, _, _ = vec.step(np.stack([action, action]))
        np.testing.assert_array_equal(vec_obs[0], obs)
        np.testing.assert_array_equal(vec_obs[1], obs)
        assert vec_reward[0] == vec_reward[1] == reward
        if terminated or truncated:
            break
    vec.close()


@pytest.mark.parametrize("family", _families())
def test_render_modes(family):
    env_id = _contract_id(family)
    for mode, check in (("ansi", lambda out: isinstance(out, str) and out),
                        ("rgb_array", lambda out: out.ndim == 3 and out.shape[2] == 3 and out.dtype == np.uint8)):
        env = gym.make(env_id, render_mode=mode)
        _run(env, seed=0, steps=3)
        assert check(env.render())
        env.close()


@pytest.mark.parametrize("family", _families())
def test_bad_input_names_the_field(family):
    env_id = _kind_ids(family)[0]
    with pytest.raises(ValueError, match="no_such_key"):
        gym.make(env_id, no_such_key=1)
    with pytest.raises(ValueError, match="no-such-scenario"):
        gym.make(env_id, scenario="no-such-scenario")
    with pytest.raises(ValueError, match="action_mode"):
        gym.make(env_id, action_mode="no-such-mode")
    with pytest.raises(ValueError, match="reward_weights"):
        gym.make(env_id, reward_weights={"no-such-part": 1.0})
    with pytest.raises(ValueError, match="reward_weights"):
        gym.make(env_id, reward_weights={_descriptor_part(env_id): -1.0})
    with pytest.raises(ValueError, match="info_level"):
        gym.make(env_id, info_level="verbose")
    env = gym.make(env_id)
    env.reset(seed=0)
    for junk in (None, "1", {"a": 1}, object(), np.array([np.nan])):
        with pytest.raises(ValueError, match="action"):
            env.unwrapped.step(junk)
    with pytest.raises(ValueError, match="reset options"):
        env.reset(seed=0, options={"no_such_option": 1})


def _descriptor_part(env_id: str) -> str:
    env = gym.make(env_id)
    return env.unwrapped.reward_spec.names[0]


@pytest.mark.parametrize("family", _families())
def test_reward_is_the_weighted_sum_of_the_parts(family):
    env_id = _contract_id(family)
    env = gym.make(env_id)
    base = env.unwrapped
    names = base.reward_spec.names
    space = base.reward_space
    ones = {name: 1.0 for name in names}
    summed = gym.make(env_id, reward_weights=ones)
    trail, trail_ones = _run(env, seed=1), _run(summed, seed=1)
    for (_, reward, info), (_, reward_ones, info_ones) in zip(trail[1:], trail_ones[1:], strict=True):
        parts = [info["reward_parts"][n] for n in names]
        assert list(info["reward_parts"]) == list(names)
        assert reward == weighted_sum(base.reward_weights, parts)
        assert reward_ones == pytest.approx(sum(info_ones["reward_parts"].values()), rel=1e-12, abs=1e-12)
        assert space.contains(np.array(parts, dtype=np.float32)), (parts, space)
        assert isinstance(info["repaired"], bool)


@pytest.mark.filterwarnings("ignore:.*reward returned by `step\\(\\)` must be a float")
@pytest.mark.parametrize("family", _families())
def test_vector_reward_works_with_mo_gymnasium(family):
    from mo_gymnasium.wrappers import LinearReward

    env_id = _contract_id(family)
    scalar = _run(gym.make(env_id), seed=2)
    vector_env = gym.make(env_id, vector_reward=True)
    weights = np.array(vector_env.unwrapped.reward_weights)
    wrapped = LinearReward(vector_env, weight=weights)
    vector = _run(wrapped, seed=2)
    for (_, reward, _), (_, mo_reward, info) in zip(scalar[1:], vector[1:], strict=True):
        assert mo_reward == pytest.approx(reward, rel=1e-9, abs=1e-12)
        assert vector_env.unwrapped.reward_space.shape == np.shape(info["vector_reward"])


@pytest.mark.parametrize("family", _families())
def test_episode_end_has_metrics_and_stepping_on_raises(family):
    env_id = _contract_id(family)
    env = gym.make(env_id)
    episode = rollout(env, baselines.make("random"), seed=0)
    assert episode.metrics, "the last info must carry the paper's metrics"
    keys = set(episode.final_info)
    assert {"reward_parts", "repaired"} <= keys
    with pytest.raises(gym.error.ResetNeeded):
        env.unwrapped.step(env.action_space.sample())


@pytest.mark.parametrize("family", _families())
def test_info_level_full_adds_diagnostics_only(family):
    """``info_level="full"`` adds the family's diagnostics to the lean keys and changes nothing else: same
    observations, rewards and metrics (a lean info by default, heavy diagnostics behind a flag)."""
    env_id = _contract_id(family)
    lean = rollout(gym.make(env_id), baselines.make("random"), seed=4, record=True)
    full = rollout(gym.make(env_id, info_level="full"), baselines.make("random"), seed=4, record=True)
    assert lean.length == full.length
    np.testing.assert_equal(lean.metrics, full.metrics)
    assert np.array_equal(np.asarray(lean.rewards), np.asarray(full.rewards))
    for lean_info, full_info in zip(lean.infos, full.infos, strict=True):
        assert set(lean_info) <= set(full_info)
        np.testing.assert_equal(lean_info["reward_parts"], full_info["reward_parts"])


@pytest.mark.parametrize("family", _families())
def test_reference_policy_beats_random(family):
    descriptor = _descriptor(family)
    env_id = _contract_id(family)
    seeds = (10, 11, 12)
    reference = baselines.make(descriptor.reference_policy, family=family)
    random_policy = baselines.make("random")
    ref = np.mean([rollout(gym.make(env_id, **baselines.env_config_for(reference)), reference, s).total_return
                   for s in seeds])
    rnd = np.mean([rollout(gym.make(env_id), random_policy, s).total_return for s in seeds])
    assert ref > rnd


@pytest.mark.parametrize("family", _families())
def test_copies_continue_like_the_original(family):
    """``copy.deepcopy`` and ``pickle`` of an env mid-episode (search-based planners, checkpoints): a copy stepped
    with the same actions gives the same observations and rewards as the original."""
    import copy
    import pickle

    env_id = _contract_id(family)
    env = gym.make(env_id).unwrapped
    policy = baselines.make("random")
    obs, info = env.reset(seed=4)
    policy.reset(env, seed=4)
    for _ in range(3):
        obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
        assert not (terminated or truncated)
    copies = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    actions = []
    for _ in range(10):
        actions.append(policy.act(obs, info))
        obs, reward, terminated, truncated, info = env.step(actions[-1])
        for other in copies:
            other_obs, other_reward, *_ = other.step(actions[-1])
            np.testing.assert_array_equal(other_obs, obs)
            assert other_reward == reward
        if terminated or truncated:
            break


# --- the simulator contract (joulegym.core.simulator) -------------------------------------------------------------
def _is_read_only(view) -> bool:
    """A view a policy cannot write through: an immutable mapping, a frozen dataclass, a tuple."""
    import dataclasses
    from collections.abc import Mapping, MutableMapping

    if isinstance(view, Mapping):
        return not isinstance(view, MutableMapping)
    if dataclasses.is_dataclass(view):
        return type(view).__dataclass_params__.frozen
    return isinstance(view, tuple)


@pytest.mark.parametrize("family", _families())
def test_simulator_contract(family):
    """``env.unwrapped.sim`` is a core :class:`~joulegym.core.simulator.Simulator`: ``reset(rng, instance)``, a
    read-only ``view()`` that is not the simulator, and observers told of every decision applied (and of none
    after they are removed)."""
    import inspect

    from joulegym.core.simulator import Simulator

    env = gym.make(_contract_id(family))
    env.reset(seed=0)
    sim = env.unwrapped.sim
    assert isinstance(sim, Simulator), f"{type(sim).__name__} does not subclass joulegym.core.simulator.Simulator"
    assert list(inspect.signature(sim.reset).parameters)[:2] == ["rng", "instance"]
    view = sim.view()
    assert view is not sim and _is_read_only(view), f"view() gave a writable {type(view).__name__}"
    seen: list = []

    def observer(observed, decision) -> None:
        seen.append(observed)

    sim.add_observer(observer)
    trail = _run(env, seed=0, steps=10)
    assert seen and all(s is sim for s in seen) and len(seen) <= len(trail) - 1
    sim.remove_observer(observer)
    count = len(seen)
    _run(env, seed=1, steps=3)
    assert len(seen) == count and env.unwrapped.sim is sim


# --- batched entry points: the same episodes as single envs ------------------------------------------------------
def _batched_kinds() -> list[str]:
    """The id of every kind with a batched entry point, on the family's contract scenario where it applies (short
    episodes, so auto-resets happen)."""
    from joulegym.core.family import env_id

    ids = []
    for name in _families():
        descriptor = _descriptor(name)
        batched = [kind for kind in descriptor.kinds if kind.vector_entry_point is not None]
        scenario = gym.spec(_contract_id(name)).kwargs.get("scenario") if batched else None
        for kind in batched:
            on = scenario if scenario and descriptor.scenarios[scenario].applies_to(kind.name) else None
            ids.append(env_id(kind.name, on, kind.version))
    return ids


@pytest.mark.parametrize("n", [3, 20])
@pytest.mark.parametrize("env_id", _batched_kinds())
def test_batched_entry_point_matches_single_envs(env_id, n):
    """A kind's batched ``vector_entry_point`` gives, instance by instance, the observations, rewards, terminations,
    truncations and end-of-episode metrics of single envs in a ``SyncVectorEnv`` under the same seeds and actions
    (episodes ending and auto-resetting on the next step included), for a small and a larger batch (a batched env
    may step a few instances one by one and many as arrays)."""
    steps = 70
    batched = gym.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point")
    sync = gym.vector.SyncVectorEnv([lambda: gym.make(env_id) for _ in range(n)])
    obs_b, _ = batched.reset(seed=7)
    obs_s, _ = sync.reset(seed=7)
    np.testing.assert_array_equal(obs_b, obs_s)
    space = batched.action_space
    space.seed(7)
    ends = 0
    for _ in range(steps):
        actions = space.sample()
        obs_b, rew_b, term_b, trunc_b, info_b = batched.step(actions)
        obs_s, rew_s, term_s, trunc_s, info_s = sync.step(actions)
        np.testing.assert_array_equal(obs_b, obs_s)
        np.testing.assert_array_equal(rew_b, rew_s)
        np.testing.assert_array_equal(term_b, term_s)
        np.testing.assert_array_equal(trunc_b, trunc_s)
        for k in np.flatnonzero(term_s | trunc_s):
            ends += 1
            metrics_b, metrics_s = info_b["metrics"], info_s["metrics"]
            assert set(metrics_b) == set(metrics_s)
            for key in metrics_s:
                np.testing.assert_equal(metrics_b[key][k], metrics_s[key][k], err_msg=key)
    assert ends, f"{env_id}: no episode ended within {steps} steps (the check needs an autoreset)"
    batched.close()
    sync.close()


def test_observe_sees_every_decision_of_an_episode():
    """tests/probe.py's ``Observe`` (the observer hook, no patched ``apply``): on the toy family every step applies
    one decision, seen after it is applied and, before it, at the decision point."""
    from tests.probe import Observe

    before, after = [], []
    watched = Observe(baselines.make("random"), after=lambda sim, level: after.append((sim.level, level)),
                      before=lambda sim: before.append(sim.steps))
    episode = rollout(gym.make("joulegym/ToyDVFS-v0"), watched, seed=0)
    assert watched.applied == episode.length == len(after) == len(before)
    assert all(level == applied for level, applied in after)
    assert before == list(range(episode.length))


def test_toy_simulator_path_gives_the_env_path_metrics():
    """The toy's inner reference policy run on the simulator alone (:func:`joulegym.core.inner.run_inner`, the
    instance drawn as the env draws it) gives the metrics of its env episode (the adapter's ``rollout``)."""
    from joulegym.core.inner import run_inner
    from joulegym.core.policy import make_inner

    for seed in (0, 5):
        env = gym.make("joulegym/ToyDVFS-v0")
        episode = rollout(env, baselines.make("best-level", family="toy"), seed=seed)
        config = env.unwrapped.config
        rng = np.random.default_rng(seed)
        work = config["work"] + config["work_jitter"] * float(rng.random())
        sim = toy_family.ToySimulator(config["p_static"], config["p_dyn"], config["horizon"])
        metrics = run_inner(sim, make_inner("best-level", family="toy"), seed, work, rng=rng)
        assert metrics == episode.metrics and metrics["steps"] == episode.length


def test_simulator_path_equals_the_env_path_where_a_family_declares_it():
    """``rollout_inner`` (the simulator path an inner policy takes in evaluation and the suite) gives
    ``rollout``'s return, length, metrics and recorded rewards and infos (without the action mask) on the toy
    family; each family that declares ``inner_fast_path`` proves the same for its policies
    (tests/dream/test_fast_path.py, tests/qin/test_fast_path.py)."""
    from joulegym.core.rollout import rollout_inner, simulator_path

    env = gym.make("joulegym/ToyDVFS-v0", info_level="full")
    policy = baselines.make("best-level", family="toy")
    assert simulator_path(env, policy) and not simulator_path(env, baselines.make("random"))
    for seed in (0, 5):
        slow, fast = rollout(env, policy, seed, record=True), rollout_inner(env, policy, seed, record=True)
        assert (fast.total_return, fast.length, fast.metrics) == (slow.total_return, slow.length, slow.metrics)
        assert fast.rewards == slow.rewards
        assert fast.infos == [{k: v for k, v in info.items() if k != "action_mask"} for info in slow.infos]
    with pytest.raises(gym.error.ResetNeeded):
        env.step(0)


def test_toy_family_uses_every_hook():
    """The toy family (tests/core/toy_family.py) exercises what a new family can plug in: its device preset is
    registered and read, its benchmark registers and names its scenarios, and its benchmark script gives the
    harness a growth curve."""
    from joulegym.core.family import get_family
    from joulegym.devices import get_device
    from tests import scripts

    assert get_device("toy-dvfs").frequencies.levels_mhz[-1] == 1000.0 and toy_family.LEVELS[0] == 0.25
    descriptor = get_family("toy")
    assert descriptor.benchmark.kind == "ToyDVFS" and "joulegym/ToyDVFS-steady-v0" in gym.registry
    harness = scripts.load("harness")
    notes: list[str] = []
    saved = dict(harness.GROWTH)
    try:
        assert harness.load_growth_modules(notes, harness.benchmark_scripts("toy")) == ["toy-work"], notes
        rows = harness.growth_rows(["toy-work"], harness.Settings(quick=True))
    finally:
        harness.GROWTH.clear()
        harness.GROWTH.update(saved)
    assert [r["x"] for r in rows] == [4.0, 16.0] and all(r["cost"] >= 0 for r in rows)
