"""The ETF env (one class, three action modes): API conformance, determinism, rendering, config and bad
input, reward parts and presets, and the simulator's accounting (``docs/families/etf.md``, "The env")."""

from __future__ import annotations

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env, data_equivalence
from hypothesis import given, settings
from hypothesis import strategies as st

import joulegym  # noqa: F401  (registers the ids)
from joulegym import baselines
from joulegym.core.rollout import ActionSequencePolicy, rollout
from joulegym.devices import get_device
from joulegym.envs.etf.allocation import etf_allocate
from joulegym.envs.etf.env import ETFDVFSEnv, ETFEnv, ETFPhiEnv, slot_legend_labels
from joulegym.envs.etf.simulator import ETFSimulator
from joulegym.scenarios import registered_ids
from joulegym.workloads import InferenceApp
from tests.etf.helpers import Probe, episode, make_env, policy

sb3_env_checker = pytest.importorskip("stable_baselines3.common.env_checker")

ETF_IDS = registered_ids("etf")
KINDS = {"ETF": "split", "ETFPhi": "phi", "ETFDVFS": "dvfs"}


def observed(env, name_or_policy="random", seed: int = 0):
    """(observations, rewards, infos) of one episode: reset's, then every step's."""
    env = make_env(env) if isinstance(env, str) else env
    obs_list: list = []
    run = rollout(env, policy(name_or_policy), seed=seed, record=True,
                  on_step=lambda obs, reward, info: obs_list.append(obs))
    return obs_list, run.rewards, run.infos


# --- registration and API conformance --------------------------------------------------------------
def test_one_class_per_decision_problem():
    """Each kind is its own env class on the template (docs/architecture.md); its action type only encodes."""
    classes = {"ETF": ETFEnv, "ETFPhi": ETFPhiEnv, "ETFDVFS": ETFDVFSEnv}
    assert len(ETF_IDS) == len(set(ETF_IDS)) == 41  # 3 kinds + 14 scenarios x their kinds
    for kind, mode in KINDS.items():
        env_id = f"joulegym/{kind}-v0"
        assert env_id in ETF_IDS and gym.spec(env_id).entry_point == f"joulegym.envs.etf.env:{classes[kind].__name__}"
        base = make_env(env_id).unwrapped
        assert type(base) is classes[kind] and base.kind == kind and base.action_mode == mode
        assert list(classes[kind].action_types) == [mode]
    assert "joulegym/ETF-tx2-fig5-v0" in ETF_IDS and "joulegym/ETFDVFS-tx2-fig10-incentive-v0" in ETF_IDS
    assert "joulegym/ETFDVFS-toy-fig3-v0" not in ETF_IDS  # single-frequency device: no DVFS kind
    assert ETFPhiEnv().kind == "ETFPhi"  # the class directly
    with pytest.raises(ValueError, match="action_mode"):
        ETFEnv(action_mode="phi")  # a mode of another decision problem is another class
    for cls in classes.values():
        for method in ("step", "reset"):
            assert method not in vars(cls)  # the core template owns them


@pytest.mark.parametrize("env_id", ETF_IDS)
def test_check_env(env_id):
    """Gymnasium's and Stable-Baselines3's env checkers (render checked once per kind, below)."""
    env = make_env(env_id).unwrapped
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Box observation space maximum value is infinity" is by design
        check_env(env, skip_render_check=True)
        sb3_env_checker.check_env(env, warn=False)
    env.close()


@pytest.mark.parametrize("env_id", ETF_IDS)
def test_render_modes(env_id):
    """Every id: ``ansi`` is a table naming each active app's model; ``rgb_array`` is an RGB image."""
    env = make_env(env_id, render_mode="ansi")
    env.reset(seed=0)
    env.step(env.action_space.sample())
    text = env.render()
    sim = env.unwrapped.sim
    assert isinstance(text, str) and "phi=" in text
    for k in sim.slot_app:
        if k >= 0:
            assert sim.apps[k].model in text
    env.close()
    env = make_env(env_id, render_mode="rgb_array")
    env.reset(seed=0)
    for _ in range(2):
        env.step(env.action_space.sample())
    image = env.render()
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3 and image.shape[0] > 100
    assert image.std() > 0  # something was drawn
    env.close()


def test_render_legend_names_the_apps():
    """The allocation plot's legend says which app is which (not bare slot numbers); a reused slot lists
    its occupants."""
    env = make_env("joulegym/ETF-tx2-fig9-dynamic-v0", render_mode="rgb_array").unwrapped
    rollout(env, ActionSequencePolicy([np.ones(4, dtype=np.float32)]), seed=0)
    fig = env._render_figure()
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend == ["A1 resnet50@1300.5MHz", "A2 resnet50@1032.75MHz", "A3 resnet50@726.75MHz"]
    __import__("matplotlib.pyplot").pyplot.close(fig)
    assert slot_legend_labels([["A1 x"], [], ["A2 y", "A5 z", "A7 w"]]) == [
        "A1 x", "slot 1 (free)", "slot 2: A2 y, A5 z, +1 more"]
    dvfs = make_env("joulegym/ETFDVFS-tx2-fig10-incentive-v0")
    _, info = dvfs.reset(seed=0)
    assert info["slot_apps"][:2] == ("A1 resnet50@1300.5MHz", "A2 resnet50 (tenant, DVFS)")


def test_render_without_mode_warns_and_returns_none():
    env = make_env("joulegym/ETF-v0").unwrapped
    env.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert env.render() is None


# --- determinism ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("env_id", ETF_IDS)
def test_same_seed_same_trajectory(env_id):
    """Whole episodes of seeded random actions: two envs, and one env reset twice, repeat themselves."""
    a, b = observed(env_id, seed=11), observed(env_id, seed=11)
    assert data_equivalence(a, b, exact=True)
    env = make_env(env_id)
    assert data_equivalence(observed(env, seed=5), observed(env, seed=5), exact=True)


