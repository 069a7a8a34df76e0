"""MatMul (batched, broadcasting), Gemm and FusedGemm (Gemm + activation): BLAS via numpy.matmul,
except products of few rows with a large weight (classifier heads): kernels/gemv.py, reading the
weight as (N, K) rows (Gemm's transB layout as given, or a constant weight's, laid out once)."""

from __future__ import annotations

import numpy as np
from onnxplug_sdk import GraphView, KernelContext, Node

from onnxplug_numba.fusion.ops import FUSED_DOMAIN
from onnxplug_numba.kernels import gemv
from onnxplug_numba.ops._base import (FLOAT_TYPES, NATIVE_MIN_MACS, NumbaKernel, all_present_same, matmul,
                                      openblas_serial, serial_product)
from onnxplug_numba.ops.op_conv import activation_in_place, activation_supported, fused_activation
from onnxplug_numba.provider import NumbaProvider


#: Products of at most this many rows with a weight of at least FEW_ROWS_MIN_WEIGHT elements run
#: in kernels/gemv.py: it reads the weight once for all rows, where BLAS reads a transposed one
#: once per row, and keeps up with BLAS on one row.
FEW_ROWS = 8
FEW_ROWS_MIN_WEIGHT = 65536


def few_rows_product(a: np.ndarray, w: np.ndarray, alpha: float, bias: np.ndarray | None) -> np.ndarray:
    """alpha * a (M, K) @ w.T (+ bias over N) for C-contiguous w (N, K) of a's dtype."""
    n = w.shape[0]
    y = np.empty((a.shape[0], n), dtype=w.dtype)
    gemv.product_band(np.ascontiguousarray(a), w, w.dtype.type(alpha), y[0] if bias is None else bias,
                      bias is not None, y, 0, n)
    return y


@NumbaProvider.kernel("MatMul")
class MatMul(NumbaKernel):
    """numpy.matmul semantics are ONNX MatMul's (1-D promotion, batch broadcasting)."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return all_present_same(view, node, FLOAT_TYPES)

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        b = context.constants.get(node.inputs[1])
        # a large constant (K, N) weight: laid out as (N, K) rows at its first few-row product
        self.few_rows_weight = isinstance(b, np.ndarray) and b.ndim == 2 and b.size >= FEW_ROWS_MIN_WEIGHT
        self._rows: np.ndarray | None = None

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if self.few_rows_weight and 0 < a.size <= FEW_ROWS * a.shape[-1] and a.dtype == b.dtype \
                and a.shape[-1] == b.shape[0]:
            rows = self._rows
            if rows is None:  # (the same array from any thread: a race only lays it out twice)
                rows = self._rows = np.ascontiguousarray(b.T)
            y = few_rows_product(a.reshape(-1, a.shape[-1]), rows, 1.0, None)
            return y.reshape(*a.shape[:-1], b.shape[1])
        y = serial_product(a, b)
        return matmul(a, b, self.threads) if y is None else y


@NumbaProvider.kernel("Gemm")
class Gemm(NumbaKernel):
    """alpha * A' B' + beta * C, with C broadcast (unidirectionally) to the product."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return all_present_same(view, node, FLOAT_TYPES)

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.trans_a = bool(self.attr("transA", 0))
        self.trans_b = bool(self.attr("transB", 0))
        self.alpha = float(self.attr("alpha", 1.0))
        self.beta = float(self.attr("beta", 1.0))
        # a constant (K, N) weight as (N, K) rows for few-row products, laid out once
        b = context.constants.get(node.inputs[1]) if len(node.inputs) > 1 else None
        self.b_rows = None
        if not self.trans_b and isinstance(b, np.ndarray) and b.ndim == 2 and b.size >= FEW_ROWS_MIN_WEIGHT \
                and b.dtype in FLOAT_TYPES:
            self.b_rows = np.ascontiguousarray(b.T)
        # a constant transB weight (how torch exports Linear), laid out (K, N) at its first large
        # product: the threads' prange product needs it so, and BLAS reads the transposed view slower
        self.b_constant = b if self.trans_b and isinstance(b, np.ndarray) and b.ndim == 2 else None
        self._b_cols: np.ndarray | None = None

    def few_rows(self, a: np.ndarray, b: np.ndarray, c: np.ndarray | None) -> np.ndarray | None:
        """The product by kernels/gemv.py, or None where it does not apply."""
        w = b if self.trans_b else self.b_rows
        if w is None or w.ndim != 2 or not w.flags.c_contiguous or w.dtype != a.dtype \
                or w.size < FEW_ROWS_MIN_WEIGHT or w.shape[1] != a.shape[1 - self.trans_a]:
            return None
        bias = None
        if c is not None and self.beta != 0.0:
            if c.ndim not in (1, 2) or c.size != w.shape[0] or c.shape[-1] != w.shape[0] or c.dtype != a.dtype:
                return None  # (a scalar, a column or a full matrix: the general path)
            bias = c.reshape(-1) if self.beta == 1.0 else c.reshape(-1) * c.dtype.type(self.beta)
        return few_rows_product(a.T if self.trans_a else a, w, self.alpha, bias)

    def product(self, a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None) -> np.ndarray:
        if a.ndim == 2 and 0 < a.shape[self.trans_a] <= FEW_ROWS:
            y = self.few_rows(a, b, c)
            if y is not None:
                return y
        if self.trans_a:
            a = a.T  # a view: BLAS reads it transposed, without a copy
        if self.trans_b:
            if b is self.b_constant and a.ndim == 2 and a.size * b.shape[0] >= NATIVE_MIN_MACS:
                cols = self._b_cols
                if cols is None:  # (the same array from any thread: a race only lays it out twice)
                    cols = self._b_cols = np.ascontiguousarray(b.T)
                b = cols
            else:
                b = b.T
        if a.ndim == 2 and b.ndim == 2 and openblas_serial(a.shape[0], a.size * b.shape[1], b.shape[1]):
            y = a.dot(b)  # a tiny product (a Loop body's cell): no call of matmul and its checks
        else:
            y = matmul(a, b, self.threads)
        alpha = self.alpha
        if alpha != 1.0:
            y *= y.dtype.type(alpha)
        if c is not None:
            beta = self.beta
            if beta == 1.0:
                np.add(y, c, out=y)  # (the ufunc dispatches with less overhead than +=)
            elif beta != 0.0:
                y += c * c.dtype.type(beta)
        return y

    # the executor calls compute: the product itself, without a frame around it
    compute = product


@NumbaProvider.kernel("FusedGemm", domain=FUSED_DOMAIN)
@NumbaProvider.kernel("FusedGemm", domain="com.microsoft")
class FusedGemm(Gemm):
    """Gemm followed by ``activation`` (attributes as onnxruntime's com.microsoft FusedGemm)."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return all_present_same(view, node, FLOAT_TYPES) and activation_supported(node)

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.act = fused_activation(node)  # read once, not per call

    def compute(self, a: np.ndarray, b: np.ndarray, c: np.ndarray | None = None) -> np.ndarray:
        return activation_in_place(self.product(a, b, c), self.act)  # type: ignore[arg-type]
