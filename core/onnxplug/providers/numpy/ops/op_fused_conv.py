"""com.onnxplug FusedConv: Conv (+ residual) followed by an activation (docs/fused-ops.md)."""

from __future__ import annotations

import numpy as np

from onnxplug.ir import Node
from onnxplug.provider import GraphView
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._conv_util import conv_nd, conv_pads, spatial_attrs
from onnxplug.providers.numpy.ops.op_fused_activation import activation_supported, apply_activation
from onnxplug.providers.numpy.registry import op


@op("FusedConv", domain="com.onnxplug")
class FusedConv(NumpyKernel):
    """Conv (same attributes as ai.onnx Conv), plus the optional residual Z, then ``activation``
    with ``activation_params``, in place."""

    def compute(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None,
                z: np.ndarray | None = None) -> np.ndarray:
        kernel = list(self.attr("kernel_shape", None) or w.shape[2:])
        strides, dilations = spatial_attrs(self.attr, kernel)
        begin, end = conv_pads(self.attr, x.shape[2:], kernel, strides, dilations)
        name, params = self.attr("activation", ""), self.attr("activation_params", []) or []
        if z is not None:
            out_sp = [(x.shape[2 + i] + begin[i] + end[i] - (k - 1) * d - 1) // s + 1
                      for i, (k, s, d) in enumerate(zip(kernel, strides, dilations))]
            z = np.broadcast_to(z, (x.shape[0], w.shape[0], *out_sp))

        def epilogue(view: np.ndarray, index: tuple) -> None:
            if z is not None:
                view += z[index]
            result = apply_activation(view, name, params)
            if result is not view:
                view[...] = result

        return conv_nd(x, w, b, strides, dilations, begin, end, int(self.attr("group", 1)), epilogue)

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return activation_supported(node)
