"""The leaderboard page in a real browser: headless Chromium renders ``index.html`` (docs/leaderboard.md).

Checks that every table and figure renders (the page's load handler counts the images with a decoded size), among
them the upper-bounds table (PowerFlow's oracle) and a learning-curve figure (a shipped agent with a validation
record), that a screenshot is not blank, that no console message (an uncaught error) is logged, and that a click
on a header sorts its table. Needs Debian's ``chromium`` (``.ci/run`` installs it where apt is available; set
``JOULEGYM_CHROMIUM`` to another binary); skipped, saying so, where no browser is installed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from joulegym.evaluation import page as page_module
from joulegym.evaluation.suite import run_suite

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
TIMEOUT_S = 120


def _browser() -> str | None:
    override = os.environ.get("JOULEGYM_CHROMIUM")
    if override:
        return shutil.which(override)  # None (skip) if it names no executable
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


BROWSER = _browser()
needs_browser = pytest.mark.skipif(BROWSER is None, reason="no headless Chromium installed (apt-get install chromium; "
                                                           ".ci/run does it where apt is available)")


def _chromium(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    # --no-sandbox: CI containers run as root, where Chromium's sandbox refuses to start; the page is our own file.
    command = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               f"--user-data-dir={profile}", "--window-size=1280,2400", "--virtual-time-budget=10000",
               "--enable-logging=stderr", "--v=0", *args,
               page.resolve().as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)


def _console(stderr: str) -> list[str]:
    """The page's console messages (Chromium logs them as ``...:CONSOLE:<line>] "message", source: ...``)."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def _render(page: Path, tmp_path: Path) -> tuple[str, list[str]]:
    result = _chromium(page, tmp_path / "profile", "--dump-dom")
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout, _console(result.stderr)


@pytest.fixture(scope="module")
def quick_page(tmp_path_factory) -> Path:
    """The quick page of ETF and PowerFlow (its oracle is privileged) with a zoo holding an ETF agent of two
    training runs, each with a validation curve in its provenance (untrained: the page is under test)."""
    pytest.importorskip("stable_baselines3", reason="needs the train extra")
    import json

    import gymnasium as gym

    from joulegym.agents.algos import make_model
    from joulegym.agents.weights import save_weights
    from joulegym.core.family import env_id

    out = tmp_path_factory.mktemp("page") / "leaderboard"
    scenario_id = env_id("ETF", "tx2-fig6-random")
    for seed in (0, 1):
        folder = out.parent / "zoo" / "etf" / "tx2-fig6-random" / "ppo" / f"seed{seed}"
        model = make_model("ppo", gym.make(scenario_id), seed=seed, hyperparams={"n_steps": 64, "batch_size": 64})
        save_weights(model, "ppo", folder)
        curve = [[10.0 * k, 1000 * k, 0.45 + 0.03 * k + 0.01 * seed] for k in range(1, 6)]
        (folder / "provenance.json").write_text(json.dumps({
            "format": 2, "family": "etf", "scenario": "tx2-fig6-random", "env_id": scenario_id, "env_kwargs": {},
            "algo": "ppo", "seed": seed, "command": "test fixture", "commit": "none", "wall_time_s": 60.0,
            "cpu_seconds": 55.0, "train_cpu_seconds": 50.0, "cpu_budget_s": 50.0, "score": {"mean": None},
            "validation": {"seeds": list(range(9000, 9010)), "metric": "F_S", "curve": curve,
                           "reference": {"tf": 0.59, "etf": 0.65}}}))
    run_suite(["etf", "powerflow"], quick=True, out=out, zoo=out.parent / "zoo")
    return out / "index.html"


