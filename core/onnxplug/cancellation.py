"""Cancelling a run from another thread: ``RunOptions.terminate = True``, as onnxruntime.

``InferenceSession.run`` publishes its ``RunOptions`` in a context variable for the run's thread;
a run checks ``terminate`` before it starts and at every Loop iteration (a body of one or more
steps), and stops with ``RunTerminatedError``. A single kernel call is not interrupted.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from onnxplug.errors import RunTerminatedError

#: the RunOptions of the run in progress on this thread (None: not cancellable)
current_run_options: ContextVar[Any] = ContextVar("onnxplug_run_options", default=None)


def check_terminate(where: str = "") -> None:
    """Raise ``RunTerminatedError`` when the current run's options ask to terminate."""
    options = current_run_options.get()
    if options is not None and options.terminate:
        raise RunTerminatedError(f"run terminated: RunOptions.terminate was set{where}")
