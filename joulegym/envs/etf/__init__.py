"""The ETF family (Liang et al., SEC '23): energy-time fair time-sharing of one GPU with per-app DVFS.

- :mod:`~joulegym.envs.etf.allocation`: Algorithm 1 and its closed forms (pure functions).
- :mod:`~joulegym.envs.etf.metrics`: F_T, F_E, F_S, Jain.
- :mod:`~joulegym.envs.etf.simulator`: the fluid time-sharing simulator (no Gymnasium).
- :mod:`~joulegym.envs.etf.actions`: the action modes ``split``, ``phi``, ``dvfs``.
- :mod:`~joulegym.envs.etf.env`: :class:`~joulegym.envs.etf.env.ETFEnv`, behind ``joulegym/ETF-v0``
  (``split``), ``joulegym/ETFPhi-v0`` (``phi``) and ``joulegym/ETFDVFS-v0`` (``dvfs``).

The model, the equations, the errata we chose and what reproduces: ``docs/families/etf.md``.
"""
