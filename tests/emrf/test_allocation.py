"""EMRF pure algorithms against the paper's worked examples and the model's computed targets.

The §III / §V-B worked examples (tier A, exact to the printed precision), the Fig. 6/7/8 model predictions
(docs/families/emrf.md §9) and the bad-input / solver-failure contract.
"""

from __future__ import annotations

import numpy as np
import pytest

from joulegym.baselines.emrf import (
    EMRFSolverError,
    algorithm1_allocate,
    delta_bound,
    drf_allocate,
    drf_progressive_allocate,
    emrf_allocate,
    emrf_solve,
    envy_pairs,
    fair_share,
    is_feasible,
    pareto_efficient,
    residual_capacity,
    sharing_incentive_eta,
    sharing_incentive_violations,
    soft_fairness_degree,
    utilisation,
    wfq_allocate,
)
from joulegym.envs.emrf import allocation
from joulegym.workloads.rodinia import RODINIA, TABLE_III_ORDER, mix_arrays

TOY = (100.0, 800.0)
APU = (24.0, 480.0)
EX1 = ([0.1, 0.4], [1.0, 1.0])
EX2 = ([0.1, 0.4, 0.5], [1.0, 1.0, 1.0])


def close(value, expected, places=2):
    """Equal to the printed value at ``places`` decimals: |value - printed| <= half a unit of the last digit."""
    np.testing.assert_allclose(np.asarray(value, dtype=float), expected, rtol=0, atol=0.5 * 10.0**-places + 1e-9)


# --- Appendix B item 1: Example 1 ---------------------------------------------------------------------
def test_example1_wfq():
    f = wfq_allocate(TOY, *EX1)
    close(f, [200, 200])
    close(utilisation(TOY, EX1[0], f), [1.0, 0.375], 4)


def test_example1_drf():
    f = drf_allocate(TOY, *EX1)
    close(f, [470.59, 132.35])
    close(utilisation(TOY, EX1[0], f)[1] * 100, 62.87)


def test_example1_emrf_half():
    sol = emrf_solve(TOY, *EX1, eta=0.5)
    close(sol.allocation, [735.29, 66.18])
    close(sol.residual, [50.0, 548.53])
    close(sol.delta_bound, 1.125, 6)
    close(utilisation(TOY, EX1[0], sol.allocation)[1] * 100, 87.68)
    close(sol.fair_share, [444.44, 125.0])
    close(sol.efficiency_stage, [500.0, 0.0])  # §V-B: the LP gives F'_1 = 500, F'_2 = 0


def test_example1_emrf_zero_and_table():
    close(emrf_allocate(TOY, *EX1, eta=0.0), [866.67, 33.33])
    # extra vectors of Example 1 (docs page §9): (eta, F, realized delta, delta bound)
    for eta, f, realized, bound in ((0.0, [866.67, 33.33], 1.683, 2.0), (0.1, [866.67, 33.33], 1.683, 1.874),
                                    (0.5, [735.29, 66.18], 1.125, 1.125), (1.0, [470.59, 132.35], 0.0, 0.0)):
        sol = emrf_solve(TOY, *EX1, eta=eta)
        close(sol.allocation, f)
        close(sol.soft_fairness, realized, 3)
        close(sol.delta_bound, bound, 3)
    close(sharing_incentive_eta(TOY, *EX1), 0.9444, 4)


def test_example1_weighted_variant():
    sol = emrf_solve(TOY, [0.1, 0.4], [2.0, 1.0], eta=0.5)
    close(sol.fair_share, [592.59, 83.33])
    close(sol.drf, [640.0, 90.0])
    close(sol.allocation, [820.0, 45.0])
    close(sol.delta_bound, 1.5, 6)
    close(sol.soft_fairness, 0.844, 3)


def test_theorem1_typeset_form_differs():
    """The paper's typeset Theorem 1 gives 0.28125 on Example 1; the corrected one its printed 1.125."""
    c_res = residual_capacity(TOY, *EX1, eta=0.5)
    xi = np.array([[0.1, 0.9], [0.4, 0.6]])
    m = (xi / np.array(TOY)).max(1)
    typeset = max(m[i] / sum((1 / 1) * max(xi[i] / c_res) for _ in range(2)) for i in range(2))
    assert typeset == pytest.approx(0.28125)
    assert delta_bound(TOY, *EX1, 0.5) == pytest.approx(1.125)


