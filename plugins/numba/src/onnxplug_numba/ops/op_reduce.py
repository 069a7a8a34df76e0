"""The Reduce* family over float tensors: compiled reductions of a (outer, reduced, inner) view."""

from __future__ import annotations

import math

import numpy as np
from onnxplug_sdk import GraphView, Node

from onnxplug_numba.kernels import reduce as kreduce
from onnxplug_numba.ops._base import FLOAT_TYPES, NumbaKernel, row_grain, all_present_same, register_all
from onnxplug_numba.provider import NumbaProvider

#: The opset from which ``axes`` is an input rather than an attribute.
_AXES_INPUT_SINCE = {"ReduceSum": 13}


class Reduce(NumbaKernel):
    """Any Reduce* op; the reduced axes, once moved together, are one middle axis."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        t = view.type_of(node.inputs[0])
        if t is None or t.shape is None:
            return False
        return all_present_same(view, node, FLOAT_TYPES, inputs=(0,))

    def _axes(self, x: np.ndarray, axes_input: np.ndarray | None) -> tuple[int, ...] | None:
        since = _AXES_INPUT_SINCE.get(self.node.op_type, 18)
        if self.node.opset < since:
            attr = self.attr("axes")
            raw = None if attr is None else [int(a) for a in attr]
        else:
            raw = None if axes_input is None or axes_input.size == 0 else [int(a) for a in axes_input.reshape(-1)]
            if raw is None and self.attr("noop_with_empty_axes", 0):
                return None
        if raw is None:
            return tuple(range(x.ndim))
        for a in raw:
            if not -x.ndim <= a < max(x.ndim, 1):
                raise ValueError(f"{self.node.describe()}: axis {a} is out of range for rank {x.ndim}")
        return tuple(sorted({a + x.ndim if a < 0 else a for a in raw}))

    def compute(self, x: np.ndarray, axes_input: np.ndarray | None = None) -> np.ndarray:
        axes = self._axes(x, axes_input)
        if axes is None:
            return x.copy()
        keepdims = bool(self.attr("keepdims", 1))
        kept = [d for d in range(x.ndim) if d not in axes]
        out_shape = tuple(1 if d in axes else x.shape[d] for d in range(x.ndim)) if keepdims \
            else tuple(x.shape[d] for d in kept)
        contiguous = not axes or list(axes) == list(range(axes[0], axes[-1] + 1))
        if not contiguous:  # bring the reduced axes together at the end
            x = np.transpose(x, kept + list(axes))
            axes = tuple(range(len(kept), x.ndim))
        x = np.ascontiguousarray(x)
        outer = int(math.prod(x.shape[:axes[0]])) if axes else int(x.size)
        count = int(math.prod([x.shape[a] for a in axes])) if axes else 1
        inner = int(math.prod(x.shape[axes[-1] + 1:])) if axes else 1
        kind = kreduce.KINDS[self.node.op_type]
        if inner == 1:
            out = np.empty(outer, dtype=x.dtype)
            x2 = x.reshape(outer, count)
            self.threads.run(lambda lo, hi: kreduce.reduce_rows(x2[lo:hi], kind, out[lo:hi]), outer, row_grain(count))
        else:
            out = np.empty((outer, inner), dtype=x.dtype)
            x3 = x.reshape(outer, count, inner)
            self.threads.run(lambda lo, hi: kreduce.reduce_middle(x3[lo:hi], kind, out[lo:hi]), outer,
                             row_grain(count * inner))
        return out.reshape(out_shape)


register_all(NumbaProvider.kernel, kreduce.KINDS, Reduce)
