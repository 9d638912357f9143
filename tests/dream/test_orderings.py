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


def test_fig2_dynamic_fcfs_violates_fewer_deadlines_than_static_fcfs():
    """Fig. 2 / R15: static FCFS (worst-case plan) vs dynamic FCFS on AR_Call (KWS-positive 50 %, SkipNet 50 %) on
    the four 4K configurations: dynamic FCFS misses fewer deadlines on every one. Measured (5 seeds, offered load
    0.7): 4K-2WS 38.2 vs 46.3 %, 4K-2OS 60.4 vs 96.3 %, 1WS+2OS 57.0 vs 78.6 %, 1OS+2WS 37.5 vs 84.5 %."""
    reductions = []
    for hw, dyn, stat in fig2_dlv():
        assert dyn < stat, hw
        reductions.append(1 - dyn / stat)
    assert np.mean(reductions) > 0.1


@pytest.mark.xfail(strict=True, reason="measured 34.5 % mean DLV cut (5 seeds; 17.5, 37.3, 27.5, 55.7 % per SoC), "
                   "18.4 points short of 52.9 %: at the calibrated load (0.7 on 4K-1WS2OS) SkipNet's worst case does "
                   "not fit its period alone on any 4K SoC and both FCFS variants miss most frames; the cut is 71 % "
                   "at load 0.61 and 21 % at 1.0 (docs/families/dream-cost-model.md §4.4)")
def test_fig2_dynamic_fcfs_cut_is_within_10_points_of_the_paper():
    """Fig. 2 / R15: the paper's -52.9 % on average over the four 4K SoCs, within 10 points."""
    reductions = [1 - dyn / stat for _hw, dyn, stat in fig2_dlv()]
    assert abs(np.mean(reductions) - 0.529) <= 0.10


HETERO_4K = ("4k-1ws2os", "4k-1os2ws")
HOMO_4K = ("4k-2ws", "4k-2os")
HETERO_8K = ("8k-1ws2os", "8k-1os2ws")


def configs(hws):
    return [(s, h) for h in hws for s in SCENARIOS]


WHY_PLANARIA = ("measured over the 10 cells (5 seeds): DREAM-Full's geomean UXCost is 1.79x Planaria's (-78.7 %). It "
                "loses where one model needs the big accelerator almost alone: TrailNet takes 16.0 ms of its 16.7 ms "
                "period on 4K-1OS2WS's OS array (29.3 ms on either WS array) and in some release-phase alignments "
                "MapScore's latency preference sends SSD and SOSNet layers there (Drone_Outdoor 18x, Drone_Indoor 16x "
                "on 1OS+2WS; AR_Call 2.9x on 1WS+2OS), where Planaria's smallest-accelerator-that-meets-the-deadline "
                "rule keeps them off in every alignment; the best (alpha, beta) chosen on the evaluation episodes "
                "themselves does not hold on other seeds (Drone_Outdoor 1OS+2WS, seeds 5-24: (0, 2) 0.580, Planaria "
                "0.048), and online tuning, the MapScore table over every accelerator and more tuning episodes do no "
                "better (docs/families/dream.md §7)")


@pytest.mark.reproduce
def test_dream_full_beats_veltair_on_heterogeneous_4k():
    """R1 / Fig. 7 (4K panels): geomean UXCost reduction of DREAM-Full vs Veltair, paper 50.0 % (up to 97.6 %).
    Measured: 70.1 %."""
    assert geomean_ratio(configs(HETERO_4K), "dream-full", "veltair") < 0.8


@pytest.mark.reproduce
@pytest.mark.xfail(strict=True, reason=WHY_PLANARIA)
def test_dream_full_beats_planaria_on_heterogeneous_4k():
    """R1 / Fig. 7 (4K panels): geomean UXCost reduction of DREAM-Full vs Planaria, paper 32.2 % (up to 80.8 %)."""
    assert geomean_ratio(configs(HETERO_4K), "dream-full", "planaria") < 0.8


@pytest.mark.reproduce
def test_gap_vs_veltair_shrinks_on_homogeneous_4k():
    """R3 / Fig. 8: the gain over Veltair is smaller on homogeneous than on heterogeneous 4K hardware (paper:
    2.20x larger on heterogeneous). Measured: 70.1 % -> 23.1 %."""
    hetero = 1 - geomean_ratio(configs(HETERO_4K), "dream-full", "veltair")
    homo = 1 - geomean_ratio(configs(HOMO_4K), "dream-full", "veltair")
    assert homo < hetero, (homo, hetero)


@pytest.mark.reproduce
@pytest.mark.xfail(strict=True, reason="measured: DREAM-Full loses 1.3 % to Planaria on homogeneous 4K and 78.7 % on "
                   "heterogeneous 4K (" + WHY_PLANARIA.split(". It ", 1)[1] + ")")
