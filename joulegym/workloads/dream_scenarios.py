"""The five DREAM usage scenarios of Table 3 as data, and their load calibration (kappa).

Kim et al., ASPLOS'23, §5.1 Table 3 (CM §4.1/§4.2): each scenario is a set of models with a frame
rate, an optional parent (cascade: the child runs on a parent frame's completion with probability ``p``,
default 0.5) and a dynamicity (Supernet variants, SkipNet block skipping, RAPID-RL early exits).

Table 3 ambiguities (CM §4.1, §8): the FocalLengthDepth row is assigned to AR_Social
(``depth_in=AR_Social``); AR_Call keeps its KS -> GNMT cascade although §5.1 names only AR_Social and
VR_Gaming as pipelines; every cascade of a scenario uses the same ``p`` (Fig. 12 sweep).

Load calibration (CM §4.4 last bullet): our analytic cost model does not reproduce MAESTRO's absolute
latencies, so every model of a scenario gets a latency scale ``MODEL_SCALE[scenario][model] = min(level,
cap_m)`` (the same on every SoC): ``level`` puts the offered load :func:`offered_load` at 1.1 on
``4k-1ws2os`` (compute-constrained, as the paper stresses for 4K) and ``cap_m`` keeps the model feasible
alone: its worst-case frame (with its cascade parents) on its best single accelerator takes at most
``FEASIBLE_FRACTION`` of the period on every Table 2 SoC (:func:`latency_caps`). Where every model sits at
its cap, rho stays below 1.1 (feasibility first). ``KAPPA[scenario]``, the load-weighted mean scale, scales
context-switch time. docs/families/dream-cost-model.md lists caps, scales and rho for every (scenario, hw)
pair (:func:`calibration_markdown`, :func:`offered_load_markdown`).

``CM §x`` / ``CM Ax`` = section x / assumption x of docs/families/dream-cost-model.md (it keeps the numbering
of the family's implementation notes); ``[P §x]`` = the paper.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

import numpy as np

from joulegym.devices.accelerator import SOC_PRESETS, SoC, check_kappa, get_soc
from joulegym.workloads.dream_models import (
    MODEL_NAMES,
    SUPERNETS,
    expected_layer_weights,
    layer_cost_tables,
    load_model,
)

DYNAMICITY = ("none", "cascade", "supernet", "skip", "early-exit")
TARGET_LOAD = 1.1  # offered load rho on the calibration SoC (CM §4.4)
FEASIBLE_FRACTION = 0.8  # a model alone may use at most this share of its period (CM §4.4 says why 0.8)
CALIBRATION_HW = "4k-1ws2os"
DEFAULT_CASCADE_P = 0.5  # [P §5.1]
SKIP_P = 0.5  # SkipNet: each gated block skipped w.p. 0.5 [P §2.3, §5.1]
EXIT_P = 0.5  # RAPID-RL: exit probability at each of its 2 exits [A, CM §4.2]


def _check_prob(name: str, value: float, *, allow_zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not np.isfinite(value) \
            or not (0.0 <= value <= 1.0) or (not allow_zero and value == 0.0):
        raise ValueError(f"{name}={value!r} must be a probability in {'[0, 1]' if allow_zero else '(0, 1]'}")
    return float(value)


@dataclass(frozen=True)
class ScenarioModel:
    """One Table 3 row.

    :param model: catalog model name (:data:`MODEL_NAMES`) or a Supernet name (``"ofa"``).
    :param app: the application column of Table 3.
    :param fps: frame rate (> 0); the deadline is release + 1/fps (CM A1).
    :param parent: the parent model (same scenario) of a cascade, else ``None``.
    :param p: activation probability of the cascade (1.0 without a parent).
    :param dynamicity: one of :data:`DYNAMICITY`.
    :param p_dynamic: SkipNet per-block skip / RAPID-RL per-exit probability (0 otherwise).
    """

    model: str
    app: str
    fps: float
    parent: str | None = None
    p: float = 1.0
    dynamicity: str = "none"
    p_dynamic: float = 0.0

    def __post_init__(self) -> None:
        if self.model not in MODEL_NAMES and self.model not in SUPERNETS:
            raise ValueError(f"model={self.model!r} is not one of {list(MODEL_NAMES) + list(SUPERNETS)}")
        if isinstance(self.fps, bool) or not isinstance(self.fps, (int, float, np.number)) \
                or not np.isfinite(self.fps) or self.fps <= 0:
            raise ValueError(f"fps={self.fps!r} of model {self.model!r} must be a finite number > 0")
        if self.dynamicity not in DYNAMICITY:
            raise ValueError(f"dynamicity={self.dynamicity!r} is not one of {DYNAMICITY}")
        _check_prob("p", self.p, allow_zero=False)
        _check_prob("p_dynamic", self.p_dynamic)
        if (self.parent is None) != (self.dynamicity != "cascade"):
            raise ValueError(f"model {self.model!r}: dynamicity='cascade' exactly when a parent is given")
        if self.parent is None and self.p != 1.0:
            raise ValueError(f"model {self.model!r}: p={self.p} needs a parent (cascade)")
        if self.dynamicity == "supernet" and self.model not in SUPERNETS:
            raise ValueError(f"model {self.model!r}: dynamicity='supernet' needs a Supernet ({list(SUPERNETS)})")

    @property
    def is_supernet(self) -> bool:
        return self.model in SUPERNETS

    @property
    def variants(self) -> tuple[str, ...]:
        """Catalog models this row may run: the Supernet's variants, else the model itself."""
        return SUPERNETS[self.model].variants if self.is_supernet else (self.model,)


