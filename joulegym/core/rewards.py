"""Named reward parts, their weights, and the ``reward_space`` (MO-Gymnasium's convention).

Every env computes a vector of named *parts* per step, each oriented so that more is better (a
penalty enters as its negative), and reports it as ``info["reward_parts"]``. The scalar reward is the
weighted sum ``sum_k w_k part_k``: ``reward=`` picks a named preset of weights (the family's paper
objective is the default), ``reward_weights={...}`` overrides single weights. Weights lie in
[0, :data:`MAX_WEIGHT`] (a negative weight would reward what the part penalises; the parts are normalised to
about one per step, so a bounded weighted sum of them stays finite, docs/robustness.md). With
``vector_reward=True`` the env returns the parts themselves as the reward (an ``np.ndarray`` in ``reward_space``), so
MO-Gymnasium's wrappers (e.g. ``mo_gymnasium.wrappers.LinearReward``) apply directly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

MAX_WEIGHT = 1e6  # largest reward weight: a weighted sum of parts of magnitude up to 1e290 stays finite


@dataclass(frozen=True)
class RewardPart:
    """One named reward part.

    :param name: key in ``info["reward_parts"]`` and ``reward_weights``.
    :param low: lower bound of the part per step (``-inf`` if unbounded).
    :param high: upper bound per step.
    :param description: one line for the env docstring and docs.
    """

    name: str
    low: float
    high: float
    description: str = ""


class RewardSpec:
    """The parts of an env and its named weight presets.

    :param parts: the parts, in the order of the vector reward.
    :param presets: ``reward=`` name -> ``{part: weight}`` (missing parts weigh 0); the first is the default.
    """

    def __init__(self, parts: Sequence[RewardPart], presets: Mapping[str, Mapping[str, float]]) -> None:
        if not parts:
            raise ValueError("a RewardSpec needs at least one part")
        self.parts = tuple(parts)
        self.names = tuple(p.name for p in self.parts)
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"reward part names must be unique, got {self.names}")
        self.presets = {name: self._checked(weights, f"preset {name!r}") for name, weights in presets.items()}
        if not self.presets:
            raise ValueError("a RewardSpec needs at least one preset")

    @property
    def default_preset(self) -> str:
        return next(iter(self.presets))

    @property
    def space(self) -> gym.spaces.Box:
        low = np.array([p.low for p in self.parts], dtype=np.float32)
        high = np.array([p.high for p in self.parts], dtype=np.float32)
        return gym.spaces.Box(low, high, dtype=np.float32)

    def _checked(self, weights: Any, origin: str) -> dict[str, float]:
        if not isinstance(weights, Mapping):
            raise ValueError(f"reward_weights must be a dict {{part: weight}} with parts from {list(self.names)}, "
                             f"got {weights!r}")
        out = {}
        for key, value in weights.items():
            if key not in self.names:
                raise ValueError(f"reward_weights ({origin}) names unknown part {key!r}; parts: {list(self.names)}")
            if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating) \
                    or not math.isfinite(float(value)) or not 0 <= float(value) <= MAX_WEIGHT:
                raise ValueError(f"reward_weights[{key!r}] ({origin}) must be a finite number in [0, {MAX_WEIGHT:g}] "
                                 f"(the parts are normalised to about 1 per step), got {value!r}")
            out[key] = float(value)
        return out

    def weights(self, preset: str | None, overrides: Mapping[str, float] | None = None) -> tuple[float, ...]:
        """The weight of every part: ``preset`` (``None``: the default) updated by ``overrides``."""
        name = self.default_preset if preset is None else preset
        if not isinstance(name, str) or name not in self.presets:  # a list or dict is unhashable: same error
            raise ValueError(f"reward={name!r} is not one of {tuple(self.presets)}")
        chosen = dict(self.presets[name])
        if overrides is not None:
            chosen.update(self._checked(overrides, "keyword arguments"))
        return tuple(chosen.get(n, 0.0) for n in self.names)


def weighted_sum(weights: Sequence[float], parts: Sequence[float]) -> float:
    """``sum_k w_k part_k`` in part order, skipping zero weights (plain floats: the same bits as the
    hand-written ``a - lam * b`` it replaces)."""
    total = 0.0
    for w, p in zip(weights, parts):
        if w:
            total += p if w == 1.0 else w * p
    return total
