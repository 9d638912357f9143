"""Inference tenants for the ETF family: which model runs at which GPU frequency, when, with what share.

An :class:`InferenceApp` is one model-serving tenant (ETF paper §6.1): a model profiled on a device,
a GPU frequency (per-app DVFS), a weight, a presence window in decision epochs, and a demand
(``None`` = backlogged, "requests are always queued"; or an open-loop request rate, the ``open-loop``
scenario). :func:`random_mix` draws the training mix of the ``random-mix`` scenario. :data:`FIG5_APPS` is
the paper's Fig. 5 pair, the ETF env's default apps (``docs/families/etf.md``, "Scenarios").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from joulegym.devices import Device

# The ETF paper's Fig. 5 pair on a Jetson TX2 (§6.2): ResNet50 at the top GPU level against MobileNetV2 at
# 726.75 MHz ("1300" and "726" in the paper), equal weights, backlogged. Entries are app configs
# (``InferenceApp.from_config``); copy them before changing one.
FIG5_APPS: tuple[dict[str, Any], ...] = (
    {"model": "resnet50", "frequency_mhz": 1300.5},
    {"model": "mobilenetv2", "frequency_mhz": 726.75},
)


@dataclass(frozen=True)
class InferenceApp:
    """One tenant.

    :param model: workload name with a profile on the device (``"resnet50"``).
    :param frequency_mhz: the GPU level its kernels run at (a level of the device grid).
    :param weight: its share ``w_i > 0``.
    :param arrival: first epoch it is present (inclusive).
    :param departure: epoch it leaves (exclusive); ``None`` = stays to the end.
    :param demand_rps: open-loop request rate (inferences/s); ``None`` = backlogged.
    :param power_w: override of the profile power (e.g. the paper's Lemma 2 "C at 10 W").
    """

    model: str
    frequency_mhz: float
    weight: float = 1.0
    arrival: int = 0
    departure: int | None = None
    demand_rps: float | None = None
    power_w: float | None = None

    def __post_init__(self) -> None:
        def number(field: str, value: Any, optional: bool = False) -> None:
            if optional and value is None:
                return
            if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
                raise ValueError(f"app {self.model!r}: {field} must be a number, got {value!r}")

        if not isinstance(self.model, str):
            raise ValueError(f"app model must be a workload name (a string), got {self.model!r}")
        number("frequency_mhz", self.frequency_mhz)
        number("weight", self.weight)
        number("power_w", self.power_w, optional=True)
        number("demand_rps", self.demand_rps, optional=True)
        for field, value in (("arrival", self.arrival), ("departure", self.departure)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | np.integer)):
                raise ValueError(f"app {self.model!r}: {field} must be a whole epoch number, got {value!r}")
        if not (np.isfinite(self.weight) and 1e-6 <= self.weight <= 1e6):
            raise ValueError(f"app {self.model!r}: weight must be in [1e-6, 1e6], got {self.weight}")
        if not (np.isfinite(self.weight) and self.weight > 0):
            raise ValueError(f"app {self.model!r}: weight must be > 0, got {self.weight}")
        if self.power_w is not None and not (np.isfinite(self.power_w) and self.power_w > 0):
            raise ValueError(f"app {self.model!r}: power_w must be > 0 W, got {self.power_w}")
        if self.arrival < 0 or (self.departure is not None and self.departure <= self.arrival):
            raise ValueError(
                f"app {self.model!r}: need 0 <= arrival < departure, got arrival={self.arrival}, "
                f"departure={self.departure}"
            )
        if self.demand_rps is not None and not (np.isfinite(self.demand_rps) and self.demand_rps >= 0):
            raise ValueError(f"app {self.model!r}: demand_rps must be >= 0 or None, got {self.demand_rps}")

    @classmethod
    def from_config(cls, entry: Mapping[str, Any]) -> InferenceApp:
        allowed = set(cls.__dataclass_fields__)
        unknown = set(entry) - allowed
        if unknown:
            raise ValueError(f"unknown app field(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
        if "model" not in entry or "frequency_mhz" not in entry:
            raise ValueError(f"an app needs 'model' and 'frequency_mhz', got {dict(entry)}")
        return cls(**entry)

    def as_config(self) -> dict[str, Any]:
        return asdict(self)

    def service_time_and_power(self, device: Device) -> tuple[float, float]:
        """``(s per inference, W)`` of this app on ``device`` at its frequency (power override applied)."""
        time_s, power_w = device.profile(self.model).at(self.frequency_mhz)
        if device.frequencies is not None:
            device.frequencies.index_of(self.frequency_mhz)  # must be a real DVFS level
        return time_s, (self.power_w if self.power_w is not None else power_w)


def _number_list(name: str, value: Any, low: float, high: float, *, whole: bool = False) -> list[Any]:
    kind = "whole numbers" if whole else "numbers"
    if not isinstance(value, list | tuple) or not value:
        raise ValueError(f"{name} must be a non-empty list of {kind} in [{low:g}, {high:g}], got {value!r}")
    for k, item in enumerate(value):
        ok = not isinstance(item, bool) and isinstance(item, int | float | np.integer | np.floating) and \
            low <= float(item) <= high and (not whole or float(item) == int(item))
        if not ok:
            raise ValueError(f"{name}[{k}] must be a {kind[:-1]} in [{low:g}, {high:g}], got {item!r}")
    return [int(v) for v in value] if whole else [float(v) for v in value]


MAX_INITIAL_APPS = 1000  # apps beyond the env's slots queue for one (random_mix)


def check_mix(mix: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of :func:`random_mix` given as an env's ``mix``, checked (each error names
    ``mix.<key>`` and what is allowed); ``models`` are checked against the device by the env."""
    out = dict(mix)
    if "models" in out and (not isinstance(out["models"], list | tuple) or not out["models"]
                            or not all(isinstance(m, str) for m in out["models"])):
        raise ValueError(f"mix.models must be a non-empty list of model names, got {out['models']!r}")
    if "weights" in out:
        out["weights"] = _number_list("mix.weights", out["weights"], 1e-6, 1e6)
    if "initial_apps" in out:
        out["initial_apps"] = _number_list("mix.initial_apps", out["initial_apps"], 0, MAX_INITIAL_APPS,
                                           whole=True)
    for key, low, high in (("arrival_rate", 1e-9, 1e3), ("mean_lifetime", 1.0, 1e9)):
        value = out.get(key, low)
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating) or not (
                low <= float(value) <= high):
            raise ValueError(f"mix.{key} must be a number in [{low:g}, {high:g}], got {value!r}")
        if key in out:
            out[key] = float(value)
    if out.get("demand_load") is not None:
        load = _number_list("mix.demand_load", out["demand_load"], 0.0, 1.0)
        if len(load) != 2 or load[0] > load[1]:
            raise ValueError(f"mix.demand_load must be [low, high] with 0 <= low <= high <= 1, got "
                             f"{mix['demand_load']!r}")
        out["demand_load"] = load
    return out


