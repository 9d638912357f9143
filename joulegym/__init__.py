"""joulegym: Gymnasium environments for energy- and power-aware scheduling of compute hardware.

``import joulegym`` registers every env id (``joulegym/<Kind>[-<scenario>]-v<N>``) with Gymnasium
from the family descriptors, without importing any env module (the ids name their classes as
strings). ``python -m joulegym list`` prints them. ``joulegym.baselines.make(name)`` builds a
reference policy (imported on first use).
"""

from joulegym.scenarios import register_all as _register_all

__version__ = "0.1.0"

_register_all()


def __getattr__(name: str):
    # ``joulegym.baselines`` / ``joulegym.agents`` / ``joulegym.evaluation`` without importing them at startup
    if name in ("baselines", "agents", "evaluation", "envs", "devices", "workloads", "core", "scenarios"):
        import importlib

        return importlib.import_module(f"joulegym.{name}")
    raise AttributeError(f"module 'joulegym' has no attribute {name!r}")


__all__ = ["__version__"]
