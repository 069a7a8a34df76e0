"""Integer products to float shared by MatMulIntegerToFloat, DynamicQuantizeMatMul and
DynamicQuantizeLSTM: (A - a_zero_point) @ (B - b_zero_point), exact in float64 BLAS (_quant_util),
times a_scale * b_scale (per tensor or per column of B) plus an optional bias, in float32."""

from __future__ import annotations

import numpy as np

from onnxplug.providers.numpy.runtime.blas import matmul
from onnxplug.providers.numpy.ops._quant_util import IntegerMatrix, integer_product


def _per_column(kernel, name: str, value: np.ndarray | None, columns: int) -> np.ndarray | None:
    """A scalar / [1] value as is, a [N] value per column; other shapes refused."""
    if value is None or value.size == 1:
        return None if value is None else value.reshape(())
    if value.shape[-1] != columns:
        raise ValueError(f"{kernel.node.describe()}: {name} of shape {list(value.shape)} is neither per "
                         f"tensor nor per column of B ({columns} columns)")
    return value


def integer_matmul_to_float(kernel, a: np.ndarray, b: np.ndarray, a_scale, b_scale, a_zero_point=None,
                            b_zero_point=None, bias=None, out_dtype=np.float32,
                            prepared: IntegerMatrix | None = None) -> np.ndarray:
    """((A - azp) @ (B - bzp)) * a_scale * b_scale (+ bias) in ``out_dtype``; ``prepared`` keeps B
    (see _quant_util.IntegerMatrix)."""
    columns = b.shape[-1]
    b_zero_point = _per_column(kernel, "b_zero_point", b_zero_point, columns)
    b_scale = _per_column(kernel, "b_scale", np.asarray(b_scale), columns)
    if a_zero_point is not None and a_zero_point.size != 1:
        raise ValueError(f"{kernel.node.describe()}: a_zero_point must be per tensor")
    acc = integer_product(a, None if a_zero_point is None else a_zero_point.reshape(()), b, b_zero_point,
                          prepared, matmul)
    multiplier = np.asarray(a_scale, np.float32).reshape(()) * b_scale.astype(np.float32)
    y = acc.astype(np.float32, copy=False) * multiplier
    if bias is not None:
        y += bias.astype(np.float32)
    return y.astype(out_dtype, copy=False)
