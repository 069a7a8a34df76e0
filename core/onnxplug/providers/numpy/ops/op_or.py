import numpy as np

from onnxplug.providers.numpy.ops._elementwise_util import CompareKernel
from onnxplug.providers.numpy.registry import op


@op("Or")
class Or(CompareKernel):
    def op(self, a, b):
        return np.logical_or(a, b)