@needs_browser
def test_index_html_renders_tables_and_every_image(quick_page, tmp_path):
    # the test's own script clicks the score header of the first ranking (ascending; columns: rank, policy, class,
    # trained on, score) and records the column, after
    # the page's load handler
    html = quick_page.read_text()
    probe = quick_page.with_name("probe.html")
    probe.write_text(html.replace("</body>", """<script>window.addEventListener("load", function(){
  var table = document.querySelector("table.sortable.ranking");
  table.tHead.rows[0].cells[4].click();
  document.body.dataset.sortedIqm = Array.prototype.map.call(table.tBodies[0].rows,
    function(r){ return r.cells[4].dataset.v; }).join(",");
});</script></body>"""))
    dom, console = _render(probe, tmp_path)
    images = len(re.findall(r"<img ", html))
    assert images >= 7 and f'data-images-loaded="{images}/{images}"' in dom  # every figure decoded
    assert console == []  # no uncaught error, no console output at all
    assert len(re.findall(r'<figure class="learning-curve"><img', dom)) == 1  # the ETF agent's curve
    for css in ("anchors", "ranking", "per-scenario"):  # one of each per family
        assert len(re.findall(rf'<table class="sortable {css}">', dom)) == 2, css
    [upper] = re.findall(r'<table class="sortable upper-bounds">(.*?)</table>', dom, re.S)  # PowerFlow's only
    assert re.findall(r'<tr class="privileged"><td>(?:<a [^>]*>)?([^<]+)', upper) == ["powerflow-oracle"]
    ranking = re.findall(r'<table class="sortable ranking">(.*?)</table>', dom, re.S)
    assert all('class="privileged"' not in table for table in ranking)  # upper bounds are never ranked
    rows = re.findall(r'<tr class="(?:heuristic|baseline|agent)">', dom)
    assert len(rows) >= 20  # ranking and per-scenario rows of both families
    iqm = [float(v) for v in re.search(r'data-sorted-iqm="([^"]*)"', dom).group(1).split(",")]
    assert iqm == sorted(iqm) and iqm != sorted(iqm, reverse=True)  # the page ranks descending; a click sorts up


@needs_browser
def test_screenshot_is_not_blank(quick_page, tmp_path):
    import matplotlib.image

    shot = tmp_path / "shot.png"
    result = _chromium(quick_page, tmp_path / "profile", f"--screenshot={shot}")
    assert result.returncode == 0 and shot.is_file(), result.stderr[-2000:]
    pixels = matplotlib.image.imread(shot)[..., :3]
    not_white = (pixels < 0.95).any(axis=-1).mean()
    assert not_white > 0.02 and pixels.std() > 0.05  # text, table borders and a figure, not an empty page


@needs_browser
def test_the_checks_catch_a_broken_page(quick_page, tmp_path):
    """The negative control: a missing figure and a script error are both detected."""
    broken = quick_page.with_name("broken.html")
    broken.write_text(quick_page.read_text().replace(
        "</body>", '<img src="plots/missing.png" alt="missing"><script>noSuchFunction();</script></body>'))
    dom, console = _render(broken, tmp_path)
    images = len(re.findall(r"<img ", broken.read_text()))
    assert f'data-images-loaded="{images - 1}/{images}"' in dom
    assert any("noSuchFunction" in line for line in console)


def test_page_escapes_text_and_prints_the_command(quick_page):
    html = quick_page.read_text()
    assert "python evaluate.py --suite etf powerflow --quick" in html
    # the verdict; anchors, ranking, per scenario per family; PowerFlow's upper bounds; ETF's agents on every
    # scenario played
    assert html.count("<table") == html.count("</table>") == 9 and "<script>" in html
    [agents] = re.findall(r'<table class="sortable agents">(.*?)</table>', html, re.S)
    played = re.findall(r'<tr class="agent"><td>([^<]+)</td><td>ppo</td><td>tx2-fig6-random</td><td>([^<]+)</td>',
                        agents)
    assert played == [("tx2-fig5", "held-out instance"), ("tx2-fig6-random", "held-in")]
    assert "Seeds: training 0-1 (the shipped runs&#x27; training envs); validation 9000-9009" in html
    assert "zero (simple baseline)" in html and "one (best heuristic)" in html
    assert page_module._e('<a & "b">') == "&lt;a &amp; &quot;b&quot;&gt;"
    assert page_module._num(-1e-9) == "0.000" and page_module._num(float("nan")) == "n/a"
