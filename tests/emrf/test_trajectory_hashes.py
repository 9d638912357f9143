"""Reference trajectories of the EMRF envs, pinned by hash (every speed-up keeps trajectories and metrics
bit-identical).

Each case runs whole episodes (random actions from ``action_space.seed(seed)``, or the ``emrf`` reference policy)
and hashes, step by step, the observation bytes, the reward, the termination flags, the per-step info values
(planned and delivered allocation, utilisation, Δ, δ, SI and envy counts, η) and the episode-end metrics.
The hashes in ``data/emrf_trajectory_hashes.json`` were recorded before the speed work on the EMRF envs (lean info,
vectorised envy check, batched vector entry point); regenerate them only for a deliberate change of dynamics
(``python -m tests.emrf.test_trajectory_hashes --write``) and say so in the version history. The hashes are of
exact float bits (:func:`_update`), so they hold only where numpy and OpenBLAS compute these episodes bit for bit
alike (``.ci/run`` replays them on generic kernels); the family's precision-stated pins are
``tests/data/trajectory_pins/emrf.json`` (``benchmarks/trajectory_pins.py``).
"""

from __future__ import annotations

import hashlib
import json
import struct
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import joulegym  # noqa: F401  (registers the ids)
from tests.emrf.helpers import policy

DATA = Path(__file__).parent / "data" / "emrf_trajectory_hashes.json"
INFO_KEYS = ("allocation", "delivered", "utilisation", "U_cpu", "U_gpu", "soft_fairness", "delta_bound",
             "si_violations", "ef_violations", "eta", "eta_target", "arrivals_joined", "arrivals_waited",
             "arrivals_readmitted", "reward_parts")
# (name, id, config overrides, actor, seeds); the actor is "random" or a reference policy name
CASES: list[tuple[str, str, dict[str, Any], str, tuple[int, ...]]] = [
    ("weights-random", "joulegym/EMRF-v0", {}, "random", (0, 1)),
    ("weights-emrf", "joulegym/EMRF-v0", {}, "emrf", (0, 1)),
    ("residual-random", "joulegym/EMRFResidual-v0", {}, "random", (2,)),
    ("residual-emrf", "joulegym/EMRFResidual-v0", {}, "emrf", (2,)),
    ("knob-random", "joulegym/EMRFKnob-v0", {}, "random", (3,)),
    ("knob-emrf", "joulegym/EMRFKnob-v0", {}, "emrf", (3,)),
    ("knob-discrete-random", "joulegym/EMRFKnobDiscrete-v0", {}, "random", (4,)),
    ("dynamic-random", "joulegym/EMRF-apu-dynamic-v0", {}, "random", (5,)),
    ("dynamic-emrf", "joulegym/EMRF-apu-dynamic-v0", {}, "emrf", (5,)),
    ("phases-noise-random", "joulegym/EMRF-apu-phases-v0", {"xi_noise": 0.02}, "random", (6,)),
    ("m1-knob-random", "joulegym/EMRFKnob-apu-m1-v0", {}, "random", (7,)),
    ("slices-random", "joulegym/EMRF-v0", {"task_gflop": 20.0, "horizon": 40}, "random", (8,)),
    ("32-users-random", "joulegym/EMRF-v0",
     {"max_users": 32, "random": {"n_users": [16, 32], "apps": ["GE", "KM", "HW", "MY", "KNN", "BT", "CFD", "LUD"],
                                  "weights": [1, 2, 3, 4], "xi_jitter": 0.03, "job_sigma": 0.5,
                                  "arrival_rate": 0.03, "initial_jobs": 1},
      "horizon": 60}, "random", (9,)),
]


def _update(h: Any, value: Any) -> None:
    """Feed ``value`` into hash ``h`` canonically (exact float bits, dict keys sorted, arrays with dtype/shape)."""
    if isinstance(value, np.ndarray):
        h.update(f"a{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, bool | np.bool_):
        h.update(b"T" if value else b"F")
    elif isinstance(value, int | np.integer):
        h.update(f"i{int(value)};".encode())
    elif isinstance(value, float | np.floating):
        h.update(b"f" + struct.pack("<d", float(value)))
    elif isinstance(value, str):
        h.update(f"s{len(value)}:{value}".encode())
    elif value is None:
        h.update(b"N")
    elif isinstance(value, Mapping):
        h.update(f"d{len(value)}".encode())
        for key in sorted(value, key=str):
            _update(h, str(key))
            _update(h, value[key])
    elif isinstance(value, list | tuple):
        h.update(f"l{len(value)}".encode())
        for item in value:
            _update(h, item)
    else:
        raise TypeError(f"cannot hash {type(value).__name__} {value!r}")


def trajectory_hash(env_id: str, overrides: dict[str, Any], actor: str, seed: int) -> str:
    """sha256 of one whole episode (module docstring)."""
    env = gym.make(env_id, **overrides)
    h = hashlib.sha256()
    obs, info = env.reset(seed=seed)
    env.action_space.seed(seed)
    agent = None if actor == "random" else policy(actor)
    if agent is not None:
        agent.reset(env, seed=seed)
    _update(h, obs)
    _update(h, {k: info[k] for k in INFO_KEYS if k in info and k != "reward_parts"})
    done = False
    while not done:
        action = env.action_space.sample() if agent is None else agent.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        _update(h, obs)
        _update(h, reward)
        _update(h, (terminated, truncated))
        _update(h, {k: info[k] for k in INFO_KEYS})
        done = terminated or truncated
    _update(h, info["metrics"])
    env.close()
    return h.hexdigest()


def all_hashes() -> dict[str, str]:
    return {f"{name}/seed{seed}": trajectory_hash(env_id, overrides, actor, seed)
            for name, env_id, overrides, actor, seeds in CASES for seed in seeds}


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_trajectories_are_bit_identical_to_the_recorded_ones(case):
    stored = json.loads(DATA.read_text())
    name, env_id, overrides, actor, seeds = case
    for seed in seeds:
        assert trajectory_hash(env_id, overrides, actor, seed) == stored[f"{name}/seed{seed}"], (name, seed)


if __name__ == "__main__":  # python -m tests.emrf.test_trajectory_hashes --write
    hashes = all_hashes()
    if "--write" in sys.argv:
        DATA.parent.mkdir(exist_ok=True)
        DATA.write_text(json.dumps(hashes, indent=1, sort_keys=True) + "\n")
    print(json.dumps(hashes, indent=1, sort_keys=True))
