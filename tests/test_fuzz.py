"""Property-based fuzz test over every registered family (docs/robustness.md).

Families are read from :func:`joulegym.core.family.families`, so a family registered later is covered without
editing this file. For each one, hypothesis draws

- actions inside and outside every kind's action space (random samples; NaN, inf, denormals, huge and negative
  numbers, wrong shapes and dtypes, junk objects): an action the space contains must step; any other must raise
  ``ValueError`` or step;
- a value for every config key (top level, a key of a dict-valued key, a field of the first entry of a list of
  dicts): wrong types, NaN, inf, negatives, huge numbers, booleans, strings. ``gym.make`` raises ``ValueError``
  naming the key, or the env resets and steps;
- ``reset(options=...)``: ``ValueError`` or a reset that steps;

and, outside the envs, random bytes and random rows for the trace loaders, Qin workload files and DREAM layer
files (``ValueError`` naming the file, or a valid trace / a workload the env runs with finite rewards / a model
with finite costs), rejected batches of the batched vector envs (every row unstepped) and wide magnitudes
for the pure functions ``etf_allocate``, ``drf_allocate``, ``wfq_allocate``,
``emrf_allocate`` (``ValueError`` naming an argument, or a finite allocation within capacity) and PowerFlow's
``simulate``.

Every step checks: obs inside ``observation_space``, a finite reward, nothing non-finite in ``info``. A step or
make that runs for more than :data:`HANG_S` seconds is a failure (fail fast, never hang).
Settings are derandomised (the same examples in every run) with ``deadline=None``; the whole file runs in well
under two minutes on the CI machine.
"""

from __future__ import annotations

import copy
import math
import os
import signal
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st

import joulegym  # noqa: F401  (registers the ids)
from joulegym.core.family import env_id, families
from tests import scripts

# A make, reset or step slower than this is a hang; the slowest legitimate make (a PowerFlow
# trace synthesis) takes well under a second on the CI machine.
soak = scripts.load("soak")
HANG_S = 20.0
STEPS = 6  # random steps after an accepted config or reset option

# JOULEGYM_FUZZ_SCALE=10 multiplies every example count (a deeper local run; CI uses 1).
SCALE = float(os.environ.get("JOULEGYM_FUZZ_SCALE", "1"))


def examples(n: int) -> int:
    return max(1, round(n * SCALE))


FUZZ = settings(max_examples=examples(40), deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])  # fmt: skip

FAMILIES = [f.name for f in families()]
KIND_IDS = [env_id(k.name, version=k.version) for f in families() for k in f.kinds]
# per family: its kinds' base ids and its small contract scenario (scenario-shaped configs, e.g. a trace file)
CONFIG_IDS = {f.name: [env_id(k.name, version=k.version) for k in f.kinds] + ([f.contract_id] if f.contract_id else [])
              for f in families()}  # fmt: skip


class Hang(AssertionError):
    pass


