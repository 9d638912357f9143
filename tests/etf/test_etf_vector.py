"""The batched ETF vector env: the same per-instance trajectories as single envs, Gymnasium's autoreset, lean batched
infos, and its own errors; every test runs on both of its paths (instances one by one below ``ARRAY_MIN_N``, arrays
over all instances from it on)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import joulegym  # noqa: F401  (registers the ids)
from joulegym.envs.etf.split import ONE, ROWS, room_terms, split_units
from joulegym.envs.etf.vector import ETFVectorEnv

BATCHED = "vector_entry_point"


@pytest.fixture(autouse=True, params=["per-instance", "arrays"])
def path(request, monkeypatch):
    """Run each test with the small batches stepped one by one (the default) and as arrays."""
    if request.param == "arrays":
        monkeypatch.setattr(ETFVectorEnv, "ARRAY_MIN_N", 1)
    return request.param


def _make_pair(env_id: str, n: int, **kwargs):
    batched = gym.make_vec(env_id, num_envs=n, vectorization_mode=BATCHED, **kwargs)
    sync = gym.make_vec(env_id, num_envs=n, vectorization_mode="sync", **kwargs)
    return batched, sync


def _same_metrics(a: dict, b: dict) -> None:
    assert set(a) == set(b)
    for key in b:
        if key.startswith("_"):
            np.testing.assert_array_equal(a[key], b[key])
            continue
        mask = b["_" + key]
        for x, y in zip(a[key][mask], b[key][mask], strict=True):
            assert x == y, key  # floats and tuples of floats: exact


def _assert_same_run(env_id: str, n: int = 3, steps: int = 40, seed: int = 5, **kwargs) -> int:
    """Step the batched env and a SyncVectorEnv of single envs with the same random actions; every output equal.
    Returns how many episode ends the run crossed."""
    batched, sync = _make_pair(env_id, n, **kwargs)
    assert isinstance(batched.unwrapped, ETFVectorEnv)
    obs_b, info_b = batched.reset(seed=seed)
    obs_s, info_s = sync.reset(seed=seed)
    np.testing.assert_array_equal(obs_b, obs_s)
    space = sync.action_space
    space.seed(seed)
    ends = 0
    for _ in range(steps):
        action = space.sample()
        out_b, out_s = batched.step(action), sync.step(action)
        for x, y in zip(out_b[:4], out_s[:4], strict=True):
            np.testing.assert_array_equal(x, y)
        info_b, info_s = out_b[4], out_s[4]
        for name, value in info_s["reward_parts"].items():
            np.testing.assert_array_equal(info_b["reward_parts"][name], value)
        np.testing.assert_array_equal(info_b["repaired"], info_s["repaired"])
        assert ("metrics" in info_b) == ("metrics" in info_s)
        if "metrics" in info_s:
            _same_metrics(info_b["metrics"], info_s["metrics"])
        ends += int(np.sum(out_s[2] | out_s[3]))
    batched.close()
    sync.close()
    return ends


@pytest.mark.parametrize("env_id, kwargs", [
    ("joulegym/ETF-v0", {"horizon": 7}),
    ("joulegym/ETFPhi-v0", {"horizon": 7}),
    ("joulegym/ETFDVFS-v0", {"horizon": 7}),
    ("joulegym/ETF-random-mix-v0", {}),
    ("joulegym/ETF-open-loop-v0", {}),
    ("joulegym/ETFPhi-random-mix-v0", {}),
    ("joulegym/ETF-tx2-phi-random-v0", {"horizon": 9}),
    ("joulegym/ETFDVFS-tx2-fig6-random-v0", {"horizon": 9}),
    ("joulegym/ETF-toy-fig3-v0", {}),
    ("joulegym/ETF-v0", {"guarantee_mode": "none", "max_apps": 6, "horizon": 9}),
    ("joulegym/ETF-v0", {"reward_window": "cumulative", "reward": "scalarized", "horizon": 9}),
])
def test_batched_equals_single_envs(env_id, kwargs):
    """Same seeds, same actions: the batched env's observations, rewards, ends, reward parts, repairs and metrics
    are the single envs' bit for bit, across autoresets (NEXT_STEP: the step after an end resets)."""
    ends = _assert_same_run(env_id, **kwargs)
    assert ends > 0 or "random-mix" in env_id or "open-loop" in env_id


@pytest.mark.parametrize("env_id", ["joulegym/ETF-tx2-fig9-dynamic-v0", "joulegym/ETFPhi-tx2-fig9-dynamic-v0",
                                    "joulegym/ETFDVFS-tx2-fig9-dynamic-v0"])
def test_batched_dynamic_arrivals_and_departures(env_id):
    """Apps arrive and leave (Fig. 9's timeline, 100 epochs) and episodes end: still the single envs' bits."""
    assert _assert_same_run(env_id, n=2, steps=105) == 2


