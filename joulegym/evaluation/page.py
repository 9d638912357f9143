"""The leaderboard page: ``leaderboard.md`` and a static ``index.html`` from the suite's results
(docs/leaderboard.md).

Per family: the command that regenerates its numbers, the rules every policy ran under, the two anchors of the
normalised score per scenario (named, with why, with the gap's CI and whether the scenario is in the normalised
aggregate), the ranking of the deployable policies that ran on every headline scenario (agents, published
heuristics, simple baselines) with the paired comparisons against the best heuristic and the best deployable
non-learned policy, the policies left out of the ranking (partial coverage), the upper bounds (privileged policies)
in their own table, each agent's paired comparisons on every scenario it played (held-in: its training scenario;
held-out instance: a scenario it never trained on), the per-scenario table with raw metrics beside the scores, the
figures and the learning curves (from the shipped runs' provenance, with the commands that trained them). The page is
one file with its figures as PNG files beside it (``plots/``) and one JSON per policy (``provenance/``); its tables
sort on a click on a header (a few lines of inline JavaScript, no library), and the command that regenerates every
number is printed at the top. Nothing on it depends on the time it was made.
"""

from __future__ import annotations

import html as _html
import math
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from joulegym.evaluation import agent_verdict

if TYPE_CHECKING:
    from joulegym.evaluation.suite import FamilyResult

METHOD = ("Every policy runs under the scenario's rules (its budget, what it observes, its profiling costs); a "
          "policy's own settings may only be parts of its system (e.g. a placement rule). Classes: agent (trained), "
          "heuristic (published), baseline (simple, deployable), privileged (sees what a deployed system could not: "
          "an upper bound, in its own table, never an anchor, never ranked). Per scenario the normalised score is "
          "measured from the zero anchor's score on the same seed (paired), in units of the gap between the zero "
          "anchor (the family's simple deployable baseline) and the one anchor (its best deployable published "
          "heuristic), higher is better: the anchors score 0 and 1. The headline is the mean over seeds and "
          "scenarios (each scenario weighs the same; a scenario the benchmark leaves out of the normalised aggregate, "
          "with its reason, is shown per scenario only) with a stratified-bootstrap 95 % CI (2000 replicates; "
          "Agarwal et al., NeurIPS 2021), the IQM beside it; an agent counts every training run x held-out seed. "
          "Only policies that ran on every headline scenario are ranked. An agent is trained on one scenario of its "
          "family and evaluated on every headline scenario with the same observation and action spaces: held-in on "
          "its training scenario (held-out seeds of the distribution it trained on), a held-out instance elsewhere. "
          "'vs best heuristic' and 'vs best non-learned' are paired by seed: the mean difference (positive: better; "
          "raw metric per scenario, normalised units over the aggregated scenarios in the ranking) with a bootstrap "
          "95 % CI, and wins/ties/losses over the paired runs (every scenario).")


FRONTS_LINK = "../fronts/index.html"  # the fronts page's default --out (results/fronts) beside results/leaderboard


