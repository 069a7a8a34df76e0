import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._loss_util import nll_loss
from onnxplug.providers.numpy.ops._nn_util import widen
from onnxplug.providers.numpy.registry import op


@op("SoftmaxCrossEntropyLoss")
class SoftmaxCrossEntropyLoss(NumpyKernel):
    """NLL of log_softmax(scores) over axis 1; the optional second output is that log-probability."""

    def compute(self, scores, labels, weight=None):
        s = widen(scores)
        shifted = s - s.max(axis=1, keepdims=True)
        logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        loss = nll_loss(logp, labels, weight, self.attr("ignore_index"), self.attr("reduction", "mean"))
        return np.asarray(loss, dtype=scores.dtype), np.asarray(logp, dtype=scores.dtype)
