"""Trajectory pins: proof that a speed-up keeps every trajectory and metric, on any machine.

Each family's descriptor names a few env ids in ``FamilyDescriptor.trajectory_pins``. For each id this plays
short reference episodes (the ``random`` policy and the family's reference policy, seeds 0 and 1, at most
:data:`MAX_STEPS` steps) and records a summary of each episode in ``tests/data/trajectory_pins/<family>.json``:

- ``steps``, the final ``terminated`` and ``truncated`` (compared exactly; every earlier step has both False);
- ``rewards``: every step's reward (a list per step for a vector reward);
- ``obs``: per observation (the reset's and every step's), three weighted sums of its flattened values,
  ``[sum w_i |x_i|, sum w_i x_i, sum (-1)^i w_i x_i]`` with fixed weights ``w_i`` in [1, 2) (:func:`obs_summary`),
  so a changed, rescaled, swapped or sign-flipped feature moves them;
- ``info_metrics``: ``[step, info["metrics"]]`` for the steps whose info has them; ``metrics``:
  ``env.unwrapped.metrics()`` at the end.

Precision (:data:`PRECISION`). A float ``a`` matches the stored ``b`` when ``|a - b| <= atol + rtol * max(|a|,
|b|)`` with ``rtol = 1e-9`` and ``atol = 1e-12``; integers, booleans, strings and the keys of a mapping match
exactly. An observation's sums match within ``atol + 2 eps * sum w_i |x_i|`` where ``eps`` is the machine epsilon
of the observation's dtype (float32: 1.2e-7): that admits every element moving by one ulp of its own dtype, which
a last-bit difference of the float64 state can cause when it is cast to float32. Why not exact bits: numpy and
OpenBLAS pick SIMD kernels by CPU (AVX-512, AVX2, SSE), whose sums and transcendentals differ in the last bits,
so exact-bit pins fail on another x86-64 host (``.ci/run`` replays the pins with numpy's and OpenBLAS's generic
kernels to keep it so). What still fails: any change of the dynamics above about 1e-9 relative in a reward or a
metric, a different decision (a different trajectory), a changed observation layout. Why tolerance on stored
values rather than hashes of rounded values: a value that sits on a rounding boundary rounds differently on two
machines however coarse the rounding, while a tolerance has no boundary.

Only the listed parts are pinned: other infos are diagnostics whose layout may change (``info_level``); what an
agent sees and what the paper reports may not.

Usage (from the repository root)::

    python benchmarks/trajectory_pins.py                        # compare every pinned family; exit 1 on a change
    python benchmarks/trajectory_pins.py --family qin           # compare one family
    python benchmarks/trajectory_pins.py --update --family qin  # re-record one family after a deliberate change
    python benchmarks/trajectory_pins.py --generic-kernels      # compare in a child process on generic kernels
    python benchmarks/trajectory_pins.py --generic-kernels -- python -m pytest -q tests/emrf  # any command on them

A deliberate dynamics change re-records only its own family's file and says why in the commit and in the
family's version history.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PIN_DIR = ROOT / "tests" / "data" / "trajectory_pins"
SEEDS = (0, 1)
MAX_STEPS = 25  # short episodes: enough to cover arrivals, departures and repairs, cheap enough for a test
PRECISION = {"rtol": 1e-9, "atol": 1e-12, "obs_eps_factor": 2.0}
TOY_FAMILY = "toy"  # the core template's toy family of tests/core, registered only while it is pinned
GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


# --- what the families pin ------------------------------------------------------------------------------------

def pinned_families() -> list[str]:
    """Every registered family whose descriptor names trajectory pins, and the core's toy family."""
    import joulegym  # noqa: F401  (registers the built-in families)
    from joulegym.core.family import families

    return sorted({f.name for f in families() if f.trajectory_pins} | {TOY_FAMILY})


def cases(family: str) -> list[tuple[str, dict[str, Any]]]:
    """``family``'s pinned ``(env id, gym.make kwargs)`` pairs, from its descriptor."""
    from joulegym.core.family import get_family

    with _family_registered(family):
        pins = get_family(family).trajectory_pins
    return [(pin, {}) if isinstance(pin, str) else (pin[0], dict(pin[1])) for pin in pins]


class _family_registered:
    """Context: the toy family of ``tests/core`` registered (and removed again) when ``family`` is it."""

    def __init__(self, family: str) -> None:
        self.toy = family == TOY_FAMILY and "joulegym/ToyDVFS-v0" not in gym.registry

    def __enter__(self) -> None:
        if self.toy:
            _toy_family(register=True)

    def __exit__(self, *exc: object) -> None:
        if self.toy:
            _toy_family(register=False)


