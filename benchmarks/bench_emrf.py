"""Steps/s of ``joulegym/EMRF-v0`` (8 user slots) with the EMRF policy acting, against a no-op env.

Both envs are made with ``gym.make`` (same wrappers) and run in whole episodes by the core rollout loop
(:func:`joulegym.core.rollout.rollout`, through :func:`benchmarks.bench_envs.steps_per_second`), in the
same run, on one core. Reported:

- no-op steps/s; EMRF steps/s with the ``emrf`` policy acting (decision + LP included), and with a
  fixed action (:class:`benchmarks.bench_envs.FixedActionPolicy`); the ratio no-op / EMRF (lower is better);
- the same with the LP caches cleared before every step (every EMRF solve recomputed: the
  worst case, e.g. xi noise making every window's instance new);
- the LP's share of the step time: seconds spent inside the EMRF solver (``emrf_core``: fairness
  stage + the efficiency LP of Eqs. (15)-(17), solved by the env's default ``lp_solver="closed-form"``,
  timed where the env and the policy call it) over the run's time, cached and uncached;
- scipy HiGHS (what ``emrf_allocate`` uses by default) on the same instances: us per solve (lexmaxmin:
  LP1 + the max-min LPs; vertex: one LP), and the env's steps/s with ``lp_solver="highs"`` and the
  caches cleared every step, to show why the env uses the closed form (proven equal to HiGHS by
  ``tests/emrf/test_properties.py::test_closed_form_equals_highs``).

Both default ids run the ``apu-random`` mix (Poisson job arrivals): with the default
``admit_at_window=False`` its arrivals are events inside the window (simulator docstring, "Admission");
``--config '{"admit_at_window": true}'`` times the boundary-only admission for comparison.

Usage::

    python benchmarks/bench_emrf.py                         # EMRF-v0 and EMRF-apu-random-v0
    python benchmarks/bench_emrf.py --steps 20000 --ids joulegym/EMRF-v0
    python benchmarks/bench_emrf.py --config '{"admit_at_window": true}'   # config overrides (JSON) for every id
    python benchmarks/bench_emrf.py --users 8 16 32 64 --steps 5000       # cost growth in users (random actions)
    python benchmarks/bench_emrf.py --vector 4 256 --steps 20000          # the batched entry point vs single envs
    python benchmarks/bench_emrf.py --vector 256 --vector-ids joulegym/EMRFKnob-v0 joulegym/EMRFKnobDiscrete-v0
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from functools import partial
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import gymnasium as gym
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_envs import NOOP_ID, FixedActionPolicy, NoOpEnv, steps_per_second

import joulegym  # noqa: F401
from joulegym import baselines
from joulegym.core.rollout import rollout
from joulegym.envs.emrf import allocation


def emrf_policy(name: str = "emrf"):
    return baselines.make(name, family="emrf")


class _Uncached:
    """A policy wrapper that clears the EMRF caches before every decision (worst case)."""

    privileged = False

    def __init__(self, policy) -> None:
        self.policy = policy
        self.name = policy.name

    def reset(self, env, seed=None) -> None:
        self.env = env
        self.policy.reset(env, seed)

    def act(self, obs, info):
        allocation.emrf_core.cache_clear()
        allocation.basics.cache_clear()
        allocation.drf_progressive_core.cache_clear()
        self.env.unwrapped._derived_cache.clear()
        return self.policy.act(obs, info)


class _TimedLP:
    """Patch the EMRF solver where the env and the policy call it; accumulate the seconds spent in it."""

    def __init__(self) -> None:
        import joulegym.baselines.emrf as policy_module
        import joulegym.envs.emrf.env as env_module

        self.modules = (env_module, policy_module)
        self.original = allocation.emrf_core
        self.seconds = 0.0
        self.calls = 0

    def __enter__(self):
        original = self.original

        def timed(*args):
            start = time.perf_counter()
            try:
                return original(*args)
            finally:
                self.seconds += time.perf_counter() - start
                self.calls += 1

        for module in self.modules:
            module.emrf_core = timed
        return self

    def __exit__(self, *exc) -> None:
        for module in self.modules:
            module.emrf_core = self.original


def lp_share(env_id: str, steps: int, uncached: bool, **overrides) -> tuple[float, float, int]:
    """(share of the step time spent in the EMRF solver, steps/s of this timed run, solver calls per step)."""
    env = gym.make(env_id, **overrides)
    policy = emrf_policy()
    policy = _Uncached(policy) if uncached else policy
    with _TimedLP() as lp:
        start = time.perf_counter()
        done, seed = 0, 0
        while done < steps:  # whole episodes of the core rollout loop
            done += rollout(env, policy, seed=seed).length
            seed += 1
        total = time.perf_counter() - start
    return lp.seconds / total, done / total, lp.calls / done


class _Recording:
    """A policy wrapper that keeps the EMRF instance ``(C, xi_hat, w, eta)`` of every decision with work."""

    privileged = False

    def __init__(self, policy) -> None:
        self.policy, self.name, self.instances, self.env = policy, policy.name, [], None

    def reset(self, env, seed=None) -> None:
        self.policy.reset(env, seed)
        self.env = env

    def act(self, obs, info):
        inp = self.env.unwrapped.scheduler_inputs()  # what info["scheduler_inputs"] holds with info_level="full"
        active = np.flatnonzero(inp["active"])
        if active.size:
            self.instances.append((*inp["capacities"], tuple(np.asarray(inp["xi_cpu"])[active].tolist()),
                                   tuple(np.asarray(inp["weights"])[active].tolist()), float(inp["eta"])))
        return self.policy.act(obs, info)


def highs_cost(env_id: str, samples: int = 50, **overrides) -> tuple[float, float]:
    """Seconds per solve of scipy HiGHS (lexmaxmin, vertex) on the instances the env visits (for comparison)."""
    env = gym.make(env_id, **overrides)
    recorder = _Recording(emrf_policy())
    seed = 0
    while len(recorder.instances) < samples and seed < 100:
        rollout(env, recorder, seed=seed)
        seed += 1
    instances = recorder.instances[:samples]
    costs = []
    for args in (("lexmaxmin", "highs"), ("vertex", "highs")):
        start = time.perf_counter()
        for inst in instances:
            allocation.emrf_core.cache_clear()
            allocation.emrf_core(*inst, *args)
        costs.append((time.perf_counter() - start) / len(instances))
    return costs[0], costs[1]


def _random_sps(env: gym.Env, steps: int, seed: int) -> float:
    """Steps per CPU second of ``env`` under uniform random actions (sampled by the action space, as an agent's
    exploration would be; the no-op samples its own), resetting at episode ends."""
    env.action_space.seed(seed)
    env.reset(seed=seed)
    done = 0
    start = time.process_time()
    while done < steps:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        done += 1
        if terminated or truncated:
            env.reset()
    return done / max(time.process_time() - start, 1e-9)


def users_scaling(users: list[int], steps: int, repeats: int) -> None:
    """``EMRF-v0`` with random actions at ``max_users = n_users = U``; ratio to the no-op measured
    interleaved (no-op, env, no-op, env, ...), CPU time, median of ``repeats``; us per step and per user."""
    noop_env = gym.make(NOOP_ID)
    print(f"EMRF-v0, random actions, U users always present (random.n_users = [U, U]); median of {repeats}, "
          "CPU time, no-op interleaved")
    print(f"{'users':>5} {'steps/s':>10} {'no-op/s':>10} {'ratio':>7} {'us/step':>8} {'us/step/user':>13}")
    for u in users:
        env = gym.make("joulegym/EMRF-v0", max_users=u, random={**allocation_mix(), "n_users": [u, u]})
        runs = []
        for r in range(repeats):
            noop = _random_sps(noop_env, 100_000, r)
            rate = _random_sps(env, steps, r)
            runs.append((noop / rate, rate, noop))
        ratio, rate, noop = sorted(runs)[len(runs) // 2]
        print(f"{u:>5} {rate:>10,.0f} {noop:>10,.0f} {ratio:>7.1f} {1e6 / rate:>8.1f} {1e6 / rate / u:>13.2f}")


def allocation_mix() -> dict:
    from joulegym.workloads.rodinia import RANDOM_MIX

    return dict(RANDOM_MIX)


def vector_throughput(sizes: list[int], steps: int, repeats: int, env_id: str = "joulegym/EMRF-v0") -> None:
    """The batched entry point (``vectorization_mode="vector_entry_point"``) against single envs, random actions
    (pre-sampled): aggregate steps/s at each N, and its ratio to the aggregate steps/s of single envs (``gym.make``,
    seeded as the batch's instances, stepped in turn) measured in alternating chunks of the same process, CPU time,
    median of ``repeats`` (the targets: >= 5x at N = 256, >= 1x, i.e. no slower than four single envs, at N = 4)."""
    print(f"{env_id} batched entry point, random actions, against single envs (interleaved, CPU time)")
    print(f"{'N':>5} {'aggregate steps/s':>18} {'x single envs':>14}")
    for n in sizes:
        rates, ratios = [], []
        for r in range(repeats):
            rate, single = _batched_against_singles(env_id, n, steps, seed=r)
            rates.append(rate)
            ratios.append(rate / single)
        print(f"{n:>5} {statistics.median(rates):>18,.0f} {statistics.median(ratios):>13.2f}x "
              f"[{min(ratios):.2f}-{max(ratios):.2f}]")


def _batched_against_singles(env_id: str, n: int, steps: int, seed: int, chunks: int = 10) -> tuple[float, float]:
    """(batched aggregate steps/s, single envs' aggregate steps/s), measured in alternating chunks."""
    vec = gym.make_vec(env_id, num_envs=n, vectorization_mode="vector_entry_point")
    vec.reset(seed=seed)
    vec.action_space.seed(seed)
    batches = [vec.action_space.sample() for _ in range(16)]
    singles = [gym.make(env_id) for _ in range(min(n, 4))]
    for i, env in enumerate(singles):
        env.reset(seed=seed + i)
    calls = max(steps // n // chunks, 1)
    single_steps = max(steps // chunks, len(singles))
    vec_s = single_s = 0.0
    k = 0
    for chunk in range(chunks):
        start = time.process_time()
        for c in range(calls):
            vec.step(batches[(chunk + c) % 16])
        vec_s += time.process_time() - start
        start = time.process_time()
        for _ in range(single_steps):
            env = singles[k % len(singles)]
            _, _, terminated, truncated, _ = env.step(batches[k % 16][k % n])
            if terminated or truncated:
                env.reset()
            k += 1
        single_s += time.process_time() - start
    return n * calls * chunks / max(vec_s, 1e-9), single_steps * chunks / max(single_s, 1e-9)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", nargs="*", type=int,
                        help="cost growth in users instead: EMRF-v0 random actions at these user counts")
    parser.add_argument("--vector", nargs="*", type=int,
                        help="batched entry point instead: aggregate steps/s at these num_envs")
    parser.add_argument("--vector-ids", nargs="*", default=["joulegym/EMRF-v0"],
                        help="ids timed by --vector (e.g. joulegym/EMRFKnob-v0 joulegym/EMRFKnobDiscrete-v0)")
    parser.add_argument("--ids", nargs="*", default=["joulegym/EMRF-v0", "joulegym/EMRF-apu-random-v0"])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3, help="best of N runs per figure (shared machines)")
    parser.add_argument("--config", type=json.loads, default={},
                        help='config overrides for every id, as JSON, e.g. \'{"admit_at_window": true}\'')
    args = parser.parse_args(argv)
    overrides = args.config
    if NOOP_ID not in gym.registry:
        gym.register(NOOP_ID, entry_point=NoOpEnv, max_episode_steps=1000)  # episodes end: rollout runs them
    if args.users:
        users_scaling(args.users, args.steps, args.repeats)
        return
    if args.vector:
        for env_id in args.vector_ids:
            vector_throughput(args.vector, args.steps, args.repeats, env_id)
        return

    def best(make_env, steps: int, make_policy) -> float:
        return max(steps_per_second(make_env(), steps, make_policy()) for _ in range(args.repeats))

    noop = best(lambda: gym.make(NOOP_ID), max(args.steps * 10, 100_000), FixedActionPolicy)
    print(f"no-op env (gym.make, same wrappers): {noop:,.0f} steps/s (best of {args.repeats})")
    for env_id in args.ids:
        make_env = partial(gym.make, env_id, **overrides)
        with_policy = best(make_env, args.steps, emrf_policy)
        fixed = best(make_env, args.steps, FixedActionPolicy)
        uncached = best(make_env, max(args.steps // 2, 500), lambda: _Uncached(emrf_policy()))
        share_cached, _, calls_cached = lp_share(env_id, args.steps, uncached=False, **overrides)
        share_uncached, _, calls_uncached = lp_share(env_id, max(args.steps // 4, 500), uncached=True, **overrides)
        highs_lex, highs_vertex = highs_cost(env_id, **overrides)
        highs_env = steps_per_second(gym.make(env_id, **{**overrides, "lp_solver": "highs"}),
                                     max(args.steps // 40, 100), _Uncached(emrf_policy()))
        print(f"\n{env_id} (max_users = {make_env().unwrapped.max_users}"
              f"{', config ' + json.dumps(overrides) if overrides else ''})")
        print(f"  emrf policy acting, LP cached      {with_policy:>10,.0f} steps/s   ratio {noop / with_policy:6.1f}")
        print(f"  fixed action (no policy)           {fixed:>10,.0f} steps/s   ratio {noop / fixed:6.1f}")
        print(f"  emrf policy, caches cleared/step   {uncached:>10,.0f} steps/s   ratio {noop / uncached:6.1f}")
        print(f"  LP share of step time, cached      {share_cached:>10.1%}   ({calls_cached:.1f} solver calls/step)")
        print(f"  LP share of step time, uncached    {share_uncached:>10.1%}   "
              f"({calls_uncached:.1f} solver calls/step)")
        print(f"  scipy HiGHS, same instances        {highs_lex * 1e6:>10.0f} us/solve lexmaxmin, "
              f"{highs_vertex * 1e6:.0f} us/solve vertex")
        print(f"  env with lp_solver=highs, uncached {highs_env:>10,.0f} steps/s   ratio {noop / highs_env:6.1f}")
    print("\nratio = no-op steps/s / env steps/s (lower is better; measured in this run)")


if __name__ == "__main__":
    main()
