"""The README's first command runs with the light ``plots`` extra: ``python evaluate.py --out results/quickstart``
imports neither the training stack (torch, Stable-Baselines3, TensorBoard) nor Ray or pyarrow."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "ray", "stable_baselines3", "sb3_contrib", "tensorboard", "pyarrow")

# In a child process: make the heavy packages unimportable (as in a venv with only ".[plots]"), run the
# quickstart, then report which of them got imported anyway.
CHILD = """
import runpy, sys
HEAVY = {heavy!r}

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HEAVY:
            raise ModuleNotFoundError(f"No module named {{name!r}} (not in the plots extra)", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
sys.argv = ["evaluate.py", "--out", {out!r}]
try:
    runpy.run_path({evaluate!r}, run_name="__main__")
except SystemExit as stop:
    assert stop.code in (0, None), stop.code
print("IMPORTED", sorted({{m.split(".")[0] for m in sys.modules}} & set(HEAVY)))
"""


def test_quickstart_runs_without_the_training_stack_ray_or_pyarrow(tmp_path):
    out = tmp_path / "quickstart"
    code = CHILD.format(heavy=HEAVY, out=str(out), evaluate=str(ROOT / "evaluate.py"))
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "JOULEGYM_PROGRESS": "off",
                               "MPLBACKEND": "Agg", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "IMPORTED []" in done.stdout
    for name in ("episodes.csv", "summary.csv", "leaderboard.md", "episode.png"):
        assert (out / name).stat().st_size > 0, name
