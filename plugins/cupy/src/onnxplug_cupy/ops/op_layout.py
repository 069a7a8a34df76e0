"""Moving data without arithmetic: reshapes, transposes, concatenation, slicing, gathering, padding.

Results that are views of an input are returned as views when they are cheap to read (reshape,
squeeze, split), and copied to a contiguous array when readers would otherwise stride through
memory (transpose, expand, gather).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from onnxplug_sdk import GraphView, Node

from onnxplug_cupy.ops._base import INDEX, PLAIN, CupyKernel, dtypes_in, normalize_axis
from onnxplug_cupy.provider import CupyProvider

op = CupyProvider.kernel


class LayoutKernel(CupyKernel):
    """A kernel that only moves data: any plain dtype for data, int32/int64 for index inputs."""

    #: Positions of inputs that are indices, shapes or axes (int32/int64).
    index_inputs: tuple[int, ...] = ()

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        data = [n for i, n in enumerate(node.inputs) if i not in cls.index_inputs]
        index = [n for i, n in enumerate(node.inputs) if i in cls.index_inputs]
        return dtypes_in(view, [*data, *node.outputs], PLAIN) and dtypes_in(view, index, INDEX)


def _axes(kernel: CupyKernel, index: int, value: Any) -> list[int] | None:
    """Axes from the input at ``index`` (opset 13+) or the ``axes`` attribute (earlier opsets)."""
    if index < len(kernel.node.inputs) and kernel.node.inputs[index]:
        return kernel.host_ints(index, value)
    found = kernel.attr("axes", None)
    return None if found is None else [int(a) for a in found]


@op("Identity")
@op("Dropout")
class Identity(LayoutKernel):
    """The input itself (Dropout at inference: its optional mask is all True)."""

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        if node.op_type == "Dropout":
            if node.attr("is_test", 1) == 0 or (len(node.inputs) > 2 and node.inputs[2]):
                return False  # training_mode as an input could switch dropout on
        return dtypes_in(view, [node.inputs[0], node.outputs[0]], PLAIN)

    def run(self, x: Any, *rest: Any) -> Any:
        if len(self.node.outputs) > 1 and self.node.outputs[1]:
            return x, self.xp.ones(x.shape, dtype=bool)
        return x


@op("Reshape")
class Reshape(LayoutKernel):
    index_inputs = (1,)

    def run(self, x: Any, shape: Any = None) -> Any:
        target = self.host_ints(1, shape) if shape is not None else [int(d) for d in self.attr("shape")]
        allow_zero = int(self.attr("allowzero", 0))
        dims = [x.shape[i] if d == 0 and not allow_zero else d for i, d in enumerate(target)]
        if -1 in dims:
            known = math.prod(d for d in dims if d != -1)
            dims[dims.index(-1)] = x.size // known if known else 0
        return x.reshape(dims)


@op("Flatten")
class Flatten(LayoutKernel):
    def run(self, x: Any) -> Any:
        axis = int(self.attr("axis", 1))
        axis = normalize_axis(axis, x.ndim, self.node) if axis < 0 else axis  # 0..rank inclusive
        return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))


@op("Squeeze")
class Squeeze(LayoutKernel):
    index_inputs = (1,)

    def run(self, x: Any, axes: Any = None) -> Any:
        found = _axes(self, 1, axes)
        if found is None:
            return x.reshape([d for d in x.shape if d != 1])
        picked = {normalize_axis(a, x.ndim, self.node) for a in found}
        return x.reshape([d for i, d in enumerate(x.shape) if i not in picked])


@op("Unsqueeze")
class Unsqueeze(LayoutKernel):
    index_inputs = (1,)

    def run(self, x: Any, axes: Any = None) -> Any:
        found = _axes(self, 1, axes) or []
        rank = x.ndim + len(found)
        picked = sorted(normalize_axis(a, rank, self.node) for a in found)
        shape = list(x.shape)
        for a in picked:
            shape.insert(a, 1)
        return x.reshape(shape)


@op("Transpose")
class Transpose(LayoutKernel):
    def run(self, x: Any) -> Any:
        perm = self.attr("perm", None)
        perm = [int(p) for p in perm] if perm is not None else list(reversed(range(x.ndim)))
        return self.xp.ascontiguousarray(x.transpose(perm))


@op("Concat")
class Concat(LayoutKernel):
    def run(self, *xs: Any) -> Any:
        axis = normalize_axis(int(self.attr("axis")), xs[0].ndim, self.node)
        return self.xp.concatenate(xs, axis=axis)


@op("Split")
class Split(LayoutKernel):
    index_inputs = (1,)

    def run(self, x: Any, split: Any = None) -> tuple[Any, ...]:
        axis = normalize_axis(int(self.attr("axis", 0)), x.ndim, self.node)
        sizes = self.host_ints(1, split) if split is not None else None
        if sizes is None and self.attr("split", None) is not None:
            sizes = [int(s) for s in self.attr("split")]
        count = len(self.node.outputs)
        if sizes is None:
            parts = int(self.attr("num_outputs", count))
            chunk = -(-x.shape[axis] // parts)
            sizes = [min(chunk, max(0, x.shape[axis] - chunk * i)) for i in range(parts)]
        outputs, start = [], 0
        for size in sizes:
            index = [slice(None)] * x.ndim
            index[axis] = slice(start, start + size)
            outputs.append(x[tuple(index)])
            start += size
        return tuple(outputs)


@op("Slice")
class Slice(LayoutKernel):
    index_inputs = (1, 2, 3, 4)

    def run(self, x: Any, starts: Any = None, ends: Any = None, axes: Any = None, steps: Any = None) -> Any:
        if self.node.opset < 10:
            s = [int(v) for v in self.attr("starts")]
            e = [int(v) for v in self.attr("ends")]
            a = [int(v) for v in self.attr("axes", list(range(len(s))))]
            st = [1] * len(s)
        else:
            s, e = self.host_ints(1, starts) or [], self.host_ints(2, ends) or []
            a = self.host_ints(3, axes) if axes is not None else list(range(len(s)))
            st = self.host_ints(4, steps) if steps is not None else [1] * len(s)
        index = [slice(None)] * x.ndim
        for start, end, axis, step in zip(s, e, a or [], st or []):
            index[normalize_axis(axis, x.ndim, self.node)] = slice(start, end, step)
        return x[tuple(index)]


@op("Gather")
class Gather(LayoutKernel):
    index_inputs = (1,)

    def run(self, x: Any, indices: Any) -> Any:
        axis = normalize_axis(int(self.attr("axis", 0)), x.ndim, self.node)
        indices = indices.astype(np.int64, copy=False)
        indices = self.xp.where(indices < 0, indices + x.shape[axis], indices)
        return self.xp.take(x, indices, axis=axis)


@op("GatherElements")
class GatherElements(LayoutKernel):
    index_inputs = (1,)

    def run(self, x: Any, indices: Any) -> Any:
        axis = normalize_axis(int(self.attr("axis", 0)), x.ndim, self.node)
        indices = indices.astype(np.int64, copy=False)
        indices = self.xp.where(indices < 0, indices + x.shape[axis], indices)
        return self.xp.take_along_axis(x, indices, axis=axis)


@op("Shape")
class Shape(LayoutKernel):
    def run(self, x: Any) -> Any:
        dims = list(x.shape)
        start, end = int(self.attr("start", 0)), self.attr("end", None)
        return self.xp.asarray(np.asarray(dims[slice(start, None if end is None else int(end))], dtype=np.int64))


@op("Size")
class Size(LayoutKernel):
    def run(self, x: Any) -> Any:
        return self.xp.asarray(np.asarray(x.size, dtype=np.int64))


@op("Expand")
class Expand(LayoutKernel):
    index_inputs = (1,)

    def run(self, x: Any, shape: Any) -> Any:
        target = tuple(np.broadcast_shapes(tuple(x.shape), tuple(self.host_ints(1, shape) or [])))
        return self.xp.ascontiguousarray(self.xp.broadcast_to(x, target))


@op("Tile")
class Tile(LayoutKernel):
    index_inputs = (1,)

    def run(self, x: Any, repeats: Any) -> Any:
        return self.xp.tile(x, tuple(self.host_ints(1, repeats) or []))


@op("ConstantOfShape")
class ConstantOfShape(LayoutKernel):
    index_inputs = (0,)

    def run(self, shape: Any) -> Any:
        value = self.attr("value", None)
        value = np.zeros(1, dtype=np.float32) if value is None else np.asarray(value).reshape(-1)
        return self.xp.full(tuple(self.host_ints(0, shape) or []), value[0], dtype=value.dtype)


@op("Constant")
class Constant(LayoutKernel):
    """The node's value, uploaded once at session creation."""

    _KEYS = ("value", "value_float", "value_floats", "value_int", "value_ints")

    @classmethod
    def _host_value(cls, node: Node) -> np.ndarray | None:
        for key in cls._KEYS:
            found = node.attr(key, None)
            if found is not None:
                dtype = np.float32 if "float" in key else (np.int64 if "int" in key else None)
                return np.asarray(found, dtype=dtype)
        return None

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        value = cls._host_value(node)
        return value is not None and value.dtype in PLAIN

    def setup(self) -> None:
        self.value = self.backend.to_device(self._host_value(self.node))

    def run(self) -> Any:
        return self.value


