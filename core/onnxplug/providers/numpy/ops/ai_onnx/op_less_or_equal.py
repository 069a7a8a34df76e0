import numpy as np

from onnxplug.providers.numpy.ops._elementwise_util import CompareKernel
from onnxplug.providers.numpy.registry import op


@op("LessOrEqual")
class LessOrEqual(CompareKernel):
    ufunc = np.less_equal
