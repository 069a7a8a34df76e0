"""Matrix products of the numpy provider: single-threaded BLAS, split across our own threads, and
a private threaded BLAS for large single products.

numpy's OpenBLAS keeps one process-wide pool whose sleeping workers cost more to wake than a small
product gains, whose results depend on its size, and whose size is ignored when set from another
thread than the main one. So the provider pins that pool to one thread; work units shared over the
provider's own threads (``parallel_for``) call it. A large product alone on the calling thread
(``matmul``) goes to a second OpenBLAS with ``intra_op_num_threads`` threads (``threaded_blas``);
without it, a product of at least ``split_product_macs`` multiply-adds is cut into column (or row)
blocks. A product's cut depends only on its shapes and the thread count, so results match whichever
thread runs it and concurrent runs match serial ones bit for bit. The thresholds are provider options
(``runtime.tuning``), held process-wide by ``PRODUCT_THREADS``.
"""

from __future__ import annotations

import itertools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np
import threadpoolctl

from onnxplug.providers.numpy.runtime.placement import PLACEMENT, pin_thread
from onnxplug.providers.numpy.runtime.threaded_blas import ThreadedBlas, is_threaded_blas_file, threaded_blas
from onnxplug.providers.numpy.runtime.tuning import DEFAULT_TUNING, PRODUCT_OPTIONS, NumpyTuning

#: Single products go to the threaded BLAS from ``threaded_product_macs`` multiply-adds (below,
#: numpy's one-thread call costs less than the hand-off); products from ``split_product_macs`` are
#: cut into blocks on the product threads without it.
#: The threaded-BLAS threshold for a product that runs between long single-threaded stretches, such as a recurrent
#: layer's input projection: the threaded BLAS's workers have gone to sleep by then, and waking them
#: costs more than a mid-sized product gains.
ISOLATED_THREADED_MACS = 32_000_000
#: The same for a matrix-vector product (one row or one column, such as a classifier at batch 1),
#: which the threaded BLAS runs as a gemv: memory-bound, so two threads pay once the matrix is about
#: a core's L2 (2 MB) (``threaded_gemv_macs``).
#: Two operands under this many elements make fewer than split_product_macs multiply-adds
#: (m*k*n <= a.size * b.size), so the product runs at once without looking at its shape.
_SMALL = 4096
#: Blocks of a split product per thread, shared out as threads become free (see ``_share``). More
#: blocks each pack the shared operand again.
BLOCKS_PER_THREAD = 1
#: Narrowest block a split may produce (columns or rows): BLAS kernels work in panels of 8-16.
_MIN_BLOCK = 16
#: Byte alignment of the recurrent kernels' kept weights: a cache line, as wide as an AVX-512
#: vector. OpenBLAS's gemv and small-matrix kernels read the matrix in place, where malloc's 16-byte
#: alignment slows them.
ALIGNMENT = 64


