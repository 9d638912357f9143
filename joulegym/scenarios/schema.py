"""The scenario record: a named set of config overrides for one env family (data, not code)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Scenario:
    """A named configuration of an environment family (data, not code).

    :param name: canonical name, lowercase with hyphens (``"tx2-fig5"``).
    :param description: one line for ``python -m joulegym list``.
    :param config: overrides of the env's ``default_config()``.
    :param kinds: env kinds (id stems, e.g. ``"ETF"``, ``"ETFPhi"``) the scenario is registered for.
    """

    name: str
    description: str
    config: Mapping[str, Any] = field(default_factory=dict)
    kinds: tuple[str, ...] = ()


def canonical_scenario_name(name: str) -> str:
    """Scenario names are case-insensitive and accept ``_`` for ``-`` (``tx2_fig5`` == ``tx2-fig5``)."""
    return str(name).strip().lower().replace("_", "-")


