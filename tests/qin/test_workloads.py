"""Qin workloads (joulegym.workloads.qin_jobs): the §4.2 catalog, RW/LC/TB generators, the workload-file loader."""

from __future__ import annotations

import json

import numpy as np
import pytest

from joulegym.devices.cpu import SOI_NAMES
from joulegym.workloads.qin_jobs import (
    MICROARCHS,
    catalog_recipe,
    generate_jobs,
    get_catalog,
    load_jobs,
    save_jobs,
)


def test_catalog_contents():
    catalog = get_catalog()
    assert len(catalog) == 28 and len(set(catalog.names)) == 28
    assert len(catalog.apps_of("rw")) == 14 and len(catalog.apps_of("tb")) == 13 and len(catalog.apps_of("lc")) == 1
    assert catalog.beta[catalog.index("ocean_ncp")] == 0.60 and catalog.beta[catalog.index("water_spatial")] == 0.05
    assert np.all(catalog.threads == 4)
    assert np.all((catalog.cpi0 >= 0.6) & (catalog.cpi0 <= 1.2))
    assert np.all((catalog.caused >= 0) & (catalog.caused <= 100))
    assert np.all((catalog.tolerated >= 5) & (catalog.tolerated <= 100))
    assert np.all((catalog.ipc_affinity >= 0.9) & (catalog.ipc_affinity <= 1.1))
    # dominant SoIs cause more pressure than the app's median SoI (spec §4.2 "set c high and t low")
    for app in catalog.apps:
        caused = np.array(app.caused)
        for soi in app.dominant:
            assert caused[SOI_NAMES.index(soi)] > np.median(caused), (app.name, soi)


def test_stored_catalog_is_the_recipe_draw():
    catalog = get_catalog()
    for app, drawn in zip(catalog.apps, catalog_recipe(), strict=True):
        assert app.name == drawn["name"]
        np.testing.assert_allclose(app.caused, drawn["caused"], atol=0.051)
        np.testing.assert_allclose(app.tolerated, drawn["tolerated"], atol=0.051)
        np.testing.assert_allclose(app.latent, drawn["latent"], atol=5e-4)
        assert app.cpi0 == pytest.approx(drawn["cpi0"], abs=5e-4)
        np.testing.assert_allclose([app.ipc_affinity[a] for a in MICROARCHS],
                                   [drawn["ipc_affinity"][a] for a in MICROARCHS], atol=5e-4)


def test_generators_are_deterministic_and_seeded():
    for mix in ("rw", "lc", "tb"):
        first = generate_jobs(mix, 50, seed=7, arrival="poisson", rate_per_s=0.2)
        again = generate_jobs(mix, 50, seed=7, arrival="poisson", rate_per_s=0.2)
        other = generate_jobs(mix, 50, seed=8, arrival="poisson", rate_per_s=0.2)
        for field in ("app", "arrival_s", "size_instr", "threads"):
            np.testing.assert_array_equal(getattr(first, field), getattr(again, field))
        assert not np.array_equal(first.size_instr, other.size_instr)
    rng_jobs = generate_jobs("rw", 10, seed=np.random.default_rng(7))
    np.testing.assert_array_equal(rng_jobs.size_instr, generate_jobs("rw", 10, seed=7).size_instr)


