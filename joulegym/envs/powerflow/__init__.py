"""The PowerFlow family (Gu et al., arXiv 2304.06381): DL training jobs on a GPU cluster under a power budget.

- :mod:`~joulegym.envs.powerflow.cluster`: topology, buddy/packed and first-fit placement.
- :mod:`~joulegym.envs.powerflow.simulator`: the discrete-event simulator and :func:`simulate`.
- :mod:`~joulegym.envs.powerflow.env`: ``joulegym/PowerFlow-v0`` (imported lazily by the registry).
"""

from joulegym.envs.powerflow.cluster import ClusterSpec
from joulegym.envs.powerflow.simulator import PowerFlowSim, SchedView, SimConfig, SimResult, simulate

__all__ = ["ClusterSpec", "PowerFlowSim", "SchedView", "SimConfig", "SimResult", "simulate"]
