"""SB3 agents (docs/architecture.md): algorithms by name, hyperparameter files, the policy adapter.

Importing this package does not import torch; the algorithm classes load on first use.
"""

from joulegym.agents.algos import ALGOS, algo_spec, check_algo_supports, load_hyperparams, load_model, make_model
from joulegym.agents.sb3_policy import SB3Policy

__all__ = ["ALGOS", "SB3Policy", "algo_spec", "check_algo_supports", "load_hyperparams", "load_model", "make_model"]
