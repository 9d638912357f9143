"""The layer order (``docs/architecture.md``) holds for imports by string too, and the package has no import circle.

import-linter (``pyproject.toml``) checks ``import`` statements; a module could still reach a layer above it with
``importlib.import_module("joulegym.baselines")`` or ``__import__``. This test reads every module's syntax tree,
finds those calls whose module name is a string literal (or an f-string with a literal head) under ``joulegym.``
and checks the target's layer against the same layer list as import-linter's contract. A module named by data
(a descriptor's ``policies`` string, a Gymnasium entry point) is not an import of the module that holds the data.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10: pytest's own TOML reader
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "joulegym"
IMPORT_CALLS = {"import_module", "__import__"}


def layers() -> list[set[str]]:
    """import-linter's layers, lowest first: each a set of top-level subpackage names of ``joulegym``."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    contract = next(c for c in config if c["type"] == "layers")
    return [{name.strip() for name in layer.split("|")} for layer in reversed(contract["layers"])]


ROOT_LAYER = 10**6  # the package root imports every family: above every layer


def layer_of(module: str, order: list[set[str]]) -> int | None:
    """The index of ``module``'s layer (``joulegym.core.family`` -> core's), :data:`ROOT_LAYER` for the package
    root, ``None`` for a module outside the contract (``joulegym.datasets``: import-linter leaves it free too)."""
    parts = module.split(".")
    if len(parts) < 2:
        return ROOT_LAYER
    return next((index for index, names in enumerate(order) if parts[1] in names), None)


def literal_head(node: ast.expr) -> str | None:
    """The module name a call passes (a string literal, or an f-string's literal head), else ``None``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    return None


def string_imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module name)`` of every ``import_module(...)`` / ``__import__(...)`` with a literal name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name in IMPORT_CALLS and (target := literal_head(node.args[0])) is not None:
            found.append((node.lineno, target))
    return found


def module_name(path: Path, base: Path) -> str:
    parts = path.relative_to(base).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def upward_string_imports(package: Path = PACKAGE) -> list[str]:
    """Every string import in ``package`` (a ``joulegym`` folder) of a module in a layer above the importer's."""
    order = layers()
    base = package.parent
    bad = []
    for path in sorted(package.rglob("*.py")):
        source = module_name(path, base)
        source_layer = layer_of(source, order)
        for line, target in string_imports(path):
            if not target.startswith("joulegym"):
                continue
            target_layer = layer_of(target.rstrip("."), order)
            if source_layer is not None and target_layer is not None and target_layer > source_layer:
                bad.append(f"{path.relative_to(base)}:{line} imports {target!r} by string")
    return bad


def test_no_upward_import_by_string():
    assert upward_string_imports() == []


def test_the_checker_sees_an_upward_string_import(tmp_path):
    """A check that cannot fail proves nothing: a core module importing the baselines by string is caught, an
    f-string with a literal head too, and a same-layer import is not."""
    core = tmp_path / "joulegym" / "core"
    core.mkdir(parents=True)
    (core / "bad.py").write_text('import importlib\nimportlib.import_module("joulegym.baselines")\n'
                                 'name = "x"\n__import__(f"joulegym.evaluation.{name}")\n'
                                 'importlib.import_module("joulegym")\n'
                                 'importlib.import_module("joulegym.devices.cpu")\n')
    found = upward_string_imports(tmp_path / "joulegym")
    assert [f.split(" imports ")[1] for f in found] == ["'joulegym.baselines' by string",
                                                         "'joulegym.evaluation.' by string",
                                                         "'joulegym' by string"]


CIRCLE_PROBE = """
import builtins, importlib, json, sys
edges = set()
real_import, real_import_module = builtins.__import__, importlib.import_module

def caller(depth):
    return sys._getframe(depth).f_globals.get("__name__", "")

def note(source, target):
    if source.startswith("joulegym") and target.startswith("joulegym"):
        edges.add((source, target))

def hooked(name, globals=None, locals=None, fromlist=(), level=0):
    module = real_import(name, globals, locals, fromlist, level)
    source = (globals or {}).get("__name__", "")
    if level:
        package = (globals or {}).get("__package__") or source
        base = package.rsplit(".", level - 1)[0] if level > 1 else package
        name = f"{base}.{name}" if name else base
    for item in fromlist or ():
        full = f"{name}.{item}"
        note(source, full if full in sys.modules else name)
    if not fromlist:
        note(source, name)
    return module

def hooked_module(name, package=None):
    note(caller(2), name)
    return real_import_module(name, package)

builtins.__import__, importlib.import_module = hooked, hooked_module
import gymnasium as gym
import joulegym
from joulegym import baselines
from joulegym.core.family import families
from joulegym.core.rollout import rollout
for family in families():
    baselines.available(family.name)
env = gym.make("joulegym/ETF-v0")
rollout(env, baselines.make("random"), 0, max_steps=100)
print(json.dumps(sorted(edges)))
"""


def core_import_circles(edges: list[tuple[str, str]]) -> list[list[str]]:
    """The import circles through a module of ``joulegym.core`` (a module importing its own package is not one)."""
    graph: dict[str, set[str]] = {}
    for source, target in edges:
        if source != target and not source.startswith(target + ".") and not target.startswith(source + "."):
            graph.setdefault(source, set()).add(target)
    circles = []
    for start in sorted(m for m in graph if m.startswith("joulegym.core.")):
        stack, seen = [(start, [start])], {start}
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    circles.append(path)
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    return circles


def test_no_import_circle_through_the_core_at_run_time():
    """Every import a session makes (at module level or inside a function, by statement or by string), recorded
    while it registers the families, lists their policies and runs an episode: none closes a circle through the
    core (the core's ``family`` and ``policy`` once imported the baselines, which import ``policy`` back)."""
    out = subprocess.run([sys.executable, "-c", CIRCLE_PROBE], capture_output=True, text=True, check=True, cwd=ROOT)
    edges = [tuple(e) for e in json.loads(out.stdout.strip().splitlines()[-1])]
    assert ("joulegym.baselines", "joulegym.core.policy") in edges  # the probe sees function-level imports
    assert core_import_circles(edges) == []


def test_the_circle_finder_finds_one():
    edges = [("joulegym.core.family", "joulegym.baselines"), ("joulegym.baselines", "joulegym.core.policy"),
             ("joulegym.core.policy", "joulegym.core.family"), ("joulegym.core.env", "joulegym.core")]
    assert core_import_circles(edges)[0] == ["joulegym.core.family", "joulegym.baselines", "joulegym.core.policy"]
