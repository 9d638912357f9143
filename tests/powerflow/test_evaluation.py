"""PowerFlow evaluation hooks (Fig. 7-style plot)."""

from __future__ import annotations

import pandas as pd

from joulegym.evaluation.hooks import hooks_for


def test_hooks_registered_and_summary_plot_writes(tmp_path):
    hooks = hooks_for("powerflow")
    assert "avg_jct_h" in hooks.headline_metrics and "total_energy_kwh" in hooks.headline_metrics
    results = pd.DataFrame([{"env_id": "joulegym/PowerFlow-tiny-v0", "policy": "powerflow-strict", "seed": 0,
                             "episode": 0, "return": -0.5, "length": 30, "avg_jct_h": 0.5, "total_energy_kwh": 3.0}])
    paths = hooks.summary_plot(results, tmp_path)
    names = {p.name for p in paths}
    assert "fig7_PowerFlow-tiny-v0.png" in names
    table = pd.read_csv(tmp_path / "fig7_PowerFlow-tiny-v0.csv")
    assert set(table.policy) >= {"powerflow", "gandiva", "tiresias", "afs", "gandiva-zeus", "tiresias-zeus"}
    assert (table.avg_jct_h > 0).all() and (table.total_energy_kwh > 0).all()
