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
        if key in TRAINING_ONLY:
            continue
        if key not in POLICY_KWARGS:
            raise ValueError(f"policy_kwargs[{key!r}] cannot be exported weights-only; allowed: {list(POLICY_KWARGS)}")
        if key == "activation_fn":
            value = value.__name__ if isinstance(value, type) else str(value)
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


def load_weights(directory: str | Path, env: Any) -> Any:
    """An SB3 model rebuilt on ``env``'s spaces from ``directory`` (no unpickling of code)."""
    import torch

    directory = Path(directory)
    if not is_weights_dir(directory):
        raise ValueError(f"{str(directory)!r} holds no {AGENT_FILE} + {WEIGHTS_FILE} (a weights-only agent)")
    try:
        meta = json.loads((directory / AGENT_FILE).read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{directory / AGENT_FILE}: not valid JSON ({err.msg})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_VERSION:
        raise ValueError(f"{directory / AGENT_FILE}: unsupported format {meta.get('format')!r}, "
                         f"expected {FORMAT_VERSION}")
    spec = algo_spec(str(meta.get("algo")))
    if list(env.observation_space.shape) != list(meta.get("observation_shape", [])):
        raise ValueError(f"the agent was trained on observations of shape {meta.get('observation_shape')}, the env's "
                         f"are {list(env.observation_space.shape)}")
    if repr(env.action_space) != meta.get("action_space"):
        raise ValueError(f"the agent acts in {meta.get('action_space')}, the env in {env.action_space!r}")
    kwargs = _plain_policy_kwargs(meta.get("policy_kwargs") or {})
    if "activation_fn" in kwargs:
        kwargs["activation_fn"] = getattr(torch.nn, kwargs["activation_fn"])
    policy = str(meta.get("policy", "MlpPolicy"))
    policy = "MlpPolicy" if policy.endswith(("ActorCriticPolicy", "MlpPolicy", "SACPolicy", "TD3Policy", "DQNPolicy",
                                             "QNetwork")) else policy
    extra = {"buffer_size": 1} if spec.name in ("sac", "td3", "dqn") else {}  # no replay memory for evaluation
    model = spec.load_class()(policy, env, policy_kwargs=kwargs, device="cpu", seed=0, **extra)
    state = torch.load(directory / WEIGHTS_FILE, map_location="cpu", weights_only=True)
    omitted = tuple(meta.get("omitted") or ())
    if not set(omitted) <= set(TRAINING_ONLY_NETWORKS.get(spec.name, ())):
        raise ValueError(f"{directory / AGENT_FILE}: omitted={list(omitted)}; for {spec.name} only "
                         f"{list(TRAINING_ONLY_NETWORKS.get(spec.name, ()))} may be left out")
    missing, unexpected = model.policy.load_state_dict(state, strict=False)
    missing = [k for k in missing if not _is_part_of(k, omitted)]
    if missing or unexpected:
        raise ValueError(f"{directory / WEIGHTS_FILE} does not fit the {spec.name} policy of {AGENT_FILE}: "
                         f"missing {missing[:5]}, unexpected {unexpected[:5]}")
    return model
