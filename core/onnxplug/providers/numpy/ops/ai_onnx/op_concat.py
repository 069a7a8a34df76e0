import numpy as np

from onnxplug.providers.numpy.ops._base import NumpyKernel
from onnxplug.providers.numpy.registry import op


@op("Concat")
class Concat(NumpyKernel):
    def __init__(self, node, context):
        super().__init__(node, context)
        self.axis = int(self.attr("axis", 1))  # opset 1 defaults to axis 1

    def compute(self, *inputs):
        return np.concatenate(inputs, axis=self.axis)
