"""The DREAM family (Kim et al., "DREAM: A Dynamic Scheduler for Dynamic Real-time Multi-model ML
Workloads", ASPLOS'23): periodic multi-model inference with per-frame deadlines on a SoC of 2-3 dataflow
sub-accelerators.

- :mod:`~joulegym.envs.dream.tables`: cost tables, workloads, decisions, common random numbers, UXCost (Alg. 2).
- :mod:`~joulegym.envs.dream.simulator`: the discrete-event simulator (no Gymnasium);
  :mod:`~joulegym.envs.dream.view`: the read-only view schedulers decide on.
- :mod:`~joulegym.envs.dream.mapscore`: DREAM itself (MapScore Alg. 1, smart frame drop, Supernet switching,
  the (alpha, beta) tuning) as an inner policy; :mod:`~joulegym.envs.dream.search`: the (alpha, beta) search and
  the online adaptivity engine; :mod:`~joulegym.envs.dream.schedulers`: the baselines the paper compares with.
- :mod:`~joulegym.envs.dream.env`: ``joulegym/DREAM-v0``; :mod:`~joulegym.envs.dream.params_env`:
  ``joulegym/DREAMParams-v0``.

The model, the equations and our choices: ``docs/families/dream.md``. Submodules are imported on use, so
importing this package stays light.
"""
