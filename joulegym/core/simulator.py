"""The simulator contract: what every family's simulator offers, with no Gymnasium in it.

A simulator is a plain Python/numpy state machine and a subclass of :class:`Simulator`. The env template
drives it; inner policies (:mod:`joulegym.core.inner`) and privileged reference policies read its
:meth:`~Simulator.view`; :func:`joulegym.core.rollout.rollout` drives it through the env, and
:func:`joulegym.core.inner.run_inner` drives it directly with an inner policy (the same metrics, a test per
family proves it).

==========================  ======================================================================
``reset(rng, instance)``    start an episode: ``rng`` is the episode's random generator (drawn from
                            the env's ``np_random``), ``instance`` the problem instance the env drew
                            (apps, users, jobs, a trace; ``None`` where the simulator draws it from
                            ``rng`` itself)
``apply(decision)``         set the decision for the coming interval (typed, already validated);
                            observers are told after it is applied
``advance()``               run to the next decision point; ``True`` if the episode goes on
``view()``                  a read-only view of the state a scheduler decides on (never the
                            simulator itself)
``metrics()``               the paper's metrics so far (running accumulators, no recomputation over
                            the history)
``done``                    every piece of work is finished (``terminated``)
``truncated``               a time limit was reached
``add_observer(fn)``        ``fn(sim, decision)`` is called after every ``apply``: tests and benchmarks
                            watch decisions through it instead of patching ``apply``
==========================  ======================================================================

A family implements ``_apply(decision)``; :meth:`Simulator.apply` calls it and then the observers (an
empty observer list costs one attribute test per decision).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

Observer = Callable[[Any, Any], None]


class Simulator(ABC):
    """Base class of every family simulator (module docstring)."""

    _observers: tuple[Observer, ...] = ()

    @abstractmethod
    def reset(self, rng: np.random.Generator, instance: Any = None) -> Any:
        """Start an episode from ``rng`` on ``instance`` (``None``: the simulator draws it from ``rng``)."""

    def apply(self, decision: Any) -> Any:
        """Apply ``decision`` (typed, validated), then tell the observers."""
        result = self._apply(decision)
        if self._observers:
            for observer in self._observers:
                observer(self, decision)
        return result

    @abstractmethod
    def _apply(self, decision: Any) -> Any:
        """The family's transition of a decision (what :meth:`apply` runs)."""

    @abstractmethod
    def advance(self) -> bool:
        """Run to the next decision point; ``True`` while the episode goes on."""

    @abstractmethod
    def view(self) -> Any:
        """A read-only view of the state a scheduler decides on."""

    @abstractmethod
    def metrics(self) -> dict[str, Any]:
        """The paper's metrics of the episode so far."""

    @property
    @abstractmethod
    def done(self) -> bool:
        """Every piece of work is finished."""

    @property
    @abstractmethod
    def truncated(self) -> bool:
        """A time limit was reached."""

    def add_observer(self, observer: Observer) -> None:
        """Call ``observer(sim, decision)`` after every :meth:`apply` (until :meth:`remove_observer`)."""
        if not callable(observer):
            raise ValueError(f"observer must be callable, got {observer!r}")
        self._observers = (*self._observers, observer)

    def remove_observer(self, observer: Observer) -> None:
        if observer not in self._observers:
            raise ValueError(f"observer {observer!r} is not registered on this simulator")
        self._observers = tuple(o for o in self._observers if o is not observer)