# --- item 2: Example 2 ------------------------------------------------------------------------------------
def test_example2():
    f = wfq_allocate(TOY, *EX2)
    close(f, [100, 100, 100])
    close(utilisation(TOY, EX2[0], f)[1], 0.25, 4)
    d = drf_allocate(TOY, *EX2)
    close(d, [307.69, 86.54, 69.23])  # erratum E9: the paper's 303.8 is a typo
    np.testing.assert_allclose(d / d[2] * 36, [160, 45, 36], rtol=1e-12)
    close(utilisation(TOY, EX2[0], d)[1] * 100, 45.43)
    # the printed 303.8 / 44.93% are within 2% of the exact values
    assert abs(d[0] - 303.8) / d[0] < 0.02 and abs(utilisation(TOY, EX2[0], d)[1] * 100 - 44.93) / 45.43 < 0.02
    close(fair_share(TOY, *EX2), [296.30, 83.33, 66.67])
    sol = emrf_solve(TOY, *EX2, eta=0.5)
    close(sol.allocation, [653.85, 43.27, 34.62])
    close(utilisation(TOY, EX2[0], sol.allocation) * 100, [100.0, 78.97])
    close(sol.delta_bound, 1.6875, 4)


def test_example2_degenerate_lp_tie_breaks():
    close(emrf_allocate(TOY, *EX2, eta=0.0), [870.97, 16.13, 12.90])
    vertex = emrf_allocate(TOY, *EX2, eta=0.0, tie_break="vertex")
    close(vertex, [875.0, 0.0, 25.0])
    # both are optimal: same total, both devices saturated
    assert vertex.sum() == pytest.approx(emrf_allocate(TOY, *EX2, eta=0.0).sum())
    close(utilisation(TOY, EX2[0], vertex), [1.0, 1.0], 9)


# --- items 3-5 and §6.3 table -----------------------------------------------------------------------------
def test_m5_drf_equals_emrf():
    xi, w = mix_arrays("M5")
    close(drf_allocate(APU, xi, w), [24, 480])
    close(emrf_allocate(APU, xi, w, 0.1), [24, 480])


def test_m2_emrf():
    close(emrf_allocate(APU, *mix_arrays("M2"), 0.1), [5.71, 325.71])


def test_m1_drf_and_emrf():
    xi, w = mix_arrays("M1")
    close(drf_allocate(APU, xi, w), [22.857, 34.286, 30.0, 9.6, 48.0], 3)
    close(wfq_allocate(APU, xi, w), [9.21, 4.61, 13.82, 18.43, 4.61])
    close(emrf_allocate(APU, xi, w, 0.1), [22.86, 34.29, 30.0, 9.6, 407.26])
    close(emrf_allocate(APU, xi, w, 0.1, tie_break="vertex"), [2.29, 3.43, 3.0, 22.56, 472.73])
    close(sharing_incentive_eta(APU, xi, w), 0.9091, 4)
    close(drf_progressive_allocate(APU, xi, w)[4], 407.26)  # erratum E3, progressive filling: BT fills the idle GPU
    # DRF of Eq. (8) is not PE in M1 (BT could use the idle GPU); EMRF is
    assert not pareto_efficient(APU, xi, drf_allocate(APU, xi, w))
    assert pareto_efficient(APU, xi, emrf_allocate(APU, xi, w, 0.1))


@pytest.mark.parametrize(("mix", "wfq", "drf", "emrf"), [
    ("M2", [85.71, 85.71], [57.14, 171.43], [5.71, 325.71]),
    ("M3", [19.35, 19.35], [50.0, 12.0], [95.0, 1.2]),
    ("M4", [248.70, 248.70], [206.01, 288.41], [342.86, 161.14]),
    ("M5", [24.0, 24.0], [24.0, 480.0], [24.0, 480.0]),
])
def test_fig6_table(mix, wfq, drf, emrf):
    xi, w = mix_arrays(mix)
    close(wfq_allocate(APU, xi, w), wfq)
    close(drf_allocate(APU, xi, w), drf)
    close(emrf_allocate(APU, xi, w, 0.1), emrf)


