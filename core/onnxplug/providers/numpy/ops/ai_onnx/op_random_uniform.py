import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._random_util import generator, random_dtype
from onnxplug.providers.numpy.registry import op


@op("RandomUniform")
class RandomUniform(NumpyKernel):
    def compute(self):
        draws = generator(self).uniform(self.attr("low", 0.0), self.attr("high", 1.0), tuple(self.attr("shape")))
        return np.asarray(draws.astype(random_dtype(self)))
