"""The five DREAM usage scenarios of Table 3 as data, and their load calibration (kappa).

Kim et al., ASPLOS'23, §5.1 Table 3 (CM §4.1/§4.2): each scenario is a set of models with a frame
rate, an optional parent (cascade: the child runs on a parent frame's completion with probability ``p``,
default 0.5) and a dynamicity (Supernet variants, SkipNet block skipping, RAPID-RL early exits).

Table 3 ambiguities (CM §4.1, §8): the FocalLengthDepth row is assigned to AR_Social
(``depth_in=AR_Social``); AR_Call keeps its KS -> GNMT cascade although §5.1 names only AR_Social and
VR_Gaming as pipelines; every cascade of a scenario uses the same ``p`` (Fig. 12 sweep).

Load calibration (CM §4.4 last bullet): our analytic cost model does not reproduce MAESTRO's absolute
latencies, so each scenario has a latency scale ``KAPPA[scenario]`` (applied to all its models on every
SoC) chosen so that the offered load :func:`offered_load` is 1.1 on ``4k-1ws2os`` (compute-constrained,
as the paper stresses for 4K). docs/families/dream-cost-model.md lists rho for every (scenario, hw) pair
(:func:`offered_load_table`).

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


def offered_load(scenario: str | DreamScenario, soc: str | SoC, kappa: float | None = None) -> float:
    """Spec §4.4 offered load ``rho = sum_m rate_m * E[sum_L mean_a lat(L, a)] / N_acc``.

    ``rate_m`` includes cascade probabilities, ``E[.]`` SkipNet skips and RAPID-RL exits; a Supernet
    counts its original (heaviest) variant. ``kappa=None`` takes the scenario's :data:`KAPPA`.
    """
    scenario = get_scenario(scenario)
    soc = get_soc(soc)
    kappa = KAPPA[scenario.name] if kappa is None else check_kappa(kappa)
    busy = 0.0
    for entry in scenario.models:
        model = load_model(entry.variants[0])
        latency, _ = layer_cost_tables(model, soc, kappa)
        per_frame = float(expected_layer_weights(model, entry.p_dynamic) @ latency.mean(axis=1))
        busy += scenario.activation_rate(entry.model) * per_frame
    return busy / soc.n_acc


def calibrate_kappa(scenario: str | DreamScenario, target: float = TARGET_LOAD, hw: str = CALIBRATION_HW) -> float:
    """The latency scale that puts ``scenario`` at offered load ``target`` on ``hw`` (rho is linear in kappa)."""
    return target / offered_load(scenario, hw, 1.0)


# Committed calibration (CM §4.4): rho = 1.1 on 4k-1ws2os; regenerate with calibrate_kappa() when the
# catalog or the cost model changes (tests/dream/test_models.py checks they still reproduce rho).
KAPPA: Mapping[str, float] = MappingProxyType({
    "vr-gaming": 15.3704,
    "ar-call": 10.8018,
    "drone-outdoor": 9.50518,
    "drone-indoor": 11.8707,
    "ar-social": 2.54058,
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