@pytest.mark.parametrize("env_id", ["joulegym/ETF-random-mix-v0", "joulegym/ETF-tx2-fig6-random-v0",
                                    "joulegym/ETF-tx2-phi-random-v0"])
def test_different_seeds_differ(env_id):
    """The seed actually drives the random scenarios (app sets / frequency / phi)."""
    firsts = set()
    for seed in range(8):
        obs, _ = make_env(env_id).reset(seed=seed)
        firsts.add(obs.tobytes())
    assert len(firsts) > 1


LEAN_KEYS = {"reward_parts", "repaired"}  # plus action_mask on the discrete kinds
DIAGNOSTIC_KEYS = {"phi", "scheduler_inputs", "slot_apps", "allocation_units", "app_time_s", "app_energy_j",
                   "app_inferences"}


@pytest.mark.parametrize("info_level", ["lean", "full"])
@pytest.mark.parametrize("env_id", ETF_IDS)
def test_one_info_structure_per_episode(env_id, info_level):
    """Every info key has the same type (and length) at reset and at every step, so that Gymnasium's
    vector-env info merge works; ``metrics`` comes on the last step only (the core's ``info_metrics``). The lean
    default holds the core's keys only; ``info_level="full"`` adds the diagnostics."""
    _, _, infos = observed(make_env(env_id, info_level=info_level))
    env = make_env(env_id, info_level=info_level)
    _, first = env.reset(seed=0)

    def shape(info):
        return {k: (type(v), len(v) if isinstance(v, tuple | dict | np.ndarray) else None)
                for k, v in info.items() if k != "metrics"}

    assert all(shape(info) == shape(first) for info in infos)
    assert "metrics" in infos[-1] and not any("metrics" in info for info in infos[:-1])
    mask = {"action_mask"} if env.unwrapped.action_mode != "split" else set()
    tenant = {"tenant_frequency_mhz"} if env.unwrapped.action_mode == "dvfs" else set()
    if info_level == "lean":
        assert set(first) == LEAN_KEYS | mask
    else:
        assert set(first) == LEAN_KEYS | mask | DIAGNOSTIC_KEYS | tenant
        assert set(first["scheduler_inputs"]) == set(infos[-1]["scheduler_inputs"])


def test_scheduler_inputs_property_matches_the_full_info():
    env = make_env("joulegym/ETF-random-mix-v0")
    _, info = env.reset(seed=3)
    for _ in range(5):
        assert env.unwrapped.scheduler_inputs == info["scheduler_inputs"]
        _, _, _, _, info = env.step(env.action_space.sample())


@pytest.mark.parametrize("info_level", ["lean", "full"])
@pytest.mark.parametrize("env_id", ETF_IDS)
def test_vector_env_smoke(env_id, info_level):
    """Every id runs in a synchronous vector env (autoreset across an episode end included)."""
    single = gym.make(env_id)
    steps = single.unwrapped.horizon + 2
    vec = gym.make_vec(env_id, num_envs=2, vectorization_mode="sync", info_level=info_level)
    obs, infos = vec.reset(seed=[0, 1])
    assert obs.shape == (2, *single.observation_space.shape) and obs.dtype == np.float32
    vec.action_space.seed(0)
    ended = np.zeros(2, dtype=bool)
    for _ in range(steps):
        obs, reward, terminated, truncated, infos = vec.step(vec.action_space.sample())
        assert obs.shape[0] == 2 and reward.shape == (2,) and np.all(np.isfinite(reward))
        assert single.observation_space.contains(obs[0]) and single.observation_space.contains(obs[1])
        assert "reward_parts" in infos and ("scheduler_inputs" in infos) == (info_level == "full")
        if (terminated | truncated).any():
            assert "metrics" in infos
        ended |= terminated | truncated
    assert ended.all()
    vec.close()


@pytest.mark.parametrize("env_id", ["joulegym/ETF-random-mix-v0", "joulegym/ETFPhi-random-mix-v0",
                                    "joulegym/ETFDVFS-tx2-fig6-random-v0"])
def test_vector_env_determinism(env_id):
    """In a SyncVectorEnv the same seeds give the same trajectories, and each sub-env matches a single env."""

    def run_vec():
        vec = gym.vector.SyncVectorEnv([lambda: make_env(env_id) for _ in range(3)])
        obs, _ = vec.reset(seed=[1, 2, 3])
        vec.action_space.seed(9)
        trace = [obs]
        actions = []
        for _ in range(30):
            action = vec.action_space.sample()
            actions.append(action)
            obs, reward, term, trunc, _ = vec.step(action)
            trace += [obs, reward, term, trunc]
        vec.close()
        return trace, actions

    (t1, actions), (t2, _) = run_vec(), run_vec()
    assert all(np.array_equal(x, y) for x, y in zip(t1, t2, strict=True))
    single = make_env(env_id)
    obs, _ = single.reset(seed=2)
    assert np.array_equal(obs, t1[0][1])
    for k, action in enumerate(actions):
        obs, reward, term, trunc, _ = single.step(action[1])
        if term or trunc:
            break
        assert np.array_equal(obs, t1[1 + 4 * k][1]) and reward == t1[2 + 4 * k][1]


# --- Algorithm 1 bit for bit through the env --------------------------------------------------------------------
def expected_units(inputs) -> tuple[int, ...]:
    act = np.array(inputs["active"])
    units = np.zeros(act.size, dtype=np.int64)
    if act.any():
        units[act] = etf_allocate(np.array(inputs["weights"])[act], np.array(inputs["demand_units"])[act],
                                  np.array(inputs["power_w"])[act], inputs["T_units"], inputs["phi"])
    return tuple(units.tolist())