def _num(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    text = f"{float(value):.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0.000"


def _sig(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    text = f"{float(value):.4g}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text  # no "-0"


def _ci(low: Any, high: Any, digits: int = 3, fmt=None) -> str:
    fmt = fmt or (lambda v: _num(v, digits))
    return f"[{fmt(low)}, {fmt(high)}]"


def _seeds(seeds: Sequence[int]) -> str:
    seeds = list(seeds)
    contiguous = seeds == list(range(seeds[0], seeds[0] + len(seeds)))
    return f"{seeds[0]}-{seeds[-1]}" if contiguous and len(seeds) > 1 else ", ".join(map(str, seeds))


def _seed_line(result: FamilyResult) -> str:
    """Which seeds trained, selected and tested the numbers, and that no two of the sets share one."""
    sets = result.seed_sets
    training = (f"{_seeds(sets['training'])} (the shipped runs' training envs)" if sets["training"] else
                "none (no agent shipped)")
    validation = (f"{_seeds(sets['validation'])} (the shipped runs' model selection)" if sets["validation"] else
                  f"none recorded (the protocol's are {_seeds(result.benchmark.validation_seeds)})")
    return (f"Seeds: training {training}; validation {validation}; test {_seeds(sets['test'])} "
            f"({len(sets['test'])} held-out seeds, every number on this page); no seed is in two of these sets "
            "(checked when the page is made).")


def _header(result: FamilyResult) -> list[str]:
    """Lines describing one family's benchmark and its rules."""
    bench = result.benchmark
    lines = [f"Metric: {bench.describe_metric()}.",
             f"Env kind `{bench.kind}`; scenarios: {', '.join(result.scenarios)} (generalisation, instances drawn "
             f"per reset: {bench.generalisation if bench.generalisation in result.scenarios else 'not in this run'}).",
             _seed_line(result), f"Training budget per agent run: {bench.training_budget_s:.0f} CPU-s.",
             "Rules: every policy runs under the scenario's configuration; " + (
                 f"a policy's env_config may set only {', '.join(bench.policy_settings)} (parts of its system)."
                 if bench.policy_settings else "no policy brings env settings of its own.")]
    if bench.budget is not None:
        used, limit, rtol = bench.budget
        lines.append(f"Budget: every episode is checked for {used} <= {limit} x (1 + {rtol:g}).")
    if bench.note:
        lines.append(bench.note)
    trained = result.training_notes()
    lines.append("Shipped agents: " + "; ".join(f"{a}: {n}" for a, n in trained.items()) + "." if trained else
                 "Shipped agents: none (joulegym/agents/zoo/<family>/<scenario>/<algo>/seed<k>/).")
    return lines


def _commands(result: FamilyResult, command: str) -> list[tuple[str, str]]:
    """``(what, command)``: the command that regenerates the family's numbers, then per shipped agent the commands
    that trained its runs (from their provenance) and the one that ships them."""
    found = [("Regenerate this family's numbers", command)]
    for agent in result.shipped:
        for run_command in dict.fromkeys(str(r.provenance.get("command") or "not recorded") for r in agent.runs):
            found.append((f"{agent.label} was trained by (per training seed; from its provenance)", run_command))
        outs = [_protocol_out(r.provenance.get("command")) for r in agent.runs]
        if all(outs):  # every run made by the protocol: ship its --out directories (one, or one per seed)
            outs = list(dict.fromkeys(o for o in outs if o))
            zoo = f" --zoo {shlex.quote(result.zoo)}" if result.zoo else ""
            found.append((f"{agent.label} was shipped by",
                          f"python -m joulegym.protocol ship {' '.join(map(shlex.quote, outs))}{zoo}"))
    return found


def _protocol_out(command: Any) -> str | None:
    """The ``--out`` of a training protocol command (``python -m joulegym.protocol train ... --out OUT``)."""
    try:
        words = shlex.split(str(command or ""))
    except ValueError:
        return None
    if "joulegym.protocol" not in words or "train" not in words or "--out" not in words[:-1]:
        return None
    return words[words.index("--out") + 1]


def _anchor_rows(result: FamilyResult) -> list[list[str]]:
    rows = []
    sign = 1.0 if result.benchmark.higher_is_better else -1.0  # the gap shown as the one's improvement on the zero
    for row in result.anchors.itertuples():
        low, high = sorted((sign * row.gap_ci_low, sign * row.gap_ci_high))
        rows.append([row.scenario, row.zero, _sig(row.zero_mean), row.one, _sig(row.one_mean),
                     f"{_sig(sign * row.gap)} {_ci(low, high, fmt=_sig)}",
                     "yes" if row.one_beats_zero else "no: the baseline is better (the heuristic scores -1)",
                     "yes" if row.aggregated else "no (see the notes)"])
    return rows


ANCHOR_HEADERS = ("scenario", "zero (simple baseline)", "its mean", "one (best heuristic)", "its mean",
                  "gap [paired 95% CI]", "one beats zero?", "in the normalised aggregate?")
RANK_HEADERS = ("rank", "policy", "class", "trained on", "score [95% CI]", "IQM", "vs best heuristic [95% CI]",
                "W/T/L", "P(> best) [95% CI]", "vs best non-learned [95% CI]", "W/T/L")
AGENT_HEADERS = ("scenario", "agent", "trained on", "split", "metric mean ± std", "vs best heuristic [95% CI]",
                 "W/T/L", "vs best non-learned [95% CI]", "W/T/L")
UPPER_HEADERS = ("policy", "scenarios", "score [95% CI]", "IQM", "vs best heuristic [95% CI]", "what it sees")


def _ranking_rows(result: FamilyResult) -> list[tuple[str, list[tuple[str, float | None]]]]:
    rows = []
    for rank, row in enumerate(result.ranking.to_dict("records"), start=1):
        rows.append((row["class"], [
            (str(rank), rank), (row["policy"], None), (row["class"], None), (row.get("trained_on") or "", None),
            (f"{_num(row['score_mean'])} {_ci(row['score_ci_low'], row['score_ci_high'])}", row["score_mean"]),
            (_num(row["score_iqm"]), row["score_iqm"]),
            (f"{_num(row['vs_best_diff_mean'])} {_ci(row['vs_best_diff_ci_low'], row['vs_best_diff_ci_high'])}",
             row["vs_best_diff_mean"]),
            (f"{row['vs_best_wins']}/{row['vs_best_ties']}/{row['vs_best_losses']}", row["vs_best_wins"]),
            (f"{_num(row['vs_best_poi'], 2)} {_ci(row['vs_best_poi_ci_low'], row['vs_best_poi_ci_high'], 2)}",
             row["vs_best_poi"]),
            (f"{_num(row['vs_bnl_diff_mean'])} {_ci(row['vs_bnl_diff_ci_low'], row['vs_bnl_diff_ci_high'])}",
             row["vs_bnl_diff_mean"]),
            (f"{row['vs_bnl_wins']}/{row['vs_bnl_ties']}/{row['vs_bnl_losses']}", row["vs_bnl_wins"])]))
    return rows


def _upper_rows(result: FamilyResult) -> list[tuple[str, list[tuple[str, float | None]]]]:
    rows = []
    for row in result.upper_bounds.to_dict("records"):
        rows.append(("privileged", [
            (row["policy"], None), (f"{row['scenarios']}/{len(result.scenarios)}", row["scenarios"]),
            (f"{_num(row['score_mean'])} {_ci(row['score_ci_low'], row['score_ci_high'])}", row["score_mean"]),
            (_num(row["score_iqm"]), row["score_iqm"]),
            (f"{_num(row['vs_best_diff_mean'])} {_ci(row['vs_best_diff_ci_low'], row['vs_best_diff_ci_high'])}",
             row["vs_best_diff_mean"]),
            (result.descriptions.get(row["policy"], ""), None)]))
    return rows


def _agent_rows(result: FamilyResult) -> list[tuple[str, list[tuple[str, float | None]]]]:
    """Each agent on each scenario it played, with its paired comparisons (raw metric)."""
    rows = []
    for row in result.per_scenario[result.per_scenario["class"] == "agent"].to_dict("records"):
        rows.append(("agent", [
            (row["scope"], None), (row["policy"], None), (row["trained_on"], None), (row["split"], None),
            (f"{_sig(row['metric_mean'])} ± {_sig(row['metric_std'])}", row["metric_mean"]),
            (_raw_diff(row, "vs_best", row["best"]), row["vs_best_diff_mean"]),
            (f"{row['vs_best_wins']}/{row['vs_best_ties']}/{row['vs_best_losses']}", row["vs_best_wins"]),
            (_raw_diff(row, "vs_bnl", row["best_non_learned"]), row["vs_bnl_diff_mean"]),
            (f"{row['vs_bnl_wins']}/{row['vs_bnl_ties']}/{row['vs_bnl_losses']}", row["vs_bnl_wins"])]))
    return rows


AGENT_NOTE = ("Every scenario each agent played, paired by seed against the scenario's best heuristic and its best "
              "deployable non-learned policy (raw metric; positive: the agent is better): held-in is its training "
              "scenario (held-out seeds of the distribution it trained on), a held-out instance a headline scenario "
              "it never trained on.")


def _scenario_headers(result: FamilyResult) -> tuple[str, ...]:
    bench = result.benchmark
    headers = ("scenario", "policy", "class", "trained on", f"{bench.metric} mean ± std", "score [95% CI]",
               f"vs best heuristic ({bench.metric}) [95% CI]", "W/T/L", "vs best non-learned [95% CI]", "W/T/L")
    return (*headers, "budget kept") if bench.budget is not None else headers


def _raw_diff(row: dict, prefix: str, reference: str) -> str:
    ci = _ci(row[f"{prefix}_diff_ci_low"], row[f"{prefix}_diff_ci_high"], fmt=_sig)
    return f"{_sig(row[f'{prefix}_diff_mean'])} {ci} vs {reference}"


def _scenario_rows(result: FamilyResult) -> list[tuple[str, list[tuple[str, float | None]]]]:
    rows = []
    for row in result.per_scenario.to_dict("records"):
        trained = f"{row['trained_on']} ({row['split']})" if row.get("trained_on") else ""
        cells = [
            (row["scope"], None), (row["policy"], None), (row["class"], None), (trained, None),
            (f"{_sig(row['metric_mean'])} ± {_sig(row['metric_std'])}", row["metric_mean"]),
            (f"{_num(row['score_mean'])} {_ci(row['score_ci_low'], row['score_ci_high'])}", row["score_mean"]),
            (_raw_diff(row, "vs_best", row["best"]), row["vs_best_diff_mean"]),
            (f"{row['vs_best_wins']}/{row['vs_best_ties']}/{row['vs_best_losses']}", row["vs_best_wins"]),
            (_raw_diff(row, "vs_bnl", row["best_non_learned"]), row["vs_bnl_diff_mean"]),
            (f"{row['vs_bnl_wins']}/{row['vs_bnl_ties']}/{row['vs_bnl_losses']}", row["vs_bnl_wins"])]
        if result.benchmark.budget is not None:
            cells.append((f"{row['budget_kept']:.0%}", row["budget_kept"]))
        rows.append((row["class"], cells))
    return rows


def _partial_lines(result: FamilyResult) -> list[str]:
    return [f"{policy} ran on {len(covered)} of {len(result.scenarios)} scenarios ({', '.join(covered)}): listed per "
            "scenario, not ranked" for policy, covered in result.partial.items()]


# --- Markdown ---------------------------------------------------------------------------------------------------
def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers),
            *("| " + " | ".join(str(c).replace("|", "/") for c in r) + " |" for r in rows), ""]


