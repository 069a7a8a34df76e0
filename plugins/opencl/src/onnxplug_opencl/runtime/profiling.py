"""Device time per kernel launch, from OpenCL profiling events (``ONNXPLUG_OPENCL_PROFILE=1``).

The executor's profiler times each step on the host, but launches are asynchronous: the wait lands
in whichever step reads a result back. With profiling on, every :meth:`ClRuntime.launch` keeps its
event and a label, and :func:`collect` turns them into device start-to-end times.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from onnxplug_opencl.runtime.context import ClRuntime


@dataclass(frozen=True)
class LaunchTime:
    """One kernel launch: its label, device time (ms) and the gap since the previous launch ended (ms)."""

    label: str
    device_ms: float
    idle_ms: float


def reset(runtime: ClRuntime) -> None:
    """Forget the launches recorded so far."""
    runtime.queue.finish()
    runtime.launches.clear()


def collect(runtime: ClRuntime) -> list[LaunchTime]:
    """The launches recorded since :func:`reset`, in order (waits for the queue); then forgets them."""
    if not runtime.profiling:
        raise RuntimeError("kernel profiles need ONNXPLUG_OPENCL_PROFILE=1 before the runtime is created")
    runtime.queue.finish()
    out, previous_end = [], None
    for label, event in runtime.launches:
        start, end = event.profile.start, event.profile.end
        idle = 0.0 if previous_end is None else max(0.0, (start - previous_end) * 1e-6)
        out.append(LaunchTime(label, (end - start) * 1e-6, idle))
        previous_end = end
    runtime.launches.clear()
    return out


def summarize(launches: list[LaunchTime], runs: int = 1) -> list[tuple[str, int, float]]:
    """(label, launches per run, device ms per run), the most expensive first."""
    total: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for item in launches:
        total[item.label] += item.device_ms
        count[item.label] += 1
    rows = [(label, count[label] // max(1, runs), total[label] / max(1, runs)) for label in total]
    return sorted(rows, key=lambda row: -row[2])


__all__ = ["LaunchTime", "collect", "reset", "summarize"]