def test_batched_every_step_metrics_and_vector_reward():
    _assert_same_run("joulegym/ETFPhi-tx2-fig9-dynamic-v0", n=2, steps=20, info_metrics="every_step")
    batched = gym.make_vec("joulegym/ETF-v0", num_envs=2, vectorization_mode=BATCHED, vector_reward=True, horizon=3)
    singles = [gym.make("joulegym/ETF-v0", vector_reward=True, horizon=3) for _ in range(2)]
    batched.reset(seed=0)
    for k, env in enumerate(singles):
        env.reset(seed=k)
    rng = np.random.default_rng(0)
    for _ in range(3):
        action = rng.uniform(0, 1, (2, 4)).astype(np.float32)
        _, reward, *_ = batched.step(action)
        assert reward.shape == (2, 4)
        for k, env in enumerate(singles):
            np.testing.assert_array_equal(reward[k], env.step(action[k])[1])


def test_autoreset_next_step_and_reset_mask():
    """The step after an episode end resets that instance (reward 0, action ignored); ``reset_mask`` resets some."""
    env = gym.make_vec("joulegym/ETF-v0", num_envs=2, vectorization_mode=BATCHED, horizon=2)
    assert env.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
    obs0, _ = env.reset(seed=1)
    action = np.full((2, 4), 0.5, dtype=np.float32)
    env.step(action)
    _, _, _, truncated, info = env.step(action)
    assert truncated.all() and info["_metrics"].all()
    junk = np.full((2, 4), np.nan)  # ignored: both instances are being reset
    obs, reward, terminated, truncated, info = env.step(junk)
    assert not (terminated | truncated).any() and (reward == 0).all() and "metrics" not in info
    assert obs.shape == obs0.shape and (obs[:, -5] == 0).all()  # t/H back to 0
    env.step(action)
    obs, _ = env.reset(options={"reset_mask": np.array([True, False])})
    assert obs[0, -5] == 0 and obs[1, -5] == 0.5


def test_bad_input_names_the_field():
    with pytest.raises(ValueError, match="num_envs"):
        ETFVectorEnv(num_envs=0)
    with pytest.raises(ValueError, match="info_level"):
        gym.make_vec("joulegym/ETF-v0", num_envs=2, vectorization_mode=BATCHED, info_level="full")
    with pytest.raises(ValueError, match="phi"):
        gym.make_vec("joulegym/ETF-v0", num_envs=2, vectorization_mode=BATCHED, phi=2.0)
    env = gym.make_vec("joulegym/ETF-v0", num_envs=2, vectorization_mode=BATCHED)
    with pytest.raises(gym.error.ResetNeeded):
        env.step(np.zeros((2, 4)))
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions\[1\]"):
        env.step(np.array([[0.5] * 4, [0.5, 2.0, 0.5, 0.5]]))
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(4))
    knob = gym.make_vec("joulegym/ETFPhi-v0", num_envs=2, vectorization_mode=BATCHED)
    knob.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions\[0\]"):
        knob.step(np.array([11, 0]))
    with pytest.raises(ValueError, match=r"actions\[1\]"):
        knob.step(np.array([1.0, 0.5]))


def reference_largest_remainder(quotas: list[float], total: int, caps: list[int]) -> list[int]:
    """The single env's list code before the split mapping was written once (a frozen oracle)."""
    n = len(quotas)
    out = [0] * n
    live = [q if c > 0 else 0.0 for q, c in zip(quotas, caps)]
    left = total
    while left > 0:
        mass = sum(live)
        if mass <= 0.0:
            live = [1.0 if o < c else 0.0 for o, c in zip(out, caps)]
            mass = sum(live)
            if mass <= 0.0:
                break
        scale = left / mass
        if scale > 1e300:
            top = max(live)
            live = [q / top for q in live]
            scale = left / sum(live)
        share = [q * scale for q in live]
        units = [int(x + 1e-9) for x in share]
        rest = left - sum(units)
        if rest > 0:
            remainders = [f - x for f, x in zip(units, share)]
            for i in sorted(range(n), key=remainders.__getitem__)[:rest]:
                units[i] += 1
        elif rest < 0:
            for _, i in sorted(zip([x - f for f, x in zip(units, share)], range(n))):
                if rest == 0:
                    break
                if units[i] > 0:
                    units[i] -= 1
                    rest += 1
        capped = False
        for i in range(n):
            give = units[i]
            if give:
                room = caps[i] - out[i]
                if give >= room:
                    give = room
                    live[i] = 0.0
                    capped = True
                out[i] += give
                left -= give
        if not capped:
            break
    return out


