"""The PowerFlow family (Gu et al., arXiv 2304.06381): DL training jobs on a GPU cluster under a power budget.

- :mod:`~joulegym.envs.powerflow.cluster`: topology, buddy/packed, first-fit and affinity placement.
- :mod:`~joulegym.envs.powerflow.simulator`: the discrete-event simulator (no Gymnasium).
- :mod:`~joulegym.envs.powerflow.actions`: the action modes (``alloc``, ``gpus``, ``micro``, ``priority``).
- :mod:`~joulegym.envs.powerflow.env`: ``joulegym/PowerFlow-v0`` and :func:`simulate` (a whole trace through the env).

The model, the equations and our choices: ``docs/families/powerflow.md``.
"""

from joulegym.envs.powerflow.cluster import ClusterSpec
from joulegym.envs.powerflow.env import PowerFlowEnv, simulate
from joulegym.envs.powerflow.simulator import PowerFlowSim, SchedView, SimConfig, SimResult

__all__ = ["ClusterSpec", "PowerFlowEnv", "PowerFlowSim", "SchedView", "SimConfig", "SimResult", "simulate"]