def assert_etf_policy_is_algorithm1(env, seed: int) -> int:
    """One episode of the ETF policy: every epoch's units are Algorithm 1's on the inputs it acted on."""
    probe = Probe(policy("etf"))
    run = episode(env, probe, seed=seed)
    for (_, before), after in zip(probe.seen, run.infos, strict=True):
        assert after["allocation_units"] == expected_units(before["scheduler_inputs"])
        assert not after["repaired"]  # the reference action needs no repair
    return run.length


@pytest.mark.parametrize("env_id", ["joulegym/ETF-v0", "joulegym/ETF-random-mix-v0", "joulegym/ETF-open-loop-v0",
                                    "joulegym/ETF-tx2-fig9-dynamic-v0", "joulegym/ETF-tx2-fig11-weights-v0",
                                    "joulegym/ETF-toy-fig3-v0", "joulegym/ETF-tx2-phi-random-v0"])
@pytest.mark.parametrize("guarantee_mode", ["project", "none"])
def test_etf_policy_reproduces_algorithm1_bit_for_bit(env_id, guarantee_mode):
    env = make_env(env_id, guarantee_mode=guarantee_mode)
    for seed in range(4):
        assert assert_etf_policy_is_algorithm1(env, seed) > 0


@settings(max_examples=60, deadline=None)
@given(apps=st.lists(st.tuples(st.sampled_from([1.0, 2.0, 3.0]), st.floats(0.5, 12.0),
                               st.one_of(st.none(), st.floats(0.0, 1.0))), min_size=1, max_size=4),
       phi=st.floats(0.0, 1.0), T=st.integers(1, 64), guarantee_mode=st.sampled_from(["project", "none"]))
def test_etf_policy_is_algorithm1_on_random_app_sets(apps, phi, T, guarantee_mode):
    """Any weights, powers, open-loop demands, phi and T on the toy device (unit service time)."""
    config = [{"model": "toy-a", "frequency_mhz": 1000.0, "weight": w, "power_w": p, "demand_rps": d}
              for w, p, d in apps]
    env = make_env("joulegym/ETF-v0", device="toy-etf", apps=config, phi=phi, T_units=T, unit_s=1.0 / T,
                   epoch_s=1.0, horizon=2, guarantee_mode=guarantee_mode)
    assert_etf_policy_is_algorithm1(env, seed=0)


def test_encode_is_the_inverse_of_decode():
    """``action_type.encode(units)`` is the action the ETF policy takes: it decodes to the same units."""
    env = make_env("joulegym/ETF-tx2-fig9-dynamic-v0", guarantee_mode="project").unwrapped

    def check(_env, obs, info, action):
        units = list(expected_units(info["scheduler_inputs"]))
        assert env.action_type.decode(env.action_type.encode(units)) == units
        assert np.array_equal(env.action_type.encode(units), action)

    episode(env, Probe(policy("etf"), check), seed=0)


@pytest.mark.parametrize("env_id", ["joulegym/ETF-tx2-fig5-v0", "joulegym/ETF-tx2-fig9-dynamic-v0", "joulegym/ETF-v0",
                                    "joulegym/ETF-toy-fig3-v0", "joulegym/ETF-tx2-fig11-weights-v0",
                                    "joulegym/ETF-random-mix-v0", "joulegym/ETF-open-loop-v0"])
def test_etf_policy_from_observation_alone(env_id):
    """Without info the ETF policy decodes Algorithm 1's inputs from the float32 observation and still
    picks the same units (phi = 0.7 must not decode to a guarantee one unit short)."""
    env = make_env(env_id)
    decode = env.unwrapped.action_type.decode
    blind = policy("etf")

    def check(_env, obs, info, action):
        assert decode(action) == decode(blind.act(obs, {}))

    for seed in range(3):
        blind.reset(env)
        episode(env, Probe(policy("etf"), check), seed=seed)


TX2_POWERS_W = sorted({p / 1000 for p in (541, 776, 995, 1193, 1380, 1539, 1717, 2187, 2460, 2815, 3226, 3799, 4261,
                                          498, 720, 918, 1090, 1248, 1536, 1952, 2177, 2489, 2839, 3352,
                                          3736, 900, 1065)})
blind_apps = st.lists(st.tuples(st.sampled_from([1.0, 2.0, 3.0]),
                                st.one_of(st.integers(1, 9).map(float), st.sampled_from(TX2_POWERS_W)),
                                st.one_of(st.none(), st.floats(0.0, 1.2))), min_size=1, max_size=4)


def blind_env(apps, phi, T, guarantee_mode):
    config = [{"model": "toy-a", "frequency_mhz": 1000.0, "weight": w, "power_w": p, "demand_rps": d}
              for w, p, d in apps]
    return make_env("joulegym/ETF-v0", device="toy-etf", apps=config, phi=phi, T_units=T, unit_s=1.0 / T,
                    epoch_s=1.0, horizon=2, guarantee_mode=guarantee_mode)


@settings(max_examples=150, deadline=None)
@given(apps=blind_apps, phi=st.one_of(st.floats(0.0, 1.0), st.integers(0, 20).map(lambda k: k / 20)),
       T=st.integers(1, 64), guarantee_mode=st.sampled_from(["project", "none"]))