@pytest.mark.parametrize("mix", ["M2", "M3", "M4", "M5"])
def test_fig6_orderings(mix):
    """Fig. 6: EMRF >= DRF >= WFQ throughput (M2, M3, M5); EMRF best on M4; DRF = EMRF on M5."""
    xi, w = mix_arrays(mix)
    t_wfq, t_drf = wfq_allocate(APU, xi, w).sum(), drf_allocate(APU, xi, w).sum()
    t_emrf = emrf_allocate(APU, xi, w, 0.1).sum()
    assert t_emrf >= t_drf - 1e-9 and t_emrf >= t_wfq - 1e-9
    if mix == "M4":  # docs page §9: DRF is 0.6% below WFQ on M4, the paper claims nothing about it
        assert t_drf / t_wfq == pytest.approx(0.994, abs=5e-4)
    else:
        assert t_drf >= t_wfq
    if mix == "M5":
        assert t_emrf == pytest.approx(t_drf, rel=1e-12)
        assert t_emrf > t_wfq


def test_m1_ordering_fig4():
    xi, w = mix_arrays("M1")
    t = [f(APU, xi, w).sum() for f in (wfq_allocate, drf_allocate)] + [emrf_allocate(APU, xi, w, 0.1).sum()]
    assert t[0] < t[1] < t[2]
    close(t[1] / t[0], 2.856, 3)
    close(t[2] / t[0], 9.946, 3)


def test_fig7_shape_on_m2():
    """Fig. 7 on M2: Θ(η) = 342.86 - 114.29 η and realized Δ = δ(η) = 2 (1 - η)."""
    xi, w = mix_arrays("M2")
    share = fair_share(APU, xi, w)
    for eta in np.linspace(0, 1, 11):
        f = emrf_allocate(APU, xi, w, eta)
        assert f.sum() == pytest.approx(2400 / 7 - 800 / 7 * eta, rel=1e-12)  # = 342.86 - 114.29 eta
        assert soft_fairness_degree(f, share) == pytest.approx(2 * (1 - eta), abs=1e-9)
        assert delta_bound(APU, xi, w, eta) == pytest.approx(2 * (1 - eta), abs=1e-9)
    np.testing.assert_allclose(emrf_allocate(APU, xi, w, 1.0), drf_allocate(APU, xi, w), rtol=1e-12)
    close(emrf_allocate(APU, xi, w, 0.0), [0.0, 342.86])  # docs page §9 allocations (GE, KM)
    close(emrf_allocate(APU, xi, w, 0.5), [28.57, 257.14])
    close(emrf_allocate(APU, xi, w, 1.0), [57.14, 171.43])


def test_fig7_m1_eps_bound_values():
    xi, w = mix_arrays("M1")
    xi[3], xi[4] = 0.99, 0.01
    expected = {0.0: 11.0, 0.1: 10.73, 0.3: 10.19, 0.5: 9.64, 0.7: 9.10, 0.8: 8.83, 0.9: 5.45, 1.0: 0.0}
    for eta, bound in expected.items():
        close(delta_bound(APU, xi, w, eta), bound)
    close(emrf_allocate(APU, xi, w, 0.5), [18.82, 28.22, 24.70, 7.98, 424.28])
    close(emrf_allocate(APU, xi, w, 0.9).sum(), 368.2, 1)
    close(emrf_allocate(APU, xi, w, 1.0).sum(), 142.4, 1)


FIG8 = {2: [171.4, 228.6, 251.4, 285.7, 331.4], 3: [138.5, 185.7, 217.1, 264.3, 327.1],
        4: [63.2, 145.3, 184.8, 244.1, 323.1], 5: [47.6, 121.0, 165.4, 231.9, 320.7]}


@pytest.mark.parametrize("n", sorted(FIG8))
def test_fig8_table(n):
    """Fig. 8 throughput table to 0.1 GFLOPS (first n Table III apps, equal weights; docs page §9)."""
    close(_fig8_row(n), FIG8[n], 1)


def _fig8_row(n: int) -> list[float]:
    """Θ of WFQ, DRF, EMRF-0.8, EMRF-0.5, EMRF-0.1 for the first ``n`` Table III apps, equal weights."""
    xi = [RODINIA[a].xi_cpu for a in TABLE_III_ORDER[:n]]
    w = [1.0] * n
    got = [wfq_allocate(APU, xi, w).sum(), drf_allocate(APU, xi, w).sum()]
    return got + [emrf_allocate(APU, xi, w, eta).sum() for eta in (0.8, 0.5, 0.1)]


