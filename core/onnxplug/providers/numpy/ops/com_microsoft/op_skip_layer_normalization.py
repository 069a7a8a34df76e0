"""com.microsoft SkipLayerNormalization: LayerNorm over the last axis of input + skip (+ bias).

Outputs: output, mean, inv_std_var ([..., 1], float32) and input_skip_bias_sum, each optional.
skip is [B, S, H], [1, S, H] or [S, H]. Without the statistics, the project's row-blocked kernel
(com.onnxplug SkipLayerNormalization) computes it."""

import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_microsoft._norm import check_vector, normalize_rows
from onnxplug.providers.numpy.ops.com_onnxplug.op_fused_layer_norm import SkipLayerNormalization as _RowBlocked
from onnxplug.providers.numpy.registry import op


def skip_sum(kernel, x, skip, bias):
    """x + skip (+ bias) in x's dtype, after checking the shapes onnxruntime accepts."""
    if x.ndim != 3 or skip.shape[-2:] != x.shape[-2:] or skip.ndim not in (2, 3) \
            or (skip.ndim == 3 and skip.shape[0] not in (1, x.shape[0])):
        raise ValueError(f"{kernel.node.describe()}: input must be [B, S, H] and skip [B, S, H], [1, S, H] "
                         f"or [S, H]; got {list(x.shape)} and {list(skip.shape)}")
    check_vector(kernel, "bias", bias, x.shape[-1])
    total = x + skip
    if bias is not None:
        total += bias
    return total


@op("SkipLayerNormalization", domain=DOMAIN)
class SkipLayerNormalization(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        self.epsilon = float(self.attr("epsilon", 1e-12))
        outs = list(node.outputs) + [""] * 4
        self.want_stats = bool(outs[1] or outs[2])
        self.want_sum = bool(outs[3])

    def compute(self, x, skip, gamma, beta=None, bias=None):
        width = x.shape[-1]
        check_vector(self, "gamma", gamma, width)
        check_vector(self, "beta", beta, width)
        if not self.want_stats and x.shape == skip.shape and x.dtype in (np.float32, np.float64) and x.ndim == 3:
            check_vector(self, "bias", bias, width)
            y = _RowBlocked._in_row_blocks(x, skip, gamma, beta, bias, self.epsilon, self.want_sum,
                                           self.tuning.share_layer_norm_rows)
            return (y[0], None, None, y[1]) if self.want_sum else y
        total = skip_sum(self, x, skip, bias)
        y, mean, inv_std = normalize_rows(total, gamma, beta, self.epsilon, simplified=False)
        return y, mean, inv_std, total