@dataclass(frozen=True)
class DreamScenario:
    """A Table 3 usage scenario: models (unique names, Table 3 order) and the §8 flags that apply."""

    name: str
    title: str
    models: tuple[ScenarioModel, ...]
    flags: tuple[str, ...] = ()
    source: str = "Kim et al. ASPLOS'23 §5.1 Table 3"

    def __post_init__(self) -> None:
        names = [m.model for m in self.models]
        if not names:
            raise ValueError(f"scenario {self.name!r}: models must not be empty")
        if len(set(names)) != len(names):
            raise ValueError(f"scenario {self.name!r}: model names must be unique, got {names}")
        for m in self.models:
            if m.parent is not None and m.parent not in names:
                raise ValueError(f"scenario {self.name!r}: parent={m.parent!r} of {m.model!r} is not in {names}")
            if m.parent is not None and m.parent == m.model:
                raise ValueError(f"scenario {self.name!r}: model {m.model!r} cannot be its own parent")

    @property
    def model_names(self) -> tuple[str, ...]:
        return tuple(m.model for m in self.models)

    def entry(self, model: str) -> ScenarioModel:
        for m in self.models:
            if m.model == model:
                return m
        raise ValueError(f"model={model!r} is not in scenario {self.name!r}: {list(self.model_names)}")

    def children(self, model: str) -> tuple[str, ...]:
        self.entry(model)
        return tuple(m.model for m in self.models if m.parent == model)

    def is_leaf(self, model: str) -> bool:
        """No model depends on ``model`` (smart-drop condition 3, CM §2.3)."""
        return not self.children(model)

    def with_cascade_p(self, p: float) -> DreamScenario:
        """The scenario with every cascade's activation probability set to ``p`` (Fig. 12, CM §4.2)."""
        p = _check_prob("p", p, allow_zero=False)
        return replace(self, models=tuple(replace(m, p=p) if m.parent is not None else m for m in self.models))

    def activation_rate(self, model: str) -> float:
        """Expected frames per second of ``model``: fps times the product of p along its cascade chain."""
        entry = self.entry(model)
        rate = entry.fps * entry.p
        while entry.parent is not None:
            entry = self.entry(entry.parent)
            rate *= entry.p
        return rate


def _cascade(model: str, app: str, fps: float, parent: str) -> ScenarioModel:
    return ScenarioModel(model, app, fps, parent=parent, p=DEFAULT_CASCADE_P, dynamicity="cascade")