def random_mix(
    rng: np.random.Generator,
    device: Device,
    *,
    horizon: int,
    models: Sequence[str] = ("resnet18", "resnet50", "mobilenetv2"),
    weights: Sequence[float] = (1.0, 2.0),
    initial_apps: Sequence[int] = (2, 3, 4),
    arrival_rate: float = 0.05,
    mean_lifetime: float = 20.0,
    max_apps: int = 4,
    demand_load: Sequence[float] | None = None,
) -> list[InferenceApp]:
    """The ``random-mix`` training mix (our assumption, docs page "Assumptions"): N0 in {2,3,4} apps at
    t=0, Poisson arrivals, geometric lifetimes.

    Each app draws a model, a frequency level (uniform over the device grid) and a weight. Lifetimes
    are geometric with mean ``mean_lifetime`` epochs; arrivals are Poisson with ``arrival_rate`` per
    epoch. An arrival finding all ``max_apps`` slots busy waits (FIFO) for the first free epoch; it is
    dropped only if no slot frees before the horizon. With ``demand_load`` (a (low, high) range) apps
    are open-loop (the ``open-loop`` scenario): each draws a busy fraction ``u ~ U(low, high)`` of the GPU it
    would need alone, i.e. a request rate ``u / S(model, f)`` inferences/s.
    """
    levels = device.frequencies.levels_mhz if device.frequencies is not None else (None,)
    busy_until: list[int] = []  # departure epochs of the apps holding slots
    apps: list[InferenceApp] = []
    last_arrival = [0]  # delayed apps wait in FIFO order: arrivals never go back in time

    def draw(arrival: int) -> InferenceApp | None:
        arrival = max(arrival, last_arrival[0])
        busy = [d for d in busy_until if d > arrival]
        while len(busy) >= max_apps:
            arrival = min(busy)
            busy = [d for d in busy if d > arrival]
        if arrival >= horizon:
            return None  # no slot frees in time: this app and the queue behind it never run
        busy_until[:] = busy
        last_arrival[0] = arrival
        lifetime = int(rng.geometric(1.0 / mean_lifetime))
        departure = min(arrival + lifetime, horizon)
        busy_until.append(departure)
        model = str(rng.choice(list(models)))
        frequency = float(levels[int(rng.integers(len(levels)))])
        weight = float(rng.choice(list(weights)))
        rate = None
        if demand_load is not None:
            service_s, _ = device.profile(model).at(frequency)
            rate = float(rng.uniform(*demand_load)) / service_s
        return InferenceApp(
            model=model,
            frequency_mhz=frequency,
            weight=weight,
            arrival=arrival,
            departure=departure if departure < horizon else None,
            demand_rps=rate,
        )

    for _ in range(int(rng.choice(list(initial_apps)))):
        app = draw(0)
        if app is not None:
            apps.append(app)
    t = 0.0
    while True:
        t += rng.exponential(1.0 / arrival_rate)
        if t >= horizon:
            break
        app = draw(int(t))
        if app is not None:
            apps.append(app)
    return sorted(apps, key=lambda a: a.arrival)
