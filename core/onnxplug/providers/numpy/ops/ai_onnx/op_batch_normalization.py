import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.registry import op


@op("BatchNormalization")
class BatchNormalization(NumpyKernel):
    """Inference: y = x * a + b with per-channel a = scale / sqrt(var + eps), b = bias - mean * a.

    Training (training_mode=1 from opset 14, or extra outputs before opset 9 with is_test=0) uses
    the batch statistics and also returns the updated running mean/var (and saved stats before 14).
    """

    def compute(self, x, scale, bias, mean, var):
        eps = float(self.attr("epsilon", 1e-5))
        xw = widen(x)
        stats_shape = (-1,) + (1,) * (x.ndim - 2)
        if scale.ndim > 1 or self.attr("spatial", 1) == 0:  # per-activation statistics (spatial=0)
            stats_shape = (1,) + scale.shape if scale.ndim > 1 else stats_shape
        training = bool(self.attr("training_mode", 0)) if self.node.opset >= 14 else (
            self.node.opset < 7 and not self.attr("is_test", 0) and len(self.node.outputs) > 1)
        if training:
            return self._training(xw, scale, bias, mean, var, eps, x.dtype)
        a = (widen(scale) / np.sqrt(widen(var) + eps)).astype(xw.dtype, copy=False)
        b = (widen(bias) - widen(mean) * a).astype(xw.dtype, copy=False)
        y = np.multiply(xw, a.reshape(stats_shape))
        y += b.reshape(stats_shape)
        return np.asarray(y, dtype=x.dtype)

    def _training(self, x, scale, bias, mean, var, eps, dtype):
        momentum = float(self.attr("momentum", 0.9))
        axes = (0,) + tuple(range(2, x.ndim))
        bmean = x.mean(axis=axes)
        bvar = x.var(axis=axes)
        shp = (-1,) + (1,) * (x.ndim - 2)
        a = widen(scale) / np.sqrt(bvar + eps)
        y = (x - bmean.reshape(shp)) * a.reshape(shp) + widen(bias).reshape(shp)
        run_mean = (widen(mean) * momentum + bmean * (1 - momentum)).astype(mean.dtype)
        run_var = (widen(var) * momentum + bvar * (1 - momentum)).astype(var.dtype)
        y = np.asarray(y, dtype=dtype)
        if self.node.opset >= 14:
            return y, run_mean, run_var
        return y, run_mean, run_var, bmean.astype(mean.dtype), bvar.astype(var.dtype)
