"""com.onnxplug.nhwc InvertedBottleneck (docs/fused-ops.md): 1x1 expansion, 3x3 depthwise, 1x1
projection with residual, channels-last, in bands of output rows (see kernels/conv/bottleneck.py)."""

from __future__ import annotations

import numpy as np

from onnxplug.fused_schemas import INVERTED_BOTTLENECK, NHWC_DOMAIN
from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.kernels.conv.bottleneck import Activation, BottleneckWeights, inverted_bottleneck
from onnxplug.providers.numpy.registry import op


@op(INVERTED_BOTTLENECK, domain=NHWC_DOMAIN)
class InvertedBottleneck(NumpyKernel):
    """X (N, H, W, C_in), W1 (C_e, C_in, 1, 1), B1, W2 (C_e, 1, 3, 3), B2, W3 (C_out, C_e, 1, 1),
    B3, optional residual Z (N, OH, OW, C_out)."""

    def __init__(self, node, context) -> None:
        super().__init__(node, context)
        self.stride = int(self.attr("strides", [1, 1])[0])
        self.activations = [Activation(self.attr(f"{part}_activation", ""),
                                       self.attr(f"{part}_activation_params", []) or [])
                            for part in ("expand", "depthwise")]
        self.output = (self.attr("activation", ""), list(self.attr("activation_params", []) or []))
        self.weights = BottleneckWeights()

    def compute(self, x: np.ndarray, w1: np.ndarray, b1: np.ndarray | None, w2: np.ndarray,
                b2: np.ndarray | None, w3: np.ndarray, b3: np.ndarray | None = None,
                z: np.ndarray | None = None) -> np.ndarray:
        return inverted_bottleneck(x, w1, b1, w2, b2, w3, b3, z, self.stride, self.activations, self.output,
                                   self.weights, self.tuning)