def test_fig8_observations():
    """Fig. 8's three observations, on the computed table: every policy's Θ falls with n; WFQ < DRF <
    EMRF-0.8 < EMRF-0.5 < EMRF-0.1 for every n; the smaller eta, the flatter the curve."""
    rows = np.array([_fig8_row(n) for n in sorted(FIG8)])
    assert np.all(np.diff(rows, axis=0) < 0)
    assert np.all(np.diff(rows, axis=1) > 0)
    drops = (rows[0] - rows[-1]) / rows[0]  # relative drop from n = 2 to n = 5
    assert np.all(np.diff(drops[1:]) < 0)  # DRF drops fastest of the EMRF family (DRF = EMRF at eta = 1)


# --- item 6: delta ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("xi", "w"), [EX1, EX2, mix_arrays("M1"), mix_arrays("M4"), ([0.3, 0.6, 0.9], [1, 3, 2])])
def test_delta_monotone_and_endpoints(xi, w):
    caps = TOY if len(xi) <= 3 and xi[0] == 0.1 else APU
    bounds = [delta_bound(caps, xi, w, eta) for eta in np.linspace(0, 1, 21)]
    assert np.all(np.diff(bounds) <= 1e-9)
    assert bounds[0] == pytest.approx(sum(w) / min(w))


def test_emrf_one_equals_drf_only_when_everyone_needs_the_saturated_device():
    for caps, (xi, w) in ((TOY, EX1), (TOY, EX2), (APU, mix_arrays("M2")), (APU, mix_arrays("M3"))):
        np.testing.assert_allclose(emrf_allocate(caps, xi, w, 1.0), drf_allocate(caps, xi, w), rtol=1e-12)
        assert delta_bound(caps, xi, w, 1.0) == 0.0
    xi, w = mix_arrays("M1")  # BT (xi = 0) does not need the saturated CPU: EMRF(1) backfills the GPU
    f1 = emrf_allocate(APU, xi, w, 1.0)
    assert f1[4] == pytest.approx(407.26, abs=5e-3) and f1[4] > drf_allocate(APU, xi, w)[4]
    assert delta_bound(APU, xi, w, 1.0) > 0


# --- SI / EF diagnostics ----------------------------------------------------------------------------------
def test_theorem3_counterexample_is_reported():
    """Theorem 3 (EF) is false: Example 1 at eta = 0.5, user 2 envies user 1 (erratum E7)."""
    f = emrf_allocate(TOY, *EX1, 0.5)
    assert envy_pairs(EX1[0], f) == [(1, 0)]
    got = min(f[0] * 0.1 / 0.4, f[0] * 0.9 / 0.6)
    assert got == pytest.approx(183.82, abs=5e-3) and got > f[1]
    assert envy_pairs(EX1[0], drf_allocate(TOY, *EX1)) == []  # DRF (eta = 1, equal weights) is EF here
    # and SI is violated at eta = 0.5 < eta_SI = 0.944: F_2 = 66.2 < S_2 = 125
    assert sharing_incentive_violations(TOY, *EX1, f) == 1


# --- the two solvers ------------------------------------------------------------------------------------
def test_default_solver_is_highs_and_the_closed_form_agrees_on_the_paper_cases():
    """emrf_allocate solves the LP with scipy HiGHS by default; the env's closed form gives the same F."""
    import inspect

    assert inspect.signature(emrf_allocate).parameters["solver"].default == "highs"
    cases = [(TOY, *EX1), (TOY, *EX2), (TOY, [0.1, 0.4], [2.0, 1.0])]
    cases += [(APU, *mix_arrays(m)) for m in ("M1", "M2", "M3", "M4", "M5")]
    for caps, xi, w in cases:
        for eta in (0.0, 0.1, 0.5, 0.8, 1.0):
            np.testing.assert_allclose(emrf_allocate(caps, xi, w, eta, solver="closed-form"),
                                       emrf_allocate(caps, xi, w, eta), rtol=0, atol=1e-9 * sum(caps))


