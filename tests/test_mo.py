"""Every kind of every family through MO-Gymnasium (joulegym.mo, docs/tradeoffs.md): ``mo_gymnasium.make`` of its
``joulegym-mo/`` twin returns the vector reward inside ``reward_space``, and MO-Gymnasium's own wrappers
(``MORecordEpisodeStatistics``, ``LinearReward``, ``MONormalizeReward``, ``MOClipReward``) and vector env
(``MOSyncVectorEnv``) run on it."""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import joulegym
from joulegym import baselines, mo
from joulegym.core.family import env_id, families

pytestmark = pytest.mark.filterwarnings("ignore:.*reward returned by `step\\(\\)` must be a float")
STEPS = 12
KINDS = [(d.name, env_id(k.name, version=k.version)) for d in families() for k in d.kinds]
# Parts whose per-step bound the family does not state yet (an infinite side of ``reward_space``). The set is exact:
# bounding a part fails this test until the part leaves the list (docs/tradeoffs.md, "Reward spaces").
UNBOUNDED_PARTS = {
    ("PowerFlow", "power_violation"), ("PowerFlow", "energy"),
    ("QinCluster", "makespan"), ("QinCluster", "flowtime"), ("QinCluster", "energy"), ("QinCluster", "edp"),
    ("Qin", "makespan"), ("Qin", "flowtime"), ("Qin", "energy"), ("Qin", "edp"),
    ("QinNode", "energy"), ("QinNode", "perf"), ("QinNode", "edp"),
}


def _steps(env: gym.Env, seed: int, steps: int = STEPS) -> list[np.ndarray]:
    policy = baselines.make("random")
    obs, info = env.reset(seed=seed)
    policy.reset(env, seed=seed)
    rewards = []
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(policy.act(obs, info))
        rewards.append(reward)
        if terminated or truncated:
            break
    return rewards


def test_every_id_has_its_twin_from_the_descriptors():
    scalar = [i for i in gym.registry if i.startswith("joulegym/")]
    assert scalar and all(mo.mo_id(i) in gym.registry for i in scalar)
    assert set(mo.register()) == {mo.mo_id(i) for i in scalar}
    assert gym.spec("joulegym-mo/ETF-tx2-fig5-v0").kwargs["vector_reward"] is True
    assert mo.mo_id("joulegym-mo/ETF-v0") == "joulegym-mo/ETF-v0"
    with pytest.raises(ValueError, match="not a joulegym id"):
        mo.mo_id("CartPole-v1")
    with pytest.raises(ValueError, match="vector_reward"):
        mo.make("joulegym/ETF-v0", vector_reward=False)
    with pytest.raises(ValueError, match="unknown"):
        mo.make("joulegym/NoSuchKind-v0")
    assert joulegym.__version__


@pytest.mark.parametrize(("family", "scalar_id"), KINDS, ids=[i for _, i in KINDS])
def test_mo_gymnasium_make_gives_the_vector_reward(family, scalar_id):
    import mo_gymnasium

    env = mo_gymnasium.make(mo.mo_id(scalar_id))
    base = env.unwrapped
    space, parts = base.reward_space, base.reward_spec.parts
    assert isinstance(space, gym.spaces.Box) and space.shape == (len(parts),)
    assert all(p.description.strip() for p in parts), "every part is documented"
    rewards = _steps(env, seed=3)
    assert rewards
    for reward in rewards:
        assert isinstance(reward, np.ndarray) and reward.shape == space.shape
        assert space.contains(reward.astype(np.float32)), (reward, space)
    scalar = _steps(gym.make(scalar_id, reward_weights={p.name: 1.0 for p in parts}), seed=3)
    assert [float(r) for r in scalar] == pytest.approx([float(np.sum(r)) for r in rewards], rel=1e-9, abs=1e-12)
    kind = scalar_id.split("/")[1].rsplit("-v", 1)[0]
    unbounded = {(kind, p.name) for p in parts if not (math.isfinite(p.low) and math.isfinite(p.high))}
    assert unbounded == {(k, n) for k, n in UNBOUNDED_PARTS if k == kind}


