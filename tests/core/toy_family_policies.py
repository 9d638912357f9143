"""The toy family's policy module (what ``baselines/toy.py`` would be): importing it registers them."""

from tests.core.toy_family import register_policies

register_policies()