def test_etf_policy_from_float32_observation_is_algorithm1(apps, phi, T, guarantee_mode):
    """The float32 edge cases of decoding: exact ties between weighted energies (integer powers make them
    common; P = 1 and 3 W decode as 1/3 in float32, so 3 x 1/3 != 1 without a tie tolerance), phi values
    whose guarantee phi*w_i*T/W is a whole number (0.7 x 40 / 2 = 14 must not decode to 13), demands at
    and above T, weights 1:2:3, both guarantee modes. Powers are whole watts or the TX2's measured mW, so
    two weighted energies are either equal or at least 1/(64 x 4261 x 3) = 1.2e-6 apart (relative), which
    float32 still resolves (DECODE_RTOL = 5e-7 plus <= 2.4e-7 of round-off; baselines.etf docstring)."""
    env = blind_env(apps, phi, T, guarantee_mode)
    obs, info = env.reset(seed=0)
    etf = policy("etf")
    etf.reset(env)
    want = expected_units(info["scheduler_inputs"])
    assert tuple(env.unwrapped.action_type.decode(etf.act(obs, {}))) == want
    _, _, _, _, info = env.step(etf.act(obs, {}))
    assert info["allocation_units"] == want


@settings(max_examples=100, deadline=None)
@given(apps=blind_apps, phi=st.integers(0, 20).map(lambda k: k / 20),
       own_phi=st.integers(0, 20).map(lambda k: k / 20), T=st.integers(1, 64),
       guarantee_mode=st.sampled_from(["project", "none"]))
def test_fixed_phi_policies_from_float32_observation(apps, phi, own_phi, T, guarantee_mode):
    """TF / EF / ETF at its own phi decode their guarantee from float32 weights: the same units as with the
    exact inputs (1/3 x 30 = 10 must not floor to 9)."""
    env = blind_env(apps, phi, T, guarantee_mode)
    obs, info = env.reset(seed=0)
    decode = env.unwrapped.action_type.decode
    for name, kwargs in (("tf", {}), ("ef", {}), ("etf-fixed-phi", {"phi": own_phi})):
        full, blind = baselines.make(name, **kwargs), baselines.make(name, **kwargs)
        full.reset(env)
        blind.reset(env)
        assert decode(blind.act(obs, {})) == decode(full.act(obs, info)), name


def test_decoding_tie_regression():
    """P = 1 and 3 W, EF over T = 5: the weighted energies tie at 3 units vs 1 (3 x 1 == 1 x 3) and
    Algorithm 1 gives the unit to the lowest index (4, 1); without a tie tolerance the float32 powers
    (1/3 -> 0.33333334) gave (3, 2)."""
    env = blind_env([(1.0, 1.0, None), (1.0, 3.0, None)], 0.0, 5, "none")
    obs, _ = env.reset(seed=0)
    etf = policy("etf")
    etf.reset(env)
    assert env.unwrapped.action_type.decode(etf.act(obs, {}))[:2] == [4, 1]


def test_etf_objective_never_beats_algorithm1():
    """Algorithm 1 maximises ``etf_objective`` (Thm. 3): no random action scores more in any state."""
    rng = np.random.default_rng(0)
    for env_id in ("joulegym/ETF-v0", "joulegym/ETF-random-mix-v0", "joulegym/ETF-open-loop-v0"):
        env = make_env(env_id).unwrapped
        decode = env.action_type.decode

        def check(_env, obs, info, action, env=env, decode=decode):
            best = env._etf_objective(decode(action))
            assert 0.0 <= best <= 1.0
            for _ in range(10):
                other = rng.uniform(0, 1, env.max_apps).astype(np.float32)
                other[rng.integers(env.max_apps)] = 0.0
                assert env._etf_objective(decode(other)) <= best + 1e-12

        for seed in range(3):
            episode(env, Probe(policy("etf"), check), seed=seed)


# --- spaces, observation, info ------------------------------------------------------------------------------------
def test_observation_layout_fig5():
    env = make_env("joulegym/ETF-tx2-fig5-v0")
    obs, info = env.reset(seed=0)
    assert obs.shape == (4 * 9 + 6,) and obs.dtype == np.float32
    slots = obs[:36].reshape(4, 9)
    assert slots[:, 0].tolist() == [1, 1, 0, 0]  # active flags
    assert slots[0, 2] == pytest.approx(1.0) and slots[1, 2] == pytest.approx(0.9 / 4.261, rel=1e-6)
    assert obs[36] == pytest.approx(0.7)  # phi
    assert obs[38] == pytest.approx(0.5)  # N_active / N_max
    assert obs[41] == pytest.approx(math.log10(4.261 / 0.9), rel=1e-6)
    assert np.all(slots[2:] == 0.0)  # padding
    # Feature 4 is Algorithm 1's guarantee floor(0.7 * 40 / 2) = 14 units in every guarantee mode; only
    # with "project" is it also the floor of the action (paper scenarios use "none").
    assert slots[:2, 4].tolist() == pytest.approx([14 / 40, 14 / 40])
    assert info["scheduler_inputs"]["guarantee_units"] == (14, 14, 0, 0)
    assert info["scheduler_inputs"]["action_floor_units"] == (0, 0, 0, 0)
    assert info["slot_apps"] == ("A1 resnet50@1300.5MHz", "A2 mobilenetv2@726.75MHz", "", "")
    assert info["allocation_units"] == (0, 0, 0, 0)  # nothing allocated yet, same structure as a step's
    base = make_env("joulegym/ETF-v0")
    obs, info = base.reset(seed=0)
    assert obs[[4, 13]].tolist() == pytest.approx([14 / 40, 14 / 40])
    assert info["scheduler_inputs"]["guarantee_units"] == (14, 14, 0, 0)
    assert info["scheduler_inputs"]["action_floor_units"] == (14, 14, 0, 0)
    dvfs = make_env("joulegym/ETFDVFS-tx2-fig10-incentive-v0")
    obs, info = dvfs.reset(seed=0)
    assert obs.shape == (4 * 9 + 6 + 4 + 2,)
    assert obs[42:46].tolist() == [0, 1, 0, 0]  # the tenant holds slot 1
    assert obs[46] == pytest.approx(9 / 12)  # 1032.75 MHz is level 9 of 13
    assert info["tenant_frequency_mhz"] == 1032.75