def markdown(results: Sequence[FamilyResult], command: str, quick: bool,
             family_commands: dict[str, str] | None = None) -> str:
    """``leaderboard.md``; ``family_commands``: family -> the command that regenerates its numbers alone (default:
    ``command``)."""
    out = ["# joulegym leaderboard", "", f"Regenerate every number here: `{command}`", "", METHOD, ""]
    if quick:
        out += ["**Quick run** (`--quick`): a subset of scenarios and seeds; not the leaderboard.", ""]
    out += ["## The verdict", "", agent_verdict.NOTE, ""]
    out += _md_table(agent_verdict.HEADERS, agent_verdict.rows(results))
    for result in results:
        bench = result.benchmark
        out += [f"## {result.name}: {result.descriptor.title}", ""]
        out += [f"{what}: `{text}`" for what, text in _commands(result, (family_commands or {}).get(
            result.name, command))] + [""]
        out += [line for text in _header(result) for line in (text, "")]
        out += ["### Anchors", "", f"Zero: {bench.zero_why}", "", f"One: {bench.one_why}", ""]
        out += _md_table(ANCHOR_HEADERS, _anchor_rows(result))
        out += ["### Ranking (deployable policies on every headline scenario)", ""]
        out += _md_table(RANK_HEADERS, [[c for c, _ in cells] for _, cells in _ranking_rows(result)])
        out += [f"- {line}" for line in _partial_lines(result)] + ([""] if result.partial else [])
        out += ["### Upper bounds (privileged: not deployable, not ranked)", ""]
        upper = _upper_rows(result)
        out += _md_table(UPPER_HEADERS, [[c for c, _ in cells] for _, cells in upper]) if upper else [
            "None on these scenarios.", ""]
        agents = _agent_rows(result)
        if agents:
            out += ["### Agents on every scenario they played (paired)", "", AGENT_NOTE, ""]
            out += _md_table(AGENT_HEADERS, [[c for c, _ in cells] for _, cells in agents])
        out += ["### Per scenario", ""]
        out += _md_table(_scenario_headers(result), [[c for c, _ in cells] for _, cells in _scenario_rows(result)])
        for caption, path in result.plots.items():
            out += [f"![{caption}]({path})", ""]
        if result.curves:
            out += ["### Learning curves", "", CURVE_NOTE, ""]
        for label, path in result.curves.items():
            out += [f"![learning curve {label}]({path})", ""]
        if result.notes:
            out += ["Notes:", ""] + [f"- {n}" for n in result.notes] + [""]
    return "\n".join(out).rstrip() + "\n"


