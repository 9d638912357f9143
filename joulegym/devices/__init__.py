"""Shared device and power models (docs/architecture.md): DVFS grids, V-f curves, CMOS power, profiles.

Units everywhere: frequency MHz, voltage V, power W, energy J, time s; compute capacities carry
their own unit (``Device.capacity_unit``, e.g. GFLOPS).
"""

from joulegym.devices import cpu as _cpu  # noqa: F401  (registers the Qin servers, qin-<name>)
from joulegym.devices import presets as _presets  # noqa: F401  (registers the presets)
from joulegym.devices.device import DEVICE_KINDS, Device, available_devices, get_device, register_device
from joulegym.devices.frequency import FrequencyGrid
from joulegym.devices.power import CMOSPowerModel, VoltageCurve, dynamic_power_w, integrate_energy_j
from joulegym.devices.profiles import ProfileTable

__all__ = [
    "DEVICE_KINDS",
    "CMOSPowerModel",
    "Device",
    "FrequencyGrid",
    "ProfileTable",
    "VoltageCurve",
    "available_devices",
    "dynamic_power_w",
    "get_device",
    "integrate_energy_j",
    "register_device",
]
