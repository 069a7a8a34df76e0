"""Keep the numpy provider's helper threads off the CPU of the thread that hands them work.

A product or a set of work units shared with helper threads gains only if the helpers run on other
CPUs than the caller. Linux normally spreads them, but after an idle spell a virtual machine's
scheduler often wakes the helper on the caller's CPU (docs/benchmarks.md), so the first runs after
a pause run on one CPU. So before each hand-off the provider asks which CPU the calling thread is
on (``sched_getcpu``, a cheap call) and, when that changed since the last hand-off,
restricts its helpers to the process's other CPUs. The calling thread itself is never pinned.

Linux (glibc) only; elsewhere, or with ``ONNXPLUG_NUMPY_PLACE_HELPERS=0``, nothing is pinned.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Callable

#: Restricts one helper to a set of CPUs.
Pin = Callable[[frozenset[int]], None]


def _sched_getcpu() -> Callable[[], int] | None:
    if not hasattr(os, "sched_setaffinity") or os.environ.get("ONNXPLUG_NUMPY_PLACE_HELPERS", "1") == "0":
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).sched_getcpu
    except (OSError, AttributeError):
        return None
    fn.argtypes = []
    fn.restype = ctypes.c_int
    return fn


class HelperPlacement:
    """The helpers to keep off the caller's CPU, and the CPU they were last kept off."""

    def __init__(self) -> None:
        self._getcpu = _sched_getcpu()
        self._pins: dict[object, Pin] = {}
        self._kept_off: int | None = None
        self._lock = threading.Lock()

    @property
    def kept_off(self) -> int | None:
        """The CPU the caller was on at the last hand-off that placed the helpers."""
        return self._kept_off

    @property
    def enabled(self) -> bool:
        """Whether helpers are placed at all (Linux with glibc, not turned off)."""
        return self._getcpu is not None

    def register(self, key: object, pin: Pin) -> None:
        """Place helper ``key`` with ``pin`` from the next hand-off on."""
        with self._lock:
            self._pins[key] = pin
            self._kept_off = None

    def unregister(self, key: object) -> None:
        """Stop placing helper ``key`` (no error if it was not registered)."""
        with self._lock:
            self._pins.pop(key, None)

    def before_handoff(self) -> None:
        """Keep every registered helper off the calling thread's CPU (a system call only when the
        caller moved since the last hand-off)."""
        getcpu = self._getcpu
        if getcpu is None:
            return
        cpu = getcpu()
        if cpu == self._kept_off or cpu < 0:
            return
        with self._lock:
            allowed = os.sched_getaffinity(0)
            others = frozenset(allowed - {cpu})
            if not others:  # one CPU: nowhere else to go
                others = frozenset(allowed)
            for pin in self._pins.values():
                try:
                    pin(others)
                except OSError:  # a helper that exited, or CPUs the process may not use
                    pass
            self._kept_off = cpu


PLACEMENT = HelperPlacement()


def pin_thread(native_id: int) -> Pin:
    """A Pin for a Python thread, by its native id."""
    return lambda cpus: os.sched_setaffinity(native_id, cpus)


def cpu_mask(cpus: frozenset[int]) -> ctypes.Array:
    """``cpus`` as a glibc ``cpu_set_t`` (1024 bits)."""
    words = (ctypes.c_ulong * 16)()
    bits = 8 * ctypes.sizeof(ctypes.c_ulong)
    for cpu in cpus:
        if cpu < 16 * bits:
            words[cpu // bits] |= 1 << (cpu % bits)
    return words
