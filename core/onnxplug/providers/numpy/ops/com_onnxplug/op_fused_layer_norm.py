"""com.onnxplug LayerNormalization (for models below opset 17) and SkipLayerNormalization
(docs/fused-ops.md)."""

from __future__ import annotations

import functools

import numpy as np

from onnxplug.providers.numpy.runtime.blas import PRODUCT_THREADS, parallel_for
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._blocks import BLOCK_ELEMENTS, by_row_blocks
from onnxplug.providers.numpy.ops._nn_util import _BLAS_FLOATS  # normalized over rows with BLAS row sums
from onnxplug.providers.numpy.registry import op

#: A large SkipLayerNormalization goes to the product threads in one block of rows each (blocks
#: of cache size, shared, wait for the GIL), counting this many multiply-adds a value.
MACS_PER_VALUE = 128



def layer_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray | None, axis: int,
               epsilon: float) -> np.ndarray:
    """Normalize over axes [axis, rank) in float32 or wider, then scale and shift; keeps x's dtype."""
    work = x.astype(np.float32) if x.dtype.itemsize < 4 else x
    if work.ndim and axis % work.ndim == work.ndim - 1 and work.dtype in _BLAS_FLOATS and work.shape[-1]:
        rows = work.reshape(-1, work.shape[-1])
        return _normalize_rows(rows, scale, bias, epsilon).reshape(x.shape).astype(x.dtype, copy=False)
    axes = tuple(range(axis % x.ndim, x.ndim))
    centered = work - work.mean(axis=axes, keepdims=True)
    variance = np.mean(np.square(centered), axis=axes, keepdims=True)
    variance += work.dtype.type(epsilon)
    np.sqrt(variance, out=variance)
    centered /= variance
    centered *= scale
    if bias is not None:
        centered += bias
    return centered.astype(x.dtype, copy=False)


@functools.lru_cache(maxsize=64)
def _row_mean_weights(width: int, dtype: np.dtype) -> np.ndarray:
    weights = np.full((width, 1), 1.0 / width, dtype=dtype)
    weights.setflags(write=False)
    return weights


def _normalize_rows(rows: np.ndarray, scale: np.ndarray, bias: np.ndarray | None, epsilon: float,
                    out: np.ndarray | None = None) -> np.ndarray:
    """LayerNorm of each row of a 2-D float32/float64 array (a new array unless ``out`` is given).

    The row means are BLAS matrix-vector products with a column of 1/width (far cheaper than
    ``mean(axis=-1)``), and the division by the deviation a multiplication by its
    reciprocal, one value per row.
    """
    weights = _row_mean_weights(rows.shape[-1], rows.dtype)
    centered = np.subtract(rows, rows.dot(weights), out=out)
    variance = np.square(centered).dot(weights)
    variance += rows.dtype.type(epsilon)
    np.sqrt(variance, out=variance)
    np.reciprocal(variance, out=variance)
    centered *= variance
    centered *= scale
    if bias is not None:
        centered += bias
    return centered


@op("LayerNormalization", domain="com.onnxplug")
class LayerNormalization(NumpyKernel):
    """ai.onnx LayerNormalization-17's schema (axis, epsilon), output Y only."""

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.axis, self.epsilon = int(self.attr("axis", -1)), float(self.attr("epsilon", 1e-5))

    def compute(self, x: np.ndarray, scale: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
        axis, epsilon = self.axis, self.epsilon
        if x.ndim and axis % x.ndim == x.ndim - 1:  # rows are independent: normalize them in blocks
            return by_row_blocks(lambda block: layer_norm(block, scale, bias, -1, epsilon), x)
        return layer_norm(x, scale, bias, axis, epsilon)


@op("SkipLayerNormalization", domain="com.onnxplug")
class SkipLayerNormalization(NumpyKernel):
    """LayerNorm over the last axis of x + skip (+ bias); the optional second output is that sum."""

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.epsilon = float(self.attr("epsilon", 1e-5))
        self.want_sum = len(node.outputs) > 1

    def compute(self, x: np.ndarray, skip: np.ndarray, gamma: np.ndarray, beta: np.ndarray | None = None,
                bias: np.ndarray | None = None) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        epsilon, want_sum = self.epsilon, self.want_sum
        if x.shape == skip.shape and x.dtype == skip.dtype and x.dtype in _BLAS_FLOATS and x.ndim and x.shape[-1]:
            return self._in_row_blocks(x, skip, gamma, beta, bias, epsilon, want_sum,
                                       self.tuning.share_layer_norm_rows)
        total = x + skip
        if bias is not None:
            total += bias
        y = by_row_blocks(lambda block: layer_norm(block, gamma, beta, -1, epsilon), total)
        return (y, total) if want_sum else y

    @staticmethod
    def _in_row_blocks(x: np.ndarray, skip: np.ndarray, gamma: np.ndarray, beta: np.ndarray | None,
                       bias: np.ndarray | None, epsilon: float,
                       want_sum: bool, share: bool = True) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        """The sum and its normalization one block of rows at a time, so the sum stays in cache;
        with ``share`` (provider option ``share_layer_norm_rows``) large ones over the product threads."""
        width = x.shape[-1]
        xs, skips = x.reshape(-1, width), skip.reshape(-1, width)
        y = np.empty(xs.shape, dtype=x.dtype)
        total = np.empty(xs.shape, dtype=x.dtype) if want_sum else None
        rows = xs.shape[0]
        step = max(1, BLOCK_ELEMENTS // width)
        threads = PRODUCT_THREADS.threads
        if rows <= step and (not share or threads < 2 or rows < 2 * threads):
            # one block on the calling thread, without the closure
            summed = np.add(xs, skips, out=total)
            if bias is not None:
                summed += bias
            _normalize_rows(summed, gamma, beta, epsilon, out=y)
            y = y.reshape(x.shape)
            return (y, total.reshape(x.shape)) if total is not None else y

        def block(lo: int, hi: int) -> None:
            summed = np.add(xs[lo:hi], skips[lo:hi], out=None if total is None else total[lo:hi])
            if bias is not None:
                summed += bias
            _normalize_rows(summed, gamma, beta, epsilon, out=y[lo:hi])

        shared = -(-rows // threads)  # rows per thread
        if not (share and rows >= 2 * threads
                and parallel_for(threads, lambda k: block(k * shared, min(rows, k * shared + shared)),
                                 xs.size * MACS_PER_VALUE)):
            for lo in range(0, rows, step):
                block(lo, lo + step)
        y = y.reshape(x.shape)
        return (y, total.reshape(x.shape)) if total is not None else y
