"""Sphinx configuration of the joulegym docs site: Sphinx + furo + MyST, as Gymnasium's site.

Build (strict, as CI does): ``sphinx-build -W --keep-going -n -b html docs docs/_build/html``
(needs ``pip install -e ".[docs]"``). The env pages under ``docs/envs/`` and their rendered frames under
``docs/_static/generated/`` are written at build time from the family registry by ``docs/_ext/envpages.py``
(git-ignored, never edited by hand), so they cannot drift from the code.
"""

from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS.parent))  # the checkout's joulegym, also when it is not installed

import joulegym  # noqa: E402

project = "joulegym"
author = "joulegym developers"
copyright = "2026, joulegym developers"
release = joulegym.__version__
version = release

extensions = [
    "myst_nb",  # MyST markdown (it loads myst_parser) and the tutorial notebooks, executed at every build
    "sphinx.ext.autodoc",
    "sphinx.ext.viewcode",
    "envpages",  # docs/_ext/envpages.py: the generated env pages and frames
    "codelinks",  # docs/_ext/codelinks.py: our docstrings' tables and internal references, strictly
]

source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb", ".rst": "restructuredtext"}  # myst-nb reads plain MyST too
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path: list[str] = []
html_static_path = ["_static"]

html_theme = "furo"
html_title = f"joulegym {release}"

myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3  # "#section" links of the hand-written pages resolve

# The notebooks under tutorials/ are stored without outputs and executed on every build (offline: a local kernel),
# so what the site shows is what the code gives today; an error in a cell fails the build.
nb_execution_mode = "force"
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True

# Our docstrings are reST with Sphinx field lists (``:param x:``, ``:raises X:``), which autodoc reads natively:
# none has a Google or NumPy section, so sphinx.ext.napoleon is left out (it would also misread an attribute
# comment such as ``#: Environment variables: where ...`` as a type annotation).
autodoc_member_order = "bysource"
autodoc_inherit_docstrings = False  # gymnasium's reset/step/render docstrings are Gymnasium's docs, not ours
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": False}

# Strict mode (-n) resolves every type in a signature; third-party types have no inventory offline (no
# intersphinx: CI builds without network), so they are listed here, and only they.
nitpicky = True
nitpick_ignore_regex = [
    ("py:class", r"(np|numpy)\..*"),  # numpy arrays, dtypes, Generator
    ("py:class", r"(gym|gymnasium)\..*"),  # gymnasium Env, Space, Wrapper
    ("py:class", r"(pd|pandas)\..*"),  # pandas DataFrame
    ("py:class", r"(collections\.abc|typing|abc)\..*"),  # Sequence, Mapping, Callable; ABC (core.simulator)
    ("py:class", r"(os|pathlib)\..*"),  # os.PathLike, pathlib.Path
    ("py:class", r"abc\..*"),  # abc.ABC, the base of core.simulator.Simulator
    ("py:class", r"(NDArray|ArrayLike|Path|Any|Sequence|Mapping|Callable|Iterable|Iterator)"),
]