def test_info_contents():
    env = make_env("joulegym/ETF-tx2-fig5-v0")
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.array([1.0, 1.0, 0.0, 0.0], dtype=np.float32))
    assert info["allocation_units"] == (20, 20, 0, 0)
    parts = info["reward_parts"]
    assert list(parts) == ["time_fairness", "energy_fairness", "system_fairness", "etf_objective"]
    assert parts["time_fairness"] == 1.0 and parts["system_fairness"] == pytest.approx(0.9 / 4.261)
    assert reward == parts["system_fairness"]  # the paper scenarios' default preset
    assert "metrics" not in info and not info["repaired"]
    m = env.unwrapped.metrics()
    for key in ("time_fairness", "energy_fairness", "system_fairness", "app_time_s", "app_energy_j"):
        assert key in m
    assert isinstance(info["scheduler_inputs"]["power_w"], tuple)
    every = make_env("joulegym/ETF-tx2-fig5-v0", info_metrics="every_step")
    every.reset(seed=0)
    assert every.step(np.ones(4, dtype=np.float32))[4]["metrics"]["time_fairness"] == 1.0


def test_reward_presets_and_windows():
    """Reward presets on Fig. 5 (P = 4.261 / 0.9 W). Epoch 1 at 20/20 units: F_T = 1 and F_E = 0.9/4.261 =
    0.2112. Epoch 2 gives all 40 units to A2: that epoch's F_T = F_E = 0, while over the run A1 has 0.5 s and
    A2 1.5 s (F_T = 1/3) and 2.13 J vs 1.35 J (F_E = 1.35/2.1305 = 0.634). ``reward_weights`` replace the old
    ``beta``: {time_fairness: beta, energy_fairness: 1 - beta}."""
    ratio = 0.9 / 4.261
    half, a2_only = np.array([1, 1, 0, 0], np.float32), np.array([0, 1, 0, 0], np.float32)
    rewards, parts = {}, {}
    for reward, window, weights in (("system_fairness", "epoch", None), ("system_fairness", "cumulative", None),
                                    ("scalarized", "epoch", {"time_fairness": 0.25, "energy_fairness": 0.75}),
                                    ("scalarized", "cumulative", {"time_fairness": 0.25, "energy_fairness": 0.75})):
        env = make_env("joulegym/ETF-tx2-fig5-v0", reward=reward, reward_window=window, reward_weights=weights)
        run = rollout(env, ActionSequencePolicy([half, a2_only]), seed=0, record=True)
        rewards[reward, window] = tuple(run.rewards[:2])
        parts[window] = run.infos[1]["reward_parts"]
    assert rewards["system_fairness", "epoch"] == pytest.approx((ratio, 0.0))
    assert rewards["system_fairness", "cumulative"] == pytest.approx((ratio, 1 / 3))
    assert rewards["scalarized", "epoch"] == pytest.approx((0.25 + 0.75 * ratio, 0.0))
    cumulative_fe = 1.5 * 0.9 / (0.5 * 4.261)
    assert rewards["scalarized", "cumulative"] == pytest.approx((0.25 + 0.75 * ratio, 0.25 / 3 + 0.75 * cumulative_fe))
    assert [parts["epoch"][k] for k in ("time_fairness", "energy_fairness")] == [0.0, 0.0]
    cumulative = [parts["cumulative"][k] for k in ("time_fairness", "energy_fairness")]
    assert cumulative == pytest.approx([1 / 3, cumulative_fe])
    assert make_env("joulegym/ETF-tx2-fig5-v0", reward="scalarized").unwrapped.reward_weights == (0.5, 0.5, 0.0, 0.0)
    with pytest.raises(ValueError, match="reward_window='cumulative' needs a reward without etf_objective"):
        make_env("joulegym/ETF-v0", reward_window="cumulative")  # the default reward "etf" is per epoch


@pytest.mark.parametrize(("env_id", "preset", "weights"), [
    ("joulegym/ETF-v0", "etf", (0.0, 0.0, 0.0, 1.0)),
    ("joulegym/ETF-tx2-fig5-v0", "system_fairness", (0.0, 0.0, 1.0, 0.0)),
    ("joulegym/ETFPhi-v0", "system_fairness", (0.0, 0.0, 1.0, 0.0)),
    ("joulegym/ETFDVFS-v0", "throughput", (1.0, 0.0)),
])
def test_default_presets(env_id, preset, weights):
    base = make_env(env_id).unwrapped
    assert base.config["reward"] == preset and base.reward_weights == weights
    assert base.reward_space.shape == (len(weights),)


def test_reward_presets_per_mode():
    assert make_env("joulegym/ETF-v0", guarantee_mode="none").unwrapped.config["reward"] == "system_fairness"
    assert make_env("joulegym/ETFPhi-v0", reward="scalarized").unwrapped.reward_weights == (0.5, 0.5, 0.0, 0.0)
    with pytest.raises(ValueError, match=r"reward='etf' is not one of \('system_fairness', 'scalarized'\)"):
        make_env("joulegym/ETFPhi-v0", reward="etf")
    with pytest.raises(ValueError, match="reward='scalarized' is not one of"):
        make_env("joulegym/ETFDVFS-v0", reward="scalarized")
    for removed in ("beta", "energy_penalty"):
        with pytest.raises(ValueError, match=f"unknown config key '{removed}'"):
            make_env("joulegym/ETF-v0", **{removed: 0.5})


