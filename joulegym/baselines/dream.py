"""DREAM reference policies (Kim et al., ASPLOS '23, §4, §5.1 "Schedulers"; ``docs/families/dream.md`` §6).

``DREAM-v0`` (dispatch): DREAM and the schedulers it is compared with, registered once as the core's *inner*
policies (:mod:`joulegym.core.inner`): ``reset(sim, rng)`` and ``decide(view)`` on the simulator.
:func:`joulegym.core.policy.make` wraps one in :class:`~joulegym.core.policy.InnerPolicyAdapter` to drive the
env (a decision the integer action cannot express travels with it, so an env episode equals
``joulegym.core.inner.run_inner`` on the simulator, ``tests/dream/test_policies_env.py``);
:func:`joulegym.core.policy.make_inner` builds the inner policy for the fast path.

- ``dream-full``, ``dream-smartdrop``, ``dream-mapscore``: DREAM's variants of Table 4 (MapScore with its
  parameter optimisation; + smart frame drop; + Supernet switching), ``mapscore-fixed``: MapScore with
  alpha = beta = 1 (the Fig. 9 ablation baseline);
- ``fcfs``, ``fcfs-static`` (Fig. 2's offline reservation), ``veltair``, ``planaria``: the paper's baselines as
  docs §3 #22-#23 read them;
- ``edf`` and ``random-dispatch``: extra references, not in the paper.

``DREAMParams-v0`` (one step per window), agent-facing policies:

- ``adaptivity``: DREAM's online adaptivity engine (§4.4) proposing the next (alpha, beta) from the window just
  run (:class:`joulegym.envs.dream.search.AdaptivityEngine`), restarting its search when the model list changes;
- ``fixed-params``: a fixed (alpha, beta), (1, 1) by default;
- ``grid-optimal``: the best fixed pair of a grid over [0, 2]^2 (``step``, 0.25 by default: 81 points), each point
  a whole offline episode with the episode's own random numbers (privileged: an upper reference).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from joulegym.core.inner import policy_rng, run_inner
from joulegym.core.policy import PolicyNotApplicable, register_policy
from joulegym.envs.dream.mapscore import DreamPolicy
from joulegym.envs.dream.schedulers import (
    EDFScheduler,
    FCFSScheduler,
    PlanariaScheduler,
    RandomDispatch,
    StaticFCFSScheduler,
    VeltairScheduler,
)
from joulegym.envs.dream.search import AdaptivityEngine

DISPATCH_KIND = "DREAM"
PARAMS_KIND = "DREAMParams"
GRID_STEP = 0.25  # grid-optimal's default grid: 81 points (the docs' 441-point 0.1 grid is its step=0.1)


def _dream(variant: str, name: str, **fixed: Any) -> Callable[..., DreamPolicy]:
    def factory(**kwargs: Any) -> DreamPolicy:
        return DreamPolicy(variant, name=name, **{**fixed, **kwargs})

    factory.__name__ = f"make_{name.replace('-', '_')}"
    return factory


# registry name -> (factory, one line); the inner policies of DREAM-v0 (envs/dream/mapscore.py, schedulers.py)
INNER: dict[str, tuple[Callable[..., Any], str]] = {
    "dream-full": (_dream("full", "dream-full"),
                   "DREAM-Full: MapScore + parameter optimisation + smart frame drop + Supernet switching (Table 4)"),
    "dream-smartdrop": (_dream("smartdrop", "dream-smartdrop"),
                        "DREAM-SmartDrop: MapScore + parameter optimisation + smart frame drop (Table 4)"),
    "dream-mapscore": (_dream("mapscore", "dream-mapscore"),
                       "DREAM-MapScore: MapScore with parameter optimisation (Table 4)"),
    "mapscore-fixed": (_dream("mapscore", "mapscore-fixed", tuning="fixed", alpha=1.0, beta=1.0),
                       "MapScore with alpha = beta = 1, no optimisation (Fig. 9 ablation baseline)"),
    "fcfs": (FCFSScheduler, "dynamic FCFS: oldest request, whole model on the first idle accelerator (§5, Fig. 2)"),
    "fcfs-static": (StaticFCFSScheduler,
                    "static FCFS: offline worst-case reservation of (start, accelerator) per job (Fig. 2)"),
    "veltair": (VeltairScheduler, "Veltair: threshold layer blocks, earliest deadline first, heterogeneity-unaware"),
    "planaria": (PlanariaScheduler,
                 "Planaria (§5; MICRO'20's scheduler): frames by slack x minimal resource, late ones last; per layer "
                 "the smallest idle accelerator that meets the deadline, else the fastest"),
    "edf": (EDFScheduler, "earliest deadline first per layer on the fastest idle accelerator (not in the paper)"),
    "random-dispatch": (RandomDispatch,
                        "a random ready frame's next layer on a random idle accelerator (not in the paper)"),
}


def _base(env: Any, kind: str, who: str) -> Any:
    base = env.unwrapped
    if getattr(base, "family", None) != "dream" or getattr(base, "kind", None) != kind:
        raise PolicyNotApplicable(f"{who} drives joulegym/{kind} envs only, not {getattr(base, 'kind', base)!r}")
    return base


class FixedParams:
    """``DREAMParams-v0``: the same (alpha, beta) every window (default the Fig. 9 baseline's (1, 1))."""

    privileged = False

    def __init__(self, alpha: float = 1.0, beta: float = 1.0, name: str = "fixed-params") -> None:
        for field, value in (("alpha", alpha), ("beta", beta)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= float(value) <= 2.0:
                raise ValueError(f"{field} must be a number in [0, 2], got {value!r}")
        self.name = name
        self.params = np.array([alpha, beta], dtype=np.float32)

    def reset(self, env: Any, seed: int | None = None) -> None:
        _base(env, PARAMS_KIND, self.name)

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        return self.params.copy()


class AdaptivityPolicy:
    """``DREAMParams-v0``: DREAM's online adaptivity engine (§4.4) as a meta-policy: after each window it is told
    the window's UXCost, DLV and drop rates and the active model list (what DREAM's engine tracks on a real
    system), and gives the (alpha, beta) of the next window (a search candidate while it searches, the locked
    pair after)."""

    privileged = False
    name = "adaptivity"

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.engine: Any = None
        self._env: Any = None

    def reset(self, env: Any, seed: int | None = None) -> None:
        base = self._env = _base(env, PARAMS_KIND, self.name)
        self.engine = AdaptivityEngine(rng=policy_rng(seed, self.name), **self.kwargs)
        self._told = 0
        self.params = self.engine.step(base.sim.active_models(), None)

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        base = self._env
        if base is None:
            raise RuntimeError("adaptivity.act() called before reset(env)")
        if base.window_index > self._told:  # the window just run, under the pair the engine gave for it
            ux, dlv, drop, frames = base.window_rates()
            self.params = self.engine.step(base.sim.active_models(), ux if frames else None, dlv, drop)
            self._told = base.window_index
        return np.array(self.params, dtype=np.float32)


class GridOptimal:
    """``DREAMParams-v0``: the fixed (alpha, beta) of a grid over [0, 2]^2 with the lowest whole-episode UXCost,
    each point run offline with the episode's own random numbers (privileged; an upper reference)."""

    privileged = True
    name = "grid-optimal"

    def __init__(self, step: float = GRID_STEP) -> None:
        if isinstance(step, bool) or not isinstance(step, int | float) or not 0.01 <= float(step) <= 2.0:
            raise ValueError(f"step must be a number in [0.01, 2], got {step!r}")
        self.step = float(step)
        self.best: tuple[float, float] = (1.0, 1.0)
        self.table: list[tuple[float, float, float]] = []

    def reset(self, env: Any, seed: int | None = None) -> None:
        base = _base(env, PARAMS_KIND, self.name)
        self.table = grid_search(base, self.step)
        alpha, beta, _ = min(self.table, key=lambda row: row[2])
        self.best = (alpha, beta)

    def act(self, obs: Any, info: dict[str, Any]) -> np.ndarray:
        return np.array(self.best, dtype=np.float32)


def grid_search(env: Any, step: float = GRID_STEP) -> list[tuple[float, float, float]]:
    """``(alpha, beta, UXCost)`` of every grid point: a whole episode of ``env``'s workload, hardware and episode
    key with the env's DREAM variant at fixed (alpha, beta) (the offline evaluation of §3.6), on the fast path
    (:func:`joulegym.core.inner.run_inner`)."""
    points = np.round(np.arange(0.0, 2.0 + 1e-9, step), 6)
    sim = env.make_sim(env.workload, env.hw)
    key = env.sim.episode_key
    table = []
    for alpha in points:
        for beta in points:
            policy = DreamPolicy(env.config["dream_variant"], "fixed", float(alpha), float(beta))
            metrics = run_inner(sim, policy, 0, instance=key)
            table.append((float(alpha), float(beta), float(metrics["uxcost"])))
    return table


for _name, (_factory, _description) in INNER.items():
    register_policy(_name, _factory, family="dream", description=_description, kinds=(DISPATCH_KIND,), inner=True)
register_policy("adaptivity", AdaptivityPolicy, family="dream", kinds=(PARAMS_KIND,),
                description="DREAM's online adaptivity engine proposing (alpha, beta) per window (§4.4)")
register_policy("fixed-params", FixedParams, family="dream", kinds=(PARAMS_KIND,),
                description="fixed (alpha, beta), (1, 1) by default (Fig. 9 ablation baseline)")
register_policy("grid-optimal", GridOptimal, family="dream", kinds=(PARAMS_KIND,),
                description="the best fixed (alpha, beta) of a grid, offline with the episode's seed (privileged)")
