"""Weights-only agents: a trained policy as ``weights.pt`` (a torch ``state_dict``) plus ``agent.json``.

SB3's ``model.zip`` is unpickled with cloudpickle when loaded, so loading one runs whatever code it holds:
only load ``model.zip`` files you trust. The weights-only format cannot execute code: ``agent.json`` is
plain data (algorithm, policy class name, ``policy_kwargs`` from an allow-list, the spaces' shapes) and
``weights.pt`` is read with ``torch.load(weights_only=True)``. The policy network is rebuilt from the
evaluation env's spaces and the architecture in ``agent.json``, then the weights are loaded into it.
``train.py`` writes both formats; ``evaluate.py`` loads a directory holding ``agent.json`` this way.

Only what acting needs is kept: the value network of PPO / A2C / MaskablePPO and the critics and target networks
of SAC, TD3 and DQN serve training alone, so ``weights.pt`` leaves them out (``agent.json`` lists the left-out
parts in ``"omitted"``; a SAC actor of two 64-unit layers is ~30 KB instead of ~150 KB). Files with every part
(written before) load as well.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from joulegym.agents.algos import algo_spec

AGENT_FILE = "agent.json"
WEIGHTS_FILE = "weights.pt"
FORMAT_VERSION = 1
ACTIVATIONS = ("ReLU", "Tanh", "ELU", "LeakyReLU", "GELU", "SiLU")  # torch.nn classes an agent.json may name
POLICY_KWARGS = ("net_arch", "activation_fn", "ortho_init", "log_std_init", "squash_output", "share_features_extractor",
                 "normalize_images", "n_critics", "use_sde")
TRAINING_ONLY = ("optimizer_class", "optimizer_kwargs")  # do not change the network: not exported
# state_dict prefixes of the networks that only training reads: the action comes from the policy branch of an
# ActorCriticPolicy (PPO, A2C, MaskablePPO: ``mlp_extractor.policy_net`` + ``action_net``), from ``actor`` (SAC,
# TD3) or from ``q_net`` (DQN) alone
_VALUE_BRANCH = ("mlp_extractor.value_net", "value_net")
TRAINING_ONLY_NETWORKS: dict[str, tuple[str, ...]] = {
    "ppo": _VALUE_BRANCH,
    "a2c": _VALUE_BRANCH,
    "maskable_ppo": _VALUE_BRANCH,
    "sac": ("critic", "critic_target"),
    "td3": ("critic", "critic_target", "actor_target"),
    "dqn": ("q_net_target",),
}


def _is_part_of(key: str, networks: tuple[str, ...]) -> bool:
    return any(key == net or key.startswith(net + ".") for net in networks)


def _plain_policy_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in (kwargs or {}).items():
        key = str(key)
        if key in TRAINING_ONLY:
            continue
        if key not in POLICY_KWARGS:
            raise ValueError(f"policy_kwargs[{key!r}] cannot be exported weights-only; allowed: {list(POLICY_KWARGS)}")
        if key == "activation_fn":
            value = value.__name__ if isinstance(value, type) else value
            if not isinstance(value, str):
                raise ValueError(f"activation_fn must be one of {ACTIVATIONS}, got {value!r}")
            if value not in ACTIVATIONS:
                raise ValueError(f"activation_fn {value!r} is not one of {ACTIVATIONS}")
        out[key] = value
    return out


def save_weights(model: Any, algo: str, directory: str | Path) -> Path:
    """Write ``agent.json`` and ``weights.pt`` of ``model`` (an SB3 model) into ``directory``; returns it."""
    import torch

    from joulegym.core.io import write_atomic

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    spec = algo_spec(algo)
    omitted = TRAINING_ONLY_NETWORKS.get(spec.name, ())
    meta = {
        "format": FORMAT_VERSION,
        "algo": spec.name,
        "policy": type(model.policy).__name__,
        "policy_kwargs": _plain_policy_kwargs(getattr(model, "policy_kwargs", {}) or {}),
        "observation_shape": list(model.observation_space.shape),
        "action_space": repr(model.action_space),
        "omitted": list(omitted),
    }
    state = {k: v for k, v in model.policy.state_dict().items() if not _is_part_of(k, omitted)}
    tmp = directory / f".{WEIGHTS_FILE}.tmp"
    torch.save(state, tmp)
    tmp.replace(directory / WEIGHTS_FILE)
    write_atomic(directory / AGENT_FILE, json.dumps(meta, indent=2) + "\n")
    return directory


def is_weights_dir(path: str | Path) -> bool:
    return (Path(path) / AGENT_FILE).is_file() and (Path(path) / WEIGHTS_FILE).is_file()


def read_agent_json(directory: str | Path) -> dict[str, Any]:
    """``directory``'s ``agent.json``, checked: a JSON object of the current format naming a known algorithm,
    with an observation shape, an action space and allowed ``policy_kwargs``.

    :raises ValueError: one line naming the file and what is wrong.
    """
    path = Path(directory) / AGENT_FILE
    try:
        meta = json.loads(path.read_text())
    except OSError as err:
        raise ValueError(f"{path}: cannot be read ({err.strerror or err})") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: not UTF-8 text (an agent.json is JSON)") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err.msg})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: must hold a JSON object (algo, policy, policy_kwargs, observation_shape, "
                         f"action_space, format), got a {type(meta).__name__}")
    if meta.get("format") != FORMAT_VERSION:
        raise ValueError(f"{path}: format={meta.get('format')!r}, expected {FORMAT_VERSION}")
    try:
        algo_spec(str(meta.get("algo")))
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    shape = meta.get("observation_shape")
    if not (isinstance(shape, list) and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                             for n in shape)):
        raise ValueError(f"{path}: observation_shape must be a list of whole numbers >= 0, got {shape!r}")
    for key in ("action_space", "policy"):
        if not isinstance(meta.get(key, ""), str):
            raise ValueError(f"{path}: {key} must be a string, got {meta.get(key)!r}")
    if not isinstance(meta.get("omitted", []), list):
        raise ValueError(f"{path}: omitted must be a list of network names, got {meta.get('omitted')!r}")
    kwargs = meta.get("policy_kwargs") or {}
    if not isinstance(kwargs, dict):
        raise ValueError(f"{path}: policy_kwargs must be a JSON object, got {kwargs!r}")
    try:
        _check_policy_kwargs(_plain_policy_kwargs(kwargs))
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    return meta


def _layers(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= 65_536
                                           for n in value)


def _check_policy_kwargs(kwargs: dict[str, Any]) -> None:
    """The types of the allowed ``policy_kwargs`` (what SB3 builds a network from)."""
    arch = kwargs.get("net_arch", [])
    if not (_layers(arch) or (isinstance(arch, dict) and set(arch) <= {"pi", "vf", "qf"}
                              and all(_layers(v) for v in arch.values()))):
        raise ValueError(f"policy_kwargs net_arch must be a list of layer sizes (whole numbers in [1, 65536]) or "
                         f"{{'pi': [...], 'vf'/'qf': [...]}}, got {arch!r}")
    for key in ("ortho_init", "squash_output", "share_features_extractor", "normalize_images", "use_sde"):
        if key in kwargs and not isinstance(kwargs[key], bool):
            raise ValueError(f"policy_kwargs {key} must be true or false, got {kwargs[key]!r}")
    if "log_std_init" in kwargs and (isinstance(kwargs["log_std_init"], bool) or not isinstance(
            kwargs["log_std_init"], int | float) or not abs(kwargs["log_std_init"]) <= 20):
        raise ValueError(f"policy_kwargs log_std_init must be a number in [-20, 20], got {kwargs['log_std_init']!r}")
    if "n_critics" in kwargs and (isinstance(kwargs["n_critics"], bool) or kwargs["n_critics"] not in range(1, 11)):
        raise ValueError(f"policy_kwargs n_critics must be a whole number in [1, 10], got {kwargs['n_critics']!r}")


def _read_state(path: Path) -> dict[str, Any]:
    """``weights.pt`` as a state dict of tensors, read with ``torch.load(weights_only=True)``; a one-line
    ``ValueError`` for a damaged file or one holding anything else (nothing in it is run)."""
    import pickle

    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        raise ValueError(f"{path}: holds pickled objects other than tensors, which a weights-only agent cannot "
                         "(refused, nothing in it was run); re-export the agent with save_weights") from None
    except (EOFError, RuntimeError, OSError, ValueError, TypeError, AttributeError, IndexError, KeyError) as err:
        raise ValueError(f"{path}: not a readable torch state dict (empty, truncated or damaged: "
                         f"{type(err).__name__})") from None
    if not (isinstance(state, dict) and all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                            for k, v in state.items())):
        raise ValueError(f"{path}: must hold a state dict (parameter name -> tensor), got {type(state).__name__}")
    return state


def load_weights(directory: str | Path, env: Any) -> Any:
    """An SB3 model rebuilt on ``env``'s spaces from ``directory`` (no unpickling of code).

    :raises ValueError: one line naming the file and what is wrong, for every malformed agent.
    """
    import torch

    from joulegym.agents.algos import check_algo_supports

    directory = Path(directory)
    if not is_weights_dir(directory):
        raise ValueError(f"{str(directory)!r} holds no {AGENT_FILE} + {WEIGHTS_FILE} (a weights-only agent)")
    meta = read_agent_json(directory)
    spec = algo_spec(str(meta["algo"]))
    try:
        check_algo_supports(spec.name, env.action_space)
    except ValueError as err:
        raise ValueError(f"{directory / AGENT_FILE}: {err}") from None
    if list(env.observation_space.shape) != list(meta["observation_shape"]):
        raise ValueError(f"the agent was trained on observations of shape {meta.get('observation_shape')}, the env's "
                         f"are {list(env.observation_space.shape)}")
    if repr(env.action_space) != meta.get("action_space"):
        raise ValueError(f"the agent acts in {meta.get('action_space')}, the env in {env.action_space!r}")
    omitted = tuple(meta.get("omitted") or ())
    if not set(omitted) <= set(TRAINING_ONLY_NETWORKS.get(spec.name, ())):
        raise ValueError(f"{directory / AGENT_FILE}: omitted={list(omitted)}; for {spec.name} only "
                         f"{list(TRAINING_ONLY_NETWORKS.get(spec.name, ()))} may be left out")
    state = _read_state(directory / WEIGHTS_FILE)
    kwargs = _plain_policy_kwargs(meta.get("policy_kwargs") or {})
    if "activation_fn" in kwargs:
        kwargs["activation_fn"] = getattr(torch.nn, kwargs["activation_fn"])
    policy = str(meta.get("policy", "MlpPolicy"))
    policy = "MlpPolicy" if policy.endswith(("ActorCriticPolicy", "MlpPolicy", "SACPolicy", "TD3Policy", "DQNPolicy",
                                             "QNetwork")) else policy
    extra = {"buffer_size": 1} if spec.name in ("sac", "td3", "dqn") else {}  # no replay memory for evaluation
    try:
        model = spec.load_class()(policy, env, policy_kwargs=kwargs, device="cpu", seed=0, **extra)
    except (TypeError, ValueError, AssertionError, KeyError, RuntimeError) as err:
        raise ValueError(f"{directory / AGENT_FILE}: the {spec.name} policy {policy!r} with policy_kwargs "
                         f"{meta.get('policy_kwargs')} cannot be built on this env "
                         f"({str(err).splitlines()[0] if str(err) else type(err).__name__})") from None
    try:
        missing, unexpected = model.policy.load_state_dict(state, strict=False)
    except RuntimeError as err:  # a tensor of the wrong shape
        detail = next((line.strip() for line in str(err).splitlines() if "size mismatch" in line), "size mismatch")
        raise ValueError(f"{directory / WEIGHTS_FILE} does not fit the {spec.name} policy of {AGENT_FILE}: "
                         f"{detail}") from None
    missing = [k for k in missing if not _is_part_of(k, omitted)]
    if missing or unexpected:
        raise ValueError(f"{directory / WEIGHTS_FILE} does not fit the {spec.name} policy of {AGENT_FILE}: "
                         f"missing {missing[:5]}, unexpected {unexpected[:5]}")
    return model
