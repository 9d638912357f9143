"""Shared helpers of the EMRF tests: family-scoped policies and policy wrappers for the core rollout loop."""

from __future__ import annotations

from typing import Any

from joulegym import baselines
from tests.probe import Probe

__all__ = ["Probe", "policy"]


def policy(name: str, **kwargs: Any):
    """The EMRF reference policy ``name`` (family-scoped, so other families' modules are not loaded)."""
    return baselines.make(name, family="emrf", **kwargs)
