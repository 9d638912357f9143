"""The EMRF family (Tang et al.): fair and efficient sharing of a coupled CPU-GPU APU among users.

- :mod:`~joulegym.envs.emrf.allocation`: EMRF / DRF / WFQ, fair share, delta bound, SI/EF/PE
  diagnostics (pure functions).
- :mod:`~joulegym.envs.emrf.simulator`: the event-driven fluid simulator (no Gymnasium).
- :mod:`~joulegym.envs.emrf.env`: ``joulegym/EMRF-v0`` and its action-mode kinds.
"""
