"""Trajectory hashes: proof that a speed-up keeps every trajectory and metric bit-identical.

For a few ids per family this plays short reference episodes (masked random actions from a fixed seed,
and the family's reference policy) and hashes, step by step, the observation bytes, the reward (exact float
bits), ``terminated``, ``truncated`` and ``info["metrics"]`` when present, and at the end of a capped
episode ``env.unwrapped.metrics()``. Infos other than ``metrics`` are not hashed: they are diagnostics
whose layout may change (issue 14: lean infos); what an agent sees and what the paper reports may not.

The hashes live in ``tests/data/trajectory_hashes.json``, one entry per family, so one family's deliberate
dynamics change is re-recorded without touching the others; ``tests/test_trajectory_hashes.py`` compares.

Usage (from the repository root)::

    python benchmarks/trajectory_hashes.py                      # compare every stored family; exit 1 on a change
    python benchmarks/trajectory_hashes.py --update             # re-record every family in CASES
    python benchmarks/trajectory_hashes.py --update --family powerflow   # re-record one family
"""

from __future__ import annotations

import argparse
import hashlib
import json
import struct
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
HASH_FILE = ROOT / "tests" / "data" / "trajectory_hashes.json"
SEEDS = (0, 1)
MAX_STEPS = 25  # short episodes: enough to cover arrivals, departures and repairs, cheap enough for a test

# family -> (env id, gym.make kwargs) cases. EMRF is left out by default: its helper keeps its own hashes
# (``--family emrf`` records it here too). "core-toy" is the core template on the toy family of tests/core.
CASES: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "etf": [
        ("joulegym/ETF-v0", {}),
        ("joulegym/ETFPhi-v0", {}),
        ("joulegym/ETFDVFS-v0", {}),
        ("joulegym/ETF-random-mix-v0", {}),
        ("joulegym/ETF-open-loop-v0", {}),
        ("joulegym/ETFPhi-random-mix-v0", {}),
        ("joulegym/ETFPhi-tx2-fig9-dynamic-v0", {}),
        ("joulegym/ETFDVFS-tx2-fig10-incentive-v0", {}),
        ("joulegym/ETF-toy-fig3-v0", {}),
        ("joulegym/ETF-v0", {"reward_window": "cumulative", "reward": "scalarized", "vector_reward": True}),
    ],
    "powerflow": [
        ("joulegym/PowerFlow-tiny-v0", {}),
    ],
    "emrf": [
        ("joulegym/EMRF-v0", {}),
        ("joulegym/EMRFKnob-v0", {}),
    ],
    "core-toy": [
        ("joulegym/ToyDVFS-v0", {}),
    ],
}
DEFAULT_FAMILIES = ("etf", "powerflow", "core-toy")


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


def _toy_family(register: bool) -> None:
    """Register (or remove again) the toy family of ``tests/core`` (the core template alone)."""
    from joulegym.core.family import load_policies, register_family, unregister_family
    from joulegym.core.policy import _REGISTRY, forget_family

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.core import toy_family

    if register:
        register_family(toy_family.FAMILY)
        load_policies("toy")
        if ("toy", "best-level") not in _REGISTRY:  # its module was imported before and forgotten since
            toy_family.register_policies()
    else:
        unregister_family("toy")
        forget_family("toy")


def policies_for(env: gym.Env) -> list[str]:
    """``random`` and the family's reference policy (or the first applicable one) for ``env``."""
    from joulegym import baselines
    from joulegym.core.family import get_family

    base = env.unwrapped
    names = [n for n in baselines.applicable(env) if n != "random"]
    preferred = get_family(base.family).reference_policy
    reference = preferred if preferred in names else (names[0] if names else None)
    return ["random"] + ([reference] if reference else [])


def episode_hash(env_id: str, kwargs: dict[str, Any], policy_name: str, seed: int,
                 max_steps: int = MAX_STEPS) -> str:
    """The hash of one capped episode of ``policy_name`` on ``gym.make(env_id, **kwargs)`` from ``seed``."""
    from joulegym import baselines

    env = gym.make(env_id, **kwargs)
    policy = baselines.make(policy_name, family=env.unwrapped.family)
    h = hashlib.sha256()
    obs, info = env.reset(seed=seed)
    policy.reset(env, seed=seed)
    _update(h, obs)
    steps = 0
    terminated = truncated = False
    while not (terminated or truncated) and steps < max_steps:
        obs, reward, terminated, truncated, info = env.step(policy.act(obs, info))
        _update(h, (obs, reward, bool(terminated), bool(truncated), info.get("metrics")))
        steps += 1
    _update(h, env.unwrapped.metrics())
    env.close()
    return h.hexdigest()[:32]


def family_hashes(family: str) -> dict[str, str]:
    """``{"<id> <kwargs> <policy> seed=<s>": hash}`` for every case of ``family``."""
    import joulegym  # noqa: F401  (registers the ids)

    toy = family == "core-toy" and "joulegym/ToyDVFS-v0" not in gym.registry
    if toy:
        _toy_family(register=True)
    try:
        out: dict[str, str] = {}
        for env_id, kwargs in CASES[family]:
            probe = gym.make(env_id, **kwargs)
            names = policies_for(probe)
            probe.close()
            for name in names:
                for seed in SEEDS:
                    key = f"{env_id} {json.dumps(kwargs, sort_keys=True)} {name} seed={seed}"
                    out[key] = episode_hash(env_id, kwargs, name, seed)
        return out
    finally:
        if toy:
            _toy_family(register=False)


def load() -> dict[str, dict[str, str]]:
    return json.loads(HASH_FILE.read_text()) if HASH_FILE.exists() else {}


def compare(family: str, stored: Mapping[str, str]) -> list[str]:
    """The cases of ``family`` whose hash differs from ``stored`` (or are missing on either side)."""
    now = family_hashes(family)
    return sorted(k for k in set(now) | set(stored) if now.get(k) != stored.get(k))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update", action="store_true", help="re-record (default: compare with the stored file)")
    parser.add_argument("--family", action="append", choices=sorted(CASES),
                        help="only this family (repeatable); default: the stored families (update: "
                             f"{', '.join(DEFAULT_FAMILIES)})")
    args = parser.parse_args(argv)
    stored = load()
    if args.update:
        chosen = args.family or sorted(set(DEFAULT_FAMILIES) | set(stored))
        for family in chosen:
            stored[family] = family_hashes(family)
            print(f"{family}: recorded {len(stored[family])} episodes")
        HASH_FILE.parent.mkdir(parents=True, exist_ok=True)
        HASH_FILE.write_text(json.dumps(dict(sorted(stored.items())), indent=1, sort_keys=True) + "\n")
        return 0
    failed = False
    for family in args.family or sorted(stored):
        changed = compare(family, stored.get(family, {}))
        print(f"{family}: {'OK' if not changed else f'{len(changed)} changed'}")
        for key in changed:
            print(f"  {key}")
        failed |= bool(changed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
