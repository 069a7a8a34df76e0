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

import numpy as np
from onnxplug_sdk import Decline, GraphView, KernelContext, Node

from onnxplug_numba.kernels import int_matmul as kim
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
_NO_BOUNDS = (np.float32(0), np.float32(0))
_F_ONE = np.float32(1.0)
_I8 = np.dtype(np.int8)
_I32 = np.dtype(np.int32)

#: Multiply-adds from which a product's rows are shared over the threads: two threads were slower
#: than one on products of up to 128 x 768 x 768 (the VNNI products are short; a hand-off to a pool
#: thread and the second thread's buffers cost more than the rows it takes).
THREADED_MIN_MACS = 1 << 27


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

    def _product(self, a: np.ndarray, azp: np.ndarray | None, b: np.ndarray, bzp: np.ndarray | None, stage: int,
                 out_dtype: np.dtype, sa: np.ndarray = _ONE, sb: np.ndarray = _ONE, alpha: np.float32 = _F_ONE,
                 ys: np.ndarray = _ONE, bias: np.ndarray | None = None, c: np.ndarray | None = None,
                 y_zp: np.ndarray = _ZERO) -> np.ndarray:
        """(A - azp) @ (B - bzp) through ``stage``, batched as numpy.matmul when B has more than two
        axes (A at least one). ``ys`` and ``y_zp`` are one-value arrays."""
        k = a.shape[-1]
        bk, n = (b.shape[-1], b.shape[-2]) if self.trans_b else (b.shape[-2], b.shape[-1])
        rows = a.shape[-2] if a.ndim >= 2 else 1
        azp = _ZERO if azp is None else azp.reshape(-1)
        sa, sb = sa.reshape(-1), sb.reshape(-1)
        if bk != k or azp.size not in (1, rows) or sa.size not in (1, rows) or sb.size not in (1, n):
            raise ValueError(f"{self.node.describe()}: A {list(a.shape)} and B {list(b.shape)} do not fit a "
                             f"product, or a zero point or scale has neither one value nor one per row of A "
                             f"or column of B")
        prepared = self._prepared if self._prepared is not None else self._prepare(b, bzp)
        lo, hi = _BOUNDS.get(out_dtype, _NO_BOUNDS)
        args = (stage, sa, sb, alpha, ys, _NO_BIAS if bias is None else bias, bias is not None,
                _NO_C if c is None else c, c is not None, y_zp, lo, hi)
        if b.ndim == 2:
            a2 = a.reshape(-1, k) if a.flags.c_contiguous else np.ascontiguousarray(a).reshape(-1, k)
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

    def _one_call(self, a: np.ndarray, b: np.ndarray) -> tuple | None:  # type: ignore[type-arg]
        """B's prepared VNNI form when one call computes the product: B constant and 2-D, A
        contiguous with two axes or more and fitting it, too few multiply-adds for threads."""
        w = self._prepared
        if w is None or not self.vnni or b.ndim != 2 or a.ndim < 2 or not a.flags.c_contiguous or \
                a.shape[-1] != b.shape[0] or (self.threads.parallel and a.size * b.shape[1] >= THREADED_MIN_MACS):
            return None
        return w[0]

    def _rows(self, a2: np.ndarray, azp: np.ndarray, rows: int, weights: tuple, args: tuple,  # type: ignore[type-arg]
              out: np.ndarray) -> None:
        """The rows of ``out`` from the rows of ``a2``, over the threads when large enough."""
        rows = max(rows, 1)
        m = a2.shape[0]
        per_row = a2.shape[1] * out.shape[1]
        if self.vnni:
            shift = 128 if a2.dtype == _I8 else 0
            if m * per_row < THREADED_MIN_MACS or not self.threads.parallel:
                kim.rows_vnni(a2, shift, azp, rows, *weights, *args, 0, m, out)
                return

            def work(lo: int, hi: int) -> None:
                kim.rows_vnni(a2, shift, azp, rows, *weights, *args, lo, hi, out)
        else:
            def work(lo: int, hi: int) -> None:
                kim.rows_plain(a2, azp, rows, weights[0], *args, lo, hi, out)

            if m * per_row < THREADED_MIN_MACS or not self.threads.parallel:
                work(0, m)
                return
        self.threads.run(work, m, max(1, THREADED_MIN_MACS // (2 * max(1, per_row))))


@NumbaProvider.kernel("MatMulInteger", 10)
class MatMulInteger(_IntegerProduct):
    """(A - a_zero_point) @ (B - b_zero_point) in int32."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        return _check(node, view, (0, 1, 2, 3), (), 1)

    def compute(self, a, b, a_zero_point=None, b_zero_point=None):  # type: ignore[no-untyped-def]
        w = self._one_call(a, b)
        if w is not None:
            azp = _ZERO if a_zero_point is None else a_zero_point.reshape(-1)
            if azp.size == 1 or azp.size == a.shape[-2]:
                out = np.empty((*a.shape[:-1], b.shape[1]), _I32)
                kim.int32_vnni(a.reshape(-1, a.shape[-1]), 128 if a.dtype == _I8 else 0, azp, a.shape[-2], *w,
                               out.reshape(-1, b.shape[1]))
                return out
        return self._product(a, a_zero_point, b, b_zero_point, kim.INT32, _I32)


@NumbaProvider.kernel("MatMulIntegerToFloat", domain="com.microsoft")
class MatMulIntegerToFloat(_IntegerProduct):
    """((A - a_zero_point) @ (B - b_zero_point)) * (a_scale * b_scale) (+ bias), float32."""

    B, B_ZP = 1, 5

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        return _check(node, view, (0, 1, 4, 5), (2, 3, 6), 1)

    def compute(self, a, b, a_scale, b_scale, a_zero_point=None, b_zero_point=None, bias=None):  # type: ignore[no-untyped-def]
        if a_scale.size != 1 or (a_zero_point is not None and a_zero_point.size != 1):
            raise ValueError(f"{self.node.describe()}: a_scale and a_zero_point must be per tensor")
        w = self._one_call(a, b)
        if w is not None and (b_scale.size == 1 or b_scale.size == b.shape[1]):
            out = np.empty((*a.shape[:-1], b.shape[1]), _F32)
            kim.float_vnni(a.reshape(-1, a.shape[-1]), 128 if a.dtype == _I8 else 0,
                           _ZERO if a_zero_point is None else a_zero_point.reshape(-1), *w, a_scale.reshape(-1),
                           b_scale.reshape(-1), _NO_BIAS if bias is None else bias.reshape(-1), bias is not None,
                           out.reshape(-1, b.shape[1]))
            return out
        return self._product(a, a_zero_point, b, b_zero_point, kim.FLOAT, _F32, a_scale, b_scale,
                             bias=None if bias is None else bias.reshape(-1))


@NumbaProvider.kernel("DynamicQuantizeMatMul", domain="com.microsoft")
class DynamicQuantizeMatMul(_IntegerProduct):
    """A quantized to uint8 over one range (as DynamicQuantizeLinear), then MatMulIntegerToFloat."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        return _check(node, view, (1, 3), (0, 2, 4), 1)

    def compute(self, a, b, b_scale, b_zero_point=None, bias=None):  # type: ignore[no-untyped-def]
        w = self._one_call(a, b)
        if w is not None and (b_scale.size == 1 or b_scale.size == b.shape[1]):
            out = np.empty((*a.shape[:-1], b.shape[1]), _F32)
            kim.dynamic_vnni(a.reshape(-1, a.shape[-1]), *w, b_scale.reshape(-1),
                             _NO_BIAS if bias is None else bias.reshape(-1), bias is not None,
                             out.reshape(-1, b.shape[1]))
            return out
        qa = np.empty(a.shape, np.uint8)
        params = np.empty(1, np.float32)
        zp = np.empty(1, np.int32)
        kim.quantize(a if a.flags.c_contiguous else np.ascontiguousarray(a), qa, params, zp)
        return self._product(qa, zp, b, b_zero_point, kim.FLOAT, _F32, params, b_scale,
                             bias=None if bias is None else bias.reshape(-1))


@NumbaProvider.kernel("QLinearMatMul", 10)
class QLinearMatMul(_IntegerProduct):
    """The integer product requantized with a_scale * b_scale / y_scale to y_zero_point's type."""

    B, B_ZP = 3, 5

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        return _check(node, view, (0, 2, 3, 5, 7), (1, 4, 6), 3)

    def compute(self, a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point=None):  # type: ignore[no-untyped-def]
        out_dtype = y_zero_point.dtype if y_zero_point is not None else a.dtype
        y_zp = _ZERO if y_zero_point is None else y_zero_point.reshape(-1)
        return self._product(a, a_zero_point, b, b_zero_point, kim.REQUANTIZE, out_dtype, a_scale, b_scale,
                             ys=y_scale.reshape(-1), y_zp=y_zp)


@NumbaProvider.kernel("QGemm", domain="com.microsoft")
class QGemm(_IntegerProduct):
    """alpha * (A' - a_zero_point) (B' - b_zero_point) * a_scale * b_scale with the int32 C added to
    the integer product; requantized when y_scale is given, else float32."""

    B, B_ZP = 3, 5

    def __init__(self, node: Node, context: KernelContext) -> None:
        self.trans_b = bool(node.attr("transB", 0))
        super().__init__(node, context)
        self.trans_a = bool(self.attr("transA", 0))
        self.alpha = np.float32(self.attr("alpha", 1.0))

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool | Decline:
        found = _check(node, view, (0, 2, 3, 5, 8), (1, 4, 7), 3)
        if found is not True:
            return found
        if len(node.inputs) > 6 and node.inputs[6] and view.dtype_of(node.inputs[6]) != _I32:
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
        y_zp = _ZERO if y_zero_point is None else y_zero_point.reshape(-1)
        return self._product(a, a_zero_point, b, b_zero_point, kim.REQUANTIZE, out_dtype, a_scale, b_scale,
                             self.alpha, y_scale.reshape(-1), c=c2, y_zp=y_zp)
