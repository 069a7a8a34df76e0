"""MatMulInteger, QLinearMatMul and com.microsoft MatMulIntegerToFloat, DynamicQuantizeMatMul
and QGemm on 8-bit operands, all on one exact integer product (kernels/int_matmul.py) with the
numpy provider's (onnxruntime's) float steps after it.

B is prepared once at construction when it and its zero point are constant initializers (else on
each call, or per matrix of a batched B). A's leading axes are one run of rows; a zero point or
scale of A has one value or one per row of each matrix, of B one or one per column. Rows go to
the session's threads from ``THREADED_MIN_MACS`` multiply-adds. Declined: scales other than
float32, B of unknown rank, and (MatMulIntegerToFloat) an output type other than float32.
"""

from __future__ import annotations

import math

import numpy as np
from onnxplug_sdk import Decline, GraphView, KernelContext, Node

from onnxplug_numba.kernels import int_matmul as kim
from onnxplug_numba.kernels import quantize as kq
from onnxplug_numba.kernels import vnni
from onnxplug_numba.ops._base import NumbaKernel
from onnxplug_numba.provider import NumbaProvider

_F32 = np.dtype(np.float32)
_EIGHT_BIT = (np.dtype(np.uint8), np.dtype(np.int8))
_BOUNDS = {np.dtype(np.uint8): (np.float32(0), np.float32(255)),
           np.dtype(np.int8): (np.float32(-128), np.float32(127))}
_ONE = np.ones(1, np.float32)
_ZERO = np.zeros(1, np.int32)
_NO_BIAS = np.zeros(1, np.float32)
_NO_C = np.zeros((1, 1), np.int32)

#: Multiply-adds from which a product's rows are shared over the threads: below, a hand-off to a
#: pool thread costs more than the rows it takes.
THREADED_MIN_MACS = 1 << 22


def _check(node: Node, view: GraphView, eight: tuple[int, ...], floats: tuple[int, ...], b: int) -> bool | Decline:
    """8-bit inputs ``eight`` and float32 inputs ``floats`` (those present), B of rank 2 or more."""
    for i in eight + floats:
        if i < len(node.inputs) and node.inputs[i]:
            dtype = view.dtype_of(node.inputs[i])
            allowed = _EIGHT_BIT if i in eight else (_F32,)
            if dtype not in allowed:
                return Decline("dtype", f"input {node.inputs[i]!r} is {dtype}, not "
                                        f"{'uint8 or int8' if i in eight else 'float32'}")
    t = view.type_of(node.inputs[b])
    if t is None or t.shape is None or len(t.shape) < 2:
        return Decline("shape", f"B {node.inputs[b]!r} is not known to have rank 2 or more")
    return True


def _vector(x: np.ndarray | None, default: np.ndarray, count: int, what: str, where: str) -> np.ndarray:
    """A parameter flat, with one value or ``count``."""
    if x is None:
        return default
    flat = x.reshape(-1)
    if flat.size != 1 and flat.size != count:
        raise ValueError(f"{where}: {what} has {flat.size} values, not 1 or {count}")
    return flat


