"""Device presets, registered by name. Each module holds data and a ``build()`` returning a Device."""

from joulegym.devices.device import register_device
from joulegym.devices.presets import a10g, jetson_tx2, toy

register_device("jetson-tx2", jetson_tx2.build)
register_device("a10g", a10g.build)
register_device("toy-etf", toy.build)
