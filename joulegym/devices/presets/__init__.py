"""Device presets, registered by name. Each module holds data and a ``build()`` returning a Device."""

from joulegym.devices.device import register_device
from joulegym.devices.presets import a10g, apu, dl_gpus, jetson_tx2, toy

register_device("jetson-tx2", jetson_tx2.build)
register_device("a10g", a10g.build)
register_device("toy-etf", toy.build)
register_device("amd-a8-3870k", apu.build_a8_3870k)
register_device("emrf-toy", apu.build_toy)
register_device("v100", dl_gpus.build_v100)
register_device("a100", dl_gpus.build_a100)
