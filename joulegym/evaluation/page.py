"""The leaderboard page: ``leaderboard.md`` and a static ``index.html`` from the suite's results (issue 17).

The page is one file with its figures as PNG files beside it (``plots/``) and one JSON per policy
(``provenance/``); its tables sort on a click on a header (a few lines of inline JavaScript, no library), every
row links to its provenance and, per scenario, to its episode plot, and the command that regenerates every
number is printed at the top. Nothing on it depends on the time it was made.
"""

from __future__ import annotations

import html as _html
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from joulegym.evaluation.suite import FamilyResult

METHOD = ("Per scenario, each episode's ranking metric is normalised: random's mean = 0, the best published "
          "heuristic's mean = 1 (the heuristic is named per scenario). The aggregate is the interquartile mean (IQM) "
          "over every held-out seed and scenario, with a stratified-bootstrap 95 % CI (2000 replicates; Agarwal et "
          "al., NeurIPS 2021, the rliable method); P(> best) is the share of held-out seeds on which the policy beats "
          "the scenario's best heuristic (ties count 1/2; paired by seed, since every policy runs on the same seeds "
          "and so the same instances), averaged over scenarios, with a seed-resampling 95 % CI.")


def _num(value: float, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.000"


def _sig(value: float) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{value:.4g}"


def _seeds(seeds: Sequence[int]) -> str:
    seeds = list(seeds)
    contiguous = seeds == list(range(seeds[0], seeds[0] + len(seeds)))
    return f"{seeds[0]}-{seeds[-1]}" if contiguous and len(seeds) > 1 else ", ".join(map(str, seeds))


def _header(result: FamilyResult) -> list[str]:
    """Lines describing one family's benchmark."""
    bench = result.benchmark
    normalisers = ", ".join(f"{s}: {bench.best_heuristic[s]}" for s in result.scenarios)
    lines = [f"Metric: {bench.describe_metric()}.",
             f"Env kind `{bench.kind}`; scenarios: {', '.join(result.scenarios)} (generalisation, instances drawn "
             f"per reset: {bench.generalisation if bench.generalisation in result.scenarios else 'not in this run'}).",
             f"Held-out seeds: {_seeds(result.seeds)} ({len(result.seeds)}); training budget per agent: "
             f"{bench.training_budget_s / 3600:g} CPU-hour(s); best published heuristic per scenario: {normalisers}."]
    if bench.note:
        lines.append(bench.note)
    agents = sorted({a.algo for found in result.agents.values() for a in found})
    lines.append(f"Shipped agents: {', '.join(agents)}." if agents else
                 "Shipped agents: none yet (joulegym/agents/zoo/<family>/<scenario>/<algo>/).")
    return lines


def markdown(results: Sequence[FamilyResult], command: str, quick: bool) -> str:
    """``leaderboard.md``."""
    out = ["# joulegym leaderboard", "", f"Regenerate every number here: `{command}`", "", METHOD, ""]
    if quick:
        out += ["**Quick run** (`--quick`): a subset of scenarios and seeds; not the leaderboard.", ""]
    for result in results:
        bench = result.benchmark
        out += [f"## {result.name}: {result.descriptor.title}", ""]
        out += [line for text in _header(result) for line in (text, "")]
        out += ["| rank | policy | kind | scenarios | IQM | 95% CI | mean | P(> best) [95% CI] |",
                "|---|---|---|---|---|---|---|---|"]
        for rank, row in enumerate(result.aggregate.itertuples(), start=1):
            out.append(f"| {rank} | [{row.policy}]({result.provenance.get(row.policy, '')}) | {row.kind} | "
                       f"{row.scenarios}/{len(result.scenarios)} | {_num(row.score_iqm)} | "
                       f"[{_num(row.score_ci_low)}, {_num(row.score_ci_high)}] | {_num(row.score_mean)} | "
                       f"{_num(row.poi_vs_best, 2)} [{_num(row.poi_ci_low, 2)}, {_num(row.poi_ci_high, 2)}] |")
        out += ["", f"Per scenario ({bench.metric}: mean ± std over seeds; normalised: mean and IQM [95% CI]):", "",
                f"| scenario | policy | kind | {bench.metric} | normalised mean | IQM [95% CI] |",
                "|---|---|---|---|---|---|"]
        for row in result.per_scenario.itertuples():
            plot = result.episode_plots.get(row.scope)
            scenario = f"[{row.scope}]({plot})" if plot else row.scope
            out.append(f"| {scenario} | [{row.policy}]({result.provenance.get(row.policy, '')}) | {row.kind} | "
                       f"{_sig(row.metric_mean)} ± {_sig(row.metric_std)} | {_num(row.score_mean)} | "
                       f"{_num(row.score_iqm)} [{_num(row.score_ci_low)}, {_num(row.score_ci_high)}] |")
        out.append("")
        for caption, path in result.plots.items():
            out += [f"![{caption}]({path})", ""]
        if result.notes:
            out += ["Notes:", ""] + [f"- {n}" for n in result.notes] + [""]
    return "\n".join(out).rstrip() + "\n"


_STYLE = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:70em;padding:0 1em;color:#222}
code{background:#f3f3f3;padding:.1em .3em}table{border-collapse:collapse;margin:1em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}th{background:#eee;cursor:pointer}
th.sorted-asc::after{content:" \\25B2"}th.sorted-desc::after{content:" \\25BC"}tr.agent{background:#fff4e6}
img{max-width:100%;display:block;margin:.5em 0}figure{margin:1em 0}.note{color:#555}"""

# Click a header to sort (numbers by their data-v value, text otherwise); the load handler reports how many
# figures rendered (the page test reads it).
_SCRIPT = """document.querySelectorAll("table.sortable th").forEach(function(th, col){
  th.addEventListener("click", function(){
    var table = th.closest("table"), body = table.tBodies[0];
    var asc = !th.classList.contains("sorted-asc");
    table.querySelectorAll("th").forEach(function(h){h.classList.remove("sorted-asc", "sorted-desc");});
    th.classList.add(asc ? "sorted-asc" : "sorted-desc");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function(a, b){
      var x = a.cells[col].dataset.v, y = b.cells[col].dataset.v, r;
      if (x !== undefined && y !== undefined) { r = parseFloat(x) - parseFloat(y); }
      else { r = a.cells[col].textContent.localeCompare(b.cells[col].textContent); }
      return asc ? r : -r;
    });
    rows.forEach(function(row){ body.appendChild(row); });
  });
});
window.addEventListener("load", function(){
  var images = document.images, ok = 0;
  for (var i = 0; i < images.length; i++) { if (images[i].complete && images[i].naturalWidth > 0) ok++; }
  document.body.dataset.imagesLoaded = ok + "/" + images.length;
  document.getElementById("status").textContent = ok + " of " + images.length + " figures rendered.";
});"""


def _e(text: object) -> str:
    return _html.escape(str(text), quote=True)


def _cell(text: str, value: float | None = None) -> str:
    if value is None or not math.isfinite(value):
        return f"<td>{text}</td>"
    return f'<td data-v="{value:.12g}">{text}</td>'


def _table(headers: Sequence[str], rows: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    lines = ['<table class="sortable">', "<thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in headers) +
             "</tr></thead>", "<tbody>"]
    lines += [f'<tr class="{css}">' + "".join(cells) + "</tr>" for css, cells in rows]
    return [*lines, "</tbody>", "</table>"]


def html(results: Sequence[FamilyResult], command: str, quick: bool) -> str:
    """``index.html``: the same content as :func:`markdown`, with sortable tables and the figures embedded."""
    body = ["<h1>joulegym leaderboard</h1>",
            f"<p>Regenerate every number on this page: <code>{_e(command)}</code></p>", f"<p>{_e(METHOD)}</p>"]
    if quick:
        body.append("<p><strong>Quick run</strong> (<code>--quick</code>): a subset of scenarios and seeds; not the "
                    "leaderboard.</p>")
    body.append("<p>Families: " + ", ".join(f'<a href="#{_e(r.name)}">{_e(r.name)}</a>' for r in results) + "</p>")
    for result in results:
        bench = result.benchmark
        body += [f'<section id="{_e(result.name)}">', f"<h2>{_e(result.name)}: {_e(result.descriptor.title)}</h2>"]
        body += [f'<p class="note">{_e(line)}</p>' for line in _header(result)]
        rows = []
        for rank, row in enumerate(result.aggregate.itertuples(), start=1):
            link = f'<a href="{_e(result.provenance.get(row.policy, ""))}">{_e(row.policy)}</a>'
            rows.append((row.kind, [
                _cell(str(rank), rank), _cell(link), _cell(_e(row.kind)),
                _cell(f"{row.scenarios}/{len(result.scenarios)}", row.scenarios),
                _cell(_num(row.score_iqm), row.score_iqm),
                _cell(f"[{_num(row.score_ci_low)}, {_num(row.score_ci_high)}]", row.score_ci_low),
                _cell(_num(row.score_mean), row.score_mean),
                _cell(f"{_num(row.poi_vs_best, 2)} [{_num(row.poi_ci_low, 2)}, {_num(row.poi_ci_high, 2)}]",
                      row.poi_vs_best)]))
        body += _table(["rank", "policy", "kind", "scenarios", "IQM", "95% CI", "mean", "P(> best) [95% CI]"], rows)
        rows = []
        for row in result.per_scenario.itertuples():
            plot = result.episode_plots.get(row.scope)
            scenario = f'<a href="{_e(plot)}">{_e(row.scope)}</a>' if plot else _e(row.scope)
            link = f'<a href="{_e(result.provenance.get(row.policy, ""))}">{_e(row.policy)}</a>'
            rows.append((row.kind, [
                _cell(scenario), _cell(link), _cell(_e(row.kind)),
                _cell(f"{_sig(row.metric_mean)} ± {_sig(row.metric_std)}", row.metric_mean),
                _cell(_num(row.score_mean), row.score_mean),
                _cell(f"{_num(row.score_iqm)} [{_num(row.score_ci_low)}, {_num(row.score_ci_high)}]", row.score_iqm),
                _cell(_e(row.normaliser))]))
        body.append(f"<h3>Per scenario</h3><p class=\"note\">{_e(bench.metric)}: mean ± std over seeds; the scenario "
                    "links to its episode plot (one episode per policy, first held-out seed).</p>")
        body += _table(["scenario", "policy", "kind", bench.metric, "normalised mean", "IQM [95% CI]", "normaliser"],
                       rows)
        for caption, path in result.plots.items():
            body.append(f'<figure><img src="{_e(path)}" alt="{_e(caption)}"><figcaption>{_e(caption)}</figcaption>'
                        "</figure>")
        if result.notes:
            body.append("<h3>Notes</h3><ul>" + "".join(f"<li>{_e(n)}</li>" for n in result.notes) + "</ul>")
        body.append("</section>")
    body.append('<p id="status" class="note"></p>')
    return ("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<title>joulegym leaderboard</title>\n<style>\n" + _STYLE + "\n</style>\n</head>\n<body>\n" +
            "\n".join(body) + "\n<script>\n" + _SCRIPT + "\n</script>\n</body>\n</html>\n")
