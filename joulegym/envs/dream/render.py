"""Rendering of the DREAM envs (``docs/families/dream.md`` §4): the ``ansi`` text (time, UXCost so far, what each
accelerator runs, the slots) and the ``rgb_array`` Gantt timeline of the recorded episode."""

from __future__ import annotations

from typing import Any

from joulegym.core.plotting import new_figure


def render_text(env: Any, slots: Any = None, extra: str = "") -> str:
    """The ``ansi`` rendering of a DREAM env: its simulator now, the slots (``DREAM-v0``) or ``extra`` lines."""
    sim = env.sim
    view = sim.view()
    m = sim.metrics()
    names = list(view.model_names)
    lines = [f"{env.workload} on {env.hw}  t={view.now * 1e3:8.2f} ms  UXCost so far {m['uxcost']:.4g}  "
             f"DLV {m['dlv_rate']:.1%}  drops {int(m['drops'])}"]
    for a in range(view.n_acc):
        task = view.acc_running[a]
        what = "idle" if task < 0 else (f"{names[view.f_model[task]]}#{view.f_frame[task]} until "
                                        f"{view.acc_busy_until[a] * 1e3:.2f} ms")
        lines.append(f"  acc {a} ({int(view.acc_pes[a])} PEs): {what}")
    if slots is not None:
        lines.append("slot  model               frame  slack(ms)  layer  state")
        for k, task in slots.occupied():
            state = "running" if view.f_running[task] >= 0 else "ready"
            lines.append(f"{k:4d}  {names[view.f_model[task]]:<18s} {view.f_frame[task]:6d}  "
                         f"{(view.f_deadline[task] - view.now) * 1e3:9.2f}  {view.f_pos[task]:5d}  {state}")
        if slots.overflow:
            lines.append(f"  + {slots.overflow} frames outside the slots")
    if extra:
        lines.append(extra)
    return "\n".join(lines)


def gantt_figure(sim: Any, title: str = "", t_range: tuple[float, float] | None = None):
    """Per-accelerator Gantt timeline of ``sim``'s recorded episode (``record_timeline``): one bar per dispatched
    layer chunk coloured by model, drops (x) and deadline misses (v) on a row of their own."""
    fig, axes = new_figure(1, 1, size=(9.0, 3.6))
    ax = axes[0, 0]
    view = sim.view()
    names = list(view.model_names)
    colors = {m: f"C{m % 10}" for m in range(len(names))}
    n_acc = int(view.n_acc)
    timeline = list(getattr(sim, "timeline", ()) or ())
    lo, hi = t_range if t_range is not None else (0.0, max(view.now, 1e-3))
    bars: dict[int, list[tuple[float, float]]] = {}
    bar_colors: dict[int, list[str]] = {}
    for acc, start, end, model, _frame, _task in timeline:
        if end < lo or start > hi:
            continue
        bars.setdefault(acc, []).append((start * 1e3, max(end - start, 0.0) * 1e3))
        bar_colors.setdefault(acc, []).append(colors[model])
    for acc in range(n_acc):
        if acc in bars:
            ax.broken_barh(bars[acc], (acc - 0.4, 0.8), facecolors=bar_colors[acc])
    events_row = n_acc
    drops = [(t, model) for t, model, *_ in (getattr(sim, "drop_log", ()) or ()) if lo <= t <= hi]
    misses = [(t, model) for t, model, *_ in (getattr(sim, "miss_log", ()) or ()) if lo <= t <= hi]
    if drops:
        ax.scatter([t * 1e3 for t, _ in drops], [events_row + 0.2] * len(drops), marker="x",
                   c=[colors[m] for _, m in drops], label="drop")
    if misses:
        ax.scatter([t * 1e3 for t, _ in misses], [events_row - 0.2] * len(misses), marker="v",
                   c=[colors[m] for _, m in misses], edgecolors="red", label="deadline miss")
    ax.set_yticks(list(range(n_acc + 1)))
    ax.set_yticklabels([f"acc {a} ({int(view.acc_pes[a])})" for a in range(n_acc)] + ["drops / misses"])
    ax.set_xlim(lo * 1e3, hi * 1e3)
    ax.set_ylim(-0.6, n_acc + 0.6)
    ax.set_xlabel("time (ms)")
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Patch(color=colors[m], label=names[m]) for m in range(len(names))]
    handles += [Line2D([], [], marker="x", ls="", color="black", label="drop (model's colour)"),
                Line2D([], [], marker="v", ls="", color="white", markeredgecolor="red", label="deadline miss")]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig
