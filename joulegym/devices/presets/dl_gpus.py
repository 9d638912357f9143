"""Data-center GPUs of the PowerFlow family (Gu et al., arXiv 2304.06381, §4.2 and §6): V100 and A100.

The DVFS power model is the shared CMOS model of :mod:`joulegym.devices.power` with a *knee*
voltage curve (PowerFlow §4.2, after Guerreiro et al. HPCA'18): voltage constant below ``f_0`` and
rising linearly above it, so that ``CMOSPowerModel.relative_dynamic`` is PowerFlow's shape ``s(f)``
(docs/families/powerflow.md: ``x`` below ``f_0``, ``(1-k)^2 x + 2k(1-k) x^2 + k^2 x^3`` above, ``x = f/f_0``) and the
static mode ``"frequency_above_knee"`` is Eq. 15 with ``c_h = P_static_l / f_0``.

V100 (the default; the paper profiles on V100-SXM2, §6.1):

- grid 600, 660, ..., 1500, 1530 MHz (17 levels; docs/families/powerflow.md [A]); 1530 MHz is the V100-SXM2's public
  maximum graphics clock, 300 W its TDP (NVIDIA V100 datasheet).
- ``f_0`` = 1000 MHz, ``k`` = 0.47, dynamic power 62 W at ``f_0`` (full utilisation), static 55 W at
  ``f_0``, idle 40 W: docs/families/powerflow.md synthetic defaults [A] (the paper gives no numbers). Cross-checked
  against the Zeus V100 power-limit traces (``zeus-power-traces/summary_power_v100.csv``: ResNet-50
  BS 128 draws 99.5 W at the 100 W cap and 222 W at 250 W; the model gives 55 + 62 u s(f) W, i.e.
  ~100 W at 700 MHz and ~230 W at 1530 MHz for u = 1) — see ``tests/powerflow/test_dl_models.py``.

A100 (the motivating examples of §3.1): grid 600, 660, ..., 1380, 1410 MHz (1410 MHz and 400 W TDP
from the NVIDIA A100-SXM4 datasheet); same knee shape, ``f_0`` = 1000 MHz [A]; the power scale is
calibrated in :mod:`joulegym.workloads.dl_models` to the paper's one anchor (VGG16 BS 64 on one A100:
27 J per 0.114 s iteration, §3.1). Idle 50 W [A] (scaled from the V100's 40 W by TDP).

Voltages are labels: only the ratio ``V(f_max)/V_0 = 1 + k (f_max/f_0 - 1)`` matters.
"""

from __future__ import annotations

from joulegym.devices.device import Device
from joulegym.devices.frequency import FrequencyGrid
from joulegym.devices.power import CMOSPowerModel, VoltageCurve

F0_MHZ = 1000.0  # docs/families/powerflow.md [A]
KNEE_K = 0.47  # docs/families/powerflow.md [A]: V(f_max)/V_0 ~ 1.25 on V100
V_KNEE = 0.80  # label voltage at f_0 (V); only ratios matter
P_DYN0_W = 62.0  # dynamic power at f_0, full utilisation (docs/families/powerflow.md [A])
P_STATIC_L_W = 55.0  # static power below f_0 (docs/families/powerflow.md [A]); c_h = 55 W/GHz above

V100_MAX_MHZ = 1530.0
A100_MAX_MHZ = 1410.0
SOURCE_V100 = ("docs/families/powerflow.md [A] synthetic defaults; f_max/TDP: NVIDIA V100-SXM2 datasheet; "
               "shape cross-checked on Zeus NSDI'23 V100 power-limit traces")
SOURCE_A100 = ("PowerFlow §3.1 VGG16 anchor (power scale); f_max/TDP: NVIDIA A100-SXM4 datasheet; "
               "rest docs/families/powerflow.md")


def knee_power_model(f_max_mhz: float, dyn0_w: float = P_DYN0_W, static_w: float = P_STATIC_L_W,
                     f0_mhz: float = F0_MHZ, k: float = KNEE_K) -> CMOSPowerModel:
    """The knee CMOS model with ``dyn0_w`` dynamic watts at ``f0_mhz`` (activity 1)."""
    v_max = V_KNEE * (1.0 + k * (f_max_mhz / f0_mhz - 1.0))
    curve = VoltageCurve.knee(f0_mhz, f_max_mhz, V_KNEE, v_max)
    capacitance = dyn0_w / (V_KNEE**2 * f0_mhz * 1e6)
    return CMOSPowerModel(capacitance, curve, static_w=static_w, static_mode="frequency_above_knee")


def _grid(max_mhz: float) -> FrequencyGrid:
    return FrequencyGrid.linear(600.0, max_mhz, 60.0)


def build_v100() -> Device:
    return Device(
        name="v100",
        kind="gpu",
        description="NVIDIA V100-SXM2 (PowerFlow default): 600-1530 MHz, 17 levels, knee at 1000 MHz, TDP 300 W",
        frequencies=_grid(V100_MAX_MHZ),
        power_model=knee_power_model(V100_MAX_MHZ),
        tdp_w=300.0,
        idle_w=40.0,
        source=SOURCE_V100,
    )


def build_a100() -> Device:
    return Device(
        name="a100",
        kind="gpu",
        description="NVIDIA A100-SXM4 (PowerFlow §3.1 motivating example): 600-1410 MHz, knee 1000 MHz, TDP 400 W",
        frequencies=_grid(A100_MAX_MHZ),
        power_model=knee_power_model(A100_MAX_MHZ),
        tdp_w=400.0,
        idle_w=50.0,
        source=SOURCE_A100,
    )
