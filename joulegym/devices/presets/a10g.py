"""NVIDIA A10G (AWS), the ETF paper's second device (§6.4, Fig. 8).

The paper gives only that GPT-2 and MobileNetV2 run at maximum frequency with a power disparity of
"approximately 2.2x". Everything else is a joulegym assumption [A] (docs/families/etf.md): P_GPT2 = 150 W,
P_MNv2 = 68 W (ratio 2.2), S_GPT2 = 20 ms, S_MNv2 = 3 ms, one frequency. Only the power ratio affects
the fairness metrics. 1710 MHz is the A10G's public maximum graphics clock (NVIDIA A10G datasheet);
it labels the single level and changes no result.
"""

from joulegym.devices.device import Device
from joulegym.devices.frequency import FrequencyGrid
from joulegym.devices.profiles import ProfileTable

A10G_MAX_MHZ = 1710.0
SOURCE = "synthetic (docs/families/etf.md [A]); only the 2.2x power ratio is from Liang et al. SEC'23 §6.4"


def build() -> Device:
    gpt2 = ProfileTable.from_arrays("gpt2", [A10G_MAX_MHZ], [0.020], [150.0], source=SOURCE)
    mobilenet = ProfileTable.from_arrays("mobilenetv2", [A10G_MAX_MHZ], [0.003], [68.0], source=SOURCE)
    return Device(
        name="a10g",
        kind="gpu",
        description="NVIDIA A10G at maximum frequency; GPT-2 / MobileNetV2 power ratio 2.2 (ETF Fig. 8)",
        frequencies=FrequencyGrid((A10G_MAX_MHZ,)),
        profiles={"gpt2": gpt2, "mobilenetv2": mobilenet},
        tdp_w=300.0,  # public A10G board power
        source=SOURCE,
    )
