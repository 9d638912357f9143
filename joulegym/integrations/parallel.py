"""Evaluation episodes as Ray tasks (docs/ray.md).

``evaluate.py --suite ... --ray [ADDR]`` runs the same evaluation loop as the serial suite, one Ray task per
(policy, seed) episode. Each task calls the serial path's own function (``joulegym.evaluation.runner.evaluate``,
passed in by the caller) on a single seed, in a fresh env, and the driver puts the rows back in the serial order
with the serial episode indices. Episodes are independent given their seed (every env seeds only
``self.np_random`` on ``reset(seed=...)`` and every policy is reset with the episode's seed), so the tables are
bit-for-bit those of the serial run: ``tests/ray/test_parallel_evaluation.py`` compares the written files.

A policy that cannot drive the env (``PolicyNotApplicable``) is skipped as in the serial loop: the rows of the
seeds before the first refusal are kept, the warning is re-raised in the driver.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from joulegym.integrations import require_ray

LOCAL = "local"  # --ray without an address: start a local Ray on this machine's cores (the embedded default)


@contextmanager
def ray_session(address: str | None = None, *, num_cpus: int | None = None,
                object_store_memory: int | None = None) -> Iterator[Any]:
    """Yield ``ray``, initialised: reuse a running session; else connect to ``address`` (``"auto"``,
    ``"HOST:PORT"``, ``"ray://HOST:PORT"``) or, with ``None``/``"local"``, start a local Ray on ``num_cpus``
    cores (default: all). A session this call opened is shut down on exit."""
    ray = require_ray()
    if ray.is_initialized():
        yield ray
        return
    if address in (None, "", LOCAL):
        ray.init(num_cpus=num_cpus, include_dashboard=False, object_store_memory=object_store_memory,
                 log_to_driver=False)
    else:
        ray.init(address=address, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


def _episode(evaluate_fn: Callable, env_id: str, entry: Any, seed: int, env_kwargs: dict[str, Any] | None,
             record: bool) -> tuple[list[dict[str, Any]], dict[str, Any], bool, list[str]]:
    """One episode through the serial function: (its row, its trace if recorded, skipped?, warnings)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        try:
            frame, traces, skipped = evaluate_fn(env_id, [entry], [seed], env_kwargs, record=record)
        except ValueError:
            # a single refused policy: evaluate() warned "skipping ..." and then found no rows at all
            if not any("skipping" in str(w.message) for w in caught):
                raise
            frame, traces, skipped = None, {}, [entry.label]
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    rows = [] if frame is None else frame.to_dict("records")
    return rows, traces, bool(skipped), messages


class RayEvaluate:
    """A drop-in for ``evaluate(env_id, entries, seeds, env_kwargs, record=...)`` that runs each (policy, seed)
    episode as a Ray task; returns the same ``(episodes, traces, skipped)``.

    :param evaluate_fn: the serial evaluation function each task calls on one seed.
    :param num_cpus: CPUs a task reserves (1: one episode per core).
    """

    def __init__(self, evaluate_fn: Callable, num_cpus: float = 1.0) -> None:
        self.evaluate_fn = evaluate_fn
        self.num_cpus = num_cpus
        self._remote: Any = None

    def _task(self) -> Any:
        if self._remote is None:
            ray = require_ray()
            self._remote = ray.remote(num_cpus=self.num_cpus, max_retries=2)(_episode)
        return self._remote

    def __call__(self, env_id: str, entries: Sequence[Any], seeds: Sequence[int],
                 env_kwargs: dict[str, Any] | None = None, *, record: bool = True,
                 ) -> tuple[Any, dict[str, Any], list[str]]:
        import pandas as pd

        ray = require_ray()
        if not ray.is_initialized():
            raise RuntimeError("RayEvaluate needs an initialised Ray: use it inside ray_session()")
        task = self._task()
        fn = ray.put(self.evaluate_fn)
        refs = [[task.remote(fn, env_id, entry, int(seed), env_kwargs, record and index == 0)
                 for index, seed in enumerate(seeds)] for entry in entries]
        results = [ray.get(row) for row in refs]  # in (policy, seed) order, whatever order they finished in
        rows, traces, skipped = [], {}, []
        for entry, per_seed in zip(entries, results):
            for index, (episode_rows, episode_traces, refused, messages) in enumerate(per_seed):
                for message in messages:
                    warnings.warn(message, UserWarning, stacklevel=2)
                if refused:  # the serial loop stops this policy at its first refused seed
                    skipped.append(entry.label)
                    break
                for row in episode_rows:
                    rows.append({**row, "episode": index})
                traces.update(episode_traces)
        if not rows:
            raise ValueError(f"none of the policies {[e.label for e in entries]} can drive {env_id}")
        return pd.DataFrame(rows), traces, skipped


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def local_head(num_cpus: int = 2, timeout_s: float = 120.0) -> Iterator[str]:
    """Start a separate Ray head on this machine with ``ray start --head --block`` (free ports, its own temp dir)
    and yield its address ``127.0.0.1:PORT``: an external cluster for tests and ``benchmarks/bench_ray.py``, reached
    exactly as a remote one (``--ray ADDR``, ``--ray-address ADDR``). Stopped (its process group) on exit; never
    ``ray stop``, which would stop every Ray on the machine."""
    import shutil
    import signal
    import socket
    import subprocess
    import sys
    import tempfile
    import time
    from pathlib import Path

    require_ray()
    ray_cli = Path(sys.executable).with_name("ray")
    port = _free_port()
    temp_dir = tempfile.mkdtemp(prefix="jgh")  # short: Ray's unix socket paths must stay under 107 characters
    ports = {flag: str(_free_port()) for flag in (
        "--ray-client-server-port", "--dashboard-agent-listen-port", "--dashboard-agent-grpc-port",
        "--metrics-export-port", "--runtime-env-agent-port", "--node-manager-port", "--object-manager-port")}
    command = [str(ray_cli) if ray_cli.exists() else "ray", "start", "--head", "--block", f"--port={port}",
               "--node-ip-address=127.0.0.1",  # the loopback address the drivers connect to
               f"--num-cpus={num_cpus}", "--include-dashboard=false", "--disable-usage-stats",
               f"--temp-dir={temp_dir}", f"--object-store-memory={100 * 2**20}",
               *(f"{flag}={value}" for flag, value in ports.items())]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                message = process.stderr.read().decode(errors="replace")[-2000:] if process.stderr else ""
                raise RuntimeError(f"ray start --head exited with {process.returncode}: {message}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the Ray head on port {port} did not start in {timeout_s} s") from None
                time.sleep(0.5)
        yield f"127.0.0.1:{port}"
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)  # the head's processes share the group of ray start
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        shutil.rmtree(temp_dir, ignore_errors=True)