def test_gap_vs_planaria_shrinks_on_homogeneous_4k():
    """R3 / Fig. 8: the gain over Planaria is smaller on homogeneous hardware (paper: 1.26x larger on
    heterogeneous)."""
    hetero = 1 - geomean_ratio(configs(HETERO_4K), "dream-full", "planaria")
    homo = 1 - geomean_ratio(configs(HOMO_4K), "dream-full", "planaria")
    assert homo < hetero, (homo, hetero)


@pytest.mark.reproduce
@pytest.mark.parametrize("baseline", ["veltair", "planaria"])
def test_gap_vanishes_on_8k_homogeneous(baseline):
    """Fig. 8(c) (8K-2WS, the compute-sufficient SoC, docs §3 #17): with abundant compute scheduling matters little.
    Measured geomean gain on 8K-2WS: 0.1 % vs Veltair and vs Planaria. 8K-2OS is not compute-sufficient at our
    calibration (VR_Gaming misses most frames under every scheduler): 23.2 % vs Veltair, 1.2 % vs Planaria."""
    assert 1 - geomean_ratio(configs(("8k-2ws",)), "dream-full", baseline) < 0.10


def ablation_geomeans(hws) -> dict[str, float]:
    cells = [(s, h) for s in ("vr-gaming", "ar-social") for h in hws]
    return {name: float(np.exp(np.mean([np.log(cell(s, h, name)["uxcost"]) for s, h in cells])))
            for name in ("mapscore-fixed", "dream-mapscore", "dream-smartdrop", "dream-full")}


@pytest.mark.reproduce
@pytest.mark.parametrize("hws", [HETERO_4K, HETERO_8K], ids=["4K", "8K"])
def test_ablation_order_fixed_mapscore_smartdrop_full(hws):
    """Fig. 9 / R8 (VR_Gaming + AR_Social geomean, heterogeneous 4K and 8K): fixed(1,1) >= DREAM-MapScore >=
    -SmartDrop >= -Full. Paper steps: parameter optimisation -49.2 % (4K) / -21.0 % (8K), smart drop about
    -16.5 % / -13.8 %, Supernet switching a further -6-9 %. Measured: 4K -0.7 %, -0.9 %, 0.0 %; 8K -0.5 %, -0.4 %,
    0.0 % (the order holds, the steps are small: at the calibrated load VR_Gaming and AR_Social miss no deadline on
    1WS+2OS under any variant and on 1OS+2WS their misses come from GNMT / FocalLengthDepth, which cannot meet their
    worst case alone there)."""
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
def test_fig10_search_ends_within_2pct_of_the_grid_optimum():
    """Figs. 10/11 (R9): after five steps the search's centre is within 2 % of the 0.1-grid optimum. Measured from 5
    random starts (VR_Gaming on 4K 1OS+2WS, one tuning episode per evaluation): 0.56 % above it on average."""
    runs, grid_min = fig11_runs(1)
    assert np.mean([u[5] / grid_min - 1 for u in runs]) <= 0.02


@pytest.mark.reproduce
@pytest.mark.xfail(strict=True, reason="measured 2.6 % on average after two steps (not > 25 %): at the calibrated "
                   "load UXCost over (alpha, beta) is nearly flat (the five random starts are within 11 % of the "
                   "0.1-grid optimum 3.642, docs/families/dream.md §7)")
def test_fig11_search_gains_25pct_in_two_steps():
    """Fig. 11 (R10): more than 25 % UXCost improvement in two steps."""
    runs, _grid_min = fig11_runs(1)
    assert np.mean([1 - u[2] / u[0] for u in runs]) > 0.25


@pytest.mark.reproduce
@pytest.mark.parametrize("scenario", ["vr-gaming", "ar-call", "drone-outdoor", "drone-indoor", "ar-social",
                                      "random-mix"])
def test_leaderboard_scenario_separates_the_published_schedulers(scenario):
    """A leaderboard headline scenario ranks something: its best published scheduler has at least 20 % lower
    mean UXCost than its worst over the held-out seeds, and the descriptor's best_heuristic is that best
    (docs/families/dream.md §5). Measured gaps: 87.1, 94.0, 98.4, 92.1, 84.6, 52.1 %."""
    from joulegym.evaluation.dream import leaderboard_uxcost
    from joulegym.scenarios.dream import FAMILY

    bench = FAMILY.benchmark
    ux = {p: leaderboard_uxcost(scenario, p, bench.eval_seeds) for p in bench.heuristics}
    best, worst = min(ux, key=ux.get), max(ux, key=ux.get)
    assert ux[best] <= 0.8 * ux[worst], ux
    assert ux[bench.best_heuristic[scenario]] == ux[best], ux
