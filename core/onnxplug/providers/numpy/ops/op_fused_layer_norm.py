"""com.onnxplug LayerNormalization (for models below opset 17) and SkipLayerNormalization
(docs/fused-ops.md)."""

from __future__ import annotations

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._blocks import by_row_blocks
from onnxplug.providers.numpy.registry import op


def layer_norm(x: np.ndarray, scale: np.ndarray, bias: np.ndarray | None, axis: int,
               epsilon: float) -> np.ndarray:
    """Normalize over axes [axis, rank) in float32 or wider, then scale and shift; keeps x's dtype."""
    work = x.astype(np.float32) if x.dtype.itemsize < 4 else x
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


@op("LayerNormalization", domain="com.onnxplug")
class LayerNormalization(NumpyKernel):
    """ai.onnx LayerNormalization-17's schema (axis, epsilon), output Y only."""

    def compute(self, x: np.ndarray, scale: np.ndarray, bias: np.ndarray | None = None) -> np.ndarray:
        axis, epsilon = int(self.attr("axis", -1)), float(self.attr("epsilon", 1e-5))
        if x.ndim and axis % x.ndim == x.ndim - 1:  # rows are independent: normalize them in blocks
            return by_row_blocks(lambda block: layer_norm(block, scale, bias, -1, epsilon), x)
        return layer_norm(x, scale, bias, axis, epsilon)


@op("SkipLayerNormalization", domain="com.onnxplug")
class SkipLayerNormalization(NumpyKernel):
    """LayerNorm over the last axis of x + skip (+ bias); the optional second output is that sum."""

    def compute(self, x: np.ndarray, skip: np.ndarray, gamma: np.ndarray, beta: np.ndarray | None = None,
                bias: np.ndarray | None = None) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
        total = x + skip
        if bias is not None:
            total += bias
        epsilon = float(self.attr("epsilon", 1e-5))
        y = by_row_blocks(lambda block: layer_norm(block, gamma, beta, -1, epsilon), total)
        return (y, total) if len(self.node.outputs) > 1 else y
