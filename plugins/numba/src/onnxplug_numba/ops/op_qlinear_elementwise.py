"""com.microsoft QLinearAdd and QLinearGlobalAveragePool on uint8 or int8, per-tensor parameters,
compiled. QLinearAdd follows onnxruntime's AVX2 kernel (MLAS qladd_avx2) bit for bit: with ratios
``rA = a_scale / c_scale`` and ``rB = b_scale / c_scale`` (float32) and ``fixed = c_zero_point -
fma(rA, a_zero_point, rB * b_zero_point)``, ``c = fma(a, rA, fma(b, rB, fixed))`` rounded half to
even and saturated; where A is one value per broadcast span onnxruntime passes the operands
swapped, so A and B trade places. QLinearGlobalAveragePool is the numpy provider's arithmetic
(com_microsoft/op_qlinear_global_average_pool): each plane summed exactly, ``zero_point * count``
subtracted, float32 of it times ``float32(x_scale) / count``, quantized by y_scale, NC... or (with
``channels_last``) N...C.
"""

from __future__ import annotations

import math
import operator

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic
from onnxplug_sdk import Decline, GraphView, Node

from onnxplug_numba.ops._base import NumbaKernel, row_grain
from onnxplug_numba.provider import NumbaProvider

_MS = "com.microsoft"
_EIGHT_BIT = {np.dtype(np.uint8): (np.float32(0), np.float32(255)),
              np.dtype(np.int8): (np.float32(-128), np.float32(127))}
_F32 = np.dtype(np.float32)


@intrinsic
def _fma(typingctx, a, b, c):  # type: ignore[no-untyped-def]
    """float32 ``a * b + c`` rounded once (LLVM's fma)."""
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        f = ir.FloatType()
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(f, [f, f, f]), "llvm.fma.f32")
        return builder.call(fn, args)

    return sig, codegen


@njit(nogil=True, error_model="numpy", cache=True)
def _add(p, q, rp, zp, rq, zq, zc, lo, hi, c):  # type: ignore[no-untyped-def]
    """c = saturate(rint(fma(p, rp, fma(q, rq, fixed)))) over flat arrays of one size."""
    fixed = np.float32(zc - _fma(rp, zp, np.float32(rq * zq)))
    for i in range(c.size):
        v = np.rint(_fma(np.float32(p[i]), rp, _fma(np.float32(q[i]), rq, fixed)))
        # the int32 conversion gives INT_MIN out of range (and for NaN), which saturates low
        c[i] = min(max(v, lo), hi) if -2147483648.0 <= v < 2147483648.0 else lo


@njit(nogil=True, error_model="numpy", cache=True)
def _mean_planes(x, zx, count, factor, sy, zy, lo, hi, y):  # type: ignore[no-untyped-def]
    """y[o, i] = quantize(float32(sum_s x[o, s, i] - zx * count) * factor) over (outer, S, inner) x."""
    outer, spatial, inner = x.shape
    sums = np.zeros(inner, dtype=np.int64)
    for o in range(outer):
        if inner == 1:  # NC...: one contiguous plane
            total = 0
            for s in range(spatial):
                total += np.int64(x[o, s, 0])
            sums[0] = total
        else:
            sums[:] = 0
            for s in range(spatial):
                row = x[o, s]
                for i in range(inner):
                    sums[i] += np.int64(row[i])
        for i in range(inner):
            mean = np.float32(sums[i] - zx * count) * factor
            v = np.rint(np.float32(mean / sy)) + zy
            y[o, i] = min(max(v, lo), hi)


def _scalar(kernel: NumbaKernel, name: str, value: np.ndarray | None, dtype: type) -> object:
    """A per-tensor parameter as a numpy scalar (0 when omitted)."""
    if value is None:
        return dtype(0)
    if value.size != 1:
        raise ValueError(f"{kernel.node.describe()}: {name} must be one value (per tensor), "
                         f"got shape {list(value.shape)}")
    return dtype(value.reshape(-1)[0])


