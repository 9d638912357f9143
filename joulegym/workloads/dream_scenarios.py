"""The five DREAM usage scenarios of Table 3 as data, and their load calibration (kappa).

Kim et al., ASPLOS'23, §5.1 Table 3 (CM §4.1/§4.2): each scenario is a set of models with a frame
rate, an optional parent (cascade: the child runs on a parent frame's completion with probability ``p``,
default 0.5) and a dynamicity (Supernet variants, SkipNet block skipping, RAPID-RL early exits).

Table 3 ambiguities (CM §4.1, §8): the FocalLengthDepth row is assigned to AR_Social
(``depth_in=AR_Social``); AR_Call keeps its KS -> GNMT cascade although §5.1 names only AR_Social and
VR_Gaming as pipelines; every cascade of a scenario uses the same ``p`` (Fig. 12 sweep).

Load calibration (CM §4.4): our analytic cost model does not reproduce MAESTRO's absolute latencies, so each
scenario gets one latency scale ``KAPPA[scenario]`` for every model and context switch, on every SoC (the
paper's relative model sizes within a scenario and across SoCs are kept): the scale that puts the offered load
:func:`offered_load` at ``TARGET_LOAD`` = 0.7 on ``4k-1ws2os`` (Fig. 7(a)). 0.7 is the largest load of the grid
{0.7, 0.85, 1.0, 1.1} at which the paper's compute-sufficient SoC (8K 2WS, Fig. 8(c)) still meets every
deadline under FCFS, Veltair, Planaria, EDF and MapScore in every scenario (docs/families/dream-cost-model.md
§4.4 gives the measurements). A model whose worst-case frame alone cannot meet its deadline on some SoC at
this scale is reported (:func:`infeasible_alone`), not capped. A custom scenario (:func:`scenario_from_config`)
is calibrated the same way when it is built (:func:`scenario_scale`).

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
TARGET_LOAD = 0.7  # offered load rho on the calibration SoC (CM §4.4 says why 0.7)
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
    name: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", self.name or self.model)
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
        names = [m.name for m in self.models]
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
        return tuple(m.name for m in self.models)

    def entry(self, model: str) -> ScenarioModel:
        for m in self.models:
            if m.name == model:
                return m
        raise ValueError(f"model={model!r} is not in scenario {self.name!r}: {list(self.model_names)}")

    def children(self, model: str) -> tuple[str, ...]:
        self.entry(model)
        return tuple(m.name for m in self.models if m.parent == model)

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


MODEL_KEYS = ("model", "fps", "name", "parent", "p", "p_dynamic", "app")


def _model_from_config(k: int, item: Mapping) -> ScenarioModel:
    if not isinstance(item, Mapping) or set(item) - set(MODEL_KEYS) or "model" not in item or "fps" not in item:
        raise ValueError(f"workload['models'][{k}] must be a dict with 'model', 'fps' and optional keys from "
                         f"{list(MODEL_KEYS[2:])}, got {item!r}")
    model = item["model"]
    if not isinstance(model, str) or (model not in MODEL_NAMES and model not in SUPERNETS):
        raise ValueError(f"workload['models'][{k}]['model']={model!r} is not one of "
                         f"{list(MODEL_NAMES) + list(SUPERNETS)}")
    parent = item.get("parent")
    catalog = None if model in SUPERNETS else load_model(model)
    if parent is not None:
        dynamicity, p_default = "cascade", DEFAULT_CASCADE_P
    elif model in SUPERNETS:
        dynamicity, p_default = "supernet", 1.0
    elif catalog is not None and len(catalog.skip_blocks):
        dynamicity, p_default = "skip", 1.0
    elif catalog is not None and len(catalog.exits):
        dynamicity, p_default = "early-exit", 1.0
    else:
        dynamicity, p_default = "none", 1.0
    p_dyn_default = SKIP_P if dynamicity == "skip" else EXIT_P if dynamicity == "early-exit" else 0.0
    return ScenarioModel(model, str(item.get("app", model)), item["fps"], parent=parent, p=item.get("p", p_default),
                         dynamicity=dynamicity, p_dynamic=item.get("p_dynamic", p_dyn_default),
                         name=str(item.get("name", model)))


def scenario_from_config(config: Mapping) -> DreamScenario:
    """A custom usage scenario from a config dict (``workload={...}`` of the DREAM envs): ``name`` and ``models``,
    a list of ``{"model": catalog name, "fps": ..., "name": unique name (default the model), "parent": a name,
    "p": cascade probability (0.5), "p_dynamic": SkipNet / RAPID-RL probability (0.5)}``; the dynamicity follows
    the catalog model (Supernet, gated blocks, exits) and the parent. Its latency scale is calibrated like
    Table 3's (:func:`scenario_scale`)."""
    if not isinstance(config, Mapping) or set(config) - {"name", "models"}:
        raise ValueError(f"workload must be a Table 3 name or a dict with keys 'name' and 'models', got {config!r}")
    name, models = config.get("name", "custom"), config.get("models")
    if not isinstance(name, str) or not name or name in DREAM_SCENARIOS:
        raise ValueError(f"workload['name']={name!r} must be a non-empty string other than the Table 3 names "
                         f"{list(DREAM_SCENARIOS)}")
    if not isinstance(models, list | tuple) or not models:
        raise ValueError(f"workload['models'] must be a non-empty list of model dicts, got {models!r}")
    return DreamScenario(name, name, tuple(_model_from_config(k, item) for k, item in enumerate(models)),
                         source="custom")


