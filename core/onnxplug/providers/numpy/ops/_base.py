"""Shared base classes for the numpy provider's kernels: unary, binary and reduce ops."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from onnxplug.kernel import Kernel
from onnxplug.providers.numpy.runtime.tuning import NumpyTuning, tuning_of


class NumpyKernel(Kernel):
    """A kernel computing on host numpy arrays."""

    @property
    def tuning(self) -> NumpyTuning:
        """The provider options' tuning (the defaults under another provider)."""
        return tuning_of(self.context)


_ndarray = np.ndarray


def _ufuncs_take_ellipsis_out() -> bool:
    try:
        return np.add(np.float32(1), np.float32(1), out=...).__class__ is _ndarray
    except TypeError:  # numpy < 2.3
        return False


#: ``out=ARRAY_OUT`` makes a ufunc or ufunc reduction return an array even when the result is 0-d
#: (numpy >= 2.3; None before, when results may be scalars): a Loop condition's comparison or
#: reduction then needs no ``np.asarray`` call on top.
ARRAY_OUT = ... if _ufuncs_take_ellipsis_out() else None


class UnaryKernel(NumpyKernel):
    """An elementwise op of one input; subclasses implement ``op``."""

    def compute(self, x: np.ndarray) -> np.ndarray:
        y = self.op(x)
        # the identity checks skip np.asarray in the common case (it costs as much as a small op)
        return y if y.__class__ is _ndarray and y.dtype is x.dtype else np.asarray(y, dtype=x.dtype)

    def op(self, x: np.ndarray) -> Any:
        raise NotImplementedError


class BinaryKernel(NumpyKernel):
    """An elementwise op of two inputs with ONNX (= numpy) multidirectional broadcasting."""

    #: Whether the result keeps the input dtype (arithmetic) rather than being bool (comparison).
    keep_dtype: ClassVar[bool] = True

    def compute(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        out = self.op(a, b)
        if self.keep_dtype:
            return out if out.__class__ is _ndarray and out.dtype is a.dtype else np.asarray(out, dtype=a.dtype)
        return out if out.__class__ is _ndarray else np.asarray(out)

    def op(self, a: np.ndarray, b: np.ndarray) -> Any:
        raise NotImplementedError


#: ``ReduceKernel.constant_axes`` when the axes come from an input that may change between runs.
_VARYING = object()


class ReduceKernel(NumpyKernel):
    """A reduction over ``axes`` (attribute before opset 18, input from 18; 13 for ReduceSum)."""

    #: The opset from which ``axes`` is the second input instead of an attribute.
    axes_input_since: ClassVar[int] = 18

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.keepdims = bool(self.attr("keepdims", 1))
        self.noop_with_empty_axes = bool(self.attr("noop_with_empty_axes", 0))
        self.axes_from_attribute = node.opset < self.axes_input_since
        attr_axes = self.attr("axes") if self.axes_from_attribute else None
        # an absent or empty ``axes`` attribute reduces over every axis
        self.attr_axes = tuple(int(a) for a in attr_axes) if attr_axes else None
        #: the axes of a constant ``axes`` input, read once (``_VARYING`` when they may change)
        self.constant_axes: Any = _VARYING
        if not self.axes_from_attribute and len(node.inputs) > 1 and node.inputs[1]:
            value = context.constants.get(node.inputs[1])
            if value is not None:
                self.constant_axes = self.input_axes(value)

    def input_axes(self, axes: np.ndarray | None) -> tuple[int, ...] | None:
        """The axes of the ``axes`` input as reduce takes them."""
        axes_t = None if axes is None or axes.size == 0 else tuple(int(a) for a in axes.reshape(-1))
        if axes_t is None and self.noop_with_empty_axes:
            # reduce over no axis: each element alone (x*x for ReduceSumSquare, log x for ReduceLogSum)
            axes_t = ()
        return axes_t

    def compute(self, x: np.ndarray, axes: np.ndarray | None = None) -> np.ndarray:
        if self.axes_from_attribute:
            axes_t = self.attr_axes
        else:
            axes_t = self.constant_axes
            if axes_t is _VARYING:
                axes_t = self.input_axes(axes)
        out = self.op(x, axes_t, self.keepdims)
        dtype = self.out_dtype(x)
        return out if out.__class__ is _ndarray and out.dtype is dtype else np.asarray(out, dtype=dtype)

    def out_dtype(self, x: np.ndarray) -> np.dtype:
        return x.dtype

    def op(self, x: np.ndarray, axes: tuple[int, ...] | None, keepdims: bool) -> Any:
        raise NotImplementedError
