"""Reference policies (DESIGN.md layer 5): each paper's algorithm and the baselines it compared to.

``make(name, **kw)`` builds a policy; ``available(family)`` lists the names for a family;
``applicable(env)`` lists those that can drive a given env. Family modules register on import.
"""

from __future__ import annotations

import importlib
import importlib.util

from joulegym.baselines.base import (
    Policy,
    PolicyNotApplicable,
    RandomPolicy,
    applicable,
    available,
    make,
    register_policy,
    spec,
)

FAMILY_MODULES = ("etf", "emrf", "powerflow")

for _family in FAMILY_MODULES:
    if importlib.util.find_spec(f"joulegym.baselines.{_family}") is None:  # TODO(integration): drop guard
        continue
    importlib.import_module(f"joulegym.baselines.{_family}")

__all__ = [
    "FAMILY_MODULES",
    "Policy",
    "PolicyNotApplicable",
    "RandomPolicy",
    "applicable",
    "available",
    "make",
    "register_policy",
    "spec",
]