@contextmanager
def time_limit(seconds: float, what: str) -> Iterator[None]:
    def _raise(signum: int, frame: Any) -> None:
        raise Hang(f"{what} ran for more than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def assert_finite_tree(value: Any, where: str) -> None:
    """Every number in ``value`` (nested dicts, lists, tuples, arrays) is finite (the soak benchmark's check)."""
    bad = soak.first_non_finite(value, where)
    assert bad is None, f"non-finite: {bad}"


def check_step_output(env: gym.Env, obs: Any, reward: Any, info: Mapping[str, Any], where: str) -> None:
    assert env.observation_space.contains(obs), f"{where}: obs outside observation_space: {obs}"
    assert np.all(np.isfinite(np.asarray(reward, dtype=float))), f"{where}: reward {reward!r}"
    assert_finite_tree(dict(info), f"{where} info")


def random_steps(env: gym.Env, seed: int, steps: int = STEPS, where: str = "") -> None:
    """Reset with ``seed`` and take ``steps`` in-space random actions, checking every output."""
    obs, info = env.reset(seed=seed)
    check_step_output(env, obs, 0.0, info, f"{where} reset")
    continue_random(env, seed, steps, where, past_the_end=True)


def continue_random(env: gym.Env, seed: int, steps: int, where: str, past_the_end: bool) -> None:
    """``steps`` in-space random actions from the current state, checking every output; at an episode's end
    reset with ``seed + 1`` and go on, or stop (``past_the_end=False``)."""
    env.action_space.seed(seed)
    for t in range(steps):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        check_step_output(env, obs, reward, info, f"{where} step {t}")
        if terminated or truncated:
            if not past_the_end:
                return
            obs, info = env.reset(seed=seed + 1)


# --------------------------------------------------------------------------------------------- actions

_ENVS: dict[str, gym.Env] = {}


def cached_env(id_: str) -> gym.Env:
    if id_ not in _ENVS:
        _ENVS[id_] = gym.make(id_)
    return _ENVS[id_]


_WILD_FLOATS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -0.0, 5e-324, 1e-308, 1e-45, 1.0, 1.0 + 1e-7, -1e-7, 1e308, -1e308, 0.5]),
)
_JUNK = st.sampled_from([None, "1", "x", b"1", {"a": 1}, [], [None], object(), 1 + 2j, np.array(["a", "b"]),
                         np.array([1 + 1j]), True, False, np.float64("nan")])  # fmt: skip


@st.composite
def actions(draw: st.DrawFn, space: gym.Space, seed: int) -> Any:
    """An action inside ``space`` (a seeded sample) or an adversarial one around it."""
    choice = draw(st.integers(0, 5))
    if choice == 0:
        space.seed(seed)
        return space.sample()
    if choice == 1:
        return draw(_JUNK)
    if isinstance(space, gym.spaces.Box):
        shape = draw(st.sampled_from([space.shape, space.shape, (), (1,), (space.shape[0] + 1,)]))
        size = int(np.prod(shape)) if shape else 1
        if choice == 2:  # inside the bounds, tiny and boundary values included
            low, high = float(space.low.min()), float(space.high.max())
            values = draw(st.lists(st.one_of(st.floats(low, high), st.sampled_from([low, high, 5e-324, 1e-308])),
                                   min_size=size, max_size=size))  # fmt: skip
        else:
            values = draw(st.lists(_WILD_FLOATS, min_size=size, max_size=size))
        dtype = draw(st.sampled_from([np.float32, np.float64, np.int64]))
        with np.errstate(all="ignore"):
            array = np.array(values, dtype=np.float64).reshape(shape)
            if dtype is np.int64:  # an integer array of the same values (NaN and inf have none)
                return np.nan_to_num(array).clip(-9e18, 9e18).astype(dtype)
            return array.astype(dtype)
    if isinstance(space, gym.spaces.Discrete):
        n = int(space.n)
        return draw(st.one_of(st.integers(-3, n + 3), st.integers(-(2**70), 2**70), st.floats(-2, n + 2),
                              st.sampled_from([np.int64(0), np.int32(n - 1), np.array(0), np.array([0]),
                                               np.uint8(1), np.float32(1.0)])))  # fmt: skip
    if isinstance(space, gym.spaces.MultiDiscrete):
        nvec = space.nvec
        shape = draw(st.sampled_from([nvec.shape, nvec.shape, (nvec.size + 1,), ()]))
        size = int(np.prod(shape)) if shape else 1
        values = draw(st.lists(st.integers(-3, int(nvec.max()) + 3), min_size=size, max_size=size))
        dtype = draw(st.sampled_from([np.int64, np.int8, np.float64]))
        return np.array(values).reshape(shape).astype(dtype)
    raise AssertionError(f"no adversarial actions for {space}")  # a new space type: extend this strategy


def in_space(space: gym.Space, action: Any) -> bool:
    """Gymnasium's ``contains``, less booleans (``Discrete(n).contains(True)`` holds; joulegym refuses a bool
    where it expects a choice)."""
    if isinstance(action, bool | np.bool_) or (isinstance(action, np.ndarray) and action.dtype == np.bool_):
        return False
    try:
        return bool(space.contains(action))
    except Exception:  # a junk object cannot be in any space
        return False


