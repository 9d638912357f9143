"""The docs site: Sphinx builds it in strict mode (warnings are errors, every reference must
resolve), with one generated page and one rendered frame per env family and kind, and the helpers of
``docs/_ext`` read the docstrings as written. The full build takes 25-35 s on a shared 2-core machine (marked
``slow``); ``.ci/run`` builds the site the same way."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from joulegym.core.family import env_id, families

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SPHINX_MISSING = [m for m in ("sphinx", "myst_parser", "myst_nb", "furo") if importlib.util.find_spec(m) is None]
needs_sphinx = pytest.mark.skipif(bool(SPHINX_MISSING), reason=f"{SPHINX_MISSING} not installed: the docs extra "
                                  f"(pip install -e \".[docs]\") builds the site")


def _ext(name: str):
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(DOCS / "_ext"))


@pytest.mark.slow
@needs_sphinx
def test_site_builds_strictly_with_a_page_and_frames_per_family(tmp_path):
    out = tmp_path / "html"
    result = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html",
                             str(DOCS), str(out)], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert result.returncode == 0, f"strict docs build failed:\n{result.stderr[-4000:]}"
    for descriptor in families():
        page = out / "envs" / f"{descriptor.name}.html"
        assert page.is_file(), f"no env page for {descriptor.name}"
        html = page.read_text()
        model_page = Path(descriptor.docs).relative_to("docs").with_suffix(".html").as_posix()
        assert f'href="../{model_page}' in html, f"{descriptor.name}: no link to {model_page}"
        for kind in descriptor.kinds:
            frame = out / "_images" / f"{kind.name}-v{kind.version}.png"
            assert frame.is_file() and frame.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", frame
            assert env_id(kind.name, version=kind.version) in html
            assert f"{kind.name}-v{kind.version}.png" in html
        for scenario in descriptor.scenarios:
            assert f"<code class=\"docutils literal notranslate\"><span class=\"pre\">{scenario}</span></code>" \
                in html, f"{descriptor.name}: scenario {scenario} not listed"
    for page in ("index", "envs/index", "api/core", "api/datasets", "tutorials/train-and-evaluate",
                 "tutorials/write-a-policy", "tutorials/add-a-scenario", "tutorials/add-a-family",
                 "tutorials/philly-trace", "tutorials/first-steps", "families/etf", "architecture", "testing",
                 "citing"):
        assert (out / f"{page}.html").is_file(), page
    notebook = (out / "tutorials" / "first-steps.html").read_text()  # executed at build time: its outputs are there
    assert "dream-full: return" in notebook and "<img" in notebook and "uxcost_mean" in notebook


def test_env_page_helpers_read_the_module_docstrings():
    envpages = _ext("envpages")
    doc = ("Title\n=====\n\n==========  ==========\nkey         value\n==========  ==========\nterminated  every job"
           "\n            is done\nother       x\n==========  ==========\n\nVersion history (v0):\n\n- v0: "
           "first\n  release.\n- v0: later.\n\nTrailing text.\n")
    assert envpages.table_rows(doc, ("terminat",)) == [("Title", "terminated", "every job is done")]
    history = envpages.version_history(doc)
    assert history.startswith("Version history (v0):") and "later." in history and "Trailing" not in history
    assert envpages._history_md(history).splitlines()[-2:] == ["- v0: first release.", "- v0: later."]
    assert envpages._md("a | b ``x|y`` :class:`~m.C` F_i") == "a \\| b `x\\|y` `m.C` F\\_i"


def test_describe_space_is_compact_for_slot_spaces():
    import numpy as np
    from gymnasium import spaces

    envpages = _ext("envpages")
    assert envpages.describe_space(spaces.MultiDiscrete([5] * 16 + [17] * 16)) == "MultiDiscrete([5]*16 + [17]*16)"
    box = spaces.Box(np.array([0.0, -1.0], np.float32), np.array([1.0, 1.0], np.float32), dtype=np.float32)
    assert envpages.describe_space(box) == "Box(low=[-1 .. 0] per dimension, high=1, shape=(2,), float32)"


@needs_sphinx
def test_overrunning_table_cells_are_widened_into_a_valid_table():
    """``_begin_episode(options)`` overran its 26-character column in joulegym.core.env's docstring: docutils
    rejected the table ("Malformed table") and the strict build failed."""
    from docutils.core import publish_doctree
    from docutils.utils import Reporter

    codelinks = _ext("codelinks")
    lines = ["==========  =====", "short       one", "overrunning_cell two", "            more", "==========  =====",
             "", "after"]

    def errors(text: list[str]) -> list[str]:
        tree = publish_doctree("\n".join(text), settings_overrides={"report_level": Reporter.SEVERE_LEVEL + 1,
                                                                    "halt_level": 5})
        return [m.astext() for m in tree.findall(lambda n: n.tagname == "system_message")
                if int(m["level"]) >= Reporter.ERROR_LEVEL]

    assert any("Malformed table" in e for e in errors(lines))  # as written
    codelinks.widen_simple_tables(lines)
    assert errors(lines) == []
    assert lines[2].split("  ")[0] == "overrunning_cell" and lines[-1] == "after"


@needs_sphinx
def test_references_resolve_only_to_objects_that_exist():
    from docutils import nodes

    codelinks = _ext("codelinks")
    content = nodes.literal(text="x")

    def ref(target: str, module: str = "", cls: str = "") -> dict:
        return {"refdomain": "py", "reftarget": target, "py:module": module, "py:class": cls}

    class Node(dict):
        pass

    assert codelinks.resolve_internal(None, None, Node(ref("DreamSim.metrics", "joulegym.envs.dream.env")),
                                      content) is content
    assert codelinks.resolve_internal(None, None, Node(ref("repaired", "joulegym.core.actions", "ActionType")),
                                      content) is content
    assert codelinks.resolve_internal(None, None, Node(ref("DreamSim.no_such_method", "joulegym.envs.dream.env")),
                                      content) is None
    assert codelinks.resolve_internal(None, None, Node(ref("numpy.ndarray")), content) is None
