"""Qin server CPUs (joulegym.devices.cpu): Table 2 data, P-states, TDP-calibrated power, interference model."""

from __future__ import annotations

import numpy as np
import pytest

from joulegym.devices import get_device
from joulegym.devices.cpu import (
    LITTLE_CORE,
    MASTER_TYPE,
    N_SOI,
    SERVER_TYPES,
    SMT_YIELD,
    SOI_NAMES,
    SOI_WEIGHTS,
    WORKER_TYPES,
    build_core_table,
    energy_per_instruction_j,
    get_server_type,
    interference_slowdown,
    seconds_per_instruction,
    server_caused,
    server_tolerated,
    server_type_from_dict,
)

# Table 2 of the paper: GHz, cores, memory (GB)
TABLE_2 = {"E5-1620": (3.60, 8, 16), "i5-6600": (3.30, 4, 16), "i7-4790": (3.60, 8, 16),
           "i5-7600": (3.50, 4, 8), "i5-4690": (3.50, 4, 8), "i5-4670": (3.40, 4, 8)}
# C per core (F) so that every hardware thread busy at (V_max, f_base) draws 0.7 TDP of dynamic power (A20): the
# spec's table for the 4-core parts; per physical core with the SMT yield for the two Hyper-Threading parts (A22):
# 2 * 0.7 * TDP / (4 * 1.3) / (1.1^2 * f_base)
C_CORE = {"E5-1620": 2 * 0.7 * 130 / (4 * SMT_YIELD) / (1.1**2 * 3.6e9), "i5-6600": 5.70e-9,
          "i7-4790": 2 * 0.7 * 84 / (4 * SMT_YIELD) / (1.1**2 * 3.6e9), "i5-7600": 5.37e-9, "i5-4690": 6.94e-9,
          "i5-4670": 7.15e-9}


def test_table_2_servers():
    assert set(SERVER_TYPES) == set(TABLE_2)
    assert MASTER_TYPE == "E5-1620" and set(WORKER_TYPES) == set(TABLE_2) - {"E5-1620"}
    for name, (ghz, cores, mem) in TABLE_2.items():
        server = SERVER_TYPES[name]
        assert server.f_max_mhz == ghz * 1000 and server.cores == cores and server.mem_gb == mem
        assert server.role == ("master" if name == "E5-1620" else "worker")
        assert server.capacitance_f == pytest.approx(C_CORE[name], rel=0.005)


def test_pstate_tables():
    assert list(SERVER_TYPES["i5-4690"].levels_mhz) == [800, 1700, 2600, 3500]  # the spec's example
    for server in SERVER_TYPES.values():
        levels = server.levels_mhz
        assert levels.size == 4 and np.all(np.diff(levels) > 0)
        assert levels[0] == server.lfm_mhz and levels[-1] == server.base_mhz
        assert np.all(levels % 100 == 0)  # on the 100 MHz P-state step of the spec sheets
        np.testing.assert_allclose(server.volts, [0.7, 0.7 + 0.4 / 3, 0.7 + 0.8 / 3, 1.1])
        assert list(server.frequencies.levels_mhz) == list(levels)


@pytest.mark.parametrize("name", list(SERVER_TYPES))
def test_power_monotone_in_frequency_and_near_tdp_at_full_load(name):
    server = SERVER_TYPES[name]
    n = server.physical_cores  # one thread per physical core
    ones, zeros = np.ones(n), np.zeros(n)
    for beta in (0.0, 0.3, 0.6):
        power = [server.power_w(np.full(n, level), ones, np.full(n, beta)) for level in range(4)]
        assert np.all(np.diff(power) > 0)
    full = server.power_w(np.full(n, 3), ones, zeros)
    package = full - server.dram_idle_w  # beta = 0: no DRAM traffic
    # every hardware thread busy draws 0.9 TDP; one thread per Hyper-Threading core draws the yield's share of
    # the dynamic 0.7 TDP
    dynamic = 0.7 * server.tdp_w / server.full_load_yield
    assert package == pytest.approx(dynamic + 0.2 * server.tdp_w)
    assert 0.7 * server.tdp_w <= package <= server.tdp_w
    idle = server.power_w(np.full(n, 3), zeros, zeros)
    assert idle == pytest.approx(0.1 * server.tdp_w + 0.02 * server.tdp_w + server.dram_idle_w)
    # the shared CMOS model of the device record agrees with eq. 12 at activity 1/2
    model = server.device().power_model
    assert model.dynamic_w(server.f_max_mhz, activity=0.5) == pytest.approx(dynamic / n)
    assert model.static(server.f_max_mhz) == pytest.approx(server.core_leakage_w(3))


