"""Named scenarios (data) and the family descriptors: the one place that lists the built-in families.

Each module of :data:`FAMILY_MODULES` holds its family's scenarios as
:class:`~joulegym.core.config.Scenario` data and its :class:`~joulegym.core.family.FamilyDescriptor`
as ``FAMILY``. :func:`register_all` (called by ``import joulegym``) registers them: the env ids and
everything else is reached through the descriptors. Adding a family adds one module here and one name
to :data:`FAMILY_MODULES`.
"""

from __future__ import annotations

import importlib

from joulegym.core.family import CATALOG, env_id, register_family, registered_ids

FAMILY_MODULES = ("etf", "emrf", "powerflow", "dream", "qin")

_registered = False


def register_all() -> None:
    """Register every built-in family (idempotent)."""
    global _registered
    if _registered:
        return
    _registered = True
    for name in FAMILY_MODULES:
        register_family(importlib.import_module(f"joulegym.scenarios.{name}").FAMILY)


__all__ = ["CATALOG", "FAMILY_MODULES", "env_id", "register_all", "registered_ids"]
