"""PowerFlow benchmarks, on one core.

1. A full Alibaba1901-scale episode (synthetic trace: 1901 jobs / 24 h, 16 x 8 V100) with
   :func:`joulegym.baselines.powerflow_simulate.simulate` — since the core migration an env episode through
   :func:`joulegym.core.rollout.rollout` (observations, masks, encode/decode of every decision) — with the
   PowerFlow policy (target: < 30 s) and with Tiresias (docs/families/powerflow.md §12 has the figures).
2. ``joulegym/PowerFlow-tiny-v0`` steps/s with the env's reference policy (``powerflow-strict``, decision
   cost included; target >= 2,000) next to a no-op env made with ``gym.make`` and stepped the same way in
   the same run, and their ratio (:mod:`bench_envs`).
3. ``--engine``: the event-engine cost (SimPy unless a benchmark shows it is the bottleneck).
   The PowerFlow episode of (1) is replayed through SimPy with the same event stream — one process per job
   (arrival, pre-run, then a timeout to its next rate change, interrupted and re-armed at every decision
   that reconfigures it) and a scheduler process waking at every decision point — with *no* modelling,
   policy or bookkeeping at all, and timed next to the whole (SimPy-driven) episode.

Usage::

    python benchmarks/bench_powerflow.py [--steps 20000] [--skip-full] [--engine]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gymnasium as gym
from bench_envs import NOOP_ID, FixedActionPolicy, NoOpEnv, steps_per_second

from joulegym.baselines.powerflow import paper_env_config
from joulegym.baselines.powerflow_simulate import simulate
from joulegym.core.policy import make
from joulegym.core.rollout import rollout
from joulegym.envs.powerflow import ClusterSpec, PowerFlowEnv
from joulegym.workloads import dl_jobs

TINY_ID = "joulegym/PowerFlow-tiny-v0"
REFERENCE = "powerflow-strict"


def alibaba_jobs() -> dl_jobs.DLJobs:
    return dl_jobs.to_powerflow_jobs(dl_jobs.alibaba_like_trace(1901, seed=0), seed=0)


def full_episode(policy: str, eta: float = 0.6) -> tuple[float, dict]:
    jobs = alibaba_jobs()
    start = time.perf_counter()
    result = simulate(jobs, policy, cluster=ClusterSpec(16, 8), eta=eta)
    return time.perf_counter() - start, result.metrics


class _Recorder:
    """Wraps a policy and records, at every decision, its time and the jobs whose GPUs or frequency it changed (an
    observer of the simulator: called after every ``apply``)."""

    def __init__(self, policy) -> None:
        self.policy, self.name, self.privileged = policy, policy.name, policy.privileged
        self.decisions: list[tuple[float, list[int]]] = []
        self.sim = None
        self._held: dict[int, tuple] = {}  # running job -> (GPUs, frequency level) after the last decision

    def reset(self, env, seed=None) -> None:
        self.policy.reset(env, seed)
        sim = env.unwrapped.sim
        if sim is not self.sim:
            sim.add_observer(self._record)
            self.sim = sim
        self._held = {}

    def _record(self, sim, decision) -> None:
        # only a decision changes a job's GPUs or frequency: what a job still running held after the previous
        # decision is what it held just before this one
        held = {j: (sim.gpus[j], int(sim.fl[j])) for j in sim.running.tolist()}
        self.decisions.append((sim.now, [j for j, state in held.items() if self._held.get(j) != state]))
        self._held = held

    def act(self, obs, info):
        return self.policy.act(obs, info)


def event_stream(eta: float = 0.6) -> tuple[float, dict]:
    """Run the PowerFlow episode, recording its decision times and the jobs each decision reconfigures."""
    jobs = alibaba_jobs()
    pol = make("powerflow", family="powerflow")
    env = PowerFlowEnv(nodes=16, gpus_per_node=8, eta=eta, max_slots=len(jobs), action_mode="request",
                       max_steps=10**7, **paper_env_config(pol))
    recorder = _Recorder(pol)
    start = time.perf_counter()
    rollout(env, recorder, 0, options={"trace": jobs})
    seconds = time.perf_counter() - start
    sim = recorder.sim
    return seconds, {"arrive": jobs.submit_s.tolist(), "prerun": sim.cfg.prerun_s, "decisions": recorder.decisions,
                     "finish": sim.finish.tolist()}


def simpy_replay(stream: dict) -> tuple[float, int]:
    """The same event stream through SimPy processes (engine only); returns (seconds, events processed)."""
    import simpy

    env = simpy.Environment()
    procs: dict[int, simpy.Process] = {}
    running: set[int] = set()
    events = [0]

    def job(j: int, arrive: float, finish: float):
        yield env.timeout(arrive)
        yield env.timeout(stream["prerun"])
        events[0] += 2
        running.add(j)
        while True:  # runs until its completion, re-armed whenever a decision reconfigures it
            try:
                yield env.timeout(max(0.0, finish - env.now))
                events[0] += 1
                return
            except simpy.Interrupt:
                events[0] += 1

    def scheduler():
        for t, changed in stream["decisions"]:
            yield env.timeout(max(0.0, t - env.now))
            events[0] += 1
            for j in changed:
                if j in running and procs[j].is_alive:
                    procs[j].interrupt()

    start = time.perf_counter()
    for j, (a, f) in enumerate(zip(stream["arrive"], stream["finish"])):
        procs[j] = env.process(job(j, a, f))
    env.process(scheduler())
    env.run()
    return time.perf_counter() - start, events[0]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--skip-full", action="store_true", help="skip the full-episode timings")
    parser.add_argument("--engine", action="store_true", help="also time the SimPy replay of the event stream")
    args = parser.parse_args(argv)
    if not args.skip_full:
        full_episode("powerflow")  # warm the per-(model, BS) profile caches, as a training run would be
        for policy in ("powerflow", "tiresias"):
            seconds, m = full_episode(policy)
            print(f"full Alibaba1901-scale episode, {policy:<10}: {seconds:6.2f} s  "
                  f"(avg JCT {m['avg_jct_h']:.3f} h, energy {m['total_energy_kwh']:.1f} kWh, "
                  f"{int(m['decisions'])} decisions)")
    if args.engine:
        _, stream = event_stream()
        episode_s = full_episode("powerflow")[0]
        simpy_s, n_events = simpy_replay(stream)
        n_changes = sum(len(c) for _, c in stream["decisions"])
        print(f"engine: PowerFlow episode (SimPy calendar + model + policy + books) {episode_s:.2f} s; SimPy replay of "
              f"its event stream alone ({len(stream['decisions'])} decisions, {n_changes} reconfigurations, "
              f"{n_events} process events) {simpy_s:.2f} s = {simpy_s / episode_s:.0%} of the episode")
    if NOOP_ID not in gym.registry:
        gym.register(NOOP_ID, entry_point=NoOpEnv, max_episode_steps=1000)
    noop = steps_per_second(gym.make(NOOP_ID), max(args.steps * 10, 100_000), FixedActionPolicy())
    policy = make(REFERENCE, family="powerflow")
    env = gym.make(TINY_ID, **paper_env_config(policy))
    ref = steps_per_second(env, args.steps, policy)
    print(f"{TINY_ID} with {REFERENCE}: {ref:,.0f} steps/s; no-op env: {noop:,.0f} steps/s; "
          f"ratio {noop / ref:.1f}")


if __name__ == "__main__":
    main()
