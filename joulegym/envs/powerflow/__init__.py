"""The PowerFlow family (Gu et al., arXiv 2304.06381): DL training jobs on a GPU cluster under a power budget.

- :mod:`~joulegym.envs.powerflow.cluster`: topology, buddy/packed, first-fit and affinity placement.
- :mod:`~joulegym.envs.powerflow.profiles`: the true and predicted per-configuration profiles, ``P_max``.
- :mod:`~joulegym.envs.powerflow.interface`: the simulator's settings, decision, view and result types.
- :mod:`~joulegym.envs.powerflow.simulator`: the discrete-event simulator (no Gymnasium).
- :mod:`~joulegym.envs.powerflow.actions`: the action modes (``alloc``, ``request``, ``micro``, ``priority``).
- :mod:`~joulegym.envs.powerflow.env`: ``joulegym/PowerFlow-v0``.

A whole trace with one policy: :func:`joulegym.baselines.powerflow_simulate.simulate` (it resolves policy names
through the policy registry, a layer above the env).

The model, the equations and our choices: ``docs/families/powerflow.md``.
"""

from joulegym.envs.powerflow.cluster import ClusterSpec
from joulegym.envs.powerflow.env import PowerFlowEnv
from joulegym.envs.powerflow.interface import Decision, SchedView, SimConfig, SimResult
from joulegym.envs.powerflow.simulator import PowerFlowSim

__all__ = ["ClusterSpec", "Decision", "PowerFlowEnv", "PowerFlowSim", "SchedView", "SimConfig", "SimResult"]