def test_mixes_sizes_and_arrivals():
    catalog = get_catalog()
    rw = generate_jobs("rw", 4000, seed=1)
    assert set(rw.job_class) == {"rw"} and np.all(rw.arrival_s == 0)
    assert len(set(rw.names)) == 14  # every Splash-2 app is replicated
    assert rw.reference_runtime_s.mean() == pytest.approx(180.0, rel=0.05)  # lognormal mean 180 s
    assert np.std(np.log(rw.reference_runtime_s)) == pytest.approx(0.5, rel=0.05)
    doubled = generate_jobs("rw", 4000, seed=1, size_scale=2.0)
    np.testing.assert_allclose(doubled.size_instr, 2 * rw.size_instr)
    assert set(generate_jobs("tb", 200, seed=1).job_class) == {"tb"}
    both = generate_jobs(["rw", "tb"], 400, seed=1)
    assert set(both.job_class) == {"rw", "tb"}
    uniform = generate_jobs("lc", 2000, seed=2, lc_dist="uniform").reference_runtime_s
    assert uniform.min() >= 90 and uniform.max() <= 270
    normal = generate_jobs("lc", 2000, seed=2, lc_dist="normal").reference_runtime_s
    assert normal.min() >= 18 - 1e-9 and normal.mean() == pytest.approx(180, rel=0.05)
    exp = generate_jobs("lc", 4000, seed=2, lc_dist="exp").reference_runtime_s
    assert exp.mean() == pytest.approx(180, rel=0.06) and np.std(exp) == pytest.approx(180, rel=0.1)
    poisson = generate_jobs("tb", 3000, seed=3, arrival="poisson", rate_per_s=0.5)
    gaps = np.diff(np.concatenate([[0.0], poisson.arrival_s]))
    assert np.all(gaps >= 0) and gaps.mean() == pytest.approx(2.0, rel=0.06)
    # size = runtime on the reference core x its instruction rate
    np.testing.assert_allclose(rw.reference_runtime_s,
                               rw.size_instr * catalog.reference_seconds_per_instruction[rw.app])


@pytest.mark.parametrize("kwargs, field", [
    ({"mix": "web"}, "mix"), ({"n_jobs": 0}, "n_jobs"), ({"arrival": "bursty"}, "arrival"),
    ({"arrival": "poisson"}, "rate_per_s"), ({"lc_dist": "pareto"}, "lc_dist"),
    ({"size_scale": -1.0}, "size_scale"), ({"mean_runtime_s": 0}, "mean_runtime_s"), ({"mix": []}, "mix"),
])
def test_generator_errors_name_the_field(kwargs, field):
    args = {"mix": "rw", "n_jobs": 5, **kwargs}
    with pytest.raises(ValueError, match=field):
        generate_jobs(args.pop("mix"), args.pop("n_jobs"), seed=0, **args)


def test_save_load_round_trip(tmp_path):
    jobs = generate_jobs(["rw", "lc"], 30, seed=4, arrival="poisson", rate_per_s=1.0)
    path = tmp_path / "jobs.csv"
    save_jobs(jobs, path)
    loaded = load_jobs(path)
    for field in ("app", "arrival_s", "size_instr", "threads"):
        np.testing.assert_array_equal(getattr(loaded, field), getattr(jobs, field))


def test_load_csv_and_json(tmp_path):
    csv_path = tmp_path / "w.csv"
    csv_path.write_text("app,arrival_s,runtime_s,threads\nfft,5,100,2\n\nbarnes,1,50,\n")
    jobs = load_jobs(csv_path)
    assert jobs.names == ("barnes", "fft")  # sorted by arrival
    assert list(jobs.threads) == [4, 2] and jobs.reference_runtime_s == pytest.approx([50.0, 100.0])
    json_path = tmp_path / "w.json"
    json_path.write_text(json.dumps({"jobs": [{"app": "memcached", "size_instr": 1e9},
                                              {"app": "dedup", "arrival_s": 2, "runtime_s": 10}]}, indent=1))
    jobs = load_jobs(json_path)
    assert jobs.names == ("memcached", "dedup") and jobs.size_instr[0] == 1e9 and list(jobs.arrival_s) == [0, 2]
    list_path = tmp_path / "l.json"
    list_path.write_text('[{"app": "fft", "runtime_s": 3}]')
    assert load_jobs(list_path).names == ("fft",)


