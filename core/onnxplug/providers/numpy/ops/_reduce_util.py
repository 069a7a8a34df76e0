"""Helpers of the reductions: the identity of max/min over an empty set, a quiet ReduceKernel."""

from __future__ import annotations

import numpy as np

from onnxplug.providers.numpy.ops._base import ReduceKernel


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
