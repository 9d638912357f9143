"""The DREAM family (Kim et al., "DREAM: A Dynamic Scheduler for Dynamic Real-time Multi-model ML
Workloads", ASPLOS'23): periodic multi-model inference with per-frame deadlines on a SoC of 2-3 dataflow
sub-accelerators.

- :mod:`~joulegym.envs.dream.simulator`: the discrete-event simulator (no Gymnasium), UXCost (Alg 2).
- :mod:`~joulegym.envs.dream.scheduling`: the pure algorithms (MapScore Alg 1, smart frame drop, Supernet
  switching, the alpha/beta search and online adaptivity engine) and every scheduler the paper compares.
- :mod:`~joulegym.envs.dream.env`: ``joulegym/DREAM-v0`` and ``joulegym/DREAMParams-v0``.

The model, the equations and our choices: ``docs/families/dream.md``. Submodules are imported on use, so
importing this package stays light.
"""