def test_dvfs_power_weight_is_the_old_energy_penalty():
    """reward = throughput - w * W, the same number the old ``energy_penalty=w`` gave."""
    env = make_env("joulegym/ETFDVFS-tx2-fig10-same-v0", reward_weights={"power": 2.0})
    env.reset(seed=0)
    _, reward, _, _, info = env.step(9)
    parts = info["reward_parts"]
    assert reward == parts["throughput"] - 2.0 * -parts["power"]
    assert parts["throughput"] == pytest.approx(0.6 / 0.066176) and -parts["power"] == pytest.approx(0.6 * 2.815)


def test_all_zero_action_means_equal_shares():
    env = make_env("joulegym/ETF-tx2-fig5-v0")
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.zeros(4, dtype=np.float32))
    assert info["allocation_units"] == (20, 20, 0, 0)
    assert info["repaired"]  # flagged: equal shares were substituted


def test_inactive_slots_are_ignored():
    env = make_env("joulegym/ETF-tx2-fig5-v0")
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.array([0.0, 0.0, 1.0, 1.0], dtype=np.float32))
    assert info["allocation_units"] == (20, 20, 0, 0)
    assert info["repaired"]  # shares on free slots were ignored, and flagged
    _, _, _, _, info = env.step(np.array([0.5, 0.2, 0.0, 0.0], dtype=np.float32))
    assert info["allocation_units"] == (29, 11, 0, 0) and not info["repaired"]  # 28.57 / 11.43


def test_phi_knob_and_dvfs_actions():
    env = make_env("joulegym/ETFPhi-tx2-fig5-v0")
    env.reset(seed=0)
    _, _, _, _, info = env.step(10)  # phi = 1: TF
    assert info["allocation_units"][:2] == (20, 20) and info["phi"] == 1.0
    _, _, _, _, info = env.step(0)  # phi = 0: EF
    assert info["allocation_units"][:2] == (7, 33)
    assert info["action_mask"].all() and env.unwrapped.action_masks().shape == (11,)
    dvfs = make_env("joulegym/ETFDVFS-tx2-fig10-same-v0")
    dvfs.reset(seed=0)
    _, reward, _, _, info = dvfs.step(12)
    assert info["tenant_frequency_mhz"] == 1300.5
    assert reward == pytest.approx(0.5 / 0.057005)  # 20 of 40 units at ResNet50's 57.005 ms
    _, reward, _, _, info = dvfs.step(9)
    assert info["tenant_frequency_mhz"] == 1032.75
    assert info["allocation_units"][:2] == (16, 24)
    assert reward == pytest.approx(0.6 / 0.066176)


def test_reward_space_bounds_the_dvfs_parts():
    """The tenant's throughput is at most 1 / its fastest service time, its power at most its top level's."""
    env = make_env("joulegym/ETFDVFS-tx2-fig10-same-v0", scheduler="ef").unwrapped
    space = env.reward_space
    assert space.high[0] == pytest.approx(1 / 0.057005, rel=1e-5)
    assert space.low[1] == pytest.approx(-4.261, rel=1e-5)
    _, _, infos = observed(env, "random")
    for info in infos:
        parts = np.array(list(info["reward_parts"].values()), dtype=np.float32)
        assert space.contains(parts)


# --- bad input -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("action", "message"), [
    (np.zeros(3, dtype=np.float32), r"action must have shape \(4,\)"),
    (np.zeros((2, 2), dtype=np.float32), r"action must have shape \(4,\)"),
    (np.array([np.nan, 0, 0, 0], dtype=np.float32), "action must be finite"),
    (np.array([0.5, np.inf, 0, 0]), "action must be finite"),
    (np.array([1.5, 0, 0, 0], dtype=np.float32), r"action must lie in \[0.0, 1.0\]"),
    (np.array([-0.5, 0, 0, 0], dtype=np.float32), r"action must lie in \[0.0, 1.0\]"),
])
def test_bad_box_action(action, message):
    env = make_env("joulegym/ETF-v0").unwrapped
    env.reset(seed=0)
    with pytest.raises(ValueError, match=message):
        env.step(action)


@pytest.mark.parametrize("env_id", ["joulegym/ETFPhi-v0", "joulegym/ETFDVFS-v0"])
@pytest.mark.parametrize("action", [np.array([1, 2]), float("nan"), 2.5, -1, 99])
def test_bad_discrete_action(env_id, action):
    env = make_env(env_id).unwrapped
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"action must be .*\[0, \d+\)"):
        env.step(action)


