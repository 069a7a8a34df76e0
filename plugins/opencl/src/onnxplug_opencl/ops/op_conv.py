"""Conv (1-D and 2-D, any group, dilation, stride and padding) on im2col + GEMM or the depthwise kernel."""

from __future__ import annotations

from typing import Any

import numpy as np

from onnxplug_sdk import Decline, GraphView, KernelContext, Node

from onnxplug_opencl.engine.conv import cached_geometry, conv2d, pack_weights
from onnxplug_opencl.engine.gemm import Epilogue
from onnxplug_opencl.ops._base import ClKernel, dtypes_in
from onnxplug_opencl.provider import OpenCLProvider
from onnxplug_opencl.runtime.devices import DeviceEntry

_CONV_TYPES = frozenset(np.dtype(t) for t in (np.float32, np.float64))


def conv_supported(node: Node, view: GraphView) -> bool | Decline:
    """Float 1-D/2-D convolutions whose weight rank is known."""
    floats = dtypes_in(node, view, _CONV_TYPES)
    if not floats:
        return floats
    w = view.type_of(node.inputs[1])
    rank = len(w.shape) if w is not None and w.shape is not None else None
    kernel = node.attr("kernel_shape")
    if rank is None and kernel is not None:
        rank = len(kernel) + 2
    return rank in (3, 4) or Decline("shape", f"a weight of rank {rank} (only 1-D and 2-D convolutions)")


@OpenCLProvider.kernel("Conv")
class Conv(ClKernel):
    """One convolution, bias in the GEMM epilogue."""

    @classmethod
    def accepts(cls, node: Node, view: GraphView, entry: DeviceEntry) -> bool:
        return conv_supported(node, view)

    def __init__(self, node: Node, context: KernelContext) -> None:
        super().__init__(node, context)
        weights = self.constant(1)
        self.packed = pack_weights(self.rt, weights, int(self.attr("group", 1))) if weights is not None else None
        self._geometries: dict[Any, Any] = {}

    def compute(self, x: Any, w: Any, b: Any = None) -> Any:
        geo = cached_geometry(self._geometries, self.node, x.shape, w.shape)
        return conv2d(self.rt, x, w, geo, Epilogue(bias=b), packed=self.packed)
