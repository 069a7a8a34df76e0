"""Thread control: ``intra_op_num_threads`` threads per kernel call, from one shared pool."""

from __future__ import annotations

import ctypes
import glob
import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator

import numpy as np

#: Elementwise work below this many elements per chunk stays on the calling thread: a chunk handed
#: to another thread must outweigh its wake-up (tens of microseconds on a halting virtual CPU).
PARALLEL_MIN_ELEMENTS = 262144
#: Chunks per thread a parallel call is cut into (at most; each chunk keeps its grain).
CHUNKS_PER_THREAD = 4

_blas_lock = threading.Lock()


def max_threads() -> int:
    """The default thread count: the CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def resolve_threads(requested: int) -> int:
    """The thread count for a session option: 0 means one per available CPU."""
    return max_threads() if requested <= 0 else max(1, int(requested))


def numpy_openblas() -> Iterator[tuple[str, ctypes.CDLL]]:
    """(path, library) of each OpenBLAS bundled with the numpy wheel that loads."""
    libs_dir = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in sorted(glob.glob(os.path.join(libs_dir, "*openblas*"))):
        try:
            yield path, ctypes.CDLL(path)
        except OSError:
            continue


def _find_openblas() -> tuple[object, object] | None:
    """numpy's bundled OpenBLAS ``set_num_threads``/``get_num_threads``, when found."""
    for _, lib in numpy_openblas():
        for setter, getter in (("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
                               ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
                               ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
                               ("openblas_set_num_threads", "openblas_get_num_threads")):
            if hasattr(lib, setter) and hasattr(lib, getter):
                set_fn, get_fn = getattr(lib, setter), getattr(lib, getter)
                set_fn.argtypes, set_fn.restype = [ctypes.c_int], None
                get_fn.argtypes, get_fn.restype = [], ctypes.c_int
                return set_fn, get_fn
    return None


_OPENBLAS = _find_openblas()


def blas_threads() -> int | None:
    """OpenBLAS's current thread count, or None when numpy's BLAS is not a reachable OpenBLAS."""
    return None if _OPENBLAS is None else int(_OPENBLAS[1]())  # type: ignore[operator]


class ThreadControl:
    """Runs a kernel's work on ``count`` threads: the calling thread plus a shared pool.

    Compiled kernels release the GIL (``nogil=True``) and are called on slices of the work, and
    OpenBLAS runs one thread per call, so no library's own threads compete with the pool's.
    (Float32 convs share their work in numba prange regions instead: kernels/native_parallel.py.)
    """

    def __init__(self, requested: int) -> None:
        self.count = resolve_threads(requested)

    @property
    def parallel(self) -> bool:
        """Whether work is split at all."""
        return self.count > 1

    def run(self, work: Callable[[int, int], None], total: int, grain: int = 1, spread: bool = False) -> None:
        """Call ``work(lo, hi)`` over ``range(total)`` on up to ``count`` threads (the calling
        thread is one of them). Exceptions propagate.

        The range is cut into up to :data:`CHUNKS_PER_THREAD` chunks per thread, each of at least
        ``grain`` items, and every thread takes the next chunk nobody has taken: on a machine
        shared with other work a thread that gets less CPU then does less of the work, instead
        of the others waiting for its fixed half.

        ``spread`` keeps the pool threads off the CPU the caller is on while they work, for chunks
        of a millisecond or more: a pool thread woken after a pause is often placed on the caller's
        CPU and the two then take turns.
        Short chunks lose more to the moves than they gain."""
        per_grain = total // max(grain, 1)
        parts = max(1, min(self.count, per_grain))
        if parts == 1:
            if total > 0:
                work(0, total)
            return
        chunks = max(parts, min(parts * CHUNKS_PER_THREAD, per_grain))
        bounds = [total * i // chunks for i in range(chunks + 1)]
        taken = itertools.count()  # next() on it is atomic under the GIL

        def drain() -> None:
            for i in iter(taken.__next__, chunks):
                if i >= chunks:
                    return
                work(bounds[i], bounds[i + 1])

        pool = _pool(self.count)
        helper = _off_this_cpu(drain) if spread else drain
        futures = [pool.submit(helper) for _ in range(parts - 1)]
        try:
            drain()
        finally:
            # a helper that has not started yet (its core busy elsewhere) would only find every
            # chunk taken: cancel it rather than wait for it to be scheduled
            for f in futures:
                if not f.cancel():
                    f.result()

    def blas(self) -> None:
        """One OpenBLAS thread per call: callers split matrix products across this pool instead.

        The setting is process-wide and others change it too (the numpy provider sizes the BLAS
        pool per call), so the current value is read each time rather than remembered."""
        if _OPENBLAS is None or _OPENBLAS[1]() == 1:  # type: ignore[operator]
            return
        with _blas_lock:
            _OPENBLAS[0](1)  # type: ignore[operator]


def _find_sched_getcpu() -> Callable[[], int] | None:
    """glibc's ``sched_getcpu`` (the CPU the calling thread runs on), when there is one."""
    try:
        getcpu = ctypes.CDLL(None).sched_getcpu
    except (AttributeError, OSError):  # pragma: no cover - not glibc
        return None
    getcpu.argtypes, getcpu.restype = [], ctypes.c_int
    return getcpu


_SCHED_GETCPU = _find_sched_getcpu()


def _off_this_cpu(task: Callable[[], None]) -> Callable[[], None]:
    """``task`` to run on a pool thread kept off the calling thread's current CPU (its own CPU
    set restored afterwards); ``task`` itself where CPUs cannot be chosen."""
    if _SCHED_GETCPU is None or not hasattr(os, "sched_setaffinity"):
        return task
    here = _SCHED_GETCPU()

    def pinned() -> None:
        own = os.sched_getaffinity(0)
        others = own - {here}
        if not others or others == own:
            task()
            return
        os.sched_setaffinity(0, others)
        try:
            task()
        finally:
            os.sched_setaffinity(0, own)

    return pinned


_pools: dict[int, ThreadPoolExecutor] = {}


def _pool(count: int) -> ThreadPoolExecutor:
    pool = _pools.get(count)
    if pool is None:
        with _blas_lock:
            pool = _pools.get(count)
            if pool is None:
                pool = _pools[count] = ThreadPoolExecutor(count - 1, thread_name_prefix="onnxplug-numba")
    return pool
