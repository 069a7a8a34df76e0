"""Cancelling a run from another thread: ``RunOptions.terminate = True``, as onnxruntime.

``InferenceSession.run`` and IOBinding runs publish their ``RunOptions`` in a context variable for
the run's thread (:func:`cancellable`); a run checks ``terminate`` before it starts, at every Loop
iteration and at every call of a subgraph (Scan body, If branch), and stops with
``RunTerminatedError``. A single kernel call is not interrupted.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

from onnxplug.errors import RunTerminatedError

#: the RunOptions of the run in progress on this thread (None: not cancellable)
current_run_options: ContextVar[Any] = ContextVar("onnxplug_run_options", default=None)


def check_terminate(where: str = "") -> None:
    """Raise ``RunTerminatedError`` when the current run's options ask to terminate."""
    options = current_run_options.get()
    if options is not None and options.terminate:
        raise RunTerminatedError(f"run terminated: RunOptions.terminate was set{where}")


@contextmanager
def cancellable(run_options: Any) -> Iterator[None]:
    """The run inside the block can be terminated through ``run_options`` (None: it cannot);
    raises ``RunTerminatedError`` at once when ``terminate`` is already set."""
    token = current_run_options.set(run_options)
    try:
        check_terminate()
        yield
    finally:
        current_run_options.reset(token)
