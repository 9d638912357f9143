"""Named scenarios (data) per family, and the code that registers them as env ids.

Each family module (``etf``, ...) holds its scenarios as :class:`~joulegym.envs.base.Scenario` data
and a ``register()`` that registers its env kinds. :func:`register_all` is called once by
``import joulegym``.
"""

from __future__ import annotations

import importlib
import importlib.util

from joulegym.scenarios.registry import CATALOG, env_id, registered_ids

FAMILY_MODULES = ("etf", "emrf", "powerflow")

_registered = False


def register_all() -> None:
    global _registered
    if _registered:
        return
    for family in FAMILY_MODULES:
        if importlib.util.find_spec(f"joulegym.scenarios.{family}") is None:  # TODO(integration): drop guard
            continue
        importlib.import_module(f"joulegym.scenarios.{family}").register()
    _registered = True


__all__ = ["CATALOG", "FAMILY_MODULES", "env_id", "register_all", "registered_ids"]