@pytest.mark.parametrize(("kwargs", "field", "allowed"), [
    ({"scenario": "nope"}, "scenario", "allowed: .*tx2-fig5"),
    ({"phi": 1.5}, "phi", r"\[0, 1\]"),
    ({"phi": -0.1}, "phi", r"\[0, 1\]"),
    ({"phi_choices": [0.5, 2.0]}, "phi_choices", r"\[0, 1\]"),
    ({"phi_choices": []}, "phi_choices", "non-empty"),
    ({"apps": [{"model": "resnet50", "frequency_mhz": 1300.5, "weight": -1.0}]}, "weight", r"in \[1e-6, 1e6\]"),
    ({"apps": [{"model": "resnet50", "frequency_mhz": 1300.5, "weight": 0.0}]}, "weight", r"in \[1e-6, 1e6\]"),
    ({"apps": [{"model": "resnet50", "frequency_mhz": 1300.5, "power_w": -2.0}]}, "power_w", "> 0"),
    ({"apps": [{"model": "resnet50", "frequency_mhz": 1300.5, "power_w": float("nan")}]}, "power_w", "> 0"),
    ({"apps": [{"model": "resnet50", "frequency_mhz": 1000.0}]}, "frequency_mhz", "allowed"),
    ({"apps": [{"model": "vgg16", "frequency_mhz": 1300.5}]}, "workload", "known"),
    ({"apps": [{"model": "resnet50", "frequency_mhz": 1300.5, "colour": 1}]}, "colour", "allowed"),
    ({"apps": []}, "apps", "at least one"),
    ({"apps": ["resnet50"]}, "apps", "must be a dict"),
    ({"random_frequency_apps": [5]}, "random_frequency_apps", r"in \[0, 1\]"),
    ({"device": "h100"}, "device", "available"),
    ({"nonsense": 1}, "nonsense", "allowed keys"),
    ({"guarantee_mode": "half"}, "guarantee_mode", "project"),
    ({"reward": "joules"}, "reward", "system_fairness"),
    ({"reward_window": "week"}, "reward_window", "cumulative"),
    ({"reward_weights": {"time_fairness": -1.0}}, "reward_weights", r"in \[0, 1e\+06\]"),
    ({"reward_weights": {"throughput": 1.0}}, "reward_weights", "unknown part 'throughput'"),
    ({"T_units": 0}, "T_units", ">= 1"),
    ({"horizon": 2.5}, "horizon", "whole number"),
    ({"epoch_s": 0.0105}, "epoch_s", "whole number"),
    ({"unit_s": -1.0}, "unit_s", "> 0"),
    ({"action_mode": "knob"}, "action_mode", "split"),
])
def test_bad_config_raises_value_error_naming_field(kwargs, field, allowed):
    with pytest.raises(ValueError, match=field) as err:
        make_env("joulegym/ETF-v0", **kwargs)
    assert __import__("re").search(allowed, str(err.value)), str(err.value)


@pytest.mark.parametrize(("env_id", "kwargs", "mode"), [
    ("joulegym/ETF-v0", {"phi_levels": 21}, "'phi' \\(ETFPhi\\)"),
    ("joulegym/ETF-v0", {"scheduler": "tf"}, "'dvfs' \\(ETFDVFS\\)"),
    ("joulegym/ETF-v0", {"tenant_app": 1}, "'dvfs' \\(ETFDVFS\\)"),
    ("joulegym/ETFPhi-v0", {"guarantee_mode": "none"}, "'split' \\(ETF\\)"),
    ("joulegym/ETFPhi-v0", {"tenant_app": 1}, "'dvfs' \\(ETFDVFS\\)"),
    ("joulegym/ETFPhi-v0", {"scheduler": "ef"}, "'dvfs' \\(ETFDVFS\\)"),
    ("joulegym/ETFDVFS-v0", {"phi_levels": 5}, "'phi' \\(ETFPhi\\)"),
    ("joulegym/ETFDVFS-v0", {"guarantee_mode": "none"}, "'split' \\(ETF\\)"),
    ("joulegym/ETFDVFS-v0", {"reward_window": "cumulative"}, "'split' \\(ETF\\) and action_mode='phi'"),
    ("joulegym/ETF-tx2-fig5-v0", {"tenant_app": 1}, "'dvfs' \\(ETFDVFS\\)"),
])
def test_keys_of_another_mode_raise(env_id, kwargs, mode):
    """A key that only another action mode reads raises when set away from its default, naming that mode."""
    key = next(iter(kwargs))
    with pytest.raises(ValueError, match=f"{key}=.* is a setting of action_mode={mode}"):
        make_env(env_id, **kwargs)


def test_a_scenarios_own_keys_of_another_mode_are_allowed():
    """One scenario serves several kinds: the paper scenarios' ``guarantee_mode="none"`` on ETFPhi/ETFDVFS and
    Fig. 10's ``tenant_app=1`` on ETF are the scenario's data, not a user's mistake (and change nothing there)."""
    assert make_env("joulegym/ETFPhi-tx2-fig5-v0").unwrapped.config["guarantee_mode"] == "none"
    assert make_env("joulegym/ETF-tx2-fig10-incentive-v0", tenant_app=1).unwrapped.config["tenant_app"] == 1
    assert make_env("joulegym/ETF-v0", phi_levels=11, scheduler="etf", tenant_app=0)  # defaults are fine


def test_bad_config_for_other_kinds():
    with pytest.raises(ValueError, match="scenario='random-mix' is unknown for ETFDVFS"):
        make_env("joulegym/ETFDVFS-v0", scenario="random-mix")
    with pytest.raises(ValueError, match="scheduler"):
        make_env("joulegym/ETFDVFS-v0", scheduler="fifo")
    with pytest.raises(ValueError, match="tenant_app"):
        make_env("joulegym/ETFDVFS-v0", tenant_app=5)
    with pytest.raises(ValueError, match="tenant_app must be present for the whole episode"):
        make_env("joulegym/ETFDVFS-tx2-fig9-dynamic-v0", tenant_app=1)
    with pytest.raises(ValueError, match="phi_levels"):
        make_env("joulegym/ETFPhi-v0", phi_levels=1)
    with pytest.raises(ValueError, match="single frequency"):
        make_env("joulegym/ETFDVFS-v0", device="a10g", apps=[{"model": "gpt2", "frequency_mhz": 1710.0}])
    with pytest.raises(ValueError, match="mix must be None"):
        make_env("joulegym/ETFDVFS-v0", mix={"models": ["resnet50"]})


def test_scenario_names_are_case_and_underscore_insensitive():
    env = make_env("joulegym/ETF-v0", scenario="TX2_Fig5")
    assert env.unwrapped.config["scenario"] == "tx2-fig5"


