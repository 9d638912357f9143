"""Train an SB3 agent on a joulegym env: ``python train.py --env joulegym/ETF-v0 --algo ppo``.

See ``python train.py --help`` and :mod:`joulegym.training`.
"""

import sys

from joulegym.training import main

if __name__ == "__main__":
    sys.exit(main())
