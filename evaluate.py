"""Evaluate reference policies and trained agents: ``python evaluate.py --env ID --policies etf,tf,ef``.

See ``python evaluate.py --help`` and :mod:`joulegym.evaluation.cli`.
"""

import sys

from joulegym.evaluation.cli import main

if __name__ == "__main__":
    sys.exit(main())
