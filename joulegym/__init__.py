"""joulegym: Gymnasium environments for energy- and power-aware scheduling of compute hardware.

``import joulegym`` registers every env id (``joulegym/<Kind>[-<scenario>]-v0``) with Gymnasium.
``python -m joulegym list`` prints them with a one-line description.
"""

from joulegym.scenarios import register_all as _register_all

__version__ = "0.1.0"

_register_all()

from joulegym import baselines  # noqa: E402  (registers the reference policies)

__all__ = ["__version__", "baselines"]
