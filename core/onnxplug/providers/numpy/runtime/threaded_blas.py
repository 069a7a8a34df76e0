"""A private OpenBLAS for the numpy provider's large single products, with threads of its own.

numpy's OpenBLAS stays pinned to one thread (see ``blas``). A product that runs alone on the calling
thread is better served by a BLAS pool whose workers spin briefly between calls, where a sleeping
Python worker is slow to wake; numpy's pool cannot be that pool, as its size is process-wide. So
the provider loads a second OpenBLAS (``scipy-openblas32``, symbols prefixed ``scipy_``) and calls
its ``cblas_?gemm`` through ctypes, which releases the GIL, on ``intra_op_num_threads`` threads.
OpenBLAS cuts a product by rows and columns only, so results do not depend on the calling thread or
on concurrent calls. Its workers spin about 2^21 cycles after a product, far less than OpenBLAS's
default, and stay off the calling thread's CPU (``placement``), so they leave the provider's own
threads their CPUs. ``ONNXPLUG_NUMPY_THREADED_BLAS=0`` turns it off (products split in ``blas``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from typing import Iterator

import numpy as np

from onnxplug.providers.numpy.runtime.placement import PLACEMENT, cpu_mask

#: log2 of the cycles an idle worker spins before it sleeps (OpenBLAS's OPENBLAS_THREAD_TIMEOUT;
#: its default, 28, is ~0.1 s). Read when the library loads.
SPIN_CYCLES_LOG2 = 21

_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112
#: Per dtype: the gemm and gemv symbols and the scalar type of their alpha and beta.
_SYMBOLS = {np.dtype(np.float32): ("scipy_cblas_sgemm", "scipy_cblas_sgemv", ctypes.c_float),
            np.dtype(np.float64): ("scipy_cblas_dgemm", "scipy_cblas_dgemv", ctypes.c_double)}


class ThreadedBlas:
    """``gemm`` on a private OpenBLAS library with its own thread pool."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self._lib = lib
        self._gemm = {}
        self._gemv = {}
        i, p = ctypes.c_int, ctypes.c_void_p
        for dtype, (gemm_symbol, gemv_symbol, scalar) in _SYMBOLS.items():
            gemm = getattr(lib, gemm_symbol)
            gemm.argtypes = [i, i, i, i, i, i, scalar, p, i, p, i, scalar, p, i]
            gemm.restype = None
            gemv = getattr(lib, gemv_symbol)
            gemv.argtypes = [i, i, i, i, scalar, p, i, p, i, scalar, p, i]
            gemv.restype = None
            self._gemm[dtype] = (gemm, scalar(1), scalar(0))
            self._gemv[dtype] = gemv
        lib.scipy_openblas_set_num_threads.argtypes = [ctypes.c_int]
        lib.scipy_openblas_set_num_threads.restype = None
        lib.scipy_openblas_get_num_threads.restype = ctypes.c_int
        lib.scipy_openblas_get_corename.restype = ctypes.c_char_p
        self._set_affinity = getattr(lib, "openblas_setaffinity", None)
        if self._set_affinity is not None:
            self._set_affinity.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_void_p]
            self._set_affinity.restype = ctypes.c_int
        self.threads = 0

    @property
    def path(self) -> str:
        """The library's file."""
        return self._lib._name

    def set_threads(self, threads: int) -> None:
        """Use ``threads`` threads for every product from now on (the whole process). Asks the
        library each time: threadpoolctl, for one, may have changed its count behind our back."""
        if self.library_threads() != threads:
            self._lib.scipy_openblas_set_num_threads(max(1, threads))
        if threads != self.threads:
            previous, self.threads = self.threads, threads
            if self._set_affinity is not None:
                # OpenBLAS's index threads - 1 is the calling thread: indices kept from a larger
                # count would pin the caller
                for worker in range(max(threads - 1, 0), max(previous - 1, 0)):
                    PLACEMENT.unregister(("openblas", worker))
                for worker in range(threads - 1):
                    PLACEMENT.register(("openblas", worker), self._pinner(worker))

    def _pinner(self, worker: int):
        def pin(cpus: frozenset[int]) -> None:
            mask = cpu_mask(cpus)
            self._set_affinity(worker, ctypes.sizeof(mask), mask)
        return pin

    def library_threads(self) -> int:
        """The thread count the library uses now."""
        return self._lib.scipy_openblas_get_num_threads()

    def describe(self) -> str:
        """The kernels and thread count, for benchmark reports."""
        core = self._lib.scipy_openblas_get_corename().decode(errors="replace")
        return f"OpenBLAS ({core} kernels, {self.library_threads()} threads)"

    def gemm(self, a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None,
             accumulate: bool = False) -> np.ndarray | None:
        """``a @ b`` for 2-D operands of one float dtype that BLAS can read in place (one axis
        of unit stride), into ``out`` (made when None), or added to ``out`` when ``accumulate``;
        None when the operands do not qualify (the caller then uses numpy)."""
        dtype = a.dtype
        entry = self._gemm.get(dtype)
        if entry is None or b.dtype != dtype or a.ndim != 2 or b.ndim != 2:
            return None
        m, k = a.shape
        n = b.shape[1]
        if m == 0 or n == 0 or k == 0 or b.shape[0] != k:
            return None
        item = dtype.itemsize
        trans_a, lda = _layout(a, item)
        trans_b, ldb = _layout(b, item)
        if trans_a is None or trans_b is None:
            return None
        if out is None:
            if accumulate:
                return None
            out = np.empty((m, n), dtype)
        elif (out.dtype != dtype or out.shape != (m, n) or out.strides[1] != item or out.strides[0] < n * item
              or out.strides[0] % item or np.may_share_memory(out, a) or np.may_share_memory(out, b)):
            return None
        fn, one, zero = entry
        beta = one if accumulate else zero
        if m == 1 or n == 1:
            return self._gemv_product(a, b, out, (trans_a, lda), (trans_b, ldb), one, beta)
        PLACEMENT.before_handoff()
        fn(_ROW_MAJOR, trans_a, trans_b, m, n, k, one, a.ctypes.data, lda, b.ctypes.data, ldb, beta,
           out.ctypes.data, out.strides[0] // item)
        return out

    def _gemv_product(self, a: np.ndarray, b: np.ndarray, out: np.ndarray, layout_a: tuple[int, int],
                      layout_b: tuple[int, int], one, beta) -> np.ndarray | None:
        """``a @ b`` with one row in ``a`` or one column in ``b`` as a matrix-vector product: gemm
        packs its operands for tiles of many rows and columns, so with a single one it runs at
        half gemv's speed."""
        item = a.dtype.itemsize
        m, k = a.shape
        n = b.shape[1]
        if m == 1:  # out^T = b^T @ a^T: the matrix is b (k x n), the vector a's row
            matrix, (layout, ld), shape = b, layout_b, (k, n)
            vector, step_x, step_y = a, a.strides[1], out.strides[1]
            op = _TRANS if layout == _NO_TRANS else _NO_TRANS
        else:  # out = a @ b: the matrix is a (m x k), the vector b's column
            matrix, (layout, ld), shape = a, layout_a, (m, k)
            vector, step_x, step_y = b, b.strides[0], out.strides[0]
            op = layout
        rows, cols = shape if layout == _NO_TRANS else shape[::-1]  # as stored, row-major
        if step_x % item or step_y % item:
            return None
        inc_x = 1 if k == 1 else step_x // item  # a vector of one element may have any stride
        inc_y = 1 if out.size == 1 else step_y // item
        if inc_x <= 0 or inc_y <= 0:
            return None
        PLACEMENT.before_handoff()
        self._gemv[a.dtype](_ROW_MAJOR, op, rows, cols, one, matrix.ctypes.data, ld, vector.ctypes.data,
                            inc_x, beta, out.ctypes.data, inc_y)
        return out


def _layout(x: np.ndarray, item: int) -> tuple[int | None, int]:
    """(CBLAS transpose flag, leading dimension) reading the 2-D ``x`` in place, row-major, or
    (None, 0) when neither axis has unit stride (or a stride is negative or not whole items)."""
    rows, cols = x.shape
    s0, s1 = x.strides
    if not x.flags.aligned:  # the start (and the strides) whole items; ctypes.data is costly
        return None, 0
    if s1 == item or cols == 1:
        ld = s0 // item if rows > 1 else cols
        if s0 % item == 0 and ld >= max(cols, 1):
            return _NO_TRANS, ld
    if s0 == item or rows == 1:
        ld = s1 // item if cols > 1 else rows
        if s1 % item == 0 and ld >= max(rows, 1):
            return _TRANS, ld
    return None, 0


_LOADED: ThreadedBlas | None = None
_REASON = "not loaded yet"
_LOAD_LOCK = threading.Lock()


def threaded_blas() -> ThreadedBlas | None:
    """The private OpenBLAS (loaded on first use), or None when it is turned off or cannot load
    (``unavailable_reason`` says why)."""
    global _LOADED, _REASON
    if _LOADED is not None or _REASON != "not loaded yet":
        return _LOADED
    with _LOAD_LOCK:
        if _LOADED is None and _REASON == "not loaded yet":
            _LOADED, _REASON = _load()
    return _LOADED


def is_threaded_blas_file(path: str) -> bool:
    """Whether ``path`` (a library file, as threadpoolctl reports it) is the threaded BLAS's, so
    that code handling numpy's BLAS can leave it alone (False when it is not loaded)."""
    threaded = threaded_blas()
    if threaded is None:
        return False
    try:
        return os.path.samefile(path, threaded.path)
    except OSError:
        return False


def unavailable_reason() -> str | None:
    """Why ``threaded_blas()`` is None (None when it is loaded)."""
    threaded_blas()
    return None if _LOADED is not None else _REASON


def _load() -> tuple[ThreadedBlas | None, str]:
    if os.environ.get("ONNXPLUG_NUMPY_THREADED_BLAS", "1") == "0":
        return None, "turned off by ONNXPLUG_NUMPY_THREADED_BLAS=0"
    with _spin_setting():  # importing scipy_openblas32 loads the library
        try:
            import scipy_openblas32
        except ImportError as e:
            return None, f"scipy-openblas32 is not installed ({e})"
        path = os.path.join(scipy_openblas32.get_lib_dir(), scipy_openblas32.get_library(fullname=True))
        try:
            return ThreadedBlas(ctypes.CDLL(path)), ""
        except (OSError, AttributeError) as e:
            return None, f"cannot load {path}: {e}"


@contextlib.contextmanager
def _spin_setting() -> Iterator[None]:
    """OPENBLAS_THREAD_TIMEOUT set to SPIN_CYCLES_LOG2 while the library loads (it reads it then);
    restored afterwards (numpy's copy read it already)."""
    previous = os.environ.get("OPENBLAS_THREAD_TIMEOUT")
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = str(SPIN_CYCLES_LOG2)
    try:
        yield
    finally:
        if previous is None:
            del os.environ["OPENBLAS_THREAD_TIMEOUT"]
        else:
            os.environ["OPENBLAS_THREAD_TIMEOUT"] = previous
