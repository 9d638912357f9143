"""The device record every family shares, and the preset registry.

A :class:`Device` is data: what kind of hardware it is, its DVFS grid and power model (when it has
one), the measured per-workload profile tables (when they exist), divisible compute capacities (an
APU's CPU and GPU GFLOPS), TDP and idle power. Families add hardware by adding a preset, never by
subclassing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from joulegym.devices.frequency import FrequencyGrid
from joulegym.devices.power import CMOSPowerModel
from joulegym.devices.profiles import ProfileTable

DEVICE_KINDS = ("gpu", "apu", "cpu", "accelerator", "toy")


@dataclass(frozen=True)
class Device:
    """One piece of hardware.

    :param name: registry name, e.g. ``"jetson-tx2"``.
    :param kind: one of :data:`DEVICE_KINDS`.
    :param description: one line for humans.
    :param frequencies: DVFS levels (MHz), or ``None`` for a fixed-frequency device.
    :param power_model: CMOS dynamic + static power model, when the device has an analytic one.
    :param profiles: measured (or synthetic, labelled) profile tables by workload name.
    :param capacities: divisible resources and their capacity, e.g. ``{"cpu": 24.0, "gpu": 480.0}``.
    :param capacity_unit: unit of ``capacities`` (e.g. ``"GFLOPS"``).
    :param tdp_w: thermal design power (W), if known.
    :param idle_w: power of an idle but powered device (W), if known.
    :param source: citation for the numbers.
    """

    name: str
    kind: str
    description: str
    frequencies: FrequencyGrid | None = None
    power_model: CMOSPowerModel | None = None
    profiles: Mapping[str, ProfileTable] = field(default_factory=dict)
    capacities: Mapping[str, float] = field(default_factory=dict)
    capacity_unit: str = ""
    tdp_w: float | None = None
    idle_w: float | None = None
    source: str = ""

    def __post_init__(self) -> None:
        if self.kind not in DEVICE_KINDS:
            raise ValueError(f"device {self.name!r}: kind={self.kind!r} is not one of {DEVICE_KINDS}")
        for resource, capacity in self.capacities.items():
            if not capacity > 0:
                raise ValueError(f"device {self.name!r}: capacities[{resource!r}] must be > 0, got {capacity}")
        for workload, table in self.profiles.items():
            if table.workload != workload:
                raise ValueError(f"device {self.name!r}: profile key {workload!r} != table.workload {table.workload!r}")
        object.__setattr__(self, "profiles", MappingProxyType(dict(self.profiles)))
        object.__setattr__(self, "capacities", MappingProxyType(dict(self.capacities)))

    def __reduce__(self):  # the read-only mapping views do not pickle: rebuild from plain dicts
        return (Device, (self.name, self.kind, self.description, self.frequencies, self.power_model,
                         dict(self.profiles), dict(self.capacities), self.capacity_unit, self.tdp_w, self.idle_w,
                         self.source))

    def __deepcopy__(self, memo: dict) -> Device:
        return self  # immutable: a copied env shares its device

    def profile(self, workload: str) -> ProfileTable:
        """The profile table of ``workload``; ValueError naming the known workloads otherwise."""
        try:
            return self.profiles[workload]
        except KeyError:
            raise ValueError(
                f"workload={workload!r} has no profile on device {self.name!r}; known: {sorted(self.profiles)}"
            ) from None


_REGISTRY: dict[str, Device | Callable[[], Device]] = {}


def register_device(name: str, device: Device | Callable[[], Device]) -> None:
    """Register a preset (or a zero-argument factory building it lazily) under ``name``."""
    if name in _REGISTRY:
        raise ValueError(f"device {name!r} is already registered")
    _REGISTRY[name] = device


def get_device(name: str) -> Device:
    """The preset registered under ``name``."""
    try:
        entry = _REGISTRY[name]
    except (KeyError, TypeError):  # TypeError: an unhashable name (a list from a JSON config)
        raise ValueError(f"device={name!r} is unknown; available: {available_devices()}") from None
    if not isinstance(entry, Device):
        entry = entry()
        _REGISTRY[name] = entry
    return entry


def available_devices() -> list[str]:
    return sorted(_REGISTRY)
