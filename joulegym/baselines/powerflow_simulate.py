"""A whole PowerFlow trace with one policy, without writing a loop (Gu et al. §6; ``docs/families/powerflow.md`` §12).

:func:`simulate` runs a trace through :class:`~joulegym.envs.powerflow.env.PowerFlowEnv` with the core rollout loop,
so a standalone run and an env episode are one code path. It lives with the reference policies, above the env:
it resolves policy names through the policy registry (:func:`joulegym.core.policy.make`).
"""

from __future__ import annotations

import math
from typing import Any

from joulegym.baselines.powerflow import paper_env_config
from joulegym.core.policy import make
from joulegym.core.rollout import rollout
from joulegym.envs.powerflow.cluster import ClusterSpec
from joulegym.envs.powerflow.env import SIM_SETTINGS, PowerFlowEnv
from joulegym.envs.powerflow.interface import SimResult
from joulegym.workloads import dl_jobs
from joulegym.workloads.traces import JobTrace

__all__ = ["SIMULATE_MAX_STEPS", "SIMULATE_SLOTS", "simulate"]

SIMULATE_MAX_STEPS = 10_000_000  # the core rollout's guard; simulate() has no step limit of its own
SIMULATE_SLOTS = 128  # simulate()'s first number of slots (x 4 while a job would overflow, up to one per job)


class _Overflow(Exception):
    """A schedulable job found no slot: :func:`simulate` abandons the episode and reruns it with more slots."""


def _stop_on_overflow(obs: Any, reward: Any, info: dict[str, Any]) -> None:
    if info["overflow_steps"]:
        raise _Overflow


def _as_jobs(trace: Any, device: str, seed: int, gpn: int) -> dl_jobs.DLJobs:
    if isinstance(trace, dl_jobs.DLJobs):
        return trace
    if isinstance(trace, JobTrace):
        return dl_jobs.to_powerflow_jobs(trace, device=device, seed=seed, gpn=gpn)
    raise ValueError(f"trace must be a JobTrace or DLJobs, got {type(trace).__name__}")


def simulate(trace: Any, policy: Any = "powerflow", *, cluster: ClusterSpec | tuple[int, int] | None = None,
             eta: float = 0.6, seed: int = 0, **settings: Any) -> SimResult:
    """Run ``trace`` (a :class:`~joulegym.workloads.traces.JobTrace` or :class:`~joulegym.workloads.dl_jobs.DLJobs`)
    with ``policy`` through :class:`~joulegym.envs.powerflow.env.PowerFlowEnv` and :func:`joulegym.core.rollout.rollout`
    (``docs/families/powerflow.md`` §12).

    The env gets ``action_mode="request"`` (every reference policy's decision encodes exactly, requested GPU
    counts that are not powers of two included), the paper's evaluation conditions for the policy (its
    ``paper_config``: life-cycle, predictor, power constraint, §6.1) and its own ``env_config`` (placement) under
    ``settings`` (:func:`joulegym.baselines.powerflow.paper_env_config`), and enough slots that no schedulable job
    is ever left out:
    :data:`SIMULATE_SLOTS` first; an episode in which a job would find no slot is abandoned at that step and run
    again with four times as many (at most one per job). With every job in a slot the decisions do not depend
    on the number of slots. The policy object is the one that acts, exactly as in any env episode.

    :param policy: a policy object (``reset(env, seed)``, ``act(obs, info)``; e.g. a PowerFlow reference policy)
        or a registered PowerFlow policy name (``"powerflow"``, ``"tiresias"``, ...; built with
        :func:`joulegym.core.policy.make`).
    :param cluster: a :class:`ClusterSpec` or ``(nodes, gpus_per_node)``; default 16 x 8 V100.
    :param eta: power budget fraction, ``power_limit = eta * G * P_max`` (in (0, 1]).
    :param seed: seed of the episode (and of a :class:`JobTrace`'s model/batch-size completion).
    :param settings: further simulator settings (:class:`~joulegym.envs.powerflow.interface.SimConfig` fields:
        ``predictor``, ``overhead``, ``truth_noise``, ``horizon_s``, ...); ``power_constraint`` defaults to
        ``"none"`` unless the policy says.
    :returns: :class:`~joulegym.envs.powerflow.interface.SimResult` with ``avg_jct_s``, ``total_energy_j``,
        ``makespan_s`` and the breakdown.
    """
    allowed = sorted(set(SIM_SETTINGS) - {"eta"})
    unknown = sorted(set(settings) - set(allowed))
    if unknown:
        raise ValueError(f"unknown simulate() options {unknown}; allowed: {allowed}")
    if isinstance(policy, str):
        policy = make(policy, family="powerflow")
    elif not (callable(getattr(policy, "reset", None)) and callable(getattr(policy, "act", None))):
        raise ValueError(f"policy must be a PowerFlow policy name (e.g. 'powerflow') or an object with reset(env, "
                         f"seed) and act(obs, info), got {type(policy).__name__} {policy!r}")
    if cluster is None:
        cluster = ClusterSpec()
    elif isinstance(cluster, tuple | list) and len(cluster) == 2:
        cluster = ClusterSpec(*cluster)
    elif not isinstance(cluster, ClusterSpec):
        raise ValueError(f"cluster must be a ClusterSpec or (nodes, gpus_per_node), got {cluster!r}")
    jobs = _as_jobs(trace, cluster.device, seed, cluster.gpus_per_node)
    # a standalone run is unconstrained and runs until every job is done (docs §12); horizon_s= truncates, loudly
    config = {"power_constraint": "none", "horizon_s": math.inf}
    # the paper's evaluation conditions for this policy (its paper_config: §6.1), then its system (env_config)
    config.update({k: v for k, v in paper_env_config(policy, settings).items() if k in SIM_SETTINGS})
    config.update(nodes=cluster.nodes, gpus_per_node=cluster.gpus_per_node, device=cluster.device, eta=eta,
                  action_mode="request", max_steps=SIMULATE_MAX_STEPS)
    slots = min(len(jobs), SIMULATE_SLOTS)
    while True:
        env = PowerFlowEnv(max_slots=slots, **config)
        try:
            rollout(env, policy, seed=seed, options={"trace": jobs}, max_steps=SIMULATE_MAX_STEPS,
                    on_step=None if slots == len(jobs) else _stop_on_overflow)
        except _Overflow:
            slots = min(len(jobs), 4 * slots)
            continue
        return env.sim.result()
