"""SB3 / sb3-contrib algorithms by name, their hyperparameter files, and model construction.

Hyperparameters live in ``hyperparams/<algo>.yml`` in the rl-zoo3 format: a mapping from env id to
keyword arguments of the algorithm, with ``default`` for ids not listed. ``policy`` names the SB3
policy class (``MlpPolicy``); everything else goes to the algorithm's constructor. A user file
given to ``train.py --hyperparams`` overrides the packaged one key by key. ``learning_rate``, ``clip_range``
and ``clip_range_vf`` may be rl-zoo3 linear schedules (``lin_1e-3``: the value falls linearly to 0).

==================  =====================  =====================================================
name                class                  action spaces
==================  =====================  =====================================================
``ppo``             ``stable_baselines3``  Box, Discrete, MultiDiscrete (the default algorithm)
``a2c``             ``stable_baselines3``  Box, Discrete, MultiDiscrete
``sac``, ``td3``    ``stable_baselines3``  Box
``dqn``             ``stable_baselines3``  Discrete
``maskable_ppo``    ``sb3_contrib``        Discrete, MultiDiscrete (uses the env's ``action_masks()``)
==================  =====================  =====================================================
"""

from __future__ import annotations

import importlib
import json
import math
import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import gymnasium as gym
import yaml

from joulegym.core.io import read_yaml


@dataclass(frozen=True)
class AlgoSpec:
    name: str
    module: str
    cls: str
    spaces: tuple[type[gym.Space], ...]

    def load_class(self):
        try:
            module = importlib.import_module(self.module)
        except ImportError as err:  # pragma: no cover - depends on the install
            raise ImportError(
                f"algo {self.name!r} needs {self.module.split('.')[0]}: pip install 'joulegym[train]'"
            ) from err
        return getattr(module, self.cls)


_BOX, _DISC, _MULTI = gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete
ALGOS: dict[str, AlgoSpec] = {
    "ppo": AlgoSpec("ppo", "stable_baselines3", "PPO", (_BOX, _DISC, _MULTI)),
    "a2c": AlgoSpec("a2c", "stable_baselines3", "A2C", (_BOX, _DISC, _MULTI)),
    "sac": AlgoSpec("sac", "stable_baselines3", "SAC", (_BOX,)),
    "td3": AlgoSpec("td3", "stable_baselines3", "TD3", (_BOX,)),
    "dqn": AlgoSpec("dqn", "stable_baselines3", "DQN", (_DISC,)),
    "maskable_ppo": AlgoSpec("maskable_ppo", "sb3_contrib", "MaskablePPO", (_DISC, _MULTI)),
}


def algo_spec(name: str) -> AlgoSpec:
    key = name.lower().replace("-", "_")
    if key not in ALGOS:
        raise ValueError(f"algo={name!r} is unknown; allowed: {sorted(ALGOS)}")
    return ALGOS[key]


def check_algo_supports(name: str, action_space: gym.Space) -> None:
    """``ValueError`` if ``name`` cannot act in ``action_space`` (e.g. DQN on a Box)."""
    spec = algo_spec(name)
    if not isinstance(action_space, spec.spaces):
        allowed = sorted(n for n, s in ALGOS.items() if isinstance(action_space, s.spaces))
        raise ValueError(
            f"algo={name!r} does not support {type(action_space).__name__} actions; allowed for this env: {allowed}"
        )


def load_hyperparams(algo: str, env_id: str, override_file: str | Path | None = None) -> dict[str, Any]:
    """The packaged hyperparameters of ``algo`` for ``env_id`` (``default`` if not listed), then overrides."""
    spec = algo_spec(algo)
    text = resources.files("joulegym.agents").joinpath("hyperparams", f"{spec.name}.yml").read_text()
    params = _pick(yaml.safe_load(text) or {}, env_id, f"packaged {spec.name}.yml")
    if override_file is not None:
        path = Path(override_file)
        data = read_yaml(path, f"hyperparams file {str(path)!r}") or {}
        if not isinstance(data, dict):
            raise ValueError(f"hyperparams file {str(path)!r} must hold a mapping (env id or 'default' -> kwargs)")
        params.update(_pick(data, env_id, f"hyperparams file {str(path)!r}"))
    return params


def _pick(data: dict[str, Any], env_id: str, origin: str) -> dict[str, Any]:
    short = env_id.split("/", 1)[-1]
    for key in (env_id, short, "default"):
        if key in data:
            value = data[key] or {}
            if not isinstance(value, dict):
                raise ValueError(f"{origin}: entry {key!r} must map hyperparameter names to values, got {value!r}")
            return dict(value)
    return {}


# rl-zoo3 keys that configure the run rather than the algorithm (consumed by train.py).
RUN_KEYS = ("n_timesteps", "n_envs")
UNSUPPORTED_ZOO_KEYS = ("normalize", "env_wrapper", "frame_stack", "callback", "vec_env_wrapper")


