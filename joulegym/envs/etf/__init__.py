"""The ETF family (Liang et al., SEC'23): energy-time fair time-sharing of one GPU with per-app DVFS.

- :mod:`~joulegym.envs.etf.allocation`: Algorithm 1 and its closed forms (pure functions).
- :mod:`~joulegym.envs.etf.metrics`: F_T, F_E, F_S, Jain.
- :mod:`~joulegym.envs.etf.simulator`: the fluid time-sharing simulator (no Gymnasium).
- :mod:`~joulegym.envs.etf.time_share` (``joulegym/ETF-v0``), :mod:`~joulegym.envs.etf.phi_knob`
  (``joulegym/ETFPhi-v0``), :mod:`~joulegym.envs.etf.tenant_dvfs` (``joulegym/ETFDVFS-v0``).
"""
