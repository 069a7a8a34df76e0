import numpy as np

from onnxplug.providers.numpy.ops._elementwise_util import CompareKernel
from onnxplug.providers.numpy.registry import op


@op("LessOrEqual")
class LessOrEqual(CompareKernel):
    def op(self, a, b):
        return np.less_equal(a, b)
