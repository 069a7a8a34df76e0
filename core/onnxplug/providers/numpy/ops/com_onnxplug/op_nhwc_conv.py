"""com.onnxplug.nhwc Conv and FusedConv: channels-last twins of the standard ops (docs/fused-ops.md).

Depthwise, 1x1 and few-channel dense 2-D convolutions have their own channels-last formulations
(kernels/conv/channels_last.py); the rest runs the standard kernel between transposes.
"""

from __future__ import annotations

import numpy as np

from onnxplug.fused_schemas import NHWC_DOMAIN
from onnxplug.providers.numpy.kernels.conv.channels_last import (FAST_DTYPES, DenseWeights, DepthwiseWeights,
                                                         PointwiseWeights, conv_1x1_nhwc, conv_dense_nhwc,
                                                         depthwise_nhwc, to_first, to_last)
from onnxplug.providers.numpy.ops.ai_onnx.op_conv import Conv
from onnxplug.providers.numpy.ops.com_onnxplug.op_fused_conv import FusedConv, ResidualActivation
from onnxplug.providers.numpy.registry import op

class _ChannelsLast:
    """The channels-last fast paths shared by both ops; ``None`` when neither applies."""

    def setup(self) -> None:
        self.depthwise_weights = DepthwiseWeights()
        self.dense_weights = DenseWeights()
        self.pointwise_weights = PointwiseWeights()

    def fast(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None, z: np.ndarray | None,
             activation: str, params: list[float]) -> np.ndarray | None:
        attrs = self.conv_attrs  # type: ignore[attr-defined]
        kernel = w.shape[2:]
        if x.dtype not in FAST_DTYPES or w.dtype != x.dtype or (b is not None and b.dtype != x.dtype) \
                or x.ndim < 3 or len(kernel) != x.ndim - 2 or x.size == 0 \
                or (attrs.kernel_shape is not None and list(attrs.kernel_shape) != list(kernel)):
            return None
        strides, dilations, begin, end = attrs.resolve(x.shape[1:-1], kernel)
        c = x.shape[-1]
        depthwise = attrs.group == c and w.shape[1] == 1 and w.shape[0] == c and x.ndim == 4
        pointwise = attrs.group == 1 and w.shape[1] == c and all(k == 1 for k in kernel) \
            and not any(begin) and not any(end)
        dense = attrs.group == 1 and w.shape[1] == c and x.ndim == 4 and not pointwise
        if not (depthwise or pointwise or dense):
            return None
        out_sp = [(x.shape[1 + i] + begin[i] + end[i] - (k - 1) * d - 1) // s + 1
                  for i, (k, s, d) in enumerate(zip(kernel, strides, dilations))]
        shape = (x.shape[0], *out_sp, w.shape[0])
        if z is not None and z.shape != shape:
            z = np.broadcast_to(z, shape)
        epilogue = ResidualActivation(z, activation, params) if z is not None or activation else None
        if depthwise:
            return depthwise_nhwc(x, w, b, strides, dilations, begin, end, epilogue, self.depthwise_weights)
        if dense:
            return conv_dense_nhwc(x, w, b, strides, dilations, begin, end, epilogue, self.dense_weights, self.tuning)
        wt, bias_row, augmented = self.pointwise_weights.get(w, b)
        return conv_1x1_nhwc(x, wt, bias_row, strides, epilogue, augmented, self.tuning)


@op("Conv", domain=NHWC_DOMAIN)
class ConvChannelsLast(_ChannelsLast, Conv):
    """Conv on (N, *spatial, C) data; weights as the standard op's."""

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.setup()

    def compute(self, x, w, b=None):
        y = self.fast(x, w, b, None, "", [])
        return y if y is not None else to_last(super().compute(to_first(x), w, b))


@op("FusedConv", domain=NHWC_DOMAIN)
class FusedConvChannelsLast(_ChannelsLast, FusedConv):
    """FusedConv on (N, *spatial, C) data and residual Z; weights as the standard op's."""

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.setup()

    def compute(self, x, w, b=None, z=None):
        y = self.fast(x, w, b, z, self.activation, self.activation_params)
        if y is not None:
            return y
        return to_last(super().compute(to_first(x), w, b, None if z is None else to_first(z)))
