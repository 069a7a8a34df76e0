"""Shared bases of the numba provider's kernels."""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable

import numpy as np
from onnxplug_sdk import Decline, GraphView, Kernel, KernelContext, Node, check_dtypes
from onnxplug_sdk.helpers import untyped_reason

from onnxplug_numba.kernels import native_parallel
from onnxplug_numba.threads import PARALLEL_MIN_ELEMENTS, ThreadControl

FLOAT_TYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


class NumbaKernel(Kernel):
    """A kernel on host numpy arrays that honours the session's ``intra_op_num_threads``."""

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.threads: ThreadControl = getattr(context.provider, "threads", None) or \
            ThreadControl(context.intra_op_num_threads)


def dtypes_in(view: GraphView, names: Iterable[str], allowed: frozenset[np.dtype]) -> bool:
    """Whether every named (non-omitted) value has a known dtype in ``allowed``."""
    return all(view.dtype_of(n) in allowed for n in names if n)


def all_present_same(view: GraphView, node: Node, allowed: frozenset[np.dtype],
                     inputs: Iterable[int] | None = None) -> bool | Decline:
    """The chosen inputs (default: all) and every typed output share one dtype from ``allowed``;
    else the ``Decline`` naming the untyped value, the mix, or the dtype."""
    picked = [n for n in ([node.inputs[i] for i in inputs if i < len(node.inputs)] if inputs is not None
                          else node.inputs) if n]
    untyped = next((n for n in picked if view.dtype_of(n) is None), None)
    if untyped is not None:
        return Decline("dtype", untyped_reason(view, untyped))
    # outputs of custom-domain ops may have no inferred type; a known one must agree
    typed = {n: view.dtype_of(n) for n in [*picked, *(o for o in node.outputs if o)] if view.dtype_of(n) is not None}
    found = set(typed.values())
    if len(found) > 1:
        return Decline("dtype", "mixed element types: " + ", ".join(f"{n!r} is {t}" for n, t in typed.items()))
    if not found:
        return Decline("dtype", "none of its inputs and outputs has a known element type")
    if next(iter(found)) not in allowed:
        return Decline("dtype", f"element type {next(iter(found))} is not one of "
                                f"{', '.join(sorted(t.name for t in allowed))}")
    return True


def register_all(decorator: Callable[..., Callable[[type], type]], ops: Iterable[str],
                 cls: type, **kwargs: Any) -> None:
    """Register ``cls`` for every op type of ``ops``."""
    for op in ops:
        decorator(op, **kwargs)(cls)


