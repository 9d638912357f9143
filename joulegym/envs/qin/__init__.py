"""The Qin family (Guan and Ababei, IEEE T-SUSC 2024): hierarchical cluster/node scheduling with DVFS in a
heterogeneous datacenter.

- :mod:`~joulegym.envs.qin.scheduling`: the pure algorithms (eq. 16 interference score, D-choice greedy Alg. 1-4,
  DAC §6, Kubernetes, Paragon, Mage, the §3.6 DVFS controller).
- :mod:`~joulegym.envs.qin.simulator`: the cluster discrete-event simulator (no Gymnasium).
- :mod:`~joulegym.envs.qin.node_policies`: the pluggable node-level policies (``linux``, ``sniper_pinned``,
  ``qin_node``).

The model, the equations and our choices: ``docs/families/qin.md``. Submodules are imported on use, so
importing this package stays light.
"""
