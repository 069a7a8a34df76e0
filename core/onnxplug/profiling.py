"""A session's profile: the step timings of its profiled runs as Chrome trace events, as onnxruntime
writes them (``enable_profiling``, ``end_profiling``).

Runs report :class:`~onnxplug.executor.RunStats`; steps of If/Loop/Scan bodies carry their parent
step in ``args.parent``. Recording is thread-safe; ``end`` hands the events collected so far to a file.
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

    def record(self, stats: RunStats) -> None:
        """Add one run's step timings."""
        pid, tid = os.getpid(), threading.get_ident()
        events = []
        for name, kind, op_type, provider, t0, duration, parent in stats.events:
            args = {"op_name": op_type, "provider": provider, "kind": kind}
            if parent:
                args["parent"] = parent
            events.append({"cat": "Copy" if kind == StepKind.COPY else "Node", "name": name, "ph": "X",
                           "pid": pid, "tid": tid, "ts": (t0 - self._origin) * 1e6, "dur": duration * 1e6,
                           "args": args})
        with self._lock:
            self._events.extend(events)

    def end(self, prefix: str) -> str:
        """Write the events recorded so far to ``<prefix>_<time>_<pid>.json``, forget them, return the path."""
        stamp = time.strftime("%Y-%m-%d_%H-%M-%S")
        path = f"{prefix}_{stamp}_{os.getpid()}.json"
        with self._lock:
            events, self._events = self._events, []
        with open(path, "w", encoding="utf-8") as f:
            json.dump(events, f)
        return path
