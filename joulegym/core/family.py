"""Family descriptors, registered in one place, and the env ids they register.

A family is described by data: its env kinds (an id stem, the env class as an ``"module:Class"``
string, the ``action_mode`` it fixes), its named scenarios, the module of its reference policies and
the module of its evaluation hooks. :func:`register_family` registers the Gymnasium ids
``joulegym/<Kind>-v<N>`` (the kind's defaults) and ``joulegym/<Kind>-<scenario>-v<N>`` (a scenario
preset) without importing the env class (Gymnasium imports it on ``gym.make``), and keeps the
descriptor for the policy registry, the evaluation layer and ``python -m joulegym list``.

The built-in families are listed once, in :data:`joulegym.scenarios.FAMILY_MODULES`; a third-party
family calls :func:`register_family` with its own descriptor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from joulegym.core.benchmark import Benchmark
from joulegym.core.config import Scenario

NAMESPACE = "joulegym"


@dataclass(frozen=True)
class EnvKind:
    """One registered env kind: an env class with a fixed ``action_mode``.

    :param name: id stem (``"ETFPhi"`` -> ``joulegym/ETFPhi-v0``).
    :param entry_point: ``"module:Class"`` of the env (imported on ``gym.make`` only).
    :param action_mode: the ``action_mode`` the kind fixes.
    :param description: one line for ``python -m joulegym list``.
    :param version: the ``-vN`` suffix (bumped when the kind's behaviour changes).
    :param vector_entry_point: optional ``"module:Class"`` of a batched vector env, registered as Gymnasium's
        ``vector_entry_point`` so ``gym.make_vec(id, num_envs=N, vectorization_mode="vector_entry_point")``
        builds it; it is called as ``Class(num_envs=N, **kwargs)`` with the id's kwargs (``action_mode``,
        ``scenario``) and the user's.
    """

    name: str
    entry_point: str
    action_mode: str | None
    description: str
    version: int = 0
    vector_entry_point: str | None = None


@dataclass(frozen=True)
class FamilyDescriptor:
    """Everything the package needs to know about a family, as data.

    :param name: family name (``"etf"``); policies are scoped by it.
    :param title: one line (paper and system).
    :param kinds: the env kinds.
    :param scenarios: named scenarios (``Scenario.kinds`` restricts them to some kinds).
    :param policies: module of the reference policies (imported on first use; it registers them).
    :param reference_policy: the family's own algorithm (the contract test checks it beats ``random``).
    :param evaluation: module of the evaluation hooks (plots, paper reproduction), or ``None``.
    :param docs: the family's page in ``docs/``.
    :param contract_id: a small env id whose full episodes the contract test runs (reference policy against
        ``random``); ``None``: the first kind's base id.
    :param benchmark: the family's leaderboard benchmark (``evaluate.py --suite``), or ``None``: not on it yet.
    :param benchmark_script: the family's speed benchmark in a source checkout (``"benchmarks/bench_qin.py"``), or
        ``None``; ``benchmarks/harness.py`` adds the cost-growth curves its ``harness_growth()`` returns.
    :param trajectory_pins: env ids of the family (or ``(id, gym.make kwargs)`` pairs) whose short reference
        episodes ``benchmarks/trajectory_pins.py`` records and the test suite compares at a stated precision
        (small, fast ids: a few seconds in all).
    """

    name: str
    title: str
    kinds: tuple[EnvKind, ...]
    scenarios: Mapping[str, Scenario] = field(default_factory=dict)
    policies: str | None = None
    reference_policy: str | None = None
    evaluation: str | None = None
    docs: str = ""
    contract_id: str | None = None
    benchmark: Benchmark | None = None
    benchmark_script: str | None = None
    trajectory_pins: tuple[str | tuple[str, Mapping[str, Any]], ...] = ()

    def kind(self, name: str) -> EnvKind:
        for kind in self.kinds:
            if kind.name == name:
                return kind
        raise ValueError(f"kind {name!r} is not one of family {self.name!r}'s {[k.name for k in self.kinds]}")


_FAMILIES: dict[str, FamilyDescriptor] = {}
_LOADED_POLICIES: set[str] = set()
_policy_loader: Callable[[str], Any] | None = None
# id -> (family, one-line description), in registration order (``python -m joulegym list``)
CATALOG: dict[str, tuple[str, str]] = {}


def env_id(kind: str, scenario: str | None = None, version: int = 0) -> str:
    middle = kind if scenario is None else f"{kind}-{scenario}"
    return f"{NAMESPACE}/{middle}-v{version}"


def register_family(descriptor: FamilyDescriptor) -> list[str]:
    """Register ``descriptor`` and its env ids; returns the ids (idempotent for the same descriptor)."""
    import gymnasium as gym

    current = _FAMILIES.get(descriptor.name)
    if current is not None and current is not descriptor:
        raise ValueError(f"family {descriptor.name!r} is already registered")
    for name, scenario in descriptor.scenarios.items():
        if name != scenario.name:
            raise ValueError(f"scenario key {name!r} differs from its name {scenario.name!r}")
        if "action_mode" in scenario.config:
            raise ValueError(f"scenario {name!r} sets action_mode; a kind fixes it")
    if descriptor.benchmark is not None:
        descriptor.benchmark.check_family(descriptor.name, tuple(k.name for k in descriptor.kinds),
                                          descriptor.scenarios)
    _check_trajectory_pins(descriptor)
    _FAMILIES[descriptor.name] = descriptor
    ids = []
    for kind in descriptor.kinds:
        entries = [(env_id(kind.name, version=kind.version), {}, kind.description)]
        for scenario in descriptor.scenarios.values():
            if scenario.applies_to(kind.name):
                entries.append((env_id(kind.name, scenario.name, kind.version), {"scenario": scenario.name},
                                f"{kind.description.split(':')[0]}: {scenario.description}"))
        for id_, kwargs, description in entries:
            if id_ not in gym.registry:
                mode = {} if kind.action_mode is None else {"action_mode": kind.action_mode}
                gym.register(id=id_, entry_point=kind.entry_point, kwargs={**mode, **kwargs},
                             vector_entry_point=kind.vector_entry_point)
            CATALOG[id_] = (descriptor.name, description)
            ids.append(id_)
    return ids


def _check_trajectory_pins(descriptor: FamilyDescriptor) -> None:
    """``ValueError`` naming the pinned ids that are not among the ids ``descriptor`` registers."""
    ids = {env_id(kind.name, version=kind.version) for kind in descriptor.kinds}
    ids |= {env_id(kind.name, scenario.name, kind.version) for kind in descriptor.kinds
            for scenario in descriptor.scenarios.values() if scenario.applies_to(kind.name)}
    pinned = [pin if isinstance(pin, str) else pin[0] for pin in descriptor.trajectory_pins]
    if unknown := [id_ for id_ in pinned if id_ not in ids]:
        raise ValueError(f"family {descriptor.name!r}: trajectory_pins {unknown} are not among its ids")


def families() -> list[FamilyDescriptor]:
    return list(_FAMILIES.values())


def get_family(name: str) -> FamilyDescriptor:
    if name not in _FAMILIES:
        raise ValueError(f"family {name!r} is unknown; families: {sorted(_FAMILIES)}")
    return _FAMILIES[name]


def scenarios_of(family: str) -> Mapping[str, Scenario]:
    descriptor = _FAMILIES.get(family)
    return MappingProxyType(dict(descriptor.scenarios)) if descriptor is not None else MappingProxyType({})


def kind_for(family: str, action_mode: str, env_class: type | None = None) -> str | None:
    """The id stem of ``family``'s kind with ``action_mode`` (``None`` if no kind fixes it). With ``env_class``, a
    class that is the entry point of exactly one kind is that kind whatever its action mode (one env class per
    MDP: its action modes only encode actions), and among several kinds of one class the mode decides."""
    descriptor = _FAMILIES.get(family)
    if descriptor is None:
        return None
    if env_class is not None:
        entry = f"{env_class.__module__}:{env_class.__qualname__}"
        own = [kind for kind in descriptor.kinds if kind.entry_point == entry]
        if len(own) == 1:
            return own[0].name
        for kind in own:
            if kind.action_mode == action_mode:
                return kind.name
    for kind in descriptor.kinds:
        if kind.action_mode == action_mode:
            return kind.name
    return None


def registered_ids(family: str | None = None) -> list[str]:
    """Every joulegym id (optionally of one family), in registration order."""
    return [i for i, (fam, _) in CATALOG.items() if family is None or fam == family]


def set_policy_loader(loader: Callable[[str], Any] | None) -> None:
    """Install what imports a descriptor's ``policies`` module (by its name).

    The package root (``joulegym/__init__.py``) installs ``importlib.import_module``-by-name on import: the
    layer above wires its modules into the core, the core imports none of them (docs/architecture.md, "Layers").
    """
    global _policy_loader
    _policy_loader = loader


def load_policies(family: str) -> None:
    """Have the installed loader import ``family``'s policy module once (importing it registers its policies)."""
    if family in _LOADED_POLICIES:
        return
    descriptor = get_family(family)
    _LOADED_POLICIES.add(family)
    if descriptor.policies and _policy_loader is not None:
        _policy_loader(descriptor.policies)


def unregister_family(name: str) -> None:
    """Remove a family and its ids (tests build toy families; :func:`joulegym.core.policy.forget_family` drops
    its policies)."""
    import gymnasium as gym

    _FAMILIES.pop(name, None)
    _LOADED_POLICIES.discard(name)
    for id_ in [i for i, (fam, _) in CATALOG.items() if fam == name]:
        del CATALOG[id_]
        gym.registry.pop(id_, None)


