import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.ops._random_util import generator, random_dtype
from onnxplug.providers.numpy.registry import op


@op("RandomNormalLike")
class RandomNormalLike(NumpyKernel):
    def compute(self, x):
        draws = generator(self).normal(self.attr("mean", 0.0), self.attr("scale", 1.0), x.shape)
        return np.asarray(draws.astype(random_dtype(self, x)))
