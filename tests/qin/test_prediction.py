"""Qin's profiling oracle and CF predictions (joulegym.envs.qin.prediction; Qin §4.1-4.3, spec §2.1, A6)."""

from __future__ import annotations

import numpy as np
import pytest

from joulegym.devices.cpu import SERVER_TYPES, WORKER_TYPES, seconds_per_instruction
from joulegym.envs.qin import prediction, predictors
from joulegym.envs.qin.prediction import QinPredictor, ground_truth, server_configs
from joulegym.workloads.qin_jobs import generate_jobs, get_catalog


@pytest.fixture(scope="module")
def predictor() -> QinPredictor:
    return QinPredictor(list(WORKER_TYPES))


def test_server_configs_are_types_times_levels():
    scs, type_of_server = server_configs(["i5-4690", "i5-6600", "i5-4690", "E5-1620"])
    assert [s.name for s in scs.server_types] == ["i5-4690", "i5-6600", "E5-1620"]
    assert list(type_of_server) == [0, 1, 0, 2] and scs.n_sc == 12
    np.testing.assert_array_equal(scs.columns(type_of_server)[2], [0, 1, 2, 3])
    np.testing.assert_array_equal(scs.sc_freq_mhz[scs.columns(2)], SERVER_TYPES["E5-1620"].levels_mhz)
    with pytest.raises(ValueError, match="servers"):
        server_configs([])
    with pytest.raises(ValueError, match="server_type"):
        QinPredictor(["i5-4690", "pentium"])


def test_ground_truth_follows_the_device_model():
    catalog = get_catalog()
    scs, _ = server_configs(["i5-4670"])
    truth = ground_truth(catalog, scs)
    server = SERVER_TYPES["i5-4670"]
    app = catalog.index("fft")
    tau = seconds_per_instruction(catalog.cpi0[app], catalog.beta[app],
                                  server.ipc_rel * catalog.apps[app].ipc_affinity["haswell"], server.levels_mhz,
                                  server.memlat)
    np.testing.assert_allclose(truth.mips[app], 1.0 / (tau * 1e6))
    assert np.all(np.diff(truth.mips, axis=1) > 0)  # faster at higher levels
    dynamic = ground_truth(catalog, scs, paper_dynamic_only=True)
    assert np.all(dynamic.nj_per_instr < truth.nj_per_instr)


def test_profiling_oracle_reveals_two_scs_and_two_sois(predictor):
    jobs = generate_jobs("rw", 400, seed=0)
    observed = predictor.profile(jobs, np.random.default_rng(1))
    for name, count in (("mips", 2), ("nj_per_instr", 2), ("t", 2), ("c", 2)):
        assert np.all(np.isfinite(observed[name]).sum(axis=1) == count)
    # energy and MIPS are measured on the same 2 distinct SCs (one profiling run per SC)
    assert np.array_equal(np.isfinite(observed["mips"]), np.isfinite(observed["nj_per_instr"]))
    assert np.all(observed["profiled_scs"][:, 0] != observed["profiled_scs"][:, 1])
    # every SC gets profiled sometime (uniform choice)
    assert set(np.unique(observed["profiled_scs"])) == set(range(predictor.scs.n_sc))
    # multiplicative N(1, 0.05) noise around the truth
    rows = np.arange(jobs.n_jobs)[:, None]
    ratio = observed["mips"][rows, observed["profiled_scs"]] / predictor.truth.mips[jobs.app[:, None],
                                                                                     observed["profiled_scs"]]
    assert ratio.mean() == pytest.approx(1.0, abs=0.01) and ratio.std() == pytest.approx(0.05, rel=0.15)


def test_predictions_are_seeded_and_keep_what_was_measured(predictor):
    jobs = generate_jobs(["rw", "tb"], 60, seed=2)
    first = predictor.predict(jobs, np.random.default_rng(5))
    again = predictor.predict(jobs, np.random.default_rng(5))
    other = predictor.predict(jobs, np.random.default_rng(6))
    for field in ("mips", "energy_j", "runtime_s", "tolerated", "caused", "size_instr"):
        np.testing.assert_array_equal(getattr(first, field), getattr(again, field))
    assert not np.array_equal(first.mips, other.mips)
    observed = predictor.profile(jobs, np.random.default_rng(5))
    known = np.isfinite(observed["mips"])
    np.testing.assert_allclose(first.mips[known], observed["mips"][known])
    np.testing.assert_allclose(first.size_instr, observed["alpha"])
    np.testing.assert_allclose(first.energy_j, predictor.models["nj_per_instr"].fold_in(observed["nj_per_instr"])
                               * 1e-9 * first.size_instr[:, None])
    np.testing.assert_allclose(first.runtime_s, first.size_instr[:, None] / (first.mips * 1e6))
    assert first.columns.shape == (len(WORKER_TYPES), 4)
    assert first.tolerated.shape == first.caused.shape == (60, 15)


# (offline_fraction, ratio of the CF error to the offline column mean's per matrix, relative MIPS/energy error cap)
ACCURACY = {
    # 10 % offline (the paper's "around 10 %", the default): 3 PARSEC apps; MIPS and energy 0.43x / 0.41x the blind
    # error (12.0 % / 10.5 %), the caused score 0.91x, the tolerated score 1.09x: from 3 rows and 2 of 15 SoIs,
    # CF predicts the held-out apps' tolerance no better than the mean (measured, seed 3)
    0.1: ({"mips": 0.47, "nj_per_instr": 0.45, "t": 1.15, "c": 0.95}, 0.13),
    # every app offline: 0.34x / 0.30x (9.4 % / 7.8 %), tolerated 0.86x, caused 0.75x
    1.0: ({"mips": 0.4, "nj_per_instr": 0.35, "t": 0.92, "c": 0.8}, 0.1),
}


