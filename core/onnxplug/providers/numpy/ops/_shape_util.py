"""Helpers of the shape and layout ops: axes read from an attribute or an input, index normalisation."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxplug.kernel import Kernel


def ints(value: Any) -> list[int]:
    """A tensor, list or scalar of integers as a Python list."""
    if value.__class__ is np.ndarray and value.dtype.kind in "iu":
        return value.reshape(-1).tolist()  # Python ints already: no per-value int() call
    return [int(v) for v in np.asarray(value).reshape(-1)]


def axes_from(kernel: Kernel, tensor: np.ndarray | None, input_since: int) -> list[int] | None:
    """``axes`` from the attribute (opset < ``input_since``) or the optional input; None when absent."""
    if kernel.node.opset < input_since:
        value = kernel.attr("axes")
        return None if value is None else ints(value)
    return None if tensor is None else ints(tensor)


#: ``constant_axes``' answer when the axes come from an input that may change between runs.
VARYING = object()


def constant_axes(kernel: Kernel, constants: Any, input_since: int) -> Any:
    """``axes_from``'s answer read once, when every run gives the same one (an attribute, an omitted
    input, or a constant initializer); else ``VARYING``. Small shape ops run thousands of times in
    recurrent and control-flow models: parsing the axes each time cost them most of their time."""
    if kernel.node.opset < input_since:
        return axes_from(kernel, None, input_since)
    name = kernel.node.inputs[1] if len(kernel.node.inputs) > 1 else ""
    if not name:
        return None
    value = constants.get(name)
    return VARYING if value is None else ints(value)


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """Map a possibly negative axis into [0, rank); raise ValueError when out of range."""
    if not -rank <= axis < rank:
        raise ValueError(f"{what} {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def normalize_indices(indices: np.ndarray, size: int | np.ndarray) -> np.ndarray:
    """Map negative indices to ``index + size``; raise IndexError when any index is out of range."""
    indices = np.asarray(indices, dtype=np.int64)
    if isinstance(size, (int, np.integer)):  # the common case, without temporaries
        if indices.ndim == 0:
            i = int(indices)
            if not -size <= i < size:
                raise IndexError(f"index {i} is out of bounds for a dimension of size {size}")
            return np.asarray(i + size if i < 0 else i, dtype=np.int64)
        if not indices.size:
            return indices
        lo, hi = int(indices.min()), int(indices.max())
        if lo >= 0 and hi < size:
            return indices
    if indices.size and (np.any(indices < -size) or np.any(indices >= size)):
        bad = indices[(indices < -size) | (indices >= size)].reshape(-1)[0]
        raise IndexError(f"index {int(bad)} is out of bounds for a dimension of size {size}")
    return np.where(indices < 0, indices + size, indices)
