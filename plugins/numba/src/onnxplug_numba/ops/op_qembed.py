"""com.microsoft QEmbedLayerNormalization: EmbedLayerNormalization (ops/op_fused.py) on tables,
gamma and beta quantized to 8 bits (per-tensor scale and zero point each), dequantized as the
numpy provider does (``(q - zero_point) * scale`` in float32); once at construction when all of
them are constant initializers, else on each call. Outputs: the normalized rows and mask_index."""

from __future__ import annotations

import numpy as np
from onnxplug_sdk import Decline, GraphView, KernelContext, Node
from onnxplug_sdk.contrib import dequantize_tables

from onnxplug_numba.ops.op_fused import ContribEmbedLayerNormalization
from onnxplug_numba.provider import NumbaProvider

#: Input indices of the quantized tables, their scales and their zero points.
_QUANTIZED, _SCALES, _ZERO_POINTS = range(2, 7), range(8, 13), range(13, 18)
_EIGHT_BIT = (np.dtype(np.uint8), np.dtype(np.int8))


@NumbaProvider.kernel("QEmbedLayerNormalization", domain="com.microsoft")
class QEmbedLayerNormalization(ContribEmbedLayerNormalization):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        names = [*node.inputs, *[""] * 18]
        for i in (*_QUANTIZED, *_ZERO_POINTS):
            if names[i] and view.dtype_of(names[i]) not in _EIGHT_BIT:
                return Decline("dtype", f"{names[i]!r} is {view.dtype_of(names[i])}, not uint8 or int8")
        for i in _SCALES:
            if names[i] and view.dtype_of(names[i]) != np.dtype(np.float32):
                return Decline("dtype", f"{names[i]!r} is {view.dtype_of(names[i])}, not float32")
        if not names[2] or not names[3]:
            return Decline("attribute", "word and position embeddings are required")
        return True

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        names = [*node.inputs, *[""] * 18]
        used = [names[i] for i in (*_QUANTIZED, *_SCALES, *_ZERO_POINTS) if names[i]]
        self._tables = None
        if all(n in context.constants for n in used):
            values = [np.asarray(context.constants[n]) if n in context.constants else None for n in names[:18]]
            self._tables = self._dequantize(values[2:7], values[8:13], values[13:18])

    def _dequantize(self, quantized: list, scales: list, zero_points: list) -> list:  # type: ignore[type-arg]
        return dequantize_tables(self, quantized, scales, zero_points)

    def compute(self, input_ids, segment_ids, *rest):  # type: ignore[no-untyped-def, override]
        rest = list(rest) + [None] * (16 - len(rest))
        tables = self._tables if self._tables is not None else self._dequantize(rest[0:5], rest[6:11], rest[11:16])
        word, position, segment, gamma, beta = tables
        y, mask_index, _ = super().compute(input_ids, segment_ids, word, position, segment, gamma, beta, rest[5])
        return y, mask_index