def test_paper_dynamic_only_keeps_eq_12():
    server = SERVER_TYPES["i5-6600"]
    level = np.array([0, 1, 2, 3])
    busy = np.array([1.0, 0.5, 1.0, 0.0])
    beta = np.array([0.2, 0.4, 0.0, 0.9])
    expected = np.sum(busy * 0.5 * server.capacitance_f * server.volts[level] ** 2 * server.levels_mhz[level] * 1e6
                      * (1 - 0.5 * beta))
    assert server.power_w(level, busy, beta, paper_dynamic_only=True) == pytest.approx(expected)
    assert server.power_w(level, np.zeros(4), beta, paper_dynamic_only=True) == 0.0
    assert server.power_w(level, busy, beta) > expected


def test_core_table_power_equals_per_server_power():
    names = ["i5-4690", "E5-1620", "i5-6600", "i7-4790"]
    table = build_core_table(names)
    rng = np.random.default_rng(3)
    level = rng.integers(0, 4, table.n_cores)
    busy = rng.random(table.n_cores)
    beta = rng.uniform(0, 0.9, table.n_cores)
    for flag in (False, True):
        vector = table.server_power_w(level, busy, beta, paper_dynamic_only=flag)
        for i, name in enumerate(names):
            cores = slice(table.first_core[i], table.first_core[i + 1])
            assert vector[i] == pytest.approx(SERVER_TYPES[name].power_w(level[cores], busy[cores], beta[cores],
                                                                         paper_dynamic_only=flag))
    # physical cores; the Hyper-Threading parts' cores carry the SMT yield, Table 2's count stays the logical one
    assert list(table.cores) == [4, 4, 4, 4] and list(table.logical_cores) == [4, 8, 4, 8]
    np.testing.assert_array_equal(table.smt_yield, np.repeat([1.0, SMT_YIELD, 1.0, SMT_YIELD], 4))
    np.testing.assert_allclose(table.full_load_cores, [4, 4 * SMT_YIELD, 4, 4 * SMT_YIELD])
    assert np.all(build_core_table(names, smt_yield=1.0).smt_yield == 1.0)  # physical cores only
    with pytest.raises(ValueError, match="smt_yield"):
        build_core_table(names, smt_yield=0.9)


def test_biglittle_half_little_cores():
    big = build_core_table(["i5-4690"])
    mixed = build_core_table(["i5-4690"], biglittle=True)
    assert list(mixed.is_little) == [False, False, True, True]
    np.testing.assert_allclose(mixed.freq_mhz[2], big.freq_mhz[2] * LITTLE_CORE.f_max_scale)
    np.testing.assert_allclose(mixed.dyn_w[3], big.dyn_w[3] * 0.30 * 0.70)
    assert list(mixed.ipc_scale) == [1.0, 1.0, 0.55, 0.55]
    ones, zeros = np.ones(4), np.zeros(4)
    assert mixed.server_power_w(np.full(4, 3), ones, zeros)[0] < big.server_power_w(np.full(4, 3), ones, zeros)[0]


