"""The Qin family (Guan and Ababei, IEEE T-SUSC 2024): hierarchical cluster/node scheduling with DVFS in a
heterogeneous datacenter.

- :mod:`~joulegym.envs.qin.scheduling`: the pure algorithms (eq. 16 interference score, D-choice greedy Alg. 1-4,
  DAC §6, Kubernetes, Paragon, Mage, the §3.6 DVFS controller).
- :mod:`~joulegym.envs.qin.predictors`, :mod:`~joulegym.envs.qin.prediction`: collaborative filtering and the
  Kalman filter (§3.1-3.2), the profiling oracle and the CF predictions of every job (§4).
- :mod:`~joulegym.envs.qin.simulator` (with :mod:`~joulegym.envs.qin.model`, :mod:`~joulegym.envs.qin.dynamics`,
  :mod:`~joulegym.envs.qin.ticks`, :mod:`~joulegym.envs.qin.view`): the cluster discrete-event simulator.
- :mod:`~joulegym.envs.qin.node_policies` (with :mod:`~joulegym.envs.qin.dvfs`): the node-level inner policies
  (``linux``, ``sniper-pinned``, ``qin-node``).
- :mod:`~joulegym.envs.qin.cluster_env`, :mod:`~joulegym.envs.qin.node_env`: ``QinCluster-v0``, ``Qin-v0``,
  ``QinNode-v0``.

The model, the equations and our choices: ``docs/families/qin.md``. Submodules are imported on use, so
importing this package stays light.
"""
