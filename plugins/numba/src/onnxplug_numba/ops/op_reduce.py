"""The Reduce* family over float tensors: compiled reductions of a (outer, reduced, inner) view."""

from __future__ import annotations

import math

import numpy as np
from onnxplug_sdk import GraphView, KernelContext, Node

from onnxplug_numba.kernels import reduce as kreduce
from onnxplug_numba.ops._base import FLOAT_TYPES, NumbaKernel, row_grain, all_present_same, register_all
from onnxplug_numba.provider import NumbaProvider

#: The opset from which ``axes`` is an input rather than an attribute.
_AXES_INPUT_SINCE = {"ReduceSum": 13}


class Reduce(NumbaKernel):
    """Any Reduce* op; the reduced axes, once moved together, are one middle axis."""

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.kind = kreduce.KINDS[node.op_type]
        self._plans: dict[tuple, tuple | None] = {}  # type: ignore[type-arg]

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return all_present_same(view, node, FLOAT_TYPES, inputs=(0,))  # axes are checked per call

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

    def _plan(self, x: np.ndarray, axes_input: np.ndarray | None) -> tuple | None:  # type: ignore[type-arg]
        """How to reduce an input of this shape: (perm, outer, count, inner, out_shape), or None
        for a no-op reduction."""
        axes = self._axes(x, axes_input)
        if axes is None:
            return None
        keepdims = bool(self.attr("keepdims", 1))
        kept = [d for d in range(x.ndim) if d not in axes]
        out_shape = tuple(1 if d in axes else x.shape[d] for d in range(x.ndim)) if keepdims \
            else tuple(x.shape[d] for d in kept)
        shape = x.shape
        perm = None
        contiguous = not axes or list(axes) == list(range(axes[0], axes[-1] + 1))
        if not contiguous:  # bring the reduced axes together at the end
            perm = kept + list(axes)
            shape = tuple(shape[d] for d in perm)
            axes = tuple(range(len(kept), x.ndim))
        outer = int(math.prod(shape[:axes[0]])) if axes else int(x.size)
        count = int(math.prod([shape[a] for a in axes])) if axes else 1
        inner = int(math.prod(shape[axes[-1] + 1:])) if axes else 1
        return perm, outer, count, inner, out_shape

    def compute(self, x: np.ndarray, axes_input: np.ndarray | None = None) -> np.ndarray:
        key = (x.shape, None if axes_input is None else tuple(axes_input.reshape(-1).tolist()))
        if key in self._plans:
            plan = self._plans[key]
        else:
            plan = self._plans[key] = self._plan(x, axes_input)
        if plan is None:
            return x.copy()
        perm, outer, count, inner, out_shape = plan
        if perm is not None:
            x = np.transpose(x, perm)
        x = np.ascontiguousarray(x)
        kind = self.kind
        if inner == 1:
            out = np.empty(outer, dtype=x.dtype)
            x2 = x.reshape(outer, count)
            if outer < 2 * row_grain(count) or not self.threads.parallel:
                kreduce.reduce_rows(x2, kind, out)
            else:
                self.threads.run(lambda lo, hi: kreduce.reduce_rows(x2[lo:hi], kind, out[lo:hi]), outer,
                                 row_grain(count))
        else:
            out = np.empty((outer, inner), dtype=x.dtype)
            x3 = x.reshape(outer, count, inner)
            self.threads.run(lambda lo, hi: kreduce.reduce_middle(x3[lo:hi], kind, out[lo:hi]), outer,
                             row_grain(count * inner))
        return out.reshape(out_shape)


register_all(NumbaProvider.kernel, kreduce.KINDS, Reduce)
