"""The Reduce* family over float tensors: compiled reductions of a (outer, reduced, inner) view."""

from __future__ import annotations

import math
from typing import Any, Callable

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
        self._calls: dict[Any, Callable[[np.ndarray], np.ndarray]] = {}  # by shape (and axes input)

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

    def _make_call(self, x: np.ndarray, axes_input: np.ndarray | None) -> Callable[[np.ndarray], np.ndarray]:
        """The reduction of inputs shaped like ``x``, with the plan's numbers bound once."""
        plan = self._plan(x, axes_input)
        if plan is None:
            return np.copy
        perm, outer, count, inner, out_shape = plan
        kind, threads = self.kind, self.threads

        def arrange(x: np.ndarray) -> np.ndarray:
            # ravel: one C-contiguous buffer (a copy only of a transposed or strided input)
            return (x if perm is None else np.transpose(x, perm)).ravel()

        if inner == 1 and (outer < 2 * row_grain(count) or not threads.parallel):
            if perm is None and x.shape == (outer, count):
                def matrix_rows(x: np.ndarray) -> np.ndarray:  # already (outer, count): no reshape
                    out = np.empty(out_shape, dtype=x.dtype)
                    kreduce.reduce_rows(x if x.flags.c_contiguous else np.ascontiguousarray(x), kind, out.ravel())
                    return out

                return matrix_rows

            def rows_here(x: np.ndarray) -> np.ndarray:  # the usual small case: no closure calls
                out = np.empty(out_shape, dtype=x.dtype)
                if perm is not None:
                    x = np.transpose(x, perm)
                kreduce.reduce_rows(x.ravel().reshape(outer, count), kind, out.ravel())
                return out

            return rows_here
        if inner == 1:
            def rows_shared(x: np.ndarray) -> np.ndarray:
                out = np.empty(outer, dtype=x.dtype)
                x2 = arrange(x).reshape(outer, count)
                threads.run(lambda lo, hi: kreduce.reduce_rows(x2[lo:hi], kind, out[lo:hi]), outer, row_grain(count))
                return out.reshape(out_shape)

            return rows_shared

        if outer < 2 * row_grain(count * inner) or not threads.parallel:
            def middle_here(x: np.ndarray) -> np.ndarray:  # too small to share: no closure, no pool
                out = np.empty((outer, inner), dtype=x.dtype)
                kreduce.reduce_middle(arrange(x).reshape(outer, count, inner), kind, out)
                return out.reshape(out_shape)

            return middle_here

        def middle(x: np.ndarray) -> np.ndarray:
            out = np.empty((outer, inner), dtype=x.dtype)
            x3 = arrange(x).reshape(outer, count, inner)
            threads.run(lambda lo, hi: kreduce.reduce_middle(x3[lo:hi], kind, out[lo:hi]), outer,
                        row_grain(count * inner))
            return out.reshape(out_shape)

        return middle

    def compute(self, x: np.ndarray, axes_input: np.ndarray | None = None) -> np.ndarray:
        key = x.shape if axes_input is None else (x.shape, tuple(axes_input.reshape(-1).tolist()))
        call = self._calls.get(key)
        if call is None:
            call = self._calls[key] = self._make_call(x, axes_input)
        return call(x)


register_all(NumbaProvider.kernel, kreduce.KINDS, Reduce)
