"""Action types: one class per ``action_mode`` (space, mask, decode/repair, encode).

An env kind is an env class plus an ``action_mode``; the mode picks the :class:`ActionType` that
turns the agent's action into the simulator's *decision* and back:

- ``space``: the Gymnasium action space;
- ``mask()``: the valid actions now, flattened (``None`` when the space has none); the env exposes it in the two
  forms its users take (:func:`int8_mask`, :func:`gymnasium_mask`): ``action_masks()`` flat ``int8`` (sb3-contrib
  MaskablePPO, which takes any 0/1 array) and ``info["action_mask"]`` in the form ``action_space.sample(mask=)``
  takes (Gymnasium 1.x: ``int8`` of shape ``(n,)`` for ``Discrete``, a tuple of one ``int8`` array per
  sub-space for ``MultiDiscrete``); :func:`flat_mask` turns either back into the flat bool array;
- ``decode(action)``: validate (a malformed action raises ``ValueError`` naming the space), then map to
  a decision, repairing a well-formed but masked-out choice deterministically and setting
  :attr:`ActionType.repaired` (reported as ``info["repaired"]``); returning :data:`NO_DECISION` means
  "no transition this step" (e.g. a micro-action that only edits a pending decision);
- ``encode(decision)``: the action that reproduces a decision (how reference policies act).

The validators below are shared by the action types of every family.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import gymnasium as gym
import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from joulegym.core.env import JoulegymEnv

ACTION_TOLERANCE = 1e-6  # float32 round-off allowed outside a Box's bounds before an action is rejected


class _NoDecision:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_DECISION"

    def __reduce__(self):
        return "NO_DECISION"


NO_DECISION: Any = _NoDecision()  # decode() result: the step changes no simulator state


class ActionType:
    """Base of the action modes. Subclasses set :attr:`name`, build :attr:`space` in ``__init__`` and
    implement :meth:`decode` (and :meth:`encode`, :meth:`mask` where they apply).

    :param env: the env (unwrapped) the action type belongs to; read its config and simulator.
    """

    name: ClassVar[str] = ""

    def __init__(self, env: JoulegymEnv) -> None:
        self.env = env
        self.repaired = False
        self.space: gym.Space = gym.spaces.Discrete(1)

    @property
    def has_mask(self) -> bool:
        """Whether :meth:`mask` can be other than all-valid (reported as ``info["action_mask"]``)."""
        return False

    def reset(self) -> None:
        """Start of an episode (after the simulator's reset)."""
        self.repaired = False

    def decode(self, action: Any) -> Any:  # pragma: no cover - every action type overrides
        raise NotImplementedError

    def encode(self, decision: Any) -> Any:
        raise NotImplementedError(f"action_mode={self.name!r} cannot encode a decision")

    def mask(self) -> np.ndarray:
        """The valid actions now, flattened (sb3-contrib convention); all valid by default."""
        space = self.space
        if isinstance(space, gym.spaces.Discrete):
            return np.ones(int(space.n), dtype=bool)
        if isinstance(space, gym.spaces.MultiDiscrete):
            return np.ones(int(np.sum(space.nvec)), dtype=bool)
        raise NotImplementedError(f"action_mode={self.name!r} ({type(space).__name__}) has no action mask")


# --- masks in the forms their users take ---------------------------------------------------------------------
def int8_mask(mask: np.ndarray) -> np.ndarray:
    """``mask`` (flat, 0/1) as ``int8`` (a bool mask is viewed, not copied)."""
    mask = np.asarray(mask)
    return mask.view(np.int8) if mask.dtype == np.bool_ else mask.astype(np.int8)


def gymnasium_mask(space: gym.Space, mask: np.ndarray) -> np.ndarray | tuple[np.ndarray, ...]:
    """The flat ``mask`` as ``space.sample(mask=)`` takes it: ``int8`` ``(n,)`` for ``Discrete``, a tuple of one
    ``int8`` array per sub-space (``nvec[i]`` entries each) for a one-dimensional ``MultiDiscrete``."""
    flat = int8_mask(mask)
    if isinstance(space, gym.spaces.MultiDiscrete):
        ends = np.cumsum(np.asarray(space.nvec).ravel()).tolist()
        # slices of the flat array (views, as np.split gives them) without np.split's per-piece overhead
        return tuple([flat[start:end] for start, end in zip([0, *ends[:-1]], ends)])
    return flat


def flat_mask(mask: Any) -> np.ndarray:
    """Any of the mask forms (flat array, or one array per ``MultiDiscrete`` sub-space) as one flat bool array."""
    if isinstance(mask, tuple | list) and mask and isinstance(mask[0], np.ndarray):
        return np.concatenate(mask, axis=None).astype(bool)  # axis=None: each piece flattened, in one call
    return np.asarray(mask, dtype=bool).ravel()


# --- validators ----------------------------------------------------------------------------------------------
def _junk(action: Any, name: str, space: gym.Space) -> ValueError:
    return ValueError(f"{name} must be an element of {space}, got {type(action).__name__} {action!r}")


def validated_box_action(action: Any, space: gym.spaces.Box, name: str = "action") -> np.ndarray:
    """``action`` as a float64 array of ``space``'s shape, or ``ValueError`` naming what is wrong (real numbers
    only: strings, complex numbers, booleans and objects are refused, not converted)."""
    try:
        raw = np.asarray(action)
    except (TypeError, ValueError):
        raise _junk(action, name, space) from None
    if raw.dtype.kind not in "iuf":
        raise _junk(action, name, space)
    array = raw.astype(np.float64, copy=False)
    if array.shape != space.shape:
        if array.size == int(np.prod(space.shape)) and array.ndim <= 1:
            array = array.reshape(space.shape)
        else:
            raise ValueError(f"{name} must have shape {space.shape}, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite (no NaN/inf), got {array.tolist()}")
    if np.any(array < space.low - ACTION_TOLERANCE) or np.any(array > space.high + ACTION_TOLERANCE):
        raise ValueError(
            f"{name} must lie in [{space.low.min()}, {space.high.max()}] elementwise, got {array.tolist()}"
        )
    return np.clip(array, space.low, space.high)


def validated_box_list(action: Any, space: gym.spaces.Box, name: str = "action") -> list[float]:
    """:func:`validated_box_action` for a flat Box with uniform bounds, as a list of floats (fast path).

    The same checks and messages: wrong length, NaN/inf and values outside the bounds raise.
    """
    if isinstance(action, np.ndarray) and action.ndim == 1 and action.size == space.shape[0] and \
            action.dtype.kind == "f":
        values = action.tolist()
    else:
        values = validated_box_action(action, space, name).ravel().tolist()
    low, high = float(space.low[0]), float(space.high[0])
    out = []
    for v in values:
        if v < low or v > high or v != v:  # v != v: NaN
            if not low - ACTION_TOLERANCE <= v <= high + ACTION_TOLERANCE:  # False for NaN too
                validated_box_action(action, space, name)  # raises with the message
            v = low if v < low else high
        out.append(v)
    return out


def validated_discrete_action(action: Any, space: gym.spaces.Discrete, name: str = "action") -> int:
    """``action`` as an int in ``space``, or ``ValueError`` naming the allowed range."""
    if isinstance(action, int | np.integer) and not isinstance(action, bool | np.bool_):
        value = int(action)
    else:
        if isinstance(action, str | bytes | dict | bool | np.bool_) or action is None:
            raise _junk(action, name, space)
        try:
            array = np.asarray(action)
        except (TypeError, ValueError):
            raise _junk(action, name, space) from None
        if array.dtype.kind not in "iuf":
            raise _junk(action, name, space)
        if array.size != 1:
            raise ValueError(f"{name} must be a single integer in [0, {space.n}), got shape {array.shape}")
        value = array.reshape(()).item()
        if isinstance(value, float) and (not np.isfinite(value) or value != int(value)):
            raise ValueError(f"{name} must be an integer in [0, {space.n}), got {value}")
        value = int(value)
    if not 0 <= value - int(space.start) < space.n:
        raise ValueError(f"{name} must be in [{space.start}, {space.start + space.n}), got {value}")
    return value


def validated_multidiscrete_action(action: Any, space: gym.spaces.MultiDiscrete, name: str = "action") -> np.ndarray:
    """``action`` as an int64 array inside ``space``, or ``ValueError`` naming the bounds."""
    try:
        array = np.asarray(action)
    except (TypeError, ValueError):
        raise _junk(action, name, space) from None
    nvec = np.asarray(space.nvec)
    if array.dtype.kind not in "iuf":
        raise _junk(action, name, space)
    if array.shape != nvec.shape:
        raise ValueError(f"{name} must be an integer array of shape {nvec.shape}, got shape {array.shape}")
    if not np.all(np.isfinite(array)) or np.any(array != np.round(array)):
        raise ValueError(f"{name} must hold whole numbers, got {array.tolist()}")
    array = array.astype(np.int64)
    if np.any(array < 0) or np.any(array >= nvec):
        raise ValueError(f"{name} out of bounds: element k must be in [0, nvec[k]) with nvec={nvec.tolist()}, "
                         f"got {array.tolist()}")
    return array