def test_near_equal_xi_is_solved_exactly_by_both():
    """xi = 0 vs 0.001 makes the optimal face ill-conditioned: a 1e-9 slack on the objective (erratum E2
    step 6) moved z by ~5e-4 relative; the complementary-slackness face of the HiGHS procedure does not."""
    caps, xi, w = (21.0, 249.0), [0.0, 0.182, 0.001], [0.25, 10.0, 4.0]
    highs = emrf_allocate(caps, xi, w, 0.0)
    closed = emrf_allocate(caps, xi, w, 0.0, solver="closed-form")
    np.testing.assert_allclose(highs, closed, rtol=1e-12)
    close(utilisation(caps, xi, highs), [1.0, 1.0], 9)
    share = fair_share(caps, xi, w)
    ratio = highs / share
    assert ratio[0] > ratio[1] == pytest.approx(ratio[2], rel=1e-12)  # xi = 0 absorbs, the others share t*


# --- Algorithm 1 (§V-C), the discrete scheduler ------------------------------------------------------------
FLUID_CASES = ((APU, mix_arrays("M1"), 0.1), (APU, mix_arrays("M2"), 0.5), (TOY, EX2, 0.5))


@pytest.mark.parametrize("task", [1.0, 0.1, 0.01, 0.001])
def test_algorithm1_converges_to_the_fluid_limit(task):
    """Alg. 1 lines 3-9 fed with F* as weights give F* to within a few kernel slices per user (docs page §5).

    Skip-and-continue (the default): users still unblocked pick up the slivers that blocked users leave.
    Measured max |F - F*| / slice for slices of 1, 0.1, 0.01, 0.001 GFLOPS: M1 1.0/0.57/0.71/1.14, M2
    2.14/1.43/0.29/1.86, Example 2 0.85/0.46/2.62/3.15; so the env's fluid F = F* is the task -> 0 limit.
    (No small bound holds in general: a user with a tiny xi^d can take many slices of a sliver.)
    """
    for caps, (xi, w), eta in FLUID_CASES:
        target = emrf_allocate(caps, xi, w, eta)
        got = algorithm1_allocate(caps, xi, target, task)
        assert np.all(np.abs(got - target) <= 4 * task) and is_feasible(caps, xi, got)
        slices = got / task
        assert np.all(np.abs(np.round(slices) - slices) <= 1e-9 * np.maximum(slices, 1))  # whole kernel slices


def test_algorithm1_strict_stop_converges_linearly():
    """With the literal line-9 stop, users stop at a common level of F_i / F*_i just below 1: nobody gets
    more than a slice above F*, and the shortfall shrinks linearly with the slice (M1: BT 15.3 GFLOPS short
    at 1 GFLOPS slices, 0.13 at 0.01)."""
    for caps, (xi, w), eta in FLUID_CASES:
        target = emrf_allocate(caps, xi, w, eta)
        errors = []
        for task in (1.0, 0.01):
            got = algorithm1_allocate(caps, xi, target, task, strict_stop=True)
            assert np.all(got <= target + task + 1e-9) and is_feasible(caps, xi, got)
            errors.append(np.max(np.abs(got - target)))
        assert errors[1] <= errors[0] / 50 + 1e-9


def test_algorithm1_line9_stop_versus_skip_and_continue():
    """DRF weights on M1: the literal "stop" (line 9) keeps DRF's idle GPU; skip-and-continue lets BT fill it
    (then it is progressive-filling DRF, erratum E3)."""
    xi, w = mix_arrays("M1")
    drf = drf_allocate(APU, xi, w)
    strict = algorithm1_allocate(APU, xi, drf, 0.01, strict_stop=True)
    skip = algorithm1_allocate(APU, xi, drf, 0.01)
    assert np.all(np.abs(strict - drf) <= 0.01 + 1e-9)
    assert utilisation(APU, xi, strict)[1] < 0.26
    np.testing.assert_allclose(skip, drf_progressive_allocate(APU, xi, w), atol=0.02)
    close(utilisation(APU, xi, skip), [1.0, 1.0], 3)


def test_algorithm1_order_and_zero_weights():
    # line 4: the lowest F_i / omega_i first, ties to the lowest index; omega_i = 0 gets nothing
    got = algorithm1_allocate(TOY, [0.5, 0.5, 0.5], [1.0, 1.0, 0.0], 60.0)
    np.testing.assert_array_equal(got, [120.0, 60.0, 0.0])  # 3 slices of 60 fit the CPU (100 / 30)
    with pytest.raises(ValueError, match="omega"):
        algorithm1_allocate(TOY, [0.5], [-1.0], 1.0)
    with pytest.raises(ValueError, match="task_gflop"):
        algorithm1_allocate(TOY, [0.5], [1.0], 0.0)
    with pytest.raises(ValueError, match="xi_cpu"):
        algorithm1_allocate(TOY, [1.5], [1.0], 1.0)


