"""A session's profile as onnxruntime writes it (``enable_profiling``, ``end_profiling``): a JSON
list of Chrome trace events (``"ph": "X"``, microseconds since the session started).

``Session`` events: ``model_loading_uri`` or ``model_loading_array``, ``session_initialization``,
one ``model_run`` per run, and onnxplug's ``kernel_compilation`` per fused subgraph a provider
compiled. ``Node`` events, one per step run, named ``<node>_kernel_time``, with onnxruntime's args
(``op_name``, ``provider``, ``input_type_shape``, ``output_type_shape``, ``activation_size``,
``parameter_size``, ``output_size``); copies between devices are ``MemcpyFromHost`` or
``MemcpyToHost`` nodes as in onnxruntime. A step of an If/Loop/Scan body runs within its parent's
event on the same thread, so trace viewers nest it there, and its args also name the ``parent``.
Recording is thread-safe; ``end`` hands the events collected so far to a file.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

from onnxplug.executor import RunStats, StepKind


class Profile:
    """The events of one session's profiled runs, from its creation."""

    def __init__(self) -> None:
        self.start_ns = time.time_ns()
        self._origin = time.perf_counter()
        self._lock = threading.Lock()
        self._events: list[dict[str, Any]] = []

    def _event(self, cat: str, name: str, t0: float, duration: float, args: dict[str, Any]) -> dict[str, Any]:
        return {"cat": cat, "pid": os.getpid(), "tid": threading.get_ident(), "dur": round(duration * 1e6, 3),
                "ts": round((t0 - self._origin) * 1e6, 3), "ph": "X", "name": name, "args": args}

    def session_event(self, name: str, t0: float, t1: float, **args: Any) -> None:
        """A ``Session`` event from ``t0`` to ``t1`` (``time.perf_counter()``)."""
        event = self._event("Session", name, t0, t1 - t0, {k: str(v) for k, v in args.items()})
        with self._lock:
            self._events.append(event)

    def record(self, stats: RunStats) -> None:
        """Add one run's step timings."""
        events = []
        for e in stats.events:
            copy = e.kind == StepKind.COPY
            op_name = ("MemcpyToHost" if "->cpu" in e.name else "MemcpyFromHost") if copy else e.op_type
            args: dict[str, Any] = {
                "op_name": op_name, "provider": e.provider, "input_type_shape": e.input_type_shape,
                "output_type_shape": e.output_type_shape, "activation_size": str(e.activation_size),
                "parameter_size": str(e.parameter_size), "output_size": str(e.output_size), "kind": e.kind}
            if e.parent:
                args["parent"] = e.parent
            events.append(self._event("Node", f"{e.name}_kernel_time", e.start, e.duration, args))
        with self._lock:
            self._events.extend(events)

    def end(self, prefix: str) -> str:
        """Write the events recorded so far to ``<prefix>_<time>_<pid>.json``, forget them, return the path."""
        stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
        path = f"{prefix}_{stamp}_{os.getpid()}.json"
        with self._lock:
            events, self._events = self._events, []
        events.sort(key=lambda e: e["ts"])
        with open(path, "w", encoding="utf-8") as f:
            json.dump(events, f)
        return path