def _toy_family(register: bool) -> None:
    """Register (or remove again) the toy family of ``tests/core`` (the core template alone)."""
    from joulegym.core.family import load_policies, register_family, unregister_family
    from joulegym.core.policy import _REGISTRY, forget_family

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.core import toy_family

    if register:
        register_family(toy_family.FAMILY)
        load_policies(TOY_FAMILY)
        if (TOY_FAMILY, "best-level") not in _REGISTRY:  # its module was imported before and forgotten since
            toy_family.register_policies()
    else:
        unregister_family(TOY_FAMILY)
        forget_family(TOY_FAMILY)
        sys.modules.pop(toy_family.FAMILY.policies, None)  # so the next registration's import registers them again


def policies_for(env: gym.Env) -> list[str]:
    """``random`` and the family's reference policy (or the first applicable one) for ``env``."""
    from joulegym import baselines
    from joulegym.core.family import get_family

    names = [n for n in baselines.applicable(env) if n != "random"]
    preferred = get_family(env.unwrapped.family).reference_policy
    reference = preferred if preferred in names else (names[0] if names else None)
    return ["random"] + ([reference] if reference else [])


# --- one episode's summary ------------------------------------------------------------------------------------

def obs_summary(obs: Any) -> list[float]:
    """``[sum w_i |x_i|, sum w_i x_i, sum (-1)^i w_i x_i]`` of the flattened observation (module docstring)."""
    x = _flat(obs)
    w = 1.0 + (np.arange(x.size) * GOLDEN) % 1.0
    signs = np.where(np.arange(x.size) % 2 == 0, 1.0, -1.0)
    return [float(np.sum(w * np.abs(x))), float(np.sum(w * x)), float(np.sum(signs * w * x))]


def _flat(obs: Any) -> np.ndarray:
    if isinstance(obs, Mapping):
        return np.concatenate([_flat(obs[k]) for k in sorted(obs)]) if obs else np.zeros(0)
    if isinstance(obs, tuple | list):
        return np.concatenate([_flat(o) for o in obs]) if obs else np.zeros(0)
    return np.asarray(obs, dtype=np.float64).ravel()


def _obs_dtype(obs: Any) -> str:
    """The coarsest float dtype in ``obs`` (its rounding decides the observation tolerance)."""
    leaves = obs.values() if isinstance(obs, Mapping) else obs if isinstance(obs, tuple | list) else [obs]
    floats = [a.dtype for a in map(np.asarray, leaves) if np.issubdtype(a.dtype, np.floating)]
    return str(max(floats, key=lambda d: np.finfo(d).eps)) if floats else "float64"


def plain(value: Any) -> Any:
    """``value`` as JSON data: arrays and numpy scalars to lists and Python numbers, keys to strings."""
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()] if value.ndim else plain(value.item())
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"cannot pin {type(value).__name__} {value!r}")


def episode_pin(env_id: str, kwargs: Mapping[str, Any], policy_name: str, seed: int,
                max_steps: int = MAX_STEPS) -> dict[str, Any]:
    """The summary of one capped episode of ``policy_name`` on ``gym.make(env_id, **kwargs)`` from ``seed``."""
    from joulegym import baselines

    env = gym.make(env_id, **kwargs)
    policy = baselines.make(policy_name, family=env.unwrapped.family)
    obs, info = env.reset(seed=seed)
    policy.reset(env, seed=seed)
    pin: dict[str, Any] = {"obs_dtype": _obs_dtype(obs), "obs": [obs_summary(obs)], "rewards": [],
                           "info_metrics": []}
    steps = 0
    terminated = truncated = False
    while not (terminated or truncated) and steps < max_steps:
        obs, reward, terminated, truncated, info = env.step(policy.act(obs, info))
        steps += 1
        pin["obs"].append(obs_summary(obs))
        pin["rewards"].append(plain(reward))
        if info.get("metrics") is not None:
            pin["info_metrics"].append([steps, plain(info["metrics"])])
    pin.update(steps=steps, terminated=bool(terminated), truncated=bool(truncated),
               metrics=plain(env.unwrapped.metrics()))
    env.close()
    return pin


def case_key(env_id: str, kwargs: Mapping[str, Any], policy_name: str, seed: int) -> str:
    return f"{env_id} {json.dumps(dict(kwargs), sort_keys=True)} {policy_name} seed={seed}"


def family_pins(family: str) -> dict[str, dict[str, Any]]:
    """``{case key: episode summary}`` for every pinned id of ``family``, each policy and seed."""
    out: dict[str, dict[str, Any]] = {}
    with _family_registered(family):
        for env_id, kwargs in cases(family):
            probe = gym.make(env_id, **kwargs)
            names = policies_for(probe)
            probe.close()
            for name in names:
                for seed in SEEDS:
                    out[case_key(env_id, kwargs, name, seed)] = episode_pin(env_id, kwargs, name, seed)
    return out


# --- comparison at the stated precision -----------------------------------------------------------------------

def differences(stored: Any, now: Any, path: str = "", rtol: float = PRECISION["rtol"],
                atol: float = PRECISION["atol"]) -> Iterator[str]:
    """Where ``now`` differs from ``stored`` beyond the precision (floats) or at all (everything else)."""
    if isinstance(stored, Mapping) and isinstance(now, Mapping):
        for key in sorted(set(stored) | set(now)):
            if key not in stored or key not in now:
                yield f"{path}.{key}: {'new' if key not in stored else 'gone'}"
            else:
                yield from differences(stored[key], now[key], f"{path}.{key}", rtol, atol)
    elif isinstance(stored, list) and isinstance(now, list):
        if len(stored) != len(now):
            yield f"{path}: length {len(stored)} -> {len(now)}"
        else:
            for i, (a, b) in enumerate(zip(stored, now)):
                yield from differences(a, b, f"{path}[{i}]", rtol, atol)
    elif isinstance(stored, float) or isinstance(now, float):
        if not _close(stored, now, rtol, atol):
            yield f"{path}: {stored!r} -> {now!r}"
    elif type(stored) is not type(now) or stored != now:
        yield f"{path}: {stored!r} -> {now!r}"


def _close(a: Any, b: Any, rtol: float, atol: float, scale: float | None = None) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, int | float) or not isinstance(b, int | float):
        return False
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    ref = max(abs(a), abs(b)) if scale is None else scale
    return abs(a - b) <= atol + rtol * ref


