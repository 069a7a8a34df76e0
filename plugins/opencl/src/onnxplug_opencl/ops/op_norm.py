"""LayerNormalization, InstanceNormalization (``kernels/norm.cl``) and BatchNormalization (inference)."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxplug_sdk import Decline, GraphView, KernelContext, Node

from onnxplug_opencl.engine import movement
from onnxplug_opencl.engine.dtypes import FLOATS, c_type
from onnxplug_opencl.engine.elementwise import Body, ElementwiseProgram, View
from onnxplug_opencl.engine.expressions import literal
from onnxplug_opencl.engine.reduce import normalize
from onnxplug_opencl.ops._base import ClKernel, dtypes_in, normalize_axis
from onnxplug_opencl.provider import OpenCLProvider
from onnxplug_opencl.runtime.devices import DeviceEntry


def _floats(node: Node, view: GraphView) -> bool | Decline:
    return dtypes_in(node, view, FLOATS)


@OpenCLProvider.kernel("LayerNormalization")
class LayerNormalization(ClKernel):
    """Normalise over the axes from ``axis`` on; optional Mean and InvStdDev outputs."""

    @classmethod
    def accepts(cls, node: Node, view: GraphView, entry: DeviceEntry) -> bool:
        return _floats(node, view)

    def compute(self, x: Any, scale: Any, bias: Any = None) -> tuple[Any, ...]:
        rank = x.ndim
        axis = normalize_axis(self.attr("axis", -1), rank, self.node)
        shape = [int(d) for d in x.shape]
        rows, r = int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))
        scale = self._full(scale, shape[axis:])
        bias = self._full(bias, shape[axis:]) if bias is not None else None
        stats = len(self.node.outputs) > 1 and any(self.node.outputs[1:])
        acc = np.float64 if int(self.attr("stash_type", 1)) == 1 and x.dtype == np.float64 else np.float32
        y, mean, inv = normalize(self.rt, x, rows, r, scale, bias, float(self.attr("epsilon", 1e-5)),
                                 stats=stats, acc=np.dtype(acc))
        if not stats:
            return (y,)
        stat_shape = tuple(shape[:axis]) + (1,) * (rank - axis)
        return y, movement.alias(self.rt, mean, stat_shape), movement.alias(self.rt, inv, stat_shape)

    def _full(self, value: Any, shape: list[int]) -> Any:
        if tuple(value.shape) == tuple(shape):
            return value
        return movement.expand(self.rt, value, shape)


@OpenCLProvider.kernel("InstanceNormalization")
class InstanceNormalization(ClKernel):
    """Normalise each (image, channel) over its spatial axes; per-channel scale and bias."""

    @classmethod
    def accepts(cls, node: Node, view: GraphView, entry: DeviceEntry) -> bool:
        return _floats(node, view)

    def compute(self, x: Any, scale: Any, bias: Any) -> Any:
        shape = [int(d) for d in x.shape]
        rows, r = shape[0] * shape[1], int(np.prod(shape[2:]))
        y, _, _ = normalize(self.rt, x, rows, r, scale, bias, float(self.attr("epsilon", 1e-5)),
                            channels=shape[1])
        return y


@OpenCLProvider.kernel("BatchNormalization")
class BatchNormalization(ClKernel):
    """Inference mode: ``(x - mean) / sqrt(var + eps) * scale + B`` per channel, one generated kernel."""

    @classmethod
    def accepts(cls, node: Node, view: GraphView, entry: DeviceEntry) -> bool:
        floats = _floats(node, view)
        if not floats:
            return floats
        if len([o for o in node.outputs if o]) != 1 or int(node.attr("training_mode", 0)):
            return Decline("attribute", "training mode (running mean and variance outputs) is not computed")
        return True

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        self._programs: dict[np.dtype, ElementwiseProgram] = {}

    def _program(self, dtype: np.dtype) -> ElementwiseProgram:
        found = self._programs.get(dtype)
        if found is None:
            eps = literal(float(self.attr("epsilon", 1e-5)), dtype)
            t = c_type(dtype)
            body = Body((dtype,) * 5, (dtype,), (f"const {t} y0 = (x0 - x3) / sqrt(x4 + {eps}) * x1 + x2;",))
            found = self._programs[dtype] = ElementwiseProgram(self.rt, "batchnorm", body)
        return found

    def compute(self, x: Any, scale: Any, b: Any, mean: Any, var: Any) -> Any:
        shape = tuple(int(d) for d in x.shape)
        out = self.empty(shape, x.dtype)
        channel = (1, shape[1]) + (1,) * (len(shape) - 2) if len(shape) > 1 else (1,)
        views = [View.of(x)] + [View(v, channel, (0, 1) + (0,) * (len(shape) - 2)) for v in (scale, b, mean, var)]
        self._program(np.dtype(x.dtype)).run(shape, views, [View.of(out)])
        return out
