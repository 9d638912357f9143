"""Print what docs/families/dream-cost-model.md reports: the calibration (``KAPPA`` as
:func:`calibration_constants` regenerates it, to paste into joulegym/workloads/dream_scenarios.py when it
differs from the committed one), the feasibility and offered-load tables and the MAESTRO/XRBench validation tables
(needs the reference-data checkout beside the repository).

Usage: ``python benchmarks/dream_cost_report.py [--reference-data ../shared/reference-data]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from joulegym.workloads.dream_models import catalog_markdown
from joulegym.workloads.dream_scenarios import (
    KAPPA,
    TARGET_LOAD,
    calibration_constants,
    calibration_markdown,
    offered_load_markdown,
)
from joulegym.workloads.dream_validation import dataflow_preference_markdown, validation_markdown

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-data", type=Path, default=ROOT / ".." / "shared" / "reference-data")
    args = parser.parse_args()
    kappa = calibration_constants()
    same = kappa == dict(KAPPA)
    print(f"calibration at offered load {TARGET_LOAD} (committed copy {'matches' if same else 'DIFFERS: paste'}):")
    print("KAPPA = {" + ", ".join(f'"{n}": {v!r}' for n, v in kappa.items()) + "}")
    print()
    print(calibration_markdown())
    print()
    print(catalog_markdown())
    print()
    print(offered_load_markdown())
    print()
    print(dataflow_preference_markdown())
    print()
    if args.reference_data.is_dir():
        print(validation_markdown(args.reference_data))
    else:
        print(f"(no reference data at {args.reference_data}: validation tables skipped)")


if __name__ == "__main__":
    main()