# --- simulator accounting ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["etf", "tf", "random"])
def test_backlogged_accounting(name):
    """Static backlogged apps: the GPU is busy the whole run (sum of time = epoch x epochs, i.e. T units per
    interval), and each app's energy is its profile power x its time."""
    run = episode("joulegym/ETF-tx2-fig5-v0", name)
    for info in run.infos:
        assert sum(info["app_time_s"]) == pytest.approx(1.0)
    m = run.metrics
    assert run.length == 60 and run.truncated
    assert sum(m["app_time_s"]) == pytest.approx(60 * 1.0)
    assert m["gpu_utilisation"] == pytest.approx(1.0)
    assert m["app_energy_j"] == pytest.approx(np.asarray(m["app_time_s"]) * np.array([4.261, 0.9]))
    assert m["app_inferences"][0] == pytest.approx(m["app_time_s"][0] / 0.057005)
    assert m["total_energy_j"] == pytest.approx(sum(m["app_energy_j"]))


@pytest.mark.parametrize("env_id", ["joulegym/ETF-random-mix-v0", "joulegym/ETF-open-loop-v0",
                                    "joulegym/ETF-tx2-fig9-dynamic-v0", "joulegym/ETFPhi-random-mix-v0"])
def test_arrivals_never_exceed_max_apps(env_id):
    for seed in range(25):
        env = make_env(env_id)
        sim = env.unwrapped.sim
        seen_active: set[int] = set()

        def check(_env, obs, info, action, sim=sim, seen_active=seen_active):
            assert sum(sim.active) <= sim.max_apps
            seen_active.update(k for k in sim.slot_app if k >= 0)

        run = episode(env, Probe(policy("random"), check), seed=seed)
        assert len(sim.apps) >= 1
        for info in run.infos:
            assert sum(1 for u in info["allocation_units"] if u) <= sim.max_apps
        if run.terminated:  # every app came and went
            assert not any(sim.active) and len(seen_active) == len(sim.apps)


def test_energy_is_power_times_time_in_dynamic_scenario():
    run = episode("joulegym/ETF-tx2-fig9-dynamic-v0", "random")
    power = {0: 4.261, 1: 2.815, 2: 1.717}
    for info in run.infos:
        for slot in range(3):
            assert info["app_energy_j"][slot] == pytest.approx(power[slot] * info["app_time_s"][slot])
    assert sum(run.metrics["app_time_s"]) == pytest.approx(100.0)  # A1 is always present: the GPU never idles


def test_open_loop_demands_are_respected():
    for seed in range(5):
        probe = Probe(policy("random"))
        run = episode("joulegym/ETF-open-loop-v0", probe, seed=seed)
        for (_, before), after in zip(probe.seen, run.infos, strict=True):
            inputs = before["scheduler_inputs"]
            for u, d, a in zip(after["allocation_units"], inputs["demand_units"], inputs["active"], strict=True):
                assert u <= d or not a


def test_simulator_direct_use_and_errors():
    device = get_device("jetson-tx2")
    with pytest.raises(ValueError, match="epoch_s must be a whole number"):
        ETFSimulator(device, max_apps=2, T_units=40, unit_s=0.001, epoch_s=0.05, horizon=3)
    sim = ETFSimulator(device, max_apps=2, T_units=40, unit_s=0.001, epoch_s=1.0, horizon=3)
    with pytest.raises(ValueError, match="at least one"):
        sim.reset(None, [])
    with pytest.raises(ValueError, match="instance"):
        sim.reset(None)
    sim.reset(None, [InferenceApp("resnet50", 1300.5), InferenceApp("resnet18", 726.75, arrival=1)])
    assert sim.advance() is True and sim.epoch == 0  # nothing ran yet: still the first decision point
    assert sim.active == [True, False]
    assert sim.view()["active"] == (True, False) and sim.view()["frequency_mhz"][0] == 1300.5
    with pytest.raises(ValueError, match="units must"):
        sim.apply([20, 20])  # slot 1 is free
    with pytest.raises(ValueError, match="units must"):
        sim.apply([41, 0])
    with pytest.raises(ValueError, match="units must have length 2"):
        sim.apply([40])
    result = sim.apply([40, 0])
    assert result.time_s[0] == pytest.approx(1.0) and result.energy_j[0] == pytest.approx(4.261)
    assert sim.advance() is True and sim.membership_changed and sim.active == [True, True]
    sim.apply([20, 20])
    sim.advance()
    m = sim.metrics()
    assert m["app_time_s"] == pytest.approx((1.5, 0.5))
    # Rates per epoch present: A1 0.75 s/epoch, A2 0.5 s/epoch.
    assert m["time_fairness"] == pytest.approx(0.5 / 0.75)
    crowded = [InferenceApp("resnet50", 1300.5), InferenceApp("resnet50", 1300.5), InferenceApp("resnet50", 1300.5)]
    with pytest.raises(ValueError, match="max_apps"):
        sim.reset(None, crowded)


def test_mix_dynamic_draws_tenants_that_arrive_and_leave():
    """tx2-mix-dynamic is Fig. 9's setting as a distribution: instances differ per seed, tenants come and go, and
    the agent's spaces equal the paper scenarios' (one agent plays them all)."""
    env = make_env("joulegym/ETF-tx2-mix-dynamic-v0")
    paper = make_env("joulegym/ETF-tx2-fig9-dynamic-v0")
    assert env.observation_space == paper.observation_space and env.action_space == paper.action_space
    counts = []
    for seed in (0, 1):
        env.reset(seed=seed)
        active = []
        for _ in range(100):
            obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
            active.append(int(obs[[0, 9, 18, 27]].sum()))
            if terminated or truncated:
                break
        counts.append(active)
    assert counts[0] != counts[1]
    assert all(len(set(c)) > 1 for c in counts)  # the number of active tenants changes within an episode
