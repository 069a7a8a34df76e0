"""QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear on float32 and 8-bit integers,
per tensor or per axis, compiled (kernels/quantize.py). Blocked quantization, 4/16-bit and float8
types and a ``precision`` attribute are left to the numpy provider."""

from __future__ import annotations

import math

import numpy as np
from onnxplug_sdk import Decline, GraphView, KernelContext, Node

from onnxplug_numba.kernels import quantize as kq
from onnxplug_numba.ops._base import NumbaKernel, row_grain
from onnxplug_numba.provider import NumbaProvider

op = NumbaProvider.kernel

_F32 = np.dtype(np.float32)
_EIGHT_BIT = {np.dtype(np.uint8): (0, 255), np.dtype(np.int8): (-128, 127)}
#: output_dtype attribute values (TensorProto.DataType) of the 8-bit types
_ATTR_TYPES = {2: np.dtype(np.uint8), 3: np.dtype(np.int8)}


def _common(node: Node, view: GraphView) -> Decline | None:
    """The Decline for what neither kernel computes: blocks, or a per-axis parameter whose axis is
    not known to be in range."""
    if int(node.attr("block_size", 0) or 0):
        return Decline("attribute", "blocked quantization (block_size) is not computed")
    t = view.type_of(node.inputs[0])
    if t is None or t.shape is None:
        return Decline("shape", f"the rank of {node.inputs[0]!r} is unknown")
    if view.dtype_of(node.inputs[1]) != _F32:
        return Decline("dtype", f"scale {node.inputs[1]!r} is {view.dtype_of(node.inputs[1])}, not float32")
    return None


def _view(x: np.ndarray, params: tuple[np.ndarray, ...], axis: int, where: str) -> np.ndarray:
    """``x`` as (outer, channels, inner) for parameters per tensor (one channel) or per ``axis``."""
    if all(p.size == 1 and (p.ndim <= 1) for p in params) or x.ndim == 0:
        return x.reshape(1, 1, x.size)
    axis = axis % x.ndim
    channels = x.shape[axis]
    for p in params:
        if p.ndim != 1 or p.size != channels:
            raise ValueError(f"{where}: per-axis parameter must be 1-D with {channels} elements "
                             f"(axis {axis}), got shape {list(p.shape)}")
    return x.reshape(math.prod(x.shape[:axis]), channels, math.prod(x.shape[axis + 1:]))


class _Linear(NumbaKernel):
    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.axis = int(self.attr("axis", 1))

    def _apply(self, kernel, x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, out_dtype: np.dtype,
               *extra) -> np.ndarray:  # type: ignore[no-untyped-def]
        """``kernel(x rows, scale, zero point, *extra, y rows)`` over the (outer, channels, inner)
        views of x and a new y, its outer rows split over the threads."""
        x3 = _view(np.ascontiguousarray(x), (scale, zero_point), self.axis, self.node.describe())
        s = np.ascontiguousarray(scale, dtype=np.float32).reshape(-1)
        zp = np.ascontiguousarray(zero_point).reshape(-1)
        y = np.empty(x3.shape, dtype=out_dtype)
        outer, channels, inner = x3.shape

        def rows(lo: int, hi: int) -> None:
            kernel(x3[lo:hi], s, zp, *extra, y[lo:hi])

        if outer > 1:
            self.threads.run(rows, outer, row_grain(channels * inner))
        else:
            rows(0, 1)
        return y.reshape(x.shape)


@op("QuantizeLinear", 10)
class QuantizeLinear(_Linear):
    """float32 to uint8/int8: ``clip(rint(x / scale) + zero_point)``."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        found = _common(node, view)
        if found is not None:
            return found
        if view.dtype_of(node.inputs[0]) != _F32:
            return Decline("dtype", f"input {node.inputs[0]!r} is {view.dtype_of(node.inputs[0])}, not float32")
        if node.attr("precision", 0):
            return Decline("attribute", "a precision attribute is not computed")
        target = _target(node, view)
        if target not in _EIGHT_BIT:
            return Decline("dtype", f"quantized type {target} is not uint8 or int8")
        return True

    def compute(self, x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None = None) -> np.ndarray:
        if zero_point is None:  # the type output_dtype names (uint8 by default), zero point 0
            zero_point = np.zeros(1, dtype=_ATTR_TYPES.get(int(self.attr("output_dtype", 0) or 2)))
        lo, hi = _EIGHT_BIT[zero_point.dtype]
        return self._apply(kq.quantize, x, scale, zero_point, zero_point.dtype, lo, hi)


def _target(node: Node, view: GraphView) -> np.dtype | None:
    if len(node.inputs) > 2 and node.inputs[2]:
        return view.dtype_of(node.inputs[2])
    return _ATTR_TYPES.get(int(node.attr("output_dtype", 0) or 2))


@op("DequantizeLinear", 10)
class DequantizeLinear(_Linear):
    """uint8/int8/int32 to float32: ``(x - zero_point) * scale``."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        found = _common(node, view)
        if found is not None:
            return found
        dtype = view.dtype_of(node.inputs[0])
        if dtype not in _EIGHT_BIT and dtype != np.dtype(np.int32):
            return Decline("dtype", f"input {node.inputs[0]!r} is {dtype}, not uint8, int8 or int32")
        if int(node.attr("output_dtype", 0) or 1) != 1:
            return Decline("attribute", "an output_dtype other than float32")
        return True

    def compute(self, x: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None = None) -> np.ndarray:
        zp = zero_point if zero_point is not None else np.zeros(1, dtype=x.dtype)
        return self._apply(kq.dequantize, x, scale, zp, _F32)


@op("DynamicQuantizeLinear", 11)
class DynamicQuantizeLinear(NumbaKernel):
    """float32 to uint8 over [min(0, x), max(0, x)], with the scale and zero point it used."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        if view.dtype_of(node.inputs[0]) != _F32:
            return Decline("dtype", f"input {node.inputs[0]!r} is {view.dtype_of(node.inputs[0])}, not float32")
        return True

    def compute(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        flat = np.ascontiguousarray(x).reshape(-1)
        y = np.empty(flat.size, dtype=np.uint8)
        scale, zp = kq.dynamic_quantize(flat, y)
        return y.reshape(x.shape), np.asarray(scale, dtype=np.float32), np.asarray(zp, dtype=np.uint8)
