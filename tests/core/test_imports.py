"""``import joulegym`` registers every id from the descriptors and imports no env module, scipy, pandas or torch
(docs/architecture.md); the time it takes is measured by ``benchmarks/``, not here."""

from __future__ import annotations

import json
import subprocess
import sys


def test_import_registers_ids_without_heavy_modules():
    code = ("import sys, json, joulegym, gymnasium as gym; "
            "print(json.dumps({'modules': sorted(sys.modules), "
            "'ids': [i for i in gym.registry if i.startswith('joulegym/')]}))")
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                    check=True).stdout)
    heavy = [m for m in out["modules"] if m.split(".")[0] in ("scipy", "pandas", "torch", "stable_baselines3",
                                                                "matplotlib", "simpy")]
    family_code = [m for m in out["modules"] if m.startswith(("joulegym.envs.", "joulegym.baselines",
                                                              "joulegym.evaluation", "joulegym.agents"))]
    assert heavy == [] and family_code == []
    assert {"joulegym/ETF-v0", "joulegym/EMRF-v0", "joulegym/PowerFlow-v0"} <= set(out["ids"])


def test_policy_modules_load_on_first_use():
    code = ("import sys, joulegym; from joulegym import baselines; "
            "before = 'joulegym.baselines.etf' in sys.modules; names = baselines.available('etf'); "
            "print(before, 'joulegym.baselines.etf' in sys.modules, 'etf' in names)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True", "True"]
