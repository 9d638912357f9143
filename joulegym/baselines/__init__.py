"""Reference policies: each paper's algorithm and the baselines it compared to, one module per family.

``make(name, **kw)`` builds a policy (``"family/name"``, ``make(name, family=...)``, or a short name that
only one family has); ``available(family)`` lists a family's names; ``applicable(env)`` those that can
drive an env. A family's module is imported on first use, through its descriptor
(:mod:`joulegym.core.family`); importing this package imports none of them.
"""

from __future__ import annotations

from joulegym.baselines.generic import RandomPolicy
from joulegym.core.policy import (
    Policy,
    PolicyNotApplicable,
    applicable,
    available,
    env_config_for,
    make,
    register_policy,
    spec,
)

__all__ = [
    "Policy",
    "PolicyNotApplicable",
    "RandomPolicy",
    "applicable",
    "available",
    "env_config_for",
    "make",
    "register_policy",
    "spec",
]
