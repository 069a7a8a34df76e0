"""MaxPool, AveragePool and the global pools.

Windows are reduced one spatial axis at a time (max and sum are separable over a box): per axis,
one elementwise pass per kernel tap over a strided view of the padded input, so nothing of
size (output x window) is ever materialised.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import numpy as np
from onnxplug_sdk import GraphView, Node

from onnxplug_cupy.ops._base import FLOAT, CupyKernel, dtypes_in, same_dtype
from onnxplug_cupy.ops.op_conv import pad_spatial
from onnxplug_cupy.provider import CupyProvider

_SMALL_INTS = frozenset({np.dtype(np.int8), np.dtype(np.uint8)})


class PoolGeometry:
    """Kernel, strides, dilations, pads and output size of one pooling call (ONNX/onnxruntime rules)."""

    def __init__(self, attr: Callable[..., Any], in_sp: Sequence[int]) -> None:
        self.kernel = [int(k) for k in attr("kernel_shape")]
        nd = len(self.kernel)
        self.strides = [int(s) for s in (attr("strides", None) or [1] * nd)]
        self.dilations = [int(d) for d in (attr("dilations", None) or [1] * nd)]
        span = [(k - 1) * d + 1 for k, d in zip(self.kernel, self.dilations)]
        auto_pad = attr("auto_pad", "NOTSET")
        ceil_mode = int(attr("ceil_mode", 0))
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            out = [-(-i // s) for i, s in zip(in_sp, self.strides)]
            # as onnxruntime: the undilated kernel sets SAME padding
            total = [max(0, (o - 1) * s + k - i) for o, s, k, i in zip(out, self.strides, self.kernel, in_sp)]
            small = [t // 2 for t in total]
            self.begin = small if auto_pad == "SAME_UPPER" else [t - h for t, h in zip(total, small)]
            self.end = [t - b for t, b in zip(total, self.begin)]
        else:
            pads = [int(p) for p in (attr("pads", None) or [0] * 2 * nd)] if auto_pad != "VALID" else [0] * 2 * nd
            self.begin, self.end = pads[:nd], pads[nd:]
            out = []
            for i in range(nd):
                room = in_sp[i] + self.begin[i] + self.end[i] - span[i]
                o = (-(-room // self.strides[i]) if ceil_mode else room // self.strides[i]) + 1
                if ceil_mode and (o - 1) * self.strides[i] >= in_sp[i] + self.begin[i]:
                    o -= 1  # the last window must start inside the input or its head padding
                out.append(max(o, 0))
        self.out = out
        self.in_sp = [int(i) for i in in_sp]
        # tail padding so every window of a ceil-mode output fits
        self.extra = [max(0, (o - 1) * s + sp - (i + b + e)) for o, s, sp, i, b, e in
                      zip(out, self.strides, span, self.in_sp, self.begin, self.end)]

    def padded(self, xp: Any, x: Any, value: Any) -> Any:
        """``x`` padded with ``value`` at the head, and at the tail including the ceil-mode extra."""
        return pad_spatial(xp, x, self.begin, [e + x_ for e, x_ in zip(self.end, self.extra)], value)

    def counts(self, include_pad: bool) -> np.ndarray:
        """Per output position, how many taps fall in the input (or in its explicit pads)."""
        total = np.ones((), dtype=np.int64)
        for i in range(len(self.kernel)):
            pos = (np.arange(self.out[i])[:, None] * self.strides[i]
                   + np.arange(self.kernel[i])[None, :] * self.dilations[i] - self.begin[i])
            lo, hi = (-self.begin[i], self.in_sp[i] + self.end[i]) if include_pad else (0, self.in_sp[i])
            total = total[..., None] * ((pos >= lo) & (pos < hi)).sum(axis=1)
        return total


def separable(xp: Any, padded: Any, g: PoolGeometry, combine: Callable[..., Any]) -> Any:
    """Reduce every window of ``padded`` with ``combine`` (maximum or add), axis by axis."""
    lead = padded.ndim - len(g.kernel)
    current = padded
    for axis in range(len(g.kernel)):
        k, d, o, s = g.kernel[axis], g.dilations[axis], g.out[axis], g.strides[axis]
        index: list[Any] = [slice(None)] * current.ndim
        result = None
        for tap in range(k):
            index[lead + axis] = slice(tap * d, tap * d + (o - 1) * s + 1, s)
            view = current[tuple(index)]
            if result is None:
                result = view.copy()  # a fresh array: later taps accumulate into it in place
            else:
                combine(result, view, out=result)
        current = result
    return current


def lowest(dtype: np.dtype) -> Any:
    """The identity of max for ``dtype``."""
    return dtype.type(-np.inf) if dtype.kind == "f" else np.iinfo(dtype).min


class _Pool(CupyKernel):
    def geometry(self, x: Any) -> PoolGeometry:
        return PoolGeometry(self.attr, x.shape[2:])

    def empty_result(self, x: Any, g: PoolGeometry) -> Any | None:
        if min(g.out, default=1) <= 0 or x.size == 0:
            return self.xp.zeros(tuple(x.shape[:2]) + tuple(max(o, 0) for o in g.out), dtype=x.dtype)
        return None


@CupyProvider.kernel("MaxPool")
class MaxPool(_Pool):
    """Max over windows; padding never wins. Only the first output (no Indices)."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        if len([o for o in node.outputs if o]) != 1 or node.outputs[0] == "":
            return False
        return same_dtype(view, node, FLOAT | _SMALL_INTS)

    def run(self, x: Any) -> Any:
        g = self.geometry(x)
        found = self.empty_result(x, g)
        if found is not None:
            return found
        return separable(self.xp, g.padded(self.xp, x, lowest(x.dtype)), g, self.xp.maximum)


@CupyProvider.kernel("AveragePool")
class AveragePool(_Pool):
    """Sum over windows divided by the count of taps inside the input (or its pads, with
    ``count_include_pad``); the divisors are computed once per input shape."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return same_dtype(view, node, FLOAT)

    def setup(self) -> None:
        self._divisors: dict[tuple[tuple[int, ...], str], Any] = {}
        self._lock = threading.Lock()

    def run(self, x: Any) -> Any:
        xp = self.xp
        g = self.geometry(x)
        found = self.empty_result(x, g)
        if found is not None:
            return found
        total = separable(xp, g.padded(xp, x, 0), g, xp.add)
        key = (tuple(x.shape[2:]), x.dtype.name)
        divisor = self._divisors.get(key)
        if divisor is None:
            counts = g.counts(bool(int(self.attr("count_include_pad", 0))))
            divisor = self.backend.to_device(np.maximum(counts, 1).astype(x.dtype))
            with self._lock:
                self._divisors[key] = divisor
        total /= divisor
        return total


@CupyProvider.kernel("GlobalAveragePool")
@CupyProvider.kernel("GlobalMaxPool")
class GlobalPool(CupyKernel):
    """Mean or max over every spatial axis, keeping them as size 1."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return same_dtype(view, node, FLOAT) and dtypes_in(view, node.inputs, FLOAT)

    def run(self, x: Any) -> Any:
        axes = tuple(range(2, x.ndim))
        if self.node.op_type == "GlobalMaxPool":
            return self.xp.max(x, axis=axes, keepdims=True)
        if x.dtype == np.float16:  # accumulate half in single precision
            return self.xp.mean(x, axis=axes, keepdims=True, dtype=np.float32).astype(np.float16)
        return self.xp.mean(x, axis=axes, keepdims=True)
