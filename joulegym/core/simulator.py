"""The simulator protocol: what every family's simulator offers, with no Gymnasium in it.

A simulator is a plain Python/numpy state machine. The env template drives it; reference policies
read its :meth:`~Simulator.view`; :func:`~joulegym.core.rollout.rollout` and standalone helpers (e.g.
PowerFlow's ``simulate``) go through the env, so there is one code path.

==================  ==========================================================================
``reset(...)``      start an episode (the family says what it takes: apps, users, a trace,
                    a random generator)
``apply(decision)`` set the decision for the coming interval (typed, already validated)
``advance()``       run to the next decision point; ``True`` if the episode goes on
``view()``          a read-only view of the state a scheduler decides on
``metrics()``       the paper's metrics so far (running accumulators, no recomputation over
                    the history)
``done``            every piece of work is finished (``terminated``)
``truncated``       a time limit was reached
==================  ==========================================================================
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Simulator(Protocol):
    """Structural type of a family simulator (``isinstance`` checks the methods exist)."""

    def reset(self, *args: Any, **kwargs: Any) -> Any: ...

    def apply(self, decision: Any) -> Any: ...

    def advance(self) -> bool: ...

    def view(self) -> Any: ...

    def metrics(self) -> dict[str, Any]: ...

    @property
    def done(self) -> bool: ...

    @property
    def truncated(self) -> bool: ...
