"""Registration of env ids: one base id per env kind, one id per named scenario (DESIGN.md "Ids").

``joulegym/<Kind>-v0`` is the kind with its default config; ``joulegym/<Kind>-<scenario>-v0`` is the
same entry point with ``scenario=<scenario>`` preset. Both accept ``scenario=`` and config overrides
as ``gym.make`` kwargs. :data:`CATALOG` keeps a one-line description per id for
``python -m joulegym list``.
"""

from __future__ import annotations

from collections.abc import Iterable

import gymnasium as gym

from joulegym.scenarios.schema import Scenario

NAMESPACE = "joulegym"
VERSION = 0

# id -> (family, one-line description); filled by register_kind, in registration order.
CATALOG: dict[str, tuple[str, str]] = {}


def env_id(kind: str, scenario: str | None = None, version: int = VERSION) -> str:
    middle = kind if scenario is None else f"{kind}-{scenario}"
    return f"{NAMESPACE}/{middle}-v{version}"


def register_kind(
    *,
    family: str,
    kind: str,
    entry_point: str,
    description: str,
    scenarios: Iterable[Scenario],
    version: int = VERSION,
) -> list[str]:
    """Register ``kind``'s base id and one id per scenario applicable to it; return the ids."""
    ids = [env_id(kind, version=version)]
    _register(ids[0], entry_point, {}, family, description)
    for scenario in scenarios:
        if scenario.kinds and kind not in scenario.kinds:
            continue
        scenario_id = env_id(kind, scenario.name, version)
        _register(scenario_id, entry_point, {"scenario": scenario.name}, family,
                  f"{description.split(':')[0]}: {scenario.description}")
        ids.append(scenario_id)
    return ids


def _register(id_: str, entry_point: str, kwargs: dict, family: str, description: str) -> None:
    if id_ in gym.registry:  # re-import (e.g. importlib.reload) must not fail
        return
    gym.register(id=id_, entry_point=entry_point, kwargs=kwargs, disable_env_checker=False)
    CATALOG[id_] = (family, description)


def registered_ids(family: str | None = None) -> list[str]:
    """Every joulegym id (optionally of one family), in registration order."""
    return [i for i, (fam, _) in CATALOG.items() if family is None or fam == family]
