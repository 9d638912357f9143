"""The ETF paper's toy device (§4.3, Fig. 3): three apps drawing 2, 3 and 8 W, unit service time."""

from joulegym.devices.device import Device
from joulegym.devices.frequency import FrequencyGrid
from joulegym.devices.profiles import ProfileTable

TOY_MHZ = 1000.0  # a label: the toy device has a single, unnamed frequency
SOURCE = "Liang et al. SEC'23 (ETF) §4.3, Fig. 3"


def build() -> Device:
    tables = {
        name: ProfileTable.from_arrays(name, [TOY_MHZ], [1.0], [power], source=SOURCE)
        for name, power in (("toy-a", 2.0), ("toy-b", 3.0), ("toy-c", 8.0))
    }
    return Device(
        name="toy-etf",
        kind="toy",
        description="ETF Fig. 3 toy GPU: apps A, B, C at 2, 3, 8 W",
        frequencies=FrequencyGrid((TOY_MHZ,)),
        profiles=tables,
        source=SOURCE,
    )
