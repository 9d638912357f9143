"""Sphinx extension: one page per env family, generated from the registry at build time.

On ``builder-inited`` (before Sphinx reads the sources) it writes, for every registered family
(:func:`joulegym.core.family.families`):

- ``docs/envs/<family>.md``: the kinds and their ids, action and observation spaces of an instantiated env
  (``gym.make(id)``), the reward parts and presets of its ``reward_spec``, termination and truncation and the
  version history (from the env module's docstring), the scenarios with their registered ids, a rendered frame
  and the env module's and classes' docstrings (autodoc), with a link to the hand-written model page
  (``FamilyDescriptor.docs``);
- ``docs/envs/index.md``: the table of families and ids;
- ``docs/_static/generated/<Kind>-v<N>.png``: one ``render_mode="rgb_array"`` frame per kind (seed 0, a few
  seeded random actions).

Both folders are git-ignored: the pages cannot drift from the code because nothing of them is committed. A file is
rewritten only when its content changed, so an incremental build re-reads only what the code changed.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

FRAME_STEPS = 8  # steps before the frame: past the empty first state, still quick (< 2 s per kind)
FRAME_SEED = 0


# --- text helpers --------------------------------------------------------------------------------------------
def _md(text: str) -> str:
    """Plain docstring text for a Markdown table cell: reST roles and ``literals`` become code spans, table pipes
    and markup characters outside code spans are escaped."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"``\1``", " ".join(text.split()))
    parts = re.split(r"(``.*?``|`[^`]*`)", text)
    out = []
    for part in parts:
        if part.startswith("`"):
            out.append("`" + part.strip("`").replace("|", "\\|") + "`")
        else:
            out.append(re.sub(r"([|*_<>\[\]])", r"\\\1", part))
    return "".join(out)


def _runs(values: list[Any]) -> str:
    """``[5, 5, 17, 17]`` -> ``[5]*2 + [17]*2`` (MultiDiscrete nvecs of slot envs are long)."""
    groups: list[list[Any]] = []
    for v in values:
        if groups and groups[-1][0] == v:
            groups[-1][1] += 1
        else:
            groups.append([v, 1])
    return " + ".join(f"[{v}]*{n}" if n > 1 else f"[{v}]" for v, n in groups)


def describe_space(space: Any) -> str:
    """One line for a Gymnasium space, compact for large Box and MultiDiscrete spaces."""
    import numpy as np
    from gymnasium import spaces

    if isinstance(space, spaces.Box):
        def bound(a: np.ndarray) -> str:
            lo, hi = float(np.min(a)), float(np.max(a))
            return f"{lo:g}" if lo == hi else f"[{lo:g} .. {hi:g}] per dimension"

        return f"Box(low={bound(space.low)}, high={bound(space.high)}, shape={space.shape}, {space.dtype})"
    if isinstance(space, spaces.MultiDiscrete):
        return f"MultiDiscrete({_runs([int(n) for n in np.ravel(space.nvec)])})"
    if isinstance(space, spaces.Dict):
        return "Dict(" + ", ".join(f"{k}: {describe_space(s)}" for k, s in space.spaces.items()) + ")"
    return str(space)