@pytest.mark.parametrize("id_", KIND_IDS)
def test_actions_inside_step_and_outside_raise_valueerror_or_step(id_):
    env = cached_env(id_)

    @FUZZ
    @given(data=st.data(), seed=st.integers(0, 2**16))
    def run(data: st.DataObject, seed: int) -> None:
        env.reset(seed=seed)
        for t in range(4):
            action = data.draw(actions(env.action_space, seed + t), label=f"action {t}")
            inside = in_space(env.action_space, action)
            with time_limit(HANG_S, f"{id_} step"):
                try:
                    obs, reward, terminated, truncated, info = env.step(action)
                except ValueError as err:
                    assert not inside, f"{id_}: an action inside {env.action_space} was refused: {err}"
                    assert "action" in str(err), f"{id_}: the error does not name the action: {err}"
                    continue
            check_step_output(env, obs, reward, info, f"{id_} step {t} ({'inside' if inside else 'outside'})")
            if terminated or truncated:
                env.reset(seed=seed + 1)

    run()


# --------------------------------------------------------------------------------------------- config keys

_BAD = st.one_of(
    st.sampled_from([None, True, False, "x", "", "1", [], {}, [1], {"kind": "bogus"}, {"bogus": 1}, math.nan,
                     math.inf, -math.inf, 0, -1, -3, 1, 2, 0.5, -0.5, 1e-320, 1e-15, 1e308, 2**63, 10**30, 1e12,
                     10**9, 10**6]),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=4),
    st.lists(st.one_of(st.integers(-5, 5), st.floats(allow_nan=True)), max_size=3),
)  # fmt: skip