def _eight_bit(node: Node, view: GraphView, data: tuple[int, ...], scales: tuple[int, ...]) -> bool | Decline:
    for i in data:
        if view.dtype_of(node.inputs[i]) not in _EIGHT_BIT:
            return Decline("dtype", f"{node.inputs[i]!r} is {view.dtype_of(node.inputs[i])}, not uint8 or int8")
    if len({view.dtype_of(node.inputs[i]) for i in data}) > 1:
        return Decline("dtype", "the quantized inputs differ in type")
    for i in scales:
        if view.dtype_of(node.inputs[i]) != _F32:
            return Decline("dtype", f"scale {node.inputs[i]!r} is {view.dtype_of(node.inputs[i])}, not float32")
    return True


class _Planned(NumbaKernel):
    """A kernel whose per-tensor parameters are worked into a plan per input shape, kept while
    they are the same constant arrays."""

    PARAMS: tuple[int, ...] = ()

    def __init__(self, node: Node, context) -> None:  # type: ignore[no-untyped-def]
        super().__init__(node, context)
        self.constant = all(i >= len(node.inputs) or not node.inputs[i] or node.inputs[i] in context.constants
                            for i in self.PARAMS)
        self._plans: dict[tuple, tuple] = {}

    def _plan(self, key: tuple, params: tuple, build) -> tuple:  # type: ignore[no-untyped-def]
        entry = self._plans.get(key)
        if entry is not None and all(map(operator.is_, entry[0], params)):
            return entry[1]
        plan = build()
        if self.constant:
            self._plans[key] = (params, plan)
        return plan


@NumbaProvider.kernel("QLinearAdd", 1, domain=_MS)
class QLinearAdd(_Planned):
    """C = quantize(dequantize(A) + dequantize(B)), broadcasting as numpy."""

    PARAMS = (1, 2, 4, 5, 6, 7)

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        return _eight_bit(node, view, (0, 3), (1, 4, 6))

    def compute(self, a, a_scale, a_zero_point, b, b_scale, b_zero_point, c_scale, c_zero_point=None):  # type: ignore[no-untyped-def]
        params = (a_scale, a_zero_point, b_scale, b_zero_point, c_scale, c_zero_point)
        swap, args, shape = self._plan((a.shape, b.shape, a.dtype, b.dtype), params, lambda: self._build(a, b, *params))
        first, second = (b, a) if swap else (a, b)
        if shape is not None:
            first, second = np.broadcast_to(first, shape), np.broadcast_to(second, shape)
        fp, fq = np.ascontiguousarray(first).reshape(-1), np.ascontiguousarray(second).reshape(-1)
        c = np.empty(first.shape, dtype=a.dtype)
        fc = c.reshape(-1)
        size = fc.size
        grain = row_grain(1)
        if size >= 2 * grain and self.threads.parallel:
            self.threads.run(lambda lo, hi: _add(fp[lo:hi], fq[lo:hi], *args, fc[lo:hi]), size, grain)
        else:
            _add(fp, fq, *args, fc)
        return c

    def _build(self, a, b, a_scale, a_zero_point, b_scale, b_zero_point, c_scale, c_zero_point) -> tuple:  # type: ignore[no-untyped-def]
        """(swap A and B, the kernel's parameters, the broadcast shape or None)."""
        if a.dtype != b.dtype or a.dtype not in _EIGHT_BIT:
            raise ValueError(f"{self.node.describe()}: A and B must be one 8-bit type, got {a.dtype} and {b.dtype}")
        f32 = np.float32
        sc = _scalar(self, "C_scale", c_scale, f32)
        side_a = (f32(_scalar(self, "A_scale", a_scale, f32) / sc), _scalar(self, "A_zero_point", a_zero_point, f32))
        side_b = (f32(_scalar(self, "B_scale", b_scale, f32) / sc), _scalar(self, "B_zero_point", b_zero_point, f32))
        swap = _scalar_spans(a.shape, b.shape)
        args = (*(side_b + side_a if swap else side_a + side_b), _scalar(self, "C_zero_point", c_zero_point, f32),
                *_EIGHT_BIT[a.dtype])
        return swap, args, None if a.shape == b.shape else np.broadcast_shapes(a.shape, b.shape)


