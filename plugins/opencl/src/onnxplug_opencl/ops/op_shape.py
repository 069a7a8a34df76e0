"""Shape ops: Reshape, Flatten, Squeeze, Unsqueeze, Identity (no copies), Shape, Size, Constant,
ConstantOfShape, Range."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxplug_sdk import Decline, GraphView, KernelContext, Node

from onnxplug_opencl.engine import movement
from onnxplug_opencl.ops._base import ClKernel, attach_mirror, host_mirror, normalize_axis
from onnxplug_opencl.provider import OpenCLProvider
from onnxplug_opencl.runtime.devices import DeviceEntry


def _view(kernel: ClKernel, x: Any, shape: tuple[int, ...]) -> Any:
    out = movement.alias(kernel.rt, x, shape)
    mirror = host_mirror(x)
    if mirror is not None:
        attach_mirror(out, mirror.reshape(shape))
    return out


def _axes(kernel: ClKernel, inputs: tuple[Any, ...]) -> list[int] | None:
    """Axes from the attribute (old opsets) or the optional second input."""
    if kernel.node.opset < 13 or len(kernel.node.inputs) < 2 or not kernel.node.inputs[1]:
        axes = kernel.attr("axes")
        return None if axes is None else [int(a) for a in axes]
    return [int(a) for a in kernel.host_values(inputs[1], 1).reshape(-1)]


@OpenCLProvider.kernel("Reshape")
class Reshape(ClKernel):
    """A new view of the same buffer; 0 copies a dimension (unless allowzero), -1 is inferred."""

    def compute(self, x: Any, shape: Any = None) -> Any:
        if self.node.opset < 5:
            target = [int(d) for d in self.attr("shape")]
        else:
            target = [int(d) for d in self.host_values(shape, 1).reshape(-1)]
        allow_zero = int(self.attr("allowzero", 0))
        dims = [int(x.shape[i]) if d == 0 and not allow_zero else d for i, d in enumerate(target)]
        if -1 in dims:
            known = int(np.prod([d for d in dims if d != -1]))
            dims[dims.index(-1)] = x.size // known if known else 0
        return _view(self, x, tuple(dims))


@OpenCLProvider.kernel("Flatten")
class Flatten(ClKernel):
    """A 2-D view: dimensions before ``axis`` and from ``axis`` on."""

    def compute(self, x: Any) -> Any:
        axis = int(self.attr("axis", 1))
        axis = axis + x.ndim if axis < 0 else axis
        outer = int(np.prod(x.shape[:axis]))
        return _view(self, x, (outer, int(np.prod(x.shape[axis:]))))


@OpenCLProvider.kernel("Squeeze")
class Squeeze(ClKernel):
    """A view without the given (or all) size-1 axes."""

    def compute(self, x: Any, axes: Any = None) -> Any:
        picked = _axes(self, (x, axes))
        if picked is None:
            shape = tuple(d for d in x.shape if d != 1)
        else:
            drop = {normalize_axis(a, x.ndim, self.node) for a in picked}
            shape = tuple(d for i, d in enumerate(x.shape) if i not in drop)
        return _view(self, x, shape)


@OpenCLProvider.kernel("Unsqueeze")
class Unsqueeze(ClKernel):
    """A view with size-1 axes inserted."""

    def compute(self, x: Any, axes: Any = None) -> Any:
        picked = _axes(self, (x, axes)) or []
        rank = x.ndim + len(picked)
        where = sorted(normalize_axis(a, rank, self.node) for a in picked)
        shape = list(x.shape)
        for a in where:
            shape.insert(a, 1)
        return _view(self, x, tuple(shape))


@OpenCLProvider.kernel("Identity")
class Identity(ClKernel):
    """The input itself: kernels never write their inputs, so no copy is needed."""

    def compute(self, x: Any) -> Any:
        return x


@OpenCLProvider.kernel("Shape")
class Shape(ClKernel):
    """The shape as an int64 tensor, uploaded once per run and mirrored on the host.
    (The input must still be a type the device holds: the executor places it there.)"""

    def compute(self, x: Any) -> Any:
        dims = np.array(x.shape, dtype=np.int64)
        rank = len(dims)
        start, end = int(self.attr("start", 0)), self.attr("end")
        start = min(max(start + rank if start < 0 else start, 0), rank)
        stop = rank if end is None else int(end)
        stop = min(max(stop + rank if stop < 0 else stop, 0), rank)
        return self.upload(dims[start:stop])


@OpenCLProvider.kernel("Size")
class Size(ClKernel):
    """The element count as an int64 scalar."""

    def compute(self, x: Any) -> Any:
        return self.upload(np.array(x.size, dtype=np.int64))


def _constant_value(node: Node) -> np.ndarray | None:
    for name, make in (("value", lambda v: np.asarray(v)),
                       ("value_float", lambda v: np.array(v, dtype=np.float32)),
                       ("value_floats", lambda v: np.array(v, dtype=np.float32)),
                       ("value_int", lambda v: np.array(v, dtype=np.int64)),
                       ("value_ints", lambda v: np.array(v, dtype=np.int64))):
        value = node.attr(name)
        if value is not None:
            return make(value)
    return None


@OpenCLProvider.kernel("Constant")
class Constant(ClKernel):
    """Uploaded once at session creation; every run returns the same device array."""

    @classmethod
    def accepts(cls, node: Node, view: GraphView, entry: DeviceEntry) -> bool:
        value = _constant_value(node)
        if value is None:
            return Decline("attribute", "its value is not a dense tensor attribute")
        return value.dtype.kind in "biuf" or Decline("dtype", f"a {value.dtype} constant")

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self.value = self.upload(_constant_value(node))  # type: ignore[arg-type]

    def compute(self) -> Any:
        return self.value


@OpenCLProvider.kernel("ConstantOfShape")
class ConstantOfShape(ClKernel):
    """A filled tensor of the given shape (value attribute, default float 0)."""

    check_types = False

    @classmethod
    def accepts(cls, node: Node, view: GraphView, entry: DeviceEntry) -> bool:
        from onnxplug_opencl.engine.dtypes import device_supports

        value = node.attr("value")
        dtype = np.asarray(value).dtype if value is not None else np.dtype(np.float32)
        return device_supports(entry, dtype) or \
            Decline("dtype", f"a {dtype} fill value, which device {entry.name!r} does not compute in")

    def compute(self, shape: Any) -> Any:
        dims = [int(d) for d in self.host_values(shape, 0).reshape(-1)]
        value = self.attr("value")
        host = np.asarray(value).reshape(-1) if value is not None else np.zeros(1, np.float32)
        out = movement.fill(self.rt, dims, host.dtype, host[0])
        if out.size <= 64:
            attach_mirror(out, np.full(dims, host[0], dtype=host.dtype))
        return out


@OpenCLProvider.kernel("Range")
class Range(ClKernel):
    """start, start+delta, ... below limit; computed on the host (scalar inputs) and uploaded."""

    def compute(self, start: Any, limit: Any, delta: Any) -> Any:
        s, l, d = (self.host_values(v, i) for i, v in enumerate((start, limit, delta)))
        count = max(int(np.ceil((l.item() - s.item()) / d.item())), 0)
        out = (s + d * np.arange(count, dtype=s.dtype)).astype(s.dtype)
        return self.upload(out)

