"""The host memory arena behind ``SessionOptions.enable_cpu_mem_arena``.

numpy takes every array from the C heap. glibc serves blocks above its mmap threshold (128 KiB to
32 MiB, adaptive) with fresh ``mmap`` calls and unmaps them when freed, so each large intermediate
of every run costs one page fault per 4 KiB page while the kernel zeroes it. onnxruntime avoids
this with its CPU memory arena; the equivalent for numpy is to have glibc keep large freed blocks
in the heap for the next run. This is process-wide (glibc has one policy per process): once a
session turns it on, the rest of the process's numpy code also keeps its freed memory, and the
process holds on to its peak heap size, as with onnxruntime's arena. A session with the arena off
gives free heap memory back after each run instead. Other C libraries (musl, macOS) are left alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading

# glibc's mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: Blocks up to this size come from the heap instead of their own mapping.
ARENA_MMAP_THRESHOLD = 1 << 30
#: Free memory at the top of the heap kept for reuse instead of returned to the system.
ARENA_TRIM_THRESHOLD = 1 << 30

_lock = threading.Lock()
_arena_on = False


def _glibc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    if libc is None or not hasattr(libc, "mallopt") or not hasattr(libc, "malloc_trim"):
        return None
    return libc


_LIBC = _glibc()


def arena_supported() -> bool:
    """Whether this process's C library lets the arena be turned on (glibc)."""
    return _LIBC is not None


def enable_arena() -> bool:
    """Keep large freed blocks in the heap for reuse, from now on in this process; False when the C
    library does not allow it."""
    global _arena_on
    if _LIBC is None:
        return False
    with _lock:
        if not _arena_on:
            ok = _LIBC.mallopt(_M_MMAP_THRESHOLD, ARENA_MMAP_THRESHOLD)
            ok &= _LIBC.mallopt(_M_TRIM_THRESHOLD, ARENA_TRIM_THRESHOLD)
            _arena_on = bool(ok)
        return _arena_on


def release_free_memory() -> None:
    """Give the heap's free memory back to the operating system (the arena off)."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
