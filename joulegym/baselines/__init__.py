"""Reference policies: each paper's algorithm and the baselines it compared to, one module per family.

``make(name, **kw)`` builds a policy (``"family/name"``, ``make(name, family=...)``, or a short name that
only one family has); ``available(family)`` lists a family's names; ``applicable(env)`` those that can
drive an env. A family's module is imported on first use, through its descriptor
(:mod:`joulegym.core.family`); importing this package imports none of them.
"""

from __future__ import annotations

import inspect
from typing import Any

from joulegym.core import policy as _policy
from joulegym.core.policy import (
    Policy,
    PolicyNotApplicable,
    RandomPolicy,
    applicable,
    env_config_for,
    register_policy,
    spec,
)


def _family(family: str | None) -> str | None:
    """``family`` as registered (``"ETF"`` -> ``"etf"``); ``ValueError`` naming the families otherwise."""
    if family is None:
        return None
    from joulegym.core.family import families

    names = {f.name.lower(): f.name for f in families()}
    if family.lower() not in names:
        raise ValueError(f"family={family!r} is unknown; families: {sorted(names.values())}")
    return names[family.lower()]


def available(family: str | None = None, kind: str | None = None) -> list[str]:
    """Names of the policies for ``family`` (case-insensitive; generic ones included), optionally only those for
    ``kind`` (:func:`joulegym.core.policy.available`)."""
    return _policy.available(_family(family), kind)


def make(name: str, family: str | None = None, **kwargs: Any) -> Any:
    """Build the reference policy ``name`` with ``kwargs`` (e.g. ``make("etf", phi=0.7)``); a keyword the
    policy does not take raises ``ValueError`` naming the ones it does (``etf-fixed-phi:ph=0.5``)."""
    found = spec(name, _family(family) if family is not None and "/" not in name else family)
    try:
        return _policy.build(found, **kwargs)
    except TypeError as err:
        if "keyword argument" not in str(err):
            raise
        raise ValueError(f"policy {found.qualified_name!r} takes no keyword {sorted(kwargs)}; it takes: "
                         f"{_keywords(found.factory)}") from None


def _keywords(factory: Any) -> list[str]:
    """The keywords of a policy factory: its own, and (behind ``**kw``) those of the policy class it builds."""
    params = inspect.signature(factory).parameters.values()
    names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    if any(p.kind is p.VAR_KEYWORD for p in params):
        built = factory()  # the defaults always build (a cheap object: no env is touched)
        names |= {p.name for p in inspect.signature(type(built).__init__).parameters.values()
                  if p.name != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return sorted(names)


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
