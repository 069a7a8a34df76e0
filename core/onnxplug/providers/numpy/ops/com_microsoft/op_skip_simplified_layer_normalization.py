"""com.microsoft SkipSimplifiedLayerNormalization: RMSNorm over the last axis of input + skip (+ bias).

Outputs as SkipLayerNormalization's: output, mean (zeros, as onnxruntime returns), inv_std_var
(1 / root mean square) and input_skip_bias_sum."""

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops.com_microsoft import DOMAIN
from onnxplug.providers.numpy.ops.com_microsoft._norm import check_vector, normalize_rows
from onnxplug.providers.numpy.ops.com_microsoft.op_skip_layer_normalization import skip_sum
from onnxplug.providers.numpy.registry import op


@op("SkipSimplifiedLayerNormalization", domain=DOMAIN)
class SkipSimplifiedLayerNormalization(NumpyKernel):
    def compute(self, x, skip, gamma, bias=None):
        check_vector(self, "gamma", gamma, x.shape[-1])
        total = skip_sum(self, x, skip, bias)
        y, mean, inv_std = normalize_rows(total, gamma, None, float(self.attr("epsilon", 1e-12)), simplified=True)
        return y, mean, inv_std, total
