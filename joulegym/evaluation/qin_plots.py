"""The figures of ``evaluate.py --reproduce qin`` (Guan & Ababei, IEEE T-SUSC 2024, Figs. 7, 10b and 14; ``docs/
families/qin.md`` §6): our curves in the paper's layout (the paper's figures are images without data)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from joulegym.core.plotting import new_figure
from joulegym.evaluation.qin_experiments import NODE_CASES


def fig7_plot(runs: pd.DataFrame) -> Any:
    """Fig. 7: RW makespan, energy and EDP against M per policy (means over the seeds)."""
    rw = runs[runs["mix"] == "rw"]
    table = rw.groupby(["policy", "num_jobs"])[["makespan_s", "energy_j", "edp_js"]].mean().reset_index()
    fig, axes = new_figure(1, 3, size=(12.0, 3.6))
    for k, metric in enumerate(("makespan_s", "energy_j", "edp_js")):
        ax = axes[0, k]
        for policy, part in table.groupby("policy"):
            ax.plot(part.num_jobs, part[metric], marker="o", label=policy)
        ax.set_xlabel("number of RW jobs M")
        ax.set_ylabel(metric)
    axes[0, 0].legend(fontsize=6)
    fig.suptitle("Fig. 7 equivalent: 5 Table-2 workers, RW (Splash-2) jobs at t = 0")
    fig.tight_layout()
    return fig


def fig10b_plot(t10: pd.DataFrame) -> Any:
    """Fig. 10b: Qin's makespan and mean Im_c (eq. 30) against d."""
    mean = t10.groupby("d")[["makespan_s", "im_c_mean"]].mean().reset_index()
    fig, axes = new_figure(1, 2, size=(8.0, 3.2))
    axes[0, 0].plot(mean.d, mean.makespan_s, marker="o")
    axes[0, 0].set_xlabel("d")
    axes[0, 0].set_ylabel("makespan (s)")
    axes[0, 1].plot(mean.d, mean.im_c_mean, marker="o")
    axes[0, 1].set_xlabel("d")
    axes[0, 1].set_ylabel("mean Im_c (instructions)")
    fig.suptitle("Fig. 10b equivalent: number of choices d, 100 RW jobs")
    fig.tight_layout()
    return fig


def fig14_plot(t14: pd.DataFrame) -> Any:
    """Fig. 14: per Splash-2 app, runtime, energy and EDP min-max normalised over the policies (as the paper)."""
    apps = list(dict.fromkeys(t14.app))
    labels = [case[0] for case in NODE_CASES]
    fig, axes = new_figure(1, 3, size=(13.0, 3.6))
    x = np.arange(len(apps))
    width = 0.8 / len(labels)
    for k, metric in enumerate(("runtime_s_norm", "energy_j_norm", "edp_js_norm")):
        ax = axes[0, k]
        for i, label in enumerate(labels):
            part = t14[t14.policy == label].set_index("app").reindex(apps)
            ax.bar(x + (i - (len(labels) - 1) / 2) * width, part[metric], width=width, label=label)
        ax.set_xticks(x, apps, rotation=70, fontsize=6)
        ax.set_ylabel(metric)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("Fig. 14 equivalent: node level on one i5-4690 (min-max normalised per app)")
    fig.tight_layout()
    return fig