def episode_differences(stored: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """Where episode summary ``now`` differs from ``stored`` (observations at their dtype's precision)."""
    out = list(differences({k: v for k, v in stored.items() if k != "obs"},
                           {k: v for k, v in now.items() if k != "obs"}))
    obs_a, obs_b = stored.get("obs", []), now.get("obs", [])
    if len(obs_a) != len(obs_b):
        return [*out, f".obs: length {len(obs_a)} -> {len(obs_b)}"]
    rtol = PRECISION["obs_eps_factor"] * float(np.finfo(now.get("obs_dtype", "float64")).eps)
    for step, (a, b) in enumerate(zip(obs_a, obs_b)):
        scale = max(abs(a[0]), abs(b[0]))  # sum w_i |x_i| bounds every sum's error
        for i, (x, y) in enumerate(zip(a, b)):
            if not _close(x, y, rtol, PRECISION["atol"], scale):
                out.append(f".obs[{step}][{i}]: {x!r} -> {y!r}")
    return out


def compare(family: str, stored: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """``{case key: its differences}`` for every case of ``family`` that differs from ``stored`` (or is missing
    on either side)."""
    now = family_pins(family)
    changed: dict[str, list[str]] = {}
    for key in sorted(set(now) | set(stored)):
        if key not in stored or key not in now:
            changed[key] = ["not recorded" if key not in stored else "no longer pinned"]
        elif diffs := episode_differences(stored[key], now[key]):
            changed[key] = diffs
    return changed


# --- the files ------------------------------------------------------------------------------------------------

def pin_file(family: str) -> Path:
    return PIN_DIR / f"{family}.json"


def load(family: str) -> dict[str, dict[str, Any]]:
    """``family``'s stored episode summaries (empty when it has no file)."""
    path = pin_file(family)
    return json.loads(path.read_text())["episodes"] if path.exists() else {}


def stored_families() -> list[str]:
    return sorted(p.stem for p in PIN_DIR.glob("*.json"))


def save(family: str, episodes: Mapping[str, Any]) -> Path:
    """Write ``family``'s pins: one line per episode part, so a re-recording diffs readably."""
    header = {"family": family, "precision": PRECISION, "max_steps": MAX_STEPS, "seeds": list(SEEDS),
              "recorded_with": "python benchmarks/trajectory_pins.py --update --family " + family}
    lines = ["{"] + [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in header.items()] + [' "episodes": {']
    for i, (key, pin) in enumerate(sorted(episodes.items())):
        parts = [f"   {json.dumps(k)}: {json.dumps(pin[k])}" for k in sorted(pin)]
        lines.append(f"  {json.dumps(key)}: {{\n" + ",\n".join(parts) + "\n  }" + ("," if i < len(episodes) - 1
                                                                                   else ""))
    lines += [" }", "}"]
    path = pin_file(family)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + "\n"
    json.loads(text)  # never write a file that does not parse
    path.write_text(text)
    return path


# --- the second math-library configuration -------------------------------------------------------------------

def _numpy_simd() -> tuple[list[str], list[str]]:
    """numpy's dispatchable SIMD targets and those it uses on this CPU (``numpy.show_runtime``'s lists)."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # numpy 1.x
        from numpy.core import _multiarray_umath as umath  # type: ignore[no-redef]
    dispatch = list(umath.__cpu_dispatch__)
    return dispatch, [f for f in dispatch if umath.__cpu_features__.get(f)]


def _openblas_core() -> str:
    """The kernel set numpy's bundled OpenBLAS picked (``"unknown"`` where the library does not say)."""
    for lib_path in sorted(Path(np.__file__).parent.parent.glob("numpy.libs/*openblas*")):
        lib = ctypes.CDLL(str(lib_path))
        for name in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename64_",
                     "openblas_get_corename"):
            getter = getattr(lib, name, None)
            if getter is not None:
                getter.restype = ctypes.c_char_p
                return getter().decode()
    return "unknown"


def math_kernels() -> str:
    _, used = _numpy_simd()
    return f"numpy SIMD targets in use: {' '.join(used) or 'none (baseline only)'}; OpenBLAS core: {_openblas_core()}"


def generic_kernel_env() -> dict[str, str]:
    """Environment variables that make numpy and OpenBLAS use their generic kernels: numpy's runtime dispatch
    off for every dispatchable target (``NPY_DISABLE_CPU_FEATURES``, numpy's docs "CPU build options"), OpenBLAS's
    SSE3-era kernels (``OPENBLAS_CORETYPE=Prescott``) on one thread."""
    dispatch, _ = _numpy_simd()
    return {"NPY_DISABLE_CPU_FEATURES": " ".join(dispatch), "OPENBLAS_CORETYPE": "Prescott",
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def run_on_generic_kernels(families: list[str] | None, command: list[str] | None = None) -> int:
    """Run ``command`` (default: this script's comparison, which refuses to run on dispatched SIMD kernels) in a
    child process on generic kernels; its exit code."""
    print(f"this process: {math_kernels()}", flush=True)
    argv = command or [sys.executable, str(Path(__file__).resolve()), "--expect-generic-kernels",
                       *(f"--family={family}" for family in families or ())]
    return subprocess.run(argv, env={**os.environ, **generic_kernel_env()}, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--update", action="store_true", help="re-record (default: compare with the stored pins)")
    parser.add_argument("--family", action="append", help="only this family (repeatable); default: every pinned "
                                                          "family")
    parser.add_argument("--generic-kernels", action="store_true",
                        help="compare in a child process with numpy's and OpenBLAS's generic kernels")
    parser.add_argument("--expect-generic-kernels", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="with --generic-kernels: after --, a command to run on them instead of the comparison")
    args = parser.parse_args(argv)
    known = pinned_families()
    unknown = sorted(set(args.family or ()) - set(known))
    if unknown:
        parser.error(f"--family {', '.join(unknown)}: not a pinned family; pinned: {', '.join(known)}")
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if command and not args.generic_kernels:
        parser.error(f"unexpected arguments {command}: a command runs only with --generic-kernels -- COMMAND")
    if args.generic_kernels:
        if args.update:
            parser.error("--generic-kernels compares; record with --update alone")
        return run_on_generic_kernels(args.family, command)
    if args.expect_generic_kernels:
        print(f"child process: {math_kernels()}")
        if _numpy_simd()[1]:
            print("numpy still dispatches SIMD kernels: NPY_DISABLE_CPU_FEATURES had no effect", file=sys.stderr)
            return 2
    chosen = args.family or known
    if args.update:
        for family in chosen:
            episodes = family_pins(family)
            print(f"{family}: recorded {len(episodes)} episodes in {save(family, episodes).relative_to(ROOT)}")
        return 0
    failed = False
    for family in chosen:
        changed = compare(family, load(family))
        print(f"{family}: {'OK' if not changed else f'{len(changed)} changed'}")
        for key, diffs in changed.items():
            print(f"  {key}: {'; '.join(diffs[:5])}{' ...' if len(diffs) > 5 else ''}")
        failed |= bool(changed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