def cascade_chain(scenario: str | DreamScenario, model: str) -> tuple[str, ...]:
    """The models (names) from the cascade root down to ``model`` (``(model,)`` without a parent)."""
    scenario = get_scenario(scenario)
    chain = [scenario.entry(model)]
    while chain[0].parent is not None:
        chain.insert(0, scenario.entry(chain[0].parent))
    return tuple(m.name for m in chain)


def isolated_latency(model: str, soc: str | SoC, scale: float = 1.0) -> float:
    """Latency of one frame of catalog ``model`` alone on an idle ``soc``: worst dynamic outcome, best placement.

    Worst outcome: every layer runs (no SkipNet skip, no RAPID-RL exit) and a Supernet runs its heaviest
    variant. Best placement: the whole frame on its fastest single sub-accelerator, which the simulator
    achieves without any context switch (a new frame fetches nothing and a frame that stays on one
    accelerator moves no activation, CM A8).
    """
    variants = SUPERNETS[model].variants if model in SUPERNETS else (model,)
    soc = get_soc(soc)
    worst = max(float(layer_cost_tables(load_model(v), soc, 1.0)[0].sum(axis=0).min()) for v in variants)
    return check_kappa(scale) * worst


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
        loads[entry.name] = scenario.activation_rate(entry.name) * per_frame / soc.n_acc
    return loads


def offered_load(scenario: str | DreamScenario, soc: str | SoC, kappa: float | None = None) -> float:
    """Spec §4.4 offered load ``rho = kappa * sum_m rate_m * E[sum_L mean_a lat(L, a)] / N_acc`` at latency scale
    ``kappa`` (``None``: the scenario's calibrated :func:`scenario_scale`)."""
    scenario = get_scenario(scenario)
    scale = scenario_scale(scenario) if kappa is None else check_kappa(kappa)
    return scale * sum(model_loads(scenario, soc).values())


def calibrate(scenario: str | DreamScenario, target: float = TARGET_LOAD, hw: str = CALIBRATION_HW) -> float:
    """The latency scale that puts ``scenario`` at offered load ``target`` on ``hw`` (CM §4.4)."""
    target = float(check_kappa(target))
    return target / sum(model_loads(scenario, hw).values())


