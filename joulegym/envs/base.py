"""What every joulegym Gymnasium shell shares (DESIGN.md layer 4, "Conventions").

- A highway-env style config: :meth:`JoulegymEnv.default_config` holds every knob with its default;
  a named scenario overrides some of them; ``gym.make`` kwargs override both. Unknown keys and
  unknown scenarios raise ``ValueError`` naming what is allowed.
- Strict action validation (wrong shape, NaN, out of bounds -> ``ValueError`` naming the field).
- Rendering helpers (``ansi`` text, ``rgb_array`` from a matplotlib figure).

The shell itself (spaces, reward, info) is written per family; this module holds no family logic.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from joulegym.scenarios.schema import Scenario, canonical_scenario_name

ACTION_TOLERANCE = 1e-6  # float32 round-off allowed outside a Box's bounds before we reject


def resolve_config(
    defaults: Mapping[str, Any],
    scenarios: Mapping[str, Scenario],
    scenario: str | None,
    overrides: Mapping[str, Any],
    *,
    kind: str,
) -> dict[str, Any]:
    """``defaults`` <- ``scenarios[scenario].config`` <- ``overrides``, with every key checked."""
    config = copy.deepcopy(dict(defaults))
    if scenario is not None:
        key = canonical_scenario_name(scenario)
        if key not in scenarios or (scenarios[key].kinds and kind not in scenarios[key].kinds):
            allowed = sorted(n for n, s in scenarios.items() if not s.kinds or kind in s.kinds)
            raise ValueError(f"scenario={scenario!r} is unknown for {kind}; allowed: {allowed}")
        _merge_checked(config, scenarios[key].config, origin=f"scenario {key!r}")
        config["scenario"] = key
    _merge_checked(config, overrides, origin="keyword arguments")
    return config


def _merge_checked(config: dict[str, Any], updates: Mapping[str, Any], origin: str) -> None:
    for key, value in updates.items():
        if key not in config:
            raise ValueError(f"unknown config key {key!r} in {origin}; allowed keys: {sorted(config)}")
        config[key] = copy.deepcopy(value)


class JoulegymEnv(gym.Env):
    """Base of the joulegym shells: config resolution and render-mode bookkeeping.

    Subclasses set ``family``, ``kind``, ``scenarios`` and implement ``default_config``,
    ``reset``, ``step`` and the two renderers ``_render_ansi`` / ``_render_figure``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    family: ClassVar[str] = ""
    kind: ClassVar[str] = ""
    scenarios: ClassVar[Mapping[str, Scenario]] = {}

    def __init__(self, scenario: str | None = None, render_mode: str | None = None, **overrides: Any) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode={render_mode!r} is not one of {self.metadata['render_modes']}")
        self.render_mode = render_mode
        self.config = resolve_config(self.default_config(), self.scenarios, scenario, overrides, kind=self.kind)

    @classmethod
    def default_config(cls) -> dict[str, Any]:
        """Every config key with its default value. Scenario data and kwargs override these."""
        return {"scenario": None}

    # --- rendering -------------------------------------------------------------------------------
    def render(self):
        if self.render_mode is None:
            gym.logger.warn("render() called without a render_mode; pass render_mode='ansi' or 'rgb_array'")
            return None
        if self.render_mode == "ansi":
            return self._render_ansi()
        return figure_to_rgb(self._render_figure())

    def _render_ansi(self) -> str:  # pragma: no cover - every family overrides
        raise NotImplementedError

    def _render_figure(self):  # pragma: no cover - every family overrides
        raise NotImplementedError


def figure_to_rgb(fig) -> np.ndarray:
    """Rasterise a matplotlib figure to an ``(H, W, 3)`` uint8 array and close it."""
    import matplotlib.pyplot as plt

    fig.canvas.draw()
    image = np.asarray(fig.canvas.buffer_rgba())[..., :3].copy()
    plt.close(fig)
    return image


def new_figure(rows: int = 1, cols: int = 1, size: tuple[float, float] = (6.4, 4.0)):
    """A headless (Agg) matplotlib figure; a clear error if matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as err:  # pragma: no cover - depends on the install
        raise gym.error.DependencyNotInstalled(
            "render_mode='rgb_array' needs matplotlib: pip install 'joulegym[plots]'"
        ) from err
    fig, axes = plt.subplots(rows, cols, figsize=size, squeeze=False)
    return fig, axes


def validated_box_action(action: Any, space: gym.spaces.Box, name: str = "action") -> np.ndarray:
    """``action`` as a float64 array of ``space``'s shape, or ``ValueError`` naming what is wrong."""
    array = np.asarray(action, dtype=np.float64)
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
    """:func:`validated_box_action` for a flat Box, as a list of floats (fast path for small actions).

    The same checks and messages: wrong length, NaN/inf and values outside the bounds raise.
    """
    if isinstance(action, np.ndarray) and action.ndim == 1 and action.size == space.shape[0]:
        values = action.tolist()
    else:
        values = validated_box_action(action, space, name).ravel().tolist()
    low, high = float(space.low[0]), float(space.high[0])  # the flat Boxes using this helper have uniform bounds
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
    array = np.asarray(action)
    if array.size != 1:
        raise ValueError(f"{name} must be a single integer in [0, {space.n}), got shape {array.shape}")
    value = array.reshape(()).item()
    if isinstance(value, float) and (not np.isfinite(value) or value != int(value)):
        raise ValueError(f"{name} must be an integer in [0, {space.n}), got {value}")
    value = int(value)
    if not 0 <= value - int(space.start) < space.n:
        raise ValueError(f"{name} must be in [{space.start}, {space.start + space.n}), got {value}")
    return value


def check_unit_interval(name: str, value: float) -> float:
    """``value`` as a float in [0, 1], or ``ValueError`` naming ``name``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}") from None
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return number


def check_positive(name: str, value: float, *, allow_zero: bool = False) -> float:
    """``value`` as a finite float > 0 (or >= 0), or ``ValueError`` naming ``name``."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    ok = number >= 0 if allow_zero else number > 0
    if not (np.isfinite(number) and ok):
        raise ValueError(f"{name} must be a finite number {'>=' if allow_zero else '>'} 0, got {value!r}")
    return number


def check_choice(name: str, value: Any, allowed: tuple) -> Any:
    if value not in allowed:
        raise ValueError(f"{name}={value!r} is not one of {allowed}")
    return value
