"""The paper's ordering targets (issue 15 "Done when"; spec §6), over 5 seeds per cell (common random numbers).

Quick (default run): Fig. 2, dynamic FCFS has a lower deadline-violation rate than static FCFS on AR_Call.
Long (``--reproduce``): DREAM-Full vs Planaria/Veltair on heterogeneous and homogeneous hardware (Figs. 7/8),
the Fig. 9 ablation order and the Fig. 11 search targets. DREAM variants lock alpha/beta with the offline search
on a tuning seed that no evaluation uses (``TUNE_SEED``). A cell is the mean over seeds 0-4 of one 2 s episode;
"geomean" is over configurations of the cell ratio UX_DREAM / UX_baseline (spec §2.2's reading).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from joulegym.envs.dream.scheduling import ParamSearch, episode_evaluator, grid_optimum, make_scheduler, run_episode
from joulegym.envs.dream.simulator import DreamSim

SEEDS = tuple(range(5))
SCENARIOS = ("vr-gaming", "ar-call", "drone-outdoor", "drone-indoor", "ar-social")
HW_4K = ("4k-2ws", "4k-2os", "4k-1ws2os", "4k-1os2ws")


@functools.cache
def cell(scenario: str, hw: str, scheduler: str) -> dict[str, float]:
    """Mean metrics over SEEDS of one 2 s episode of ``scheduler`` on (scenario, hw)."""
    sim = DreamSim.from_catalog(scenario, hw)
    runs = [run_episode(sim, make_scheduler(scheduler), seed) for seed in SEEDS]
    return {key: float(np.mean([r[key] for r in runs])) for key in ("uxcost", "dlv_rate", "energy_rate", "drops")}


def geomean_ratio(configs, a: str, b: str) -> float:
    """Geometric mean over (scenario, hw) of UX_a / UX_b."""
    return float(np.exp(np.mean([np.log(cell(s, h, a)["uxcost"] / cell(s, h, b)["uxcost"]) for s, h in configs])))


def test_fig2_dynamic_fcfs_violates_fewer_deadlines_than_static_fcfs():
    """Fig. 2 / R15: static FCFS (worst-case plan) vs dynamic FCFS on AR_Call (KWS-positive 50 %, SkipNet 50 %)
    over the four 4K configurations. The paper: -52.9 % DLV on average; measured here: see the assertion."""
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
    Veltair (up to 80.8 % / 97.6 %). Measured over the 10 (scenario, 4K heterogeneous) cells: 38.3 % vs Planaria
    (up to 66.6 %), 36.6 % vs Veltair (up to 69.7 %); DREAM-Full is better in every cell."""
    for baseline in ("planaria", "veltair"):
        assert geomean_ratio(configs(HETERO_4K), "dream-full", baseline) < 0.8, baseline


@pytest.mark.reproduce
def test_gap_shrinks_on_homogeneous_4k():
    """R3 / Fig. 8: the gain over both baselines is smaller on homogeneous than on heterogeneous 4K hardware.
    Paper: 2.20x larger on heterogeneous vs Veltair, 1.26x vs Planaria. Measured: Veltair 36.6 % -> 27.9 %
    (1.31x), Planaria 38.3 % -> 36.2 % (1.06x)."""
    for baseline in ("planaria", "veltair"):
        hetero = 1 - geomean_ratio(configs(HETERO_4K), "dream-full", baseline)
        homo = 1 - geomean_ratio(configs(HOMO_4K), "dream-full", baseline)
        assert homo < hetero, (baseline, homo, hetero)


@pytest.mark.reproduce
def test_gap_vanishes_on_8k_homogeneous_vs_veltair():
    """Fig. 8(c): with abundant compute scheduling matters little. Measured vs Veltair over the 10 (scenario,
    8K homogeneous) cells: 3.8 % geomean (6 of 10 cells equal: every frame meets its deadline)."""
    assert 1 - geomean_ratio(configs(HOMO_8K), "dream-full", "veltair") < 0.10


@pytest.mark.reproduce
@pytest.mark.xfail(strict=True, reason="measured 16.2 % geomean gain vs Planaria on 8K homogeneous (not < 10 %): "
                   "drone-indoor 8k-2ws 3.57 vs 6.94 and vr-gaming 6.54/19.6 vs 8.82/24.5. GoogLeNet-car (18.6 ms "
                   "alone on its best accelerator vs a 16.7 ms period) and GNMT (68.9 ms vs 66.7 ms) cannot meet "
                   "their deadlines under the committed kappa even on 8K, so 8K is not compute-sufficient there; "
                   "Planaria's least-slack-first keeps serving those hopeless frames, DREAM drops them")
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
    -16.5 % / -13.8 %, Supernet switching a further -6-9 %. Measured: 4K -14.6 %, -32.3 %, -11.4 %; 8K -49.4 %,
    -10.7 %, -3.9 % (the order holds; the optimisation step is larger at 8K here, not at 4K; one cell, AR_Social
    4K 1WS+2OS, has the tuned pair slightly worse than (1, 1): 8.03 vs 7.87, tuned on another seed)."""
    g = ablation_geomeans(hws)
    assert g["mapscore-fixed"] >= g["dream-mapscore"] >= g["dream-smartdrop"] >= g["dream-full"], g


@functools.cache
def fig11_runs(n_seeds: int = 1):
    """The search of §3.6 from 5 random starts vs the 441-point grid, IDLE -> VR_Gaming on 4K 1OS+2WS (Fig. 10(a),
    Fig. 11): per start, UXCost of the centre after 0..5 steps, and the grid minimum."""
    sim = DreamSim.from_catalog("vr-gaming", "4k-1os2ws")
    evaluate = episode_evaluator(sim, "mapscore", seed=tuple(range(n_seeds)))
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
@pytest.mark.xfail(strict=True, reason="measured (1 seed per evaluation): UXCost over (alpha, beta) is rugged here "
                   "(neighbouring grid pairs differ by 3.0 on average, the grid's std is 3.6, range 11.3-33.8), "
                   "unlike the paper's smooth Fig. 3; from 5 random starts the centre improves by 5.9 % on average "
                   "after two steps (not > 25 %) and ends 30.5 % above the grid optimum after five (not <= 2 %)")
def test_fig11_search_gains_25pct_in_two_steps_and_ends_within_2pct_of_the_grid_optimum():
    runs, grid_min = fig11_runs(1)
    improvement_2 = np.mean([1 - u[2] / u[0] for u in runs])
    gap_5 = np.mean([u[5] / grid_min - 1 for u in runs])
    assert improvement_2 > 0.25 and gap_5 <= 0.02, (improvement_2, gap_5)