def aligned_empty(shape: int | tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An uninitialized C-contiguous array starting on an ``ALIGNMENT``-byte boundary."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    buf = np.empty(count * dtype.itemsize + ALIGNMENT, dtype=np.uint8)
    start = -buf.ctypes.data % ALIGNMENT
    return buf[start:start + count * dtype.itemsize].view(dtype).reshape(shape)


def aligned(a: np.ndarray) -> np.ndarray:
    """``a`` itself when it is C-contiguous and starts on an ``ALIGNMENT``-byte boundary, else such
    a copy (for weights a kernel keeps; object arrays are only made contiguous)."""
    if a.flags.c_contiguous and a.ctypes.data % ALIGNMENT == 0 or a.dtype.hasobject:
        return np.ascontiguousarray(a)
    out = aligned_empty(a.shape, a.dtype)
    np.copyto(out, a)
    return out


def default_threads() -> int:
    """One thread per core this process may run on, as onnxruntime's default."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


class _ProductThreads:
    """The thread count and size thresholds for large products, and the workers that run their blocks."""

    def __init__(self) -> None:
        self.threads = default_threads()
        self.tune(DEFAULT_TUNING)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_size = 0
        self._lock = threading.Lock()

    def tune(self, tuning: NumpyTuning) -> None:
        """Take all the product thresholds of ``tuning`` (``PRODUCT_OPTIONS``)."""
        for name in PRODUCT_OPTIONS:
            setattr(self, name, getattr(tuning, name))

    def configure(self, threads: int, **thresholds: int) -> None:
        """Pin numpy's BLAS to one thread, and run large products on ``threads`` threads (0 keeps
        the count: one per core unless a session asked for another), the threaded BLAS's too; the
        ``thresholds`` given (``PRODUCT_OPTIONS``) replace the current ones, the others stay."""
        for name, value in thresholds.items():
            if name not in PRODUCT_OPTIONS:
                raise TypeError(f"not a product threshold: {name!r}")
            setattr(self, name, value)
        threaded = threaded_blas()
        controller = threadpoolctl.ThreadpoolController()  # costly: once per session
        for lib in controller.lib_controllers:  # numpy's BLAS (and any other), not the threaded one
            if lib.user_api == "blas" and not is_threaded_blas_file(lib.filepath):
                lib.set_num_threads(1)
        if threads > 0:
            self.threads = threads
        if threaded is not None:
            threaded.set_threads(self.threads)

    def pool(self) -> ThreadPoolExecutor:
        """Workers for all but the first block (created on first use, grown when asked for more)."""
        with self._lock:
            if self._pool is None or self._pool_size < self.threads - 1:
                self._pool_size = max(self.threads - 1, 1)
                self._pool = ThreadPoolExecutor(self._pool_size, thread_name_prefix="onnxplug-blas",
                                                initializer=_placed_worker)
            return self._pool


PRODUCT_THREADS = _ProductThreads()


def _placed_worker() -> None:
    """Runs first on every product thread: it is kept off the caller's CPU (see ``placement``)."""
    native = threading.get_native_id()
    PLACEMENT.register(("product thread", native), pin_thread(native))


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None,
           threaded_macs: int | None = None) -> np.ndarray:
    """``np.matmul`` (1-D and batched operands as numpy), parallel over blocks when large.
    ``threaded_macs`` replaces the threaded_product_macs option for a caller that knows its products come in
    runs (lower) or alone (ISOLATED_THREADED_MACS)."""
    products = PRODUCT_THREADS
    parts = products.threads
    threshold = products.threaded_product_macs if threaded_macs is None else threaded_macs
    if a.ndim == 2 and b.ndim == 2:  # the common case first: small products pay least here
        m, k = a.shape
        n = b.shape[1]
        if threaded_macs is None and (m == 1 or n == 1):
            threshold = products.threaded_gemv_macs
        if parts > 1 and m * k * n >= threshold:
            threaded = _threaded(parts)
            if threaded is not None:
                done = threaded.gemm(a, b, out)
                if done is not None:
                    return done
        if parts < 2 or m * k * n < products.split_product_macs:
            # ndarray.dot makes the same BLAS call for matrices, with less dispatch than the ufunc
            return a.dot(b) if out is None else np.matmul(a, b, out=out)
    elif (b.ndim == 2 and a.ndim > 2 and a.size and a.shape[-1] == b.shape[0] and a.flags.c_contiguous
          and (out is None or out.flags.c_contiguous)):
        # one product over all of a's rows: numpy would make one BLAS call per leading index, a
        # gemv each for a recurrent output such as (32, 1, 128) @ (128, 128)
        n = b.shape[1]
        rows = a.reshape(-1, a.shape[-1])
        if out is None:
            return matmul(rows, b, threaded_macs=threshold).reshape(a.shape[:-1] + (n,))
        matmul(rows, b, out.reshape(-1, n), threshold)
        return out
    elif parts < 2 or a.ndim < 2 or b.ndim < 2 or (a.size < _SMALL and b.size < _SMALL):
        return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)
    m, k = a.shape[-2:]
    n = b.shape[-1]
    batch = max(a.size // (m * k or 1), b.size // (k * n or 1))  # the broadcast batch when one is 1
    if batch == 1 and max(a.ndim, b.ndim) > 2 and takes_threaded_blas(m * n * k, threshold):
        # one matrix each (a conv of one image and one group): the 2-D views take the threaded BLAS
        lead = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        if out is None:
            out = np.empty(lead + (m, n), dtype=np.result_type(a.dtype, b.dtype))
        matmul(a[(0,) * (a.ndim - 2)], b[(0,) * (b.ndim - 2)], out[(0,) * (out.ndim - 2)], threshold)
        return out
    if batch * m * n * k < products.split_product_macs:
        return np.matmul(a, b) if out is None else np.matmul(a, b, out=out)
    batch_shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    if out is None:
        out = np.empty(batch_shape + (m, n), dtype=np.result_type(a.dtype, b.dtype))
    blocks = parts * BLOCKS_PER_THREAD
    if n >= m or m < parts * _MIN_BLOCK:  # split the columns of b and out
        cuts = _cuts(n, blocks)
        jobs = [(a, b[..., lo:hi], out[..., lo:hi]) for lo, hi in cuts]
    else:  # split the rows of a and out
        cuts = _cuts(m, blocks)
        jobs = [(a[..., lo:hi, :], b, out[..., lo:hi, :]) for lo, hi in cuts]
    _share(len(jobs), lambda i: np.matmul(jobs[i][0], jobs[i][1], out=jobs[i][2]), parts - 1)
    return out


def small_product_limit() -> int:
    """A 2-D product of fewer multiply-adds than this is one ``a.dot(b)`` on the calling thread in
    ``matmul`` (under every threading threshold), so a caller can skip matmul's checks."""
    products = PRODUCT_THREADS
    return min(products.threaded_gemv_macs, products.threaded_product_macs, products.split_product_macs)


def gemm_into(a: np.ndarray, b: np.ndarray, out: np.ndarray, accumulate: bool = False) -> bool:
    """``out = a @ b``, or ``out += a @ b`` when ``accumulate`` (one pass over ``out``, where numpy
    would need a temporary and an add), on the threaded BLAS with the provider's thread count, for
    2-D operands it reads in place; False when it is not loaded or the operands do not qualify."""
    threaded = _threaded(PRODUCT_THREADS.threads)
    return threaded is not None and threaded.gemm(a, b, out, accumulate) is not None


def takes_threaded_blas(macs: int, threaded_macs: int | None = None) -> bool:
    """Whether ``matmul`` hands a single product of ``macs`` multiply-adds (BLAS-readable operands)
    to the threaded BLAS."""
    threshold = PRODUCT_THREADS.threaded_product_macs if threaded_macs is None else threaded_macs
    return PRODUCT_THREADS.threads > 1 and macs >= threshold and threaded_blas() is not None


def _threaded(parts: int) -> ThreadedBlas | None:
    """The threaded BLAS sized to ``parts`` threads, or None when it is not loaded."""
    threaded = threaded_blas()
    if threaded is not None:
        threaded.set_threads(parts)
    return threaded


def _cuts(size: int, parts: int) -> list[tuple[int, int]]:
    """``parts`` contiguous ranges covering ``size``, multiples of ``_MIN_BLOCK`` but the last."""
    parts = max(1, min(parts, size // _MIN_BLOCK))
    step = -(-size // parts)
    step = -(-step // _MIN_BLOCK) * _MIN_BLOCK
    return [(lo, min(lo + step, size)) for lo in range(0, size, step)]


def parallel_for(count: int, body: Callable[[int], None], macs: int) -> bool:
    """Run ``body(i)`` for i in range(count) on the product threads when the work (``macs``
    multiply-adds in all) is large enough to split; return whether it ran.

    Units are handed out in order to whichever thread is free (see ``_share``). ``body`` must call
    plain ``np.matmul`` (single-threaded BLAS), never ``matmul``: the workers it runs on are the
    ones a split product would wait for.
    """
    parts = min(PRODUCT_THREADS.threads, count)
    if parts < 2 or not worth_sharing(macs):
        return False
    _share(count, body, parts - 1)
    return True


def worth_sharing(macs: int) -> bool:
    """Whether ``parallel_for`` shares work of ``macs`` multiply-adds in all over the product
    threads (given units for them all)."""
    return PRODUCT_THREADS.threads > 1 and macs >= PRODUCT_THREADS.split_product_macs


def _share(count: int, body: Callable[[int], None], helpers: int) -> None:
    """``body(i)`` for every i < count, each unit taken in order by the calling thread or one of
    ``helpers`` workers, whichever is free first; returns when all are done.

    The calling thread starts at once; a sleeping worker takes a while to wake, and a vCPU the host is busy with may not run it for longer. Sharing units instead of handing
    each thread a fixed half keeps a late worker from holding up the product: the calling thread
    takes the units it has not reached, and does not wait for a worker that never started."""
    taken = itertools.count()  # next() is atomic under the GIL
    stop = False

    def loop() -> None:
        for i in taken:
            if i >= count or stop:
                return
            body(i)

    pool = PRODUCT_THREADS.pool()
    PLACEMENT.before_handoff()
    pending = [pool.submit(loop) for _ in range(helpers)]
    try:
        loop()
    except BaseException:
        stop = True
        raise
    finally:
        for f in pending:
            # a worker that has not started has nothing left to do: it is not waited for
            if not f.cancel() and not stop:
                f.result()
