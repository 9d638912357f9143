"""NVIDIA Jetson TX2 (Pascal GPU, 256 CUDA cores): the ETF paper's testbed (docs/families/etf.md).

ResNet50 and ResNet18 are the authors' measured profiles, transcribed from
umassos/energy-time-fairness @ a7d5fea, ``models/{resnet50,resnet18}/*_profile.json``
(``exec_time`` in µs -> s, ``gpu_power`` in mW -> W; TVM-compiled, batch 1, 224x224, GPU-rail power
from the INA3221). The tests check these tables against the JSON files in ``shared/reference-data``.

MobileNetV2 was not released. Following the docs/families/etf.md [A]: its power curve is the shape of
ResNet50's low-utilisation ``max_pool2d`` kernel scaled to 900 mW at 726.75 MHz (so the Fig. 5
disparity against ResNet50@1300.5 is r = 4261/900 = 4.73, the geometric mean of the disparities the
paper's Fig. 5 metrics imply), and its service time is 0.6 x ResNet18's. ``mobilenetv2-text4x`` is the
variant scaled to 1065 mW at 726.75 MHz (r = 4.0, the "4x" of the paper's text, §6.4).
"""

from joulegym.devices.device import Device
from joulegym.devices.frequency import FrequencyGrid
from joulegym.devices.profiles import ProfileTable

SOURCE = "Liang et al. SEC'23 (ETF), measured profiles in umassos/energy-time-fairness@a7d5fea"

# The 13 GPU DVFS levels (MHz), from the profile JSON keys (Hz).
TX2_GPU_LEVELS_MHZ = (
    114.75, 216.75, 318.75, 420.75, 522.75, 624.75, 726.75, 854.25, 930.75, 1032.75, 1122.0, 1236.75, 1300.5,
)

# Batch-1 inference service time (µs) and average GPU power (mW) per level.
RESNET50_TIME_US = (491684, 262810, 181197, 139644, 114572, 97847, 86979, 75976, 71271, 66176, 62543, 58823, 57005)
RESNET50_POWER_MW = (541, 776, 995, 1193, 1380, 1539, 1717, 2187, 2460, 2815, 3226, 3799, 4261)
RESNET18_TIME_US = (180739, 95994, 65900, 50966, 42018, 36101, 32129, 28191, 26510, 24703, 23375, 22083, 21406)
RESNET18_POWER_MW = (498, 720, 918, 1090, 1248, 1380, 1536, 1952, 2177, 2489, 2839, 3352, 3736)

# Synthetic MobileNetV2 power (mW), docs/families/etf.md table column "MNv2 P [A]".
MOBILENETV2_POWER_MW = (498, 610, 714, 747, 835, 852, 900, 1094, 1205, 1324, 1485, 1766, 1907)
MOBILENETV2_TIME_FACTOR = 0.6  # S_MNv2 = 0.6 * S_R18 [A]
TEXT4X_POWER_FACTOR = 1065 / 900  # 1065 mW at 726.75 MHz: r = 4.0 against ResNet50 @ 1300.5 MHz


def _table(name: str, time_us, power_mw, source: str) -> ProfileTable:
    return ProfileTable.from_arrays(
        name, TX2_GPU_LEVELS_MHZ, [t * 1e-6 for t in time_us], [p * 1e-3 for p in power_mw], source=source
    )


def build() -> Device:
    resnet50 = _table("resnet50", RESNET50_TIME_US, RESNET50_POWER_MW, SOURCE)
    resnet18 = _table("resnet18", RESNET18_TIME_US, RESNET18_POWER_MW, SOURCE)
    mobilenet_time_us = [t * MOBILENETV2_TIME_FACTOR for t in RESNET18_TIME_US]
    mobilenet = _table(
        "mobilenetv2", mobilenet_time_us, MOBILENETV2_POWER_MW,
        "synthetic (docs/families/etf.md [A]): R50 max_pool2d power shape scaled to 900 mW @ 726.75 MHz; "
        "0.6 x R18 time",
    )
    mobilenet_4x = mobilenet.scaled(
        power_factor=TEXT4X_POWER_FACTOR, workload="mobilenetv2-text4x",
        source="synthetic (docs/families/etf.md [A]): mobilenetv2 scaled to 1065 mW @ 726.75 MHz (r = 4.0)",
    )
    return Device(
        name="jetson-tx2",
        kind="gpu",
        description="NVIDIA Jetson TX2 GPU, 13 DVFS levels 114.75-1300.5 MHz (ETF testbed)",
        frequencies=FrequencyGrid(TX2_GPU_LEVELS_MHZ),
        profiles={t.workload: t for t in (resnet50, resnet18, mobilenet, mobilenet_4x)},
        tdp_w=15.0,  # "consumes a maximum power of 15W" (ETF §6.1)
        source=SOURCE,
    )
