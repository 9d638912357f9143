"""The EMRF family (Tang et al.): fair and efficient sharing of a coupled CPU-GPU APU among users.

- :mod:`~joulegym.envs.emrf.allocation`: EMRF / DRF / WFQ, fair share, delta bound, SI/EF/PE
  diagnostics (pure functions).
- :mod:`~joulegym.envs.emrf.simulator`: the event-driven fluid simulator (no Gymnasium).
- :mod:`~joulegym.envs.emrf.env`: :class:`~joulegym.envs.emrf.env.EMRFEnv`, one class for the four kinds
  (``EMRF``, ``EMRFResidual``, ``EMRFKnob``, ``EMRFKnobDiscrete``: its action modes).

The model, its equations, the errata we chose and the env table: ``docs/families/emrf.md``.
"""
