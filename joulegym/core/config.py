"""Config resolution and value checks, shared by every env, policy and CLI.

highway-env style: an env class's ``default_config()`` holds every key with its default; a named
:class:`Scenario` overrides some of them (top-level keys are replaced); ``gym.make`` keyword
arguments override both, and a dict-valued key given as a dict is merged into the current one key by
key (``trace={"num_jobs": 5}`` keeps the other trace keys), unless it changes the dict's ``kind``.
An unknown key or scenario raises ``ValueError`` naming what is allowed.

The ``check_*`` helpers return the checked value (converted) or raise ``ValueError`` naming the field
and what is allowed; they reject booleans where a number is expected.
"""

from __future__ import annotations

import copy
import difflib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Scenario:
    """A named configuration of an environment family (data, not code).

    :param name: canonical name, lowercase with hyphens (``"tx2-fig5"``).
    :param description: one line for ``python -m joulegym list``.
    :param config: overrides of the env's ``default_config()`` (top-level keys are replaced).
    :param kinds: env kinds (id stems, e.g. ``"ETF"``, ``"ETFPhi"``) it applies to; empty: all.
    """

    name: str
    description: str
    config: Mapping[str, Any] = field(default_factory=dict)
    kinds: tuple[str, ...] = ()

    def applies_to(self, kind: str) -> bool:
        return not self.kinds or kind in self.kinds


def canonical_scenario_name(name: str) -> str:
    """Scenario names are case-insensitive and accept ``_`` for ``-`` (``tx2_fig5`` == ``tx2-fig5``)."""
    return str(name).strip().lower().replace("_", "-")


def resolve_config(
    defaults: Mapping[str, Any],
    scenarios: Mapping[str, Scenario],
    scenario: str | None,
    overrides: Mapping[str, Any],
    *,
    kind: str | None = None,
) -> dict[str, Any]:
    """``defaults`` <- ``scenarios[scenario].config`` <- ``overrides``, with every key checked.

    ``kind`` (an id stem) restricts the scenarios to those that apply to it.
    """
    config = copy.deepcopy(dict(defaults))
    if scenario is not None:
        key = canonical_scenario_name(scenario)
        found = scenarios.get(key)
        if found is None or (kind is not None and not found.applies_to(kind)):
            allowed = sorted(n for n, s in scenarios.items() if kind is None or s.applies_to(kind))
            raise ValueError(f"scenario={scenario!r} is unknown for {kind or 'this env'}; allowed: {allowed}"
                             f"{did_you_mean(key, allowed)}")
        for name, value in found.config.items():
            _check_known(config, name, f"scenario {key!r}")
            config[name] = copy.deepcopy(value)
        config["scenario"] = key
    for name, value in overrides.items():
        _check_known(config, name, "keyword arguments")
        config[name] = merge_value(config[name], value)
    return config


def _check_known(config: Mapping[str, Any], key: str, origin: str) -> None:
    if key not in config:
        raise ValueError(f"unknown config key {key!r} in {origin}; allowed keys: {sorted(config)}"
                         f"{did_you_mean(str(key), list(config))}")


