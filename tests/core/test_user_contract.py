"""What a user meets first, on every kind of every family (and the toy family of the core template): masks in the
forms Gymnasium and sb3-contrib take."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import joulegym  # noqa: F401  (registers the ids)
from joulegym.core.family import families, register_family, unregister_family
from joulegym.core.policy import forget_family
from tests.core import toy_family

# every action mode of every kind: PowerFlow's other modes are the action_mode= kwarg of its one kind
EXTRA_MODES = {"joulegym/PowerFlow-v0": ("request", "micro", "priority"),
               "joulegym/QinCluster-v0": ("server_vf",)}


@pytest.fixture(scope="module", autouse=True)
def toy():
    register_family(toy_family.FAMILY)
    yield
    unregister_family("toy")
    forget_family("toy")


def _kinds() -> list[tuple[str, dict]]:
    out = []
    for descriptor in [*families(), toy_family.FAMILY]:
        for kind in descriptor.kinds:
            id_ = f"joulegym/{kind.name}-v{kind.version}"
            out.append((id_, {}))
            out += [(id_, {"action_mode": mode}) for mode in EXTRA_MODES.get(id_, ())]
    return out


KINDS = _kinds()
IDS = [f"{i.split('/')[1]}{'-' + k['action_mode'] if k else ''}" for i, k in KINDS]


def _masked(env: gym.Env) -> bool:
    return isinstance(env.action_space, gym.spaces.Discrete | gym.spaces.MultiDiscrete)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(("env_id", "kwargs"), KINDS, ids=IDS)
def test_masks_are_what_gymnasium_sample_and_maskable_ppo_take(env_id, kwargs):
    """``info["action_mask"]`` goes into ``action_space.sample(mask=)`` as it is (int8; a tuple per sub-space for
    MultiDiscrete), the sampled action is allowed (a Discrete one is not repaired; a MultiDiscrete mask is per
    sub-space, so a joint limit such as PowerFlow's cluster size may still repair it), and ``action_masks()`` is
    the flat int8 0/1 array sb3-contrib's MaskablePPO takes, the same mask."""
    env = gym.make(env_id, **kwargs)
    if not _masked(env):
        pytest.skip(f"{env_id} {kwargs}: {type(env.action_space).__name__} actions have no mask")
    space = env.action_space
    _, info = env.reset(seed=0)
    space.seed(0)
    for _ in range(10):
        flat = env.unwrapped.action_masks()
        size = int(space.n) if isinstance(space, gym.spaces.Discrete) else int(np.sum(space.nvec))
        assert flat.dtype == np.int8 and flat.shape == (size,) and set(np.unique(flat)) <= {0, 1}
        if "action_mask" not in info:  # a kind whose every action is always valid keeps it out of the info
            assert flat.all()
            action = space.sample()
        else:
            mask = info["action_mask"]
            if isinstance(space, gym.spaces.MultiDiscrete):
                assert isinstance(mask, tuple) and len(mask) == len(space.nvec)
                assert all(m.dtype == np.int8 and m.shape == (n,) for m, n in zip(mask, space.nvec))
                np.testing.assert_array_equal(np.concatenate(mask), flat)
            else:
                assert mask.dtype == np.int8 and mask.shape == (space.n,)
                np.testing.assert_array_equal(mask, flat)
            action = space.sample(mask=mask)
            if isinstance(space, gym.spaces.MultiDiscrete):
                assert all(m[a] == 1 for m, a in zip(mask, action)), "a sub-action outside its mask"
        discrete = isinstance(space, gym.spaces.Discrete)
        _, _, terminated, truncated, info = env.step(action)
        assert not (discrete and info["repaired"]), f"{env_id}: a sample under the mask was repaired"
        if terminated or truncated:
            break


def _info_keys(env_id: str, kwargs: dict, level: str) -> set[str]:
    env = gym.make(env_id, **kwargs, info_level=level)
    _, info = env.reset(seed=0)
    env.action_space.seed(0)
    keys = set(info)
    for _ in range(5):
        mask = info.get("action_mask")
        _, _, terminated, truncated, info = env.step(env.action_space.sample(mask=mask))
        keys |= set(info)
        if terminated or truncated:
            break
    return keys


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(("env_id", "kwargs"), KINDS, ids=IDS)
def test_info_level_lean_holds_only_the_documented_keys_and_full_adds_the_diagnostics(env_id, kwargs):
    from joulegym.core.env import CORE_INFO_KEYS

    cls = type(gym.make(env_id, **kwargs).unwrapped)
    lean_doc, full_doc = set(cls.lean_info_keys), set(cls.full_info_keys)
    assert not (lean_doc | full_doc) & set(CORE_INFO_KEYS) and not lean_doc & full_doc
    lean, full = _info_keys(env_id, kwargs, "lean"), _info_keys(env_id, kwargs, "full")
    assert lean <= set(CORE_INFO_KEYS) | lean_doc, f"lean keys not in {cls.__name__}.lean_info_keys"
    assert full <= set(CORE_INFO_KEYS) | lean_doc | full_doc, f"full keys not in {cls.__name__}.full_info_keys"
    assert lean <= full
    if full_doc:  # a family with diagnostics gives them only with info_level="full"
        assert full - lean and full - lean <= full_doc


# The value a named global observation feature has at reset, per kind (checks that the names line up with the
# values, not only that there are as many).
KNOWN_VALUES = {
    "joulegym/ETF-v0": ("phi", lambda base: base.phi),
    "joulegym/ETFPhi-v0": ("phi", lambda base: base.phi),
    "joulegym/ETFDVFS-v0": ("tenant_level", lambda base: base.level / (len(base.levels_mhz) - 1)),
    "joulegym/EMRF-v0": ("eta_target", lambda base: base.eta_target),
    "joulegym/EMRFResidual-v0": ("eta_target", lambda base: base.eta_target),
    "joulegym/EMRFKnob-v0": ("eta_target", lambda base: base.eta_target),
    "joulegym/EMRFKnobDiscrete-v0": ("eta_target", lambda base: base.eta_target),
    "joulegym/PowerFlow-v0": ("eta", lambda base: base.config["eta"]),
    "joulegym/DREAM-v0": ("accelerators", lambda base: base.n_acc / 3.0),
    "joulegym/DREAMParams-v0": ("alpha", lambda base: base.params[0] / 2.0),
    "joulegym/QinCluster-v0": ("objective_makespan", lambda base: float(base.objective == "makespan")),
    "joulegym/Qin-v0": ("objective_makespan", lambda base: float(base.objective == "makespan")),
    "joulegym/QinNode-v0": ("pl_bound", lambda base: base.pl_threshold),
    "joulegym/ToyDVFS-v0": ("time", lambda base: 0.0),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(("env_id", "kwargs"), KINDS, ids=IDS)
def test_observation_names_name_every_value_once(env_id, kwargs):
    """``env.unwrapped.observation_names``: one unique name per value of the flat observation, lined up with it."""
    env = gym.make(env_id, **kwargs)
    obs, _ = env.reset(seed=0)
    names = env.unwrapped.observation_names
    assert isinstance(names, list) and all(isinstance(n, str) and n for n in names)
    assert len(names) == int(np.prod(env.observation_space.shape)) == np.asarray(obs).size
    assert len(set(names)) == len(names), "observation names repeat"
    name, value = KNOWN_VALUES[env_id]
    assert float(np.asarray(obs).ravel()[names.index(name)]) == pytest.approx(value(env.unwrapped), rel=1e-6)


@pytest.mark.parametrize(("env_id", "kwargs"), KINDS, ids=IDS)
def test_observation_spaces_are_bounded(env_id, kwargs):
    """Finite bounds everywhere (Gymnasium's checker warns on an infinite Box)."""
    space = gym.make(env_id, **kwargs).observation_space
    assert np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))


