"""joulegym: Gymnasium environments for energy- and power-aware scheduling of compute hardware.

``import joulegym`` registers every env id (``joulegym/<Kind>[-<scenario>]-v<N>``) with Gymnasium
from the family descriptors, without importing any env module (the ids name their classes as
strings). ``python -m joulegym list`` prints them. ``joulegym.baselines.make(name)`` builds a
reference policy (imported on first use).
"""

import importlib as _importlib

from joulegym.core.family import set_policy_loader as _set_policy_loader
from joulegym.scenarios import register_all as _register_all

__version__ = "0.1.0"


def _import_policies(module: str) -> None:
    """Import a family's policy module (the one its descriptor names): it registers its policies."""
    _importlib.import_module(module)


_set_policy_loader(_import_policies)  # the core names no module above it; the package root wires them in
_register_all()
_importlib.import_module("joulegym.mo").register()  # the joulegym-mo/ twins (MO-Gymnasium)


def __getattr__(name: str):
    # ``joulegym.baselines`` / ``joulegym.agents`` / ``joulegym.evaluation`` without importing them at startup
    if name in ("baselines", "agents", "evaluation", "envs", "devices", "workloads", "core", "scenarios"):
        return _importlib.import_module(f"joulegym.{name}")
    raise AttributeError(f"module 'joulegym' has no attribute {name!r}")


__all__ = ["__version__"]