# --- HTML -------------------------------------------------------------------------------------------------------
_STYLE = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:80em;padding:0 1em;color:#222}
code{background:#f3f3f3;padding:.1em .3em}table{border-collapse:collapse;margin:1em 0;font-size:.85em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}th{background:#eee;cursor:pointer}
th.sorted-asc::after{content:" \\25B2"}th.sorted-desc::after{content:" \\25BC"}tr.agent{background:#fff4e6}
tr.privileged{background:#f3eefa}tr.baseline{color:#444}
img{max-width:100%;display:block;margin:.5em 0}figure{margin:1em 0}.note{color:#555}"""

# Click a header to sort (numbers by their data-v value, text otherwise); the load handler reports how many
# figures rendered (the page test reads it).
_SCRIPT = """document.querySelectorAll("table.sortable th").forEach(function(th){
  th.addEventListener("click", function(){
    var table = th.closest("table"), body = table.tBodies[0], col = th.cellIndex;
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
    if value is None or not isinstance(value, int | float) or not math.isfinite(value):
        return f"<td>{text}</td>"
    return f'<td data-v="{value:.12g}">{text}</td>'


def _table(css: str, headers: Sequence[str], rows: Sequence[tuple[str, Sequence[tuple[str, Any]]]],
           links: dict[str, str] | None = None, link_column: int = 1) -> list[str]:
    lines = [f'<table class="sortable {css}">', "<thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in headers) +
             "</tr></thead>", "<tbody>"]
    for row_css, cells in rows:
        out = []
        for k, (text, value) in enumerate(cells):
            shown = _e(text)
            if links is not None and k == link_column and text in links:
                shown = f'<a href="{_e(links[text])}">{shown}</a>'
            out.append(_cell(shown, value))
        lines.append(f'<tr class="{_e(row_css)}">' + "".join(out) + "</tr>")
    return [*lines, "</tbody>", "</table>"]


def _figure(path: str, caption: str, css: str = "") -> str:
    return (f'<figure class="{css}"><img src="{_e(path)}" alt="{_e(caption)}"><figcaption>{_e(caption)}'
            "</figcaption></figure>")


CURVE_NOTE = ("Validation score against training CPU time, read from each shipped run's provenance.json (its "
              "validation record: the mean ranking metric on the validation seeds at every evaluation); the line is "
              "the mean over the agent's training seeds with a 95 % t-interval, the anchors on the same validation "
              "seeds are horizontal lines. The commands that trained and shipped the runs are listed at the top of "
              "the family's section.")


def _family_html(result: FamilyResult, command: str) -> list[str]:
    bench = result.benchmark
    body = [f'<section id="{_e(result.name)}">', f"<h2>{_e(result.name)}: {_e(result.descriptor.title)}</h2>"]
    body += [f'<p class="command">{_e(what)}: <code>{_e(text)}</code></p>' for what, text in
             _commands(result, command)]
    body += [f'<p class="note">{_e(line)}</p>' for line in _header(result)]
    body += ["<h3>Anchors</h3>", f"<p><strong>Zero</strong>: {_e(bench.zero_why)}</p>",
             f"<p><strong>One</strong>: {_e(bench.one_why)}</p>"]
    body += _table("anchors", ANCHOR_HEADERS, [("anchor", [(c, None) for c in r]) for r in _anchor_rows(result)])
    body.append("<h3>Ranking: deployable policies on every headline scenario</h3>")
    body += _table("ranking", RANK_HEADERS, _ranking_rows(result), result.provenance)
    if result.partial:
        body.append("<ul>" + "".join(f"<li>{_e(line)}</li>" for line in _partial_lines(result)) + "</ul>")
    body.append("<h3>Upper bounds: privileged policies (not deployable, not ranked)</h3>")
    upper = _upper_rows(result)
    body += _table("upper-bounds", UPPER_HEADERS, upper, result.provenance, 0) if upper else [
        "<p>None on these scenarios.</p>"]
    agents = _agent_rows(result)
    if agents:
        body += ["<h3>Agents on every scenario they played (paired)</h3>", f'<p class="note">{_e(AGENT_NOTE)}</p>']
        body += _table("agents", AGENT_HEADERS, agents)
    plot_links = {s: p for s, p in result.episode_plots.items()}
    body.append(f"<h3>Per scenario</h3><p class=\"note\">{_e(bench.metric)}: mean ± std over seeds (and training "
                "runs); the scenario links to its episode plot (one episode per policy, first held-out seed).</p>")
    body += _table("per-scenario", _scenario_headers(result), _scenario_rows(result), plot_links, 0)
    for caption, path in result.plots.items():
        body.append(_figure(path, caption, "summary"))
    if result.curves:
        body.append(f"<h3>Learning curves</h3><p class=\"note\">{_e(CURVE_NOTE)}</p>")
        body += [_figure(path, f"learning curve: {label}", "learning-curve") for label, path in result.curves.items()]
    if result.notes:
        body.append("<h3>Notes</h3><ul>" + "".join(f"<li>{_e(n)}</li>" for n in result.notes) + "</ul>")
    body.append("</section>")
    return body


def html(results: Sequence[FamilyResult], command: str, quick: bool,
         family_commands: dict[str, str] | None = None) -> str:
    """``index.html``: the same content as :func:`markdown`, with sortable tables and the figures embedded."""
    body = ["<h1>joulegym leaderboard</h1>",
            f"<p>Regenerate every number on this page: <code>{_e(command)}</code></p>", f"<p>{_e(METHOD)}</p>"]
    if quick:
        body.append("<p><strong>Quick run</strong> (<code>--quick</code>): a subset of scenarios and seeds; not the "
                    "leaderboard.</p>")
    body += ["<h2>The verdict</h2>", f'<p class="note">{_e(agent_verdict.NOTE)}</p>']
    body += _table("verdict", agent_verdict.HEADERS,
                   [("verdict", [(c, None) for c in r]) for r in agent_verdict.rows(results)])
    body.append("<p>Families: " + ", ".join(f'<a href="#{_e(r.name)}">{_e(r.name)}</a>' for r in results) + "</p>")
    body.append(f'<p class="fronts">The energy-performance trade-off of every family (each paper\'s knob swept, '
                f'hypervolume and expected utility): <a href="{FRONTS_LINK}">{FRONTS_LINK}</a>, made by <code>python '
                "evaluate.py --suite --pareto</code> (docs/tradeoffs.md).</p>")
    for result in results:
        body += _family_html(result, (family_commands or {}).get(result.name, command))
    body.append('<p id="status" class="note"></p>')
    return ("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<title>joulegym leaderboard</title>\n<style>\n" + _STYLE + "\n</style>\n</head>\n<body>\n" +
            "\n".join(body) + "\n<script>\n" + _SCRIPT + "\n</script>\n</body>\n</html>\n")
