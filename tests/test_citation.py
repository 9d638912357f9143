"""The license and citation files a user looks for: LICENSE holds the Apache-2.0 text that pyproject.toml names,
CITATION.cff (CFF 1.2) cites the software and the five papers, and docs/citing.md lists the same papers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
# family -> (title of its paper, DOI or arXiv id as the citation files give it)
PAPERS = {
    "ETF": ("Energy Time Fairness: Balancing Fair Allocation of Energy and Time for GPU Workloads",
            "10.1145/3583740.3628435"),
    "EMRF": ("Elastic Multi-Resource Fairness: Balancing Fairness and Efficiency in Coupled CPU-GPU Architectures",
             "SC '16"),
    "PowerFlow": ("Energy-Efficient GPU Clusters Scheduling for Deep Learning", "2304.06381"),
    "DREAM": ("DREAM: A Dynamic Scheduler for Dynamic Real-time Multi-model ML Workloads",
              "10.1145/3623278.3624753"),
    "Qin": ("Qin: Unified Hierarchical Cluster-Node Scheduling for Heterogeneous Datacenters",
            "10.1109/TSUSC.2024.3392480"),
}


def _project() -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        tomllib = pytest.importorskip("tomli", reason="reading pyproject.toml on Python 3.10 needs tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_license_is_the_apache_2_text_pyproject_names():
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text and "END OF TERMS" in text
    assert _project()["license"] == {"text": "Apache-2.0"}


def test_citation_cff_cites_the_software_and_the_five_papers():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software" and cff["license"] == "Apache-2.0"
    assert cff["message"] and cff["title"] and cff["authors"]
    version = _project()["version"]
    assert str(cff["version"]) == version
    titles = {ref["title"]: ref for ref in cff["references"]}
    for family, (title, ident) in PAPERS.items():
        ref = titles[title]
        assert family in ref["notes"] and ref["authors"] and ref["year"]
        assert ident in json.dumps(ref), f"{family}: {ident} missing"


def test_docs_citing_page_lists_the_five_papers():
    page = (ROOT / "docs" / "citing.md").read_text()
    for family, (title, ident) in PAPERS.items():
        assert f"**{family}**" in page and ident in page, family
        assert title.split(":")[0].split()[0] in page