def split_run_keys(hyperparams: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(algorithm kwargs, run settings)``; rl-zoo3 wrapper keys joulegym does not implement raise."""
    params = dict(hyperparams)
    unsupported = sorted(k for k in params if k in UNSUPPORTED_ZOO_KEYS)
    if unsupported:
        raise ValueError(f"hyperparameters {unsupported} (rl-zoo3 wrapper keys) are not supported by train.py; "
                         f"supported run keys: {list(RUN_KEYS)}")
    run = {k: params.pop(k) for k in RUN_KEYS if k in params}
    if isinstance(params.get("policy_kwargs"), str):  # rl-zoo3 writes "dict(net_arch=[64, 64])"
        params["policy_kwargs"] = _parse_dict_call(params["policy_kwargs"])
    for key in SCHEDULE_KEYS:
        if isinstance(params.get(key), str):
            params[key] = parse_schedule(key, params[key])
    return params, run


# rl-zoo3 (``ExperimentManager._preprocess_schedules``) reads "lin_<value>" for these keys as a linear schedule.
SCHEDULE_KEYS = ("learning_rate", "clip_range", "clip_range_vf")


class LinearSchedule:
    """rl-zoo3's ``linear_schedule``: ``initial_value`` times SB3's ``progress_remaining`` (1 at the start, 0 at
    the end). A class rather than a closure so a saved model unpickles it by name."""

    def __init__(self, initial_value: float) -> None:
        self.initial_value = float(initial_value)

    def __call__(self, progress_remaining: float) -> float:
        return progress_remaining * self.initial_value

    def __repr__(self) -> str:
        return f"lin_{self.initial_value:g}"


def parse_schedule(key: str, text: str) -> LinearSchedule:
    """An rl-zoo3 schedule string (``lin_1e-3``, ``lin_0.2``) as a callable; ``ValueError`` naming the form."""
    kind, _, value = text.strip().partition("_")
    try:
        initial = float(value)
    except ValueError:
        initial = math.nan
    if kind != "lin" or not math.isfinite(initial) or initial < 0:
        raise ValueError(f"hyperparameter {key}={text!r}: a schedule must be 'lin_<value>' with a finite value >= 0 "
                         "(rl-zoo3's linear schedule, e.g. lin_1e-3), or a number")
    return LinearSchedule(initial)


def _parse_dict_call(text: str) -> dict[str, Any]:
    import ast

    node = ast.parse(text.strip(), mode="eval").body
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict"
            and not node.args):
        raise ValueError(f"policy_kwargs must be a mapping or 'dict(key=literal, ...)', got {text!r}")
    try:
        return {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}
    except ValueError:
        raise ValueError(f"policy_kwargs values must be literals, got {text!r}") from None


def make_model(algo: str, env, *, seed: int, hyperparams: dict[str, Any], tensorboard_log: str | None = None,
               verbose: int = 0):
    """Instantiate ``algo`` on ``env`` (a VecEnv or Env) with ``hyperparams`` (``policy`` popped)."""
    spec = algo_spec(algo)
    check_algo_supports(spec.name, env.action_space)
    params, _ = split_run_keys(hyperparams)
    policy = params.pop("policy", "MlpPolicy")
    cls = spec.load_class()
    try:
        return cls(policy, env, seed=seed, tensorboard_log=tensorboard_log, verbose=verbose, device="cpu", **params)
    except TypeError as err:
        raise ValueError(f"hyperparameters {sorted(params)} are not all accepted by {spec.cls}: {err}") from err
    except (AssertionError, ValueError) as err:  # SB3 checks values with asserts (e.g. n_steps > 1)
        raise ValueError(f"hyperparameters of {spec.cls} rejected: {err or type(err).__name__} "
                         f"(given {params})") from err


def load_model(algo: str, path: str | Path):
    """Load a saved model of ``algo`` from ``path`` (a ``.zip`` written by ``train.py``)."""
    spec = algo_spec(algo)
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"model file {str(path)!r} does not exist")
    saved = saved_algo(path)
    if saved is not None and saved != spec.name:
        raise ValueError(f"{str(path)!r} holds a {saved!r} model, not {spec.name!r}: load it as {saved}:{path}")
    try:
        return spec.load_class().load(str(path), device="cpu")
    except Exception as err:  # any content at all: the user vouched for the file, not for its format
        raise ValueError(f"{path}: not a loadable SB3 {spec.name} model.zip ({type(err).__name__})") from None


def saved_algo(path: str | Path) -> str | None:
    """The algorithm that wrote the SB3 ``model.zip`` at ``path``, read from its ``data`` JSON (the policy
    class's module, and ``clip_range`` to tell PPO from A2C); None when it cannot be told. Reads JSON only,
    nothing is unpickled."""
    try:
        with zipfile.ZipFile(path) as archive:
            data = json.loads(archive.read("data"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, RuntimeError):
        return None
    policy_class = data.get("policy_class") if isinstance(data, dict) else None
    module = str(policy_class.get("__module__", "")) if isinstance(policy_class, dict) else ""
    if not module:
        return None
    for name in ("sac", "td3", "dqn"):
        if module.startswith(f"stable_baselines3.{name}."):
            return name
    if module.startswith("sb3_contrib.common.maskable"):
        return "maskable_ppo"
    if module.startswith("stable_baselines3.common.policies"):  # ActorCriticPolicy: PPO or A2C
        return "ppo" if "clip_range" in data else "a2c"  # only PPO saves a clip range
    return None