def calibration_constants() -> dict[str, float]:
    """``KAPPA`` as :func:`calibrate` computes it, rounded to 6 significant digits as committed
    (benchmarks/dream_cost_report.py prints it; tests/dream/test_calibration.py checks the committed copy)."""
    return {name: float(f"{calibrate(name):.6g}") for name in DREAM_SCENARIOS}


# Committed calibration (CM §4.4), regenerated by calibration_constants() (benchmarks/dream_cost_report.py) when the
# catalog, the cost model or TARGET_LOAD change: one latency scale per scenario, for every model and SoC.
KAPPA: Mapping[str, float] = MappingProxyType({
    "vr-gaming": 9.78117,
    "ar-call": 6.87389,
    "drone-outdoor": 6.04875,
    "drone-indoor": 7.55406,
    "ar-social": 1.61673,
})


def scenario_scale(scenario: str | DreamScenario) -> float:
    """The latency scale of ``scenario``: the committed :data:`KAPPA` of a Table 3 scenario (whatever its cascade
    ``p``: Fig. 12 varies the load, not the models), else :func:`calibrate` of the custom scenario."""
    scenario = get_scenario(scenario)
    if scenario.name in KAPPA and scenario.source != "custom":
        return KAPPA[scenario.name]
    return calibrate(scenario)


def infeasible_alone(scenario: str | DreamScenario, scale: float | None = None,
                     hws: tuple[str, ...] = tuple(SOC_PRESETS)) -> list[tuple[str, str, float]]:
    """The (cascade leaf, SoC, ratio) whose worst-case cascade path alone, each frame on its fastest single
    sub-accelerator, takes longer than the root's period at latency scale ``scale`` (``None``: the calibrated
    one): ratio = that time over the period, > 1. No scheduler can meet those deadlines when the worst case
    happens; they are reported, not capped (CM §4.4)."""
    scenario = get_scenario(scenario)
    scale = scenario_scale(scenario) if scale is None else check_kappa(scale)
    out = []
    for leaf in (m.name for m in scenario.models if scenario.is_leaf(m.name)):
        path = cascade_chain(scenario, leaf)
        period = 1.0 / scenario.entry(path[0]).fps
        for hw in hws:
            ratio = sum(isolated_latency(scenario.entry(m).model, hw, scale) for m in path) / period
            if ratio > 1.0:
                out.append((leaf, hw, ratio))
    return out


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
    """Per (scenario, model): FPS and its worst-case frame alone on its best accelerator over its deadline budget
    on the slowest Table 2 SoC for it, at the scenario's scale; the infeasible-alone cases (CM §4.4)."""
    lines = ["| scenario | model | fps | alone / period: best SoC | slowest SoC |", "|---|---|---|---|---|"]
    for name, scn in DREAM_SCENARIOS.items():
        scale = KAPPA[name]
        for entry in scn.models:
            period = 1.0 / scn.entry(cascade_chain(name, entry.name)[0]).fps
            shares = {hw: isolated_latency(entry.model, hw, scale) / period for hw in SOC_PRESETS}
            best, worst = min(shares, key=shares.get), max(shares, key=shares.get)
            lines.append(f"| {name} | {entry.name} | {entry.fps:g} | {shares[best]:.2f} ({best}) | "
                         f"{shares[worst]:.2f} ({worst}) |")
    lines += ["", "| scenario | cascade path (leaf) | SoCs where its worst-case path alone misses the deadline "
              "(time / period) |", "|---|---|---|"]
    for name in DREAM_SCENARIOS:
        cases = infeasible_alone(name)
        by_leaf: dict[str, list[str]] = {}
        for leaf, hw, ratio in cases:
            by_leaf.setdefault(leaf, []).append(f"{hw} {ratio:.2f}")
        for leaf, items in by_leaf.items():
            lines.append(f"| {name} | {' -> '.join(cascade_chain(name, leaf))} | {', '.join(items)} |")
        if not by_leaf:
            lines.append(f"| {name} | - | none |")
    return "\n".join(lines)
