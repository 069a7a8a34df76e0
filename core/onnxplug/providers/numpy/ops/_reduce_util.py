"""Helpers of the reductions: the identity of max/min over an empty set, a quiet ReduceKernel, and
the base of ReduceMax and ReduceMin."""

from __future__ import annotations

from typing import Any, Callable, ClassVar

import numpy as np

from onnxplug.providers.numpy.ops._base import ARRAY_OUT, ReduceKernel


def lowest(dtype: np.dtype) -> object:
    """The identity of max: -inf for floats, the smallest integer, False for bool."""
    if dtype == np.bool_:
        return False
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    return dtype.type(-np.inf)


def highest(dtype: np.dtype) -> object:
    """The identity of min: +inf for floats, the largest integer, True for bool."""
    if dtype == np.bool_:
        return True
    if dtype.kind in "iu":
        return np.iinfo(dtype).max
    return dtype.type(np.inf)


class QuietReduceKernel(ReduceKernel):
    """A reduction whose log(0) / overflow edges give inf/NaN, as ONNX expects (the executor runs
    kernels with numpy's floating-point warnings off)."""


class ExtremumKernel(QuietReduceKernel):
    """ReduceMax / ReduceMin: ``ufunc``'s reduction; an empty set gives ``empty_identity(dtype)``."""

    ufunc: ClassVar[np.ufunc]
    empty_identity: ClassVar[Callable[[np.dtype], Any]]

    def compute(self, x: np.ndarray, axes: np.ndarray | None = None) -> np.ndarray:
        if ARRAY_OUT is not None and x.size and (
                self.axes_from_attribute or axes is None and not self.noop_with_empty_axes):
            # the common case in one call (a Loop body's condition runs once an iteration)
            return self.ufunc.reduce(x, self.attr_axes, keepdims=self.keepdims, out=ARRAY_OUT)
        return super().compute(x, axes)

    def op(self, x: np.ndarray, axes: tuple[int, ...] | None, keepdims: bool) -> Any:
        if x.size:
            return self.ufunc.reduce(x, axis=axes, keepdims=keepdims)
        return self.ufunc.reduce(x, axis=axes, keepdims=keepdims, initial=self.empty_identity(x.dtype))
