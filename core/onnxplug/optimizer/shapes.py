"""Shape reasoning for passes: symbolic dims, Reshape targets, axes arguments."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from onnxplug.ir import Node
from onnxplug.ir.types import Dim
from onnxplug.optimizer.rewrite import GraphIndex

#: ``int64`` ends at or above this mean "to the end" in Slice.
TO_END = 2**31 - 1


def same_dim(a: Dim, b: Dim) -> bool:
    """Whether two dims are known to be equal: the same integer or the same symbol."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return isinstance(a, str) and a != "" and a == b


def same_shape(a: Sequence[Dim] | None, b: Sequence[Dim] | None) -> bool:
    """Whether two shapes are known to be equal."""
    return a is not None and b is not None and len(a) == len(b) and all(same_dim(x, y) for x, y in zip(a, b))


def reshape_dims(in_shape: Sequence[Dim], target: np.ndarray, allowzero: int) -> list[Dim] | None:
    """The output shape of Reshape with a constant ``target``; a ``-1`` entry resolves when the
    input's other dims allow it, else the dim is None. None when ``target`` is invalid for the input."""
    out: list[Dim] = []
    fill = None
    for i, t in enumerate(int(v) for v in target.reshape(-1)):
        if t == 0 and not allowzero:
            if i >= len(in_shape):
                return None
            out.append(in_shape[i])
        elif t == -1:
            if fill is not None:
                return None
            fill = i
            out.append(None)
        elif t < 0:
            return None
        else:
            out.append(t)
    if fill is not None:
        known = [d for j, d in enumerate(out) if j != fill]
        if all(isinstance(d, int) for d in in_shape) and all(isinstance(d, int) for d in known):
            rest = int(np.prod(known)) if known else 1
            total = int(np.prod(in_shape)) if in_shape else 1
            out[fill] = total // rest if rest else None
        else:  # the one unknown dim is the input's own when all the others match it
            others = [j for j in range(len(out)) if j != fill]
            if len(out) == len(in_shape) and all(same_dim(out[j], in_shape[j]) for j in others):
                out[fill] = in_shape[fill]
    return out


def axes_argument(index: GraphIndex, node: Node, since_input: int = 13) -> list[int] | None:
    """The ``axes`` of Squeeze/Unsqueeze/Reduce*: attribute before ``since_input``, input 1 after.
    Returns [] when absent, None when not constant."""
    if node.opset < since_input:
        axes = node.attr("axes")
        return [] if axes is None else [int(a) for a in axes]
    if len(node.inputs) < 2 or not node.inputs[1]:
        return []
    value = index.constant(node.inputs[1])
    return None if value is None else [int(a) for a in value.reshape(-1)]


def normalize_axes(axes: Sequence[int], rank: int | None) -> list[int] | None:
    """Axes made non-negative for ``rank`` (sorted); None when a negative axis meets an unknown rank."""
    out = []
    for a in axes:
        if a < 0:
            if rank is None:
                return None
            a += rank
        out.append(a)
    return sorted(out)
