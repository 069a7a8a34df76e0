"""com.onnxplug FusedConv: Conv (+ residual) followed by an activation (docs/fused-ops.md)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from onnxplug.ir import Node
from onnxplug.provider import GraphView
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.kernels.conv.dispatch import BiasedWeights, ConvAttributes, conv_nd, constant_inputs, zeros_operand
from onnxplug.providers.numpy.ops.com_onnxplug.op_fused_activation import activation_supported, in_place_activation
from onnxplug.providers.numpy.registry import op


class ResidualActivation:
    """The epilogue of a FusedConv: add the residual ``z`` (already broadcast to the output's shape),
    then the activation, in place on a unit's output ``view`` = ``y[index]``.

    Relu takes the maximum against an array of zeros: numpy's float maximum against a scalar 0 runs
    a slower loop.
    """

    def __init__(self, z: np.ndarray | None, name: str, params: Sequence[float]) -> None:
        self.z, self.name, self.params = z, name, params
        self._in_place = in_place_activation(name, params)

    def __call__(self, view: np.ndarray, index: tuple) -> None:
        if self.z is not None:
            view += self.z[index]
        self.activate(view)

    def copy_out(self, src: np.ndarray, dst: np.ndarray, index: tuple) -> None:
        """``dst = activation(src + z[index])``: the copy of a result out of scratch done in the
        same pass as the residual or a Relu. ``dst`` is ``y[index]``, or a view of it with an axis
        split in two (Winograd's output rows as (tile row, row in tile))."""
        if self.z is not None:
            z = self.z[index]
            np.add(src, z if z.shape == dst.shape else z.reshape(dst.shape), out=dst)
            self.activate(dst)
        elif self.name == "Relu":
            np.maximum(src, zeros_operand(dst.shape, dst.dtype), out=dst)
        else:
            np.copyto(dst, src)
            self.activate(dst)

    def activate(self, view: np.ndarray) -> None:
        """The activation alone, in place on ``view``."""
        if self.name == "Relu":
            np.maximum(view, zeros_operand(view.shape, view.dtype), out=view)
        elif self.name:
            result = self._in_place(view)  # ``view`` is (part of) the convolution's own output
            if result is not view:  # an activation that makes a new array (LeakyRelu)
                view[...] = result


@op("FusedConv", domain="com.onnxplug")
class FusedConv(NumpyKernel):
    """Conv (same attributes as ai.onnx Conv), plus the optional residual Z, then ``activation``
    with ``activation_params``, in place."""

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.conv_attrs = ConvAttributes(self.attr)
        self.weights = BiasedWeights(constant_inputs(node, context, (1, 2)))
        self.activation = self.attr("activation", "")
        self.activation_params = list(self.attr("activation_params", []) or [])

    def compute(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None,
                z: np.ndarray | None = None) -> np.ndarray:
        strides, dilations, begin, end = self.conv_attrs.resolve(x.shape[2:], w.shape[2:])
        if z is not None:
            out_sp = [(x.shape[2 + i] + begin[i] + end[i] - (k - 1) * d - 1) // s + 1
                      for i, (k, s, d) in enumerate(zip(w.shape[2:], strides, dilations))]
            shape = (x.shape[0], w.shape[0], *out_sp)
            if z.shape != shape:  # a broadcast_to view (its cost: docs/benchmarks.md)
                z = np.broadcast_to(z, shape)
        epilogue = ResidualActivation(z, self.activation, self.activation_params)
        return conv_nd(x, w, b, strides, dilations, begin, end, self.conv_attrs.group, epilogue, self.weights,
                       self.tuning)

    @classmethod
    def supports(cls, node: Node, view: GraphView) -> bool:
        return activation_supported(node)
