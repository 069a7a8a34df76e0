import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._loss_util import nll_loss
from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.registry import op


@op("NegativeLogLikelihoodLoss")
class NegativeLogLikelihoodLoss(NumpyKernel):
    def compute(self, x, target, weight=None):
        loss = nll_loss(widen(x), target, weight, self.attr("ignore_index"), self.attr("reduction", "mean"))
        return np.asarray(loss, dtype=x.dtype)
