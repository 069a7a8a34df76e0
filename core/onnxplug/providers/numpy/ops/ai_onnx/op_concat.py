import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("Concat")
class Concat(NumpyKernel):
    def compute(self, *inputs):
        return np.concatenate(inputs, axis=int(self.attr("axis", 1)))  # opset 1 defaults to axis 1
