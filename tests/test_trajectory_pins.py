"""Speed-ups keep trajectories and metrics: replay the pinned reference episodes of every family
(``FamilyDescriptor.trajectory_pins``) and compare them with ``tests/data/trajectory_pins/<family>.json`` at the
precision ``benchmarks/trajectory_pins.py`` states (rewards and metrics to 1e-9 relative, observations to two
ulps of their dtype), so the pins hold on any x86-64 host while a real dynamics change still fails them.

A deliberate dynamics change re-records its own family with
``python benchmarks/trajectory_pins.py --update --family <family>`` (and says so in the family's version history).
"""

from __future__ import annotations

import copy
import subprocess
import sys

import numpy as np
import pytest

from tests import scripts

pins = scripts.load("trajectory_pins")

PINNED = pins.pinned_families()
POWERFLOW_CASE = ("joulegym/PowerFlow-tiny-v0", "powerflow", 0)


def test_every_family_names_its_pins_and_each_has_a_file():
    from joulegym.core.family import families

    assert {f.name for f in families()} | {pins.TOY_FAMILY} == set(PINNED)  # all five families, and the toy one
    assert pins.stored_families() == PINNED, "re-record with benchmarks/trajectory_pins.py --update --family F"


@pytest.mark.filterwarnings("ignore::UserWarning")  # the env checker warns on vector rewards
@pytest.mark.parametrize("family", PINNED)
def test_trajectories_match_the_pins(family):
    changed = pins.compare(family, pins.load(family))
    assert not changed, (f"{len(changed)} reference episodes of {family!r} changed (re-record a deliberate change "
                         f"with benchmarks/trajectory_pins.py --update --family {family}): {changed}")


def test_a_pin_file_states_its_precision_and_how_to_re_record_it():
    import json

    stored = json.loads(pins.pin_file("powerflow").read_text())
    assert stored["precision"] == pins.PRECISION
    assert stored["recorded_with"] == "python benchmarks/trajectory_pins.py --update --family powerflow"


# --- the precision: one ulp passes, a real change fails --------------------------------------------------------

def _nudge_floats(value, how):
    if isinstance(value, dict):
        return {k: _nudge_floats(v, how) for k, v in value.items()}
    if isinstance(value, list):
        return [_nudge_floats(v, how) for v in value]
    return how(value) if isinstance(value, float) else value


def _stored_powerflow_episode():
    env_id, policy, seed = POWERFLOW_CASE
    return pins.load("powerflow")[pins.case_key(env_id, {}, policy, seed)]


def test_one_ulp_in_every_pinned_value_passes():
    stored = _stored_powerflow_episode()
    for direction in (np.inf, -np.inf):
        nudged = _nudge_floats(copy.deepcopy(stored), lambda x, d=direction: float(np.nextafter(x, d)))
        assert nudged != stored
        assert pins.episode_differences(stored, nudged) == []


def test_one_float32_ulp_in_every_observation_element_passes():
    x = np.random.default_rng(0).uniform(-5.0, 10.0, 559).astype(np.float32)
    for direction in (np.inf, -np.inf):
        moved = np.nextafter(x, np.float32(direction))
        a = {"obs_dtype": "float32", "obs": [pins.obs_summary(x)]}
        b = {"obs_dtype": "float32", "obs": [pins.obs_summary(moved)]}
        assert a != b and pins.episode_differences(a, b) == []


@pytest.mark.parametrize("change", ["reward", "metric", "count", "flag", "obs-swap", "obs-sign", "obs-scale"])
def test_a_small_change_of_one_value_fails(change):
    stored = _stored_powerflow_episode()
    now = copy.deepcopy(stored)
    if change == "reward":
        now["rewards"][3] *= 1 + 1e-7
    elif change == "metric":
        now["metrics"]["total_energy_j"] *= 1 + 1e-7
    elif change == "count":
        now["metrics"]["decisions"] += 1.0
    elif change == "flag":
        now["terminated"] = not now["terminated"]
    else:
        x = np.linspace(0.5, 3.0, 40, dtype=np.float32)
        y = x.copy()
        if change == "obs-swap":
            y[[4, 5]] = y[[5, 4]]
        elif change == "obs-sign":
            y[7] = -y[7]
        else:
            y[9] *= np.float32(1.001)
        stored = {"obs_dtype": "float32", "obs": [pins.obs_summary(x)]}
        now = {"obs_dtype": "float32", "obs": [pins.obs_summary(y)]}
    assert pins.episode_differences(stored, now), change


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("key", ["truth_noise", "prerun_s"])
def test_a_dynamics_constant_changed_by_one_ulp_keeps_the_pin_and_by_1e_8_breaks_it(key):
    """PowerFlow's duration noise sigma and pre-run time, as gym.make kwargs: one ulp moves the episode's last bits
    (an exact-bit pin would fail) but not beyond the precision; a relative 1e-8 is a dynamics change and fails."""
    import gymnasium as gym

    env_id, policy, seed = POWERFLOW_CASE
    stored = _stored_powerflow_episode()
    base = float(gym.spec(env_id).kwargs.get(key, gym.make(env_id).unwrapped.config[key]))

    ulp = pins.episode_pin(env_id, {key: float(np.nextafter(base, np.inf))}, policy, seed)
    assert pins.episode_differences(stored, ulp) == []

    changed = pins.episode_pin(env_id, {key: base * (1 + 1e-8)}, policy, seed)
    assert pins.episode_differences(stored, changed)


def test_one_ulp_of_a_dynamics_constant_moves_the_bits():
    """The previous test is not vacuous: one ulp of the pre-run time changes the episode's exact values."""
    env_id, policy, seed = POWERFLOW_CASE
    ulp = pins.episode_pin(env_id, {"prerun_s": float(np.nextafter(240.0, np.inf))}, policy, seed)
    assert ulp != pins.episode_pin(env_id, {"prerun_s": 240.0}, policy, seed)


# --- the second math-library configuration ---------------------------------------------------------------------

def test_the_generic_kernel_environment_switches_numpy_and_openblas():
    env = pins.generic_kernel_env()
    assert env["OPENBLAS_CORETYPE"] == "Prescott" and env["OPENBLAS_NUM_THREADS"] == "1"
    dispatch, _ = pins._numpy_simd()
    assert env["NPY_DISABLE_CPU_FEATURES"].split() == dispatch


@pytest.mark.slow
def test_the_toy_pins_hold_on_generic_kernels_in_a_child_process():
    out = subprocess.run([sys.executable, str(pins.__file__), "--generic-kernels", "--family", "toy"],
                         capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "child process: numpy SIMD targets in use: none" in out.stdout
    assert "toy: OK" in out.stdout


def test_an_unknown_family_is_refused_by_name(capsys):
    with pytest.raises(SystemExit):
        pins.main(["--family", "nope"])
    assert "--family nope: not a pinned family" in capsys.readouterr().err


def test_a_pin_that_is_not_a_family_id_is_refused():
    from joulegym.core.family import EnvKind, FamilyDescriptor, register_family

    descriptor = FamilyDescriptor("pin-typo", "t", (EnvKind("PinTypo", "x:Y", None, "d"),),
                                  trajectory_pins=("joulegym/PinTypo-v1",))
    with pytest.raises(ValueError, match=r"trajectory_pins \['joulegym/PinTypo-v1'\] are not among its ids"):
        register_family(descriptor)