@pytest.mark.parametrize("fraction", sorted(ACCURACY))
def test_predictions_against_the_catalog_average(fraction):
    """On the entries that were not profiled, CF against knowing nothing (the offline rows' column mean), 300
    RW/TB/LC jobs."""
    predictor = QinPredictor(list(WORKER_TYPES), offline_fraction=fraction)
    ratios, cap = ACCURACY[fraction]
    jobs = generate_jobs(["rw", "tb", "lc"], 300, seed=3)
    observed = predictor.profile(jobs, np.random.default_rng(0))
    predicted = predictor.predict(jobs, np.random.default_rng(0))
    cases = (("mips", predicted.mips, predictor.truth.mips[jobs.app], True),
             ("nj_per_instr", predicted.energy_j / predicted.size_instr[:, None] * 1e9,
              predictor.truth.nj_per_instr[jobs.app], True),
             ("t", predicted.tolerated, jobs.tolerated, False), ("c", predicted.caused, jobs.caused, False))
    for name, estimate, exact, relative in cases:
        unknown = np.isnan(observed[name])
        blind = np.broadcast_to(np.nanmean(predictor.models[name].training_matrix, axis=0), exact.shape)
        scale = exact[unknown] if relative else 1.0
        error = np.sqrt(np.mean(((estimate - exact)[unknown] / scale) ** 2))
        blind_error = np.sqrt(np.mean(((blind - exact)[unknown] / scale) ** 2))
        assert error < ratios[name] * blind_error, (name, error, blind_error)
        if relative:
            assert error < cap, name


def test_ten_percent_offline_holds_out_every_splash2_app():
    """offline_fraction=0.1 (the default): 3 of the 28 catalog apps train the CF offline, none of them a Splash-2
    app, so every RW job arrives online with only its 2 profiled SCs (paper §4.1)."""
    predictor = QinPredictor(list(WORKER_TYPES))
    catalog = predictor.catalog
    offline = predictor.models["mips"].training_matrix.shape[0]
    assert offline == 3 and len(catalog) == 28
    trained = predictor.offline_apps
    assert len(trained) == 3 and not set(trained) & {catalog.names[i] for i in catalog.apps_of("rw")}


def test_fold_in_does_not_refactorise(predictor, monkeypatch):
    """Online predictions fold rows in; a full fit happens only offline (cached) or with refit_every."""
    def no_fit(self, matrix):
        raise AssertionError("fit() called while predicting")

    monkeypatch.setattr(predictors.CollaborativeFilter, "fit", no_fit)
    jobs = generate_jobs("lc", 2000, seed=4)
    predicted = predictor.predict(jobs, np.random.default_rng(0))
    assert np.all(np.isfinite(predicted.mips)) and np.all(predicted.energy_j > 0)
    assert QinPredictor(list(WORKER_TYPES)).models is predictor.models  # the offline filters are cached


def test_refit_every_retrains_on_the_profiled_rows():
    jobs = generate_jobs("rw", 15, seed=5)
    refit = QinPredictor(["i5-4690", "i7-4790"], refit_every=10, offline_fraction=0.2)
    plain = QinPredictor(["i5-4690", "i7-4790"], offline_fraction=0.2)
    first = refit.predict(jobs, np.random.default_rng(0))
    base = plain.predict(jobs, np.random.default_rng(0))
    np.testing.assert_array_equal(first.mips[:10], base.mips[:10])  # before the first retrain: the same
    assert not np.array_equal(first.mips[10:], base.mips[10:])  # after it: new column factors
    assert np.all(np.isfinite(first.mips)) and np.all(first.mips > 0)


def test_predictor_argument_errors():
    for kwargs, field in (({"offline_fraction": 0.0}, "offline_fraction"), ({"noise_sigma": -0.1}, "noise_sigma"),
                          ({"offline_seed": -1}, "offline_seed"), ({"refit_every": 0}, "refit_every")):
        with pytest.raises(ValueError, match=field):
            QinPredictor(["i5-4690"], **kwargs)
    assert prediction.PROFILED_SCS == 2 and prediction.PROFILED_SOIS == 2


def test_predictor_and_core_table_copy_and_pickle(predictor):
    import copy
    import pickle

    from joulegym.devices.cpu import build_core_table

    jobs = generate_jobs("tb", 20, seed=1)
    expected = predictor.predict(jobs, np.random.default_rng(2))
    for clone in (copy.deepcopy(predictor), pickle.loads(pickle.dumps(predictor))):
        np.testing.assert_array_equal(clone.predict(jobs, np.random.default_rng(2)).mips, expected.mips)
    table = build_core_table(["i5-4690", "i7-4790"], biglittle=True)
    restored = pickle.loads(pickle.dumps(table))
    level, busy, beta = np.full(8, 2), np.ones(8), np.full(8, 0.3)
    np.testing.assert_array_equal(restored.server_power_w(level, busy, beta), table.server_power_w(level, busy, beta))
    np.testing.assert_array_equal(copy.deepcopy(table).smt_yield, table.smt_yield)