def key_paths(config: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """Every key of ``config``: top level, inside a dict value, inside the first dict of a list value."""
    paths: list[tuple[Any, ...]] = []
    for key, value in config.items():
        paths.append((key,))
        if isinstance(value, Mapping):
            paths += [(key, sub) for sub in value]
        elif isinstance(value, list) and value and isinstance(value[0], Mapping):
            paths += [(key, 0, sub) for sub in value[0]]
    return paths


def override(config: Mapping[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    if len(path) == 1:
        return {path[0]: value}
    if len(path) == 2:
        return {path[0]: {path[1]: value}}  # merged into the current dict by resolve_config
    key, index, sub = path
    items = copy.deepcopy(config[key])
    items[index] = {**items[index], sub: value}
    return {key: items}


def _config_cases() -> list[tuple[str, tuple[Any, ...]]]:
    cases = []
    for family in FAMILIES:
        for id_ in CONFIG_IDS[family]:
            cases += [(id_, path) for path in key_paths(cached_env(id_).unwrapped.config)]
    return cases


def check_config(id_: str, path: tuple[Any, ...], kwargs: dict[str, Any], seed: int) -> str:
    """The property: ``gym.make`` raises ValueError naming the key, or the env resets and steps fine."""
    with time_limit(HANG_S, f"{id_} {kwargs}"):
        try:
            env = gym.make(id_, **kwargs)
        except ValueError as err:
            names = {str(p) for p in path if isinstance(p, str)}
            assert any(n in str(err) for n in names), f"{id_} {kwargs}: the error does not name {path}: {err}"
            return "ValueError"
        random_steps(env, seed, where=f"{id_} {kwargs}")
    return "accepted"


@pytest.mark.parametrize("family", FAMILIES)
def test_every_config_key_names_itself_or_steps(family):
    cases = [c for c in _config_cases() if c[0] in CONFIG_IDS[family]]

    @settings(FUZZ, max_examples=examples(120))
    @given(case=st.sampled_from(cases), value=_BAD, seed=st.integers(0, 2**16))
    def run(case: tuple[str, tuple[Any, ...]], value: Any, seed: int) -> None:
        id_, path = case
        event(check_config(id_, path, override(cached_env(id_).unwrapped.config, path, value), seed))

    run()


# --------------------------------------------------------------------------------------------- reset options

_OPTION_VALUES = st.one_of(_BAD, st.builds(dict, st.dictionaries(st.text(max_size=4), _BAD, max_size=2)))


@pytest.mark.parametrize("family", FAMILIES)
def test_reset_options_raise_valueerror_or_step(family):
    id_ = CONFIG_IDS[family][0]
    env = cached_env(id_)
    keys = [*list(env.unwrapped.option_keys), "bogus"]

    @settings(FUZZ, max_examples=examples(30))
    @given(options=st.one_of(_BAD, st.dictionaries(st.sampled_from(keys), _OPTION_VALUES, max_size=2)),
           seed=st.integers(0, 2**16))  # fmt: skip
    def run(options: Any, seed: int) -> None:
        with time_limit(HANG_S, f"{id_} reset(options={options!r})"):
            try:
                obs, info = env.reset(seed=seed, options=options)
            except ValueError as err:
                assert "option" in str(err) or any(k in str(err) for k in keys), err
                event("ValueError")
                return
            event("accepted")
            where = f"{id_} reset(options={options!r})"
            check_step_output(env, obs, 0.0, info, where)
            continue_random(env, seed, STEPS, where, past_the_end=False)

    run()


# --------------------------------------------------------------------------------------------- trace loaders

_HEADERS = [
    "job_id,submit_time,num_gpu,duration,model_name,batch_size,iteration",
    "timestamp,duration,num_gpus,gpu_time,cluster",
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time",
    "job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type",
    "job_id,submit_time_s,num_gpus,duration_s,model,batch_size,iterations,extra.n:int,extra.x:float,extra.b:bool",
]
_CELLS = st.one_of(
    st.sampled_from(["", "0", "1", "2", "-1", "1.5", "inf", "-inf", "nan", "1e20", "1e400", "-1e308", "1e308",
                     "9223372036854775808", "x", "True", "resnet50", "\"a,b\"", "2017-10-13 00:00:06",
                     "2017-10-13 00:00:06+02:00", "  3 ", "\t", "\"", "caf\u00e9"]),
    st.integers(-(2**65), 2**65).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=6),
)  # fmt: skip


@st.composite
def trace_texts(draw: st.DrawFn) -> tuple[str, bytes]:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(st.sampled_from(["t.csv", "pai_task_table.csv", "g.trace"])), draw(st.binary(max_size=200))
    if kind == 1:  # gavel: tab-separated, 7 or 10 fields
        width = draw(st.sampled_from([7, 10]))
        rows = draw(st.lists(st.lists(_CELLS, min_size=width - 1, max_size=width + 1), min_size=1, max_size=5))
        return "g.trace", "\n".join("\t".join(r) for r in rows).encode()
    header = draw(st.sampled_from(_HEADERS))
    width = header.count(",") + 1
    rows = draw(st.lists(st.lists(_CELLS, min_size=width - 1, max_size=width + 1), min_size=0, max_size=5))
    text = "\n".join([header, *(",".join(r) for r in rows)]) + draw(st.sampled_from(["", "\n", "\r\n", "\n\n"]))
    name = "pai_task_table.csv" if header.startswith("job_name") and draw(st.booleans()) else "t.csv"
    return name, text.encode("utf-8", errors="surrogatepass")


def test_trace_loaders_raise_valueerror_naming_the_file_or_load(tmp_path_factory):
    from joulegym.workloads.traces import FORMATS, load_trace_with_report

    folder = tmp_path_factory.mktemp("fuzz-traces")

    @settings(FUZZ, max_examples=examples(300))
    @given(case=trace_texts(), fmt=st.sampled_from(["auto", *FORMATS]))
    def run(case: tuple[str, bytes], fmt: str) -> None:
        name, data = case
        path = folder / name
        path.write_bytes(data)
        with time_limit(HANG_S, f"load_trace({data!r})"):
            try:
                trace, report = load_trace_with_report(path, fmt)
            except ValueError as err:
                assert name in str(err) or "format" in str(err), f"{data!r}: the error does not name the file: {err}"
                event("ValueError")
                return
        event("loaded")
        n = len(trace)
        assert (n >= 1 and report.rows_read == n + report.jobs_dropped) or report.format.startswith("pai2020")
        assert np.all(np.isfinite(trace.submit_time_s)) and trace.submit_time_s[0] == 0.0
        assert np.all(np.diff(trace.submit_time_s) >= 0)
        assert np.all(trace.num_gpus >= 1) and np.all(trace.batch_size >= 0)
        assert len(set(trace.job_id.tolist())) == n, "repeated job ids"
        assert all(v.shape == (n,) for v in trace.extra.values())
        for column in ("duration_s", "iterations"):
            values = getattr(trace, column)
            assert np.all(np.isnan(values) | (np.isfinite(values) & (values >= 0))), (column, values)

    run()


# --------------------------------------------------------------------------------------------- pure functions

# Half the examples draw every argument from its documented domain at wide magnitudes (what must give a correct
# answer), the other half anything (a correct answer or a ValueError naming an argument).
_WILD_EXTRAS = st.sampled_from([0.0, -0.0, -1.0, -1e308, 5e-324, 1e-320, 1e308, math.inf, -math.inf, math.nan])
_SHARE = st.one_of(st.floats(0, 1), st.sampled_from([0.0, 1.0, 5e-324, 1 - 1e-16, 1e-300]))
_WILD_SHARE = st.one_of(_SHARE, st.sampled_from([1.5, -0.1, math.nan, math.inf]))


def in_range(low: float, high: float) -> st.SearchStrategy[float]:
    """Log-uniform over [low, high], ends included."""
    a, b = math.log10(low), math.log10(high)
    return st.one_of(st.floats(a, b).map(lambda e: min(max(10.0**e, low), high)), st.sampled_from([low, high]))


@st.composite
def clustered(draw: st.DrawFn, n: int, low: float, high: float, spread: float) -> list[float]:
    """``n`` numbers in [low, high] whose max/min ratio is at most ``spread``."""
    base = draw(in_range(low, high / spread))
    return [min(base * f, high) for f in draw(st.lists(in_range(1.0, spread), min_size=n, max_size=n))]


def _within(total: float, capacity: float) -> bool:
    return total <= capacity * (1 + 1e-6) + 1e-300


@settings(FUZZ, max_examples=examples(300))
@given(n=st.integers(1, 5), valid=st.booleans(), data=st.data())
def test_etf_allocate_is_within_T_or_names_the_argument(n, valid, data):
    from joulegym.envs.etf.allocation import MAGNITUDE, etf_allocate

    number = in_range(*MAGNITUDE) if valid else st.one_of(in_range(*MAGNITUDE), _WILD_EXTRAS)
    weights = data.draw(st.lists(number, min_size=n, max_size=n), label="weights")
    demand = st.one_of(st.integers(0, 10**6), st.just(math.inf)) if valid else st.one_of(
        number, st.just(math.inf), st.integers(-2, 50), st.just(0.5))  # whole units per interval, or inf
    demands = data.draw(st.one_of(st.none(), st.lists(demand, min_size=n, max_size=n)), label="demands")
    power = data.draw(st.lists(number, min_size=n, max_size=n), label="power")
    T = data.draw(st.integers(1, 200) if valid else st.one_of(st.integers(-2, 200), st.sampled_from(
        [0, 10**6, 2**63, 1.5, math.inf, True])), label="T")  # fmt: skip
    phi = data.draw(_SHARE if valid else _WILD_SHARE, label="phi")
    with time_limit(HANG_S, "etf_allocate"):
        try:
            out = etf_allocate(weights, demands, power, T, phi)
        except ValueError as err:
            assert any(a in str(err) for a in ("weights", "demands", "power", "T", "phi")), err
            event(f"ValueError ({'valid' if valid else 'wild'} draw)")
            return
    event(f"allocated ({'valid' if valid else 'wild'} draw)")
    assert out.shape == (n,) and out.dtype.kind == "i"
    assert np.all(out >= 0) and int(out.sum()) <= T
    if demands is not None:
        assert np.all(out <= np.floor(np.asarray(demands, dtype=float)))


@pytest.mark.parametrize("name", ["drf_allocate", "wfq_allocate", "emrf_allocate"])
def test_emrf_allocators_are_within_capacity_or_name_the_argument(name):
    from joulegym.envs.emrf import allocation

    allocate = getattr(allocation, name)

    @settings(FUZZ, max_examples=examples(150))
    @given(n=st.integers(1, 5), valid=st.booleans(), data=st.data())
    def run(n: int, valid: bool, data: st.DataObject) -> None:
        low, high = allocation.CAPACITY_RANGE
        if valid:
            capacities = tuple(data.draw(clustered(2, low, high, allocation.MAX_SPREAD), label="capacities"))
            weights = data.draw(clustered(n, low, high, allocation.MAX_SPREAD), label="weights")
        else:
            number = st.one_of(in_range(low, high), _WILD_EXTRAS)
            capacities = data.draw(st.tuples(number, number), label="capacities")
            weights = data.draw(st.lists(number, min_size=n, max_size=n), label="weights")
        xi = data.draw(st.lists(_SHARE if valid else _WILD_SHARE, min_size=n, max_size=n), label="xi_cpu")
        extra = {"eta": data.draw(_SHARE if valid else _WILD_SHARE, label="eta")} if name == "emrf_allocate" else {}
        with time_limit(HANG_S, name):
            try:
                out = allocate(capacities, xi, weights, **extra)
            except ValueError as err:
                assert any(a in str(err) for a in ("capacities", "xi", "weights", "eta")), err
                event(f"ValueError ({'valid' if valid else 'wild'} draw)")
                return
        event(f"allocated ({'valid' if valid else 'wild'} draw)")
        out = np.asarray(out, dtype=float)
        x = np.asarray(xi, dtype=float)
        assert out.shape == (n,) and np.all(np.isfinite(out)) and np.all(out >= 0), out
        assert _within(float(out @ x), capacities[0]), ("cpu", out @ x, capacities)
        assert _within(float(out @ (1 - x)), capacities[1]), ("gpu", out @ (1 - x), capacities)

    run()


@settings(FUZZ, max_examples=examples(12))
@given(
    jobs=st.lists(st.tuples(st.floats(0, 5e3), st.sampled_from([1, 2, 3, 4, 8, 16]), st.floats(1, 5e3)),
                  min_size=1, max_size=4),
    valid=st.booleans(),
    data=st.data(),
)  # fmt: skip
def test_powerflow_simulate_is_finite_or_raises_valueerror(jobs, valid, data):
    import pandas as pd

    from joulegym.baselines.powerflow_simulate import simulate
    from joulegym.workloads.traces import JobTrace

    if valid:
        cluster = data.draw(st.one_of(st.none(), st.tuples(st.integers(1, 3), st.sampled_from([1, 2, 4, 8]))))
        eta = data.draw(st.floats(0.05, 1.0), label="eta")
        policy = data.draw(st.sampled_from(["powerflow", "fifo"]), label="policy")
    else:
        cluster = data.draw(st.one_of(st.tuples(st.integers(-1, 3), st.integers(-1, 9)),
                                      st.sampled_from([(1.5, 8), (1, True), ("2", 8)])), label="cluster")
        eta = data.draw(st.one_of(st.floats(-1, 2), st.sampled_from([math.nan, math.inf, True])), label="eta")
        policy = data.draw(st.sampled_from(["powerflow", "fifo", "bogus"]), label="policy")
    submit, gpus, duration = (list(c) for c in zip(*jobs))
    trace = JobTrace.from_dataframe(pd.DataFrame({"submit_time_s": submit, "num_gpus": gpus, "duration_s": duration,
                                                  "model": "resnet50", "batch_size": 64}))  # fmt: skip
    with time_limit(60.0, f"simulate({jobs}, {policy}, cluster={cluster}, eta={eta})"):
        try:
            result = simulate(trace, policy, cluster=cluster, eta=eta, seed=0)
        except ValueError as err:
            assert any(a in str(err) for a in ("cluster", "nodes", "gpus", "eta", "policy", "bogus", "num_gpus")), err
            event(f"ValueError ({'valid' if valid else 'wild'} draw)")
            return
    event(f"simulated ({'valid' if valid else 'wild'} draw)")
    assert math.isfinite(result.avg_jct_s) and result.avg_jct_s >= 0
    assert math.isfinite(result.total_energy_j) and result.total_energy_j >= 0
    assert math.isfinite(result.makespan_s) and result.makespan_s >= 0


def test_fuzz_covers_every_registered_family():
    """New families (DREAM, Qin, ...) join the fuzz test through their descriptors."""
    from joulegym.core.family import registered_ids

    assert FAMILIES and {i.split("/")[1].split("-")[0] for i in KIND_IDS} == {
        k.name for f in families() for k in f.kinds}
    assert all(any(i.startswith(f"joulegym/{k.name}-") for i in registered_ids()) for f in families() for k in f.kinds)


# --------------------------------------------------------------------------------------------- Qin workload files

_JOB_CELLS = st.one_of(
    st.sampled_from(["", "0", "1", "4", "-1", "1.5", "180", "2e7", "1e6", "1e300", "1e-300", "1e20", "nan", "inf",
                     "x", "fft", "lu", "ocean", "memcached", "True", "  3 ", "1e-3"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=5),
)  # fmt: skip
_JOB_COLUMNS = ("app", "arrival_s", "size_instr", "runtime_s", "threads", "bogus")


@st.composite
def workload_texts(draw: st.DrawFn) -> tuple[str, str]:
    """A Qin workload file: CSV rows under a drawn header, a JSON list of drawn objects, or deep/odd JSON."""
    kind = draw(st.integers(0, 3))
    columns = draw(st.lists(st.sampled_from(_JOB_COLUMNS), min_size=1, max_size=5))
    if kind == 0:
        rows = draw(st.lists(st.lists(_JOB_CELLS, min_size=len(columns), max_size=len(columns)), max_size=4))
        return "w.csv", "\n".join([",".join(columns), *(",".join(r) for r in rows)]) + "\n"
    if kind == 1:
        value = st.one_of(_JOB_CELLS, st.floats(allow_nan=False), st.integers(-(2**70), 2**70), st.none())
        jobs = draw(st.lists(st.dictionaries(st.sampled_from(_JOB_COLUMNS), value, max_size=5), max_size=4))
        import json

        return "w.json", json.dumps(jobs)
    if kind == 2:
        depth = draw(st.sampled_from([10, 2000, 100_000]))
        return "w.json", "[" * depth + "]" * depth
    return "w.json", draw(st.sampled_from(['{"jobs": 5}', '[1, 2]', '{"app": "fft"}', "", "[",
                                           '[{"app": "fft", "app": "lu", "runtime_s": 1}]']))


def test_qin_workload_files_raise_valueerror_naming_the_file_or_run(tmp_path_factory):
    from joulegym.workloads.qin_jobs import load_jobs

    folder = tmp_path_factory.mktemp("fuzz-qin")

    @settings(FUZZ, max_examples=examples(150))
    @given(case=workload_texts(), seed=st.integers(0, 2**16))
    def run(case: tuple[str, str], seed: int) -> None:
        name, text = case
        path = folder / name
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        with time_limit(HANG_S, f"load_jobs({text[:200]!r})"):
            try:
                jobs = load_jobs(path)
            except ValueError as err:
                assert str(path) in str(err) and "\n" not in str(err), err
                event("ValueError")
                return
            event("loaded")
            assert np.all(np.isfinite(jobs.arrival_s)) and np.all(np.isfinite(jobs.size_instr))
            env = gym.make("joulegym/QinCluster-v0", workload={"kind": "file", "path": str(path)})
            random_steps(env, seed, steps=STEPS, where=f"QinCluster workload {text[:200]!r}")

    run()


# --------------------------------------------------------------------------------------------- DREAM layer files

_DIM_CELLS = st.one_of(st.integers(-3, 300).map(str), st.sampled_from(["", "x", "1.5", "1e9", "9" * 30, "nan"]))


@st.composite
def layer_texts(draw: st.DrawFn) -> str:
    from joulegym.workloads.dream_models import LAYER_FILE_HEADER, LAYER_TYPES

    header = draw(st.sampled_from([",".join(LAYER_FILE_HEADER), ",".join(LAYER_FILE_HEADER[:-1]), "a,b", ""]))
    rows = []
    for k in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from([*LAYER_TYPES, "POOL", ""]))
        dims = draw(st.lists(_DIM_CELLS, min_size=len(LAYER_FILE_HEADER) - 3, max_size=len(LAYER_FILE_HEADER) - 1))
        rows.append(",".join([f"l{k}", kind, *dims]))
    return "\n".join([header, *rows]) + "\n"


def test_dream_layer_files_raise_valueerror_naming_the_file_or_have_finite_costs(tmp_path_factory):
    from joulegym.devices.accelerator import SOC_PRESETS
    from joulegym.workloads.dream_models import layer_cost_tables, load_layer_file

    path = tmp_path_factory.mktemp("fuzz-dream") / "model.csv"

    @settings(FUZZ, max_examples=examples(200))
    @given(text=layer_texts(), soc=st.sampled_from(sorted(SOC_PRESETS)))
    def run(text: str, soc: str) -> None:
        path.write_text(text)
        with time_limit(HANG_S, f"load_layer_file({text!r})"):
            try:
                model = load_layer_file(path)
            except ValueError as err:
                assert str(path) in str(err), err
                event("ValueError")
                return
            event("loaded")
            latency, energy = layer_cost_tables(model, soc)
        assert np.all(np.isfinite(latency)) and np.all(latency > 0), latency
        assert np.all(np.isfinite(energy)) and np.all(energy >= 0), energy

    run()


# --------------------------------------------------------------------------------------------- batched envs

BATCHED = [(f.name, env_id(k.name, version=k.version)) for f in families() for k in f.kinds
           if getattr(k, "vector_entry_point", None)]


def _twins(id_: str) -> tuple[Any, Any]:
    return (gym.make_vec(id_, num_envs=3, vectorization_mode="vector_entry_point") for _ in range(2))


@pytest.mark.parametrize(("family", "id_"), BATCHED)
def test_a_rejected_batch_leaves_every_row_unstepped(family, id_):
    """Atomicity: a batch refused for a bad value in any row steps no row; the env then equals a twin that never
    saw the bad batch, step for step."""
    env, twin = _twins(id_)

    @settings(FUZZ, max_examples=examples(10), phases=[Phase.explicit, Phase.generate])  # no shrinking: fail fast
    @given(seed=st.integers(0, 2**16), row=st.integers(0, 2), steps=st.integers(0, 3),
           bad=st.sampled_from([math.nan, math.inf, -1e308, 1e308, -5.0]))
    def run(seed: int, row: int, steps: int, bad: float) -> None:
        for e in (env, twin):
            e.reset(seed=seed)
        env.action_space.seed(seed)
        for _ in range(steps):
            action = env.action_space.sample()
            for e in (env, twin):
                e.step(action)
        broken = np.array(env.action_space.sample(), dtype=np.float64)
        broken.reshape(len(broken), -1)[row, -1] = bad  # the last value of one row (a view: writes through)
        with pytest.raises(ValueError):
            env.step(broken)
        for _ in range(3):
            action = env.action_space.sample()
            out, ref = env.step(action), twin.step(action)
            np.testing.assert_array_equal(out[0], ref[0], err_msg=f"{id_}: obs after a rejected batch")
            np.testing.assert_array_equal(out[1], ref[1], err_msg=f"{id_}: reward after a rejected batch")

    run()