def test_split_units_are_the_same_for_one_instance_and_for_rows():
    """The split mapping is written once (joulegym.envs.etf.split): on rows of a batch every instance gets the units
    and the repaired flag of one instance, and both equal the single env's former list code, corner cases included
    (all-zero shares, shares on slots without room, caps that overflow, subnormal shares that renormalise, exact
    ties)."""
    rng = np.random.default_rng(7)
    T = 40
    for trial in range(400):
        m = int(rng.integers(1, 7))
        room = rng.integers(0, 25, (8, m))
        room[rng.random((8, m)) < 0.2] = 0
        floor = np.minimum(rng.integers(0, 8, (8, m)), T // (2 * m))
        shares = rng.random((8, m))
        shares[rng.random((8, m)) < 0.3] = 0.0
        if trial % 5 == 0:
            shares[0] = 0.0
        if trial % 7 == 0:
            shares[1] = 5e-324  # subnormal: the renormalising branch
        if trial % 11 == 0:
            shares[2] = np.round(shares[2], 1)  # exact ties
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            units, repaired = split_units(ROWS, shares, floor, room, room_terms(ROWS, floor, room, T))
        for r in range(8):
            one_floor, one_room = floor[r].tolist(), room[r].tolist()
            one = split_units(ONE, shares[r].tolist(), one_floor, one_room, room_terms(ONE, one_floor, one_room, T))
            kept = [a if c > 0 else 0.0 for a, c in zip(shares[r].tolist(), room[r].tolist(), strict=True)]
            want_repaired = any(a > 0.0 and c <= 0 for a, c in zip(shares[r], room[r], strict=True))
            left = T - int(floor[r].sum())
            want = floor[r].tolist()
            if left > 0 and room[r].any():
                if sum(kept) <= 0.0:
                    want_repaired = True
                    kept = [1.0 if c > 0 else 0.0 for c in room[r].tolist()]
                extra = reference_largest_remainder(kept, left, room[r].tolist())
                want = [u + e for u, e in zip(want, extra, strict=True)]
            assert units[r].tolist() == one[0] == want, (shares[r], floor[r], room[r])
            assert bool(repaired[r]) == one[1] == want_repaired


def test_epoch_functions_give_the_same_bits_for_one_instance_and_for_a_batch():
    """``joulegym.envs.etf.epoch`` is written once: over a batch (one array per slot) every instance gets the floats
    the single env's scalar lanes give it (per-app totals, F_T, F_E, features 6-8, ETF objective), free slots and
    instances with no active slot included."""
    from joulegym.envs.etf.epoch import SCALAR, ArrayOps, epoch_fairness, etf_objective, run_epoch

    rng = np.random.default_rng(3)
    n, m, apps, T = 12, 5, 7, 40
    active = rng.random((n, m)) < 0.6
    active[0] = False  # an instance with no app
    units = np.where(active, rng.integers(0, 15, (n, m)), 0)
    power, service, weight = rng.uniform(1, 9, (n, m)), rng.uniform(0.01, 0.2, (n, m)), rng.uniform(0.5, 3, (n, m))
    demand = np.where(rng.random((n, m)) < 0.5, np.inf, rng.integers(1, 30, (n, m)).astype(float))
    slot_app = np.where(active, rng.permuted(np.tile(np.arange(m), (n, 1)), axis=1), -1)
    slot_energy, dynamic = rng.uniform(0, 5, (n, m)), rng.uniform(0, 1, (3, n, m))
    ef_level = np.where(rng.random(n) < 0.2, 0.0, rng.uniform(0.5, 3, n))
    totals = [np.zeros((n, apps)), np.zeros((n, apps)), np.zeros((n, apps)), np.zeros((n, apps), dtype=np.int64)]
    ops = ArrayOps(np.arange(n))
    lanes = ops.lanes(list(active.T))
    _, energy, _ = run_epoch(ops, list(units.T), list(power.T), list(service.T), list(slot_app.T), 0.025, totals)
    se, dyn = list(slot_energy.T), [list(d.T) for d in dynamic]
    f_t, f_e = epoch_fairness(ops, lanes, list(units.T), energy, list(weight.T), se, dyn, T)
    objective = etf_objective(ops, lanes, list(units.T), list(power.T), list(weight.T), list(demand.T), T, ef_level)
    for r in range(n):
        one = [[0.0] * apps, [0.0] * apps, [0.0] * apps, [0] * apps]
        lanes_r = SCALAR.lanes(active[r].tolist())
        _, energy_r, _ = run_epoch(SCALAR, units[r].tolist(), power[r].tolist(), service[r].tolist(),
                                   slot_app[r].tolist(), 0.025, one)
        se_r, dyn_r = slot_energy[r].tolist(), [d[r].tolist() for d in dynamic]
        ft_r, fe_r = epoch_fairness(SCALAR, lanes_r, units[r].tolist(), energy_r, weight[r].tolist(), se_r, dyn_r, T)
        obj_r = etf_objective(SCALAR, lanes_r, units[r].tolist(), power[r].tolist(), weight[r].tolist(),
                              demand[r].tolist(), T, float(ef_level[r]))
        assert [t[r].tolist() for t in totals] == one
        assert (f_t[r], f_e[r], objective[r]) == (ft_r, fe_r, obj_r)
        assert np.stack(se)[:, r].tolist() == se_r and [np.stack(d)[:, r].tolist() for d in dyn] == dyn_r
    assert (f_t[0], f_e[0], objective[0]) == (1.0, 1.0, 1.0)  # nothing ran: fair, objective met
