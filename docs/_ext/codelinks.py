"""Sphinx extension: read joulegym's docstrings as they are written, strictly.

Two things the docstrings do that plain autodoc rejects, handled here instead of rewriting the docstrings:

- **Simple tables whose first cell overruns its column** (``_begin_episode(options)`` in a 26-character column:
  docutils calls the table malformed). :func:`widen_simple_tables` widens the first column to its longest cell
  (a cell ends at the first run of two spaces) and shifts the rest of the table accordingly.
- **References to internal objects the API reference does not list** (``:class:`AllocationRule```, a simulator's
  ``:meth:`DreamSim.metrics```): :func:`resolve_internal` accepts a Python reference whose target *exists* in
  joulegym (imported and looked up, relative to the module and class it is written in) and shows it as code; a
  reference to something that does not exist (a typo, a renamed function) still fails the strict build.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys
from typing import Any

from docutils import nodes

_BORDER = re.compile(r"^(\s*)(=+)(\s+)(=+.*)$")


def _split_row(row: str, first_end: int) -> tuple[str, str]:
    """A row's first cell and the rest: the first cell runs to the first space at or after the end of the first
    column's border (so a cell that overruns into the margin keeps its last word)."""
    cut = row.find(" ", first_end) if first_end < len(row) and row[first_end - 1] != " " else first_end
    cut = len(row) if cut < 0 else cut
    return row[:cut].rstrip(), row[cut:].strip()


def widen_simple_tables(lines: list[str]) -> None:
    """Widen the first column of every two-or-more-column simple table in ``lines`` (in place) so that no
    first cell overruns it."""
    i = 0
    while i < len(lines):
        match = _BORDER.match(lines[i])
        if not match:
            i += 1
            continue
        indent, first = match.group(1), match.group(2)
        first_end = len(indent) + len(first)
        col = first_end + len(match.group(3))
        borders = [i]  # the table runs to its closing border: a border line followed by a blank line
        end = i + 1
        while end < len(lines):
            if _BORDER.match(lines[end]):
                borders.append(end)
                if end + 1 == len(lines) or not lines[end + 1].strip():
                    end += 1
                    break
            end += 1
        rows = [k for k in range(i + 1, end) if k not in borders and lines[k][:first_end].strip()]
        widest = max((len(_split_row(lines[k], first_end)[0]) for k in rows), default=0)
        delta = widest + 2 - col
        if widest > first_end and delta > 0:
            for k in range(i, end):
                line = lines[k]
                if k in borders:
                    m = _BORDER.match(line)
                    lines[k] = f"{m.group(1)}{'=' * (len(m.group(2)) + delta)}{m.group(3)}{m.group(4)}"
                elif k in rows:
                    head, rest = _split_row(line, first_end)
                    lines[k] = f"{head.ljust(widest + 2)}{rest}" if rest else head
                elif line.strip():
                    lines[k] = " " * delta + line
        i = end


def _process_docstring(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    widen_simple_tables(lines)


def _lookup(path: str) -> Any:
    """The object at dotted ``path`` (a module, then attributes), or raise LookupError."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if hasattr(obj, attr):
                obj = getattr(obj, attr)
            elif inspect.isclass(obj) and _instance_attribute(obj, attr):
                obj = None  # an attribute set in __init__ (exists, has no class-level value)
            else:
                raise LookupError(path)
        return obj
    raise LookupError(path)


def _instance_attribute(cls: type, attr: str) -> bool:
    for klass in cls.__mro__:
        if attr in getattr(klass, "__annotations__", {}):
            return True
        try:
            if re.search(rf"self\.{re.escape(attr)}\b\s*[:=]", inspect.getsource(klass)):
                return True
        except (OSError, TypeError):
            continue
    return False


def resolve_internal(app: Any, env: Any, node: Any, contnode: Any) -> Any:
    """``missing-reference``: a ``py`` reference to an existing joulegym object outside the API reference
    becomes plain code (no link, no warning); anything else stays missing."""
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"].lstrip("~.")
    module = node.get("py:module") or ""
    cls = node.get("py:class") or ""
    candidates = [target]
    if module.startswith("joulegym"):
        importlib.import_module(module)  # and with it its package
    if module:
        candidates += [f"{module}.{target}"]
        if cls:
            candidates += [f"{module}.{cls}.{target}"]
        package = module.rsplit(".", 1)[0]
        candidates += [f"{package}.{target}"]  # a sibling module (``.io`` in joulegym.core)
        # ``Class.attr`` of a sibling module (``DreamSim.metrics`` in joulegym.envs.dream.env)
        siblings = getattr(sys.modules.get(package), "__path__", None) or []
        candidates += [f"{package}.{info.name}.{target}" for info in pkgutil.iter_modules(siblings)]
    for candidate in candidates:
        if not candidate.startswith("joulegym"):
            continue
        try:
            _lookup(candidate)
        except LookupError:
            continue
        return contnode if isinstance(contnode, nodes.Node) else None
    return None


def setup(app: Any) -> dict[str, Any]:
    app.connect("autodoc-process-docstring", _process_docstring)
    app.connect("missing-reference", resolve_internal)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
