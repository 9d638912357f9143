"""Evaluation throughput: serial vs Ray tasks, and the same code path on an external Ray head
(docs/ray.md).

    python benchmarks/bench_ray.py                      # 2 Ray workers on this machine, 3 repeats
    python benchmarks/bench_ray.py --repeats 5 --out results/bench-ray

Method: each workload is a list of (policy, seed) episodes on one env id, evaluated by
``joulegym.evaluation.runner.evaluate`` (serial, this process) and by
``joulegym.integrations.parallel.RayEvaluate`` (one Ray task per episode) on a local Ray with ``--workers`` CPUs,
started once before the timed runs (its start-up time is reported apart). Serial and Ray runs alternate, one warm-up
Ray run first (workers import joulegym and the policies). Reported per workload, median over ``--repeats``: wall
seconds, episodes/s, the speed-up serial wall / Ray wall, the driver's CPU seconds (``time.process_time``) and the
machine's busy CPU seconds (``/proc/stat``, every process: Ray workers included, and any other load). Every Ray run's
table must equal the serial one exactly (checked, not assumed).

External head: a second local Ray head (``ray start --head --block`` on free ports,
:func:`joulegym.integrations.parallel.local_head`) is started, the driver connects to its address exactly as to a
cluster (``ray.init(address=...)``, token authentication: ``RAY_AUTH_MODE=token``) and runs the same workloads once,
again checked against the serial tables.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

# the same loop as ``python evaluate.py``; one thread per process as the other benchmarks
os.environ.setdefault("OMP_NUM_THREADS", "1")

WORKLOADS = {
    # ~7 ms episodes: the per-task overhead of Ray dominates
    "etf-light": ("joulegym/ETF-tx2-fig6-random-v0", ("random", "etf", "tf", "ef"), 10),
    # ~0.45 s episodes: Ray's overhead is small against the work
    "qin-heavy": ("joulegym/Qin-v0", ("random", "qin"), 6),
}


def _busy_cpu_s() -> float:
    """Busy CPU seconds of the whole machine so far (/proc/stat; nan where it does not exist)."""
    try:
        fields = [float(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except OSError:
        return float("nan")
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)
    return (sum(fields) - idle) / os.sysconf("SC_CLK_TCK")


def _entries(env_id: str, names: tuple[str, ...]) -> list:
    import gymnasium as gym

    from joulegym import baselines
    from joulegym.evaluation.runner import PolicyEntry

    env = gym.make(env_id)
    family, applicable = env.unwrapped.family, baselines.applicable(env)
    env.close()
    chosen = [n for n in names if n in applicable]
    return [PolicyEntry(n, "reference", n, family=family) for n in chosen]


def _timed(fn: Callable[[], pd.DataFrame]) -> tuple[pd.DataFrame, float, float, float]:
    cpu, busy, wall = time.process_time(), _busy_cpu_s(), time.perf_counter()
    frame = fn()
    return frame, time.perf_counter() - wall, time.process_time() - cpu, _busy_cpu_s() - busy


def measure(repeats: int, workers: int) -> tuple[pd.DataFrame, dict[str, float]]:
    import joulegym  # noqa: F401
    from joulegym.evaluation.runner import eval_seeds, evaluate
    from joulegym.integrations.parallel import RayEvaluate, local_head, ray_session

    ray_evaluate = RayEvaluate(evaluate)
    plans = {name: (env_id, _entries(env_id, names), eval_seeds(seeds))
             for name, (env_id, names, seeds) in WORKLOADS.items()}
    rows, extra = [], {}
    serial_tables = {}
    start = time.perf_counter()
    with ray_session(None, num_cpus=workers, object_store_memory=100 * 2**20):
        extra["ray_start_s"] = time.perf_counter() - start
        for name, (env_id, entries, seeds) in plans.items():
            episodes = len(entries) * len(seeds)
            _, warm, _, _ = _timed(lambda: ray_evaluate(env_id, entries, seeds, record=False)[0])  # noqa: B023
            extra[f"{name}_ray_warmup_s"] = warm
            for mode, fn in (("serial", evaluate), ("ray", ray_evaluate)):
                walls, cpus, busies = [], [], []
                for _ in range(repeats):
                    frame, wall, cpu, busy = _timed(lambda fn=fn: fn(env_id, entries, seeds, record=False)[0])  # noqa: B023
                    if mode == "serial":
                        serial_tables[name] = frame.to_csv(index=False)
                    elif frame.to_csv(index=False) != serial_tables[name]:
                        raise AssertionError(f"{name}: the Ray table differs from the serial one")
                    walls.append(wall)
                    cpus.append(cpu)
                    busies.append(busy)
                rows.append({"workload": name, "env_id": env_id, "mode": f"{mode}" + (f" ({workers} workers)"
                             if mode == "ray" else ""), "episodes": episodes,
                             "wall_s": statistics.median(walls), "episodes_per_s": episodes / statistics.median(walls),
                             "driver_cpu_s": statistics.median(cpus), "machine_busy_cpu_s": statistics.median(busies)})
    os.environ.setdefault("RAY_AUTH_MODE", "token")  # a head started by `ray start` requires the cluster token
    start = time.perf_counter()
    with local_head(num_cpus=workers) as address, ray_session(address):
        extra["external_head_start_and_connect_s"] = time.perf_counter() - start
        for name, (env_id, entries, seeds) in plans.items():
            ray_evaluate(env_id, entries, seeds, record=False)  # warm-up of the head's workers
            frame, wall, cpu, busy = _timed(lambda: ray_evaluate(env_id, entries, seeds, record=False)[0])  # noqa: B023
            if frame.to_csv(index=False) != serial_tables[name]:
                raise AssertionError(f"{name}: the external head's table differs from the serial one")
            episodes = len(entries) * len(seeds)
            rows.append({"workload": name, "env_id": env_id, "mode": f"external head {address} ({workers} CPUs)",
                         "episodes": episodes, "wall_s": wall, "episodes_per_s": episodes / wall,
                         "driver_cpu_s": cpu, "machine_busy_cpu_s": busy})
    table = pd.DataFrame(rows)
    serial = table[table["mode"] == "serial"].set_index("workload")["wall_s"]
    table["speedup_vs_serial"] = [serial[w] / wall for w, wall in zip(table["workload"], table["wall_s"])]
    return table, extra


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per mode (median; default 3)")
    parser.add_argument("--workers", type=int, default=2, help="CPUs of the local Ray (default 2)")
    parser.add_argument("--out", default=None, help="write ray.csv and ray.md into this directory")
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.workers < 1:
        parser.error("--repeats and --workers must be >= 1")
    table, extra = measure(args.repeats, args.workers)
    text = (f"# Evaluation throughput: serial vs Ray ({os.cpu_count()} cores, median of {args.repeats})\n\n"
            + table.to_markdown(index=False, floatfmt=".3g") + "\n\n"
            + "\n".join(f"- {key}: {value:.2f}" for key, value in extra.items()) + "\n")
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        table.to_csv(out / "ray.csv", index=False)
        (out / "ray.md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
