"""Throughput/energy models (PowerFlow §4, Eqs. 1-15) and their fits (docs/families/powerflow.md §4)."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from joulegym.devices import get_device
from joulegym.envs.powerflow.profiles import catalog_p_max
from joulegym.workloads import dl_models as dm
from tests.reference_data import ref_file

# golden values of the default V100 parameterisation (docs §4; T_iter s, E_iter J), to 4 significant digits /
# 0.1 J (computed with beta_g = 0.417; the normalisation gives 0.4168, a 0.03 % energy difference)
GOLDEN = [
    ("resnet18", 128, 1, 600, 0.2567, 22.7), ("resnet18", 128, 1, 1020, 0.1651, 18.8),
    ("resnet18", 128, 1, 1530, 0.1215, 26.4), ("resnet18", 128, 8, 1020, 0.0280, 21.7),
    ("resnet18", 128, 16, 1530, 0.0165, 45.4), ("vgg16", 128, 1, 1530, 0.5665, 131.5),
    ("vgg16", 128, 8, 1530, 0.0832, 133.3), ("vgg16", 128, 16, 1530, 0.0807, 234.6),
    ("gpt2", 32, 1, 1020, 1.7430, 177.6), ("gpt2", 32, 1, 1530, 1.2950, 245.3), ("gpt2", 32, 8, 1530, 0.1769, 232.0),
    ("deepspeech2", 64, 1, 1530, 1.6100, 299.5), ("deepspeech2", 64, 16, 1020, 0.1464, 205.7),
    ("inceptionv3", 64, 1, 1530, 0.2327, 49.6), ("inceptionv3", 64, 8, 1020, 0.0513, 40.5),
]


@pytest.mark.parametrize("model,bs,n,f,t_ref,e_ref", GOLDEN)
def test_spec_golden_values(model, bs, n, f, t_ref, e_ref):
    """Eqs. 2-15 with the default V100 parameterisation (docs §4; DeepSpeech2's ground truth is re-fitted to Zeus
    data)."""
    hw = dm.hardware("v100")
    t, e = dm.iteration(dm.spec_params(model, hw), hw, bs, n, f / 1000.0)
    assert float(t) == pytest.approx(t_ref, abs=6e-5)
    assert float(e) == pytest.approx(e_ref, abs=0.1)  # golden values are rounded to 0.1 J with beta_g = 0.417


def test_p_max_matches_spec():
    """Spec §2.4: P_max = mean per-GPU power at (n = 1, f_max) over the Table 1 pool: 207.4 W with the §6.2
    defaults; 213.0 W for the ground truth, whose DeepSpeech2 draws more (u 0.943 measured vs 0.75). The trace-only
    models ResNet-50 and BERT are not in the pool."""
    hw = dm.hardware("v100")
    spec = [float(dm.power_w(dm.spec_params(m, hw), hw, bs, 1, hw.fmax_ghz))
            for m in dm.MODEL_NAMES for bs in dm.CATALOG[m].bs_pool]
    assert np.mean(spec) == pytest.approx(207.4, abs=0.05)
    assert catalog_p_max("v100") == pytest.approx(213.0, abs=0.05)


def test_shape_is_the_shared_cmos_model():
    dev = get_device("v100")
    f = dev.frequencies.array
    p = dm.perf_params("vgg16")
    np.testing.assert_allclose(dm._s(p, f / 1000.0), dev.power_model.relative_dynamic(f), rtol=1e-12)
    assert len(dev.frequencies) == 17 and {600.0, 1020.0, 1200.0, 1530.0} <= set(dev.frequencies.levels_mhz)
    assert dev.power_model.static(1530.0) == pytest.approx(55.0 * 1.53)


def test_energy_minimum_near_knee_and_edp_range():
    hw = dm.hardware("v100")
    for model, spec in dm.CATALOG.items():
        t, e = dm.tables(dm.perf_params(model), hw, spec.bs_pool[2], [1])
        f_emin = hw.freqs_mhz[int(np.argmin(e[0]))]
        assert 900 <= f_emin <= 1080, (model, f_emin)
        f_edp = hw.freqs_mhz[dm.ee_frequency_index(t[0], e[0])]
        assert 1000 <= f_edp <= 1500, (model, f_edp)


def test_pareto_front_is_non_dominated():
    hw = dm.hardware("v100")
    p = dm.perf_params("gpt2")
    ns = [1, 2, 4, 8, 16]
    front = dm.pareto_front(p, hw, 64, ns)
    t, e = dm.tables(p, hw, 64, ns)
    pts = {(n, f): (1 / t[i, j], e[i, j]) for i, n in enumerate(ns) for j, f in enumerate(hw.freqs_mhz)}
    for cfg in front:
        tp, en = pts[cfg]
        dominated = [c for c, (tp2, en2) in pts.items() if tp2 >= tp and en2 <= en and (tp2 > tp or en2 < en)]
        assert not dominated, (cfg, dominated[:3])
    assert len(front) >= 3


@pytest.mark.parametrize("model", dm.MODEL_NAMES)
def test_fit_holdout_mape_below_10_percent(model):
    """Paper §6.3 / Table 2: fit on 90 % of a (noisy, sigma 4 %) profile, MAPE on the other 10 % < 10 %."""
    s = dm.profile_samples(model, sigma=0.04, salt=7)
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(s["T"]))
    k = int(0.9 * idx.size)
    train = {c: v[idx[:k]] for c, v in s.items()}
    test = {c: v[idx[k:]] for c, v in s.items()}
    truth = dm.spec_params(model, dm.hardware("v100"))
    # start away from the truth: every fitted coefficient off by x1.6 / x0.6
    prior = dm.replace(truth, a_grad=truth.a_grad * 1.6, b_grad=truth.b_grad * 0.6, kappa_t=truth.kappa_t * 1.6,
                       theta_l=truth.theta_l * 0.6, b_l=truth.b_l * 1.6, theta_n=truth.theta_n * 1.6,
                       b_n=truth.b_n * 0.6, u=truth.u * 0.6, p_static_l=truth.p_static_l * 1.6)
    fitted = dm.fit_perf_params(train, prior)
    t, tg, ts = dm.components(fitted, test["bs"], test["n"], test["r"], test["multi"], test["f"])
    e = dm.energy_from_components(fitted, test["bs"], test["n"], test["f"], t, tg, ts)
    assert dm.mape(t, test["T"]) < 0.10
    assert dm.mape(e, test["E"]) < 0.10
    before = dm.components(prior, test["bs"], test["n"], test["r"], test["multi"], test["f"])[0]
    assert dm.mape(t, test["T"]) < dm.mape(before, test["T"])  # the fit did something


def _elasticflow_rows(model_file: str):
    path = ref_file("elasticflow", "throughputs_A100", f"{model_file}.csv")
    rows = list(csv.reader(open(path)))
    ns = [int(x) for x in rows[0][1:]]
    bs, n, tpt = [], [], []
    for r in rows[1:]:
        for k, v in zip(ns, r[1:]):
            if v.strip() and float(v) > 0:
                bs.append(int(r[0]))
                n.append(k)
                tpt.append(float(v))
    return np.array(bs), np.array(n), np.array(tpt)


A100_FILES = {"vgg16": "vgg16", "gpt2": "gpt2", "inceptionv3": "inception3", "deepspeech2": "deepspeech2",
              "resnet50": "resnet50", "bert": "bert"}


def test_a100_fit_on_elasticflow_tables():
    """The committed A100 constants reproduce ElasticFlow's measured throughput (< 7 % per model); a 90/10
    refit predicts the held-out rows with average MAPE < 10 % (paper §6.3: "average MAPE does not exceed 10 %")."""
    hw = dm.hardware("a100")
    holdout = []
    for model, file in A100_FILES.items():
        bs, n, tpt = _elasticflow_rows(file)
        pred = 1.0 / dm.iteration(dm.perf_params(model, "a100"), hw, bs, n, hw.fmax_ghz)[0]
        assert dm.mape(pred, tpt) < 0.07, model
        rng = np.random.default_rng(1)
        idx = rng.permutation(bs.size)
        k = max(1, round(0.9 * bs.size))
        fit = dm.fit_throughput_fixed_f(bs[idx[:k]], n[idx[:k]], tpt[idx[:k]], model)
        saved = dm.A100_FITTED[model]
        try:
            dm.A100_FITTED[model] = fit
            p = dm._a100_params_from_fit(model, hw)
            hold = 1.0 / dm.iteration(p, hw, bs[idx[k:]], n[idx[k:]], hw.fmax_ghz)[0]
        finally:
            dm.A100_FITTED[model] = saved
        holdout.append(dm.mape(hold, tpt[idx[k:]]))
    assert np.mean(holdout) < 0.10, holdout
    assert max(holdout) < 0.15, holdout


def test_a100_anchor_power():
    """§3.1: VGG16 BS 64 on one A100 draws 27 J / 0.114 s."""
    hw = dm.hardware("a100")
    t, e = dm.iteration(dm.perf_params("vgg16", "a100"), hw, 64, 1, hw.fmax_ghz)
    assert float(e / t) == pytest.approx(27.0 / 0.114, rel=1e-6)


def test_v100_deepspeech2_ground_truth_follows_zeus():
    """The ground truth's DeepSpeech2 (phi, u from :data:`dm.V100_MEASURED`) against the Zeus rows themselves:
    at each power limit the one-GPU model drawing the measured average power runs at the measured speed
    (epoch time relative to the 250 W row) within 3 %."""
    path = ref_file("zeus-power-traces", "summary_power_v100.csv")
    rows = [r for r in csv.DictReader(open(path)) if r["network"] == "deepspeech2" and r["optimizer"] == "adamw"]
    hw = dm.hardware("v100")
    p = dm.perf_params("deepspeech2")
    f = np.linspace(0.5, hw.fmax_ghz, 3000)
    for bs in (32, 64):
        sel = sorted((r for r in rows if int(r["batch_size"]) == bs), key=lambda r: float(r["power_limit"]))
        power = np.array([float(r["average_power"]) for r in sel])
        time = np.array([float(r["time_per_epoch"]) for r in sel])
        t, e = dm.iteration(p, hw, bs, 1, f)
        f_at = np.interp(power, e / t, f)  # model power rises with f
        t_at = np.interp(f_at, f, t)
        assert dm.mape(t_at / t_at[-1], time / time[-1]) < 0.03, bs


def test_zeus_v100_power_limit_shape():
    """Zeus V100 traces (ResNet-50, DeepSpeech2): along the DVFS curve the model's time-vs-power relation fits
    the measured (average power, epoch time) pairs of the 7 power limits with MAPE < 5 %."""
    path = ref_file("zeus-power-traces", "summary_power_v100.csv")
    rows = [r for r in csv.DictReader(open(path))]
    for net, bs, dataset in (("resnet50", "128", "imagenet"), ("deepspeech2", "32", "librispeech"),
                             ("bert", "64", "sentiment140"), ("bert", "128", "sentiment140")):
        zeus = "bert_base_uncased" if net == "bert" else net
        sel = [r for r in rows if r["network"] == zeus and r["batch_size"] == bs and r["dataset"] == dataset]
        opt = sel[0]["optimizer"]
        sel = [r for r in sel if r["optimizer"] == opt]
        power = np.array([float(r["average_power"]) for r in sel])
        time = np.array([float(r["time_per_epoch"]) for r in sel])
        phi, u, err = dm.fit_power_limit_curve(power, time)
        assert err < 0.05, (net, phi, u, err)
        assert 0.3 <= phi <= 1.0 and 0.3 <= u <= 1.5
        assert (phi, u, err) == pytest.approx(dm.ZEUS_V100_FIT[(net, int(bs))], abs=6e-4)  # the committed fit


def test_trace_models_resnet50_and_bert_are_fitted_not_substituted():
    """Regression: the Philly trace's ResNet-50 and BERT have their own models. ResNet-50's V100 compute is the
    least-squares line through Gavel's measured V100 isolated throughputs (batch 16-128, one GPU); both models'
    DVFS shape is the Zeus fit (as DeepSpeech2's); BERT's V100 compute is its A100 fit over the median A100/V100
    compute ratio of the Table 1 models with an A100 table."""
    import json

    table = json.loads(ref_file("gavel", "simulation_throughputs.json").read_text())["v100"]
    bs = np.array([16, 32, 64, 128.0])
    step = np.array([1.0 / table[str((f"ResNet-50 (batch size {int(b)})", 1))]["null"] for b in bs])
    a_grad, t_s = np.linalg.lstsq(np.vstack([np.ones(4), bs]).T, step, rcond=None)[0]
    spec = dm.CATALOG["resnet50"]
    assert (spec.alpha_grad, spec.t_s) == pytest.approx((a_grad, t_s), rel=2e-3)
    hw = dm.hardware("v100")
    pred = dm.iteration(dm.perf_params("resnet50"), hw, bs, 1, hw.fmax_ghz)[0]
    assert dm.mape(pred, step) < 0.03  # the whole model (IO overlap included) on Gavel's measurements
    for model in ("resnet50", "bert"):
        shape = dm._measured_shape(model)
        assert (dm.CATALOG[model].phi, dm.CATALOG[model].u) == pytest.approx((shape["phi"], shape["u"]), abs=6e-4)
    ratio = float(np.median([dm.A100_FITTED[k][1] / dm.CATALOG[k].t_s for k in dm.A100_TABLE1]))
    assert dm.CATALOG["bert"].t_s == pytest.approx(dm.A100_FITTED["bert"][1] / ratio, rel=1e-3)
    assert dm.CATALOG["bert"].alpha_grad == pytest.approx(dm.A100_FITTED["bert"][0] / ratio, rel=2e-3)
    assert dm.canonical_model("ResNet-50") == "resnet50" and not dm.is_substitute("ResNet-50")
    assert dm.canonical_model("bert") == "bert" and not dm.is_substitute("bert")
    assert dm.canonical_model("Transformer") == "gpt2" and dm.is_substitute("Transformer")


GPNS = (2, 4, 8, 16)


@settings(max_examples=150, deadline=None)
@given(model=st.sampled_from(dm.ALL_MODELS), device=st.sampled_from(("v100", "a100")),
       log_n=st.integers(1, 6), gpn=st.sampled_from(GPNS), bs_index=st.integers(0, 5), f_index=st.integers(0, 16),
       data=st.data())
def test_packed_is_never_slower_than_spread(model, device, log_n, gpn, bs_index, f_index, data):
    """Regression: for the same GPU count and frequency, any spread placement (r GPUs per node on several nodes)
    takes at least the packed placement's step time (on A100, ResNet18 ran up to 38 % faster spread)."""
    hw = dm.hardware(device)
    pool = dm.CATALOG[model].bs_pool
    n = 2**log_n
    bs = max(pool[min(bs_index, len(pool) - 1)], n)
    f = hw.freqs_ghz[min(f_index, len(hw.freqs_ghz) - 1)]
    p = dm.perf_params(model, device)
    packed = float(dm.iteration(p, hw, bs, n, f, gpn=gpn)[0])
    r = data.draw(st.sampled_from([k for k in range(1, min(n, gpn) + 1) if n % k == 0 and n // k >= 2] or [1]))
    spread = float(dm.iteration(p, hw, bs, n, f, r=r, multi=True, gpn=gpn)[0])
    assert spread >= packed * (1 - 1e-12), (model, device, n, r, gpn, spread / packed)


def test_spread_resnet18_a100_regression():
    """The reported case: ResNet18 on A100, 8 GPUs as 2 x 4 over two nodes, was faster than 8 packed on one."""
    hw = dm.hardware("a100")
    p = dm.perf_params("resnet18", "a100")
    for bs in dm.CATALOG["resnet18"].bs_pool:
        packed = dm.iteration(p, hw, bs, 8, hw.freqs_ghz)[0]
        for r in (1, 2, 4):
            spread = dm.iteration(p, hw, bs, 8, hw.freqs_ghz, r=r, multi=True)[0]
            assert np.all(spread >= packed), (bs, r)


@settings(max_examples=120, deadline=None)
@given(model=st.sampled_from(dm.ALL_MODELS), device=st.sampled_from(("v100", "a100")), log_n=st.integers(0, 5),
       bs_index=st.integers(0, 5), sigma=st.sampled_from((0.03, 0.05, 0.1)), salt=st.integers(0, 3))
def test_noisy_throughput_is_non_decreasing_in_frequency(model, device, log_n, bs_index, sigma, salt):
    """Regression: the truth noise never makes a higher clock slower (f_max is the fastest level), in the
    simulator's true rows and in the profiles the predictor is fitted to."""
    from joulegym.envs.powerflow.profiles import Profiles

    pool = dm.CATALOG[model].bs_pool
    n = 2**log_n
    bs = max(pool[min(bs_index, len(pool) - 1)], n)
    hw = dm.hardware(device)
    t, e = dm.tables(dm.perf_params(model, device), hw, bs, [n])
    t_noisy, e_noisy = dm.apply_truth_noise(t, e, dm.noise_factors(model, bs, [n], len(hw.freqs_mhz), sigma, salt))
    assert np.all(np.diff(t_noisy[0]) <= 0)
    assert np.all(e_noisy == e * dm.noise_factors(model, bs, [n], len(hw.freqs_mhz), sigma, salt)[..., 1])
    true_t = Profiles(device, 8, sigma, "oracle").true(model, bs, n)[0]
    assert np.all(np.diff(true_t) <= 0)
    assert not np.allclose(true_t, t[0])  # the noise is still there


def test_truth_noise_regression_fmax_not_slower():
    """The configurations once found: with independent per-level factors some (model, BS, n) ran f_max up to
    5 % slower than a lower level; now none does, over the whole Table 1 pool."""
    from joulegym.envs.powerflow.profiles import Profiles

    prof = Profiles("v100", 8, 0.03, "oracle")
    worst_raw = 0.0
    hw = dm.hardware("v100")
    for model in dm.ALL_MODELS:
        for bs in dm.CATALOG[model].bs_pool:
            for n in (1, 2, 4, 8, 16):
                if n > bs:
                    continue
                t = prof.true(model, bs, n)[0]
                assert t[-1] <= t.min() * (1 + 1e-12)
                raw = dm.tables(dm.perf_params(model), hw, bs, [n])[0][0] * dm.noise_factors(
                    model, bs, [n], len(hw.freqs_mhz), 0.03)[0, :, 0]
                worst_raw = max(worst_raw, raw[-1] / raw.min() - 1)
    assert worst_raw > 0.01  # the raw factors do invert the order: the monotone fit is what prevents it


def test_monotone_noise_stays_centred():
    """The monotone fit keeps the noise unbiased in log space (each row's mean log factor is kept exactly) and
    leaves f_max's step time on average closer to the model's than a running minimum would (1.3 % fast on
    average over the Table 1 pool at sigma 3 %, up to 4.5 % for one configuration), which favours f_max baselines."""
    hw = dm.hardware("v100")
    shift_fit, shift_min = [], []
    for model in dm.MODEL_NAMES:
        for bs in dm.CATALOG[model].bs_pool:
            ns = [n for n in (1, 2, 4, 8, 16) if n <= bs]
            t, e = dm.tables(dm.perf_params(model), hw, bs, ns)
            fac = dm.noise_factors(model, bs, ns, len(hw.freqs_mhz), 0.03)
            fitted = dm.apply_truth_noise(t, e, fac)[0]
            np.testing.assert_allclose(np.log(fitted).sum(axis=1), np.log(t * fac[..., 0]).sum(axis=1), rtol=1e-9)
            shift_fit.append(np.log(fitted[:, -1] / t[:, -1]))
            shift_min.append(np.log(np.minimum.accumulate(t * fac[..., 0], axis=1)[:, -1] / t[:, -1]))
    fit, run_min = np.mean(np.concatenate(shift_fit)), np.mean(np.concatenate(shift_min))
    assert run_min < -0.01 and abs(fit) < abs(run_min) / 2, (fit, run_min)
