"""Power repair under non-packed placement (docs/families/powerflow.md §10): the budget is an invariant."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import joulegym  # noqa: F401  (registers the ids)
from joulegym.envs.powerflow import PowerFlowSim, SimConfig
from joulegym.envs.powerflow.cluster import ClusterSpec
from joulegym.envs.powerflow.profiles import Profiles
from joulegym.workloads import dl_models as dm
from joulegym.workloads.dl_jobs import DLJobs


def _spread_heavier_config() -> tuple[str, int, float, float]:
    """A (model, BS) whose 4-GPU job draws more power spread 2 + 2 over two nodes than packed on one, at f_max:
    the case the former packed pricing under-estimated. Returns (model, bs, packed W, spread W)."""
    prof = Profiles("v100", 8, 0.03, "oracle")
    best = None
    for model, spec in dm.CATALOG.items():
        for bs in spec.bs_pool:
            if bs < 4:
                continue
            t, e = prof.true(model, bs, 4)
            ts, es = prof.true(model, bs, 4, 2, True)
            packed, spread = float(e[-1] / t[-1]), float(es[-1] / ts[-1])
            if best is None or spread - packed > best[3] - best[2]:
                best = (model, bs, packed, spread)
    return best


def _sim(p_max_w: float) -> PowerFlowSim:
    model, bs, _, _ = _spread_heavier_config()
    jobs = DLJobs(job_id=np.array(["a", "b", "c"]), submit_s=np.zeros(3),
                  model=np.array(["resnet18", "resnet18", model]), batch_size=np.array([64, 64, bs]),
                  n_req=np.array([6, 6, 4]), iterations=np.full(3, 1e9))
    cfg = SimConfig(eta=1.0, predictor="oracle", profiling=False, overhead="none", placement="affinity",
                    power_constraint="repair", p_max_w=p_max_w, record_timeline=False)
    sim = PowerFlowSim(jobs, ClusterSpec(2, 8), cfg)
    assert sim.advance()
    return sim


def test_repair_prices_jobs_as_affinity_places_them():
    """Two 6-GPU jobs fill both nodes' first six GPUs, so affinity spreads the 4-GPU job 2 + 2 over the two nodes.
    The budget lies between the packed and the spread price of that job: the old repair priced it packed, let it
    run at f_max and held more power than the budget; now it is priced as placed and the budget holds."""
    _, _, packed, spread = _spread_heavier_config()
    # the case needs a configuration that draws more power spread than packed; if a model change removes every
    # such one, this test must be rethought rather than silently skipped
    assert spread > packed * (1 + 2e-3), (packed, spread)
    fmax = dm.hardware("v100").freqs_ghz.size - 1
    probe = _sim(1000.0)
    probe.apply({0: (6, fmax), 1: (6, fmax)})
    base_w = probe._job_power_total
    limit = base_w + (packed + spread) / 2  # between the two prices of the third job
    sim = _sim(limit / 16)  # eta = 1: PL = G * p_max
    sim.apply({0: (6, fmax), 1: (6, fmax)})
    sim.apply({0: (6, fmax), 1: (6, fmax), 2: (4, fmax)})
    assert sim.gpus[2] and len({g // 8 for g in sim.gpus[2]}) == 2  # affinity did spread it
    assert sim.repaired  # the repair lowered frequencies
    assert sim._job_power_total <= sim.power_limit * (1 + 1e-3)
    sim.advance()  # time passes under the repaired allocation: the simulator's invariant check runs
    assert sim.metrics()["max_job_power_w"] <= sim.power_limit * (1 + 1e-3)


def test_invariant_raises_when_held_power_breaks_the_budget():
    """The simulator asserts the budget under repair: a state above it (forced here) raises while time passes."""
    sim = _sim(200.0)
    sim.apply({0: (1, 0)})
    sim._job_power_total = sim.power_limit * 1.01  # a corrupted state: what a pricing bug would leave
    with pytest.raises(RuntimeError, match="power budget broken"):
        sim._integrate(sim.now + 1.0)


def test_small100_affinity_random_actions_hold_the_budget():
    """A fuzz finding's setting, short: random actions on PowerFlow-small100 with eta 0.3 and affinity placement."""
    env = gym.make("joulegym/PowerFlow-small100-v0", eta=0.3, placement="affinity")
    env.reset(seed=4)
    env.action_space.seed(4)
    sim = env.unwrapped.sim
    for _ in range(300):
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            break
    assert sim.metrics()["max_job_power_w"] <= sim.power_limit * (1 + 1e-3)


def test_negative_power_weight_is_rejected():
    """Regression: a negative weight on the power penalty would reward breaking the budget."""
    with pytest.raises(ValueError, match="power_violation"):
        gym.make("joulegym/PowerFlow-tiny-v0", power_constraint="penalty", reward_weights={"power_violation": -1.0})
    with pytest.raises(ValueError, match="lambda_p"):
        gym.make("joulegym/PowerFlow-tiny-v0", lambda_p=-1.0)


def test_micro_masked_out_action_is_flagged_repaired():
    """Regression: a masked-out micro action is a no-op and sets info["repaired"]."""
    env = gym.make("joulegym/PowerFlow-tiny-v0", action_mode="micro")
    _, info = env.reset(seed=0)
    mask = np.asarray(info["action_mask"], dtype=bool)
    bad = int(np.flatnonzero(~mask)[0])
    _, reward, _, _, info = env.step(bad)
    assert info["repaired"] is True and reward == 0.0
    good = int(np.flatnonzero(mask)[0])
    _, _, _, _, info = env.step(good)
    assert info["repaired"] is False
