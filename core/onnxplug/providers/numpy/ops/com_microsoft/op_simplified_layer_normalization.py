"""SimplifiedLayerNormalization (RMSNorm), which onnxruntime registers in the default domain (version 1)
and its transformer optimizer writes: x / sqrt(mean(x^2 over [axis, rank)) + epsilon) * scale.
Outputs Y and inv_std_var (float32, or the stash type's width, with the normalized axes kept as 1)."""

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import norm_axis
from onnxplug.providers.numpy.ops.com_microsoft._norm import normalize_rows
from onnxplug.providers.numpy.registry import op


@op("SimplifiedLayerNormalization")
class SimplifiedLayerNormalization(NumpyKernel):
    def compute(self, x, scale):
        axis = norm_axis(int(self.attr("axis", -1)), x.ndim)
        y, _, inv_std = normalize_rows(x, scale, None, float(self.attr("epsilon", 1e-5)), simplified=True,
                                       first_axis=axis)
        return y, inv_std