# kinds whose own truncation fixes the episode's step bound from the config, and a kwarg that shortens it
BOUNDED = {
    "joulegym/ETF-v0": {"horizon": 7}, "joulegym/ETFPhi-v0": {"horizon": 7}, "joulegym/ETFDVFS-v0": {"horizon": 7},
    "joulegym/EMRF-v0": {"horizon": 9}, "joulegym/EMRFResidual-v0": {"horizon": 9},
    "joulegym/EMRFKnob-v0": {"horizon": 9}, "joulegym/EMRFKnobDiscrete-v0": {"horizon": 9},
    "joulegym/DREAMParams-v0": {"horizon_s": 0.5}, "joulegym/PowerFlow-v0": {"scenario": "tiny", "max_steps": 6},
    "joulegym/QinCluster-v0": {"max_steps": 5}, "joulegym/Qin-v0": {"max_steps": 5},
    "joulegym/ToyDVFS-v0": {"horizon": 5}}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(("env_id", "kwargs"), KINDS, ids=IDS)
def test_spec_max_episode_steps_is_the_envs_own_bound(env_id, kwargs):
    """``env.spec.max_episode_steps`` is the bound the env's own truncation sets from its config (following a
    user's ``horizon=``), no ``TimeLimit`` is added, an episode never runs past it, and ``gym.make(env.spec)``
    (which adds a ``TimeLimit`` at it) plays the same episode; ``None`` where decision points follow events."""
    if env_id not in BOUNDED:
        assert gym.make(env_id, **kwargs).spec.max_episode_steps is None
        return
    short = {**BOUNDED[env_id], **kwargs}
    env = gym.make(env_id, **short)
    bound = env.spec.max_episode_steps
    assert isinstance(bound, int) and bound >= 1
    assert "TimeLimit" not in repr(env)
    lengths = []
    for made in (env, gym.make(env.spec)):
        _, info = made.reset(seed=0)
        made.action_space.seed(0)
        steps, done = 0, False
        while not done:
            _, _, terminated, truncated, info = made.step(made.action_space.sample(mask=info.get("action_mask")))
            steps, done = steps + 1, terminated or truncated
            assert steps <= bound
        lengths.append(steps)
    assert lengths[0] == lengths[1]
    if env_id.startswith(("joulegym/ETF", "joulegym/ToyDVFS")):  # a fixed number of epochs: the bound is reached
        assert lengths[0] == bound


@pytest.mark.parametrize(("env_id", "kwargs", "hint"), [
    ("joulegym/ETF-v0", {"scenario": "tx2-fig55"}, "did you mean 'tx2-fig5'?"),
    ("joulegym/QinCluster-v0", {"scenario": "paper-rv"}, "did you mean 'paper-rw'?"),
    ("joulegym/DREAM-v0", {"scenario": "ar-cal"}, "did you mean 'ar-call'?"),
    ("joulegym/PowerFlow-v0", {"horizn_s": 10.0}, "did you mean 'horizon_s'?"),
])
def test_a_scenario_or_config_key_typo_gets_a_did_you_mean(env_id, kwargs, hint):
    with pytest.raises(ValueError, match="allowed") as err:
        gym.make(env_id, **kwargs)
    assert str(err.value).endswith(hint)


def test_no_did_you_mean_for_a_name_like_none_of_them():
    with pytest.raises(ValueError, match="allowed") as err:
        gym.make("joulegym/ETF-v0", scenario="zzzzzz")
    assert "did you mean" not in str(err.value)
