"""Shared device and power models (docs/architecture.md): DVFS grids, V-f curves, CMOS power, profiles.

Units everywhere: frequency MHz, voltage V, power W, energy J, time s; compute capacities carry
their own unit (``Device.capacity_unit``, e.g. GFLOPS).
"""

from joulegym.devices.cpu import SERVER_TYPES as _SERVER_TYPES
from joulegym.devices.device import DEVICE_KINDS, Device, available_devices, get_device, register_device
from joulegym.devices.frequency import FrequencyGrid
from joulegym.devices.power import CMOSPowerModel, VoltageCurve, dynamic_power_w, integrate_energy_j
from joulegym.devices.presets import a10g, apu, dl_gpus, jetson_tx2, toy
from joulegym.devices.profiles import ProfileTable

# The one list of the built-in presets (a family adds its hardware here, as data in a module of presets/; a
# third-party family calls register_device itself). Factories: a preset is built on first use.
register_device("jetson-tx2", jetson_tx2.build)
register_device("a10g", a10g.build)
register_device("toy-etf", toy.build)
register_device("amd-a8-3870k", apu.build_a8_3870k)
register_device("emrf-toy", apu.build_toy)
register_device("v100", dl_gpus.build_v100)
register_device("a100", dl_gpus.build_a100)
for _name, _server in _SERVER_TYPES.items():  # the Qin cluster's six servers (presets/intel_servers.py)
    register_device(f"qin-{_name}", _server.device)

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
