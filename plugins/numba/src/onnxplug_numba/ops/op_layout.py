"""The shape and layout family: pure data movement, exact for every plain dtype.

These ops do no arithmetic, so numpy's copies and views (memcpy speed) are what they need;
results are made contiguous so the compiled kernels downstream read them without strides.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from onnxplug_sdk import KernelContext, Node, geometry

from onnxplug_numba.kernels.gather_nd import gather_nd
from onnxplug_numba.ops._base import PLAIN_DTYPES, HostKernel
from onnxplug_numba.provider import NumbaProvider

op = NumbaProvider.kernel


def _ints(value: Any) -> list[int]:
    flat = np.asarray(value).reshape(-1)
    if flat.dtype.kind in "iu":
        return flat.tolist()  # Python ints in one call, not one numpy scalar per entry
    return [int(v) for v in flat]


def _axis(axis: int, rank: int, what: str | Node) -> int:
    """``axis`` made non-negative; ``what`` (a node, described only on error) names the culprit."""
    if not -rank <= axis < max(rank, 1):
        where = what if isinstance(what, str) else what.describe()
        raise ValueError(f"{where}: axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _fixed_input(node: Node, context: KernelContext, index: int) -> list[int] | None:
    """Input ``index`` as ints when it is an initializer no feed can override: read once per kernel
    instead of per run (shape ops on constant axes or shapes are most of a transformer's steps)."""
    name = node.inputs[index] if index < len(node.inputs) else ""
    value = context.constants.get(name) if name else None
    return None if value is None else _ints(value)


class _AxesFromInputOrAttr(HostKernel):
    """Ops whose ``axes`` moved from an attribute to an input at opset 13."""

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        if node.opset < 13:
            attr = self.attr("axes")
            self.fixed_axes = None if attr is None else [int(a) for a in attr]
        else:
            self.fixed_axes = _fixed_input(node, context, 1)

    def axes(self, axes_input: np.ndarray | None) -> list[int] | None:
        if self.node.opset < 13:
            return self.fixed_axes
        return None if axes_input is None else _ints(axes_input)


@op("Identity")
class Identity(HostKernel):
    def compute(self, x: np.ndarray) -> np.ndarray:
        return x


@op("Transpose")
class Transpose(HostKernel):
    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        perm = self.attr("perm")
        self.perm = None if perm is None else [int(p) for p in perm]

    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(x.transpose(self.perm))


@op("Reshape", 5)
class Reshape(HostKernel):
    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        fixed = _fixed_input(node, context, 1)
        # a constant target without zeros (or with allowzero) is the reshape's argument as it is
        self.allowzero = bool(self.attr("allowzero", 0))
        self.fixed_target = tuple(fixed) if fixed is not None and (0 not in fixed or self.allowzero) else None

    def compute(self, x: np.ndarray, shape: np.ndarray) -> np.ndarray:
        if self.fixed_target is not None:
            return np.ascontiguousarray(x).reshape(self.fixed_target)
        target = _ints(shape)
        if not self.allowzero and 0 in target:
            target = [x.shape[i] if d == 0 else d for i, d in enumerate(target)]
        return np.ascontiguousarray(x).reshape(target)


@op("Flatten")
class Flatten(HostKernel):
    def compute(self, x: np.ndarray) -> np.ndarray:
        axis = int(self.attr("axis", 1))
        axis = axis + x.ndim if axis < 0 else axis
        if not 0 <= axis <= x.ndim:
            raise ValueError(f"{self.node.describe()}: axis {self.attr('axis', 1)} is out of range for rank {x.ndim}")
        return np.ascontiguousarray(x).reshape(int(math.prod(x.shape[:axis])), int(math.prod(x.shape[axis:])))


@op("Squeeze")
class Squeeze(_AxesFromInputOrAttr):
    def compute(self, x: np.ndarray, axes: np.ndarray | None = None) -> np.ndarray:
        picked = self.axes(axes)
        if picked is None:
            return x.reshape([d for d in x.shape if d != 1])
        return np.squeeze(x, axis=tuple(_axis(a, x.ndim, self.node) for a in picked))


@op("Unsqueeze")
class Unsqueeze(_AxesFromInputOrAttr):
    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        fixed = self.fixed_axes
        # constant, distinct, non-negative axes: their order of insertion does not depend on the rank
        self.fixed_where = tuple(sorted(fixed)) if fixed and min(fixed) >= 0 and len(set(fixed)) == len(fixed) \
            else None

    def compute(self, x: np.ndarray, axes: np.ndarray | None = None) -> np.ndarray:
        where = self.fixed_where
        if where is not None and where[-1] < x.ndim + len(where):
            shape = list(x.shape)
            for a in where:
                shape.insert(a, 1)
            return x.reshape(shape)
        picked = self.axes(axes) or []
        rank = x.ndim + len(picked)
        where = sorted(_axis(a, rank, self.node) for a in picked)
        if len(set(where)) != len(where):
            raise ValueError(f"{self.node.describe()}: repeated axes {picked}")
        shape = list(x.shape)
        for a in where:
            shape.insert(a, 1)
        return x.reshape(shape)


@op("Concat", 4)
class Concat(HostKernel):
    def compute(self, *xs: np.ndarray) -> np.ndarray:
        return np.concatenate(xs, axis=int(self.attr("axis")))


@op("Split", 2)
class Split(HostKernel):
    def compute(self, x: np.ndarray, split: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
        axis = _axis(int(self.attr("axis", 0)), x.ndim, self.node)
        count = len(self.node.outputs)
        sizes = _ints(split) if split is not None and split.size else (
            [int(s) for s in self.attr("split")] if self.node.opset < 13 and self.attr("split") else None)
        if sizes is None:
            dim = x.shape[axis]
            parts = int(self.attr("num_outputs", count))
            if self.attr("num_outputs") is not None:
                chunk = -(-dim // parts)
                sizes = [min(chunk, dim - i * chunk) for i in range(parts)]
            else:
                if dim % count:
                    raise ValueError(f"{self.node.describe()}: dimension {dim} does not split into {count} parts")
                sizes = [dim // count] * count
        if sum(sizes) != x.shape[axis]:
            raise ValueError(f"{self.node.describe()}: split sizes {sizes} do not sum to {x.shape[axis]}")
        index = [slice(None)] * x.ndim
        out = []
        lo = 0
        for size in sizes:
            index[axis] = slice(lo, lo + size)
            out.append(np.ascontiguousarray(x[tuple(index)]))
            lo += size
        return tuple(out)


@op("Slice")
class Slice(HostKernel):
    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.fixed: tuple[list[int], list[int], list[int] | None, list[int] | None] | None = None
        if node.opset >= 10:
            present = [i for i in range(1, 5) if i < len(node.inputs) and node.inputs[i]]
            values = {i: _fixed_input(node, context, i) for i in present}
            if all(v is not None for v in values.values()) and 1 in values and 2 in values:
                self.fixed = (values[1], values[2], values.get(3), values.get(4))

    def compute(self, x: np.ndarray, starts: np.ndarray | None = None, ends: np.ndarray | None = None,
                axes: np.ndarray | None = None, steps: np.ndarray | None = None) -> np.ndarray:
        if self.fixed is not None:
            s, e, a, st = self.fixed
            a = a if a is not None else list(range(len(s)))
            st = st if st is not None else [1] * len(s)
        elif self.node.opset < 10:
            s, e = [int(v) for v in self.attr("starts")], [int(v) for v in self.attr("ends")]
            a = [int(v) for v in self.attr("axes")] if self.attr("axes") is not None else list(range(len(s)))
            st = [1] * len(s)
        else:
            s, e = _ints(starts), _ints(ends)
            a = _ints(axes) if axes is not None else list(range(len(s)))
            st = _ints(steps) if steps is not None else [1] * len(s)
        index = [slice(None)] * x.ndim
        for start, end, axis, step in zip(s, e, a, st):
            if step == 0:
                raise ValueError("Slice: steps must not be 0")
            axis = _axis(axis, x.ndim, self.node)
            index[axis] = geometry.slice_bounds(start, end, step, x.shape[axis])
        return np.ascontiguousarray(x[tuple(index)])


@op("Gather")
class Gather(HostKernel):
    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.axis = int(self.attr("axis", 0))

    def compute(self, x: np.ndarray, indices: np.ndarray) -> np.ndarray:
        axis = self.axis
        if axis == 0 and indices.ndim == 0 and x.flags.c_contiguous and x.ndim:
            # one slice of the first axis (a Loop body reading step i): a contiguous view instead
            # of take's copy
            i = int(indices)
            if -x.shape[0] <= i < x.shape[0]:
                return x[i, ...]
        if not 0 <= axis < x.ndim:
            axis = _axis(axis, x.ndim, self.node)
        if indices.dtype != np.int64:
            indices = indices.astype(np.int64)
        return x.take(indices, axis=axis)  # the method: np.take adds a Python-level wrapper


@op("GatherND", 11)
class GatherND(HostKernel):
    """One compiled pass over the index tuples (kernels/gather_nd.py); any plain dtype."""

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.batch_dims = int(self.attr("batch_dims", 0))

    def compute(self, x: np.ndarray, indices: np.ndarray) -> np.ndarray:
        b, k = self.batch_dims, indices.shape[-1]
        if not (0 <= b < x.ndim and b < indices.ndim and 1 <= k <= x.ndim - b
                and indices.shape[:b] == x.shape[:b]):
            raise ValueError(f"{self.node.describe()}: indices of shape {indices.shape} with batch_dims {b} "
                             f"do not index data of shape {x.shape}")
        batch = math.prod(x.shape[:b])
        dims = x.shape[b:b + k]
        rest = x.shape[b + k:]
        inner = math.prod(rest)
        data = np.ascontiguousarray(x).reshape(batch, math.prod(dims), inner)
        idx = np.ascontiguousarray(indices, dtype=np.int64).reshape(batch, -1, k)
        out = np.empty((batch, idx.shape[1], inner), dtype=x.dtype)
        bad = gather_nd(data, idx, np.array(dims, dtype=np.int64), out)
        if bad >= 0:
            a = bad % k
            raise IndexError(f"{self.node.describe()}: index {int(idx.reshape(-1)[bad])} is out of bounds for "
                             f"axis {b + a} of size {dims[a]}")
        return out.reshape(indices.shape[:-1] + rest)


@op("GatherElements")
class GatherElements(HostKernel):
    def compute(self, x: np.ndarray, indices: np.ndarray) -> np.ndarray:
        axis = _axis(int(self.attr("axis", 0)), x.ndim, self.node)
        idx = indices.astype(np.int64)
        idx = np.where(idx < 0, idx + x.shape[axis], idx)
        return np.take_along_axis(x, idx, axis=axis)


@op("Shape")
class Shape(HostKernel):
    def compute(self, x: np.ndarray) -> np.ndarray:
        start = int(self.attr("start", 0))
        end = self.attr("end")
        return np.array(x.shape[start:None if end is None else int(end)], dtype=np.int64)


@op("Size")
class Size(HostKernel):
    def compute(self, x: np.ndarray) -> np.ndarray:
        return np.array(x.size, dtype=np.int64)


@op("Expand", 8)
class Expand(HostKernel):
    def compute(self, x: np.ndarray, shape: np.ndarray) -> np.ndarray:
        target = _ints(shape)
        rank = max(x.ndim, len(target))
        ours = (1,) * (rank - x.ndim) + x.shape
        target = [1] * (rank - len(target)) + target
        out_shape = []
        for have, want in zip(ours, target):
            if have != want and have != 1 and want != 1:
                raise ValueError(f"{self.node.describe()}: shape {list(x.shape)} does not broadcast to "
                                 f"{_ints(shape)}")
            out_shape.append(want if have == 1 else have)
        # the broadcast written into a fresh array: np.broadcast_shapes and broadcast_to cost more
        # than the copy for the small tensors transformers expand
        out = np.empty(out_shape, dtype=x.dtype)
        np.copyto(out, x)
        return out


@op("Tile", 6)
class Tile(HostKernel):
    def compute(self, x: np.ndarray, repeats: np.ndarray) -> np.ndarray:
        return np.tile(x, _ints(repeats))


@op("ConstantOfShape")
class ConstantOfShape(HostKernel):
    def compute(self, shape: np.ndarray) -> np.ndarray:
        value = self.attr("value")
        fill = np.zeros(1, dtype=np.float32) if value is None else np.asarray(value).reshape(-1)
        return np.full(_ints(shape), fill[0], dtype=fill.dtype)


@op("Constant")
class Constant(HostKernel):
    @classmethod
    def supports(cls, node, view) -> bool:  # type: ignore[no-untyped-def]
        value = node.attr("value")
        if value is not None:
            return isinstance(value, np.ndarray) and value.dtype.name in PLAIN_DTYPES
        return any(
            node.attr(k) is not None for k in ("value_float", "value_floats", "value_int", "value_ints"))

    def compute(self) -> np.ndarray:
        value = self.attr("value")
        if value is not None:
            return np.asarray(value)
        for key, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                           ("value_int", np.int64), ("value_ints", np.int64)):
            if self.attr(key) is not None:
                return np.array(self.attr(key), dtype=dtype)
        raise ValueError(f"{self.node.describe()}: no value attribute")


@op("Range", 11)
class Range(HostKernel):
    def compute(self, start: np.ndarray, limit: np.ndarray, delta: np.ndarray) -> np.ndarray:
        s, lim, d = start.item(), limit.item(), delta.item()
        count = max(int(np.ceil((lim - s) / d)), 0)
        return (s + np.arange(count, dtype=np.float64 if start.dtype.kind == "f" else np.int64) * d
                ).astype(start.dtype) if count else np.zeros(0, dtype=start.dtype)


@op("DepthToSpace")
class DepthToSpace(HostKernel):
    def compute(self, x: np.ndarray) -> np.ndarray:
        b = int(self.attr("blocksize"))
        n, c, h, w = x.shape
        if self.attr("mode", "DCR") == "DCR":
            t = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
        else:
            t = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
        return np.ascontiguousarray(t).reshape(n, c // (b * b), h * b, w * b)


@op("SpaceToDepth")
class SpaceToDepth(HostKernel):
    def compute(self, x: np.ndarray) -> np.ndarray:
        b = int(self.attr("blocksize"))
        n, c, h, w = x.shape
        perm = (0, 1, 3, 5, 2, 4) if self.attr("mode", "DCR") == "CRD" else (0, 3, 5, 1, 2, 4)
        t = x.reshape(n, c, h // b, b, w // b, b).transpose(perm)
        return np.ascontiguousarray(t).reshape(n, c * b * b, h // b, w // b)


@op("Trilu")
class Trilu(HostKernel):
    def compute(self, x: np.ndarray, k: np.ndarray | None = None) -> np.ndarray:
        shift = int(k.reshape(-1)[0]) if k is not None else 0
        return np.triu(x, shift) if self.attr("upper", 1) else np.tril(x, shift)