DREAM_SCENARIOS: Mapping[str, DreamScenario] = MappingProxyType({
    "vr-gaming": DreamScenario("vr-gaming", "VR_Gaming", (
        ScenarioModel("fbnet-c", "Gaze estimation", 60),
        ScenarioModel("ssd-mobilenetv2", "Hand detection (HD)", 30),
        _cascade("handposenet", "Pose estimation", 30, "ssd-mobilenetv2"),
        ScenarioModel("ofa", "Context understanding", 30, dynamicity="supernet"),
        ScenarioModel("kws-res8", "Keyword spotting (KS)", 15),
        _cascade("gnmt", "Translation", 15, "kws-res8"),
    )),
    "ar-call": DreamScenario("ar-call", "AR_Call", (
        ScenarioModel("kws-res8", "Keyword spotting (KS)", 15),
        _cascade("gnmt", "Translation", 15, "kws-res8"),
        ScenarioModel("skipnet", "Context understanding", 30, dynamicity="skip", p_dynamic=SKIP_P),
    ), flags=("ar_call_cascade: KS->GNMT modelled although §5.1 names only AR_Social and VR_Gaming "
              "as pipelines (Table 3 and §2.3 have it)",)),
    "drone-outdoor": DreamScenario("drone-outdoor", "Drone_Outdoor", (
        ScenarioModel("ssd-mobilenetv2", "Object detection", 30),
        ScenarioModel("trailnet", "Outdoor navigation", 60),
        ScenarioModel("sosnet", "Visual odometry", 60),
    )),
    "drone-indoor": DreamScenario("drone-indoor", "Drone_Indoor", (
        ScenarioModel("ssd-mobilenetv2", "Object detection", 30),
        ScenarioModel("rapid-rl", "Indoor navigation", 60, dynamicity="early-exit", p_dynamic=EXIT_P),
        ScenarioModel("sosnet", "Obstacle detection", 60),
        ScenarioModel("googlenet-car", "Car classification", 60),
    ), flags=("depth_in=AR_Social: the Table 3 FocalLengthDepth row is not part of Drone_Indoor (CM §4.1)",)),
    "ar-social": DreamScenario("ar-social", "AR_Social", (
        ScenarioModel("focal-length-depth", "Depth estimation", 30),
        ScenarioModel("ed-tcn", "Action segmentation", 30),
        ScenarioModel("ssd-mobilenetv2", "Face detection (FD)", 30),
        _cascade("vgg-voxceleb", "Face verification", 30, "ssd-mobilenetv2"),
        ScenarioModel("ofa", "Context understanding", 30, dynamicity="supernet"),
    ), flags=("depth_in=AR_Social: the Table 3 FocalLengthDepth row is assigned to AR_Social (CM §4.1, §8 A22)",)),
})


def get_scenario(name: str | DreamScenario) -> DreamScenario:
    """The Table 3 scenario ``name``; a :class:`DreamScenario` passes through."""
    if isinstance(name, DreamScenario):
        return name
    try:
        return DREAM_SCENARIOS[name]
    except (KeyError, TypeError):
        raise ValueError(f"scenario={name!r} is not one of {list(DREAM_SCENARIOS)}") from None


def cascade_chain(scenario: str | DreamScenario, model: str) -> tuple[str, ...]:
    """The models from the cascade root down to ``model`` (``(model,)`` without a parent)."""
    scenario = get_scenario(scenario)
    chain = [scenario.entry(model)]
    while chain[0].parent is not None:
        chain.insert(0, scenario.entry(chain[0].parent))
    return tuple(m.model for m in chain)


def isolated_latency(model: str, soc: str | SoC, scale: float = 1.0) -> float:
    """Latency of one frame of ``model`` alone on an idle ``soc``: worst dynamic outcome, best placement.

    Worst outcome: every layer runs (no SkipNet skip, no RAPID-RL exit) and a Supernet runs its heaviest
    variant. Best placement: the whole frame on its fastest single sub-accelerator, which the simulator
    achieves without any context switch (a new frame fetches nothing and a frame that stays on one
    accelerator moves no activation, CM A8); splitting a frame across accelerators would pay switches.
    """
    variants = SUPERNETS[model].variants if model in SUPERNETS else (model,)
    soc = get_soc(soc)
    worst = max(float(layer_cost_tables(load_model(v), soc, 1.0)[0].sum(axis=0).min()) for v in variants)
    return check_kappa(scale) * worst