@op("Range")
class Range(LayoutKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return dtypes_in(view, [*node.inputs, *node.outputs], PLAIN - {np.dtype(np.bool_)})

    def run(self, start: Any, limit: Any, delta: Any) -> Any:
        s, l, d = (np.asarray(self.host_input(i, v)).reshape(()) for i, v in enumerate((start, limit, delta)))
        count = max(int(math.ceil((float(l) - float(s)) / float(d))), 0) if d != 0 else 0
        kind = s.dtype.type  # numpy scalars, not 0-d numpy arrays: CuPy refuses to mix in host arrays
        steps = self.xp.arange(count, dtype=s.dtype)
        return (steps * kind(d.item()) + kind(s.item())).astype(s.dtype, copy=False)


@op("Cast")
class Cast(LayoutKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return dtypes_in(view, [node.inputs[0], node.outputs[0]], PLAIN) and view.dtype_of(node.outputs[0]) is not None

    def setup(self) -> None:
        self.target = self.view.dtype_of(self.node.outputs[0])

    def run(self, x: Any) -> Any:
        return x.astype(self.target)


@op("CastLike")
class CastLike(LayoutKernel):
    def run(self, x: Any, like: Any) -> Any:
        return x.astype(like.dtype)


@op("Pad")
class Pad(LayoutKernel):
    index_inputs = (1, 3)

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        mode = node.attr("mode", "constant")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        return mode in ("constant", "reflect", "edge", "wrap") and super().supports(node, view)

    def run(self, x: Any, pads: Any = None, value: Any = None, axes: Any = None) -> Any:
        flat = self.host_ints(1, pads) if pads is not None else [int(p) for p in self.attr("pads")]
        picked = self.host_ints(3, axes) if axes is not None else list(range(x.ndim))
        picked = [normalize_axis(a, x.ndim, self.node) for a in picked]
        begin, end = [0] * x.ndim, [0] * x.ndim
        for i, a in enumerate(picked):
            begin[a], end[a] = flat[i], flat[i + len(picked)]
        # negative pads crop
        x = x[tuple(slice(max(-b, 0), x.shape[i] - max(-e, 0)) for i, (b, e) in enumerate(zip(begin, end)))]
        width = [(max(b, 0), max(e, 0)) for b, e in zip(begin, end)]
        mode = self.attr("mode", "constant")
        if mode != "constant":
            return self.xp.pad(x, width, mode=mode)
        fill = self.host_input(2, value) if value is not None else None
        if fill is None:
            fill = self.attr("value", 0.0)
        fill = np.asarray(fill).reshape(-1)
        return self.xp.pad(x, width, mode="constant",
                           constant_values=fill[0].astype(x.dtype) if fill.size else x.dtype.type(0))


@op("DepthToSpace")
class DepthToSpace(LayoutKernel):
    def run(self, x: Any) -> Any:
        b = int(self.attr("blocksize"))
        n, c, h, w = x.shape
        if self.attr("mode", "DCR") == "DCR":
            y = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
        else:
            y = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
        return self.xp.ascontiguousarray(y).reshape(n, c // (b * b), h * b, w * b)


@op("SpaceToDepth")
class SpaceToDepth(LayoutKernel):
    def run(self, x: Any) -> Any:
        b = int(self.attr("blocksize"))
        n, c, h, w = x.shape
        y = x.reshape(n, c, h // b, b, w // b, b)
        # DCR (the only mode before opset 28): blocks outermost; CRD: channels outermost
        y = y.transpose(0, 1, 3, 5, 2, 4) if self.attr("mode", "DCR") == "CRD" else y.transpose(0, 3, 5, 1, 2, 4)
        return self.xp.ascontiguousarray(y).reshape(n, c * b * b, h // b, w // b)


@op("Trilu")
class Trilu(LayoutKernel):
    index_inputs = (1,)

    def run(self, x: Any, k: Any = None) -> Any:
        shift = (self.host_ints(1, k) or [0])[0] if k is not None else 0
        return self.xp.triu(x, shift) if int(self.attr("upper", 1)) else self.xp.tril(x, shift)


@op("EyeLike")
class EyeLike(LayoutKernel):
    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return dtypes_in(view, [*node.inputs, *node.outputs], PLAIN) and view.dtype_of(node.outputs[0]) is not None

    def run(self, x: Any) -> Any:
        dtype = self.view.dtype_of(self.node.outputs[0])
        return self.xp.eye(x.shape[0], x.shape[1], k=int(self.attr("k", 0)), dtype=dtype)


@op("OneHot")
class OneHot(LayoutKernel):
    index_inputs = (1,)

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return dtypes_in(view, [*node.inputs, *node.outputs], PLAIN - {np.dtype(np.bool_)})

    def run(self, indices: Any, depth: Any, values: Any) -> Any:
        size = int(np.asarray(self.host_input(1, depth)).reshape(-1)[0])
        idx = indices.astype(np.int64)
        idx = self.xp.where(idx < 0, idx + size, idx)
        hot = idx[..., None] == self.xp.arange(size, dtype=np.int64)
        out = self.xp.where(hot, values[1], values[0])
        axis = normalize_axis(int(self.attr("axis", -1)), out.ndim, self.node)
        return self.xp.ascontiguousarray(self.xp.moveaxis(out, -1, axis))


@op("CumSum")
class CumSum(LayoutKernel):
    index_inputs = (1,)

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return dtypes_in(view, [node.inputs[0], node.outputs[0]], PLAIN - {np.dtype(np.bool_)}) and \
            dtypes_in(view, node.inputs[1:], INDEX)

    def run(self, x: Any, axis: Any) -> Any:
        a = normalize_axis((self.host_ints(1, axis) or [0])[0], x.ndim, self.node)
        xp = self.xp
        if int(self.attr("reverse", 0)):
            x = xp.flip(x, axis=a)
        y = xp.cumsum(x, axis=a, dtype=x.dtype)
        if int(self.attr("exclusive", 0)):  # shift by one: element i sums the elements before it
            head = [slice(None)] * x.ndim
            head[a] = slice(0, max(x.shape[a] - 1, 0))
            zero_shape = list(x.shape)
            zero_shape[a] = min(1, x.shape[a])
            y = xp.concatenate([xp.zeros(zero_shape, dtype=x.dtype), y[tuple(head)]], axis=a)
        if int(self.attr("reverse", 0)):
            y = xp.flip(y, axis=a)
        return xp.ascontiguousarray(y)