def did_you_mean(name: str, allowed: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest allowed name (difflib's ratio >= 0.6), else ``""``."""
    close = difflib.get_close_matches(name, [str(a) for a in allowed if a != name], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def merge_value(current: Any, value: Any) -> Any:
    """``value`` merged into ``current``: dicts key by key (recursively) unless ``kind`` changes."""
    if isinstance(current, dict) and isinstance(value, Mapping) and value.get("kind", current.get("kind")) == \
            current.get("kind"):
        merged = dict(current)
        for key, item in value.items():
            merged[key] = merge_value(current.get(key), item)
        return merged
    return copy.deepcopy(value)


def parse_env_kwargs(text: str) -> dict[str, Any]:
    """``--env-kwargs`` of the CLIs: a JSON object."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"--env-kwargs must be a JSON object, got {text!r} ({err.msg})") from None
    if not isinstance(value, dict):
        raise ValueError(f"--env-kwargs must be a JSON object, got {text!r}")
    return value


# --- value checks --------------------------------------------------------------------------------------------
def _number(name: str, value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        try:
            import numpy as np

            if isinstance(value, np.integer | np.floating) and not isinstance(value, np.bool_):
                return float(value)
        except ImportError:  # pragma: no cover
            pass
        raise ValueError(f"{name} must be {what}, got {value!r}")
    return float(value)


def check_unit_interval(name: str, value: Any) -> float:
    """``value`` as a float in [0, 1], or ``ValueError`` naming ``name``."""
    number = _number(name, value, "a number in [0, 1]")
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return number


def check_unit_interval_list(name: str, value: Any) -> list[float]:
    """``value`` as a non-empty list of floats in [0, 1] (e.g. a per-episode choice set)."""
    if not isinstance(value, list | tuple) or not value:
        raise ValueError(f"{name} must be a non-empty list of values in [0, 1], got {value!r}")
    return [check_unit_interval(f"{name}[]", v) for v in value]


def check_positive(name: str, value: Any, *, allow_zero: bool = False) -> float:
    """``value`` as a finite float > 0 (or >= 0), or ``ValueError`` naming ``name``."""
    sign = ">=" if allow_zero else ">"
    number = _number(name, value, f"a finite number {sign} 0")
    ok = number >= 0 if allow_zero else number > 0
    if not (math.isfinite(number) and ok):
        raise ValueError(f"{name} must be a finite number {sign} 0, got {value!r}")
    return number


def check_number(name: str, value: Any, low: float = -math.inf, high: float = math.inf) -> float:
    """``value`` as a finite float in ``[low, high]``."""
    number = _number(name, value, f"a finite number in [{low}, {high}]")
    if not (math.isfinite(number) and low <= number <= high):
        raise ValueError(f"{name} must be a finite number in [{low}, {high}], got {value!r}")
    return number


def check_int(name: str, value: Any, least: int = 0, most: int | None = None) -> int:
    """``value`` as an int in ``[least, most]`` (whole floats accepted, booleans rejected)."""
    bound = f">= {least}" if most is None else f"in [{least}, {most}]"
    number = _number(name, value, f"a whole number {bound}")
    if not math.isfinite(number) or number != int(number) or number < least or (most is not None and number > most):
        raise ValueError(f"{name} must be a whole number {bound}, got {value!r}")
    return int(number)


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return value


def check_choice(name: str, value: Any, allowed: Iterable[Any]) -> Any:
    allowed = tuple(allowed)
    if isinstance(value, bool) or value not in allowed:
        raise ValueError(f"{name}={value!r} is not one of {allowed}")
    return value


def check_keys(name: str, value: Any, allowed: Sequence[str]) -> dict[str, Any]:
    """``value`` as a dict whose keys are all in ``allowed``."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{name} must be a dict with keys from {list(allowed)}, got {value!r}")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise ValueError(f"{name} has unknown keys {unknown}; allowed: {list(allowed)}")
    return dict(value)


SEED_LIMIT = 2**63  # reset(seed=...) in [0, SEED_LIMIT): any int >= 0 seeds numpy; this keeps s + i an int64


def check_seed(seed: Any, name: str = "seed") -> int | None:
    """``reset(seed=...)``: ``None`` or a whole number in ``[0, 2**63)``, else a ``ValueError`` naming ``name``."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= int(seed) < SEED_LIMIT:
        raise ValueError(f"{name} must be None or a whole number in [0, 2**63), got {seed!r}")
    return int(seed)


def check_options(options: Any, allowed: Sequence[str]) -> dict[str, Any]:
    """``reset(options=...)``: ``None`` or a dict with keys from ``allowed``."""
    if options is None:
        return {}
    return check_keys("reset options", options, allowed)
