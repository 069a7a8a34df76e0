"""MaxPool, AveragePool and the global pools.

Windows are reduced one spatial axis at a time (max and sum are separable over a box): per axis,
one elementwise pass per kernel tap over a strided view of the padded input, so nothing of
size (output x window) is ever materialised.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import numpy as np
from onnxplug_sdk import GraphView, Node, window_geometry

from onnxplug_cupy.ops._base import FLOAT, CupyKernel, dtypes_in, same_dtype
from onnxplug_cupy.ops.op_conv import pad_spatial
from onnxplug_cupy.provider import CupyProvider

_SMALL_INTS = frozenset({np.dtype(np.int8), np.dtype(np.uint8)})


class PoolGeometry:
    """A pool's geometry on one input (``onnxplug_sdk.window_geometry``; under SAME_* the pads come
    from the undilated kernel, as onnxruntime's pools pad), with the padded input it reads."""

    def __init__(self, attr: Callable[..., Any], in_sp: Sequence[int]) -> None:
        g = window_geometry(in_sp, attr("kernel_shape"), attr("strides", None), attr("dilations", None),
                            attr("auto_pad", "NOTSET"), attr("pads", None), bool(int(attr("ceil_mode", 0))),
                            same_dilated=False)
        self.geometry = g
        self.kernel, self.strides, self.dilations = list(g.kernel), list(g.strides), list(g.dilations)
        self.begin, self.end, self.out, self.extra = list(g.begin), list(g.end), list(g.out), list(g.extra)
        self.in_sp = list(g.in_spatial)

    def padded(self, xp: Any, x: Any, value: Any) -> Any:
        """``x`` padded with ``value`` at the head, and at the tail including the ceil-mode extra."""
        return pad_spatial(xp, x, self.begin, [e + x_ for e, x_ in zip(self.end, self.extra)], value)

    def counts(self, include_pad: bool) -> np.ndarray:
        """Per output position, how many taps fall in the input (or in its explicit pads)."""
        return self.geometry.tap_counts(include_pad)


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