def _scalar_spans(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> bool:
    """Whether onnxruntime's broadcast runs A as one value per span of B: A's innermost axis where
    the output is wider than 1 has length 1 (or the output is a single value)."""
    rank = max(len(a_shape), len(b_shape))
    a = (1,) * (rank - len(a_shape)) + tuple(a_shape)
    b = (1,) * (rank - len(b_shape)) + tuple(b_shape)
    for i in range(rank - 1, -1, -1):
        if max(a[i], b[i]) != 1:
            return a[i] == 1
    return True


@NumbaProvider.kernel("QLinearGlobalAveragePool", 1, domain=_MS)
class QLinearGlobalAveragePool(_Planned):
    """Y = quantize(mean over the spatial axes of dequantize(X)); the spatial axes kept as 1."""

    PARAMS = (1, 2, 3, 4)

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        found = _eight_bit(node, view, (0,), (1, 3))
        if found is not True:
            return found
        if len(node.inputs) > 4 and node.inputs[4] and view.dtype_of(node.inputs[4]) != view.dtype_of(node.inputs[0]):
            return Decline("dtype", "y_zero_point's type is not X's")
        return True

    def compute(self, x, x_scale, x_zero_point, y_scale, y_zero_point=None):  # type: ignore[no-untyped-def]
        params = (x_scale, x_zero_point, y_scale, y_zero_point)
        x3_shape, out_shape, y2_shape, args, share = self._plan((x.shape, x.dtype), params,
                                                                lambda: self._build(x, *params))
        x3 = np.ascontiguousarray(x).reshape(x3_shape)
        y = np.empty(out_shape, dtype=x.dtype)
        y2 = y.reshape(y2_shape)
        if share:
            self.threads.run(lambda lo, hi: _mean_planes(x3[lo:hi], *args, y2[lo:hi]), x3_shape[0], share)
        else:
            _mean_planes(x3, *args, y2)
        return y

    def _build(self, x, x_scale, x_zero_point, y_scale, y_zero_point) -> tuple:  # type: ignore[no-untyped-def]
        """(X as (outer, spatial, inner), Y's shape, Y as (outer, inner), the kernel's parameters,
        the thread grain or 0 to run on this thread)."""
        if x.dtype not in _EIGHT_BIT or x.ndim < 3:
            raise ValueError(f"{self.node.describe()}: X must be uint8 or int8 with spatial axes, got {x.dtype} "
                             f"{list(x.shape)}")
        last = bool(self.attr("channels_last", 0))
        n = x.shape[0]
        channels = x.shape[-1] if last else x.shape[1]
        count = math.prod(x.shape[1:-1] if last else x.shape[2:])
        # (outer, spatial, inner): N...C is (N, S, C); NC... is (N*C, S, 1)
        x3_shape = (n, count, channels) if last else (n * channels, count, 1)
        factor = np.float32(_scalar(self, "x_scale", x_scale, np.float32)) / np.float32(count)
        zx = int(_scalar(self, "x_zero_point", x_zero_point, np.int64))
        out_shape = (n, *([1] * (x.ndim - 2)), channels) if last else (n, channels, *([1] * (x.ndim - 2)))
        args = (zx, count, factor, _scalar(self, "y_scale", y_scale, np.float32),
                _scalar(self, "y_zero_point", y_zero_point, np.float32), *_EIGHT_BIT[x.dtype])
        grain = row_grain(count * x3_shape[2])
        share = grain if x3_shape[0] >= 2 * grain and self.threads.parallel else 0
        return x3_shape, out_shape, (x3_shape[0], x3_shape[2]), args, share
