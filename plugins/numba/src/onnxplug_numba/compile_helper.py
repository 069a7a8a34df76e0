"""The conv engine's parallel kernels compiled in a helper process while the session's process works.

The ``prange`` conv kernels take seconds each to compile, so a cold cache (a new install, a new
numba) makes the first run of a CNN wait for them one after the other. When a session's Conv
kernels are created, the kernels their weights call for are queued (``want``) to one helper
process (``python -m onnxplug_numba.compile_helper``), which compiles them into numba's on-disk
cache, likely ones first. Before a conv first calls a kernel (``ready``), the session's process
waits for the helper if it is compiling that kernel, or takes it over if the helper has not
started it; then numba loads it from the cache. Kernels already cached are never queued. Off with
the provider option ``compile_helper=0``, without a second CPU, or when numba cannot cache.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import Any, Callable, Sequence

#: The helper's kernels: name -> (module, attribute, argument kinds). Kinds: "aN" a C-contiguous
#: float32 array of N dimensions, "rN" the same read-only (weights and bias: ops/_conv.py passes
#: them as read-only views), "b" bool, "i" int64, "f" float64.
_EPILOGUE = ("r1", "aR", "b", "i", "f", "f")
KERNELS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "im2col_conv": ("native_parallel", "im2col_conv", ("a4", "r3") + _EPILOGUE + ("i",) * 8 + ("a4", "i")),
    "channel_split_conv": ("native_channels", "channel_split_conv", ("a4", "r3") + _EPILOGUE + ("i",) * 8 + ("a4", "i")),
    "tap_conv": ("native_parallel", "tap_conv", ("a4", "r3") + _EPILOGUE + ("i",) * 6 + ("a4", "i")),
    "pitched_conv": ("native_parallel", "pitched_conv", ("a4", "r3") + _EPILOGUE + ("i",) * 6 + ("a4", "i")),
    "depthwise_conv": ("native_parallel", "depthwise_conv", ("a4", "r4") + _EPILOGUE + ("i",) * 6 + ("a4", "i")),
    "pointwise_conv": ("native_parallel", "pointwise_conv", ("r2", "a3") + _EPILOGUE + ("a3", "i")),
    "pointwise_channel_split": ("native_channels", "pointwise_channel_split", ("r2", "a3") + _EPILOGUE + ("a3", "i")),
}
#: The residual argument has the output's rank.
_RESIDUAL_RANK = {"pointwise_conv": 3, "pointwise_channel_split": 3}


def dispatcher(name: str) -> Any:
    module, attribute, _ = KERNELS[name]
    import importlib

    return getattr(importlib.import_module(f"onnxplug_numba.kernels.{module}"), attribute)


def signature(name: str) -> tuple[Any, ...]:
    """The numba argument types the conv engine calls kernel ``name`` with."""
    from numba import types

    kinds = KERNELS[name][2]
    rank = _RESIDUAL_RANK.get(name, 4)
    table = {"b": types.boolean, "i": types.int64, "f": types.float64}
    return tuple(types.Array(types.float32, rank if k == "aR" else int(k[1]), "C", readonly=k[0] == "r")
                 if k[0] in "ar" else table[k] for k in kinds)


def cached(name: str) -> bool:
    """Whether numba's cache holds kernel ``name`` at its signature (True when it cannot tell, so
    nothing is queued that might not be needed)."""
    try:
        disp = dispatcher(name)
        if disp._cache.__class__.__name__ == "NullCache":
            return True  # numba cannot cache it: a helper's work could not be shared
        sig = signature(name)
        return any(key[0] == sig for key in disp._cache._cache_file._load_index())
    except Exception:  # noqa: BLE001  (numba internals moved: behave as without a helper)
        return True


class _Helper:
    """One helper process and what it reported: per kernel "start", "done" or "fail"."""

    def __init__(self) -> None:
        self.state: dict[str, str] = {}
        self.changed = threading.Condition()
        self.process = subprocess.Popen([sys.executable, "-m", "onnxplug_numba.compile_helper"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True, bufsize=1)
        threading.Thread(target=self._read, name="onnxplug-numba-compile-helper", daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            word, _, name = line.strip().partition(" ")
            with self.changed:
                self.state[name] = word
                self.changed.notify_all()
        with self.changed:
            self.state = {n: ("done" if s == "done" else "fail") for n, s in self.state.items()}
            self.process.wait()
            self.changed.notify_all()

    def send(self, line: str) -> bool:
        try:
            assert self.process.stdin is not None
            self.process.stdin.write(line + "\n")
            return True
        except (OSError, ValueError):
            return False

    @property
    def alive(self) -> bool:
        return self.process.poll() is None


_lock = threading.Lock()
_helper: _Helper | None = None
_queued: set[str] = set()
_cached: set[str] = set()


def enabled() -> bool:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    from numba.core import config

    return cpus > 1 and not config.DISABLE_JIT


def want(likely: Sequence[str], maybe: Sequence[str] = ()) -> None:
    """Queue these kernels (``likely`` ones ahead of ``maybe`` ones) unless numba has them cached."""
    global _helper
    with _lock:
        names = [(n, p) for p, group in (("likely", likely), ("maybe", maybe)) for n in group
                 if n not in _queued]
        names = [(n, p) for n, p in names if n not in _cached and not cached(n)]
        _cached.update(n for group in (likely, maybe) for n in group if n not in dict(names))
        if not names:
            return
        if _helper is None or not _helper.alive:
            _helper = _Helper()
        for name, priority in names:
            if _helper.send(f"{priority} {name}"):
                _queued.add(name)


def ready(kernel: Callable[..., Any]) -> None:
    """Before the first call of ``kernel`` in a process: wait while the helper compiles it, or
    tell the helper to leave it (this process compiles it on the call)."""
    name = getattr(getattr(kernel, "py_func", None), "__name__", None)
    helper = _helper
    if helper is None or name not in _queued:
        return
    with helper.changed:
        if helper.state.get(name) is None and helper.alive:
            helper.send(f"take {name}")
            helper.state.setdefault(name, "taken")
        while helper.state.get(name) == "start" and helper.alive:
            helper.changed.wait(1.0)
    with _lock:
        _queued.discard(name)


def _serve() -> None:
    """The helper: read "likely|maybe|take NAME" lines; compile queued kernels, likely ones first,
    reporting "start NAME" and "done NAME" (or "fail NAME"); exit once stdin closes or stays idle."""
    import queue

    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for line in sys.stdin:
            lines.put(line.strip())
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    pending: dict[str, list[str]] = {"likely": [], "maybe": []}
    taken: set[str] = set()
    while True:
        try:
            while True:  # everything already sent, without blocking
                line = lines.get_nowait() if pending["likely"] or pending["maybe"] \
                    else lines.get(timeout=IDLE_EXIT_S)
                if line is None:  # the session's process is gone
                    return
                word, _, name = line.partition(" ")
                if word == "take":
                    taken.add(name)
                elif word in pending and name in KERNELS:
                    pending[word].append(name)
        except queue.Empty:
            pass
        queue_ = pending["likely"] or pending["maybe"]
        if not queue_:
            return
        name = queue_.pop(0)
        if name in taken:
            continue
        print(f"start {name}", flush=True)
        try:
            dispatcher(name).compile(signature(name))
            word = "done" if cached(name) else "fail"
        except Exception:  # noqa: BLE001  (the session's process compiles it itself)
            word = "fail"
        print(f"{word} {name}", flush=True)


#: Seconds the helper waits for more kernels before it exits.
IDLE_EXIT_S = 5.0


if __name__ == "__main__":
    _serve()
