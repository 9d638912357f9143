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


@pytest.mark.parametrize("doc", ["README.md", *[str(p.relative_to(ROOT)) for p in ROOT.joinpath("docs").rglob("*.md")]])
def test_local_links_resolve(doc):
    path = ROOT / doc
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", path.read_text()):
        if "://" in target:
            continue
        assert (path.parent / target).exists(), f"{doc} links to missing {target}"
