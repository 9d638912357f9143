"""Coupled CPU-GPU APUs of the EMRF paper (Tang et al., §II-A, §III, §VI-A Table I).

An APU is two divisible resources measured in GFLOPS (``capacities = {"cpu": C_cpu, "gpu": C_gpu}``).
The paper has no power model (docs/families/emrf.md: "There is no memory, bandwidth or power model").

- ``amd-a8-3870k``: the testbed, Table I: CPU 24 GFLOPS, GPU 480 GFLOPS (400 shaders x 600 MHz x 2
  FMA = 480). Table I's 800 MHz CPU clock does not give 24 GFLOPS (docs/families/emrf.md); 24 matches
  4 cores x 3.0 GHz x 2, the A8-3870K's nominal clock in the reference-data spec sheet
  (``reference-data/cpu-specs/emrf_amd_apu.csv``: 4 cores, 3000 MHz, TDP 100 W, HD 6550D 400 shaders
  at 600 MHz). The 100 W TDP is from that sheet (outside the paper; informational, unused).
- ``emrf-toy``: the §III / §V-B worked examples' toy system, C = (100, 800) GFLOPS.
"""

from joulegym.devices.device import Device

SOURCE = "Tang et al., Elastic Multi-Resource Fairness (EMRF), Table I and §III"
A8_3870K_GFLOPS = (24.0, 480.0)  # Table I peak FLOPS (CPU, GPU)
TOY_GFLOPS = (100.0, 800.0)  # §III Example 1/2 and §V-B


def build_a8_3870k() -> Device:
    return Device(
        name="amd-a8-3870k",
        kind="apu",
        description="AMD A8-3870K (Llano) APU: CPU 24 + GPU 480 GFLOPS (EMRF Table I)",
        capacities={"cpu": A8_3870K_GFLOPS[0], "gpu": A8_3870K_GFLOPS[1]},
        capacity_unit="GFLOPS",
        tdp_w=100.0,  # AMD spec sheet via reference-data/cpu-specs/emrf_amd_apu.csv; not in the paper
        source=SOURCE + "; TDP from the A8-3870K spec sheet (reference-data PROVENANCE)",
    )


def build_toy() -> Device:
    return Device(
        name="emrf-toy",
        kind="apu",
        description="EMRF §III toy APU: CPU 100 + GPU 800 GFLOPS (Examples 1 and 2)",
        capacities={"cpu": TOY_GFLOPS[0], "gpu": TOY_GFLOPS[1]},
        capacity_unit="GFLOPS",
        source=SOURCE,
    )