def test_interference_model():
    assert len(SOI_NAMES) == N_SOI == 15
    assert SOI_WEIGHTS[SOI_NAMES.index("memory_bandwidth")] == 1.0 and SOI_WEIGHTS[0] == 0.3
    tolerated = np.full(15, 50.0)
    assert interference_slowdown(np.zeros(15), tolerated) == 1.0
    at_tolerance = np.zeros(15)
    at_tolerance[SOI_NAMES.index("llc_bandwidth")] = 50.0  # pressure = tolerated on a w = 1 SoI: 5 %
    assert interference_slowdown(at_tolerance, tolerated) == pytest.approx(1.05)
    assert interference_slowdown(np.full(15, 1000.0), tolerated) == 3.0  # capped
    batch = interference_slowdown(np.zeros((3, 15)), np.full((3, 15), 10.0))
    assert batch.shape == (3,)
    caused = np.arange(30.0).reshape(2, 15)
    np.testing.assert_allclose(server_caused(caused), caused.sum(axis=0))
    np.testing.assert_allclose(server_caused(caused, np.array([1.0, 0.5])), caused[0] + 0.5 * caused[1])
    np.testing.assert_allclose(server_tolerated(np.empty((0, 15))), np.full(15, 100.0))
    np.testing.assert_allclose(server_tolerated(caused), caused[0])


def test_seconds_per_instruction_and_energy():
    # at f_ref with ipc 1 and memlat 1 the memory share of the time is beta (§1.9)
    tau = seconds_per_instruction(1.0, 0.4, 1.0, 3500.0, 1.0)
    assert (tau - 1.0 / 3.5e9) / tau == pytest.approx(0.4)
    taus = seconds_per_instruction(0.8, 0.3, 1.15, SERVER_TYPES["i5-4690"].levels_mhz, 1.0)
    assert np.all(np.diff(taus) < 0)
    server = SERVER_TYPES["i7-4790"]
    tau = seconds_per_instruction(0.9, 0.3, server.ipc_rel, server.levels_mhz, server.memlat)
    energy = energy_per_instruction_j(server, np.arange(4), tau, 0.3)
    for level in range(4):  # one copy of the app per physical core
        power = server.power_w(np.full(4, level), np.ones(4), np.full(4, 0.3))
        assert energy[level] == pytest.approx(power / 4 * tau[level])
    dynamic = energy_per_instruction_j(server, np.arange(4), tau, 0.3, paper_dynamic_only=True)
    assert np.all(dynamic < energy) and np.all(np.diff(dynamic) > 0)  # eq. 12-13: E ~ V^2 for fixed work


def test_device_presets_registered():
    device = get_device("qin-i5-4690")
    assert device.kind == "cpu" and device.tdp_w == 84.0 and device.frequencies.max_mhz == 3500.0


def test_bad_server_input_names_the_field():
    with pytest.raises(ValueError, match="server_type='i9-9900'"):
        get_server_type("i9-9900")
    base = {field: getattr(SERVER_TYPES["i5-4690"], field) for field in
            ("name", "role", "microarch", "cores", "physical_cores", "base_mhz", "lfm_mhz", "mem_gb", "tdp_w",
             "dram_bw_gbs", "ipc_rel")}
    assert server_type_from_dict(base).levels_mhz.tolist() == [800, 1700, 2600, 3500]
    for field, value, message in (("tdp_w", -5.0, "tdp_w"), ("cores", 2.5, "cores"), ("role", "boss", "role"),
                                  ("lfm_mhz", 4000.0, "lfm_mhz"), ("physical_cores", 8, "physical_cores"),
                                  ("mem_gb", "lots", "mem_gb")):
        with pytest.raises(ValueError, match=message):
            server_type_from_dict({**base, field: value})
    with pytest.raises(ValueError, match="missing fields \\['tdp_w'\\]"):
        server_type_from_dict({k: v for k, v in base.items() if k != "tdp_w"})
    with pytest.raises(ValueError, match="unknown fields \\['turbo'\\]"):
        server_type_from_dict({**base, "turbo": 1.0})
    with pytest.raises(ValueError, match="servers"):
        build_core_table([])
    with pytest.raises(ValueError, match="server_type"):
        build_core_table(["i5-4690", "nope"])