def table_rows(doc: str, keys: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """``(section, key, value)`` of every row of the reST simple tables in ``doc`` whose first cell starts with
    one of ``keys`` (case-insensitive); ``section`` is the nearest title above the table ("" if none)."""
    lines = doc.splitlines()
    rows: list[tuple[str, str, str]] = []
    section = ""
    border = re.compile(r"^(=+)(\s+)=+\s*$")
    i = 0
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and line.strip() and re.fullmatch(r"=+", lines[i + 1].strip() or "x") \
                and not border.match(line) and len(lines[i + 1].strip()) >= len(line.strip()) - 2:
            section = line.strip()
            i += 2
            continue
        match = border.match(line)
        if not match:
            i += 1
            continue
        col = len(match.group(1)) + len(match.group(2))
        i += 1
        key, value = "", []
        while i < len(lines):
            row = lines[i]
            if border.match(row):  # the header separator (the table goes on) or the closing border
                if i + 1 < len(lines) and lines[i + 1].strip():
                    i += 1
                    continue
                break
            if row[:col].strip():  # a new row
                if key:
                    rows.append((section, key, " ".join(value)))
                key, value = row[:col].strip(), [row[col:].strip()]
            elif row.strip():
                value.append(row.strip())
            i += 1
        if key:
            rows.append((section, key, " ".join(value)))
        i += 1
    return [r for r in rows if r[1].lower().startswith(keys)]


def version_history(doc: str) -> str | None:
    """The "Version history" paragraph (and its list) of an env module docstring, or None."""
    match = re.search(r"^Version history.*?(?=\n\s*\n(?![ -]))", doc + "\n\n", re.S | re.M)
    return match.group(0).strip() if match else None


# --- generation ------------------------------------------------------------------------------------------------
def _write(path: Path, content: str | bytes) -> None:
    data = content.encode() if isinstance(content, str) else content
    if path.is_file() and path.read_bytes() == data:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def frame_policy(env: Any) -> Any:
    """The family's reference policy where it drives the kind (its frame shows the system at work: random actions
    on DREAM-v0 mostly wait, 8 steps leave nothing dispatched), else ``random``."""
    from joulegym import baselines
    from joulegym.core.family import get_family

    reference = get_family(env.unwrapped.family).reference_policy
    name = reference if reference in baselines.applicable(env) else "random"
    return baselines.make(name, family=env.unwrapped.family)


def _frame_png(env: Any) -> bytes:
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.image

    obs, info = env.reset(seed=FRAME_SEED)
    policy = frame_policy(env)
    policy.reset(env, seed=FRAME_SEED)
    for _ in range(FRAME_STEPS):
        obs, _, terminated, truncated, info = env.step(policy.act(obs, info))
        if terminated or truncated:
            break
    frame = env.render()
    buffer = io.BytesIO()
    matplotlib.image.imsave(buffer, frame, format="png", metadata={"Software": None})
    return buffer.getvalue()


def family_page(descriptor: Any, static: Path) -> str:
    """The Markdown page of one family; writes each kind's frame into ``static``."""
    import gymnasium as gym

    from joulegym import baselines
    from joulegym.core import family as registry

    name = descriptor.name
    model_page = Path(descriptor.docs).relative_to("docs").as_posix()
    short, _, _ = descriptor.title.partition(":")
    out = [f"# {short} environments", "", f"**{_md(descriptor.title)}**", "",
           f"*Generated from the registry at build time (`joulegym.scenarios.{name}.FAMILY`); the model, equations "
           f"and deviations from the paper are on the hand-written [model page](../{model_page}).*",
           "",
           f"- Family: `{name}`; reference policy (the paper's algorithm): `{descriptor.reference_policy}`",
           f"- Reference policies: {', '.join(f'`{p}`' for p in baselines.available(name))} "
           f"([write a policy](../tutorials/write-a-policy.md))",
           f"- Leaderboard benchmark: {'yes (`evaluate.py --suite`)' if descriptor.benchmark else 'not yet'}",
           "", "## Kinds", "",
           "| id | `action_mode` | what the agent decides |", "|---|---|---|"]
    for kind in descriptor.kinds:
        out.append(f"| `{registry.env_id(kind.name, version=kind.version)}` | `{kind.action_mode}` | "
                   f"{_md(kind.description)} |")
    modules: dict[str, list[str]] = {}
    for kind in descriptor.kinds:
        module, cls = kind.entry_point.split(":")
        modules.setdefault(module, [])
        if cls not in modules[module]:
            modules[module].append(cls)
        env_id = registry.env_id(kind.name, version=kind.version)
        env = gym.make(env_id, render_mode="rgb_array")
        try:
            base = env.unwrapped
            spec = base.reward_spec
            frame = f"{kind.name}-v{kind.version}.png"
            _write(static / frame, _frame_png(env))
        finally:
            env.close()
        out += ["", f"### `{env_id}`", "", _md(kind.description), "",
                f"![{env_id}: a rendered frame (seed {FRAME_SEED}, {FRAME_STEPS} steps of "
                f"{frame_policy(env).name})]"
                f"(../_static/generated/{frame})", "",
                "| | |", "|---|---|",
                f"| Entry point | `{kind.entry_point}` (`action_mode={kind.action_mode!r}`) |",
                f"| Action space | `{describe_space(base.action_space)}` |",
                f"| Observation space | `{describe_space(base.observation_space)}` |",
                f"| Reward space (`vector_reward=True`) | `{describe_space(spec.space)}` |",
                f"| Reward presets (`reward=`) | {', '.join(f'`{p}`' for p in spec.presets)}; default "
                f"`{base.config['reward'] or spec.default_preset}` |",
                f"| Vector env | `{kind.vector_entry_point or 'gymnasium SyncVectorEnv / AsyncVectorEnv'}` |",
                "", "Reward parts (`info[\"reward_parts\"]`, more is better):", "",
                "| part | per-step bounds | meaning |", "|---|---|---|"]
        for part in spec.parts:
            out.append(f"| `{part.name}` | [{part.low:g}, {part.high:g}] | {_md(part.description) or '-'} |")
        out += ["", "Weights of the presets:", "", "| preset | weights |", "|---|---|"]
        for preset, weights in spec.presets.items():
            out.append(f"| `{preset}` | {', '.join(f'`{p}`: {w:g}' for p, w in weights.items())} |")

    docs = {m: inspect.getdoc(importlib.import_module(m)) or "" for m in modules}
    out += ["", "## Termination and truncation", ""]
    rows = [(m, *r) for m in modules for r in table_rows(docs[m], ("terminat", "truncat"))]
    if rows:
        out += ["From the tables of the env module's docstring (its full text is under \"Reference\" below, "
                "with what differs between kinds):", "", "| table | | |", "|---|---|---|"]
        out += [f"| {_md(section) or f'`{module}`'} | {_md(key)} | {_md(value)} |"
                for module, section, key, value in rows]
    else:
        out.append("The env module's docstring (under \"Reference\" below) describes them.")
    out += ["", "## Scenarios", "",
            "A scenario is a named preset of the config (`gym.make(\"joulegym/<Kind>-<scenario>-v0\")`, or "
            "`scenario=` on the base id). [Add a scenario](../tutorials/add-a-scenario.md).", "",
            "| scenario | description | registered ids |", "|---|---|---|"]
    for scenario in descriptor.scenarios.values():
        ids = [registry.env_id(k.name, scenario.name, k.version) for k in descriptor.kinds
               if scenario.applies_to(k.name)]
        out.append(f"| `{scenario.name}` | {_md(scenario.description)} | {'<br>'.join(f'`{i}`' for i in ids)} |")
    out += ["", "## Version history", ""]
    histories = [h for h in (version_history(d) for d in docs.values()) if h]
    out += [_history_md(h) for h in histories] or [
        "The env module records no history; every id is at "
        + ", ".join(sorted({f"v{k.version}" for k in descriptor.kinds})) + "."]
    out += ["", "## Reference: the env module and classes", ""]
    for module, classes in modules.items():
        out += ["```{eval-rst}", f".. automodule:: {module}", "   :no-members:", ""]
        out += [f".. autoclass:: {module}.{cls}\n   :no-members:\n" for cls in classes]
        out += ["```", ""]
    return "\n".join(out) + "\n"


def _history_md(text: str) -> str:
    """The history paragraph as Markdown: its lead sentence, then one list item per ``- `` entry."""
    items: list[list[str]] = [[]]
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("- "):
            items.append([stripped[2:]])
        elif stripped:
            items[-1].append(stripped)
    lead, entries = items[0], items[1:]
    return "\n".join([_md(" ".join(lead)), "", *[f"- {_md(' '.join(e))}" for e in entries]]).strip()


def index_page(descriptors: list[Any]) -> str:
    from joulegym.core import family as registry

    out = ["# Environments", "",
           "Every family's page is generated from its descriptor at build time (ids, spaces, reward parts, "
           "scenarios, a rendered frame). `python -m joulegym list` prints the same ids.", "",
           "| family | kinds | scenarios | ids |", "|---|---|---|---|"]
    for d in descriptors:
        out.append(f"| [{d.name}]({d.name}.md) | {', '.join(f'`{k.name}`' for k in d.kinds)} | "
                   f"{len(d.scenarios)} | {len(registry.registered_ids(d.name))} |")
    out += ["", "```{toctree}", ":hidden:", "", *[d.name for d in descriptors], "```", ""]
    return "\n".join(out)


def generate(srcdir: Path) -> list[Path]:
    """Write the env pages and frames below ``srcdir`` (the docs folder); returns the pages."""
    import joulegym  # noqa: F401  (registers the families)
    from joulegym.core.family import families

    descriptors = families()
    pages = srcdir / "envs"
    static = srcdir / "_static" / "generated"
    written = []
    for d in descriptors:
        path = pages / f"{d.name}.md"
        _write(path, family_page(d, static))
        written.append(path)
    _write(pages / "index.md", index_page(descriptors))
    keep = {p.name for p in written} | {"index.md"}
    for stale in pages.glob("*.md"):  # a family that was removed
        if stale.name not in keep:
            stale.unlink()
    return [pages / "index.md", *written]


def _on_builder_inited(app: Any) -> None:
    generate(Path(app.srcdir))


def _rubric_section_titles(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """A docstring's own section titles (a line over ``=====``) cannot nest inside an autodoc entry; show them as
    rubrics instead (the Qin env module has two). Table borders hold spaces and are left alone."""
    i = 0
    while i + 1 < len(lines):
        title, under = lines[i], lines[i + 1]
        if (title.strip() and not title[0].isspace() and (i == 0 or not lines[i - 1].strip())
                and re.fullmatch(r"([=\-~^])\1*", under) and len(under) >= len(title.strip())):
            lines[i: i + 2] = [f".. rubric:: {title.strip()}"]
        i += 1


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _on_builder_inited)
    app.connect("autodoc-process-docstring", _rubric_section_titles)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
