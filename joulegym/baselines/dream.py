"""DREAM reference policies (Kim et al., ASPLOS '23, §4, §5.1 "Schedulers"; ``docs/families/dream.md`` §6).

``DREAM-v0`` (dispatch): every scheduler of :mod:`joulegym.envs.dream.scheduling` as a
:class:`~joulegym.core.policy.Policy`. Each is privileged: ``act`` reads the simulator's view
(``env.unwrapped.sim.view()``), asks the scheduler for one decision and returns
``env.unwrapped.action_type.encode(decision)`` (a decision the integer action cannot express travels with it, so
an env episode equals a direct simulator run of the scheduler, ``tests/dream/test_policies_env.py``):

- ``dream-full``, ``dream-smartdrop``, ``dream-mapscore``: DREAM's variants of Table 4 (MapScore with its
  parameter optimisation; + smart frame drop; + Supernet switching), ``mapscore-fixed``: MapScore with
  alpha = beta = 1 (the Fig. 9 ablation baseline);
- ``fcfs`` (oldest request, whole model on the first idle accelerator), ``fcfs-static`` (Fig. 2's offline
  reservation), ``veltair`` (layer blocks, earliest deadline first, heterogeneity-unaware), ``planaria``
  (per layer the smallest idle accelerator that meets the deadline), the paper's three baselines as our docs
  read them;
- ``edf`` (earliest deadline first, fastest idle accelerator) and ``random-dispatch`` (a random ready frame on
  a random idle accelerator): extra references, not in the paper.

``DREAMParams-v0`` (params, one step per window):

- ``adaptivity``: DREAM's online adaptivity engine (§4.4): it proposes the next (alpha, beta) from the UXCost of
  the window just run (:class:`joulegym.envs.dream.scheduling.AdaptivityEngine`), restarting its search when the
  model list changes (privileged: it reads the active models from the simulator);
- ``fixed-params``: a fixed (alpha, beta), (1, 1) by default;
- ``grid-optimal``: the best fixed pair of a grid over [0, 2]^2 (``step``, 0.25 by default: 81 points; the
  docs' global optimum uses 0.1), each point a whole offline episode with the episode's own random numbers
  (privileged; an upper reference, not an online policy).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from joulegym.core.policy import PolicyNotApplicable, register_policy

DISPATCH_KIND = "DREAM"
PARAMS_KIND = "DREAMParams"
# The schedulers of joulegym.envs.dream.scheduling, under their registry names, with one line each.
SCHEDULERS = {
    "dream-full": "DREAM-Full: MapScore + parameter optimisation + smart frame drop + Supernet switching (Table 4)",
    "dream-smartdrop": "DREAM-SmartDrop: MapScore + parameter optimisation + smart frame drop (Table 4)",
    "dream-mapscore": "DREAM-MapScore: MapScore with parameter optimisation (Table 4)",
    "mapscore-fixed": "MapScore with alpha = beta = 1, no optimisation (Fig. 9 ablation baseline)",
    "fcfs": "dynamic FCFS: oldest request, whole model on the first idle accelerator (§5, Fig. 2)",
    "fcfs-static": "static FCFS: offline worst-case reservation of (start, accelerator) per job (Fig. 2)",
    "veltair": "Veltair: threshold layer blocks, earliest deadline first, heterogeneity-unaware (§5)",
    "planaria": "Planaria: per layer the smallest idle accelerator that meets the deadline, else the fastest (§5)",
    "edf": "earliest deadline first per layer on the fastest idle accelerator (not in the paper)",
    "random-dispatch": "a random ready frame's next layer on a random idle accelerator (not in the paper)",
}
SIM_NAME = {"random-dispatch": "random"}  # registry name -> scheduler name where they differ (generic "random")
GRID_STEP = 0.25  # grid-optimal's default grid: 81 points (the docs' 441-point 0.1 grid is its step=0.1)


def _base(env: Any, kind: str, who: str) -> Any:
    base = env.unwrapped
    if getattr(base, "family", None) != "dream" or getattr(base, "kind", None) != kind:
        raise PolicyNotApplicable(f"{who} drives joulegym/{kind} envs only, not {getattr(base, 'kind', base)!r}")
    return base


class SchedulerPolicy:
    """A scheduler of :mod:`joulegym.envs.dream.scheduling` driving ``DREAM-v0`` (privileged).

    :param name: the registry name (:data:`SCHEDULERS`).
    :param kwargs: the scheduler's own keyword arguments (e.g. ``alpha``, ``beta``, ``tuning``).
    """

    privileged = True

    def __init__(self, name: str, **kwargs: Any) -> None:
        from joulegym.envs.dream.scheduling import make_scheduler

        self.name = name
        self.scheduler = make_scheduler(SIM_NAME.get(name, name), **kwargs)
        self._env: Any = None

    def reset(self, env: Any, seed: int | None = None) -> None:
        base = _base(env, DISPATCH_KIND, self.name)
        self._env = base
        # the simulator's seed (drawn from the env's reset seed): a direct run_episode(sim, scheduler, seed) seeds
        # both with one number, so the two paths see the same random choices (random-dispatch)
        self.scheduler.reset(base.sim, seed=base.sim_seed)

    def act(self, obs: Any, info: dict[str, Any]) -> Any:
        base = self._env
        if base is None:
            raise RuntimeError(f"{self.name}.act() called before reset(env)")
        return base.action_type.encode(self.scheduler.decide(base.sim.view()))


def _scheduler_factory(name: str):
    def factory(**kwargs: Any) -> SchedulerPolicy:
        return SchedulerPolicy(name, **kwargs)

    factory.__name__ = f"make_{name.replace('-', '_')}"
    return factory


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
    the window's UXCost, DLV and drop rates and the active model list, and gives the (alpha, beta) of the next
    window (:meth:`joulegym.envs.dream.scheduling.AdaptivityEngine.step`; a search candidate while it searches,
    the locked pair after)."""

    privileged = True
    name = "adaptivity"

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.engine: Any = None
        self._env: Any = None

    def reset(self, env: Any, seed: int | None = None) -> None:
        from joulegym.envs.dream.scheduling import AdaptivityEngine

        base = self._env = _base(env, PARAMS_KIND, self.name)
        self.engine = AdaptivityEngine(seed=seed, **self.kwargs)
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
    """``(alpha, beta, UXCost)`` of every grid point: a whole episode of ``env``'s workload, hardware and
    simulator seed with the env's DREAM variant at fixed (alpha, beta) (the offline evaluation of §3.6)."""
    from joulegym.envs.dream.scheduling import make_scheduler, run_episode

    points = np.round(np.arange(0.0, 2.0 + 1e-9, step), 6)
    table = []
    for alpha in points:
        for beta in points:
            sim = env.make_sim(env.workload, env.hw)
            scheduler = make_scheduler(f"dream-{env.config['dream_variant']}", tuning="fixed",
                                       alpha=float(alpha), beta=float(beta))
            metrics = run_episode(sim, scheduler, env.sim_seed)
            table.append((float(alpha), float(beta), float(metrics["uxcost"])))
    return table


for _name, _description in SCHEDULERS.items():
    register_policy(_name, _scheduler_factory(_name), family="dream", description=_description,
                    kinds=(DISPATCH_KIND,))
register_policy("adaptivity", AdaptivityPolicy, family="dream", kinds=(PARAMS_KIND,),
                description="DREAM's online adaptivity engine proposing (alpha, beta) per window (§4.4)")
register_policy("fixed-params", FixedParams, family="dream", kinds=(PARAMS_KIND,),
                description="fixed (alpha, beta), (1, 1) by default (Fig. 9 ablation baseline)")
register_policy("grid-optimal", GridOptimal, family="dream", kinds=(PARAMS_KIND,),
                description="the best fixed (alpha, beta) of a grid, offline with the episode's seed (privileged)")