# --- bad input and solver failures -----------------------------------------------------------------------
BAD_INSTANCES = [
    (((0, 800), [0.1], [1]), "capacities"),
    (((-1, 800), [0.1], [1]), "capacities"),
    (((100, 800, 3), [0.1], [1]), "capacities"),
    (((100, np.inf), [0.1], [1]), "capacities"),
    ((TOY, [1.2], [1]), "xi_cpu"),
    ((TOY, [-0.1], [1]), "xi_cpu"),
    ((TOY, [np.nan], [1]), "xi_cpu"),
    ((TOY, [], []), "xi_cpu"),
    ((TOY, [0.1], [0]), "weights"),
    ((TOY, [0.1], [-2]), "weights"),
    ((TOY, [0.1, 0.2], [1]), "weights"),
]
FUNCTIONS = {
    "fair_share": fair_share, "drf_allocate": drf_allocate, "wfq_allocate": wfq_allocate,
    "drf_progressive_allocate": drf_progressive_allocate, "sharing_incentive_eta": sharing_incentive_eta,
    "emrf_allocate": lambda *a: emrf_allocate(*a, 0.5),
    "emrf_allocate_closed_form": lambda *a: emrf_allocate(*a, 0.5, solver="closed-form"),
    "emrf_allocate_vertex": lambda *a: emrf_allocate(*a, 0.5, tie_break="vertex"),
    "emrf_solve": lambda *a: emrf_solve(*a, 0.5), "delta_bound": lambda *a: delta_bound(*a, 0.5),
    "residual_capacity": lambda *a: residual_capacity(*a, 0.5),
}


@pytest.mark.parametrize(("args", "field"), BAD_INSTANCES)
@pytest.mark.parametrize("func", sorted(FUNCTIONS))
def test_bad_instances_raise(func, args, field):
    with pytest.raises(ValueError, match=field):
        FUNCTIONS[func](*args)


@pytest.mark.parametrize("eta", [-0.1, 1.5, float("nan"), "x", None])
def test_bad_eta_raises(eta):
    for func in (emrf_allocate, delta_bound, residual_capacity, emrf_solve):
        with pytest.raises(ValueError, match="eta"):
            func(TOY, *EX1, eta)


def test_bad_tie_break_raises():
    with pytest.raises(ValueError, match="tie_break"):
        emrf_allocate(TOY, *EX1, 0.5, tie_break="glpk")
    with pytest.raises(ValueError, match="solver"):
        emrf_allocate(TOY, *EX1, 0.5, solver="cplex")


class _Failed:
    status = 2
    message = "The problem is infeasible (simulated)"
    x = None
    fun = None


@pytest.mark.parametrize(("tie_break", "solver"), [("vertex", "highs"), ("lexmaxmin", "highs"), ("lexmaxmin", None)])
def test_solver_failure_raises_never_zero(monkeypatch, tie_break, solver):
    """A HiGHS failure (forced: linprog reports status 2) raises EMRFSolverError saying so, never F = 0."""
    import scipy.optimize

    monkeypatch.setattr(scipy.optimize, "linprog", lambda *a, **k: _Failed())
    allocation.emrf_core.cache_clear()
    kwargs = {"tie_break": tie_break} | ({"solver": solver} if solver else {})
    try:
        with pytest.raises(EMRFSolverError, match=r"HiGHS could not solve the EMRF .*infeasible"):
            emrf_allocate(TOY, [0.13, 0.47], [1.0, 1.0], 0.3, **kwargs)
    finally:
        allocation.emrf_core.cache_clear()


def test_solver_failure_in_a_later_lexmaxmin_stage_raises(monkeypatch):
    """Not only LP1: a failure of any max-min stage LP raises too (no partial or zero allocation)."""
    import scipy.optimize

    real = scipy.optimize.linprog
    calls = []

    def flaky(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs) if len(calls) == 1 else _Failed()

    monkeypatch.setattr(scipy.optimize, "linprog", flaky)
    allocation.emrf_core.cache_clear()
    try:
        with pytest.raises(EMRFSolverError, match="lexmaxmin LP"):
            emrf_allocate(TOY, [0.13, 0.47, 0.9], [1.0, 2.0, 1.0], 0.2)
    finally:
        allocation.emrf_core.cache_clear()
    assert len(calls) == 2