class _IntegerProduct(NumbaKernel):
    """An integer product with B at input ``B`` and its zero point at ``B_ZP``."""

    B, B_ZP = 1, 3
    trans_b = False

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.vnni = vnni.AVAILABLE
        names = [*node.inputs, "", "", "", "", ""]
        b, zp = names[self.B], names[self.B_ZP]
        self._prepared = None
        if b in context.constants and (not zp or zp in context.constants):
            b_value = np.asarray(context.constants[b])
            self._prepared = self._prepare(b_value, np.asarray(context.constants[zp]) if zp else None)

    def _prepare(self, b: np.ndarray, zp: np.ndarray | None) -> list[tuple]:  # type: ignore[type-arg]
        """B's matrices, each prepared (kernels/int_matmul.py)."""
        if self.trans_b:
            b = np.swapaxes(b, -1, -2)
        mats = b.reshape(-1, *b.shape[-2:])
        return [kim.prepare(m, zp, self.vnni) for m in mats]

    def _product(self, a: np.ndarray, azp: np.ndarray, b: np.ndarray, bzp: np.ndarray | None, stage: int,
                 out_dtype: np.dtype, sa: np.ndarray = _ONE, sb: np.ndarray = _ONE, alpha: float = 1.0,
                 ys: float = 1.0, bias: np.ndarray | None = None, c: np.ndarray | None = None,
                 y_zp: float = 0.0) -> np.ndarray:
        """(A - azp) @ (B - bzp) through ``stage``, batched as numpy.matmul when B has more than two
        axes (A at least one)."""
        where = self.node.describe()
        k = a.shape[-1]
        bk, n = (b.shape[-1], b.shape[-2]) if self.trans_b else (b.shape[-2], b.shape[-1])
        if bk != k:
            raise ValueError(f"{where}: A {list(a.shape)} and B {list(b.shape)} do not fit a product")
        rows = a.shape[-2] if a.ndim >= 2 else 1
        azp = _vector(azp, _ZERO, rows, "a_zero_point", where)
        sa = _vector(sa, _ONE, rows, "a_scale", where)
        sb = _vector(sb, _ONE, n, "b_scale", where)
        prepared = self._prepared if self._prepared is not None else self._prepare(b, bzp)
        lo, hi = _BOUNDS.get(np.dtype(out_dtype), (np.float32(0), np.float32(0)))
        args = (stage, sa, sb, np.float32(alpha), np.float32(ys), _NO_BIAS if bias is None else bias,
                bias is not None, _NO_C if c is None else c, c is not None, np.float32(y_zp), lo, hi)
        if b.ndim == 2:
            a2 = np.ascontiguousarray(a).reshape(-1, k)
            out = np.empty((a2.shape[0], n), out_dtype)
            self._rows(a2, azp, rows, prepared[0], args, out)
            return out.reshape(*a.shape[:-1], n)
        a3 = a.reshape(1, 1, k) if a.ndim == 1 else a
        batch = np.broadcast_shapes(a3.shape[:-2], b.shape[:-2])
        a_b = np.ascontiguousarray(np.broadcast_to(a3, (*batch, *a3.shape[-2:]))).reshape(-1, rows, k)
        index = np.broadcast_to(np.arange(len(prepared)).reshape(b.shape[:-2]), batch).reshape(-1)
        out = np.empty((a_b.shape[0], rows, n), out_dtype)
        for i in range(a_b.shape[0]):
            self._rows(a_b[i], azp, rows, prepared[index[i]], args, out[i])
        return out.reshape(*batch, *(a.shape[-2:-1] if a.ndim >= 2 else ()), n)

    def _rows(self, a2: np.ndarray, azp: np.ndarray, rows: int, weights: tuple, args: tuple,  # type: ignore[type-arg]
              out: np.ndarray) -> None:
        """The rows of ``out`` from the rows of ``a2``, over the threads when large enough."""
        rows = max(rows, 1)
        if self.vnni:
            shift = 128 if a2.dtype == np.int8 else 0

            def work(lo: int, hi: int) -> None:
                kim.rows_vnni(a2, shift, azp, rows, *weights, *args, lo, hi, out)
        else:
            def work(lo: int, hi: int) -> None:
                kim.rows_plain(a2, azp, rows, weights[0], *args, lo, hi, out)

        m = a2.shape[0]
        macs = m * a2.shape[1] * out.shape[1]
        if self.threads.parallel and macs >= THREADED_MIN_MACS:
            self.threads.run(work, m, max(1, THREADED_MIN_MACS // (2 * max(1, macs // max(m, 1)))))
        elif m:
            work(0, m)


@NumbaProvider.kernel("MatMulInteger", 10)
class MatMulInteger(_IntegerProduct):
    """(A - a_zero_point) @ (B - b_zero_point) in int32."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        return _check(node, view, (0, 1, 2, 3), (), 1)

    def compute(self, a, b, a_zero_point=None, b_zero_point=None):  # type: ignore[no-untyped-def]
        return self._product(a, a_zero_point, b, b_zero_point, kim.INT32, np.dtype(np.int32))


@NumbaProvider.kernel("MatMulIntegerToFloat", domain="com.microsoft")
class MatMulIntegerToFloat(_IntegerProduct):
    """((A - a_zero_point) @ (B - b_zero_point)) * (a_scale * b_scale) (+ bias), float32."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        return _check(node, view, (0, 1, 4, 5), (2, 3, 6), 1)

    B, B_ZP = 1, 5

    def compute(self, a, b, a_scale, b_scale, a_zero_point=None, b_zero_point=None, bias=None):  # type: ignore[no-untyped-def]
        if a_zero_point is not None and a_zero_point.size != 1:
            raise ValueError(f"{self.node.describe()}: a_zero_point must be per tensor")
        return self._product(a, a_zero_point, b, b_zero_point, kim.FLOAT, _F32, a_scale.reshape(()).reshape(1),
                             b_scale, bias=None if bias is None else bias.reshape(-1))


@NumbaProvider.kernel("DynamicQuantizeMatMul", domain="com.microsoft")
class DynamicQuantizeMatMul(_IntegerProduct):
    """A quantized to uint8 over one range (as DynamicQuantizeLinear), then MatMulIntegerToFloat."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        return _check(node, view, (1, 3), (0, 2, 4), 1)

    B, B_ZP = 1, 3

    def compute(self, a, b, b_scale, b_zero_point=None, bias=None):  # type: ignore[no-untyped-def]
        qa = np.empty(a.shape, np.uint8)
        scale, zp = kq.dynamic_quantize(np.ascontiguousarray(a).reshape(-1), qa.reshape(-1))
        return self._product(qa, np.full(1, zp, np.int32), b, b_zero_point, kim.FLOAT, _F32,
                             np.full(1, scale, np.float32), b_scale, bias=None if bias is None else bias.reshape(-1))


@NumbaProvider.kernel("QLinearMatMul", 10)
class QLinearMatMul(_IntegerProduct):
    """The integer product requantized with a_scale * b_scale / y_scale to y_zero_point's type."""

    B, B_ZP = 3, 5

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        return _check(node, view, (0, 2, 3, 5, 7), (1, 4, 6), 3)

    def compute(self, a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point=None):  # type: ignore[no-untyped-def]
        out_dtype = y_zero_point.dtype if y_zero_point is not None else a.dtype
        y_zp = 0.0 if y_zero_point is None else float(y_zero_point.reshape(-1)[0])
        return self._product(a, a_zero_point, b, b_zero_point, kim.REQUANTIZE, out_dtype, a_scale, b_scale,
                             ys=float(y_scale.reshape(-1)[0]), y_zp=y_zp)


@NumbaProvider.kernel("QGemm", domain="com.microsoft")
class QGemm(_IntegerProduct):
    """alpha * (A' - a_zero_point) (B' - b_zero_point) * a_scale * b_scale with the int32 C added to
    the integer product; requantized when y_scale is given, else float32."""

    B, B_ZP = 3, 5

    def __init__(self, node: Node, context: KernelContext) -> None:
        self.trans_b = bool(node.attr("transB", 0))
        super().__init__(node, context)
        self.trans_a = bool(self.attr("transA", 0))
        self.alpha = float(self.attr("alpha", 1.0))

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        found = _check(node, view, (0, 2, 3, 5, 8), (1, 4, 7), 3)
        if found is not True:
            return found
        if len(node.inputs) > 6 and node.inputs[6] and view.dtype_of(node.inputs[6]) != np.dtype(np.int32):
            return Decline("dtype", f"C {node.inputs[6]!r} is {view.dtype_of(node.inputs[6])}, not int32")
        return True

    def compute(self, a, a_scale, a_zero_point, b, b_scale, b_zero_point, c=None, y_scale=None,  # type: ignore[no-untyped-def]
                y_zero_point=None):
        if a.ndim != 2 or b.ndim != 2:
            raise ValueError(f"{self.node.describe()}: A and B must be 2-D, got {list(a.shape)} and {list(b.shape)}")
        for name, value in (("a_zero_point", a_zero_point), ("a_scale", a_scale), ("y_scale", y_scale)):
            if value is not None and value.size != 1:
                raise ValueError(f"{self.node.describe()}: {name} must be per tensor")
        a = a.T if self.trans_a else a
        c2 = None if c is None else c.reshape((1,) * (2 - c.ndim) + c.shape) if c.ndim <= 2 else c
        if c2 is not None:
            m, n = a.shape[0], b.shape[0] if self.trans_b else b.shape[1]
            if c2.ndim != 2 or c2.shape[0] not in (1, m) or c2.shape[1] not in (1, n):
                raise ValueError(f"{self.node.describe()}: C {list(c.shape)} does not broadcast to [{m}, {n}]")
        if y_scale is None:
            return self._product(a, a_zero_point, b, b_zero_point, kim.FLOAT, _F32, a_scale, b_scale, self.alpha,
                                 c=c2)
        out_dtype = y_zero_point.dtype if y_zero_point is not None else a.dtype
        y_zp = 0.0 if y_zero_point is None else float(y_zero_point.reshape(-1)[0])
        return self._product(a, a_zero_point, b, b_zero_point, kim.REQUANTIZE, out_dtype, a_scale, b_scale,
                             self.alpha, float(y_scale.reshape(-1)[0]), c=c2, y_zp=y_zp)
