import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._random_util import generator, random_dtype
from onnxplug.providers.numpy.registry import op


@op("Bernoulli")
class Bernoulli(NumpyKernel):
    """1 with probability ``x`` (elementwise), else 0."""

    def compute(self, x):
        draws = generator(self).random(x.shape) < x.astype(np.float64)
        return np.asarray(draws.astype(random_dtype(self, x)))