def latency_caps(scenario: str | DreamScenario, fraction: float = FEASIBLE_FRACTION,
                 hws: tuple[str, ...] = tuple(SOC_PRESETS)) -> dict[str, float]:
    """Per-model upper bound on the latency scale that keeps every model feasible alone (CM §4.4).

    On every cascade path root -> leaf (a cascaded child inherits its root frame's deadline, CM A1) the
    path's :func:`isolated_latency` at scale ``cap`` must fit in ``fraction`` of the root's period on every
    SoC of ``hws``: ``cap = fraction / fps_root / max_hw sum_path isolated_latency``. A model on several
    paths takes the smallest cap. The other ``1 - fraction`` of the period is slack for contention.
    """
    scenario = get_scenario(scenario)
    fraction = _check_prob("fraction", fraction, allow_zero=False)
    caps: dict[str, float] = {}
    for leaf in (m.model for m in scenario.models if scenario.is_leaf(m.model)):
        path = cascade_chain(scenario, leaf)
        budget = fraction / scenario.entry(path[0]).fps
        cap = budget / max(sum(isolated_latency(m, hw) for m in path) for hw in hws)
        for m in path:
            caps[m] = min(caps.get(m, np.inf), cap)
    return {m: caps[m] for m in scenario.model_names}


def model_loads(scenario: str | DreamScenario, soc: str | SoC) -> dict[str, float]:
    """Each model's share of the offered load at latency scale 1: ``rate_m * E[sum_L mean_a lat] / N_acc``.

    ``rate_m`` includes cascade probabilities, ``E[.]`` SkipNet skips and RAPID-RL exits; a Supernet counts
    its original (heaviest) variant (CM §4.4).
    """
    scenario = get_scenario(scenario)
    soc = get_soc(soc)
    loads = {}
    for entry in scenario.models:
        model = load_model(entry.variants[0])
        latency, _ = layer_cost_tables(model, soc, 1.0)
        per_frame = float(expected_layer_weights(model, entry.p_dynamic) @ latency.mean(axis=1))
        loads[entry.model] = scenario.activation_rate(entry.model) * per_frame / soc.n_acc
    return loads


def offered_load(scenario: str | DreamScenario, soc: str | SoC, kappa: float | None = None) -> float:
    """Spec §4.4 offered load ``rho = sum_m scale_m * rate_m * E[sum_L mean_a lat(L, a)] / N_acc``.

    ``kappa=None`` takes the committed per-model scales :data:`MODEL_SCALE`; a number applies one uniform
    scale to every model (what ``DreamSim.from_catalog(kappa=...)`` does).
    """
    scenario = get_scenario(scenario)
    loads = model_loads(scenario, soc)
    if kappa is None:
        scales = MODEL_SCALE[scenario.name]
        return sum(scales[m] * load for m, load in loads.items())
    return check_kappa(kappa) * sum(loads.values())


@dataclass(frozen=True)
class Calibration:
    """What :func:`calibrate` finds: per-model ``scales = min(level, caps)``, the offered load ``rho`` they
    give on the calibration SoC, and ``kappa``, the load-weighted mean scale (the one uniform scale with the
    same rho; it scales context-switch time, CM A8)."""

    scales: dict[str, float]
    rho: float
    level: float
    caps: dict[str, float]
    kappa: float


def calibrate(scenario: str | DreamScenario, target: float = TARGET_LOAD, hw: str = CALIBRATION_HW,
              fraction: float = FEASIBLE_FRACTION) -> Calibration:
    """Per-model latency scales ``scale_m = min(level, cap_m)`` (CM §4.4).

    ``level`` solves ``offered_load(hw) = target`` (rho is continuous and non-decreasing in it). When every
    model at its cap still gives less than ``target``, every model runs at its cap and rho is that maximum:
    feasibility alone takes precedence over the target load.
    """
    scenario = get_scenario(scenario)
    caps = latency_caps(scenario, fraction)
    loads = model_loads(scenario, hw)

    def rho_at(level: float) -> float:
        return sum(min(level, caps[m]) * load for m, load in loads.items())

    level = max(caps.values())
    if rho_at(level) > target:
        lo, hi = 0.0, level
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if rho_at(mid) < target else (lo, mid)
        level = hi
    scales = {m: min(level, caps[m]) for m in scenario.model_names}
    rho = rho_at(level)
    return Calibration(scales, rho, level, caps, rho / sum(loads.values()))


def calibrate_kappa(scenario: str | DreamScenario, target: float = TARGET_LOAD, hw: str = CALIBRATION_HW) -> float:
    """The uniform latency scale (no caps) that puts ``scenario`` at offered load ``target`` on ``hw``."""
    return target / offered_load(scenario, hw, 1.0)


