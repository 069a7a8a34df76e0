"""Shared base classes for the numpy provider's kernels: unary, binary and reduce ops."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from onnxplug.kernel import Kernel


class NumpyKernel(Kernel):
    """A kernel computing on host numpy arrays."""


class UnaryKernel(NumpyKernel):
    """An elementwise op of one input; subclasses implement ``op``."""

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.op(x), dtype=x.dtype)

    def op(self, x: np.ndarray) -> Any:
        raise NotImplementedError


class BinaryKernel(NumpyKernel):
    """An elementwise op of two inputs with ONNX (= numpy) multidirectional broadcasting."""

    #: Whether the result keeps the input dtype (arithmetic) rather than being bool (comparison).
    keep_dtype: ClassVar[bool] = True

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        out = self.op(a, b)
        return np.asarray(out, dtype=a.dtype) if self.keep_dtype else np.asarray(out)

    def op(self, a: np.ndarray, b: np.ndarray) -> Any:
        raise NotImplementedError


class ReduceKernel(NumpyKernel):
    """A reduction over ``axes`` (attribute before opset 18, input from 18; 13 for ReduceSum)."""

    #: The opset from which ``axes`` is the second input instead of an attribute.
    axes_input_since: ClassVar[int] = 18

    def compute(self, x: np.ndarray, axes: np.ndarray | None = None) -> np.ndarray:
        keepdims = bool(self.attr("keepdims", 1))
        if self.node.opset < self.axes_input_since:
            attr_axes = self.attr("axes")
            # an absent or empty ``axes`` attribute reduces over every axis
            axes_t = tuple(int(a) for a in attr_axes) if attr_axes else None
        else:
            axes_t = None if axes is None or axes.size == 0 else tuple(int(a) for a in axes.reshape(-1))
            if axes_t is None and self.attr("noop_with_empty_axes", 0):
                # reduce over no axis: each element alone (x*x for ReduceSumSquare, log x for ReduceLogSum)
                axes_t = ()
        out = self.op(x, axes_t, keepdims)
        return np.asarray(out, dtype=self.out_dtype(x))

    def out_dtype(self, x: np.ndarray) -> np.dtype:
        return x.dtype

    def op(self, x: np.ndarray, axes: tuple[int, ...] | None, keepdims: bool) -> Any:
        raise NotImplementedError