@pytest.mark.parametrize("name, text, message", [
    ("a.csv", "app,runtime_s\nfft,10\nnosuch,10\n", r"a\.csv line 3: app must be a catalog name"),
    ("b.csv", "app,size_instr\nfft,-3\n", r"b\.csv line 2: size_instr must be a finite number in \[.*\], got '-3'"),
    ("c.csv", "app,runtime_s,size_instr\nfft,10,5\n", r"c\.csv line 2: give exactly one of size_instr and runtime_s"),
    ("d.csv", "app,runtime_s,threads\nfft,10,1.5\n", r"d\.csv line 2: threads must be a whole number in \[1, 1024\]"),
    ("e.csv", "runtime_s\n10\n", r"e\.csv line 1: the app column is required"),
    ("f.csv", "app,runtime_s,colour\nfft,10,red\n", r"f\.csv line 1: unknown column\(s\) \['colour'\]"),
    ("g.csv", "app,runtime_s,arrival_s\nfft,10,nan\n", r"g\.csv line 2: arrival_s must be a finite number in \[0, 1e"),
    ("h.csv", "app,runtime_s\nfft,10,3\n", r"h\.csv line 2: 3 fields, the header has 2"),
    ("i.csv", "app,runtime_s\n", r"i\.csv: the workload has no jobs"),
    ("j.json", '[\n {"app": "fft", "runtime_s": 1},\n {"app": "fft"}\n]', r"j\.json line 3: give exactly one"),
    ("k.json", '[\n {"app": "fft",\n  "runtime_s": 1,}\n]', r"k\.json line 3: not valid JSON"),
    ("l.json", '[\n {"app": "fft", "runtime_s": 1, "gpu": 2}\n]', r"l\.json line 2: unknown field\(s\) \['gpu'\]"),
    ("m.json", '{"tasks": []}', r"m\.json line 1: a JSON workload is a list"),
    ("n.json", '[\n 3\n]', r"n\.json line 2: a job must be a JSON object"),
    ("o.csv", "", r"o\.csv line 1: empty file"),
])
def test_loader_errors_name_file_line_and_field(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_jobs(path)


def test_loader_rejects_binary_and_missing_files(tmp_path):
    path = tmp_path / "bin.csv"
    path.write_bytes(b"app,runtime_s\n\xff\xfe,1\n")
    with pytest.raises(ValueError, match=r"bin\.csv: not UTF-8"):
        load_jobs(path)
    with pytest.raises(ValueError, match="cannot read"):
        load_jobs(tmp_path / "missing.csv")


def test_catalog_and_jobs_copy_and_pickle():
    """Envs are deep-copied and pickled (the core contract test): the catalog survives as the shared one."""
    import copy
    import pickle

    jobs = generate_jobs("rw", 5, seed=0)
    for clone in (copy.deepcopy(jobs), pickle.loads(pickle.dumps(jobs))):
        assert clone.catalog is get_catalog()
        np.testing.assert_array_equal(clone.size_instr, jobs.size_instr)
    app = pickle.loads(pickle.dumps(get_catalog().apps[0]))
    assert app == get_catalog().apps[0] and app.ipc_affinity["haswell"] == get_catalog().apps[0].ipc_affinity["haswell"]


def test_job_table_checks_its_columns():
    from joulegym.workloads.qin_jobs import QinJobs

    catalog = get_catalog()
    good = {"app": np.array([0, 1]), "arrival_s": np.array([0.0, 1.0]), "size_instr": np.array([1e9, 2e9]),
            "threads": np.array([4, 4])}
    source = good["size_instr"]
    jobs = QinJobs(catalog, **good)
    assert source.flags.writeable and not jobs.size_instr.flags.writeable  # a private read-only copy
    for field, value, message in (("size_instr", np.array([1e9, -1.0]), "size_instr"),
                                  ("arrival_s", np.array([2.0, 1.0]), "sorted"),
                                  ("app", np.array([0, 99]), "app indices"),
                                  ("threads", np.array([4, 0]), "threads"),
                                  ("arrival_s", np.array([0.0]), "arrival_s")):
        with pytest.raises(ValueError, match=message):
            QinJobs(catalog, **{**good, field: value})