def calibration_constants() -> tuple[dict[str, float], dict[str, dict[str, float]]]:
    """``(KAPPA, MODEL_SCALE)`` as :func:`calibrate` computes them, rounded to 6 significant digits as committed
    (a scale may exceed its cap by < 1e-5 relative). tools/dream_cost_report.py prints them;
    tests/dream/test_calibration.py checks the committed copy."""
    kappa, scale = {}, {}
    for name in DREAM_SCENARIOS:
        cal = calibrate(name)
        kappa[name] = float(f"{cal.kappa:.6g}")
        scale[name] = {m: float(f"{s:.6g}") for m, s in cal.scales.items()}
    return kappa, scale


# Committed calibration (CM §4.4), regenerated by calibration_constants() (tools/dream_cost_report.py) when the
# catalog, the cost model, TARGET_LOAD or FEASIBLE_FRACTION change; tests/dream/test_models.py checks it.
# MODEL_SCALE[scenario][model] scales that model's layer latencies on every SoC; KAPPA[scenario] is their
# load-weighted mean on 4k-1ws2os and scales the scenario's context-switch time.
KAPPA: Mapping[str, float] = MappingProxyType({
    "vr-gaming": 13.1219,
    "ar-call": 3.46208,
    "drone-outdoor": 8.18609,
    "drone-indoor": 10.3297,
    "ar-social": 2.54058,
})
MODEL_SCALE: Mapping[str, Mapping[str, float]] = MappingProxyType({
    "vr-gaming": MappingProxyType({"fbnet-c": 25.09, "ssd-mobilenetv2": 13.6729, "handposenet": 13.6729,
                                   "ofa": 46.3698, "kws-res8": 2.95759, "gnmt": 2.95759}),
    "ar-call": MappingProxyType({"kws-res8": 2.95759, "gnmt": 2.95759, "skipnet": 3.71704}),
    "drone-outdoor": MappingProxyType({"ssd-mobilenetv2": 21.6397, "trailnet": 3.88969, "sosnet": 16.375}),
    "drone-indoor": MappingProxyType({"ssd-mobilenetv2": 21.6397, "rapid-rl": 25.1372, "sosnet": 16.375,
                                      "googlenet-car": 4.46107}),
    "ar-social": MappingProxyType({"focal-length-depth": 1.17776, "ed-tcn": 37.1317, "ssd-mobilenetv2": 2.33218,
                                   "vgg-voxceleb": 2.33218, "ofa": 37.1317}),
})


def offered_load_table(hws: tuple[str, ...] = tuple(SOC_PRESETS)) -> list[dict]:
    """Rows ``{scenario, kappa, <hw>: rho, ...}`` for docs/families/dream-cost-model.md."""
    return [{"scenario": name, "kappa": KAPPA[name], **{hw: offered_load(name, hw) for hw in hws}}
            for name in DREAM_SCENARIOS]


def offered_load_markdown() -> str:
    """The offered-load table as Markdown (kappa per scenario, rho per hw)."""
    hws = tuple(SOC_PRESETS)
    lines = ["| scenario | kappa | " + " | ".join(hws) + " |", "|---|---|" + "---|" * len(hws)]
    for row in offered_load_table(hws):
        lines.append(f"| {row['scenario']} | {row['kappa']:.4g} | " + " | ".join(f"{row[hw]:.2f}" for hw in hws)
                     + " |")
    return "\n".join(lines)


def calibration_markdown() -> str:
    """Per (scenario, model): FPS, cap, committed scale, and the worst-case frame alone on its best accelerator
    (scaled) as a share of the deadline budget on the slowest Table 2 SoC for it (CM §4.4)."""
    lines = ["| scenario | model | fps | cap | scale | capped | alone / period (slowest SoC) |",
             "|---|---|---|---|---|---|---|"]
    for name, scn in DREAM_SCENARIOS.items():
        caps = latency_caps(name)
        for entry in scn.models:
            scale = MODEL_SCALE[name][entry.model]
            period = 1.0 / scn.entry(cascade_chain(name, entry.model)[0]).fps
            worst_hw = max(SOC_PRESETS, key=lambda hw, m=entry.model: isolated_latency(m, hw))
            share = isolated_latency(entry.model, worst_hw, scale) / period
            capped = "no" if scale < caps[entry.model] * (1 - 1e-5) else "yes"
            lines.append(f"| {name} | {entry.model} | {entry.fps:g} | {caps[entry.model]:.4g} | {scale:.4g} | "
                         f"{capped} | {share:.2f} ({worst_hw}) |")
    return "\n".join(lines)