class HostKernel(NumbaKernel):
    """A layout kernel (no arithmetic) whose numpy implementation is exact for every dtype."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        return check_dtypes(node, view, PLAIN_DTYPES)


PLAIN_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64"}


#: Products with fewer FLOPs than this run on the calling thread: handing work to another thread
#: costs a futex wake-up and then the GIL, and such small products ran slower on two threads
#: than on one (docs/benchmarks.md, "Measurements behind design choices").
SHARE_MIN_FLOPS = 64_000_000


def matmul(a: np.ndarray, b: np.ndarray, threads: ThreadControl, bias: np.ndarray | None = None,
           native: bool = True) -> np.ndarray:
    """numpy.matmul (BLAS, one thread per call) split across the session's threads by row or
    column bands of the result; ``bias`` (a vector over the last axis) is added to each band by
    the thread that computed it. ``native=False`` keeps a product off the prange path (for a
    caller whose next step runs on the pool, which the prange workers' spinning would slow)."""
    if a.ndim > 2 and b.ndim == 2 and 0 < a.size * b.shape[1] < NATIVE_MIN_MACS and a.flags.c_contiguous:
        # (..., M, K) @ (K, N) is one (rows, K) product: one BLAS call instead of one per matrix
        lead = a.shape[:-1]
        return matmul(a.reshape(-1, a.shape[-1]), b, threads, bias).reshape(*lead, b.shape[1])
    if a.ndim == 2 and b.ndim == 2:
        macs = a.size * b.shape[1]
        if macs < NATIVE_MIN_MACS:
            if not openblas_serial(a.shape[0], macs, b.shape[1]):
                threads.blas()
            # too small to share: ndarray.dot makes the same BLAS call with less dispatch
            y = a.dot(b)
            return y if bias is None else _with_bias(y, bias)
    threads.blas()
    if a.ndim < 2 or b.ndim < 2 or not threads.parallel:
        return _with_bias(np.matmul(a, b), bias)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    # (C-contiguous operands only: a transposed weight, as Gemm's transB gives, would be copied per call)
    if native and b.ndim == 2 and a.dtype == b.dtype == np.float32 and native_parallel.AVAILABLE \
            and a.flags.c_contiguous and b.flags.c_contiguous and math.prod(a.shape[:-1]) * k * n >= NATIVE_MIN_MACS:
        return _native_matmul(a, b, bias, threads)
    # an upper bound of the batch size is enough to decide
    if 2 * m * n * k * max(math.prod(a.shape[:-2]), math.prod(b.shape[:-2]), 1) < SHARE_MIN_FLOPS:
        return _with_bias(np.matmul(a, b), bias)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    out = np.empty((*batch, m, n), dtype=np.result_type(a, b))
    # bands of at least a half-thread's share: BLAS loses speed on thinner ones
    if m >= 64 or m >= n:
        def rows(lo: int, hi: int) -> None:
            band = out[..., lo:hi, :]
            np.matmul(a[..., lo:hi, :], b, out=band)
            _with_bias(band, bias)

        threads.run(rows, m, max(8, m // (2 * threads.count)))
    else:
        def columns(lo: int, hi: int) -> None:
            band = out[..., :, lo:hi]
            np.matmul(a, b[..., :, lo:hi], out=band)
            _with_bias(band, None if bias is None else bias[lo:hi])

        threads.run(columns, n, max(32, n // (2 * threads.count)))
    return out


#: Products below this many multiply-adds run on one thread inside OpenBLAS whatever its thread
#: setting (its gemv threshold, 2304 x GEMM_MULTITHREAD_THRESHOLD 4; gemm's is higher), so they skip
#: the setting's check (a ctypes call: much of a tiny product's cost).
OPENBLAS_SERIAL_MACS = 9216
#: The same for matrix-matrix products (both sides wider than one): OpenBLAS's gemm runs one thread
#: up to 65536 x 4 multiply-adds (SMP_THRESHOLD_MIN x GEMM_MULTITHREAD_THRESHOLD); checked with the
#: pool at two threads: no other thread got CPU time on products of up to 96x64x64.
OPENBLAS_SERIAL_GEMM_MACS = 262144


def openblas_serial(m: int, macs: int, n: int) -> bool:
    """Whether OpenBLAS runs an (m, k) @ (k, n) product of ``macs`` multiply-adds on one thread
    whatever its thread setting (so the caller need not pin it first)."""
    return macs < OPENBLAS_SERIAL_MACS or (macs <= OPENBLAS_SERIAL_GEMM_MACS and m > 1 and n > 1)


def serial_product(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray | None:
    """a (..., K) @ b (K, N) (+ ``bias`` over N) as one BLAS call on a's (rows, K) view, when
    OpenBLAS runs it on one thread anyway (``openblas_serial``): a small product's cost is mostly
    dispatch, which this skips; else None (a non-contiguous a above 2-D, other operand shapes)."""
    if b.ndim != 2 or a.ndim < 2 or not a.shape[-1] == b.shape[0] > 0 or a.dtype is not b.dtype \
            or not (a.ndim == 2 or a.flags.c_contiguous):
        return None
    k, n = b.shape
    if not openblas_serial(a.size // k, a.size * n, n):
        return None
    y = a.dot(b) if a.ndim == 2 else a.reshape(-1, k).dot(b)
    if bias is not None:
        np.add(y, bias, out=y)
    return y if a.ndim == 2 else y.reshape(a.shape[:-1] + (n,))


#: Float32 products (with a 2-D right operand) from this many multiply-adds are shared in a numba
#: prange region (kernels/native_parallel.py): hand-offs there cost microseconds, not tens of them.
NATIVE_MIN_MACS = 4_000_000


#: Bands per thread of a prange product (see _native_matmul).
BANDS_PER_THREAD = 1


def _native_matmul(a: np.ndarray, b: np.ndarray, bias: np.ndarray | None, threads: ThreadControl) -> np.ndarray:
    """a (..., M, K) @ b (K, N) as one (rows, K) product in bands over the threads."""
    lead = a.shape[:-1]
    rows = math.prod(lead)
    a2 = a.reshape(rows, a.shape[-1])
    b2 = b
    n = b2.shape[1]
    out = np.empty((rows, n), dtype=np.float32)
    count = native_parallel.use_threads(threads.count)
    by_rows = rows >= 16 * count or rows >= n
    # one band per thread: numba hands prange items out statically, so more bands only make each
    # thread run several thinner products, which BLAS runs slower (bands of 8+ rows or 16+ columns)
    items = max(1, min(BANDS_PER_THREAD * count, rows // 8 if by_rows else n // 16))
    vector = np.ascontiguousarray(bias, dtype=np.float32) if bias is not None else out[0]
    native_parallel.matmul_bias(a2, b2, vector, bias is not None, out, items, by_rows)
    return out.reshape(*lead, n)


def _with_bias(y: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    if bias is not None:
        np.add(y, bias, out=y)
    return y


def row_grain(work_per_row: int) -> int:
    """Rows per chunk so that each chunk has at least PARALLEL_MIN_ELEMENTS elements of work."""
    return max(1, PARALLEL_MIN_ELEMENTS // max(1, int(work_per_row)))
