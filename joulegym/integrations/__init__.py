"""Scale-out integrations: Ray Tune sweeps, evaluation episodes as Ray tasks, RLlib env registration
(docs/ray.md).

The optional extra ``pip install "joulegym[ray]"`` installs Ray. Nothing here imports Ray at module import time,
and ``import joulegym`` never imports this package, so the base install stays light.

Layer (docs/architecture.md): above ``agents``, below ``evaluation`` and the CLIs. The modules here know the
envs and Ray, not the evaluation loop or the training code: ``evaluate.py`` and ``train.py`` pass their own
functions in (:class:`~joulegym.integrations.parallel.RayEvaluate`,
:func:`~joulegym.integrations.sweeps.run_sweep`), so a Ray task runs exactly the code the serial path runs.
"""

from __future__ import annotations

RAY_EXTRA_HINT = 'Ray is not installed: pip install "joulegym[ray]"'


def require_ray():
    """Import and return ``ray``; an ImportError that names the extra when it is missing."""
    try:
        import ray
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError(RAY_EXTRA_HINT) from err
    return ray
