"""The Reduce* family and ArgMax/ArgMin, as CuPy reductions (float16 accumulates in float32)."""

from __future__ import annotations

from typing import Any

import numpy as np
from onnxplug_sdk import GraphView, Node

from onnxplug_cupy.ops._base import FLOAT, INDEX, NUMERIC, CupyKernel, dtypes_in, normalize_axis, same_dtype
from onnxplug_cupy.provider import CupyProvider

_INT_OK = FLOAT | {np.dtype(np.int32), np.dtype(np.int64)}

#: op -> dtypes it is claimed for, and the opset from which ``axes`` is an input.
_KINDS: dict[str, tuple[frozenset[np.dtype], int]] = {
    "ReduceSum": (_INT_OK, 13), "ReduceMean": (FLOAT, 18), "ReduceMax": (_INT_OK, 18),
    "ReduceMin": (_INT_OK, 18), "ReduceProd": (_INT_OK, 18), "ReduceL1": (_INT_OK, 18),
    "ReduceL2": (FLOAT, 18), "ReduceSumSquare": (_INT_OK, 18), "ReduceLogSum": (FLOAT, 18),
    "ReduceLogSumExp": (FLOAT, 18),
}


def _empty_value(op: str, dtype: np.dtype) -> Any:
    """What a reduction over no elements gives (onnxruntime's and the reference's identities)."""
    if op in ("ReduceSum", "ReduceL1", "ReduceL2", "ReduceSumSquare"):
        return 0
    if op == "ReduceProd":
        return 1
    if op == "ReduceMean":
        return np.nan
    if op in ("ReduceLogSum", "ReduceLogSumExp"):
        return -np.inf
    if op == "ReduceMax":
        return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min
    return np.inf if dtype.kind == "f" else np.iinfo(dtype).max


class Reduce(CupyKernel):
    """Reduce over ``axes`` (attribute, or input from the op's opset 13/18), keepdims, and
    ``noop_with_empty_axes``."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        allowed, _ = _KINDS[node.op_type]
        return same_dtype(view, node, allowed, inputs=[0]) and dtypes_in(view, node.inputs[1:], INDEX)

    def axes(self, x: Any, axes: Any) -> tuple[int, ...] | None:
        """The reduced axes, or None for "return the input unchanged"."""
        _, from_input = _KINDS[self.node.op_type]
        if self.node.opset >= from_input:
            found = self.host_ints(1, axes) if axes is not None else []
        else:
            found = [int(a) for a in (self.attr("axes", None) or [])]
        if not found:
            if int(self.attr("noop_with_empty_axes", 0)):
                return None
            return tuple(range(x.ndim))
        return tuple(sorted({normalize_axis(a, x.ndim, self.node) for a in found}))

    def run(self, x: Any, axes: Any = None) -> Any:
        xp = self.xp
        picked = self.axes(x, axes)
        if picked is None:
            return x
        keep = bool(int(self.attr("keepdims", 1)))
        op = self.node.op_type
        if any(x.shape[a] == 0 for a in picked):
            shape = [1 if a in picked else d for a, d in enumerate(x.shape)] if keep else \
                [d for a, d in enumerate(x.shape) if a not in picked]
            return xp.full(shape, _empty_value(op, x.dtype), dtype=x.dtype)
        work = x.astype(np.float32) if x.dtype == np.float16 else x
        acc = work.dtype
        if op == "ReduceSum":
            y = xp.sum(work, axis=picked, keepdims=keep, dtype=acc)
        elif op == "ReduceMean":
            y = xp.mean(work, axis=picked, keepdims=keep, dtype=acc)
        elif op == "ReduceMax":
            y = xp.max(work, axis=picked, keepdims=keep)
        elif op == "ReduceMin":
            y = xp.min(work, axis=picked, keepdims=keep)
        elif op == "ReduceProd":
            y = xp.prod(work, axis=picked, keepdims=keep, dtype=acc)
        elif op == "ReduceL1":
            y = xp.sum(xp.abs(work), axis=picked, keepdims=keep, dtype=acc)
        elif op == "ReduceL2":
            y = xp.sqrt(xp.sum(work * work, axis=picked, keepdims=keep, dtype=acc))
        elif op == "ReduceSumSquare":
            y = xp.sum(work * work, axis=picked, keepdims=keep, dtype=acc)
        elif op == "ReduceLogSum":
            y = xp.log(xp.sum(work, axis=picked, keepdims=keep, dtype=acc))
        else:  # ReduceLogSumExp, shifted by the max so exp cannot overflow
            top = xp.max(work, axis=picked, keepdims=True)
            top = xp.where(xp.isfinite(top), top, xp.zeros_like(top))
            y = xp.log(xp.sum(xp.exp(work - top), axis=picked, keepdims=True, dtype=acc)) + top
            if not keep:
                y = y.reshape([d for a, d in enumerate(y.shape) if a not in picked])
        return y.astype(x.dtype, copy=False)


for _op in _KINDS:
    CupyProvider.kernel(_op)(Reduce)


@CupyProvider.kernel("ArgMax")
@CupyProvider.kernel("ArgMin")
class ArgExtreme(CupyKernel):
    """Index of the first (or, with ``select_last_index``, last) extreme along ``axis``, as int64."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return dtypes_in(view, node.inputs, NUMERIC) and dtypes_in(view, node.outputs, frozenset({np.dtype(np.int64)}))

    def run(self, x: Any) -> Any:
        xp = self.xp
        axis = normalize_axis(int(self.attr("axis", 0)), x.ndim, self.node)
        find = xp.argmax if self.node.op_type == "ArgMax" else xp.argmin
        if int(self.attr("select_last_index", 0)):
            y = (x.shape[axis] - 1) - find(xp.flip(x, axis=axis), axis=axis)
        else:
            y = find(x, axis=axis)
        y = y.astype(np.int64, copy=False)
        return xp.expand_dims(y, axis) if int(self.attr("keepdims", 1)) else y
