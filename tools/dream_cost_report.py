"""Print what docs/families/dream-cost-model.md reports: calibrated kappa per scenario (compare with the
committed ``KAPPA`` in joulegym/workloads/dream_scenarios.py), the offered-load table and the MAESTRO/XRBench
validation tables (needs the reference-data checkout beside the repository).

Usage: ``python tools/dream_cost_report.py [--reference-data ../shared/reference-data]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from joulegym.workloads.dream_models import catalog_markdown
from joulegym.workloads.dream_scenarios import DREAM_SCENARIOS, KAPPA, calibrate_kappa, offered_load_markdown
from joulegym.workloads.dream_validation import dataflow_preference_markdown, validation_markdown

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-data", type=Path, default=ROOT / ".." / "shared" / "reference-data")
    args = parser.parse_args()
    print("calibrated kappa (rho = 1.1 on 4k-1ws2os) vs committed KAPPA:")
    for name in DREAM_SCENARIOS:
        print(f'    "{name}": {calibrate_kappa(name):.6g},   # committed {KAPPA[name]:.6g}')
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
