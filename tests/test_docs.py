"""The docs the code cites are in the repository: family pages exist, local links resolve, and no docstring or
comment cites the specs or design notes that a clone of the repository does not hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from joulegym.core.family import families

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"spec §|DESIGN\.md|shared/specs|specs/[a-z]+\.md")


def _sources() -> list[Path]:
    return sorted([*ROOT.joinpath("joulegym").rglob("*.py"), *ROOT.joinpath("benchmarks").glob("*.py"),
                   ROOT / "train.py", ROOT / "evaluate.py"])


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_citation_of_files_outside_the_repository(path):
    hits = [f"{path.name}:{n}: {line.strip()}" for n, line in enumerate(path.read_text().splitlines(), 1)
            if OUTSIDE.search(line)]
    assert hits == []


def test_every_family_has_its_docs_page():
    for descriptor in families():
        page = ROOT / descriptor.docs
        assert page.is_file(), f"{descriptor.name}: {descriptor.docs} is missing"
        assert len(page.read_text().split()) > 300  # a page, not a stub


GENERATED = ("envs", "_static/generated", "_build")  # written by docs/_ext/envpages.py at build time, git-ignored


def _hand_written_docs() -> list[str]:
    return [str(p.relative_to(ROOT)) for p in sorted(ROOT.joinpath("docs").rglob("*.md"))
            if not any(p.relative_to(ROOT / "docs").as_posix().startswith(g + "/") for g in GENERATED)]


@pytest.mark.parametrize("doc", ["README.md", *_hand_written_docs()])
def test_local_links_resolve(doc):
    """Links between hand-written pages resolve on disk; a link into the generated env pages (``docs/envs/``,
    absent until the site is built) names a registered family's page."""
    path = ROOT / doc
    generated_pages = {"index", *(d.name for d in families())}
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text()):
        if "://" in target:
            continue
        resolved = (path.parent / target).resolve()
        if resolved.parent == (ROOT / "docs" / "envs").resolve():
            assert resolved.suffix == ".md" and resolved.stem in generated_pages, f"{doc} links to {target}"
            continue
        assert resolved.exists(), f"{doc} links to missing {target}"


def test_every_tutorial_is_in_the_site_navigation():
    index = (ROOT / "docs" / "index.md").read_text()
    tutorials = sorted(p.stem for p in (ROOT / "docs" / "tutorials").glob("*.md")) + sorted(
        p.stem for p in (ROOT / "docs" / "tutorials").glob("*.ipynb"))
    assert tutorials, "docs/tutorials/ holds the tutorials"
    for name in tutorials:
        assert f"tutorials/{name}\n" in index, f"docs/tutorials/{name}.md is not in docs/index.md's toctree"
