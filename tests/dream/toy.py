"""Tiny hand-made DREAM workloads for the tier-A tests (no catalog, known numbers)."""

from __future__ import annotations

from typing import Any

import numpy as np

from joulegym.envs.dream.simulator import App, DreamSim, LayerTable, ModelTable, Workload

E_BYTE = 200.0  # energy per DRAM byte (spec §4.4's e_DRAM)


def table(name: str, lat_ms, energy=None, *, in_b=None, out_b=None, skip=None, exits=None) -> LayerTable:
    lat = np.asarray(lat_ms, dtype=float).reshape(len(lat_ms), -1) * 1e-3
    en = np.ones_like(lat) if energy is None else np.asarray(energy, dtype=float).reshape(lat.shape)
    return LayerTable(name, lat, en, in_b, out_b, np.zeros((0, 2), int) if skip is None else skip,
                      np.zeros(0, int) if exits is None else exits)


def model(name: str, *variants: LayerTable, switch_point: int = -1) -> ModelTable:
    return ModelTable(name, tuple(variants), switch_point)


def sim(tables: dict[str, ModelTable], apps: list[App], *, n_acc: int = 1, pes=None, lat_per_byte=None,
        **kwargs) -> DreamSim:
    """A hand-made simulator; releases are synchronous (every model at t = 0) so times can be computed by hand."""
    kwargs.setdefault("release_phase", "sync")
    return DreamSim(tables, Workload("toy", tuple(apps)), acc_pes=pes or [1024] * n_acc,
                    switch_lat_per_byte=np.zeros(n_acc) if lat_per_byte is None else lat_per_byte,
                    switch_energy_per_byte=E_BYTE, **kwargs)


def reset(s: DreamSim, key: int = 0) -> DreamSim:
    """Reset ``s`` on episode key ``key`` (its common random numbers)."""
    s.reset(np.random.default_rng(key), key)
    return s


def run_until(s: DreamSim, policy: Any, until_s: float | None = None) -> None:
    """Let ``policy`` decide every decision point of ``s`` before ``until_s`` (the horizon when None)."""
    view = s.view()
    while s.advance(until_s):
        s.apply(policy.decide(view))
