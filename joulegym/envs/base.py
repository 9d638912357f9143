"""Legacy shell base, kept while the families move onto :class:`joulegym.core.env.JoulegymEnv`.

TODO(core): delete once EMRF and PowerFlow are on the core template.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import gymnasium as gym

from joulegym.core.actions import (  # noqa: F401  (re-exported for the legacy shells)
    ACTION_TOLERANCE,
    validated_box_action,
    validated_box_list,
    validated_discrete_action,
)
from joulegym.core.config import (  # noqa: F401
    Scenario,
    check_choice,
    check_positive,
    check_unit_interval,
    resolve_config,
)
from joulegym.core.plotting import figure_to_rgb, new_figure  # noqa: F401


class LegacyEnv(gym.Env):
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