@pytest.mark.parametrize("family", sorted({f for f, _ in KINDS}))
def test_mo_gymnasium_wrappers_and_vector_env(family):
    from mo_gymnasium.wrappers import LinearReward, MOClipReward, MONormalizeReward, MORecordEpisodeStatistics
    from mo_gymnasium.wrappers.vector import MOSyncVectorEnv

    scalar_id = next(i for f, i in KINDS if f == family)
    env = mo.make(scalar_id)
    dim = env.unwrapped.reward_space.shape[0]
    env = MORecordEpisodeStatistics(MOClipReward(MONormalizeReward(env, idx=0), idx=dim - 1, min_r=-1.0, max_r=1.0))
    weight = np.full(dim, 1.0 / dim)
    scalarised = LinearReward(env, weight=weight)
    for reward in _steps(scalarised, seed=4):
        assert np.isscalar(reward) or np.ndim(reward) == 0
    vec = MOSyncVectorEnv([lambda: mo.make(scalar_id) for _ in range(2)])
    vec.reset(seed=5)
    actions = np.stack([vec.single_action_space.sample() for _ in range(2)])
    _, rewards, _, _, _ = vec.step(actions)
    assert rewards.shape == (2, dim) and np.all(np.isfinite(rewards))
    vec.close()


ROLLOUT_STEPS = 100
SCENARIO_IDS = [env_id(k.name, s, k.version) for d in families() for k in d.kinds
                for s in (None, *(s.name for s in d.scenarios.values() if s.applies_to(k.name)))]


@pytest.mark.parametrize("scenario_id", SCENARIO_IDS)
def test_random_rollouts_keep_every_part_inside_reward_space(scenario_id):
    """Every part of every step of a random rollout of every kind and scenario lies inside the declared
    ``reward_space``, whose finite bounds are derived from the config (docs/tradeoffs.md, "Reward spaces")."""
    try:
        env = gym.make(scenario_id, vector_reward=True)
    except ValueError as err:
        if "trace_path" not in str(err):
            raise
        pytest.skip(f"{scenario_id} replays a real trace file that the tests do not ship")
    space = env.unwrapped.reward_space
    rewards = _steps(env, seed=1, steps=ROLLOUT_STEPS)
    env.close()
    outside = [r for r in rewards if not space.contains(np.asarray(r, dtype=np.float32))]
    assert rewards and not outside, (outside[:3], space)


HORIZONS = {"vr-gaming-to-ar-social": {"horizon_s": 0.5, "switch_at_s": 0.25}}  # short episodes, the switch kept


@pytest.mark.parametrize("scenario", ["tiny", "ar-call", "vr-gaming-to-ar-social", "random-mix"])
def test_dream_uxcost_factors_stay_within_the_model_count(scenario):
    """The premises of DREAM's bounds (``DreamEnvBase.ux_bound``, ``proxy_bound``): per model the violated frames
    never exceed the counted ones and the energy never exceeds the counted frames' worst case, so X and Y each lie in
    [0, b], and a whole episode's ``violations`` and ``energy_proxy`` lose no more than one step's bound; every step's
    parts (the terminal UXCost included) stay inside ``reward_space``."""
    env = gym.make(f"joulegym/DREAM-{scenario}-v0", vector_reward=True, **HORIZONS.get(scenario, {"horizon_s": 0.5}))
    base = env.unwrapped
    space, bound, names = base.reward_space, base.ux_bound(), base.reward_spec.names
    assert space.low[names.index("uxcost_terminal")] == pytest.approx(-bound * bound)
    assert space.low[names.index("violations")] == pytest.approx(-base.proxy_bound(), rel=1e-6)
    proxies = [names.index("violations"), names.index("energy_proxy")]
    policy = baselines.make("random")
    obs, info = env.reset(seed=2)
    policy.reset(env, seed=2)
    done, steps, totals = False, 0, np.zeros(2)
    while not done:
        obs, reward, terminated, truncated, info = env.step(policy.act(obs, info))
        done, steps = terminated or truncated, steps + 1
        totals += reward[proxies]
        assert space.contains(reward.astype(np.float32)), reward
        sim = base.sim
        assert all(v <= f for v, f in zip(sim.acc_violated, sim.acc_frames))
        assert all(e <= w * (1 + 1e-9) for e, w in zip(sim.acc_energy, sim.acc_worst))
    assert steps > 10 and reward[names.index("uxcost_terminal")] < 0
    assert np.all(totals >= -base.proxy_bound())  # a whole episode loses no more than the bound of one step
    assert totals[0] < 0 and totals[1] < 0
