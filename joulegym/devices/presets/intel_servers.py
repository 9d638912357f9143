"""The six servers of the Qin cluster (Guan & Ababei, IEEE T-SUSC 2024, Table 2) as data.

Table 2 gives role, GHz, cores, L1 and memory. The rest is public spec-sheet data restated (no file
copied): TDP, lowest-frequency mode (LFM), base and max-turbo frequency and the 100 MHz P-state step
from the ssdtPRGen.sh ``Data/{Skylake,Haswell,Kaby Lake,Sandy Bridge}.cfg`` rows (Piker-Alpha/ssdtPRGen.sh
@ cd1fb5a); microarchitecture, physical cores, L3 and DRAM peak bandwidth from Intel ARK (L3 not
re-verified). ``ipc_rel`` is docs/families/qin.md's assumption (its §1.2 "rel. IPC" column).

Caveats kept from the sources: Table 2's "8 cores" for the E5-1620 and i7-4790 are Hyper-Threading's logical
processors (4 physical cores each); :mod:`joulegym.devices.cpu` schedules on the physical cores with an SMT yield
(docs/families/qin.md A22) and keeps Table 2's count as what the OS reports. The E5-1620
revision is not named by the paper; these are the v1 values (130 W, 3.6/3.8 GHz); the v1 LFM is listed
as unconfirmed by the source, 1200 MHz is the v2-v4 value.

:mod:`joulegym.devices.cpu` turns each record into a :class:`~joulegym.devices.cpu.ServerType`.
"""

from __future__ import annotations

SOURCE = ("Qin (Guan & Ababei, T-SUSC 2024) Table 2; TDP/LFM/base/turbo: ssdtPRGen.sh Data/*.cfg @ cd1fb5a; "
          "microarch, L3, DRAM bandwidth: Intel ARK; ipc_rel: docs/families/qin.md (assumed)")

# One dict per Table 2 row, in Table 2 order. Keys are the ServerType fields.
SERVER_SPECS: tuple[dict, ...] = (
    {"name": "E5-1620", "role": "master", "microarch": "sandy_bridge_ep", "cores": 8, "physical_cores": 4,
     "base_mhz": 3600.0, "lfm_mhz": 1200.0, "turbo_mhz": 3800.0, "l1_kb": 32.0, "l3_mb": 10.0, "mem_gb": 16.0,
     "tdp_w": 130.0, "dram_bw_gbs": 51.2, "ipc_rel": 1.00},  # DDR3-1600, 4 channels
    {"name": "i5-6600", "role": "worker", "microarch": "skylake", "cores": 4, "physical_cores": 4,
     "base_mhz": 3300.0, "lfm_mhz": 800.0, "turbo_mhz": 3900.0, "l1_kb": 32.0, "l3_mb": 6.0, "mem_gb": 16.0,
     "tdp_w": 65.0, "dram_bw_gbs": 34.1, "ipc_rel": 1.22},  # DDR4-2133, 2 channels
    {"name": "i7-4790", "role": "worker", "microarch": "haswell", "cores": 8, "physical_cores": 4,
     "base_mhz": 3600.0, "lfm_mhz": 800.0, "turbo_mhz": 4000.0, "l1_kb": 32.0, "l3_mb": 8.0, "mem_gb": 16.0,
     "tdp_w": 84.0, "dram_bw_gbs": 25.6, "ipc_rel": 1.15},  # DDR3-1600, 2 channels
    {"name": "i5-7600", "role": "worker", "microarch": "kaby_lake", "cores": 4, "physical_cores": 4,
     "base_mhz": 3500.0, "lfm_mhz": 800.0, "turbo_mhz": 4100.0, "l1_kb": 32.0, "l3_mb": 6.0, "mem_gb": 8.0,
     "tdp_w": 65.0, "dram_bw_gbs": 38.4, "ipc_rel": 1.22},  # DDR4-2400, 2 channels
    {"name": "i5-4690", "role": "worker", "microarch": "haswell", "cores": 4, "physical_cores": 4,
     "base_mhz": 3500.0, "lfm_mhz": 800.0, "turbo_mhz": 3900.0, "l1_kb": 32.0, "l3_mb": 6.0, "mem_gb": 8.0,
     "tdp_w": 84.0, "dram_bw_gbs": 25.6, "ipc_rel": 1.15},  # DDR3-1600, 2 channels
    {"name": "i5-4670", "role": "worker", "microarch": "haswell", "cores": 4, "physical_cores": 4,
     "base_mhz": 3400.0, "lfm_mhz": 800.0, "turbo_mhz": 3800.0, "l1_kb": 32.0, "l3_mb": 6.0, "mem_gb": 8.0,
     "tdp_w": 84.0, "dram_bw_gbs": 25.6, "ipc_rel": 1.15},  # DDR3-1600, 2 channels
)
