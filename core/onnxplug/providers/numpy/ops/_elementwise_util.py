"""Bases shared by the elementwise ops: legacy broadcasting, variadic and comparison ops.

Domain edges (log(0), sqrt(-1), overflow) give inf/NaN as ONNX expects; the executor runs every
kernel with numpy's floating-point warnings off, so these bases do not pay for ``np.errstate``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from onnxplug.kernel import Kernel
from onnxplug.providers.numpy.ops._base import ARRAY_OUT, BinaryKernel, NumpyKernel, UnaryKernel


_BOOL = np.dtype(np.bool_)


class QuietUnaryKernel(UnaryKernel):
    """A unary op whose domain edges (log(0), sqrt(-1), overflow) give inf/NaN, as ONNX expects."""


def legacy_broadcast(kernel: Kernel, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``b`` shaped for numpy broadcasting under the opset < 7 rules (``broadcast=1``, ``axis``).

    Before opset 7, B broadcasts to A only with ``broadcast=1``, and B's dimensions line up with A's
    from ``axis`` on (default: the trailing ones, as numpy does).
    """
    if kernel.node.opset >= 7 or not kernel.attr("broadcast", 0):
        return b
    axis = kernel.attr("axis")
    if axis is None:
        return b
    axis = axis + a.ndim if axis < 0 else axis
    return b.reshape(b.shape + (1,) * (a.ndim - axis - b.ndim))


class LegacyBroadcastKernel(BinaryKernel):
    """A binary op that also honours the opset < 7 ``broadcast``/``axis`` attributes."""

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.legacy = node.opset < 7 and bool(self.attr("broadcast", 0))
        if self.legacy:  # only old models pay for the reshape (an instance attribute shadows compute)
            plain = self.compute
            self.compute = lambda a, b: plain(a, legacy_broadcast(self, a, b))  # type: ignore[method-assign]


class QuietBinaryKernel(LegacyBroadcastKernel):
    """A broadcasting arithmetic op (inf/NaN at domain edges, as ONNX expects)."""


class CompareKernel(LegacyBroadcastKernel):
    """A broadcasting comparison or logical op: the result is bool whatever the input type."""

    keep_dtype = False
    #: The numpy ufunc of the comparison.
    ufunc: ClassVar[np.ufunc]

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        out = self.ufunc(a, b, out=ARRAY_OUT)
        return out if out.__class__ is np.ndarray and out.dtype is _BOOL else np.asarray(out, dtype=np.bool_)


class VariadicKernel(NumpyKernel):
    """Max, Min, Sum, Mean: fold a binary ufunc over one or more broadcasting inputs."""

    ufunc: ClassVar[np.ufunc]

    def compute(self, *inputs: np.ndarray) -> np.ndarray:
        first = inputs[0]
        # float16/bfloat16 accumulate in float32 and round once, as onnxruntime does
        work = np.float32 if first.dtype.itemsize == 2 and first.dtype.kind not in "iub" else None
        out: Any = first.copy() if work is None else first.astype(work)
        for x in inputs[1:]:
            out = self.ufunc(out, x if work is None else x.astype(work))
        return np.asarray(self.finish(out, len(inputs)), dtype=first.dtype)

    def finish(self, out: np.ndarray, count: int) -> Any:
        """Post-process the folded value (Mean divides by the count)."""
        return out
