"""Einsum (cupy.einsum, cuBLAS where it reduces to GEMM), Hardmax and GatherND (batch_dims 0)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from onnxplug_sdk import GraphView, Node

from onnxplug_cupy.ops._base import FLOAT, INDEX, PLAIN, CupyKernel, dtypes_in, normalize_axis, same_dtype
from onnxplug_cupy.provider import CupyProvider


@CupyProvider.kernel("Einsum")
class Einsum(CupyKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return same_dtype(view, node, FLOAT) and isinstance(node.attr("equation", None), str)

    def run(self, *xs: Any) -> Any:
        return self.xp.einsum(self.attr("equation").replace(" ", ""), *xs)


@CupyProvider.kernel("Hardmax")
class Hardmax(CupyKernel):
    """1 at the first maximum along ``axis`` (opset 13+), or over the flattened axes from ``axis`` on."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return same_dtype(view, node, FLOAT)

    def run(self, x: Any) -> Any:
        if self.node.opset < 13:
            axis = normalize_axis(int(self.attr("axis", 1)), x.ndim, self.node)
            rows = x.reshape(math.prod(x.shape[:axis]), -1)
            return self._hard(rows, 1).reshape(x.shape)
        return self._hard(x, normalize_axis(int(self.attr("axis", -1)), x.ndim, self.node))

    def _hard(self, x: Any, axis: int) -> Any:
        xp = self.xp
        top = xp.expand_dims(xp.argmax(x, axis=axis), axis)
        positions = xp.arange(x.shape[axis]).reshape([-1 if a == axis else 1 for a in range(x.ndim)])
        return (positions == top).astype(x.dtype)


@CupyProvider.kernel("GatherND")
class GatherND(CupyKernel):
    """``data[i_0, ..., i_k-1]`` for each index tuple in the last axis of ``indices`` (batch_dims 0)."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return int(node.attr("batch_dims", 0)) == 0 and dtypes_in(view, [node.inputs[0], *node.outputs], PLAIN) \
            and dtypes_in(view, node.inputs[1:], frozenset({np.dtype(np.int64)}) & INDEX)

    def run(self, data: Any, indices: Any) -> Any:
        xp = self.xp
        depth = indices.shape[-1]
        picked = []
        for axis in range(depth):
            i = indices[..., axis]
            picked.append(xp.where(i < 0, i + data.shape[axis], i))
        return xp.ascontiguousarray(data[tuple(picked)])
