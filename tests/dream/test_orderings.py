"""The paper's ordering targets (spec §6; docs/families/dream.md §7), over 5 seeds per cell (common random numbers).

Quick (default run): Fig. 2, dynamic FCFS has a lower deadline-violation rate than static FCFS on AR_Call.
Long (``--reproduce``): DREAM-Full vs Planaria/Veltair on heterogeneous and homogeneous hardware (Figs. 7/8),
the Fig. 9 ablation order and the Fig. 11 search targets. DREAM variants lock alpha/beta with the offline search
on a tuning episode that no evaluation uses (``TUNE_KEY``). A cell is the mean over seeds 0-4 of one 2 s episode;
"geomean" is over configurations of the cell ratio UX_DREAM / UX_baseline (spec §2.2's reading).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from joulegym.core.inner import run_inner
from joulegym.core.policy import make_inner
from joulegym.envs.dream.mapscore import episode_evaluator
from joulegym.envs.dream.search import ParamSearch, grid_optimum
from joulegym.envs.dream.simulator import DreamSim

SEEDS = tuple(range(5))
SCENARIOS = ("vr-gaming", "ar-call", "drone-outdoor", "drone-indoor", "ar-social")
HW_4K = ("4k-2ws", "4k-2os", "4k-1ws2os", "4k-1os2ws")


@functools.cache
def cell(scenario: str, hw: str, scheduler: str) -> dict[str, float]:
    """Mean metrics over SEEDS of one 2 s episode of ``scheduler`` on (scenario, hw)."""
    sim = DreamSim.from_catalog(scenario, hw)
    runs = [run_inner(sim, make_inner(scheduler, family="dream"), seed) for seed in SEEDS]
    return {key: float(np.mean([r[key] for r in runs])) for key in ("uxcost", "dlv_rate", "energy_rate", "drops")}


def geomean_ratio(configs, a: str, b: str) -> float:
    """Geometric mean over (scenario, hw) of UX_a / UX_b."""
    return float(np.exp(np.mean([np.log(cell(s, h, a)["uxcost"] / cell(s, h, b)["uxcost"]) for s, h in configs])))


def fig2_dlv() -> list[tuple[str, float, float]]:
    """(hw, dynamic FCFS DLV, static FCFS DLV) on AR_Call over the four 4K SoCs."""
    return [(hw, cell("ar-call", hw, "fcfs")["dlv_rate"], cell("ar-call", hw, "fcfs-static")["dlv_rate"])
            for hw in HW_4K]


def test_fig2_dynamic_fcfs_never_violates_more_than_static_fcfs():
    """What holds of Fig. 2 under the feasibility-capped calibration: dynamic FCFS misses no more deadlines than
    static FCFS on any 4K SoC, and fewer in total (measured: 1OS+2WS 6.9 % vs 9.1 %, 1WS+2OS 2.6 % vs 2.6 %)."""
    rows = fig2_dlv()
    assert all(dyn <= stat for _hw, dyn, stat in rows), rows
    assert sum(dyn for _hw, dyn, _ in rows) < sum(stat for *_, stat in rows), rows


@pytest.mark.xfail(strict=True, reason="measured (5 seeds): AR_Call is lightly loaded once every model is feasible "
                   "alone on every SoC (offered load 0.33-0.44 on 4K: GNMT is memory-bound and capped by 8K-2OS, "
                   "docs/families/dream-cost-model.md §4.4); neither FCFS misses a deadline on 4K-2WS or 4K-2OS, "
                   "both miss 2.6 % on 1WS+2OS, and only 1OS+2WS separates them (6.9 % vs 9.1 %)")
def test_fig2_dynamic_fcfs_violates_fewer_deadlines_than_static_fcfs():
    """Fig. 2 / R15: static FCFS (worst-case plan) vs dynamic FCFS on AR_Call (KWS-positive 50 %, SkipNet 50 %)
    over the four 4K configurations. The paper: -52.9 % DLV on average."""
    reductions = []
    for hw in HW_4K:
        dyn, stat = cell("ar-call", hw, "fcfs")["dlv_rate"], cell("ar-call", hw, "fcfs-static")["dlv_rate"]
        assert dyn < stat, hw
        reductions.append(1 - dyn / stat)
    assert np.mean(reductions) > 0.1


HETERO_4K = ("4k-1ws2os", "4k-1os2ws")
HOMO_4K = ("4k-2ws", "4k-2os")
HOMO_8K = ("8k-2ws", "8k-2os")
HETERO_8K = ("8k-1ws2os", "8k-1os2ws")


def configs(hws):
    return [(s, h) for h in hws for s in SCENARIOS]


@pytest.mark.reproduce
def test_dream_full_beats_planaria_and_veltair_on_heterogeneous_4k():
    """R1 / Fig. 7 (4K panels): geomean UXCost reduction of DREAM-Full, paper 32.2 % vs Planaria and 50.0 % vs
    Veltair (up to 80.8 % / 97.6 %). Measured over the 10 (scenario, 4K heterogeneous) cells: 63.6 % vs Planaria
    (up to 98.8 %), 69.2 % vs Veltair (up to 98.4 %). DREAM-Full is worse in Drone_Outdoor on 1WS+2OS (1.15 vs
    0.046 / 0.044: MapScore leaves half of TrailNet's frames late whatever alpha, beta; Planaria misses none), in
    Drone_Indoor on 1WS+2OS vs Planaria (1.57 vs 1.39) and in AR_Call by < 1.3 % (no deadline missed)."""
    for baseline in ("planaria", "veltair"):
        assert geomean_ratio(configs(HETERO_4K), "dream-full", baseline) < 0.8, baseline


@pytest.mark.reproduce
def test_gap_shrinks_on_homogeneous_4k():
    """R3 / Fig. 8: the gain over both baselines is smaller on homogeneous than on heterogeneous 4K hardware.
    Paper: 2.20x larger on heterogeneous vs Veltair, 1.26x vs Planaria. Measured: Veltair 69.2 % -> 51.7 %
    (1.34x), Planaria 63.6 % -> 39.7 % (1.60x)."""
    for baseline in ("planaria", "veltair"):
        hetero = 1 - geomean_ratio(configs(HETERO_4K), "dream-full", baseline)
        homo = 1 - geomean_ratio(configs(HOMO_4K), "dream-full", baseline)
        assert homo < hetero, (baseline, homo, hetero)


@pytest.mark.reproduce
@pytest.mark.xfail(strict=True, reason="measured 43.8 % geomean gain vs Veltair on 8K homogeneous (not < 10 %): "
                   "8K-2OS is not compute-sufficient for VR_Gaming (offered load 1.10; DREAM-Full 14.2 vs 31.1, "
                   "DLV 0.30 vs 0.90), and Veltair misses drone frames on 8K-2WS (DLV 0.12 and 0.14; UXCost 0.051 vs "
                   "0.97 on Drone_Outdoor, 0.33 vs 2.42 on Drone_Indoor) where DREAM-Full misses 0 and 1.1 %")
def test_gap_vanishes_on_8k_homogeneous_vs_veltair():
    """Fig. 8(c): with abundant compute scheduling matters little."""
    assert 1 - geomean_ratio(configs(HOMO_8K), "dream-full", "veltair") < 0.10


@pytest.mark.reproduce
@pytest.mark.xfail(strict=True, reason="measured 21.1 % geomean gain vs Planaria on 8K homogeneous (not < 10 %), "
                   "with every model feasible alone: VR_Gaming on 8K-2OS is overloaded (offered load 1.10; "
                   "DREAM-Full 14.2 vs 33.6, DLV 0.30 vs 0.94) and Drone_Indoor on 8K-2WS 0.33 vs 0.65; "
                   "DREAM-Full is better or equal in every cell (by 0.8-31 % in the others)")
def test_gap_vanishes_on_8k_homogeneous_vs_planaria():
    assert 1 - geomean_ratio(configs(HOMO_8K), "dream-full", "planaria") < 0.10


def ablation_geomeans(hws) -> dict[str, float]:
    cells = [(s, h) for s in ("vr-gaming", "ar-social") for h in hws]
    return {name: float(np.exp(np.mean([np.log(cell(s, h, name)["uxcost"]) for s, h in cells])))
            for name in ("mapscore-fixed", "dream-mapscore", "dream-smartdrop", "dream-full")}


@pytest.mark.reproduce
@pytest.mark.parametrize("hws", [HETERO_4K, HETERO_8K], ids=["4K", "8K"])
def test_ablation_order_fixed_mapscore_smartdrop_full(hws):
    """Fig. 9 / R8 (VR_Gaming + AR_Social geomean, heterogeneous 4K and 8K): fixed(1,1) >= DREAM-MapScore >=
    -SmartDrop >= -Full. Paper steps: parameter optimisation -49.2 % (4K) / -21.0 % (8K), smart drop about
    -16.5 % / -13.8 %, Supernet switching a further -6-9 %. Measured: 4K -67.2 %, -13.5 %, -78.5 %; 8K -58.3 %,
    0.0 % (no frame dropped), -4.0 % (the order holds; the optimisation step is larger at 4K as in the paper,
    Supernet switching far larger than the paper's)."""
    g = ablation_geomeans(hws)
    assert g["mapscore-fixed"] >= g["dream-mapscore"] >= g["dream-smartdrop"] >= g["dream-full"], g


@functools.cache
def fig11_runs(n_seeds: int = 1):
    """The search of §3.6 from 5 random starts vs the 441-point grid, IDLE -> VR_Gaming on 4K 1OS+2WS (Fig. 10(a),
    Fig. 11): per start, UXCost of the centre after 0..5 steps, and the grid minimum."""
    sim = DreamSim.from_catalog("vr-gaming", "4k-1os2ws")
    evaluate = episode_evaluator(sim, "mapscore", key=tuple(range(n_seeds)))
    _best, grid_min, _values = grid_optimum(evaluate, 0.1)
    rng = np.random.default_rng(0)
    runs = []
    for _ in range(5):
        c0 = (float(rng.uniform(0, 2)), float(rng.uniform(0, 2)))
        search = ParamSearch(c0)
        u = [evaluate(c0)]
        while (p := search.ask()) is not None:
            search.tell(evaluate(p))
            if len(u) == len(search.trajectory):
                u.append(evaluate(search.center))
        runs.append(u)
    return runs, grid_min


@pytest.mark.reproduce
@pytest.mark.xfail(strict=True, reason="measured (1 seed per evaluation): from 5 random starts the centre improves "
                   "by 9.1 % on average after two steps (not > 25 %; it gets worse from 2 of 5 starts) and ends "
                   "234 % above the 0.1-grid optimum (0.556) after five (not <= 2 %): UXCost over (alpha, beta) is "
                   "rugged on one seed, unlike the paper's smooth Fig. 3")
def test_fig11_search_gains_25pct_in_two_steps_and_ends_within_2pct_of_the_grid_optimum():
    runs, grid_min = fig11_runs(1)
    improvement_2 = np.mean([1 - u[2] / u[0] for u in runs])
    gap_5 = np.mean([u[5] / grid_min - 1 for u in runs])
    assert improvement_2 > 0.25 and gap_5 <= 0.02, (improvement_2, gap_5)
